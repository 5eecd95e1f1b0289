//! The compact timeline: the embed's default, and a toggle on the full page. The same lanes and
//! rows as the detailed timeline (`shared::timeline`), each card in one line (`shared::compact`):
//! the statement in monospace with its result beside it, a wait as a bar through the waiting
//! lane, errors and commits as marks; a line opens to the full card (the whole SQL, parameters,
//! rows, headers). What an actor says (the transcript's lines) runs across the lanes as captions.

use super::step_card::StepCard;
use super::swimlane::SwimlaneHeads;
use super::timeline::{TimeLegend, UnseenCrowd, gap_before, gap_fill, gap_label, gap_style};
use leptos::prelude::*;
use shared::compact::{self, Tone};
use shared::timeline::{Card, Row, Timeline};

/// One row's line in its lane (number `column`): a caption from that lane across the others for
/// a note, a mark for a commit or rollback, else a line that opens to its card.
fn line_view(lane: &str, row: &Row, column: usize) -> AnyView {
    let line = compact::line(&row.card);
    let tone = line.tone.class();
    match (&row.card, line.tone) {
        (Card::Note { line: text }, _) => {
            // A psql table keeps its columns; a sentence wraps.
            let body = if text.contains('\n') {
                // A table scrolls sideways in a narrow timeline: focusable, so a keyboard can.
                view! { <pre class="rl-caption-lines" class:rl-caption-lines--table=compact::is_table(text) tabindex="0">{text.clone()}</pre> }.into_any()
            } else {
                view! { <span class="rl-caption-text">{text.clone()}</span> }.into_any()
            };
            view! {
                <p class="rl-caption" data-lane=lane.to_owned() style=format!("grid-column: {} / -1", column + 1)>
                    <span class="rl-caption-who">{lane.to_owned()}</span>
                    {body}
                </p>
            }
            .into_any()
        }
        (_, Tone::Commit | Tone::Rollback) => view! {
            <span class="rl-mark" data-tone=tone data-lane=lane.to_owned()>{line.text}</span>
        }
        .into_any(),
        _ => {
            let outcome = line.outcome.map(|o| view! { <span class="rl-line-outcome">{o}</span> });
            let full = compact::one_line(&line.text);
            view! {
                <details class="rl-line" data-tone=tone data-lane=lane.to_owned()>
                    <summary title=full>
                        <code class="rl-line-text">{line.text}</code>
                        {outcome}
                    </summary>
                    <StepCard lane=lane.to_owned() card=row.card.clone() />
                </details>
            }
            .into_any()
        }
    }
}

#[component]
pub fn CompactTimeline(timeline: Signal<Timeline>) -> impl IntoView {
    let lanes = move || timeline.with(|t| t.lanes.len()).max(1);
    view! {
        <UnseenCrowd timeline=timeline />
        <section class="rl-compact" style=move || format!("--lanes: {}", lanes()) aria-label="Timeline">
            <SwimlaneHeads lanes=Signal::derive(move || timeline.with(|t| t.lanes.clone())) />
            {move || {
                timeline.with(|t| {
                    let names: Vec<String> = t.lanes.iter().map(|l| l.name.clone()).collect();
                    t.rows
                        .iter()
                        .enumerate()
                        .map(|(i, row)| {
                            let before = i.checked_sub(1).and_then(|i| t.rows.get(i));
                            let gap = gap_before(before, row);
                            let name = names.get(row.lane).cloned().unwrap_or_default();
                            let caption = matches!(row.card, Card::Note { .. });
                            let cells = names
                                .iter()
                                .enumerate()
                                .map(|(lane, lane_name)| {
                                    let waiting = row.waiting.contains(&lane);
                                    let leased = row.leases.iter().any(|l| l.lane == lane);
                                    let expired = row.expired.iter().any(|l| l.lane == lane);
                                    let line = (lane == row.lane && !caption).then(|| line_view(lane_name, row, lane));
                                    let fill = gap.map(|_| gap_fill(before, lane));
                                    view! {
                                        <div
                                            class="rl-compact-cell"
                                            class:rl-compact-cell--waiting=waiting
                                            class:rl-compact-cell--lease=leased
                                            class:rl-compact-cell--expired=expired
                                            data-lane=lane_name.clone()
                                        >
                                            {fill}
                                            {line}
                                        </div>
                                    }
                                })
                                .collect_view();
                            let caption = caption.then(|| line_view(&name, row, row.lane));
                            view! {
                                <div class="rl-compact-row" data-seq=row.seq.to_string() data-at-ms=row.at_ms.to_string()
                                    title=format!("{} ms", row.at_ms) style=gap.map(gap_style)>
                                    {gap.map(gap_label)}
                                    {cells}
                                    {caption}
                                </div>
                            }
                        })
                        .collect_view()
                })
            }}
        </section>
        <TimeLegend timeline=timeline />
    }
}
