-- Every scored answer of every session a room ran of a lesson: the session's results (its CSV,
-- its summary) and, across sessions, each round's share of right answers. A participant is their
-- handle, nothing else; rows are deleted once older than RACELAB_RESULTS_DAYS (docs/rooms.md).
-- One row per session, round and handle: a repeated round's answers replace its last ones.
CREATE TABLE IF NOT EXISTS lesson_answers (
    session     text NOT NULL,
    lesson      text NOT NULL,
    round       integer NOT NULL,
    handle      text NOT NULL,
    answer      text NOT NULL,
    is_right    boolean NOT NULL,
    millis      bigint NOT NULL,
    answered_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session, round, handle)
);
CREATE INDEX IF NOT EXISTS lesson_answers_lesson ON lesson_answers (lesson);
CREATE INDEX IF NOT EXISTS lesson_answers_answered_at ON lesson_answers (answered_at);
