//! The proof drawn: the steps its edges join, each in its session's lane and in the order they
//! ran, and an arrow per edge from the step that comes first in the serial order it implies to
//! the one after. Geometry only; the page turns it into SVG.

use super::{Dep, Proof};

/// Column width and row height, in SVG units.
pub const LANE_WIDTH: u32 = 250;
pub const ROW_HEIGHT: u32 = 54;
const BOX_WIDTH: u32 = 190;
const BOX_HEIGHT: u32 = 26;
const TOP: u32 = 30;

/// A step drawn as a box in its lane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepBox {
    pub step: u64,
    pub lane: usize,
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
    /// The step's SQL, shortened to fit.
    pub label: String,
}

/// An edge drawn as an arrow between two boxes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrow {
    pub edge: usize,
    pub dep: Dep,
    pub predicate: bool,
    pub x1: u32,
    pub y1: u32,
    pub x2: u32,
    pub y2: u32,
    /// On the cycle (the committed one, or the one a cancelled transaction would have closed).
    pub in_cycle: bool,
    /// Involves a transaction that never committed.
    pub would_have: bool,
    /// Where its name goes: a fifth of the way along, near the step it starts from, so two
    /// arrows that cross keep theirs apart.
    pub label_x: u32,
    pub label_y: u32,
    /// Which end of its name sits there (SVG's `text-anchor`): the name runs away from the box
    /// the arrow leaves, out over the gap between the lanes, never over that box.
    pub label_anchor: &'static str,
}

/// The `text-anchor` of an arrow's name, for an arrow from `x1` to `x2`: one going left ends
/// its name at the label's point, one going right (or straight down) starts it there.
pub fn label_anchor<X: PartialOrd>(x1: X, x2: X) -> &'static str {
    if x2 < x1 { "end" } else { "start" }
}

/// The whole picture.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Picture {
    pub width: u32,
    pub height: u32,
    /// Lane names and their centre x.
    pub lanes: Vec<(String, u32)>,
    pub boxes: Vec<StepBox>,
    pub arrows: Vec<Arrow>,
}

/// Lays out `proof` over `lanes` (the run's swimlanes, in the timeline's order); `steps` are the
/// run's steps in the order they started (`(lane name, SQL)`), which the edges' step numbers
/// index. Edges whose steps are unknown are left out.
pub fn draw(proof: &Proof, lanes: &[String], steps: &[(String, String)]) -> Picture {
    let mut involved: Vec<u64> = proof
        .edges
        .iter()
        .flat_map(|e| [e.from_step, e.to_step])
        .flatten()
        .filter(|&s| usize::try_from(s).is_ok_and(|s| s < steps.len()))
        .collect();
    involved.sort_unstable();
    involved.dedup();
    let lane_of = |step: u64| -> Option<usize> {
        let (name, _) = steps.get(usize::try_from(step).ok()?)?;
        lanes.iter().position(|l| l == name)
    };
    let centre = |lane: usize| u32::try_from(lane).unwrap_or(0) * LANE_WIDTH + LANE_WIDTH / 2;
    let mut boxes = Vec::new();
    for (row, &step) in involved.iter().enumerate() {
        let Some(lane) = lane_of(step) else { continue };
        let sql = steps[usize::try_from(step).unwrap_or(0)]
            .1
            .trim()
            .replace(['\n', '\t'], " ");
        boxes.push(StepBox {
            step,
            lane,
            x: centre(lane) - BOX_WIDTH / 2,
            y: TOP + u32::try_from(row).unwrap_or(0) * ROW_HEIGHT,
            width: BOX_WIDTH,
            height: BOX_HEIGHT,
            label: shorten(&sql, 28),
        });
    }
    let cycle = proof.drawn_cycle();
    let mut arrows = Vec::new();
    for (i, edge) in proof.edges.iter().enumerate() {
        let find = |step: Option<u64>| boxes.iter().find(|b| Some(b.step) == step);
        let (Some(from), Some(to)) = (find(edge.from_step), find(edge.to_step)) else {
            continue;
        };
        // From the side of the box that faces the other one.
        let (x1, x2) = match from.x.cmp(&to.x) {
            std::cmp::Ordering::Less => (from.x + from.width, to.x),
            std::cmp::Ordering::Greater => (from.x, to.x + to.width),
            std::cmp::Ordering::Equal => (from.x + from.width, to.x + to.width),
        };
        let (y1, y2) = (from.y + from.height / 2, to.y + to.height / 2);
        arrows.push(Arrow {
            edge: i,
            dep: edge.dep,
            predicate: edge.predicate,
            x1,
            y1,
            x2,
            y2,
            in_cycle: cycle.contains(&i),
            would_have: i >= proof.would_have,
            label_x: (4 * x1 + x2) / 5,
            label_y: (4 * y1 + y2) / 5,
            label_anchor: label_anchor(x1, x2),
        });
    }
    let rows = u32::try_from(involved.len()).unwrap_or(0);
    Picture {
        width: u32::try_from(lanes.len()).unwrap_or(0).max(1) * LANE_WIDTH,
        height: TOP + rows * ROW_HEIGHT + 10,
        lanes: lanes.iter().enumerate().map(|(i, l)| (l.clone(), centre(i))).collect(),
        boxes,
        arrows,
    }
}

/// `text` cut to `chars` characters, with an ellipsis where it was cut.
fn shorten(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_owned();
    }
    let cut: String = text.chars().take(chars.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::{Edge, Row};

    fn edge(from_step: u64, to_step: u64, dep: Dep) -> Edge {
        Edge {
            from: 0,
            to: 1,
            dep,
            row: Row::new("test", "1"),
            predicate: false,
            from_step: Some(from_step),
            to_step: Some(to_step),
            because: String::new(),
        }
    }

    /// Two rw edges that cross, alice's first step to bob's last and bob's first to alice's
    /// last: a write skew's cycle.
    fn crossing() -> Proof {
        Proof {
            edges: vec![edge(0, 3, Dep::Rw), edge(1, 2, Dep::Rw)],
            would_have: 2,
            cycle: vec![0, 1],
            ..Proof::default()
        }
    }

    /// The longest name an arrow has, `rw (predicate)`, at about 8 units a character, is drawn
    /// clear of the box its arrow leaves, going left or right.
    #[test]
    fn an_arrows_name_runs_away_from_the_box_it_leaves() {
        let proof = crossing();
        let lanes = ["alice".to_owned(), "bob".to_owned()];
        let steps: Vec<(String, String)> = ["alice", "bob", "alice", "bob"]
            .iter()
            .map(|l| ((*l).to_owned(), "SELECT 1".to_owned()))
            .collect();
        let picture = draw(&proof, &lanes, &steps);
        let name = 8 * u32::try_from("rw (predicate)".len()).unwrap_or(0);
        for arrow in &picture.arrows {
            let from = proof.edges[arrow.edge].from_step;
            let from = picture.boxes.iter().find(|b| Some(b.step) == from).expect("its box");
            let (left, right) = match arrow.label_anchor {
                "end" => (arrow.label_x.saturating_sub(name), arrow.label_x),
                _ => (arrow.label_x, arrow.label_x + name),
            };
            assert!(
                right <= from.x || left >= from.x + from.width,
                "{arrow:?}'s name spans {left}..{right}, over its box {}..{}",
                from.x,
                from.x + from.width
            );
        }
        assert_eq!(
            picture.arrows.iter().map(|a| a.label_anchor).collect::<Vec<_>>(),
            ["start", "end"]
        );
    }

    #[test]
    fn each_edge_is_an_arrow_between_the_boxes_of_its_steps_in_their_lanes() {
        let proof = crossing();
        let lanes = ["alice".to_owned(), "bob".to_owned()];
        let steps: Vec<(String, String)> = [
            ("alice", "SELECT sum(amount) FROM expenses WHERE team = 1"),
            ("bob", "SELECT 1"),
            ("alice", "INSERT"),
            ("bob", "INSERT"),
        ]
        .iter()
        .map(|(l, s)| ((*l).to_owned(), (*s).to_owned()))
        .collect();
        let picture = draw(&proof, &lanes, &steps);
        assert_eq!(picture.boxes.len(), 4);
        assert_eq!(picture.boxes[0].label, "SELECT sum(amount) FROM exp…");
        let lanes_of: Vec<usize> = picture.boxes.iter().map(|b| b.lane).collect();
        assert_eq!(lanes_of, [0, 1, 0, 1]);
        // Alice's check (lane 0, first row) to bob's insert (lane 1, last row): left to right,
        // downwards, on the cycle.
        let first = &picture.arrows[0];
        assert!(first.x1 < first.x2 && first.y1 < first.y2 && first.in_cycle && !first.would_have);
        let second = &picture.arrows[1];
        assert!(
            second.x1 > second.x2,
            "bob's check to alice's insert goes right to left"
        );
        assert_eq!(picture.width, 2 * LANE_WIDTH);
    }

    #[test]
    fn edges_whose_steps_are_unknown_are_left_out() {
        let proof = Proof {
            edges: vec![edge(0, 9, Dep::Ww)],
            would_have: 1,
            ..Proof::default()
        };
        let picture = draw(
            &proof,
            &["alice".to_owned()],
            &[("alice".to_owned(), "UPDATE".to_owned())],
        );
        assert_eq!((picture.boxes.len(), picture.arrows.len()), (1, 0));
    }
}
