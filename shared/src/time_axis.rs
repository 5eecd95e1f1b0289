//! Time you can see. A timeline has one row per thing that happened, in order, but rows alone
//! hide how long passed between them: a 250 ms pause and a 2 ms statement look the same. So
//! before a row that came noticeably later than the one above it, the timeline leaves a gap
//! drawn to one scale on every timeline ([`MS_PER_PX`]), labelled with the time it stands for:
//! a lease's 100 ms and a pause's 250 ms show their real lengths side by side.
//!
//! Integers only: the browser build carries no float formatting (see [`crate::float`]).

use crate::compact::duration;

/// What passes between two rows before a gap is drawn: statements on a local database take a
/// few milliseconds, and drawing those would only add noise.
pub const SHOWN_FROM_MS: u64 = 30;
/// The scale: one pixel for this many milliseconds.
pub const MS_PER_PX: u64 = 5;
/// The tallest gap, 1 s at the scale; longer ones are drawn this tall and marked as cut.
pub const MAX_PX: u64 = 200;

/// The gap above one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gap {
    /// The time it stands for.
    pub ms: u64,
    /// Its height in CSS pixels.
    pub px: u64,
    /// Whether the height is the time at [`MS_PER_PX`]; a longer wait is cut to [`MAX_PX`].
    pub to_scale: bool,
    /// A stepped run waited for the reader in it: part of the time is the reader's.
    pub paused: bool,
}

impl Gap {
    /// `+250 ms`, `+6.0 s, not to scale`, `+1.2 s, paused for the reader`.
    pub fn label(&self) -> String {
        let note = match (self.paused, self.to_scale) {
            (true, _) => ", paused for the reader",
            (false, true) => "",
            (false, false) => ", not to scale",
        };
        format!("+{}{note}", duration(self.ms))
    }
}

/// The gap before a row at `at_ms` that follows one at `previous_ms`, if one is drawn;
/// `paused` when a stepped run waited for its reader in between.
pub fn gap(previous_ms: u64, at_ms: u64, paused: bool) -> Option<Gap> {
    let ms = at_ms.saturating_sub(previous_ms);
    (ms >= SHOWN_FROM_MS).then(|| Gap {
        ms,
        px: (ms / MS_PER_PX).min(MAX_PX),
        to_scale: ms / MS_PER_PX <= MAX_PX,
        paused,
    })
}

/// The scale in words, for the timeline's legend.
pub fn legend() -> String {
    format!(
        "Time runs down. A gap is drawn where {SHOWN_FROM_MS} ms or more passed, 1 px for every {MS_PER_PX} ms (at least as tall as its label, up to {}).",
        duration(MAX_PX * MS_PER_PX)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_and_a_lease_are_drawn_to_one_scale() {
        let pause = gap(1_000, 1_250, false).expect("a 250 ms pause is drawn");
        let lease = gap(40, 140, false).expect("a 100 ms lease is drawn");
        assert_eq!((pause.px, lease.px), (50, 20));
        assert_eq!(pause.px * lease.ms, lease.px * pause.ms, "the same scale");
        assert_eq!(pause.label(), "+250 ms");
    }

    #[test]
    fn quick_steps_get_no_gap_and_long_waits_are_cut() {
        assert_eq!(gap(100, 129, false), None);
        assert_eq!(
            gap(200, 100, false),
            None,
            "rows never go back in time, but if they did: no gap"
        );
        assert_eq!(
            gap(0, 1_000, false),
            Some(Gap {
                ms: 1_000,
                px: 200,
                to_scale: true,
                paused: false
            })
        );
        let hold = gap(0, 6_000, false).expect("drawn");
        assert_eq!((hold.px, hold.to_scale), (MAX_PX, false));
        assert_eq!(hold.label(), "+6.0 s, not to scale");
        let thinking = gap(0, 2_400, true).expect("drawn");
        assert_eq!(thinking.label(), "+2.4 s, paused for the reader");
    }

    #[test]
    fn the_legend_states_the_scale() {
        assert_eq!(
            legend(),
            "Time runs down. A gap is drawn where 30 ms or more passed, 1 px for every 5 ms (at least as tall as its label, up to 1.0 s)."
        );
    }
}
