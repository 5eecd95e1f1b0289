//! The app's pages, by their paths: one list, read by the app to choose what to draw and by the
//! server to answer a path that is no page with a 404 (a link checker, a crawler and a browser's
//! history learn the link is dead), while every page, however deep, still loads the app.

/// A page of the app, as its path names it (its query is the app's to read).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Page<'a> {
    /// `/`: the labs and their scenarios.
    Catalog,
    /// `/lab/{lab}/{scenario}`.
    Scenario { lab: &'a str, scenario: &'a str },
    /// `/lab/{lab}/{scenario}/compare`: its variants side by side.
    Compare { lab: &'a str, scenario: &'a str },
    /// `/runs/{id}`: a stored run, replayed.
    Run(&'a str),
    /// `/write`: a reader's own race.
    Write,
    /// `/atlas`: the classic anomalies at each isolation level.
    Atlas,
    /// `/s/{id}`: a saved spec.
    Spec(&'a str),
    /// `/room/{id}`: a training room.
    Room(&'a str),
    /// `/lessons`: write a trainer's lesson.
    Lessons,
    /// `/lessons/{id}`: a kept lesson.
    Lesson(&'a str),
    /// `/lessons/{id}/alone`: a kept lesson, taken alone.
    LessonAlone(&'a str),
    /// `/results/{session}`: the results of one session a room ran of a lesson.
    Results(&'a str),
    /// `/embed/{lab}/{scenario}`: a scenario in an iframe.
    Embed { lab: &'a str, scenario: &'a str },
    /// `/embed/s/{id}`: a saved spec in an iframe.
    EmbedSpec(&'a str),
    /// `/embed/runs/{id}`: a stored run in an iframe.
    EmbedRun(&'a str),
    /// `/embed/lessons/{id}`: a kept lesson, taken alone, in an iframe (a course's page).
    EmbedLesson(&'a str),
    /// `/embed/recording?src=…`: a recording file, played.
    EmbedRecording,
}

impl<'a> Page<'a> {
    /// The page at `path` (`/lab/isolation/write-skew`; a trailing `/` or doubled ones are
    /// forgiven), or none.
    pub fn at(path: &'a str) -> Option<Page<'a>> {
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        Some(match parts.as_slice() {
            [] => Page::Catalog,
            ["lab", lab, scenario] => Page::Scenario { lab, scenario },
            ["lab", lab, scenario, "compare"] => Page::Compare { lab, scenario },
            ["runs", id] => Page::Run(id),
            ["write"] => Page::Write,
            ["atlas"] => Page::Atlas,
            ["s", id] => Page::Spec(id),
            ["room", id] => Page::Room(id),
            ["lessons"] => Page::Lessons,
            ["lessons", id] => Page::Lesson(id),
            ["lessons", id, "alone"] => Page::LessonAlone(id),
            ["results", session] => Page::Results(session),
            ["embed", "recording"] => Page::EmbedRecording,
            ["embed", "s", id] => Page::EmbedSpec(id),
            ["embed", "runs", id] => Page::EmbedRun(id),
            ["embed", "lessons", id] => Page::EmbedLesson(id),
            ["embed", lab, scenario] => Page::Embed { lab, scenario },
            _ => return None,
        })
    }
}

/// The path of scenario `id`'s page: `/lab/isolation/write-skew`, or a reader's spec's
/// `/s/0123456789abcdef` (its id is `spec/0123456789abcdef`).
pub fn scenario_page(id: &str) -> String {
    match id.strip_prefix("spec/") {
        Some(spec) => format!("/s/{spec}"),
        None => format!("/lab/{id}"),
    }
}

/// The path of scenario `id`'s embed: `/embed/isolation/write-skew`, or `/embed/s/…`.
pub fn embed_page(id: &str) -> String {
    match id.strip_prefix("spec/") {
        Some(spec) => format!("/embed/s/{spec}"),
        None => format!("/embed/{id}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_and_a_spec_each_have_a_page_and_an_embed_that_lead_back_to_them() {
        for id in ["isolation/write-skew", "spec/0123456789abcdef"] {
            let page = scenario_page(id);
            let embed = embed_page(id);
            let (from_page, from_embed) = match (Page::at(&page), Page::at(&embed)) {
                (Some(Page::Scenario { lab, scenario }), Some(Page::Embed { lab: l, scenario: s })) => {
                    (format!("{lab}/{scenario}"), format!("{l}/{s}"))
                }
                (Some(Page::Spec(a)), Some(Page::EmbedSpec(b))) => (format!("spec/{a}"), format!("spec/{b}")),
                other => panic!("{id}: {page} and {embed} are {other:?}"),
            };
            assert_eq!((from_page.as_str(), from_embed.as_str()), (id, id));
        }
    }

    #[test]
    fn each_page_by_its_path() {
        let write_skew = Page::Scenario {
            lab: "isolation",
            scenario: "write-skew",
        };
        for (path, page) in [
            ("/", Page::Catalog),
            ("", Page::Catalog),
            ("/lab/isolation/write-skew", write_skew),
            ("/lab/isolation/write-skew/", write_skew),
            ("//lab//isolation/write-skew", write_skew),
            (
                "/lab/isolation/write-skew/compare",
                Page::Compare {
                    lab: "isolation",
                    scenario: "write-skew",
                },
            ),
            ("/runs/abc", Page::Run("abc")),
            ("/write", Page::Write),
            ("/atlas", Page::Atlas),
            ("/s/0123", Page::Spec("0123")),
            ("/room/K7Q2", Page::Room("K7Q2")),
            ("/lessons", Page::Lessons),
            ("/lessons/0123", Page::Lesson("0123")),
            ("/results/5e55", Page::Results("5e55")),
            ("/lessons/0123/alone", Page::LessonAlone("0123")),
            ("/embed/recording", Page::EmbedRecording),
            ("/embed/s/0123", Page::EmbedSpec("0123")),
            ("/embed/runs/abc", Page::EmbedRun("abc")),
            ("/embed/lessons/0123", Page::EmbedLesson("0123")),
            (
                "/embed/outbox/dual-write",
                Page::Embed {
                    lab: "outbox",
                    scenario: "dual-write",
                },
            ),
        ] {
            assert_eq!(Page::at(path), Some(page), "{path}");
        }
    }

    #[test]
    fn anything_else_is_no_page() {
        for path in [
            "/nope",
            "/lab",
            "/lab/isolation",
            "/lab/isolation/write-skew/compare/more",
            "/runs",
            "/runs/a/b",
            "/write/x",
            "/s",
            "/embed",
            "/embed/a/b/c",
            "/favicon.ico",
        ] {
            assert_eq!(Page::at(path), None, "{path}");
        }
    }
}
