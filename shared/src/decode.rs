//! How the browser app reads racelab's frames and answers: a [`FromJson`] for every type the
//! server sends it, each mirroring that type's serde attributes (tags, defaults, the old
//! `sqlstate` alias). See [`crate::json`] for why the app does not use serde to read them.
//!
//! The tests below hold these readers equal to serde's on one value of every variant, and the
//! server's websocket tests read every frame of every lab both ways (`tests/common/socket.rs`).

use crate::catalog::{LabStatus, ScenarioStatus};
use crate::event::{ActorInfo, Rows};
use crate::json::{FromJson, Json, JsonError, unknown_variant};
use crate::protocol::StoredRun;
use crate::{
    Check, Choice, Detail, ErrorCode, ErrorKind, Event, EventKind, Lab, LeaseChange, Ledger, Milestone, Moment,
    Outcome, Prediction, ScenarioInfo, ServerFrame, ServerMsg, Service, Table, Value, VariantInfo, Verdict,
    VerdictKind,
};

/// Unit variants written as their snake_case names.
macro_rules! names {
    ($type:ty { $($name:literal => $variant:ident),* $(,)? }) => {
        impl FromJson for $type {
            fn from_json(json: &Json) -> Result<Self, JsonError> {
                match json.str()? {
                    $($name => Ok(<$type>::$variant),)*
                    other => Err(unknown_variant(other)),
                }
            }
        }
    };
}

names!(Service { "postgres" => Postgres, "redis" => Redis, "kafka" => Kafka, "http" => Http, "process" => Process, "mariadb" => Mariadb });
names!(Moment { "before" => Before, "after" => After, "expected" => Expected, "reference" => Reference });
names!(VerdictKind { "reproduced" => Reproduced, "prevented" => Prevented, "unstated" => Unstated });
names!(LeaseChange { "acquired" => Acquired, "refreshed" => Refreshed, "released" => Released, "lost" => Lost });
names!(ErrorKind {
    "database" => Database, "http" => Http, "redis" => Redis, "broker" => Broker,
    "timeout" => Timeout, "connection" => Connection, "crash" => Crash,
});
names!(ErrorCode {
    "bad_frame" => BadFrame, "bad_version" => BadVersion, "unknown_scenario" => UnknownScenario,
    "unknown_variant" => UnknownVariant, "busy" => Busy, "no_run" => NoRun,
    "not_step_mode" => NotStepMode, "not_steppable" => NotSteppable, "service_down" => ServiceDown,
    "shutting_down" => ShuttingDown, "queue_full" => QueueFull, "too_many" => TooMany,
    "too_slow" => TooSlow, "unknown_room" => UnknownRoom, "bad_token" => BadToken,
    "room_full" => RoomFull, "in_room" => InRoom, "handle_taken" => HandleTaken,
});

/// Untagged, tried in serde's order: null, boolean, an integer that fits `i64`, any other
/// number, text. (serde_json reads `-0` as a float, so we do too.)
impl FromJson for Value {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        match json {
            Json::Null => Ok(Value::Null),
            Json::Bool(b) => Ok(Value::Bool(*b)),
            Json::Number(n) if n != "-0" => i64::from_json(json)
                .map(Value::Int)
                .or_else(|_| f64::from_json(json).map(Value::Float)),
            Json::Number(_) => Ok(Value::Float(-0.0)),
            Json::String(s) => Ok(Value::Text(s.clone())),
            _ => Err(JsonError::new("data did not match any variant of untagged enum Value")),
        }
    }
}

impl FromJson for Table {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Table {
            name: json.get("name")?,
            columns: json.get("columns")?,
            key_columns: json.get("key_columns")?,
            rows: json.get("rows")?,
        })
    }
}

impl FromJson for Ledger {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Ledger {
            tables: json.get("tables")?,
        })
    }
}

impl FromJson for Check {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Check {
            rule: json.get("rule")?,
            actual: json.get("actual")?,
            holds: json.get("holds")?,
        })
    }
}

impl FromJson for Verdict {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Verdict {
            kind: json.get("kind")?,
            headline: json.get("headline")?,
            reason: json.get("reason")?,
            checks: json.get("checks")?,
        })
    }
}

impl FromJson for Outcome {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        match json.tag("status")? {
            "completed" => Ok(Outcome::Completed),
            "failed" => Ok(Outcome::Failed {
                message: json.get("message")?,
            }),
            "cancelled" => Ok(Outcome::Cancelled),
            other => Err(unknown_variant(other)),
        }
    }
}

impl FromJson for ActorInfo {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(ActorInfo {
            name: json.get("name")?,
            detail: json.get("detail")?,
        })
    }
}

impl FromJson for Rows {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Rows {
            columns: json.get("columns")?,
            rows: json.get("rows")?,
        })
    }
}

impl FromJson for Detail {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        match json.tag("kind")? {
            "request" => Ok(Detail::Request {
                method: json.get("method")?,
                path: json.get("path")?,
                headers: json.get("headers")?,
                body: json.get("body")?,
                to: json.opt("to")?,
            }),
            "response" => Ok(Detail::Response {
                status: json.get("status")?,
                headers: json.get("headers")?,
                body: json.get("body")?,
            }),
            "message" => Ok(Detail::Message {
                topic: json.get("topic")?,
                partition: json.opt("partition")?,
                offset: json.opt("offset")?,
                key: json.opt("key")?,
                value: json.opt("value")?,
                headers: json.opt("headers")?.unwrap_or_default(),
            }),
            other => Err(unknown_variant(other)),
        }
    }
}

/// Read by the event's `type`: each family of the stream (an actor's steps, its process and
/// lane, the run's own) has a reader, and the first that knows the tag reads the event.
impl FromJson for EventKind {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        let tag = json.tag("type")?;
        for read in [step_event, process_event, run_event] {
            if let Some(kind) = read(json, tag)? {
                return Ok(kind);
            }
        }
        Err(unknown_variant(tag))
    }
}

/// What an actor's step did: the step, its result, its wait, its error, its transaction's end,
/// and (in step mode) the pause before it; `None` for a tag that is not one of these.
fn step_event(json: &Json, tag: &str) -> Result<Option<EventKind>, JsonError> {
    let actor = || json.get::<String>("actor");
    Ok(Some(match tag {
        "step" => EventKind::Step {
            actor: actor()?,
            service: json.get("service")?,
            text: json.get("text")?,
            params: json.get("params")?,
            detail: json.opt("detail")?,
        },
        "result" => EventKind::Result {
            actor: actor()?,
            summary: json.get("summary")?,
            rows: json.opt("rows")?,
            detail: json.opt("detail")?,
        },
        "blocked" => EventKind::Blocked {
            actor: actor()?,
            by: json.get("by")?,
            // What the lock is, for the wait-for graph: the full app's (the embed draws none).
            #[cfg(feature = "proof")]
            on: json.opt("on")?,
            #[cfg(not(feature = "proof"))]
            on: None,
        },
        "unblocked" => EventKind::Unblocked {
            actor: actor()?,
            waited_ms: json.get("waited_ms")?,
        },
        "error" => EventKind::Error {
            actor: actor()?,
            kind: json.opt("kind")?.unwrap_or_default(),
            // Runs stored before errors had kinds called the code `sqlstate`.
            code: match json.opt("code")? {
                Some(code) => Some(code),
                None => json.opt("sqlstate")?,
            },
            message: json.get("message")?,
        },
        "commit" => EventKind::Commit { actor: actor()? },
        "rollback" => EventKind::Rollback { actor: actor()? },
        "paused" => EventKind::Paused {
            actor: actor()?,
            service: json.opt("service")?.unwrap_or_default(),
            step: json.get("step")?,
        },
        _ => return Ok(None),
    }))
}

/// What happened to an actor's process or on its lane beside its steps: started, crashed,
/// exited, a lease, a note or a line, a milestone; `None` for a tag that is not one of these.
fn process_event(json: &Json, tag: &str) -> Result<Option<EventKind>, JsonError> {
    let actor = || json.get::<String>("actor");
    Ok(Some(match tag {
        "process_started" => EventKind::ProcessStarted {
            actor: actor()?,
            pid: json.get("pid")?,
            restart: json.get("restart")?,
        },
        "crash" => EventKind::Crash {
            actor: actor()?,
            point: json.get("point")?,
        },
        "process_exited" => EventKind::ProcessExited {
            actor: actor()?,
            code: json.opt("code")?,
        },
        "lease" => EventKind::Lease {
            actor: actor()?,
            key: json.get("key")?,
            change: json.get("change")?,
            ttl_ms: json.opt("ttl_ms")?,
            fence: json.opt("fence")?,
        },
        "note" => EventKind::Note {
            actor: actor()?,
            text: json.get("text")?,
        },
        "say" => EventKind::Say {
            actor: json.opt("actor")?,
            line: json.get("line")?,
        },
        "milestone" => EventKind::Milestone {
            actor: actor()?,
            milestone: json.get("milestone")?,
        },
        _ => return Ok(None),
    }))
}

/// The run's own events: its header, ledgers, progress, verdict and what follows it, its end;
/// `None` for a tag that is not one of these.
fn run_event(json: &Json, tag: &str) -> Result<Option<EventKind>, JsonError> {
    Ok(Some(match tag {
        "run_started" => EventKind::RunStarted {
            run_id: json.get("run_id")?,
            scenario: json.get("scenario")?,
            variant: json.get("variant")?,
            title: json.get("title")?,
            actors: json.get("actors")?,
            server: json.get("server")?,
        },
        "ledger" => EventKind::Ledger {
            moment: json.get("moment")?,
            ledger: json.get("ledger")?,
        },
        "progress" => EventKind::Progress {
            label: json.get("label")?,
            done: json.get("done")?,
            total: json.get("total")?,
        },
        "verdict" => EventKind::Verdict {
            verdict: json.get("verdict")?,
        },
        "permutation" => EventKind::Permutation {
            index: json.get("index")?,
            steps: json.get("steps")?,
            outcome: json.get("outcome")?,
        },
        #[cfg(feature = "proof")]
        "proof" => EventKind::Proof {
            proof: Box::new(json.get("proof")?),
        },
        // Without the reader (the embed, which draws no proof), a proof is read as an event
        // nothing draws: cheaper, in the embed's budget, than an empty proof.
        #[cfg(not(feature = "proof"))]
        "proof" => EventKind::Milestone {
            actor: String::new(),
            milestone: Milestone::Active,
        },
        "reveal" => EventKind::Reveal {
            choice: json.get("choice")?,
            why: json.get("why")?,
        },
        "done" => EventKind::Done {
            outcome: json.get("outcome")?,
        },
        _ => return Ok(None),
    }))
}

#[cfg(feature = "proof")]
mod proof {
    use crate::json::{FromJson, Json, JsonError, unknown_variant};
    use crate::proof::*;

    impl FromJson for Proof {
        fn from_json(json: &Json) -> Result<Self, JsonError> {
            Ok(Proof {
                txns: json.get("txns")?,
                edges: json.get("edges")?,
                would_have: json.get("would_have")?,
                cycle: json.get("cycle")?,
                anomaly: json.opt("anomaly")?,
                prevented: json.opt("prevented")?,
                order: json.get("order")?,
                lines: json.get("lines")?,
            })
        }
    }

    impl FromJson for Txn {
        fn from_json(json: &Json) -> Result<Self, JsonError> {
            Ok(Txn {
                name: json.get("name")?,
                session: json.get("session")?,
                end: match json.tag("end")? {
                    "committed" => End::Committed,
                    "aborted" => End::Aborted {
                        code: json.opt("code")?,
                    },
                    "unfinished" => End::Unfinished,
                    other => return Err(unknown_variant(other)),
                },
                ended: json.opt("ended")?,
            })
        }
    }

    impl FromJson for Edge {
        fn from_json(json: &Json) -> Result<Self, JsonError> {
            Ok(Edge {
                from: json.get("from")?,
                to: json.get("to")?,
                dep: json.get("dep")?,
                row: json.get("row")?,
                predicate: json.opt("predicate")?.unwrap_or(false),
                from_step: json.opt("from_step")?,
                to_step: json.opt("to_step")?,
                because: json.get("because")?,
            })
        }
    }

    impl FromJson for Row {
        fn from_json(json: &Json) -> Result<Self, JsonError> {
            Ok(Row::new(json.get::<String>("table")?, json.get::<String>("key")?))
        }
    }

    impl FromJson for Prevented {
        fn from_json(json: &Json) -> Result<Self, JsonError> {
            Ok(Prevented {
                anomaly: json.get("anomaly")?,
                cycle: json.get("cycle")?,
                cancelled: json.get("cancelled")?,
                code: json.opt("code")?,
            })
        }
    }

    impl FromJson for Dep {
        fn from_json(json: &Json) -> Result<Self, JsonError> {
            match json.str()? {
                "ww" => Ok(Dep::Ww),
                "wr" => Ok(Dep::Wr),
                "rw" => Ok(Dep::Rw),
                other => Err(unknown_variant(other)),
            }
        }
    }

    impl FromJson for crate::atlas::Observation {
        fn from_json(json: &Json) -> Result<Self, JsonError> {
            Ok(crate::atlas::Observation {
                server: json.get("server")?,
                observed_at: json.get("observed_at")?,
                rows: json.get("rows")?,
            })
        }
    }

    impl FromJson for crate::atlas::ObservedRow {
        fn from_json(json: &Json) -> Result<Self, JsonError> {
            Ok(crate::atlas::ObservedRow {
                id: json.get("id")?,
                class: json.get("class")?,
                name: json.get("name")?,
                cells: json.get("cells")?,
            })
        }
    }

    impl FromJson for crate::atlas::ObservedCell {
        fn from_json(json: &Json) -> Result<Self, JsonError> {
            Ok(crate::atlas::ObservedCell {
                level: json.get("level")?,
                cell: json.get("cell")?,
                instead: json.opt("instead")?,
                run_id: json.get("run_id")?,
                spec_id: json.get("spec_id")?,
            })
        }
    }

    impl FromJson for crate::atlas::Cell {
        fn from_json(json: &Json) -> Result<Self, JsonError> {
            use crate::atlas::Cell;
            Ok(match json.tag("kind")? {
                "allowed" => Cell::Allowed {
                    anomaly: json.get("anomaly")?,
                },
                "refused" => Cell::Refused {
                    code: json.get("code")?,
                },
                "waited" => Cell::Waited,
                "unseen" => Cell::Unseen,
                other => return Err(unknown_variant(other)),
            })
        }
    }

    impl FromJson for Anomaly {
        fn from_json(json: &Json) -> Result<Self, JsonError> {
            const ALL: [Anomaly; 12] = [
                Anomaly::DirtyWrite,
                Anomaly::AbortedRead,
                Anomaly::IntermediateRead,
                Anomaly::CircularInformationFlow,
                Anomaly::LostUpdate,
                Anomaly::ReadSkew,
                Anomaly::PredicateManyPreceders,
                Anomaly::WriteSkew,
                Anomaly::PredicateWriteSkew,
                Anomaly::ReadOnlyTransaction,
                Anomaly::AntiDependencyCycle,
                Anomaly::ObservedTransactionVanishes,
            ];
            let name = json.str()?;
            ALL.into_iter()
                .find(|a| a.id() == name)
                .ok_or_else(|| unknown_variant(name))
        }
    }
}

impl FromJson for crate::spec::PlayedStep {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(crate::spec::PlayedStep {
            name: json.get("name")?,
            session: json.get("session")?,
            waited: json.get("waited")?,
            error: json.opt("error")?,
        })
    }
}

impl FromJson for Milestone {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(match json.tag("kind")? {
            "active" => Milestone::Active,
            "standby" => Milestone::Standby,
            "published" => Milestone::Published {
                count: json.get("count")?,
            },
            "committed" => Milestone::Committed {
                partition: json.get("partition")?,
                offset: json.get("offset")?,
            },
            other => return Err(unknown_variant(other)),
        })
    }
}

/// `seq` and `at_ms` beside the kind's own members (serde's `flatten`).
impl FromJson for Event {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Event {
            seq: json.get("seq")?,
            at_ms: json.get("at_ms")?,
            kind: EventKind::from_json(json)?,
        })
    }
}

impl FromJson for ServerFrame {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        let msg = match json.tag("type")? {
            "queued" => ServerMsg::Queued {
                position: json.get("position")?,
            },
            "started" => ServerMsg::Started {
                run_id: json.get("run_id")?,
            },
            "event" => ServerMsg::Event {
                event: json.get("event")?,
            },
            "error" => ServerMsg::Error {
                code: json.get("code")?,
                message: json.get("message")?,
            },
            "done" => ServerMsg::Done {
                run_id: json.get("run_id")?,
                outcome: json.get("outcome")?,
            },
            #[cfg(feature = "rooms")]
            "room" => ServerMsg::Room {
                room: json.get("room")?,
                participants: json.get("participants")?,
                asked: json.opt("asked")?,
            },
            #[cfg(feature = "rooms")]
            "tally" => ServerMsg::Tally {
                counts: json.get("counts")?,
                revealed: json.get("revealed")?,
            },
            #[cfg(feature = "rooms")]
            "lesson" => ServerMsg::Lesson(crate::lesson::live::Live::from_json(json)?),
            other => return Err(unknown_variant(other)),
        };
        Ok(ServerFrame { v: json.get("v")?, msg })
    }
}

#[cfg(feature = "rooms")]
impl FromJson for crate::lesson::live::Live {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(crate::lesson::live::Live {
            lesson: json.get("lesson")?,
            title: json.get("title")?,
            rounds: json.get("rounds")?,
            round: json.opt("round")?,
            leaderboard: json.get("leaderboard")?,
            shown: json.get("shown")?,
        })
    }
}

#[cfg(feature = "rooms")]
impl FromJson for crate::lesson::live::LiveRound {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(crate::lesson::live::LiveRound {
            number: json.get("number")?,
            title: json.get("title")?,
            scenario: json.get("scenario")?,
            variant: json.get("variant")?,
            postgres: json.opt("postgres")?,
            question: json.get("question")?,
            choices: json.get("choices")?,
            answer: json.opt("answer")?,
            explain: json.opt("explain")?,
            picked: json.opt("picked")?.unwrap_or_default(),
        })
    }
}

#[cfg(feature = "rooms")]
impl FromJson for crate::lesson::live::Standing {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(crate::lesson::live::Standing {
            handle: json.get("handle")?,
            right: json.get("right")?,
            answered: json.get("answered")?,
            millis: json.get("millis")?,
        })
    }
}

impl FromJson for StoredRun {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(StoredRun {
            id: json.get("id")?,
            scenario: json.get("scenario")?,
            variant: json.get("variant")?,
            outcome: json.get("outcome")?,
            events: json.get("events")?,
        })
    }
}

impl FromJson for crate::recording::Recording {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(crate::recording::Recording {
            format: json.get("format")?,
            version: json.get("version")?,
            stamp: json.get("stamp")?,
            scenario: json.get("scenario")?,
            spec: json.opt("spec")?,
            run: json.get("run")?,
            // The embed app reads no proof (see the `proof` feature).
            #[cfg(feature = "proof")]
            proof: json.opt("proof")?,
            #[cfg(not(feature = "proof"))]
            proof: None,
            chapters: json.opt("chapters")?.unwrap_or_default(),
        })
    }
}

impl FromJson for crate::chapters::Chapter {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(crate::chapters::Chapter {
            at: json.get("at")?,
            caption: json.get("caption")?,
        })
    }
}

impl FromJson for crate::recording::Stamp {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(crate::recording::Stamp {
            recorded_at: json.get("recorded_at")?,
            racelab: json.get("racelab")?,
            commit: json.get("commit")?,
            services: json.get("services")?,
            variant: json.get("variant")?,
            variant_label: json.get("variant_label")?,
        })
    }
}

impl FromJson for crate::recording::ServiceVersion {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(crate::recording::ServiceVersion {
            service: json.get("service")?,
            version: json.opt("version")?,
        })
    }
}

impl FromJson for crate::recording::SpecRecording {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(crate::recording::SpecRecording {
            text: json.get("text")?,
            matrix: json.get("matrix")?,
        })
    }
}

impl FromJson for VariantInfo {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(VariantInfo {
            id: json.get("id")?,
            label: json.get("label")?,
            description: json.get("description")?,
        })
    }
}

impl FromJson for ScenarioInfo {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(ScenarioInfo {
            id: json.get("id")?,
            title: json.get("title")?,
            hook: json.get("hook")?,
            about: json.get("about")?,
            steppable: json.get("steppable")?,
            workload: json.get("workload")?,
            variants: json.get("variants")?,
            predict: json.opt("predict")?,
        })
    }
}

impl FromJson for Prediction {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Prediction {
            question: json.get("question")?,
            choices: json.get("choices")?,
        })
    }
}

impl FromJson for Choice {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Choice {
            id: json.get("id")?,
            label: json.get("label")?,
            only_on: json.opt("only_on")?,
        })
    }
}

impl FromJson for Lab {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Lab {
            id: json.get("id")?,
            title: json.get("title")?,
            services: json.get("services")?,
            scenarios: json.get("scenarios")?,
        })
    }
}

#[cfg(feature = "rooms")]
impl FromJson for crate::catalog::RoomsReach {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(crate::catalog::RoomsReach {
            across_replicas: json.get("across_replicas")?,
            detail: json.get("detail")?,
        })
    }
}

impl FromJson for crate::catalog::PostgresServer {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(crate::catalog::PostgresServer {
            name: json.get("name")?,
            version: json.get("version")?,
            major: json.get("major")?,
            up: json.get("up")?,
            detail: json.get("detail")?,
        })
    }
}

impl FromJson for ScenarioStatus {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(ScenarioStatus {
            scenario: json.get("scenario")?,
            down: json.get("down")?,
            #[cfg(feature = "rooms")]
            rooms: json.opt("rooms")?,
        })
    }
}

/// The lab's members beside `down` (serde's `flatten`).
impl FromJson for LabStatus {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(LabStatus {
            lab: Lab::from_json(json)?,
            down: json.get("down")?,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::too_many_lines, reason = "a test reads top to bottom as the story it checks")]

    use super::*;
    use crate::json;
    use serde::Serialize;
    use serde::de::DeserializeOwned;
    use std::fmt::Debug;

    /// serde writes `value`; both serde and we read it back; all three agree.
    fn reads_like_serde<T: Serialize + DeserializeOwned + FromJson + PartialEq + Debug>(value: &T) {
        let text = serde_json::to_string(value).expect("serde writes it");
        let by_serde: T = serde_json::from_str(&text).expect("serde reads it");
        assert_eq!(&by_serde, value, "serde round trip of {text}");
        assert_eq!(json::from_str::<T>(&text).as_ref(), Ok(value), "our reading of {text}");
    }

    fn text(s: &str) -> String {
        s.to_owned()
    }

    fn headers() -> Vec<(String, String)> {
        vec![
            (text("Idempotency-Key"), text("order-7731")),
            (text("Retry-After"), text("1")),
        ]
    }

    fn ledger() -> Ledger {
        Ledger {
            tables: vec![Table {
                name: text("budget"),
                columns: vec![
                    text("id"),
                    text("spent"),
                    text("note"),
                    text("ok"),
                    text("ratio"),
                    text("nothing"),
                ],
                key_columns: 1,
                rows: vec![vec![
                    Value::Int(1),
                    Value::Int(-6_000),
                    Value::Text(text("it's \"quoted\"\n\u{1F600}")),
                    Value::Bool(true),
                    Value::Float(0.25),
                    Value::Null,
                ]],
            }],
        }
    }

    fn verdict() -> Verdict {
        Verdict::judge(
            vec![Check::new("spent ≤ $5,000", "spent = $6,000", false)],
            "Overspent",
            "both read $0",
        )
    }

    /// One event of every kind, with optional members both present and absent.
    fn every_kind() -> Vec<EventKind> {
        let actor = || text("alice");
        vec![
            EventKind::RunStarted {
                run_id: text("r1"),
                scenario: text("isolation/write-skew"),
                variant: text("serializable"),
                title: text("Write skew"),
                actors: vec![ActorInfo {
                    name: actor(),
                    detail: text("SERIALIZABLE"),
                }],
                server: text("PostgreSQL 16.4"),
            },
            EventKind::Step {
                actor: actor(),
                service: Service::Postgres,
                text: text("UPDATE budget SET spent = spent + $1"),
                params: vec![Value::Int(800), Value::Text(text("design")), Value::Null],
                detail: None,
            },
            EventKind::Step {
                actor: text("phone"),
                service: Service::Http,
                text: text("POST /payments"),
                params: vec![],
                detail: Some(Detail::Request {
                    method: text("POST"),
                    path: text("/payments"),
                    headers: headers(),
                    body: text("{\"amount\":4200}"),
                    to: Some(text("shop")),
                }),
            },
            EventKind::Step {
                actor: text("relay"),
                service: Service::Kafka,
                text: text("produce"),
                params: vec![],
                detail: Some(Detail::Message {
                    topic: text("payments"),
                    partition: None,
                    offset: None,
                    key: None,
                    value: None,
                    headers: vec![],
                }),
            },
            EventKind::Result {
                actor: actor(),
                summary: text("1 row"),
                rows: Some(Rows {
                    columns: vec![text("spent")],
                    rows: vec![vec![Value::Int(0)]],
                }),
                detail: None,
            },
            EventKind::Result {
                actor: text("phone"),
                summary: text("200"),
                rows: None,
                detail: Some(Detail::Response {
                    status: 200,
                    headers: headers(),
                    body: text("{}"),
                }),
            },
            EventKind::Result {
                actor: text("relay"),
                summary: text("delivered"),
                rows: None,
                detail: Some(Detail::Message {
                    topic: text("payments"),
                    partition: Some(0),
                    offset: Some(41),
                    key: Some(text("p-1")),
                    value: Some(text("{}")),
                    headers: headers(),
                }),
            },
            EventKind::Blocked {
                actor: text("bob"),
                by: vec![actor()],
                on: if cfg!(feature = "proof") {
                    Some(text("a row lock"))
                } else {
                    None
                },
            },
            EventKind::Unblocked {
                actor: text("bob"),
                waited_ms: 112,
            },
            EventKind::Error {
                actor: text("bob"),
                kind: ErrorKind::Database,
                code: Some(text("40001")),
                message: text("could not serialize access"),
            },
            EventKind::Error {
                actor: text("bob"),
                kind: ErrorKind::Timeout,
                code: None,
                message: text("no answer"),
            },
            EventKind::Commit { actor: actor() },
            EventKind::Rollback { actor: actor() },
            EventKind::ProcessStarted {
                actor: text("relay"),
                pid: 4242,
                restart: true,
            },
            EventKind::Crash {
                actor: text("relay"),
                point: text("after-produce"),
            },
            EventKind::ProcessExited {
                actor: text("relay"),
                code: Some(-1),
            },
            EventKind::ProcessExited {
                actor: text("relay"),
                code: None,
            },
            EventKind::Lease {
                actor: text("w1"),
                key: text("lock:report"),
                change: LeaseChange::Acquired,
                ttl_ms: Some(10_000),
                fence: Some(34),
            },
            EventKind::Lease {
                actor: text("w1"),
                key: text("lock:report"),
                change: LeaseChange::Lost,
                ttl_ms: None,
                fence: None,
            },
            EventKind::Note {
                actor: actor(),
                text: text("pooled"),
            },
            EventKind::Say {
                actor: Some(actor()),
                line: text("[alice] commit"),
            },
            EventKind::Say {
                actor: None,
                line: text("--- write skew ---"),
            },
            EventKind::Ledger {
                moment: Moment::Expected,
                ledger: ledger(),
            },
            EventKind::Progress {
                label: text("relayed"),
                done: 7,
                total: 1_000,
            },
            EventKind::Verdict { verdict: verdict() },
            EventKind::Verdict {
                verdict: Verdict {
                    kind: crate::VerdictKind::Unstated,
                    headline: text("No rule was stated"),
                    reason: text("add # check: lines"),
                    checks: Vec::new(),
                },
            },
            EventKind::Reveal {
                choice: text("bob-40001"),
                why: text("no one-at-a-time order explains both checks"),
            },
            EventKind::Paused {
                actor: text("bob"),
                service: Service::Redis,
                step: text("COMMIT"),
            },
            EventKind::Done {
                outcome: Outcome::Failed {
                    message: text("Redis is down"),
                },
            },
            EventKind::Milestone {
                actor: text("relay"),
                milestone: Milestone::Published { count: 3 },
            },
            EventKind::Milestone {
                actor: text("notifier"),
                milestone: Milestone::Committed {
                    partition: 2,
                    offset: 7,
                },
            },
            EventKind::Milestone {
                actor: text("relay B"),
                milestone: Milestone::Standby,
            },
            EventKind::Milestone {
                actor: text("relay A"),
                milestone: Milestone::Active,
            },
            EventKind::Permutation {
                index: 3,
                steps: vec![
                    crate::spec::PlayedStep {
                        name: text("a_leave"),
                        session: text("alice"),
                        waited: true,
                        error: None,
                    },
                    crate::spec::PlayedStep {
                        name: text("b_commit"),
                        session: text("bob"),
                        waited: false,
                        error: Some(text("40001")),
                    },
                ],
                outcome: text("b_commit 40001 · checks held"),
            },
            EventKind::Proof {
                proof: Box::new(sample_proof()),
            },
        ]
    }

    #[cfg(feature = "proof")]
    #[test]
    fn an_atlas_observation_reads_like_serde() {
        use crate::atlas::{Cell, Observation, ObservedCell, ObservedRow};
        let cell = |level: &str, cell| ObservedCell {
            level: text(level),
            cell,
            instead: None,
            run_id: text("9cad669b86d1"),
            spec_id: text("8f5dac6435009041"),
        };
        reads_like_serde(&Observation {
            server: text("PostgreSQL 15.20"),
            observed_at: text("2026-12-05 01:46:07 UTC"),
            rows: vec![ObservedRow {
                id: text("g2-item"),
                class: text("G2-item"),
                name: text("write skew"),
                cells: vec![
                    cell(
                        "READ COMMITTED",
                        Cell::Allowed {
                            anomaly: crate::proof::Anomaly::WriteSkew,
                        },
                    ),
                    ObservedCell {
                        instead: Some(crate::proof::Anomaly::ReadSkew),
                        ..cell("REPEATABLE READ", Cell::Waited)
                    },
                    cell("SERIALIZABLE", Cell::Refused { code: text("40001") }),
                    cell("SERIALIZABLE", Cell::Unseen),
                ],
            }],
        });
    }

    /// A proof with every part filled: a cycle, a prevented one, an edge of each kind.
    fn sample_proof() -> crate::proof::Proof {
        use crate::proof::*;
        let edge = |from, to, dep, predicate| Edge {
            from,
            to,
            dep,
            row: Row::new(text("test"), text("1")),
            predicate,
            from_step: Some(2),
            to_step: None,
            because: text("alice read test 1 = 10, which bob then replaced with 11"),
        };
        Proof {
            txns: vec![
                Txn {
                    name: text("alice"),
                    session: text("alice"),
                    end: End::Committed,
                    ended: Some(4),
                },
                Txn {
                    name: text("bob"),
                    session: text("bob"),
                    end: End::Aborted {
                        code: Some(text("40001")),
                    },
                    ended: None,
                },
                Txn {
                    name: text("carol"),
                    session: text("carol"),
                    end: End::Unfinished,
                    ended: None,
                },
            ],
            edges: vec![
                edge(0, 1, Dep::Rw, true),
                edge(1, 0, Dep::Wr, false),
                edge(1, 0, Dep::Ww, false),
            ],
            would_have: 1,
            cycle: vec![0, 1],
            anomaly: Some(Anomaly::ReadOnlyTransaction),
            prevented: Some(Prevented {
                anomaly: Anomaly::PredicateWriteSkew,
                cycle: vec![1, 2],
                cancelled: 1,
                code: Some(text("40001")),
            }),
            order: vec![0, 2],
            lines: vec![
                text("However, …"),
                text("No order of one-at-a-time runs explains this."),
            ],
        }
    }

    /// Which variant a kind is; exhaustive, so a new kind does not compile until it has a
    /// sample above (and, by the test, a reader).
    fn variant_index(kind: &EventKind) -> usize {
        match kind {
            EventKind::RunStarted { .. } => 0,
            EventKind::Step { .. } => 1,
            EventKind::Result { .. } => 2,
            EventKind::Blocked { .. } => 3,
            EventKind::Unblocked { .. } => 4,
            EventKind::Error { .. } => 5,
            EventKind::Commit { .. } => 6,
            EventKind::Rollback { .. } => 7,
            EventKind::ProcessStarted { .. } => 8,
            EventKind::Crash { .. } => 9,
            EventKind::ProcessExited { .. } => 10,
            EventKind::Lease { .. } => 11,
            EventKind::Note { .. } => 12,
            EventKind::Say { .. } => 13,
            EventKind::Ledger { .. } => 14,
            EventKind::Progress { .. } => 15,
            EventKind::Verdict { .. } => 16,
            EventKind::Reveal { .. } => 17,
            EventKind::Paused { .. } => 18,
            EventKind::Done { .. } => 19,
            EventKind::Milestone { .. } => 20,
            EventKind::Permutation { .. } => 21,
            EventKind::Proof { .. } => 22,
        }
    }

    #[test]
    fn every_event_kind_reads_like_serde() {
        let kinds = every_kind();
        let mut seen: Vec<usize> = kinds.iter().map(variant_index).collect();
        seen.dedup();
        assert_eq!(seen, (0..=22).collect::<Vec<_>>(), "one sample of every kind, in order");
        for (i, kind) in kinds.into_iter().enumerate() {
            let event = Event {
                seq: i as u64 + 1,
                at_ms: 1_000 * i as u64,
                kind,
            };
            if !cfg!(feature = "proof") && matches!(event.kind, EventKind::Proof { .. }) {
                // The embed's reader takes a proof for an event nothing draws.
                let text = serde_json::to_string(&event).expect("serde writes it");
                let read = json::from_str::<Event>(&text).map(|e| e.kind);
                assert!(matches!(read, Ok(EventKind::Milestone { .. })), "{read:?}");
                continue;
            }
            reads_like_serde(&event);
        }
    }

    // The whole reader's; the embed's, without rooms and proofs, below.
    #[cfg(all(feature = "rooms", feature = "proof"))]
    #[test]
    fn every_frame_reads_like_serde() {
        let frames = [
            ServerMsg::Queued { position: 3 },
            ServerMsg::Started { run_id: text("r1") },
            ServerMsg::Event {
                event: Event {
                    seq: 1,
                    at_ms: 0,
                    kind: EventKind::Commit { actor: text("alice") },
                },
            },
            ServerMsg::Done {
                run_id: text("r1"),
                outcome: Outcome::Completed,
            },
            ServerMsg::Done {
                run_id: text("r1"),
                outcome: Outcome::Cancelled,
            },
            ServerMsg::Room {
                room: text("K7QX2M"),
                participants: 3,
                asked: None,
            },
            ServerMsg::Room {
                room: text("K7QX2M"),
                participants: 3,
                asked: Some((text("isolation/write-skew"), text("serializable"))),
            },
            ServerMsg::Tally {
                counts: vec![(text("both-commit"), 2), (text("bob-40001"), 1)],
                revealed: true,
            },
            ServerMsg::Lesson(crate::lesson::live::Live {
                lesson: text("0123456789abcdef"),
                title: text("Isolation in an hour"),
                rounds: 5,
                round: None,
                leaderboard: vec![],
                shown: false,
            }),
            ServerMsg::Lesson(crate::lesson::live::Live {
                lesson: text("0123456789abcdef"),
                title: text("Isolation"),
                rounds: 2,
                round: Some(crate::lesson::live::LiveRound {
                    number: 2,
                    title: text("At SERIALIZABLE"),
                    scenario: text("isolation/write-skew"),
                    variant: text("serializable"),
                    postgres: Some(18),
                    question: text("Whose \"COMMIT\" fails?"),
                    choices: vec![(text("alice"), text("Alice's")), (text("bob"), text("Bob's"))],
                    answer: Some(text("bob")),
                    explain: Some(text("SSI saw the cycle.")),
                    picked: vec![(text("ana"), text("alice"))],
                }),
                leaderboard: vec![crate::lesson::live::Standing {
                    handle: text("ana"),
                    right: 1,
                    answered: 2,
                    millis: 4_200,
                }],
                shown: true,
            }),
        ];
        for msg in frames {
            reads_like_serde(&ServerFrame::from(msg));
        }
        /// Exhaustive, so a new code does not compile until it is in the list below (and read).
        fn listed(code: ErrorCode) -> usize {
            match code {
                ErrorCode::BadFrame => 0,
                ErrorCode::BadVersion => 1,
                ErrorCode::UnknownScenario => 2,
                ErrorCode::UnknownVariant => 3,
                ErrorCode::Busy => 4,
                ErrorCode::NoRun => 5,
                ErrorCode::NotStepMode => 6,
                ErrorCode::NotSteppable => 7,
                ErrorCode::ServiceDown => 8,
                ErrorCode::ShuttingDown => 9,
                ErrorCode::QueueFull => 10,
                ErrorCode::TooMany => 11,
                ErrorCode::TooSlow => 12,
                ErrorCode::UnknownRoom => 13,
                ErrorCode::BadToken => 14,
                ErrorCode::RoomFull => 15,
                ErrorCode::InRoom => 16,
                ErrorCode::HandleTaken => 17,
            }
        }
        let codes = [
            ErrorCode::BadFrame,
            ErrorCode::BadVersion,
            ErrorCode::UnknownScenario,
            ErrorCode::UnknownVariant,
            ErrorCode::Busy,
            ErrorCode::NoRun,
            ErrorCode::NotStepMode,
            ErrorCode::NotSteppable,
            ErrorCode::ServiceDown,
            ErrorCode::ShuttingDown,
            ErrorCode::QueueFull,
            ErrorCode::TooMany,
            ErrorCode::TooSlow,
            ErrorCode::UnknownRoom,
            ErrorCode::BadToken,
            ErrorCode::RoomFull,
            ErrorCode::InRoom,
            ErrorCode::HandleTaken,
        ];
        assert_eq!(codes.map(listed), std::array::from_fn(|i| i), "every code, in order");
        for code in codes {
            reads_like_serde(&ServerFrame::from(ServerMsg::Error {
                code,
                message: text("no"),
            }));
        }
        let kinds = [
            ErrorKind::Http,
            ErrorKind::Redis,
            ErrorKind::Broker,
            ErrorKind::Connection,
            ErrorKind::Crash,
        ];
        for kind in kinds {
            reads_like_serde(&EventKind::Error {
                actor: text("shop"),
                kind,
                code: None,
                message: text("m"),
            });
        }
        for change in [LeaseChange::Refreshed, LeaseChange::Released] {
            reads_like_serde(&change);
        }
        for moment in [Moment::Before, Moment::After, Moment::Reference] {
            reads_like_serde(&moment);
        }
        for service in [Service::Redis, Service::Process] {
            reads_like_serde(&service);
        }
    }

    // The whole reader's; the embed's, without rooms and proofs, below.
    #[cfg(all(feature = "rooms", feature = "proof"))]
    #[test]
    fn the_catalog_and_a_stored_run_read_like_serde() {
        let lab = Lab {
            id: text("isolation"),
            title: text("Isolation"),
            services: vec![Service::Postgres, Service::Redis],
            scenarios: vec![ScenarioInfo {
                id: text("isolation/write-skew"),
                title: text("Write skew"),
                hook: text("Two managers"),
                about: text("Watch bob"),
                steppable: true,
                workload: false,
                variants: vec![VariantInfo {
                    id: text("serializable"),
                    label: text("SERIALIZABLE"),
                    description: text("retry"),
                }],
                predict: Some(Prediction {
                    question: text("What happens?"),
                    choices: vec![
                        Choice {
                            id: text("bob-40001"),
                            label: text("Bob's COMMIT fails with 40001"),
                            only_on: Some(Service::Postgres),
                        },
                        Choice {
                            id: text("both-commit"),
                            label: text("Both commit"),
                            only_on: None,
                        },
                    ],
                }),
            }],
        };
        reads_like_serde(&ScenarioStatus {
            scenario: lab.scenarios[0].clone(),
            down: vec![Service::Kafka],
            #[cfg(feature = "rooms")]
            rooms: Some(crate::catalog::RoomsReach {
                across_replicas: false,
                detail: text("Redis is down"),
            }),
        });
        reads_like_serde(&vec![crate::catalog::PostgresServer {
            name: text("127.0.0.1:5432"),
            version: text("PostgreSQL 15.20"),
            major: 15,
            up: false,
            detail: text("connection refused"),
        }]);
        reads_like_serde(&vec![LabStatus {
            lab,
            down: vec![Service::Kafka],
        }]);
        reads_like_serde(&StoredRun {
            id: text("r1"),
            scenario: text("isolation/write-skew"),
            variant: text("serializable"),
            outcome: Outcome::Completed,
            events: every_kind()
                .into_iter()
                .zip(1..)
                .map(|(kind, seq)| Event { seq, at_ms: seq, kind })
                .collect(),
        });
    }

    // The whole reader's; the embed's, without rooms and proofs, below.
    #[cfg(all(feature = "rooms", feature = "proof"))]
    #[test]
    fn a_recording_reads_like_serde() {
        use crate::recording::{Recording, ServiceVersion, SpecRecording, Stamp};
        let events: Vec<Event> = every_kind()
            .into_iter()
            .zip(1..)
            .map(|(kind, seq)| Event { seq, at_ms: seq, kind })
            .collect();
        let recording = Recording {
            format: text(crate::recording::FORMAT),
            version: crate::recording::VERSION,
            stamp: Stamp {
                recorded_at: text("2026-12-06T05:30:12Z"),
                racelab: text("0.1.0"),
                commit: text("bcd062fc4fb7"),
                services: vec![
                    ServiceVersion {
                        service: Service::Postgres,
                        version: Some(text("PostgreSQL 18.6")),
                    },
                    ServiceVersion {
                        service: Service::Kafka,
                        version: None,
                    },
                ],
                variant: text("p1"),
                variant_label: text("Permutation 1"),
            },
            scenario: ScenarioInfo {
                id: text("spec/0123456789abcdef"),
                title: text("My race"),
                hook: text("two sessions"),
                about: text(""),
                steppable: true,
                workload: false,
                variants: vec![],
                predict: None,
            },
            spec: Some(SpecRecording {
                text: text("session s\nstep a { SELECT 1; }\n"),
                matrix: events.clone(),
            }),
            run: StoredRun {
                id: text("r1"),
                scenario: text("spec/0123456789abcdef"),
                variant: text("p1"),
                outcome: Outcome::Completed,
                events,
            },
            proof: None,
            chapters: vec![crate::chapters::Chapter {
                at: 1,
                caption: text("Will it? \u{1F914} <b>"),
            }],
        };
        reads_like_serde(&recording);
        assert_eq!(
            crate::recording::read(&serde_json::to_string(&recording).expect("serde writes it")).as_ref(),
            Ok(&recording)
        );
    }

    #[test]
    fn an_old_stored_error_reads_its_sqlstate() {
        let old = r#"{"seq":1,"at_ms":0,"type":"error","actor":"bob","sqlstate":"40001","message":"m"}"#;
        let by_serde: Event = serde_json::from_str(old).expect("serde reads it");
        assert_eq!(json::from_str::<Event>(old), Ok(by_serde));
    }

    #[test]
    fn values_follow_serdes_untagged_order() {
        for (text, expected) in [
            ("9223372036854775807", Value::Int(i64::MAX)),
            ("18446744073709551615", Value::Float(18_446_744_073_709_551_615.0)),
            ("2.5", Value::Float(2.5)),
            ("1e2", Value::Float(100.0)),
            ("-0", Value::Float(-0.0)),
        ] {
            assert_eq!(
                serde_json::from_str::<Value>(text).expect("serde"),
                expected,
                "serde on {text}"
            );
            assert_eq!(json::from_str::<Value>(text), Ok(expected), "ours on {text}");
        }
        assert!(json::from_str::<Value>("[1]").is_err());
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let error = json::from_str::<ServerFrame>(r#"{"v":1,"type":"explode"}"#).expect_err("no such type");
        assert_eq!(error.to_string(), "unknown variant `explode`");
        let error = json::from_str::<Event>(r#"{"seq":1,"at_ms":0,"type":"blocked","actor":"bob","by":[1]}"#)
            .expect_err("a number for a name");
        assert_eq!(error.to_string(), "by: 0: expected a string");
        assert!(
            serde_json::from_str::<Event>(r#"{"seq":1,"at_ms":0,"type":"blocked","actor":"bob","by":[1]}"#).is_err()
        );
    }

    /// The embed app's reader (`--no-default-features`): a room's frame is refused as unknown
    /// (it follows no room), a proof read as an event nothing draws, a wait's lock left out.
    #[cfg(not(any(feature = "rooms", feature = "proof")))]
    #[test]
    fn the_embed_reads_no_room_and_no_proof() {
        let room = r#"{"v":1,"type":"room","room":"K7QX2M","participants":3}"#;
        assert!(json::from_str::<ServerFrame>(room).is_err());
        let proof = r#"{"seq":1,"at_ms":1,"type":"proof","proof":{"txns":[],"edges":[]}}"#;
        assert_eq!(
            json::from_str::<Event>(proof).map(|e| e.kind),
            Ok(EventKind::Milestone {
                actor: String::new(),
                milestone: Milestone::Active
            })
        );
        let blocked = r#"{"seq":2,"at_ms":2,"type":"blocked","actor":"bob","by":["alice"],"on":{"kind":"row"}}"#;
        assert!(matches!(
            json::from_str::<Event>(blocked).map(|e| e.kind),
            Ok(EventKind::Blocked { on: None, .. })
        ));
    }
}
