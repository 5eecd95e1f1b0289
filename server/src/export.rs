//! What racelab writes for hosts that run no racelab: the recording player's own files
//! (`racelab export --player DIR`), which a blog serves beside its recordings so that
//! `<racelab-scenario src="ws.racelab.json">` plays with nothing but static files behind it.
//!
//! The player is the built app (`dist/`, `trunk build --release`) as it is, with two changes a
//! static host needs: its page, `player.html`, names its assets relative to itself (the app's
//! `index.html` names them from `/`, where racelab serves them) and names the page it shows
//! (`data-racelab-route`: a static host gives it a path of its own, not `/embed/recording`); and
//! the loader, `embed.js`, opens that `player.html` beside itself instead of racelab's page.

use std::path::{Path, PathBuf};

/// The page the player is, in the exported folder.
pub const PLAYER_PAGE: &str = "player.html";
/// The loader a host page includes, in the exported folder.
pub const LOADER: &str = "embed.js";

/// Why an export could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("no built app in {0} (build it with `trunk build --release`, or name it with --dist)")]
    NotBuilt(PathBuf),
    #[error("{0}: the app's page names no script to load: is it racelab's build?")]
    NotTheApp(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// What [`player`] wrote.
#[derive(Debug)]
pub struct Exported {
    /// Every file, by name, in the order written.
    pub files: Vec<String>,
    /// Their bytes, together.
    pub bytes: u64,
}

/// Writes the recording player from the built app in `dist` into `dir` (made if missing; files
/// of the same names are replaced, nothing else in it is touched).
pub fn player(dist: &Path, dir: &Path) -> Result<Exported, ExportError> {
    let index = dist.join("index.html");
    let page = std::fs::read_to_string(&index).map_err(|_| ExportError::NotBuilt(dist.to_owned()))?;
    let assets = assets_named(&page, &asset_candidates(dist)?);
    if !assets.iter().any(|name| name.ends_with(".js")) {
        return Err(ExportError::NotTheApp(index));
    }
    std::fs::create_dir_all(dir).map_err(|source| io(dir, source))?;
    let mut exported = Exported {
        files: Vec::new(),
        bytes: 0,
    };
    for name in &assets {
        let to = dir.join(name);
        let bytes = std::fs::copy(dist.join(name), &to).map_err(|source| io(&to, source))?;
        exported.add(name, bytes);
    }
    let written = [
        (PLAYER_PAGE, player_page(&page, &assets)),
        (LOADER, loader(crate::web::assets::EMBED_LOADER)),
    ];
    for (name, text) in written {
        let to = dir.join(name);
        std::fs::write(&to, &text).map_err(|source| io(&to, source))?;
        exported.add(name, text.len() as u64);
    }
    Ok(exported)
}

impl Exported {
    fn add(&mut self, name: &str, bytes: u64) {
        self.files.push(name.to_owned());
        self.bytes += bytes;
    }
}

fn io(path: &Path, source: std::io::Error) -> ExportError {
    ExportError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The files at the top of `dist` a page could name: the app's scripts, wasm and styles (not
/// their `.gz` twins, which only racelab's server sends, nor the embed app's folder).
fn asset_candidates(dist: &Path) -> Result<Vec<String>, ExportError> {
    let entries = std::fs::read_dir(dist).map_err(|source| io(dist, source))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| [".js", ".wasm", ".css"].iter().any(|ext| name.ends_with(ext)))
        .collect();
    names.sort();
    Ok(names)
}

/// Those of `candidates` the page names from the root (`"/name"` or `'/name'`).
fn assets_named(page: &str, candidates: &[String]) -> Vec<String> {
    candidates
        .iter()
        .filter(|name| {
            ["\"/", "'/"]
                .iter()
                .any(|quote| page.contains(&format!("{quote}{name}")))
        })
        .cloned()
        .collect()
}

/// The app's page as the player: every asset named relative to the page, and the page it
/// shows named on its body.
fn player_page(page: &str, assets: &[String]) -> String {
    let mut page = page.to_owned();
    for name in assets {
        for quote in ['"', '\''] {
            page = page.replace(&format!("{quote}/{name}"), &format!("{quote}./{name}"));
        }
    }
    page.replacen(
        "<body class=\"racelab-page\"",
        &format!(
            "<body class=\"racelab-page\" data-racelab-route=\"{}\"",
            crate::web::headers::RECORDING_PLAYER
        ),
        1,
    )
}

/// racelab's loader, opening the player beside it rather than racelab's own page.
fn loader(embed_js: &str) -> String {
    embed_js.replacen(
        &format!("var PLAYER = \"{}\";", crate::web::headers::RECORDING_PLAYER),
        &format!("var PLAYER = \"{PLAYER_PAGE}\";"),
        1,
    )
}

/// What an author pastes into a page, the player hosted at `at` (its URL path, as
/// `/racelab`): the loader and one element for script-friendly hosts, an iframe for the rest.
pub fn snippet(at: &str) -> String {
    let at = at.trim_end_matches('/');
    format!(
        "<script src=\"{at}/{LOADER}\" async></script>\n\
         <racelab-scenario src=\"ws.racelab.json\"></racelab-scenario>\n\n\
         where a host strips scripts, the player alone (src= relative to the player):\n\
         <iframe src=\"{at}/{PLAYER_PAGE}?src=/posts/ws.racelab.json\" title=\"racelab: a recording\" \
         style=\"width:100%;height:640px;border:0\"></iframe>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of Trunk's page for the app, shortened.
    const PAGE: &str = r#"<!doctype html><html><head>
<link rel="stylesheet" href="/style-1a2b.css" integrity="sha384-x"/>
<link rel="modulepreload" href="/racelab-app-9f.js" crossorigin="anonymous"/>
<link rel="preload" href="/racelab-app-9f_bg.wasm" as="fetch" type="application/wasm"/>
<script type="module">import init from '/racelab-app-9f.js';await init({ module_or_path: '/racelab-app-9f_bg.wasm' });</script>
</head>
<body class="racelab-page"></body></html>"#;

    fn candidates() -> Vec<String> {
        [
            "racelab-app-9f.js",
            "racelab-app-9f_bg.wasm",
            "style-1a2b.css",
            "old-77.js",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    #[test]
    fn only_the_files_the_page_names_go_out() {
        let named = assets_named(PAGE, &candidates());
        assert_eq!(named, ["racelab-app-9f.js", "racelab-app-9f_bg.wasm", "style-1a2b.css"]);
    }

    #[test]
    fn the_player_names_its_files_beside_itself_and_its_page_on_its_body() {
        let page = player_page(PAGE, &assets_named(PAGE, &candidates()));
        for root in ["\"/racelab", "'/racelab", "\"/style"] {
            assert!(!page.contains(root), "{root}: {page}");
        }
        assert!(page.contains("import init from './racelab-app-9f.js'"), "{page}");
        assert!(page.contains("module_or_path: './racelab-app-9f_bg.wasm'"), "{page}");
        assert!(
            page.contains("href=\"./style-1a2b.css\" integrity=\"sha384-x\""),
            "{page}"
        );
        assert!(page.contains("<body class=\"racelab-page\" data-racelab-route=\"/embed/recording\">"));
    }

    #[test]
    fn the_exported_loader_opens_the_player_beside_it() {
        let original = crate::web::assets::EMBED_LOADER;
        assert!(original.contains("var PLAYER = \"/embed/recording\";"));
        let exported = loader(original);
        assert!(exported.contains("var PLAYER = \"player.html\";"));
        assert!(!exported.contains("var PLAYER = \"/embed/recording\";"));
        assert_eq!(
            exported.len(),
            original.len() - "/embed/recording".len() + "player.html".len()
        );
    }

    #[test]
    fn the_snippet_names_the_folder_where_it_is_hosted() {
        let text = snippet("/racelab/");
        assert!(
            text.starts_with("<script src=\"/racelab/embed.js\" async></script>\n"),
            "{text}"
        );
        assert!(text.contains("<iframe src=\"/racelab/player.html?src="), "{text}");
    }

    #[test]
    fn a_folder_with_no_app_is_refused_by_name() {
        let empty = std::env::temp_dir().join(format!("racelab-export-empty-{}", std::process::id()));
        std::fs::create_dir_all(&empty).expect("a temporary folder");
        let refused = player(&empty, &empty.join("out"));
        assert!(
            matches!(&refused, Err(ExportError::NotBuilt(dist)) if dist == &empty),
            "{refused:?}"
        );
        let _ = std::fs::remove_dir_all(&empty);
    }
}
