-- The isolation lab on MariaDB: the same team and expenses as schema.sql, in InnoDB tables of
-- the run's own database, so every run starts from exactly this state and expense ids start at 1.

CREATE TABLE teams (
    id     varchar(32) PRIMARY KEY,
    name   varchar(64),
    budget int NOT NULL,
    -- A running total, as in schema.sql.
    spent  int NOT NULL DEFAULT 0
) ENGINE = InnoDB;

-- One row per approved expense.
CREATE TABLE expenses (
    id          bigint AUTO_INCREMENT PRIMARY KEY,
    team_id     varchar(32),
    amount      int NOT NULL,
    approved_by varchar(32) NOT NULL,
    created_at  timestamp DEFAULT CURRENT_TIMESTAMP,
    KEY expenses_team_id_idx (team_id),
    FOREIGN KEY (team_id) REFERENCES teams (id)
) ENGINE = InnoDB;

-- The design team may spend $5,000 this month.
INSERT INTO teams (id, name, budget) VALUES ('design', 'Design', 5000);
