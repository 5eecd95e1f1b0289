//! Talking to the server: `GET /api/*` as JSON, and the run websocket. Everything that touches
//! the browser's APIs lives here, so the components stay plain. Hand-written `web-sys`, not gloo:
//! gloo-net's fetch alone would take the embed past its budget (measured: docs/embedding.md,
//! "Why not gloo").

use leptos::prelude::*;
use shared::json::{self, FromJson};
use shared::run_state::RunState;
use shared::{ClientFrame, ClientMsg, Mode, ServerFrame};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

/// `(path, query)` of the page, e.g. `("/lab/isolation/write-skew", "?variant=serializable")`.
pub fn location() -> (String, String) {
    let location = web_sys::window().map(|w| w.location());
    let path = location
        .as_ref()
        .and_then(|l| l.pathname().ok())
        .unwrap_or_else(|| "/".into());
    let query = location.as_ref().and_then(|l| l.search().ok()).unwrap_or_default();
    (path, query)
}

/// The page a file names for itself (`<body data-racelab-route="/embed/recording">`): a player
/// exported to a static host (`racelab export --player`) lives at whatever path the host gives
/// it, so it cannot be routed by its path as racelab's own pages are.
#[cfg(not(feature = "embed"))]
pub fn page_route() -> Option<String> {
    let body = web_sys::window()?.document()?.body()?;
    body.get_attribute("data-racelab-route")
        .filter(|route| !route.is_empty())
}

/// The text of the page's element `id`: a recording carried inside the page itself (the one-file
/// player, `racelab record --html`), which a page opened from disk could not fetch.
#[cfg(not(feature = "embed"))]
pub fn inline_text(id: &str) -> Option<String> {
    web_sys::window()?.document()?.get_element_by_id(id)?.text_content()
}

/// `https://host:port`, for links and embed code that must work from other sites.
pub fn origin() -> String {
    web_sys::window()
        .and_then(|w| w.location().origin().ok())
        .unwrap_or_default()
}

/// GETs `path` and decodes its JSON body.
pub async fn fetch_json<T: FromJson>(path: &str) -> Result<T, String> {
    let window = web_sys::window().ok_or("no window")?;
    answer(path, window.fetch_with_str(path)).await
}

/// The JSON body of a request's answer, decoded; an error status becomes its `error` message.
async fn answer<T: FromJson>(path: &str, request: js_sys::Promise) -> Result<T, String> {
    let (status, text) = respond(path, request).await?;
    decoded(path, status, &text)
}

/// GETs `path` and decodes its JSON body; `None` when the server has no such thing (404).
pub async fn fetch_found<T: FromJson>(path: &str) -> Result<Option<T>, String> {
    let window = web_sys::window().ok_or("no window")?;
    match respond(path, window.fetch_with_str(path)).await? {
        (404, _) => Ok(None),
        (status, text) => decoded(path, status, &text).map(Some),
    }
}

/// The text at `url`, on any origin that lets racelab's page read it (a recording on a static
/// host); an answer that is not a success is said by its status.
#[cfg(not(feature = "embed"))]
pub async fn fetch_text(url: &str) -> Result<String, String> {
    let window = web_sys::window().ok_or("no window")?;
    // A host that does not let other sites read its files answers, but the browser keeps the
    // answer from the page: the same refusal as no answer at all.
    let unread = |_| {
        "no answer this page may read (is the host up, and does it let other sites read the file: \
         Access-Control-Allow-Origin?)"
            .to_owned()
    };
    match respond(url, window.fetch_with_str(url)).await.map_err(unread)? {
        (status, text) if (200..300).contains(&status) => Ok(text),
        (status, _) => Err(format!("the server answered HTTP {status}")),
    }
}

/// The status and body text of a request's answer.
async fn respond(path: &str, request: js_sys::Promise) -> Result<(u16, String), String> {
    let response = JsFuture::from(request)
        .await
        .map_err(|_| format!("{path}: the server did not answer"))?;
    let response: web_sys::Response = response.dyn_into().map_err(|_| "not a response".to_owned())?;
    let text = JsFuture::from(response.text().map_err(|_| "no body".to_owned())?)
        .await
        .ok()
        .and_then(|t| t.as_string())
        .unwrap_or_default();
    Ok((response.status(), text))
}

/// A body decoded, or for an error status the server's own sentence.
fn decoded<T: FromJson>(path: &str, status: u16, text: &str) -> Result<T, String> {
    if !(200..300).contains(&status) {
        return Err(refusal(path, status, text));
    }
    json::from_str(text).map_err(|e| format!("{path}: unexpected answer: {e}"))
}

/// What an error answer says: its JSON `error` (every `/api` failure has one), else its status.
fn refusal(path: &str, status: u16, text: &str) -> String {
    json::parse(text)
        .ok()
        .and_then(|answer| answer.get::<String>("error").ok())
        .unwrap_or_else(|| format!("{path}: {status} {text}"))
}

/// What a page fetched: `None` until `load` answers.
///
/// A signal set by a spawned task rather than a `LocalResource` under `<Suspense>`: a page loads
/// once and never refetches, and the resource's async machinery (transitions, async derived
/// values, their locks) cost the embed bundle 15 KB gzip (docs/embedding.md, "The embed bundle").
pub fn fetched<T: Send + Sync + 'static>(load: impl Future<Output = T> + 'static) -> ReadSignal<Option<T>> {
    let answer = RwSignal::new(None);
    leptos::task::spawn_local(async move { answer.set(Some(load.await)) });
    answer.read_only()
}

/// The socket's state as the page shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    Connecting,
    Open,
    /// Closed without the page asking: show a reconnect button.
    Lost,
}

/// One websocket, feeding one [`RunState`]. Frames that arrive are folded into `state`; a start
/// asked for before the socket opens is sent when it does. A handle into Leptos' arena (the
/// browser socket itself stays on this thread), so it is `Copy` and reactive closures can hold it.
#[derive(Clone, Copy)]
pub struct RunSocket {
    inner: StoredValue<Inner, LocalStorage>,
    pub state: RwSignal<RunState>,
    pub link: RwSignal<Link>,
}

struct Inner {
    socket: Option<web_sys::WebSocket>,
    /// A frame waiting for the socket to open.
    waiting: Option<String>,
    /// The room this socket follows, and the trainer token if this page drives it: the join is
    /// sent again on every (re)connect, and the room catches the page up. (Embeds follow no
    /// room: the embed app leaves rooms out.)
    #[cfg(not(feature = "embed"))]
    room: Option<Following>,
}

/// The room a socket follows: its code, the trainer token on the trainer's page, and in a
/// lesson the participant's handle and seat (the secret that takes the handle back on a reload).
#[cfg(not(feature = "embed"))]
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Following {
    pub room: String,
    pub token: Option<String>,
    pub seat: Option<(String, String)>,
}

impl Inner {
    /// Whether this socket follows a room (whose run goes on when the socket drops).
    fn follows_a_room(&self) -> bool {
        #[cfg(not(feature = "embed"))]
        return self.room.is_some();
        #[cfg(feature = "embed")]
        return false;
    }

    /// `msg` as a frame: for the room this socket follows, if it follows one.
    fn frame(&self, msg: ClientMsg) -> ClientFrame {
        #[cfg(not(feature = "embed"))]
        if let Some(following) = &self.room {
            return ClientFrame::from(msg).in_room(&following.room, following.token.as_deref());
        }
        ClientFrame::from(msg)
    }

    /// Sends what an opened socket says first: the join of its room, then a frame that waited.
    fn opened(&mut self) {
        let Some(ws) = self.socket.as_ref() else { return };
        #[cfg(not(feature = "embed"))]
        if let Some(following) = &self.room {
            let _ = ws.send_with_str(&join_frame(following));
        }
        if let Some(frame) = self.waiting.take() {
            let _ = ws.send_with_str(&frame);
        }
    }
}

impl RunSocket {
    pub fn new() -> RunSocket {
        let socket = RunSocket {
            inner: StoredValue::new_local(Inner {
                socket: None,
                waiting: None,
                #[cfg(not(feature = "embed"))]
                room: None,
            }),
            state: RwSignal::new(RunState::default()),
            link: RwSignal::new(Link::Connecting),
        };
        socket.connect();
        socket
    }

    /// Opens (or reopens) the websocket.
    pub fn connect(&self) {
        let url = origin().replacen("http", "ws", 1) + "/ws";
        let Ok(ws) = web_sys::WebSocket::new(&url) else {
            self.link.set(Link::Lost);
            return;
        };
        self.link.set(Link::Connecting);
        let state = self.state;
        let on_message = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
            if let Some(text) = event.data().as_string()
                && let Ok(frame) = json::from_str::<ServerFrame>(&text)
            {
                state.update(|s| s.apply(frame.msg));
            }
        });
        ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        on_message.forget();

        let (inner, link) = (self.inner, self.link);
        let on_open = Closure::<dyn FnMut()>::new(move || {
            link.set(Link::Open);
            inner.update_value(Inner::opened);
        });
        ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        on_open.forget();

        let on_close = Closure::<dyn FnMut()>::new(move || {
            link.set(Link::Lost);
            // The server cancels a run whose socket closed; say so instead of showing it running.
            // (A room's run goes on: a reconnect catches up with it.)
            let following = inner.with_value(Inner::follows_a_room);
            state.update(|s| {
                if s.is_active() && !following {
                    s.phase = shared::run_state::Phase::Finished(shared::Outcome::Cancelled);
                }
            });
        });
        ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        on_close.forget();
        self.inner.update_value(|inner| {
            if let Some(old) = inner.socket.replace(ws) {
                let _ = old.close();
            }
        });
    }

    /// Starts a run. What the socket showed stays until the server says the new run started
    /// (a refused start, say a run still going, then changes nothing).
    /// Runs play on PostgreSQL `postgres` (a major version, `"18"`; empty: the server's first).
    pub fn start_on(&self, scenario: &str, variant: &str, mode: Mode, postgres: &str) {
        self.state.update(|s| s.refused = None);
        self.send(ClientMsg::Start {
            scenario: scenario.to_owned(),
            variant: variant.to_owned(),
            mode,
            postgres: (!postgres.is_empty()).then(|| postgres.to_owned()),
        });
    }

    pub fn next(&self) {
        self.send(ClientMsg::Next);
    }

    pub fn cancel(&self) {
        self.send(ClientMsg::Cancel);
    }

    /// The trainer asks the room to predict `scenario` at `variant` before running it.
    #[cfg(not(feature = "embed"))]
    pub fn ask(&self, scenario: &str, variant: &str) {
        self.send(ClientMsg::Ask {
            scenario: scenario.to_owned(),
            variant: variant.to_owned(),
        });
    }

    /// This page's prediction for the room's question.
    #[cfg(not(feature = "embed"))]
    pub fn predict(&self, choice: &str) {
        self.send(ClientMsg::Predict {
            choice: choice.to_owned(),
        });
    }

    /// The trainer opens round `number` of the room's lesson (at `variant`, changed live).
    #[cfg(not(feature = "embed"))]
    pub fn round(&self, number: usize, variant: Option<&str>) {
        self.send(ClientMsg::Round {
            number,
            variant: variant.map(str::to_owned),
        });
    }

    /// The trainer shows participants the whole leaderboard, or only their own line.
    #[cfg(not(feature = "embed"))]
    pub fn leaderboard(&self, shown: bool) {
        self.send(ClientMsg::Leaderboard { shown });
    }

    /// Follows `room` from now on (its trainer's page passes the `token`): this socket's starts,
    /// steps and cancels become the room's, and it shows the room's runs.
    #[cfg(not(feature = "embed"))]
    pub fn follow(&self, room: &str, token: Option<&str>) {
        self.follow_as(Following {
            room: room.to_owned(),
            token: token.map(str::to_owned),
            seat: None,
        });
    }

    /// Follows a room as `following` says: in a lesson, under a handle from its seat.
    #[cfg(not(feature = "embed"))]
    pub fn follow_as(&self, following: Following) {
        let frame = join_frame(&following);
        self.inner.update_value(|inner| {
            inner.room = Some(following);
            if let Some(ws) = inner
                .socket
                .as_ref()
                .filter(|ws| ws.ready_state() == web_sys::WebSocket::OPEN)
            {
                let _ = ws.send_with_str(&frame);
            }
        });
    }

    fn send(&self, msg: ClientMsg) {
        let frame = self.inner.with_value(|inner| inner.frame(msg)).to_json();
        self.inner.update_value(|inner| match inner.socket.as_ref() {
            Some(ws) if ws.ready_state() == web_sys::WebSocket::OPEN => {
                let _ = ws.send_with_str(&frame);
            }
            _ => inner.waiting = Some(frame),
        });
    }
}

/// The frame that follows a room (as its trainer, with its token; in a lesson, from a seat).
#[cfg(not(feature = "embed"))]
fn join_frame(following: &Following) -> String {
    let (handle, seat) = following.seat.clone().unzip();
    ClientFrame::from(ClientMsg::Join { handle, seat })
        .in_room(&following.room, following.token.as_deref())
        .to_json()
}

/// POSTs to `path` with no body and decodes the JSON answer (`POST /api/rooms`).
#[cfg(not(feature = "embed"))]
pub async fn post_json<T: FromJson>(path: &str) -> Result<T, String> {
    let window = web_sys::window().ok_or("no window")?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    answer(path, window.fetch_with_str_and_init(path, &init)).await
}

/// Shows `path` in the address bar without leaving the page (a spec just saved: its link).
#[cfg(not(feature = "embed"))]
pub fn go_quietly(path: &str) {
    if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(path));
    }
}

/// POSTs `body` as text to `path` and decodes the JSON answer (`POST /api/specs`).
#[cfg(not(feature = "embed"))]
pub async fn post_text<T: FromJson>(path: &str, body: &str) -> Result<T, String> {
    let window = web_sys::window().ok_or("no window")?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_body(&JsValue::from_str(body));
    answer(path, window.fetch_with_str_and_init(path, &init)).await
}

/// POSTs `body` to `path`: the answer's status and text, whatever the status (a page that reads
/// more than the error's sentence from a refusal).
#[cfg(not(feature = "embed"))]
pub async fn post_text_answer(path: &str, body: &str) -> Result<(u16, String), String> {
    let window = web_sys::window().ok_or("no window")?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_body(&JsValue::from_str(body));
    respond(path, window.fetch_with_str_and_init(path, &init)).await
}

/// Puts the caret of textarea `id` (holding `text`) at `line`, `column` (1-based, columns in
/// characters) and focuses it: the editor's "go to the problem".
#[cfg(not(feature = "embed"))]
pub fn select_in_editor(id: &str, text: &str, line: u32, column: u32) {
    let Some(area) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
        .and_then(|e| e.dyn_into::<web_sys::HtmlTextAreaElement>().ok())
    else {
        return;
    };
    // The browser counts UTF-16 units.
    let mut offset = 0u32;
    for (n, l) in text.split('\n').enumerate() {
        if n + 1 == line as usize {
            let units: u32 = l
                .chars()
                .take(column.saturating_sub(1) as usize)
                .map(|c| c.len_utf16() as u32)
                .sum();
            offset += units;
            break;
        }
        offset += l.encode_utf16().count() as u32 + 1;
    }
    let _ = area.focus();
    let _ = area.set_selection_range(offset, offset);
}

/// Asks `method` of `path` with `token` as its bearer and `body`, if any (`DELETE
/// /api/rooms/<id>`, a room's `PUT …/recording`); an error status becomes the server's sentence.
#[cfg(not(feature = "embed"))]
pub async fn with_token(method: &str, path: &str, token: &str, body: Option<&str>) -> Result<(), String> {
    let window = web_sys::window().ok_or("no window")?;
    let headers = web_sys::Headers::new().map_err(|_| "no headers".to_owned())?;
    headers
        .set("Authorization", &format!("Bearer {token}"))
        .map_err(|_| "no headers".to_owned())?;
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    init.set_headers(&headers);
    if let Some(body) = body {
        init.set_body(&JsValue::from_str(body));
    }
    match respond(path, window.fetch_with_str_and_init(path, &init)).await? {
        (200..300, _) => Ok(()),
        (status, text) => Err(refusal(path, status, &text)),
    }
}

/// Goes to `url` (a full page load: the app has no client router).
#[cfg(not(feature = "embed"))]
pub fn go_to(url: &str) {
    if let Some(window) = web_sys::window() {
        let _ = window.location().set_href(url);
    }
}

/// The page's `#fragment`, without the `#`.
#[cfg(not(feature = "embed"))]
pub fn fragment() -> String {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .map(|hash| hash.trim_start_matches('#').to_owned())
        .unwrap_or_default()
}

/// Loads racelab's own embed loader (`/embed.js`) into this page, once: the embed preview is
/// then sized and coloured exactly as on the page it will be pasted into.
#[cfg(not(feature = "embed"))]
pub fn load_embed_loader() {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if document
        .query_selector("script[data-racelab-loader]")
        .ok()
        .flatten()
        .is_some()
    {
        return;
    }
    if let Ok(script) = document.create_element("script") {
        let _ = script.set_attribute("src", "/embed.js");
        let _ = script.set_attribute("data-racelab-loader", "");
        if let Some(head) = document.head() {
            let _ = head.append_child(&script);
        }
    }
}

/// Puts `params` into the page's address without a reload or a new history entry (the other
/// parameters and the `#fragment` kept), so a reload or a shared link lands on the same state.
#[cfg(not(feature = "embed"))]
pub fn replace_query(params: &[(&str, &str)]) {
    let Some(window) = web_sys::window() else { return };
    let location = window.location();
    let Ok(query) = web_sys::UrlSearchParams::new_with_str(&location.search().unwrap_or_default()) else {
        return;
    };
    for (name, value) in params {
        if value.is_empty() {
            query.delete(name);
        } else {
            query.set(name, value);
        }
    }
    let query = String::from(query.to_string());
    let path = location.pathname().unwrap_or_default();
    let hash = location.hash().unwrap_or_default();
    let url = if query.is_empty() {
        format!("{path}{hash}")
    } else {
        format!("{path}?{query}{hash}")
    };
    if let Ok(history) = window.history() {
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
    }
}

/// Whether a page opens in the compact view: as its address names it (`view=compact` or
/// `view=detailed`), else compact on a phone (the detailed cards of three lanes need a wide
/// screen) and detailed elsewhere.
#[cfg(not(feature = "embed"))]
pub fn compact_view() -> bool {
    match crate::route::query_param(&location().1, "view").as_deref() {
        Some("compact") => true,
        Some("detailed") => false,
        _ => narrow_screen(),
    }
}

/// Whether the window is a phone's width (at most 640 CSS px).
#[cfg(not(feature = "embed"))]
pub fn narrow_screen() -> bool {
    web_sys::window()
        .and_then(|w| w.inner_width().ok())
        .and_then(|w| w.as_f64())
        .is_some_and(|width| width <= 640.0)
}

/// Copies text to the clipboard (best effort: some hosts forbid it; the text stays selectable).
#[cfg(not(feature = "embed"))]
pub fn copy_to_clipboard(text: &str) {
    if let Some(window) = web_sys::window() {
        let _ = window.navigator().clipboard().write_text(text);
    }
}

/// Calls `then` once, when the page is in the reader's view. In an iframe that is when the host
/// page has been scrolled to it: the observer's implicit root is the top-level viewport. Where
/// the browser has no observer, at once.
pub fn when_seen(then: impl FnOnce() + 'static) {
    let then = std::rc::Rc::new(std::cell::Cell::new(Some(then)));
    let body = web_sys::window().and_then(|w| w.document()).and_then(|d| d.body());
    let call = {
        let then = then.clone();
        move || {
            if let Some(then) = then.take() {
                then();
            }
        }
    };
    let seen = Closure::<dyn FnMut(js_sys::Array, web_sys::IntersectionObserver)>::new({
        let call = call.clone();
        move |entries: js_sys::Array, observer: web_sys::IntersectionObserver| {
            let visible = entries.iter().any(|e| {
                e.unchecked_into::<web_sys::IntersectionObserverEntry>()
                    .is_intersecting()
            });
            if visible {
                observer.disconnect();
                call();
            }
        }
    });
    match body.map(|body| (web_sys::IntersectionObserver::new(seen.as_ref().unchecked_ref()), body)) {
        Some((Ok(observer), body)) => observer.observe(&body),
        _ => call(),
    }
    seen.forget();
}

#[cfg(not(feature = "embed"))]
/// Scrolls the newest thing in the run that `deck` heads into view, as little as needed: the
/// verdict once there is one, else the newest row of its timeline.
pub fn scroll_to_newest(deck: &web_sys::Element) {
    let Some(run) = deck.parent_element() else { return };
    let newest = run.query_selector(".rl-verdict").ok().flatten().or_else(|| {
        let rows = run.query_selector_all(".rl-row, .rl-compact-row").ok()?;
        rows.item(rows.length().checked_sub(1)?)?
            .dyn_into::<web_sys::Element>()
            .ok()
    });
    if let Some(newest) = newest {
        let options = web_sys::ScrollIntoViewOptions::new();
        options.set_block(web_sys::ScrollLogicalPosition::Nearest);
        newest.scroll_into_view_with_scroll_into_view_options(&options);
    }
}

/// The element an event happened on, if it is of class `class` (and of that class only): what a
/// handler caught once, on a section whose markup is text with no handlers of its own, was for.
pub fn target_of_class(target: Option<web_sys::EventTarget>, class: &str) -> Option<web_sys::Element> {
    target
        .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
        .filter(|element| element.class_name() == class)
}

/// Waits `ms` milliseconds, on the browser's timer.
#[cfg(not(feature = "embed"))]
pub async fn sleep(ms: u64) {
    let ms = i32::try_from(ms).unwrap_or(i32::MAX);
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// Tells the embedding page how tall we are, whenever our root changes size.
pub fn report_height_to_parent() {
    let Some(window) = web_sys::window() else { return };
    let Some(root) = window
        .document()
        .and_then(|d| d.query_selector(".racelab").ok().flatten())
    else {
        return;
    };
    let post = move |height: f64| {
        if let Some(window) = web_sys::window()
            && let Ok(Some(parent)) = window.parent()
        {
            let message = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&message, &"type".into(), &"racelab:height".into());
            let _ = js_sys::Reflect::set(&message, &"height".into(), &height.into());
            let _ = parent.post_message(&message, "*");
        }
    };
    let observe = Closure::<dyn FnMut(js_sys::Array)>::new(move |entries: js_sys::Array| {
        if let Some(entry) = entries.get(0).dyn_ref::<web_sys::ResizeObserverEntry>() {
            post(entry.target().get_bounding_client_rect().height());
        }
    });
    if let Ok(observer) = web_sys::ResizeObserver::new(observe.as_ref().unchecked_ref()) {
        observer.observe(&root);
    }
    observe.forget();
}
