//! "Copy embed code": an iframe snippet, a one-line script loader, and a plain link for
//! platforms that strip iframes.

use crate::api::{copy_to_clipboard, origin};
use leptos::prelude::*;

#[component]
pub fn EmbedCode(scenario: String, variant: Signal<String>) -> impl IntoView {
    let base = origin();
    let embed_url = {
        let (base, scenario) = (base.clone(), scenario.clone());
        move || format!("{base}/embed/{scenario}?variant={}", variant.get())
    };
    let iframe = {
        let embed_url = embed_url.clone();
        let scenario = scenario.clone();
        move || {
            format!(
                "<iframe src=\"{}\" title=\"racelab: {scenario}\" width=\"100%\" height=\"640\" style=\"border:0\" loading=\"lazy\"></iframe>",
                embed_url()
            )
        }
    };
    let script = {
        let (base, scenario) = (base.clone(), scenario.clone());
        move || {
            format!(
                "<script src=\"{base}/embed.js\" data-scenario=\"{scenario}\" data-variant=\"{}\"></script>",
                variant.get()
            )
        }
    };
    let page_url = {
        let (base, scenario) = (base.clone(), scenario.clone());
        move || format!("{base}/lab/{scenario}?variant={}", variant.get())
    };
    let copied = RwSignal::new(false);
    let copy = {
        let iframe = iframe.clone();
        move |_| {
            copy_to_clipboard(&iframe());
            copied.set(true);
        }
    };
    view! {
        <details class="rl-embed-code">
            <summary>"Embed this scenario"</summary>
            <label>"iframe" <textarea class="rl-embed-iframe" readonly rows="3">{iframe.clone()}</textarea></label>
            <label>"one-line script" <textarea class="rl-embed-script" readonly rows="2">{script}</textarea></label>
            <p>
                <button class="rl-copy-embed" on:click=copy>
                    {move || if copied.get() { "Copied" } else { "Copy embed code" }}
                </button>
                " or link to it: "
                <a class="rl-plain-link" href=page_url.clone()>{page_url.clone()}</a>
            </p>
        </details>
    }
}
