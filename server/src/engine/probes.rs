//! Whether a run's services are up as it starts.
//!
//! Every start asks (a run refused with "Redis is down" is clearer than one that fails on its
//! first command), but a service seen answering a moment ago is taken as up without asking
//! again: under a crowd, hundreds of starts a second would otherwise each wait on a probe, and
//! on a busy machine a slow answer is not a dead service. A probe that finds a service down
//! (from a start, `/healthz` or the catalog) is remembered at once, so the next start asks again.

use shared::Service;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a service seen up is taken as up.
pub const FRESH: Duration = Duration::from_millis(500);

/// When each service was last seen up.
#[derive(Default)]
pub struct Probes {
    seen_up: Mutex<Vec<(Service, Instant)>>,
}

impl Probes {
    /// Whether `service` answered within [`FRESH`] of `now`.
    pub fn recently_up(&self, service: Service, now: Instant) -> bool {
        self.seen_up
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .any(|(s, at)| *s == service && now.saturating_duration_since(*at) < FRESH)
    }

    /// What a probe of `service` found at `now`.
    pub fn record(&self, service: Service, up: bool, now: Instant) {
        let mut seen = self.seen_up.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        seen.retain(|(s, _)| *s != service);
        if up {
            seen.push((service, now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{FRESH, Probes};
    use shared::Service;
    use std::time::{Duration, Instant};

    #[test]
    fn a_service_seen_up_is_up_for_a_moment_and_down_as_soon_as_a_probe_says_so() {
        let probes = Probes::default();
        let t0 = Instant::now();
        assert!(!probes.recently_up(Service::Redis, t0), "never asked: ask");
        probes.record(Service::Redis, true, t0);
        assert!(probes.recently_up(Service::Redis, t0 + FRESH / 2));
        assert!(
            !probes.recently_up(Service::Postgres, t0),
            "one service says nothing of another"
        );
        assert!(!probes.recently_up(Service::Redis, t0 + FRESH), "stale: ask again");
        probes.record(Service::Redis, false, t0 + Duration::from_millis(1));
        assert!(!probes.recently_up(Service::Redis, t0 + Duration::from_millis(2)));
    }
}
