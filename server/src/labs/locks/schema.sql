-- The wallet the fencing scenarios spend from. `fence` is the highest fencing token that has
-- written: a fenced UPDATE only goes through with a higher one. The CHECK is a last guard: a
-- balance below zero is refused whatever the application believed.
CREATE TABLE wallets (
    id      bigint PRIMARY KEY,
    balance bigint NOT NULL CONSTRAINT wallets_balance_never_negative CHECK (balance >= 0),
    fence   bigint NOT NULL DEFAULT 0
);

INSERT INTO wallets (id, balance) VALUES (42, 100);
