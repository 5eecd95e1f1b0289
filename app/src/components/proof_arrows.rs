//! The proof's edges drawn on the timeline itself: an arrow from the card of the step that must
//! come first to the card of the step after it, across lanes, over the detailed timeline. The
//! cards are where the page laid them out, so the arrows are measured from the page (after each
//! change and each resize), not computed. ww solid, wr dashed, rw dotted, each named; the
//! cycle's heavier.

use leptos::prelude::*;
use shared::float::one_decimal;
use shared::proof::Dep;
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
fn card_box(wrap: &web_sys::HtmlElement, seq: u64) -> Option<(f64, f64, f64, f64)> {
    let card = wrap
        .query_selector(&format!(".rl-row[data-seq=\"{seq}\"] .rl-card"))
        .ok()
        .flatten()?;
    let origin = wrap.get_bounding_client_rect();
    let r = card.get_bounding_client_rect();
    Some((r.left() - origin.left(), r.top() - origin.top(), r.width(), r.height()))
}

fn measure(wrap: &web_sys::HtmlElement, edges: &[SeqEdge]) -> Vec<Drawn> {
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

#[component]
pub fn ProofArrows(wrap: NodeRef<leptos::html::Div>, edges: Signal<Vec<SeqEdge>>) -> impl IntoView {
    let drawn: RwSignal<Vec<Drawn>> = RwSignal::new(Vec::new());
    let size: RwSignal<(f64, f64)> = RwSignal::new((0.0, 0.0));
    let redraw = move || {
        // By the next frame the timeline may have been drawn afresh and these arrows with it
        // (a room's run redraws it): then there is nothing left to measure, nor to draw on.
        request_animation_frame(move || {
            let (Some(Some(wrap)), Some(edges)) = (wrap.try_get_untracked(), edges.try_get_untracked()) else {
                return;
            };
            let element: &web_sys::HtmlElement = wrap.unchecked_ref();
            drawn.try_set(measure(element, &edges));
            size.try_set((f64::from(element.offset_width()), f64::from(element.offset_height())));
        });
    };
    Effect::new(move |_| {
        edges.track();
        redraw();
    });
    let resized = window_event_listener(leptos::ev::resize, move |_| redraw());
    on_cleanup(move || resized.remove());
    move || {
        let (width, height) = size.get();
        let arrows = drawn
            .get()
            .into_iter()
            .map(|d| {
                let label = d.edge.dep.drawn_name(d.edge.predicate);
                let (lx, ly) = ((4.0 * d.x1 + d.x2) / 5.0, (4.0 * d.y1 + d.y2) / 5.0 - 6.0);
                // Away from the card the arrow leaves, as the proof's own picture does.
                let anchor = shared::proof::picture::label_anchor(d.x1, d.x2);
                view! {
                    <g class="rl-proof-edge" data-dep=d.edge.dep.label() data-cycle=d.edge.in_cycle.to_string()
                        data-would-have=d.edge.would_have.to_string() data-from=d.edge.from.to_string() data-to=d.edge.to.to_string()>
                        <line x1=one_decimal(d.x1) y1=one_decimal(d.y1) x2=one_decimal(d.x2) y2=one_decimal(d.y2)
                            stroke-dasharray=dash(d.edge.dep) marker-end="url(#rl-proof-arrowhead)"></line>
                        <text x=one_decimal(lx) y=one_decimal(ly) text-anchor=anchor>{label}</text>
                    </g>
                }
            })
            .collect_view();
        (!drawn.with(Vec::is_empty)).then(|| {
            view! {
                <svg class="rl-proof-arrows" width=one_decimal(width) height=one_decimal(height) aria-hidden="true">
                    <defs>
                        <marker id="rl-proof-arrowhead" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10"
                            refX="9" refY="5" orient="auto">
                            <path d="M0,0 L10,5 L0,10 z"></path>
                        </marker>
                    </defs>
                    {arrows}
                </svg>
            }
        })
    }
}
