//! Plays a spec's permutations exactly as PostgreSQL's isolation tester does, and prints what it
//! prints (`src/test/isolation/isolationtester.c`, PostgreSQL 14 onwards).
//!
//! For each permutation: the setup blocks on the control connection, each session's setup, then
//! the steps in order. A step is sent, then watched: every 10 ms without an answer, the control
//! connection asks the server whether that session waits for a lock held by another of the
//! spec's sessions (`pg_isolation_test_session_is_blocked`, the tester's own question). Waiting,
//! it is reported `<waiting ...>` and the next step goes on; every later step then looks again
//! at the waiting ones, and reports each `<... completed>` once it is done. A step that neither
//! finishes nor waits within the step limit is cancelled, as the tester cancels it. Nothing is
//! declared: who waits is what the server says.
//!
//! Output goes to a lane per session (and one for the control connection) as transcript lines,
//! so the CLI prints the tester's output and a page draws the same run as swimlanes.

use super::session::{Answer, Failure, SpecSession};
use super::table;
use super::witness::Witness;
use crate::engine::Lane;
use shared::event::{ErrorKind, Rows};
use shared::spec::{Blocker, PermutationStep, PlayedStep, Spec};
use shared::{EventKind, Service, Value};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How often a step without an answer is looked at: the tester's 10 ms `select()`, asked of
/// tokio as 7 ms. Its timer wheel rounds a sleep up to its next 1 ms tick, and the answer and
/// the question each take a task hop more than libpq's one socket: asked for 10 ms, racelab's
/// first look went out 11 ms after the step, after PostgreSQL had already broken the cycle of
/// PostgreSQL's own deadlock-hard spec (its last session sets `deadlock_timeout = '10ms'`),
/// where the tester sees the step waiting first (5 runs of 5). At 9 ms racelab matched 2 runs
/// of 6, at 8 ms 7 of 8, at 7 ms 10 of 10. Looking sooner changes nothing else: a step seen
/// not waiting is looked at again.
const POLL_EVERY: Duration = Duration::from_millis(7);

/// The most bytes of rows (as JSON text) one ledger holds, over all its tables: a run's ledgers
/// go out after its output is cut (its reader needs them), so they are bounded on their own.
pub const LEDGER_AT_MOST: usize = 1 << 20;

/// Why a spec's play stopped before its end, in the tester's words (it exits then).
#[derive(Debug, thiserror::Error)]
pub enum Stopped {
    #[error("setup failed: {0}")]
    Setup(String),
    #[error("setup of session {session} failed: {message}")]
    SessionSetup { session: String, message: String },
    #[error("step {step} timed out after {seconds} seconds")]
    TimedOut { step: String, seconds: u64 },
    #[error("failed to complete permutation due to mutually-blocking steps")]
    MutuallyBlocking,
    #[error("lock wait query failed: {0}")]
    WaitQuery(String),
    #[error("{what} did not end within {seconds} seconds")]
    Overran { what: String, seconds: u64 },
}

/// `failure` on `lane`, with its SQLSTATE (MariaDB: its number) where the server gave one.
fn error_on(lane: &Lane, failure: &Failure) {
    let kind = match failure {
        Failure::Lost(_) => ErrorKind::Connection,
        Failure::Server { .. } | Failure::Mariadb { .. } => ErrorKind::Database,
    };
    lane.error(kind, failure.code(), failure.line());
}

/// A setup that failed, shown where it ran (the tester's lane for the spec's setup, a session's
/// for its own): its SQL and the failure, SQLSTATE included, so the reader sees what failed and
/// /write marks the line it came from. The tester prints only the failure, and the run ends.
fn failed_on(lane: &Lane, service: Service, sql: &str, failure: &Failure) {
    lane.step(service, sql.trim(), &[], None);
    error_on(lane, failure);
}

/// Writes the tester's output, a line at a time, through the lane it belongs to (quiet lanes,
/// the matrix's, print nothing). The lines are the run's transcript, not any one lane's
/// captions: the cards already show each step and its rows.
struct Printer {
    pending: String,
}

impl Printer {
    /// Prints `text` (any number of lines; a line is emitted once its newline is printed).
    fn print(&mut self, lane: &Lane, text: &str) {
        self.pending.push_str(text);
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            lane.emit(EventKind::Say {
                actor: None,
                line: line.trim_end_matches('\n').to_owned(),
            });
        }
    }
}

/// A step in flight on a session.
struct Active {
    /// Its index in the permutation being played.
    index: usize,
    /// Its answer, until it arrives.
    answer: Option<oneshot::Receiver<Answer>>,
    /// Its answer once arrived, until the step is reported complete.
    done: Option<Answer>,
    /// The witness's probe, sent right behind a step that reads ([`Witness::probe_behind`]).
    probe: Option<oneshot::Receiver<Answer>>,
    /// For each `notices` blocker, the count of that session's notices that releases it.
    targets: Vec<Option<u64>>,
    /// When it was seen waiting.
    waited_since: Option<Instant>,
}

/// Whether a step's answer came while the player waited for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answered {
    Yes,
    /// It waits on another session (seen with `nonblock`): the player goes on to other steps.
    NotYet,
}

/// The tester's flags to `try_complete_step`.
#[derive(Clone, Copy)]
struct Flags {
    /// Return as soon as the step waits for a lock.
    nonblock: bool,
    /// The step was tried before (no second `<waiting ...>`).
    retry: bool,
}

/// A step just sent: report it waiting if it waits.
const FIRST_TRY: Flags = Flags {
    nonblock: true,
    retry: false,
};
/// A waiting step looked at again: done, or still waiting.
const LOOK_AGAIN: Flags = Flags {
    nonblock: true,
    retry: true,
};
/// A waiting step waited for until it is done.
const WAIT_OUT: Flags = Flags {
    nonblock: false,
    retry: true,
};

/// How the player sees who waits for whom.
enum Watch {
    /// The control connection's question: is this session waiting for one of the spec's?
    Postgres(tokio_postgres::Statement),
    /// racelab's own connections to MariaDB, which see InnoDB's lock waits; when they were
    /// last asked ([`super::mariadb::ASK_WAITS_EVERY`]).
    Mariadb {
        admin: sqlx::MySqlPool,
        asked: Option<Instant>,
    },
}

/// A spec being played on its connections.
pub struct Player<'a> {
    spec: &'a Spec,
    control: SpecSession,
    sessions: Vec<SpecSession>,
    control_lane: Lane,
    lanes: Vec<Lane>,
    printer: Printer,
    step_wait: Duration,
    /// How it sees who waits, which also says the server it plays on ([`Player::service`]).
    watch: Watch,
    active: Vec<Option<Active>>,
    total_notices: Vec<u64>,
    any_new_notice: bool,
    /// The permutation's steps as they were played, in launch order.
    played: Vec<PlayedStep>,
    /// Whether to watch what the transactions read and write, for the proof.
    witnessing: bool,
    witness: Option<Witness>,
    /// What reads asked again answered, for the run's later permutations.
    asked: super::witness::Asked,
}

impl<'a> Player<'a> {
    /// Readies a play of `spec` on `control` and one connection per session, speaking through
    /// `control_lane` and `lanes`. `step_wait` is the tester's `max_step_wait`.
    pub async fn new(
        spec: &'a Spec,
        control: SpecSession,
        sessions: Vec<SpecSession>,
        control_lane: Lane,
        lanes: Vec<Lane>,
        step_wait: Duration,
    ) -> Result<Player<'a>, Stopped> {
        let pids: Vec<String> = sessions.iter().map(|s| s.pid().to_string()).collect();
        let query = format!(
            "SELECT pg_catalog.pg_isolation_test_session_is_blocked($1, '{{{}}}'), \
             pg_catalog.array_to_string(pg_catalog.pg_blocking_pids($1), ','), {}",
            pids.join(","),
            crate::engine::run::WAITS_ON
        );
        let client = control
            .client()
            .ok_or_else(|| Stopped::WaitQuery("the control connection is not PostgreSQL's".into()))?;
        let is_blocked = client
            .prepare_typed(&query, &[tokio_postgres::types::Type::INT4])
            .await
            .map_err(|e| Stopped::WaitQuery(e.to_string()))?;
        let watch = Watch::Postgres(is_blocked);
        Ok(Player::watching(
            spec,
            control,
            sessions,
            (control_lane, lanes),
            step_wait,
            watch,
        ))
    }

    /// As [`Player::new`], on MariaDB: `admin` is racelab's own pool there, which sees every
    /// thread's lock waits.
    pub fn on_mariadb(
        spec: &'a Spec,
        control: SpecSession,
        sessions: Vec<SpecSession>,
        (control_lane, lanes): (Lane, Vec<Lane>),
        step_wait: Duration,
        admin: sqlx::MySqlPool,
    ) -> Player<'a> {
        let watch = Watch::Mariadb { admin, asked: None };
        Player::watching(spec, control, sessions, (control_lane, lanes), step_wait, watch)
    }

    fn watching(
        spec: &'a Spec,
        control: SpecSession,
        sessions: Vec<SpecSession>,
        (control_lane, lanes): (Lane, Vec<Lane>),
        step_wait: Duration,
        watch: Watch,
    ) -> Player<'a> {
        let n = sessions.len();
        Player {
            spec,
            control,
            sessions,
            control_lane,
            lanes,
            printer: Printer { pending: String::new() },
            step_wait,
            watch,
            active: (0..n).map(|_| None).collect(),
            total_notices: vec![0; n],
            any_new_notice: false,
            played: Vec::new(),
            witnessing: false,
            witness: None,
            asked: Default::default(),
        }
    }

    /// Watches what each permutation's transactions read and write (after its setup), so that
    /// [`Player::proof`] can say why it happened.
    pub fn witness(&mut self) {
        self.witnessing = true;
    }

    /// Why the permutation just played happened, as far as its witness saw (`None` without one:
    /// not asked for, or no table with a primary key).
    pub async fn proof(&mut self) -> Option<shared::proof::Proof> {
        let names: Vec<String> = self.spec.sessions.iter().map(|s| s.name.clone()).collect();
        // A witness that lost count of the writes (past WITNESSED_AT_MOST) tells nothing.
        let proof = self
            .witness
            .as_ref()
            .filter(|witness| witness.complete())?
            .proof(&mut self.control, &names, &mut self.asked)
            .await;
        Some(proof).filter(|p| !p.txns.is_empty())
    }

    /// The tester's header line, printed once before any permutation.
    pub fn header(&mut self) {
        let text = format!("Parsed test spec with {} sessions\n", self.spec.sessions.len());
        self.printer.print(&self.control_lane, &text);
    }

    /// Plays one permutation's setup and steps, until every step is complete; [`Player::teardown`]
    /// ends it (what a correct system holds is checked in between).
    pub async fn play(&mut self, steps: &[PermutationStep]) -> Result<(), Stopped> {
        self.play_setup(steps).await?;
        self.play_steps(steps).await
    }

    /// A permutation's start: its line, the spec's setup, each session's.
    pub async fn play_setup(&mut self, steps: &[PermutationStep]) -> Result<(), Stopped> {
        let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
        self.played.clear();
        let line = format!("\nstarting permutation: {}\n", names.join(" "));
        self.printer.print(&self.control_lane, &line);

        // A witnessed run on PostgreSQL reads its setup's rows right behind the setup's last
        // block (on MariaDB, once the witness is put on).
        let mut read = None;
        let read_behind = self.witnessing && self.service() == Service::Postgres;
        for (i, sql) in self.spec.setup.iter().enumerate() {
            let answer = if read_behind && i + 1 == self.spec.setup.len() {
                let (answer, behind) = self.control.send_then(sql, super::witness::READ);
                read = Some(behind);
                self.bounded_answer(None, "the setup", answer).await?
            } else {
                self.bounded(None, "the setup", sql).await?
            };
            self.control.take_notices();
            if let Some(failure) = &answer.failure {
                failed_on(&self.control_lane, self.service(), sql, failure);
                return Err(Stopped::Setup(failure.line()));
            }
            self.print_last(None, &answer);
        }
        for i in 0..self.sessions.len() {
            let Some(sql) = &self.spec.sessions[i].setup else {
                continue;
            };
            let what = format!("the setup of session {}", self.spec.sessions[i].name);
            let answer = self.bounded(Some(i), &what, sql).await?;
            self.print_notices(i);
            if let Some(failure) = &answer.failure {
                failed_on(&self.lanes[i], self.service(), sql, failure);
                return Err(Stopped::SessionSetup {
                    session: self.spec.sessions[i].name.clone(),
                    message: failure.line(),
                });
            }
            self.print_last(Some(i), &answer);
        }
        self.witness = None;
        if self.witnessing && self.service() == Service::Mariadb {
            self.witness = Witness::on_mariadb(&mut self.control, self.sessions.len()).await;
        } else if self.witnessing {
            // What the session setups wrote belongs to the setup: the rows are read again after
            // them when they wrote any (the read behind the setup did not see it).
            let mut wrote = false;
            for session in &mut self.sessions {
                wrote |= !session.take_witnessed().is_empty();
            }
            let read = match read {
                Some(read) if !wrote => read.await.unwrap_or_else(|_| Answer::lost()),
                _ => self.control.exec(super::witness::READ).await,
            };
            self.witness = Witness::after_setup(read, &mut self.control);
        }
        Ok(())
    }

    /// A permutation's steps, until every one is complete: the isolation tester's
    /// `run_permutation` loop, step for step, so a spec's output is the tester's. `waiting` holds
    /// the sessions whose step was sent but has not completed (blocked on a lock, or held back
    /// by a blocker annotation).
    pub async fn play_steps(&mut self, steps: &[PermutationStep]) -> Result<(), Stopped> {
        let mut waiting: Vec<usize> = Vec::new();
        for index in 0..steps.len() {
            let session = self.session_of(&steps[index]);
            // Its session is still busy with an earlier step (one the tester left waiting): a
            // connection runs one query at a time, so that step must finish first. Wait it out,
            // completing any other waiting step it may have been blocking, within twice the
            // step limit.
            if self.active[session].is_some() {
                let start = Instant::now();
                while self.active[session].is_some() {
                    if !self.try_complete(steps, session, WAIT_OUT).await? {
                        waiting.retain(|w| *w != session);
                    }
                    waiting = self.try_complete_all(steps, waiting, LOOK_AGAIN).await?;
                    if self.active[session].is_some() && start.elapsed() > 2 * self.step_wait {
                        let step = self.active_name(steps, session);
                        return Err(Stopped::TimedOut {
                            step,
                            seconds: start.elapsed().as_secs(),
                        });
                    }
                }
            }
            // Send this step, then give it its first chance to complete without blocking: one
            // that waits on a lock is reported `<waiting ...>` and joins the waiting ones.
            self.launch(steps, index, session).await;
            let must_wait = self.try_complete(steps, session, FIRST_TRY).await?;
            // This step may have released others (its lock freed, its notices counted): look at
            // every step still waiting, in the order they were sent.
            waiting = self.try_complete_all(steps, waiting, LOOK_AGAIN).await?;
            if must_wait {
                waiting.push(session);
            }
        }
        // Every step is sent: wait out those still waiting. Any left then wait on each other,
        // which the tester reports as a failed permutation.
        let waiting = self.try_complete_all(steps, waiting, WAIT_OUT).await?;
        if !waiting.is_empty() {
            return Err(Stopped::MutuallyBlocking);
        }
        Ok(())
    }

    /// Every table of the run's `public` schema, as it is now (at most 1,000 rows and 20
    /// tables), for the ledger: the tables the setup made, before the steps and after. Values
    /// keep their types (each row is read as a JSON array), so the ledger compares numbers as
    /// numbers. Every name is qualified, so no function or operator the spec defined stands in
    /// for PostgreSQL's own; rows are read with row security off, so no policy the spec wrote
    /// hides rows from the ledger alone (a table a policy would filter fails to read instead);
    /// each query is bounded as the reader's SQL is, and a table that cannot be read, in time or
    /// at all, is left out.
    pub async fn snapshot(&mut self) -> shared::Ledger {
        let mut ledger = shared::Ledger::default();
        let mut room = LEDGER_AT_MOST;
        let list = match self.service() {
            // The run's database's tables, each named twice (its name is its key there).
            Service::Mariadb => super::mariadb::LIST_TABLES,
            _ => {
                "SELECT c.oid::pg_catalog.int8, c.relname FROM pg_catalog.pg_class c \
                 WHERE c.relnamespace OPERATOR(pg_catalog.=) 'public'::pg_catalog.regnamespace \
                   AND c.relkind OPERATOR(pg_catalog.=) ANY ('{r,p}'::pg_catalog.\"char\"[]) \
                 ORDER BY 2 LIMIT 20"
            }
        };
        let Ok(listed) = self.bounded(None, "the ledger", list).await else {
            return ledger;
        };
        let tables: Vec<(String, String)> = listed
            .sets
            .first()
            .map(|set| {
                set.rows
                    .iter()
                    .filter_map(|r| Some((r.first()?.clone()?, r.get(1)?.clone()?)))
                    .collect()
            })
            .unwrap_or_default();
        for (oid, name) in tables {
            if room == 0 {
                break;
            }
            if let Ok(Some(table)) = self.read_table(&oid, name, &mut room).await {
                ledger.tables.push(table);
            }
        }
        self.control.take_notices();
        ledger
    }

    /// One table of the ledger: its columns and its first 1,000 rows, as many as fit in `room`
    /// bytes (of the rows' JSON text), which it uses up.
    async fn read_table(
        &mut self,
        oid: &str,
        name: String,
        room: &mut usize,
    ) -> Result<Option<shared::Table>, Stopped> {
        let listing = match self.service() {
            Service::Mariadb => super::mariadb::list_columns(&name),
            _ => format!(
                "SELECT attname FROM pg_catalog.pg_attribute WHERE attrelid OPERATOR(pg_catalog.=) {} \
                 AND attnum OPERATOR(pg_catalog.>) 0 AND NOT attisdropped ORDER BY attnum LIMIT 100",
                oid.parse::<i64>().unwrap_or(0)
            ),
        };
        let columns = self.bounded(None, "the ledger", &listing).await?;
        let columns: Vec<String> = columns
            .sets
            .first()
            .map(|set| set.rows.iter().filter_map(|r| r.first().cloned().flatten()).collect())
            .unwrap_or_default();
        if columns.is_empty() {
            return Ok(None);
        }
        let quote = crate::sandbox::postgres::quote_ident;
        let quoted: Vec<String> = columns.iter().map(|c| quote(c)).collect();
        let reading = match self.service() {
            Service::Mariadb => super::mariadb::read_rows(&name, &columns),
            // One implicit transaction: the setting is the read's alone (`true`: local).
            _ => format!(
                "SELECT pg_catalog.set_config('row_security', 'off', true); \
                 SELECT pg_catalog.json_build_array({})::pg_catalog.text AS r FROM public.{} \
                 ORDER BY 1 LIMIT 1000",
                quoted.join(", "),
                quote(&name)
            ),
        };
        let rows = self.bounded(None, "the ledger", &reading).await?;
        if rows.failure.is_some() {
            return Ok(None);
        }
        let rows = rows
            .sets
            .into_iter()
            .last()
            .map(|set| {
                set.rows
                    .into_iter()
                    .filter_map(|r| r.into_iter().next().flatten())
                    .take_while(|text| match room.checked_sub(text.len()) {
                        Some(left) => {
                            *room = left;
                            true
                        }
                        None => {
                            *room = 0;
                            false
                        }
                    })
                    .map(|text| typed_row(&text, columns.len()))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Some(shared::Table {
            name,
            key_columns: 1,
            columns,
            rows,
        }))
    }

    /// Runs `sql` on the control connection, printing nothing: a `# check:` query.
    pub async fn ask(&mut self, sql: &str) -> Result<Answer, Stopped> {
        let answer = self.bounded(None, "a check", sql).await?;
        self.control.take_notices();
        Ok(answer)
    }

    /// Runs SQL the reader wrote that is not a step (a setup, a check, a teardown) on `session`
    /// (the control connection when `None`), under the step limit as a step is: cancelled past
    /// it, given up at twice it. The tester waits for these as long as they take; a page cannot.
    async fn bounded(&mut self, session: Option<usize>, what: &str, sql: &str) -> Result<Answer, Stopped> {
        let answer = session.map_or(&self.control, |i| &self.sessions[i]).send(sql);
        self.bounded_answer(session, what, answer).await
    }

    /// [`Player::bounded`], for SQL already sent.
    async fn bounded_answer(
        &mut self,
        session: Option<usize>,
        what: &str,
        mut answer: oneshot::Receiver<Answer>,
    ) -> Result<Answer, Stopped> {
        let lost = |_| Answer::lost();
        if let Ok(answer) = tokio::time::timeout(self.step_wait, &mut answer).await {
            return Ok(answer.unwrap_or_else(lost));
        }
        let connection = session.map_or(&self.control, |i| &self.sessions[i]);
        let _ = connection.cancel().await;
        let lane = session.map_or(&self.control_lane, |i| &self.lanes[i]).clone();
        let line = format!("racelab: canceling {what} after {} seconds\n", self.step_wait.as_secs());
        self.printer.print(&lane, &line);
        match tokio::time::timeout(self.step_wait, answer).await {
            Ok(answer) => Ok(answer.unwrap_or_else(lost)),
            Err(_) => Err(Stopped::Overran {
                what: what.to_owned(),
                seconds: (self.step_wait * 2).as_secs(),
            }),
        }
    }

    /// The permutation's teardown: each session's, then the spec's.
    pub async fn teardown(&mut self) -> Result<(), Stopped> {
        for i in 0..self.sessions.len() {
            let Some(sql) = &self.spec.sessions[i].teardown else {
                continue;
            };
            let what = format!("the teardown of session {}", self.spec.sessions[i].name);
            let answer = self.bounded(Some(i), &what, sql).await?;
            self.print_notices(i);
            match &answer.failure {
                // The tester says so on stderr and goes on.
                Some(failure) => tracing::warn!(
                    "teardown of session {} failed: {}",
                    self.spec.sessions[i].name,
                    failure.line()
                ),
                None => self.print_last(Some(i), &answer),
            }
        }
        if let Some(sql) = &self.spec.teardown {
            let answer = self.bounded(None, "the teardown", sql).await?;
            self.control.take_notices();
            match &answer.failure {
                Some(failure) => tracing::warn!("teardown failed: {}", failure.line()),
                None => self.print_last(None, &answer),
            }
        }
        Ok(())
    }

    fn session_of(&self, step: &PermutationStep) -> usize {
        self.spec.step(&step.name).map_or(0, |(session, _)| session)
    }

    fn sql_of(&self, step: &PermutationStep) -> &'a str {
        self.spec.step(&step.name).map_or("", |(_, s)| s.sql.as_str())
    }

    fn active_name(&self, steps: &[PermutationStep], session: usize) -> String {
        self.active[session]
            .as_ref()
            .map_or_else(String::new, |a| steps[a.index].name.clone())
    }

    /// The server the spec plays on, as its steps are drawn.
    pub fn service(&self) -> Service {
        match self.watch {
            Watch::Postgres(_) => Service::Postgres,
            Watch::Mariadb { .. } => Service::Mariadb,
        }
    }

    /// The steps of the permutation played last, as played.
    pub fn played(&self) -> &[PlayedStep] {
        &self.played
    }

    /// Sends step `index` on its session (in step mode, once the reader says so).
    async fn launch(&mut self, steps: &[PermutationStep], index: usize, session: usize) {
        let step = &steps[index];
        let sql = self.sql_of(step);
        self.lanes[session].gate(self.service(), sql).await;
        self.lanes[session].step(self.service(), sql, &[], None);
        self.played.push(PlayedStep {
            name: step.name.clone(),
            session: self.spec.sessions[session].name.clone(),
            waited: false,
            error: None,
        });
        let (answer, probe) = match self.witness.as_ref().is_some_and(|w| w.probe_behind(sql)) {
            true => {
                let (answer, probe) = self.sessions[session].send_then(sql, super::witness::PROBE);
                (answer, Some(probe))
            }
            false => (self.sessions[session].send(sql), None),
        };
        let targets = step
            .blockers
            .iter()
            .map(|b| match b {
                Blocker::Notices { step, count } => {
                    let of = self.spec.step(step).map_or(0, |(s, _)| s);
                    Some(u64::from(*count) + self.total_notices[of])
                }
                _ => None,
            })
            .collect();
        self.active[session] = Some(Active {
            index,
            answer: Some(answer),
            done: None,
            probe,
            targets,
            waited_since: None,
        });
    }

    /// The tester's `try_complete_steps`: tries each waiting session's step, drops those that
    /// completed, and goes round again while a step with blockers may have been released.
    async fn try_complete_all(
        &mut self,
        steps: &[PermutationStep],
        mut waiting: Vec<usize>,
        flags: Flags,
    ) -> Result<Vec<usize>, Stopped> {
        loop {
            self.any_new_notice = false;
            let before = waiting.len();
            let mut have_blocker = false;
            let mut w = 0;
            while w < waiting.len() {
                let session = waiting[w];
                if self.try_complete(steps, session, flags).await? {
                    let index = self.active[session].as_ref().map_or(0, |a| a.index);
                    if !steps[index].blockers.is_empty() {
                        have_blocker = true;
                    }
                    w += 1;
                } else {
                    waiting.remove(w);
                }
            }
            if !(have_blocker && (waiting.len() < before || self.any_new_notice)) {
                return Ok(waiting);
            }
        }
    }

    /// Whether `session`'s step has no answer yet (libpq's `PQisBusy`).
    fn busy(&mut self, session: usize) -> bool {
        let Some(active) = self.active[session].as_mut() else {
            return false;
        };
        if active.done.is_some() {
            return false;
        }
        let Some(receiver) = active.answer.as_mut() else {
            return false;
        };
        match receiver.try_recv() {
            Ok(answer) => {
                active.done = Some(answer);
                active.answer = None;
                false
            }
            Err(oneshot::error::TryRecvError::Empty) => true,
            Err(oneshot::error::TryRecvError::Closed) => {
                active.done = Some(Answer::lost());
                active.answer = None;
                false
            }
        }
    }

    /// Waits up to [`POLL_EVERY`] for `session`'s answer.
    async fn wait_a_little(&mut self, session: usize) {
        let Some(active) = self.active[session].as_mut() else {
            return;
        };
        let Some(receiver) = active.answer.as_mut() else { return };
        if let Ok(answer) = tokio::time::timeout(POLL_EVERY, receiver).await {
            active.done = Some(answer.unwrap_or_else(|_| Answer::lost()));
            active.answer = None;
        }
    }

    /// The tester's `try_complete_step`: `Ok(true)` if the step is not complete (it waits for a
    /// lock and `nonblock` was given, or a blocker holds it), `Ok(false)` once it is reported.
    async fn try_complete(&mut self, steps: &[PermutationStep], session: usize, flags: Flags) -> Result<bool, Stopped> {
        let Some(index) = self.active[session].as_ref().map(|a| a.index) else {
            return Ok(false);
        };
        let step = &steps[index];
        // A step marked `(*)` waits for its turn once, whatever it does, as the tester's does.
        if !flags.retry && step.blockers.contains(&Blocker::Once) {
            self.print_waiting(session, step);
            return Ok(true);
        }
        if self.wait_for_answer(steps, session, flags).await? == Answered::NotYet {
            return Ok(true);
        }
        self.print_notices(session);
        // Answered, but a blocker annotation holds the report back until its step completes.
        if self.has_blocker(steps, session) {
            if !flags.retry {
                self.print_waiting(session, step);
            }
            return Ok(true);
        }
        self.report_completed(step, session, flags).await;
        Ok(false)
    }

    /// `step X: <sql> <waiting ...>`: the tester's line for a step that has not completed.
    fn print_waiting(&mut self, session: usize, step: &PermutationStep) {
        let line = format!("step {}: {} <waiting ...>\n", step.name, self.sql_of(step));
        self.printer.print(&self.lanes[session], &line);
    }

    /// Polls `session`'s step until it answers, or, with `nonblock`, until PostgreSQL shows it
    /// waiting on another session (then marked so, once, unless this is a retry). Past the step
    /// wait it is cancelled, as the tester does after `max_step_wait`; past twice that, the run
    /// stops.
    async fn wait_for_answer(
        &mut self,
        steps: &[PermutationStep],
        session: usize,
        flags: Flags,
    ) -> Result<Answered, Stopped> {
        let step = &steps[self.active[session].as_ref().map_or(0, |a| a.index)];
        let start = Instant::now();
        let mut canceled = false;
        while self.busy(session) {
            self.wait_a_little(session).await;
            self.print_notices(session);
            if !self.busy(session) {
                break;
            }
            if flags.nonblock {
                let (blocked, by, on) = self.blocked(session).await?;
                if blocked {
                    // Its notices may have come with its answer meanwhile.
                    self.print_notices(session);
                    if !self.busy(session) {
                        break;
                    }
                    if !flags.retry {
                        self.mark_waiting(steps, session, by, on);
                    }
                    return Ok(Answered::NotYet);
                }
            }
            let waited = start.elapsed();
            if waited > self.step_wait && !canceled && self.sessions[session].cancel().await.is_ok() {
                let line = format!(
                    "isolationtester: canceling step {} after {} seconds\n",
                    step.name,
                    waited.as_secs()
                );
                self.printer.print(&self.lanes[session], &line);
                canceled = true;
            }
            if waited > 2 * self.step_wait {
                return Err(Stopped::TimedOut {
                    step: step.name.clone(),
                    seconds: waited.as_secs(),
                });
            }
        }
        Ok(Answered::Yes)
    }

    /// `session`'s step is seen waiting for the sessions `by` (on `on`): the tester's line, the
    /// matrix's mark, the witness's wait-for edge, and the lane's `Blocked` event.
    fn mark_waiting(&mut self, steps: &[PermutationStep], session: usize, by: Vec<String>, on: Option<String>) {
        let Some(active) = self.active[session].as_mut() else {
            return;
        };
        active.waited_since = Some(Instant::now());
        let index = active.index;
        let step = &steps[index];
        self.print_waiting(session, step);
        if let Some(played) = self.played.iter_mut().rev().find(|p| p.name == step.name) {
            played.waited = true;
        }
        if let Some(witness) = self.witness.as_mut() {
            let holders = by
                .iter()
                .filter_map(|name| self.spec.sessions.iter().position(|s| s.name == *name))
                .collect();
            witness.waited(session, index, holders);
        }
        self.lanes[session].emit(EventKind::Blocked {
            actor: self.spec.sessions[session].name.clone(),
            by,
            on,
        });
    }

    /// Reports `session`'s completed step: the tester's line (`<... completed>` on a retry),
    /// how long it waited, its failure in the matrix, what the witness learns, and its answer.
    async fn report_completed(&mut self, step: &PermutationStep, session: usize, flags: Flags) {
        let sql = self.sql_of(step);
        let line = if flags.retry {
            format!("step {}: <... completed>\n", step.name)
        } else {
            format!("step {}: {}\n", step.name, sql)
        };
        self.printer.print(&self.lanes[session], &line);
        let Some(active) = self.active[session].take() else {
            return;
        };
        if let Some(since) = active.waited_since {
            self.lanes[session].emit(EventKind::Unblocked {
                actor: self.spec.sessions[session].name.clone(),
                waited_ms: u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX),
            });
        }
        let answer = active.done.unwrap_or_default();
        if let (Some(failure), Some(played)) = (
            &answer.failure,
            self.played.iter_mut().rev().find(|p| p.name == step.name),
        ) {
            played.error = Some(failure.code().unwrap_or_else(|| "connection lost".to_owned()));
        }
        if let Some(witness) = self.witness.as_mut() {
            witness
                .step_done(
                    session,
                    active.index,
                    sql,
                    &answer,
                    active.probe,
                    &mut self.sessions[session],
                )
                .await;
        }
        self.print_answer(Some(session), &answer);
        self.print_notifications(session);
    }

    /// Whether a blocker annotation still holds `session`'s finished step back.
    fn has_blocker(&self, steps: &[PermutationStep], session: usize) -> bool {
        let Some(active) = &self.active[session] else {
            return false;
        };
        steps[active.index]
            .blockers
            .iter()
            .zip(&active.targets)
            .any(|(blocker, target)| match blocker {
                Blocker::Once => false,
                Blocker::Step(other) => {
                    let of = self.spec.step(other).map_or(0, |(s, _)| s);
                    self.active[of].as_ref().is_some_and(|a| steps[a.index].name == *other)
                }
                Blocker::Notices { step, .. } => {
                    let of = self.spec.step(step).map_or(0, |(s, _)| s);
                    target.is_some_and(|t| self.total_notices[of] < t)
                }
            })
    }

    /// Asks the server whether `session` waits for another of the spec's sessions, and for whom.
    async fn blocked(&mut self, session: usize) -> Result<(bool, Vec<String>, Option<String>), Stopped> {
        let pid = self.sessions[session].pid();
        let is_blocked = match &mut self.watch {
            Watch::Postgres(is_blocked) => is_blocked.clone(),
            Watch::Mariadb { admin, asked } => {
                // Asked sooner, InnoDB's lock tables would not have changed: not waiting yet.
                if asked.is_some_and(|at| at.elapsed() < super::mariadb::ASK_WAITS_EVERY) {
                    return Ok((false, Vec::new(), None));
                }
                *asked = Some(Instant::now());
                let thread = u64::try_from(pid).unwrap_or(0);
                let wait = crate::engine::mariadb::waits_for(admin, thread)
                    .await
                    .map_err(|e| Stopped::WaitQuery(e.to_string()))?;
                return Ok(self.named_mariadb_wait(wait));
            }
        };
        let client = self
            .control
            .client()
            .ok_or_else(|| Stopped::WaitQuery("the control connection is not PostgreSQL's".into()))?;
        let row = client
            .query_one(&is_blocked, &[&pid])
            .await
            .map_err(|e| Stopped::WaitQuery(e.to_string()))?;
        let blocked: bool = row.try_get(0).map_err(|e| Stopped::WaitQuery(e.to_string()))?;
        let pids: Option<String> = row.try_get(1).map_err(|e| Stopped::WaitQuery(e.to_string()))?;
        let on: Option<String> = row.try_get(2).map_err(|e| Stopped::WaitQuery(e.to_string()))?;
        let by = pids
            .unwrap_or_default()
            .split(',')
            .filter_map(|p| p.parse::<i32>().ok())
            .map(|p| {
                self.sessions.iter().position(|s| s.pid() == p).map_or_else(
                    || format!("pid {p} (outside this run)"),
                    |i| self.spec.sessions[i].name.clone(),
                )
            })
            .collect();
        Ok((blocked, by, on))
    }

    /// A wait InnoDB shows, in the spec's names: the sessions holding the row locks asked for,
    /// or a table's metadata lock (its holder unnamed: MariaDB names it only with a plugin).
    fn named_mariadb_wait(&self, wait: crate::engine::mariadb::Wait) -> (bool, Vec<String>, Option<String>) {
        use crate::engine::mariadb::Wait;
        match wait {
            Wait::Nothing => (false, Vec::new(), None),
            Wait::RowLock { holders } => {
                let by = holders
                    .into_iter()
                    .map(|thread| {
                        self.sessions
                            .iter()
                            .position(|s| u64::try_from(s.pid()).ok() == Some(thread))
                            .map_or_else(
                                || format!("thread {thread} (outside this run)"),
                                |i| self.spec.sessions[i].name.clone(),
                            )
                    })
                    .collect();
                (true, by, Some("a row lock (InnoDB)".to_owned()))
            }
            Wait::MetadataLock { state } => (true, vec!["another session".to_owned()], Some(state)),
        }
    }

    /// Prints the notices `session` has received, as the tester's notice processor does.
    fn print_notices(&mut self, session: usize) {
        for notice in self.sessions[session].take_notices() {
            let text = format!("{}: {}", self.spec.sessions[session].name, notice);
            self.printer.print(&self.lanes[session], &text);
            self.total_notices[session] += 1;
            self.any_new_notice = true;
        }
    }

    fn print_notifications(&mut self, session: usize) {
        for n in self.sessions[session].take_notifications() {
            let sender = self
                .sessions
                .iter()
                .position(|s| s.pid() == n.from_pid)
                .map_or_else(|| format!("PID {}", n.from_pid), |i| self.spec.sessions[i].name.clone());
            let text = format!(
                "{}: NOTIFY \"{}\" with payload \"{}\" from {}\n",
                self.spec.sessions[session].name, n.channel, n.payload, sender
            );
            self.printer.print(&self.lanes[session], &text);
        }
    }

    /// A step's answer: each result set, then its error line.
    fn print_answer(&mut self, session: Option<usize>, answer: &Answer) {
        let lane = session.map_or(&self.control_lane, |i| &self.lanes[i]).clone();
        for set in &answer.sets {
            self.printer.print(&lane, &table::print(set));
        }
        if let Some(bytes) = answer.cut_at {
            let line = format!(
                "racelab: the step sent {} MB of rows, more than {} MB: cancelled\n",
                bytes >> 20,
                super::session::RECEIVED_AT_MOST >> 20
            );
            self.printer.print(&lane, &line);
        }
        match &answer.failure {
            Some(failure) => {
                if let Some(i) = session {
                    error_on(&self.lanes[i], failure);
                }
                self.printer.print(&lane, &format!("{}\n", failure.line()));
            }
            None => {
                if let Some(i) = session {
                    let rows = answer.sets.last().map(|set| Rows {
                        columns: set.columns.clone(),
                        rows: set
                            .rows
                            .iter()
                            .map(|r| r.iter().map(|v| v.clone().map_or(Value::Null, Value::Text)).collect())
                            .collect(),
                    });
                    let summary = match answer.sets.last() {
                        Some(set) => {
                            let n = set.rows.len() as u64 + set.rows_dropped;
                            format!("{n} row{}", if n == 1 { "" } else { "s" })
                        }
                        None => "done".to_owned(),
                    };
                    self.lanes[i].result(summary, rows, None);
                }
            }
        }
    }

    /// A setup's or teardown's answer: as libpq's `PQexec` returns only the last result of
    /// several statements, only the last result set is printed (if the last result is one).
    fn print_last(&mut self, session: Option<usize>, answer: &Answer) {
        let lane = session.map_or(&self.control_lane, |i| &self.lanes[i]).clone();
        if let Some(set) = answer.sets.last().filter(|_| answer.ends_with_rows) {
            self.printer.print(&lane, &table::print(set));
        }
    }
}

/// A row read as a JSON array, as [`Value`]s: whole numbers, other numbers, booleans, text, and
/// anything else (a composite, an array) as its JSON text.
fn typed_row(text: &str, width: usize) -> Vec<Value> {
    let Ok(serde_json::Value::Array(values)) = serde_json::from_str::<serde_json::Value>(text) else {
        return vec![Value::Text(text.to_owned())];
    };
    let mut row: Vec<Value> = values
        .into_iter()
        .map(|v| match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => n
                .as_i64()
                .map_or_else(|| Value::Float(n.as_f64().unwrap_or(f64::NAN)), Value::Int),
            serde_json::Value::String(s) => Value::Text(s),
            other => Value::Text(other.to_string()),
        })
        .collect();
    row.resize(width, Value::Null);
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_keeps_its_types() {
        assert_eq!(
            typed_row(r#"[1, "alice", 12.5, true, null, [1,2]]"#, 6),
            vec![
                Value::Int(1),
                Value::Text("alice".into()),
                Value::Float(12.5),
                Value::Bool(true),
                Value::Null,
                Value::Text("[1,2]".into())
            ]
        );
    }
}
