//! Rooms for team training, over the real websocket: a trainer drives a run, participants follow
//! it step by step, a late joiner catches up, nobody without the token drives anything, the
//! limits hold, and 200 participants each get every frame in order.

#![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

mod common;

use common::socket::{Socket, connect, event_type, is_type, receive, receive_until, send};
use common::{
    WRITE_SKEW_SERIALIZABLE, close_room, db_slot, delete_room, keys_of, lines, open_room, until_no_keys,
    wait_until_clean,
};
use serde_json::{Value, json};
use std::time::Duration;

/// Joins `room` (with `token`, as its trainer); returns the participants the room reported.
async fn join(socket: &mut Socket, room: &str, token: Option<&str>) -> u64 {
    let mut frame = json!({"v": 1, "type": "join", "room": room});
    if let Some(token) = token {
        frame["token"] = json!(token);
    }
    send(socket, frame).await;
    let status = receive(socket).await;
    assert!(is_type(&status, "room"), "{status}");
    assert_eq!(status["room"], room);
    status["participants"].as_u64().expect("a count")
}

/// A frame from the room's trainer.
fn trainer_frame(room: &str, token: &str, mut frame: Value) -> Value {
    frame["v"] = json!(1);
    frame["room"] = json!(room);
    frame["token"] = json!(token);
    frame
}

/// The trainer starts a stepped write skew at `variant` in the room.
async fn step_write_skew(trainer: &mut Socket, room: &str, token: &str, variant: &str) {
    let start = json!({"type": "start", "scenario": "isolation/write-skew", "variant": variant, "mode": "step"});
    send(trainer, trainer_frame(room, token, start)).await;
}

/// Frames until the room's run first pauses; returns the run's id.
async fn until_first_pause(socket: &mut Socket) -> String {
    let frames = receive_until(socket, |f| event_type(f) == Some("paused")).await;
    frames
        .iter()
        .find(|f| is_type(f, "started"))
        .and_then(|f| f["run_id"].as_str())
        .expect("a run id")
        .to_owned()
}

/// The run's frames from `started` through `done`, skipping room status frames.
fn run_frames(frames: &[Value]) -> Vec<Value> {
    frames.iter().filter(|f| !is_type(f, "room")).cloned().collect()
}

/// Frames until the event numbered `seq` (a `paused` event of step mode) has arrived.
async fn until_event(socket: &mut Socket, seq: u64) -> Vec<Value> {
    receive_until(socket, |f| f["event"]["seq"] == seq).await
}

fn last_paused_seq(frames: &[Value]) -> u64 {
    frames
        .iter()
        .rev()
        .find(|f| event_type(f) == Some("paused"))
        .and_then(|f| f["event"]["seq"].as_u64())
        .expect("a paused event")
}

fn transcript(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .filter(|f| event_type(f) == Some("say"))
        .map(|f| f["event"]["line"].as_str().expect("a line").to_owned())
        .collect()
}

#[tokio::test]
async fn participants_follow_the_trainers_steps_and_a_late_joiner_catches_up() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let (room, token) = open_room(address).await;
    let mut trainer = connect(address).await;
    assert_eq!(
        join(&mut trainer, &room, Some(&token)).await,
        0,
        "the trainer is not a participant"
    );
    let mut early = Vec::new();
    for expected in 1..=2 {
        let mut participant = connect(address).await;
        assert_eq!(join(&mut participant, &room, None).await, expected);
        early.push(participant);
    }
    // The trainer's screen hears each join.
    for count in [1, 2] {
        let status = receive(&mut trainer).await;
        assert_eq!(
            (status["type"].as_str(), status["participants"].as_u64()),
            (Some("room"), Some(count))
        );
    }

    send(
        &mut trainer,
        trainer_frame(
            &room,
            &token,
            json!({"type": "start", "scenario": "isolation/write-skew", "variant": "serializable", "mode": "step"}),
        ),
    )
    .await;
    let mut seen: Vec<Vec<Value>> = vec![Vec::new(); 3];
    let first = receive_until(&mut trainer, |f| event_type(f) == Some("paused")).await;
    let mut paused = last_paused_seq(&first);
    seen[0].extend(first);
    // Four steps, each followed by every page.
    for step in 0..=4 {
        for (i, participant) in early.iter_mut().enumerate() {
            seen[i + 1].extend(until_event(participant, paused).await);
        }
        if step == 4 {
            break;
        }
        send(&mut trainer, trainer_frame(&room, &token, json!({"type": "next"}))).await;
        let more = receive_until(&mut trainer, |f| event_type(f) == Some("paused")).await;
        paused = last_paused_seq(&more);
        seen[0].extend(more);
    }

    // A participant who joins now gets steps 1–4 as they were, then the rest live.
    let mut late = connect(address).await;
    assert_eq!(join(&mut late, &room, None).await, 3);
    let caught_up = until_event(&mut late, paused).await;
    assert_eq!(
        run_frames(&caught_up),
        run_frames(&seen[1]),
        "the late joiner's catch-up is the run so far"
    );
    let steps_so_far = caught_up.iter().filter(|f| event_type(f) == Some("step")).count();
    assert!(
        steps_so_far >= 4,
        "four steps played before the late join, saw {steps_so_far}"
    );
    seen.push(caught_up);

    // The trainer steps to the end; every page sees the same run.
    loop {
        send(&mut trainer, trainer_frame(&room, &token, json!({"type": "next"}))).await;
        let more = receive_until(&mut trainer, |f| event_type(f) == Some("paused") || is_type(f, "done")).await;
        let done = more.iter().any(|f| is_type(f, "done"));
        seen[0].extend(more);
        if done {
            break;
        }
    }
    let mut followers: Vec<&mut Socket> = early.iter_mut().collect();
    followers.push(&mut late);
    for (i, follower) in followers.into_iter().enumerate() {
        seen[i + 1].extend(receive_until(follower, |f| is_type(f, "done")).await);
    }
    let trainers = run_frames(&seen[0]);
    assert!(is_type(&trainers[0], "started"), "{}", trainers[0]);
    assert_eq!(transcript(&trainers), lines(WRITE_SKEW_SERIALIZABLE));
    for (i, page) in seen.iter().enumerate().skip(1) {
        assert_eq!(
            run_frames(page),
            trainers,
            "page {i} saw the trainer's run, frame for frame"
        );
    }
    let run_id = trainers[0]["run_id"].as_str().expect("a run id");
    assert_eq!(wait_until_clean(run_id).await, common::Leftovers::NONE);
    close_room(address, &room, &token).await;
}

#[tokio::test]
async fn only_the_trainer_drives_and_refusals_change_nothing() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let (room, token) = open_room(address).await;
    let mut participant = connect(address).await;
    join(&mut participant, &room, None).await;

    let start = json!({"type": "start", "scenario": "isolation/write-skew", "variant": "serializable"});
    let refusals = [
        (json!({"v": 1, "type": "join", "room": "NOPE22"}), "unknown_room"),
        (trainer_frame("NOPE22", &token, start.clone()), "unknown_room"),
        (
            json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "serializable", "room": room}),
            "bad_token",
        ),
        (trainer_frame(&room, "not-the-token", start.clone()), "bad_token"),
        (
            trainer_frame(&room, "not-the-token", json!({"type": "cancel"})),
            "bad_token",
        ),
        (json!({"v": 1, "type": "next", "room": room}), "bad_token"),
        (
            json!({"v": 1, "type": "start", "scenario": "isolation/write-skew", "variant": "serializable"}),
            "in_room",
        ),
        (json!({"v": 1, "type": "join"}), "in_room"),
        (trainer_frame(&room, &token, json!({"type": "next"})), "no_run"),
        (
            trainer_frame(
                &room,
                &token,
                json!({"type": "start", "scenario": "isolation/nope", "variant": "x"}),
            ),
            "unknown_scenario",
        ),
    ];
    for (frame, code) in refusals {
        send(&mut participant, frame.clone()).await;
        let answer = receive(&mut participant).await;
        assert_eq!(
            (answer["type"].as_str(), answer["code"].as_str()),
            (Some("error"), Some(code)),
            "{frame} → {answer}"
        );
    }
    // Nothing started: a new follower finds the room as it was, and the first run frame it
    // sees (below) is of the trainer's run.
    let mut observer = connect(address).await;
    assert_eq!(join(&mut observer, &room, None).await, 2);
    let _ = receive(&mut participant).await; // the observer's arrival
    // The trainer's frames work from any socket, even one that follows nothing.
    let mut trainer = connect(address).await;
    send(&mut trainer, trainer_frame(&room, &token, start)).await;
    for page in [&mut participant, &mut observer] {
        let frames = receive_until(page, |f| is_type(f, "done")).await;
        let run = run_frames(&frames);
        assert!(
            is_type(&run[0], "queued") || is_type(&run[0], "started"),
            "the first frame a follower sees is the trainer's run: {}",
            run[0]
        );
        assert_eq!(transcript(&run), lines(WRITE_SKEW_SERIALIZABLE));
    }
    // Followers who leave stop being counted (the trainer's page hears it); the room stays open
    // for its trainer until it idles.
    join(&mut trainer, &room, Some(&token)).await;
    drop(participant);
    drop(observer);
    receive_until(&mut trainer, |f| is_type(f, "room") && f["participants"] == 0).await;
    let mut again = connect(address).await;
    assert_eq!(
        join(&mut again, &room, None).await,
        1,
        "the two who left are no longer counted"
    );
    close_room(address, &room, &token).await;
}

/// The trainer closes the room: without the token it stays; with it, the run going ends
/// (followers get its `done`), the followers are told the room closed, and its sandbox is gone.
#[tokio::test]
async fn the_trainer_closes_the_room_and_its_run_ends() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let (room, token) = open_room(address).await;
    let mut participant = connect(address).await;
    join(&mut participant, &room, None).await;
    let mut trainer = connect(address).await;
    step_write_skew(&mut trainer, &room, &token, "serializable").await;
    let run_id = until_first_pause(&mut participant).await;

    assert_eq!(delete_room(address, &room, "not-the-token").await, 403);
    assert_eq!(delete_room(address, &room, &token).await, 204);
    let end = receive_until(&mut participant, |f| is_type(f, "error")).await;
    let done = end
        .iter()
        .find(|f| is_type(f, "done"))
        .expect("the run's done before the room closed");
    assert_eq!(done["outcome"]["status"], "cancelled");
    assert_eq!(end.last().expect("told")["code"], "unknown_room");
    assert_eq!(wait_until_clean(&run_id).await, common::Leftovers::NONE);
    assert_eq!(delete_room(address, &room, &token).await, 404, "gone");
    until_no_keys(&room).await;
}

/// A stepped run whose pages all left is cancelled after the room's abandon time (1 s here) and
/// cleaned, instead of waiting for its run time limit.
#[tokio::test]
async fn a_run_nobody_watches_is_cancelled_and_cleaned() {
    let _slot = db_slot().await;
    let mut config = common::config();
    config.room_abandoned_secs = 1;
    let address = common::server_with(config).await;
    let (room, token) = open_room(address).await;
    let mut trainer = connect(address).await;
    join(&mut trainer, &room, Some(&token)).await;
    step_write_skew(&mut trainer, &room, &token, "read-committed").await;
    let run_id = until_first_pause(&mut trainer).await;
    drop(trainer);
    assert_eq!(
        wait_until_clean(&run_id).await,
        common::Leftovers::NONE,
        "cancelled and cleaned"
    );
    // The room itself stays, and the run is over in its feed.
    let mut back = connect(address).await;
    join(&mut back, &room, Some(&token)).await;
    let replayed = receive_until(&mut back, |f| is_type(f, "done")).await;
    assert_eq!(replayed.last().expect("done")["outcome"]["status"], "cancelled");
    close_room(address, &room, &token).await;
}

#[tokio::test]
async fn rooms_have_their_limits() {
    let _slot = db_slot().await;
    let mut config = common::config();
    config.room_participants = 2;
    config.rooms_per_trainer = 2;
    config.room_idle_secs = 1;
    let address = common::server_with(config).await;
    let client = reqwest::Client::new();
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let response = client
            .post(format!("http://{address}/api/rooms"))
            .send()
            .await
            .expect("POST /api/rooms");
        statuses.push(response.status().as_u16());
        if response.status().as_u16() == 429 {
            let body: Value = serde_json::from_str(&response.text().await.expect("a body")).expect("JSON");
            assert!(
                body["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("RACELAB_ROOMS_PER_TRAINER")),
                "{body}"
            );
        }
    }
    assert_eq!(statuses, [201, 201, 429], "two rooms per trainer address");
    let foreign = client
        .post(format!("http://{address}/api/rooms"))
        .header("origin", "https://elsewhere.example")
        .send()
        .await
        .expect("POST /api/rooms");
    assert_eq!(foreign.status().as_u16(), 403, "another site's page may not open rooms");

    let (room, _) = {
        // The first two are this address's; a room from them would do, but their codes were not
        // kept: wait for them to idle out (1 s), then open one more.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
        open_room(address).await
    };
    let mut sockets = Vec::new();
    for _ in 0..2 {
        let mut participant = connect(address).await;
        join(&mut participant, &room, None).await;
        sockets.push(participant);
    }
    let mut third = connect(address).await;
    send(&mut third, json!({"v": 1, "type": "join", "room": room})).await;
    let answer = receive(&mut third).await;
    assert_eq!(answer["code"], "room_full", "{answer}");

    // Idle for its second, the room closes; its followers are told, and it is gone.
    for participant in &mut sockets {
        let told = receive_until(participant, |f| is_type(f, "error")).await;
        assert_eq!(told.last().expect("told")["code"], "unknown_room");
    }
    send(&mut third, json!({"v": 1, "type": "join", "room": room})).await;
    assert_eq!(receive(&mut third).await["code"], "unknown_room");
    until_no_keys(&room).await;
}

/// Bounded load on loopback: 200 participant sockets in one room each receive every frame of a
/// run, in order, none missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_participants_each_get_every_frame_in_order() {
    const PARTICIPANTS: usize = 200;
    let _slot = db_slot().await;
    let address = common::server().await;
    let (room, token) = open_room(address).await;
    let mut participants = Vec::new();
    for i in 0..PARTICIPANTS {
        let mut participant = connect(address).await;
        assert_eq!(join(&mut participant, &room, None).await, i as u64 + 1);
        participants.push(participant);
    }
    let mut trainer = connect(address).await;
    send(
        &mut trainer,
        trainer_frame(
            &room,
            &token,
            json!({"type": "start", "scenario": "isolation/write-skew", "variant": "serializable"}),
        ),
    )
    .await;
    let readers: Vec<_> = participants
        .into_iter()
        .map(|mut participant| {
            tokio::spawn(async move {
                let frames = tokio::time::timeout(
                    Duration::from_secs(60),
                    receive_until(&mut participant, |f| is_type(f, "done")),
                )
                .await
                .expect("the run ends within a minute for every participant");
                run_frames(&frames)
            })
        })
        .collect();
    let mut runs = Vec::new();
    for reader in readers {
        runs.push(reader.await.expect("a reader"));
    }
    let first = &runs[0];
    let seqs: Vec<u64> = first.iter().filter_map(|f| f["event"]["seq"].as_u64()).collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "every event, in order, none missing"
    );
    assert_eq!(transcript(first), lines(WRITE_SKEW_SERIALIZABLE));
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(run, first, "participant {i} saw the same frames");
    }
    close_room(address, &room, &token).await;
}

/// Predict, then run, in a room: the trainer asks; three pages pick; the trainer's page sees the
/// counts live (never names), the participants see none until the run reveals the answer, then
/// everyone gets the same counts, before the run's end.
#[tokio::test]
async fn predictions_are_tallied_for_the_trainer_and_shown_to_all_after_the_reveal() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let (room, token) = open_room(address).await;
    let mut trainer = connect(address).await;
    join(&mut trainer, &room, Some(&token)).await;
    let mut pages = Vec::new();
    for _ in 0..3 {
        let mut page = connect(address).await;
        join(&mut page, &room, None).await;
        pages.push(page);
    }
    let ask = json!({"type": "ask", "scenario": "isolation/write-skew", "variant": "serializable"});
    send(&mut trainer, trainer_frame(&room, &token, ask)).await;
    for page in &mut pages {
        let asked = receive_until(page, |f| is_type(f, "room") && !f["asked"].is_null()).await;
        assert_eq!(
            asked.last().expect("room")["asked"],
            json!(["isolation/write-skew", "serializable"])
        );
    }
    // A choice the scenario does not offer, and a socket that follows nothing, are refused.
    send(
        &mut pages[0],
        json!({"v": 1, "type": "predict", "room": room, "choice": "nope"}),
    )
    .await;
    assert_eq!(
        receive_until(&mut pages[0], |f| is_type(f, "error"))
            .await
            .last()
            .expect("error")["code"],
        "bad_frame"
    );
    let mut stranger = connect(address).await;
    send(
        &mut stranger,
        json!({"v": 1, "type": "predict", "room": room, "choice": "bob-40001"}),
    )
    .await;
    assert_eq!(receive(&mut stranger).await["code"], "bad_frame");

    for (page, choice) in pages.iter_mut().zip(["both-commit", "both-commit", "bob-40001"]) {
        send(page, json!({"v": 1, "type": "predict", "room": room, "choice": choice})).await;
    }
    let expected = json!([
        ["both-commit", 2],
        ["bob-waits", 0],
        ["bob-40001", 1],
        ["alice-fails", 0],
        ["deadlock", 0]
    ]);
    let live = receive_until(&mut trainer, |f| is_type(f, "tally") && f["counts"] == expected).await;
    assert_eq!(live.last().expect("tally")["revealed"], false);

    let start = json!({"type": "start", "scenario": "isolation/write-skew", "variant": "serializable"});
    send(&mut trainer, trainer_frame(&room, &token, start)).await;
    for page in pages.iter_mut() {
        let frames = receive_until(page, |f| is_type(f, "done")).await;
        let tallies: Vec<&Value> = frames.iter().filter(|f| is_type(f, "tally")).collect();
        assert_eq!(
            tallies.len(),
            1,
            "participants see the counts once, after the reveal: {tallies:?}"
        );
        assert_eq!(
            (&tallies[0]["counts"], &tallies[0]["revealed"]),
            (&expected, &json!(true))
        );
        let reveal = frames
            .iter()
            .position(|f| event_type(f) == Some("reveal"))
            .expect("a reveal");
        let tally = frames.iter().position(|f| is_type(f, "tally")).expect("the tally");
        assert!(reveal < tally, "the answer first, then the counts");
    }
    // After the reveal, predictions are closed.
    send(
        &mut pages[2],
        json!({"v": 1, "type": "predict", "room": room, "choice": "both-commit"}),
    )
    .await;
    assert_eq!(
        receive_until(&mut pages[2], |f| is_type(f, "error"))
            .await
            .last()
            .expect("error")["code"],
        "bad_frame"
    );
    close_room(address, &room, &token).await;
}

/// The first error frame `socket` gets: its code.
async fn refused(socket: &mut Socket) -> Value {
    receive_until(socket, |f| is_type(f, "error"))
        .await
        .last()
        .expect("an error")["code"]
        .clone()
}

/// Rounds: asking again what is still open keeps its picks (a trainer's page reloaded); picks
/// close when the question's run starts and open again if it ends without an answer (cancelled);
/// no new question while a run plays; the next question is a new round, whose page joining now
/// sees none of the last round's run; a scenario that asks nothing clears the question.
#[tokio::test]
async fn each_question_is_a_round_of_its_own() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let (room, token) = open_room(address).await;
    let mut trainer = connect(address).await;
    join(&mut trainer, &room, Some(&token)).await;
    let mut pages = Vec::new();
    for _ in 0..2 {
        let mut page = connect(address).await;
        join(&mut page, &room, None).await;
        pages.push(page);
    }
    let ask = |scenario: &str, variant: &str| {
        trainer_frame(
            &room,
            &token,
            json!({"type": "ask", "scenario": scenario, "variant": variant}),
        )
    };
    let pick = |choice: &str| json!({"v": 1, "type": "predict", "room": room, "choice": choice});
    send(&mut trainer, ask("isolation/write-skew", "serializable")).await;
    for page in &mut pages {
        receive_until(page, |f| is_type(f, "room") && !f["asked"].is_null()).await;
    }
    send(&mut pages[0], pick("bob-40001")).await;
    send(&mut pages[1], pick("both-commit")).await;
    let two = json!([
        ["both-commit", 1],
        ["bob-waits", 0],
        ["bob-40001", 1],
        ["alice-fails", 0],
        ["deadlock", 0]
    ]);
    receive_until(&mut trainer, |f| is_type(f, "tally") && f["counts"] == two).await;
    // Asked again while open (a trainer's page reloaded): both picks stay, nobody picks again.
    send(&mut trainer, ask("isolation/write-skew", "serializable")).await;
    send(&mut pages[0], pick("bob-waits")).await;
    let moved = json!([
        ["both-commit", 1],
        ["bob-waits", 1],
        ["bob-40001", 0],
        ["alice-fails", 0],
        ["deadlock", 0]
    ]);
    let tallies = receive_until(&mut trainer, |f| is_type(f, "tally") && f["counts"] == moved).await;
    assert!(
        tallies
            .iter()
            .filter(|f| is_type(f, "tally"))
            .all(|f| f["counts"] == moved),
        "the same question asked again did not start over: {tallies:?}"
    );

    // The run starts: picks close, and so do new questions.
    step_write_skew(&mut trainer, &room, &token, "serializable").await;
    until_first_pause(&mut pages[0]).await;
    send(&mut pages[0], pick("bob-40001")).await;
    assert_eq!(
        refused(&mut pages[0]).await,
        "bad_frame",
        "a pick after the run started"
    );
    send(&mut trainer, ask("isolation/lost-update", "read-committed")).await;
    assert_eq!(
        refused(&mut trainer).await,
        "busy",
        "a new question while the run plays"
    );
    // Cancelled before it answered: the question is open again, picks with it.
    send(&mut trainer, trainer_frame(&room, &token, json!({"type": "cancel"}))).await;
    receive_until(&mut trainer, |f| is_type(f, "done")).await;
    send(&mut pages[1], pick("alice-fails")).await;
    let reopened = json!([
        ["both-commit", 0],
        ["bob-waits", 1],
        ["bob-40001", 0],
        ["alice-fails", 1],
        ["deadlock", 0]
    ]);
    receive_until(&mut trainer, |f| is_type(f, "tally") && f["counts"] == reopened).await;

    // The next round: a page joining now sees the question, and nothing of the last run.
    send(&mut trainer, ask("isolation/lost-update", "read-committed")).await;
    let lost_update = json!(["isolation/lost-update", "read-committed"]);
    receive_until(&mut pages[0], |f| is_type(f, "room") && f["asked"] == lost_update).await;
    let mut late = connect(address).await;
    send(&mut late, json!({"v": 1, "type": "join", "room": room})).await;
    let status = receive(&mut late).await;
    assert_eq!(status["asked"], lost_update, "{status}");
    send(&mut late, pick("bob-erases")).await;
    // A round on PostgreSQL offers PostgreSQL's answers: MariaDB's error 1020 is no choice.
    let fresh = json!([["both-add", 0], ["bob-erases", 1], ["bob-waits", 0], ["bob-40001", 0]]);
    let frames = receive_until(&mut trainer, |f| is_type(f, "tally") && f["counts"] == fresh).await;
    assert!(!frames.iter().any(|f| is_type(f, "error")), "{frames:?}");
    send(&mut late, pick("bob-1020")).await;
    assert_eq!(
        refused(&mut late).await,
        "bad_frame",
        "MariaDB's answer on a PostgreSQL round"
    );

    // A scenario that asks nothing: no question, and no picks.
    send(&mut trainer, ask("isolation/load-test", "serializable")).await;
    receive_until(&mut pages[0], |f| is_type(f, "room") && f["asked"].is_null()).await;
    send(&mut pages[0], pick("both-add")).await;
    assert_eq!(refused(&mut pages[0]).await, "bad_frame", "nothing to pick");

    close_room(address, &room, &token).await;
    let after_join = receive_until(&mut late, |f| is_type(f, "error")).await;
    assert!(
        after_join
            .iter()
            .all(|f| !is_type(f, "started") && f.get("event").is_none()),
        "the last round's run is not replayed to a page that joins the next: {after_join:?}"
    );
}

/// Two racelab replicas sharing PostgreSQL and Redis: a room opened on one is followed from the
/// other, frame for frame, a late joiner there catches up, its predictions reach the trainer's
/// tally, its trainer page steps the run, and its pages are counted; the room closes from either
/// side and leaves nothing in Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_reaches_pages_on_another_replica() {
    let _slot = db_slot().await;
    let (holder, other) = (common::server().await, common::server().await);
    let (room, token) = open_room(holder).await;
    assert_eq!(
        keys_of(&room).await,
        [format!("racelab:room:{room}")],
        "claimed in Redis"
    );
    let mut trainer = connect(holder).await;
    join(&mut trainer, &room, Some(&token)).await;
    let mut near = connect(holder).await;
    join(&mut near, &room, None).await;
    let mut far = connect(other).await;
    join(&mut far, &room, None).await;
    // Both replicas count both participants.
    receive_until(&mut trainer, |f| is_type(f, "room") && f["participants"] == 2).await;
    receive_until(&mut far, |f| is_type(f, "room") && f["participants"] == 2).await;

    // On the other replica too, only the token drives, and unknown rooms are unknown.
    let mut stranger = connect(other).await;
    for (frame, code) in [
        (
            trainer_frame(&room, "not-the-token", json!({"type": "next"})),
            "bad_token",
        ),
        (json!({"v": 1, "type": "next", "room": room}), "bad_token"),
        (json!({"v": 1, "type": "join", "room": "NOPE22"}), "unknown_room"),
    ] {
        send(&mut stranger, frame.clone()).await;
        assert_eq!(receive(&mut stranger).await["code"], code, "{frame}");
    }

    // The trainer asks; the far page hears the question and its pick reaches the tally.
    let ask = json!({"type": "ask", "scenario": "isolation/write-skew", "variant": "serializable"});
    send(&mut trainer, trainer_frame(&room, &token, ask)).await;
    for page in [&mut near, &mut far] {
        receive_until(page, |f| is_type(f, "room") && !f["asked"].is_null()).await;
    }
    send(
        &mut far,
        json!({"v": 1, "type": "predict", "room": room, "choice": "nope"}),
    )
    .await;
    assert_eq!(
        receive_until(&mut far, |f| is_type(f, "error"))
            .await
            .last()
            .expect("error")["code"],
        "bad_frame",
        "a choice the scenario does not offer is refused there too"
    );
    send(
        &mut near,
        json!({"v": 1, "type": "predict", "room": room, "choice": "both-commit"}),
    )
    .await;
    send(
        &mut far,
        json!({"v": 1, "type": "predict", "room": room, "choice": "bob-40001"}),
    )
    .await;
    let expected = json!([
        ["both-commit", 1],
        ["bob-waits", 0],
        ["bob-40001", 1],
        ["alice-fails", 0],
        ["deadlock", 0]
    ]);
    receive_until(&mut trainer, |f| is_type(f, "tally") && f["counts"] == expected).await;

    // A stepped write skew: the first steps from the trainer's page on the holder, the rest from
    // a trainer's page on the other replica (orders travel to the holder).
    step_write_skew(&mut trainer, &room, &token, "serializable").await;
    let mut seen = [Vec::new(), Vec::new()];
    let first = receive_until(&mut trainer, |f| event_type(f) == Some("paused")).await;
    let mut paused = last_paused_seq(&first);
    for step in 0..=4 {
        seen[0].extend(until_event(&mut near, paused).await);
        seen[1].extend(until_event(&mut far, paused).await);
        if step == 4 {
            break;
        }
        send(&mut trainer, trainer_frame(&room, &token, json!({"type": "next"}))).await;
        paused = last_paused_seq(&receive_until(&mut trainer, |f| event_type(f) == Some("paused")).await);
    }
    let mut late = connect(other).await;
    join(&mut late, &room, None).await;
    let caught_up = until_event(&mut late, paused).await;
    assert_eq!(
        run_frames(&caught_up),
        run_frames(&seen[0]),
        "the late joiner there catches up"
    );
    let mut seen_late = caught_up;
    let mut far_trainer = connect(other).await;
    join(&mut far_trainer, &room, Some(&token)).await;
    // It catches up first, to the pause the run is at: each `next` below then waits for the
    // pause it leads to, never for one it was only told about (a stale pause answered with a
    // second `next` would step past the end: `no_run`).
    until_event(&mut far_trainer, paused).await;
    loop {
        send(&mut far_trainer, trainer_frame(&room, &token, json!({"type": "next"}))).await;
        let more = receive_until(&mut far_trainer, |f| {
            event_type(f) == Some("paused") || is_type(f, "done")
        })
        .await;
        if more.iter().any(|f| is_type(f, "done")) {
            break;
        }
        assert!(
            !more.iter().any(|f| is_type(f, "error")),
            "the other replica's trainer page steps the run: {more:?}"
        );
    }
    seen[0].extend(receive_until(&mut near, |f| is_type(f, "done")).await);
    seen[1].extend(receive_until(&mut far, |f| is_type(f, "done")).await);
    seen_late.extend(receive_until(&mut late, |f| is_type(f, "done")).await);
    let run = run_frames(&seen[0]);
    assert_eq!(transcript(&run), lines(WRITE_SKEW_SERIALIZABLE));
    assert_eq!(run_frames(&seen[1]), run, "the far page saw the run frame for frame");
    assert_eq!(run_frames(&seen_late), run, "so did the late joiner there");
    let tally = run
        .iter()
        .find(|f| is_type(f, "tally"))
        .expect("the tally after the reveal");
    assert_eq!((&tally["counts"], &tally["revealed"]), (&expected, &json!(true)));
    let run_id = run[0]["run_id"]
        .as_str()
        .or(run[1]["run_id"].as_str())
        .expect("a run id");
    assert_eq!(wait_until_clean(run_id).await, common::Leftovers::NONE);

    // Pages that leave the other replica stop being counted on the trainer's screen.
    drop(late);
    drop(far_trainer);
    drop(stranger);
    receive_until(&mut trainer, |f| is_type(f, "room") && f["participants"] == 2).await;
    // Closed from the other replica: every page there and here is told, and Redis forgets it.
    close_room(other, &room, &token).await;
    for page in [&mut near, &mut far] {
        let told = receive_until(page, |f| is_type(f, "error")).await;
        assert_eq!(told.last().expect("told")["code"], "unknown_room");
    }
}

/// Without Redis, a room still works in its process, and `GET /api/rooms` says it reaches no
/// other replica.
#[tokio::test]
async fn without_redis_a_room_lives_in_its_process_and_says_so() {
    let _slot = db_slot().await;
    let mut config = common::config();
    config.redis_url = "redis://127.0.0.1:1".to_owned();
    let address = common::server_with(config).await;
    let reach = common::get_json(address, "/api/rooms").await;
    assert_eq!(reach["across_replicas"], false, "{reach}");
    assert!(
        reach["detail"]
            .as_str()
            .is_some_and(|d| d.contains("this racelab process only")),
        "{reach}"
    );
    let (room, token) = open_room(address).await;
    let mut participant = connect(address).await;
    assert_eq!(join(&mut participant, &room, None).await, 1);
    let mut trainer = connect(address).await;
    send(
        &mut trainer,
        trainer_frame(
            &room,
            &token,
            json!({"type": "start", "scenario": "isolation/write-skew", "variant": "serializable"}),
        ),
    )
    .await;
    let frames = receive_until(&mut participant, |f| is_type(f, "done")).await;
    assert_eq!(transcript(&run_frames(&frames)), lines(WRITE_SKEW_SERIALIZABLE));
    assert!(keys_of(&room).await.is_empty(), "nothing of it in the real Redis");
    let shared = common::get_json(common::server().await, "/api/rooms").await;
    assert_eq!(shared["across_replicas"], true, "{shared}");
}

#[tokio::test]
async fn a_trainer_drives_a_readers_spec_in_a_room() {
    let _slot = db_slot().await;
    let address = common::server().await;
    let response = reqwest::Client::new()
        .post(format!("http://{address}/api/specs"))
        .body(shared::spec::STARTER)
        .send()
        .await
        .expect("POST /api/specs");
    assert_eq!(response.status().as_u16(), 201);
    let saved: Value = serde_json::from_str(&response.text().await.expect("a body")).expect("JSON");
    let spec = format!("spec/{}", saved["id"].as_str().expect("an id"));

    let (room, token) = open_room(address).await;
    let mut trainer = connect(address).await;
    let mut follower = connect(address).await;
    join(&mut trainer, &room, Some(&token)).await;
    join(&mut follower, &room, None).await;
    // The spec's question is the round's, as a catalog scenario's is: its author's choices
    // (the starter's `# choice overspent` and `# choice kept`), counted for the trainer.
    let ask = json!({"type": "ask", "scenario": spec, "variant": "p1"});
    send(&mut trainer, trainer_frame(&room, &token, ask)).await;
    let asked = receive_until(&mut follower, |f| is_type(f, "room") && !f["asked"].is_null()).await;
    assert_eq!(asked.last().expect("room")["asked"], json!([spec, "p1"]));
    send(
        &mut follower,
        json!({"v": 1, "type": "predict", "room": room, "choice": "kept"}),
    )
    .await;
    let counts = json!([["overspent", 0], ["kept", 1]]);
    receive_until(&mut trainer, |f| is_type(f, "tally") && f["counts"] == counts).await;
    send(
        &mut trainer,
        trainer_frame(
            &room,
            &token,
            json!({"type": "start", "scenario": spec, "variant": "p1", "mode": "step"}),
        ),
    )
    .await;
    let run_id = until_first_pause(&mut follower).await;
    // The trainer steps the six statements; the follower sees each pause and the end.
    let mut pauses = 1;
    loop {
        send(&mut trainer, trainer_frame(&room, &token, json!({"type": "next"}))).await;
        let frames = receive_until(&mut follower, |f| event_type(f) == Some("paused") || is_type(f, "done")).await;
        let last = frames.last().expect("a frame");
        if is_type(last, "done") {
            assert_eq!(last["outcome"]["status"], "completed", "{last}");
            // The first permutation's answer, as the spec's `# answer 1 overspent` gives it.
            let reveal = frames
                .iter()
                .find(|f| event_type(f) == Some("reveal"))
                .expect("a reveal");
            assert_eq!(reveal["event"]["choice"], "overspent", "{reveal}");
            break;
        }
        pauses += 1;
        assert!(pauses <= 6, "six steps");
    }
    assert_eq!(pauses, 6);
    // Every permutation answers no one question: a round of it asks none.
    let every = json!({"type": "ask", "scenario": spec, "variant": "every"});
    send(&mut trainer, trainer_frame(&room, &token, every)).await;
    receive_until(&mut follower, |f| is_type(f, "room") && f["asked"].is_null()).await;
    // Its picture, as a shared link shows it.
    let (status, kind, svg) = common::get(address, &format!("/runs/{run_id}.svg")).await;
    assert_eq!(status, 200, "{svg}");
    assert!(kind.starts_with("image/svg+xml"), "{kind}");
    assert!(
        svg.contains("alice") && svg.contains("bob"),
        "the picture draws the spec's sessions"
    );
    close_room(address, &room, &token).await;
}
