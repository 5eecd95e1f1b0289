-- The PostgreSQL connection budget runs may hold, shared by every racelab replica on this
-- database: each run holds a lease for the connections its budget says it opens (its actors and
-- its monitor) from before it opens the first until after it closed the last. A replica renews
-- its leases while it lives; a lease not renewed for 30 s is a dead replica's, and is dropped by
-- the next replica that takes one.

CREATE TABLE connection_leases (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The replica holding it (random, new at every start).
    replica     text NOT NULL,
    connections integer NOT NULL CONSTRAINT connection_leases_positive CHECK (connections > 0),
    renewed_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX connection_leases_replica_idx ON connection_leases (replica);
