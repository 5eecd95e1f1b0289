//! The PostgreSQL connection budget, shared by every racelab replica on one database.
//!
//! Each replica's [`super::Admission`] keeps its own fair line. A run that has its place there
//! also takes a lease on the shared budget in the `connection_leases` table before it opens a
//! connection, and gives it back once its sandbox is gone, so replicas together never hold more
//! run connections than the budget: two processes behind one load balancer cannot oversubscribe
//! `max_connections`. Taking a lease is one call of `take_connection_lease` (one round trip), which
//! looks and takes under a transaction-scoped advisory lock, so two replicas cannot both see room
//! for the last connections (a run bigger than the whole budget never fits; admission refuses it
//! before it asks). Each replica renews its
//! leases every few seconds; the leases of a replica that died are dropped once they are 30 s
//! stale. A run waiting for a lease is woken when a run of its own replica gives one back, and
//! looks again every quarter second for those of the others.
//!
//! A finished run's lease may go on covering its sessions, kept for the next run
//! ([`super::kept`]): that run takes the lease with them and asks the database for nothing.

use super::kept::{KEEP_FOR, Kept};
use sqlx::PgPool;
use sqlx::postgres::PgConnection;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::Notify;

/// The advisory lock every replica takes to look at and change the leases ("racelab" + 1).
const LEASES_LOCK: i64 = 0x7261_6365_6c61_6201;
/// How often a replica renews its leases.
const RENEW_EVERY: Duration = Duration::from_secs(10);
/// A lease not renewed for this long belongs to a replica that died.
const STALE_AFTER_S: f64 = 30.0;
/// How often a waiting run looks again for leases given back by other replicas.
const LOOK_AGAIN: Duration = Duration::from_millis(250);

pub struct Leases {
    pool: PgPool,
    replica: String,
    /// Connections every replica's runs may hold together.
    budget: u32,
    /// A lease of this replica was given back, or sessions were kept with one.
    freed: Notify,
    /// Sessions kept between runs, with the leases that cover them.
    kept: Kept,
    /// Leases given back while the server did not answer (it restarted): deleted once it does,
    /// and never renewed meanwhile, or they would hold the budget for ever.
    orphans: std::sync::Mutex<Vec<i64>>,
}

/// Connections held from the shared budget; given back by [`Lease::give_back`], or when dropped.
pub struct Lease {
    /// `None` once given back.
    id: Option<i64>,
    /// How many connections it covers.
    connections: u32,
    leases: Arc<Leases>,
}

impl Leases {
    /// The budget of `budget` connections on the database of `pool`; renews this replica's
    /// leases for as long as it is alive. With `keep`, finished runs' sessions are kept under
    /// their leases for the next runs.
    pub fn new(pool: PgPool, budget: u32, keep: bool) -> Arc<Leases> {
        let leases = Arc::new(Leases {
            pool,
            replica: format!("{:016x}", rand::random::<u64>()),
            budget,
            freed: Notify::new(),
            kept: Kept::new(keep),
            orphans: std::sync::Mutex::new(Vec::new()),
        });
        tokio::spawn(renew(Arc::downgrade(&leases)));
        leases
    }

    /// Waits until `connections` fit in the budget beside every replica's leases, and takes them,
    /// with the sessions kept under them if a finished run left some ([`super::kept`]).
    pub async fn take(self: &Arc<Self>, connections: u32) -> Result<(Lease, Vec<PgConnection>), sqlx::Error> {
        loop {
            // Listening before looking: a lease given back in between still wakes this run.
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Some(bundle) = self.kept.take(connections) {
                return Ok((bundle.lease, bundle.sessions));
            }
            if let Some(id) = self.try_take(connections).await? {
                let lease = Lease {
                    id: Some(id),
                    connections,
                    leases: self.clone(),
                };
                return Ok((lease, Vec::new()));
            }
            // No room: sessions this replica keeps idle give way before anyone waits for them.
            if let Some(bundle) = self.kept.oldest() {
                bundle.end().await;
                continue;
            }
            tokio::select! {
                () = freed => {}
                () = tokio::time::sleep(LOOK_AGAIN) => {}
            }
        }
    }

    /// Closes every kept session and gives their leases back; nothing is kept from now on (the
    /// engine is closing).
    pub async fn close_kept(&self) {
        futures_util::future::join_all(self.kept.close().into_iter().map(|b| b.end())).await;
    }

    /// Whether finished runs' sessions are kept (see [`Leases::new`]).
    pub fn keeps(&self) -> bool {
        self.kept.open()
    }

    /// How many sessions this replica keeps for its next runs.
    pub fn kept_sessions(&self) -> usize {
        self.kept.sessions()
    }

    /// One round trip: `take_connection_lease` (migration 20261205) looks and takes under the
    /// advisory lock, in the statement's own transaction.
    async fn try_take(&self, connections: u32) -> Result<Option<i64>, sqlx::Error> {
        sqlx::query_scalar("SELECT take_connection_lease($1, $2, $3, $4, $5)")
            .bind(LEASES_LOCK)
            .bind(&self.replica)
            .bind(i32::try_from(connections).unwrap_or(i32::MAX))
            .bind(i32::try_from(self.budget).unwrap_or(i32::MAX))
            .bind(STALE_AFTER_S)
            .fetch_one(&self.pool)
            .await
    }
}

impl Lease {
    /// How many connections the lease covers.
    pub fn connections(&self) -> u32 {
        self.connections
    }

    /// Keeps `sessions` (reset, see [`super::kept::reset`]) under this lease for the next run
    /// that fits in it, for at most [`KEEP_FOR`]; with none, or once the engine closes, gives
    /// the lease back.
    pub async fn keep(self, mut sessions: Vec<PgConnection>) {
        if sessions.is_empty() {
            return self.give_back().await;
        }
        // Never more than the lease covers.
        let extra = sessions.split_off(sessions.len().min(self.connections as usize));
        futures_util::future::join_all(extra.into_iter().map(sqlx::Connection::close)).await;
        let leases = self.leases.clone();
        match leases.kept.put(self, sessions) {
            Ok(id) => {
                leases.freed.notify_waiters();
                let leases = Arc::downgrade(&leases);
                tokio::spawn(async move {
                    tokio::time::sleep(KEEP_FOR).await;
                    if let Some(bundle) = leases.upgrade().and_then(|l| l.kept.remove(id)) {
                        bundle.end().await;
                    }
                });
            }
            Err((lease, sessions)) => {
                super::kept::Bundle::new(lease, sessions).end().await;
            }
        }
    }

    /// Gives the connections back now: a process about to exit (`racelab run`) leaves no lease
    /// for others to wait out. If PostgreSQL is unreachable, the lease goes stale and the next
    /// replica to take one drops it.
    pub async fn give_back(mut self) {
        if let Some(id) = self.id.take() {
            give_back(&self.leases, id).await;
        }
    }
}

async fn give_back(leases: &Leases, id: i64) {
    let given_back = sqlx::query("DELETE FROM connection_leases WHERE id = $1")
        .bind(id)
        .execute(&leases.pool)
        .await;
    if let Err(error) = given_back {
        tracing::warn!(%error, "could not give a connection lease back; trying again as the leases are renewed");
        leases.orphans.lock().unwrap_or_else(|p| p.into_inner()).push(id);
    }
    leases.freed.notify_waiters();
}

impl Drop for Lease {
    /// A lease not given back (its run was dropped on the way) goes back on a task of its own.
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let leases = self.leases.clone();
            tokio::spawn(async move { give_back(&leases, id).await });
        }
    }
}

/// Renews this replica's leases every [`RENEW_EVERY`] while the replica lives.
async fn renew(leases: Weak<Leases>) {
    loop {
        tokio::time::sleep(RENEW_EVERY).await;
        let Some(leases) = leases.upgrade() else { return };
        let orphans = leases.orphans.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if !orphans.is_empty() {
            let deleted = sqlx::query("DELETE FROM connection_leases WHERE id = ANY($1)")
                .bind(&orphans)
                .execute(&leases.pool)
                .await;
            if deleted.is_ok() {
                leases
                    .orphans
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .retain(|id| !orphans.contains(id));
            }
        }
        let renewed =
            sqlx::query("UPDATE connection_leases SET renewed_at = now() WHERE replica = $1 AND NOT (id = ANY($2))")
                .bind(&leases.replica)
                .bind(&orphans)
                .execute(&leases.pool)
                .await;
        if let Err(error) = renewed {
            tracing::warn!(%error, "could not renew this replica's connection leases");
        }
    }
}
