-- What the card provider actually charged: its own ledger, in its own database. A charge made
-- without a key never conflicts (NULLs are distinct); one with a key is made once.
CREATE TABLE card_charges (
    id              text PRIMARY KEY DEFAULT 'ch_' || substr(md5(random()::text), 1, 10),
    idempotency_key text CONSTRAINT card_charges_idempotency_key_unique UNIQUE,
    card            text NOT NULL,
    amount          bigint NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);
