//! A saved spec's id (the first 16 hex digits of its text's SHA-256), as a reader gives it: a
//! trainer pastes a spec's link into a room, whatever page of it they copied.

/// Whether `id` could be a saved spec's id: anything else names no spec, and is not worth
/// asking the database about (a NUL byte in it would be an error there).
pub fn is_saved_id(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The spec a pasted text names: its id alone, `spec/<id>`, or any link to it
/// (`https://racelab.example/s/<id>?variant=p2`, its embed's `/embed/s/<id>`), spaces around
/// it forgiven.
pub fn saved_id(pasted: &str) -> Option<&str> {
    let pasted = pasted.trim();
    let path = pasted.split(['?', '#']).next().unwrap_or_default();
    let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or_default();
    let before = path.trim_end_matches('/').rsplit('/').nth(1);
    let names_a_spec = path == last || matches!(before, Some("s" | "spec"));
    (names_a_spec && is_saved_id(last)).then_some(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef";

    #[test]
    fn a_spec_is_found_by_its_id_or_any_link_to_it() {
        for pasted in [
            ID,
            " 0123456789abcdef\n",
            "spec/0123456789abcdef",
            "/s/0123456789abcdef",
            "https://racelab.example/s/0123456789abcdef",
            "https://racelab.example/s/0123456789abcdef/",
            "https://racelab.example/s/0123456789abcdef?variant=p2#top",
            "http://127.0.0.1:8080/embed/s/0123456789abcdef?variant=every",
        ] {
            assert_eq!(saved_id(pasted), Some(ID), "{pasted:?}");
        }
    }

    #[test]
    fn what_names_no_spec_is_refused() {
        for pasted in [
            "",
            "0123456789abcde",
            "0123456789abcdef0",
            "0123456789abcdeg",
            "https://racelab.example/runs/0123456789abcdef",
            "https://racelab.example/lab/isolation/write-skew",
            "https://racelab.example/s/",
            "0123456789abcdef\0",
        ] {
            assert_eq!(saved_id(pasted), None, "{pasted:?}");
        }
    }
}
