//! The one way every page shows that something it needed could not be loaded.

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
