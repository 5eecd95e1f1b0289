//! The server's layers point one way. Each top-level module of `server/src` sits in one layer,
//! bottom first:
//!
//! ```text
//! services   config, services, health, embedded   where the services are, one probe each
//! sandbox    sandbox                              per-run namespaces, their cleanup and sweep
//! engine     engine, store                        runs, lanes, actor kinds, admission; run history
//! labs       labs, specs, lessons                 the scenarios, readers' specs, trainers' lessons
//! edges      control, clients, rooms, web, cli, crowd, db, recording, export
//! ```
//!
//! A module may use its own layer's and the layers below, never one above (the engine is handed
//! what it needs instead of reaching up for it), and no two top-level modules use each other,
//! directly or round a circle. This test reads the sources (every `crate::<module>` outside
//! comments) and fails on the first import that breaks either rule, naming the file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LAYERS: &[(&str, &[&str])] = &[
    ("services", &["config", "services", "health", "embedded"]),
    ("sandbox", &["sandbox"]),
    ("engine", &["engine", "store"]),
    ("labs", &["labs", "specs", "lessons"]),
    (
        "edges",
        &[
            "control",
            "clients",
            "rooms",
            "web",
            "cli",
            "crowd",
            "db",
            "recording",
            "export",
        ],
    ),
];

/// The layer of top-level module `module`, counted from the bottom.
fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, modules)| modules.contains(&module))
}

fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read server/src") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The top-level module a file of `server/src` belongs to (`engine` for `engine/run.rs`).
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).expect("under src");
    let first = relative.components().next().expect("a component");
    first.as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned()
}

/// The top-level modules `text` names as `crate::<module>`, comments left out.
fn uses(text: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        for (at, _) in code.match_indices("crate::") {
            let name: String = code[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                used.insert(name);
            }
        }
    }
    used
}

/// Every top-level module's uses of the others: `module → (used module → the first file)`.
fn graph() -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut graph: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for file in files {
        let module = module_of(&src, &file);
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read a source file");
        let edges = graph.entry(module.clone()).or_default();
        for used in uses(&text) {
            if used != module {
                edges.entry(used).or_insert_with(|| file.clone());
            }
        }
    }
    graph
}

#[test]
fn every_module_has_a_layer() {
    for module in graph().keys() {
        assert!(
            layer(module).is_some(),
            "server/src/{module} is in no layer: add it to LAYERS"
        );
    }
}

#[test]
fn no_module_reaches_up_a_layer() {
    let mut upward = Vec::new();
    for (module, used) in graph() {
        let Some(here) = layer(&module) else { continue };
        for (other, file) in used {
            if layer(&other).is_some_and(|there| there > here) {
                upward.push(format!(
                    "{} ({module}, layer {}) uses crate::{other} (layer {})",
                    file.display(),
                    LAYERS[here].0,
                    layer(&other).map_or("?", |l| LAYERS[l].0)
                ));
            }
        }
    }
    assert!(upward.is_empty(), "imports that point up:\n{}", upward.join("\n"));
}

#[test]
fn no_two_modules_use_each_other_round_a_circle() {
    let graph = graph();
    // Depth-first, marking the path: reaching a module already on the path closes a circle.
    fn visit<'a>(
        module: &'a str,
        graph: &'a BTreeMap<String, BTreeMap<String, PathBuf>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|m| *m == module) {
            let mut circle: Vec<String> = path[at..].iter().map(|m| (*m).to_owned()).collect();
            circle.push(module.to_owned());
            return Some(circle);
        }
        if !done.insert(module) {
            return None;
        }
        path.push(module);
        for next in graph.get(module).into_iter().flat_map(BTreeMap::keys) {
            if let Some(circle) = visit(next, graph, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        if let Some(circle) = visit(module, &graph, &mut Vec::new(), &mut done) {
            panic!("modules that use each other: {}", circle.join(" → "));
        }
    }
}

#[test]
fn the_reader_sees_through_comments_and_groups() {
    let text = "use crate::engine::Run; // crate::web is only named here\n/// [`crate::rooms`]\nlet x = crate::labs::find(\"a\");";
    assert_eq!(
        uses(text).into_iter().collect::<Vec<_>>(),
        ["engine", "labs"],
        "code counts, comments do not"
    );
}
