//! racelab's browser playground: Leptos, client-side rendered, built by Trunk into `dist/`.
//!
//! The page is chosen from the URL once, at load ([`route`]); links between pages are plain
//! links. Every page draws runs with the same components, fed by [`shared::run_state::RunState`]
//! folded from the websocket's frames ([`api`]). Everything sits inside one `.racelab` root so
//! the stylesheets never touch a host page that embeds us. See `app/README.md` for the tree and
//! the DOM contract the browser tests rely on.

// The player bundle compiles every page and mounts none (it draws with player/): they are dead there.
#![cfg_attr(feature = "player", allow(dead_code, unused_imports, unused_variables))]

// Each of these builds is one app with only its own pages: together they are none of them.
#[cfg(all(feature = "embed", feature = "player"))]
compile_error!("the `embed` and `player` features build two different apps: choose one");

mod api;
#[cfg(not(feature = "embed"))]
mod arrows;
mod components;
mod morph;
mod pages;
#[cfg(not(feature = "embed"))]
mod player;
mod route;

use leptos::prelude::*;
use route::Route;

/// talc, not dlmalloc: a few KB smaller in the bundle (which the embed's 150 KB budget needs) and
/// faster; the page is single-threaded wasm, which is what this allocator is for.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

#[cfg(not(feature = "player"))]
fn main() {
    // A recording plays in the player, with no framework, in the full app too (a dev build has
    // no player app: the server sends it this one); the embed app leaves the player out.
    #[cfg(not(feature = "embed"))]
    if matches!(Route::current(), Route::EmbedRecording { .. }) {
        player::start();
        return;
    }
    leptos::mount::mount_to_body(App);
}

/// The player draws its one page with no framework ([`player`]).
#[cfg(feature = "player")]
fn main() {
    player::start();
}

#[cfg(not(feature = "player"))]
#[component]
fn App() -> impl IntoView {
    // The theme (`?theme=…`) is set on <html> by the page's first script, before the app loads
    // (app/index.html), so nothing is ever drawn in the wrong colours.
    let route = Route::current();
    let embed = matches!(
        route,
        Route::Embed { .. } | Route::EmbedRun { .. } | Route::EmbedRecording { .. } | Route::EmbedLesson { .. }
    );
    let page = match route {
        Route::EmbedRun { id, options } => {
            view! { <pages::replay::ReplayPage id=id embed=true compact=options.opening.compact /> }.into_any()
        }
        // Drawn by the player, never mounted here (`main`).
        #[cfg(not(feature = "embed"))]
        Route::EmbedRecording { .. } => ().into_any(),
        Route::Embed { id, options } => view! { <pages::embed::EmbedPage id=id options=options /> }.into_any(),
        #[cfg(not(feature = "embed"))]
        Route::Catalog => view! { <pages::catalog::Catalog /> }.into_any(),
        #[cfg(not(feature = "embed"))]
        Route::Scenario { id } => view! { <pages::scenario::ScenarioPage id=id /> }.into_any(),
        #[cfg(not(feature = "embed"))]
        Route::Compare { id } => view! { <pages::compare::ComparePage id=id /> }.into_any(),
        #[cfg(not(feature = "embed"))]
        Route::Replay { id } => {
            let compact = api::compact_view();
            view! { <pages::replay::ReplayPage id=id compact=compact /> }.into_any()
        }
        #[cfg(not(feature = "embed"))]
        Route::Room {
            id,
            scenario,
            variant,
            postgres,
        } => {
            let fragment = api::fragment();
            let token = route::fragment_param(&fragment, "trainer");
            let results = route::fragment_param(&fragment, "results");
            view! { <pages::room::RoomPage id=id token=token results=results scenario=scenario variant=variant postgres=postgres /> }
                .into_any()
        }
        #[cfg(not(feature = "embed"))]
        Route::Write => view! { <pages::write::WritePage /> }.into_any(),
        #[cfg(not(feature = "embed"))]
        Route::Atlas => view! { <pages::atlas::AtlasPage /> }.into_any(),
        #[cfg(not(feature = "embed"))]
        Route::Spec { id } => view! { <pages::write::SpecPage id=id /> }.into_any(),
        #[cfg(not(feature = "embed"))]
        Route::Lessons { id } => view! { <pages::lessons::LessonsPage id=id /> }.into_any(),
        #[cfg(not(feature = "embed"))]
        Route::LessonAlone { id } => {
            let compact = api::compact_view();
            view! { <pages::alone::LessonAlonePage id=id compact=compact /> }.into_any()
        }
        // Served the full app (the embed app leaves lessons out): server/src/web/assets.rs.
        #[cfg(not(feature = "embed"))]
        Route::EmbedLesson { id, compact } => {
            view! { <pages::alone::LessonAlonePage id=id compact=compact embed=true /> }.into_any()
        }
        #[cfg(not(feature = "embed"))]
        Route::Results { session } => view! { <pages::results::ResultsPage session=session /> }.into_any(),
        #[cfg(not(feature = "embed"))]
        Route::NotFound { path } => view! { <pages::not_found::NotFound path=path /> }.into_any(),
        // The embed app is served at /embed/… only; anything else is the full app's.
        #[cfg(feature = "embed")]
        _ => view! { <pages::not_found::NotFound path=api::location().0 /> }.into_any(),
    };
    view! {
        <div class="racelab" class:rl-embed=embed>
            {header(embed)}
            <main class="rl-main">{page}</main>
        </div>
    }
}

/// The site header, on every page but an embed.
#[cfg(not(any(feature = "embed", feature = "player")))]
fn header(embed: bool) -> impl IntoView {
    (!embed).then(|| view! { <components::header::Header /> })
}

/// The embed app draws embeds only, which have no header.
#[cfg(feature = "embed")]
fn header(_embed: bool) {}
