-- The payment service's database: its payments, and the outbox its events wait in.
CREATE TABLE payments (
    id           text PRIMARY KEY,
    amount_cents integer NOT NULL CONSTRAINT payments_amount_positive CHECK (amount_cents > 0),
    currency     text NOT NULL,
    status       text NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- One row per event, written in the same transaction as the change it describes. `id` is the
-- relay's publish order; `event_id` lets consumers recognise a repeat; `aggregate_id` (the
-- payment) becomes the message key; `published_at` stays NULL until the broker confirmed it.
CREATE TABLE outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id     uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    aggregate_id text NOT NULL,
    event_type   text NOT NULL,
    payload      jsonb NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);

-- Only the rows still to publish: the relay's query stays small however big the table grows.
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
