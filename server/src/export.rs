//! What racelab writes for hosts that run no racelab: the recording player's own files
//! (`racelab export --player DIR`), which a blog serves beside its recordings so that
//! `<racelab-scenario src="ws.racelab.json">` plays with nothing but static files behind it; and
//! one page that is the player and a recording together ([`one_file`], `racelab record --html`).
//!
//! The player is the built player app (`dist/player-app/`, which `trunk build --release` builds
//! beside the full app: only the recording's page, 60 % of the full app's weight), or, from a
//! build that made none (`trunk serve`), the full app, which plays recordings the same. Two changes a
//! static host needs: its page, `player.html`, names its assets relative to itself (the built
//! page names them from racelab's root) and names the page it shows (`data-racelab-route`: a
//! static host gives it a path of its own, not `/embed/recording`); and the loader, `embed.js`,
//! opens that `player.html` beside itself instead of racelab's page.

use base64::Engine as _;
use shared::markup::escape;
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

/// The player as the build left it: its folder, its page, the path that page names its files
/// under (`/player-app/`, or `/` for the full app) and the files it names.
struct Built {
    dir: PathBuf,
    index: PathBuf,
    page: String,
    prefix: &'static str,
    assets: Vec<String>,
}

/// The player app's folder in a build, and the path its page names its files under (the web
/// layer's, which serves it; export sits above it and reads it from there).
pub use crate::web::assets::PLAYER_APP;

impl Built {
    /// The player app in `dist`, else the full app; refused when `dist` holds neither.
    fn player(dist: &Path) -> Result<Built, ExportError> {
        let (folder, prefix) = PLAYER_APP;
        let (dir, prefix) = match dist.join(folder).join("index.html").is_file() {
            true => (dist.join(folder), prefix),
            false => (dist.to_owned(), "/"),
        };
        let index = dir.join("index.html");
        let page = std::fs::read_to_string(&index).map_err(|_| ExportError::NotBuilt(dist.to_owned()))?;
        let assets = assets_named(&page, &asset_candidates(&dir)?, prefix);
        if !assets.iter().any(|name| name.ends_with(".js")) {
            return Err(ExportError::NotTheApp(index));
        }
        Ok(Built {
            dir,
            index,
            page,
            prefix,
            assets,
        })
    }

    fn read(&self, name: &str) -> Result<Vec<u8>, ExportError> {
        let path = self.dir.join(name);
        std::fs::read(&path).map_err(|source| io(&path, source))
    }
}

/// Writes the recording player from the build in `dist` into `dir` (made if missing; files of
/// the same names are replaced, nothing else in it is touched).
pub fn player(dist: &Path, dir: &Path) -> Result<Exported, ExportError> {
    let built = Built::player(dist)?;
    std::fs::create_dir_all(dir).map_err(|source| io(dir, source))?;
    let mut exported = Exported {
        files: Vec::new(),
        bytes: 0,
    };
    for name in &built.assets {
        let to = dir.join(name);
        let bytes = std::fs::copy(built.dir.join(name), &to).map_err(|source| io(&to, source))?;
        exported.add(name, bytes);
    }
    let written = [
        (PLAYER_PAGE, player_page(&built.page, &built.assets, built.prefix)),
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
/// their `.gz` twins, which only racelab's server sends, nor the embed and player apps' folders).
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

/// Those of `candidates` the page names under `prefix` (`"/name"` or `'/name'`, for `/`).
fn assets_named(page: &str, candidates: &[String], prefix: &str) -> Vec<String> {
    candidates
        .iter()
        .filter(|name| {
            ['"', '\'']
                .iter()
                .any(|quote| page.contains(&format!("{quote}{prefix}{name}")))
        })
        .cloned()
        .collect()
}

/// The app's page as the player: every asset named relative to the page, and the page it
/// shows named on its body.
fn player_page(page: &str, assets: &[String], prefix: &str) -> String {
    let mut page = page.to_owned();
    for name in assets {
        for quote in ['"', '\''] {
            page = page.replace(&format!("{quote}{prefix}{name}"), &format!("{quote}./{name}"));
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

/// The folder of a site ([`site_index`]) that holds its recordings.
pub const SITE_RUNS: &str = "runs";
/// The folder of a site that holds its player ([`player`]).
pub const SITE_PLAYER: &str = "racelab";

/// One race of an exported site: a scenario's variant on one PostgreSQL, recorded, or why not.
pub struct SiteEntry {
    pub lab: String,
    pub scenario: String,
    pub title: String,
    pub hook: String,
    pub variant: String,
    pub about: String,
    /// The PostgreSQL major version it played on, where the site has several.
    pub postgres: Option<u32>,
    /// The recording's file name in [`SITE_RUNS`] and its stamp line; or why it was not made.
    pub made: Result<(String, String), String>,
}

/// The site's front page: every lab, its scenarios, and each variant linking to its recording
/// played in the player beside it (all relative, so the site works under any path on any host).
pub fn site_index(entries: &[SiteEntry], atlas: bool, made: &str) -> String {
    let mut body = String::new();
    if atlas {
        body.push_str(&format!(
            "<p><a class=\"atlas\" href=\"{SITE_ATLAS}\">The anomaly atlas</a>: every classic anomaly at \
             every isolation level, each cell its run.</p>\n"
        ));
    }
    let (mut lab, mut scenario) = (None::<&str>, None::<&str>);
    for entry in entries {
        if lab != Some(&entry.lab) {
            if scenario.is_some() {
                body.push_str("</ul></section>\n");
            }
            body.push_str(&format!("<h2>{}</h2>\n", escape(&entry.lab)));
            (lab, scenario) = (Some(entry.lab.as_str()), None);
        }
        if scenario != Some(&entry.scenario) {
            if scenario.is_some() {
                body.push_str("</ul></section>\n");
            }
            body.push_str(&format!(
                "<section id=\"{}\"><h3>{}</h3><p>{}</p><ul>\n",
                escape(&entry.scenario.replace('/', "-")),
                escape(&entry.title),
                escape(&entry.hook)
            ));
            scenario = Some(entry.scenario.as_str());
        }
        let on = entry.postgres.map(|m| format!(" · PostgreSQL {m}")).unwrap_or_default();
        let line = match &entry.made {
            Ok((file, stamp)) => format!(
                "<li><a class=\"race\" href=\"{SITE_PLAYER}/{PLAYER_PAGE}?src=../{SITE_RUNS}/{file}&amp;view=detailed\">{}{on}</a> \
                 — {} <small>({}; <a href=\"{SITE_RUNS}/{file}\">the file</a>)</small></li>\n",
                escape(&entry.variant),
                escape(&entry.about),
                escape(stamp),
                file = escape(file)
            ),
            Err(why) => format!(
                "<li class=\"missing\">{}{on} — not recorded: {}</li>\n",
                escape(&entry.variant),
                escape(why)
            ),
        };
        body.push_str(&line);
    }
    if scenario.is_some() {
        body.push_str("</ul></section>\n");
    }
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>racelab: races recorded on real databases</title>\
         <style>body{{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}}\
         h3{{margin-bottom:0}}h3+p{{margin-top:.2rem;color:#555}}li{{margin:.3rem 0}}.missing{{color:#777}}\
         small{{color:#666}}</style></head>\n<body>\n<h1>racelab: races recorded on real databases</h1>\n\
         <p>Every race below happened on a real database; each plays here from its recording, with no \
         server behind this page. {}</p>\n{body}</body></html>\n",
        escape(made)
    )
}

/// The site's atlas page, beside its index.
pub const SITE_ATLAS: &str = "atlas.html";

/// One cell of an exported atlas: an entry at a level, judged from the run its recording holds.
pub struct AtlasCell {
    pub entry: &'static shared::atlas::Entry,
    pub level: &'static str,
    pub postgres: Option<u32>,
    /// The cell as judged, and its recording's file in [`SITE_RUNS`]; or why it was not made.
    pub made: Result<(shared::atlas::Cell, String), String>,
}

/// The judgement of a spec recording's run, for `entry`: from its proof and its steps (its
/// every-permutation matrix's first row, the entry's one permutation).
pub fn judged(entry: &shared::atlas::Entry, recording: &shared::recording::Recording) -> shared::atlas::Cell {
    let proof = recording.run.events.iter().rev().find_map(|e| match &e.kind {
        shared::EventKind::Proof { proof } => Some(proof.as_ref()),
        _ => None,
    });
    let steps = recording
        .spec
        .iter()
        .flat_map(|spec| spec.matrix.iter())
        .find_map(|e| match &e.kind {
            shared::EventKind::Permutation { steps, .. } => Some(steps.as_slice()),
            _ => None,
        })
        .unwrap_or_default();
    shared::atlas::Cell::judge(entry, proof, steps)
}

/// The atlas page: a row per entry, a column per level (and per PostgreSQL, where several),
/// each cell what its run showed, linking to that run in the player.
pub fn atlas_page(cells: &[AtlasCell], made: &str) -> String {
    let mut columns: Vec<(&str, Option<u32>)> = Vec::new();
    for cell in cells {
        if !columns.contains(&(cell.level, cell.postgres)) {
            columns.push((cell.level, cell.postgres));
        }
    }
    // In a region of its own that scrolls, and can be reached by keyboard, should a phone be
    // narrower than the table.
    let mut table = String::from(
        "<div class=\"wide\" tabindex=\"0\" role=\"region\" aria-label=\"the atlas\"><table><tr><th>anomaly</th>",
    );
    for (level, postgres) in &columns {
        let on = postgres.map(|m| format!(" · {m}")).unwrap_or_default();
        table.push_str(&format!("<th>{}{on}</th>", escape(level)));
    }
    table.push_str("</tr>\n");
    let mut rows: Vec<&shared::atlas::Entry> = Vec::new();
    for cell in cells {
        if !rows.iter().any(|e| e.id == cell.entry.id) {
            rows.push(cell.entry);
        }
    }
    for entry in rows {
        table.push_str(&format!(
            "<tr><th>{} <small>{}</small></th>",
            escape(entry.name),
            escape(entry.class)
        ));
        for (level, postgres) in &columns {
            let cell = cells
                .iter()
                .find(|c| c.entry.id == entry.id && c.level == *level && c.postgres == *postgres);
            let td = match cell.map(|c| &c.made) {
                Some(Ok((judged, file))) => format!(
                    "<td class=\"{}\"><a class=\"cell\" href=\"{SITE_PLAYER}/{PLAYER_PAGE}?src=../{SITE_RUNS}/{}&amp;view=detailed\" title=\"{}\">{}</a></td>",
                    if judged.allowed() { "allowed" } else { "prevented" },
                    escape(file),
                    escape(&judged.sentence()),
                    escape(&judged.label())
                ),
                Some(Err(why)) => format!("<td class=\"missing\" title=\"{}\">not recorded</td>", escape(why)),
                None => "<td></td>".to_owned(),
            };
            table.push_str(&td);
        }
        table.push_str("</tr>\n");
    }
    table.push_str("</table></div>\n");
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>racelab: the anomaly atlas, recorded</title>\
         <style>body{{font:16px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}}\
         table{{border-collapse:collapse;width:100%}}th,td{{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left}}\
         td.allowed{{background:#ffebe9}}td.prevented{{background:#dafbe1}}td.missing{{color:#777}}small{{color:#666}}\
         .wide{{overflow-x:auto}}@media (max-width:32rem){{body{{font-size:13px;padding:0 .4rem}}th,td{{padding:.2rem .25rem}}}}</style>\
         </head>\n<body>\n<p><a href=\"index.html\">All races</a></p>\n<h1>The anomaly atlas, recorded</h1>\n\
         <p>Each classic anomaly played at each isolation level on a real PostgreSQL; each cell is what \
         its run showed, judged from the dependency cycle its transactions closed (or did not), and \
         opens that run. {}</p>\n{table}</body></html>\n",
        escape(made)
    )
}

/// The element of a one-file player that holds its recording.
pub const RECORDING_ELEMENT: &str = "racelab-recording";
/// The element of a one-file player that holds its wasm (gzip, then base64).
const WASM_ELEMENT: &str = "racelab-wasm";
/// The element of a one-file player that holds its script, as text.
const SCRIPT_ELEMENT: &str = "racelab-script";

/// One page that is the player and `recording` (a recording's JSON text) together, titled
/// `title`: it plays opened from disk (`file://`, where a page can fetch nothing, not even its
/// own files) as from any host, and as an iframe where a host strips scripts. Its styles are
/// inlined; its script is carried as text and imported from a `blob:` address (or, should its
/// text hold `</`, which could end the element, from a `data:` address in base64, a third
/// larger once gzipped); its wasm is carried gzipped, as
/// base64, and unpacked by the browser's own `DecompressionStream`; its recording is a JSON
/// element the app reads by id instead of fetching.
pub fn one_file(dist: &Path, recording: &str, title: &str) -> Result<String, ExportError> {
    let built = Built::player(dist)?;
    let script = built.assets.iter().find(|name| name.ends_with(".js"));
    let wasm = built.assets.iter().find(|name| name.ends_with("_bg.wasm"));
    let (Some(script), Some(wasm)) = (script, wasm) else {
        return Err(ExportError::NotTheApp(built.index));
    };
    // The build's comments (what each part of the page is for) are for its readers, not a file
    // that is sent whole to every one of its visitors.
    let mut page = without_comments(&built.page);
    for name in &built.assets {
        let inline = match name.ends_with(".css") {
            true => format!("<style>{}</style>", String::from_utf8_lossy(&built.read(name)?)),
            false => String::new(),
        };
        while let Some(tag) = tag_naming(&page, name, built.prefix) {
            page.replace_range(tag, &inline);
        }
    }
    let script = built.read(script)?;
    let as_text = std::str::from_utf8(&script)
        .ok()
        .filter(|text| fits_a_script_element(text));
    let loader = module_loader(&script, as_text.is_some());
    let script_element = as_text
        .map(|text| format!("<script type=\"text/plain\" id=\"{SCRIPT_ELEMENT}\">{text}</script>\n"))
        .unwrap_or_default();
    let page = replace_module_script(&page, &loader).ok_or_else(|| ExportError::NotTheApp(built.index.clone()))?;
    // `.gz` beside the wasm: the build's post-build hook writes it (zopfli, else gzip -9).
    let packed = built
        .read(&format!("{wasm}.gz"))
        .map_err(|_| ExportError::NotBuilt(dist.to_owned()))?;
    let route = format!("{}?src=%23{RECORDING_ELEMENT}", crate::web::headers::RECORDING_PLAYER);
    let carried = format!(
        "<script type=\"application/json\" id=\"{RECORDING_ELEMENT}\">{}</script>\n\
         <script type=\"text/plain\" id=\"{WASM_ELEMENT}\">{}</script>\n{}</body>",
        json_in_html(recording),
        base64::engine::general_purpose::STANDARD.encode(packed),
        script_element
    );
    Ok(page
        .replacen(
            "<title>racelab</title>",
            &format!("<title>{} · racelab</title>", escape(title)),
            1,
        )
        .replacen(
            "<body class=\"racelab-page\"",
            &format!("<body class=\"racelab-page\" data-racelab-route=\"{route}\""),
            1,
        )
        .replacen("</body>", &carried, 1))
}

/// `page` without its HTML comments (`<!-- … -->`), in the markup only: the text of an element
/// whose text is not markup (`<script>`, `<style>`, `<title>`, `<textarea>`) is left as it is,
/// whatever it holds, up to that element's end tag.
fn without_comments(page: &str) -> String {
    const TEXT_ELEMENTS: [&str; 4] = ["script", "style", "title", "textarea"];
    let mut kept = String::with_capacity(page.len());
    let mut at = 0;
    while let Some(found) = page[at..].find('<') {
        let tag = at + found;
        kept.push_str(&page[at..tag]);
        let rest = &page[tag..];
        if rest.starts_with("<!--") {
            // A comment that never closes runs to the end of the page, as a browser reads it.
            at = rest.find("-->").map_or(page.len(), |end| tag + end + 3);
            continue;
        }
        let opens = TEXT_ELEMENTS.iter().find(|name| {
            let after = 1 + name.len();
            rest.get(1..after).is_some_and(|n| n.eq_ignore_ascii_case(name))
                && rest[after..].starts_with(|c: char| c == '>' || c.is_ascii_whitespace())
        });
        let Some(name) = opens else {
            kept.push('<');
            at = tag + 1;
            continue;
        };
        // The element whole, its text untouched, to its end tag (or the page's end).
        let end = format!("</{name}");
        let closes = rest
            .to_ascii_lowercase()
            .find(&end)
            .map_or(rest.len(), |close| close + end.len());
        kept.push_str(&rest[..closes]);
        at = tag + closes;
    }
    kept.push_str(&page[at..]);
    kept
}

/// Where in `page` the tag is that names `{prefix}name` in double quotes (a stylesheet or
/// preload link), from its `<` to its `>`.
fn tag_naming(page: &str, name: &str, prefix: &str) -> Option<std::ops::Range<usize>> {
    let at = page.find(&format!("\"{prefix}{name}\""))?;
    let start = page[..at].rfind('<')?;
    let end = at + page[at..].find('>')? + 1;
    Some(start..end)
}

/// Whether `text` can be the text of a `<script>` element as it is: nothing in it can end the
/// element (`</`) or change how the browser reads it (`<!--`).
fn fits_a_script_element(text: &str) -> bool {
    !text.contains("</") && !text.contains("<!--")
}

/// The app's start: its script imported from the page's element that carries it (`carried`),
/// else from a `data:` address; its wasm unpacked from the page.
fn module_loader(script: &[u8], carried: bool) -> String {
    let import = match carried {
        true => format!(
            "const script = document.getElementById('{SCRIPT_ELEMENT}').textContent;\n\
             const url = URL.createObjectURL(new Blob([script], {{ type: 'text/javascript' }}));\n\
         const {{ default: init }} = await import(url);\n\
         URL.revokeObjectURL(url);"
        ),
        false => format!(
            "import init from 'data:text/javascript;base64,{}';",
            base64::engine::general_purpose::STANDARD.encode(script)
        ),
    };
    format!(
        "<script type=\"module\">\n\
         {import}\n\
         const text = document.getElementById('{WASM_ELEMENT}').textContent;\n\
         const packed = Uint8Array.from(atob(text), c => c.charCodeAt(0));\n\
         const wasm = new Blob([packed]).stream().pipeThrough(new DecompressionStream('gzip'));\n\
         await init({{ module_or_path: new Response(wasm, {{ headers: {{ 'Content-Type': 'application/wasm' }} }}) }});\n\
         </script>"
    )
}

/// `page` with Trunk's module script (the one that starts the app) replaced by `loader`.
fn replace_module_script(page: &str, loader: &str) -> Option<String> {
    let start = page.find("<script type=\"module\">")?;
    let end = start + page[start..].find("</script>")? + "</script>".len();
    Some(format!("{}{loader}{}", &page[..start], &page[end..]))
}

/// JSON as the text of a `<script>` element: no `<` in it at all (so no `</script>` or `<!--`
/// can end or change the element); JSON has `<` only inside strings, where `\u003c` means the
/// same.
fn json_in_html(json: &str) -> String {
    json.replace('<', "\\u003c")
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
        let named = assets_named(PAGE, &candidates(), "/");
        assert_eq!(named, ["racelab-app-9f.js", "racelab-app-9f_bg.wasm", "style-1a2b.css"]);
    }

    #[test]
    fn the_player_names_its_files_beside_itself_and_its_page_on_its_body() {
        let page = player_page(PAGE, &assets_named(PAGE, &candidates(), "/"), "/");
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
    fn the_player_app_names_its_files_under_its_folder_and_the_player_beside_itself() {
        let page = PAGE.replace("=\"/", "=\"/player-app/").replace("'/", "'/player-app/");
        let named = assets_named(&page, &candidates(), PLAYER_APP.1);
        assert_eq!(named, ["racelab-app-9f.js", "racelab-app-9f_bg.wasm", "style-1a2b.css"]);
        assert!(assets_named(&page, &candidates(), "/").is_empty(), "not from the root");
        let player = player_page(&page, &named, PLAYER_APP.1);
        assert!(!player.contains("/player-app/"), "{player}");
        assert!(player.contains("import init from './racelab-app-9f.js'"), "{player}");
        let tag = tag_naming(&page, "style-1a2b.css", PLAYER_APP.1).expect("the stylesheet's link");
        assert!(page[tag].starts_with("<link rel=\"stylesheet\""));
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
    fn a_stylesheet_link_is_found_whole_and_a_script_import_is_not() {
        let tag = tag_naming(PAGE, "style-1a2b.css", "/").expect("the stylesheet's link");
        assert_eq!(
            &PAGE[tag],
            r#"<link rel="stylesheet" href="/style-1a2b.css" integrity="sha384-x"/>"#
        );
        let tag = tag_naming(PAGE, "racelab-app-9f.js", "/").expect("the preload");
        assert!(PAGE[tag].starts_with("<link rel=\"modulepreload\""));
        let page = PAGE.replace(
            r#"<link rel="modulepreload" href="/racelab-app-9f.js" crossorigin="anonymous"/>"#,
            "",
        );
        assert_eq!(
            tag_naming(&page, "racelab-app-9f.js", "/"),
            None,
            "the import in single quotes is no tag"
        );
    }

    #[test]
    fn the_module_script_is_replaced_and_nothing_else() {
        let page = replace_module_script(PAGE, "<script>start</script>").expect("a module script");
        assert!(page.contains("<script>start</script>\n</head>"), "{page}");
        assert!(!page.contains("import init from '/racelab-app-9f.js'"), "{page}");
        assert!(page.contains("<body class=\"racelab-page\">"));
    }

    #[test]
    fn comments_leave_the_markup_and_stay_in_scripts() {
        let page = "<head><!-- why --><script>let a = '<!-- kept -->';</script>\n<!-- and\nwhy -->\
                    <style>/* s */</style></head><body><!-- unclosed";
        assert_eq!(
            without_comments(page),
            "<head><script>let a = '<!-- kept -->';</script>\n<style>/* s */</style></head><body>"
        );
        assert_eq!(without_comments(PAGE), PAGE, "a page with no comments is as it was");
        // Two comment marks in one script, a tag in capitals, a title's text, and markup after.
        let page = "<SCRIPT type=module>a='<!--';b='<!--';</SCRIPT><p>x</p><!-- c -->tail\
                    <title>a <!-- b --></title><scripted>";
        assert_eq!(
            without_comments(page),
            "<SCRIPT type=module>a='<!--';b='<!--';</SCRIPT><p>x</p>tail<title>a <!-- b --></title><scripted>"
        );
    }

    #[test]
    fn a_script_that_could_end_its_element_is_carried_in_base64() {
        assert!(fits_a_script_element("let a = b < c; export default init;"));
        assert!(!fits_a_script_element("let s = '</script>';"));
        assert!(!fits_a_script_element("let s = '<!--';"));
        let carried = module_loader(b"export default function init() {}", true);
        assert!(
            carried.contains(&format!("getElementById('{SCRIPT_ELEMENT}')")),
            "{carried}"
        );
        assert!(!carried.contains("data:text/javascript"), "{carried}");
        let inline = module_loader(b"let s = '</script>'", false);
        assert!(
            inline.contains("import init from 'data:text/javascript;base64,"),
            "{inline}"
        );
    }

    #[test]
    fn a_recording_cannot_end_the_element_that_carries_it() {
        let json = r#"{"title":"</script><script>alert(1)</script><!--"}"#;
        let carried = json_in_html(json);
        assert!(!carried.contains('<'), "{carried}");
        let back: serde_json::Value = serde_json::from_str(&carried).expect("still JSON");
        assert_eq!(back["title"], "</script><script>alert(1)</script><!--");
        assert_eq!(escape("<b>&</b>"), "&lt;b&gt;&amp;&lt;/b&gt;");
    }

    fn entry(scenario: &str, variant: &str, made: Result<(String, String), String>) -> SiteEntry {
        SiteEntry {
            lab: "Isolation".into(),
            scenario: scenario.into(),
            title: format!("{scenario} <title>"),
            hook: "a hook".into(),
            variant: variant.into(),
            about: "about it".into(),
            postgres: Some(15),
            made,
        }
    }

    #[test]
    fn the_site_index_links_each_recording_through_the_player_and_says_what_is_missing() {
        let page = site_index(
            &[
                entry(
                    "isolation/write-skew",
                    "SERIALIZABLE",
                    Ok(("ws.racelab.json".into(), "recorded on PostgreSQL 15.20".into())),
                ),
                entry(
                    "isolation/write-skew",
                    "READ COMMITTED",
                    Err("the broker is down".into()),
                ),
                entry(
                    "isolation/lost-update",
                    "ATOMIC",
                    Ok(("lu.racelab.json".into(), "recorded".into())),
                ),
            ],
            false,
            "Made 6 Dec 2026.",
        );
        assert!(page.contains(
            "<a class=\"race\" href=\"racelab/player.html?src=../runs/ws.racelab.json&amp;view=detailed\">SERIALIZABLE · PostgreSQL 15</a>"
        ));
        assert!(page.contains("READ COMMITTED · PostgreSQL 15 — not recorded: the broker is down"));
        assert_eq!(page.matches("<section").count(), 2, "one section a scenario");
        assert_eq!(page.matches("</section>").count(), 2);
        assert!(page.contains("isolation/write-skew &lt;title&gt;"), "escaped");
    }

    #[test]
    fn the_atlas_page_has_a_row_an_entry_and_a_column_a_level_each_cell_linking_its_run() {
        let entry = &shared::atlas::ENTRIES[0];
        let cells: Vec<AtlasCell> = shared::atlas::LEVELS
            .iter()
            .map(|level| AtlasCell {
                entry,
                level,
                postgres: None,
                made: match *level {
                    "SERIALIZABLE" => Err("no server".into()),
                    _ => Ok((shared::atlas::Cell::Waited, format!("{level}.racelab.json"))),
                },
            })
            .collect();
        let page = atlas_page(&cells, "now");
        assert_eq!(page.matches("<tr>").count(), 2, "a header and one entry");
        assert_eq!(page.matches("<a class=\"cell\"").count(), 2);
        assert!(
            page.contains("href=\"racelab/player.html?src=../runs/READ COMMITTED.racelab.json&amp;view=detailed\"")
        );
        assert!(page.contains(">waits</a>") && page.contains("not recorded"));
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
