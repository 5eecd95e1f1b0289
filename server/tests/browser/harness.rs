//! The browser tests' harness: the real server with the built app, a chromedriver of the test's
//! own, a headless Chromium session, DOM polling, screenshots and cleanup.
//!
//! Every test goes through [`run`], which
//! - takes the one browser slot (two cores: one Chromium at a time keeps timings meaningful and
//!   the tests deterministic, whatever `--test-threads` says),
//! - starts the real router in-process on port 0 with `dist` = the workspace's built app, plus a
//!   few host pages of its own for the embed tests ([`HOST_ROUTES`]),
//! - starts chromedriver on a free port with its own `TMPDIR` and a fresh profile,
//! - runs the test body, catching a panic so that the session is closed, chromedriver's process
//!   group killed and its folder removed before the panic goes on,
//! - and waits until every run the test started has left the database (the server lives in the
//!   test's runtime; ending the test while a sandbox is being dropped would leak it).
//!
//! Screenshots are of the whole page: the viewport is stretched to the page's height through the
//! DevTools device-metrics override (the same override makes a 360 px viewport; Chromium will not
//! make a window that narrow), after finite CSS animations have finished.

use crate::common;
use axum::Router;
use axum::response::Html;
use axum::routing::get;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use futures_util::FutureExt;
use hyper_util::client::legacy::connect::HttpConnector;
use racelab::web::{self, AppState};
use serde_json::{Value as Json, json};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// How often a wait looks at the page.
pub const POLL: Duration = Duration::from_millis(50);
/// How long a wait looks before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(20);
/// The window every test starts with.
pub const WINDOW: (u32, u32) = (1280, 900);
/// Full-page screenshots stop at this height.
pub const MAX_SHOT_HEIGHT: u32 = 6000;

/// One Chromium at a time (see the module doc).
static BROWSER_SLOT: Semaphore = Semaphore::const_new(1);
/// Numbers the temporary folders of one test binary.
static FOLDERS: AtomicU32 = AtomicU32::new(0);

/// The Chromium flags that work on this machine (TOOLCHAIN.md, "Browser tests").
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
];

/// The workspace root (`server/..`).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .expect("the workspace root exists")
}

/// The built app; fails the test at once when it has not been built.
pub fn dist() -> PathBuf {
    let dist = workspace().join("dist");
    assert!(
        dist.join("index.html").is_file(),
        "build the app first: scripts/test builds it ({} has no index.html)",
        dist.display()
    );
    dist
}

/// Where screenshots and measurements go: `target/screenshots/`.
pub fn screenshots() -> PathBuf {
    let dir = workspace().join("target").join("screenshots");
    std::fs::create_dir_all(&dir).expect("create target/screenshots");
    dir
}

/// Prints a measurement and appends it to `target/screenshots/measurements.txt`.
pub fn record_measurement(line: &str) {
    println!("measurement: {line}");
    let path = screenshots().join("measurements.txt");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("open measurements.txt");
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    writeln!(file, "[unix {since_epoch}] {line}").expect("write measurements.txt");
}

// ---------------------------------------------------------------------------------------------
// Host pages for the embed tests. Served by the test server next to the app, so the embed is a
// same-origin iframe of a page that has its own look, which the embed must leave alone.

/// The host's own look: what `reference` shows and the hosts must still show with the embed in.
const HOST_HEAD: &str = "<!doctype html><html lang=en><head><meta charset=utf-8>\
<meta name=viewport content='width=device-width, initial-scale=1'><title>host</title>\
<style>body{margin:0;font-family:Georgia,serif;font-size:17px;line-height:1.4;color:rgb(40,30,20);\
background:rgb(250,240,230)} p{margin:4px 8px}</style></head><body>";

const HOST_REFERENCE: &str = "<p id=ref>A blog post about write skew.</p></body></html>";

/// The iframe a reader pastes, and a listener that writes each reported height into `#h`.
const HOST_IFRAME: &str = "<p id=ref>A blog post about write skew.</p><div id=h></div>\
<iframe id=f src='/embed/isolation/write-skew?variant=serializable&autoplay=1' width=360 \
style='border:0;display:block;max-width:100%'></iframe>\
<script>window.addEventListener('message', function (e) {\
 if (e.data && e.data.type === 'racelab:height') {\
  document.getElementById('h').textContent = String(e.data.height);\
  (window.reportedHeights = window.reportedHeights || []).push(e.data.height);\
  document.getElementById('f').style.height = e.data.height + 'px';\
 }\
});</script></body></html>";

/// The one-line loader.
const HOST_SCRIPT: &str = "<p id=ref>A blog post about write skew.</p>\
<script src='/embed.js' data-scenario='isolation/write-skew' data-variant='serializable'></script>\
</body></html>";

/// Two `<racelab-scenario>` elements on one page, each its own race.
const HOST_ELEMENTS: &str = "<p id=ref>Two races in one post.</p>\
<racelab-scenario id=first scenario='isolation/write-skew' variant='serializable' autoplay></racelab-scenario>\
<p>Between them, the post goes on.</p>\
<racelab-scenario id=second scenario='isolation/lost-update' variant='read-committed' autoplay></racelab-scenario>\
<script src='/embed.js'></script></body></html>";

/// The page with two custom elements.
pub const HOST_ELEMENTS_ROUTE: &str = "/test-host/elements";

/// The host pages' paths, for the tests.
pub const HOST_ROUTES: (&str, &str, &str) = ("/test-host/reference", "/test-host/iframe", "/test-host/script");

fn host_pages() -> Router {
    let page = |body: &'static str| {
        let html = format!("{HOST_HEAD}{body}");
        get(move || async move { Html(html) })
    };
    Router::new()
        .route(HOST_ROUTES.0, page(HOST_REFERENCE))
        .route(HOST_ROUTES.1, page(HOST_IFRAME))
        .route(HOST_ROUTES.2, page(HOST_SCRIPT))
        .route(HOST_ELEMENTS_ROUTE, page(HOST_ELEMENTS))
}

/// A blog of another origin (its own server, on its own port): the page an author pastes an
/// embed into, as served elsewhere, so the embed is cross-origin as on a real blog. `paste` sets
/// what `/post` shows: a background and the pasted HTML.
pub struct Host {
    /// `http://127.0.0.1:<port>` of the host's server.
    pub base: String,
    post: Arc<std::sync::Mutex<String>>,
    /// Files it serves at `/files/<name>`, readable by other sites (as a static host whose
    /// author allowed it answers): recordings, say.
    files: Arc<std::sync::Mutex<std::collections::HashMap<String, String>>>,
}

impl Host {
    pub async fn start() -> Host {
        let post = Arc::new(std::sync::Mutex::new(String::new()));
        let files = Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
        let shown = post.clone();
        let served = files.clone();
        let app = Router::new()
            .route(
                "/post",
                get(move || {
                    let page = shown.lock().map(|p| p.clone()).unwrap_or_default();
                    async move { Html(page) }
                }),
            )
            .route(
                "/files/{name}",
                get(move |axum::extract::Path(name): axum::extract::Path<String>| {
                    let file = served.lock().ok().and_then(|f| f.get(&name).cloned());
                    async move {
                        use axum::http::{StatusCode, header};
                        use axum::response::IntoResponse;
                        match file {
                            Some(body) => (
                                [
                                    (header::CONTENT_TYPE, "application/json"),
                                    (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
                                ],
                                body,
                            )
                                .into_response(),
                            None => StatusCode::NOT_FOUND.into_response(),
                        }
                    }
                }),
            );
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("a free port");
        let address = listener.local_addr().expect("its address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Host {
            base: format!("http://{address}"),
            post,
            files,
        }
    }

    /// `/files/<name>` serves `body`, readable by any site; returns its address.
    pub fn serve(&self, name: &str, body: String) -> String {
        self.files.lock().expect("the files").insert(name.to_owned(), body);
        format!("{}/files/{name}", self.base)
    }

    /// `/post` becomes a page on `background` (a CSS colour) with `html` in its body.
    pub fn paste(&self, background: &str, html: &str) {
        let page = format!(
            "<!doctype html><html lang=en><head><meta charset=utf-8>\
             <meta name=viewport content='width=device-width, initial-scale=1'><title>a blog</title>\
             <style>body{{margin:0;padding:8px;font-family:Georgia,serif;background:{background}}}</style>\
             </head><body>{html}</body></html>"
        );
        *self.post.lock().expect("the post") = page;
    }

    pub fn url(&self) -> String {
        format!("{}/post", self.base)
    }
}

/// How the test server knows its readers.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Readers {
    /// Not by address: the per-reader caps (runs at once, starts a minute, rooms) do not apply,
    /// so a test may start runs as fast as it likes.
    Anonymous,
    /// By address, as `racelab serve` knows them: the caps apply.
    ByAddress,
}

/// The real router serving the built app (plus the host pages) on a free loopback port.
pub async fn serve(readers: Readers) -> SocketAddr {
    serve_on(readers, common::engine().await).await
}

/// [`serve`] with `engine` (one on more PostgreSQL servers, say).
pub async fn serve_on(readers: Readers, engine: Arc<racelab::engine::Engine>) -> SocketAddr {
    let dist = dist();
    let state = AppState::new(engine, Arc::new(common::config()));
    let app = host_pages().merge(web::router(state, &dist));
    let (listener, address) = racelab::web::listen(([127, 0, 0, 1], 0).into())
        .await
        .expect("a free port");
    match readers {
        Readers::Anonymous => tokio::spawn(async move { axum::serve(listener, app).await }),
        Readers::ByAddress => {
            tokio::spawn(
                async move { axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await },
            )
        }
    };
    address
}

// ---------------------------------------------------------------------------------------------
// chromedriver

/// A chromedriver of our own: killed (with the Chromium it started) and its folder removed on drop.
struct Driver {
    child: Child,
    port: u16,
    /// Its `TMPDIR`, holding the Chromium profile too.
    folder: PathBuf,
}

impl Driver {
    fn start() -> Driver {
        let folder = std::env::temp_dir().join(format!(
            "racelab-browser-{}-{}",
            std::process::id(),
            FOLDERS.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(folder.join("profile")).expect("create the browser's folder");
        // Chromium rejects profile paths containing `..`.
        let folder = folder.canonicalize().expect("canonical folder");
        let port = free_port();
        let child =
            Command::new(find_program(&["chromedriver"]).expect("chromedriver: run scripts/install-ui-tools.sh"))
                .arg(format!("--port={port}"))
                .env("TMPDIR", &folder)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                // Its own process group, so that drop can end Chromium with it, by the group's id.
                .process_group(0)
                .spawn()
                .expect("start chromedriver");
        let driver = Driver { child, port, folder };
        let deadline = Instant::now() + TIMEOUT;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen on port {port}");
            std::thread::sleep(POLL);
        }
        driver
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn profile(&self) -> PathBuf {
        self.folder.join("profile")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // The whole group we started: chromedriver and any Chromium still around.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

pub fn find_program(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    names
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

async fn open_session(driver: &Driver) -> Client {
    let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|f| (*f).to_owned()).collect();
    args.push(format!("--user-data-dir={}", driver.profile().display()));
    args.push(format!("--window-size={},{}", WINDOW.0, WINDOW.1));
    let mut options = json!({ "args": args });
    if let Some(binary) = find_program(&["chromium", "chromium-browser"]) {
        options["binary"] = json!(binary);
    }
    // The console's messages, every window's, read (and checked for the app's panics) after the
    // test's body: see `Browser::page_errors`.
    let capabilities = json!({
        "browserName": "chrome",
        "goog:chromeOptions": options,
        "goog:loggingPrefs": { "browser": "ALL" },
    });
    let Json::Object(capabilities) = capabilities else {
        unreachable!("a JSON object literal")
    };
    let mut builder = ClientBuilder::new(HttpConnector::new());
    builder.capabilities(capabilities);
    builder
        .connect(&driver.url())
        .await
        .expect("a Chromium session from chromedriver")
}

// ---------------------------------------------------------------------------------------------
// Database: what runs are still around.

/// Run ids that still have a sandbox schema, a session or a registry row in the database. The
/// row goes last, once every service is clean (a run's topics and groups take a moment more
/// than its schemas), so a test that ends before it would cut the cleanup short.
async fn live_runs() -> BTreeSet<String> {
    let mut conn = common::inspector().await;
    let rows: Vec<String> = sqlx::query_scalar(
        "SELECT substr(nspname, 5, 12) FROM pg_namespace WHERE nspname LIKE 'run\\_%' \
         UNION SELECT split_part(application_name, '/', 2) FROM pg_stat_activity \
         WHERE application_name LIKE 'racelab/%/%' \
         UNION SELECT run_id FROM sandboxes",
    )
    .fetch_all(&mut conn)
    .await
    .expect("list live runs");
    rows.into_iter().collect()
}

/// Waits (up to 15 s) until no run is live that was not live before the test; warns otherwise
/// (the CI's leak check is the judge of leaks; this only keeps the server alive long enough).
async fn wait_for_runs_to_end(before: &BTreeSet<String>) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let left: Vec<String> = live_runs().await.difference(before).cloned().collect();
        if left.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            eprintln!("warning: runs still in the database 15 s after the test: {left:?}");
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The test's browser

/// A Chromium session on the test server, with the waits and reads the tests use.
pub struct Browser {
    pub client: Client,
    /// `http://127.0.0.1:<port>` of the test server.
    pub base: String,
    test: &'static str,
    /// The viewport size forced by [`Browser::set_viewport`], if any.
    viewport: Cell<Option<(u32, u32)>>,
}

/// A Chromium DevTools command, sent through chromedriver's `goog/cdp/execute`.
#[derive(Debug)]
struct Cdp {
    command: &'static str,
    params: Json,
}

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(&self, base_url: &url::Url, session_id: Option<&str>) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/goog/cdp/execute", session_id.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        let body = json!({ "cmd": self.command, "params": self.params });
        (http::Method::POST, Some(body.to_string()))
    }
}

/// The console's messages since they were last read (chromedriver's `browser` log, every window
/// of the session).
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(&self, base_url: &url::Url, session_id: Option<&str>) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/se/log", session_id.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(json!({ "type": "browser" }).to_string()))
    }
}

/// Whether a console message is the app panicking: a Rust panic in the wasm (built with
/// `panic = "abort"`, it traps as `RuntimeError: unreachable`), or any other uncaught
/// `RuntimeError` the wasm throws.
fn is_a_panic(message: &str) -> bool {
    message.contains("RuntimeError") || message.contains("panicked at")
}

/// Fails the test if any page of it panicked: read after every test's body, so no browser test
/// passes on a page that broke, whatever the test itself looked at.
async fn assert_no_panic(browser: &Browser) {
    let panics = browser.page_errors().await;
    assert!(
        panics.is_empty(),
        "{}: the app panicked in the browser {} times: {panics:#?}",
        browser.test,
        panics.len()
    );
}

/// Runs `body` with a fresh browser on a fresh server, then cleans up (see the module doc).
pub async fn run(test: &'static str, body: impl AsyncFnOnce(&Browser)) {
    run_with(test, Readers::Anonymous, body).await;
}

/// [`run`], on a server that knows its `readers` as told.
pub async fn run_with(test: &'static str, readers: Readers, body: impl AsyncFnOnce(&Browser)) {
    run_on(test, readers, None, body).await;
}

/// [`run_with`], on `engine` if given.
pub async fn run_on(
    test: &'static str,
    readers: Readers,
    engine: Option<Arc<racelab::engine::Engine>>,
    body: impl AsyncFnOnce(&Browser),
) {
    let _slot = BROWSER_SLOT.acquire().await.expect("the browser slot is never closed");
    // The engine first: on a fresh machine it is what creates racelab's database.
    let engine = match engine {
        Some(engine) => engine,
        None => common::engine().await,
    };
    let before = live_runs().await;
    let address = serve_on(readers, engine).await;
    let driver = Driver::start();
    let browser = Browser {
        client: open_session(&driver).await,
        base: format!("http://{address}"),
        test,
        viewport: Cell::new(None),
    };
    let outcome = AssertUnwindSafe(async {
        body(&browser).await;
        assert_no_panic(&browser).await;
    })
    .catch_unwind()
    .await;
    // Ends Chromium gracefully; the server sees the sockets close and cancels what still runs.
    let _ = browser.client.clone().close().await;
    drop(driver);
    wait_for_runs_to_end(&before).await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Runs `body` with a fresh browser and no racelab server at all: for pages a static host
/// serves alone (an exported player and its recordings). `base` is empty: open full URLs.
pub async fn run_alone(test: &'static str, body: impl AsyncFnOnce(&Browser)) {
    let _slot = BROWSER_SLOT.acquire().await.expect("the browser slot is never closed");
    let driver = Driver::start();
    let browser = Browser {
        client: open_session(&driver).await,
        base: String::new(),
        test,
        viewport: Cell::new(None),
    };
    let outcome = AssertUnwindSafe(async {
        body(&browser).await;
        assert_no_panic(&browser).await;
    })
    .catch_unwind()
    .await;
    let _ = browser.client.clone().close().await;
    drop(driver);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

impl Browser {
    /// Opens a full URL (another origin's page, say).
    pub async fn goto_url(&self, url: &str) {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
    }

    /// Presses `key` (a character, or a WebDriver key such as `'\u{e014}'` for →) on whatever
    /// has the focus, as a reader's keyboard would (through WebDriver's actions, not a synthetic
    /// event).
    pub async fn press(&self, key: char) {
        use fantoccini::actions::{InputSource, KeyAction, KeyActions};
        let keys = KeyActions::new("keyboard".into())
            .then(KeyAction::Down { value: key })
            .then(KeyAction::Up { value: key });
        self.client
            .perform_actions(keys)
            .await
            .unwrap_or_else(|e| panic!("press {key:?}: {e}"));
    }

    /// Sets a `<select>`'s value as a reader picking an option would (the change event fires).
    pub async fn select(&self, selector: &str, value: &str) {
        self.wait_for(selector).await;
        self.js(
            "const s = document.querySelector(arguments[0]); s.value = arguments[1]; \
             s.dispatchEvent(new Event('change', { bubbles: true }));",
            vec![json!(selector), json!(value)],
        )
        .await;
    }

    /// Picks the option labelled `label` in a `<select>`, as a reader would.
    pub async fn select_label(&self, selector: &str, label: &str) {
        self.wait_for(selector).await;
        let found = self
            .js(
                "const s = document.querySelector(arguments[0]); \
                 const o = [...s.options].find(o => o.textContent.trim() === arguments[1]); \
                 if (!o) return false; s.value = o.value; \
                 s.dispatchEvent(new Event('change', { bubbles: true })); return true;",
                vec![json!(selector), json!(label)],
            )
            .await;
        assert_eq!(found, json!(true), "{selector} has no option {label:?}");
    }

    /// Opens a path of the test server.
    pub async fn goto(&self, path: &str) {
        let url = format!("{}{path}", self.base);
        self.client
            .goto(&url)
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
    }

    /// Runs `script` (a function body; `arguments[0..]` are `args`) in the current frame.
    pub async fn js(&self, script: &str, args: Vec<Json>) -> Json {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Polls `script` every [`POLL`] until it returns something other than `null`/`false`;
    /// returns that. After `timeout`, saves a `<test>-timeout` screenshot and fails with `what`.
    pub async fn wait_js_for(&self, what: &str, timeout: Duration, script: &str, args: Vec<Json>) -> Json {
        let deadline = Instant::now() + timeout;
        loop {
            match self.js(script, args.clone()).await {
                Json::Null | Json::Bool(false) => {}
                ready => return ready,
            }
            if Instant::now() >= deadline {
                self.screenshot("timeout").await;
                panic!("timed out after {timeout:?} waiting for {what}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// [`Self::wait_js_for`] with the usual [`TIMEOUT`].
    pub async fn wait_js(&self, what: &str, script: &str, args: Vec<Json>) -> Json {
        self.wait_js_for(what, TIMEOUT, script, args).await
    }

    /// Waits until `selector` matches a node.
    pub async fn wait_for(&self, selector: &str) {
        self.wait_for_within(selector, TIMEOUT).await;
    }

    /// Waits (up to `timeout`) until `selector` matches a node.
    pub async fn wait_for_within(&self, selector: &str, timeout: Duration) {
        self.wait_js_for(
            &format!("`{selector}`"),
            timeout,
            "return document.querySelector(arguments[0]) !== null;",
            vec![json!(selector)],
        )
        .await;
    }

    /// How many nodes match `selector` now.
    pub async fn count(&self, selector: &str) -> u64 {
        self.js(
            "return document.querySelectorAll(arguments[0]).length;",
            vec![json!(selector)],
        )
        .await
        .as_u64()
        .expect("a count")
    }

    /// The trimmed `textContent` of the first match of `selector` (hidden text included, e.g. a
    /// closed `<details>`), or `None` when nothing matches.
    pub async fn text(&self, selector: &str) -> Option<String> {
        let text = self
            .js(
                "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;",
                vec![json!(selector)],
            )
            .await;
        text.as_str().map(|t| t.trim().to_owned())
    }

    /// The trimmed text of every match of `selector`.
    pub async fn texts(&self, selector: &str) -> Vec<String> {
        let texts = self
            .js(
                "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent.trim());",
                vec![json!(selector)],
            )
            .await;
        serde_json::from_value(texts).expect("a list of strings")
    }

    /// An attribute of the first match of `selector`.
    pub async fn attr(&self, selector: &str, name: &str) -> Option<String> {
        self.js(
            "const e = document.querySelector(arguments[0]); return e ? e.getAttribute(arguments[1]) : null;",
            vec![json!(selector), json!(name)],
        )
        .await
        .as_str()
        .map(str::to_owned)
    }

    /// An attribute of every match of `selector`.
    pub async fn attrs(&self, selector: &str, name: &str) -> Vec<Option<String>> {
        let values = self
            .js(
                "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.getAttribute(arguments[1]));",
                vec![json!(selector), json!(name)],
            )
            .await;
        serde_json::from_value(values).expect("a list of attributes")
    }

    /// Whether the first match of `selector` has CSS class `class`.
    pub async fn has_class(&self, selector: &str, class: &str) -> bool {
        self.js(
            "const e = document.querySelector(arguments[0]); return !!e && e.classList.contains(arguments[1]);",
            vec![json!(selector), json!(class)],
        )
        .await
            == Json::Bool(true)
    }

    /// Waits until `selector` matches an enabled node, then clicks it as a user would (WebDriver
    /// scrolls it into view and refuses when something covers it).
    pub async fn click(&self, selector: &str) {
        self.wait_js(
            &format!("`{selector}` to be enabled"),
            "const e = document.querySelector(arguments[0]); return !!e && !e.disabled;",
            vec![json!(selector)],
        )
        .await;
        let element = self
            .client
            .find(Locator::Css(selector))
            .await
            .unwrap_or_else(|e| panic!("find `{selector}`: {e}"));
        element
            .click()
            .await
            .unwrap_or_else(|e| panic!("click `{selector}`: {e}"));
    }

    /// The app's panics logged in the console of any window since the last read (see
    /// [`is_a_panic`]), each as the console had it.
    pub async fn page_errors(&self) -> Vec<String> {
        let log = self
            .client
            .issue_cmd(BrowserLog)
            .await
            .unwrap_or_else(|e| panic!("the browser's console log: {e}"));
        log.as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| entry["message"].as_str())
            .filter(|message| is_a_panic(message))
            .map(str::to_owned)
            .collect()
    }

    /// What axe-core (WCAG 2 A and AA rules; `scripts/install-ui-tools.sh` installs it into
    /// `.tools/`) finds on the page as it is now, serious or critical: each as `rule: the
    /// elements it found`.
    pub async fn accessibility_violations(&self) -> Vec<String> {
        let tools = std::env::var_os("TOOLS").map_or_else(|| workspace().join(".tools"), PathBuf::from);
        let path = tools.join("node_modules/axe-core/axe.min.js");
        let axe = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run scripts/install-ui-tools.sh)", path.display()));
        self.js(&format!("{axe}\nreturn true;"), vec![]).await;
        self.js(
            "window.__axe = null; \
             axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] } }) \
               .then(r => { window.__axe = r.violations \
                 .filter(v => v.impact === 'serious' || v.impact === 'critical') \
                 .map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', ')); }); \
             return true;",
            vec![],
        )
        .await;
        let found = self
            .wait_js_for(
                "axe-core's answer",
                Duration::from_secs(60),
                "return window.__axe;",
                vec![],
            )
            .await;
        found
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    }

    /// Drags the scrubber of a finished run to its end, as a reader would (its `input` event
    /// fired), and waits for the page to settle.
    pub async fn scrub_to_end(&self) {
        self.js(
            "const s = document.querySelector('.rl-scrub'); s.value = s.max; \
             s.dispatchEvent(new Event('input', { bubbles: true })); return true;",
            vec![],
        )
        .await;
        self.settle().await;
    }

    /// Runs a Chromium DevTools command on the page.
    async fn cdp(&self, command: &'static str, params: Json) -> Json {
        self.client
            .issue_cmd(Cdp { command, params })
            .await
            .unwrap_or_else(|e| panic!("DevTools {command}: {e}"))
    }

    /// Makes the reader's system prefer dark colours (`prefers-color-scheme: dark`), or not.
    pub async fn prefer_dark(&self, dark: bool) {
        let scheme = if dark { "dark" } else { "light" };
        let features = json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] });
        self.cdp("Emulation.setEmulatedMedia", features).await;
    }

    async fn force_viewport(&self, width: u32, height: u32) {
        let metrics = json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false });
        self.cdp("Emulation.setDeviceMetricsOverride", metrics).await;
    }

    /// Makes the page's viewport exactly `width` × `height` CSS px, as on a narrow screen
    /// (Chromium will not make a window narrower than about 500 px).
    pub async fn set_viewport(&self, width: u32, height: u32) {
        self.force_viewport(width, height).await;
        self.viewport.set(Some((width, height)));
    }

    /// Back to the window's own viewport.
    pub async fn reset_viewport(&self) {
        self.cdp("Emulation.clearDeviceMetricsOverride", json!({})).await;
        self.viewport.set(None);
    }

    /// Waits (up to 3 s, without failing) until the page's finite animations and transitions
    /// have finished, so that a screenshot does not catch a card half faded in. Endless ones (a
    /// pulsing "running" dot) are ignored.
    pub async fn settle(&self) {
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            let settled = self
                .client
                .execute(
                    "return document.getAnimations().every(a => a.playState !== 'running' \
                     || !a.effect || a.effect.getComputedTiming().iterations === Infinity);",
                    vec![],
                )
                .await;
            if !matches!(settled, Ok(Json::Bool(false))) {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The "Embed this" panel's snippet of `kind` (`component`, `iframe`, `link`), as a blog
    /// author copies it.
    pub async fn snippet(&self, kind: &str) -> String {
        let text = self
            .js(
                "return document.querySelector(`textarea.rl-snippet-text[data-kind=\"${arguments[0]}\"]`).value;",
                vec![json!(kind)],
            )
            .await;
        text.as_str().expect("the snippet's text").to_owned()
    }

    /// Whether the page scrolls sideways (wider than the window).
    pub async fn scrolls_sideways(&self) -> bool {
        self.js(
            "return document.documentElement.scrollWidth > window.innerWidth;",
            vec![],
        )
        .await
            == Json::Bool(true)
    }

    /// Saves the whole page (the viewport made as tall as the page, up to [`MAX_SHOT_HEIGHT`],
    /// then put back) as `target/screenshots/<test>-<state>.png`. Call it from the top-level frame.
    pub async fn screenshot(&self, state: &str) {
        self.settle().await;
        let size = self
            .client
            .execute(
                "return [window.innerWidth, window.innerHeight, document.documentElement.scrollHeight];",
                vec![],
            )
            .await
            .ok()
            .and_then(|v| serde_json::from_value::<[u32; 3]>(v).ok());
        let tall = size.filter(|[_, height, page]| page > height);
        if let Some([width, _, page]) = tall {
            self.force_viewport(width, page.min(MAX_SHOT_HEIGHT)).await;
            self.settle().await;
        }
        let shot = self.client.screenshot().await;
        if tall.is_some() {
            match self.viewport.get() {
                Some((width, height)) => self.force_viewport(width, height).await,
                None => self.reset_viewport().await,
            }
        }
        let png = match shot {
            Ok(png) => png,
            Err(e) => {
                eprintln!("no screenshot {state}: {e}");
                return;
            }
        };
        let path = screenshots().join(format!("{}-{state}.png", self.test));
        std::fs::write(&path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

/// Chooses a variant tab and waits until the page says it is chosen.
pub async fn choose_variant(b: &Browser, variant: &str) {
    let tab = format!("button.rl-variant[data-variant=\"{variant}\"]");
    b.click(&tab).await;
    b.wait_js(
        &format!("{tab} to be pressed"),
        "const e = document.querySelector(arguments[0]); return !!e && e.getAttribute('aria-pressed') === 'true';",
        vec![json!(tab)],
    )
    .await;
}

/// Saves `text` as a reader's spec through the API, as /write does; its id.
pub async fn save_spec(b: &Browser, text: &str) -> String {
    let answer = reqwest::Client::new()
        .post(format!("{}/api/specs", b.base))
        .body(text.to_owned())
        .send()
        .await
        .expect("POST /api/specs")
        .text()
        .await
        .expect("its body");
    let saved: Json = serde_json::from_str(&answer).expect("its JSON");
    saved["id"].as_str().expect("the spec's id").to_owned()
}

/// Once the matrix's run has ended, opens the row of permutation `index` (from 0) and waits for
/// its own run's verdict, of `kind`.
pub async fn open_permutation(b: &Browser, index: u32, kind: &str) {
    b.wait_js(
        "the run to end",
        "return !document.querySelector('button.rl-cancel');",
        vec![],
    )
    .await;
    b.click(&format!(".rl-matrix-row[data-index=\"{index}\"] .rl-matrix-open"))
        .await;
    b.wait_js(
        &format!("permutation {}'s verdict", index + 1),
        "const v = document.querySelector('.rl-verdict'); return !!v && v.dataset.kind === arguments[0];",
        vec![json!(kind)],
    )
    .await;
}
