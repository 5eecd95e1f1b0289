-- Readers' own races: specs in PostgreSQL's isolation-tester format, saved for /s/<id>. A spec
-- is immutable and named by its content (the first 16 hex digits of its SHA-256), so saving the
-- same text twice gives the same link, and a changed spec is a new one.
CREATE TABLE IF NOT EXISTS specs (
    id         text PRIMARY KEY,
    text       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
