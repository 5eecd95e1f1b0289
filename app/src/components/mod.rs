//! The pieces every page is built from, one per file.

pub mod chart;
pub mod compact_timeline;
pub mod drain;
#[cfg(not(feature = "embed"))]
pub mod embed_code;
pub mod error_view;
#[cfg(not(feature = "embed"))]
pub mod header;
#[cfg(not(feature = "embed"))]
pub mod keys;
pub mod ledger_diff;
#[cfg(not(feature = "embed"))]
pub mod predict;
pub mod reference;
pub mod run_panel;
pub mod run_view;
pub mod status;
pub mod step_card;
pub mod swimlane;
#[cfg(not(feature = "embed"))]
pub mod teach;
pub mod timeline;
pub mod transcript;
pub mod variant_picker;
pub mod verdict;
pub mod view_toggle;
