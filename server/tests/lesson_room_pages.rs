//! A lesson run with a room, in headless Chromium against the real server and PostgreSQL: the
//! trainer opens a room from the kept lesson's page, three participants join under their handles
//! (one reloads and keeps their score, another reloads after picking and keeps the pick), they
//! predict each of three rounds on their pages, the trainer runs each (the later rounds opened and
//! run with a clicker's →), everyone sees the answer, their own result and the leaderboard, and
//! the trainer's results page adds it all up. At 1280 px for the trainer and 360 px for a
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
    match round {
        1 => catalog("read-committed"),
        2 => {
            assert_eq!(catalog("serializable"), "bob-40001");
            "bob".to_owned()
        }
        _ => catalog("repeatable-read"),
    }
}

/// The write skew's answer at `variant`, as the catalog's constants say.
fn catalog(variant: &str) -> String {
    racelab::labs::find("isolation/write-skew")
        .and_then(|def| def.predict)
        .and_then(|p| p.answers.iter().find(|(v, ..)| *v == variant))
        .map(|(_, choice, _)| (*choice).to_owned())
        .expect("the catalog's answer")
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
            if round == 1 {
                b.click(&format!(".rl-lesson-plan li[data-number=\"{round}\"] button.rl-lesson-open")).await;
            } else {
                // A presenter's clicker: → opens the next round, as the page says it will.
                assert_eq!(b.text(".rl-lesson-next-key").await, Some(format!("→ opens round {round}")));
                b.press('\u{e014}').await;
            }
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
            // Cy reloads after picking in round 2: his page shows his pick again, and the room
            // scores it (his result below).
            if round == 2 {
                b.client.refresh().await.expect("reload");
                let picked = format!(".rl-lesson-round-now label.rl-choice[data-choice=\"{}\"] input:checked", PICKS[1][2]);
                b.wait_for(&picked).await;
                assert_eq!(b.count(".rl-lesson-round-now label.rl-choice input:checked").await, 1);
            }
            switch(b, &trainer).await;
            b.wait_js("every pick to be counted", "return [...document.querySelectorAll('.rl-tally li[data-count]')].reduce((n, li) => n + Number(li.dataset.count), 0) === 3;", vec![]).await;
            assert_eq!(tallied(b).await, 3);
            if round == 1 {
                b.screenshot("trainer-before-run").await;
            }
            if round == 3 {
                assert_eq!(b.text(".rl-lesson-next-key").await, Some("→ runs round 3 (the picks close)".to_owned()));
                b.press('\u{e014}').await;
            } else {
                b.click("button.rl-run").await;
            }
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

/// The lesson pasted into a course's page on another origin, as the lesson's page offers it
/// (`<racelab-scenario lesson=…>` and the loader): the reader takes the first round inside it,
/// and the loader sizes the iframe to it. At 1280 and 360 px.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lesson_embedded_in_a_course_page_is_taken_there() {
    run_on("lesson_embed", Readers::Anonymous, None, async |b| {
        let lesson = keep_lesson(b).await;
        // The snippet the lesson's page offers, as an author copies it.
        b.goto(&format!("/lessons/{lesson}")).await;
        b.wait_for("details.rl-lesson-embed").await;
        b.click("details.rl-lesson-embed summary").await;
        let snippet = b
            .js(
                "return document.querySelector('.rl-lesson-embed textarea[data-kind=\"component\"]').value;",
                vec![],
            )
            .await;
        let snippet = snippet.as_str().expect("the web component's snippet").to_owned();
        assert_eq!(
            snippet,
            shared::embed::LessonEmbed { id: lesson.clone() }.web_component(&b.base)
        );
        let course = harness::Host::start().await;
        course.paste("#f4f1ea", &format!("<h1>Week 3: isolation</h1>{snippet}<p>Next week: locks.</p>"));
        b.goto_url(&course.url()).await;
        b.wait_js(
            "the loader to insert the lesson's iframe",
            "const f = document.querySelector('racelab-scenario iframe'); return f && f.src.includes('/embed/lessons/');",
            vec![],
        )
        .await;
        b.client.enter_frame(0).await.expect("enter the lesson's iframe");
        b.wait_for(".racelab.rl-embed .rl-lesson-round-now[data-number=\"1\"] label.rl-choice").await;
        assert_eq!(b.count("header.rl-header").await, 0, "an embed has no site header");
        let choice = PICKS[0][0];
        b.click(&format!("label.rl-choice[data-choice=\"{choice}\"] input")).await;
        b.click("button.rl-run").await;
        b.wait_for(".rl-lesson-round-now[data-number=\"1\"][data-answered=\"true\"]").await;
        assert_eq!(
            b.attr("label.rl-choice[data-right=\"true\"]", "data-choice").await,
            Some(right(1)),
            "round 1's answer, from the run"
        );
        let expected = if choice == right(1) { "Right: one point." } else { "Not this time." };
        assert_eq!(b.text(".rl-lesson-result").await.as_deref(), Some(expected));
        let inside = b.js("return document.querySelector('.racelab').getBoundingClientRect().height;", vec![]).await;
        b.client.enter_parent_frame().await.expect("back to the course");
        // The loader sets the iframe's height from what the lesson reports (its inline style,
        // not a min-height), so the answered round is not cut off.
        let height = b
            .wait_js(
                "the iframe to take the lesson's height",
                "const f = document.querySelector('racelab-scenario iframe'); const h = parseFloat(f.style.height); \
                 return Math.abs(h - arguments[0]) < 2 ? h : null;",
                vec![inside.clone()],
            )
            .await;
        println!("lesson embed: reports {inside} px, iframe {height} px");
        b.screenshot("course-1280").await;
        b.set_viewport(360, 800).await;
        b.client.enter_frame(0).await.expect("enter the lesson's iframe");
        assert!(!b.scrolls_sideways().await, "the lesson fits a phone's course page");
        b.client.enter_parent_frame().await.expect("back to the course");
        b.screenshot("course-360").await;
        b.reset_viewport().await;
    })
    .await;
}

/// A lesson's recording rounds taken alone: one a run this racelab keeps (`/runs/<id>`), one a
/// file on another site (a course's static host that lets other sites read it). Each plays the
/// recorded run again (its id, not a new run's), and its answer, the scenario's reveal or the
/// lesson's own question read off the recorded events, scores the pick. Then in a room, whose
/// trainer's page sends the file from the other site.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lesson_s_recordings_are_played_and_scored_alone() {
    run_on("lesson_recordings_alone", Readers::Anonymous, None, async |b| {
        let address: std::net::SocketAddr = b.base.trim_start_matches("http://").parse().expect("an address");
        let mut socket = common::socket::connect(address).await;
        let run = common::socket::start(&mut socket, "isolation/write-skew", "serializable", "auto").await;
        common::socket::receive_until(&mut socket, |f| common::socket::is_type(f, "done")).await;
        let mut recording = None;
        for _ in 0..100 {
            let (status, _, body) = common::get(address, &format!("/api/runs/{run}/recording")).await;
            if status == 200 {
                recording = Some(body);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let course = harness::Host::start().await;
        let elsewhere = course.serve("ws.racelab.json", recording.expect("the run's recording"));
        let text = format!(
            "---\ntitle: Recorded, two ways\n---\n\n\
             ## Recorded here\nrecording: /runs/{run}\n\n\
             ## Recorded elsewhere\nrecording: {elsewhere}\n\
             question: Whose transaction does PostgreSQL refuse?\nchoice alice: Alice's\nchoice bob: Bob's\n\
             choice nobody: Nobody's\nanswer: failed 40001\n"
        );
        let response = reqwest::Client::new()
            .post(format!("{}/api/lessons", b.base))
            .body(text)
            .send()
            .await
            .expect("POST /api/lessons");
        assert_eq!(response.status().as_u16(), 201);
        let kept: Value = serde_json::from_str(&response.text().await.expect("a body")).expect("JSON");
        let lesson = kept["id"].as_str().expect("an id");
        b.goto(&format!("/lessons/{lesson}/alone")).await;
        // Round 1: the scenario's own question at SERIALIZABLE, picked right; round 2: the
        // lesson's own, picked wrong (Bob's is refused, as the catalog's `bob-40001` says).
        let rounds = [
            (1, catalog("serializable"), catalog("serializable")),
            (2, "alice".to_owned(), right(2)),
        ];
        for (round, choice, answer) in rounds {
            let section = format!(".rl-lesson-round-now[data-number=\"{round}\"]");
            b.wait_for(&format!("{section}[data-answered=\"false\"] label.rl-choice"))
                .await;
            assert_eq!(b.text("button.rl-run").await.as_deref(), Some("Play the recording"));
            b.click(&format!("label.rl-choice[data-choice=\"{choice}\"] input"))
                .await;
            b.click("button.rl-run").await;
            b.wait_for(&format!("{section}[data-answered=\"true\"]")).await;
            assert_eq!(
                b.attr(&section, "data-run-id").await.as_deref(),
                Some(run.as_str()),
                "the recorded run, played again"
            );
            assert_eq!(
                b.attr("label.rl-choice[data-right=\"true\"]", "data-choice")
                    .await
                    .as_deref(),
                Some(answer.as_str()),
                "round {round}'s answer, from the recording"
            );
            let said = if choice == answer {
                "Right: one point."
            } else {
                "Not this time."
            };
            assert_eq!(
                b.text(".rl-lesson-result").await.as_deref(),
                Some(said),
                "round {round}"
            );
            b.click("button.rl-lesson-next").await;
        }
        b.wait_for(".rl-lesson-alone-end").await;
        assert_eq!(
            b.text(".rl-lesson-alone-end").await.as_deref(),
            Some("Done: 1 of 2 right.")
        );

        // With a room: the trainer's page reads the recording on the other site and sends it
        // (racelab fetches nothing); the round opens at the recorded variant and plays it again.
        b.goto(&format!("/lessons/{lesson}")).await;
        b.wait_for("button.rl-lesson-room").await;
        b.click("button.rl-lesson-room").await;
        b.wait_for(".rl-lesson-plan li[data-number=\"2\"] button.rl-lesson-open")
            .await;
        b.click(".rl-lesson-plan li[data-number=\"2\"] button.rl-lesson-open")
            .await;
        b.wait_for(".rl-lesson-round-now[data-number=\"2\"][data-answered=\"false\"]")
            .await;
        assert_eq!(b.count(".rl-lesson-problem").await, 0, "sent");
        assert_eq!(
            b.count(".rl-lesson-variant").await,
            0,
            "a recording plays at its recorded variant"
        );
        b.click("button.rl-run").await;
        b.wait_for(".rl-lesson-round-now[data-number=\"2\"][data-answered=\"true\"]")
            .await;
        assert_eq!(
            b.attr(
                ".rl-lesson-round-now label.rl-choice[data-right=\"true\"]",
                "data-choice"
            )
            .await,
            Some(right(2)),
            "the sent recording's answer"
        );
        b.screenshot("room-sent-recording").await;
    })
    .await;
}
