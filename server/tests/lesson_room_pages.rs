//! A lesson run with a room, in headless Chromium against the real server and PostgreSQL: the
//! trainer opens a room from the kept lesson's page, three participants join under their handles
//! (one reloads and keeps their score), they predict each of three rounds on their pages, the
//! trainer runs each, everyone sees the answer, their own result and the leaderboard, and the
//! trainer's results page adds it all up. At 1280 px for the trainer and 360 px for a
//! participant's phone. Screenshots in `target/screenshots/`.

#![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

mod common;
#[allow(dead_code)]
#[path = "browser/harness.rs"]
mod harness;

use harness::{Browser, Readers, run_on};
use serde_json::{Value, json};

/// Three rounds of the write skew: the scenario's own question, the trainer's own question at
/// SERIALIZABLE (answered from the run: who got 40001), and the scenario's at REPEATABLE READ.
const LESSON: &str = "---\ntitle: Write skew, three ways\nleaderboard: shown\n---\n\n\
## At READ COMMITTED\nscenario: isolation/write-skew\nvariant: read-committed\n\
notes: Ask who has shipped a check-then-insert.\nexplain: Both read $0 before either wrote.\n\n\
## At SERIALIZABLE\nscenario: isolation/write-skew\nvariant: serializable\n\
question: Whose transaction does PostgreSQL refuse?\nchoice alice: Alice's\nchoice bob: Bob's\n\
choice nobody: Nobody's\nanswer: failed 40001\n\n\
## At REPEATABLE READ\nscenario: isolation/write-skew\nvariant: repeatable-read\n";

const HANDLES: [&str; 3] = ["ana", "ben", "cy"];

/// Each participant's pick in each round (round, then participant in `HANDLES`' order).
const PICKS: [[&str; 3]; 3] = [
    ["both-commit", "bob-40001", "both-commit"],
    ["bob", "alice", "nobody"],
    ["bob-40001", "both-commit", "both-commit"],
];

/// Each round's right answer: the catalog's constants for the scenario's own questions, and
/// Bob, the second to commit, for the trainer's question at SERIALIZABLE (the catalog's
/// `bob-40001` there).
fn right(round: usize) -> String {
    let catalog = |variant: &str| {
        racelab::labs::find("isolation/write-skew")
            .and_then(|def| def.predict)
            .and_then(|p| p.answers.iter().find(|(v, ..)| *v == variant))
            .map(|(_, choice, _)| (*choice).to_owned())
            .expect("the catalog's answer")
    };
    match round {
        1 => catalog("read-committed"),
        2 => {
            assert_eq!(catalog("serializable"), "bob-40001");
            "bob".to_owned()
        }
        _ => catalog("repeatable-read"),
    }
}

fn expected_right(participant: usize) -> usize {
    (1..=3).filter(|&r| PICKS[r - 1][participant] == right(r)).count()
}

async fn keep_lesson(b: &Browser) -> String {
    let response = reqwest::Client::new()
        .post(format!("{}/api/lessons", b.base))
        .body(LESSON)
        .send()
        .await
        .expect("POST /api/lessons");
    assert_eq!(response.status().as_u16(), 201);
    let kept: Value = serde_json::from_str(&response.text().await.expect("a body")).expect("JSON");
    kept["id"].as_str().expect("an id").to_owned()
}

async fn switch(b: &Browser, window: &fantoccini::wd::WindowHandle) {
    b.client.switch_to_window(window.clone()).await.expect("switch");
}

/// The predictions the trainer's tally counts.
async fn tallied(b: &Browser) -> u64 {
    b.js(
        "return [...document.querySelectorAll('.rl-tally li[data-count]')].reduce((n, li) => n + Number(li.dataset.count), 0);",
        vec![],
    )
    .await
    .as_u64()
    .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trainer_and_three_participants_play_a_lesson_round_by_round() {
    run_on("lesson_room", Readers::Anonymous, None, async |b| {
        let lesson = keep_lesson(b).await;
        b.goto(&format!("/lessons/{lesson}")).await;
        b.wait_for("button.rl-lesson-room").await;
        b.click("button.rl-lesson-room").await;
        b.wait_for(".rl-lesson-plan li[data-number=\"3\"] button.rl-lesson-open").await;
        let trainer = b.client.window().await.expect("the trainer's window");
        let room = b.attr(".rl-room", "data-room").await.expect("a room code");
        let fragment = b.js("return location.hash;", vec![]).await;
        let fragment = fragment.as_str().unwrap_or_default();
        assert!(fragment.starts_with("#trainer=") && fragment.contains("&results="), "{fragment}");

        // Three participants join from the code, each under a handle.
        let mut pages = Vec::new();
        for handle in HANDLES {
            let page = b.client.new_window(false).await.expect("a window").handle;
            switch(b, &page).await;
            b.goto(&format!("/room/{room}")).await;
            b.wait_for("form.rl-lesson-seat input.rl-lesson-handle").await;
            b.js(
                "const i = document.querySelector('input.rl-lesson-handle'); i.value = arguments[0]; \
                 i.dispatchEvent(new Event('input', { bubbles: true })); return true;",
                vec![json!(handle)],
            )
            .await;
            b.click("button.rl-lesson-join").await;
            b.wait_for(&format!(".rl-leaderboard tr.rl-leaderboard-mine[data-handle=\"{handle}\"]")).await;
            assert_eq!(b.count("form.rl-lesson-seat").await, 0, "seated: no form");
            pages.push(page);
        }
        switch(b, &trainer).await;
        b.wait_for(".rl-room-participants[data-count=\"3\"]").await;

        for round in 1..=3 {
            switch(b, &trainer).await;
            b.click(&format!(".rl-lesson-plan li[data-number=\"{round}\"] button.rl-lesson-open")).await;
            b.wait_for(&format!(".rl-lesson-round-now[data-number=\"{round}\"][data-answered=\"false\"]")).await;
            if round == 1 {
                assert!(
                    b.text(".rl-lesson-notes").await.unwrap_or_default().contains("check-then-insert"),
                    "the trainer's notes for the round"
                );
            }
            for (i, page) in pages.iter().enumerate() {
                switch(b, page).await;
                b.wait_for(&format!(".rl-lesson-round-now[data-number=\"{round}\"]")).await;
                let choice = PICKS[round - 1][i];
                b.click(&format!(".rl-lesson-round-now label.rl-choice[data-choice=\"{choice}\"] input")).await;
            }
            switch(b, &trainer).await;
            b.wait_js("every pick to be counted", "return [...document.querySelectorAll('.rl-tally li[data-count]')].reduce((n, li) => n + Number(li.dataset.count), 0) === 3;", vec![]).await;
            assert_eq!(tallied(b).await, 3);
            if round == 1 {
                b.screenshot("trainer-before-run").await;
            }
            b.click("button.rl-run").await;
            b.wait_for(&format!(".rl-lesson-round-now[data-number=\"{round}\"][data-answered=\"true\"]")).await;
            let answer = right(round);
            assert_eq!(
                b.attr(".rl-lesson-round-now label.rl-choice[data-right=\"true\"]", "data-choice").await,
                Some(answer.clone()),
                "round {round}'s answer"
            );
            for (i, page) in pages.iter().enumerate() {
                switch(b, page).await;
                b.wait_for(&format!(".rl-lesson-round-now[data-number=\"{round}\"][data-answered=\"true\"]")).await;
                let expected = if PICKS[round - 1][i] == answer { "Right: one point." } else { "Not this time." };
                assert_eq!(b.text(".rl-lesson-result").await.as_deref(), Some(expected), "{} in round {round}", HANDLES[i]);
            }
            // Ben reloads his page after the first round: his handle and score come back.
            if round == 1 {
                switch(b, &pages[1]).await;
                b.client.refresh().await.expect("reload");
                b.wait_for(".rl-leaderboard tr.rl-leaderboard-mine[data-handle=\"ben\"]").await;
                assert_eq!(b.count("form.rl-lesson-seat").await, 0, "the reload keeps the seat");
                assert_eq!(
                    b.attr("tr.rl-leaderboard-mine", "data-right").await,
                    Some(expected_right_after(1, 1).to_string())
                );
            }
        }
        // Everyone sees the same leaderboard, with their own line marked.
        let expected: Vec<(String, String)> = {
            (0..3).map(|i| (HANDLES[i].to_owned(), expected_right(i).to_string())).collect()
        };
        for (i, page) in pages.iter().enumerate() {
            switch(b, page).await;
            let handles = b.attrs(".rl-leaderboard tbody tr", "data-handle").await;
            let rights = b.attrs(".rl-leaderboard tbody tr", "data-right").await;
            let mut shown: Vec<(String, String)> = handles
                .into_iter()
                .zip(rights)
                .map(|(h, r)| (h.unwrap_or_default(), r.unwrap_or_default()))
                .collect();
            let mut wanted = expected.clone();
            // Ties go to the quicker, which the test does not decide: compare as sets, then order.
            shown.sort();
            wanted.sort();
            assert_eq!(shown, wanted, "{}'s leaderboard", HANDLES[i]);
            assert_eq!(
                b.attr("tr.rl-leaderboard-mine", "data-handle").await.as_deref(),
                Some(HANDLES[i])
            );
        }
        // A participant's phone: everything fits.
        switch(b, &pages[0]).await;
        b.set_viewport(360, 800).await;
        assert!(!b.scrolls_sideways().await, "the lesson fits a phone");
        b.screenshot("participant-360").await;
        b.reset_viewport().await;
        switch(b, &trainer).await;
        b.screenshot("trainer-after-three-rounds").await;

        // The results page: each round's right answers, and the leaderboard.
        b.click("a.rl-lesson-summary").await;
        b.wait_for(".rl-results-rounds tr[data-number=\"3\"]").await;
        for round in 1..=3 {
            let rights = (0..3).filter(|&i| PICKS[round - 1][i] == right(round)).count();
            assert_eq!(
                b.attr(&format!(".rl-results-rounds tr[data-number=\"{round}\"]"), "data-right").await,
                Some(rights.to_string()),
                "round {round}"
            );
        }
        assert_eq!(b.count(".rl-results-board li").await, 3);
        let csv = b.attr("a.rl-results-csv", "href").await.expect("the CSV");
        let (status, _, body) = common::get(b.base.trim_start_matches("http://").parse().expect("an address"), &csv).await;
        assert_eq!(status, 200);
        assert_eq!(body.lines().count(), 1 + 9, "a header and nine answers: {body}");
        b.screenshot("results").await;
        b.set_viewport(360, 800).await;
        assert!(!b.scrolls_sideways().await, "the results fit a phone");
        b.reset_viewport().await;
    })
    .await;
}

/// Participant `i`'s right answers after `rounds` rounds.
fn expected_right_after(rounds: usize, i: usize) -> usize {
    (1..=rounds).filter(|&r| PICKS[r - 1][i] == right(r)).count()
}

/// The same lesson taken alone from its link, at 1280 and on a phone: each round's question,
/// the reader's pick, the run, the answer it gives, the result, and the score at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_takes_a_lesson_alone_and_is_scored() {
    run_on("lesson_alone", Readers::Anonymous, None, async |b| {
        let lesson = keep_lesson(b).await;
        b.goto(&format!("/lessons/{lesson}")).await;
        b.wait_for(".rl-lesson-alone-link a").await;
        b.click(".rl-lesson-alone-link a").await;
        // The reader picks as ana did in the room: right, right, wrong.
        for round in 1..=3 {
            b.wait_for(&format!(
                ".rl-lesson-round-now[data-number=\"{round}\"][data-answered=\"false\"] label.rl-choice"
            ))
            .await;
            assert_eq!(
                b.attr("button.rl-run", "disabled").await.as_deref(),
                Some(""),
                "no run before a pick"
            );
            let choice = PICKS[round - 1][0];
            b.click(&format!("label.rl-choice[data-choice=\"{choice}\"] input"))
                .await;
            b.click("button.rl-run").await;
            b.wait_for(&format!(
                ".rl-lesson-round-now[data-number=\"{round}\"][data-answered=\"true\"]"
            ))
            .await;
            assert_eq!(
                b.attr("label.rl-choice[data-right=\"true\"]", "data-choice").await,
                Some(right(round)),
                "round {round}'s answer, from the run"
            );
            let expected = if choice == right(round) {
                "Right: one point."
            } else {
                "Not this time."
            };
            assert_eq!(
                b.text(".rl-lesson-result").await.as_deref(),
                Some(expected),
                "round {round}"
            );
            if round == 2 {
                b.screenshot("answered").await;
                b.set_viewport(360, 800).await;
                assert!(!b.scrolls_sideways().await, "a lesson alone fits a phone");
                b.screenshot("answered-360").await;
                b.reset_viewport().await;
            }
            b.click("button.rl-lesson-next").await;
        }
        b.wait_for(".rl-lesson-alone-end").await;
        let score = expected_right(0);
        assert_eq!(
            b.attr(".rl-lesson-alone-score", "data-right").await,
            Some(score.to_string())
        );
        assert_eq!(
            b.text(".rl-lesson-alone-end").await,
            Some(format!("Done: {score} of 3 right."))
        );
    })
    .await;
}
