//! Variant tabs: isolation levels or fixes. Buttons, so every one is reachable by keyboard;
//! `aria-pressed` says which is chosen.

use leptos::prelude::*;
use shared::VariantInfo;

/// More variants than this (a reader's spec has one per permutation) are a list to pick from,
/// not a row of tabs (on the full app's pages: an embed keeps its tabs, and its budget).
#[cfg(not(feature = "embed"))]
const MOST_TABS: usize = 6;

#[component]
pub fn VariantPicker(variants: Vec<VariantInfo>, chosen: RwSignal<String>, disabled: Signal<bool>) -> impl IntoView {
    #[cfg(not(feature = "embed"))]
    if variants.len() > MOST_TABS {
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
    let tabs = view! {
        <nav class="rl-variants" aria-label="Variants">
            {variants
                .into_iter()
                .map(|v| {
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
