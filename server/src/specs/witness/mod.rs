//! The witness: what a spec's transactions wrote and read, observed while it plays, so that
//! [`shared::proof`] can say why it happened.
//!
//! - **Writes.** Every table the setup makes in the run's schema gets a row trigger of
//!   racelab's as it is made (`racelab_witness`, calling `racelab.witness()`, made in the
//!   template of every run database: the run's role cannot replace it) that reports each row the
//!   sessions write in a NOTICE: its transaction id, the transaction's start, the moment, the
//!   row before and after. The setup's own rows are read once it is done. A notice is sent at once, so the writes of a transaction PostgreSQL later
//!   cancels are seen too. The session keeps these apart from the spec's own notices: never
//!   printed, never counted by a `notices` blocker. The trigger takes no lock and reads no table.
//! - **Reads.** After a step whose last statement returned rows, its session is asked for its
//!   snapshot and its transaction's start (`pg_current_snapshot()`, `now()`): no table is read,
//!   no lock is taken, and the snapshot was already the statement's, so PostgreSQL decides
//!   nothing differently. (Asked after a bare `BEGIN`, it would take a snapshot early; it never
//!   is.)
//! - **What a read saw**, without reading the reader's SQL: after the permutation, each read's
//!   own query is asked again, as the run's role, of a temporary table of the same name (which
//!   shadows the real one) holding one version at a time. A version matters to the read when the
//!   answer changes. Which versions the read's snapshot held decides which it saw and which it
//!   missed. A read whose answer a version does not change (a sum of zero) cannot tell it apart:
//!   the proof then misses an edge, never invents one.
//!
//! A spec may put functions, operators and types of its own before `pg_catalog` in its search
//! path: what racelab asks in a reader's session or on the control connection names each with
//! its schema, or calls a function of the template's fixed to `pg_catalog`, so a spec cannot
//! make its own proof lie.

mod mariadb;

use super::session::{Answer, SpecSession};
use crate::sandbox::postgres::quote_ident;
use serde_json::{Map, Value};
use shared::proof::{self, End, History, Proof, Read, Row, Txn, Version, Wait};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// What reads asked again answered, kept for a run's later permutations: whether the version
/// (its row as JSON) of the table changes the query's answer. Every permutation of a spec asks
/// the same queries of the same versions; asking once a run saves a temporary table each time.
pub type Asked = HashMap<(String, String, String), bool>;

/// The message of the trigger's notices: how a session tells them from the spec's own.
pub const MARK: &str = "racelab witness";

/// How long the read-again queries may take in all: past it, the rest count as unknown.
const EVALUATION_BUDGET: Duration = Duration::from_secs(3);

/// What one permutation's transactions were seen to do.
pub struct Witness {
    /// The run's schema, where the spec's tables are.
    schema: String,
    tables: Vec<Keyed>,
    /// The rows the setup left, by table.
    initial: Vec<(String, Map<String, Value>)>,
    writes: Vec<Written>,
    reads: Vec<Seen>,
    failures: Vec<(usize, usize, Option<String>)>,
    /// Steps that ended a session's transaction: `COMMIT` (true) or `ROLLBACK` (false).
    ends: Vec<(usize, usize, bool)>,
    waits: Vec<(usize, usize, Vec<usize>)>,
    /// Reports were dropped ([`super::session::WITNESSED_AT_MOST`]), or on MariaDB a session
    /// could not be asked for them: no proof is drawn from a partial history.
    lost_count: bool,
    /// On MariaDB: its sessions' transactions as the witness tells them apart, and when each
    /// step completed ([`mariadb`]).
    on_mariadb: Option<OnMariadb>,
}

/// What the witness keeps on MariaDB beside what it keeps on either server.
struct OnMariadb {
    sessions: mariadb::Sessions,
    /// When each step (session, step) completed, as a place in completion order.
    completed_at: HashMap<(usize, usize), usize>,
    /// How many triggers it put on: fewer at the end, and the spec dropped some.
    triggers: usize,
}

/// A table with a primary key, its key's columns, and the columns its versions are said by.
struct Keyed {
    name: String,
    key: Vec<String>,
    columns: Vec<String>,
}

/// One row written, as the trigger reported it.
struct Written {
    session: usize,
    step: usize,
    xid: u64,
    began: String,
    at: i64,
    table: String,
    old: Option<Map<String, Value>>,
    new: Option<Map<String, Value>>,
}

/// One read step, and what it read as of.
struct Seen {
    session: usize,
    step: usize,
    sql: String,
    view: View,
    /// Its transaction's start: the read's transaction is the one its session's writes share.
    began: String,
    /// The read was a transaction of its own (no `BEGIN` before it).
    alone: bool,
}

/// What a read read as of.
enum View {
    /// PostgreSQL's: its snapshot.
    Snapshot(Snapshot),
    /// MariaDB's, which shows none: the moments (places in completion order) its snapshot may
    /// have been taken at, the read's own first, and its answer, to tell which it was.
    Moments {
        moments: Vec<usize>,
        answer: Vec<super::table::ResultSet>,
    },
}

/// A `pg_snapshot`: which transactions' writes it shows.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Snapshot {
    xmin: u64,
    xmax: u64,
    running: Vec<u64>,
}

impl Snapshot {
    /// `xmin:xmax:xip,…`, as `pg_current_snapshot()::text` writes it.
    fn parse(text: &str) -> Option<Snapshot> {
        let mut parts = text.split(':');
        let xmin = parts.next()?.parse().ok()?;
        let xmax = parts.next()?.parse().ok()?;
        let running = match parts.next()? {
            "" => Vec::new(),
            list => list.split(',').map(str::parse).collect::<Result<_, _>>().ok()?,
        };
        Some(Snapshot { xmin, xmax, running })
    }

    /// Whether a committed transaction's writes are in this snapshot (`pg_visible_in_snapshot`).
    fn shows(&self, xid: u64) -> bool {
        xid < self.xmin || (xid < self.xmax && !self.running.contains(&xid))
    }
}

/// The witness's functions and event trigger, made in the template every run database is copied
/// from ([`super::confine`]): racelab's, not the run's role's, so a spec can neither replace them
/// nor, with a search path of its own, stand in for what they call (each is fixed to
/// `pg_catalog`).
/// - `racelab.witness()`, the row trigger: reports each row written in a NOTICE ([`MARK`]).
/// - `racelab_witness_new_tables`, an event trigger: as a witnessed run's setup makes a table in
///   a schema (the control connection says so: `racelab.witness` is `on`, given at
///   connect, see [`CONTROL_OPTION`]), it puts the row trigger on, inside the setup's own
///   transaction. Putting it on afterwards cost a transaction of its own a permutation, DDL and
///   a commit: a third of the witness's time (measured, `cargo bench --bench specs`). The
///   trigger is not fired by the control connection (its `WHEN`), so the setup's and teardown's
///   writes pay nothing: the setup's rows are read once it is done. A partitioned table gets
///   none (its partitions, tables of their own, have theirs): a trigger on it would be copied
///   to a table attached later, which has one of that name, and the reader's `ATTACH` would
///   fail. A table the trigger cannot be put on is left unwitnessed rather than failing the
///   reader's statement.
/// - `racelab.witnessed_tables(schema)`: says, as JSON, each witnessed table that has a primary
///   key (at most 20): its key columns in order, the columns a version is told by in words (all
///   but time stamps: a row's `created_at` says when, not which version a reader saw; it is
///   still compared when reads are asked again), and its rows (at most 1,000). Read only, one
///   round trip a permutation. A table whose trigger the spec dropped or disabled is not
///   listed: its proof would miss what it did not see.
pub const WITNESS_SQL: &str = "
CREATE FUNCTION racelab.witness() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog SET client_min_messages = notice AS $witness$
BEGIN
  RAISE NOTICE 'racelab witness' USING DETAIL = json_build_object(
    'xid', pg_current_xact_id()::text, 'began', now()::text,
    'at', (date_part('epoch', clock_timestamp()) * 1000000)::int8,
    'schema', TG_TABLE_SCHEMA, 'table', TG_TABLE_NAME, 'old', row_to_json(OLD), 'new', row_to_json(NEW))::text;
  RETURN NULL;
END
$witness$;
CREATE FUNCTION racelab.witness_new_tables() RETURNS event_trigger LANGUAGE plpgsql
SET search_path = pg_catalog AS $new$
DECLARE
  t record;
BEGIN
  IF current_setting('racelab.witness', true) IS DISTINCT FROM 'on' THEN
    RETURN;
  END IF;
  FOR t IN
    SELECT c.oid FROM pg_event_trigger_ddl_commands() d JOIN pg_class c ON c.oid = d.objid
    WHERE d.classid = 'pg_class'::regclass AND d.objsubid = 0 AND c.relkind = 'r'
      AND c.relpersistence <> 't'
  LOOP
    BEGIN
      EXECUTE format('CREATE TRIGGER racelab_witness AFTER INSERT OR UPDATE OR DELETE ON %s '
                     'FOR EACH ROW WHEN (pg_catalog.pg_backend_pid() OPERATOR(pg_catalog.<>) %s) '
                     'EXECUTE FUNCTION racelab.witness()', t.oid::regclass, pg_backend_pid());
    EXCEPTION WHEN OTHERS THEN
      NULL;
    END;
  END LOOP;
END
$new$;
CREATE EVENT TRIGGER racelab_witness_new_tables ON ddl_command_end
  WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO')
  EXECUTE FUNCTION racelab.witness_new_tables();
CREATE FUNCTION racelab.witnessed_tables(schema name) RETURNS text LANGUAGE plpgsql
SET search_path = pg_catalog AS $tables$
DECLARE
  t record;
  found json[] := '{}';
  rows json;
BEGIN
  FOR t IN
    SELECT c.relname::text AS name,
      (SELECT json_agg(a.attname::text ORDER BY k.ord)
         FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum) AS key,
      (SELECT json_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
           AND a.atttypid NOT IN ('timestamp'::regtype, 'timestamptz'::regtype)) AS columns
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
    WHERE i.indisprimary AND c.relkind IN ('r', 'p')
      AND c.relnamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = schema)
      AND EXISTS (SELECT FROM pg_trigger g WHERE g.tgrelid = c.oid AND g.tgname = 'racelab_witness'
                    AND g.tgfoid = 'racelab.witness()'::regprocedure AND g.tgenabled <> 'D')
    ORDER BY 1 LIMIT 20
  LOOP
    EXECUTE format('SELECT coalesce(json_agg(row_to_json(r)), ''[]'') FROM (SELECT * FROM %I.%I LIMIT 1000) r',
                   schema, t.name) INTO rows;
    found := found || json_build_object('name', t.name, 'key', t.key, 'columns', t.columns, 'rows', rows);
  END LOOP;
  RETURN array_to_json(found)::text;
END
$tables$;
";

/// What a witnessed run's control connection is given at connect: the event trigger puts the
/// row trigger on the tables its setup makes. A startup option, so a spec's `RESET ALL` keeps
/// it; a spec that turns it off only loses its own proof.
pub const CONTROL_OPTION: &str = "-c racelab.witness=on";

/// What the control connection is asked once the setups are done: the run's schema, and what
/// [`WITNESS_SQL`]'s `witnessed_tables` says of it (its witnessed tables and the rows the setup
/// left in them).
pub const READ: &str = "SELECT pg_catalog.current_schema(), racelab.witnessed_tables(pg_catalog.current_schema())";

/// What a read step's session is asked after it: the read's snapshot, whether its transaction
/// is the statement alone, and its start. Asked in the reader's session, so every operator is
/// named with its schema (a spec may put its own first in the search path).
pub const PROBE: &str = "SELECT pg_catalog.pg_current_snapshot(), \
pg_catalog.now() OPERATOR(pg_catalog.=) pg_catalog.statement_timestamp(), pg_catalog.now()";

fn first_rows(answer: &Answer) -> Vec<Vec<Option<String>>> {
    answer.sets.first().map(|s| s.rows.clone()).unwrap_or_default()
}

fn object(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str(text).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// One table as `witnessed_tables` says it: its name, key and columns, and its rows.
fn keyed_table(table: Value) -> Option<(Keyed, Vec<Map<String, Value>>)> {
    let Value::Object(mut table) = table else { return None };
    let names = |value: Option<Value>| -> Option<Vec<String>> { serde_json::from_value(value?).ok() };
    let keyed = Keyed {
        name: table.get("name")?.as_str()?.to_owned(),
        key: names(table.remove("key"))?,
        columns: names(table.remove("columns")).unwrap_or_default(),
    };
    let rows = match table.remove("rows") {
        Some(Value::Array(rows)) => rows
            .into_iter()
            .filter_map(|row| match row {
                Value::Object(row) => Some(row),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    Some((keyed, rows))
}

impl Witness {
    /// Starts watching a permutation whose setups are done, from what [`READ`]
    /// answered on `control`. `None` when there is nothing to witness (no witnessed table has a
    /// primary key) or PostgreSQL refused.
    pub fn after_setup(installed: Answer, control: &mut SpecSession) -> Option<Witness> {
        control.take_notices();
        if let Some(failure) = &installed.failure {
            tracing::debug!("no witness for this spec: {}", failure.line());
            return None;
        }
        // The setup's rows, cut at what racelab reads: a history that starts from part of them
        // would prove nothing.
        if installed.cut_at.is_some() {
            return None;
        }
        let row = first_rows(&installed).into_iter().next()?;
        let schema = row.first()?.clone()?;
        let Value::Array(listed) = serde_json::from_str(row.get(1)?.as_deref()?).ok()? else {
            return None;
        };
        let (mut tables, mut initial) = (Vec::new(), Vec::new());
        for table in listed {
            let Some((keyed, rows)) = keyed_table(table) else {
                continue;
            };
            initial.extend(rows.into_iter().map(|row| (keyed.name.clone(), row)));
            tables.push(keyed);
        }
        if tables.is_empty() {
            return None;
        }
        Some(Witness::watching(schema, tables, initial, None))
    }

    /// A witness of `tables` (in `schema`), which the setup left holding `initial`, that has
    /// seen nothing yet.
    fn watching(
        schema: String,
        tables: Vec<Keyed>,
        initial: Vec<(String, Map<String, Value>)>,
        on_mariadb: Option<OnMariadb>,
    ) -> Witness {
        Witness {
            schema,
            tables,
            initial,
            writes: Vec::new(),
            reads: Vec::new(),
            failures: Vec::new(),
            ends: Vec::new(),
            waits: Vec::new(),
            lost_count: false,
            on_mariadb,
        }
    }

    /// Whether [`PROBE`] may be sent right behind `sql`, before its answer: it is one
    /// query that takes a snapshot of its own (a `SELECT`, `WITH`, `TABLE` or `VALUES`), so
    /// the probe cannot be the statement that takes its transaction's snapshot. Any other step
    /// is probed after its answer, if it returned rows.
    pub fn probe_behind(&self, sql: &str) -> bool {
        self.on_mariadb.is_none() && single_query(sql).is_some()
    }

    /// Takes note of step `step` of `session` once it completed with `answer`: the rows it wrote,
    /// its failure, or (when it read) the snapshot it read in: `probed`, the probe sent behind
    /// it, or asked of `connection` now.
    pub async fn step_done(
        &mut self,
        session: usize,
        step: usize,
        sql: &str,
        answer: &Answer,
        probed: Option<tokio::sync::oneshot::Receiver<Answer>>,
        connection: &mut SpecSession,
    ) {
        if self.on_mariadb.is_some() {
            return self.step_done_on_mariadb(session, step, sql, answer, connection).await;
        }
        for report in connection.take_witnessed() {
            if let Some(written) = parse_report(session, step, &self.schema, &report) {
                self.writes.push(written);
            }
        }
        self.lost_count |= connection.take_witness_lost();
        if let Some(failure) = &answer.failure {
            self.failures.push((session, step, failure.code()));
            return;
        }
        if let Some(committed) = transaction_end(sql) {
            self.ends.push((session, step, committed));
        }
        if !answer.ends_with_rows {
            return;
        }
        let probe = match probed {
            Some(probed) => probed.await.unwrap_or_else(|_| Answer::lost()),
            None => connection.exec(PROBE).await,
        };
        let row = first_rows(&probe).into_iter().next().unwrap_or_default();
        let text = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        if let Some(snapshot) = Snapshot::parse(&text(0)) {
            self.reads.push(Seen {
                session,
                step,
                sql: sql.to_owned(),
                view: View::Snapshot(snapshot),
                alone: text(1) == "t",
                began: text(2),
            });
        }
    }

    /// Whether it saw every write (none of its reports was dropped).
    pub fn complete(&self) -> bool {
        !self.lost_count
    }

    /// Takes note that `session`'s step `step` waited for `holders`' sessions.
    pub fn waited(&mut self, session: usize, step: usize, holders: Vec<usize>) {
        self.waits.push((session, step, holders));
    }

    /// The proof of the permutation just played: its history put together (transactions'
    /// ends asked of the server on `control`, each read asked again), then reasoned about.
    /// `sessions`: the spec's session names.
    pub async fn proof(&self, control: &mut SpecSession, sessions: &[String], asked: &mut Asked) -> Proof {
        let mut history = History::default();
        let txns = self.transactions(control, sessions).await;
        tracing::debug!(
            writes = self.writes.len(),
            reads = self.reads.len(),
            txns = txns.len(),
            "witnessed"
        );
        history.txns = txns.iter().map(|t| t.txn.clone()).collect();
        let Installed {
            versions,
            rows: rows_of,
            xid_of,
        } = self.versions(&txns);
        history.versions = versions;
        if !self.triggers_kept(control).await {
            return Proof::default();
        }
        // Reads: which versions mattered to each, then which of those its snapshot held.
        let started = Instant::now();
        let matters = self.matters(control, &history, &rows_of, asked).await;
        // Each row's versions in install order, once for every read.
        let by_row = versions_by_row(&history.versions);
        let known = Known {
            history: &history,
            rows: &rows_of,
            by_row: &by_row,
            txns: &txns,
            xid_of: &xid_of,
        };
        let (mut reads, mut unknown) = (Vec::new(), 0);
        for (r, seen) in self.reads.iter().enumerate() {
            if returns_its_own_write(&seen.sql) {
                continue;
            }
            let matter = matters.get(&r).map(Vec::as_slice);
            match self.what_read_saw(control, seen, matter, &known, started).await {
                Some(read) => reads.push(read),
                None => unknown += 1,
            }
        }
        history.reads = reads;
        history.waits = self.waits_between(&txns);
        if self.on_mariadb.is_some() {
            history.server = shared::Service::Mariadb;
        }
        let mut proof = proof::derive(&history);
        proof.lines.extend(self.unseen(unknown));
        proof
    }

    /// What the proof says it could not see: `unknown` reads left out, and on MariaDB what no
    /// proof there sees.
    fn unseen(&self, unknown: usize) -> Vec<String> {
        let mut lines = Vec::new();
        if unknown > 0 {
            let or = match self.on_mariadb {
                Some(_) => ", or no view InnoDB could have read from gives its answer, or two that do disagree",
                None => "",
            };
            lines.push(format!(
                "racelab could not tell what {unknown} read{} saw (a step of several statements, or \
                 a query it could not ask again{or}), so {} left out.",
                if unknown == 1 { "" } else { "s" },
                if unknown == 1 { "it is" } else { "they are" }
            ));
        }
        if self.on_mariadb.is_some() {
            lines.push(mariadb::CANNOT_SEE.to_owned());
        }
        lines
    }

    /// What read `seen` saw, among the versions that `matter` to it (`None`: it could not be
    /// asked again): by its snapshot on PostgreSQL, by the view that gives its answer on
    /// MariaDB. `None` when racelab cannot tell.
    async fn what_read_saw(
        &self,
        control: &mut SpecSession,
        seen: &Seen,
        matter: Option<&[bool]>,
        known: &Known<'_>,
        started: Instant,
    ) -> Option<Read> {
        let reader = match seen.alone {
            true => known
                .txns
                .iter()
                .position(|t| t.session == seen.session && t.alone_step == Some(seen.step)),
            false => txn_of(known.txns, seen.session, &seen.began),
        }?;
        let matter = matter?;
        match &seen.view {
            View::Snapshot(snapshot) => {
                let history = known.history;
                let shows = |_: &Version, by: usize| {
                    history.txns[by].end == End::Committed && known.xid_of.get(&by).is_some_and(|&x| snapshot.shows(x))
                };
                Some(what_it_saw(seen.step, (reader, matter), known.by_row, history, &shows))
            }
            View::Moments { .. } => {
                self.read_on_mariadb(control, (seen, reader, matter), known, started)
                    .await
            }
        }
    }

    /// The versions the setup left and the permutation's transactions installed, each writer
    /// told by its place in `txns` (a write of a transaction not among them is left out).
    fn versions(&self, txns: &[Observed]) -> Installed {
        let mut versions = Vec::new();
        // Versions: the setup's, then every write in the order the server made it.
        let mut order: Vec<&Written> = self.writes.iter().collect();
        order.sort_by_key(|w| w.at);
        let mut rows_of: Vec<Map<String, Value>> = Vec::new();
        for (table, row) in &self.initial {
            if let Some(version) = self.version(table, Some(row), None, None) {
                versions.push(version);
                rows_of.push(row.clone());
            }
        }
        let mut xid_of: HashMap<usize, u64> = HashMap::new();
        for w in order {
            let Some(by) = txn_of(txns, w.session, &w.began) else {
                continue;
            };
            xid_of.insert(by, w.xid);
            let step = Some(w.step as u64);
            let old_key = w.old.as_ref().and_then(|o| self.key(&w.table, o));
            let new_key = w.new.as_ref().and_then(|n| self.key(&w.table, n));
            if old_key.is_some() && old_key != new_key {
                // Deleted, or its key changed: the old key's row is gone.
                if let Some(v) = self.version(&w.table, None, w.old.as_ref(), Some((by, step))) {
                    versions.push(v);
                    rows_of.push(Map::new());
                }
            }
            if let Some(new) = &w.new
                && let Some(v) = self.version(&w.table, Some(new), None, Some((by, step)))
            {
                versions.push(v);
                rows_of.push(new.clone());
            }
        }
        Installed {
            versions,
            rows: rows_of,
            xid_of,
        }
    }

    /// Each step that waited, as a wait of its transaction for each holder's transaction
    /// (the holder's latest to start by then), by their places in `txns`.
    fn waits_between(&self, txns: &[Observed]) -> Vec<Wait> {
        let mut waits = Vec::new();
        for (waiter, step, holders) in &self.waits {
            let Some(waiter) = txns.iter().position(|t| t.session == *waiter && t.holds(*step)) else {
                continue;
            };
            for holder in holders {
                if let Some(holder) = txns.iter().rposition(|t| t.session == *holder && t.first <= *step) {
                    waits.push(Wait { waiter, holder });
                }
            }
        }
        waits
    }

    /// The primary key's value of `row` of `table`, as text (`1`, or `1,2` for several columns).
    fn key(&self, table: &str, row: &Map<String, Value>) -> Option<String> {
        let keyed = self.tables.iter().find(|t| t.name == table)?;
        let parts: Vec<String> = keyed.key.iter().map(|c| text(row.get(c))).collect();
        Some(parts.join(","))
    }

    /// A version of `table`'s row: its values (`new`) or its deletion (`old`'s key).
    fn version(
        &self,
        table: &str,
        new: Option<&Map<String, Value>>,
        old: Option<&Map<String, Value>>,
        by: Option<(usize, Option<u64>)>,
    ) -> Option<Version> {
        let keyed = self.tables.iter().find(|t| t.name == table)?;
        let key = self.key(table, new.or(old)?)?;
        // The columns besides the key, in the table's order: `11`, or `(manager=bob, amount=3000)`.
        let value = new.map(|row| {
            let rest: Vec<(&String, Option<&Value>)> = keyed
                .columns
                .iter()
                .filter(|c| !keyed.key.contains(c))
                .map(|c| (c, row.get(c)))
                .collect();
            match rest.as_slice() {
                [(_, only)] => text(*only),
                _ => {
                    let parts: Vec<String> = rest.iter().map(|(c, v)| format!("{c}={}", text(*v))).collect();
                    format!("({})", parts.join(", "))
                }
            }
        });
        Some(Version {
            row: Row::new(table, key),
            value,
            by: by.map(|(t, _)| t),
            step: by.and_then(|(_, s)| s),
        })
    }

    /// For each read (by index) that could be asked again: for each version, whether it changes
    /// the read's answer. Asked as the run's role, inside a transaction rolled back at once.
    async fn matters(
        &self,
        control: &mut SpecSession,
        history: &History,
        rows: &[Map<String, Value>],
        asked: &mut Asked,
    ) -> HashMap<usize, Vec<bool>> {
        let started = Instant::now();
        let mut by_sql: HashMap<&str, Option<Vec<bool>>> = HashMap::new();
        let mut out = HashMap::new();
        for (r, seen) in self.reads.iter().enumerate() {
            let Some(query) = single_query(&seen.sql) else { continue };
            if !by_sql.contains_key(query) {
                let answer = match (started.elapsed() < EVALUATION_BUDGET, &self.on_mariadb) {
                    (false, _) => None,
                    (true, None) => self.ask_again(control, query, history, rows, started, asked).await,
                    (true, Some(_)) => {
                        self.ask_again_on_mariadb(control, query, (history, rows), started, asked)
                            .await
                    }
                };
                by_sql.insert(query, answer);
            }
            if let Some(Some(matter)) = by_sql.get(query) {
                out.insert(r, matter.clone());
            }
        }
        out
    }

    /// `None` when it cannot be asked (an error), or the budget since `started` runs out.
    async fn ask_again(
        &self,
        control: &mut SpecSession,
        query: &str,
        history: &History,
        rows: &[Map<String, Value>],
        started: Instant,
        asked: &mut Asked,
    ) -> Option<Vec<bool>> {
        let mut matter = vec![false; history.versions.len()];
        for table in &self.tables {
            let key = |i: usize| asked_key(query, &table.name, &rows[i]);
            let versions = to_ask(query, &table.name, (history, rows), asked, &mut matter);
            if versions.is_empty() {
                continue;
            }
            let name = quote_ident(&table.name);
            let begun = control
                .exec(&format!(
                    "BEGIN; SET LOCAL statement_timeout = '250ms'; \
                     CREATE TEMPORARY TABLE {name} (LIKE {}.{name}) ON COMMIT DROP",
                    quote_ident(&self.schema)
                ))
                .await;
            if begun.failure.is_some() {
                control.exec("ROLLBACK").await;
                return None;
            }
            let base = control.exec(query).await;
            if base.failure.is_some() {
                control.exec("ROLLBACK").await;
                return None;
            }
            for i in versions {
                if started.elapsed() > EVALUATION_BUDGET {
                    control.exec("ROLLBACK").await;
                    return None;
                }
                let json = Value::Object(rows[i].clone()).to_string().replace('\'', "''");
                let one = control
                    .exec(&format!(
                        "INSERT INTO pg_temp.{name} SELECT * FROM \
                         pg_catalog.json_populate_record(NULL::pg_temp.{name}, '{json}')"
                    ))
                    .await;
                let answer = control.exec(query).await;
                let emptied = control.exec(&format!("DELETE FROM pg_temp.{name}")).await;
                if one.failure.is_some() || answer.failure.is_some() || emptied.failure.is_some() {
                    control.exec("ROLLBACK").await;
                    return None;
                }
                matter[i] = answer.sets != base.sets;
                asked.insert(key(i), matter[i]);
            }
            control.exec("ROLLBACK").await;
        }
        control.take_notices();
        control.take_witnessed();
        Some(matter)
    }

    /// The permutation's transactions, in the order they started, with how each ended.
    async fn transactions(&self, control: &mut SpecSession, sessions: &[String]) -> Vec<Observed> {
        let mut found = self.started(sessions);
        // The server says how a writer ended unless its steps already did: each ended at its
        // own COMMIT or ROLLBACK, and no step failed (a failed transaction's COMMIT rolls back;
        // a savepoint can undo a failure; a procedure can commit).
        let told_by_steps = self.failures.is_empty()
            && found
                .iter()
                .filter(|t| t.xid.is_some())
                .all(|t| self.ends.iter().any(|(s, step, _)| *s == t.session && t.holds(*step)));
        // On MariaDB the steps tell every end ([`mariadb`]), and the server could not.
        let statuses = match told_by_steps || self.on_mariadb.is_some() {
            true => HashMap::new(),
            false => xact_statuses(control, found.iter().filter_map(|t| t.xid)).await,
        };
        let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
        for t in &mut found {
            let n = counts.entry(t.session).or_default();
            *n += 1;
            t.txn.name = proof::ordinal_name(&t.txn.session, *n);
            (t.txn.end, t.txn.ended) = self.end_by_steps(t);
            // A writer's end is the server's to say (a COMMIT of a failed transaction rolls back).
            if let Some(xid) = t.xid {
                match statuses.get(&xid).map(String::as_str) {
                    Some("committed") => t.txn.end = End::Committed,
                    Some("aborted") if t.txn.end == End::Committed || t.txn.end == End::Unfinished => {
                        t.txn.end = End::Aborted { code: None };
                    }
                    Some("in progress") => t.txn.end = End::Unfinished,
                    _ => {}
                }
            }
        }
        found
    }

    /// The transactions the permutation's writes and reads were seen in, in the order they
    /// started, each with the steps it can hold and its transaction id if it wrote; how each
    /// ended is left for [`Witness::transactions`] to find.
    fn started(&self, sessions: &[String]) -> Vec<Observed> {
        let mut found: Vec<Observed> = Vec::new();
        let mut note = |session: usize, began: Option<&str>, alone: Option<usize>, step: usize| {
            let same = |t: &Observed| t.session == session && t.began.as_deref() == began && t.alone_step == alone;
            if !found.iter().any(same) {
                found.push(Observed {
                    session,
                    began: began.map(str::to_owned),
                    alone_step: alone,
                    first: step,
                    last_step: usize::MAX,
                    xid: None,
                    txn: Txn {
                        name: String::new(),
                        session: sessions.get(session).cloned().unwrap_or_default(),
                        end: End::Unfinished,
                        ended: None,
                    },
                });
            }
        };
        for w in &self.writes {
            note(w.session, Some(&w.began), None, w.step);
        }
        for r in &self.reads {
            if r.alone {
                note(r.session, None, Some(r.step), r.step);
            } else {
                note(r.session, Some(&r.began), None, r.step);
            }
        }
        found.sort_by_key(|t| (t.first, t.session));
        // Each transaction lasts until its session's next one starts.
        let starts: Vec<(usize, usize)> = found.iter().map(|t| (t.session, t.first)).collect();
        for t in &mut found {
            t.last_step = starts
                .iter()
                .filter(|(s, first)| *s == t.session && *first > t.first)
                .map(|(_, first)| first - 1)
                .min()
                .unwrap_or(usize::MAX);
            t.xid = self
                .writes
                .iter()
                .find(|w| w.session == t.session && Some(&w.began) == t.began.as_ref())
                .map(|w| w.xid);
        }
        found
    }

    /// How transaction `t` ended as its own steps tell it, and at which step: a read alone
    /// commits at once; else its first failure, or its COMMIT or ROLLBACK; else it is unfinished.
    fn end_by_steps(&self, t: &Observed) -> (End, Option<u64>) {
        let end = self.ends.iter().find(|(s, step, _)| *s == t.session && t.holds(*step));
        // A failure after the transaction's COMMIT or ROLLBACK is another statement's.
        let failure = self
            .failures
            .iter()
            .find(|(s, step, _)| *s == t.session && t.holds(*step) && end.is_none_or(|(_, ended, _)| step <= ended));
        match (t.alone_step, failure, end) {
            (Some(step), _, _) => (End::Committed, Some(step as u64)),
            (None, Some((_, step, code)), _) => (End::Aborted { code: code.clone() }, Some(*step as u64)),
            (None, None, Some((_, step, true))) => (End::Committed, Some(*step as u64)),
            (None, None, Some((_, step, false))) => (End::Aborted { code: None }, Some(*step as u64)),
            (None, None, None) => (End::Unfinished, None),
        }
    }
}

/// What [`Asked`] keeps a version's answer under: the query, the table, the row as JSON.
fn asked_key(query: &str, table: &str, row: &Map<String, Value>) -> (String, String, String) {
    let json = Value::Object(row.clone()).to_string();
    (query.to_owned(), table.to_owned(), json)
}

/// The versions of `table` whose answer to `query` is not yet known: those `asked` knows go into
/// `matter` at once.
fn to_ask(
    query: &str,
    table: &str,
    (history, rows): (&History, &[Map<String, Value>]),
    asked: &Asked,
    matter: &mut [bool],
) -> Vec<usize> {
    let mut versions = Vec::new();
    for i in (0..history.versions.len())
        .filter(|&i| history.versions[i].row.table == table && history.versions[i].value.is_some())
    {
        match asked.get(&asked_key(query, table, &rows[i])) {
            Some(&answer) => matter[i] = answer,
            None => versions.push(i),
        }
    }
    versions
}

/// What asking what each read saw needs of the permutation's history, put together once.
struct Known<'a> {
    history: &'a History,
    /// Each version's row as JSON (empty for a deletion).
    rows: &'a [Map<String, Value>],
    /// Each row's versions in install order ([`versions_by_row`]).
    by_row: &'a [Vec<usize>],
    txns: &'a [Observed],
    /// Each writer's transaction id (PostgreSQL's), by the writer's place among `txns`.
    xid_of: &'a HashMap<usize, u64>,
}

/// The versions a permutation installed, as [`Witness::versions`] found them.
struct Installed {
    /// In the order the server installed them, the setup's first.
    versions: Vec<Version>,
    /// Each version's row as JSON (empty for a deletion), to ask reads again with.
    rows: Vec<Map<String, Value>>,
    /// Each writer's transaction id, by the writer's place among the transactions.
    xid_of: HashMap<usize, u64>,
}

/// The place in `txns` of `session`'s transaction that began at `began` (`now()` in it).
fn txn_of(txns: &[Observed], session: usize, began: &str) -> Option<usize> {
    txns.iter()
        .position(|t| t.session == session && t.began.as_deref() == Some(began))
}

/// For each row, the places of its versions in `versions` (install order), rows in their order.
fn versions_by_row(versions: &[Version]) -> Vec<Vec<usize>> {
    let mut rows: Vec<&Row> = versions.iter().map(|v| &v.row).collect();
    rows.sort();
    rows.dedup();
    rows.iter()
        .map(|row| (0..versions.len()).filter(|&i| versions[i].row == **row).collect())
        .collect()
}

/// Whether the read at `step` of transaction `reader` may see version `v`: the setup's always,
/// its own of earlier steps, and another transaction's where `others` says so.
fn visible(v: &Version, step: usize, reader: usize, others: &dyn Fn(&Version, usize) -> bool) -> bool {
    match v.by {
        None => true,
        Some(by) if by == reader => v.step.is_some_and(|s| s <= step as u64),
        Some(by) => others(v, by),
    }
}

/// Where, among one row's versions `of_row` (install order), is the newest the read at `step`
/// of transaction `reader` may see ([`visible`]).
fn newest_shown(
    of_row: &[usize],
    step: usize,
    reader: usize,
    history: &History,
    others: &dyn Fn(&Version, usize) -> bool,
) -> Option<usize> {
    of_row
        .iter()
        .rposition(|&i| visible(&history.versions[i], step, reader, others))
}

/// What the read at `step` of transaction `reader` saw and missed, among the versions that
/// `matter` to its answer: of each row (`by_row`), the newest version it may see ([`visible`],
/// `others` deciding for other transactions' versions), and the later ones of other
/// transactions it hid.
fn what_it_saw(
    step: usize,
    (reader, matter): (usize, &[bool]),
    by_row: &[Vec<usize>],
    history: &History,
    others: &dyn Fn(&Version, usize) -> bool,
) -> Read {
    let visible = |v: &Version| visible(v, step, reader, others);
    let mut read = Read {
        txn: reader,
        step: step as u64,
        saw: Vec::new(),
        missed: Vec::new(),
    };
    for of_row in by_row {
        let shown = newest_shown(of_row, step, reader, history, others);
        if let Some(at) = shown
            && matter[of_row[at]]
        {
            read.saw.push(of_row[at]);
        }
        let later = shown.map_or(0, |at| at + 1);
        for &i in &of_row[later..] {
            let v = &history.versions[i];
            if matter[i] && v.by.is_some_and(|by| by != reader) && !visible(v) {
                read.missed.push(i);
            }
        }
    }
    read
}

/// What became of each of `xids` (`committed`, `aborted`, `in progress`), asked in one round
/// trip; a transaction the server cannot say is left out.
async fn xact_statuses(control: &mut SpecSession, xids: impl Iterator<Item = u64>) -> HashMap<u64, String> {
    let listed: Vec<String> = xids.map(|xid| xid.to_string()).collect();
    if listed.is_empty() {
        return HashMap::new();
    }
    let answer = control
        .exec(&format!(
            "SELECT x, pg_catalog.pg_xact_status(x) FROM pg_catalog.unnest('{{{}}}'::pg_catalog.xid8[]) AS x",
            listed.join(",")
        ))
        .await;
    first_rows(&answer)
        .into_iter()
        .filter_map(|row| Some((row.first()?.as_deref()?.parse().ok()?, row.get(1)?.clone()?)))
        .collect()
}

/// A transaction as the witness found it.
struct Observed {
    session: usize,
    /// Its start (`now()`), for transactions of several statements.
    began: Option<String>,
    /// The step of a read that was a transaction of its own.
    alone_step: Option<usize>,
    first: usize,
    /// The last step that can belong to it: the step before its session's next transaction.
    last_step: usize,
    xid: Option<u64>,
    txn: Txn,
}

impl Observed {
    fn holds(&self, step: usize) -> bool {
        step >= self.first && step <= self.last_step
    }
}

/// The object a report holds at `name` (a row before or after), if it holds one there.
fn object_at(map: &Map<String, Value>, name: &str) -> Option<Map<String, Value>> {
    match map.get(name) {
        Some(Value::Object(row)) => Some(row.clone()),
        _ => None,
    }
}

/// A report of the trigger's, as a written row.
fn parse_report(session: usize, step: usize, schema: &str, report: &str) -> Option<Written> {
    let map = object(report)?;
    // A table of the same name in another schema is another table.
    if map.get("schema")?.as_str()? != schema {
        return None;
    }
    let row = |name: &str| object_at(&map, name);
    Some(Written {
        session,
        step,
        xid: map.get("xid")?.as_str()?.parse().ok()?,
        began: map.get("began")?.as_str()?.to_owned(),
        at: map.get("at")?.as_i64()?,
        table: map.get("table")?.as_str()?.to_owned(),
        old: row("old"),
        new: row("new"),
    })
}

/// A JSON value as a reader reads it: a string without quotes, `NULL` for null.
fn text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "NULL".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// The words of `sql`, lower-cased, after blanks and `--` comments at its start.
fn words(sql: &str) -> impl Iterator<Item = String> + '_ {
    let mut rest = sql.trim_start();
    while let Some(comment) = rest.strip_prefix("--") {
        rest = comment.split_once('\n').map_or("", |(_, after)| after).trim_start();
    }
    rest.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
}

/// The first word of `sql`, lower-cased (after blanks and `--` comments).
fn first_word(sql: &str) -> String {
    words(sql).next().unwrap_or_default()
}

/// How `sql` ends its session's transaction, when it is one statement that does: `COMMIT` or
/// `END` (true), `ROLLBACK` or `ABORT` (false). `ROLLBACK TO` a savepoint goes on with the
/// transaction, and `… PREPARED` ends another one.
fn transaction_end(sql: &str) -> Option<bool> {
    let statement = sql.trim().trim_end_matches(';');
    if statement.contains(';') {
        return None;
    }
    let mut words = words(statement);
    let (first, second) = (words.next()?, words.next().unwrap_or_default());
    match (first.as_str(), second.as_str()) {
        (_, "prepared") | ("rollback", "to") => None,
        ("commit" | "end", _) => Some(true),
        ("rollback" | "abort", _) => Some(false),
        _ => None,
    }
}

/// Whether `sql` is one write whose rows are its own (`UPDATE … RETURNING`): not a read of
/// anyone else's.
fn returns_its_own_write(sql: &str) -> bool {
    let statement = sql.trim().trim_end_matches(';');
    matches!(first_word(statement).as_str(), "insert" | "update" | "delete" | "merge") && !statement.contains(';')
}

/// `sql` as one query that can be asked again (`SELECT`, `WITH`, `TABLE`, `VALUES`, one
/// statement), without its final semicolon; `None` for anything else.
fn single_query(sql: &str) -> Option<&str> {
    let query = sql.trim().trim_end_matches(';').trim_end();
    let asks = matches!(first_word(query).as_str(), "select" | "with" | "table" | "values");
    (asks && !query.contains(';')).then_some(query)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_shows_what_committed_before_it_and_not_what_ran_beside_it() {
        let s = Snapshot::parse("750:760:752,755").expect("a snapshot");
        assert!(s.shows(749) && s.shows(751) && s.shows(759));
        assert!(!s.shows(752) && !s.shows(755) && !s.shows(760) && !s.shows(900));
        assert_eq!(Snapshot::parse("5:5:").map(|s| s.running), Some(vec![]));
        assert_eq!(Snapshot::parse("garbage"), None);
    }

    #[test]
    fn only_one_query_can_be_asked_again() {
        assert_eq!(
            single_query("SELECT * FROM t WHERE id = 1;"),
            Some("SELECT * FROM t WHERE id = 1")
        );
        assert_eq!(
            single_query("  -- check\n with x as (select 1) select * from x"),
            Some("-- check\n with x as (select 1) select * from x")
        );
        assert_eq!(single_query("SELECT 1; COMMIT;"), None);
        assert_eq!(single_query("UPDATE t SET v = 1"), None);
        assert!(returns_its_own_write(
            "UPDATE t SET v = v + 1 WHERE id = 1 RETURNING v;"
        ));
        assert!(!returns_its_own_write("UPDATE t SET v = 1; SELECT * FROM t"));
        assert_eq!(first_word("COMMIT;"), "commit");
        assert_eq!(first_word("-- done\nrollback"), "rollback");
    }

    #[test]
    fn only_a_commit_or_a_rollback_of_the_sessions_own_transaction_ends_it() {
        assert_eq!(transaction_end("COMMIT;"), Some(true));
        assert_eq!(transaction_end("-- done\nend"), Some(true));
        assert_eq!(transaction_end("commit and chain"), Some(true));
        assert_eq!(transaction_end("ROLLBACK"), Some(false));
        assert_eq!(transaction_end("abort;"), Some(false));
        assert_eq!(transaction_end("ROLLBACK TO SAVEPOINT a"), None);
        assert_eq!(transaction_end("rollback to a;"), None);
        assert_eq!(transaction_end("COMMIT PREPARED 'x'"), None);
        assert_eq!(transaction_end("UPDATE t SET v = 1; COMMIT"), None);
        assert_eq!(transaction_end("SELECT 1"), None);
    }

    #[test]
    fn a_trigger_report_reads_as_a_written_row() {
        let report = r#"{"xid": "812", "began": "2026-12-05 01:00:00.1+00", "at": 1733360000123456,
            "schema": "public", "table": "test", "old": {"id": 1, "value": 10}, "new": {"id": 1, "value": 11}}"#;
        let w = parse_report(1, 4, "public", report).expect("a report");
        assert_eq!(
            (w.session, w.step, w.xid, w.at, w.table.as_str()),
            (1, 4, 812, 1733360000123456, "test")
        );
        assert_eq!(w.new.and_then(|n| n.get("value").cloned()), Some(Value::from(11)));
        assert!(parse_report(0, 0, "public", r#"{"xid": "x"}"#).is_none());
        // The same table name in another schema is another table.
        assert!(parse_report(1, 4, "elsewhere", report).is_none());
    }
}
