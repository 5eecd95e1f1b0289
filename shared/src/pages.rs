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
    /// `/embed/{lab}/{scenario}`: a scenario in an iframe.
    Embed { lab: &'a str, scenario: &'a str },
    /// `/embed/s/{id}`: a saved spec in an iframe.
    EmbedSpec(&'a str),
    /// `/embed/runs/{id}`: a stored run in an iframe.
    EmbedRun(&'a str),
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
            ["embed", "recording"] => Page::EmbedRecording,
            ["embed", "s", id] => Page::EmbedSpec(id),
            ["embed", "runs", id] => Page::EmbedRun(id),
            ["embed", lab, scenario] => Page::Embed { lab, scenario },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ("/embed/recording", Page::EmbedRecording),
            ("/embed/s/0123", Page::EmbedSpec("0123")),
            ("/embed/runs/abc", Page::EmbedRun("abc")),
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
