//! The documentation holds together: every table row has its header's cells, every relative link
//! names a file that exists, the README's code tour names every module a newcomer will meet, and
//! the licence Cargo.toml names is in the repository. Pure file reads: no service is needed.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// README.md, app/README.md and every page in docs/, with their text.
fn pages() -> Vec<(PathBuf, String)> {
    let mut paths = vec![root().join("README.md"), root().join("app/README.md")];
    let docs = std::fs::read_dir(root().join("docs")).expect("docs/");
    let mut more: Vec<PathBuf> = docs
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    more.sort();
    paths.extend(more);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, text)
        })
        .collect()
}

/// The lines outside fenced code blocks, with their numbers (from 1).
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .map(|(i, line)| (i + 1, line))
        .collect()
}

/// A table row's cells: `|`s that are not escaped (`\|`) nor inside inline code split it.
fn cells(row: &str) -> usize {
    let (mut count, mut code, mut escaped) = (0, false, false);
    for c in row.trim().trim_matches('|').chars() {
        match c {
            '\\' if !escaped => {
                escaped = true;
                continue;
            }
            '`' if !escaped => code = !code,
            '|' if !escaped && !code => count += 1,
            _ => {}
        }
        escaped = false;
    }
    count + 1
}

#[test]
fn every_table_row_has_as_many_cells_as_its_header() {
    let mut broken = Vec::new();
    for (path, text) in pages() {
        let mut header: Option<usize> = None;
        for (number, line) in prose(&text) {
            if !line.trim_start().starts_with('|') {
                header = None;
                continue;
            }
            let here = cells(line);
            match header {
                None => header = Some(here),
                Some(wanted) if wanted != here => broken.push(format!(
                    "{}:{number}: {here} cells, its header has {wanted}",
                    path.display()
                )),
                Some(_) => {}
            }
        }
    }
    assert_eq!(broken, Vec::<String>::new());
}

/// The targets of `](target)` links in `line` that are files of the repository (not a web
/// address, not an anchor on the same page), without their `#anchor`.
fn relative_links(line: &str) -> Vec<&str> {
    line.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &line[at + 2..];
            let target = &rest[..rest.find(')')?];
            let file = target.split('#').next().unwrap_or_default();
            let external = ["http://", "https://", "mailto:"].iter().any(|s| target.starts_with(s));
            (!external && !file.is_empty() && !file.contains(' ')).then_some(file)
        })
        .collect()
}

#[test]
fn every_relative_link_names_a_file_that_exists() {
    let mut broken = Vec::new();
    for (path, text) in pages() {
        let dir = path.parent().unwrap_or(Path::new("."));
        for (number, line) in prose(&text) {
            for target in relative_links(line) {
                if !dir.join(target).exists() {
                    broken.push(format!("{}:{number}: {target}", path.display()));
                }
            }
        }
    }
    assert_eq!(broken, Vec::<String>::new());
}

#[test]
fn links_are_found_and_web_addresses_are_not_files() {
    assert_eq!(
        relative_links("see [a](docs/a.md#x), [b](https://b.example) and [c](#here)"),
        ["docs/a.md"]
    );
    assert_eq!(cells("| a | `b | c` | d \\| e |"), 3);
}

/// The modules a newcomer meets in `dir`: its files and folders, but `lib.rs`, `main.rs` and
/// `mod.rs`, as the tour names them (`float.rs`, `proof/`).
fn modules(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            match entry.file_type().ok()?.is_dir() {
                true => Some(format!("{name}/")),
                false => name.ends_with(".rs").then_some(name),
            }
        })
        .filter(|name| !["lib.rs", "main.rs", "mod.rs"].contains(&name.as_str()))
        .collect();
    names.sort();
    names
}

#[test]
fn the_readmes_code_tour_names_every_module() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let start = readme.find("## Code tour").expect("a code tour");
    let tour = &readme[start..];
    let tour = &tour[..tour[3..].find("\n## ").map_or(tour.len(), |end| end + 3)];
    let mut missing = Vec::new();
    for dir in ["shared/src", "server/src", "server/src/specs"] {
        for module in modules(&root().join(dir)) {
            if !tour.contains(&format!("`{module}")) && !tour.contains(&format!("{dir}/{module}")) {
                missing.push(format!("{dir}/{module}"));
            }
        }
    }
    assert_eq!(missing, Vec::<String>::new(), "named in README.md's code tour");
}

#[test]
fn the_licence_cargo_names_is_in_the_repository() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let named = manifest
        .lines()
        .find_map(|line| line.strip_prefix("license = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("the workspace names a licence");
    assert_eq!(named, "MIT");
    let licence = std::fs::read_to_string(root().join("LICENSE")).expect("a LICENSE file");
    assert!(licence.starts_with("MIT License"), "{licence}");
    assert!(licence.contains("Permission is hereby granted, free of charge"));
}
