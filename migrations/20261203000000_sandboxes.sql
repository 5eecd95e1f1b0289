-- Every sandbox a run holds in a shared service, recorded *before* any of it is created and
-- removed only once all of it is gone. Whatever a crash (of racelab, of a machine) leaves behind
-- is therefore listed here, and the sweep removes it: schemas, Redis keys, topics and consumer
-- groups alike. Several racelab replicas share this table, so a sweep on any of them cleans up
-- after all of them.

CREATE TABLE sandboxes (
    -- The run id: 12 hex digits, as in every namespace's name.
    run_id       text PRIMARY KEY
                 CONSTRAINT sandboxes_run_id_shape CHECK (run_id ~ '^[0-9a-f]{12}$'),
    -- The sweep leaves sandboxes younger than a run may live alone: they may be playing.
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- PostgreSQL schemas (run_<id>, run_<id>_payments, …).
    schemas      text[] NOT NULL,
    -- The Redis key prefix (racelab:<id>:), if the run writes keys.
    redis_prefix text,
    -- Broker topics (racelab.<id>.<name>); consumer groups are found by the same prefix.
    topics       text[] NOT NULL
);

CREATE INDEX sandboxes_created_at_idx ON sandboxes (created_at);
