//! A websocket client of racelab's protocol, for the tests that drive the real server.

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

pub type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub async fn connect(address: SocketAddr) -> Socket {
    let (socket, _) = tokio_tungstenite::connect_async(format!("ws://{address}/ws"))
        .await
        .expect("websocket");
    socket
}

pub async fn send(socket: &mut Socket, frame: Value) {
    socket
        .send(Message::Text(frame.to_string().into()))
        .await
        .expect("send");
}

pub async fn send_raw(socket: &mut Socket, text: &str) {
    socket.send(Message::Text(text.to_owned().into())).await.expect("send");
}

/// The next server frame, as JSON (fails the test after 30 s).
pub async fn receive(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .expect("a frame in time")
            .expect("the socket is open")
            .expect("a frame");
        if let Message::Text(text) = message {
            super::browser_reads_alike::<shared::ServerFrame>(text.as_str());
            return serde_json::from_str(text.as_str()).expect("JSON frame");
        }
    }
}

/// Frames until (and including) the first for which `last` holds.
pub async fn receive_until(socket: &mut Socket, last: impl Fn(&Value) -> bool) -> Vec<Value> {
    let mut frames = Vec::new();
    loop {
        let frame = receive(socket).await;
        let stop = last(&frame);
        frames.push(frame);
        if stop {
            return frames;
        }
    }
}

/// Starts `scenario`/`variant` in `mode` on `socket`; returns the run id once it started.
pub async fn start(socket: &mut Socket, scenario: &str, variant: &str, mode: &str) -> String {
    send(
        socket,
        json!({"v": 1, "type": "start", "scenario": scenario, "variant": variant, "mode": mode}),
    )
    .await;
    let started = receive_until(socket, |f| is_type(f, "started")).await;
    started.last().expect("started")["run_id"]
        .as_str()
        .expect("id")
        .to_owned()
}

pub fn is_type(frame: &Value, kind: &str) -> bool {
    frame["type"] == kind
}

pub fn event_type(frame: &Value) -> Option<&str> {
    if is_type(frame, "event") {
        frame["event"]["type"].as_str()
    } else {
        None
    }
}
