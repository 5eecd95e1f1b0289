//! A public server takes SQL from anyone: each test here is one way a hostile reader's spec
//! could stall, starve or read another reader's run, or spend past its limits, played on
//! PostgreSQL 15 and on 18 as a reader's would be. Each fails if the attack works. Beside each
//! hostile run plays a benign one (a control), so that "refused" or "stopped" is seen to mean
//! something: the benign run completes, correctly, in its own time, and both leave nothing.

mod common;

use racelab::engine::BoxFuture;
use racelab::engine::lane::Stage;
use racelab::specs::{self, Choice, Limits, SpecError};
use shared::{EventKind, Service};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/racelab".to_owned())
}

/// Both servers: the machine's PostgreSQL (15) and the private PostgreSQL 18.
fn servers() -> [(u32, String); 2] {
    [(15, database_url()), (18, common::versions::postgres_18())]
}

/// Keeps a run's transcript lines, its ledgers, and what it said of waits and proofs.
#[derive(Default)]
struct Kept {
    lines: Mutex<Vec<String>>,
    ledgers: Mutex<Vec<shared::Ledger>>,
    told: Mutex<Vec<EventKind>>,
}

impl Stage for Kept {
    fn emit(&self, kind: EventKind) {
        match kind {
            EventKind::Say { line, .. } => self.lines.lock().expect("lines").push(line),
            EventKind::Ledger { ledger, .. } => self.ledgers.lock().expect("ledgers").push(ledger),
            told @ (EventKind::Blocked { .. } | EventKind::Proof { .. }) => self.told.lock().expect("told").push(told),
            _ => {}
        }
    }
    fn gate<'a>(&'a self, _: &'a str, _: Service, _: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

fn run_id(name: &str, version: u32) -> String {
    format!("a{name}{version}x{}", std::process::id())
}

/// A played run: its transcript, its ledgers, how it ended, how long it took (its database's
/// reset included).
struct Played {
    lines: String,
    ledgers: Vec<shared::Ledger>,
    /// Its `Blocked` and `Proof` events.
    told: Vec<EventKind>,
    ended: Result<(), SpecError>,
    took: Duration,
}

async fn play_as(url: &str, id: &str, text: &str, limits: Limits, choice: Choice) -> Played {
    let kept = Arc::new(Kept::default());
    let started = Instant::now();
    let ended = match specs::read(text, &limits) {
        Ok(spec) => {
            let stage: Arc<dyn Stage> = kept.clone();
            let lane = move |name: &str, quiet: bool| racelab::engine::Lane::new(name, stage.clone(), quiet);
            specs::play_on(url, id, &spec, &limits, choice, &lane).await.map(|_| ())
        }
        Err(error) => Err(error),
    };
    let took = started.elapsed();
    let lines = kept.lines.lock().expect("lines").join("\n");
    let ledgers = kept.ledgers.lock().expect("ledgers").clone();
    let told = kept.told.lock().expect("told").clone();
    Played {
        lines,
        ledgers,
        told,
        ended,
        took,
    }
}

/// The benign control: two sessions, a table, a write skew at REPEATABLE READ, about 0.3 s.
const BENIGN: &str = "setup { CREATE TABLE doctors (name text PRIMARY KEY, on_call bool NOT NULL);
  INSERT INTO doctors VALUES ('alice', true), ('bob', true); }
teardown { DROP TABLE doctors; }
session alice
setup { BEGIN ISOLATION LEVEL REPEATABLE READ; }
step a_count { SELECT count(*) FROM doctors WHERE on_call; }
step a_leave { UPDATE doctors SET on_call = false WHERE name = 'alice'; SELECT pg_sleep(0.3); }
step a_commit { COMMIT; }
session bob
setup { BEGIN ISOLATION LEVEL REPEATABLE READ; }
step b_count { SELECT count(*) FROM doctors WHERE on_call; }
step b_leave { UPDATE doctors SET on_call = false WHERE name = 'bob'; }
step b_commit { COMMIT; }
permutation a_count b_count a_leave b_leave a_commit b_commit
";

/// The control's transcript, from its constants: both see 2 on call, both leave.
fn assert_benign_played(played: &Played, who: &str) {
    assert!(played.ended.is_ok(), "{who}: {:?}\n{}", played.ended, played.lines);
    for line in [
        "step a_count: SELECT count(*) FROM doctors WHERE on_call;\ncount\n-----\n    2\n(1 row)",
        "step b_count: SELECT count(*) FROM doctors WHERE on_call;\ncount\n-----\n    2\n(1 row)",
        "step b_commit: COMMIT;",
    ] {
        assert!(played.lines.contains(line), "{who}: no {line:?} in\n{}", played.lines);
    }
}

async fn left_on(url: &str, id: &str) -> i64 {
    common::spec_runs::left_by_spec_run(url, id).await
}

/// The database run `id` plays in, once it has taken one.
async fn database_of(id: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(place) = specs::confine::place_of(id) {
            return place.database;
        }
        assert!(Instant::now() < deadline, "{id} took a database");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The benign run plays alone once, then beside `hostile` (started once the benign run has its
/// database, and told its name): the benign run must complete as alone, within 1 s of its time
/// alone, and both must leave nothing. Returns the hostile run.
async fn beside_benign(name: &str, version: u32, url: &str, hostile: impl Fn(&str) -> String) -> Played {
    let alone_id = run_id(&format!("{name}alone"), version);
    let alone = play_as(url, &alone_id, BENIGN, Limits::default(), Choice::All { why: true }).await;
    assert_benign_played(&alone, "the benign run alone");
    let benign_id = run_id(&format!("{name}benign"), version);
    let hostile_id = run_id(&format!("{name}hostile"), version);
    let (benign, hostile) = tokio::join!(
        play_as(url, &benign_id, BENIGN, Limits::default(), Choice::All { why: true }),
        async {
            let victim = database_of(&benign_id).await;
            play_as(
                url,
                &hostile_id,
                &hostile(&victim),
                Limits::default(),
                Choice::All { why: true },
            )
            .await
        }
    );
    assert_benign_played(&benign, &format!("the benign run beside {name} on {version}"));
    assert!(
        benign.took < alone.took + Duration::from_secs(1),
        "{name} on {version} slowed the benign run: {:?} beside it, {:?} alone",
        benign.took,
        alone.took
    );
    for id in [&alone_id, &benign_id, &hostile_id] {
        assert_eq!(left_on(url, id).await, 0, "{id} on {version} left something behind");
    }
    hostile
}

#[tokio::test]
async fn a_grant_to_another_runs_role_is_refused_and_cannot_hold_its_cleanup() {
    for (version, url) in servers() {
        let hostile = beside_benign("grant", version, &url, |victim| {
            format!(
                "setup {{ CREATE TABLE bait (k int); CREATE FUNCTION bait_fn() RETURNS int LANGUAGE sql AS 'SELECT 1'; }}\n\
                 session h\n\
                 step grant {{ GRANT SELECT ON bait TO {victim}; }}\n\
                 step usage {{ GRANT EXECUTE ON FUNCTION bait_fn() TO {victim}; }}\n\
                 step defaults {{ ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO {victim}; }}\n\
                 step policy {{ CREATE POLICY p ON bait TO {victim} USING (true); }}\n\
                 step hold {{ BEGIN; LOCK TABLE bait; SELECT pg_sleep(2); }}\n"
            )
        })
        .await;
        assert!(hostile.ended.is_ok(), "{:?}", hostile.ended);
        assert_eq!(
            hostile
                .lines
                .matches("ERROR:  a spec may grant to no role but its own")
                .count(),
            4,
            "every grant naming the other run's role is refused on {version}: {}",
            hostile.lines
        );
    }
}

#[tokio::test]
async fn a_membership_granted_to_another_runs_role_cannot_stall_its_cleanup() {
    // PostgreSQL 15 lets a role grant membership in itself (16 onwards refuses): held open in a
    // transaction, it could hold the other run's role while its cleanup waits.
    for (version, url) in servers() {
        let hostile = beside_benign("member", version, &url, |victim| {
            format!(
                "session h\n\
                 step grant {{ BEGIN; DO $$ BEGIN EXECUTE format('GRANT %I TO %I', current_user, '{victim}'); END $$; }}\n\
                 step hold {{ SELECT pg_sleep(3); }}\n\
                 step done {{ COMMIT; }}\n"
            )
        })
        .await;
        assert!(
            hostile.ended.is_ok() || hostile.lines.contains("terminat"),
            "{:?}",
            hostile.ended
        );
    }
}

#[tokio::test]
async fn setups_checks_and_teardowns_are_bounded_like_steps() {
    let limits = Limits {
        step_wait: Duration::from_millis(800),
        ..Limits::default()
    };
    let forever = "SET statement_timeout = 0; SELECT pg_sleep(1000);";
    let cases = [
        (
            "setup",
            format!("setup {{ {forever} }}\nsession s\nstep a {{ SELECT 1; }}\n"),
            "the setup",
        ),
        (
            "sessionsetup",
            format!("session s\nsetup {{ {forever} }}\nstep a {{ SELECT 1; }}\n"),
            "the setup of session s",
        ),
        (
            "check",
            "# check: SELECT pg_sleep(1000) IS NULL\nsession s\nstep a { SET statement_timeout = 0; }\n".to_owned(),
            "a check",
        ),
        (
            "teardown",
            format!("teardown {{ {forever} }}\nsession s\nstep a {{ SELECT 1; }}\n"),
            "the teardown",
        ),
        (
            "sessionteardown",
            format!("session s\nstep a {{ SELECT 1; }}\nteardown {{ {forever} }}\n"),
            "the teardown of session s",
        ),
    ];
    for (version, url) in servers() {
        for (name, text, what) in &cases {
            let id = run_id(name, version);
            let played = play_as(&url, &id, text, limits, Choice::All { why: true }).await;
            assert!(
                played.took < Duration::from_secs(5),
                "{name} on {version} held the run {:?}",
                played.took
            );
            assert!(
                played
                    .lines
                    .contains(&format!("racelab: canceling {what} after 0 seconds")),
                "{name} on {version}: {}",
                played.lines
            );
            assert_eq!(left_on(&url, &id).await, 0, "{name} on {version} left something behind");
        }
    }
}

#[tokio::test]
async fn a_run_ends_at_its_wall_limit() {
    let limits = Limits {
        max_wall: Some(Duration::from_secs(2)),
        ..Limits::default()
    };
    // Each permutation sleeps 0.4 s; 20 of them would take 8 s.
    let text = "session a step a1 { SELECT pg_sleep(0.2); } step a2 { SELECT 1; } step a3 { SELECT 1; }\n\
                session b step b1 { SELECT pg_sleep(0.2); } step b2 { SELECT 1; } step b3 { SELECT 1; }\n";
    for (version, url) in servers() {
        let id = run_id("wall", version);
        let played = play_as(&url, &id, text, limits, Choice::All { why: true }).await;
        assert!(
            matches!(played.ended, Err(SpecError::TooLong(2))),
            "{version}: {:?}",
            played.ended
        );
        assert!(played.took < Duration::from_secs(4), "{version}: {:?}", played.took);
        assert_eq!(left_on(&url, &id).await, 0, "{version}: left something behind");
    }
}

#[tokio::test]
async fn a_lock_a_run_keeps_past_its_end_cannot_hold_its_cleanup() {
    // The role's own row updated in a transaction that never ends: the reset's first statement
    // (`ALTER ROLE … CONNECTION LIMIT 0`) waits on it, until the watchdog ends the backend.
    let limits = Limits {
        max_wall: Some(Duration::from_secs(1)),
        ..Limits::default()
    };
    let text = "session s\nstep hold { BEGIN; ALTER ROLE CURRENT_USER PASSWORD 'held'; SELECT pg_sleep(20); }\n";
    for (version, url) in servers() {
        let id = run_id("heldreset", version);
        let (played, database) = tokio::join!(
            play_as(&url, &id, text, limits, Choice::All { why: false }),
            database_of(&id)
        );
        assert!(
            matches!(played.ended, Err(SpecError::TooLong(1))),
            "{version}: {:?}",
            played.ended
        );
        let began = Instant::now();
        assert_eq!(left_on(&url, &id).await, 0, "{version}: left something behind");
        assert!(
            !specs::confine::reset_failed(&database),
            "{version}: the reset waited on the run's lock until its lock timeout, and failed"
        );
        // Its database is reset, not dropped, and the next run on it logs in as it was made.
        let next = play_as(
            &url,
            &run_id("heldresetnext", version),
            BENIGN,
            Limits::default(),
            Choice::All { why: false },
        )
        .await;
        assert_benign_played(&next, "the run after");
        assert!(
            began.elapsed() < Duration::from_secs(20),
            "{version}: {:?}",
            began.elapsed()
        );
    }
}

#[tokio::test]
async fn memory_past_its_bound_is_cancelled_whatever_work_mem_says() {
    // A sort of about 600 MB, in memory at a work_mem of 2 GB.
    let text = "session s\nstep sort { SET work_mem = '2GB'; SELECT count(*) FROM \
                (SELECT g, md5(g::text) AS h FROM generate_series(1, 6000000) g ORDER BY h) s; }\n\
                step after { SELECT 1 AS alive; }\n";
    for (version, url) in servers() {
        let played = beside_benign("memory", version, &url, |_| text.to_owned()).await;
        assert!(played.ended.is_ok(), "{version}: {:?}", played.ended);
        assert!(
            played.lines.contains("more than 256 MB: its statement is cancelled"),
            "{version}: {}",
            played.lines
        );
        assert!(
            played.lines.contains("ERROR:  canceling statement due to user request"),
            "{version}: {}",
            played.lines
        );
        assert!(
            played.lines.contains("alive\n-----\n    1"),
            "the session goes on: {}",
            played.lines
        );
    }
}

#[tokio::test]
async fn a_temporary_table_past_the_disk_bound_ends_the_run() {
    // About 200 MB of temporary table; temp_file_limit does not count it.
    let text = "session s\nstep fill { CREATE TEMPORARY TABLE t AS SELECT g, repeat('x', 1000) AS pad \
                FROM generate_series(1, 200000) g; }\nstep after { SELECT pg_sleep(1); }\n";
    for (version, url) in servers() {
        let played = beside_benign("tempdisk", version, &url, |_| text.to_owned()).await;
        assert!(
            matches!(&played.ended, Err(SpecError::Ended(why)) if why.contains("grew by")),
            "{version}: the run ends for its disk: {:?}",
            played.ended
        );
        assert!(
            played.lines.contains("racelab: the run's database grew by"),
            "{version}: {}",
            played.lines
        );
    }
}

#[tokio::test]
async fn output_is_bounded_by_what_is_printed() {
    // One value of 1 MB beside 999 NULLs: every NULL prints padded to its column's width.
    let text = "session s\nstep wide { SELECT repeat('x', 1000000) AS a, 1 AS b \
                UNION ALL SELECT NULL, g FROM generate_series(1, 999) g; }\n";
    for (version, url) in servers() {
        let played = beside_benign("padding", version, &url, |_| text.to_owned()).await;
        assert!(played.ended.is_ok(), "{version}: {:?}", played.ended);
        assert!(
            played.lines.len() < 1_100_000,
            "{version}: printed {} bytes",
            played.lines.len()
        );
        assert!(played.lines.contains("more rows not kept\n(1000 rows)"), "{version}");
    }
}

#[tokio::test]
async fn a_policy_a_spec_writes_cannot_hide_rows_from_its_ledger() {
    // Row security forced on the table's owner, hiding every row from the connection that made
    // the policy: the control connection, which reads the ledger.
    let text = "setup { CREATE TABLE budget (id int PRIMARY KEY, note text); INSERT INTO budget VALUES (1, 'kept');
  ALTER TABLE budget ENABLE ROW LEVEL SECURITY; ALTER TABLE budget FORCE ROW LEVEL SECURITY;
  DO $$ BEGIN EXECUTE format('CREATE POLICY hide ON budget USING (pg_backend_pid() <> %s)', pg_backend_pid()); END $$; }
session s
step look { SELECT note FROM budget; }
";
    for (version, url) in servers() {
        let id = run_id("policy", version);
        let played = play_as(&url, &id, text, Limits::default(), Choice::One(0)).await;
        assert!(played.ended.is_ok(), "{version}: {:?}", played.ended);
        assert!(
            played.lines.contains("kept"),
            "{version}: the session sees the row: {}",
            played.lines
        );
        assert_eq!(played.ledgers.len(), 2, "{version}: a ledger before and after");
        for ledger in &played.ledgers {
            // Left out, since it cannot be read as it is; never shown empty.
            if let Some(budget) = ledger.table("budget") {
                assert_eq!(budget.rows.len(), 1, "{version}: {budget:?}");
            }
        }
        assert_eq!(left_on(&url, &id).await, 0, "{version}");
    }
}

#[tokio::test]
async fn a_step_writing_more_than_the_witness_holds_plays_on_without_a_proof() {
    // 20,000 rows of 1 kB, each reported whole by the witness's trigger: 20 MB of reports, past
    // what a session holds. The step is a reader's honest bulk write: it completes; only the
    // proof, which would be drawn from a partial history, is not given.
    let text = "setup { CREATE TABLE pages (id int PRIMARY KEY, body text); }
session s
step fill { INSERT INTO pages SELECT g, repeat('x', 1000) FROM generate_series(1, 20000) g; }
step count { SELECT count(*) AS pages FROM pages; }
";
    for (version, url) in servers() {
        let id = run_id("bulk", version);
        let played = play_as(&url, &id, text, Limits::default(), Choice::One(0)).await;
        assert!(played.ended.is_ok(), "{version}: {:?}", played.ended);
        assert!(
            played.lines.contains("pages\n-----\n20000\n(1 row)"),
            "{version}: every row written: {}",
            played.lines
        );
        assert!(!played.lines.contains("cancel"), "{version}: {}", played.lines);
        assert!(
            !played.told.iter().any(|e| matches!(e, EventKind::Proof { .. })),
            "{version}: a proof from a partial history"
        );
        assert_eq!(left_on(&url, &id).await, 0, "{version}");
    }
}

#[tokio::test]
async fn a_ledger_holds_at_most_its_bound_whatever_the_tables_hold() {
    // 20 tables of 1,000 rows of 1 kB: 20 MB, were the ledger to keep each table's 1,000 rows.
    let text = "setup { DO $$ BEGIN FOR i IN 1..20 LOOP
    EXECUTE format('CREATE TABLE t%s (id int PRIMARY KEY, body text)', i);
    EXECUTE format('INSERT INTO t%s SELECT g, repeat(''x'', 1000) FROM generate_series(1, 1000) g', i);
  END LOOP; END $$; }
session s
step look { SELECT count(*) AS tables FROM pg_tables WHERE schemaname = 'public'; }
";
    for (version, url) in servers() {
        let id = run_id("ledger", version);
        let played = play_as(&url, &id, text, Limits::default(), Choice::One(0)).await;
        assert!(played.ended.is_ok(), "{version}: {:?}", played.ended);
        assert!(
            played.lines.contains("tables\n------\n    20"),
            "{version}: {}",
            played.lines
        );
        assert_eq!(played.ledgers.len(), 2, "{version}: a ledger before and after");
        for ledger in &played.ledgers {
            let bytes = serde_json::to_vec(ledger).map_or(0, |json| json.len());
            assert!(bytes < 2 << 20, "{version}: a ledger of {bytes} bytes");
            assert!(!ledger.tables.is_empty(), "{version}: the ledger still shows what fits");
        }
        assert_eq!(left_on(&url, &id).await, 0, "{version}");
    }
}

#[tokio::test]
async fn a_flood_of_notices_is_dropped_and_its_query_cancelled() {
    // 100 KB notices, 100,000 of them: 10 GB in racelab's memory had it kept them all until the
    // step ended (notices are printed after their step).
    let text = "session s\nstep flood { DO $$ BEGIN FOR i IN 1..100000 LOOP \
                RAISE NOTICE '%', repeat('x', 100000); END LOOP; END $$; }\n";
    for (version, url) in servers() {
        let played = beside_benign("notices", version, &url, |_| text.to_owned()).await;
        assert!(played.ended.is_ok(), "{version}: {:?}", played.ended);
        assert!(
            played
                .lines
                .contains("racelab: more than 1 MB of notices and notifications arrived"),
            "{version}: {}",
            &played.lines[played.lines.len().saturating_sub(2000)..]
        );
        assert!(
            played.lines.contains("ERROR:  canceling statement due to user request"),
            "{version}: the flood's step is cancelled"
        );
        // At most a megabyte for the query, however fast racelab takes what arrives while it
        // waits (a count freed by each take once let 2.6 MB through on a loaded machine).
        assert!(
            played.lines.len() < (1 << 20) + (64 << 10),
            "{version}: printed {} bytes",
            played.lines.len()
        );
        assert!(
            played.took < Duration::from_secs(20),
            "{version}: took {:?}",
            played.took
        );
    }
}

#[tokio::test]
async fn functions_a_spec_defines_cannot_make_its_ledger_lie() {
    // An exact match for the ledger's json_build_array(int, text), and a search path that puts
    // the spec's schema before pg_catalog.
    let text = "setup { CREATE TABLE budget (id int PRIMARY KEY, note text); INSERT INTO budget VALUES (1, 'true');
  CREATE FUNCTION public.json_build_array(int, text) RETURNS json LANGUAGE sql AS $$ SELECT '[666, \"lie\"]'::json $$;
  CREATE FUNCTION public.text(json) RETURNS text LANGUAGE sql AS $$ SELECT '[666, \"lie\"]' $$; }
session s
setup { SET search_path = public, pg_catalog; }
step look { SELECT json_build_array(id, note) FROM budget; }
";
    for (version, url) in servers() {
        let id = run_id("shadow", version);
        let played = play_as(&url, &id, text, Limits::default(), Choice::One(0)).await;
        assert!(played.ended.is_ok(), "{version}: {:?}", played.ended);
        assert!(
            played.lines.contains("[666, \"lie\"]"),
            "the spec's own call is its own: {}",
            played.lines
        );
        assert_eq!(played.ledgers.len(), 2, "{version}: a ledger before and after");
        for ledger in &played.ledgers {
            let rows = &ledger.table("budget").expect("the budget table").rows;
            assert_eq!(
                rows,
                &vec![vec![shared::Value::Int(1), shared::Value::Text("true".into())]],
                "{version}: the ledger is the table's"
            );
        }
        assert_eq!(left_on(&url, &id).await, 0, "{version}: left something behind");
    }
}

/// A lost update at READ COMMITTED in which bob's write waits for alice's row lock, with
/// operators of the spec's own, for every signature racelab's witness and wait query compare
/// with, put before `pg_catalog` on every connection: oid, int4 and text equality that never
/// holds, a timestamptz equality that always does, an int2 `>` and a `"char"` `=` that never
/// hold, and a type `text` of its own.
const SHADOWED: &str = "setup { CREATE TABLE budget (id bigint PRIMARY KEY, amount bigint NOT NULL);
  INSERT INTO budget VALUES (1, 100);
  CREATE FUNCTION public.never(oid, oid) RETURNS bool LANGUAGE sql AS $$ SELECT false $$;
  CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = public.never);
  CREATE FUNCTION public.never(int4, int4) RETURNS bool LANGUAGE sql AS $$ SELECT false $$;
  CREATE OPERATOR public.= (LEFTARG = int4, RIGHTARG = int4, FUNCTION = public.never);
  CREATE FUNCTION public.never(text, text) RETURNS bool LANGUAGE sql AS $$ SELECT false $$;
  CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.never);
  CREATE FUNCTION public.never(int2, int2) RETURNS bool LANGUAGE sql AS $$ SELECT false $$;
  CREATE OPERATOR public.> (LEFTARG = int2, RIGHTARG = int2, FUNCTION = public.never);
  CREATE FUNCTION public.never(\"char\", \"char\") RETURNS bool LANGUAGE sql AS $$ SELECT false $$;
  CREATE OPERATOR public.= (LEFTARG = \"char\", RIGHTARG = \"char\", FUNCTION = public.never);
  CREATE FUNCTION public.always(timestamptz, timestamptz) RETURNS bool LANGUAGE sql AS $$ SELECT true $$;
  CREATE OPERATOR public.= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = public.always);
  CREATE TYPE public.text AS (lie int);
  SET search_path = public, pg_catalog; }
session alice
setup { BEGIN; SET search_path = public, pg_catalog; }
step a_read { SELECT amount FROM budget WHERE id = 1; }
step a_write { UPDATE budget SET amount = 50 WHERE id = 1; }
step a_commit { COMMIT; }
session bob
setup { BEGIN; SET search_path = public, pg_catalog; }
step b_read { SELECT amount FROM budget WHERE id = 1; }
step b_write { UPDATE budget SET amount = 70 WHERE id = 1; }
step b_commit { COMMIT; }
permutation a_read b_read a_write b_write a_commit b_commit
";

#[tokio::test]
async fn operators_a_spec_defines_cannot_make_its_proof_or_its_waits_lie() {
    for (version, url) in servers() {
        let id = run_id("operators", version);
        let played = play_as(&url, &id, SHADOWED, Limits::default(), Choice::One(0)).await;
        assert!(played.ended.is_ok(), "{version}: {:?}\n{}", played.ended, played.lines);
        assert!(
            played
                .lines
                .contains("step b_write: UPDATE budget SET amount = 70 WHERE id = 1; <waiting ...>"),
            "{version}: {}",
            played.lines
        );
        let waits: Vec<(&str, &[String], Option<&str>)> = played
            .told
            .iter()
            .filter_map(|told| match told {
                EventKind::Blocked { actor, by, on } => Some((actor.as_str(), by.as_slice(), on.as_deref())),
                _ => None,
            })
            .collect();
        assert_eq!(
            waits,
            vec![(
                "bob",
                &["alice".to_owned()][..],
                Some("a row lock (until its holder's transaction ends)")
            )],
            "{version}: who bob waits for, and on what"
        );
        let proof = played
            .told
            .iter()
            .find_map(|told| match told {
                EventKind::Proof { proof } => Some(proof),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{version}: no proof\n{}", played.lines));
        // Two transactions of several statements each (not four reads alone), both committed,
        // and the lost update's cycle: each read the row the other then overwrote.
        let txns: Vec<(&str, &shared::proof::End)> = proof.txns.iter().map(|t| (t.session.as_str(), &t.end)).collect();
        assert_eq!(
            txns,
            vec![
                ("alice", &shared::proof::End::Committed),
                ("bob", &shared::proof::End::Committed)
            ],
            "{version}: {:?}",
            proof.lines
        );
        assert!(!proof.cycle.is_empty(), "{version}: no cycle in {:?}", proof.lines);
        let amounts = &played
            .ledgers
            .last()
            .expect("a ledger after")
            .table("budget")
            .expect("budget")
            .rows;
        assert_eq!(
            amounts,
            &vec![vec![shared::Value::Int(1), shared::Value::Int(70)]],
            "{version}"
        );
        assert_eq!(left_on(&url, &id).await, 0, "{version}: left something behind");
    }
}

#[tokio::test]
async fn a_run_changing_its_own_role_leaves_nothing_for_the_next() {
    let text = "session s\nstep mine { ALTER ROLE CURRENT_USER SET work_mem = '1GB'; \
                ALTER ROLE CURRENT_USER PASSWORD 'taken'; SELECT 1 AS changed; }\n";
    for (version, url) in servers() {
        let id = run_id("ownrole", version);
        let played = play_as(&url, &id, text, Limits::default(), Choice::All { why: true }).await;
        assert!(played.lines.contains("changed"), "{version}: {}", played.lines);
        assert_eq!(left_on(&url, &id).await, 0, "{version}: its settings stayed");
        // The next run on the same database logs in as it was made.
        let next = play_as(
            &url,
            &run_id("ownrolenext", version),
            BENIGN,
            Limits::default(),
            Choice::All { why: true },
        )
        .await;
        assert_benign_played(&next, "the run after");
    }
}

#[tokio::test]
async fn no_name_postgresql_shows_carries_the_run_id() {
    let text = "session s\nstep wait { SELECT pg_sleep(0.6); }\n";
    for (version, url) in servers() {
        let id = run_id("names", version);
        let (played, names) = tokio::join!(
            play_as(&url, &id, text, Limits::default(), Choice::All { why: true }),
            async {
                database_of(&id).await;
                tokio::time::sleep(Duration::from_millis(200)).await;
                let client = common::spec_runs::admin_on(&url).await;
                let rows = client
                    .query(
                        "SELECT rolname::text FROM pg_roles UNION ALL SELECT datname::text FROM pg_database
                     UNION ALL SELECT application_name FROM pg_stat_activity
                     UNION ALL SELECT coalesce(shobj_description(oid, 'pg_authid'), '') FROM pg_roles",
                        &[],
                    )
                    .await
                    .expect("the names");
                rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<String>>()
            }
        );
        assert!(played.ended.is_ok(), "{version}: {:?}", played.ended);
        let place = specs::confine::place_of(&id).expect("a place");
        assert!(
            names.iter().any(|n| n.contains(&place.database)),
            "the names were read while it played"
        );
        assert!(
            !names.iter().any(|n| n.contains(&id)),
            "{version}: a name shows the run id {id}: {names:?}"
        );
    }
}

#[tokio::test]
async fn a_nul_byte_and_too_many_listed_steps_are_refused_naming_what_was_counted() {
    let limits = Limits::default();
    let error = specs::read("session s\nstep a { SELECT '\0'; }\n", &limits).expect_err("refused");
    assert_eq!(
        error.to_string(),
        "the spec has a NUL byte at line 2, column 18: PostgreSQL cannot take one in SQL"
    );
    let listed = format!("session s\nstep a {{ SELECT 1; }}\npermutation {}\n", "a ".repeat(2001));
    let error = specs::read(&listed, &limits).expect_err("refused");
    assert_eq!(
        error.to_string(),
        "the spec's permutation lines name 2001 steps in all; at most 2000 are played"
    );
}

#[tokio::test]
async fn a_backend_that_burns_the_cpu_yields_it_to_everyone_else() {
    // s burns a core (a four-deep join of the catalog) until its own timeout; the control
    // connection idles. Only the one that used the CPU is demoted.
    let text = "session s\nstep burn { SET statement_timeout = '1500ms'; \
                SELECT count(*) FROM pg_class a, pg_class b, pg_class c, pg_class d; }\n";
    for (version, url) in servers() {
        let id = run_id("nice", version);
        let (played, seen) = tokio::join!(
            play_as(&url, &id, text, Limits::default(), Choice::All { why: true }),
            async {
                let database = database_of(&id).await;
                tokio::time::sleep(Duration::from_millis(900)).await;
                let client = common::spec_runs::admin_on(&url).await;
                let rows = client
                    .query(
                        "SELECT pid, split_part(application_name, '/', 3) FROM pg_stat_activity \
                     WHERE datname = $1 ORDER BY 2",
                        &[&database],
                    )
                    .await
                    .expect("the run's backends");
                // The 19th field of /proc/<pid>/stat, after the command's parenthesis; and whether
                // it is in the readers' control group.
                rows.iter()
                    .map(|row| {
                        let (pid, who): (i32, String) = (row.get(0), row.get(1));
                        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("a local backend");
                        let after = stat.rsplit_once(')').expect("a stat line").1;
                        let nice = after.split_whitespace().nth(16).expect("a niceness");
                        let groups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
                        (
                            who,
                            nice.parse::<i32>().expect("a number"),
                            groups.contains("racelab-readers"),
                        )
                    })
                    .collect::<Vec<(String, i32, bool)>>()
            }
        );
        assert!(played.ended.is_ok(), "{version}: {:?}", played.ended);
        // Where racelab may make a control group (root, here and in CI), it holds it too.
        let grouped = std::path::Path::new("/sys/fs/cgroup/cpu").is_dir()
            || std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").is_file();
        assert_eq!(
            seen,
            vec![("control".to_owned(), 0, false), ("session1".to_owned(), 10, grouped)],
            "{version}: the idle control connection keeps its priority, the burner is demoted"
        );
    }
}
#[tokio::test]
async fn a_step_sending_more_than_racelab_reads_is_cancelled() {
    // 1,000 rows of 900 kB each: 900 MB for a count of rows.
    let text = "session s\nstep flood { SELECT repeat('x', 900000) AS a FROM generate_series(1, 1000); }\n\
                step after { SELECT 1 AS alive; }\n";
    for (version, url) in servers() {
        let played = beside_benign("flood", version, &url, |_| text.to_owned()).await;
        assert!(played.ended.is_ok(), "{version}: {:?}", played.ended);
        assert!(
            played
                .lines
                .contains("more than 8 MB: cancelled\nERROR:  canceling statement due to user request"),
            "{version}: {}",
            &played.lines[played.lines.len().saturating_sub(600)..]
        );
        assert!(
            played.lines.contains("alive\n-----\n    1"),
            "{version}: the session goes on"
        );
    }
}

#[tokio::test]
async fn a_step_sending_only_nulls_is_cancelled_as_well() {
    // 50 million NULLs: no byte of value, but each read and taken apart.
    let text = "session s\nstep nothing { SELECT NULL::text AS a FROM (SELECT generate_series(1, 50000000)) AS g; }\n\
                step after { SELECT 1 AS alive; }\n";
    // The step limit well past the cut (which comes within a second or two), so a machine busy
    // with the other tests never reaches it first: what is judged is the cut.
    let limits = Limits {
        step_wait: Duration::from_secs(60),
        ..Limits::default()
    };
    for (version, url) in servers() {
        let id = run_id("nulls", version);
        let played = play_as(&url, &id, text, limits, Choice::All { why: false }).await;
        assert!(played.ended.is_ok(), "{version}: {:?}", played.ended);
        assert!(
            played.lines.contains("more than 8 MB: cancelled"),
            "{version}: {}",
            &played.lines[played.lines.len().saturating_sub(600)..]
        );
        assert!(
            played.lines.contains("alive\n-----\n    1"),
            "{version}: the session goes on"
        );
        assert_eq!(left_on(&url, &id).await, 0, "{version}");
    }
}
