//! Recordings: a race that really happened on a real database, kept in one file
//! (`*.racelab.json`) that plays anywhere, with no racelab server behind it.
//!
//! A recording is what a finished run showed: its event stream (the timeline, the ledgers, the
//! verdict, the proof where the run has one, the waits), the scenario as the catalog describes
//! it (or the spec's text and its every-permutation matrix), and a [`Stamp`] saying where and
//! when it happened. Every view that folds a run's events already knows how to draw one.
//!
//! The file is versioned ([`VERSION`]): a recording made by this version plays in every later
//! one (fields added later are optional), and a file from a later format is refused by name
//! ([`Unplayable::FromTheFuture`]) rather than half-drawn. The JSON Schema is
//! `docs/recording.schema.json`; the format is described in `docs/recordings.md`.

use crate::catalog::{ScenarioInfo, Service};
use crate::event::{Event, EventKind};
use crate::protocol::StoredRun;
use serde::{Deserialize, Serialize};

/// What the `format` field of every recording says.
pub const FORMAT: &str = "racelab-recording";
/// The format's version this build writes, and the newest it plays.
pub const VERSION: u32 = 1;
/// The largest recording a player reads: a run's events are capped at 16 MB as they are made,
/// and the rest of a recording is small beside them.
pub const MAX_BYTES: usize = 20 << 20;

/// One recorded run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    /// Always [`FORMAT`]: what tells a recording from any other JSON.
    pub format: String,
    /// The format's version ([`VERSION`] when written by this build).
    pub version: u32,
    pub stamp: Stamp,
    /// The scenario as the catalog describes it (for a spec: its permutations as variants).
    pub scenario: ScenarioInfo,
    /// A spec's own text and every permutation's outcome; absent for a lab scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<SpecRecording>,
    /// The run: its events, in order, as the server sent them.
    pub run: StoredRun,
    /// Why it happened, for a lab run (a spec's run carries its proof among its events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<crate::proof::Proof>,
    /// Steps its author marked for the player to stop at and ask ([`crate::chapters`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chapters: Vec<crate::chapters::Chapter>,
}

/// Where and when a recording was made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    /// `2026-12-06T05:30:12Z` (UTC).
    pub recorded_at: String,
    /// racelab's version (`0.1.0`) and the commit it was built from (`bcd062f`, or `unknown`).
    pub racelab: String,
    pub commit: String,
    /// Each service the run talked to, with the version it reported, in the order the
    /// scenario names them.
    pub services: Vec<ServiceVersion>,
    /// The variant played (`serializable`, or a spec's `p1`), and how the page labels it.
    pub variant: String,
    pub variant_label: String,
}

/// A service and the version it reported (none where it cannot say: racelab's own HTTP and
/// processes; a broker reports the protocol versions it speaks, as `Kafka protocol Produce
/// v9/Fetch v13`, since the Kafka protocol has no request for a broker's version).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServiceVersion {
    pub service: Service,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// A spec's part of a recording.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpecRecording {
    /// The spec, in the isolation tester's format.
    pub text: String,
    /// One `permutation` event per permutation, as the every-permutation run sent them.
    pub matrix: Vec<Event>,
}

impl Recording {
    /// The run's events as a player folds them: a lab run's proof, which the recording keeps
    /// beside them, put among them as a `proof` event (just before `done`, as a spec's run sends
    /// its own), so the player draws it from the file and never asks a server for it. A run
    /// with no proof gets an empty one: nothing is drawn, and nothing is asked.
    pub fn events_to_play(&self) -> Vec<Event> {
        let mut events = self.run.events.clone();
        if events.iter().any(|e| matches!(e.kind, EventKind::Proof { .. })) {
            return events;
        }
        let at = events
            .iter()
            .position(|e| matches!(e.kind, EventKind::Done { .. }))
            .unwrap_or(events.len());
        let (seq, at_ms) = events
            .get(at)
            .or_else(|| events.last())
            .map_or((1, 0), |e| (e.seq, e.at_ms));
        let proof = Box::new(self.proof.clone().unwrap_or_default());
        events.insert(
            at,
            Event {
                seq,
                at_ms,
                kind: EventKind::Proof { proof },
            },
        );
        for later in &mut events[at + 1..] {
            later.seq += 1;
        }
        events
    }

    /// The run with [`Recording::events_to_play`] for its events: what a picture of it draws.
    pub fn run_to_play(&self) -> StoredRun {
        StoredRun {
            id: self.run.id.clone(),
            scenario: self.run.scenario.clone(),
            variant: self.run.variant.clone(),
            outcome: self.run.outcome.clone(),
            events: self.events_to_play(),
        }
    }
}

/// Why a file cannot be played.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unplayable {
    /// Larger than [`MAX_BYTES`].
    TooLarge { bytes: usize },
    /// Not JSON, or cut short: where the reader stopped.
    NotJson(String),
    /// JSON, but no `format` field saying [`FORMAT`].
    NotARecording,
    /// Made by a later racelab, in a format this one does not know.
    FromTheFuture { version: u32 },
    /// A recording of this format with a field missing or of the wrong kind (edited by hand?).
    Damaged(String),
}

impl std::fmt::Display for Unplayable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unplayable::TooLarge { bytes } => write!(
                f,
                "this file is {} MB; a recording is at most {} MB",
                bytes.div_ceil(1 << 20),
                MAX_BYTES >> 20
            ),
            Unplayable::NotJson(why) => write!(f, "this file is not a whole recording ({why})"),
            Unplayable::NotARecording => write!(f, "this file is JSON, but not a racelab recording"),
            Unplayable::FromTheFuture { version } => write!(
                f,
                "this recording is in format {version}, made by a later racelab; this player reads \
                 formats up to {VERSION}"
            ),
            Unplayable::Damaged(why) => write!(f, "this recording is damaged: {why}"),
        }
    }
}

impl std::error::Error for Unplayable {}

/// Whether a file whose `format` and `version` fields are these can be played (checked before
/// the rest is read, so a later format is named rather than reported as damaged).
pub fn check_header(format: Option<&str>, version: Option<u64>) -> Result<(), Unplayable> {
    if format != Some(FORMAT) {
        return Err(Unplayable::NotARecording);
    }
    match version {
        Some(v) if v >= 1 && v <= u64::from(VERSION) => Ok(()),
        Some(v) if v > u64::from(VERSION) => Err(Unplayable::FromTheFuture {
            version: u32::try_from(v).unwrap_or(u32::MAX),
        }),
        _ => Err(Unplayable::Damaged("its version is not a format number".to_owned())),
    }
}

/// Reads a recording, or says why it cannot be played: too large, not JSON or cut short, not a
/// recording, from a later format, or damaged. The browser's JSON reader ([`crate::json`]), so
/// the player and `racelab` read a file alike.
pub fn read(text: &str) -> Result<Recording, Unplayable> {
    use crate::json::FromJson as _;
    if text.len() > MAX_BYTES {
        return Err(Unplayable::TooLarge { bytes: text.len() });
    }
    let json = crate::json::parse(text).map_err(|e| Unplayable::NotJson(e.to_string()))?;
    check_header(
        json.member("format").and_then(|f| f.str().ok()),
        json.member("version").and_then(|v| u64::from_json(v).ok()),
    )?;
    Recording::from_json(&json).map_err(|e| Unplayable::Damaged(e.to_string()))
}

impl Stamp {
    /// What the player says of the recording: `recorded on PostgreSQL 18.6, 6 Dec 2026`, every
    /// service that reported a version named, the distribution's suffix left out.
    pub fn line(&self) -> String {
        let versions: Vec<&str> = self
            .services
            .iter()
            .filter_map(|s| s.version.as_deref())
            .map(crate::versions::short)
            .collect();
        let on = match versions.as_slice() {
            [] => String::new(),
            [one] => format!(" on {one}"),
            [rest @ .., last] => format!(" on {} and {last}", rest.join(", ")),
        };
        match day_of(&self.recorded_at) {
            Some(day) => format!("recorded{on}, {day}"),
            None => format!("recorded{on}"),
        }
    }
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `2026-12-06T05:30:12Z` → `6 Dec 2026`; `None` for anything else.
pub fn day_of(timestamp: &str) -> Option<String> {
    let date = timestamp.get(..10)?;
    let mut parts = date.split('-');
    let year: u32 = parts.next()?.parse().ok()?;
    let month: usize = parts.next()?.parse().ok()?;
    let day: u32 = parts.next()?.parse().ok()?;
    let name = MONTHS.get(month.checked_sub(1)?)?;
    (1..=31).contains(&day).then(|| format!("{day} {name} {year}"))
}

/// The longest a run played again from its events takes, in milliseconds (a lesson's recording
/// round, in a room and taken alone): a run that took longer plays faster, keeping its rhythm.
pub const REPLAY_AT_MOST_MS: u64 = 8_000;

/// When an event recorded `at_ms` into a run whose last event came at `span` ms plays, in a
/// replay of at most `at_most` ms: at its own moment, or proportionally sooner.
pub fn replay_at(at_ms: u64, span: u64, at_most: u64) -> u64 {
    let span = span.max(1);
    at_ms.min(span).saturating_mul(at_most.min(span)) / span
}

/// Seconds since 1970 (UTC) as `2026-12-06T05:30:12Z`.
pub fn utc_timestamp(unix_seconds: u64) -> String {
    let (year, month, day, hour, minute, second) = crate::calendar::utc(unix_seconds);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// Where a recording's "Run it live" goes on the racelab server at `server` (the address an
/// author names with the player's `live=`): the scenario's page at the recorded variant, or a
/// spec's saved page. `None` unless `server` is an `http` or `https` address with a host: a
/// link made from a page's address must not run script (`javascript:`). The scenario and
/// variant come from the file, so every character that could end the path is escaped.
pub fn live_address(server: &str, scenario: &str, variant: &str) -> Option<String> {
    let server = server.trim().trim_end_matches('/');
    let host = server
        .strip_prefix("https://")
        .or_else(|| server.strip_prefix("http://"))?;
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c.is_control() || "\"'<>\\".contains(c)) {
        return None;
    }
    let page = crate::pages::scenario_page(&escaped(scenario));
    Some(format!("{server}{page}?variant={}", escaped(variant)))
}

/// `text` with every byte but letters, digits, `-`, `_`, `.` and `/` percent-encoded.
fn escaped(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn run_it_live_goes_to_the_authors_server_and_nowhere_else() {
        use super::live_address;
        assert_eq!(
            live_address("https://racelab.example/", "isolation/write-skew", "serializable").as_deref(),
            Some("https://racelab.example/lab/isolation/write-skew?variant=serializable")
        );
        assert_eq!(
            live_address("http://127.0.0.1:8080", "spec/0123abcd", "p2").as_deref(),
            Some("http://127.0.0.1:8080/s/0123abcd?variant=p2")
        );
        // What a hostile file names stays inside the path and the query.
        assert_eq!(
            live_address("https://r.example", "a?b#c", "x&y=\"z").as_deref(),
            Some("https://r.example/lab/a%3Fb%23c?variant=x%26y%3D%22z")
        );
        for refused in [
            "javascript:alert(1)",
            "data:text/html,x",
            "https://",
            "//r.example",
            "https://a b",
            "https://a\"b",
        ] {
            assert_eq!(
                live_address(refused, "isolation/write-skew", "serializable"),
                None,
                "{refused}"
            );
        }
    }

    use super::*;

    fn stamp(services: &[(Service, Option<&str>)]) -> Stamp {
        Stamp {
            recorded_at: "2026-12-06T05:30:12Z".to_owned(),
            racelab: "0.1.0".to_owned(),
            commit: "bcd062f".to_owned(),
            services: services
                .iter()
                .map(|(service, version)| ServiceVersion {
                    service: *service,
                    version: version.map(str::to_owned),
                })
                .collect(),
            variant: "serializable".to_owned(),
            variant_label: "SERIALIZABLE".to_owned(),
        }
    }

    #[test]
    fn the_stamp_says_where_and_when_in_a_line() {
        assert_eq!(
            stamp(&[(Service::Postgres, Some("PostgreSQL 18.6 (Debian 18.6-1)"))]).line(),
            "recorded on PostgreSQL 18.6, 6 Dec 2026"
        );
        assert_eq!(
            stamp(&[
                (Service::Postgres, Some("PostgreSQL 15.20")),
                (Service::Redis, Some("Redis 7.0.15")),
                (Service::Kafka, None)
            ])
            .line(),
            "recorded on PostgreSQL 15.20 and Redis 7.0.15, 6 Dec 2026"
        );
        let mut undated = stamp(&[]);
        undated.recorded_at = "yesterday".to_owned();
        assert_eq!(undated.line(), "recorded");
    }

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        // 2026-12-06 05:30:12 UTC, and the last second of a leap day.
        assert_eq!(utc_timestamp(1_796_535_012), "2026-12-06T05:30:12Z");
        assert_eq!(utc_timestamp(951_868_799), "2000-02-29T23:59:59Z");
        assert_eq!(day_of("2024-02-29T00:00:00Z").as_deref(), Some("29 Feb 2024"));
        assert_eq!(day_of("2024-13-01"), None);
        assert_eq!(day_of("2024-00-01"), None);
        assert_eq!(day_of("soon"), None);
    }

    fn recording(events: Vec<EventKind>, proof: Option<crate::proof::Proof>) -> Recording {
        Recording {
            format: FORMAT.to_owned(),
            version: VERSION,
            stamp: stamp(&[]),
            scenario: ScenarioInfo {
                id: "isolation/write-skew".to_owned(),
                title: "Write skew".to_owned(),
                hook: String::new(),
                about: String::new(),
                steppable: true,
                workload: false,
                variants: Vec::new(),
                predict: None,
            },
            spec: None,
            run: StoredRun {
                id: "r1".to_owned(),
                scenario: "isolation/write-skew".to_owned(),
                variant: "serializable".to_owned(),
                outcome: crate::Outcome::Completed,
                events: events
                    .into_iter()
                    .zip(1..)
                    .map(|(kind, seq)| Event {
                        seq,
                        at_ms: seq * 10,
                        kind,
                    })
                    .collect(),
            },
            proof,
            chapters: Vec::new(),
        }
    }

    #[test]
    fn a_lab_runs_proof_plays_among_its_events_before_done() {
        let commit = || EventKind::Commit {
            actor: "alice".to_owned(),
        };
        let done = || EventKind::Done {
            outcome: crate::Outcome::Completed,
        };
        let proof = crate::proof::Proof {
            lines: vec!["alice comes before bob".to_owned()],
            ..Default::default()
        };
        let played = recording(vec![commit(), done()], Some(proof.clone())).events_to_play();
        let kinds: Vec<(u64, u64, &EventKind)> = played.iter().map(|e| (e.seq, e.at_ms, &e.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                (1, 10, &commit()),
                (2, 20, &EventKind::Proof { proof: Box::new(proof) }),
                (3, 20, &done())
            ]
        );
        // None kept: an empty one, so a player asks no server.
        let played = recording(vec![commit(), done()], None).events_to_play();
        assert!(matches!(&played[1].kind, EventKind::Proof { proof } if proof.txns.is_empty()));
        // A spec's run carries its own: played as it is.
        let own = EventKind::Proof { proof: Box::default() };
        let events = vec![commit(), own.clone(), done()];
        let played = recording(events, None).events_to_play();
        assert_eq!(played.len(), 3);
        assert_eq!(played[1].kind, own);
    }

    #[test]
    fn a_later_format_is_named_and_other_json_is_not_a_recording() {
        assert_eq!(check_header(Some(FORMAT), Some(1)), Ok(()));
        assert_eq!(
            check_header(Some(FORMAT), Some(2)),
            Err(Unplayable::FromTheFuture { version: 2 })
        );
        assert_eq!(check_header(Some("asciicast"), Some(1)), Err(Unplayable::NotARecording));
        assert_eq!(check_header(None, None), Err(Unplayable::NotARecording));
        assert!(matches!(
            check_header(Some(FORMAT), Some(0)),
            Err(Unplayable::Damaged(_))
        ));
        assert_eq!(
            Unplayable::FromTheFuture { version: 2 }.to_string(),
            "this recording is in format 2, made by a later racelab; this player reads formats up to 1"
        );
    }

    #[test]
    fn a_file_that_is_not_a_whole_recording_says_why() {
        assert!(matches!(
            read("{\"format\": \"racelab-rec"),
            Err(Unplayable::NotJson(_))
        ));
        assert_eq!(read("{\"cast\": 1}"), Err(Unplayable::NotARecording));
        assert_eq!(
            read("{\"format\": \"racelab-recording\", \"version\": 7, \"stamp\": null}"),
            Err(Unplayable::FromTheFuture { version: 7 })
        );
        match read("{\"format\": \"racelab-recording\", \"version\": 1}") {
            Err(Unplayable::Damaged(why)) => assert!(why.contains("stamp"), "{why}"),
            other => panic!("{other:?}"),
        }
        let huge = " ".repeat(MAX_BYTES + 1);
        assert!(matches!(read(&huge), Err(Unplayable::TooLarge { .. })));
    }

    #[test]
    fn a_replay_keeps_a_short_run_s_moments_and_squeezes_a_long_one_into_its_limit() {
        assert_eq!(
            replay_at(1_200, 3_000, REPLAY_AT_MOST_MS),
            1_200,
            "a 3 s run at its own pace"
        );
        assert_eq!(
            replay_at(30_000, 60_000, 8_000),
            4_000,
            "halfway through a minute: 4 s of 8"
        );
        assert_eq!(replay_at(60_000, 60_000, 8_000), 8_000);
        assert_eq!(replay_at(70_000, 60_000, 8_000), 8_000, "never past the end");
        assert_eq!(replay_at(0, 0, 8_000), 0);
    }
}
