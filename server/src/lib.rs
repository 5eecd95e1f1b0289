//! racelab: watch concurrency bugs happen on real databases.
//!
//! Layers, bottom first; a module uses its own layer's and those below, never one above, and no
//! two modules use each other (`tests/layers.rs` holds both rules):
//! - services: [`config`] (settings), [`services`] (where PostgreSQL, Redis and the broker are,
//!   racelab's own handles on them), [`health`] (one probe per service, which everyone asks),
//!   [`embedded`] (private services when none run).
//! - [`sandbox`]: a run's namespaces in each service, their cleanup, and the sweep of what a
//!   crash left behind.
//! - [`engine`]: plays scenarios: lanes and actor kinds on dedicated connections, blocked-step
//!   detection, retries, admission and budgets, the event stream, the supervisor that always
//!   cleans up; [`store`]: the run history it is handed.
//! - [`labs`]: one folder per tutorial, one file per scenario; [`specs`]: races readers write;
//!   [`lessons`]: a trainer's rounds, checked against what this racelab plays.
//! - edges: [`control`] (what a socket and a room do with a run), [`clients`] (a reader's caps),
//!   [`rooms`] (training rooms: holder, mirrors, feed, question), [`web`] (the axum server),
//!   [`cli`] (`racelab run | record | export | list | serve | crowd | actor`), [`crowd`] (the load
//!   client), [`db`] (startup: racelab's database, the engine assembled), [`recording`] (a
//!   finished run kept in one file that plays anywhere), [`export`] (the player's files for a
//!   static host).
//!
//! A newcomer starts at `labs/isolation/write_skew.rs` (a scenario), then `engine/run.rs` (what
//! it plays on), then `web/ws.rs` (how a reader asks for it). The README's code tour says more.

pub mod cli;
pub mod clients;
pub mod config;
pub mod control;
pub mod crowd;
pub mod db;
pub mod embedded;
pub mod engine;
pub mod export;
pub mod health;
pub mod labs;
pub mod lessons;
pub mod recording;
pub mod rooms;
pub mod sandbox;
pub mod services;
pub mod specs;
pub mod store;
pub mod web;
