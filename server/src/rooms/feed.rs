//! A room's feed: every frame of its current run, numbered, kept in a log and broadcast live.
//!
//! Why both: a participant who joins late, reconnects, or reads too slowly for the broadcast's
//! buffer catches up from the log, then follows live; the frame numbers let it skip what it has
//! already sent, so it sees every frame once and in order. (One that falls so far behind that
//! the trainer started another run meanwhile skips to the new run: the log keeps one run.)
//! Joining takes the log and subscribes under the lock that publishing holds, so no frame falls
//! between the two. Each frame is written to JSON once, however many sockets follow.
//!
//! The room's own process numbers the frames; its feed may be tapped ([`Feed::tap`]) to carry
//! them to other replicas (see [`super::bus`]), where a mirror's feed takes them as numbered
//! ([`Feed::relay`]), so a follower there skips and orders them exactly as here.

use super::lock;
use shared::{ServerFrame, ServerMsg};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{broadcast, mpsc};

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
    /// Where every new run and frame is also sent, in order, for other replicas.
    tap: Option<mpsc::UnboundedSender<Tapped>>,
}

/// What a tapped feed sends, in the order it happened.
#[derive(Clone, Debug)]
pub enum Tapped {
    /// A new run: its first frame will have number `first`.
    Begin {
        first: u64,
    },
    Frame(Numbered),
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
                tap: None,
            }),
        }
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        lock(&self.log)
    }

    /// A new run begins: the log forgets the last run's frames.
    pub fn begin_run(&self) {
        let mut log = self.log();
        log.frames.clear();
        let first = log.next;
        if let Some(tap) = &log.tap {
            let _ = tap.send(Tapped::Begin { first });
        }
    }

    /// Everything published from now on, in order, until the feed closes (then the receiver
    /// ends). One tap per feed: a second call replaces the first.
    pub fn tap(&self) -> mpsc::UnboundedReceiver<Tapped> {
        let (tap, tapped) = mpsc::unbounded_channel();
        self.log().tap = Some(tap);
        tapped
    }

    /// A mirror's feed takes the room's frame `number` (from the replica that holds the room):
    /// kept and sent to followers unless it has it already. Frames arrive from the room's log and
    /// from its live channel, in either order, some twice; the numbers sort them out.
    pub fn relay(&self, number: u64, frame: Arc<str>) {
        let mut log = self.log();
        if number < log.next {
            return;
        }
        log.next = number + 1;
        let numbered = Numbered { number, frame };
        log.frames.push(numbered.clone());
        if let Some(live) = &log.live {
            let _ = live.send(numbered);
        }
    }

    /// A mirror's feed hears that a new run began with frame `first`: frames before it are the
    /// last run's. (It may hear it after frames of the new run came from the log.)
    pub fn begin_at(&self, first: u64) {
        self.log().frames.retain(|frame| frame.number >= first);
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
        if let Some(tap) = &log.tap {
            let _ = tap.send(Tapped::Frame(numbered.clone()));
        }
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
        log.tap = None;
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
    fn a_tap_sees_runs_and_frames_in_order_and_ends_with_the_feed() {
        let feed = Feed::default();
        let mut tapped = feed.tap();
        feed.publish(queued(1));
        feed.begin_run();
        feed.publish(queued(2));
        feed.close();
        let mut seen = Vec::new();
        while let Ok(t) = tapped.try_recv() {
            seen.push(match t {
                Tapped::Begin { first } => format!("begin {first}"),
                Tapped::Frame(frame) => format!("frame {}", frame.number),
            });
        }
        assert_eq!(seen, ["frame 1", "begin 2", "frame 2"]);
        assert!(tapped.try_recv().is_err(), "closed");
    }

    /// A mirror hears frames twice and out of turn (the log read while the live channel already
    /// delivers); its followers see each once, in order, and a new run drops only older frames.
    #[test]
    fn a_mirror_keeps_each_frame_once_and_a_new_run_drops_older_ones() {
        let mirror = Feed::default();
        let mut follower = mirror.subscribe().expect("open");
        let frame = |n: u64| -> Arc<str> { format!("frame {n}").into() };
        for number in [3, 4, 4, 3, 5] {
            mirror.relay(number, frame(number));
        }
        let mut live = Vec::new();
        while let Ok(frame) = follower.live.try_recv() {
            live.push(frame.number);
        }
        assert_eq!(live, [3, 4, 5]);
        mirror.relay(6, frame(6));
        mirror.begin_at(6);
        mirror.begin_at(6);
        assert_eq!(numbers(&mirror.since(0)), [6], "the new run's frame stays");
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
