//! One room: its trainer token, its feed, who follows it, and the task that plays its runs.
//!
//! The run belongs to the room's task, not to a socket: the trainer may reload the page or lose
//! the connection and the run goes on, and every follower, the trainer's page too, reads the
//! same feed.
//!
//! A room is held by the replica that opened it: its task, its question and its counts live
//! there. Another replica that has pages following it keeps a *mirror* (see [`super::bus`]): the
//! same type, whose feed, counts and question are copies sent through Redis, and whose orders
//! and predictions travel back to the holder. Followers cannot tell the two apart.

use super::bus::{Forwarded, ToHolder};
use super::feed::Feed;
use super::lesson::{Replay, RoundRace, Session};
use super::tally::Question;
use super::{Limits, lock};
use crate::clients::Slot;
use crate::control::{Refusal, cancel_run, error, next_update, start_refusal, step_run};
use crate::engine::{Engine, RunHandle};
use crate::store::StoredRun;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use shared::lesson::live::{Answer, Live};
use shared::{ErrorCode, Event, EventKind, Mode, Outcome, ScenarioInfo, ServerMsg};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

/// How long a mirror waits for the holder to answer a trainer's order.
const ORDER_TIMEOUT: Duration = Duration::from_secs(10);

/// What the trainer asks of the room's run (and the server, of the room).
pub enum Order {
    Start {
        scenario: String,
        variant: String,
        mode: Mode,
        /// The PostgreSQL version the run plays on (a major version); none: the first server's.
        postgres: Option<u32>,
        /// The run's place in its trainer's per-address count, held as long as the run goes.
        slot: Option<Slot>,
    },
    Next,
    Cancel,
    /// A new question: predict what `scenario` at `variant` will do.
    Ask {
        scenario: String,
        variant: String,
    },
    /// The lesson's round `number` (1-based) is next, at its own variant or at `variant`.
    Round {
        number: usize,
        variant: Option<String>,
    },
    /// The lesson's round `number` opens, playing the `recording` the trainer's page read from
    /// another site (the file's text; the holder reads it).
    Recording {
        number: usize,
        recording: Arc<str>,
    },
    /// A participant answers as `handle` from the page whose secret hashes to `seat`.
    Seat {
        handle: String,
        seat: [u8; 32],
    },
    /// Whether participants see the whole leaderboard.
    Leaderboard {
        shown: bool,
    },
    /// The trainer closes the room, or the server is stopping: publish what is left of the run,
    /// then close.
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
    /// How a lesson's own question about this run is answered from its events (`None`: by its
    /// `reveal`), fixed when it starts (no question changes while a run plays).
    derived: Option<shared::lesson::Derived>,
    /// Its events so far, kept only for a `derived` answer, read when the run ends.
    events: Vec<Event>,
}

/// Pages following a room in one process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Here {
    pub participants: usize,
    /// Participants and the trainer's page.
    pub watchers: usize,
}

/// Where the room's run is played.
enum Reach {
    /// Here: orders go to the room's task.
    Holder { commands: mpsc::UnboundedSender<Command> },
    /// On another replica: orders and predictions go there through Redis, and the answers to
    /// orders come back by number.
    Mirror {
        replica: String,
        to_holder: mpsc::UnboundedSender<ToHolder>,
        waiting: Mutex<HashMap<u64, oneshot::Sender<Option<ServerMsg>>>>,
        numbers: AtomicU64,
    },
}

pub struct Room {
    pub id: String,
    /// SHA-256 of the trainer token: what a token is checked against, here and, through Redis,
    /// on other replicas (the token itself is never stored).
    token: [u8; 32],
    /// The address that opened the room, for the cap on rooms per trainer.
    pub trainer: Option<IpAddr>,
    pub feed: Feed,
    reach: Reach,
    /// Participants on every replica (a mirror's copy comes from the holder).
    participants: watch::Sender<usize>,
    /// Every page following the room on every replica, the trainer's too: a run nobody watches
    /// is abandoned.
    watchers: watch::Sender<usize>,
    /// Pages following the room in this process.
    here: watch::Sender<Here>,
    /// Pages on other replicas, as each last said, and when (the holder's only).
    elsewhere: Mutex<HashMap<String, (Here, Instant)>>,
    last_active: Mutex<Instant>,
    /// The trainer's question and the picks for it (predict, then run); the holder's only.
    question: Mutex<Option<Question>>,
    /// The question's scenario and variant, whenever they change: followers resend `room`.
    asked: watch::Sender<Option<(String, String)>>,
    /// The counts, whenever they change: the trainer's page shows them live.
    tally: watch::Sender<Vec<(String, usize)>>,
    /// Numbers the pages that join, so a page's pick replaces its own last one.
    joined: AtomicU64,
    /// The lesson the room runs, if it runs one (the holder's only).
    session: Mutex<Option<Session>>,
    /// What pages are shown of the lesson, whenever it changes (a mirror's comes from the holder).
    live: watch::Sender<Option<Live>>,
}

/// SHA-256 of a trainer token.
pub fn token_hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Room {
    fn with(id: String, token: [u8; 32], trainer: Option<IpAddr>, live_buffer: usize, reach: Reach) -> Room {
        Room {
            session: Mutex::new(None),
            live: watch::Sender::new(None),
            id,
            token,
            trainer,
            feed: Feed::with_buffer(live_buffer),
            reach,
            participants: watch::Sender::new(0),
            watchers: watch::Sender::new(0),
            here: watch::Sender::new(Here::default()),
            elsewhere: Mutex::default(),
            last_active: Mutex::new(Instant::now()),
            question: Mutex::new(None),
            asked: watch::Sender::new(None),
            tally: watch::Sender::new(Vec::new()),
            joined: AtomicU64::new(0),
        }
    }

    /// A room held here and the receiving end of its orders, for [`drive`].
    pub(super) fn new(id: String, token: String, trainer: Option<IpAddr>, live_buffer: usize) -> (Arc<Room>, Orders) {
        let (commands, orders) = mpsc::unbounded_channel();
        let room = Room::with(id, token_hash(&token), trainer, live_buffer, Reach::Holder { commands });
        (Arc::new(room), Orders(orders))
    }

    /// The room runs `session`'s lesson (set once, as it opens).
    pub(super) fn run_lesson(&self, session: Session) {
        self.publish(&session);
        *lock(&self.session) = Some(session);
    }

    /// Where the results of the lesson the room runs are read, and the lesson's id.
    pub fn results(&self) -> Option<(String, String)> {
        lock(&self.session)
            .as_ref()
            .map(|s| (s.results.clone(), s.lesson_id.clone()))
    }

    /// A mirror of a room another replica holds, and what it sends that replica.
    pub(super) fn mirror(
        id: String,
        token: [u8; 32],
        replica: String,
        live_buffer: usize,
    ) -> (Arc<Room>, mpsc::UnboundedReceiver<ToHolder>) {
        let (to_holder, outbox) = mpsc::unbounded_channel();
        let reach = Reach::Mirror {
            replica,
            to_holder,
            waiting: Mutex::default(),
            numbers: AtomicU64::new(0),
        };
        (Arc::new(Room::with(id, token, None, live_buffer, reach)), outbox)
    }

    /// The hash the trainer token is checked against, for other replicas.
    pub fn token(&self) -> [u8; 32] {
        self.token
    }

    /// Whether `token` is this room's trainer token (hashes compared in constant time, so a
    /// guess learns nothing from how long a refusal takes).
    pub fn is_trainer(&self, token: Option<&str>) -> bool {
        let Some(token) = token else { return false };
        token_hash(token)
            .iter()
            .zip(self.token.iter())
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
    }

    /// Hands the trainer's order to the room's task (on whichever replica holds it); the answer
    /// is the error to tell the trainer, if it was refused.
    pub async fn order(&self, order: Order) -> Option<ServerMsg> {
        match &self.reach {
            Reach::Holder { commands } => {
                let (reply, answer) = oneshot::channel();
                if commands.send(Command { order, reply }).is_err() {
                    return Some(closed(&self.id));
                }
                answer.await.unwrap_or_else(|_| Some(closed(&self.id)))
            }
            Reach::Mirror {
                replica,
                to_holder,
                waiting,
                numbers,
            } => {
                // A trainer's start counts against their address here, when it is asked for;
                // the run itself is the holder's.
                let order = Forwarded::from(order);
                let number = numbers.fetch_add(1, Ordering::Relaxed);
                let (reply, answer) = oneshot::channel();
                lock(waiting).insert(number, reply);
                let sent = to_holder.send(ToHolder::Order {
                    replica: replica.clone(),
                    number,
                    order,
                });
                if sent.is_err() {
                    lock(waiting).remove(&number);
                    return Some(closed(&self.id));
                }
                let answered = tokio::time::timeout(ORDER_TIMEOUT, answer).await;
                lock(waiting).remove(&number);
                match answered {
                    Ok(Ok(refusal)) => refusal,
                    Ok(Err(_)) => Some(closed(&self.id)),
                    Err(_) => Some(error(
                        ErrorCode::Busy,
                        &format!(
                            "the racelab replica that holds room {} did not answer within {} s; try again",
                            self.id,
                            ORDER_TIMEOUT.as_secs()
                        ),
                    )),
                }
            }
        }
    }

    /// A mirror hears the holder's answer to its order `number`.
    pub(super) fn answered(&self, number: u64, refusal: Option<ServerMsg>) {
        if let Reach::Mirror { waiting, .. } = &self.reach
            && let Some(reply) = lock(waiting).remove(&number)
        {
            let _ = reply.send(refusal);
        }
    }

    /// Closes the room (the trainer closed it, or the server is stopping); its task first
    /// publishes what is left of its run. From a mirror, the holder is told.
    pub fn close(&self) {
        match &self.reach {
            Reach::Holder { commands } => {
                let (reply, _) = oneshot::channel();
                let _ = commands.send(Command {
                    order: Order::Close,
                    reply,
                });
            }
            Reach::Mirror {
                replica,
                to_holder,
                numbers,
                ..
            } => {
                let _ = to_holder.send(ToHolder::Order {
                    replica: replica.clone(),
                    number: numbers.fetch_add(1, Ordering::Relaxed),
                    order: Forwarded::Close,
                });
            }
        }
    }

    /// Whether this is a copy of a room another replica holds.
    pub fn is_mirror(&self) -> bool {
        matches!(self.reach, Reach::Mirror { .. })
    }

    /// Counts a page in as a watcher, and as a participant unless it is the trainer's; refuses a
    /// participant when the room already has `limit`. The counts go down when the [`Presence`]
    /// is dropped.
    pub fn admit(self: &Arc<Self>, trainer: bool, limit: usize) -> Option<Presence> {
        {
            let elsewhere = lock(&self.elsewhere);
            if !trainer && *self.participants.borrow() >= limit {
                // A knock on a full room is not activity: it still closes when idle.
                return None;
            }
            self.here.send_modify(|here| {
                here.participants += usize::from(!trainer);
                here.watchers += 1;
            });
            self.recount(&elsewhere);
        }
        self.touch();
        Some(Presence {
            room: self.clone(),
            participant: !trainer,
            id: self.joined.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// The room's counts, from this process's pages and the other replicas' (on the holder; a
    /// mirror's come from the holder, which hears this process's pages from the mirror's task).
    fn recount(&self, elsewhere: &HashMap<String, (Here, Instant)>) {
        if self.is_mirror() {
            return;
        }
        let here = *self.here.borrow();
        let (participants, watchers) = elsewhere
            .values()
            .fold((here.participants, here.watchers), |(p, w), (there, _)| {
                (p + there.participants, w + there.watchers)
            });
        self.participants
            .send_if_modified(|count| std::mem::replace(count, participants) != participants);
        self.watchers
            .send_if_modified(|count| std::mem::replace(count, watchers) != watchers);
    }

    /// Pages following the room in this process, now and whenever they change.
    pub(super) fn here(&self) -> watch::Receiver<Here> {
        self.here.subscribe()
    }

    /// The holder hears how many pages follow the room on `replica`.
    pub(super) fn elsewhere(&self, replica: &str, there: Here) {
        let mut elsewhere = lock(&self.elsewhere);
        if there == Here::default() {
            elsewhere.remove(replica);
        } else {
            elsewhere.insert(replica.to_owned(), (there, Instant::now()));
            self.touch();
        }
        self.recount(&elsewhere);
    }

    /// The holder forgets replicas it has not heard from since `before` (gone without a word).
    pub(super) fn forget_silent(&self, before: Instant) {
        let mut elsewhere = lock(&self.elsewhere);
        let heard = elsewhere.len();
        elsewhere.retain(|_, (_, when)| *when >= before);
        if elsewhere.len() != heard {
            self.recount(&elsewhere);
        }
    }

    /// A mirror takes the holder's word for the room's status and counts.
    pub(super) fn mirror_status(&self, participants: usize, asked: Option<(String, String)>) {
        self.participants
            .send_if_modified(|count| std::mem::replace(count, participants) != participants);
        self.asked
            .send_if_modified(|now| std::mem::replace(now, asked.clone()) != asked);
    }

    /// A mirror takes the holder's live counts.
    pub(super) fn mirror_tally(&self, counts: Vec<(String, usize)>) {
        self.tally.send_replace(counts);
    }

    /// The trainer settles on `scenario` at `variant`: a new round, with its question if the
    /// scenario asks one (none for the load test, say). The last round's run leaves the feed (a
    /// page that joins or reloads now sees the new question, not the old answer under it), and
    /// everyone's picks start again. Asking again what is still open (a trainer's page reloaded
    /// before the run) changes nothing.
    pub fn ask(&self, info: &ScenarioInfo, variant: &str) -> Result<(), Refusal> {
        let scenario = info.id.as_str();
        let question = Question::ask(info, variant)?;
        {
            let current = lock(&self.question);
            let still_open = match (current.as_ref(), &question) {
                (Some(q), Some(_)) => q.scenario == scenario && q.variant == variant && !q.started,
                (None, None) => self.asked.borrow().is_none(),
                _ => false,
            };
            if still_open {
                return Ok(());
            }
        }
        self.put(question);
        Ok(())
    }

    /// `question` (or none) is the room's now: the last round's run leaves the feed, and the
    /// question goes out, then its counts (followers send them in this order).
    fn put(&self, question: Option<Question>) {
        let asked = question.as_ref().map(|q| (q.scenario.clone(), q.variant.clone()));
        let counts = question.as_ref().map_or_else(Vec::new, Question::counts);
        *lock(&self.question) = question;
        self.touch();
        self.feed.begin_run();
        self.asked.send_replace(asked);
        self.tally.send_replace(counts);
    }

    /// The lesson's round `number` opens, playing `race` (of scenario `info`): its question is
    /// the room's, and pages are shown the round. Asking again for the round still open (a
    /// trainer's page reloaded before its run) changes nothing; after its run, it plays again.
    fn open_round(&self, number: usize, race: &RoundRace, info: &ScenarioInfo) -> Result<(), Refusal> {
        let mut session = lock(&self.session);
        let session = session.as_mut().ok_or_else(no_lesson)?;
        let started = lock(&self.question).as_ref().is_some_and(|q| q.started);
        if session.is_open(number, race) && !started {
            return Ok(());
        }
        let (choices, derived) = session.open(number, race, info)?;
        self.put(Some(Question::new(&race.scenario, &race.variant, choices, derived)));
        self.publish(session);
        Ok(())
    }

    /// A participant answers as `handle` from the page whose secret hashes to `seat`. In a room
    /// without a lesson, a handle means nothing and anyone may give any. Pages are shown the
    /// lesson again: a new line on the board, or a reloaded page's own pick.
    fn seat(&self, handle: &str, seat: [u8; 32]) -> Result<(), Refusal> {
        let mut session = lock(&self.session);
        let Some(session) = session.as_mut() else { return Ok(()) };
        session.seat(handle, seat)?;
        self.publish(session);
        Ok(())
    }

    fn show_leaderboard(&self, shown: bool) -> Result<(), Refusal> {
        let mut session = lock(&self.session);
        let session = session.as_mut().ok_or_else(no_lesson)?;
        session.show(shown);
        self.publish(session);
        Ok(())
    }

    /// What pages are shown of the lesson, now and whenever it changes.
    pub fn live(&self) -> watch::Receiver<Option<Live>> {
        self.live.subscribe()
    }

    /// A mirror takes the holder's word for the lesson.
    pub(super) fn mirror_live(&self, live: Option<Live>) {
        self.live.send_if_modified(|now| {
            let changed = *now != live;
            *now = live;
            changed
        });
    }

    /// A run of `scenario` at `variant` starts (`playing`) or ends: while a run of the room's
    /// question plays, picks are closed; one that ended without revealing the answer (cancelled,
    /// failed) opens them again, for the run that will.
    fn question_played(&self, scenario: &str, variant: &str, playing: bool) {
        if let Some(question) = lock(&self.question)
            .as_mut()
            .filter(|q| q.scenario == scenario && q.variant == variant && !q.revealed)
        {
            question.started = playing;
        }
    }

    /// The page numbered `who` in this process predicts `choice` for the room's question. From
    /// a mirror, the pick is checked against the question here and sent to the holder.
    /// In a lesson, the pick counts under the page's `handle`, and a page without one only
    /// watches.
    pub fn predict(&self, who: u64, handle: Option<&str>, choice: &str) -> Result<(), Refusal> {
        match &self.reach {
            Reach::Holder { .. } => self.pick(handle.map_or_else(|| format!("#{who}"), str::to_owned), choice),
            Reach::Mirror { replica, to_holder, .. } => {
                // The question's choices are known here for a lesson's round and a catalog
                // scenario, so a wrong one is refused at once; a reader's spec is read from the
                // store by the holder alone, which counts only its choices.
                let round = self.live.borrow().as_ref().and_then(|live| live.round.clone());
                if let Some(round) = round {
                    handle.ok_or_else(no_handle)?;
                    let ids = round.choices.into_iter().map(|(id, _)| id).collect();
                    Question::new(&round.scenario, &round.variant, ids, None).pick(String::new(), choice)?;
                } else {
                    let Some((scenario, variant)) = self.asked.borrow().clone() else {
                        return Err(nothing_asked());
                    };
                    if let Ok(def) = crate::control::scenario_named(&scenario) {
                        Question::ask(&crate::engine::Scenario::info(def), &variant)?
                            .ok_or_else(nothing_asked)?
                            .pick(String::new(), choice)?;
                    }
                }
                let who = handle.map_or_else(|| format!("{replica}/{who}"), str::to_owned);
                let _ = to_holder.send(ToHolder::Predict {
                    who,
                    choice: choice.to_owned(),
                });
                Ok(())
            }
        }
    }

    /// `who` (a page here, or `replica/page` on another replica) picks `choice`.
    pub(super) fn pick(&self, who: String, choice: &str) -> Result<(), Refusal> {
        if lock(&self.session).as_ref().is_some_and(|s| !s.is_seated(&who)) {
            return Err(no_handle());
        }
        let mut question = lock(&self.question);
        let question = question.as_mut().ok_or_else(nothing_asked)?;
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

    /// The run of `scenario` at `variant` answered `answer` (`None`: it ended without one): if
    /// it was the room's question, the question closes and its tally is for everyone; in a
    /// lesson, every seated pick is scored. Returns the tally to publish and the round's answers
    /// (to keep).
    fn reveal(&self, scenario: &str, variant: &str, answer: Option<&str>) -> Option<Revealed> {
        let mut question = lock(&self.question);
        let question = question
            .as_mut()
            .filter(|q| q.scenario == scenario && q.variant == variant && !q.revealed)?;
        question.revealed = true;
        let mut session = lock(&self.session);
        let scored = match (session.as_mut(), answer) {
            (Some(session), Some(answer)) => session.score(answer, question.picks()).map(|(round, answers)| Scored {
                results: session.results.clone(),
                lesson: session.lesson_id.clone(),
                round,
                answers,
            }),
            _ => None,
        };
        let tally = ServerMsg::Tally {
            counts: question.counts(),
            revealed: true,
        };
        Some(Revealed { tally, scored })
    }

    /// Pages are shown the lesson as it is now.
    fn show_lesson(&self) {
        if let Some(session) = lock(&self.session).as_ref() {
            self.publish(session);
        }
    }

    /// Pages are shown `session` as it is now, with every handle's pick for the open round (each
    /// page is told its own: [`Live::for_page`]). Called from the room's task only, which is what
    /// makes holding the session while reading the question safe ([`Room::reveal`] takes them
    /// the other way round).
    fn publish(&self, session: &Session) {
        let mut live = session.live();
        if let Some(round) = live.round.as_mut() {
            round.picked = lock(&self.question).as_ref().map(Question::picked).unwrap_or_default();
        }
        self.live.send_replace(Some(live));
    }

    /// How the room's question about a run of `scenario` at `variant` is answered from its
    /// events, when it is a lesson's own (`None`: by the run's `reveal`, or no such question).
    fn derived_for(&self, scenario: &str, variant: &str) -> Option<shared::lesson::Derived> {
        lock(&self.question)
            .as_ref()
            .filter(|q| q.scenario == scenario && q.variant == variant)
            .and_then(|q| q.derived.clone())
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

fn no_lesson() -> Refusal {
    Refusal {
        code: ErrorCode::BadFrame,
        message: "this room runs no lesson: open one with a lesson to play it round by round".to_owned(),
    }
}

fn no_handle() -> Refusal {
    Refusal {
        code: ErrorCode::BadFrame,
        message: "this room runs a lesson: join with a handle to answer".to_owned(),
    }
}

fn nothing_asked() -> Refusal {
    Refusal {
        code: ErrorCode::BadFrame,
        message: "the trainer has asked nothing to predict yet".to_owned(),
    }
}

/// What a run's answer revealed: the tally for everyone, and in a lesson the round's answers.
struct Revealed {
    tally: ServerMsg,
    scored: Option<Scored>,
}

/// A lesson round's answers, scored, to keep with the session's results.
struct Scored {
    results: String,
    lesson: String,
    round: usize,
    answers: Vec<Answer>,
}

/// The error a follower or trainer gets once the room is gone.
pub fn closed(id: &str) -> ServerMsg {
    error(ErrorCode::UnknownRoom, &closed_message(id))
}

pub fn closed_message(id: &str) -> String {
    format!("room {id} has closed; the trainer can open a new one.")
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
        let room = &self.room;
        let elsewhere = lock(&room.elsewhere);
        room.here.send_modify(|here| {
            here.participants = here.participants.saturating_sub(usize::from(self.participant));
            here.watchers = here.watchers.saturating_sub(1);
        });
        room.recount(&elsewhere);
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
                let answer = run.as_mut().and_then(|playing| answered(playing, &update));
                room.feed.publish(update);
                if let (Some(answer), Some(playing)) = (answer, &run) {
                    reveal(&room, playing, answer.as_deref(), &engine).await;
                }
                if finished && let Some(playing) = run.take() {
                    room.question_played(&playing.scenario, &playing.variant, false);
                }
            }
            command = orders.recv(), if !closing => {
                let Some(Command { order, reply }) = command else { break };
                room.touch();
                let refusal = match order {
                    Order::Close => {
                        // The trainer's close cancels a run still going; its end is published.
                        if let Some(playing) = &run {
                            playing.handle.cancel();
                        }
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

/// Whether `update` of the room's run answers its question, and with what (`Some(None)`: the run
/// ended and says nothing the trainer's question asks about). A scenario's own question is
/// answered by the run's `reveal`; a lesson's own, from its events when it completes.
fn answered(playing: &mut Playing, update: &ServerMsg) -> Option<Option<String>> {
    match (update, &playing.derived) {
        (ServerMsg::Event { event }, None) => match &event.kind {
            EventKind::Reveal { choice, .. } => Some(Some(choice.clone())),
            _ => None,
        },
        (ServerMsg::Event { event }, Some(_)) => {
            playing.events.push(event.clone());
            None
        }
        (
            ServerMsg::Done {
                outcome: Outcome::Completed,
                ..
            },
            Some(derived),
        ) => Some(derived.of(&playing.events)),
        _ => None,
    }
}

/// The room's run answered its question: the answers are scored and kept (before anyone is
/// shown them, so a trainer who downloads the results at once finds the round in them), then
/// the lesson and the tally go out.
async fn reveal(room: &Room, playing: &Playing, answer: Option<&str>, engine: &Engine) {
    let Some(Revealed { tally, scored }) = room.reveal(&playing.scenario, &playing.variant, answer) else {
        return;
    };
    if let Some(Scored {
        results,
        lesson,
        round,
        answers,
    }) = scored
    {
        if let Err(error) = engine.store.keep_answers(&results, &lesson, round, &answers).await {
            tracing::warn!(%error, room = %room.id, "could not keep a lesson round's answers");
        }
        room.show_lesson();
    }
    room.feed.publish(tally);
}

async fn obey(order: Order, run: &mut Option<Playing>, room: &Room, engine: &Arc<Engine>) -> Option<ServerMsg> {
    match order {
        Order::Start {
            scenario,
            variant,
            mode,
            postgres,
            slot,
        } => {
            if run.is_some() {
                return Some(error(
                    ErrorCode::Busy,
                    "the room's run is still going; cancel it or wait for done",
                ));
            }
            let replay = lock(&room.session)
                .as_ref()
                .and_then(|s| s.replay_of(&scenario, &variant));
            let started = match replay {
                // A lesson's recording round plays its run again; nothing runs.
                Some(Replay::Kept(id)) => kept(&id, engine).await.map(RunHandle::replay).map_err(ServerMsg::from),
                Some(Replay::Sent(run)) => Ok(RunHandle::replay(StoredRun::clone(&run))),
                None => start(&scenario, &variant, mode, postgres, engine).await,
            };
            match started {
                Ok(handle) => {
                    room.question_played(&scenario, &variant, true);
                    room.feed.begin_run();
                    *run = Some(Playing {
                        handle,
                        _slot: slot,
                        derived: room.derived_for(&scenario, &variant),
                        scenario,
                        variant,
                        events: Vec::new(),
                    });
                    None
                }
                Err(refused) => Some(refused),
            }
        }
        Order::Next => step_run(run.as_ref().map(|playing| &playing.handle)),
        Order::Cancel => cancel_run(run.as_ref().map(|playing| &playing.handle)),
        // A new question while the last one's run still plays would put its answer under the
        // new question; the trainer's page does not offer it, and the room refuses it.
        Order::Ask { .. } if run.is_some() => Some(error(
            ErrorCode::Busy,
            "the room's run is still going; ask the next question when it is done",
        )),
        // A lesson's question is its round's: the trainer moves round by round.
        Order::Ask { .. } if lock(&room.session).is_some() => Some(error(
            ErrorCode::BadFrame,
            "this room runs a lesson: open its rounds (round) instead of asking a question",
        )),
        Order::Ask { scenario, variant } => match crate::control::scenario_for(&scenario, &engine.store).await {
            Ok(def) => room.ask(&def.info(), &variant).err().map(ServerMsg::from),
            Err(refusal) => Some(refusal.into()),
        },
        Order::Round { .. } | Order::Recording { .. } | Order::Leaderboard { .. } | Order::Seat { .. } => {
            lesson_order(order, run, room, engine).await
        }
        Order::Close => None,
    }
}

/// Starts `scenario` at `variant` on the engine, or the refusal to tell the trainer.
async fn start(
    scenario: &str,
    variant: &str,
    mode: Mode,
    postgres: Option<u32>,
    engine: &Arc<Engine>,
) -> Result<RunHandle, ServerMsg> {
    let def = crate::control::scenario_for(scenario, &engine.store)
        .await
        .map_err(ServerMsg::from)?;
    engine
        .start_on(def, variant, mode, postgres)
        .await
        .map_err(|refused| start_refusal(&refused))
}

/// A recording round's race, with the scenario and variant of the kept run it replays.
async fn replayed(mut race: RoundRace, engine: &Engine) -> Result<RoundRace, Refusal> {
    let Some(Replay::Kept(id)) = &race.replay else {
        return Ok(race);
    };
    let run = kept(id, engine).await?;
    race.scenario = run.scenario;
    race.variant = run.variant;
    Ok(race)
}

/// The run this racelab keeps under `id`, or why it cannot be replayed, as the trainer is told.
async fn kept(id: &str, engine: &Engine) -> Result<StoredRun, Refusal> {
    crate::lessons::replayable(engine, id).await.map_err(|why| Refusal {
        code: match why {
            crate::lessons::Unreplayable::NotKept(_) => ErrorCode::UnknownScenario,
            crate::lessons::Unreplayable::Store { .. } => ErrorCode::ServiceDown,
        },
        message: why.to_string(),
    })
}

/// Opens round `number` playing the `recording` its trainer's page sent: read here (whatever
/// replica it reached first), its question the round's own or its scenario's, as the recording
/// describes it.
fn sent_round(number: usize, recording: &str, room: &Room) -> Result<(), Refusal> {
    let recording = shared::recording::read(recording).map_err(|why| Refusal {
        code: ErrorCode::BadFrame,
        message: format!("round {number}'s recording cannot be played: {why}"),
    })?;
    let race = lock(&room.session)
        .as_ref()
        .ok_or_else(no_lesson)?
        .sent(number, &recording)?;
    room.open_round(number, &race, &recording.scenario)
}

/// The orders of a room that runs a lesson.
async fn lesson_order(order: Order, run: &Option<Playing>, room: &Room, engine: &Engine) -> Option<ServerMsg> {
    let refused = match order {
        Order::Round { .. } | Order::Recording { .. } if run.is_some() => {
            return Some(error(
                ErrorCode::Busy,
                "the room's run is still going; open the next round when it is done",
            ));
        }
        Order::Recording { number, recording } => sent_round(number, &recording, room).err(),
        Order::Round { number, variant } => {
            let race = lock(&room.session)
                .as_ref()
                .ok_or_else(no_lesson)
                .and_then(|session| session.race(number, variant.as_deref()));
            let race = match race {
                Ok(race) => replayed(race, engine).await,
                Err(refusal) => Err(refusal),
            };
            match race {
                Ok(race) => match crate::control::scenario_for(&race.scenario, &engine.store).await {
                    Ok(def) => room.open_round(number, &race, &def.info()).err(),
                    Err(refusal) => Some(refusal),
                },
                Err(refusal) => Some(refusal),
            }
        }
        Order::Seat { handle, seat } => room.seat(&handle, seat).err(),
        Order::Leaderboard { shown } => room.show_leaderboard(shown).err(),
        _ => None,
    };
    refused.map(ServerMsg::from)
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
