//! racelab's shared vocabulary: what the server, the CLI and the browser app all speak.
//!
//! Layout:
//! - [`value`]: one database value (a cell, a parameter), as plain data.
//! - [`event`]: the event stream a run emits; the single source of truth for every reader.
//! - [`protocol`]: the versioned websocket messages between browser and server.
//! - [`atlas`]: the classic anomalies as specs, played at each isolation level, and what each
//!   run's cell says.
//! - [`calendar`]: Unix time as a UTC calendar moment, for stamps.
//! - [`catalog`]: labs, scenarios and variants, as listed by `racelab list` and `/api/labs`.
//! - [`ledger`]: snapshots of what a run changed and the pure diff between two of them.
//! - [`lesson`]: the races a trainer strings into a session, as a plain text file, and each
//!   round's right answer read off its run.
//! - [`ledger_view`]: a diff's table laid out for a reader: changed columns first, big tables
//!   folded to the rows that differ from a correct system.
//! - [`ledger_html`]: that layout as the page draws it, written as escaped HTML text.
//! - [`verdict`]: the plain answer at the end of a run: was the bug reproduced or prevented?
//! - [`money`]: `$1,234` formatting, exactly as the tutorials print it.
//! - [`psql`]: query results in psql's aligned format, as the tutorials print their checks.
//! - [`compact`]: a timeline card in one line (the compact timeline, the picture of a run).
//! - [`embed`]: an embed's options, its address and the snippets a blog author pastes.
//! - [`markup`]: escaping text racelab writes into HTML and SVG itself.
//! - [`pages`]: the app's pages by their paths, for the app and the server alike.
//! - [`spec`]: races readers write, in PostgreSQL's isolation-tester format: parsed, printed,
//!   and their permutations.
//! - [`recording`]: a finished run in one versioned file that plays with no server behind it.
//! - [`proof`]: why it happened: the dependency graph of a run's transactions, its cycle, and
//!   the anomaly it names, in plain words.
//! - [`series`]: progress over time and crash moments, for the picture of a draining pipeline.
//! - [`stepping`]: a finished run stepped a statement at a time, as a live one is.
//! - [`time_axis`]: the gaps a timeline leaves where time passed, to one scale.
//! - [`waits`]: the wait-for graph at one moment of a run: who waits for whom, on what, and
//!   the deadlock PostgreSQL broke.
//! - [`float`]: floating-point numbers as text, by the browser's own engine when in one.
//! - [`json`], [`decode`]: the browser's JSON reader and how it reads each of the types above
//!   (serde writes them on the server; see [`json`] for why the app does not read with serde).
//!
//! This crate does no I/O and uses no async runtime, so it also builds for `wasm32`.

pub mod atlas;
pub mod calendar;
pub mod catalog;
pub mod chapters;
pub mod chart;
pub mod compact;
pub mod decode;
pub mod embed;
pub mod event;
pub mod float;
pub mod json;
pub mod ledger;
pub mod ledger_html;
pub mod ledger_view;
pub mod lesson;
pub mod markup;
pub mod money;
pub mod pages;
pub mod proof;
pub mod protocol;
pub mod psql;
pub mod recording;
pub mod run_state;
pub mod series;
pub mod spec;
pub mod stepping;
pub mod time_axis;
pub mod timeline;
pub mod timeline_html;
pub mod value;
pub mod verdict;
pub mod versions;
pub mod waits;

pub use catalog::{Choice, Lab, Prediction, ScenarioInfo, Service, VariantInfo};
pub use event::{Detail, ErrorKind, Event, EventKind, LeaseChange, Milestone, Moment, Outcome};
pub use ledger::{Ledger, LedgerDiff, RowChange, RowDiff, Table, TableDiff};
pub use money::usd;
pub use protocol::{ClientFrame, ClientMsg, ErrorCode, Mode, PROTOCOL_VERSION, ServerFrame, ServerMsg};
pub use value::Value;
pub use verdict::{Check, Verdict, VerdictKind};
