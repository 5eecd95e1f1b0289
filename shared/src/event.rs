//! The event stream a run emits.
//!
//! One stream, three readers: the CLI prints the [`EventKind::Say`] lines as the transcript, the
//! browser draws swimlanes and a ledger diff from the structured events, and the run store keeps
//! the whole stream so a permalink can replay it. Readers never parse transcript text: everything
//! they draw is in the structure.
//!
//! Events are shaped for every lab, not only SQL: a [`EventKind::Step`] names the [`Service`] it
//! talks to, so a Redis command, an HTTP request or a Kafka produce is a step like an SQL statement.

use crate::{Ledger, Service, Value, Verdict};
use serde::{Deserialize, Serialize};

/// One thing that happened in a run, numbered and timed from the run's start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// 1, 2, 3… in emission order; a reader that sees a gap knows it missed something.
    pub seq: u64,
    /// Milliseconds since the run started.
    pub at_ms: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// An actor as the header introduces it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActorInfo {
    /// The reader's name for it: `alice`, `bob`, `report`, `w07`, `relay`.
    pub name: String,
    /// Its session setting in plain words, e.g. `SERIALIZABLE` or `READ COMMITTED`.
    pub detail: String,
}

/// Which ledger an [`EventKind::Ledger`] event carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Moment {
    /// The state before any actor ran.
    Before,
    /// The state after every actor finished.
    After,
    /// What a correct system would hold afterwards: derived from the scenario's constants, never
    /// from the run it judges.
    Expected,
    /// What the tutorial's author measured in their own environment (versions, machine, timing):
    /// shown beside ours for reference, never the expected state.
    Reference,
}

/// What kind of failure an [`EventKind::Error`] reports, so a reader tells a database's refusal
/// from a timeout or a crash at a glance. Its `code` is the kind's own code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// PostgreSQL refused the statement; `code` is the SQLSTATE (`40001`).
    #[default]
    Database,
    /// An HTTP answer that is an error; `code` is the status (`502`).
    Http,
    /// Redis answered with an error; `code` is its first word (`ERR`, `WRONGTYPE`).
    Redis,
    /// The broker or its client refused; `code` is librdkafka's error name.
    Broker,
    /// No answer within the caller's own deadline (the server may still be working).
    Timeout,
    /// The connection broke or was refused (`EOF`, `connection refused`).
    Connection,
    /// A process died at a crash point.
    Crash,
}

impl ErrorKind {
    /// A short label for a badge when the error has no code: `timeout`, `connection`.
    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::Database => "SQLSTATE",
            ErrorKind::Http => "HTTP",
            ErrorKind::Redis => "Redis",
            ErrorKind::Broker => "broker",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connection => "connection",
            ErrorKind::Crash => "crash",
        }
    }
}

/// What happened to a lease (a Redis lock) an actor holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseChange {
    /// The actor took it, for `ttl_ms`.
    Acquired,
    /// Its TTL was reset to `ttl_ms` from now (a watchdog's refresh).
    Refreshed,
    /// The actor gave it back.
    Released,
    /// A release or refresh found the key gone or holding another token: the lease had expired
    /// while the actor believed it held it.
    Lost,
}

/// The structured side of a step or result that is not SQL: an HTTP request or response, or a
/// broker message. Readers draw these fields; they never parse the step's `text`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Detail {
    /// An HTTP request as sent: the headers that matter to the story (`Idempotency-Key`) and the
    /// body.
    Request {
        method: String,
        path: String,
        headers: Vec<(String, String)>,
        body: String,
        /// The lane of the server it goes to (`shop`), when that server is one of the run's:
        /// the arrow from the client's lane to the server's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        to: Option<String>,
    },
    /// An HTTP response as received (`Retry-After`, `Idempotent-Replayed`).
    Response {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A broker message: produced (partition and offset once delivered) or consumed.
    Message {
        topic: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offset: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        headers: Vec<(String, String)>,
    },
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// The scenario played to its end (whatever the verdict says about the bug).
    Completed,
    /// The run could not be played: a service was down, a step never blocked, a timeout.
    Failed { message: String },
    /// The reader cancelled, or closed the tab.
    Cancelled,
}

/// What happened. Tagged by `type` in JSON (`{"type":"blocked","actor":"bob","by":["alice"]}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// The header: which scenario, which variant, who plays.
    RunStarted {
        run_id: String,
        scenario: String,
        variant: String,
        title: String,
        actors: Vec<ActorInfo>,
        /// The services' own version strings, e.g. `PostgreSQL 15.20`.
        server: String,
    },
    /// An actor issues a statement, command or request.
    Step {
        actor: String,
        service: Service,
        /// The SQL text (or command line, or `POST /payments`), with `$1`-style placeholders.
        text: String,
        params: Vec<Value>,
        /// The request or message, for steps that are not SQL.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<Detail>,
    },
    /// The step finished: `UPDATE 1`, `1 row`, `BEGIN`, with the rows it returned, if any.
    Result {
        actor: String,
        summary: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rows: Option<Rows>,
        /// The response or the delivered message, for steps that are not SQL.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<Detail>,
    },
    /// The actor's step is waiting on a lock held by the actors in `by`; `on` says what lock, as
    /// PostgreSQL's `pg_locks` has it (`a row lock`, `a row of accounts`, `table accounts`).
    Blocked {
        actor: String,
        by: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        on: Option<String>,
    },
    /// The actor's step got its lock after waiting `waited_ms`.
    Unblocked { actor: String, waited_ms: u64 },
    /// The step failed. `code` is the kind's own code: the SQLSTATE of a database error
    /// (`40001`), an HTTP status, a Redis error word. (Runs stored before there were other kinds
    /// called it `sqlstate`.)
    Error {
        actor: String,
        #[serde(default)]
        kind: ErrorKind,
        #[serde(default, alias = "sqlstate", skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        message: String,
    },
    /// The actor's transaction committed.
    Commit { actor: String },
    /// The actor's transaction rolled back.
    Rollback { actor: String },
    /// The actor's process started (`restart` when it replaces one that died): a new pid, so a
    /// new PostgreSQL session and a new broker producer.
    ProcessStarted { actor: String, pid: u32, restart: bool },
    /// The actor's process died at a named crash point (outbox, idempotency labs): killed with
    /// SIGKILL, so it ran no cleanup.
    Crash { actor: String, point: String },
    /// The actor's process exited by itself; `code` is its exit status (`None`: killed by a
    /// signal).
    ProcessExited {
        actor: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<i32>,
    },
    /// A lease (a Redis lock) changed hands: the timeline marks who holds `key` and when its TTL
    /// runs out, so a lease expiring under its holder is seen, not inferred.
    Lease {
        actor: String,
        key: String,
        change: LeaseChange,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ttl_ms: Option<u64>,
        /// The fencing token that came with it, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fence: Option<i64>,
    },
    /// A remark on an actor's lane that is not a transcript line: what racelab shows of a step
    /// the tutorial's program did silently (a pooled query's result, say). The CLI prints the
    /// transcript only, so its output stays the program's.
    Note { actor: String, text: String },
    /// One transcript line, exactly as the CLI prints it (`line` includes the `[actor] ` prefix).
    Say {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        actor: Option<String>,
        line: String,
    },
    /// A snapshot of the ledger at one moment.
    Ledger { moment: Moment, ledger: Ledger },
    /// Progress of a free-running workload (load tests).
    Progress { label: String, done: u64, total: u64 },
    /// The plain answer.
    Verdict { verdict: Verdict },
    /// A reader's spec played one permutation (in a run of every permutation): its steps as
    /// played (who waited, what failed) and its outcome in a line; the same line, the same
    /// outcome.
    Permutation {
        index: u32,
        steps: Vec<crate::spec::PlayedStep>,
        outcome: String,
    },
    /// Why it happened: the run's transactions, the dependency edges between them that racelab
    /// derived from what they read and wrote, the cycle if there is one and the anomaly it
    /// names, in plain words. After the verdict, in runs of specs whose reads and writes could
    /// be told apart.
    Proof { proof: Box<crate::proof::Proof> },
    /// What a reader should have predicted (the scenario's [`Prediction`](crate::catalog::Prediction)):
    /// the `choice` that happens in this variant, and why, in a sentence. After the verdict, in
    /// completed runs of scenarios that ask.
    Reveal { choice: String, why: String },
    /// In step mode: the run is paused until the reader asks for the next step, which is
    /// `actor`'s `step` (an SQL statement, a command) on `service` (runs stored before it was
    /// said: PostgreSQL).
    Paused {
        actor: String,
        #[serde(default)]
        service: Service,
        step: String,
    },
    /// The last event of every run.
    Done { outcome: Outcome },
    /// A child process reached a point its run's choreography waits for (see [`Milestone`]).
    /// Not drawn: the transcript says the same in the tutorial's words.
    Milestone { actor: String, milestone: Milestone },
}

/// A point a child process (a relay, a consumer) reached, said as data so that the run's
/// choreography waits for it and never reads the transcript's wording, which must stay the
/// tutorial's. Tagged by `kind` in JSON (`{"kind":"published","count":3}`). (That a process died
/// at a crash point is its own event, [`EventKind::Crash`].)
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Milestone {
    /// A relay took the single-active lock.
    Active,
    /// A relay tried the lock, and another relay holds it.
    Standby,
    /// A relay published a batch of `count` events and committed marking them.
    Published { count: u64 },
    /// A consumer handled the message at `partition`/`offset` and committed its offset.
    Committed { partition: i32, offset: i64 },
}

/// Rows a query returned, small enough to show on a card.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

impl EventKind {
    /// The actor this event belongs to, if any: which swimlane draws it.
    pub fn actor(&self) -> Option<&str> {
        match self {
            EventKind::Step { actor, .. }
            | EventKind::Result { actor, .. }
            | EventKind::Blocked { actor, .. }
            | EventKind::Unblocked { actor, .. }
            | EventKind::Error { actor, .. }
            | EventKind::Commit { actor }
            | EventKind::Rollback { actor }
            | EventKind::Note { actor, .. }
            | EventKind::Lease { actor, .. }
            | EventKind::ProcessStarted { actor, .. }
            | EventKind::ProcessExited { actor, .. }
            | EventKind::Crash { actor, .. } => Some(actor),
            EventKind::Say { actor, .. } => actor.as_deref(),
            _ => None,
        }
    }
}

/// The transcript of a stream: its `Say` lines in order, as the CLI prints them.
pub fn transcript<'a>(events: impl IntoIterator<Item = &'a Event>) -> Vec<&'a str> {
    events
        .into_iter()
        .filter_map(|e| match &e.kind {
            EventKind::Say { line, .. } => Some(line.as_str()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_tagged_by_type_in_json() {
        let event = Event {
            seq: 7,
            at_ms: 12,
            kind: EventKind::Blocked {
                actor: "bob".into(),
                by: vec!["alice".into()],
                on: None,
            },
        };
        let json = serde_json::to_value(&event).expect("serialise");
        assert_eq!(
            json,
            serde_json::json!({"seq": 7, "at_ms": 12, "type": "blocked", "actor": "bob", "by": ["alice"]})
        );
        let back: Event = serde_json::from_value(json).expect("deserialise");
        assert_eq!(back, event);
    }

    #[test]
    fn transcript_keeps_only_say_lines_in_order() {
        let say = |seq, line: &str| Event {
            seq,
            at_ms: 0,
            kind: EventKind::Say {
                actor: None,
                line: line.into(),
            },
        };
        let events = vec![
            say(1, "--- header ---"),
            Event {
                seq: 2,
                at_ms: 0,
                kind: EventKind::Commit { actor: "alice".into() },
            },
            say(3, "[alice] commit"),
        ];
        assert_eq!(transcript(&events), vec!["--- header ---", "[alice] commit"]);
    }

    #[test]
    fn errors_stored_before_kinds_existed_still_read_as_database_errors() {
        let old = r#"{"seq":1,"at_ms":0,"type":"error","actor":"bob","sqlstate":"40001","message":"m"}"#;
        let event: Event = serde_json::from_str(old).expect("an old stored event");
        assert_eq!(
            event.kind,
            EventKind::Error {
                actor: "bob".into(),
                kind: ErrorKind::Database,
                code: Some("40001".into()),
                message: "m".into(),
            }
        );
    }

    #[test]
    fn http_steps_carry_their_request_as_structure() {
        let step = EventKind::Step {
            actor: "phone".into(),
            service: Service::Http,
            text: "POST /payments".into(),
            params: vec![],
            detail: Some(Detail::Request {
                method: "POST".into(),
                path: "/payments".into(),
                headers: vec![("Idempotency-Key".into(), "order-7731".into())],
                body: "{}".into(),
                to: Some("shop".into()),
            }),
        };
        let json = serde_json::to_value(&step).expect("serialise");
        assert_eq!(json["detail"]["kind"], "request");
        assert_eq!(json["detail"]["headers"][0][0], "Idempotency-Key");
        let back: EventKind = serde_json::from_value(json).expect("deserialise");
        assert_eq!(back, step);
    }
}
