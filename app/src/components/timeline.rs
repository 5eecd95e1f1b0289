//! The timeline: one swimlane per actor, one row per thing that happened, cards in their actor's
//! lane, a bar through every row in which an actor waits for a lock, and a band through the lane
//! of whoever holds a lease (a Redis lock), with a mark where a lease ran out under its holder.
//!
//! The picture itself is computed by `shared::timeline` from the events; this file only draws it.

use super::step_card::StepCard;
use super::swimlane::SwimlaneHeads;
use leptos::prelude::*;
use shared::LeaseChange;
use shared::time_axis::{self, Gap};
use shared::timeline::{CrowdMember, LeaseMark, Row, Timeline};

/// Every caller that took a lease, one small cell each, the current holder lit: the lanes show a
/// few of fifty racing requests, the strip shows them all.
#[component]
fn CrowdStrip(crowd: Vec<CrowdMember>) -> impl IntoView {
    let holding = crowd
        .iter()
        .filter(|m| m.holds)
        .map(|m| m.name.clone())
        .collect::<Vec<_>>();
    let took = crowd.iter().filter(|m| m.times_held > 0).count();
    let summary = format!(
        "{} callers; {took} took the lock{}",
        crowd.len(),
        if holding.is_empty() {
            String::new()
        } else {
            format!("; {} holds it now", holding.join(", "))
        }
    );
    let cells = crowd
        .into_iter()
        .map(|m| {
            let title = format!(
                "{}: took the lock {} time(s){}",
                m.name,
                m.times_held,
                if m.lost > 0 {
                    format!(", lost it {} time(s)", m.lost)
                } else {
                    String::new()
                }
            );
            let (took, lost) = (m.times_held > 0, m.lost > 0);
            view! {
                <span
                    class="rl-crowd-member"
                    class:rl-crowd-member--holds=m.holds
                    class:rl-crowd-member--took=took
                    class:rl-crowd-member--lost=lost
                    data-name=m.name.clone()
                    title=title
                ></span>
            }
        })
        .collect_view();
    view! {
        <div class="rl-crowd" aria-label="Every caller">
            <p class="rl-crowd-summary">{summary}</p>
            <div class="rl-crowd-cells">{cells}</div>
        </div>
    }
}

/// The crowd strip, when some callers that took a lease have no lane of their own (both the
/// detailed and the compact timeline show it above their lanes).
#[component]
pub fn UnseenCrowd(timeline: Signal<Timeline>) -> impl IntoView {
    move || {
        timeline.with(|t| {
            let unseen = t.crowd.iter().any(|m| !t.lanes.iter().any(|l| l.name == m.name));
            unseen.then(|| view! { <CrowdStrip crowd=t.crowd.clone() /> })
        })
    }
}

#[component]
pub fn TimelineView(timeline: Signal<Timeline>) -> impl IntoView {
    let lanes = move || timeline.with(|t| t.lanes.len()).max(1);
    view! {
        <UnseenCrowd timeline=timeline />
        <section class="rl-timeline" style=move || format!("--lanes: {}", lanes()) aria-label="Timeline">
            <SwimlaneHeads lanes=Signal::derive(move || timeline.with(|t| t.lanes.clone())) />
            {move || {
                timeline.with(|t| {
                    let names: Vec<String> = t.lanes.iter().map(|l| l.name.clone()).collect();
                    t.rows
                        .iter()
                        .enumerate()
                        .map(|(i, row)| row_view(row, i.checked_sub(1).and_then(|i| t.rows.get(i)), &names))
                        .collect_view()
                })
            }}
        </section>
        <TimeLegend timeline=timeline />
    }
}

/// One row: the gap since the row `before` it, if time passed, and a cell per lane.
fn row_view(row: &Row, before: Option<&Row>, names: &[String]) -> impl IntoView + use<> {
    let gap = gap_before(before, row);
    let cells = names
        .iter()
        .enumerate()
        .map(|(lane, name)| {
            let fill = gap.map(|_| gap_fill(before, lane));
            let holds = row.leases.iter().any(|l| l.lane == lane);
            // Six children of one cell, not nested tuples: the embed's budget counts each
            // shape of view the compiler has to write out.
            let (expired, changes, label) = lease_marks(row, lane);
            let (card, bar) = lane_card(row, lane, name);
            view! {
                <div class="rl-cell" class:rl-cell--lease=holds data-lane=name.clone()>
                    {fill}{expired}{changes}{label}{card}{bar}
                </div>
            }
        })
        .collect_view();
    view! {
        <div class="rl-row" data-seq=row.seq.to_string() data-at-ms=row.at_ms.to_string()
            title=format!("{} ms", row.at_ms) style=gap.map(gap_style)>
            {gap.map(gap_label)}
            {cells}
        </div>
    }
}

/// The leases of `lane` at this row: those that ran out under it, what its actor did to its own,
/// and on the first row of a holding, the lease's label.
fn lease_marks(row: &Row, lane: usize) -> (impl IntoView + use<>, impl IntoView + use<>, impl IntoView + use<>) {
    let expired = row
        .expired
        .iter()
        .filter(|l| l.lane == lane)
        .map(|l| {
            view! {
                <div class="rl-lease-expired" data-key=l.key.clone()>
                    {format!("lease on {} expired", l.key)}
                </div>
            }
        })
        .collect_view();
    let changes = row
        .lease_changes
        .iter()
        .filter(|(l, _, _)| *l == lane)
        .map(|(_, change, key)| {
            let (kind, text) = lease_change(*change, key);
            view! { <div class="rl-lease-change" data-change=kind>{text}</div> }
        })
        .collect_view();
    let lease = row.leases.iter().find(|l| l.lane == lane).filter(|l| l.fresh);
    let label = lease.map(|l| {
        view! { <div class="rl-lease-label" data-key=l.key.clone()>{lease_label(l)}</div> }
    });
    (expired, changes, label)
}

/// The row's card, when the row is `lane`'s, and a wait bar when `lane` waits at this row.
fn lane_card(row: &Row, lane: usize, name: &str) -> (impl IntoView + use<>, impl IntoView + use<>) {
    let card = (lane == row.lane).then(|| view! { <StepCard lane=name.to_owned() card=row.card.clone() /> });
    let bar = row.waiting.contains(&lane).then(|| {
        view! {
            <div class="rl-wait-bar" data-lane=name.to_owned() title=format!("{name} is waiting for a lock")></div>
        }
    });
    (card, bar)
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

/// The gap drawn above `row` for the time since the row `before` it (see `shared::time_axis`).
pub fn gap_before(before: Option<&Row>, row: &Row) -> Option<Gap> {
    time_axis::gap(before?.at_ms, row.at_ms, row.after_pause)
}

/// A gap's height, for the row's style.
pub fn gap_style(gap: Gap) -> String {
    format!("--rl-gap: {}px", gap.px)
}

/// The time a gap stands for, at its start.
pub fn gap_label(gap: Gap) -> impl IntoView {
    let cut = !gap.to_scale || gap.paused;
    view! { <span class="rl-gap-label" data-ms=gap.ms.to_string() class:rl-gap-label--cut=cut>{gap.label()}</span> }
}

/// The gap's part of one lane: empty, or a wait bar when the lane was waiting all along.
pub fn gap_fill(before: Option<&Row>, lane: usize) -> impl IntoView + use<> {
    let waiting = before.is_some_and(|b| b.waiting.contains(&lane));
    view! { <div class="rl-gap-fill" class:rl-gap-fill--waiting=waiting></div> }
}

/// The scale of the gaps, under a timeline that has any.
#[component]
pub fn TimeLegend(timeline: Signal<Timeline>) -> impl IntoView {
    move || {
        timeline.with(|t| {
            let gaps = t
                .rows
                .windows(2)
                .any(|pair| gap_before(pair.first(), &pair[1]).is_some());
            gaps.then(|| view! { <p class="rl-time-legend">{time_axis::legend()}</p> })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
