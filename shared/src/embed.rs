//! An embed as a blog author sets it up, and what they paste: the web component (one tag and the
//! loader script), an iframe that the same loader resizes, or a plain link for platforms that
//! strip both.
//!
//! Pure, so the scenario page's "Embed this" panel, its live preview and the embed page that
//! reads the options back agree on every name, and unit tests hold the snippets.

use crate::markup::escape;

/// The embed's colours.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Theme {
    /// The host page's: a transparent background, and light or dark text as the host is where
    /// the embed sits (the loader tells the embed, which cannot look outside its iframe).
    #[default]
    Host,
    /// The reader's system preference.
    Auto,
    Light,
    Dark,
}

impl Theme {
    pub const ALL: [Theme; 4] = [Theme::Host, Theme::Auto, Theme::Light, Theme::Dark];

    /// Its value in a URL and in the element's `theme` attribute; `None` for the embed's default.
    pub fn id(self) -> Option<&'static str> {
        match self {
            Theme::Host => Some("host"),
            Theme::Auto => None,
            Theme::Light => Some("light"),
            Theme::Dark => Some("dark"),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Theme::Host => "the host page's (transparent)",
            Theme::Auto => "the reader's system",
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }
}

/// When the embed plays by itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Autoplay {
    /// When the reader presses Run (or Step).
    #[default]
    Off,
    /// As soon as it loads (`autoplay=1`).
    OnLoad,
    /// Once the reader has scrolled to it (`autoplay=visible`): the race plays when it is read,
    /// not while the reader is still at the top of the post.
    WhenSeen,
}

impl Autoplay {
    pub const ALL: [Autoplay; 3] = [Autoplay::WhenSeen, Autoplay::OnLoad, Autoplay::Off];

    /// `autoplay=…` of an embed's URL.
    pub fn parse(value: Option<&str>) -> Autoplay {
        match value {
            Some("1" | "true" | "") => Autoplay::OnLoad,
            Some("visible") => Autoplay::WhenSeen,
            _ => Autoplay::Off,
        }
    }

    /// Its value in a URL; `None` when off.
    pub fn id(self) -> Option<&'static str> {
        match self {
            Autoplay::Off => None,
            Autoplay::OnLoad => Some("1"),
            Autoplay::WhenSeen => Some("visible"),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Autoplay::Off => "when the reader presses Run",
            Autoplay::OnLoad => "as soon as the page loads",
            Autoplay::WhenSeen => "when scrolled into view",
        }
    }
}

/// One embed, as the author chose it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Embed {
    /// `lab/scenario`.
    pub scenario: String,
    pub variant: String,
    pub theme: Theme,
    /// The detailed timeline instead of the compact one (the embed's default).
    pub detailed: bool,
    pub autoplay: Autoplay,
    /// Played one step at a time, the reader pressing Next.
    pub step: bool,
    /// The PostgreSQL version it plays on, a major version (`"18"`); empty: the server's first.
    pub postgres: String,
}

/// The height an iframe starts at before its page reports its own (the loader then sets it).
pub const STARTING_HEIGHT: u32 = 640;

impl Embed {
    /// An embed of `scenario` at `variant` with the defaults a blog wants: the host's colours,
    /// compact, playing when scrolled into view.
    pub fn new(scenario: &str, variant: &str) -> Embed {
        Embed {
            scenario: scenario.to_owned(),
            variant: variant.to_owned(),
            theme: Theme::Host,
            detailed: false,
            autoplay: Autoplay::WhenSeen,
            step: false,
            postgres: String::new(),
        }
    }

    /// The options as `(name, value)`, those at the embed's defaults left out. The names are
    /// the same in a URL and as the element's attributes.
    pub fn options(&self) -> Vec<(&'static str, &str)> {
        let mut options = vec![("variant", self.variant.as_str())];
        options.extend(self.theme.id().map(|t| ("theme", t)));
        if self.detailed {
            options.push(("view", "detailed"));
        }
        if self.step {
            options.push(("mode", "step"));
        }
        options.extend(self.autoplay.id().map(|a| ("autoplay", a)));
        if !self.postgres.is_empty() {
            options.push(("postgres", &self.postgres));
        }
        options
    }

    /// The embed page's address on the racelab at `origin`.
    pub fn src(&self, origin: &str) -> String {
        let query: Vec<String> = self
            .options()
            .into_iter()
            .map(|(name, value)| format!("{name}={}", encode(value)))
            .collect();
        format!("{origin}/embed/{}?{}", self.scenario, query.join("&"))
    }

    /// The web component: one tag where the race goes, and the loader once per page (it turns
    /// the tag into an iframe that sizes itself to the run).
    pub fn web_component(&self, origin: &str) -> String {
        let attributes: String = self
            .options()
            .into_iter()
            .map(|(name, value)| match (name, value) {
                ("autoplay", "1") => " autoplay".to_owned(),
                (name, value) => format!(" {name}=\"{}\"", escape(value)),
            })
            .collect();
        format!(
            "<racelab-scenario scenario=\"{}\"{attributes}></racelab-scenario>\n{}",
            escape(&self.scenario),
            loader(origin)
        )
    }

    /// An iframe, for hosts that take HTML but not custom elements; the same loader resizes it
    /// (without it, it stays [`STARTING_HEIGHT`] tall and scrolls inside).
    pub fn iframe(&self, origin: &str, title: &str) -> String {
        iframe(&self.src(origin), &format!("racelab: {title}"), origin)
    }

    /// The scenario's own page at this variant (and version), for platforms that strip iframes
    /// and scripts.
    pub fn link(&self, origin: &str) -> String {
        let mut link = format!("{origin}/lab/{}?variant={}", self.scenario, encode(&self.variant));
        if !self.postgres.is_empty() {
            link.push_str("&postgres=");
            link.push_str(&encode(&self.postgres));
        }
        link
    }
}

/// A kept lesson in a course's page, taken alone there (predict, run, score), in the host's
/// colours: the same three snippets, to the lesson's embed (`/embed/lessons/<id>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LessonEmbed {
    /// The lesson's id, as its link names it.
    pub id: String,
}

impl LessonEmbed {
    /// The embed page's address on the racelab at `origin`.
    pub fn src(&self, origin: &str) -> String {
        format!("{origin}/embed/lessons/{}?theme=host", encode(&self.id))
    }

    /// The web component: `<racelab-scenario lesson=…>`, which the loader turns into the iframe.
    pub fn web_component(&self, origin: &str) -> String {
        format!(
            "<racelab-scenario lesson=\"{}\" theme=\"host\"></racelab-scenario>\n{}",
            escape(&self.id),
            loader(origin)
        )
    }

    /// An iframe, which the same loader resizes.
    pub fn iframe(&self, origin: &str, title: &str) -> String {
        iframe(&self.src(origin), &format!("racelab lesson: {title}"), origin)
    }

    /// The lesson taken alone on racelab itself, for platforms that strip iframes and scripts.
    pub fn link(&self, origin: &str) -> String {
        format!("{origin}/lessons/{}/alone", encode(&self.id))
    }
}

/// An iframe of `src`, named `title` for screen readers, [`STARTING_HEIGHT`] tall until the
/// loader (after it) sizes it.
fn iframe(src: &str, title: &str, origin: &str) -> String {
    format!(
        "<iframe src=\"{}\" title=\"{}\" style=\"display:block;width:100%;height:{STARTING_HEIGHT}px;border:0\" loading=\"lazy\"></iframe>\n{}",
        escape(src),
        escape(title),
        loader(origin)
    )
}

/// The loader's script tag.
fn loader(origin: &str) -> String {
    format!("<script src=\"{}/embed.js\" async></script>", escape(origin))
}

/// `value` for a URL's query: everything but unreserved characters percent-encoded.
pub(crate) fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => char::from(b).to_string(),
            b => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: &str = "https://racelab.example";

    #[test]
    fn a_new_embed_is_the_hosts_colours_playing_when_seen() {
        let embed = Embed::new("isolation/write-skew", "serializable");
        assert_eq!(
            embed.src(ORIGIN),
            "https://racelab.example/embed/isolation/write-skew?variant=serializable&theme=host&autoplay=visible"
        );
        assert_eq!(
            embed.web_component(ORIGIN),
            "<racelab-scenario scenario=\"isolation/write-skew\" variant=\"serializable\" theme=\"host\" autoplay=\"visible\"></racelab-scenario>\n\
             <script src=\"https://racelab.example/embed.js\" async></script>"
        );
    }

    #[test]
    fn a_lesson_embeds_taken_alone_in_the_hosts_colours() {
        let lesson = LessonEmbed {
            id: "0123456789abcdef".to_owned(),
        };
        assert_eq!(
            lesson.src(ORIGIN),
            "https://racelab.example/embed/lessons/0123456789abcdef?theme=host"
        );
        assert_eq!(
            lesson.web_component(ORIGIN),
            "<racelab-scenario lesson=\"0123456789abcdef\" theme=\"host\"></racelab-scenario>\n\
             <script src=\"https://racelab.example/embed.js\" async></script>"
        );
        assert!(
            lesson
                .iframe(ORIGIN, "Write skew <3")
                .starts_with("<iframe src=\"https://racelab.example/embed/lessons/0123456789abcdef?theme=host\" title=\"racelab lesson: Write skew &lt;3\""),
            "{}",
            lesson.iframe(ORIGIN, "Write skew <3")
        );
        assert_eq!(
            lesson.link(ORIGIN),
            "https://racelab.example/lessons/0123456789abcdef/alone"
        );
        let page = lesson.src("");
        assert!(matches!(
            crate::pages::Page::at(page.split('?').next().unwrap_or_default()),
            Some(crate::pages::Page::EmbedLesson("0123456789abcdef"))
        ));
    }

    #[test]
    fn defaults_are_left_out_and_the_rest_named_alike_in_url_and_tag() {
        let mut embed = Embed::new("locks/fencing", "with-fence");
        embed.theme = Theme::Auto;
        embed.autoplay = Autoplay::Off;
        assert_eq!(
            embed.src(ORIGIN),
            "https://racelab.example/embed/locks/fencing?variant=with-fence"
        );
        embed.theme = Theme::Dark;
        embed.detailed = true;
        embed.step = true;
        embed.autoplay = Autoplay::OnLoad;
        assert_eq!(
            embed.src(ORIGIN),
            "https://racelab.example/embed/locks/fencing?variant=with-fence&theme=dark&view=detailed&mode=step&autoplay=1"
        );
        assert!(
            embed.web_component(ORIGIN).starts_with(
                "<racelab-scenario scenario=\"locks/fencing\" variant=\"with-fence\" theme=\"dark\" view=\"detailed\" mode=\"step\" autoplay></racelab-scenario>"
            ),
            "{}",
            embed.web_component(ORIGIN)
        );
    }

    #[test]
    fn the_iframe_carries_the_loader_and_an_escaped_title() {
        let embed = Embed::new("isolation/write-skew", "read-committed");
        let iframe = embed.iframe(ORIGIN, "Two managers \"overspend\" <a budget>");
        assert!(iframe.starts_with(
            "<iframe src=\"https://racelab.example/embed/isolation/write-skew?variant=read-committed&amp;theme=host&amp;autoplay=visible\" \
             title=\"racelab: Two managers &quot;overspend&quot; &lt;a budget&gt;\""
        ), "{iframe}");
        assert!(iframe.ends_with("\n<script src=\"https://racelab.example/embed.js\" async></script>"));
        assert_eq!(
            embed.link(ORIGIN),
            "https://racelab.example/lab/isolation/write-skew?variant=read-committed"
        );
    }

    #[test]
    fn a_version_is_named_in_url_tag_and_link_only_when_picked() {
        let mut embed = Embed::new("isolation/write-skew", "serializable");
        assert!(!embed.src(ORIGIN).contains("postgres"), "{}", embed.src(ORIGIN));
        embed.postgres = "18".into();
        assert_eq!(
            embed.src(ORIGIN),
            "https://racelab.example/embed/isolation/write-skew?variant=serializable&theme=host&autoplay=visible&postgres=18"
        );
        assert!(
            embed
                .web_component(ORIGIN)
                .starts_with("<racelab-scenario scenario=\"isolation/write-skew\" variant=\"serializable\" theme=\"host\" autoplay=\"visible\" postgres=\"18\">"),
            "{}",
            embed.web_component(ORIGIN)
        );
        assert_eq!(
            embed.link(ORIGIN),
            "https://racelab.example/lab/isolation/write-skew?variant=serializable&postgres=18"
        );
    }

    #[test]
    fn odd_values_are_encoded_not_passed_through() {
        let embed = Embed::new("isolation/write-skew", "a b&c=\"d\"");
        assert!(
            embed.src(ORIGIN).contains("variant=a%20b%26c%3D%22d%22&"),
            "{}",
            embed.src(ORIGIN)
        );
        assert!(
            embed
                .web_component(ORIGIN)
                .contains("variant=\"a b&amp;c=&quot;d&quot;\"")
        );
    }

    #[test]
    fn autoplay_reads_back_what_it_writes() {
        for autoplay in Autoplay::ALL {
            assert_eq!(Autoplay::parse(autoplay.id()), autoplay);
        }
        assert_eq!(Autoplay::parse(Some("true")), Autoplay::OnLoad);
        assert_eq!(Autoplay::parse(Some("sometimes")), Autoplay::Off);
    }
}
