-- racelab's own tables. Scenario data never lives here: each run plays in its own run_<id>
-- schema, dropped when the run ends. What stays is the record of finished runs, so a permalink
-- (/runs/<id>) can replay a run's timeline and ledger without touching a sandbox again.

CREATE TABLE runs (
    -- The run id, as in the sandbox schema name and the actors' application_name.
    id          text PRIMARY KEY,
    -- 'isolation/write-skew', 'serializable'.
    scenario    text NOT NULL,
    variant     text NOT NULL,
    -- How it ended: {"status":"completed"} | {"status":"failed","message":…} | {"status":"cancelled"}.
    outcome     jsonb NOT NULL,
    -- The whole event stream, in order: the single source of truth for a replay.
    events      jsonb NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now()
);

-- "Recent runs of this scenario" reads by scenario, newest first.
CREATE INDEX runs_scenario_finished_at_idx ON runs (scenario, finished_at DESC);
