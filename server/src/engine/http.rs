//! HTTP lanes: servers the run starts on loopback (a card provider, a shop API) and client lanes
//! that call them (the phone, with its own timeouts).
//!
//! A server is a real axum server on `127.0.0.1:0`, owned by the run: dropping its handle (and so
//! ending the run, whatever way it ends) stops it. A client lane sends one request per step,
//! each with its own deadline, and shows it as structure: method, path, the headers that matter
//! (`Idempotency-Key`), the body; and then the response's status, headers (`Retry-After`,
//! `Idempotent-Replayed`) and body. When the deadline passes first, the client's step ends in a
//! timeout error while the server keeps working: that gap is where the idempotency tutorial's
//! double charges come from.

use super::error::{RunError, StepError};
use super::lane::Lane;
use super::run::Run;
use shared::Service;
use shared::event::{Detail, ErrorKind};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::task::JoinHandle;

/// Response headers no reader needs to see on a card.
const BORING_HEADERS: &[&str] = &[
    "date",
    "content-length",
    "connection",
    "transfer-encoding",
    "keep-alive",
];

/// An HTTP server the run owns. Stops when dropped.
pub struct HttpServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl HttpServer {
    /// Where it listens (`127.0.0.1:<port>`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stops the server at once: connections in flight are dropped (a crash of the process
    /// would do the same), but work its handlers spawned goes on.
    pub async fn stop(self) {
        self.task.abort();
    }
}

impl Run {
    /// Starts `router` on a free loopback port, for as long as the returned handle lives.
    pub async fn http_server(&self, router: axum::Router) -> Result<HttpServer, RunError> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| RunError::Other(format!("cannot bind a loopback port: {e}")))?;
        serve_on(listener, router)
    }

    /// Names the lane that serves HTTP at `addr` (a server of the run's, in this process or in
    /// a child), so requests to it are drawn as arrows to that lane.
    pub fn name_server(&self, addr: SocketAddr, lane: &str) {
        self.core().name_server(&addr.to_string(), lane);
    }

    /// A client lane (the phone): it sends requests as steps.
    pub fn http_client(&self, name: &str) -> HttpClient {
        HttpClient {
            lane: self.lane(name, false),
            run: self.clone(),
        }
    }

    /// A quiet client lane (one of twenty identical copies): no per-request events.
    pub fn http_worker(&self, name: &str) -> HttpClient {
        HttpClient {
            lane: self.lane(name, true),
            run: self.clone(),
        }
    }

    /// Starts `router` again on the loopback port `port` it had before (a server that was
    /// stopped, now back), for as long as the returned handle lives.
    pub async fn http_server_on(&self, router: axum::Router, port: u16) -> Result<HttpServer, RunError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| RunError::Other(format!("cannot bind port {port} again: {e}")))?;
        serve_on(listener, router)
    }
}

fn serve_on(listener: tokio::net::TcpListener, router: axum::Router) -> Result<HttpServer, RunError> {
    let addr = listener
        .local_addr()
        .map_err(|e| RunError::Other(format!("cannot read the bound port: {e}")))?;
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::warn!(%error, "a run's HTTP server stopped");
        }
    });
    Ok(HttpServer { addr, task })
}

/// One request as a scenario writes it.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    /// `http://127.0.0.1:<port>` (see [`HttpServer::url`]).
    pub base: String,
    /// `/payments`.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// How long this attempt waits for the whole response.
    pub timeout: Duration,
}

/// The answer to a [`Call`].
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    pub status: u16,
    /// Every response header, names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    /// The value of header `name` (any case), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A client lane.
pub struct HttpClient {
    lane: Lane,
    run: Run,
}

impl HttpClient {
    /// The client's lane, for transcript lines.
    pub fn lane(&self) -> &Lane {
        &self.lane
    }

    /// Sends `call` on a new connection (a new client per attempt, like the tutorial's phone) and
    /// waits at most `call.timeout` for the response.
    pub async fn send(&self, call: &Call) -> Result<Reply, StepError> {
        let text = format!("{} {}", call.method, call.path);
        self.lane.gate(Service::Http, &text).await;
        self.lane.step(
            Service::Http,
            &text,
            &[],
            Some(Detail::Request {
                method: call.method.clone(),
                path: call.path.clone(),
                headers: call.headers.clone(),
                body: call.body.clone(),
                to: authority(&call.base).and_then(|addr| self.run.core().server_at(addr)),
            }),
        );
        match self.exchange(call).await {
            Ok(reply) => {
                let shown = reply
                    .headers
                    .iter()
                    .filter(|(name, _)| !BORING_HEADERS.contains(&name.as_str()))
                    .cloned()
                    .collect();
                self.lane.result(
                    status_line(reply.status),
                    None,
                    Some(Detail::Response {
                        status: reply.status,
                        headers: shown,
                        body: reply.body.clone(),
                    }),
                );
                Ok(reply)
            }
            Err(error) if error.is_timeout() => {
                let after_ms = u64::try_from(call.timeout.as_millis()).unwrap_or(u64::MAX);
                self.lane.error(ErrorKind::Timeout, None, "no answer: timed out");
                Err(StepError::Timeout {
                    actor: self.lane.name().to_owned(),
                    after_ms,
                })
            }
            Err(error) => {
                let reason = transport_reason(&error);
                self.lane
                    .error(ErrorKind::Connection, None, format!("no answer: {reason}"));
                Err(StepError::Lost {
                    service: shared::Service::Http,
                    actor: self.lane.name().to_owned(),
                    reason,
                })
            }
        }
    }

    async fn exchange(&self, call: &Call) -> Result<Reply, reqwest::Error> {
        let client = reqwest::Client::builder().timeout(call.timeout).build()?;
        let method = reqwest::Method::from_bytes(call.method.as_bytes()).unwrap_or(reqwest::Method::POST);
        let mut request = client
            .request(method, format!("{}{}", call.base, call.path))
            .body(call.body.clone());
        for (name, value) in &call.headers {
            request = request.header(name, value);
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let body = response.text().await?;
        Ok(Reply { status, headers, body })
    }
}

/// `127.0.0.1:8080` of `http://127.0.0.1:8080`.
fn authority(base: &str) -> Option<&str> {
    let rest = base.split_once("://").map_or(base, |(_, rest)| rest);
    rest.split('/').next().filter(|a| !a.is_empty())
}

/// `201 Created`, `409 Conflict`.
pub fn status_line(status: u16) -> String {
    let reason = axum::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    format!("{status} {reason}").trim_end().to_owned()
}

/// Why a request got no answer, in the words a Go client would print (`EOF`, `connection
/// refused`).
fn transport_reason(error: &reqwest::Error) -> String {
    let mut chain = String::new();
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = source {
        chain.push_str(&e.to_string().to_ascii_lowercase());
        chain.push(' ');
        source = e.source();
    }
    if chain.contains("refused") {
        "connection refused".into()
    } else if chain.contains("closed") || chain.contains("reset") || chain.contains("incomplete") {
        "EOF".into()
    } else {
        error.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::status_line;

    #[test]
    fn a_base_url_names_its_server_by_host_and_port() {
        assert_eq!(super::authority("http://127.0.0.1:8080"), Some("127.0.0.1:8080"));
        assert_eq!(super::authority("http://127.0.0.1:8080/x"), Some("127.0.0.1:8080"));
        assert_eq!(super::authority(""), None);
    }

    #[test]
    fn status_lines_carry_the_reason() {
        assert_eq!(status_line(201), "201 Created");
        assert_eq!(status_line(409), "409 Conflict");
        assert_eq!(status_line(599), "599");
    }
}
