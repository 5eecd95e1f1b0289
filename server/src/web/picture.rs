//! `GET /runs/{id}.svg`: a finished run as one picture, drawn on the server from the same
//! timeline fold the app uses (`shared::timeline`, each card in one line by `shared::compact`),
//! so a slide or a link preview shows the race without a browser: a lane per actor, every step
//! on its lane's line, waits as bars, errors and commits marked, and the verdict.

use shared::Outcome;
use shared::compact::{self, Tone};
use shared::markup::escape;
use shared::protocol::StoredRun;
use shared::run_state::RunState;
use shared::spec::matrix;
use std::fmt::Write;

const WIDTH: usize = 1200;
const MARGIN: usize = 24;
const HEADER: usize = 78;
const LANE_HEADER: usize = 34;
const ROW: usize = 24;
/// Steps beyond these are summed up in one line: a picture is for the race, not a log.
const MAX_ROWS: usize = 48;
/// Monospace 13 px: about this many pixels a character.
const CHAR_PX: f64 = 7.9;

/// Seconds between two steps appearing in a [`Motion::Played`] picture.
const STEP_SECONDS: f64 = 0.45;

/// How a picture moves: still (a link preview, the PNG), or played (`racelab record --svg`):
/// each step appears in the order it happened, one every [`STEP_SECONDS`], then why and the
/// verdict; CSS alone, no script, so it plays in a README's `<img>`, and at once for a reader
/// who asks for reduced motion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Motion {
    Still,
    Played,
}

/// The attributes that make an element appear `at` seconds in, in a played picture.
fn appear(motion: Motion, at: f64) -> String {
    match motion {
        Motion::Still => String::new(),
        Motion::Played => format!(r#" class="appear" style="animation-delay:{at:.2}s""#),
    }
}

const MOTION_STYLE: &str = "<style>.appear{opacity:0;animation:appear .35s ease-out forwards}\
@keyframes appear{to{opacity:1}}@media (prefers-reduced-motion:reduce){.appear{opacity:1;animation:none}}</style>";

/// The SVG document of `run`, still.
pub fn draw(run: &StoredRun) -> String {
    draw_with(run, Motion::Still)
}

/// The SVG document of `run`, moving as told: its timeline and verdict, or, for a spec played
/// at every permutation (whose lanes stay quiet), each permutation and their outcomes grouped.
pub fn draw_with(run: &StoredRun, motion: Motion) -> String {
    let state = RunState::replay(run.id.clone(), run.events.clone());
    let mut sheet = Sheet {
        body: String::new(),
        bottom: HEADER,
        motion,
    };
    let permutations = matrix::rows(&state.events);
    if let Some(figures) = state.table_after("strategies") {
        // A workload: thousands of requests have no timeline worth drawing; its figures do.
        strategies(&mut sheet, figures);
        verdict(&mut sheet, state.verdict(), &run.outcome);
    } else if permutations.is_empty() {
        let why = why_lines(&state);
        let (shown, hidden) = timeline(&mut sheet, &state, why.len());
        // What is said under the steps, and the verdict, once the last step is in.
        sheet.appearing_at(shown as f64 * STEP_SECONDS + 0.3, |sheet| {
            if hidden > 0 {
                sheet.more(&format!(
                    "… and {hidden} more steps (the whole run is at /runs/{})",
                    run.id
                ));
            }
            sheet.below(&why);
            verdict(sheet, state.verdict(), &run.outcome);
        });
    } else {
        every_permutation(&mut sheet, &permutations);
    }
    let (title, server) = state.header().unwrap_or((run.scenario.as_str(), ""));
    sheet.document(title, &format!("{} · {} · {}", run.scenario, run.variant, server))
}

/// A picture being drawn: its elements so far, and how far down they reach.
struct Sheet {
    body: String,
    bottom: usize,
    motion: Motion,
}

impl Sheet {
    /// Elements drawn by `draw` appear together, `at` seconds in (a played picture).
    fn appearing_at(&mut self, at: f64, draw: impl FnOnce(&mut Sheet)) {
        let _ = write!(self.body, "<g{}>", appear(self.motion, at));
        draw(self);
        self.body.push_str("</g>");
    }

    /// A line that says what was left out, under what is drawn.
    fn more(&mut self, line: &str) {
        let _ = write!(
            self.body,
            r#"<text class="more" x="{MARGIN}" y="{}">{}</text>"#,
            self.bottom + 17,
            escape(line)
        );
        self.bottom += ROW;
    }

    /// One line of text per entry of `lines`, across the picture, under what is drawn.
    fn below(&mut self, lines: &[String]) {
        for line in lines {
            let _ = write!(
                self.body,
                r#"<text class="why" x="{MARGIN}" y="{}">{}</text>"#,
                self.bottom + 17,
                escape(&compact::fit(line, 140))
            );
            self.bottom += ROW;
        }
    }

    /// The whole SVG document: the page, its title and the line under it, then what is drawn.
    fn document(self, title: &str, sub: &str) -> String {
        let height = self.bottom + MARGIN;
        let mut svg = String::new();
        let _ = write!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="title">"#
        );
        let _ = write!(
            svg,
            "<title id=\"title\">{}</title>",
            escape(&format!("racelab: {title}"))
        );
        svg.push_str(STYLE);
        if self.motion == Motion::Played {
            svg.push_str(MOTION_STYLE);
        }
        let _ = write!(svg, r#"<rect class="page" width="{WIDTH}" height="{height}"/>"#);
        let _ = write!(
            svg,
            r#"<text class="title" x="{MARGIN}" y="36">{}</text><text class="sub" x="{MARGIN}" y="60">{}</text>"#,
            escape(title),
            escape(sub)
        );
        svg.push_str(&self.body);
        svg.push_str("</svg>\n");
        svg
    }
}

/// The lanes and, on them, the steps: the first [`MAX_ROWS`] are drawn; how many were, and how
/// many were left out. The lanes reach down past the steps to the `why` lines said under them.
fn timeline(sheet: &mut Sheet, state: &RunState, why: usize) -> (usize, usize) {
    let timeline = state.timeline();
    let lane_width = (WIDTH - 2 * MARGIN) / timeline.lanes.len().max(1);
    let shown = timeline.rows.len().min(MAX_ROWS);
    let hidden = timeline.rows.len() - shown;
    let rows_top = HEADER + LANE_HEADER;
    let lanes_bottom = rows_top + (shown + usize::from(hidden > 0) + why) * ROW;
    for (i, lane) in timeline.lanes.iter().enumerate() {
        lane_header(sheet, i, lane, lane_width, lanes_bottom);
    }
    for (n, row) in timeline.rows.iter().take(shown).enumerate() {
        sheet.appearing_at(n as f64 * STEP_SECONDS, |sheet| {
            step_line(sheet, row, rows_top + n * ROW, lane_width);
        });
    }
    sheet.bottom = rows_top + shown * ROW;
    (shown, hidden)
}

/// Lane `i`'s header (its actor and what it runs on) and its background down to `bottom`.
fn lane_header(sheet: &mut Sheet, i: usize, lane: &shared::event::ActorInfo, lane_width: usize, bottom: usize) {
    let x = MARGIN + i * lane_width;
    let _ = write!(
        sheet.body,
        r#"<g class="lane" data-lane="{name}"><rect class="lane-bg{odd}" x="{x}" y="{HEADER}" width="{lane_width}" height="{h}"/><text class="actor" x="{tx}" y="{ty}">{name}</text><text class="detail" x="{dx}" y="{ty}" text-anchor="end">{detail}</text></g>"#,
        name = escape(&lane.name),
        odd = if i % 2 == 1 { " odd" } else { "" },
        h = bottom - HEADER,
        tx = x + 10,
        ty = HEADER + 22,
        dx = x + lane_width - 10,
        detail = escape(&compact::fit(&lane.detail, lane_width / 8 / 2)),
    );
}

/// One step, in one line on its lane at `y`, with bars through the lanes that wait meanwhile.
fn step_line(sheet: &mut Sheet, row: &shared::timeline::Row, y: usize, lane_width: usize) {
    for lane in &row.waiting {
        let x = MARGIN + lane * lane_width + 3;
        let _ = write!(
            sheet.body,
            r#"<rect class="wait-bar" x="{x}" y="{y}" width="5" height="{ROW}"/>"#
        );
    }
    let chars = ((lane_width - 28) as f64 / CHAR_PX) as usize;
    let line = compact::line(&row.card);
    let outcome = line.outcome.as_deref().unwrap_or_default();
    let room = chars.saturating_sub(if outcome.is_empty() {
        0
    } else {
        outcome.chars().count() + 3
    });
    let _ = write!(
        sheet.body,
        r#"<text class="line {tone}" x="{x}" y="{ty}">{text}"#,
        tone = line.tone.class(),
        x = MARGIN + row.lane * lane_width + 14,
        ty = y + 17,
        text = escape(&compact::fit(&line.text, room.max(8))),
    );
    if !outcome.is_empty() {
        let class = if line.tone == Tone::Failed {
            "outcome failed"
        } else {
            "outcome"
        };
        // A no-break space: renderers that trim a tspan's leading space (resvg) keep this one.
        let _ = write!(
            sheet.body,
            "<tspan class=\"{class}\">\u{a0}→ {}</tspan>",
            escape(outcome)
        );
    }
    sheet.body.push_str("</text>");
}

/// The verdict in its box under what is drawn: its label, its headline and up to four checks.
fn verdict(sheet: &mut Sheet, verdict: Option<&shared::Verdict>, outcome: &Outcome) {
    let (class, label, headline) = match (verdict, outcome) {
        (Some(v), _) => (v.kind_name(), v.label(), v.headline.as_str()),
        (None, Outcome::Failed { message }) => ("failed", "the run failed", message.as_str()),
        (None, _) => ("failed", "no verdict", "the run ended before its verdict"),
    };
    let checks: Vec<(bool, String)> = verdict
        .map(|v| &v.checks[..v.checks.len().min(4)])
        .unwrap_or_default()
        .iter()
        .map(|c| {
            (
                c.holds,
                format!("{} {} (got {})", if c.holds { "✓" } else { "✗" }, c.rule, c.actual),
            )
        })
        .collect();
    verdict_box(sheet, class, label, headline, &checks);
}

/// A box under what is drawn: a label, a headline, and a line under them for each of `lines`
/// (green where it holds, red where it does not).
fn verdict_box(sheet: &mut Sheet, class: &str, label: &str, headline: &str, lines: &[(bool, String)]) {
    let top = sheet.bottom + 16;
    let height = 58 + lines.len() * 20;
    let _ = write!(
        sheet.body,
        r#"<g class="verdict {class}"><rect x="{MARGIN}" y="{top}" width="{w}" height="{height}" rx="8"/><text class="label" x="{lx}" y="{ly}">{label}</text><text class="headline" x="{hx}" y="{ly}">{headline}</text>"#,
        w = WIDTH - 2 * MARGIN,
        lx = MARGIN + 16,
        ly = top + 32,
        hx = MARGIN + 200,
        label = escape(label),
        headline = escape(&compact::fit(headline, 110)),
    );
    for (i, (holds, line)) in lines.iter().enumerate() {
        let _ = write!(
            sheet.body,
            r#"<text class="check{broken}" x="{x}" y="{y}">{line}</text>"#,
            broken = if *holds { "" } else { " broken" },
            x = MARGIN + 200,
            y = top + 56 + i * 20,
            line = escape(&compact::fit(line, 118)),
        );
    }
    sheet.body.push_str("</g>");
    sheet.bottom = top + height;
}

/// A load test's results: a group of bars per strategy (the app's chart, as SVG).
fn strategies(sheet: &mut Sheet, figures: &shared::Table) {
    const LABEL_X: usize = MARGIN + 24;
    const TRACK_X: usize = MARGIN + 200;
    const TRACK_WIDTH: usize = WIDTH - TRACK_X - 160;
    const BAR: usize = 14;
    for group in shared::chart::groups(figures) {
        let _ = write!(
            sheet.body,
            r#"<g class="strategy" data-strategy="{name}"><text class="actor" x="{MARGIN}" y="{y}">{name}</text>"#,
            name = escape(&group.strategy),
            y = sheet.bottom + 24,
        );
        sheet.bottom += 32;
        for bar in &group.bars {
            let width = (bar.share * TRACK_WIDTH as f64).round() as usize;
            let _ = write!(
                sheet.body,
                r#"<text class="detail" x="{LABEL_X}" y="{ty}">{label}</text><rect class="track" x="{TRACK_X}" y="{y}" width="{TRACK_WIDTH}" height="{BAR}" rx="3"/><rect class="bar {metric}" data-metric="{metric}" x="{TRACK_X}" y="{y}" width="{width}" height="{BAR}" rx="3"/><text class="line" x="{vx}" y="{ty}">{shown}</text>"#,
                ty = sheet.bottom + 12,
                label = bar.label,
                y = sheet.bottom,
                metric = bar.metric,
                vx = TRACK_X + TRACK_WIDTH + 12,
                shown = escape(&bar.shown),
            );
            sheet.bottom += 20;
        }
        sheet.body.push_str("</g>");
        sheet.bottom += 8;
    }
}

/// A spec played at every permutation: a line per permutation (its steps in order, waits and
/// failures marked, and what it came to), one appearing after another, then the outcomes
/// grouped in the verdict's box: the same permutations the app's matrix shows.
fn every_permutation(sheet: &mut Sheet, permutations: &[matrix::Row<'_>]) {
    let shown = permutations.len().min(MAX_ROWS);
    let outcome_x = WIDTH / 2 + 60;
    let _ = write!(
        sheet.body,
        r#"<text class="actor" x="{MARGIN}" y="{y}">Every permutation: its steps in order</text><text class="actor" x="{outcome_x}" y="{y}">What it came to</text>"#,
        y = sheet.bottom + 22,
    );
    sheet.bottom += LANE_HEADER;
    let step_chars = ((outcome_x - MARGIN - 60) as f64 / CHAR_PX) as usize;
    let outcome_chars = ((WIDTH - MARGIN - outcome_x) as f64 / CHAR_PX) as usize;
    for (n, row) in permutations.iter().take(shown).enumerate() {
        let steps: Vec<String> = row.steps.iter().map(|s| format!("{}{}", s.name, s.mark())).collect();
        let broken = row.outcome.contains("broken:");
        sheet.appearing_at(n as f64 * STEP_SECONDS, |sheet| {
            let _ = write!(
                sheet.body,
                r#"<g class="permutation" data-index="{index}"><text class="line" x="{MARGIN}" y="{y}">{number}. {steps}</text><text class="line{tone}" x="{outcome_x}" y="{y}">{outcome}</text></g>"#,
                index = row.index,
                number = row.index + 1,
                y = sheet.bottom + 17,
                steps = escape(&compact::fit(&steps.join(" · "), step_chars)),
                tone = if broken { " failed" } else { "" },
                outcome = escape(&compact::fit(row.outcome, outcome_chars)),
            );
        });
        sheet.bottom += ROW;
    }
    if permutations.len() > shown {
        sheet.more(&format!("… and {} more permutations", permutations.len() - shown));
    }
    let groups = matrix::group(permutations.iter().map(|r| (r.index as usize, r.outcome)));
    let lines: Vec<(bool, String)> = groups
        .iter()
        .take(6)
        .map(|(outcome, members)| {
            let line = format!("{} × {outcome} ({})", members.len(), matrix::which(members));
            (!outcome.contains("broken:"), line)
        })
        .collect();
    let (class, label) = match groups.iter().any(|(outcome, _)| outcome.contains("broken:")) {
        true => ("reproduced", "a rule broke"),
        false if groups.iter().all(|(outcome, _)| outcome.contains("checks held")) => ("prevented", "the rules held"),
        false => ("unstated", "every permutation"),
    };
    let headline = match groups.len() {
        1 => format!("one outcome in all {} permutations", permutations.len()),
        n => format!("{n} outcomes in {} permutations", permutations.len()),
    };
    sheet.appearing_at(shown as f64 * STEP_SECONDS + 0.3, |sheet| {
        verdict_box(sheet, class, label, &headline, &lines);
    });
}

/// Why, in a line or two under the steps: the anomaly the run's proof found, and the deadlock
/// PostgreSQL broke (the wait-for graph's end).
fn why_lines(state: &RunState) -> Vec<String> {
    let mut lines = Vec::new();
    let proof = state.events.iter().rev().find_map(|e| match &e.kind {
        shared::EventKind::Proof { proof } => Some(proof),
        _ => None,
    });
    if let Some(anomaly) = proof.and_then(|p| p.anomaly) {
        lines.push(format!(
            "Why: a {} ({}): no order of one-at-a-time runs explains what the transactions saw",
            anomaly.name(),
            anomaly.class()
        ));
    }
    if let Some(broken) = shared::waits::graph(&state.events).broken {
        lines.push(format!(
            "PostgreSQL broke the deadlock ({}) by cancelling {} with {}",
            broken.cycle.join(" ⇄ "),
            broken.cancelled,
            broken.code
        ));
    }
    lines
}

const STYLE: &str = "<style>\
text{font-family:'DejaVu Sans Mono','Liberation Mono',Menlo,Consolas,monospace;font-size:13px;fill:#1f2328}\
.page{fill:#ffffff}.title{font-family:'Liberation Sans',Helvetica,Arial,sans-serif;font-size:24px;font-weight:700}\
.sub{fill:#57606a}.lane-bg{fill:#f6f8fa}.lane-bg.odd{fill:#eef1f4}\
.actor{font-weight:700;font-size:14px}.detail{fill:#57606a;font-size:11px}\
.wait-bar{fill:#d29922}.why{font-weight:700;fill:#9a6700}.line.waiting{fill:#9a6700}.line.failed,.outcome.failed{fill:#cf222e;font-weight:700}\
.line.commit{fill:#1a7f37;font-weight:700}.line.rollback{fill:#8250df;font-weight:700}\
.line.note{fill:#57606a;font-style:italic}.line.process{fill:#0969da}.outcome{fill:#57606a}.more{fill:#57606a}\
.verdict rect{fill:#f6f8fa;stroke:#d0d7de}.verdict.reproduced rect{fill:#ffebe9;stroke:#cf222e}\
.verdict.prevented rect{fill:#dafbe1;stroke:#1a7f37}\
.verdict .label{font-weight:700;font-size:16px}.verdict.reproduced .label{fill:#cf222e}.verdict.prevented .label{fill:#1a7f37}\
.headline{font-family:'Liberation Sans',Helvetica,Arial,sans-serif;font-size:16px;font-weight:700}\
.check{fill:#1a7f37;font-size:12px}.check.broken{fill:#cf222e}\
.track{fill:#eef1f4}.bar{fill:#0969da}.bar.over_budget{fill:#cf222e}.bar.gave_up{fill:#9a6700}\
</style>";

#[cfg(test)]
mod tests {
    use super::*;

    /// The serializable write skew committed beside the tests, as a stored run with its proof.
    fn write_skew() -> StoredRun {
        let text = include_str!("../../tests/fixtures/write-skew.serializable.racelab.json");
        shared::recording::read(text).expect("the fixture reads").run_to_play()
    }

    fn delays(svg: &str) -> Vec<f64> {
        svg.split("animation-delay:")
            .skip(1)
            .filter_map(|rest| rest.split('s').next()?.parse().ok())
            .collect()
    }

    /// A spec's run at every permutation: two orders of a lost update, one that loses the
    /// increment, one where the second writer fails, as the engine reports them.
    fn every_permutation_run() -> StoredRun {
        let step = |name: &str, session: &str, waited: bool, error: Option<&str>| shared::spec::PlayedStep {
            name: name.into(),
            session: session.into(),
            waited,
            error: error.map(str::to_owned),
        };
        let lost = "no errors · broken: (SELECT n FROM counter) = 2 → 1";
        let refused = "b_write 40001 · checks held";
        let permutations = [
            (
                0,
                vec![step("a_read", "a", false, None), step("b_read", "b", false, None)],
                lost,
            ),
            (
                1,
                vec![
                    step("a_read", "a", false, None),
                    step("b_write", "b", true, Some("40001")),
                ],
                refused,
            ),
            (
                2,
                vec![step("b_read", "b", false, None), step("a_read", "a", false, None)],
                lost,
            ),
        ];
        let events = permutations
            .into_iter()
            .enumerate()
            .map(|(seq, (index, steps, outcome))| shared::Event {
                seq: seq as u64,
                at_ms: 0,
                kind: shared::EventKind::Permutation {
                    index,
                    steps,
                    outcome: outcome.to_owned(),
                },
            })
            .collect();
        StoredRun {
            id: "r1".into(),
            scenario: "spec/0123456789abcdef".into(),
            variant: "every".into(),
            outcome: Outcome::Completed,
            events,
        }
    }

    #[test]
    fn a_run_at_every_permutation_is_pictured_as_its_permutations_and_their_outcomes_grouped() {
        let svg = draw(&every_permutation_run());
        assert_eq!(svg.matches("class=\"permutation\"").count(), 3, "{svg}");
        assert!(
            svg.contains("b_write ✗ 40001"),
            "a failure is marked on its step: {svg}"
        );
        assert!(!svg.contains("no verdict"), "{svg}");
        assert!(
            svg.contains("class=\"verdict reproduced\""),
            "an order broke the rule: {svg}"
        );
        assert!(svg.contains("2 outcomes in 3 permutations"), "{svg}");
        assert!(
            svg.contains("2 × no errors · broken: (SELECT n FROM counter) = 2 → 1 (permutations 1, 3)"),
            "{svg}"
        );
        assert!(svg.contains("1 × b_write 40001 · checks held (permutation 2)"), "{svg}");
        let played = draw_with(&every_permutation_run(), Motion::Played);
        assert_eq!(delays(&played).len(), 3 + 1, "each permutation, then the outcomes");
    }

    #[test]
    fn a_load_test_is_pictured_as_its_figures_per_strategy_not_its_thousand_lanes() {
        let columns = [
            "strategy",
            "approved",
            "retries",
            "most_attempts",
            "over_budget",
            "gave_up",
        ];
        let row = |name: &str, over: i64| -> Vec<shared::Value> {
            vec![name.into(), 100.into(), 3.into(), 2.into(), over.into(), 0.into()]
        };
        let figures = shared::Table {
            name: "strategies".into(),
            columns: columns.map(str::to_owned).to_vec(),
            key_columns: 1,
            rows: vec![row("naive", 4_000), row("serializable", 0)],
        };
        let mut run = every_permutation_run();
        run.scenario = "isolation/load-test".into();
        run.events = vec![shared::Event {
            seq: 0,
            at_ms: 0,
            kind: shared::EventKind::Ledger {
                moment: shared::Moment::After,
                ledger: shared::Ledger { tables: vec![figures] },
            },
        }];
        let svg = draw(&run);
        assert_eq!(svg.matches("class=\"strategy\"").count(), 2, "{svg}");
        assert_eq!(svg.matches("class=\"bar ").count(), 2 * 5, "five bars each: {svg}");
        assert!(svg.contains("$4,000"), "over budget, in dollars: {svg}");
        let full = format!("width=\"{}\"", WIDTH - (MARGIN + 200) - 160);
        let naive = &svg[svg.find("data-strategy=\"naive\"").expect("naive")..];
        let over = &naive[naive.find("data-metric=\"over_budget\"").expect("its bar")..];
        assert!(over[..80].contains(&full), "the worst is the longest: {over}");
        assert!(!svg.contains("class=\"lane\""), "no lanes: {svg}");
    }

    #[test]
    fn a_still_picture_does_not_move() {
        let svg = draw(&write_skew());
        assert!(
            !svg.contains("@keyframes") && !svg.contains("class=\"appear\""),
            "{svg}"
        );
    }

    #[test]
    fn a_played_picture_shows_each_step_in_turn_then_the_verdict_with_no_script() {
        let run = write_skew();
        let rows = RunState::replay(run.id.clone(), run.events.clone())
            .timeline()
            .rows
            .len();
        let svg = draw_with(&run, Motion::Played);
        assert!(svg.contains("@keyframes appear") && svg.contains("prefers-reduced-motion"));
        assert!(!svg.contains("<script"), "no script: an <img> would not run it anyway");
        let delays = delays(&svg);
        assert_eq!(delays.len(), rows.min(MAX_ROWS) + 1, "each step, then the verdict");
        assert!(
            delays.windows(2).all(|w| w[0] < w[1]),
            "in the order they happened: {delays:?}"
        );
        let verdict = svg.rfind("animation-delay").expect("a delay");
        assert!(
            svg[verdict..].contains("class=\"verdict prevented\""),
            "the verdict comes last"
        );
        // Still the same picture once played: every text of the still one is in it.
        let still = draw(&run);
        assert_eq!(svg.matches("<text").count(), still.matches("<text").count());
    }
}
