//! A run's place on MariaDB: its sandbox, taken ready from the shelf ([`super::shelf`]) or made
//! when the run first needs it (a run on PostgreSQL never pays for one), the session that reads
//! its ledger, and which actor each of its threads is. The supervisor closes it when the run
//! ends, however it ended ([`Place::close`]).

use super::super::error::RunError;
use super::super::run::{Run, TableQuery};
use super::super::sql::Output;
use super::{MariaSession, Setting, Shelf};
use crate::sandbox::mariadb::{Bounds, MariaSandbox};
use shared::Ledger;
use std::collections::HashMap;
use std::sync::Mutex;

/// The run's MariaDB part, empty until it is first asked for.
#[derive(Default)]
pub struct Place {
    opened: tokio::sync::Mutex<Option<Prepared>>,
    /// The schema it was prepared with, if it was (a sandbox goes back to the shelf for it).
    schema: Mutex<Option<&'static str>>,
    /// Thread id → actor name, so a wait is told in the reader's words.
    threads: Mutex<HashMap<u64, String>>,
    /// Once closed, nothing opens it again (an actor asked for after its run ended).
    closed: std::sync::atomic::AtomicBool,
}

/// A sandbox with its schema made, and the session that made it: the run's own (an autocommit
/// session of the run's user: it makes the tables and reads the ledger, as the monitor session
/// does on PostgreSQL).
pub struct Prepared {
    pub sandbox: MariaSandbox,
    pub session: MariaSession,
    /// When the sandbox was made (its name says so too, for the sweep): a reused one is made
    /// again once it is older than the shelf keeps them.
    pub made: std::time::Instant,
}

/// Opens `sandbox`'s own session and makes `schema` in it (each statement in turn: `;` ends
/// one, the lab's own text, never a reader's). The sandbox is removed if that fails.
pub async fn prepare(sandbox: MariaSandbox, schema: &str) -> Result<Prepared, RunError> {
    let made = async {
        let setting = Setting {
            level: None,
            snapshot_isolation: false,
        };
        let mut session = MariaSession::open(sandbox.session_options(), setting).await?;
        for statement in statements(schema) {
            session.run(&statement).await?;
        }
        Ok::<_, super::SessionError>(session)
    }
    .await;
    match made {
        Ok(session) => Ok(Prepared {
            sandbox,
            session,
            made: std::time::Instant::now(),
        }),
        Err(error) => {
            sandbox.close().await;
            Err(RunError::Other(format!("MariaDB: {error}")))
        }
    }
}

/// Readies a sandox a run played in for the next run of the same `schema`: the run's other
/// sessions ended (their transactions rolled back), every table emptied and its numbering
/// restarted, the schema's rows put back. A lab run's sandbox holds only the lab's tables (no
/// reader's SQL plays on MariaDB yet), so this is the state `prepare` left, in a millisecond or
/// two where dropping and making the tables again takes several.
pub async fn reset(prepared: &mut Prepared, schema: &str) -> Result<(), RunError> {
    let failed = |e: super::SessionError| RunError::Other(format!("MariaDB: {e}"));
    prepared.sandbox.end_sessions_but(prepared.session.thread()).await?;
    let session = &mut prepared.session;
    let tables = session
        .run("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()")
        .await
        .map_err(failed)?;
    session.run("SET FOREIGN_KEY_CHECKS = 0").await.map_err(failed)?;
    for name in tables.rows.iter().filter_map(|row| row.first()?.as_text()) {
        if name.contains('`') {
            return Err(RunError::Other(format!("an odd table name: {name:?}")));
        }
        session.run(&format!("DELETE FROM `{name}`")).await.map_err(failed)?;
        session
            .run(&format!("ALTER TABLE `{name}` AUTO_INCREMENT = 1"))
            .await
            .map_err(failed)?;
    }
    session.run("SET FOREIGN_KEY_CHECKS = 1").await.map_err(failed)?;
    for statement in statements(schema) {
        if !statement.to_uppercase().starts_with("CREATE ") {
            session.run(&statement).await.map_err(failed)?;
        }
    }
    Ok(())
}

impl Place {
    /// Runs `sql` (one statement) on the run's own session, making the sandbox first if need be.
    async fn on_reader(&self, run: &Run, sql: &str) -> Result<Output, RunError> {
        let mut opened = self.open(run, None).await?;
        let reader = &mut opened.as_mut().ok_or_else(gone)?.session;
        reader.run(sql).await.map_err(|e| RunError::Other(e.to_string()))
    }

    /// The sandbox, on first use taken from the shelf ready with `schema` where the run may
    /// (it plays by itself, not a step at a time), else made with the run's bounds and
    /// `schema`; the shelf then makes another for the next run.
    async fn open(
        &self,
        run: &Run,
        schema: Option<&'static str>,
    ) -> Result<tokio::sync::MutexGuard<'_, Option<Prepared>>, RunError> {
        let mut opened = self.opened.lock().await;
        if opened.is_some() {
            return Ok(opened);
        }
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(gone());
        }
        let shelf = run.mariadb_shelf().filter(|_| !run.is_stepped());
        let taken = schema
            .zip(shelf.as_ref())
            .and_then(|(schema, shelf)| shelf.take(schema));
        let prepared = match taken {
            Some(prepared) => prepared,
            None => {
                let sandbox = MariaSandbox::open(run.mariadb_url(), bounds_for(run))
                    .await
                    .map_err(|e| RunError::Other(e.to_string()))?;
                prepare(sandbox, schema.unwrap_or("")).await?
            }
        };
        *self.schema.lock().unwrap_or_else(|p| p.into_inner()) = schema;
        *opened = Some(prepared);
        Ok(opened)
    }

    /// How an actor's session connects, and racelab's own pool on the server (which sees every
    /// thread's lock waits).
    pub(super) async fn reach(
        &self,
        run: &Run,
    ) -> Result<(sqlx::mysql::MySqlConnectOptions, sqlx::MySqlPool), RunError> {
        let opened = self.open(run, None).await?;
        let sandbox = &opened.as_ref().ok_or_else(gone)?.sandbox;
        Ok((sandbox.session_options(), sandbox.racelab().clone()))
    }

    /// Remembers that thread `thread` is `name`'s session.
    pub(super) fn name_thread(&self, thread: u64, name: &str) {
        self.threads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(thread, name.to_owned());
    }

    /// The reader's name for thread `thread`.
    pub(super) fn name_of(&self, thread: u64) -> String {
        self.threads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&thread)
            .cloned()
            .unwrap_or_else(|| format!("thread {thread} (outside this run)"))
    }

    /// Ends every session of the run on MariaDB and removes its sandbox, if it was made; or,
    /// for a run that `completed` and may take from `shelf`, resets it there for the next run
    /// of its schema ([`reset`]).
    pub async fn close(&self, completed: bool, shelf: Option<std::sync::Arc<Shelf>>) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        let Some(prepared) = self.opened.lock().await.take() else {
            return;
        };
        let schema = *self.schema.lock().unwrap_or_else(|p| p.into_inner());
        let removing = match (completed, &shelf, schema) {
            (true, Some(shelf), Some(schema)) => shelf.take_back(prepared, schema),
            _ => Some(prepared),
        };
        if let Some(prepared) = removing {
            prepared.sandbox.close().await;
        }
        // The shelf is topped up for the next run, whatever this one left on it.
        if let (Some(shelf), Some(schema)) = (shelf, schema) {
            shelf.refill(schema);
        }
    }
}

fn gone() -> RunError {
    RunError::Other("the run is over: its MariaDB sandbox is gone".into())
}

/// A run's bounds on MariaDB: every statement within the run's block timeout, but in step
/// mode, where a reader may think for minutes while an actor waits for a lock, within its idle
/// limit (as PostgreSQL's lock timeout is then); as many sessions as its budget gives it there.
fn bounds_for(run: &Run) -> Bounds {
    let limits = run.limits();
    let statement_time = if run.is_stepped() {
        limits.idle_in_transaction_timeout
    } else {
        Bounds::default().statement_time.max(limits.block_timeout)
    };
    let default = Bounds::default();
    Bounds {
        statement_time,
        connections: default.connections.max(run.mariadb_sessions()),
        ..default
    }
}

impl Run {
    /// Runs one statement of the scenario's own setup on MariaDB (a table, a seed row), on the
    /// run's own session; the sandbox is made first if this is the run's first need of it.
    pub async fn mariadb_setup(&self, sql: &str) -> Result<(), RunError> {
        self.core().mariadb.on_reader(self, sql).await.map(|_| ())
    }

    /// Readies the run's sandbox with `schema` (the lab's tables and seed, `;` between
    /// statements): one made ahead of demand if there is one ready, else made now. A run asks
    /// for it before anything else on MariaDB.
    pub async fn mariadb_prepare(&self, schema: &'static str) -> Result<(), RunError> {
        self.core().mariadb.open(self, Some(schema)).await.map(|_| ())
    }

    /// One query on the run's own MariaDB session (a final check).
    pub async fn mariadb_check(&self, sql: &str) -> Result<Output, RunError> {
        self.core().mariadb.on_reader(self, sql).await
    }

    /// The ledger on MariaDB: each query one table (their `schema` is ignored: a run has one
    /// database there).
    pub async fn mariadb_snapshot(&self, tables: &[TableQuery]) -> Result<Ledger, RunError> {
        let mut ledger = Ledger::default();
        for query in tables {
            ledger.tables.push(query.table(self.mariadb_check(query.sql).await?));
        }
        Ok(ledger)
    }
}

/// A script's statements, without comments (`-- …` to the end of a line) or empty ones.
fn statements(script: &str) -> Vec<String> {
    let code: String = script
        .lines()
        .map(|line| line.split_once("--").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n");
    code.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::statements;

    #[test]
    fn a_script_splits_into_its_statements_without_comments() {
        let script = "-- the teams\nCREATE TABLE t (id int); -- one row\n\nINSERT INTO t VALUES (1);\n";
        assert_eq!(
            statements(script),
            ["CREATE TABLE t (id int)", "INSERT INTO t VALUES (1)"]
        );
        assert!(statements("-- nothing\n").is_empty());
    }
}
