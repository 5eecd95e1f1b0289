//! A lane: one swimlane of the timeline, and the one handle every actor kind speaks through.
//!
//! A PostgreSQL session, a Redis connection, an HTTP client, a broker consumer and a child
//! process all tell the reader the same things: a step started (on which service, with what
//! request), it returned (with rows, a response, a delivered message), it failed (with a kind and
//! a code), a transcript line. And in step mode each waits at the same gate before its step. So
//! each actor kind holds a [`Lane`] and never builds those events itself.
//!
//! Where the events go is a [`Stage`]: the run's own event sink in the server, or the stdout
//! pipe of a child process (`racelab actor …`), whose lines the parent puts back on the run's one
//! stream.

use super::BoxFuture;
use shared::event::{Detail, ErrorKind, Rows};
use shared::{EventKind, Service, Value};
use std::sync::Arc;

/// Where a lane's events go and where its steps wait in step mode.
pub trait Stage: Send + Sync {
    /// Emits one event (numbered and timed by whoever owns the stream).
    fn emit(&self, kind: EventKind);
    /// In step mode, announces `actor`'s next `step` (on `service`) and waits for the reader's
    /// `next`; at once otherwise.
    fn gate<'a>(&'a self, actor: &'a str, service: Service, step: &'a str) -> BoxFuture<'a, ()>;
}

/// One swimlane. Cheap to clone: an HTTP server's handlers each hold a clone of the server's lane.
#[derive(Clone)]
pub struct Lane {
    name: Arc<str>,
    stage: Arc<dyn Stage>,
    /// Quiet lanes (load-test workers) emit no per-step events: 16 workers × 400 approvals would
    /// drown the timeline. They still report through their results.
    quiet: bool,
}

impl Lane {
    pub fn new(name: &str, stage: Arc<dyn Stage>, quiet: bool) -> Self {
        Lane {
            name: name.into(),
            stage,
            quiet,
        }
    }

    /// The reader's name for this lane: `alice`, `relay`, `phone copy 3`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this lane's steps are hidden from the timeline.
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// Speaks a transcript line as this lane (`[alice] commit`); quiet lanes say nothing.
    pub fn say(&self, message: impl AsRef<str>) {
        self.emit(EventKind::Say {
            actor: Some(self.name.to_string()),
            line: format!("[{}] {}", self.name, message.as_ref()),
        });
    }

    /// Speaks a transcript line that is this lane's but printed as the program printed it,
    /// without the `[name] ` prefix (`A: got the lock, fence 33`).
    pub fn say_exactly(&self, line: impl Into<String>) {
        self.emit(EventKind::Say {
            actor: Some(self.name.to_string()),
            line: line.into(),
        });
    }

    /// A remark on this lane's timeline that is not a transcript line (see [`EventKind::Note`]).
    pub fn note(&self, text: impl Into<String>) {
        self.emit(EventKind::Note {
            actor: self.name.to_string(),
            text: text.into(),
        });
    }

    /// In step mode, waits for the reader's `next` before `step` on `service` (quiet lanes
    /// never pause).
    pub async fn gate(&self, service: Service, step: &str) {
        if !self.quiet {
            self.stage.gate(&self.name, service, step).await;
        }
    }

    /// A step starts: an SQL statement, a Redis command, an HTTP request, a produce.
    pub fn step(&self, service: Service, text: &str, params: &[Value], detail: Option<Detail>) {
        self.emit(EventKind::Step {
            actor: self.name.to_string(),
            service,
            text: text.to_owned(),
            params: params.to_vec(),
            detail,
        });
    }

    /// The step returned: `UPDATE 1`, `OK`, `201 Created`, `delivered p1@0`.
    pub fn result(&self, summary: impl Into<String>, rows: Option<Rows>, detail: Option<Detail>) {
        self.emit(EventKind::Result {
            actor: self.name.to_string(),
            summary: summary.into(),
            rows,
            detail,
        });
    }

    /// The step failed.
    pub fn error(&self, kind: ErrorKind, code: Option<String>, message: impl Into<String>) {
        self.emit(EventKind::Error {
            actor: self.name.to_string(),
            kind,
            code,
            message: message.into(),
        });
    }

    /// Emits any event of this lane, unless the lane is quiet.
    pub fn emit(&self, kind: EventKind) {
        if !self.quiet {
            self.stage.emit(kind);
        }
    }

    /// This lane's process reached `milestone`, for its run's choreography to wait on (even on a
    /// quiet lane: the choreography needs it whatever is drawn).
    pub fn reached(&self, milestone: shared::Milestone) {
        self.emit_always(EventKind::Milestone {
            actor: self.name.to_string(),
            milestone,
        });
    }

    /// Emits an event even on a quiet lane: a crash or a restart is never hidden.
    pub fn emit_always(&self, kind: EventKind) {
        self.stage.emit(kind);
    }
}
