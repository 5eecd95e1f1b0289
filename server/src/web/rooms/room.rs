//! One room: its trainer token, its feed, who follows it, and the task that plays its runs.
//!
//! The run belongs to the room's task, not to a socket: the trainer may reload the page or lose
//! the connection and the run goes on, and every follower, the trainer's page too, reads the
//! same feed.

use super::feed::Feed;
use super::tally::Question;
use super::{Limits, lock};
use crate::engine::{Engine, RunHandle};
use crate::web::clients::Slot;
use crate::web::ws::{Refusal, cancel_run, error, next_update, start_refusal, step_run};
use shared::{ErrorCode, EventKind, Mode, Outcome, ServerMsg};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

/// What the trainer asks of the room's run (and the server, of the room).
pub enum Order {
    Start {
        scenario: String,
        variant: String,
        mode: Mode,
        /// The run's place in its trainer's per-address count, held as long as the run goes.
        slot: Option<Slot>,
    },
    Next,
    Cancel,
    /// The server is stopping: publish what is left of the run, then close.
    Close,
}

struct Command {
    order: Order,
    /// The error to tell the trainer, if the order was refused.
    reply: oneshot::Sender<Option<ServerMsg>>,
}

/// The room's run: its handle, and its place in the trainer's count of runs going.
struct Playing {
    handle: RunHandle,
    _slot: Option<Slot>,
    /// What it plays, to match it with the room's question when it reveals the answer.
    scenario: String,
    variant: String,
}

pub struct Room {
    pub id: String,
    token: String,
    /// The address that opened the room, for the cap on rooms per trainer.
    pub trainer: Option<IpAddr>,
    pub feed: Feed,
    participants: watch::Sender<usize>,
    /// Every page following the room, the trainer's too: a run nobody watches is abandoned.
    watchers: watch::Sender<usize>,
    commands: mpsc::UnboundedSender<Command>,
    last_active: Mutex<Instant>,
    /// The trainer's question and the picks for it (predict, then run).
    question: Mutex<Option<Question>>,
    /// The question's scenario and variant, whenever they change: followers resend `room`.
    asked: watch::Sender<Option<(String, String)>>,
    /// The counts, whenever they change: the trainer's page shows them live.
    tally: watch::Sender<Vec<(String, usize)>>,
    /// Numbers the pages that join, so a page's pick replaces its own last one.
    joined: AtomicU64,
}

impl Room {
    /// A room and the receiving end of its orders, for [`drive`].
    pub(super) fn new(id: String, token: String, trainer: Option<IpAddr>, live_buffer: usize) -> (Arc<Room>, Orders) {
        let (commands, orders) = mpsc::unbounded_channel();
        let room = Room {
            id,
            token,
            trainer,
            feed: Feed::with_buffer(live_buffer),
            participants: watch::Sender::new(0),
            watchers: watch::Sender::new(0),
            commands,
            last_active: Mutex::new(Instant::now()),
            question: Mutex::new(None),
            asked: watch::Sender::new(None),
            tally: watch::Sender::new(Vec::new()),
            joined: AtomicU64::new(0),
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

    /// Tells the room's task to close (the server is stopping); it first publishes what is left
    /// of its run.
    pub fn close(&self) {
        let (reply, _) = oneshot::channel();
        let _ = self.commands.send(Command {
            order: Order::Close,
            reply,
        });
    }

    /// Counts a page in as a watcher, and as a participant unless it is the trainer's; refuses a
    /// participant when the room already has `limit`. The counts go down when the [`Presence`]
    /// is dropped.
    pub fn admit(self: &Arc<Self>, trainer: bool, limit: usize) -> Option<Presence> {
        if !trainer {
            let mut admitted = false;
            self.participants.send_if_modified(|count| {
                admitted = *count < limit;
                if admitted {
                    *count += 1;
                }
                admitted
            });
            if !admitted {
                // A knock on a full room is not activity: it still closes when idle.
                return None;
            }
        }
        self.watchers.send_modify(|count| *count += 1);
        self.touch();
        Some(Presence {
            room: self.clone(),
            participant: !trainer,
            id: self.joined.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// The trainer asks the room to predict `scenario` at `variant`: a new question, no picks.
    pub fn ask(&self, scenario: &str, variant: &str) -> Result<(), Refusal> {
        let question = Question::ask(scenario, variant)?;
        let counts = question.counts();
        *lock(&self.question) = Some(question);
        self.touch();
        self.tally.send_replace(counts);
        self.asked.send_replace(Some((scenario.to_owned(), variant.to_owned())));
        Ok(())
    }

    /// The page `who` predicts `choice` for the room's question.
    pub fn predict(&self, who: u64, choice: &str) -> Result<(), Refusal> {
        let mut question = lock(&self.question);
        let question = question.as_mut().ok_or_else(|| Refusal {
            code: ErrorCode::BadFrame,
            message: "the trainer has asked nothing to predict yet".to_owned(),
        })?;
        question.pick(who, choice)?;
        self.tally.send_replace(question.counts());
        Ok(())
    }

    /// The question's scenario and variant, now and whenever they change.
    pub fn asked(&self) -> watch::Receiver<Option<(String, String)>> {
        self.asked.subscribe()
    }

    /// The counts, now and whenever they change.
    pub fn tally(&self) -> watch::Receiver<Vec<(String, usize)>> {
        self.tally.subscribe()
    }

    /// The run of `scenario` at `variant` revealed its answer: if it was the room's question,
    /// the question closes and its tally is for everyone.
    fn reveal(&self, scenario: &str, variant: &str) -> Option<ServerMsg> {
        let mut question = lock(&self.question);
        let question = question
            .as_mut()
            .filter(|q| q.scenario == scenario && q.variant == variant && !q.revealed)?;
        question.revealed = true;
        Some(ServerMsg::Tally {
            counts: question.counts(),
            revealed: true,
        })
    }

    /// The number of participants, now and whenever it changes.
    pub fn participants(&self) -> watch::Receiver<usize> {
        self.participants.subscribe()
    }

    /// The `room` frame: which room, how many follow it, and what it is asked to predict.
    pub fn status(&self) -> ServerMsg {
        ServerMsg::Room {
            room: self.id.clone(),
            participants: *self.participants.borrow(),
            asked: self.asked.borrow().clone(),
        }
    }

    fn touch(&self) {
        *lock(&self.last_active) = Instant::now();
    }

    fn idle_since(&self) -> Instant {
        *lock(&self.last_active)
    }
}

/// The error a follower or trainer gets once the room is gone.
pub fn closed(id: &str) -> ServerMsg {
    error(ErrorCode::UnknownRoom, &closed_message(id))
}

pub fn closed_message(id: &str) -> String {
    format!("room {id} has closed; the trainer can open a new one")
}

/// A page's place in a room, given back when dropped (the page closed or left).
pub struct Presence {
    room: Arc<Room>,
    participant: bool,
    /// The page's number in the room: its prediction is counted under it.
    pub id: u64,
}

impl Drop for Presence {
    fn drop(&mut self) {
        if self.participant {
            self.room
                .participants
                .send_modify(|count| *count = count.saturating_sub(1));
        }
        self.room.watchers.send_modify(|count| *count = count.saturating_sub(1));
    }
}

/// The trainer's orders, as the room's task receives them.
pub(super) struct Orders(mpsc::UnboundedReceiver<Command>);

/// The room's task: plays the trainer's runs through the engine and publishes every frame to the
/// feed, until the room has had no order, no join and no run for `limits.idle`, or the server
/// closes it. Its caller then closes the room. A run that no page has watched for
/// `limits.abandoned` is cancelled (and cleaned like any other).
pub(super) async fn drive(room: Arc<Room>, Orders(mut orders): Orders, engine: Arc<Engine>, limits: Limits) {
    let mut run: Option<Playing> = None;
    let mut watchers = room.watchers.subscribe();
    let mut closing = false;
    loop {
        let idle_until = room.idle_since() + limits.idle;
        let unwatched = *watchers.borrow_and_update() == 0;
        tokio::select! {
            // What the run sends first: a closing room still publishes its run's end.
            biased;
            update = next_update(run.as_mut().map(|playing| &mut playing.handle)) => {
                room.touch();
                let update = update.unwrap_or_else(|| ServerMsg::Done {
                    run_id: String::new(),
                    outcome: Outcome::Failed { message: "the run's stream ended early".to_owned() },
                });
                let finished = matches!(update, ServerMsg::Done { .. });
                let reveals = matches!(&update, ServerMsg::Event { event } if matches!(event.kind, EventKind::Reveal { .. }));
                room.feed.publish(update);
                if reveals
                    && let Some(playing) = &run
                    && let Some(tally) = room.reveal(&playing.scenario, &playing.variant)
                {
                    room.feed.publish(tally);
                }
                if finished {
                    run = None;
                }
            }
            command = orders.recv(), if !closing => {
                let Some(Command { order, reply }) = command else { break };
                room.touch();
                let refusal = match order {
                    Order::Close => {
                        closing = true;
                        None
                    }
                    order => obey(order, &mut run, &room, &engine).await,
                };
                let _ = reply.send(refusal);
            }
            () = std::future::ready(()), if closing && run.is_none() => break,
            // Everyone left while the run waits (a stepped run, say): after a while, it ends.
            () = tokio::time::sleep(limits.abandoned), if unwatched && run.is_some() => {
                if *watchers.borrow() == 0 && let Some(playing) = &run {
                    tracing::info!(room = %room.id, "cancelling a run nobody watches");
                    playing.handle.cancel();
                }
            }
            _ = watchers.changed() => {}
            () = tokio::time::sleep_until(idle_until), if run.is_none() && !closing => {
                if room.idle_since() + limits.idle <= Instant::now() {
                    break;
                }
            }
        }
    }
    tracing::info!(room = %room.id, "room closed");
}

async fn obey(order: Order, run: &mut Option<Playing>, room: &Room, engine: &Arc<Engine>) -> Option<ServerMsg> {
    match order {
        Order::Start {
            scenario,
            variant,
            mode,
            slot,
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
                    *run = Some(Playing {
                        handle,
                        _slot: slot,
                        scenario,
                        variant,
                    });
                    None
                }
                Err(refused) => Some(start_refusal(&refused)),
            }
        }
        Order::Next => step_run(run.as_ref().map(|playing| &playing.handle)),
        Order::Cancel => cancel_run(run.as_ref().map(|playing| &playing.handle)),
        Order::Close => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_drives_the_room() {
        let (room, _orders) = Room::new("K7QX2M".into(), "s3cret-token".into(), None, 8);
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
        let (room, _orders) = Room::new("K7QX2M".into(), "t".into(), None, 8);
        let first = room.admit(false, 2).expect("room for one");
        let _second = room.admit(false, 2).expect("room for two");
        assert!(room.admit(false, 2).is_none(), "full");
        let _trainer = room.admit(true, 2).expect("the trainer is never refused");
        assert!(matches!(room.status(), ServerMsg::Room { participants: 2, .. }));
        assert_eq!(*room.watchers.borrow(), 3);
        drop(first);
        assert!(room.admit(false, 2).is_some(), "a place freed");
    }
}
