//! The timeline as the browser draws it: one lane per actor, one row per thing that happened.
//!
//! Pure: built from the event stream alone, so a live run, a replay of a stored run and a test
//! all draw the same picture. A statement and its result share one card; a lock wait is a card
//! saying who holds the lock, and the lane stays marked as waiting on every row until the actor
//! is released.

use crate::event::{ActorInfo, Detail, ErrorKind, LeaseChange, Rows};
use crate::{Event, EventKind, Service, Value};
use serde::{Deserialize, Serialize};

/// Why a step failed, as a card shows it: a badge (the SQLSTATE, the HTTP status, `timeout`) and
/// the message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub kind: ErrorKind,
    pub code: Option<String>,
    pub message: String,
}

impl Failure {
    /// The badge: the code when there is one, else the kind (`timeout`).
    pub fn badge(&self) -> String {
        self.code.clone().unwrap_or_else(|| self.kind.label().to_owned())
    }
}

/// What one card on the timeline shows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Card {
    /// A statement (or Redis command, HTTP request, broker message) and, once known, how it
    /// ended.
    Statement {
        /// Which service it talks to: the card says so at a glance.
        service: Service,
        text: String,
        params: Vec<Value>,
        /// The request or message sent, for steps that are not SQL (boxed: most steps are SQL).
        sent: Option<Box<Detail>>,
        /// `UPDATE 1`, `SELECT 1`, `201 Created`…; `None` while it runs (or waits).
        result: Option<String>,
        rows: Option<Rows>,
        /// The response or delivered message.
        received: Option<Box<Detail>>,
        error: Option<Failure>,
    },
    /// The actor started waiting for the actors named.
    Waiting {
        by: Vec<String>,
    },
    /// The actor's wait ended after `waited_ms`: with the lock and its statement's result, or
    /// with an error (a deadlock, a serialization failure, a lock timeout). The statement that
    /// waited finishes here, where it happened, not up on its own card.
    Released {
        waited_ms: u64,
        result: Option<String>,
        rows: Option<Rows>,
        error: Option<Failure>,
    },
    Commit,
    Rollback,
    /// The actor's process started, or started again after it died (a new pid).
    Process {
        pid: u32,
        restart: bool,
    },
    /// The actor's process died at a crash point.
    Crash {
        point: String,
    },
    /// The actor's process exited by itself.
    Exited {
        code: Option<i32>,
    },
    /// A transcript line spoken as this actor (`waiting for alice's row lock`), or a remark on
    /// its lane. Lines the actor spoke one after the other (a psql result, a header, its rule,
    /// its rows) are one note, joined by newlines, so a table stays a table.
    Note {
        line: String,
    },
}

/// One row: a card in one lane, and which lanes are waiting while it happens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub seq: u64,
    pub at_ms: u64,
    pub lane: usize,
    pub card: Card,
    /// Lanes whose actor is blocked at this row (drawn as a bar through the row, below the card
    /// when the card is the blocked actor's own: its waiting card, a note while it waits).
    pub waiting: Vec<usize>,
    /// Leases held at this row, each drawn as a band through its holder's lane.
    #[serde(default)]
    pub leases: Vec<LeaseMark>,
    /// Leases whose TTL ran out since the row before, marked in their holder's lane: the holder
    /// may not know yet.
    #[serde(default)]
    pub expired: Vec<LeaseMark>,
    /// What holders did to their leases since the row before: a watchdog's refresh, or a release
    /// or refresh that found the lease gone (`Lost`), marked in their lanes.
    #[serde(default)]
    pub lease_changes: Vec<(usize, LeaseChange, String)>,
    /// A stepped run paused (for the reader's Next) since the row before: the time between the
    /// two is partly the reader's, not the run's.
    #[serde(default)]
    pub after_pause: bool,
}

/// A lease as a row shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeaseMark {
    pub lane: usize,
    pub key: String,
    /// How much of its TTL is left at this row (at the moment of expiry, for an expired one: 0).
    pub left_ms: u64,
    /// The first row of this holding (where the band is labelled).
    pub fresh: bool,
    pub fence: Option<i64>,
}

/// A lease the fold is tracking.
struct Held {
    lane: usize,
    key: String,
    expires_ms: u64,
    fence: Option<i64>,
    shown: bool,
}

/// The whole picture.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub lanes: Vec<ActorInfo>,
    pub rows: Vec<Row>,
    /// Every actor that took a lease, lanes or not (fifty racing requests, of which only a few
    /// get a lane): drawn as a compact strip, the current holder lit.
    #[serde(default)]
    pub crowd: Vec<CrowdMember>,
}

/// One actor of the crowd strip.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrowdMember {
    pub name: String,
    /// Whether it holds a lease at the latest event (its TTL not yet run out).
    pub holds: bool,
    /// How many times it took a lease.
    pub times_held: u32,
    /// How many of its leases ran out under it (a release or refresh found them gone).
    pub lost: u32,
}

/// The crowd's leases: per member, its latest lease's expiry.
#[derive(Default)]
struct Crowd {
    members: Vec<(CrowdMember, Option<u64>)>,
}

impl Crowd {
    fn member(&mut self, name: &str) -> &mut (CrowdMember, Option<u64>) {
        let i = match self.members.iter().position(|(m, _)| m.name == name) {
            Some(i) => i,
            None => {
                self.members.push((
                    CrowdMember {
                        name: name.to_owned(),
                        holds: false,
                        times_held: 0,
                        lost: 0,
                    },
                    None,
                ));
                self.members.len() - 1
            }
        };
        &mut self.members[i]
    }

    fn apply(&mut self, actor: &str, change: LeaseChange, ttl_ms: Option<u64>, at_ms: u64) {
        let (member, expires) = self.member(actor);
        match change {
            LeaseChange::Acquired => {
                member.times_held += 1;
                *expires = Some(at_ms + ttl_ms.unwrap_or(u64::MAX / 2));
            }
            LeaseChange::Refreshed => *expires = Some(at_ms + ttl_ms.unwrap_or(0)),
            LeaseChange::Released => *expires = None,
            LeaseChange::Lost => {
                member.lost += 1;
                *expires = None;
            }
        }
    }

    /// The members, in name order, as they stand at `now_ms`.
    fn at(mut self, now_ms: u64) -> Vec<CrowdMember> {
        self.members.sort_by(|(a, _), (b, _)| a.name.cmp(&b.name));
        self.members
            .into_iter()
            .map(|(mut member, expires)| {
                member.holds = expires.is_some_and(|e| e > now_ms);
                member
            })
            .collect()
    }
}

impl Timeline {
    /// Builds the timeline from events in order. Actors the header did not announce get a lane
    /// when they first appear.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Timeline {
        let mut fold = Fold::default();
        for event in events {
            fold.apply(event);
        }
        fold.finish()
    }
}

/// What the fold carries from one event to the next, besides the timeline it builds. Each event
/// kind has one step below ([`Fold::apply`] dispatches), which either returns the card of a new
/// row or folds the event into what is already there.
#[derive(Default)]
struct Fold {
    timeline: Timeline,
    /// Lanes whose actor waits for a lock now.
    blocked: Vec<usize>,
    /// Leases held now, in their holders' lanes.
    held: Vec<Held>,
    /// Leases that ran out since the last row.
    expired: Vec<LeaseMark>,
    /// Refreshes and losses of leases since the last row.
    changes: Vec<(usize, LeaseChange, String)>,
    /// Every caller that took a lease, lanes or not.
    crowd: Crowd,
    /// The latest event's time.
    now_ms: u64,
    /// Whether a header announced the lanes: then an actor it did not announce that only takes
    /// leases is one of many unseen callers, not a lane of its own.
    announced: bool,
    /// Per lane: the row of its statement still waiting for a result.
    open: Vec<Option<usize>>,
    /// The lane whose transcript line was the stream's last event, if it was one.
    said: Option<usize>,
    /// A stepped run paused since the last row.
    paused: bool,
}

impl Fold {
    /// Folds one event in.
    fn apply(&mut self, event: &Event) {
        let previous_say = self.said.take();
        self.paused |= matches!(event.kind, EventKind::Paused { .. });
        if let EventKind::RunStarted { actors, .. } = &event.kind {
            self.header(actors);
            return;
        }
        self.expire_leases(event.at_ms);
        self.now_ms = self.now_ms.max(event.at_ms);
        let Some(actor) = event.kind.actor() else { return };
        if let EventKind::Lease { change, ttl_ms, .. } = &event.kind {
            self.crowd.apply(actor, *change, *ttl_ms, event.at_ms);
            // An actor without a lane (one of many unseen) is in the crowd strip only.
            if self.announced && !self.timeline.lanes.iter().any(|l| l.name == actor) {
                return;
            }
        }
        let lane = self.lane_of(actor, "");
        let card = match &event.kind {
            EventKind::Step {
                service,
                text,
                params,
                detail,
                ..
            } => Some(statement(*service, text, params, detail)),
            EventKind::Result {
                summary, rows, detail, ..
            } => self.result(lane, summary, rows, detail),
            EventKind::Error {
                kind, code, message, ..
            } => self.error(
                lane,
                Failure {
                    kind: *kind,
                    code: code.clone(),
                    message: message.clone(),
                },
            ),
            EventKind::Blocked { by, .. } => Some(self.blocked(lane, by)),
            EventKind::Unblocked { waited_ms, .. } => Some(self.released(lane, *waited_ms)),
            EventKind::Commit { .. } => self.ended(lane, Card::Commit),
            EventKind::Rollback { .. } => self.ended(lane, Card::Rollback),
            EventKind::ProcessStarted { pid, restart, .. } => Some(self.process(
                lane,
                Card::Process {
                    pid: *pid,
                    restart: *restart,
                },
            )),
            EventKind::Crash { point, .. } => Some(self.crashed(lane, point)),
            EventKind::ProcessExited { code, .. } => Some(self.process(lane, Card::Exited { code: *code })),
            EventKind::Say { line, .. } => self.say(lane, strip_actor(line, actor), previous_say),
            EventKind::Note { text, .. } => Some(Card::Note { line: text.clone() }),
            EventKind::Lease {
                key,
                change,
                ttl_ms,
                fence,
                ..
            } => {
                self.lease(lane, key, *change, *ttl_ms, *fence, event.at_ms);
                None
            }
            _ => None,
        };
        if let Some(card) = card {
            self.push(event, lane, card);
        }
    }

    /// The header announces the lanes, in its order.
    fn header(&mut self, actors: &[ActorInfo]) {
        self.announced = true;
        for actor in actors {
            self.lane_of(&actor.name, &actor.detail);
        }
    }

    /// A lease whose TTL has run out by `at_ms` expired, whatever its holder believes.
    fn expire_leases(&mut self, at_ms: u64) {
        let expired = &mut self.expired;
        self.held.retain(|h| {
            if h.expires_ms > at_ms {
                return true;
            }
            expired.push(LeaseMark {
                lane: h.lane,
                key: h.key.clone(),
                left_ms: 0,
                fresh: false,
                fence: h.fence,
            });
            false
        });
    }

    /// A statement's result lands on its open card (or the released card of a wait); a result
    /// with no statement open is a note.
    fn result(&mut self, lane: usize, summary: &str, rows: &Option<Rows>, detail: &Option<Detail>) -> Option<Card> {
        match self.open_card(lane) {
            Some(Card::Statement {
                result,
                rows: card_rows,
                received,
                ..
            }) => {
                *result = Some(summary.to_owned());
                card_rows.clone_from(rows);
                *received = detail.clone().map(Box::new);
            }
            Some(Card::Released {
                result,
                rows: card_rows,
                ..
            }) => {
                *result = Some(summary.to_owned());
                card_rows.clone_from(rows);
            }
            _ => {
                return Some(Card::Note {
                    line: summary.to_owned(),
                });
            }
        }
        self.open[lane] = None;
        None
    }

    /// A failure lands on the statement it ended; one that came without a statement of its own
    /// is a card of its own, against its service.
    fn error(&mut self, lane: usize, failure: Failure) -> Option<Card> {
        if let Some(Card::Statement { error, .. } | Card::Released { error, .. }) = self.open_card(lane) {
            *error = Some(failure);
            self.open[lane] = None;
            return None;
        }
        let last = self.timeline.rows.iter().rev().find_map(|row| match &row.card {
            Card::Statement { service, .. } if row.lane == lane => Some(*service),
            _ => None,
        });
        Some(Card::Statement {
            service: service_of_error(failure.kind, last),
            text: String::new(),
            params: Vec::new(),
            sent: None,
            result: None,
            rows: None,
            received: None,
            error: Some(failure),
        })
    }

    /// The lane waits from here; the statement's outcome will land on the released card.
    fn blocked(&mut self, lane: usize, by: &[String]) -> Card {
        self.blocked.push(lane);
        self.open[lane] = None;
        Card::Waiting { by: by.to_vec() }
    }

    /// The lane's wait ended; the statement that waited finishes on this card.
    fn released(&mut self, lane: usize, waited_ms: u64) -> Card {
        self.blocked.retain(|l| *l != lane);
        Card::Released {
            waited_ms,
            result: None,
            rows: None,
            error: None,
        }
    }

    /// A commit or rollback: the COMMIT (or ROLLBACK) statement itself becomes its card.
    fn ended(&mut self, lane: usize, ended: Card) -> Option<Card> {
        let ended = match self.open_card(lane) {
            Some(card @ Card::Statement { .. }) => {
                *card = ended;
                None
            }
            _ => Some(ended),
        };
        self.open[lane] = None;
        ended
    }

    /// A process started or exited: nothing of the lane is open any more.
    fn process(&mut self, lane: usize, card: Card) -> Card {
        self.open[lane] = None;
        card
    }

    /// The lane's process died: a statement in flight never gets a result, a wait ends.
    fn crashed(&mut self, lane: usize, point: &str) -> Card {
        self.open[lane] = None;
        self.blocked.retain(|l| *l != lane);
        Card::Crash {
            point: point.to_owned(),
        }
    }

    /// A transcript line: joined to the lane's note when the lane spoke the line before (a psql
    /// result, a header, its rule, its rows), so a table stays a table.
    fn say(&mut self, lane: usize, line: &str, previous_say: Option<usize>) -> Option<Card> {
        self.said = Some(lane);
        if previous_say == Some(lane)
            && let Some(Row {
                card: Card::Note { line: note },
                ..
            }) = self.timeline.rows.last_mut()
        {
            note.push('\n');
            note.push_str(line);
            return None;
        }
        Some(Card::Note { line: line.to_owned() })
    }

    /// A lease taken, refreshed, released or lost: the band through its holder's lane changes;
    /// a refresh and a loss are marked on the next row.
    fn lease(
        &mut self,
        lane: usize,
        key: &str,
        change: LeaseChange,
        ttl_ms: Option<u64>,
        fence: Option<i64>,
        at_ms: u64,
    ) {
        if matches!(change, LeaseChange::Refreshed | LeaseChange::Lost) {
            self.changes.push((lane, change, key.to_owned()));
        }
        match change {
            LeaseChange::Acquired => {
                self.held.retain(|h| h.key != key);
                self.held.push(Held {
                    lane,
                    key: key.to_owned(),
                    expires_ms: at_ms + ttl_ms.unwrap_or(u64::MAX / 2),
                    fence,
                    shown: false,
                });
            }
            LeaseChange::Refreshed => {
                if let Some(h) = self.held.iter_mut().find(|h| h.key == key && h.lane == lane) {
                    h.expires_ms = at_ms + ttl_ms.unwrap_or(0);
                }
            }
            LeaseChange::Released | LeaseChange::Lost => self.held.retain(|h| !(h.key == key && h.lane == lane)),
        }
    }

    /// A new row: `card` in `lane`, with the waits, leases and marks of this moment.
    fn push(&mut self, event: &Event, lane: usize, card: Card) {
        let is_statement = matches!(card, Card::Statement { error: None, .. } | Card::Released { .. });
        let leases = self
            .held
            .iter_mut()
            .map(|h| {
                let fresh = !h.shown;
                h.shown = true;
                LeaseMark {
                    lane: h.lane,
                    key: h.key.clone(),
                    left_ms: h.expires_ms.saturating_sub(event.at_ms),
                    fresh,
                    fence: h.fence,
                }
            })
            .collect();
        self.timeline.rows.push(Row {
            seq: event.seq,
            at_ms: event.at_ms,
            lane,
            card,
            waiting: self.blocked.clone(),
            leases,
            expired: std::mem::take(&mut self.expired),
            lease_changes: std::mem::take(&mut self.changes),
            after_pause: std::mem::take(&mut self.paused),
        });
        if is_statement {
            self.open[lane] = Some(self.timeline.rows.len() - 1);
        }
    }

    /// The timeline, with the crowd as it stands at the last event.
    fn finish(mut self) -> Timeline {
        self.timeline.crowd = self.crowd.at(self.now_ms);
        self.timeline
    }

    /// The lane of actor `name`, made (with `detail`) when it first appears.
    fn lane_of(&mut self, name: &str, detail: &str) -> usize {
        if let Some(i) = self.timeline.lanes.iter().position(|l| l.name == name) {
            return i;
        }
        self.timeline.lanes.push(ActorInfo {
            name: name.to_owned(),
            detail: detail.to_owned(),
        });
        self.open.push(None);
        self.timeline.lanes.len() - 1
    }

    /// The card of the lane's open statement, if it has one.
    fn open_card(&mut self, lane: usize) -> Option<&mut Card> {
        let row = self.open.get(lane).copied().flatten()?;
        self.timeline.rows.get_mut(row).map(|r| &mut r.card)
    }
}

/// A step's card, waiting for its result.
fn statement(service: Service, text: &str, params: &[Value], detail: &Option<Detail>) -> Card {
    Card::Statement {
        service,
        text: text.to_owned(),
        params: params.to_vec(),
        sent: detail.clone().map(Box::new),
        result: None,
        rows: None,
        received: None,
        error: None,
    }
}

/// The service an error that came without a statement of its own is shown against: the one its
/// kind names (a broker's error is not SQL), else the one its lane last talked to, else
/// PostgreSQL.
fn service_of_error(kind: ErrorKind, last: Option<Service>) -> Service {
    match kind {
        ErrorKind::Database => Service::Postgres,
        ErrorKind::Redis => Service::Redis,
        ErrorKind::Broker => Service::Kafka,
        ErrorKind::Http => Service::Http,
        ErrorKind::Timeout | ErrorKind::Connection | ErrorKind::Crash => last.unwrap_or(Service::Postgres),
    }
}

/// `[bob] commit` → `commit`.
fn strip_actor<'a>(line: &'a str, actor: &str) -> &'a str {
    line.strip_prefix('[')
        .and_then(|rest| rest.strip_prefix(actor))
        .and_then(|rest| rest.strip_prefix("] "))
        .unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_without_a_statement_is_shown_against_its_own_service() {
        assert_eq!(
            service_of_error(ErrorKind::Broker, Some(Service::Postgres)),
            Service::Kafka
        );
        assert_eq!(service_of_error(ErrorKind::Redis, None), Service::Redis);
        assert_eq!(
            service_of_error(ErrorKind::Connection, Some(Service::Http)),
            Service::Http
        );
        assert_eq!(service_of_error(ErrorKind::Timeout, None), Service::Postgres);
        let events = [
            ev(1, step("notifier", "poll")),
            ev(
                2,
                EventKind::Error {
                    actor: "Kafka".into(),
                    kind: ErrorKind::Broker,
                    code: None,
                    message: "stopped answering".into(),
                },
            ),
        ];
        let t = Timeline::from_events(&events);
        assert!(
            matches!(
                &t.rows[1].card,
                Card::Statement {
                    service: Service::Kafka,
                    error: Some(_),
                    ..
                }
            ),
            "{:?}",
            t.rows[1].card
        );
    }

    fn ev(seq: u64, kind: EventKind) -> Event {
        Event { seq, at_ms: seq, kind }
    }

    fn step(actor: &str, text: &str) -> EventKind {
        EventKind::Step {
            actor: actor.into(),
            service: crate::Service::Postgres,
            text: text.into(),
            params: vec![],
            detail: None,
        }
    }

    fn result(actor: &str, summary: &str) -> EventKind {
        EventKind::Result {
            actor: actor.into(),
            summary: summary.into(),
            rows: None,
            detail: None,
        }
    }

    #[test]
    fn a_result_with_no_statement_open_is_a_note_of_its_own() {
        let events = [
            ev(1, step("alice", "SELECT 1")),
            ev(2, result("alice", "SELECT 1")),
            ev(3, result("alice", "late")),
        ];
        let rows = Timeline::from_events(&events).rows;
        assert_eq!(rows.len(), 2);
        assert!(matches!(&rows[0].card, Card::Statement { result: Some(r), .. } if r == "SELECT 1"));
        assert_eq!(rows[1].card, Card::Note { line: "late".into() });
    }

    #[test]
    fn a_wait_ends_with_its_release_which_takes_the_statements_outcome() {
        let events = [
            ev(1, step("bob", "UPDATE teams")),
            ev(
                2,
                EventKind::Blocked {
                    actor: "bob".into(),
                    by: vec!["alice".into()],
                    on: None,
                },
            ),
            ev(3, step("alice", "COMMIT")),
            ev(
                4,
                EventKind::Unblocked {
                    actor: "bob".into(),
                    waited_ms: 40,
                },
            ),
            ev(5, result("bob", "UPDATE 1")),
        ];
        let timeline = Timeline::from_events(&events);
        let bob = timeline.lanes.iter().position(|l| l.name == "bob").expect("bob's lane");
        let waiting: Vec<bool> = timeline.rows.iter().map(|r| r.waiting.contains(&bob)).collect();
        assert_eq!(
            waiting,
            [false, true, true, false],
            "bob waits from his waiting card to his release"
        );
        assert_eq!(
            timeline.rows[3].card,
            Card::Released {
                waited_ms: 40,
                result: Some("UPDATE 1".into()),
                rows: None,
                error: None
            }
        );
        assert!(
            matches!(&timeline.rows[0].card, Card::Statement { result: None, .. }),
            "not on the card that waited"
        );
    }

    #[test]
    fn a_crash_ends_the_wait_of_its_lane() {
        let events = [
            ev(1, step("relay", "SELECT … FOR UPDATE")),
            ev(
                2,
                EventKind::Blocked {
                    actor: "relay".into(),
                    by: vec!["psql".into()],
                    on: None,
                },
            ),
            ev(
                3,
                EventKind::Crash {
                    actor: "relay".into(),
                    point: "after_produce".into(),
                },
            ),
            ev(4, step("psql", "SELECT 1")),
        ];
        let rows = Timeline::from_events(&events).rows;
        assert_eq!(
            rows[2].card,
            Card::Crash {
                point: "after_produce".into()
            }
        );
        assert!(
            rows[2].waiting.is_empty() && rows[3].waiting.is_empty(),
            "a dead process waits for nothing"
        );
    }

    #[test]
    fn a_lost_lease_is_marked_in_its_holders_lane_and_an_unseen_caller_gets_no_lane() {
        let header = EventKind::RunStarted {
            run_id: "r".into(),
            scenario: "s".into(),
            variant: "v".into(),
            title: "t".into(),
            actors: vec![ActorInfo {
                name: "A".into(),
                detail: String::new(),
            }],
            server: "Redis".into(),
        };
        let lease = |actor: &str, change| EventKind::Lease {
            actor: actor.into(),
            key: "lock:1".into(),
            change,
            ttl_ms: Some(100),
            fence: None,
        };
        let events = [
            ev(0, header),
            ev(1, lease("A", LeaseChange::Acquired)),
            ev(2, lease("w17", LeaseChange::Acquired)),
            ev(3, lease("A", LeaseChange::Lost)),
            ev(4, step("A", "DEL lock:1")),
        ];
        let timeline = Timeline::from_events(&events);
        assert_eq!(
            timeline.lanes.len(),
            1,
            "w17, one of many callers, is in the crowd only"
        );
        assert_eq!(timeline.crowd.len(), 2);
        assert_eq!(timeline.rows.len(), 1);
        assert_eq!(
            timeline.rows[0].lease_changes,
            [(0, LeaseChange::Lost, "lock:1".to_owned())]
        );
    }

    #[test]
    fn a_row_after_a_readers_pause_says_so() {
        let paused = EventKind::Paused {
            actor: "bob".into(),
            service: crate::Service::Postgres,
            step: "SELECT 2".into(),
        };
        let events = vec![
            ev(1, step("alice", "SELECT 1")),
            ev(2, paused),
            ev(900, step("bob", "SELECT 2")),
        ];
        let rows = Timeline::from_events(&events).rows;
        assert_eq!(
            rows.iter().map(|r| (r.at_ms, r.after_pause)).collect::<Vec<_>>(),
            [(1, false), (900, true)]
        );
    }

    #[test]
    fn results_join_their_statement_and_waits_mark_the_lane() {
        let events = vec![
            ev(
                1,
                EventKind::RunStarted {
                    run_id: "r".into(),
                    scenario: "s".into(),
                    variant: "v".into(),
                    title: "t".into(),
                    actors: vec![
                        ActorInfo {
                            name: "alice".into(),
                            detail: "READ COMMITTED".into(),
                        },
                        ActorInfo {
                            name: "bob".into(),
                            detail: "READ COMMITTED".into(),
                        },
                    ],
                    server: "PostgreSQL".into(),
                },
            ),
            ev(2, step("alice", "UPDATE teams")),
            ev(
                3,
                EventKind::Result {
                    actor: "alice".into(),
                    summary: "UPDATE 1".into(),
                    rows: None,
                    detail: None,
                },
            ),
            ev(4, step("bob", "UPDATE teams")),
            ev(
                5,
                EventKind::Blocked {
                    actor: "bob".into(),
                    by: vec!["alice".into()],
                    on: None,
                },
            ),
            ev(6, EventKind::Commit { actor: "alice".into() }),
            ev(
                7,
                EventKind::Unblocked {
                    actor: "bob".into(),
                    waited_ms: 12,
                },
            ),
            ev(
                8,
                EventKind::Result {
                    actor: "bob".into(),
                    summary: "UPDATE 1".into(),
                    rows: None,
                    detail: None,
                },
            ),
        ];
        let t = Timeline::from_events(&events);
        assert_eq!(t.lanes.len(), 2);
        let lanes: Vec<usize> = t.rows.iter().map(|r| r.lane).collect();
        assert_eq!(lanes, vec![0, 1, 1, 0, 1]);
        assert!(matches!(&t.rows[0].card, Card::Statement { result: Some(r), .. } if r == "UPDATE 1"));
        assert!(
            matches!(&t.rows[1].card, Card::Statement { result: None, .. }),
            "bob's result comes after his wait"
        );
        assert!(matches!(&t.rows[4].card, Card::Released { waited_ms: 12, result: Some(r), .. } if r == "UPDATE 1"));
        assert_eq!(t.rows[2].waiting, vec![1], "bob's own waiting card marks his lane");
        assert_eq!(t.rows[3].waiting, vec![1], "alice commits while bob waits");
        assert!(t.rows[4].waiting.is_empty(), "released");
    }

    #[test]
    fn a_commit_statement_becomes_the_commit_card() {
        let events = vec![
            ev(1, step("alice", "COMMIT")),
            ev(2, EventKind::Commit { actor: "alice".into() }),
        ];
        let t = Timeline::from_events(&events);
        assert_eq!(t.rows.len(), 1);
        assert_eq!(t.rows[0].card, Card::Commit);
    }

    #[test]
    fn errors_land_on_the_statement_and_notes_lose_the_actor_prefix() {
        let events = vec![
            ev(1, step("bob", "COMMIT")),
            ev(
                2,
                EventKind::Error {
                    actor: "bob".into(),
                    kind: ErrorKind::Database,
                    code: Some("40001".into()),
                    message: "could not".into(),
                },
            ),
            ev(
                3,
                EventKind::Say {
                    actor: Some("bob".into()),
                    line: "[bob] retry the whole transaction".into(),
                },
            ),
        ];
        let t = Timeline::from_events(&events);
        assert!(matches!(&t.rows[0].card, Card::Statement { error: Some(f), .. } if f.badge() == "40001"));
        assert_eq!(
            t.rows[1].card,
            Card::Note {
                line: "retry the whole transaction".into()
            }
        );
    }

    #[test]
    fn lines_an_actor_speaks_in_a_row_are_one_note() {
        let say = |actor: &str, line: &str| EventKind::Say {
            actor: Some(actor.into()),
            line: line.into(),
        };
        let events = vec![
            ev(1, say("psql", " key | status ")),
            ev(2, say("psql", "-----+--------")),
            ev(3, say("psql", "(0 rows)")),
            ev(4, say("phone", "attempt 1: 201")),
            ev(5, say("psql", "(1 row)")),
        ];
        let t = Timeline::from_events(&events);
        let notes: Vec<&Card> = t.rows.iter().map(|r| &r.card).collect();
        assert_eq!(
            notes,
            [
                &Card::Note {
                    line: " key | status \n-----+--------\n(0 rows)".into()
                },
                &Card::Note {
                    line: "attempt 1: 201".into()
                },
                &Card::Note { line: "(1 row)".into() },
            ]
        );
    }

    #[test]
    fn each_service_keeps_its_kind_and_a_timeout_is_badged_as_one() {
        let events = vec![
            ev(
                1,
                EventKind::Step {
                    actor: "phone".into(),
                    service: Service::Http,
                    text: "POST /payments".into(),
                    params: vec![],
                    detail: None,
                },
            ),
            ev(
                2,
                EventKind::Error {
                    actor: "phone".into(),
                    kind: ErrorKind::Timeout,
                    code: None,
                    message: "no answer: timed out".into(),
                },
            ),
            ev(
                3,
                EventKind::Step {
                    actor: "alice".into(),
                    service: Service::Redis,
                    text: "SET lock:wallet:42 t NX PX 2000".into(),
                    params: vec![],
                    detail: None,
                },
            ),
        ];
        let t = Timeline::from_events(&events);
        assert!(
            matches!(&t.rows[0].card, Card::Statement { service: Service::Http, error: Some(f), .. } if f.badge() == "timeout")
        );
        assert!(matches!(
            &t.rows[1].card,
            Card::Statement {
                service: Service::Redis,
                ..
            }
        ));
    }

    #[test]
    fn a_crash_ends_the_statement_in_flight_and_a_restart_gets_its_own_card() {
        let events = vec![
            ev(
                1,
                EventKind::ProcessStarted {
                    actor: "relay".into(),
                    pid: 10,
                    restart: false,
                },
            ),
            ev(2, step("relay", "UPDATE outbox")),
            ev(
                3,
                EventKind::Crash {
                    actor: "relay".into(),
                    point: "after_produce".into(),
                },
            ),
            ev(
                4,
                EventKind::ProcessStarted {
                    actor: "relay".into(),
                    pid: 11,
                    restart: true,
                },
            ),
            ev(5, step("relay", "SELECT 1")),
        ];
        let t = Timeline::from_events(&events);
        let cards: Vec<&Card> = t.rows.iter().map(|r| &r.card).collect();
        assert_eq!(
            cards[0],
            &Card::Process {
                pid: 10,
                restart: false
            }
        );
        assert!(matches!(cards[1], Card::Statement { result: None, .. }));
        assert_eq!(
            cards[2],
            &Card::Crash {
                point: "after_produce".into()
            }
        );
        assert_eq!(cards[3], &Card::Process { pid: 11, restart: true });
        assert_eq!(t.rows.len(), 5);
    }

    fn lease(actor: &str, change: LeaseChange, ttl_ms: Option<u64>) -> EventKind {
        EventKind::Lease {
            actor: actor.into(),
            key: "lock:wallet:42".into(),
            change,
            ttl_ms,
            fence: None,
        }
    }

    fn at(seq: u64, at_ms: u64, kind: EventKind) -> Event {
        Event { seq, at_ms, kind }
    }

    #[test]
    fn a_lease_bands_its_holders_lane_until_its_ttl_runs_out() {
        let events = vec![
            at(1, 0, lease("a", LeaseChange::Acquired, Some(100))),
            at(2, 10, step("a", "GET wallet:42:balance")),
            at(3, 50, step("a", "SET wallet:42:balance 90")),
            at(4, 120, step("b", "SET lock:wallet:42 t NX PX 100")),
            at(5, 130, lease("b", LeaseChange::Acquired, Some(100))),
            at(6, 140, step("b", "GET wallet:42:balance")),
            at(7, 150, lease("b", LeaseChange::Released, None)),
            at(8, 160, step("a", "EVAL <release script>")),
        ];
        let t = Timeline::from_events(&events);
        let marks: Vec<Vec<(usize, u64, bool)>> = t
            .rows
            .iter()
            .map(|r| r.leases.iter().map(|l| (l.lane, l.left_ms, l.fresh)).collect())
            .collect();
        assert_eq!(marks[0], vec![(0, 90, true)], "a holds it, 90 ms left");
        assert_eq!(marks[1], vec![(0, 50, false)]);
        assert_eq!(
            marks[2],
            Vec::<(usize, u64, bool)>::new(),
            "a's lease ran out at 100 ms"
        );
        assert_eq!(t.rows[2].expired.iter().map(|e| e.lane).collect::<Vec<_>>(), vec![0]);
        assert_eq!(marks[3], vec![(1, 90, true)], "now b holds it");
        assert!(t.rows[4].leases.is_empty(), "b released it");
        assert!(t.rows[4].expired.is_empty(), "a release is not an expiry");
    }

    #[test]
    fn a_refresh_keeps_the_lease_alive() {
        let events = vec![
            at(1, 0, lease("a", LeaseChange::Acquired, Some(100))),
            at(2, 90, lease("a", LeaseChange::Refreshed, Some(100))),
            at(3, 150, step("a", "GET wallet:42:balance")),
        ];
        let t = Timeline::from_events(&events);
        assert_eq!(t.rows[0].leases[0].left_ms, 40);
        assert!(t.rows[0].expired.is_empty());
        assert_eq!(
            t.rows[0].lease_changes,
            vec![(0, LeaseChange::Refreshed, "lock:wallet:42".to_owned())]
        );
    }

    #[test]
    fn the_crowd_counts_every_lease_holder_and_lights_the_current_one() {
        let events = vec![
            ev(
                1,
                EventKind::RunStarted {
                    run_id: "r".into(),
                    scenario: "s".into(),
                    variant: "v".into(),
                    title: "t".into(),
                    actors: vec![ActorInfo {
                        name: "req01".into(),
                        detail: "Redis".into(),
                    }],
                    server: "Redis".into(),
                },
            ),
            at(2, 0, lease("req01", LeaseChange::Acquired, Some(100))),
            at(3, 10, lease("req01", LeaseChange::Released, None)),
            at(4, 20, lease("req37", LeaseChange::Acquired, Some(100))),
            at(5, 30, lease("req02", LeaseChange::Lost, None)),
        ];
        let t = Timeline::from_events(&events);
        assert_eq!(t.lanes.len(), 1, "the unseen callers get no lane");
        let crowd: Vec<(&str, bool, u32, u32)> = t
            .crowd
            .iter()
            .map(|m| (m.name.as_str(), m.holds, m.times_held, m.lost))
            .collect();
        assert_eq!(
            crowd,
            vec![("req01", false, 1, 0), ("req02", false, 0, 1), ("req37", true, 1, 0)]
        );
    }
}
