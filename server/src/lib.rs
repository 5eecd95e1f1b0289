//! racelab: watch concurrency bugs happen on real databases.
//!
//! Layout (read in this order; the README's code tour says more):
//! - [`engine`]: plays scenarios: actors on dedicated connections, blocked-step detection,
//!   retries, the event stream, the run queue, and the supervisor that always cleans up.
//! - [`sandbox`]: a schema per run, and the sweep of what a crash left behind.
//! - [`labs`]: one folder per tutorial, one file per scenario.
//! - [`web`]: the axum server: websocket runs, the catalog and stored runs, health, the app.
//! - [`cli`]: `racelab run | list | serve | crowd`; [`crowd`]: the load client.
//! - [`embedded`]: private PostgreSQL, Redis and broker processes when none run.
//! - [`store`], [`db`], [`config`], [`health`]: run history, startup, settings, dependency checks.

pub mod cli;
pub mod config;
pub mod crowd;
pub mod db;
pub mod embedded;
pub mod engine;
pub mod health;
pub mod labs;
pub mod sandbox;
pub mod store;
pub mod web;
