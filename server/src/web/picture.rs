//! `GET /runs/{id}.svg`: a finished run as one picture, drawn on the server from the same
//! timeline fold the app uses (`shared::timeline`, each card in one line by `shared::compact`),
//! so a slide or a link preview shows the race without a browser: a lane per actor, every step
//! on its lane's line, waits as bars, errors and commits marked, and the verdict.

use shared::Outcome;
use shared::compact::{self, Tone};
use shared::markup::escape;
use shared::protocol::StoredRun;
use shared::run_state::RunState;
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

/// The SVG document of `run`, moving as told.
pub fn draw_with(run: &StoredRun, motion: Motion) -> String {
    let state = RunState::replay(run.id.clone(), run.events.clone());
    let timeline = state.timeline();
    let lanes = timeline.lanes.len().max(1);
    let lane_width = (WIDTH - 2 * MARGIN) / lanes;
    let shown = timeline.rows.len().min(MAX_ROWS);
    let hidden = timeline.rows.len() - shown;
    let verdict = state.verdict();
    let checks = verdict.map_or(0, |v| v.checks.len().min(4));
    let rows_top = HEADER + LANE_HEADER;
    let rows_bottom = rows_top + shown * ROW + if hidden > 0 { ROW } else { 0 };
    let verdict_height = 58 + checks * 20;
    let why = why_lines(&state);
    let rows_bottom = rows_bottom + why.len() * ROW;
    let height = rows_bottom + 16 + verdict_height + MARGIN;

    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="title">"#
    );
    let (title, server) = state.header().unwrap_or((run.scenario.as_str(), ""));
    let _ = write!(
        svg,
        "<title id=\"title\">{}</title>",
        escape(&format!("racelab: {title}"))
    );
    svg.push_str(STYLE);
    if motion == Motion::Played {
        svg.push_str(MOTION_STYLE);
    }
    let _ = write!(svg, r#"<rect class="page" width="{WIDTH}" height="{height}"/>"#);
    let _ = write!(
        svg,
        r#"<text class="title" x="{MARGIN}" y="36">{}</text><text class="sub" x="{MARGIN}" y="60">{}</text>"#,
        escape(title),
        escape(&format!("{} · {} · {}", run.scenario, run.variant, server))
    );

    // Lanes: a header and a rule down each.
    for (i, lane) in timeline.lanes.iter().enumerate() {
        let x = MARGIN + i * lane_width;
        let _ = write!(
            svg,
            r#"<g class="lane" data-lane="{name}"><rect class="lane-bg{odd}" x="{x}" y="{HEADER}" width="{lane_width}" height="{h}"/><text class="actor" x="{tx}" y="{ty}">{name}</text><text class="detail" x="{dx}" y="{ty}" text-anchor="end">{detail}</text></g>"#,
            name = escape(&lane.name),
            odd = if i % 2 == 1 { " odd" } else { "" },
            h = rows_bottom - HEADER,
            tx = x + 10,
            ty = HEADER + 22,
            dx = x + lane_width - 10,
            detail = escape(&compact::fit(&lane.detail, lane_width / 8 / 2)),
        );
    }

    // Steps: one line each, in its lane; bars through the lanes that wait.
    let chars = ((lane_width - 28) as f64 / CHAR_PX) as usize;
    for (n, row) in timeline.rows.iter().take(shown).enumerate() {
        let y = rows_top + n * ROW;
        let _ = write!(svg, "<g{}>", appear(motion, n as f64 * STEP_SECONDS));
        for lane in &row.waiting {
            let x = MARGIN + lane * lane_width + 3;
            let _ = write!(
                svg,
                r#"<rect class="wait-bar" x="{x}" y="{y}" width="5" height="{ROW}"/>"#
            );
        }
        let line = compact::line(&row.card);
        let x = MARGIN + row.lane * lane_width + 14;
        let outcome = line.outcome.as_deref().unwrap_or_default();
        let room = chars.saturating_sub(if outcome.is_empty() {
            0
        } else {
            outcome.chars().count() + 3
        });
        let _ = write!(
            svg,
            r#"<text class="line {tone}" x="{x}" y="{ty}">{text}"#,
            tone = line.tone.class(),
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
            let _ = write!(svg, "<tspan class=\"{class}\">\u{a0}→ {}</tspan>", escape(outcome));
        }
        svg.push_str("</text></g>");
    }
    // What is said under the steps, and the verdict, once the last step is in.
    let _ = write!(svg, "<g{}>", appear(motion, shown as f64 * STEP_SECONDS + 0.3));
    let mut below = rows_top + shown * ROW;
    if hidden > 0 {
        let _ = write!(
            svg,
            r#"<text class="more" x="{MARGIN}" y="{}">… and {hidden} more steps (the whole run is at /runs/{})</text>"#,
            below + 17,
            escape(&run.id)
        );
        below += ROW;
    }
    for line in &why {
        let _ = write!(
            svg,
            r#"<text class="why" x="{MARGIN}" y="{}">{}</text>"#,
            below + 17,
            escape(&compact::fit(line, 140))
        );
        below += ROW;
    }

    // The verdict.
    let top = rows_bottom + 16;
    let (class, label, headline) = match (verdict, &run.outcome) {
        (Some(v), _) => (v.kind_name(), v.label(), v.headline.as_str()),
        (None, Outcome::Failed { message }) => ("failed", "the run failed", message.as_str()),
        (None, _) => ("failed", "no verdict", "the run ended before its verdict"),
    };
    let _ = write!(
        svg,
        r#"<g class="verdict {class}"><rect x="{MARGIN}" y="{top}" width="{w}" height="{verdict_height}" rx="8"/><text class="label" x="{lx}" y="{ly}">{label}</text><text class="headline" x="{hx}" y="{ly}">{headline}</text>"#,
        w = WIDTH - 2 * MARGIN,
        lx = MARGIN + 16,
        ly = top + 32,
        hx = MARGIN + 200,
        label = escape(label),
        headline = escape(&compact::fit(headline, 110)),
    );
    for (i, check) in verdict
        .map(|v| &v.checks[..checks])
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let _ = write!(
            svg,
            r#"<text class="check{broken}" x="{x}" y="{y}">{mark} {rule} (got {actual})</text>"#,
            broken = if check.holds { "" } else { " broken" },
            x = MARGIN + 200,
            y = top + 56 + i * 20,
            mark = if check.holds { "✓" } else { "✗" },
            rule = escape(&check.rule),
            actual = escape(&check.actual),
        );
    }
    svg.push_str("</g></g></svg>\n");
    svg
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
