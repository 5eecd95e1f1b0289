//! Variant tabs: isolation levels or fixes. Buttons, so every one is reachable by keyboard;
//! `aria-pressed` says which is chosen. A scenario whose variants play on two databases gets a
//! database picker first (PostgreSQL, MariaDB), and shows the tabs of the database picked;
//! switching keeps the level where the other database has it.

use leptos::prelude::*;
#[cfg(not(feature = "embed"))]
use shared::Service;
use shared::VariantInfo;
use shared::catalog::database_of;
#[cfg(not(feature = "embed"))]
use shared::catalog::{counterpart, databases};

/// More variants than this (a reader's spec has one per permutation) are a list to pick from,
/// not a row of tabs (on the full app's pages: an embed keeps its tabs, and its budget).
#[cfg(not(feature = "embed"))]
const MOST_TABS: usize = 6;

#[component]
pub fn VariantPicker(variants: Vec<VariantInfo>, chosen: RwSignal<String>, disabled: Signal<bool>) -> impl IntoView {
    #[cfg(not(feature = "embed"))]
    if most_in_one_database(&variants) > MOST_TABS {
        let options = variants
            .into_iter()
            .map(|v| {
                let selected = {
                    let id = v.id.clone();
                    move || chosen.get() == id
                };
                view! { <option value=v.id.clone() selected=selected>{format!("{} · {}", v.label, v.description)}</option> }
            })
            .collect_view();
        return view! {
            <nav class="rl-variants" aria-label="Variants">
                <select class="rl-variant-list" aria-label="Which permutation" disabled=move || disabled.get()
                    on:change=move |ev| chosen.set(event_target_value(&ev))>{options}</select>
            </nav>
        }
        .into_any();
    }
    // An embed plays the database its author picked (its variant's): no picker, its tabs only.
    #[cfg(not(feature = "embed"))]
    let picker = database_picker(&variants, chosen, disabled);
    #[cfg(feature = "embed")]
    let picker = ();
    let tabs = view! {
        {picker}
        <nav class="rl-variants" aria-label="Variants">
            {variants
                .into_iter()
                .map(|v| {
                    let database = v.database();
                    let elsewhere = move || database_of(&chosen.get()) != database;
                    let id = v.id.clone();
                    let pressed = {
                        let id = id.clone();
                        move || (chosen.get() == id).to_string()
                    };
                    view! {
                        <button
                            class="rl-variant"
                            data-variant=v.id.clone()
                            aria-pressed=pressed
                            title=v.description.clone()
                            hidden=elsewhere
                            disabled=move || disabled.get()
                            on:click=move |_| chosen.set(id.clone())
                        >
                            {v.label.clone()}
                        </button>
                    }
                })
                .collect_view()}
        </nav>
    };
    // The embed has no list, so no second kind of view to unify with.
    #[cfg(not(feature = "embed"))]
    return tabs.into_any();
    #[cfg(feature = "embed")]
    tabs
}

/// The most variants one database has: the tabs shown at once.
#[cfg(not(feature = "embed"))]
fn most_in_one_database(variants: &[VariantInfo]) -> usize {
    databases(variants)
        .into_iter()
        .map(|database| variants.iter().filter(|v| v.database() == database).count())
        .max()
        .unwrap_or(0)
}

/// `GET /api/mariadb`'s answer: its version (`MariaDB 10.11.19`) when up, else why it is down.
#[cfg(not(feature = "embed"))]
#[derive(Clone, Debug)]
struct MariadbState {
    detail: String,
}

#[cfg(not(feature = "embed"))]
impl shared::json::FromJson for MariadbState {
    fn from_json(json: &shared::json::Json) -> Result<Self, shared::json::JsonError> {
        Ok(MariadbState {
            detail: json.get("detail")?,
        })
    }
}

/// PostgreSQL or MariaDB, where the variants play on both: picking one plays its counterpart
/// of the chosen variant ([`counterpart`]).
#[cfg(not(feature = "embed"))]
fn database_picker(
    variants: &[VariantInfo],
    chosen: RwSignal<String>,
    disabled: Signal<bool>,
) -> Option<impl IntoView + use<>> {
    let found = databases(variants);
    if found.len() < 2 {
        return None;
    }
    let variants = StoredValue::new(variants.to_vec());
    // MariaDB's version as the server's probe found it, or why it is down: named on its button.
    let mariadb = crate::api::fetched(async {
        crate::api::fetch_json::<MariadbState>("/api/mariadb")
            .await
            .ok()
            .map(|m| m.detail)
    });
    let buttons = found
        .into_iter()
        .map(|database: Service| {
            let pick = move |_| {
                let next = variants.with_value(|all| counterpart(all, &chosen.get_untracked(), database).to_owned());
                chosen.set(next);
            };
            view! {
                <button
                    class="rl-database"
                    data-database=database.label()
                    title=move || (database == Service::Mariadb).then(|| mariadb.get().flatten()).flatten()
                    aria-pressed=move || (database_of(&chosen.get()) == database).to_string()
                    disabled=move || disabled.get()
                    on:click=pick
                >
                    {database.label()}
                </button>
            }
        })
        .collect_view();
    Some(view! { <nav class="rl-databases" aria-label="Database">{buttons}</nav> })
}
