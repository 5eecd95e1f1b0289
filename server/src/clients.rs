//! Fairness between readers: how many runs one address may have going (playing or waiting in
//! line) and how many it may start a minute, so one tab in a loop, or one script, cannot take the
//! line from everyone else. The address is the peer's, or, behind a proxy racelab is told to
//! trust (`RACELAB_TRUSTED_PROXIES`), the last one that proxy put in `X-Forwarded-For`.

use axum::http::HeaderMap;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const MINUTE: Duration = Duration::from_secs(60);

/// The caps, from the configuration.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    /// Runs one address may have going at once.
    pub runs: usize,
    /// Runs one address may start in any 60 s.
    pub starts_per_minute: usize,
}

/// Why a start was refused.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    TooMany { limit: usize },
    TooFast { limit: usize, retry_after_s: u64 },
}

impl Refusal {
    pub fn message(&self) -> String {
        match self {
            Refusal::TooMany { limit } => format!(
                "this address already has {limit} run(s) going, the most one reader may; wait for one to finish"
            ),
            Refusal::TooFast { limit, retry_after_s } => format!(
                "this address started {limit} runs in the last minute, the most one reader may; try again in {retry_after_s} s"
            ),
        }
    }
}

#[derive(Default)]
struct Usage {
    going: usize,
    starts: VecDeque<Instant>,
}

/// Every address's runs going and recent starts.
pub struct Clients {
    caps: Caps,
    usage: Mutex<HashMap<IpAddr, Usage>>,
}

/// One run counted against its address until dropped.
pub struct Slot {
    clients: Arc<Clients>,
    ip: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut usage = self.clients.usage.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = usage.get_mut(&self.ip) {
            entry.going = entry.going.saturating_sub(1);
        }
    }
}

impl Clients {
    pub fn new(caps: Caps) -> Arc<Clients> {
        Arc::new(Clients {
            caps,
            usage: Mutex::new(HashMap::new()),
        })
    }

    /// Counts a start by `ip` at `now`, or says why it may not start.
    pub fn admit(self: &Arc<Self>, ip: IpAddr, now: Instant) -> Result<Slot, Refusal> {
        let mut usage = self.usage.lock().unwrap_or_else(|p| p.into_inner());
        // Forget addresses with nothing going and no start in the last minute.
        usage.retain(|_, u| u.going > 0 || u.starts.back().is_some_and(|t| now.duration_since(*t) < MINUTE));
        let entry = usage.entry(ip).or_default();
        while entry.starts.front().is_some_and(|t| now.duration_since(*t) >= MINUTE) {
            entry.starts.pop_front();
        }
        if entry.going >= self.caps.runs {
            return Err(Refusal::TooMany { limit: self.caps.runs });
        }
        if entry.starts.len() >= self.caps.starts_per_minute {
            let oldest = entry.starts.front().copied().unwrap_or(now);
            let wait = MINUTE.saturating_sub(now.duration_since(oldest));
            return Err(Refusal::TooFast {
                limit: self.caps.starts_per_minute,
                retry_after_s: wait.as_secs_f64().ceil().max(1.0) as u64,
            });
        }
        entry.going += 1;
        entry.starts.push_back(now);
        Ok(Slot {
            clients: self.clone(),
            ip,
        })
    }
}

/// The address of the reader behind a request, from the connect info `serve` gives handlers
/// (`None` when the router was served without it, as in some tests: then no caps apply).
pub fn reader_address(extensions: &axum::http::Extensions, headers: &HeaderMap, trusted: &[IpAddr]) -> Option<IpAddr> {
    let peer = extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|axum::extract::ConnectInfo(peer)| *peer);
    address(peer, headers, trusted)
}

/// The reader's address: the peer's, unless the peer is a trusted proxy that says whom it
/// forwards for (the last address in `X-Forwarded-For`, the one it saw itself).
pub fn address(peer: Option<SocketAddr>, headers: &HeaderMap, trusted: &[IpAddr]) -> Option<IpAddr> {
    let peer = peer?.ip();
    if !trusted.contains(&peer) {
        return Some(peer);
    }
    let forwarded = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|a| a.trim().parse::<IpAddr>().ok())
        .next_back();
    Some(forwarded.unwrap_or(peer))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn an_address_may_have_so_many_runs_going_and_a_finished_one_frees_its_place() {
        let clients = Clients::new(Caps {
            runs: 2,
            starts_per_minute: 100,
        });
        let now = Instant::now();
        let first = clients.admit(ip("10.0.0.1"), now).expect("first");
        let _second = clients.admit(ip("10.0.0.1"), now).expect("second");
        assert_eq!(
            clients.admit(ip("10.0.0.1"), now).err(),
            Some(Refusal::TooMany { limit: 2 })
        );
        assert!(
            clients.admit(ip("10.0.0.2"), now).is_ok(),
            "another reader is not held up"
        );
        drop(first);
        assert!(clients.admit(ip("10.0.0.1"), now).is_ok());
    }

    #[test]
    fn starts_per_minute_are_counted_over_the_last_sixty_seconds() {
        let clients = Clients::new(Caps {
            runs: 100,
            starts_per_minute: 2,
        });
        let start = Instant::now();
        drop(clients.admit(ip("10.0.0.1"), start));
        drop(clients.admit(ip("10.0.0.1"), start + Duration::from_secs(20)));
        assert_eq!(
            clients.admit(ip("10.0.0.1"), start + Duration::from_secs(30)).err(),
            Some(Refusal::TooFast {
                limit: 2,
                retry_after_s: 30
            })
        );
        assert!(clients.admit(ip("10.0.0.1"), start + Duration::from_secs(61)).is_ok());
    }

    #[test]
    fn only_a_trusted_proxy_names_the_reader() {
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", "203.0.113.9, 198.51.100.7".parse().expect("header"));
        let proxy: SocketAddr = "10.0.0.5:4000".parse().expect("addr");
        assert_eq!(
            address(Some(proxy), &headers, &[ip("10.0.0.5")]),
            Some(ip("198.51.100.7"))
        );
        assert_eq!(
            address(Some(proxy), &headers, &[]),
            Some(ip("10.0.0.5")),
            "an untrusted header is ignored"
        );
        assert_eq!(address(None, &headers, &[ip("10.0.0.5")]), None);
    }
}
