//! Readers' own races: specs in PostgreSQL's isolation-tester format, played on a real
//! PostgreSQL in a sandbox of their own (see `shared::spec` for the format).
//!
//! - [`confine`]: the database, role and schema a spec runs in, and their removal.
//! - [`session`]: one connection of a spec run (notices, result sets, cancel).
//! - [`table`]: result sets printed as the tester prints them.
//! - [`player`]: the tester's algorithm: permutations, steps, who waits, what is printed.
//!
//! [`read`] turns text into a spec within [`Limits`]; [`play`] plays it and reports each
//! permutation's checks.

pub mod atlas;
pub mod confine;
pub mod from_run;
pub mod mariadb;
pub mod player;
pub mod scenario;
pub mod session;
pub mod table;
pub mod watch;
pub mod witness;

use crate::engine::Lane;
use crate::engine::lane::Stage;
use confine::{Bounds, Confined};
use player::{Player, Stopped};
use session::{Keep, SpecSession};
use shared::spec::{Invalid, ParseError, PermutationStep, Spec};
use shared::{EventKind, Moment};
use std::sync::Arc;
use std::time::Duration;

/// The longest a page's spec run may take, every permutation and its setup and teardown: a
/// run of 120 permutations of two-session steps plays in about 6 s here.
pub const PAGE_WALL: Duration = Duration::from_secs(120);

/// What one spec run may hold and spend.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The tester's `max_step_wait`: a step that neither finishes nor waits for a lock this
    /// long is cancelled, and given up at twice it.
    pub step_wait: Duration,
    pub keep: Keep,
    /// How much of a spec is played: the editor's limits too (`shared::spec::limits`).
    pub spec: shared::spec::Limits,
    /// The longest a whole run may take, setup to teardown of its last permutation; `None`:
    /// no limit but the step limit (the command line, on the reader's own machine).
    pub max_wall: Option<Duration>,
}

impl Limits {
    /// The command line's: the tester's step limit (its default is 300 s, or
    /// `PGISOLATIONTIMEOUT` seconds), every interleaving.
    pub fn command_line(step_wait: Duration) -> Limits {
        Limits {
            step_wait,
            spec: shared::spec::Limits::COMMAND_LINE,
            max_wall: None,
            ..Limits::default()
        }
    }
}

impl Default for Limits {
    /// A page's: 10 s a step, at most 120 interleavings.
    fn default() -> Limits {
        Limits {
            step_wait: Duration::from_secs(10),
            keep: Keep {
                rows: 1_000,
                bytes: 1 << 20,
            },
            spec: shared::spec::Limits::PAGE,
            max_wall: Some(PAGE_WALL),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{0}")]
    Parse(#[from] ParseError),
    #[error("{0}")]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    OverLimit(#[from] shared::spec::OverLimit),
    #[error("the spec has a NUL byte at line {line}, column {column}: PostgreSQL cannot take one in SQL")]
    Nul { line: usize, column: usize },
    #[error("the run stopped at its limit of {0} s, before its end")]
    TooLong(u64),
    #[error("{0}")]
    Ended(String),
    #[error("interrupted")]
    Interrupted,
    #[error(transparent)]
    Confine(#[from] confine::ConfineError),
    #[error("a session of the spec could not connect: {0}")]
    Connect(String),
    #[error("{0}")]
    Stopped(#[from] Stopped),
}

/// Reads a spec: within the size limit, parsed, valid as the tester checks it, and within the
/// session, step and interleaving limits.
pub fn read(text: &str, limits: &Limits) -> Result<Spec, SpecError> {
    shared::spec::limits::check_size(text, &limits.spec)?;
    if let Some(at) = text.find('\0') {
        let before = &text[..at];
        return Err(SpecError::Nul {
            line: before.matches('\n').count() + 1,
            column: before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1,
        });
    }
    let spec = shared::spec::parse(text)?;
    spec.validate()?;
    shared::spec::limits::check(&spec, &limits.spec)?;
    Ok(spec)
}

/// The permutations a spec plays: its lines, or every interleaving.
pub fn permutations(spec: &Spec, limits: &Limits) -> Vec<Vec<PermutationStep>> {
    if !spec.permutations.is_empty() {
        return spec.permutations.iter().map(|p| p.steps.clone()).collect();
    }
    let limit = limits
        .spec
        .interleavings
        .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    shared::spec::all_permutations(spec, limit)
        .into_iter()
        .map(|names| {
            names
                .into_iter()
                .map(|name| PermutationStep {
                    name,
                    ..PermutationStep::default()
                })
                .collect()
        })
        .collect()
}

impl CheckResult {
    /// As a verdict's check: the query as the rule, its answer as what the run ended with.
    pub fn as_check(&self) -> shared::Check {
        shared::Check::new(self.sql.clone(), self.answer.clone(), self.held == Some(true))
    }
}

/// One `# check:` after one permutation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckResult {
    pub sql: String,
    /// `Some(true)` when every value of its first row is `t`; `None` when it failed or
    /// returned no boolean row.
    pub held: Option<bool>,
    /// What it returned, as text (`f`, `5400 | f`), or its error.
    pub answer: String,
}

/// One permutation played: its steps and its checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Played {
    pub steps: Vec<String>,
    pub checks: Vec<CheckResult>,
    /// Why it happened, where its witness could tell (the command line prints it).
    pub proof: Option<shared::proof::Proof>,
    /// Its steps as played: who waited, what failed.
    pub played: Vec<shared::spec::PlayedStep>,
}

/// Which of a spec's permutations to play, and what to tell of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Every permutation, as the tester plays them (the command line); with `why`, each one's
    /// proof too (`racelab run FILE.spec --why`). Without it no witness is put on the tables:
    /// the witness's trigger is plpgsql, compiled once per table and backend, and with a new
    /// table in every permutation that alone made a play about half as slow again (docs/
    /// performance.md).
    All { why: bool },
    /// One permutation (0-based), with its ledger before and after and its verdict (a page's
    /// Run).
    One(usize),
    /// Every permutation, each summed up in a line for the matrix (a page's "run every
    /// permutation").
    Matrix,
}

impl Choice {
    /// Whether this play tells why each permutation happened, and so needs the witness.
    fn proves(self) -> bool {
        match self {
            Self::All { why } => why,
            Self::One(_) => true,
            Self::Matrix => false,
        }
    }
}

/// A stage that keeps nothing: for plays whose result is read, not their stream (the atlas, a
/// proof).
pub struct Silent;

impl Stage for Silent {
    fn emit(&self, _: EventKind) {}
    fn gate<'a>(&'a self, _: &'a str, _: shared::Service, _: &'a str) -> crate::engine::BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// Why a finished lab run happened: its statements, written as a spec ([`from_run`]), played
/// again in their order in a spec sandbox with its witness, and the proof of that play (`None`
/// when no table of it has a primary key). The lab's choreography fixes the order, so the play
/// is the same race; the proof's last line says it was played again. `url` is the server the
/// text plays on: PostgreSQL's, or MariaDB's where its `# database:` line says so.
pub async fn prove(url: &str, spec_text: &str) -> Result<Option<shared::proof::Proof>, SpecError> {
    let limits = Limits::command_line(Duration::from_secs(10));
    let spec = read(spec_text, &limits)?;
    let played = match shared::spec::database_of(spec_text) {
        shared::spec::Database::Mariadb => {
            let stage: Arc<dyn Stage> = Arc::new(Silent);
            let lanes = |name: &str, quiet: bool| Lane::new(name, stage.clone(), quiet);
            let why = Choice::All { why: true };
            play_on_mariadb(url, &spec, &limits, why, &lanes, std::future::pending()).await?
        }
        shared::spec::Database::Postgresql => {
            let run_id = crate::sandbox::new_run_id();
            play_why(url, &run_id, &spec, &limits, Arc::new(Silent)).await?
        }
    };
    Ok(played.into_iter().next().and_then(|p| p.proof).map(|mut proof| {
        proof.lines.push(
            "(racelab played this run's statements again, in the same order, as a spec, to see what each read saw.)"
                .to_owned(),
        );
        proof
    }))
}

/// Plays `spec` as run `run_id` on the PostgreSQL at `url`, in a sandbox of its own, through
/// lanes on `stage`, as the tester would: every permutation, no proof. The sandbox is removed
/// whatever happens.
pub async fn play(
    url: &str,
    run_id: &str,
    spec: &Spec,
    limits: &Limits,
    stage: Arc<dyn Stage>,
) -> Result<Vec<Played>, SpecError> {
    play_every(url, run_id, spec, limits, Choice::All { why: false }, stage).await
}

/// [`play`], with each permutation's proof: why it happened, as far as the witness saw.
pub async fn play_why(
    url: &str,
    run_id: &str,
    spec: &Spec,
    limits: &Limits,
    stage: Arc<dyn Stage>,
) -> Result<Vec<Played>, SpecError> {
    play_every(url, run_id, spec, limits, Choice::All { why: true }, stage).await
}

/// [`play_on`], every lane on `stage`.
async fn play_every(
    url: &str,
    run_id: &str,
    spec: &Spec,
    limits: &Limits,
    choice: Choice,
    stage: Arc<dyn Stage>,
) -> Result<Vec<Played>, SpecError> {
    let lanes = move |name: &str, quiet: bool| Lane::new(name, stage.clone(), quiet);
    play_on(url, run_id, spec, limits, choice, &lanes).await
}

/// [`play`], choosing the permutations, with lanes from `lane` (a run's own, on a page; quiet
/// ones for the matrix, which draws one line a permutation, not every step).
pub async fn play_on(
    url: &str,
    run_id: &str,
    spec: &Spec,
    limits: &Limits,
    choice: Choice,
    lane: &(dyn Fn(&str, bool) -> Lane + Send + Sync),
) -> Result<Vec<Played>, SpecError> {
    let bounds = Bounds {
        // Above the tester's own step limit, so a spec's output is the tester's; a spec that
        // turns the timeout off is still cancelled by the step limit.
        statement_timeout: limits.step_wait * 2 + Duration::from_secs(5),
        lock_timeout: limits.step_wait * 2 + Duration::from_secs(5),
        idle_timeout: limits.step_wait * 4 + Duration::from_secs(60),
        connections: spec.sessions.len() + 1,
    };
    let mut confined = Confined::open(url, run_id, bounds).await?;
    let control_lane = lane(TESTER, choice == Choice::Matrix);
    confined.watch(control_lane.clone());
    let playing = play_confined(&confined, spec, limits, choice, lane, &control_lane);
    let played = match limits.max_wall {
        Some(wall) => tokio::time::timeout(wall, playing)
            .await
            .unwrap_or(Err(SpecError::TooLong(wall.as_secs()))),
        None => playing.await,
    };
    // A run the watch ended fails for that reason, not for what its sessions saw next.
    let played = match confined.ended_by_watch() {
        Some(why) => Err(SpecError::Ended(why)),
        None => played,
    };
    confined.close();
    played
}

/// Connects the control connection and one per session, as the run's role, all at once; a
/// `witnessed` run's control connection puts the witness on the tables its setup makes.
async fn connect_all(
    confined: &Confined,
    spec: &Spec,
    keep: Keep,
    witnessed: bool,
) -> Result<(SpecSession, Vec<SpecSession>), SpecError> {
    let connect = |who: String, name: Option<&str>| {
        let mut config = confined.session_config(&who);
        if witnessed && name.is_none() {
            let options = config.get_options().unwrap_or_default();
            config.options(format!("{options} {}", witness::CONTROL_OPTION));
        }
        let name = name.map(str::to_owned);
        async move {
            SpecSession::connect(&config, keep).await.map_err(|e| {
                let why = confine::describe(&e);
                SpecError::Connect(name.map_or_else(|| why.clone(), |name| format!("{name}: {why}")))
            })
        }
    };
    let sessions = spec
        .sessions
        .iter()
        .enumerate()
        .map(|(i, session)| connect(format!("session{}", i + 1), Some(&session.name)));
    let (control, sessions) = tokio::try_join!(
        connect("control".to_owned(), None),
        futures_util::future::try_join_all(sessions)
    )?;
    Ok((control, sessions))
}

async fn play_confined(
    confined: &Confined,
    spec: &Spec,
    limits: &Limits,
    choice: Choice,
    lane: &(dyn Fn(&str, bool) -> Lane + Send + Sync),
    control_lane: &Lane,
) -> Result<Vec<Played>, SpecError> {
    let witnessed = choice.proves();
    let (control, sessions) = connect_all(confined, spec, limits.keep, witnessed).await?;
    let quiet = choice == Choice::Matrix;
    let lanes: Vec<Lane> = spec.sessions.iter().map(|s| lane(&s.name, quiet)).collect();
    let mut player = Player::new(spec, control, sessions, control_lane.clone(), lanes, limits.step_wait).await?;
    if witnessed {
        player.witness();
    }
    play_chosen(&mut player, spec, limits, choice, control_lane).await
}

/// [`play_on`], on the MariaDB at `url`: a database and user of the run's own there, removed
/// whatever happens (`stop` too ends the play early, its sandbox removed: the command line's
/// Ctrl-C); each statement bounded by the sandbox's watchdog above the step limit, as
/// PostgreSQL's statement timeout is. Where `choice` asks for it, each permutation's proof, from
/// the witness's MariaDB side ([`witness`]).
pub async fn play_on_mariadb(
    url: &str,
    spec: &Spec,
    limits: &Limits,
    choice: Choice,
    lane: &(dyn Fn(&str, bool) -> Lane + Send + Sync),
    stop: impl Future<Output = ()>,
) -> Result<Vec<Played>, SpecError> {
    let bounds = crate::sandbox::mariadb::Bounds {
        statement_time: limits.step_wait * 2 + Duration::from_secs(5),
        connections: u32::try_from(spec.sessions.len() + 1).unwrap_or(u32::MAX),
        ..crate::sandbox::mariadb::Bounds::default()
    };
    let sandbox = crate::sandbox::mariadb::MariaSandbox::open(url, bounds)
        .await
        .map(mariadb::Sandbox::new)
        .map_err(|e| SpecError::Connect(e.to_string()))?;
    let control_lane = lane(TESTER, choice == Choice::Matrix);
    let playing = async {
        let connect = |name: Option<String>| {
            let (options, admin) = (sandbox.session_options(), sandbox.racelab().clone());
            async move {
                mariadb::MariaLink::connect(options, admin)
                    .await
                    .map(|link| SpecSession::on_mariadb(link, limits.keep))
                    .map_err(|why| SpecError::Connect(name.map_or_else(|| why.clone(), |n| format!("{n}: {why}"))))
            }
        };
        let sessions = spec.sessions.iter().map(|s| connect(Some(s.name.clone())));
        let (control, sessions) = tokio::try_join!(connect(None), futures_util::future::try_join_all(sessions))?;
        let quiet = choice == Choice::Matrix;
        let lanes: Vec<Lane> = spec.sessions.iter().map(|s| lane(&s.name, quiet)).collect();
        let admin = sandbox.racelab().clone();
        let mut player = Player::on_mariadb(
            spec,
            control,
            sessions,
            (control_lane.clone(), lanes),
            limits.step_wait,
            admin,
        );
        if choice.proves() {
            player.witness();
        }
        play_chosen(&mut player, spec, limits, choice, &control_lane).await
    };
    let wall = limits.max_wall.unwrap_or(Duration::MAX);
    let played = tokio::select! {
        played = tokio::time::timeout(wall, playing) => played.unwrap_or(Err(SpecError::TooLong(wall.as_secs()))),
        () = stop => Err(SpecError::Interrupted),
    };
    // A run the watchdog ended (its tables past their bound) fails for that reason.
    let ended = sandbox
        .overruns()
        .into_iter()
        .find(|o| matches!(o, crate::sandbox::mariadb::Overrun::Bytes { .. }));
    sandbox.close().await;
    match ended {
        Some(overrun) => Err(SpecError::Ended(overrun.to_string())),
        None => played,
    }
}

/// Plays the permutations `choice` asks for on `player`, after the tester's header.
async fn play_chosen(
    player: &mut Player<'_>,
    spec: &Spec,
    limits: &Limits,
    choice: Choice,
    control_lane: &Lane,
) -> Result<Vec<Played>, SpecError> {
    player.header();
    let all = permutations(spec, limits);
    let chosen: Vec<(usize, &Vec<PermutationStep>)> = match choice {
        Choice::One(index) => all.get(index).map(|p| vec![(index, p)]).unwrap_or_default(),
        Choice::All { .. } | Choice::Matrix => all.iter().enumerate().collect(),
    };
    let mut played = Vec::new();
    for (index, steps) in chosen {
        played.push(play_one(player, spec, choice, index, steps, control_lane).await?);
    }
    Ok(played)
}

/// Plays one permutation: its setup, steps, checks, what is told of it, and its teardown.
async fn play_one(
    player: &mut Player<'_>,
    spec: &Spec,
    choice: Choice,
    index: usize,
    steps: &[PermutationStep],
    control_lane: &Lane,
) -> Result<Played, SpecError> {
    if choice == Choice::One(index) {
        player.play_setup(steps).await?;
        let before = player.snapshot().await;
        control_lane.emit(EventKind::Ledger {
            moment: Moment::Before,
            ledger: before,
        });
        player.play_steps(steps).await?;
    } else {
        player.play(steps).await?;
    }
    let mut checks = Vec::with_capacity(spec.checks.len());
    for check in &spec.checks {
        let answer = player.ask(&check.sql).await?;
        checks.push(judge(&check.sql, &answer, player.service()));
    }
    let verdict_checks: Vec<shared::Check> = checks.iter().map(CheckResult::as_check).collect();
    match choice {
        Choice::One(_) => {
            let after = player.snapshot().await;
            control_lane.emit(EventKind::Ledger {
                moment: Moment::After,
                ledger: after,
            });
            control_lane.emit(EventKind::Verdict {
                verdict: verdict(verdict_checks),
            });
            if let Some(proof) = player.proof().await {
                control_lane.emit(EventKind::Proof { proof: Box::new(proof) });
            }
        }
        Choice::Matrix => control_lane.emit_always(EventKind::Permutation {
            index: u32::try_from(index).unwrap_or(u32::MAX),
            steps: player.played().to_vec(),
            outcome: shared::spec::matrix::outcome(player.played(), &verdict_checks),
        }),
        Choice::All { .. } => {}
    }
    let proof = match choice {
        Choice::All { why: true } => player.proof().await,
        _ => None,
    };
    if let Some(proof) = &proof {
        // In the stream too (`racelab run --json`); printed as text by the command line.
        control_lane.emit(EventKind::Proof {
            proof: Box::new(proof.clone()),
        });
    }
    player.teardown().await?;
    Ok(Played {
        steps: steps.iter().map(|s| s.name.clone()).collect(),
        checks,
        proof,
        played: player.played().to_vec(),
    })
}

/// The lane of the tester's own connection: the header, each permutation's start, the setup's
/// output, the ledger and the verdict.
pub const TESTER: &str = "tester";

/// A permutation's verdict from its checks: reproduced when one is broken, prevented when all
/// hold, unstated without any.
fn verdict(checks: Vec<shared::Check>) -> shared::Verdict {
    if checks.is_empty() {
        return shared::Verdict {
            kind: shared::VerdictKind::Unstated,
            headline: "No rule was stated".to_owned(),
            reason: "Add `# check: <SQL>` lines to the spec: queries a correct system answers with true.".to_owned(),
            checks,
        };
    }
    let broken = checks.iter().filter(|c| !c.holds).count();
    let headline = match broken {
        0 => "Every check held".to_owned(),
        1 => "A check was broken".to_owned(),
        n => format!("{n} checks were broken"),
    };
    shared::Verdict::judge(
        checks,
        headline,
        "What the spec's # check: lines say a correct system holds, asked after its steps.",
    )
}

/// A check's verdict from its answer: held when its first row is all true: `t` on PostgreSQL;
/// on MariaDB, whose comparisons answer 1 or 0, `1`.
fn judge(sql: &str, answer: &session::Answer, on: shared::Service) -> CheckResult {
    if let Some(failure) = &answer.failure {
        return CheckResult {
            sql: sql.to_owned(),
            held: None,
            answer: failure.line(),
        };
    }
    let row = answer.sets.last().and_then(|set| set.rows.first());
    let Some(row) = row else {
        return CheckResult {
            sql: sql.to_owned(),
            held: None,
            answer: "no rows".to_owned(),
        };
    };
    let values: Vec<&str> = row.iter().map(|v| v.as_deref().unwrap_or("NULL")).collect();
    let (yes, no) = match on {
        shared::Service::Mariadb => ("1", "0"),
        _ => ("t", "f"),
    };
    let held = if values.iter().all(|v| *v == yes || *v == no) {
        Some(values.iter().all(|v| *v == yes))
    } else {
        None
    };
    CheckResult {
        sql: sql.to_owned(),
        held,
        answer: values.join(" | "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(values: &[Option<&str>]) -> session::Answer {
        session::Answer {
            sets: vec![table::ResultSet {
                columns: values.iter().map(|_| "c".to_owned()).collect(),
                rows: vec![values.iter().map(|v| v.map(str::to_owned)).collect()],
                rows_dropped: 0,
            }],
            failure: None,
            ends_with_rows: true,
            cut_at: None,
        }
    }

    #[test]
    fn a_check_holds_when_its_row_is_all_true() {
        let pg = shared::Service::Postgres;
        assert_eq!(judge("q", &answer(&[Some("t")]), pg).held, Some(true));
        assert_eq!(judge("q", &answer(&[Some("t"), Some("f")]), pg).held, Some(false));
        let odd = judge("q", &answer(&[Some("5400")]), pg);
        assert_eq!((odd.held, odd.answer.as_str()), (None, "5400"));
        assert_eq!(judge("q", &answer(&[None]), pg).held, None);
        assert_eq!(judge("q", &session::Answer::default(), pg).answer, "no rows");
        // PostgreSQL's 1 is a number; MariaDB's comparisons answer 1 or 0.
        assert_eq!(judge("q", &answer(&[Some("1")]), pg).held, None);
        let maria = shared::Service::Mariadb;
        assert_eq!(judge("q", &answer(&[Some("1")]), maria).held, Some(true));
        assert_eq!(judge("q", &answer(&[Some("1"), Some("0")]), maria).held, Some(false));
        assert_eq!(judge("q", &answer(&[Some("t")]), maria).held, None);
    }

    #[test]
    fn specs_past_the_limits_are_refused_with_the_limit_named() {
        let limits = Limits::default();
        let big = format!("session s step a {{ SELECT '{}'; }}", "x".repeat(70_000));
        assert!(matches!(
            read(&big, &limits),
            Err(SpecError::OverLimit(shared::spec::OverLimit::TooBig {
                limit: 65_536,
                ..
            }))
        ));
        let nine: String = (1..=9)
            .map(|i| format!("session s{i} step a{i} {{ SELECT 1; }}\n"))
            .collect();
        assert!(matches!(
            read(&nine, &limits),
            Err(SpecError::OverLimit(shared::spec::OverLimit::TooManySessions {
                count: 9,
                limit: 8,
                ..
            }))
        ));
        let wide: String = (1..=4)
            .map(|i| format!("session s{i} step a{i} {{ }} step b{i} {{ }} step c{i} {{ }}\n"))
            .collect();
        let error = read(&wide, &limits).unwrap_err();
        assert!(error.to_string().contains("369600 interleavings"), "{error}");
        assert!(read(&wide, &Limits::command_line(Duration::from_secs(300))).is_ok());
        assert!(matches!(
            read("session s step a { SELECT 1; } permutation b", &limits),
            Err(SpecError::Invalid(_))
        ));
        assert!(matches!(read("session s step", &limits), Err(SpecError::Parse(_))));
    }
}
