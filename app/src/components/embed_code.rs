//! "Embed this": the three ways to put a race in a post, each with its own Copy. The web
//! component first (one tag and one script, and it sizes itself to the run), then an iframe the
//! same script resizes, then a plain link for platforms that strip both; above them the options
//! a blog author picks, and below them a live preview of exactly what will be pasted. The
//! snippets are `shared::embed`'s.

use super::version_picker::Versions;
use crate::api::{copy_to_clipboard, load_embed_loader, origin};
use leptos::prelude::*;
use shared::embed::{Autoplay, Embed, Theme};
use shared::{ScenarioInfo, VariantInfo};

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
    let picks = Picks::new(variant, version);
    let embed = Memo::new({
        let id = scenario.id.clone();
        move |_| picks.embed(id.clone(), versions)
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
    view! {
        <details class="rl-embed-code" on:toggle=on_toggle>
            <summary>"Embed this scenario"</summary>
            <EmbedOptions variants=scenario.variants picks=picks versions=versions />
            {snippets(embed, &base, scenario.title)}
            {preview(embed, opened, base)}
        </details>
    }
}

/// "Embed this lesson": a kept lesson in a course's page, taken alone there. The same three
/// snippets, with no options (the host's colours; each round's own variant).
#[component]
pub fn LessonEmbedCode(id: String, title: String) -> impl IntoView {
    let base = origin();
    let lesson = shared::embed::LessonEmbed { id };
    let (component, iframe, link) = (
        lesson.web_component(&base),
        lesson.iframe(&base, &title),
        lesson.link(&base),
    );
    view! {
        <details class="rl-embed-code rl-lesson-embed">
            <summary>"Embed this lesson"</summary>
            <p class="rl-explain">"Readers of your course take it alone where it sits: predict, run, score."</p>
            <Snippet kind="component" heading="Web component"
                hint="Sizes itself. Put the tag where the lesson goes; the script once per page."
                text=Signal::stored(component) />
            <Snippet kind="iframe" heading="iframe"
                hint="For hosts that take HTML but not custom elements; the same script resizes it."
                text=Signal::stored(iframe) />
            <Snippet kind="link" heading="Link" hint="For platforms that strip iframes and scripts."
                text=Signal::stored(link) />
        </details>
    }
}

/// What the author picks above the snippets, one signal each: the variant and the version start
/// as the page's, and follow the page's when it changes.
#[derive(Clone, Copy)]
struct Picks {
    variant: RwSignal<String>,
    /// A major version (`"18"`); empty: none picked, so the first.
    postgres: RwSignal<String>,
    theme: RwSignal<Theme>,
    detailed: RwSignal<bool>,
    autoplay: RwSignal<Autoplay>,
    step: RwSignal<bool>,
}

impl Picks {
    fn new(variant: Signal<String>, version: Signal<String>) -> Picks {
        Picks {
            variant: following(variant),
            postgres: following(version),
            theme: RwSignal::new(Theme::Host),
            detailed: RwSignal::new(false),
            autoplay: RwSignal::new(Autoplay::WhenSeen),
            step: RwSignal::new(false),
        }
    }

    /// The version as the author sees it: the page's, or the first one's number.
    fn shown_version(self, versions: Versions) -> String {
        shown_version(self.postgres.get(), || first_version(versions))
    }

    /// The embed these picks make; it reads every pick, so a memo of it follows them all.
    fn embed(self, scenario: String, versions: Versions) -> Embed {
        Embed {
            scenario,
            variant: self.variant.get(),
            theme: self.theme.get(),
            detailed: self.detailed.get(),
            autoplay: self.autoplay.get(),
            step: self.step.get(),
            postgres: named_version(self.shown_version(versions), first_version(versions)),
        }
    }
}

/// A pick that starts as the page's, and becomes the page's again whenever that changes.
fn following(page: Signal<String>) -> RwSignal<String> {
    let picked = RwSignal::new(page.get_untracked());
    Effect::new(move |_| picked.set(page.get()));
    picked
}

/// The first version's major number (none until the versions are loaded).
fn first_version(versions: Versions) -> Option<String> {
    versions.with(|v| v.iter().flatten().flatten().next().map(|(major, _)| major.to_string()))
}

/// The version picked (empty: none), else the `first` one's; `first` is asked only then: a
/// version picked does not depend on which versions there are.
fn shown_version(picked: String, first: impl FnOnce() -> Option<String>) -> String {
    Some(picked)
        .filter(|p| !p.is_empty())
        .or_else(first)
        .unwrap_or_default()
}

/// The version an embed names: none for the first, which is every embed's default.
fn named_version(shown: String, first: Option<String>) -> String {
    Some(shown).filter(|p| Some(p) != first.as_ref()).unwrap_or_default()
}

/// The options a blog author picks, each a `<select>` bound to its pick.
#[component]
fn EmbedOptions(variants: Vec<VariantInfo>, picks: Picks, versions: Versions) -> impl IntoView {
    let variants = variants
        .iter()
        .map(|v| view! { <option value=v.id.clone()>{v.label.clone()}</option> })
        .collect_view();
    view! {
        <div class="rl-embed-options">
            <label>
                "Variant "
                <select class="rl-embed-variant" prop:value=move || picks.variant.get()
                    on:change=move |e| picks.variant.set(event_target_value(&e))>
                    {variants}
                </select>
            </label>
            <Pick class="rl-embed-theme" label="Colours " chosen=picks.theme
                options=Theme::ALL.iter().map(|t| (*t, t.label())).collect() />
            <Pick class="rl-embed-view" label="Timeline " chosen=picks.detailed
                options=vec![(false, "compact"), (true, "detailed")] />
            <Pick class="rl-embed-autoplay" label="Plays " chosen=picks.autoplay
                options=Autoplay::ALL.iter().map(|a| (*a, a.label())).collect() />
            <Pick class="rl-embed-mode" label="Pace " chosen=picks.step
                options=vec![(false, "plays through"), (true, "the reader steps")] />
            {version_choice(picks, versions)}
        </div>
    }
}

/// The version the embed plays on, offered only where racelab plays on two or more.
fn version_choice(picks: Picks, versions: Versions) -> impl IntoView {
    move || {
        let choices = versions.get().flatten().filter(|v| v.len() > 1)?;
        let options = choices
            .into_iter()
            .map(|(major, label)| view! { <option value=major.to_string()>{label}</option> })
            .collect_view();
        Some(view! {
            <label>
                "Plays on "
                <select class="rl-embed-postgres" prop:value=move || picks.shown_version(versions)
                    on:change=move |e| picks.postgres.set(event_target_value(&e))>
                    {options}
                </select>
            </label>
        })
    }
}

/// The three ways to embed, each written from the same embed at this server's `base`.
fn snippets(embed: Memo<Embed>, base: &str, title: String) -> impl IntoView + use<> {
    let (for_component, for_iframe, for_link) = (base.to_owned(), base.to_owned(), base.to_owned());
    view! {
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
    }
}

/// The embed itself, as a reader of the post will see it, once the panel has been `opened`.
fn preview(embed: Memo<Embed>, opened: RwSignal<bool>, base: String) -> impl IntoView {
    view! {
        <div class="rl-embed-preview">
            <p class="rl-embed-preview-label">"Preview: what the pasted embed shows"</p>
            {move || opened.get().then(|| {
                let src = embed.with(|e| e.src(&base));
                view! {
                    <iframe class="rl-embed-preview-frame" src=src title="Preview of the embed"
                        style="display:block;width:100%;height:480px;border:0"></iframe>
                }
            })}
        </div>
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_shown_is_the_one_picked_else_the_first() {
        let first = || Some("17".to_owned());
        assert_eq!(
            shown_version("18".to_owned(), || unreachable!("a picked version needs no first")),
            "18"
        );
        assert_eq!(shown_version(String::new(), first), "17");
        assert_eq!(shown_version(String::new(), || None), "");
    }

    #[test]
    fn an_embed_names_every_version_but_the_first() {
        assert_eq!(named_version("17".to_owned(), Some("17".to_owned())), "");
        assert_eq!(named_version("18".to_owned(), Some("17".to_owned())), "18");
        assert_eq!(named_version(String::new(), None), "");
    }
}
