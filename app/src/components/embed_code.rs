//! "Embed this": the three ways to put a race in a post, each with its own Copy. The web
//! component first (one tag and one script, and it sizes itself to the run), then an iframe the
//! same script resizes, then a plain link for platforms that strip both; above them the options
//! a blog author picks, and below them a live preview of exactly what will be pasted. The
//! snippets are `shared::embed`'s.

use super::version_picker::Versions;
use crate::api::{copy_to_clipboard, load_embed_loader, origin};
use leptos::prelude::*;
use shared::ScenarioInfo;
use shared::embed::{Autoplay, Embed, Theme};

#[component]
pub fn EmbedCode(
    scenario: ScenarioInfo,
    /// The variant on the page: the embed's until the author picks another here.
    variant: Signal<String>,
    /// The PostgreSQL version picked on the page (empty: the first): likewise the embed's.
    version: Signal<String>,
    /// The versions racelab plays on; the embed names one only where there are two or more.
    versions: Versions,
) -> impl IntoView {
    let base = origin();
    let chosen = RwSignal::new(variant.get_untracked());
    Effect::new(move |_| chosen.set(variant.get()));
    // The version as the author sees it: the page's, or the first one's number.
    let first = move || versions.with(|v| v.iter().flatten().flatten().next().map(|(major, _)| major.to_string()));
    let postgres = RwSignal::new(version.get_untracked());
    Effect::new(move |_| postgres.set(version.get()));
    let picked = move || {
        Some(postgres.get())
            .filter(|p| !p.is_empty())
            .or_else(first)
            .unwrap_or_default()
    };
    let theme = RwSignal::new(Theme::Host);
    let detailed = RwSignal::new(false);
    let autoplay = RwSignal::new(Autoplay::WhenSeen);
    let step = RwSignal::new(false);
    let embed = Memo::new({
        let id = scenario.id.clone();
        move |_| Embed {
            scenario: id.clone(),
            variant: chosen.get(),
            theme: theme.get(),
            detailed: detailed.get(),
            autoplay: autoplay.get(),
            step: step.get(),
            // The first version is every embed's default: it goes unnamed.
            postgres: Some(picked())
                .filter(|p| Some(p) != first().as_ref())
                .unwrap_or_default(),
        }
    });
    // The preview loads only once the panel is opened: it is a real embed, and may play a run.
    let opened = RwSignal::new(false);
    let on_toggle = move |event: leptos::ev::Event| {
        let open = event_target::<web_sys::HtmlDetailsElement>(&event).open();
        if open && !opened.get_untracked() {
            load_embed_loader();
        }
        opened.set(open);
    };

    let variants = scenario
        .variants
        .iter()
        .map(|v| view! { <option value=v.id.clone()>{v.label.clone()}</option> })
        .collect_view();
    let version_choice = move || {
        let versions = versions.get().flatten().filter(|v| v.len() > 1)?;
        let options = versions
            .into_iter()
            .map(|(major, label)| view! { <option value=major.to_string()>{label}</option> })
            .collect_view();
        Some(view! {
            <label>
                "Plays on "
                <select class="rl-embed-postgres" prop:value=picked on:change=move |e| postgres.set(event_target_value(&e))>
                    {options}
                </select>
            </label>
        })
    };
    let title = scenario.title.clone();
    let (for_component, for_iframe, for_link, for_preview) = (base.clone(), base.clone(), base.clone(), base);
    view! {
        <details class="rl-embed-code" on:toggle=on_toggle>
            <summary>"Embed this scenario"</summary>
            <div class="rl-embed-options">
                <label>
                    "Variant "
                    <select class="rl-embed-variant" prop:value=move || chosen.get()
                        on:change=move |e| chosen.set(event_target_value(&e))>
                        {variants}
                    </select>
                </label>
                <Pick class="rl-embed-theme" label="Colours " chosen=theme
                    options=Theme::ALL.iter().map(|t| (*t, t.label())).collect() />
                <Pick class="rl-embed-view" label="Timeline " chosen=detailed
                    options=vec![(false, "compact"), (true, "detailed")] />
                <Pick class="rl-embed-autoplay" label="Plays " chosen=autoplay
                    options=Autoplay::ALL.iter().map(|a| (*a, a.label())).collect() />
                <Pick class="rl-embed-mode" label="Pace " chosen=step
                    options=vec![(false, "plays through"), (true, "the reader steps")] />
                {version_choice}
            </div>
            <Snippet
                kind="component"
                heading="Web component"
                hint="Sizes itself to the run. Put the tag where the race goes; the script once per page."
                text=Signal::derive(move || embed.with(|e| e.web_component(&for_component)))
            />
            <Snippet
                kind="iframe"
                heading="iframe"
                hint="For hosts that take HTML but not custom elements; the same script resizes it."
                text=Signal::derive(move || embed.with(|e| e.iframe(&for_iframe, &title)))
            />
            <Snippet
                kind="link"
                heading="Link"
                hint="For platforms that strip iframes and scripts."
                text=Signal::derive(move || embed.with(|e| e.link(&for_link)))
            />
            <div class="rl-embed-preview">
                <p class="rl-embed-preview-label">"Preview: what the pasted embed shows"</p>
                {move || opened.get().then(|| {
                    let src = embed.with(|e| e.src(&for_preview));
                    view! {
                        <iframe class="rl-embed-preview-frame" src=src title="Preview of the embed"
                            style="display:block;width:100%;height:480px;border:0"></iframe>
                    }
                })}
            </div>
        </details>
    }
}

/// One way to embed: what it is for, the text to paste, and its own Copy button.
#[component]
fn Snippet(kind: &'static str, heading: &'static str, hint: &'static str, text: Signal<String>) -> impl IntoView {
    let copied = RwSignal::new(false);
    // A changed option changes the text: "Copied" no longer describes it.
    Effect::new(move |_| {
        text.track();
        copied.set(false);
    });
    let copy = move |_| {
        copy_to_clipboard(&text.get_untracked());
        copied.set(true);
    };
    let rows = if kind == "link" { "1" } else { "3" };
    view! {
        <div class="rl-snippet" data-kind=kind>
            <div class="rl-snippet-head">
                <strong>{heading}</strong>
                <span class="rl-snippet-hint">{hint}</span>
                <button class="rl-copy" data-kind=kind on:click=copy>
                    {move || if copied.get() { "Copied" } else { "Copy" }}
                </button>
            </div>
            <textarea class="rl-snippet-text" data-kind=kind readonly rows=rows prop:value=move || text.get()></textarea>
        </div>
    }
}

/// One option of the embed, as a `<select>` of `options` (a value and its label), bound to
/// `chosen`; each `<option>`'s value is the option's place in the list.
#[component]
fn Pick<T: Copy + PartialEq + Send + Sync + 'static>(
    class: &'static str,
    label: &'static str,
    options: Vec<(T, &'static str)>,
    chosen: RwSignal<T>,
) -> impl IntoView {
    let values: Vec<T> = options.iter().map(|(value, _)| *value).collect();
    let shown = values.clone();
    let items = options
        .into_iter()
        .enumerate()
        .map(|(i, (_, label))| view! { <option value=i.to_string()>{label}</option> })
        .collect_view();
    view! {
        <label>
            {label}
            <select
                class=class
                prop:value=move || shown.iter().position(|v| *v == chosen.get()).unwrap_or(0).to_string()
                on:change=move |e| {
                    let picked = event_target_value(&e).parse::<usize>().ok().and_then(|i| values.get(i).copied());
                    if let Some(value) = picked {
                        chosen.set(value);
                    }
                }
            >
                {items}
            </select>
        </label>
    }
}
