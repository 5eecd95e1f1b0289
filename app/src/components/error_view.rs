//! What a page shows instead of its content: that it is still loading, or the one way every page
//! says that something it needed could not be loaded.

use leptos::prelude::*;

#[component]
pub fn ErrorView(message: String) -> impl IntoView {
    view! {
        <div class="rl-error" role="alert">
            <strong>"Something went wrong: "</strong>
            {message}
        </div>
    }
}

/// A page's placeholder while what it fetched has not arrived (`text`: `Loading the run…`).
pub fn loading(text: &'static str) -> AnyView {
    view! { <p class="rl-loading">{text}</p> }.into_any()
}
