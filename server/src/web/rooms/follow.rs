//! A socket following a room: what it sends, in order, from the moment it joins.

use super::feed::Numbered;
use super::room::{Presence, Room, closed, closed_message};
use crate::web::ws::Refusal;
use shared::{ErrorCode, ServerMsg};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::{broadcast, watch};

/// What the socket sends next.
pub enum Outgoing {
    /// A frame of the room's run, already JSON.
    Frame(Arc<str>),
    /// A frame of this socket's own: the room's status, or why following ended.
    Message(Box<ServerMsg>),
}

pub struct Follower {
    room: Arc<Room>,
    live: broadcast::Receiver<Numbered>,
    /// The number of the last frame sent: anything at or below it is not sent again.
    last: u64,
    participants: watch::Receiver<usize>,
    /// Frames to send before reading more.
    queue: VecDeque<Outgoing>,
    /// A participant's place; the trainer's page takes none.
    _presence: Option<Presence>,
    ended: bool,
}

impl Follower {
    /// Joins `room`: as its trainer (not counted, never refused) or as a participant (refused when
    /// the room already has `limit`). The first things sent are the room's status and its current
    /// run so far.
    pub fn join(room: Arc<Room>, trainer: bool, limit: usize) -> Result<Follower, Refusal> {
        let presence = if trainer {
            None
        } else {
            let presence = room.admit(limit).ok_or_else(|| Refusal {
                code: ErrorCode::RoomFull,
                message: format!("room {} has {limit} participants, as many as a room may", room.id),
            })?;
            Some(presence)
        };
        let subscription = room.feed.subscribe().ok_or_else(|| Refusal {
            code: ErrorCode::UnknownRoom,
            message: closed_message(&room.id),
        })?;
        let mut participants = room.participants();
        participants.mark_unchanged();
        let mut queue = VecDeque::from([Outgoing::Message(Box::new(room.status()))]);
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
            queue,
            _presence: presence,
            ended: false,
        })
    }

    pub fn room(&self) -> &Arc<Room> {
        &self.room
    }

    /// The next thing to send; after the room closed, its error once, then nothing ever.
    pub async fn next(&mut self) -> Outgoing {
        loop {
            if let Some(outgoing) = self.queue.pop_front() {
                return outgoing;
            }
            if self.ended {
                return std::future::pending().await;
            }
            tokio::select! {
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
                        return Outgoing::Message(Box::new(closed(&self.room.id)));
                    }
                },
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
