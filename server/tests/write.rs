//! Write your own race, in headless Chromium against the real server: the starter spec reads;
//! a mistake is shown at its line and column as it is typed, and the caret goes there; fixed,
//! the spec is saved and run, stepped, and played in every permutation (the matrix, whose row
//! opens its own run); the saved page and its embed at 360 px. Screenshots in
//! `target/screenshots/`.

#![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

mod common;
#[allow(dead_code)]
#[path = "browser/harness.rs"]
mod harness;

use harness::{Browser, choose_variant, run};
use serde_json::{Value as Json, json};
use std::time::Duration;

const STARTER: &str = shared::spec::STARTER;

/// Replaces the editor's text as typing would (an `input` event).
async fn type_spec(b: &Browser, text: &str) {
    b.js(
        "const area = document.getElementById('rl-spec-text'); area.value = arguments[0]; \
         area.dispatchEvent(new Event('input', { bubbles: true })); return true;",
        vec![json!(text)],
    )
    .await;
}

async fn finished(b: &Browser) {
    b.wait_for_within(".rl-verdict", Duration::from_secs(30)).await;
}

#[tokio::test]
async fn a_reader_writes_a_race_sees_a_mistake_at_its_line_fixes_it_runs_and_shares_it() {
    run("write", async |b: &Browser| {
        b.goto("/write").await;
        b.wait_for("#rl-spec-text").await;
        let value = b
            .js("return document.getElementById('rl-spec-text').value;", vec![])
            .await;
        assert_eq!(value, json!(STARTER), "the starter spec");
        b.wait_for(".rl-spec-reading[data-ok=\"true\"]").await;
        let summary = b.text(".rl-spec-reading").await.unwrap_or_default();
        assert!(summary.contains("2 sessions, 2 permutations, 1 check"), "{summary}");
        assert!(STARTER.contains("# question: What happens to the budget?"));
        let lines = STARTER.split('\n').count() as u64;
        assert_eq!(b.count(".rl-gutter li").await, lines, "a number for every line");
        b.screenshot("starter").await;

        // A step without its name: the line and column the server would refuse it at.
        let line = STARTER
            .lines()
            .position(|l| l.starts_with("step b_spend"))
            .expect("the starter has b_spend")
            + 1;
        let broken = STARTER.replace("step b_spend {", "step {");
        type_spec(b, &broken).await;
        b.wait_for(".rl-spec-reading[data-ok=\"false\"]").await;
        assert_eq!(b.attr(".rl-spec-reading", "data-line").await, Some(line.to_string()));
        assert_eq!(b.attr(".rl-spec-reading", "data-column").await, Some("6".to_owned()));
        let said = b.text(".rl-spec-reading").await.unwrap_or_default();
        assert!(
            said.contains(&format!(
                "Line {line}, column 6: expected a step name after \"step\", found an SQL block"
            )),
            "{said}"
        );
        assert_eq!(
            b.count(&format!(".rl-gutter li.rl-gutter-wrong[data-line=\"{line}\"]"))
                .await,
            1
        );
        let disabled = b
            .js("return document.querySelector('.rl-spec-save').disabled;", vec![])
            .await;
        assert_eq!(disabled, Json::Bool(true), "nothing to save while it does not read");
        b.screenshot("mistake").await;

        // The caret goes to the mistake.
        b.click(".rl-spec-where").await;
        let caret = b
            .js(
                "const a = document.activeElement; return [a.id, a.selectionStart];",
                vec![],
            )
            .await;
        let offset: usize = broken
            .split('\n')
            .take(line - 1)
            .map(|l| l.encode_utf16().count() + 1)
            .sum::<usize>()
            + 5;
        assert_eq!(caret, json!(["rl-spec-text", offset]));

        // Fixed, saved, run: the write skew overspends the budget.
        type_spec(b, STARTER).await;
        b.wait_for(".rl-spec-reading[data-ok=\"true\"]").await;
        b.click(".rl-spec-save").await;
        b.wait_for(".rl-spec-saved").await;
        let id = b
            .attr(".rl-spec-saved", "data-spec")
            .await
            .expect("the saved spec's id");
        let path = b.js("return location.pathname;", vec![]).await;
        assert_eq!(path, json!(format!("/s/{id}")), "the address is the spec's link");
        // The author's question first: "Save and run" runs it as soon as the reader has
        // predicted, with no second press.
        b.settle().await;
        assert_eq!(
            b.count(".rl-spec-saved .rl-timeline .rl-card").await,
            0,
            "not before the pick"
        );
        b.click(".rl-spec-saved label.rl-choice[data-choice=\"kept\"]").await;
        finished(b).await;
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("reproduced"));
        b.wait_for("label.rl-choice[data-choice=\"overspent\"][data-right=\"true\"]")
            .await;
        assert_eq!(
            b.attr("label.rl-choice[data-choice=\"kept\"]", "data-right")
                .await
                .as_deref(),
            Some("false"),
            "the reader's wrong pick is marked"
        );
        let lanes = b.texts(".rl-lane-name").await;
        assert!(
            lanes.iter().any(|l| l.contains("alice")) && lanes.iter().any(|l| l.contains("bob")),
            "{lanes:?}"
        );
        b.screenshot("run").await;

        // Stepped: one statement at a time.
        b.click(".rl-spec-saved button.rl-step").await;
        let mut presses = 0;
        while b.count(".rl-verdict").await == 0 || b.count("button.rl-next").await > 0 {
            if b.js(
                "const n = document.querySelector('button.rl-next'); return !!n && !n.disabled;",
                vec![],
            )
            .await
                == Json::Bool(true)
            {
                b.click("button.rl-next").await;
                presses += 1;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert!(presses <= 12, "the run ends after its six steps");
        }
        assert!(presses >= 6, "six steps, one press each: {presses}");

        // Every permutation: the matrix, grouped by outcome; a row opens its own run.
        choose_variant(b, "every").await;
        b.click(".rl-spec-saved button.rl-run").await;
        b.wait_js(
            "two matrix rows",
            "return document.querySelectorAll('.rl-matrix-row').length === 2;",
            vec![],
        )
        .await;
        let outcomes = b.texts(".rl-matrix-row .rl-matrix-outcome").await;
        assert!(outcomes[0].contains("broken"), "{outcomes:?}");
        assert!(outcomes[1].contains("checks held"), "{outcomes:?}");
        assert_eq!(b.count(".rl-matrix-group").await, 2, "two outcomes, each counted once");
        b.screenshot("matrix").await;
        harness::open_permutation(b, 1, "prevented").await;

        // The saved page, at a phone's width, and its embed.
        b.set_viewport(360, 740).await;
        b.goto(&format!("/s/{id}")).await;
        b.wait_for(".rl-spec-saved").await;
        let value = b
            .js("return document.getElementById('rl-spec-text').value;", vec![])
            .await;
        assert_eq!(value, json!(STARTER));
        assert!(!b.scrolls_sideways().await, "the spec page fits 360 px");
        b.click(".rl-spec-saved label.rl-choice[data-choice=\"overspent\"]")
            .await;
        b.click(".rl-spec-saved button.rl-run").await;
        finished(b).await;
        assert!(!b.scrolls_sideways().await, "the finished run fits 360 px");
        b.screenshot("saved-360").await;

        // A lab's race opens in the editor before anyone ran it.
        b.reset_viewport().await;
        b.goto("/lab/isolation/write-skew?variant=serializable").await;
        b.click("a.rl-open-spec").await;
        b.wait_js(
            "the editor holding the lab's race",
            "const a = document.getElementById('rl-spec-text'); return !!a && a.value.startsWith('# Write skew');",
            vec![],
        )
        .await;
        b.wait_for(".rl-spec-reading[data-ok=\"true\"]").await;
        let opened = b
            .js("return document.getElementById('rl-spec-text').value;", vec![])
            .await;
        assert!(
            opened
                .as_str()
                .unwrap_or_default()
                .contains("BEGIN ISOLATION LEVEL SERIALIZABLE"),
            "{opened}"
        );
        b.screenshot("opened-from-lab").await;

        b.set_viewport(360, 740).await;
        b.goto(&format!("/embed/s/{id}")).await;
        b.click("button.rl-run").await;
        finished(b).await;
        assert_eq!(b.attr(".rl-verdict", "data-kind").await.as_deref(), Some("reproduced"));
        assert!(!b.scrolls_sideways().await, "the embed fits 360 px");
        b.screenshot("embed-360").await;
    })
    .await;
}

/// A setup the database refuses: "Save and run" plays it, the run fails, and the page goes back
/// to the editor with the setup's line marked and the database's SQLSTATE beside it, the spec
/// not kept as a link to share; fixed, it saves and runs.
#[tokio::test]
async fn a_setup_the_database_refuses_is_marked_at_its_line_and_not_kept_as_a_link() {
    run("write-setup-fails", async |b| {
        // Line 6 of this text is where the failing setup's SQL begins, at column 3.
        let broken = "# A setup that names a table nobody made\n\
                      # check: SELECT true\n\
                      \n\
                      setup\n\
                      {\n  SELECT count(*) FROM no_such_table;\n}\n\
                      session s\n\
                      step a { SELECT 1; }\n";
        b.goto("/write").await;
        b.wait_for(".rl-spec-reading[data-ok=\"true\"]").await;
        type_spec(b, broken).await;
        b.wait_for(".rl-spec-reading[data-ok=\"true\"]").await;
        b.click("button.rl-spec-save").await;
        b.wait_for_within(
            ".rl-spec-reading[data-ok=\"false\"][data-line=\"6\"]",
            Duration::from_secs(30),
        )
        .await;
        let said = b.text(".rl-spec-reading").await.unwrap_or_default();
        assert!(said.starts_with("Line 6, column 3"), "{said}");
        assert!(
            said.contains("SQLSTATE 42P01") && said.contains("no_such_table"),
            "{said}"
        );
        assert!(b.has_class(".rl-gutter li[data-line=\"6\"]", "rl-gutter-wrong").await);
        assert_eq!(
            b.js("return location.pathname;", vec![]).await,
            json!("/write"),
            "not kept as a link"
        );
        assert_eq!(b.count(".rl-spec-saved").await, 0);
        assert!(
            b.attr("button.rl-spec-save", "disabled").await.is_some(),
            "not saved again as it is"
        );
        b.screenshot("marked").await;

        // Fixed, it saves and runs.
        type_spec(b, &broken.replace("FROM no_such_table", "FROM pg_class")).await;
        b.wait_for(".rl-spec-reading[data-ok=\"true\"]").await;
        b.click("button.rl-spec-save").await;
        finished(b).await;
        assert!(
            b.js("return location.pathname;", vec![])
                .await
                .as_str()
                .is_some_and(|p| p.starts_with("/s/"))
        );
    })
    .await;
}
