//! Whether a run's services are up as it starts.
//!
//! Every start asks (a run refused with "Redis is down" is clearer than one that fails on its
//! first command), but a service seen answering a moment ago is taken as up without asking
//! again: under a crowd, hundreds of starts a second would otherwise each wait on a probe, and
//! on a busy machine a slow answer is not a dead service. A probe that finds a service down
//! (from a start, `/healthz` or the catalog) is remembered at once, so the next start asks again.
//!
//! Starts probe a service one at a time ([`Probes::turn`]), and a start that waited for its turn
//! takes the answer of the probe it waited for, up or down ([`Probes::answered_since`]): a
//! hundred starts at once make one probe, not a hundred in a row, whose last would wait past its
//! own timeout on a loaded machine (seen in CI's thousand cuts: "PostgreSQL is down (no answer in
//! time)" while it answered everyone else), or, for a service that hangs, a hundred timeouts.

use shared::Service;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a service seen up is taken as up.
pub const FRESH: Duration = Duration::from_millis(500);

/// What the probes of each service last found, stamped with when each probe *started*: probes
/// overlap (`/healthz` waits for its slowest), and an answer that left the service before a later
/// probe found it down must not count as up after that.
#[derive(Default)]
pub struct Probes {
    seen: Mutex<Vec<Seen>>,
    /// Whose turn it is to probe, per service (see [`Probes::turn`]).
    turns: Mutex<Vec<(Service, Arc<tokio::sync::Mutex<()>>)>>,
}

struct Seen {
    service: Service,
    up_at: Option<Instant>,
    down_at: Option<Instant>,
    /// The answer of the latest-started probe: when it ended, and what it found.
    answered: Option<Answer>,
}

/// What one probe found, and when it started and ended.
#[derive(Clone)]
struct Answer {
    started: Instant,
    ended: Instant,
    /// `Err(why)` when the service was down.
    found: Result<(), String>,
}

impl Probes {
    /// Whether `service` answered a probe started within [`FRESH`] of `now`, and no probe started
    /// since found it down.
    pub fn recently_up(&self, service: Service, now: Instant) -> bool {
        self.seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .any(|seen| {
                seen.service == service
                    && seen.up_at.is_some_and(|up| {
                        now.saturating_duration_since(up) < FRESH && seen.down_at.is_none_or(|down| up > down)
                    })
            })
    }

    /// Waits until no other start probes `service`; the turn lasts while the guard lives.
    pub async fn turn(&self, service: Service) -> tokio::sync::OwnedMutexGuard<()> {
        let turn = {
            let mut turns = self.turns.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            match turns.iter().find(|(s, _)| *s == service) {
                Some((_, turn)) => turn.clone(),
                None => {
                    let turn = Arc::new(tokio::sync::Mutex::new(()));
                    turns.push((service, turn.clone()));
                    turn
                }
            }
        };
        turn.lock_owned().await
    }

    /// What the latest-started probe of `service` found, if it ended at or after `since`: an
    /// answer as fresh as the one a start that began waiting at `since` would get by asking.
    pub fn answered_since(&self, service: Service, since: Instant) -> Option<Result<(), String>> {
        self.latest(service)
            .filter(|answer| answer.ended >= since)
            .map(|answer| answer.found)
    }

    /// What the latest-started probe of `service` found, if it started at or after `since`: the
    /// service as it is since then. (A probe already under way at `since` may have had its answer
    /// before: it found a server up that stopped a moment later, when a run on it failed.)
    pub fn started_since(&self, service: Service, since: Instant) -> Option<Result<(), String>> {
        self.latest(service)
            .filter(|answer| answer.started >= since)
            .map(|answer| answer.found)
    }

    /// What the latest-started probe of `service` found, however long ago.
    pub fn last_found(&self, service: Service) -> Option<Result<(), String>> {
        self.latest(service).map(|answer| answer.found)
    }

    fn latest(&self, service: Service) -> Option<Answer> {
        self.seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .iter()
            .find(|seen| seen.service == service)
            .and_then(|seen| seen.answered.clone())
    }

    /// What a probe of `service` started at `at` found (it ends now): up, or down and why.
    pub fn answer(&self, service: Service, at: Instant, found: Result<(), String>) {
        let mut seen = self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let seen = stamp(&mut seen, service, found.is_ok(), at);
        // A probe that started before the one that answered last says less than it did.
        if seen.answered.as_ref().is_none_or(|last| last.started <= at) {
            seen.answered = Some(Answer {
                started: at,
                ended: Instant::now(),
                found,
            });
        }
    }

    /// What a probe of `service` started at `at` found, without why.
    pub fn record(&self, service: Service, up: bool, at: Instant) {
        let mut seen = self.seen.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        stamp(&mut seen, service, up, at);
    }
}

/// Stamps `service` up or down as of a probe started at `at`; returns its entry.
fn stamp(seen: &mut Vec<Seen>, service: Service, up: bool, at: Instant) -> &mut Seen {
    let index = match seen.iter().position(|s| s.service == service) {
        Some(index) => index,
        None => {
            seen.push(Seen {
                service,
                up_at: None,
                down_at: None,
                answered: None,
            });
            seen.len() - 1
        }
    };
    let entry = &mut seen[index];
    let stamp = if up { &mut entry.up_at } else { &mut entry.down_at };
    *stamp = Some(stamp.map_or(at, |earlier| earlier.max(at)));
    entry
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
        let ms = Duration::from_millis;
        assert!(!probes.recently_up(Service::Redis, t0), "never asked: ask");
        probes.record(Service::Redis, true, t0);
        assert!(probes.recently_up(Service::Redis, t0 + FRESH / 2));
        assert!(
            !probes.recently_up(Service::Postgres, t0),
            "one service says nothing of another"
        );
        assert!(!probes.recently_up(Service::Redis, t0 + FRESH), "stale: ask again");
        probes.record(Service::Redis, false, t0 + ms(1));
        assert!(!probes.recently_up(Service::Redis, t0 + ms(2)));
        // A slow probe that started before the one that found it down ends later, saying up:
        // it does not count.
        probes.record(Service::Redis, true, t0);
        assert!(!probes.recently_up(Service::Redis, t0 + ms(3)));
        // One started after it does.
        probes.record(Service::Redis, true, t0 + ms(4));
        assert!(probes.recently_up(Service::Redis, t0 + ms(5)));
    }

    #[tokio::test]
    async fn a_start_that_waited_for_its_turn_takes_the_answer_given_meanwhile() {
        let probes = Probes::default();
        let turn = probes.turn(Service::Postgres).await;
        let waiting_since = Instant::now();
        assert_eq!(
            probes.answered_since(Service::Postgres, waiting_since),
            None,
            "nothing yet"
        );
        // Another service's turn is its own.
        drop(probes.turn(Service::Redis).await);
        // The probe whose turn it is ends, finding PostgreSQL up (it started long ago).
        let first = waiting_since - 10 * FRESH;
        probes.answer(Service::Postgres, first, Ok(()));
        drop(turn);
        let _mine = probes.turn(Service::Postgres).await;
        assert_eq!(probes.answered_since(Service::Postgres, waiting_since), Some(Ok(())));
        assert_eq!(probes.answered_since(Service::Redis, waiting_since), None);
        // An answer that ended before a start began waiting is not its.
        let later = Instant::now() + Duration::from_millis(1);
        assert_eq!(probes.answered_since(Service::Postgres, later), None);
        // A down answer is shared too, with why: a hung service costs one timeout, not one each.
        let second = Instant::now();
        probes.answer(Service::Postgres, second, Err("no answer in time".into()));
        assert_eq!(
            probes.answered_since(Service::Postgres, waiting_since),
            Some(Err("no answer in time".into()))
        );
        // A slow probe that started before that one, ending now saying up, does not replace it.
        probes.answer(Service::Postgres, first, Ok(()));
        assert_eq!(
            probes.answered_since(Service::Postgres, waiting_since),
            Some(Err("no answer in time".into()))
        );
        assert!(!probes.recently_up(Service::Postgres, Instant::now()));
    }

    #[test]
    fn a_probe_under_way_when_asked_is_shared_but_says_nothing_of_the_service_since() {
        let probes = Probes::default();
        // A probe starts, then a run fails, then the probe ends (now): it found the server up.
        let started = Instant::now() - Duration::from_millis(20);
        let failed = started + Duration::from_millis(10);
        probes.answer(Service::Postgres, started, Ok(()));
        assert_eq!(
            probes.answered_since(Service::Postgres, failed),
            Some(Ok(())),
            "a start shares it"
        );
        assert_eq!(
            probes.started_since(Service::Postgres, failed),
            None,
            "the failed run asks again"
        );
        // The probe the failed run makes is its answer.
        probes.answer(Service::Postgres, failed, Err("refused".into()));
        assert_eq!(
            probes.started_since(Service::Postgres, failed),
            Some(Err("refused".into()))
        );
    }
}
