-- The isolation lab: one team with a monthly budget, and the expenses approved against it.
-- Runs inside the run's own schema, so every run starts from exactly this state and expense ids
-- start at 1.

CREATE TABLE teams (
    id     text PRIMARY KEY,
    name   text,
    budget integer NOT NULL,
    -- A running total. Only the conditional-UPDATE fix keeps it in step with the expenses; the
    -- other strategies read sum(expenses.amount) instead and leave it at 0.
    spent  integer NOT NULL DEFAULT 0
);

-- One row per approved expense.
CREATE TABLE expenses (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    team_id     text REFERENCES teams,
    amount      integer NOT NULL,
    approved_by text NOT NULL,
    created_at  timestamptz DEFAULT now()
);

CREATE INDEX expenses_team_id_idx ON expenses (team_id);

-- The design team may spend $5,000 this month.
INSERT INTO teams (id, name, budget) VALUES ('design', 'Design', 5000);
