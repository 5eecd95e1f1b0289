//! The engine's promises that no tutorial scenario exercises: a step expected to block that does
//! not fails the run clearly; a full server queues runs and tells them their place.

mod common;

use common::{on_shelf, until_on_shelves};
use racelab::engine::{BoxFuture, Level, Run, RunError};
use racelab::labs::{ScenarioDef, actors_at};
use shared::{EventKind, Mode, Outcome, ServerMsg};
use std::sync::Arc;
use std::time::Duration;

/// An engine test's own scenario: one variant (`only`), in the isolation lab's sandbox, a
/// PostgreSQL session per actor.
const fn test_scenario(
    id: &'static str,
    title: &'static str,
    steppable: bool,
    actors: fn(&str) -> Vec<shared::event::ActorInfo>,
    play: for<'a> fn(&'a Run, &'a str) -> BoxFuture<'a, Result<(), RunError>>,
) -> ScenarioDef {
    ScenarioDef {
        id,
        title,
        hook: "",
        about: "",
        variants: &[("only", "only", "")],
        steppable,
        workload: false,
        sandbox: racelab::labs::isolation::SANDBOX,
        actors,
        budget: None,
        summarize: None,
        predict: None,
        play,
    }
}

/// A broken choreography: bob's SELECT 1 is "expected" to wait for a lock nobody holds.
static NEVER_WAITS: ScenarioDef = test_scenario(
    "test/never-waits",
    "A step that should wait but does not",
    true,
    |_| actors_at(&["bob"], "READ COMMITTED"),
    |run, _| {
        Box::pin(async move {
            let bob = run.actor("bob", Level::ReadCommitted).await?;
            bob.start("SELECT 1", &[]).await?.expect_blocked().await?;
            Ok::<(), RunError>(())
        })
    },
);

#[tokio::test]
async fn a_step_that_never_blocks_fails_the_run_with_a_clear_message() {
    let _slot = common::db_slot().await;
    let engine = common::engine().await;
    let mut handle = engine.start(&NEVER_WAITS, "only", Mode::Auto).await.expect("start");
    let (run_id, outcome) = loop {
        match tokio::time::timeout(Duration::from_secs(30), handle.updates.recv())
            .await
            .expect("in time")
        {
            Some(ServerMsg::Done { run_id, outcome }) => break (run_id, outcome),
            Some(_) => {}
            None => panic!("no done"),
        }
    };
    assert_eq!(
        outcome,
        Outcome::Failed {
            message: "bob was expected to wait for a lock, but its step finished without waiting".into()
        }
    );
    assert_eq!(common::wait_until_clean(&run_id).await, common::Leftovers::NONE);
}

#[tokio::test]
async fn a_full_server_queues_the_next_run_and_tells_it_its_place() {
    let _slot = common::db_slot().await;
    let mut config = common::config();
    config.run_connections = Some(3); // room for exactly one two-actor run
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("engine"));
    let write_skew = racelab::labs::find("isolation/write-skew").expect("scenario");
    let mut first = engine
        .start(write_skew, "serializable", Mode::Step)
        .await
        .expect("first");
    loop {
        if let Some(ServerMsg::Started { .. }) = first.updates.recv().await {
            break;
        }
    }
    let mut second = engine
        .start(write_skew, "serializable", Mode::Auto)
        .await
        .expect("second");
    let told = tokio::time::timeout(Duration::from_secs(10), second.updates.recv())
        .await
        .expect("in time");
    assert_eq!(told, Some(ServerMsg::Queued { position: 1 }));
    first.cancel();
    let mut second_ran = false;
    while let Some(update) = tokio::time::timeout(Duration::from_secs(30), second.updates.recv())
        .await
        .expect("in time")
    {
        if let ServerMsg::Done { outcome, .. } = update {
            assert_eq!(outcome, Outcome::Completed);
            second_ran = true;
            break;
        }
    }
    assert!(second_ran, "the queued run played once the first was cancelled");
}

/// A run that plays for a second without a session of its own.
static TAKES_A_SECOND: ScenarioDef = test_scenario(
    "test/takes-a-second",
    "A run that takes a second",
    true,
    |_| actors_at(&["sleeper"], "autocommit"),
    |run, _| {
        Box::pin(async move {
            run.say_plain("sleeping");
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok::<(), RunError>(())
        })
    },
);

/// The next update of `handle`, within 10 s.
async fn next_update(handle: &mut racelab::engine::RunHandle) -> Option<ServerMsg> {
    tokio::time::timeout(Duration::from_secs(10), handle.updates.recv())
        .await
        .expect("an update in time")
}

/// The next update that is not a place in line: a run with room may still be told `queued`
/// first, when taking its lease outlasts the grace before a place is told (a loaded machine).
async fn next_after_any_place(handle: &mut racelab::engine::RunHandle) -> Option<ServerMsg> {
    loop {
        match next_update(handle).await {
            Some(ServerMsg::Queued { .. }) => continue,
            other => return other,
        }
    }
}

#[tokio::test]
async fn runs_past_the_number_at_once_wait_in_line_and_step_runs_are_not_counted() {
    let _slot = common::db_slot().await;
    let mut config = common::config();
    config.runs_at_once = Some(1);
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("engine"));
    assert_eq!(engine.runs_at_once(), Some(1));
    let mut first = engine.start(&TAKES_A_SECOND, "only", Mode::Auto).await.expect("first");
    assert!(matches!(
        next_after_any_place(&mut first).await,
        Some(ServerMsg::Started { .. })
    ));

    // Beside it, a run played step by step gets in at once (it waits for its reader)...
    let mut stepped = engine
        .start(&TAKES_A_SECOND, "only", Mode::Step)
        .await
        .expect("stepped");
    let told = next_after_any_place(&mut stepped).await;
    assert!(matches!(told, Some(ServerMsg::Started { .. })), "{told:?}");
    // ...but a second run playing by itself waits for the first, told its place.
    let mut second = engine.start(&TAKES_A_SECOND, "only", Mode::Auto).await.expect("second");
    assert_eq!(next_update(&mut second).await, Some(ServerMsg::Queued { position: 1 }));
    stepped.cancel();

    let started = next_update(&mut second).await;
    assert!(matches!(started, Some(ServerMsg::Started { .. })), "{started:?}");
    // By then the first had played to its end: its `done` event was already sent.
    let mut first_ended = false;
    while let Ok(update) = first.updates.try_recv() {
        first_ended |= matches!(update, ServerMsg::Event { event } if matches!(event.kind, EventKind::Done { .. }));
    }
    assert!(first_ended, "the second run started only once the first had ended");
    loop {
        if let Some(ServerMsg::Done { outcome, .. }) = next_update(&mut second).await {
            assert_eq!(outcome, Outcome::Completed);
            break;
        }
    }
    engine.close(Duration::from_secs(5), Duration::from_secs(5)).await;
}

/// A reader that stops reading cannot make the server hold its run: past its backlog the run is
/// cancelled and cleaned, the messages end without `done`, and the handle says why.
#[tokio::test]
async fn a_reader_that_stops_reading_has_its_run_cancelled_and_cleaned() {
    let _slot = common::db_slot().await;
    let mut config = common::config();
    config.reader_backlog = 8;
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("engine"));
    let scenario = racelab::labs::find("isolation/write-skew").expect("write skew");
    let mut handle = engine
        .start(scenario, "serializable", Mode::Auto)
        .await
        .expect("started");
    let run_id = loop {
        match handle.updates.recv().await.expect("started") {
            ServerMsg::Started { run_id } => break run_id,
            _ => continue,
        }
    };
    // Not another message read until the run has ended: it is stored last, after its cleanup.
    let mut inspector = common::inspector().await;
    let mut outcome = None;
    for _ in 0..300 {
        outcome = sqlx::query_scalar::<_, String>("SELECT outcome->>'status' FROM runs WHERE id = $1")
            .bind(&run_id)
            .fetch_optional(&mut inspector)
            .await
            .expect("the store answers");
        if outcome.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        outcome.as_deref(),
        Some("cancelled"),
        "the run was cancelled for its slow reader"
    );
    assert_eq!(common::wait_until_clean(&run_id).await, common::Leftovers::NONE);
    let mut unread = Vec::new();
    while let Ok(message) = tokio::time::timeout(Duration::from_secs(5), handle.updates.recv()).await {
        match message {
            Some(message) => unread.push(message),
            None => break,
        }
    }
    assert!(handle.fell_behind(), "the handle says the reader fell behind");
    assert_eq!(unread.len(), 8, "exactly the backlog was kept for it");
    assert!(
        !unread.iter().any(|m| matches!(m, ServerMsg::Done { .. })),
        "no done after the backlog"
    );
}

/// Past the line's cap a start is refused at once with when to come back, instead of a long
/// silent wait; the runs already in line are untouched.
#[tokio::test]
async fn a_start_past_a_full_line_is_told_to_come_back_later() {
    let _slot = common::db_slot().await;
    let mut config = common::config();
    // Room for one write skew at a time (alice, bob and the monitor), and one in line.
    config.run_connections = Some(3);
    config.max_queue = 1;
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("engine"));
    let scenario = racelab::labs::find("isolation/write-skew").expect("write skew");
    // The first run holds the room: a reader stepping through it, thinking.
    let mut playing = engine
        .start(scenario, "serializable", Mode::Step)
        .await
        .expect("started");
    let run_id = loop {
        if let Some(ServerMsg::Started { run_id }) = playing.updates.recv().await {
            break run_id;
        }
    };
    let mut waiting = engine
        .start(scenario, "serializable", Mode::Auto)
        .await
        .expect("queued");
    assert!(
        matches!(waiting.updates.recv().await, Some(ServerMsg::Queued { position: 1 })),
        "the second run waits first in line"
    );
    match engine.start(scenario, "serializable", Mode::Auto).await {
        Err(racelab::engine::StartError::QueueFull { waiting, retry_after_s }) => {
            assert_eq!(waiting, 1);
            assert!(retry_after_s >= 1, "{retry_after_s}");
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("a third run was queued past the cap"),
    }
    // Once the first run ends, the one in line plays to its end.
    playing.cancel();
    let outcome = loop {
        match waiting.updates.recv().await.expect("the waiting run's messages") {
            ServerMsg::Done { outcome, .. } => break outcome,
            _ => continue,
        }
    };
    assert_eq!(outcome, Outcome::Completed);
    assert_eq!(common::wait_until_clean(&run_id).await, common::Leftovers::NONE);
}

/// `RACELAB_MAX_RUN_SECS`: a stepped run nobody advances fails when its time is up (1 s here),
/// saying so, and its sandbox is cleaned.
#[tokio::test]
async fn a_run_past_its_time_limit_fails_and_is_cleaned() {
    let _slot = common::db_slot().await;
    let mut config = common::config();
    config.max_run_secs = 1;
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("engine"));
    let write_skew = racelab::labs::find("isolation/write-skew").expect("scenario");
    let began = std::time::Instant::now();
    let mut handle = engine
        .start(write_skew, "serializable", Mode::Step)
        .await
        .expect("started");
    let mut run_id = None;
    let outcome = loop {
        match tokio::time::timeout(Duration::from_secs(30), handle.updates.recv())
            .await
            .expect("the run ends in time")
        {
            Some(ServerMsg::Started { run_id: id }) => run_id = Some(id),
            Some(ServerMsg::Done { outcome, .. }) => break outcome,
            Some(_) => {}
            None => panic!("the run's messages ended without done"),
        }
    };
    let took = began.elapsed();
    let Outcome::Failed { message } = outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        message.contains("1 s") || message.contains("1s"),
        "the limit in the message: {message}"
    );
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(15),
        "{took:?}"
    );
    let run_id = run_id.expect("it started");
    assert_eq!(common::wait_until_clean(&run_id).await, common::Leftovers::NONE);
}

/// Sandboxes made ahead of demand, and reused: after a first run of write skew the engine keeps
/// that run's sandbox, reset, and makes one more ahead; the next run plays in the older (and
/// prints the tutorial's transcript, under its own run id), which goes back on the shelf again;
/// closing the engine takes every ready sandbox down.
#[tokio::test]
async fn ready_sandboxes_are_played_in_by_one_run_at_a_time_and_taken_down_with_the_engine() {
    let _slots = common::db_slots(6).await;
    let mut config = common::config();
    config.warm_sandboxes = 2;
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("PostgreSQL"));
    let first = common::play(&engine, "isolation/write-skew", "serializable").await;
    assert_eq!(first.transcript(), common::lines(common::WRITE_SKEW_SERIALIZABLE));
    let ready = until_on_shelves(&engine, 2).await;
    assert_eq!(
        on_shelf(&ready, &common::named(&first.run_id)),
        Some(1),
        "the first run's sandbox, reset: {ready:?}"
    );

    let second = common::play(&engine, "isolation/write-skew", "serializable").await;
    assert_ne!(second.run_id, first.run_id, "every run has its own id");
    assert_eq!(second.transcript(), common::lines(common::WRITE_SKEW_SERIALIZABLE));
    let again = until_on_shelves(&engine, 2).await;
    assert_eq!(
        on_shelf(&again, &common::named(&first.run_id)),
        Some(2),
        "the second run played in the first's sandbox: {again:?}"
    );
    assert_eq!(
        common::named(&second.run_id),
        common::named(&first.run_id),
        "the second run's names are the first's sandbox's"
    );
    assert_ne!(common::named(&first.run_id), first.run_id, "no name carries a run's id");

    // A third run takes one; its `done` puts it back, and the engine closes at once: closing
    // takes every ready sandbox down, and one being made too.
    let third = common::play(&engine, "isolation/write-skew", "serializable").await;
    assert_eq!(third.transcript(), common::lines(common::WRITE_SKEW_SERIALIZABLE));
    let mut metrics = String::new();
    engine.metrics(&mut metrics);
    assert!(
        metrics.lines().any(|l| l == "racelab_sandboxes_reused_total 3"),
        "each of the three runs' sandboxes was reset and put back:\n{metrics}"
    );
    assert_eq!(engine.close(Duration::from_secs(5), Duration::from_secs(5)).await, 0);
    assert!(engine.ready_sandboxes().is_empty());
    // Nothing else plays in this binary now (every slot is this test's): no sandbox at all may
    // be left, the moment `close` returns.
    let mut inspector = common::inspector().await;
    let left: (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM sandboxes),
                (SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'run\\_%')",
    )
    .fetch_one(&mut inspector)
    .await
    .expect("leftovers");
    assert_eq!(left, (0, 0), "registry rows and schemas left when close returned");
    for sandbox in again {
        assert_eq!(
            common::wait_until_clean(&sandbox.run_id).await,
            common::Leftovers::NONE,
            "{sandbox:?}"
        );
    }
}

/// Leaves the isolation lab's sandbox nothing like it was made: more expenses (the identity
/// sequence moved on), the team's numbers changed, a second team.
static DIRTIES_ITS_SANDBOX: ScenarioDef = test_scenario(
    "test/dirties-its-sandbox",
    "A run that changes every row it can",
    false,
    |_| actors_at(&["carol"], "autocommit"),
    |run, _| {
        Box::pin(async move {
            let carol = run.actor("carol", Level::Autocommit).await?;
            for sql in [
                "INSERT INTO expenses (team_id, amount, approved_by) VALUES ('design', 700, 'carol'), ('design', 800, 'carol')",
                "UPDATE teams SET budget = 1, spent = 1500",
                "INSERT INTO teams (id, name, budget) VALUES ('ops', 'Ops', 10)",
            ] {
                carol.query(sql, &[]).await?;
            }
            Ok::<(), RunError>(())
        })
    },
);

/// Changes what the sandbox is, not what it holds, and only in a column's definition: an
/// expense may now have no approver (no relation, constraint or default comes or goes).
static ALTERS_ITS_SANDBOX: ScenarioDef = test_scenario(
    "test/alters-its-sandbox",
    "A run that lets a column be empty",
    false,
    |_| actors_at(&["carol"], "autocommit"),
    |run, _| {
        Box::pin(async move {
            let carol = run.actor("carol", Level::Autocommit).await?;
            carol
                .query("ALTER TABLE expenses ALTER COLUMN approved_by DROP NOT NULL", &[])
                .await?;
            Ok::<(), RunError>(())
        })
    },
);

/// A finished run's sandbox is put back exactly as the isolation lab's schema makes it (its
/// seed row, no expenses, the ids starting at 1 again) before another run may take it, and
/// that run plays the tutorial's transcript in it. A run that changed the sandbox's shape
/// leaves it destroyed, not reset, as does a run that failed.
#[tokio::test]
async fn a_sandbox_is_played_in_again_only_as_it_was_made() {
    let _slots = common::db_slots(6).await;
    let mut config = common::config();
    config.warm_sandboxes = 1;
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("PostgreSQL"));
    let mut inspector = common::inspector().await;

    let dirty = common::play_def(&engine, &DIRTIES_ITS_SANDBOX, "only").await;
    assert_eq!(dirty.outcome, Outcome::Completed);
    let ready = until_on_shelves(&engine, 1).await;
    assert_eq!(on_shelf(&ready, &common::named(&dirty.run_id)), Some(1), "{ready:?}");
    let schema = racelab::sandbox::schema_name(&common::named(&dirty.run_id), "");
    let seen: (String, i64, i64, i64, bool) = sqlx::query_as(&format!(
        "SELECT (SELECT string_agg(concat_ws('|', id, name, budget, spent), ',' ORDER BY id) FROM {schema}.teams),
                (SELECT count(*) FROM {schema}.expenses),
                (SELECT count(*) FROM sandboxes WHERE run_id = $1 AND created_at > now() - interval '10 s'),
                last_value, is_called
           FROM {schema}.expenses_id_seq"
    ))
    .bind(common::named(&dirty.run_id))
    .fetch_one(&mut inspector)
    .await
    .expect("the reset sandbox");
    let seed = format!(
        "{TEAM}|Design|{BUDGET}|0",
        TEAM = racelab::labs::isolation::TEAM,
        BUDGET = racelab::labs::isolation::BUDGET
    );
    assert_eq!(
        seen,
        (seed, 0, 1, 1, false),
        "rows, expenses, registry row, the ids' sequence"
    );

    let next = common::play(&engine, "isolation/write-skew", "serializable").await;
    assert_eq!(next.transcript(), common::lines(common::WRITE_SKEW_SERIALIZABLE));
    let ids: Vec<i64> = sqlx::query_scalar(&format!("SELECT id FROM {schema}.expenses ORDER BY id"))
        .fetch_all(&mut inspector)
        .await
        .expect("expenses");
    assert!(ids.is_empty(), "reset again after write skew: {ids:?}");
    assert_eq!(
        on_shelf(&until_on_shelves(&engine, 1).await, &common::named(&dirty.run_id)),
        Some(2)
    );

    // It takes the ready sandbox, changes a column and completes: destroyed, and a new one is made.
    let alters = common::play_def(&engine, &ALTERS_ITS_SANDBOX, "only").await;
    assert_eq!(alters.outcome, Outcome::Completed);
    assert_eq!(common::wait_until_clean(&dirty.run_id).await, common::Leftovers::NONE);
    let ready = until_on_shelves(&engine, 1).await;
    assert_eq!(ready[0].runs, 0, "made ahead, not the altered one: {ready:?}");

    // A failed run's sandbox is destroyed too.
    let made_ahead = ready[0].run_id.clone();
    let failed = common::play_def(&engine, &NEVER_WAITS, "only").await;
    assert!(matches!(failed.outcome, Outcome::Failed { .. }), "{:?}", failed.outcome);
    assert_eq!(common::wait_until_clean(&made_ahead).await, common::Leftovers::NONE);
    assert_eq!(engine.close(Duration::from_secs(5), Duration::from_secs(5)).await, 0);
}

/// Leaves every kind of session state behind it: changed settings, a session advisory lock, a
/// temporary table, a LISTEN, a prepared statement, and a transaction left open on a row lock.
static LEAVES_A_MESS: ScenarioDef = test_scenario(
    "test/leaves-a-mess",
    "A run that leaves its sessions in a mess",
    false,
    |_| actors_at(&["mess"], "autocommit"),
    |run, _| {
        Box::pin(async move {
            run.setup("SET lock_timeout = '2ms'; SET search_path TO public").await?;
            let mess = run.actor("mess", Level::Autocommit).await?;
            let schema = racelab::sandbox::postgres::quote_ident(run.sandbox().default_schema().unwrap_or("public"));
            for sql in [
                "SET lock_timeout = '1ms'",
                "SELECT pg_advisory_lock(4242)",
                "CREATE TEMP TABLE scratch (x int)",
                "LISTEN racelab_test",
                "SET search_path TO public",
            ] {
                mess.query(sql, &[]).await?;
            }
            mess.query("SELECT $1::int", &[shared::Value::Int(1)]).await?;
            mess.begin().await?;
            mess.query(&format!("UPDATE {schema}.teams SET budget = 1"), &[])
                .await?;
            // Ends here: the handle is dropped with its transaction open.
            Ok::<(), RunError>(())
        })
    },
);

/// What a session looks like from inside, one line per session: its name, lock timeout (ms),
/// schema, and what a run could have left in it.
const LOOK_AROUND: &str = "SELECT current_setting('application_name') || ' | lock_timeout '
        || (SELECT setting FROM pg_settings WHERE name = 'lock_timeout')
        || ' | schema ' || current_schema()
        || ' | advisory ' || (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory')
        || ' | row locks ' || (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype IN ('tuple', 'transactionid'))
        || ' | temp ' || (SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema())
        || ' | listening ' || (SELECT count(*) FROM pg_listening_channels())
        || ' | prepared ' || (SELECT count(*) FROM pg_prepared_statements),
        pg_backend_pid()";

/// Looks around its actor's session and its monitor's, and says what it sees.
static LOOKS_AROUND: ScenarioDef = test_scenario(
    "test/looks-around",
    "A run that looks at its sessions",
    false,
    |_| actors_at(&["looker"], "autocommit"),
    |run, _| {
        Box::pin(async move {
            let looker = run.actor("looker", Level::Autocommit).await?;
            let mut pids = Vec::new();
            for seen in [
                looker.query(LOOK_AROUND, &[]).await?,
                run.check(LOOK_AROUND, &[]).await?,
            ] {
                let line = seen.rows[0][0].as_text().unwrap_or_default().to_owned();
                run.say_plain(line);
                pids.push(seen.int_at(1)?.to_string());
            }
            run.say_plain(format!("pids {}", pids.join(",")));
            Ok::<(), RunError>(())
        })
    },
);

/// The backends of sessions kept for the next runs (named for no run) on racelab's database.
async fn kept_backends(inspector: &mut sqlx::PgConnection) -> Vec<String> {
    let mut pids: Vec<i32> = sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'racelab/kept' AND datname = current_database()",
    )
    .fetch_all(&mut *inspector)
    .await
    .expect("kept sessions");
    pids.sort_unstable();
    pids.iter().map(ToString::to_string).collect()
}

/// A finished run's sessions are reset and kept for the next run, which plays on the same
/// backends and finds nothing of the first run in them; nobody keeps them past `KEEP_FOR`, and
/// closing the engine closes them at once.
#[tokio::test]
async fn a_run_s_sessions_are_kept_clean_for_the_next_run() {
    let _slots = common::db_slots(6).await;
    let mut config = common::config();
    config.keep_sessions = true;
    let engine = Arc::new(racelab::db::connect_engine(&config).await.expect("PostgreSQL"));
    let mut inspector = common::inspector().await;

    let mess = common::play_def(&engine, &LEAVES_A_MESS, "only").await;
    assert_eq!(mess.outcome, Outcome::Completed);
    // Its row lock was rolled back before the sandbox went, or DROP SCHEMA would have waited.
    assert_eq!(common::wait_until_clean(&mess.run_id).await, common::Leftovers::NONE);
    assert_eq!(engine.kept_sessions(), 2, "the monitor's and mess's sessions are kept");
    let kept = kept_backends(&mut inspector).await;
    assert_eq!(kept.len(), 2, "kept backends {kept:?}");

    let look = common::play_def(&engine, &LOOKS_AROUND, "only").await;
    assert_eq!(look.outcome, Outcome::Completed);
    let schema = racelab::sandbox::Sandbox::plan(&common::named(&look.run_id), &racelab::labs::isolation::SANDBOX)
        .default_schema()
        .expect("a schema")
        .to_owned();
    let clean = |who: &str| {
        format!(
            "racelab/{}/{who} | lock_timeout {} | schema {schema} | advisory 0 | row locks 0 | temp 0 | listening 0 | prepared 0",
            common::named(&look.run_id),
            config.lock_timeout_ms
        )
    };
    let transcript = look.transcript();
    assert_eq!(transcript[..2], [clean("looker"), clean("monitor")], "{transcript:#?}");
    let mut played_on: Vec<&str> = transcript[2]
        .strip_prefix("pids ")
        .expect("the pids line")
        .split(',')
        .collect();
    played_on.sort_unstable();
    assert_eq!(played_on, kept, "the second run played on the first run's backends");
    assert_eq!(common::wait_until_clean(&look.run_id).await, common::Leftovers::NONE);

    // Nobody takes them: closed, their lease given back, within KEEP_FOR (and a moment).
    let deadline = tokio::time::Instant::now() + racelab::engine::kept::KEEP_FOR + Duration::from_secs(3);
    while !kept_backends(&mut inspector).await.is_empty() || engine.kept_sessions() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "kept sessions outlived KEEP_FOR"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Kept sessions whose backends died meanwhile (PostgreSQL restarted): the next run
    // connects new ones instead, and plays right.
    let first = common::play(&engine, "isolation/write-skew", "serializable").await;
    assert_eq!(first.transcript(), common::lines(common::WRITE_SKEW_SERIALIZABLE));
    assert_eq!(engine.kept_sessions(), 3);
    // This engine's alone (whatever else may keep sessions on this database).
    let pids: Vec<i32> = kept_backends(&mut inspector)
        .await
        .iter()
        .filter_map(|p| p.parse().ok())
        .collect();
    let killed: i64 = sqlx::query_scalar(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
         WHERE application_name = 'racelab/kept' AND pid = ANY($1)",
    )
    .bind(&pids)
    .fetch_one(&mut inspector)
    .await
    .expect("terminated");
    assert_eq!(killed, 3);

    // Kept again, then the engine closes: none outlives `close`.
    let last = common::play(&engine, "isolation/write-skew", "serializable").await;
    assert_eq!(last.outcome, Outcome::Completed);
    assert_eq!(last.transcript(), common::lines(common::WRITE_SKEW_SERIALIZABLE));
    assert_eq!(engine.kept_sessions(), 3);
    assert_eq!(engine.close(Duration::from_secs(5), Duration::from_secs(5)).await, 0);
    assert_eq!(engine.kept_sessions(), 0);
    common::until_no_kept_sessions(&mut inspector).await;
}

/// The backend behind the health probes' kept connection, if there is one.
async fn kept_probe_backend(services: &racelab::services::Services) -> Option<i32> {
    let mut kept = services.probe.lock().await;
    let conn = kept.as_mut()?;
    sqlx::query_scalar("select pg_backend_pid()").fetch_one(conn).await.ok()
}

/// After a run lost its connection, whether its server still answers is asked on a connection
/// made from then on: the kept probe session may not have heard yet that the server is stopping
/// (seen in tests/servers.rs: a run failed with 57P01 while the kept session answered once more,
/// so the run's message did not name the server that stopped).
#[tokio::test]
async fn asking_afresh_whether_postgresql_answers_is_asked_on_a_new_session() {
    let engine = common::engine().await;
    let services = engine.services();
    assert!(racelab::health::postgres(services).await.up);
    let before = kept_probe_backend(services).await.expect("a kept probe session");
    assert!(racelab::health::postgres(services).await.up);
    assert_eq!(kept_probe_backend(services).await, Some(before), "kept between probes");

    racelab::health::forget_kept_connection(services).await;
    assert!(racelab::health::postgres(services).await.up);
    let after = kept_probe_backend(services).await.expect("a new probe session");
    assert_ne!(after, before, "asked on a new session");
}
