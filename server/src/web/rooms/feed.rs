//! A room's feed: every frame of its current run, numbered, kept in a log and broadcast live.
//!
//! Why both: a participant who joins late, reconnects, or reads too slowly for the broadcast's
//! buffer catches up from the log, then follows live; the frame numbers let it skip what it has
//! already sent, so it sees every frame once and in order. (One that falls so far behind that
//! the trainer started another run meanwhile skips to the new run: the log keeps one run.)
//! Joining takes the log and subscribes under the lock that publishing holds, so no frame falls
//! between the two. Each frame is written to JSON once, however many sockets follow.

use super::lock;
use shared::{ServerFrame, ServerMsg};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

/// Frames a follower may fall behind the broadcast before it reads the rest from the log.
pub const LIVE_BUFFER: usize = 256;

/// One frame of the feed, as the JSON text every follower sends.
#[derive(Clone, Debug)]
pub struct Numbered {
    /// 1, 2, 3… over the room's life (not reset by a new run).
    pub number: u64,
    pub frame: Arc<str>,
}

pub struct Feed {
    log: Mutex<Log>,
}

struct Log {
    /// The current run's frames, from its first.
    frames: Vec<Numbered>,
    next: u64,
    /// `None` once the room closed: followers' receivers then end.
    live: Option<broadcast::Sender<Numbered>>,
}

/// What a new follower starts from: the current run's frames so far, and the live ones after.
pub struct Subscription {
    pub backlog: Vec<Numbered>,
    pub live: broadcast::Receiver<Numbered>,
}

impl Default for Feed {
    fn default() -> Feed {
        Feed::with_buffer(LIVE_BUFFER)
    }
}

impl Feed {
    /// A feed whose followers may fall `buffer` frames behind before they catch up from the log.
    pub fn with_buffer(buffer: usize) -> Feed {
        let (live, _) = broadcast::channel(buffer.max(1));
        Feed {
            log: Mutex::new(Log {
                frames: Vec::new(),
                next: 1,
                live: Some(live),
            }),
        }
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        lock(&self.log)
    }

    /// A new run begins: the log forgets the last run's frames.
    pub fn begin_run(&self) {
        self.log().frames.clear();
    }

    /// Numbers `message`, keeps it and sends it to every follower.
    pub fn publish(&self, message: ServerMsg) {
        let frame: Arc<str> = match serde_json::to_string(&ServerFrame::from(message)) {
            Ok(json) => json.into(),
            Err(error) => {
                tracing::error!(%error, "could not write a room's frame");
                return;
            }
        };
        let mut log = self.log();
        let numbered = Numbered {
            number: log.next,
            frame,
        };
        log.next += 1;
        log.frames.push(numbered.clone());
        if let Some(live) = &log.live {
            // No receiver is not an error: nobody follows yet, the log keeps the frame.
            let _ = live.send(numbered);
        }
    }

    /// The current run so far and the live frames after it; `None` once the room closed.
    pub fn subscribe(&self) -> Option<Subscription> {
        let log = self.log();
        let live = log.live.as_ref()?.subscribe();
        Some(Subscription {
            backlog: log.frames.clone(),
            live,
        })
    }

    /// The frames after `number` still in the log: how a follower that fell behind the broadcast
    /// catches up.
    pub fn since(&self, number: u64) -> Vec<Numbered> {
        self.log()
            .frames
            .iter()
            .filter(|frame| frame.number > number)
            .cloned()
            .collect()
    }

    /// The room closed: every follower's live feed ends, and the log is let go.
    pub fn close(&self) {
        let mut log = self.log();
        log.live = None;
        log.frames = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queued(position: usize) -> ServerMsg {
        ServerMsg::Queued { position }
    }

    fn numbers(frames: &[Numbered]) -> Vec<u64> {
        frames.iter().map(|f| f.number).collect()
    }

    #[test]
    fn a_late_follower_gets_the_run_so_far_then_live_frames() {
        let feed = Feed::default();
        feed.publish(queued(1));
        feed.begin_run();
        feed.publish(queued(2));
        feed.publish(queued(3));
        let mut late = feed.subscribe().expect("open");
        assert_eq!(numbers(&late.backlog), [2, 3], "only the current run");
        assert!(late.backlog[0].frame.contains(r#""position":2"#));
        feed.publish(queued(4));
        assert_eq!(late.live.try_recv().expect("live").number, 4);
        assert_eq!(numbers(&feed.since(2)), [3, 4]);
    }

    #[test]
    fn a_follower_that_falls_behind_is_told_and_the_log_has_the_rest() {
        let feed = Feed::with_buffer(4);
        let mut slow = feed.subscribe().expect("open");
        for position in 0..10 {
            feed.publish(queued(position));
        }
        assert!(matches!(
            slow.live.try_recv(),
            Err(broadcast::error::TryRecvError::Lagged(_))
        ));
        assert_eq!(numbers(&feed.since(3)), (4..=10).collect::<Vec<_>>());
    }

    #[test]
    fn closing_ends_every_follower() {
        let feed = Feed::default();
        let mut follower = feed.subscribe().expect("open");
        feed.close();
        assert!(matches!(
            follower.live.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
        assert!(feed.subscribe().is_none());
    }
}
