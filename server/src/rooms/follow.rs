//! A socket following a room: what it sends, in order, from the moment it joins.

use super::feed::Numbered;
use super::room::{Presence, Room, closed, closed_message};
use crate::control::Refusal;
use shared::lesson::live::Live;
use shared::{ErrorCode, ServerMsg};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::{broadcast, watch};

/// What the socket sends next.
pub enum Outgoing {
    /// A frame of the room's run, already JSON.
    Frame(Arc<str>),
    /// A frame of this socket's own: the room's status.
    Message(Box<ServerMsg>),
    /// The room closed: why, and following ends (the socket lets go of the room).
    Ended(Box<ServerMsg>),
}

pub struct Follower {
    room: Arc<Room>,
    live: broadcast::Receiver<Numbered>,
    /// The number of the last frame sent: anything at or below it is not sent again.
    last: u64,
    participants: watch::Receiver<usize>,
    /// The question: a new one is a new `room` frame.
    asked: watch::Receiver<Option<(String, String)>>,
    /// The live counts, for the trainer's page only.
    tally: Option<watch::Receiver<Vec<(String, usize)>>>,
    /// The lesson the room runs, and what this page was last shown of it: a change that does
    /// not change this page's view (someone else seated under a hidden leaderboard, someone
    /// else's pick) is not sent.
    lesson: watch::Receiver<Option<Live>>,
    shown: Option<Live>,
    /// The handle this page answers under, in a lesson.
    handle: Option<String>,
    trainer: bool,
    /// Frames to send before reading more.
    queue: VecDeque<Outgoing>,
    /// The page's place among the room's watchers (and participants, unless it is the trainer's).
    presence: Presence,
    ended: bool,
}

impl Follower {
    /// Joins `room`: as its trainer (not counted, never refused) or as a participant (refused when
    /// the room already has `limit`). The first things sent are the room's status and its current
    /// run so far.
    /// In a lesson, a participant answers as `handle` (seated by the room before it joins).
    pub fn join(room: Arc<Room>, trainer: bool, limit: usize, handle: Option<String>) -> Result<Follower, Refusal> {
        let presence = room.admit(trainer, limit).ok_or_else(|| Refusal {
            code: ErrorCode::RoomFull,
            message: format!("room {} has {limit} participants, as many as a room may", room.id),
        })?;
        let subscription = room.feed.subscribe().ok_or_else(|| Refusal {
            code: ErrorCode::UnknownRoom,
            message: closed_message(&room.id),
        })?;
        let mut participants = room.participants();
        participants.mark_unchanged();
        let mut asked = room.asked();
        asked.mark_unchanged();
        let mut queue = VecDeque::from([Outgoing::Message(Box::new(room.status()))]);
        let tally = trainer.then(|| {
            let mut tally = room.tally();
            if asked.borrow().is_some() {
                queue.push_back(Outgoing::Message(Box::new(live_tally(&tally.borrow_and_update()))));
            }
            tally
        });
        let mut lesson = room.live();
        let shown = (lesson.borrow_and_update().as_ref()).map(|live| live.for_page(handle.as_deref(), trainer));
        if let Some(live) = &shown {
            queue.push_back(Outgoing::Message(Box::new(ServerMsg::Lesson(live.clone()))));
        }
        let last = subscription.backlog.last().map_or(0, |frame| frame.number);
        queue.extend(
            subscription
                .backlog
                .into_iter()
                .map(|frame| Outgoing::Frame(frame.frame)),
        );
        Ok(Follower {
            room,
            live: subscription.live,
            last,
            participants,
            asked,
            tally,
            lesson,
            shown,
            handle,
            trainer,
            queue,
            presence,
            ended: false,
        })
    }

    /// The handle this page answers under, in a lesson.
    pub fn handle(&self) -> Option<&str> {
        self.handle.as_deref()
    }

    pub fn room(&self) -> &Arc<Room> {
        &self.room
    }

    /// This page's number in the room (its prediction is counted under it).
    pub fn id(&self) -> u64 {
        self.presence.id
    }

    /// The next thing to send; once the room closed, [`Outgoing::Ended`], then nothing ever.
    pub async fn next(&mut self) -> Outgoing {
        loop {
            if let Some(outgoing) = self.queue.pop_front() {
                return outgoing;
            }
            if self.ended {
                return std::future::pending().await;
            }
            tokio::select! {
                // In this order: a new question's `room` frame before its (zero) tally, which a
                // page would otherwise take for the last question's and drop with it.
                biased;
                received = self.live.recv() => match received {
                    Ok(frame) if frame.number > self.last => {
                        self.last = frame.number;
                        return Outgoing::Frame(frame.frame);
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        // Fell behind the broadcast: the log has every frame of the run.
                        for frame in self.room.feed.since(self.last) {
                            self.last = frame.number;
                            self.queue.push_back(Outgoing::Frame(frame.frame));
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => {
                        self.ended = true;
                        return Outgoing::Ended(Box::new(closed(&self.room.id)));
                    }
                },
                changed = self.asked.changed(), if !self.ended => {
                    if changed.is_ok() {
                        return Outgoing::Message(Box::new(self.room.status()));
                    }
                    self.ended = true;
                }
                changed = self.lesson.changed(), if !self.ended => {
                    if changed.is_err() {
                        self.ended = true;
                        continue;
                    }
                    let view = (self.lesson.borrow_and_update().as_ref())
                        .map(|live| live.for_page(self.handle.as_deref(), self.trainer));
                    if let Some(live) = view.filter(|view| self.shown.as_ref() != Some(view)) {
                        self.shown = Some(live.clone());
                        return Outgoing::Message(Box::new(ServerMsg::Lesson(live)));
                    }
                }
                changed = changed_tally(&mut self.tally), if !self.ended => {
                    if let Some(counts) = changed {
                        return Outgoing::Message(Box::new(live_tally(&counts)));
                    }
                    self.ended = true;
                }
                changed = self.participants.changed(), if !self.ended => {
                    match changed {
                        Ok(()) => return Outgoing::Message(Box::new(self.room.status())),
                        // The count is the room's, and the room outlives its followers; if it
                        // ever went, the feed ends too.
                        Err(_) => self.ended = true,
                    }
                }
            }
        }
    }
}

/// The trainer's live view of the counts (before the reveal).
fn live_tally(counts: &[(String, usize)]) -> ServerMsg {
    ServerMsg::Tally {
        counts: counts.to_vec(),
        revealed: false,
    }
}

/// The counts when they change, for the trainer's page; never resolves for a participant's.
async fn changed_tally(tally: &mut Option<watch::Receiver<Vec<(String, usize)>>>) -> Option<Vec<(String, usize)>> {
    match tally {
        Some(tally) => match tally.changed().await {
            Ok(()) => Some(tally.borrow_and_update().clone()),
            Err(_) => None,
        },
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::ServerFrame;

    fn position(outgoing: Outgoing) -> usize {
        let Outgoing::Frame(frame) = outgoing else {
            panic!("a run's frame");
        };
        let frame: ServerFrame = serde_json::from_str(&frame).expect("a frame");
        match frame.msg {
            ServerMsg::Queued { position } => position,
            other => panic!("{other:?}"),
        }
    }

    /// A follower far behind the live broadcast (4 frames here) still sends every frame, once,
    /// in order: the rest come from the log.
    #[tokio::test]
    async fn a_follower_behind_the_broadcast_sends_every_frame_in_order() {
        let (room, _orders) = Room::new("K7QX2M".into(), "t".into(), None, 4);
        room.feed.publish(ServerMsg::Queued { position: 0 });
        let mut follower = Follower::join(room.clone(), false, 10, None).expect("joined");
        assert!(
            matches!(follower.next().await, Outgoing::Message(_)),
            "the room's status first"
        );
        for position in 1..20 {
            room.feed.publish(ServerMsg::Queued { position });
        }
        let mut seen = Vec::new();
        for _ in 0..20 {
            seen.push(position(follower.next().await));
        }
        assert_eq!(seen, (0..20).collect::<Vec<_>>());
        room.feed.close();
        assert!(matches!(follower.next().await, Outgoing::Ended(_)));
    }
}
