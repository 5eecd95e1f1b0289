-- Trainers' lessons: the rounds of a session, as the text file they wrote (docs/lessons.md),
-- saved for a link. Named by content, as specs are: the same text twice is the same lesson, and
-- a changed lesson is a new one, so a link never plays other rounds than those it was sent with.
CREATE TABLE IF NOT EXISTS lessons (
    id         text PRIMARY KEY,
    text       text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
