//! Rooms across replicas: behind one load balancer, a room's participants may reach different
//! racelab processes. The room's frames, counts and question travel through Redis (the one
//! racelab already uses), so a page on any replica follows the same run, in order, with no gap.
//!
//! The replica where the room opened *holds* it: its task plays the runs ([`super::room::drive`]).
//! In Redis, while the room is open:
//! - `racelab:room:<id>`: which replica holds the room and the SHA-256 of its trainer token, so
//!   any replica finds the room and checks a token;
//! - `racelab:room:<id>:log`: the current run's frames, numbered as the holder numbers them;
//! - channel `racelab:room:<id>:feed`, from the holder: each new run, frame, status (participants,
//!   question), live tally, answer to a forwarded order, and the close;
//! - channel `racelab:room:<id>:holder`, to the holder: each replica's count of pages, their
//!   predictions, and the trainer's orders from a page that reached another replica.
//!
//! Another replica with pages in the room keeps a *mirror* of it ([`Room::mirror`]). A mirror
//! subscribes to the feed before it reads the log, so no frame falls between the two; the
//! frame numbers drop the ones it hears twice ([`super::feed::Feed::relay`]). Keys live 30 s
//! unless the holder renews them (every 10 s), and are removed when the room closes.
//!
//! Without Redis (down when the room opens), a room works within its process: its participants
//! must reach the replica that holds it, and the catalog says so.

use super::feed::Tapped;
use super::lock;
use super::room::{Here, Order, Room};
use futures_util::StreamExt as _;
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};
use shared::{Mode, ServerMsg};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// How often a mirror tells the holder its pages (and checks the room is still open), and the
/// holder renews its keys. A replica not heard from for three of these is forgotten.
const HEARTBEAT: Duration = Duration::from_secs(10);

/// How long a room's keys outlive its holder's last renewal: a holder that dies without a word
/// leaves nothing behind for long, and the mirrors learn the room is gone at their next
/// heartbeat after that. (Its idle limit is the holder's to keep, not Redis's.)
const KEY_TTL: Duration = Duration::from_secs(HEARTBEAT.as_secs() * 3);

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// How long a mirror nobody follows stays subscribed: a page that reloads finds it still there.
const LINGER: Duration = Duration::from_secs(30);

/// Redis names of room `id`.
mod names {
    pub fn room(id: &str) -> String {
        format!("racelab:room:{id}")
    }
    pub fn log(id: &str) -> String {
        format!("racelab:room:{id}:log")
    }
    pub fn feed(id: &str) -> String {
        format!("racelab:room:{id}:feed")
    }
    pub fn holder(id: &str) -> String {
        format!("racelab:room:{id}:holder")
    }
}

/// What `racelab:room:<id>` holds.
#[derive(Debug, Deserialize)]
struct Claim {
    holder: String,
    /// The trainer token's SHA-256, in hex.
    token: String,
}

/// From the holder to every mirror.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "note", rename_all = "snake_case")]
pub enum FromHolder {
    Begin {
        first: u64,
    },
    Frame {
        number: u64,
        frame: String,
    },
    Status {
        participants: usize,
        asked: Option<(String, String)>,
    },
    Tally {
        counts: Vec<(String, usize)>,
    },
    /// What pages are shown of the lesson the room runs.
    Lesson {
        live: Option<Box<shared::lesson::live::Live>>,
    },
    /// The holder's answer to order `number` of `replica`: the refusal, if it was refused.
    Answer {
        replica: String,
        number: u64,
        refusal: Option<Box<ServerMsg>>,
    },
    Closed,
}

/// From a mirror to the holder.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "note", rename_all = "snake_case")]
pub enum ToHolder {
    /// The pages following the room on `replica` now.
    Here { replica: String, here: Here },
    /// Page `who` (`replica/place`) picks `choice`.
    Predict { who: String, choice: String },
    /// A trainer's order from a page on `replica`; answered by number.
    Order {
        replica: String,
        number: u64,
        order: Forwarded,
    },
}

/// A trainer's order as it travels to the holder.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "order", rename_all = "snake_case")]
pub enum Forwarded {
    Start {
        scenario: String,
        variant: String,
        mode: Mode,
        /// Absent from a replica that predates versions in rooms: the first server's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        postgres: Option<u32>,
    },
    Next,
    Cancel,
    Ask {
        scenario: String,
        variant: String,
    },
    Round {
        number: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        variant: Option<String>,
    },
    /// A recording round, with the file the trainer's page sent (read by the holder).
    Recording {
        number: usize,
        recording: String,
    },
    /// A participant's handle and the hash of their seat's secret, in hex (the secret stays on
    /// the replica the page reached).
    Seat {
        handle: String,
        seat: String,
    },
    Leaderboard {
        shown: bool,
    },
    Close,
}

impl From<Order> for Forwarded {
    /// A start's place in its trainer's count stays on the replica that admitted it.
    fn from(order: Order) -> Forwarded {
        match order {
            Order::Start {
                scenario,
                variant,
                mode,
                postgres,
                slot: _,
            } => Forwarded::Start {
                scenario,
                variant,
                mode,
                postgres,
            },
            Order::Next => Forwarded::Next,
            Order::Cancel => Forwarded::Cancel,
            Order::Ask { scenario, variant } => Forwarded::Ask { scenario, variant },
            Order::Round { number, variant } => Forwarded::Round { number, variant },
            Order::Recording { number, recording } => Forwarded::Recording {
                number,
                recording: recording.to_string(),
            },
            Order::Seat { handle, seat } => Forwarded::Seat {
                handle,
                seat: hex(&seat),
            },
            Order::Leaderboard { shown } => Forwarded::Leaderboard { shown },
            Order::Close => Forwarded::Close,
        }
    }
}

impl From<Forwarded> for Order {
    fn from(order: Forwarded) -> Order {
        match order {
            Forwarded::Start {
                scenario,
                variant,
                mode,
                postgres,
            } => Order::Start {
                scenario,
                variant,
                mode,
                postgres,
                slot: None,
            },
            Forwarded::Next => Order::Next,
            Forwarded::Cancel => Order::Cancel,
            Forwarded::Ask { scenario, variant } => Order::Ask { scenario, variant },
            Forwarded::Round { number, variant } => Order::Round { number, variant },
            Forwarded::Recording { number, recording } => Order::Recording {
                number,
                recording: recording.into(),
            },
            // A seat that does not read as a hash cannot be anyone's: it takes no handle back.
            Forwarded::Seat { handle, seat } => Order::Seat {
                handle,
                seat: unhex(&seat).unwrap_or_default(),
            },
            Forwarded::Leaderboard { shown } => Order::Leaderboard { shown },
            Forwarded::Close => Order::Close,
        }
    }
}

/// The rooms' link to the other replicas.
pub struct Bus {
    client: redis::Client,
    /// This process's name among the replicas (random, new at every start).
    pub replica: String,
    conn: tokio::sync::Mutex<Option<MultiplexedConnection>>,
    /// Raised when the server stops: mirrors end their followers' feeds.
    stopping: watch::Sender<bool>,
    /// Holder and mirror tasks running, so a stopping server waits for their last words.
    tasks: watch::Sender<usize>,
}

/// One running task, counted while it lives.
struct Counted(watch::Sender<usize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 32]> {
    let mut bytes = [0u8; 32];
    if text.len() != 64 {
        return None;
    }
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(bytes)
}

/// What a room held elsewhere is, as Redis tells it.
pub struct Found {
    pub holder: String,
    pub token: [u8; 32],
}

impl Bus {
    pub fn new(client: redis::Client) -> Arc<Bus> {
        Arc::new(Bus {
            client,
            replica: format!("{:016x}", rand::random::<u64>()),
            conn: tokio::sync::Mutex::new(None),
            stopping: watch::Sender::new(false),
            tasks: watch::Sender::new(0),
        })
    }

    /// A connection for commands (one, shared; opened again after it broke).
    async fn conn(&self) -> redis::RedisResult<MultiplexedConnection> {
        let mut conn = self.conn.lock().await;
        if let Some(conn) = conn.as_ref() {
            return Ok(conn.clone());
        }
        let fresh = crate::sandbox::redis::connect(&self.client).await?;
        *conn = Some(fresh.clone());
        Ok(fresh)
    }

    /// Runs `command`; a broken connection is dropped so the next command opens a new one.
    async fn query<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> redis::RedisResult<T> {
        let mut conn = self.conn().await?;
        let result = command.query_async(&mut conn).await;
        if let Err(error) = &result
            && (error.is_io_error() || error.is_connection_dropped() || error.is_timeout())
        {
            *self.conn.lock().await = None;
        }
        result
    }

    async fn pipe(&self, pipe: &redis::Pipeline) -> redis::RedisResult<()> {
        let mut conn = self.conn().await?;
        let result = pipe.query_async::<()>(&mut conn).await;
        if let Err(error) = &result
            && (error.is_io_error() || error.is_connection_dropped() || error.is_timeout())
        {
            *self.conn.lock().await = None;
        }
        result
    }

    /// Claims code `id` for a room held here: `false` if another replica holds a room with that
    /// code (draw another), an error if Redis cannot be reached (the room stays in this process).
    pub async fn claim(&self, id: &str, token: [u8; 32]) -> redis::RedisResult<bool> {
        let claim = self.claim_of(token);
        let set: Option<String> = self
            .query(
                redis::cmd("SET")
                    .arg(names::room(id))
                    .arg(claim)
                    .arg("NX")
                    .arg("PX")
                    .arg(millis(KEY_TTL)),
            )
            .await?;
        Ok(set.is_some())
    }

    /// What `racelab:room:<id>` holds for a room held here with trainer token hash `token`.
    fn claim_of(&self, token: [u8; 32]) -> String {
        serde_json::json!({ "holder": self.replica, "token": hex(&token) }).to_string()
    }

    /// The room `id` another replica holds, if Redis knows one.
    pub async fn find(&self, id: &str) -> redis::RedisResult<Option<Found>> {
        let value: Option<String> = self.query(redis::cmd("GET").arg(names::room(id))).await?;
        let Some(claim) = value.and_then(|v| serde_json::from_str::<Claim>(&v).ok()) else {
            return Ok(None);
        };
        Ok(unhex(&claim.token).map(|token| Found {
            holder: claim.holder,
            token,
        }))
    }

    /// Publishes `note` on `channel`.
    async fn publish(&self, channel: &str, note: &impl Serialize) {
        let Ok(text) = serde_json::to_string(note) else { return };
        if let Err(error) = self.query::<i64>(redis::cmd("PUBLISH").arg(channel).arg(text)).await {
            tracing::warn!(%error, channel, "could not publish a room's note to Redis");
        }
    }

    /// Counts a task in; the returned guard counts it out.
    fn counted(&self) -> Counted {
        self.tasks.send_modify(|n| *n += 1);
        Counted(self.tasks.clone())
    }

    /// The server is stopping: mirrors end their feeds; then waits (at most `within`) for every
    /// holder to have said its room closed and removed its keys, and every mirror to have left.
    pub async fn stop(&self, within: Duration) {
        self.stopping.send_replace(true);
        let mut tasks = self.tasks.subscribe();
        let _ = tokio::time::timeout(within, tasks.wait_for(|n| *n == 0)).await;
    }

    /// Subscribes to `channel` on a connection of its own.
    async fn subscribe(&self, channel: &str) -> redis::RedisResult<redis::aio::PubSub> {
        let mut pubsub = self.client.get_async_pubsub().await?;
        pubsub.subscribe(channel).await?;
        Ok(pubsub)
    }

    /// The holder's side of room `room`, claimed in Redis: carries its feed (`tapped`), status and
    /// tally to the mirrors, and their pages, picks and orders to the room, until the room's feed
    /// closes; then says so and removes the room's keys.
    pub async fn hold(self: Arc<Self>, room: Arc<Room>, mut tapped: mpsc::UnboundedReceiver<Tapped>) {
        let _counted = self.counted();
        let (feed, log) = (names::feed(&room.id), names::log(&room.id));
        let mut inbox = match self.subscribe(&names::holder(&room.id)).await {
            Ok(pubsub) => Some(pubsub.into_on_message()),
            Err(error) => {
                tracing::warn!(%error, room = %room.id, "the room cannot hear other replicas");
                None
            }
        };
        let (mut participants, mut asked, mut tally) = (room.participants(), room.asked(), room.tally());
        let mut live = room.live();
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        loop {
            tokio::select! {
                // The feed first: frames go out in the order they were published.
                biased;
                tapped = tapped.recv() => match tapped {
                    Some(Tapped::Begin { first }) => {
                        let note = FromHolder::Begin { first };
                        self.log_and_publish(&log, &feed, &note, true).await;
                    }
                    Some(Tapped::Frame(numbered)) => {
                        let note = FromHolder::Frame { number: numbered.number, frame: numbered.frame.to_string() };
                        self.log_and_publish(&log, &feed, &note, false).await;
                    }
                    None => break,
                },
                Some(message) = next_message(&mut inbox) => self.heard(&room, &feed, &message).await,
                Ok(()) = participants.changed() => self.publish(&feed, &status(&room)).await,
                Ok(()) = asked.changed() => self.publish(&feed, &status(&room)).await,
                Ok(()) = tally.changed() => {
                    let counts = tally.borrow_and_update().clone();
                    self.publish(&feed, &FromHolder::Tally { counts }).await;
                }
                Ok(()) = live.changed() => {
                    let live = live.borrow_and_update().clone().map(Box::new);
                    self.publish(&feed, &FromHolder::Lesson { live }).await;
                }
                _ = heartbeat.tick() => {
                    room.forget_silent(Instant::now() - 3 * HEARTBEAT);
                    // Set again, not only renewed: after Redis lost it (restarted, or unreachable
                    // for longer than the keys live) the room is findable again.
                    let renew = redis::pipe()
                        .cmd("SET").arg(names::room(&room.id)).arg(self.claim_of(room.token())).arg("PX").arg(millis(KEY_TTL)).ignore()
                        .cmd("PEXPIRE").arg(&log).arg(millis(KEY_TTL)).ignore()
                        .clone();
                    if let Err(error) = self.pipe(&renew).await {
                        tracing::warn!(%error, room = %room.id, "could not renew the room's keys in Redis");
                    }
                }
            }
        }
        self.publish(&feed, &FromHolder::Closed).await;
        let removed = self
            .query::<i64>(redis::cmd("DEL").arg(names::room(&room.id)).arg(&log))
            .await;
        if let Err(error) = removed {
            tracing::warn!(%error, room = %room.id, "could not remove the room's keys from Redis (they expire)");
        }
    }

    /// Keeps `note` in the log (a new run empties it first) and publishes it, in one step.
    async fn log_and_publish(&self, log: &str, feed: &str, note: &FromHolder, new_run: bool) {
        let Ok(text) = serde_json::to_string(note) else { return };
        let mut pipe = redis::pipe();
        pipe.atomic();
        if new_run {
            pipe.cmd("DEL").arg(log).ignore();
        } else {
            pipe.cmd("RPUSH").arg(log).arg(&text).ignore();
            pipe.cmd("PEXPIRE").arg(log).arg(millis(KEY_TTL)).ignore();
        }
        pipe.cmd("PUBLISH").arg(feed).arg(&text).ignore();
        if let Err(error) = self.pipe(&pipe).await {
            tracing::warn!(%error, "could not send a room's frame to Redis");
        }
    }

    /// The holder hears a note from a mirror.
    async fn heard(self: &Arc<Self>, room: &Arc<Room>, feed: &str, message: &redis::Msg) {
        let Some(note) = message
            .get_payload::<String>()
            .ok()
            .and_then(|text| serde_json::from_str::<ToHolder>(&text).ok())
        else {
            tracing::warn!(room = %room.id, "a note the room cannot read");
            return;
        };
        match note {
            ToHolder::Here { replica, here } => {
                room.elsewhere(&replica, here);
                // A new mirror learns the room's status, tally and lesson from this answer.
                self.publish(feed, &status(room)).await;
                let counts = room.tally().borrow().clone();
                self.publish(feed, &FromHolder::Tally { counts }).await;
                let live = room.live().borrow().clone().map(Box::new);
                if live.is_some() {
                    self.publish(feed, &FromHolder::Lesson { live }).await;
                }
            }
            ToHolder::Predict { who, choice } => {
                if let Err(refused) = room.pick(who, &choice) {
                    tracing::debug!(room = %room.id, why = refused.message, "a pick from another replica refused");
                }
            }
            ToHolder::Order { replica, number, order } => {
                // An order may wait for the engine (a start): the feed goes on meanwhile.
                let (bus, room, feed) = (self.clone(), room.clone(), feed.to_owned());
                tokio::spawn(async move {
                    let refusal = room.order(order.into()).await;
                    let answer = FromHolder::Answer {
                        replica,
                        number,
                        refusal: refusal.map(Box::new),
                    };
                    bus.publish(&feed, &answer).await;
                });
            }
        }
    }

    /// A mirror of room `id` held by another replica, if Redis knows the room: registered in
    /// `mirrors` and fed by a task of its own until no page here has followed it for a while,
    /// the room closes, Redis is lost, or the server stops.
    pub async fn mirror(
        self: &Arc<Self>,
        id: &str,
        mirrors: &Arc<Mutex<HashMap<String, Arc<Room>>>>,
        live_buffer: usize,
    ) -> Option<Arc<Room>> {
        let found = match self.find(id).await {
            Ok(found) => found?,
            Err(error) => {
                tracing::warn!(%error, room = id, "could not look the room up in Redis");
                return None;
            }
        };
        if found.holder == self.replica {
            // Ours, but no longer open here: its keys are on their way out.
            return None;
        }
        let mut open = lock(mirrors);
        if let Some(room) = open.get(id) {
            return Some(room.clone());
        }
        let (room, outbox) = Room::mirror(id.to_owned(), found.token, self.replica.clone(), live_buffer);
        open.insert(id.to_owned(), room.clone());
        drop(open);
        let (bus, mirrors, mirrored) = (self.clone(), mirrors.clone(), room.clone());
        tokio::spawn(async move {
            let _counted = bus.counted();
            let why = bus.follow(&mirrored, outbox, &mirrors).await;
            tracing::info!(room = %mirrored.id, why, "a mirror of a room ends");
            {
                let mut open = lock(&mirrors);
                if open.get(&mirrored.id).is_some_and(|r| Arc::ptr_eq(r, &mirrored)) {
                    open.remove(&mirrored.id);
                }
            }
            mirrored.feed.close();
            let gone = ToHolder::Here {
                replica: bus.replica.clone(),
                here: Here::default(),
            };
            bus.publish(&names::holder(&mirrored.id), &gone).await;
        });
        Some(room)
    }

    /// Feeds mirror `room` from the holder and tells the holder about this replica's pages,
    /// until it should end; returns why.
    async fn follow(
        &self,
        room: &Arc<Room>,
        mut outbox: mpsc::UnboundedReceiver<ToHolder>,
        mirrors: &Mutex<HashMap<String, Arc<Room>>>,
    ) -> &'static str {
        let id = room.id.clone();
        // Subscribed before the log is read: a frame published between the two comes twice,
        // never not at all.
        let mut messages = match self.subscribe(&names::feed(&id)).await {
            Ok(pubsub) => pubsub.into_on_message(),
            Err(_) => return "Redis could not be reached",
        };
        let log: Vec<String> = match self
            .query(redis::cmd("LRANGE").arg(names::log(&id)).arg(0).arg(-1))
            .await
        {
            Ok(log) => log,
            Err(_) => return "Redis could not be reached",
        };
        for note in log {
            if let Ok(note) = serde_json::from_str::<FromHolder>(&note) {
                self.apply(room, note);
            }
        }
        let holder = names::holder(&id);
        let mut here = room.here();
        let mut stopping = self.stopping.subscribe();
        let mut heartbeat = tokio::time::interval(HEARTBEAT);
        let mut unwatched_since = Instant::now();
        loop {
            let unwatched = here.borrow().watchers == 0;
            tokio::select! {
                message = messages.next() => {
                    let Some(message) = message else { return "the connection to Redis was lost" };
                    let note = message.get_payload::<String>().ok().and_then(|t| serde_json::from_str::<FromHolder>(&t).ok());
                    match note {
                        Some(FromHolder::Closed) => return "the room closed",
                        Some(note) => self.apply(room, note),
                        None => tracing::warn!(room = %id, "a note the mirror cannot read"),
                    }
                }
                Some(note) = outbox.recv() => self.publish(&holder, &note).await,
                changed = here.changed() => {
                    if changed.is_err() {
                        return "the room went";
                    }
                    let now = *here.borrow_and_update();
                    if now.watchers == 0 {
                        unwatched_since = Instant::now();
                    }
                    self.publish(&holder, &ToHolder::Here { replica: self.replica.clone(), here: now }).await;
                }
                _ = heartbeat.tick() => {
                    let now = *here.borrow();
                    self.publish(&holder, &ToHolder::Here { replica: self.replica.clone(), here: now }).await;
                    if let Ok(None) = self.find(&id).await {
                        return "the room is gone from Redis (its replica stopped)";
                    }
                }
                () = tokio::time::sleep_until(unwatched_since + LINGER), if unwatched => {
                    // Under the registry's lock: a page that finds this mirror from now on finds
                    // it gone, and one that found it before is counted in `here`.
                    let open = lock(mirrors);
                    if here.borrow().watchers == 0 {
                        drop(open);
                        return "no page here follows it";
                    }
                }
                () = async { let _ = stopping.wait_for(|stopping| *stopping).await; } => return "the server is stopping",
            }
        }
    }

    /// A mirror takes a note from the holder.
    fn apply(&self, room: &Room, note: FromHolder) {
        match note {
            FromHolder::Begin { first } => room.feed.begin_at(first),
            FromHolder::Frame { number, frame } => room.feed.relay(number, frame.into()),
            FromHolder::Status { participants, asked } => room.mirror_status(participants, asked),
            FromHolder::Tally { counts } => room.mirror_tally(counts),
            FromHolder::Lesson { live } => room.mirror_live(live.map(|live| *live)),
            FromHolder::Answer {
                replica,
                number,
                refusal,
            } => {
                if replica == self.replica {
                    room.answered(number, refusal.map(|refusal| *refusal));
                }
            }
            FromHolder::Closed => {}
        }
    }
}

/// The room's status as the holder tells the mirrors.
fn status(room: &Room) -> FromHolder {
    FromHolder::Status {
        participants: *room.participants().borrow(),
        asked: room.asked().borrow().clone(),
    }
}

/// The next message heard on `inbox`; never, without one.
async fn next_message(inbox: &mut Option<redis::aio::PubSubStream>) -> Option<redis::Msg> {
    match inbox {
        Some(inbox) => inbox.next().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_hashes_travel_as_hex() {
        let token = super::super::room::token_hash("s3cret");
        assert_eq!(unhex(&hex(&token)), Some(token));
        assert_eq!(unhex("zz"), None);
        assert_eq!(unhex(&"g".repeat(64)), None);
    }

    /// Notes are JSON both ways, as another replica (of the same version) reads them.
    #[test]
    fn notes_read_back_as_written() {
        let note = ToHolder::Order {
            replica: "r1".into(),
            number: 7,
            order: Forwarded::Start {
                scenario: "isolation/write-skew".into(),
                variant: "serializable".into(),
                mode: Mode::Step,
                postgres: Some(18),
            },
        };
        let text = serde_json::to_string(&note).expect("JSON");
        assert!(
            text.contains(r#""note":"order""#) && text.contains(r#""order":"start""#),
            "{text}"
        );
        let back: ToHolder = serde_json::from_str(&text).expect("reads back");
        assert!(matches!(
            back,
            ToHolder::Order {
                number: 7,
                order: Forwarded::Start {
                    mode: Mode::Step,
                    postgres: Some(18),
                    ..
                },
                ..
            }
        ));
        // From a replica that sends no version: the first server's.
        let older = r#"{"note":"order","replica":"r1","number":8,"order":{"order":"start","scenario":"isolation/write-skew","variant":"serializable","mode":"auto"}}"#;
        let back: ToHolder = serde_json::from_str(older).expect("an older replica's start reads");
        assert!(matches!(
            back,
            ToHolder::Order {
                order: Forwarded::Start { postgres: None, .. },
                ..
            }
        ));
        let answer = FromHolder::Answer {
            replica: "r1".into(),
            number: 7,
            refusal: Some(Box::new(crate::control::error(shared::ErrorCode::Busy, "busy"))),
        };
        let text = serde_json::to_string(&answer).expect("JSON");
        let back: FromHolder = serde_json::from_str(&text).expect("reads back");
        let FromHolder::Answer {
            refusal: Some(refusal), ..
        } = back
        else {
            panic!("an answer with its refusal: {back:?}");
        };
        assert!(matches!(*refusal, ServerMsg::Error { .. }), "{refusal:?}");
    }
}
