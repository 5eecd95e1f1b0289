-- The notifier's own database: its inbox, its side effects, and its view of each payment.

-- The inbox: an event id is claimed here in the same transaction as the event's effects, so a
-- repeat finds it taken and does nothing.
CREATE TABLE processed_events (
    event_id     uuid PRIMARY KEY,
    processed_at timestamptz NOT NULL DEFAULT now()
);

-- Stands in for the receipt e-mail. No uniqueness on purpose: without the inbox, a repeat sends
-- a second receipt.
CREATE TABLE receipts_sent (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payment_id text NOT NULL,
    event_id   uuid NOT NULL,
    sent_at    timestamptz NOT NULL DEFAULT now()
);

-- The notifier's projection of each payment's status: a blind upsert, last event wins.
CREATE TABLE payment_status (
    payment_id text PRIMARY KEY,
    status     text NOT NULL
);
