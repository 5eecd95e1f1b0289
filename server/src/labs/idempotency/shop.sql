-- The shop's ledger: one row per payment it believes it took, and one row per idempotency key.
CREATE TABLE charges (
    id          bigserial PRIMARY KEY,
    customer_id text NOT NULL,
    amount      bigint NOT NULL CONSTRAINT charges_amount_positive CHECK (amount > 0),
    provider_id text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- A key is claimed by inserting its row (status 'started'); the request that inserted it owns
-- it. The stored answer (code and body) is what every retry with the key gets back.
CREATE TABLE idempotency_keys (
    customer_id   text NOT NULL,
    key           text NOT NULL,
    request_hash  bytea NOT NULL,
    status        text NOT NULL DEFAULT 'started',
    response_code int,
    response_body bytea,
    locked_at     timestamptz NOT NULL DEFAULT now(),
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT idempotency_keys_pkey PRIMARY KEY (customer_id, key)
);
