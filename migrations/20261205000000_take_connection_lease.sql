-- Taking a connection lease in one round trip: every replica's runs take one, so its cost is a
-- run's fixed cost. The function does what the replica used to do in a six-statement
-- transaction: under a transaction-scoped advisory lock (so two replicas cannot both see room
-- for the last connections), drop dead replicas' stale leases, sum the rest, and take a lease
-- only if it fits the budget. PL/pgSQL takes a new snapshot for each statement at READ
-- COMMITTED, so the sum, read after the lock, sees every lease committed before it.
-- Returns the new lease's id, or NULL when it does not fit yet.

CREATE FUNCTION take_connection_lease(
    lock_key bigint,
    holder text,
    wanted integer,
    budget integer,
    stale_after_s double precision
) RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    held bigint;
    taken bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(lock_key);
    DELETE FROM connection_leases WHERE renewed_at < now() - make_interval(secs => stale_after_s);
    SELECT coalesce(sum(connections), 0) INTO held FROM connection_leases;
    IF held + wanted > budget THEN
        RETURN NULL;
    END IF;
    INSERT INTO connection_leases (replica, connections) VALUES (holder, wanted) RETURNING id INTO taken;
    RETURN taken;
END;
$$;
