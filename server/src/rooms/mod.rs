//! Rooms for team training: a trainer drives one run at a time and every participant's page
//! follows it live.
//!
//! A trainer opens a room (over HTTP, `crate::rooms`) and gets its short code and a secret
//! trainer token. On the websocket, `join` with the room follows it (its current run so far, then
//! live, see [`feed`]);
//! the trainer's `start`, `next` and `cancel` carry the room and the token and reach the room's
//! own task ([`room::drive`]), which plays the run through the engine like any other. Without
//! the token a socket only watches: participants cannot start, step or cancel anything.
//!
//! Limits, each configurable (docs/rooms.md): participants per room, rooms per trainer
//! address, how long a room may stay idle (no order, no join, no run) before it closes, and how
//! long a run may go on with nobody watching. A trainer's starts count against their address's
//! runs like any reader's.
//!
//! Behind a load balancer, participants may reach other replicas than their trainer: the room
//! travels through Redis to them (see [`bus`]). Without Redis, a room lives in its process.

pub mod bus;
pub mod feed;
pub mod follow;
pub mod lesson;
pub mod room;
pub mod tally;

use crate::config::Config;
use crate::engine::Engine;
use rand::Rng;
use room::Room;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Room codes: six characters a participant can read off a projector and type, without the ones
/// that look alike (0/O, 1/I/L).
const CODE_ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";
const CODE_LENGTH: usize = 6;

/// What a room may hold and how long it lives.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub participants: usize,
    pub per_trainer: usize,
    pub idle: Duration,
    /// How long a room's run may go on with no page following the room (a stepped run waits for
    /// a trainer who is gone) before it is cancelled.
    pub abandoned: Duration,
}

impl Limits {
    pub fn from_config(config: &Config) -> Limits {
        Limits {
            participants: config.room_participants,
            per_trainer: config.rooms_per_trainer,
            idle: Duration::from_secs(config.room_idle_secs),
            abandoned: Duration::from_secs(config.room_abandoned_secs),
        }
    }
}

/// Locks `mutex`. A panic while holding one of the rooms' locks cannot leave what it guards
/// half-changed (each change is one assignment, push or insert), so a poisoned lock is still good.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Every open room of this process, and the mirrors of rooms other replicas hold.
pub struct Rooms {
    open: Arc<Mutex<HashMap<String, Arc<Room>>>>,
    mirrors: Arc<Mutex<HashMap<String, Arc<Room>>>>,
    /// The link to other replicas, through Redis.
    bus: Arc<bus::Bus>,
    pub limits: Limits,
    engine: Arc<Engine>,
}

/// Why a room could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(
        "this address has {0} rooms open already; close one (rooms close after they idle) or ask for a higher RACELAB_ROOMS_PER_TRAINER."
    )]
    TooMany(usize),
}

impl Rooms {
    pub fn new(engine: Arc<Engine>, limits: Limits) -> Arc<Rooms> {
        let bus = bus::Bus::new(engine.services().redis.clone());
        Arc::new(Rooms {
            open: Arc::default(),
            mirrors: Arc::default(),
            bus,
            limits,
            engine,
        })
    }

    /// How many rooms this process holds open (not the mirrors of other replicas' rooms).
    pub fn open_here(&self) -> usize {
        self.open_rooms().len()
    }

    fn open_rooms(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Room>>> {
        lock(&self.open)
    }

    /// The server is stopping (its engine has drained): every room publishes the end of its run
    /// and closes, so its followers' pages (here and on other replicas) get that end and then
    /// close too; mirrors end their followers' feeds. Waits at most `within` for the last words
    /// to reach Redis.
    pub async fn close_all(&self, within: Duration) {
        for room in self.open_rooms().values() {
            room.close();
        }
        self.bus.stop(within).await;
    }

    /// The room with code `id`, if it is open here or on another replica (then a mirror of it).
    /// Codes are read case-insensitively.
    pub async fn find(&self, id: &str) -> Option<Arc<Room>> {
        let id = id.to_ascii_uppercase();
        if let Some(room) = self.open_rooms().get(&id) {
            return Some(room.clone());
        }
        if let Some(mirror) = lock(&self.mirrors).get(&id) {
            return Some(mirror.clone());
        }
        // A code that cannot be a room's is not looked up.
        if id.len() != CODE_LENGTH || !id.bytes().all(|c| CODE_ALPHABET.contains(&c)) {
            return None;
        }
        self.bus.mirror(&id, &self.mirrors, feed::LIVE_BUFFER).await
    }

    /// Whether room `id` is open here or on another replica: asked of Redis, without making a
    /// mirror (which only a page that follows the room needs).
    pub async fn is_open(&self, id: &str) -> bool {
        if self.open_rooms().contains_key(id) || lock(&self.mirrors).contains_key(id) {
            return true;
        }
        id.len() == CODE_LENGTH
            && id.bytes().all(|c| CODE_ALPHABET.contains(&c))
            && matches!(self.bus.find(id).await, Ok(Some(_)))
    }

    /// Refuses a trainer address that has as many rooms open as one may. (Two rooms opened by
    /// one address at the same instant may both pass: the cap is against forgetting rooms, not
    /// a fence.)
    fn refuse_past_cap(&self, trainer: Option<IpAddr>) -> Result<(), OpenError> {
        let Some(trainer) = trainer else { return Ok(()) };
        let theirs = self
            .open_rooms()
            .values()
            .filter(|room| room.trainer == Some(trainer))
            .count();
        if theirs >= self.limits.per_trainer {
            return Err(OpenError::TooMany(theirs));
        }
        Ok(())
    }

    /// Opens a room for `trainer` and starts its task; returns the room (its code is `id`) and
    /// the trainer token. The code is claimed in Redis, so no other replica holds the same one;
    /// if Redis cannot be reached, the room lives in this process only.
    /// A room opened with a lesson's `session` runs it round by round.
    pub async fn open(
        &self,
        trainer: Option<IpAddr>,
        session: Option<lesson::Session>,
    ) -> Result<(Arc<Room>, String), OpenError> {
        let token = secret();
        self.refuse_past_cap(trainer)?;
        let (id, shared) = loop {
            let id = code();
            if self.open_rooms().contains_key(&id) {
                continue;
            }
            match self.bus.claim(&id, room::token_hash(&token)).await {
                Ok(true) => break (id, true),
                Ok(false) => continue,
                Err(error) => {
                    tracing::warn!(%error, "Redis cannot be reached: the room lives in this process only");
                    break (id, false);
                }
            }
        };
        let (room, orders) = Room::new(id.clone(), token.clone(), trainer, feed::LIVE_BUFFER);
        if let Some(session) = session {
            room.run_lesson(session);
        }
        self.open_rooms().insert(id.clone(), room.clone());
        if shared {
            tokio::spawn(self.bus.clone().hold(room.clone(), room.feed.tap()));
        }
        let (registry, engine, limits) = (self.open.clone(), self.engine.clone(), self.limits);
        let driven = room.clone();
        tokio::spawn(async move {
            room::drive(driven.clone(), orders, engine, limits).await;
            // Gone from the registry first, so nobody joins a room whose feed has ended.
            lock(&registry).remove(&id);
            driven.feed.close();
        });
        Ok((room, token))
    }
}

/// A fresh room code.
fn code() -> String {
    let mut rng = rand::rng();
    (0..CODE_LENGTH)
        .map(|_| char::from(CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())]))
        .collect()
}

/// A trainer token (or a session's results id): 128 random bits, in hex.
pub fn secret() -> String {
    let bits: u128 = rand::rng().random();
    format!("{bits:032x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_six_unambiguous_characters_and_tokens_128_bits() {
        for _ in 0..1_000 {
            let code = code();
            assert_eq!(code.len(), CODE_LENGTH);
            assert!(code.bytes().all(|c| CODE_ALPHABET.contains(&c)), "{code}");
            assert!(!code.contains(['0', 'O', '1', 'I', 'L']), "{code}");
        }
        let (a, b) = (secret(), secret());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
