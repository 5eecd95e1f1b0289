//! "Why it happened" as the page draws it: the proof's headline and lines, and the steps its
//! edges join, in their lanes, with an arrow per edge ([`super::picture`]'s layout). The three
//! kinds of edge differ in their line (ww solid, wr dashed, rw dotted) and carry their name, not
//! colour alone; the cycle's edges are drawn heavier.
//!
//! Written as HTML text (inline SVG for the drawing), every text escaped: a proof is drawn once
//! and never changes, and as Leptos views the same elements cost the player bundle several KB
//! more (docs/embedding.md, "The player bundle").

use super::picture::{self, Arrow, Picture, StepBox};
use super::{Dep, Proof};
use crate::markup::Html;

/// The inside of the proof's section, its arrowheads' marker named `marker` (unique on the page:
/// a comparison shows two proofs), for a run with these `lanes` and `steps` (`(lane, SQL)` in
/// the order they started, which the proof's step numbers index).
pub fn panel(proof: &Proof, lanes: &[String], steps: &[(String, String)], marker: &str) -> String {
    let mut html = Html::default();
    html.element("h3", &[], "Why it happened")
        .element("p", &[("class", Some("rl-proof-headline"))], &headline(proof))
        .open("ol", &[("class", Some("rl-proof-lines"))]);
    for line in &proof.lines {
        html.element("li", &[], line);
    }
    html.close("ol");
    let drawing = picture::draw(proof, lanes, steps);
    if !drawing.arrows.is_empty() {
        graph(&mut html, &drawing, marker);
    }
    html.into_string()
}

/// What the proof found, in one line: the anomaly, the one PostgreSQL prevented, or none.
pub fn headline(proof: &Proof) -> String {
    match (proof.anomaly, &proof.prevented) {
        (Some(a), _) => format!(
            "{} ({}): no order of one-at-a-time runs explains it",
            a.name(),
            a.class()
        ),
        (None, Some(p)) => format!(
            "Prevented: a {} ({}) would have closed here",
            p.anomaly.name(),
            p.anomaly.class()
        ),
        (None, None) => "No cycle: one order of one-at-a-time runs explains it".to_owned(),
    }
}

/// The section's `data-kind`: `cycle`, `prevented` or `serial`.
pub fn kind(proof: &Proof) -> &'static str {
    match (proof.anomaly, &proof.prevented) {
        (Some(_), _) => "cycle",
        (None, Some(_)) => "prevented",
        (None, None) => "serial",
    }
}

/// An edge's line: ww solid, wr dashed, rw dotted.
fn dash(dep: Dep) -> &'static str {
    match dep {
        Dep::Ww => "none",
        Dep::Wr => "7 4",
        Dep::Rw => "2 4",
    }
}

/// The drawing: lane names and guides, a box per step an edge joins, an arrow per edge, and the
/// legend that says what the lines mean.
fn graph(html: &mut Html, picture: &Picture, marker: &str) {
    html.open("figure", &[("class", Some("rl-proof-figure"))]).open(
        "svg",
        &[
            ("class", Some("rl-proof-graph")),
            ("viewBox", Some(&format!("0 0 {} {}", picture.width, picture.height))),
            ("width", Some(&picture.width.to_string())),
            ("role", Some("img")),
            ("aria-label", Some("The proof's edges between the steps of each lane")),
        ],
    );
    arrowhead(html, marker);
    lanes(html, picture);
    for b in &picture.boxes {
        step_box(html, b);
    }
    let url = format!("url(#{marker})");
    for a in &picture.arrows {
        arrow(html, a, &url);
    }
    html.close("svg").element(
        "figcaption",
        &[("class", Some("rl-proof-legend"))],
        "Arrows point from what must come first: ww (solid) a write over another's write, \
         wr (dashed) a read of another's write, rw (dotted) a read that another's write replaced \
         or that missed it. Heavier: the cycle. Faint: a transaction that never committed.",
    );
    html.close("figure");
}

/// The arrowhead every edge ends in, named `marker` (the proof's picture, and the arrows the
/// app draws over the timeline).
pub fn arrowhead(html: &mut Html, marker: &str) {
    html.open("defs", &[])
        .open(
            "marker",
            &[
                ("id", Some(marker)),
                ("markerUnits", Some("userSpaceOnUse")),
                ("markerWidth", Some("10")),
                ("markerHeight", Some("10")),
                ("refX", Some("9")),
                ("refY", Some("5")),
                ("orient", Some("auto")),
            ],
        )
        .element("path", &[("d", Some("M0,0 L10,5 L0,10 z"))], "")
        .close("marker")
        .close("defs");
}

/// Each lane's name at its top, and its guide down the drawing.
fn lanes(html: &mut Html, picture: &Picture) {
    for (name, x) in &picture.lanes {
        let x = x.to_string();
        html.element(
            "text",
            &[
                ("class", Some("rl-proof-lane")),
                ("x", Some(&x)),
                ("y", Some("16")),
                ("text-anchor", Some("middle")),
            ],
            name,
        );
    }
    let bottom = picture.height.to_string();
    for (_, x) in &picture.lanes {
        let x = x.to_string();
        let guide = [
            ("class", Some("rl-proof-guide")),
            ("x1", Some(&*x)),
            ("y1", Some("22")),
            ("x2", Some(&*x)),
            ("y2", Some(&*bottom)),
        ];
        html.element("line", &guide, "");
    }
}

/// A step an edge joins: a box in its lane, with its SQL.
fn step_box(html: &mut Html, b: &StepBox) {
    let number = |n: u32| n.to_string();
    html.open(
        "g",
        &[
            ("class", Some("rl-proof-step")),
            ("data-step", Some(&b.step.to_string())),
        ],
    )
    .element(
        "rect",
        &[
            ("x", Some(&number(b.x))),
            ("y", Some(&number(b.y))),
            ("width", Some(&number(b.width))),
            ("height", Some(&number(b.height))),
            ("rx", Some("4")),
        ],
        "",
    )
    .element(
        "text",
        &[("x", Some(&number(b.x + 6))), ("y", Some(&number(b.y + 17)))],
        &b.label,
    )
    .close("g");
}

/// One edge: its line, ending in the arrowhead `url`, and its name.
fn arrow(html: &mut Html, a: &Arrow, url: &str) {
    let number = |n: u32| n.to_string();
    let label = a.dep.drawn_name(a.predicate);
    html.open(
        "g",
        &[
            ("class", Some("rl-proof-edge")),
            ("data-dep", Some(a.dep.label())),
            ("data-cycle", Some(if a.in_cycle { "true" } else { "false" })),
            ("data-would-have", Some(if a.would_have { "true" } else { "false" })),
        ],
    )
    .element(
        "line",
        &[
            ("x1", Some(&number(a.x1))),
            ("y1", Some(&number(a.y1))),
            ("x2", Some(&number(a.x2))),
            ("y2", Some(&number(a.y2))),
            ("stroke-dasharray", Some(dash(a.dep))),
            ("marker-end", Some(url)),
        ],
        "",
    )
    .element(
        "text",
        &[
            ("x", Some(&number(a.label_x))),
            ("y", Some(&number(a.label_y.saturating_sub(5)))),
            ("text-anchor", Some(a.label_anchor)),
        ],
        &label,
    )
    .close("g");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::{Edge, Row};

    /// A write skew's two crossing rw edges, the first on a predicate, over alice's and bob's
    /// steps; bob's second step's SQL is hostile.
    fn write_skew() -> (Proof, Vec<String>, Vec<(String, String)>) {
        let edge = |from_step: u64, to_step: u64, predicate: bool| Edge {
            from: 0,
            to: 1,
            dep: Dep::Rw,
            row: Row::new("expenses", "1"),
            predicate,
            from_step: Some(from_step),
            to_step: Some(to_step),
            because: String::new(),
        };
        let proof = Proof {
            edges: vec![edge(0, 3, true), edge(1, 2, false)],
            would_have: 2,
            cycle: vec![0, 1],
            lines: vec!["alice's check missed bob's <insert>".to_owned()],
            ..Proof::default()
        };
        let lanes = vec!["alice".to_owned(), "bob".to_owned()];
        let steps = [
            ("alice", "SELECT sum"),
            ("bob", "SELECT sum"),
            ("alice", "INSERT"),
            ("bob", "<script>x</script>"),
        ]
        .map(|(lane, sql)| (lane.to_owned(), sql.to_owned()))
        .to_vec();
        (proof, lanes, steps)
    }

    #[test]
    fn the_panel_draws_a_box_per_step_and_an_arrow_per_edge_each_named() {
        let (proof, lanes, steps) = write_skew();
        let html = panel(&proof, &lanes, &steps, "rl-proof-arrow-7");
        assert!(
            html.starts_with("<h3>Why it happened</h3><p class=\"rl-proof-headline\">No cycle"),
            "{html}"
        );
        assert_eq!(html.matches("<g class=\"rl-proof-step\"").count(), 4, "{html}");
        assert_eq!(
            html.matches("<g class=\"rl-proof-edge\" data-dep=\"rw\" data-cycle=\"true\"")
                .count(),
            2,
            "{html}"
        );
        assert_eq!(
            html.matches("marker-end=\"url(#rl-proof-arrow-7)\"").count(),
            2,
            "{html}"
        );
        assert!(html.contains("<marker id=\"rl-proof-arrow-7\""), "{html}");
        assert!(html.contains(">rw (predicate)</text>"), "{html}");
        assert!(html.contains("stroke-dasharray=\"2 4\""), "{html}");
        assert!(html.ends_with("never committed.</figcaption></figure>"), "{html}");
    }

    #[test]
    fn every_text_of_a_proof_is_escaped() {
        let (proof, lanes, steps) = write_skew();
        let html = panel(&proof, &lanes, &steps, "m");
        assert!(!html.contains("<script>") && !html.contains("<insert>"), "{html}");
        assert!(html.contains("&lt;insert&gt;"), "{html}");
    }

    #[test]
    fn a_proof_without_edges_has_words_and_no_drawing() {
        let proof = Proof {
            lines: vec!["one order explains it".to_owned()],
            ..Proof::default()
        };
        let html = panel(&proof, &[], &[], "m");
        assert_eq!(
            html,
            "<h3>Why it happened</h3><p class=\"rl-proof-headline\">No cycle: one order of one-at-a-time runs explains it</p><ol class=\"rl-proof-lines\"><li>one order explains it</li></ol>"
        );
        assert_eq!(kind(&proof), "serial");
    }
}
