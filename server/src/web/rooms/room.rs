//! One room: its trainer token, its feed, who follows it, and the task that plays its runs.
//!
//! The run belongs to the room's task, not to a socket: the trainer may reload the page or lose
//! the connection and the run goes on, and every follower, the trainer's page too, reads the
//! same feed.

use super::feed::Feed;
use crate::engine::{Engine, RunHandle};
use crate::web::ws::{cancel_run, error, start_refusal, step_run};
use shared::{ErrorCode, Mode, ServerMsg};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

/// What the trainer asks of the room's run.
#[derive(Debug)]
pub enum Order {
    Start {
        scenario: String,
        variant: String,
        mode: Mode,
    },
    Next,
    Cancel,
}

struct Command {
    order: Order,
    /// The error to tell the trainer, if the order was refused.
    reply: oneshot::Sender<Option<ServerMsg>>,
}

pub struct Room {
    pub id: String,
    token: String,
    /// The address that opened the room, for the cap on rooms per trainer.
    pub trainer: Option<IpAddr>,
    pub feed: Feed,
    participants: watch::Sender<usize>,
    commands: mpsc::UnboundedSender<Command>,
    last_active: Mutex<Instant>,
}

impl Room {
    /// A room and the receiving end of its orders, for [`drive`].
    pub(super) fn new(id: String, token: String, trainer: Option<IpAddr>) -> (Arc<Room>, Orders) {
        let (commands, orders) = mpsc::unbounded_channel();
        let room = Room {
            id,
            token,
            trainer,
            feed: Feed::new(),
            participants: watch::Sender::new(0),
            commands,
            last_active: Mutex::new(Instant::now()),
        };
        (Arc::new(room), Orders(orders))
    }

    /// Whether `token` is this room's trainer token (compared in constant time, so its bytes
    /// cannot be guessed one by one from how long a refusal takes).
    pub fn is_trainer(&self, token: Option<&str>) -> bool {
        let Some(token) = token else { return false };
        token.len() == self.token.len()
            && token
                .bytes()
                .zip(self.token.bytes())
                .fold(0u8, |differ, (a, b)| differ | (a ^ b))
                == 0
    }

    /// Hands the trainer's order to the room's task; the answer is the error to tell the
    /// trainer, if it was refused.
    pub async fn order(&self, order: Order) -> Option<ServerMsg> {
        let (reply, answer) = oneshot::channel();
        if self.commands.send(Command { order, reply }).is_err() {
            return Some(closed(&self.id));
        }
        answer.await.unwrap_or_else(|_| Some(closed(&self.id)))
    }

    /// Counts a participant in, unless the room is full; the count goes down when the
    /// [`Presence`] is dropped.
    pub fn admit(self: &Arc<Self>, limit: usize) -> Option<Presence> {
        let mut admitted = false;
        self.participants.send_if_modified(|count| {
            admitted = *count < limit;
            if admitted {
                *count += 1;
            }
            admitted
        });
        self.touch();
        admitted.then(|| Presence(self.clone()))
    }

    /// The number of participants, now and whenever it changes.
    pub fn participants(&self) -> watch::Receiver<usize> {
        self.participants.subscribe()
    }

    /// The `room` frame: which room, and how many follow it.
    pub fn status(&self) -> ServerMsg {
        ServerMsg::Room {
            room: self.id.clone(),
            participants: *self.participants.borrow(),
        }
    }

    fn touch(&self) {
        *self.last_active.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    fn idle_since(&self) -> Instant {
        *self.last_active.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The error a follower or trainer gets once the room is gone.
pub fn closed(id: &str) -> ServerMsg {
    error(ErrorCode::UnknownRoom, &closed_message(id))
}

pub fn closed_message(id: &str) -> String {
    format!("room {id} has closed; the trainer can open a new one")
}

/// A participant's place in a room, given back when dropped (the page closed or left).
pub struct Presence(Arc<Room>);

impl Drop for Presence {
    fn drop(&mut self) {
        self.0
            .participants
            .send_modify(|count| *count = count.saturating_sub(1));
    }
}

/// The trainer's orders, as the room's task receives them.
pub(super) struct Orders(mpsc::UnboundedReceiver<Command>);

/// The room's task: plays the trainer's runs through the engine and publishes every frame to the
/// feed, until the room has had no order, no join and no run for `idle`. Its caller then closes
/// the room. (A run is never going when it returns: the room idles only without one.)
pub(super) async fn drive(room: Arc<Room>, Orders(mut orders): Orders, engine: Arc<Engine>, idle: Duration) {
    let mut run: Option<RunHandle> = None;
    loop {
        let idle_until = room.idle_since() + idle;
        tokio::select! {
            command = orders.recv() => {
                let Some(Command { order, reply }) = command else { break };
                room.touch();
                let refusal = obey(order, &mut run, &room, &engine).await;
                let _ = reply.send(refusal);
            }
            update = next_update(&mut run) => {
                room.touch();
                match update {
                    Some(update) => {
                        let finished = matches!(update, ServerMsg::Done { .. });
                        room.feed.publish(update);
                        if finished {
                            run = None;
                        }
                    }
                    // The room reads every update as it comes, so it never falls behind; a
                    // stream that ends without `done` ended with the engine.
                    None => run = None,
                }
            }
            () = tokio::time::sleep_until(idle_until), if run.is_none() => {
                if room.idle_since() + idle <= Instant::now() {
                    break;
                }
            }
        }
    }
    tracing::info!(room = %room.id, "room closed after idling");
}

async fn obey(order: Order, run: &mut Option<RunHandle>, room: &Room, engine: &Arc<Engine>) -> Option<ServerMsg> {
    match order {
        Order::Start {
            scenario,
            variant,
            mode,
        } => {
            if run.is_some() {
                return Some(error(
                    ErrorCode::Busy,
                    "the room's run is still going; cancel it or wait for done",
                ));
            }
            let def = match crate::web::ws::scenario_named(&scenario) {
                Ok(def) => def,
                Err(refusal) => return Some(refusal.into()),
            };
            match engine.start(def, &variant, mode).await {
                Ok(handle) => {
                    room.feed.begin_run();
                    *run = Some(handle);
                    None
                }
                Err(refused) => Some(start_refusal(&refused)),
            }
        }
        Order::Next => step_run(run.as_ref()),
        Order::Cancel => cancel_run(run.as_ref()),
    }
}

async fn next_update(run: &mut Option<RunHandle>) -> Option<ServerMsg> {
    match run {
        Some(handle) => handle.updates.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_drives_the_room() {
        let (room, _orders) = Room::new("K7QX2M".into(), "s3cret-token".into(), None);
        assert!(room.is_trainer(Some("s3cret-token")));
        for wrong in [
            None,
            Some(""),
            Some("s3cret-toke"),
            Some("s3cret-tokem"),
            Some("s3cret-token2"),
        ] {
            assert!(!room.is_trainer(wrong), "{wrong:?}");
        }
    }

    #[test]
    fn a_full_room_admits_nobody_until_someone_leaves() {
        let (room, _orders) = Room::new("K7QX2M".into(), "t".into(), None);
        let first = room.admit(2).expect("room for one");
        let _second = room.admit(2).expect("room for two");
        assert!(room.admit(2).is_none(), "full");
        assert!(matches!(room.status(), ServerMsg::Room { participants: 2, .. }));
        drop(first);
        assert!(room.admit(2).is_some(), "a place freed");
    }
}
