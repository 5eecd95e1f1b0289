//! Variant tabs: isolation levels or fixes. Buttons, so every one is reachable by keyboard;
//! `aria-pressed` says which is chosen.

use leptos::prelude::*;
use shared::VariantInfo;

#[component]
pub fn VariantPicker(variants: Vec<VariantInfo>, chosen: RwSignal<String>, disabled: Signal<bool>) -> impl IntoView {
    view! {
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
    }
}
