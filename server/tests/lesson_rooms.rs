//! A room running a lesson, over the real websocket and two replicas sharing Redis: the trainer
//! moves round by round (a catalog scenario, a saved spec, a round skipped, a round played at a
//! variant changed live with the trainer's own question, a recording replayed), 30 participants
//! answer under their handles, every score is what the scenario's constants say it must be, the
//! leaderboard is hidden then shown, a participant who reconnects on the other replica keeps their
//! score, a second person asking for a taken handle is told, and the results (summary, CSV,
//! figures across sessions) say the same.

#![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

mod common;

use common::socket::{Socket, connect, event_type, is_type, receive, receive_until, send};
use common::{close_room, db_slot};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

const PARTICIPANTS: usize = 30;

/// The answer the catalog's scenario gives at `variant` (its own constants, which the lab's
/// tests check against real runs).
fn catalog_answer(scenario: &str, variant: &str) -> &'static str {
    let def = racelab::labs::find(scenario).expect("in the catalog");
    let predict = def.predict.expect("it asks");
    predict
        .answers
        .iter()
        .find(|(v, ..)| *v == variant)
        .map(|(_, choice, _)| *choice)
        .expect("an answer at the variant")
}

fn handle(i: usize) -> String {
    format!("p{i:02}")
}

fn seat(i: usize, nonce: &str) -> String {
    format!("seat-of-{}-{nonce}", handle(i))
}

/// What participant `i` picks in round `round`, if they answer it: the design of the test, made
/// so that each round has right and wrong answers and a few who do not answer.
fn pick(round: usize, i: usize) -> Option<&'static str> {
    if i == 29 {
        return None;
    }
    match round {
        1 if i == 30 => None,
        1 => Some(if i.is_multiple_of(3) {
            "both-commit"
        } else {
            "bob-40001"
        }),
        2 => Some(if i.is_multiple_of(2) { "overspent" } else { "kept" }),
        4 => Some(match i {
            1..=10 => "bob",
            11..=20 => "alice",
            _ => "nobody",
        }),
        5 => Some(if i.is_multiple_of(5) {
            "bob-40001"
        } else {
            "both-commit"
        }),
        _ => None,
    }
}

/// Each round's right answer, from constants: the catalog's for the scenario's own questions,
/// the starter spec's `# answer 1`, and for the trainer's own question at SERIALIZABLE the
/// second committer, Bob, refused with 40001 (the catalog's `bob-40001`).
fn right_answers() -> BTreeMap<usize, String> {
    let serializable = catalog_answer("isolation/write-skew", "serializable");
    assert_eq!(serializable, "bob-40001", "round 4's answer rests on it");
    BTreeMap::from([
        (1, catalog_answer("isolation/write-skew", "read-committed").to_owned()),
        (2, "overspent".to_owned()),
        (4, "bob".to_owned()),
        (5, serializable.to_owned()),
    ])
}

async fn post(address: SocketAddr, path: &str, body: String) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("http://{address}{path}"))
        .body(body)
        .send()
        .await
        .expect("POST");
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn trainer_frame(room: &str, token: &str, mut frame: Value) -> Value {
    frame["v"] = json!(1);
    frame["room"] = json!(room);
    frame["token"] = json!(token);
    frame
}

/// Frames until a `lesson` frame for which `holds` is true; returns that frame.
async fn until_lesson(socket: &mut Socket, holds: impl Fn(&Value) -> bool) -> Value {
    let frames = receive_until(socket, |f| is_type(f, "lesson") && holds(f)).await;
    frames.last().expect("a lesson frame").clone()
}

fn on_round(number: usize) -> impl Fn(&Value) -> bool {
    move |f| f["round"]["number"] == number
}

fn revealed(number: usize) -> impl Fn(&Value) -> bool {
    move |f| f["round"]["number"] == number && !f["round"]["answer"].is_null()
}

/// A participant joins as `handle(i)` from its seat; returns the first lesson frame it is shown.
async fn join_as(address: SocketAddr, room: &str, i: usize, nonce: &str) -> (Socket, Value) {
    let mut socket = connect(address).await;
    let join = json!({"v": 1, "type": "join", "room": room, "handle": handle(i), "seat": seat(i, nonce)});
    send(&mut socket, join).await;
    let first = receive(&mut socket).await;
    assert!(is_type(&first, "room"), "joined: {first}");
    let lesson = until_lesson(&mut socket, |_| true).await;
    (socket, lesson)
}

/// A kept run of the write skew at SERIALIZABLE, for the recording round to replay.
async fn kept_serializable_run(address: SocketAddr) -> String {
    let mut socket = connect(address).await;
    let run = common::socket::start(&mut socket, "isolation/write-skew", "serializable", "auto").await;
    let done = receive_until(&mut socket, |f| is_type(f, "done")).await;
    assert_eq!(done.last().expect("done")["outcome"]["status"], "completed");
    // Kept once its end is stored: its recording answers.
    for _ in 0..100 {
        if common::get(address, &format!("/api/runs/{run}")).await.0 == 200 {
            return run;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("run {run} was never kept");
}

/// The trainer opens round `number` (at `variant`, if given) and every participant is shown it.
async fn open_round(
    trainer: &mut Socket,
    room: &str,
    token: &str,
    number: usize,
    variant: Option<&str>,
    everyone: &mut BTreeMap<usize, Socket>,
) -> Value {
    let mut frame = json!({"type": "round", "number": number});
    if let Some(variant) = variant {
        frame["variant"] = json!(variant);
    }
    send(trainer, trainer_frame(room, token, frame)).await;
    let shown = until_lesson(trainer, on_round(number)).await;
    for socket in everyone.values_mut() {
        let theirs = until_lesson(socket, on_round(number)).await;
        assert_eq!(theirs["round"], shown["round"], "every page is shown the same round");
    }
    shown
}

/// Everyone picks as [`pick`] says; the trainer's live tally counts every pick (those from the
/// other replica too) before the run starts; then it plays and every page is shown its answer.
/// Returns the lesson as the trainer is shown it then, and the id of the run that played.
async fn play_round(
    trainer: &mut Socket,
    room: &str,
    token: &str,
    round: &Value,
    everyone: &mut BTreeMap<usize, Socket>,
) -> (Value, String) {
    let number = usize::try_from(round["round"]["number"].as_u64().expect("a number")).expect("small");
    let mut picked = 0;
    for (&i, socket) in everyone.iter_mut() {
        if let Some(choice) = pick(number, i) {
            send(
                socket,
                json!({"v": 1, "type": "predict", "room": room, "choice": choice}),
            )
            .await;
            picked += 1;
        }
    }
    let counted = |f: &Value| {
        is_type(f, "tally")
            && f["counts"]
                .as_array()
                .is_some_and(|c| c.iter().map(|p| p[1].as_u64().unwrap_or(0)).sum::<u64>() == picked)
    };
    receive_until(trainer, counted).await;
    let start = json!({
        "type": "start",
        "scenario": round["round"]["scenario"],
        "variant": round["round"]["variant"],
        "mode": "auto",
    });
    send(trainer, trainer_frame(room, token, start)).await;
    let frames = receive_until(trainer, |f| is_type(f, "lesson") && revealed(number)(f)).await;
    let run = frames
        .iter()
        .find(|f| is_type(f, "started"))
        .and_then(|f| f["run_id"].as_str())
        .expect("the run started before it answered")
        .to_owned();
    assert!(
        frames.iter().any(|f| event_type(f) == Some("verdict")),
        "the run's events reached the trainer"
    );
    let answered = frames.last().expect("the lesson").clone();
    assert!(
        answered["round"].get("picked").is_none(),
        "the trainer has the tally: {answered}"
    );
    for (&i, socket) in everyone.iter_mut() {
        let mut theirs = until_lesson(socket, revealed(number)).await;
        // Each page is told the pick scored for it, and nobody else's.
        let own = pick(number, i).map(|choice| json!([[handle(i), choice]]));
        assert_eq!(theirs["round"].as_object_mut().and_then(|r| r.remove("picked")), own);
        assert_eq!(theirs["round"], answered["round"]);
    }
    (answered, run)
}

/// Each participant's right answers and answered rounds, from the design and the constants.
fn expected_scores(rounds: &[usize]) -> BTreeMap<String, (u64, u64)> {
    let right = right_answers();
    (1..=PARTICIPANTS)
        .map(|i| {
            let answered: Vec<(usize, &str)> = rounds.iter().filter_map(|&r| Some((r, pick(r, i)?))).collect();
            let rights = answered.iter().filter(|(r, choice)| right[r] == *choice).count();
            (handle(i), (rights as u64, answered.len() as u64))
        })
        .collect()
}

fn scores_of(leaderboard: &Value) -> BTreeMap<String, (u64, u64)> {
    leaderboard
        .as_array()
        .expect("a leaderboard")
        .iter()
        .map(|s| {
            let n = |k: &str| s[k].as_u64().expect("a count");
            (
                s["handle"].as_str().expect("a handle").to_owned(),
                (n("right"), n("answered")),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_room_runs_a_five_round_lesson_for_thirty_participants_across_two_replicas() {
    let _slot = db_slot().await;
    let (holder, other) = (common::server().await, common::server().await);
    let nonce = format!("{:016x}", rand::random::<u64>());
    let run = kept_serializable_run(holder).await;
    let (status, spec) = post(holder, "/api/specs", shared::spec::STARTER.to_owned()).await;
    assert_eq!(status, 201, "{spec}");
    let spec = spec["id"].as_str().expect("a spec id").to_owned();
    let text = format!(
        "---\ntitle: Races, protocol test {nonce}\nleaderboard: hidden\n---\n\n\
         ## Write skew at READ COMMITTED\nscenario: isolation/write-skew\nvariant: read-committed\n\
         explain: Both read before either wrote.\n\n\
         ## The starter spec\nspec: {spec}\npermutation: 1\n\n\
         ## A lost update, skipped\nscenario: isolation/lost-update\nvariant: read-committed\n\n\
         ## Whose transaction is refused\nscenario: isolation/write-skew\nvariant: read-committed\n\
         question: Whose transaction does PostgreSQL refuse?\nchoice alice: Alice's\nchoice bob: Bob's\n\
         choice nobody: Nobody's\nanswer: failed 40001\n\n\
         ## Recorded at SERIALIZABLE\nrecording: /api/runs/{run}/recording\n"
    );
    let (status, lesson) = post(holder, "/api/lessons", text).await;
    assert_eq!(status, 201, "{lesson}");
    let lesson = lesson["id"].as_str().expect("a lesson id").to_owned();

    // A room opened with the lesson: its trainer token and its results' secret address.
    let (status, opened) = post(holder, "/api/rooms", json!({ "lesson": lesson }).to_string()).await;
    assert_eq!(status, 201, "{opened}");
    let room = opened["id"].as_str().expect("a room").to_owned();
    let token = opened["trainer_token"].as_str().expect("a token").to_owned();
    let results = opened["results"].as_str().expect("where results are read").to_owned();
    assert_eq!(opened["lesson"], lesson);
    let (status, _) = post(
        holder,
        "/api/rooms",
        json!({ "lesson": "0123456789abcdef" }).to_string(),
    )
    .await;
    assert_eq!(status, 404, "a lesson nobody kept opens no room");

    let mut trainer = connect(holder).await;
    send(
        &mut trainer,
        json!({"v": 1, "type": "join", "room": room, "token": token}),
    )
    .await;
    let before = until_lesson(&mut trainer, |_| true).await;
    assert_eq!(before["rounds"], 5);
    assert_eq!(before["shown"], false, "the lesson hides the leaderboard");
    assert!(before["round"].is_null(), "no round before the trainer opens one");

    // Thirty participants, odd ones on the holder, even ones on the other replica.
    let mut everyone = BTreeMap::new();
    for i in 1..=PARTICIPANTS {
        let address = if i % 2 == 1 { holder } else { other };
        let (socket, _) = join_as(address, &room, i, &nonce).await;
        everyone.insert(i, socket);
    }
    until_lesson(&mut trainer, |f| {
        f["leaderboard"].as_array().is_some_and(|b| b.len() == PARTICIPANTS)
    })
    .await;

    // Someone else asking for a taken handle, on either replica, is told; a page without a
    // handle may watch but not answer.
    for address in [holder, other] {
        let mut stranger = connect(address).await;
        let join = json!({"v": 1, "type": "join", "room": room, "handle": handle(3), "seat": "someone-else-entirely"});
        send(&mut stranger, join).await;
        let refused = receive(&mut stranger).await;
        assert_eq!(refused["code"], "handle_taken", "{refused}");
    }
    let mut watcher = connect(other).await;
    send(&mut watcher, json!({"v": 1, "type": "join", "room": room})).await;
    receive_until(&mut watcher, |f| is_type(f, "lesson")).await;

    // Round 1: the scenario's own question.
    let round = open_round(&mut trainer, &room, &token, 1, None, &mut everyone).await;
    assert_eq!(round["round"]["scenario"], "isolation/write-skew");
    assert!(round["round"]["answer"].is_null() && round["round"]["explain"].is_null());
    send(
        &mut watcher,
        json!({"v": 1, "type": "predict", "room": room, "choice": "both-commit"}),
    )
    .await;
    let refused = receive_until(&mut watcher, |f| is_type(f, "error")).await;
    assert!(
        refused.last().expect("an error")["message"]
            .as_str()
            .expect("a message")
            .contains("handle"),
        "{refused:?}"
    );
    let asked = json!(["isolation/write-skew", "read-committed"]);
    receive_until(&mut watcher, |f| is_type(f, "room") && f["asked"] == asked).await;
    let (answered, _) = play_round(&mut trainer, &room, &token, &round, &mut everyone).await;
    assert_eq!(answered["round"]["answer"], right_answers()[&1]);
    assert_eq!(answered["round"]["explain"], "Both read before either wrote.");
    // Hidden: each participant sees their own line only; the trainer sees everyone's.
    let expected = expected_scores(&[1]);
    assert_eq!(scores_of(&answered["leaderboard"]), expected);

    // Round 2: a saved spec, its author's question.
    let round = open_round(&mut trainer, &room, &token, 2, None, &mut everyone).await;
    assert_eq!(round["round"]["scenario"], format!("spec/{spec}"));
    assert_eq!(round["round"]["variant"], "p1");
    let (answered, _) = play_round(&mut trainer, &room, &token, &round, &mut everyone).await;
    assert_eq!(answered["round"]["answer"], "overspent");
    assert_eq!(scores_of(&answered["leaderboard"]), expected_scores(&[1, 2]));

    // p05 reloads on the other replica: the same seat takes the handle, and the score, back.
    everyone.remove(&5);
    let (socket, shown) = join_as(other, &room, 5, &nonce).await;
    let own = scores_of(&shown["leaderboard"]);
    assert_eq!(own.len(), 1, "hidden: their own line only: {shown}");
    assert_eq!(own[&handle(5)], expected_scores(&[1, 2])[&handle(5)]);
    everyone.insert(5, socket);

    // Round 3 is skipped; round 4 plays at SERIALIZABLE instead of the lesson's READ COMMITTED,
    // and its own question is answered from the run.
    let round = open_round(&mut trainer, &room, &token, 4, Some("serializable"), &mut everyone).await;
    assert_eq!(round["round"]["variant"], "serializable");
    assert_eq!(round["round"]["question"], "Whose transaction does PostgreSQL refuse?");
    // p07 (on the holder) picks, then reloads on the other replica: its page is shown its pick.
    let mine = pick(4, 7).expect("p07 answers round 4");
    let socket = everyone.get_mut(&7).expect("p07");
    send(socket, json!({"v": 1, "type": "predict", "room": room, "choice": mine})).await;
    receive_until(&mut trainer, |f| {
        is_type(f, "tally") && f["counts"].to_string().contains(&format!("[\"{mine}\",1]"))
    })
    .await;
    everyone.remove(&7);
    let (socket, shown) = join_as(other, &room, 7, &nonce).await;
    assert_eq!(shown["round"]["picked"], json!([[handle(7), mine]]), "{shown}");
    everyone.insert(7, socket);
    let (answered, _) = play_round(&mut trainer, &room, &token, &round, &mut everyone).await;
    assert_eq!(answered["round"]["answer"], "bob");

    // Round 5 replays the kept run: nothing runs on a database, and its reveal answers.
    let round = open_round(&mut trainer, &room, &token, 5, None, &mut everyone).await;
    assert_eq!(round["round"]["scenario"], "isolation/write-skew");
    assert_eq!(round["round"]["variant"], "serializable");
    let (answered, replayed) = play_round(&mut trainer, &room, &token, &round, &mut everyone).await;
    assert_eq!(replayed, run, "the kept run, replayed");
    assert_eq!(answered["round"]["answer"], right_answers()[&5]);
    let played = [1, 2, 4, 5];
    assert_eq!(scores_of(&answered["leaderboard"]), expected_scores(&played));

    // The trainer shows the leaderboard: everyone sees every line, best first.
    send(
        &mut trainer,
        trainer_frame(&room, &token, json!({"type": "leaderboard", "shown": true})),
    )
    .await;
    for socket in everyone.values_mut() {
        let shown = until_lesson(socket, |f| f["shown"] == true).await;
        assert_eq!(scores_of(&shown["leaderboard"]), expected_scores(&played));
        let rights: Vec<u64> = shown["leaderboard"]
            .as_array()
            .expect("lines")
            .iter()
            .map(|s| s["right"].as_u64().expect("right"))
            .collect();
        assert!(rights.windows(2).all(|w| w[0] >= w[1]), "best first: {rights:?}");
    }

    // The results: every answer in the CSV, as the design and the constants say.
    let (status, kind, csv) = common::get(holder, &format!("{results}/csv")).await;
    assert_eq!(status, 200, "{csv}");
    assert!(kind.starts_with("text/csv"), "{kind}");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("handle,round,answer,right,seconds"));
    let mut rows = BTreeSet::new();
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        let [handle, round, answer, right, seconds] = fields.as_slice() else {
            panic!("five fields: {line}");
        };
        let seconds: f64 = seconds.parse().expect("seconds");
        assert!((0.0..600.0).contains(&seconds), "{line}");
        rows.insert((
            (*handle).to_owned(),
            round.parse::<usize>().expect("a round"),
            (*answer).to_owned(),
            (*right).to_owned(),
        ));
    }
    let right = right_answers();
    let expected_rows: BTreeSet<(String, usize, String, String)> = (1..=PARTICIPANTS)
        .flat_map(|i| played.iter().filter_map(move |&r| Some((i, r, pick(r, i)?))))
        .map(|(i, r, choice)| {
            let verdict = if right[&r] == choice { "right" } else { "wrong" };
            (handle(i), r, choice.to_owned(), verdict.to_owned())
        })
        .collect();
    assert_eq!(rows, expected_rows);
    // The summary: each round's right answers, the skipped one unplayed.
    let summary = common::get_json(holder, &results).await;
    let per_round: Vec<(u64, u64)> = summary["rounds"]
        .as_array()
        .expect("rounds")
        .iter()
        .map(|r| (r["answers"].as_u64().expect("n"), r["right"].as_u64().expect("n")))
        .collect();
    let expected_per_round: Vec<(u64, u64)> = (1..=5)
        .map(|r| {
            let of_round = expected_rows.iter().filter(|row| row.1 == r);
            let answers = of_round.clone().count() as u64;
            (answers, of_round.filter(|row| row.3 == "right").count() as u64)
        })
        .collect();
    assert_eq!(per_round, expected_per_round);
    assert_eq!(per_round[2], (0, 0), "the skipped round");
    // Figures across sessions: this lesson ran once.
    let figures = common::get_json(other, &format!("/api/lessons/{lesson}/figures")).await;
    let sessions: Vec<u64> = figures
        .as_array()
        .expect("rounds")
        .iter()
        .map(|r| r["sessions"].as_u64().expect("n"))
        .collect();
    assert_eq!(sessions, [1, 1, 0, 1, 1]);
    assert!(!figures.to_string().contains("p01"), "figures name nobody");
    let (status, _, _) = common::get(holder, "/api/results/not-a-session/csv").await;
    assert_eq!(status, 404);
    close_room(holder, &room, &token).await;
}

/// `PUT /api/rooms/<code>/rounds/<n>/recording` through `address`, as `token`'s trainer: the status
/// and the error, if any.
async fn send_recording(address: SocketAddr, room: &str, round: usize, token: &str, body: String) -> (u16, String) {
    let response = reqwest::Client::new()
        .put(format!("http://{address}/api/rooms/{room}/rounds/{round}/recording"))
        .header("authorization", format!("Bearer {token}"))
        .body(body)
        .send()
        .await
        .expect("PUT");
    let status = response.status().as_u16();
    let body: Value = serde_json::from_str(&response.text().await.unwrap_or_default()).unwrap_or(Value::Null);
    (status, body["error"].as_str().unwrap_or_default().to_owned())
}

/// A recording round at another site, which racelab never fetches: the trainer's page sends the
/// file (here to the replica that does not hold the room), the round opens with the recorded
/// scenario's question on every replica, plays the recorded run again (its id: nothing runs),
/// and its reveal scores the picks. Everything else about sending one is refused by name.
#[tokio::test]
async fn a_room_plays_the_recording_its_trainer_s_page_sends() {
    let _slot = db_slot().await;
    let (holder, other) = (common::server().await, common::server().await);
    let nonce = format!("{:016x}", rand::random::<u64>());
    let run = kept_serializable_run(holder).await;
    let (status, _, recording) = common::get(holder, &format!("/api/runs/{run}/recording")).await;
    assert_eq!(status, 200);
    let text = format!(
        "---\ntitle: Recordings, protocol test {nonce}\n---\n\n\
         ## On a blog\nrecording: https://blog.example/write-skew.racelab.json\n\n\
         ## Kept here\nrecording: /runs/{run}\n\n\
         ## Live\nscenario: isolation/write-skew\nvariant: read-committed\n"
    );
    let (status, lesson) = post(holder, "/api/lessons", text).await;
    assert_eq!(status, 201, "{lesson}");
    let (status, opened) = post(holder, "/api/rooms", json!({ "lesson": lesson["id"] }).to_string()).await;
    assert_eq!(status, 201, "{opened}");
    let room = opened["id"].as_str().expect("a room").to_owned();
    let token = opened["trainer_token"].as_str().expect("a token").to_owned();
    let mut trainer = connect(holder).await;
    send(
        &mut trainer,
        json!({"v": 1, "type": "join", "room": room, "token": token}),
    )
    .await;
    until_lesson(&mut trainer, |_| true).await;
    let (mut ana, _) = join_as(other, &room, 1, &nonce).await;

    // Opened as any round, it names the way in.
    send(
        &mut trainer,
        trainer_frame(&room, &token, json!({"type": "round", "number": 1})),
    )
    .await;
    let refused = receive_until(&mut trainer, |f| is_type(f, "error")).await;
    let said = refused.last().expect("an error")["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(said.contains("PUT /api/rooms/<code>/rounds/1/recording"), "{said}");
    // Refused: without the token, no recording, a round that is none or one racelab keeps, too
    // large, no such room.
    let refusals = [
        (
            other,
            room.as_str(),
            1,
            "not the token",
            recording.clone(),
            403,
            "only the room's trainer",
        ),
        (
            other,
            &room,
            1,
            &token,
            "{\"format\": \"a poem\"}".to_owned(),
            400,
            "cannot be played",
        ),
        (
            holder,
            &room,
            3,
            &token,
            recording.clone(),
            400,
            "round 3 is no recording",
        ),
        (
            holder,
            &room,
            2,
            &token,
            recording.clone(),
            400,
            "a run this racelab keeps",
        ),
        (holder, &room, 9, &token, recording.clone(), 400, "rounds 1 to 3"),
        (holder, &room, 1, &token, " ".repeat((4 << 20) + 1), 413, ""),
        (holder, "NOPE00", 1, &token, recording.clone(), 404, "no room"),
    ];
    for (address, to, round, as_who, body, status, why) in refusals {
        let (got, error) = send_recording(address, to, round, as_who, body).await;
        assert_eq!(got, status, "round {round} of {to}: {error}");
        assert!(error.contains(why), "round {round} of {to}: {error}");
    }

    // Sent to the replica that does not hold the room: the round opens everywhere.
    assert_eq!(
        send_recording(other, &room, 1, &token, recording.clone()).await,
        (204, String::new())
    );
    let open = until_lesson(&mut ana, on_round(1)).await;
    assert_eq!(open["round"]["scenario"], "isolation/write-skew");
    assert_eq!(open["round"]["variant"], "serializable");
    let shown = until_lesson(&mut trainer, on_round(1)).await;
    assert_eq!(shown["round"], open["round"]);
    let wrong = "both-commit";
    assert_ne!(wrong, catalog_answer("isolation/write-skew", "serializable"));
    send(
        &mut ana,
        json!({"v": 1, "type": "predict", "room": room, "choice": wrong}),
    )
    .await;
    receive_until(&mut trainer, |f| {
        is_type(f, "tally") && f["counts"].to_string().contains(&format!("[\"{wrong}\",1]"))
    })
    .await;
    let start = json!({"type": "start", "scenario": "isolation/write-skew", "variant": "serializable", "mode": "auto"});
    send(&mut trainer, trainer_frame(&room, &token, start)).await;
    let frames = receive_until(&mut trainer, |f| is_type(f, "lesson") && revealed(1)(f)).await;
    let started = frames
        .iter()
        .find(|f| is_type(f, "started"))
        .expect("the replay started");
    assert_eq!(started["run_id"], run.as_str(), "the recorded run, played again");
    let answered = frames.last().expect("the answer");
    assert_eq!(
        answered["round"]["answer"],
        catalog_answer("isolation/write-skew", "serializable")
    );
    let theirs = until_lesson(&mut ana, revealed(1)).await;
    assert_eq!(
        scores_of(&theirs["leaderboard"])[&handle(1)],
        (0, 1),
        "answered, and wrong"
    );
    assert_eq!(theirs["round"]["picked"], json!([[handle(1), wrong]]));
    close_room(holder, &room, &token).await;
}

/// What does not hold is refused by name and changes nothing: a room body that is not a lesson,
/// a round the lesson does not have or asked by someone without the token, lesson orders in a
/// room without one, a handle that cannot be one or comes without its seat.
#[tokio::test]
async fn lesson_rooms_refuse_what_does_not_hold() {
    let _slot = db_slot().await;
    let address = common::server().await;
    for body in [r#"{"lesson": 7}"#, r#"{"lessons": "x"}"#, "not json"] {
        let (status, answer) = post(address, "/api/rooms", body.to_owned()).await;
        assert_eq!(status, 400, "{body}: {answer}");
    }
    let sample = include_str!("../../lessons/isolation-in-an-hour.lesson.md");
    let (status, lesson) = post(address, "/api/lessons", sample.to_owned()).await;
    assert_eq!(status, 201, "{lesson}");
    let (status, opened) = post(address, "/api/rooms", json!({ "lesson": lesson["id"] }).to_string()).await;
    assert_eq!(status, 201, "{opened}");
    let room = opened["id"].as_str().expect("a room").to_owned();
    let token = opened["trainer_token"].as_str().expect("a token").to_owned();
    let mut trainer = connect(address).await;
    send(
        &mut trainer,
        json!({"v": 1, "type": "join", "room": room, "token": token}),
    )
    .await;
    until_lesson(&mut trainer, |_| true).await;

    let refusals = [
        (
            trainer_frame(&room, &token, json!({"type": "round", "number": 0})),
            "bad_frame",
            "rounds 1 to 5",
        ),
        (
            trainer_frame(&room, &token, json!({"type": "round", "number": 6})),
            "bad_frame",
            "rounds 1 to 5",
        ),
        (
            trainer_frame(
                &room,
                &token,
                json!({"type": "round", "number": 1, "variant": "snapshot"}),
            ),
            "unknown_variant",
            "snapshot",
        ),
        (
            json!({"v": 1, "type": "round", "number": 1, "room": room}),
            "bad_token",
            "trainer",
        ),
        (
            json!({"v": 1, "type": "join", "room": room, "handle": "a/b", "seat": "a-long-enough-seat"}),
            "bad_frame",
            "not '/'",
        ),
        (
            json!({"v": 1, "type": "join", "room": room, "handle": "ana"}),
            "bad_frame",
            "seat",
        ),
        (
            json!({"v": 1, "type": "round", "number": 1}),
            "bad_frame",
            "need the \"room\"",
        ),
        (
            trainer_frame(
                &room,
                &token,
                json!({"type": "ask", "scenario": "isolation/write-skew", "variant": "serializable"}),
            ),
            "bad_frame",
            "runs a lesson",
        ),
    ];
    let mut page = connect(address).await;
    for (frame, code, says) in refusals {
        send(&mut page, frame.clone()).await;
        let refused = receive(&mut page).await;
        assert_eq!(refused["code"], code, "{frame}: {refused}");
        let message = refused["message"].as_str().expect("a message");
        assert!(message.contains(says), "{frame}: {message}");
    }
    // Nothing of it reached the room: no round is open.
    send(&mut page, json!({"v": 1, "type": "join", "room": room})).await;
    let shown = until_lesson(&mut page, |_| true).await;
    assert!(shown["round"].is_null(), "{shown}");

    // A trainer's page that reloads is shown the lesson where it is.
    send(
        &mut trainer,
        trainer_frame(&room, &token, json!({"type": "round", "number": 2})),
    )
    .await;
    until_lesson(&mut trainer, on_round(2)).await;
    let mut reloaded = connect(address).await;
    send(
        &mut reloaded,
        json!({"v": 1, "type": "join", "room": room, "token": token}),
    )
    .await;
    let shown = until_lesson(&mut reloaded, |_| true).await;
    assert_eq!(shown["round"]["number"], 2);
    assert_eq!(shown["round"]["variant"], "serializable");
    // Asked again for the round still open (that page's first frame, say), nothing changes.
    send(
        &mut reloaded,
        trainer_frame(&room, &token, json!({"type": "round", "number": 2})),
    )
    .await;
    send(
        &mut reloaded,
        trainer_frame(&room, &token, json!({"type": "leaderboard", "shown": false})),
    )
    .await;
    let hidden = until_lesson(&mut reloaded, |f| f["shown"] == false).await;
    assert_eq!(hidden["round"], shown["round"]);
    close_room(address, &room, &token).await;

    // A room without a lesson plays no rounds.
    let (plain, plain_token) = common::open_room(address).await;
    let mut trainer = connect(address).await;
    send(
        &mut trainer,
        trainer_frame(&plain, &plain_token, json!({"type": "round", "number": 1})),
    )
    .await;
    let refused = receive(&mut trainer).await;
    assert_eq!(refused["code"], "bad_frame");
    assert!(
        refused["message"]
            .as_str()
            .expect("a message")
            .contains("runs no lesson"),
        "{refused}"
    );
    close_room(address, &plain, &plain_token).await;
}

/// Results are kept for the days configured and deleted after: an answer older than that is
/// gone from its session's results, a newer one stays.
#[tokio::test]
async fn results_past_their_time_are_deleted() {
    let _slot = db_slot().await;
    let pool = sqlx::PgPool::connect(&common::config().database_url)
        .await
        .expect("PostgreSQL");
    let store = racelab::store::Store::new(pool);
    let nonce = format!("{:016x}", rand::random::<u64>());
    let (old, new) = (format!("old-{nonce}"), format!("new-{nonce}"));
    let answer = shared::lesson::live::Answer {
        round: 1,
        handle: "ana".into(),
        choice: "bob".into(),
        right: true,
        millis: 1_500,
    };
    for session in [&old, &new] {
        store
            .keep_answers(session, "0123456789abcdef", 1, std::slice::from_ref(&answer))
            .await
            .expect("kept");
    }
    let mut conn = common::inspector().await;
    sqlx::query("UPDATE lesson_answers SET answered_at = now() - interval '31 days' WHERE session = $1")
        .bind(&old)
        .execute(&mut conn)
        .await
        .expect("aged");
    assert!(store.forget_answers(30).await.expect("deleted") >= 1);
    assert_eq!(store.answers(&old).await.expect("read"), None);
    let (lesson, kept) = store.answers(&new).await.expect("read").expect("still kept");
    assert_eq!((lesson.as_str(), kept), ("0123456789abcdef", vec![answer]));
    sqlx::query("DELETE FROM lesson_answers WHERE session = $1")
        .bind(&new)
        .execute(&mut conn)
        .await
        .expect("cleaned");
}
