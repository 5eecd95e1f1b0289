//! Which page a URL shows. Parsed once at load; the server answers every app path with
//! `index.html`, so a reload or a shared link lands on the same page.

use crate::api::location;
use shared::pages::Page;

pub use shared::embed::Autoplay;

/// How an embed starts: the variant its address names, and how its panel opens.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EmbedOptions {
    pub variant: Option<String>,
    pub opening: Opening,
}

/// How a scenario's run panel opens, as its page's address asks (an embed's options, the
/// scenario page's query, /write's "Save and run").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Opening {
    /// Runs are stepped (`mode=step`), where the scenario can be.
    pub step: bool,
    pub autoplay: Autoplay,
    /// The compact timeline (an embed's default) or, with `view=detailed`, the detailed one.
    pub compact: bool,
    /// Predict, then run (`predict=1`): the reader picks what they expect before Run, if the
    /// scenario asks.
    pub predict: bool,
    /// The PostgreSQL version runs play on (`postgres=18`); empty: the server's first.
    pub postgres: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    Catalog,
    /// `/lab/{lab}/{scenario}` (id = `lab/scenario`).
    Scenario {
        id: String,
    },
    Compare {
        id: String,
    },
    Replay {
        id: String,
    },
    Embed {
        id: String,
        options: EmbedOptions,
    },
    /// `/embed/runs/{id}`: a stored run for an iframe (what oEmbed gives for a run link).
    EmbedRun {
        id: String,
        options: EmbedOptions,
    },
    /// `/embed/lessons/{id}`: a kept lesson, taken alone, for an iframe (a course's page);
    /// compact unless the address asks `view=detailed`, as every embed.
    EmbedLesson {
        id: String,
        compact: bool,
    },
    /// `/embed/recording?src=URL[&live=SERVER]`: a recording file, played with no racelab
    /// server behind it; "Run it live" on the racelab at `live`, where the author names one.
    EmbedRecording {
        src: String,
        live: Option<String>,
        options: EmbedOptions,
    },
    /// `/write`: write your own race (a spec), run it, share it.
    Write,
    /// `/atlas`: the classic anomalies at each isolation level, as this server plays them.
    Atlas,
    /// `/s/{id}`: a saved spec, in the editor, ready to run or fork.
    Spec {
        id: String,
    },
    /// `/lessons`: write a trainer's lesson; `/lessons/{id}`: a kept one.
    Lessons {
        id: Option<String>,
    },
    /// `/lessons/{id}/alone`: a kept lesson, taken alone.
    LessonAlone {
        id: String,
    },
    /// `/results/{session}`: a lesson session's results.
    Results {
        session: String,
    },
    /// `/room/{id}`: a training room (its trainer's page has `#trainer=<token>`).
    Room {
        id: String,
        scenario: Option<String>,
        variant: Option<String>,
        /// The PostgreSQL version its runs play on (`postgres=18`).
        postgres: Option<String>,
    },
    NotFound {
        path: String,
    },
}

impl Route {
    pub fn current() -> Route {
        let (path, query) = location();
        #[cfg(not(feature = "embed"))]
        let (path, query) = match crate::api::page_route() {
            // The page's own query (a one-file player's `?src=%23racelab-recording`) unless
            // the address gives one.
            Some(route) => match route.split_once('?') {
                Some((page, own)) if query.is_empty() => (page.to_owned(), format!("?{own}")),
                Some((page, _)) => (page.to_owned(), query),
                None => (route, query),
            },
            None => (path, query),
        };
        Route::parse(&path, &query)
    }

    /// `path` like `/lab/isolation/write-skew`, `query` like `?variant=serializable`. Which
    /// paths are pages is [`Page::at`]'s to say: the server reads the same list.
    pub fn parse(path: &str, query: &str) -> Route {
        let not_found = || Route::NotFound { path: path.to_owned() };
        let Some(page) = Page::at(path) else {
            return not_found();
        };
        match page {
            Page::Catalog => Route::Catalog,
            Page::Scenario { lab, scenario } => Route::Scenario {
                id: format!("{lab}/{scenario}"),
            },
            Page::Compare { lab, scenario } => Route::Compare {
                id: format!("{lab}/{scenario}"),
            },
            Page::Run(id) => Route::Replay { id: id.to_owned() },
            Page::Write => Route::Write,
            Page::Atlas => Route::Atlas,
            Page::Spec(id) => Route::Spec { id: id.to_owned() },
            Page::Lessons => Route::Lessons { id: None },
            Page::Lesson(id) => Route::Lessons {
                id: Some(id.to_owned()),
            },
            Page::LessonAlone(id) => Route::LessonAlone { id: id.to_owned() },
            Page::Results(session) => Route::Results {
                session: session.to_owned(),
            },
            Page::EmbedSpec(id) => Route::Embed {
                id: format!("spec/{id}"),
                options: embed_options(query),
            },
            Page::Room(id) => Route::Room {
                id: id.to_ascii_uppercase(),
                scenario: query_param(query, "scenario"),
                variant: query_param(query, "variant"),
                postgres: query_param(query, "postgres"),
            },
            Page::EmbedRecording => match query_param(query, "src").filter(|src| !src.is_empty()) {
                Some(src) => Route::EmbedRecording {
                    src,
                    live: query_param(query, "live").filter(|live| !live.is_empty()),
                    options: embed_options(query),
                },
                None => not_found(),
            },
            Page::EmbedLesson(id) => Route::EmbedLesson {
                id: id.to_owned(),
                compact: embed_options(query).opening.compact,
            },
            Page::EmbedRun(id) => Route::EmbedRun {
                id: id.to_owned(),
                options: embed_options(query),
            },
            Page::Embed { lab, scenario } => Route::Embed {
                id: format!("{lab}/{scenario}"),
                options: embed_options(query),
            },
        }
    }
}

fn embed_options(query: &str) -> EmbedOptions {
    EmbedOptions {
        variant: query_param(query, "variant"),
        opening: Opening {
            autoplay: Autoplay::parse(query_param(query, "autoplay").as_deref()),
            compact: query_param(query, "view").as_deref() != Some("detailed"),
            ..Opening::from_query(query)
        },
    }
}

impl Opening {
    /// What a page's query asks of its panel (`mode=step`, `predict=1`, `postgres=18`); the
    /// view and autoplay are each page's own to choose.
    pub fn from_query(query: &str) -> Opening {
        Opening {
            step: query_param(query, "mode").as_deref() == Some("step"),
            predict: query_param(query, "predict").is_some_and(|v| v == "1" || v == "true"),
            postgres: query_param(query, "postgres").unwrap_or_default(),
            ..Opening::default()
        }
    }
}

/// One parameter of a query string (`?a=1&b=2`), decoded by the browser.
/// Member `name` of an address's fragment (`#trainer=<token>&results=<id>`): the trainer's
/// secrets ride there, since a browser never sends the fragment to any server.
#[cfg(not(feature = "embed"))]
pub fn fragment_param(fragment: &str, name: &str) -> Option<String> {
    fragment
        .split('&')
        .find_map(|member| member.strip_prefix(name)?.strip_prefix('='))
        .filter(|value| !value.is_empty())
        .map(str::to_owned)
}

pub fn query_param(query: &str, name: &str) -> Option<String> {
    web_sys::UrlSearchParams::new_with_str(query).ok()?.get(name)
}

#[cfg(test)]
mod fragment_tests {
    use super::fragment_param;

    #[test]
    fn a_trainers_secrets_are_read_from_the_fragment() {
        let fragment = "trainer=t0k3n&results=5e55";
        assert_eq!(fragment_param(fragment, "trainer").as_deref(), Some("t0k3n"));
        assert_eq!(fragment_param(fragment, "results").as_deref(), Some("5e55"));
        assert_eq!(fragment_param("trainer=t0k3n", "results"), None);
        assert_eq!(fragment_param("trainers=x&trainer=", "trainer"), None);
    }
}
