//! The proof's edges drawn on the detailed timeline: an arrow from the card of the step that
//! must come first to the card of the step after it, across lanes. The cards are where the page
//! laid them out, so the arrows are measured from the page, not computed; the drawing is SVG
//! written as text. ww solid, wr dashed, rw dotted, each named; the cycle's heavier. No Leptos
//! here: the full app's component (`components::proof_arrows`) and the player both draw with it.

use shared::EventKind;
use shared::event::Event;
use shared::float::one_decimal;
use shared::markup::Html;
use shared::proof::{Dep, Proof};
use wasm_bindgen::JsCast;

/// One edge, by the sequence numbers of its steps' events (their timeline rows).
#[derive(Clone, Debug, PartialEq)]
pub struct SeqEdge {
    pub from: u64,
    pub to: u64,
    pub dep: Dep,
    pub predicate: bool,
    pub in_cycle: bool,
    pub would_have: bool,
}

/// The proof's edges between steps played among `shown` (the moment drawn), by their rows.
pub fn edges(proof: &Proof, shown: &[Event]) -> Vec<SeqEdge> {
    let seqs: Vec<u64> = shown
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Step { .. }))
        .map(|e| e.seq)
        .collect();
    let seq_of = |step: Option<u64>| step.and_then(|s| seqs.get(usize::try_from(s).ok()?).copied());
    let cycle = proof.drawn_cycle();
    proof
        .edges
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            Some(SeqEdge {
                from: seq_of(e.from_step)?,
                to: seq_of(e.to_step)?,
                dep: e.dep,
                predicate: e.predicate,
                in_cycle: cycle.contains(&i),
                would_have: i >= proof.would_have,
            })
        })
        .collect()
}

/// An arrow measured on the page.
#[derive(Clone, Debug, PartialEq)]
struct Drawn {
    edge: SeqEdge,
    x1: f64,
    y1: f64,
    x2: f64,
    y2: f64,
}

/// Where the card of the row with `seq` is, relative to `wrap`'s top left.
fn card_box(wrap: &web_sys::Element, seq: u64) -> Option<(f64, f64, f64, f64)> {
    let card = wrap
        .query_selector(&format!(".rl-row[data-seq=\"{seq}\"] .rl-card"))
        .ok()
        .flatten()?;
    let origin = wrap.get_bounding_client_rect();
    let r = card.get_bounding_client_rect();
    Some((r.left() - origin.left(), r.top() - origin.top(), r.width(), r.height()))
}

/// The arrows of `edges` over the timeline in `wrap`, measured now and written as SVG (as big
/// as the wrap): nothing when none of their cards are on the page.
pub fn over(wrap: &web_sys::Element, edges: &[SeqEdge]) -> String {
    let drawn = measure(wrap, edges);
    let (width, height) = wrap.dyn_ref::<web_sys::HtmlElement>().map_or((0.0, 0.0), |w| {
        (f64::from(w.offset_width()), f64::from(w.offset_height()))
    });
    svg(&drawn, width, height)
}

/// Each edge whose two cards are on the page, as an arrow between them.
fn measure(wrap: &web_sys::Element, edges: &[SeqEdge]) -> Vec<Drawn> {
    edges
        .iter()
        .filter_map(|edge| {
            let (ax, ay, aw, ah) = card_box(wrap, edge.from)?;
            let (bx, by, bw, bh) = card_box(wrap, edge.to)?;
            // From the edge of the first card that faces the second in time (its bottom when
            // the second comes later), near the side that faces the other lane, to the facing
            // edge of the second: the arrow crosses between the lanes, clear of both cards' text.
            let rightwards = ax + aw / 2.0 <= bx + bw / 2.0;
            let (fx, tx) = if rightwards { (0.85, 0.15) } else { (0.15, 0.85) };
            let (y1, y2) = if by >= ay { (ay + ah, by) } else { (ay, by + bh) };
            Some(Drawn {
                edge: edge.clone(),
                x1: ax + aw * fx,
                y1,
                x2: bx + bw * tx,
                y2,
            })
        })
        .collect()
}

fn dash(dep: Dep) -> &'static str {
    match dep {
        Dep::Ww => "none",
        Dep::Wr => "8 5",
        Dep::Rw => "2 5",
    }
}

/// The arrows over a timeline `width` × `height`: nothing when there are none.
fn svg(drawn: &[Drawn], width: f64, height: f64) -> String {
    if drawn.is_empty() {
        return String::new();
    }
    let mut html = Html::default();
    html.open(
        "svg",
        &[
            ("class", Some("rl-proof-arrows")),
            ("width", Some(&one_decimal(width))),
            ("height", Some(&one_decimal(height))),
            ("aria-hidden", Some("true")),
        ],
    );
    shared::proof::html::arrowhead(&mut html, "rl-proof-arrowhead");
    for d in drawn {
        let (lx, ly) = ((4.0 * d.x1 + d.x2) / 5.0, (4.0 * d.y1 + d.y2) / 5.0 - 6.0);
        html.open(
            "g",
            &[
                ("class", Some("rl-proof-edge")),
                ("data-dep", Some(d.edge.dep.label())),
                ("data-cycle", Some(&d.edge.in_cycle.to_string())),
                ("data-would-have", Some(&d.edge.would_have.to_string())),
                ("data-from", Some(&d.edge.from.to_string())),
                ("data-to", Some(&d.edge.to.to_string())),
            ],
        )
        .element(
            "line",
            &[
                ("x1", Some(&one_decimal(d.x1))),
                ("y1", Some(&one_decimal(d.y1))),
                ("x2", Some(&one_decimal(d.x2))),
                ("y2", Some(&one_decimal(d.y2))),
                ("stroke-dasharray", Some(dash(d.edge.dep))),
                ("marker-end", Some("url(#rl-proof-arrowhead)")),
            ],
            "",
        )
        // Away from the card the arrow leaves, as the proof's own picture does.
        .element(
            "text",
            &[
                ("x", Some(&one_decimal(lx))),
                ("y", Some(&one_decimal(ly))),
                ("text-anchor", Some(shared::proof::picture::label_anchor(d.x1, d.x2))),
            ],
            &d.edge.dep.drawn_name(d.edge.predicate),
        )
        .close("g");
    }
    html.close("svg");
    html.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arrow_is_named_dashed_by_its_kind_and_marked_when_in_the_cycle() {
        let drawn = Drawn {
            edge: SeqEdge {
                from: 3,
                to: 7,
                dep: Dep::Rw,
                predicate: false,
                in_cycle: true,
                would_have: false,
            },
            x1: 10.0,
            y1: 20.0,
            x2: 110.0,
            y2: 70.0,
        };
        let svg = svg(&[drawn], 300.0, 200.5);
        assert!(
            svg.starts_with("<svg class=\"rl-proof-arrows\" width=\"300.0\" height=\"200.5\" aria-hidden=\"true\">")
        );
        assert!(svg.contains(
            "<g class=\"rl-proof-edge\" data-dep=\"rw\" data-cycle=\"true\" data-would-have=\"false\" data-from=\"3\" data-to=\"7\">\
             <line x1=\"10.0\" y1=\"20.0\" x2=\"110.0\" y2=\"70.0\" stroke-dasharray=\"2 5\" marker-end=\"url(#rl-proof-arrowhead)\"></line>\
             <text x=\"30.0\" y=\"24.0\" text-anchor=\"start\">rw</text></g>"
        ), "{svg}");
        assert_eq!(super::svg(&[], 1.0, 1.0), "");
    }
}
