//! The timeline as HTML text: the detailed one (a card per row in its actor's lane) and the
//! compact one (each card in a line that opens to it), with the lanes' heads, the gaps drawn to
//! the time axis, leases, and the crowd strip. The recording player writes its timeline with
//! these at every moment the reader travels to, and keeps what the reader opened by patching
//! the page rather than replacing it (app/src/player). The same elements, classes and
//! attributes as the app's timeline components: the stylesheets and the browser tests read
//! both alike.

use crate::compact::{self, Tone};
use crate::event::{ActorInfo, Detail, Rows};
use crate::markup::Html;
use crate::run_state::rows_text;
use crate::time_axis::{self, Gap};
use crate::timeline::{Card, CrowdMember, Failure, LeaseMark, Row, Timeline};
use crate::{LeaseChange, Service};

/// The detailed timeline: the crowd strip where callers have no lane, the lanes and their rows,
/// and the gaps' scale under it.
pub fn detailed(timeline: &Timeline) -> String {
    drawn(timeline, "rl-timeline", detailed_row)
}

/// The compact timeline: the same lanes and rows, each card in one line, what an actor says as
/// a caption across the lanes.
pub fn compact(timeline: &Timeline) -> String {
    drawn(timeline, "rl-compact", compact_row)
}

/// One row, after the row `before` it, in lanes of these names.
type RowWriter = fn(&mut Html, &Row, Option<&Row>, &[&str]);

/// A timeline of class `class`, each row written by `row`.
fn drawn(timeline: &Timeline, class: &str, row: RowWriter) -> String {
    let mut html = Html::default();
    crowd(&mut html, timeline);
    let names = lane_names(timeline);
    html.open(
        "section",
        &[
            ("class", Some(class)),
            ("style", Some(&lanes_style(timeline))),
            ("aria-label", Some("Timeline")),
        ],
    );
    heads(&mut html, &timeline.lanes);
    for (i, this) in timeline.rows.iter().enumerate() {
        let before = i.checked_sub(1).and_then(|i| timeline.rows.get(i));
        row(&mut html, this, before, &names);
    }
    html.close("section");
    legend(&mut html, timeline);
    html.into_string()
}

fn lane_names(timeline: &Timeline) -> Vec<&str> {
    timeline.lanes.iter().map(|l| l.name.as_str()).collect()
}

/// `--lanes: 2`: the grid's columns (at least one, so an empty timeline still lays out).
fn lanes_style(timeline: &Timeline) -> String {
    format!("--lanes: {}", timeline.lanes.len().max(1))
}

/// `rl-x rl-x--on`: a class and, when `on`, its modifier.
fn classes(base: &str, modifiers: &[(&str, bool)]) -> String {
    let mut class = base.to_owned();
    for (modifier, on) in modifiers {
        if *on {
            class.push(' ');
            class.push_str(base);
            class.push_str("--");
            class.push_str(modifier);
        }
    }
    class
}

/// One head per lane: the actor's name and its session setting.
fn heads(html: &mut Html, lanes: &[ActorInfo]) {
    html.open("div", &[("class", Some("rl-lane-heads"))]);
    for lane in lanes {
        html.open(
            "div",
            &[("class", Some("rl-lane-head")), ("data-lane", Some(&lane.name))],
        )
        .element("span", &[("class", Some("rl-lane-name"))], &lane.name)
        .element("span", &[("class", Some("rl-lane-detail"))], &lane.detail)
        .close("div");
    }
    html.close("div");
}

/// A row's element, opened: its sequence number, time, and the gap above it.
fn open_row(html: &mut Html, class: &str, row: &Row, gap: Option<Gap>) {
    let style = gap.map(|gap| format!("--rl-gap: {}px", gap.px));
    html.open(
        "div",
        &[
            ("class", Some(class)),
            ("data-seq", Some(&row.seq.to_string())),
            ("data-at-ms", Some(&row.at_ms.to_string())),
            ("title", Some(&format!("{} ms", row.at_ms))),
            ("style", style.as_deref()),
        ],
    );
    if let Some(gap) = gap {
        let class = classes("rl-gap-label", &[("cut", !gap.to_scale || gap.paused)]);
        html.element(
            "span",
            &[("class", Some(&class)), ("data-ms", Some(&gap.ms.to_string()))],
            &gap.label(),
        );
    }
}

/// The gap drawn above `row` for the time since the row `before` it (`shared::time_axis`).
fn gap_before(before: Option<&Row>, row: &Row) -> Option<Gap> {
    time_axis::gap(before?.at_ms, row.at_ms, row.after_pause)
}

/// A lane's part of a gap: empty, or a wait bar when the lane was waiting all along.
fn gap_fill(html: &mut Html, before: Option<&Row>, lane: usize) {
    let waiting = before.is_some_and(|b| b.waiting.contains(&lane));
    html.element(
        "div",
        &[("class", Some(&classes("rl-gap-fill", &[("waiting", waiting)])))],
        "",
    );
}

fn detailed_row(html: &mut Html, row: &Row, before: Option<&Row>, names: &[&str]) {
    let gap = gap_before(before, row);
    open_row(html, "rl-row", row, gap);
    for (lane, name) in names.iter().enumerate() {
        let holds = row.leases.iter().any(|l| l.lane == lane);
        html.open(
            "div",
            &[
                ("class", Some(&classes("rl-cell", &[("lease", holds)]))),
                ("data-lane", Some(name)),
            ],
        );
        if gap.is_some() {
            gap_fill(html, before, lane);
        }
        lease_marks(html, row, lane);
        if lane == row.lane {
            card(html, name, &row.card);
        }
        if row.waiting.contains(&lane) {
            html.element(
                "div",
                &[
                    ("class", Some("rl-wait-bar")),
                    ("data-lane", Some(name)),
                    ("title", Some(&format!("{name} is waiting for a lock"))),
                ],
                "",
            );
        }
        html.close("div");
    }
    html.close("div");
}

/// The leases of `lane` at this row: those that ran out under it, what its actor did to its own,
/// and on the first row of a holding, the lease's label.
fn lease_marks(html: &mut Html, row: &Row, lane: usize) {
    for lease in row.expired.iter().filter(|l| l.lane == lane) {
        html.element(
            "div",
            &[("class", Some("rl-lease-expired")), ("data-key", Some(&lease.key))],
            &format!("lease on {} expired", lease.key),
        );
    }
    for (_, change, key) in row.lease_changes.iter().filter(|(l, _, _)| *l == lane) {
        let (kind, text) = lease_change(*change, key);
        html.element(
            "div",
            &[("class", Some("rl-lease-change")), ("data-change", Some(kind))],
            &text,
        );
    }
    if let Some(lease) = row.leases.iter().find(|l| l.lane == lane && l.fresh) {
        html.element(
            "div",
            &[("class", Some("rl-lease-label")), ("data-key", Some(&lease.key))],
            &lease_label(lease),
        );
    }
}

/// A lease's label: its key, the time left on it, and its fencing token if it has one.
fn lease_label(lease: &LeaseMark) -> String {
    let fence = lease.fence.map(|f| format!(", fence {f}")).unwrap_or_default();
    format!("holds {} · {} ms left{fence}", lease.key, lease.left_ms)
}

/// What a holder did to its lease, as its `data-change` and in words: a refresh, or a release or
/// refresh that found the lease no longer its own.
fn lease_change(change: LeaseChange, key: &str) -> (&'static str, String) {
    match change {
        LeaseChange::Refreshed => ("refreshed", format!("refreshed {key}")),
        _ => ("lost", format!("{key} was no longer its own: refused")),
    }
}

fn compact_row(html: &mut Html, row: &Row, before: Option<&Row>, names: &[&str]) {
    let gap = gap_before(before, row);
    let caption = matches!(row.card, Card::Note { .. });
    open_row(html, "rl-compact-row", row, gap);
    for (lane, name) in names.iter().enumerate() {
        let class = classes(
            "rl-compact-cell",
            &[
                ("waiting", row.waiting.contains(&lane)),
                ("lease", row.leases.iter().any(|l| l.lane == lane)),
                ("expired", row.expired.iter().any(|l| l.lane == lane)),
            ],
        );
        html.open("div", &[("class", Some(&class)), ("data-lane", Some(name))]);
        if gap.is_some() {
            gap_fill(html, before, lane);
        }
        if lane == row.lane && !caption {
            line(html, name, row, lane);
        }
        html.close("div");
    }
    if caption {
        line(html, names.get(row.lane).copied().unwrap_or_default(), row, row.lane);
    }
    html.close("div");
}

/// One row's line in its lane (number `column`): a caption from that lane across the others for
/// a note, a mark for a commit or rollback, else a line that opens to its card.
fn line(html: &mut Html, lane: &str, row: &Row, column: usize) {
    let line = compact::line(&row.card);
    let tone = line.tone.class();
    match (&row.card, line.tone) {
        (Card::Note { line: text }, _) => {
            // A div, not a p: parsed as HTML text, a <pre> in a <p> would close it.
            html.open(
                "div",
                &[
                    ("class", Some("rl-caption")),
                    ("data-lane", Some(lane)),
                    ("style", Some(&format!("grid-column: {} / -1", column + 1))),
                ],
            )
            .element("span", &[("class", Some("rl-caption-who"))], lane);
            // A psql table keeps its columns (and scrolls sideways, focusable for a keyboard);
            // a sentence wraps.
            if text.contains('\n') {
                let class = classes("rl-caption-lines", &[("table", compact::is_table(text))]);
                html.element("pre", &[("class", Some(&class)), ("tabindex", Some("0"))], text);
            } else {
                html.element("span", &[("class", Some("rl-caption-text"))], text);
            }
            html.close("div");
        }
        (_, Tone::Commit | Tone::Rollback) => {
            html.element(
                "span",
                &[
                    ("class", Some("rl-mark")),
                    ("data-tone", Some(tone)),
                    ("data-lane", Some(lane)),
                ],
                &line.text,
            );
        }
        _ => {
            html.open(
                "details",
                &[
                    ("class", Some("rl-line")),
                    ("data-tone", Some(tone)),
                    ("data-lane", Some(lane)),
                ],
            )
            .open("summary", &[("title", Some(&compact::one_line(&line.text)))])
            .element("code", &[("class", Some("rl-line-text"))], &line.text);
            if let Some(outcome) = &line.outcome {
                html.element("span", &[("class", Some("rl-line-outcome"))], outcome);
            }
            html.close("summary");
            card(html, lane, &row.card);
            html.close("details");
        }
    }
}

/// The crowd strip, when some callers that took a lease have no lane of their own: every
/// caller one small cell, the current holder lit.
fn crowd(html: &mut Html, timeline: &Timeline) {
    let unseen = timeline
        .crowd
        .iter()
        .any(|m| !timeline.lanes.iter().any(|l| l.name == m.name));
    if !unseen {
        return;
    }
    html.open(
        "div",
        &[("class", Some("rl-crowd")), ("aria-label", Some("Every caller"))],
    )
    .element(
        "p",
        &[("class", Some("rl-crowd-summary"))],
        &crowd_summary(&timeline.crowd),
    )
    .open("div", &[("class", Some("rl-crowd-cells"))]);
    for member in &timeline.crowd {
        let lost = if member.lost > 0 {
            format!(", lost it {} time(s)", member.lost)
        } else {
            String::new()
        };
        let class = classes(
            "rl-crowd-member",
            &[
                ("holds", member.holds),
                ("took", member.times_held > 0),
                ("lost", member.lost > 0),
            ],
        );
        html.element(
            "span",
            &[
                ("class", Some(&class)),
                ("data-name", Some(&member.name)),
                (
                    "title",
                    Some(&format!(
                        "{}: took the lock {} time(s){lost}",
                        member.name, member.times_held
                    )),
                ),
            ],
            "",
        );
    }
    html.close("div").close("div");
}

/// `50 callers; 12 took the lock; w07 holds it now`.
fn crowd_summary(crowd: &[CrowdMember]) -> String {
    let holding: Vec<&str> = crowd.iter().filter(|m| m.holds).map(|m| m.name.as_str()).collect();
    let took = crowd.iter().filter(|m| m.times_held > 0).count();
    let now = if holding.is_empty() {
        String::new()
    } else {
        format!("; {} holds it now", holding.join(", "))
    };
    format!("{} callers; {took} took the lock{now}", crowd.len())
}

/// The scale of the gaps, under a timeline that has any.
fn legend(html: &mut Html, timeline: &Timeline) {
    let gaps = timeline
        .rows
        .windows(2)
        .any(|pair| gap_before(pair.first(), &pair[1]).is_some());
    if gaps {
        html.element("p", &[("class", Some("rl-time-legend"))], &time_axis::legend());
    }
}

/// One card: a step with its parameters and result (or its error, with its code), a wait and
/// who it waits for, a release, a commit or rollback, a process starting, crashing or exiting,
/// a note.
fn card(html: &mut Html, lane: &str, card: &Card) {
    match card {
        Card::Statement { .. } => statement(html, lane, card),
        Card::Waiting { by } => {
            open_card(html, lane, "waiting", false)
                .text("waits for a lock held by ")
                .element("span", &[("class", Some("rl-waits-for"))], &by.join(", "))
                .close("div");
        }
        Card::Released {
            waited_ms,
            result,
            rows,
            error,
        } => {
            open_card(html, lane, "released", error.is_some()).element(
                "div",
                &[("class", Some("rl-released"))],
                &released_headline(*waited_ms, error.is_some()),
            );
            ending(html, result.as_deref(), rows.as_ref(), error.as_ref());
            html.close("div");
        }
        Card::Commit => line_card(html, lane, "commit", "COMMIT ✓"),
        Card::Rollback => line_card(html, lane, "rollback", "ROLLBACK"),
        Card::Process { pid, restart } => line_card(html, lane, "process", &process_text(*pid, *restart)),
        Card::Crash { point } => {
            open_card(html, lane, "crash", true)
                .element(
                    "span",
                    &[("class", Some("rl-sqlstate")), ("data-error-kind", Some("crash"))],
                    "SIGKILL",
                )
                .text(" ")
                .element(
                    "span",
                    &[("class", Some("rl-error-message"))],
                    &format!("killed at {point}: no cleanup ran"),
                )
                .close("div");
        }
        Card::Exited { code } => line_card(html, lane, "exited", &exited_text(*code)),
        Card::Note { line } if line.contains('\n') => {
            let class = classes("rl-note-lines", &[("table", compact::is_table(line))]);
            open_card(html, lane, "note", false)
                .element("pre", &[("class", Some(&class))], line)
                .close("div");
        }
        Card::Note { line } => line_card(html, lane, "note", line),
    }
}

/// `<div class="rl-card" data-lane data-kind>`, in red when it `failed`.
fn open_card<'h>(html: &'h mut Html, lane: &str, kind: &str, failed: bool) -> &'h mut Html {
    html.open(
        "div",
        &[
            ("class", Some(&classes("rl-card", &[("error", failed)]))),
            ("data-lane", Some(lane)),
            ("data-kind", Some(kind)),
        ],
    )
}

/// A card that is one line of text (a commit, a process starting, a note).
fn line_card(html: &mut Html, lane: &str, kind: &str, text: &str) {
    open_card(html, lane, kind, false).text(text).close("div");
}

/// A statement's card: the badge of its service, its text (with an arrow to the lane of the
/// run's server it goes to), its parameters, what it sent, how it ended, what came back.
fn statement(html: &mut Html, lane: &str, card: &Card) {
    let Card::Statement {
        service,
        text,
        params,
        sent,
        result,
        rows,
        received,
        error,
    } = card
    else {
        return;
    };
    let failed = error.is_some() || refused(received.as_deref());
    let to = request_to(sent.as_deref());
    let (service_id, service_label) = service_badge(*service);
    html.open(
        "div",
        &[
            ("class", Some(&classes("rl-card", &[("error", failed)]))),
            ("data-lane", Some(lane)),
            ("data-kind", Some("statement")),
            ("data-service", Some(service_id)),
        ],
    )
    .open("div", &[("class", Some("rl-step-head"))])
    .element(
        "span",
        &[("class", Some("rl-service-badge")), ("data-service", Some(service_id))],
        service_label,
    )
    .element("code", &[("class", Some("rl-sql"))], text);
    if let Some(to) = to {
        html.element(
            "span",
            &[("class", Some("rl-http-to")), ("data-to", Some(to))],
            &format!("→ {to}"),
        );
    }
    html.close("div");
    if !params.is_empty() {
        html.element("div", &[("class", Some("rl-params"))], &params_text(params));
    }
    if let Some(sent) = sent {
        detail(html, sent);
    }
    let result = answered(to, result.as_deref());
    ending(html, result.as_deref(), rows.as_ref(), error.as_ref());
    if let Some(received) = received {
        detail(html, received);
    }
    html.close("div");
}

/// The badge of a step's service: `SQL`, `Redis`, `HTTP`, `Kafka`.
fn service_badge(service: Service) -> (&'static str, &'static str) {
    match service {
        Service::Postgres => ("postgres", "SQL"),
        Service::Redis => ("redis", "Redis"),
        Service::Http => ("http", "HTTP"),
        Service::Kafka => ("kafka", "Kafka"),
        Service::Process => ("process", "process"),
        Service::Mariadb => ("mariadb", "SQL"),
    }
}

/// How a statement ended: its error (SQLSTATE badge and message), or its result and rows, or
/// "…" while it still runs.
fn ending(html: &mut Html, result: Option<&str>, rows: Option<&Rows>, error: Option<&Failure>) {
    match (error, result) {
        (Some(failure), _) => {
            html.open("div", &[("class", Some("rl-error-line"))])
                .element(
                    "span",
                    &[
                        ("class", Some("rl-sqlstate")),
                        ("data-error-kind", Some(failure.kind.label())),
                    ],
                    &failure.badge(),
                )
                .element("span", &[("class", Some("rl-error-message"))], &failure.message)
                .close("div");
        }
        (None, Some(result)) => {
            html.open("div", &[("class", Some("rl-result"))]).text(result);
            // It scrolls when the rows are wide or many: focusable, so a keyboard can.
            if let Some(rows) = rows.filter(|r| !r.rows.is_empty()) {
                html.element(
                    "pre",
                    &[("class", Some("rl-rows")), ("tabindex", Some("0"))],
                    &rows_text(rows),
                );
            }
            html.close("div");
        }
        (None, None) => {
            html.element("div", &[("class", Some("rl-result rl-result--pending"))], "…");
        }
    }
}

/// The structure of a request, response or message, under its card's headline.
fn detail(html: &mut Html, detail: &Detail) {
    html.open("div", &[("class", Some("rl-detail"))]);
    match detail {
        Detail::Request { headers, body, .. } | Detail::Response { headers, body, .. } => {
            headers_block(html, headers);
            if !body.trim().is_empty() {
                html.element("pre", &[("class", Some("rl-body"))], body.trim_end());
            }
        }
        Detail::Message {
            partition,
            offset,
            key,
            value,
            headers,
            ..
        } => {
            if let Some(key) = key {
                html.element("span", &[("class", Some("rl-message-key"))], &format!("key {key}"));
            }
            let place = match (partition, offset) {
                (Some(p), Some(o)) => format!("p{p}@{o}"),
                (Some(p), None) => format!("p{p}"),
                _ => String::new(),
            };
            if !place.is_empty() {
                html.element("span", &[("class", Some("rl-message-place"))], &place);
            }
            headers_block(html, headers);
            if let Some(value) = value {
                html.element("pre", &[("class", Some("rl-body"))], value);
            }
        }
    }
    html.close("div");
}

/// `Idempotency-Key: order-7731`, one per line.
fn headers_block(html: &mut Html, headers: &[(String, String)]) {
    if headers.is_empty() {
        return;
    }
    let text = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}"))
        .collect::<Vec<_>>()
        .join("\n");
    html.element("pre", &[("class", Some("rl-headers"))], &text);
}

/// The statement's `$1`, `$2`… with their values, for reading at a glance.
fn params_text(params: &[crate::Value]) -> String {
    params
        .iter()
        .enumerate()
        .map(|(i, p)| format!("${} = {}", i + 1, p.sql_literal()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether an HTTP answer is an error status: its card is shown as a failure, headers kept.
fn refused(received: Option<&Detail>) -> bool {
    matches!(received, Some(Detail::Response { status, .. }) if *status >= 400)
}

/// The lane a request goes to, when it goes to one of the run's own servers.
fn request_to(sent: Option<&Detail>) -> Option<&str> {
    match sent {
        Some(Detail::Request { to: Some(to), .. }) => Some(to),
        _ => None,
    }
}

/// A statement's result, said as coming back from the server it went `to` (`← shop: 201`).
fn answered(to: Option<&str>, result: Option<&str>) -> Option<String> {
    match (to, result) {
        (Some(to), Some(result)) => Some(format!("← {to}: {result}")),
        (_, result) => result.map(str::to_owned),
    }
}

/// How a wait for a lock ended, after how long.
fn released_headline(waited_ms: u64, failed: bool) -> String {
    if failed {
        format!("stopped waiting after {waited_ms} ms")
    } else {
        format!("got the lock after {waited_ms} ms")
    }
}

/// A child process starting: a restart is a new process (the old one was killed or exited).
fn process_text(pid: u32, restart: bool) -> String {
    if restart {
        format!("restarted: a new process, pid {pid}")
    } else {
        format!("process started, pid {pid}")
    }
}

/// A child process that exited by itself, with its status when it has one.
fn exited_text(code: Option<i32>) -> String {
    match code {
        Some(code) => format!("exited with status {code}"),
        None => "exited".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::ActorInfo;

    fn lane(name: &str) -> ActorInfo {
        ActorInfo {
            name: name.to_owned(),
            detail: "SERIALIZABLE".to_owned(),
        }
    }

    fn row(seq: u64, at_ms: u64, lane: usize, card: Card) -> Row {
        Row {
            seq,
            at_ms,
            lane,
            card,
            waiting: vec![],
            leases: vec![],
            expired: vec![],
            lease_changes: vec![],
            after_pause: false,
        }
    }

    fn two_lanes(rows: Vec<Row>) -> Timeline {
        Timeline {
            lanes: vec![lane("alice"), lane("bob")],
            rows,
            crowd: vec![],
        }
    }

    fn update(text: &str) -> Card {
        Card::Statement {
            service: Service::Postgres,
            text: text.to_owned(),
            params: vec![],
            sent: None,
            result: Some("UPDATE 1".to_owned()),
            rows: None,
            received: None,
            error: None,
        }
    }

    #[test]
    fn a_card_sits_in_its_actor_s_lane_and_a_wait_bar_in_the_waiting_one() {
        let mut waiting = row(2, 5, 0, Card::Commit);
        waiting.waiting = vec![1];
        let html = detailed(&two_lanes(vec![row(1, 0, 1, update("UPDATE budget")), waiting]));
        assert!(html.starts_with("<section class=\"rl-timeline\" style=\"--lanes: 2\" aria-label=\"Timeline\">"));
        assert!(html.contains(
            "<div class=\"rl-cell\" data-lane=\"bob\"><div class=\"rl-card\" data-lane=\"bob\" data-kind=\"statement\" \
             data-service=\"postgres\"><div class=\"rl-step-head\"><span class=\"rl-service-badge\" \
             data-service=\"postgres\">SQL</span><code class=\"rl-sql\">UPDATE budget</code></div>\
             <div class=\"rl-result\">UPDATE 1</div></div></div>"
        ));
        assert!(html.contains(
            "<div class=\"rl-cell\" data-lane=\"bob\"><div class=\"rl-wait-bar\" data-lane=\"bob\" \
             title=\"bob is waiting for a lock\"></div></div>"
        ));
        assert!(!html.contains("rl-time-legend"), "no gap, no legend: {html}");
    }

    #[test]
    fn a_gap_is_drawn_labelled_with_the_scale_under_the_lanes() {
        let html = compact(&two_lanes(vec![
            row(1, 0, 0, Card::Commit),
            row(2, 150, 1, Card::Rollback),
        ]));
        assert!(html.contains("title=\"150 ms\" style=\"--rl-gap: 30px\">"), "{html}");
        assert!(
            html.contains("<span class=\"rl-gap-label\" data-ms=\"150\">+150 ms</span>"),
            "{html}"
        );
        assert!(html.contains("<div class=\"rl-gap-fill\"></div>"));
        assert!(html.ends_with(&format!(
            "<p class=\"rl-time-legend\">{}</p>",
            crate::markup::escape(&time_axis::legend())
        )));
        assert!(html.contains("<span class=\"rl-mark\" data-tone=\"rollback\" data-lane=\"bob\">ROLLBACK</span>"));
    }

    #[test]
    fn a_compact_line_opens_to_its_card_and_a_note_is_a_caption_across_the_lanes() {
        let note = Card::Note {
            line: "bob: over budget".to_owned(),
        };
        let html = compact(&two_lanes(vec![
            row(1, 0, 0, update("UPDATE budget")),
            row(2, 0, 1, note),
        ]));
        assert!(html.contains(
            "<details class=\"rl-line\" data-tone=\"step\" data-lane=\"alice\"><summary title=\"UPDATE budget\">\
             <code class=\"rl-line-text\">UPDATE budget</code><span class=\"rl-line-outcome\">UPDATE 1</span></summary>\
             <div class=\"rl-card\" data-lane=\"alice\""
        ));
        assert!(html.contains(
            "<div class=\"rl-caption\" data-lane=\"bob\" style=\"grid-column: 2 / -1\"><span class=\"rl-caption-who\">bob</span>\
             <span class=\"rl-caption-text\">bob: over budget</span></div></div>"
        ));
    }

    #[test]
    fn every_text_an_actor_or_a_server_wrote_is_escaped() {
        let hostile = "<script>alert(1)</script>\"'";
        let failed = Card::Statement {
            service: Service::Http,
            text: hostile.to_owned(),
            params: vec![crate::Value::Text(hostile.to_owned())],
            sent: Some(Box::new(Detail::Request {
                method: "POST".to_owned(),
                path: "/".to_owned(),
                headers: vec![(hostile.to_owned(), hostile.to_owned())],
                body: hostile.to_owned(),
                to: Some(hostile.to_owned()),
            })),
            result: None,
            rows: None,
            received: None,
            error: Some(Failure {
                kind: crate::event::ErrorKind::Database,
                code: Some(hostile.to_owned()),
                message: hostile.to_owned(),
            }),
        };
        let mut timeline = Timeline {
            lanes: vec![ActorInfo {
                name: hostile.to_owned(),
                detail: hostile.to_owned(),
            }],
            rows: vec![
                row(1, 0, 0, failed),
                row(
                    2,
                    0,
                    0,
                    Card::Note {
                        line: format!("{hostile}\n{hostile}"),
                    },
                ),
            ],
            crowd: vec![],
        };
        timeline.crowd = vec![CrowdMember {
            name: hostile.to_owned(),
            holds: true,
            times_held: 1,
            lost: 1,
        }];
        for html in [detailed(&timeline), compact(&timeline)] {
            assert!(!html.contains("<script"), "{html}");
            assert!(!html.contains("\"'"), "{html}");
        }
    }

    #[test]
    fn the_crowd_strip_shows_only_when_a_caller_has_no_lane() {
        let member = |name: &str| CrowdMember {
            name: name.to_owned(),
            holds: name == "w07",
            times_held: 1,
            lost: 0,
        };
        let mut timeline = two_lanes(vec![]);
        timeline.crowd = vec![member("alice")];
        assert!(!detailed(&timeline).contains("rl-crowd"));
        timeline.crowd.push(member("w07"));
        assert!(detailed(&timeline).starts_with(
            "<div class=\"rl-crowd\" aria-label=\"Every caller\"><p class=\"rl-crowd-summary\">2 callers; 2 took the lock; \
             w07 holds it now</p>"
        ));
    }

    #[test]
    fn a_lease_label_names_its_fence_only_when_it_has_one() {
        let mut lease = LeaseMark {
            lane: 0,
            key: "lock:wallet:42".to_owned(),
            left_ms: 90,
            fresh: true,
            fence: None,
        };
        assert_eq!(lease_label(&lease), "holds lock:wallet:42 · 90 ms left");
        lease.fence = Some(7);
        assert_eq!(lease_label(&lease), "holds lock:wallet:42 · 90 ms left, fence 7");
    }

    #[test]
    fn a_lease_change_is_a_refresh_or_a_lease_found_lost() {
        assert_eq!(
            lease_change(LeaseChange::Refreshed, "k"),
            ("refreshed", "refreshed k".to_owned())
        );
        assert_eq!(
            lease_change(LeaseChange::Lost, "k"),
            ("lost", "k was no longer its own: refused".to_owned())
        );
    }

    #[test]
    fn a_request_to_a_run_s_server_is_answered_from_its_lane() {
        assert_eq!(answered(Some("shop"), Some("201")).as_deref(), Some("← shop: 201"));
        assert_eq!(answered(None, Some("1 row")).as_deref(), Some("1 row"));
        assert_eq!(answered(Some("shop"), None), None);
        assert!(refused(Some(&Detail::Response {
            status: 409,
            headers: vec![],
            body: String::new()
        })));
    }
}
