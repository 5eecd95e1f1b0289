//! How fast a lesson's reveal reaches a full room: 200 participants (half on each of two
//! replicas sharing Redis) answer a round, the trainer runs it, and each page's moment of seeing
//! the answer (its `lesson` frame with the round's answer and its own score) is measured from the
//! moment the trainer's page saw the run's `reveal`. Beside it, measured in the same rounds on the
//! same pages, how long the run's `done` frame took to reach them from the trainer's: the room's
//! fan-out without the scoring, the keeping and the leaderboard. Not a test: it prints p50, p95
//! and max of each, and their ratio, for comparing builds on this machine.
//!
//! `cargo bench --bench lesson_rooms [ROUNDS]` (default 5): the one round is played ROUNDS times
//! (a repeated round starts afresh). The goal: the reveal at p95 within 1 s.

#![allow(
    clippy::too_many_lines,
    reason = "a benchmark reads top to bottom as the measurement it makes"
)]

#[path = "../tests/common/mod.rs"]
mod common;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

const PARTICIPANTS: usize = 200;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// What a participant's page saw, and when.
enum Seen {
    Answer(Instant),
    Done(Instant),
}

async fn connect(address: SocketAddr) -> Socket {
    let (socket, _) = tokio_tungstenite::connect_async(format!("ws://{address}/ws"))
        .await
        .expect("websocket");
    socket
}

async fn send(socket: &mut Socket, frame: &Value) {
    socket
        .send(Message::Text(frame.to_string().into()))
        .await
        .expect("send");
}

/// The next frame as JSON; `None` once the socket closed. (No decoding check: that is the tests'
/// job, and it would weigh on what is measured here.)
async fn next(socket: &mut Socket) -> Option<Value> {
    loop {
        match tokio::time::timeout(Duration::from_secs(60), socket.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => return serde_json::from_str(text.as_str()).ok(),
            Ok(Some(Ok(_))) => {}
            _ => return None,
        }
    }
}

/// A participant: answers each round when it opens, and reports when it is shown each answer
/// and each run's end.
async fn participant(mut socket: Socket, room: String, seen: mpsc::UnboundedSender<Seen>) {
    let mut answered = false;
    while let Some(frame) = next(&mut socket).await {
        match frame["type"].as_str() {
            Some("lesson") if !frame["round"].is_null() => {
                let open = frame["round"]["answer"].is_null();
                if open && !answered {
                    let predict = json!({"v": 1, "type": "predict", "room": room, "choice": "bob-40001"});
                    send(&mut socket, &predict).await;
                    answered = true;
                } else if !open && answered {
                    answered = false;
                    let _ = seen.send(Seen::Answer(Instant::now()));
                }
            }
            Some("done") => {
                let _ = seen.send(Seen::Done(Instant::now()));
            }
            _ => {}
        }
    }
}

async fn post(address: SocketAddr, path: &str, body: String) -> Value {
    let text = reqwest::Client::new()
        .post(format!("http://{address}{path}"))
        .body(body)
        .send()
        .await
        .expect("POST")
        .text()
        .await
        .expect("a body");
    serde_json::from_str(&text).expect("JSON")
}

/// p50, p95 and max of `millis`, in milliseconds.
fn spread(mut millis: Vec<f64>) -> (f64, f64, f64) {
    millis.sort_by(f64::total_cmp);
    let at = |q: f64| millis[((millis.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95), at(1.0))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .and_then(|a| a.parse().ok())
        .unwrap_or(5);
    let (holder, other) = (common::server().await, common::server().await);
    let lesson = format!(
        "---\ntitle: Reveal bench {:016x}\n---\n\n## Write skew at SERIALIZABLE\nscenario: isolation/write-skew\nvariant: serializable\n",
        rand::random::<u64>()
    );
    let lesson = post(holder, "/api/lessons", lesson).await;
    let opened = post(holder, "/api/rooms", json!({ "lesson": lesson["id"] }).to_string()).await;
    let room = opened["id"].as_str().expect("a room").to_owned();
    let token = opened["trainer_token"].as_str().expect("a token").to_owned();
    let trainer_frame = |mut frame: Value| {
        frame["v"] = json!(1);
        frame["room"] = json!(room);
        frame["token"] = json!(token);
        frame
    };

    let mut trainer = connect(holder).await;
    send(
        &mut trainer,
        &json!({"v": 1, "type": "join", "room": room, "token": token}),
    )
    .await;
    let (seen, mut sightings) = mpsc::unbounded_channel();
    for i in 0..PARTICIPANTS {
        let mut socket = connect(if i % 2 == 0 { holder } else { other }).await;
        let seat = format!("bench-seat-{i:03}-{:016x}", rand::random::<u64>());
        let join = json!({"v": 1, "type": "join", "room": room, "handle": format!("p{i:03}"), "seat": seat});
        send(&mut socket, &join).await;
        tokio::spawn(participant(socket, room.clone(), seen.clone()));
    }
    println!("racelab lesson reveal, {PARTICIPANTS} participants on two replicas, {rounds} round(s), loopback");
    let (mut reveals, mut dones) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        send(&mut trainer, &trainer_frame(json!({"type": "round", "number": 1}))).await;
        // Every pick counted (the other replica's too) before the run starts.
        loop {
            let frame = next(&mut trainer).await.expect("the trainer's page");
            let picked: u64 = frame["counts"]
                .as_array()
                .map_or(0, |c| c.iter().map(|p| p[1].as_u64().unwrap_or(0)).sum());
            if frame["type"] == "tally" && frame["revealed"] == false && picked == PARTICIPANTS as u64 {
                break;
            }
        }
        send(
            &mut trainer,
            &trainer_frame(
                json!({"type": "start", "scenario": "isolation/write-skew", "variant": "serializable", "mode": "auto"}),
            ),
        )
        .await;
        let (mut revealed_at, mut done_at) = (None, None);
        while done_at.is_none() {
            let frame = next(&mut trainer).await.expect("the trainer's page");
            if frame["event"]["type"] == "reveal" {
                revealed_at = Some(Instant::now());
            }
            if frame["type"] == "done" {
                done_at = Some(Instant::now());
            }
        }
        let (revealed_at, done_at) = (revealed_at.expect("a reveal"), done_at.expect("done"));
        let (mut answer, mut done) = (Vec::new(), Vec::new());
        while answer.len() < PARTICIPANTS || done.len() < PARTICIPANTS {
            let sighting = tokio::time::timeout(Duration::from_secs(60), sightings.recv())
                .await
                .expect("every page within a minute")
                .expect("participants");
            match sighting {
                Seen::Answer(at) => answer.push(at.saturating_duration_since(revealed_at).as_secs_f64() * 1e3),
                Seen::Done(at) => done.push(at.saturating_duration_since(done_at).as_secs_f64() * 1e3),
            }
        }
        let (a, d) = (spread(answer.clone()), spread(done.clone()));
        println!(
            "round {round}: answer shown p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms | run's done p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms",
            a.0, a.1, a.2, d.0, d.1, d.2
        );
        reveals.extend(answer);
        dones.extend(done);
    }
    let (a, d) = (spread(reveals), spread(dones));
    println!(
        "all rounds: answer shown p95 {:.0} ms (goal: 1000 ms), run's done p95 {:.0} ms; answer/done at p95: {:.2}",
        a.1,
        d.1,
        a.1 / d.1.max(1.0)
    );
    let _ = reqwest::Client::new()
        .delete(format!("http://{holder}/api/rooms/{room}"))
        .header("authorization", format!("Bearer {token}"))
        .send()
        .await;
}
