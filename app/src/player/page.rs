//! The recording's page as HTML text, from the recording and where the reader is in it: the
//! heading that says it is a recording, the question, the scrubber, then the run at the moment
//! shown (the timeline, who waits for whom, the verdict, why, the ledger, the tutorial's
//! figures, the transcript) and a spec's matrix. Pure: the player patches the page with it
//! after each thing the reader does ([`crate::morph`]). The same elements, classes and
//! attributes as the full app's replay page, so the stylesheets and browser tests read both.

use crate::route::Opening;
use shared::chapters::Pauses;
use shared::markup::Html;
use shared::proof::html as proof_html;
use shared::run_state::{Phase, RunState};
use shared::series::Drain;
use shared::stepping::moment;
use shared::{EventKind, Moment, Outcome, Prediction};
use std::borrow::Cow;

/// The proof's arrowheads' id: the player shows one proof, so one id serves.
const MARKER: &str = "rl-proof-arrow-0";

/// A recording, and where the reader is in it.
pub struct Run {
    pub heading: Heading,
    pub state: RunState,
    /// A spec's every-permutation matrix, from its recording.
    pub matrix: Option<RunState>,
    /// The question asked before the race shows (`predict=1`, where the recording has one).
    pub prediction: Option<Prediction>,
    /// The reader's pick, by the choice's id.
    pub picked: Option<String>,
    /// Where the chapters stop the reader, and how many they have seen past.
    pub pauses: Pauses,
    pub answered: usize,
    /// The moment shown: `None` is the end.
    pub at: Option<usize>,
    /// Shown from its first event (`mode=step`, or chapters): no proof until its end.
    pub from_start: bool,
    /// The compact timeline (the embed's default) or the detailed one (`view=detailed`).
    pub compact: bool,
}

/// What the one-line title says of a recording.
pub struct Heading {
    /// Where it was fetched from (`data-src`).
    pub src: String,
    pub title: String,
    pub variant_label: String,
    /// `recorded on PostgreSQL 18.6, 6 Dec 2026`.
    pub stamp: String,
    /// "Run it live" on the racelab its author names.
    pub live: Option<String>,
}

impl Run {
    /// The recording `text`, fetched from `src`, read and opened as its address asks (`mode=step`,
    /// `predict=1`, `view=`); "Run it live" on the racelab at `live`, if it names one.
    pub fn read(src: &str, text: &str, live: Option<&str>, opening: &Opening) -> Result<Run, String> {
        let recording =
            shared::recording::read(text).map_err(|why| format!("The recording at {src} cannot be played: {why}."))?;
        let events = recording.events_to_play();
        let pauses = Pauses::of(&recording.chapters, &events);
        let from_start = opening.step || !pauses.is_empty();
        let id = recording.run.id.clone();
        let prediction = recording
            .scenario
            .question_at(&recording.stamp.variant)
            .filter(|_| opening.predict);
        let live = live.and_then(|server| {
            shared::recording::live_address(server, &recording.run.scenario, &recording.stamp.variant)
        });
        Ok(Run {
            heading: Heading {
                src: src.to_owned(),
                title: recording.scenario.title,
                stamp: recording.stamp.line(),
                variant_label: recording.stamp.variant_label,
                live,
            },
            state: RunState::replay(id.clone(), events),
            matrix: recording.spec.map(|spec| RunState::replay(id, spec.matrix)),
            prediction,
            picked: None,
            pauses,
            answered: 0,
            at: from_start.then_some(0),
            from_start,
            compact: opening.compact,
        })
    }

    /// Every event of the run.
    pub fn total(&self) -> usize {
        self.state.events.len()
    }

    /// The moment shown, as a count of events.
    pub fn position(&self) -> usize {
        self.at.unwrap_or_else(|| self.total()).min(self.total())
    }

    /// The furthest moment the reader may go to: the next chapter's, else the end.
    pub fn furthest(&self) -> usize {
        self.pauses.furthest(self.answered, self.total())
    }

    /// Goes to moment `n`, never past a chapter the reader has not seen past.
    pub fn go(&mut self, n: usize) {
        let n = n.min(self.furthest());
        self.at = (n < self.total()).then_some(n);
    }

    /// Whether the race waits for the reader's pick.
    pub fn waits_for_pick(&self) -> bool {
        self.prediction.is_some() && self.picked.is_none()
    }

    /// The run as drawn: the moment the reader travelled to, or the whole of it.
    fn shown(&self) -> Cow<'_, RunState> {
        match self.at {
            Some(n) if !self.state.is_active() && n < self.total() => Cow::Owned(RunState::replay(
                self.state.run_id.clone().unwrap_or_default(),
                self.state.events[..n].to_vec(),
            )),
            _ => Cow::Borrowed(&self.state),
        }
    }
}

/// `<p class="rl-loading">`: the page until the recording has been read.
pub fn loading() -> String {
    let mut html = Html::default();
    html.element("p", &[("class", Some("rl-loading"))], "Loading the run…");
    html.into_string()
}

/// Why the recording cannot be played, in the page's one way of saying something went wrong.
pub fn failed(message: &str) -> String {
    let mut html = Html::default();
    html.open("div", &[("class", Some("rl-error")), ("role", Some("alert"))])
        .element("strong", &[], "Something went wrong: ")
        .text(message)
        .close("div");
    html.into_string()
}

/// Any address but a recording's: the player has no other page.
pub fn not_found(path: &str) -> String {
    let mut html = Html::default();
    html.open("div", &[("class", Some("rl-not-found"))])
        .element("h1", &[], "Nothing here")
        .open("p", &[])
        .text(&format!("racelab has no page at {path}. "))
        .element("a", &[("href", Some("/"))], "See every scenario")
        .close("p")
        .close("div");
    html.into_string()
}

/// The whole page of a recording at the reader's moment.
pub fn page(run: &Run) -> String {
    let mut html = Html::default();
    html.open(
        "article",
        &[
            ("class", Some("rl-replay")),
            ("data-run-id", run.state.run_id.as_deref()),
        ],
    );
    heading(&mut html, &run.heading);
    ended(&mut html, &run.state);
    if let Some(prediction) = &run.prediction {
        question(&mut html, prediction, run);
    }
    if !run.waits_for_pick() {
        body(&mut html, run);
        if let Some(matrix) = &run.matrix {
            html.element(
                "h2",
                &[("class", Some("rl-matrix-heading"))],
                "Every permutation, as recorded",
            );
            // Read only: no row opens a run, there is no racelab to play it on.
            let rows = shared::spec::matrix::html(&matrix.events, false);
            section(
                &mut html,
                "rl-matrix",
                &[("aria-label", Some("Every permutation"))],
                &rows,
            );
        }
    }
    html.close("article");
    html.into_string()
}

/// The one-line title: the scenario, the variant, where and when it was recorded, and "Run it
/// live" where the author names a racelab.
fn heading(html: &mut Html, heading: &Heading) {
    html.open(
        "p",
        &[
            ("class", Some("rl-embed-title rl-recording")),
            ("data-src", Some(&heading.src)),
        ],
    )
    .element("span", &[("class", Some("rl-recording-title"))], &heading.title)
    .element(
        "span",
        &[("class", Some("rl-embed-by"))],
        &format!(" · {} · ", heading.variant_label),
    )
    .element("span", &[("class", Some("rl-recorded"))], &heading.stamp);
    if let Some(live) = &heading.live {
        html.text(" · ").element(
            "a",
            &[
                ("class", Some("rl-run-live")),
                ("href", Some(live)),
                ("target", Some("_blank")),
                ("rel", Some("noopener")),
            ],
            "Run it live",
        );
    }
    html.close("p");
}

/// A run that did not complete says so first: the timeline shows where, this says why.
fn ended(html: &mut Html, state: &RunState) {
    let (kind, text) = match &state.phase {
        Phase::Finished(Outcome::Failed { message }) => ("failed", format!("This run failed: {message}")),
        Phase::Finished(Outcome::Cancelled) => ("cancelled", "This run was cancelled before its end.".to_owned()),
        _ => return,
    };
    html.open(
        "p",
        &[
            ("class", Some("rl-status")),
            ("data-state", Some(kind)),
            ("role", Some("status")),
        ],
    )
    .element("span", &[], &text)
    .close("p");
}

/// The recording's question: its choices, the reader's pick, and once picked, the answer the
/// run revealed (held back until then: it is in the file from the start).
fn question(html: &mut Html, prediction: &Prediction, run: &Run) {
    let picked = run.picked.as_deref();
    let right = picked.and_then(|_| run.state.revealed());
    html.open("fieldset", &[("class", Some("rl-predict"))])
        .open("legend", &[])
        .text("Predict, then run: ")
        .element(
            "span",
            &[("class", Some("rl-predict-subject"))],
            &run.heading.variant_label,
        )
        .text(&format!(" — {}", prediction.question))
        .close("legend");
    for choice in &prediction.choices {
        let is_picked = picked == Some(choice.id.as_str());
        let is_right = right.is_some_and(|(id, _)| id == choice.id);
        let mark = crate::components::predict::mark(is_right, is_picked, right.is_some());
        let right = right.map(|_| is_right.to_string());
        html.open(
            "label",
            &[
                ("class", Some("rl-choice")),
                ("data-choice", Some(&choice.id)),
                ("data-picked", Some(&is_picked.to_string())),
                ("data-right", right.as_deref()),
            ],
        )
        .open(
            "input",
            &[
                ("type", Some("radio")),
                ("name", Some("rl-predict")),
                ("value", Some(&choice.id)),
                ("checked", is_picked.then_some("")),
                ("disabled", picked.map(|_| "")),
            ],
        )
        .element("span", &[("class", Some("rl-choice-label"))], &choice.label)
        .element("span", &[("class", Some("rl-choice-mark"))], mark)
        .close("label");
    }
    match right {
        Some((_, why)) => {
            html.element("p", &[("class", Some("rl-reveal-why"))], why);
        }
        None if picked.is_none() => {
            html.element(
                "p",
                &[("class", Some("rl-predict-hint"))],
                "Pick what you expect; then the race, as it happened, shows.",
            );
        }
        None => {}
    }
    html.close("fieldset");
}

/// The run at the moment shown: as the full app's run body draws it.
fn body(html: &mut Html, run: &Run) {
    let shown = run.shown();
    let is_load_test = run.state.table_after("strategies").is_some();
    // A spec played at every permutation has no steps to draw: its matrix says it all.
    let drawn = !run.state.is_every_permutation();
    scrubber(html, run);
    if is_load_test {
        load_test(html, &shown);
    } else {
        drain(html, &shown);
    }
    let graph = shared::waits::graph(&shown.events);
    if graph.anyone_waited {
        section(
            html,
            "rl-waits",
            &[
                ("data-kind", Some(shared::waits::kind(&graph))),
                ("aria-label", Some("Who waits for whom")),
            ],
            &shared::waits::html(&graph),
        );
    }
    if !is_load_test && drawn {
        timeline(html, run, &shown);
    }
    if let Some(verdict) = shown.verdict() {
        section(
            html,
            "rl-verdict",
            &[("data-kind", Some(verdict.kind_name())), ("role", Some("status"))],
            &shared::verdict::html(verdict),
        );
    }
    proof(html, run, &shown);
    if !is_load_test {
        ledger(html, run, &shown);
    }
    if drawn {
        html.open("details", &[("class", Some("rl-transcript"))])
            .element("summary", &[], "Transcript (as the command line prints it)")
            .element("pre", &[], &shown.transcript())
            .close("details");
    }
}

/// `<section class=…>` around markup a writer of `shared` made.
fn section(html: &mut Html, class: &str, attributes: &[(&str, Option<&str>)], markup: &str) {
    let mut all = vec![("class", Some(class))];
    all.extend_from_slice(attributes);
    html.open("section", &all);
    html.raw(markup);
    html.close("section");
}

/// The timeline at the moment shown: compact, or detailed with room for the proof's arrows.
fn timeline(html: &mut Html, run: &Run, shown: &RunState) {
    let timeline = shown.timeline();
    if run.compact {
        html.raw(&shared::timeline_html::compact(&timeline));
    } else {
        html.open("div", &[("class", Some("rl-timeline-wrap"))]);
        html.raw(&shared::timeline_html::detailed(&timeline));
        html.close("div");
    }
}

/// Why it happened, once the recording's proof is there: at a moment travelled back to, only
/// the steps played by then; a run stepped through from its start keeps why for its end.
fn proof(html: &mut Html, run: &Run, shown: &RunState) {
    if run.from_start && shown.events.len() < run.total() {
        return;
    }
    let Some((proof, lanes, mut steps)) = crate::components::proof::of_run(&run.state) else {
        return;
    };
    steps.truncate(
        shown
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Step { .. }))
            .count(),
    );
    section(
        html,
        "rl-proof",
        &[
            ("data-kind", Some(proof_html::kind(&proof))),
            ("aria-label", Some("Why it happened")),
        ],
        &proof_html::panel(&proof, &lanes, &steps, MARKER),
    );
}

/// The ledger before and after, beside what a correct system holds; the tutorial's figures.
fn ledger(html: &mut Html, run: &Run, shown: &RunState) {
    if let (Some(before), Some(after)) = (shown.ledger(Moment::Before), shown.ledger(Moment::After)) {
        let expected = shown.ledger(Moment::Expected);
        section(
            html,
            "rl-ledger",
            &[("aria-label", Some("Ledger"))],
            &shared::ledger_html::ledger(before, after, expected, run.compact),
        );
    }
    if let Some(table) = shown.ledger(Moment::Reference).and_then(|l| l.tables.first()) {
        section(
            html,
            "rl-reference",
            &[("data-table", Some(&table.name))],
            &shared::ledger_html::reference(table),
        );
    }
}

/// A load test's progress, then one group of bars per strategy beside the tutorial's.
fn load_test(html: &mut Html, shown: &RunState) {
    if let Some((label, done, total)) = shown.progress() {
        progress(
            html,
            None,
            done,
            total,
            &format!("{done} of {total} approvals (now: {label})"),
        );
    }
    if let Some(figures) = shown.table_after("strategies") {
        let tutorial = shown.ledger(Moment::Reference).and_then(|l| l.tables.first());
        section(
            html,
            "rl-chart",
            &[("aria-label", Some("Results per strategy"))],
            &shared::chart::html(figures, tutorial),
        );
    }
}

/// A pipeline's progress bars, and once there is a curve, its drain chart.
fn drain(html: &mut Html, shown: &RunState) {
    let drain = Drain::from_events(&shown.events);
    if drain.series.is_empty() {
        return;
    }
    for (label, done, total) in drain.latest() {
        progress(html, Some(label), done, total, &format!("{done} of {total} {label}"));
    }
    if drain.drawable() {
        html.open("figure", &[("class", Some("rl-drain"))]);
        html.raw(&shared::series::html(&drain));
        html.close("figure");
    }
}

fn progress(html: &mut Html, label: Option<&str>, done: u64, total: u64, text: &str) {
    html.open("div", &[("class", Some("rl-progress")), ("data-progress", label)])
        .element(
            "progress",
            &[("max", Some(&total.to_string())), ("value", Some(&done.to_string()))],
            "",
        )
        .element("span", &[("class", Some("rl-progress-label"))], text)
        .close("div");
}

/// The slider over the run's events with a statement back and forward, the moment in words,
/// and the chapter the reader is stopped at. None while the run has no step to travel through.
fn scrubber(html: &mut Html, run: &Run) {
    let events = &run.state.events;
    let travels = events.len() > 1 && events.iter().any(|e| matches!(e.kind, EventKind::Step { .. }));
    if run.state.is_active() || !travels {
        return;
    }
    let position = run.position();
    let caption = moment(events, position);
    let said = if run.at.is_none() {
        format!("the end ({caption})")
    } else {
        caption.clone()
    };
    html.open(
        "div",
        &[
            ("class", Some("rl-scrubber")),
            ("role", Some("group")),
            ("aria-label", Some("Travel through the run")),
        ],
    )
    .element(
        "button",
        &[
            ("class", Some("rl-scrub-back")),
            ("aria-label", Some("One statement back")),
            ("disabled", (position == 0).then_some("")),
        ],
        "◀",
    )
    .open(
        "input",
        &[
            ("class", Some("rl-scrub")),
            ("type", Some("range")),
            ("min", Some("0")),
            ("max", Some(&run.total().to_string())),
            ("value", Some(&position.to_string())),
            ("aria-label", Some("Moment of the run")),
            ("aria-valuetext", Some(&caption)),
        ],
    )
    .element(
        "button",
        &[
            ("class", Some("rl-scrub-forward")),
            ("aria-label", Some("One statement forward")),
            ("disabled", (position >= run.furthest()).then_some("")),
        ],
        "▶",
    )
    .element(
        "span",
        &[
            ("class", Some("rl-scrub-moment")),
            ("data-at", Some(&position.to_string())),
            ("aria-live", Some("polite")),
        ],
        &said,
    );
    chapter(html, run, position);
    html.close("div");
}

/// The chapter the reader is stopped at, at `position`: its caption, and the button that, once
/// they have their guess, plays on.
fn chapter(html: &mut Html, run: &Run, position: usize) {
    if let Some((n, caption)) = run.pauses.waiting_at(position, run.answered) {
        html.open(
            "div",
            &[
                ("class", Some("rl-chapter")),
                ("role", Some("group")),
                ("aria-label", Some("A chapter")),
            ],
        )
        .element(
            "p",
            &[("class", Some("rl-chapter-count"))],
            &format!("Chapter {n} of {}: what happens next?", run.pauses.len()),
        )
        .element("p", &[("class", Some("rl-chapter-text"))], caption)
        .element(
            "button",
            &[("class", Some("rl-chapter-go"))],
            "I have my guess: show what happens",
        )
        .close("div");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The serializable write skew the server's tests commit beside them.
    const FIXTURE: &str = include_str!("../../../server/tests/fixtures/write-skew.serializable.racelab.json");

    fn opened(opening: Opening) -> Run {
        Run::read("ws.racelab.json", FIXTURE, Some("https://racelab.example/"), &opening).expect("the fixture reads")
    }

    #[test]
    fn at_its_end_a_recording_shows_the_race_its_verdict_why_and_its_ledger() {
        let run = opened(Opening {
            compact: true,
            ..Opening::default()
        });
        let page = page(&run);
        for part in [
            "<p class=\"rl-embed-title rl-recording\" data-src=\"ws.racelab.json\">",
            "<span class=\"rl-recorded\">recorded on PostgreSQL 18.6, 6 Dec 2026</span>",
            "<a class=\"rl-run-live\" href=\"https://racelab.example/lab/isolation/write-skew?variant=serializable\"",
            "<section class=\"rl-compact\"",
            "<section class=\"rl-verdict\" data-kind=\"prevented\" role=\"status\">",
            "<section class=\"rl-proof\"",
            "<section class=\"rl-ledger\" aria-label=\"Ledger\">",
            "<details class=\"rl-transcript\">",
            "<span class=\"rl-scrub-moment\" data-at=\"48\" aria-live=\"polite\">the end (event 48 of 48",
        ] {
            assert!(page.contains(part), "{part}");
        }
        assert!(
            page.contains("<button class=\"rl-scrub-forward\" aria-label=\"One statement forward\" disabled=\"\">")
        );
        assert!(!page.contains("rl-predict"), "no question unless the address asks");
    }

    #[test]
    fn stepped_from_its_start_it_plays_a_statement_a_press_and_keeps_why_for_its_end() {
        let mut run = opened(Opening {
            step: true,
            ..Opening::default()
        });
        let start = page(&run);
        assert!(start.contains("data-at=\"0\" aria-live=\"polite\">before the first event</span>"));
        assert!(start.contains("<button class=\"rl-scrub-back\" aria-label=\"One statement back\" disabled=\"\">"));
        assert!(!start.contains("rl-card") && !start.contains("rl-verdict") && !start.contains("rl-proof"));
        run.go(shared::stepping::next_statement(&run.state.events, run.position()));
        let one = page(&run);
        assert_eq!(one.matches("data-kind=\"statement\"").count(), 1, "{one}");
        assert!(!one.contains("<section class=\"rl-proof\""), "why waits for the end");
        run.go(usize::MAX);
        assert_eq!(run.at, None, "past the last event: the end");
        assert!(page(&run).contains("<section class=\"rl-proof\""));
    }

    #[test]
    fn a_chapter_stops_the_reader_and_its_caption_is_text() {
        let mut run = opened(Opening::default());
        run.pauses = Pauses(vec![(5, "<b>what now?</b>".to_owned())]);
        run.at = Some(0);
        run.go(40);
        assert_eq!(run.position(), 5, "not past the chapter");
        let page = page(&run);
        assert!(page.contains("<p class=\"rl-chapter-count\">Chapter 1 of 1: what happens next?</p>"));
        assert!(page.contains("<p class=\"rl-chapter-text\">&lt;b&gt;what now?&lt;/b&gt;</p>"));
        assert!(
            page.contains("<button class=\"rl-scrub-forward\" aria-label=\"One statement forward\" disabled=\"\">")
        );
        run.answered = 1;
        run.go(40);
        assert_eq!(run.position(), 40, "seen past it, on");
    }

    #[test]
    fn the_question_holds_the_race_back_until_the_pick_then_marks_it() {
        let mut run = opened(Opening {
            predict: true,
            ..Opening::default()
        });
        let asked = page(&run);
        assert!(asked.contains("<p class=\"rl-predict-hint\">"));
        assert!(
            !asked.contains("rl-scrubber") && !asked.contains("rl-verdict"),
            "the answer is not shown"
        );
        assert!(!asked.contains("rl-reveal-why"));
        run.picked = Some("both-commit".to_owned());
        let revealed = page(&run);
        assert!(
            revealed.contains(
                "<label class=\"rl-choice\" data-choice=\"both-commit\" data-picked=\"true\" data-right=\"false\">\
             <input type=\"radio\" name=\"rl-predict\" value=\"both-commit\" checked=\"\" disabled=\"\">"
            ),
            "{revealed}"
        );
        assert!(revealed.contains("<span class=\"rl-choice-mark\">✗ you expected this</span>"));
        assert!(revealed.contains("data-choice=\"bob-40001\" data-picked=\"false\" data-right=\"true\""));
        assert!(revealed.contains("<span class=\"rl-choice-mark\">✓ this happened</span>"));
        assert!(revealed.contains("<p class=\"rl-reveal-why\">") && revealed.contains("rl-verdict"));
        assert!(!revealed.contains("rl-predict-hint"));
    }

    #[test]
    fn a_file_that_is_not_a_recording_says_why_and_a_message_is_text() {
        let Err(why) = Run::read("x.json", "{\"format\":", None, &Opening::default()) else {
            panic!("a cut file reads");
        };
        assert!(why.starts_with("The recording at x.json cannot be played: "), "{why}");
        assert_eq!(
            failed("<script>"),
            "<div class=\"rl-error\" role=\"alert\"><strong>Something went wrong: </strong>&lt;script&gt;</div>"
        );
    }
}
