//! One connection of a spec run: a session of the spec, or the tester's own control connection.
//!
//! On `tokio-postgres`, not sqlx like the labs' actors: a spec's output is what the isolation
//! tester prints, and that needs what sqlx keeps to itself — the notices a session receives
//! (`s1: NOTICE:  …`), the column names of a result without rows, the server's own text for
//! every value, `LISTEN`'s notifications, and a cancel request for a step that waits too long.

use super::table::ResultSet;
use futures_util::StreamExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::{AsyncMessage, Client, NoTls, SimpleQueryMessage};

/// How a step (or a setup) ended, as the tester reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The server's error: printed as `ERROR:  <message>` (severity and primary message only,
    /// as the tester prints it: a detail may hold transaction ids that differ run to run).
    Server {
        severity: String,
        message: String,
        sqlstate: String,
    },
    /// MariaDB's error: printed as the mysql client prints it, `ERROR 1213 (40001): <message>`.
    Mariadb {
        number: u16,
        sqlstate: String,
        message: String,
    },
    /// The connection itself failed (terminated, lost).
    Lost(String),
}

impl Failure {
    /// The line the tester prints for it.
    pub fn line(&self) -> String {
        match self {
            Failure::Server { severity, message, .. } => format!("{severity}:  {message}"),
            Failure::Mariadb {
                number,
                sqlstate,
                message,
            } => format!("ERROR {number} ({sqlstate}): {message}"),
            Failure::Lost(reason) => reason.clone(),
        }
    }

    /// The code a lane's error badge and the matrix show: PostgreSQL's SQLSTATE, MariaDB's
    /// error number (as its labs show it); none for a lost connection.
    pub fn code(&self) -> Option<String> {
        match self {
            Failure::Server { sqlstate, .. } => Some(sqlstate.clone()),
            Failure::Mariadb { number, .. } => Some(number.to_string()),
            Failure::Lost(_) => None,
        }
    }

    fn of(error: tokio_postgres::Error) -> Failure {
        match error.as_db_error() {
            Some(db) => Failure::Server {
                severity: db.severity().to_owned(),
                message: db.message().to_owned(),
                sqlstate: db.code().code().to_owned(),
            },
            None => Failure::Lost(error.to_string()),
        }
    }
}

/// What one query sent back: every result set before the end, and the error that ended it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    pub sets: Vec<ResultSet>,
    pub failure: Option<Failure>,
    /// Whether the last statement returned rows (libpq's `PQexec` returns only the last
    /// result, so a setup prints a table only then).
    pub ends_with_rows: bool,
    /// The bytes received when the query was cancelled for sending more than
    /// [`RECEIVED_AT_MOST`].
    pub cut_at: Option<usize>,
}

impl Answer {
    /// The answer of a query whose task stopped before it answered (its connection went with
    /// it).
    pub fn lost() -> Answer {
        Answer {
            failure: Some(Failure::Lost("the session's query task stopped".into())),
            ..Answer::default()
        }
    }
}

/// The most bytes of rows racelab reads from one query before it cancels it. Rows past what is
/// kept are only counted, but each is still sent, read and taken apart: a step selecting a
/// megabyte a row, a thousand times over, would cost racelab a gigabyte's work for a count.
pub const RECEIVED_AT_MOST: usize = 8 << 20;

/// How much of a query's rows a run keeps: a spec may select millions.
#[derive(Clone, Copy, Debug)]
pub struct Keep {
    pub rows: usize,
    pub bytes: usize,
}

/// A `LISTEN`ed notification, as the tester reports it after the step that received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    pub channel: String,
    pub payload: String,
    pub from_pid: i32,
}

/// The most bytes of notices and notifications one query may send: they arrive between
/// results, whenever the server sends them. A spec raising a megabyte notice in a loop would
/// otherwise fill racelab's memory, or the transcript, before its step limit came. Counted
/// from the query's start whether racelab has taken them yet or not: racelab takes them while
/// it waits for a step, and a count freed by each take let a flood taken quickly enough run on
/// (2.6 MB printed on a loaded machine) instead of being cancelled at its first megabyte.
pub const INBOX_AT_MOST: usize = 1 << 20;

/// The most bytes of witness reports a session holds (about 100,000 rows written): past it the
/// witness has lost count, and the permutation gets no proof rather than a wrong one. Not a
/// reason to cancel anything: a step may rightly write that many rows.
pub const WITNESSED_AT_MOST: usize = 16 << 20;

/// What a session's connection task has received, counted: what racelab has not yet taken
/// (the witness's reports, freed as taken), or what the query in flight has sent (notices and
/// notifications, counted anew at each query).
struct Inbox {
    /// At most this many bytes counted.
    bound: usize,
    bytes: AtomicUsize,
    /// Something was dropped for want of room.
    overflowed: AtomicBool,
    /// The overflow has been said (once per query).
    told: AtomicBool,
}

impl Inbox {
    fn new(bound: usize) -> Inbox {
        Inbox {
            bound,
            bytes: AtomicUsize::new(0),
            overflowed: AtomicBool::new(false),
            told: AtomicBool::new(false),
        }
    }

    /// A new query starts: nothing it sent is counted yet.
    fn start_query(&self) {
        self.bytes.store(0, Ordering::Release);
        self.overflowed.store(false, Ordering::Release);
        self.told.store(false, Ordering::Release);
    }

    /// True once per overflow: the overflow is to be said now.
    fn tell_overflow(&self) -> bool {
        self.overflowed.load(Ordering::Acquire) && !self.told.swap(true, Ordering::AcqRel)
    }

    /// Whether `bytes` more fit; if they do, they are counted in.
    fn admit(&self, bytes: usize) -> bool {
        self.bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held + bytes <= self.bound).then_some(held + bytes)
            })
            .is_ok()
    }

    /// `bytes` taken by racelab.
    fn release(&self, bytes: usize) {
        let _ = self.bytes.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            Some(held.saturating_sub(bytes))
        });
    }
}

/// What the connection task keeps of one message it receives, and its size in the inbox.
trait Held {
    fn held(&self) -> usize;
}

impl Held for String {
    fn held(&self) -> usize {
        self.len()
    }
}

impl Held for Notification {
    fn held(&self) -> usize {
        self.channel.len() + self.payload.len()
    }
}

/// Sends `item` to `to` if the inbox has room for it; otherwise drops it. True the first time
/// something is dropped: the query sending such a flood is then cancelled ([`cancel`]).
fn deliver<T: Held>(inbox: &Inbox, to: &mpsc::UnboundedSender<T>, item: T) -> bool {
    if inbox.admit(item.held()) {
        let _ = to.send(item);
        return false;
    }
    !inbox.overflowed.swap(true, Ordering::AcqRel)
}

/// Cancels the query in flight on the connection `token` names, without waiting for it.
fn cancel(token: &tokio_postgres::CancelToken) {
    let token = token.clone();
    tokio::spawn(async move { token.cancel_query(NoTls).await });
}

/// The server a session speaks to.
enum Link {
    Postgres(Arc<Client>),
    Mariadb(super::mariadb::MariaLink),
}

/// One open connection.
pub struct SpecSession {
    link: Link,
    pid: i32,
    inbox: Arc<Inbox>,
    /// The witness's reports' own count ([`WITNESSED_AT_MOST`]).
    witness_inbox: Arc<Inbox>,
    notices: mpsc::UnboundedReceiver<String>,
    /// The writes racelab's witness trigger reported ([`super::witness`]): never printed.
    witnessed: mpsc::UnboundedReceiver<String>,
    notifications: mpsc::UnboundedReceiver<Notification>,
    keep: Keep,
}

/// A notice as libpq's default notice processor words it: `NOTICE:  text`, then its detail,
/// hint and internal query, one line each, the last line ending in a newline.
fn notice_text(notice: &tokio_postgres::error::DbError) -> String {
    let mut text = format!("{}:  {}\n", notice.severity(), notice.message());
    if let Some(detail) = notice.detail() {
        text.push_str(&format!("DETAIL:  {detail}\n"));
    }
    if let Some(hint) = notice.hint() {
        text.push_str(&format!("HINT:  {hint}\n"));
    }
    text
}

impl SpecSession {
    /// Connects with `config` and starts the task that reads the connection (and with it the
    /// notices and notifications the server sends between results).
    pub async fn connect(config: &tokio_postgres::Config, keep: Keep) -> Result<SpecSession, tokio_postgres::Error> {
        let (client, mut connection) = config.connect(NoTls).await?;
        let (notice_tx, notices) = mpsc::unbounded_channel();
        let (notification_tx, notifications) = mpsc::unbounded_channel();
        let (witness_tx, witnessed) = mpsc::unbounded_channel();
        let inbox = Arc::new(Inbox::new(INBOX_AT_MOST));
        let witness_inbox = Arc::new(Inbox::new(WITNESSED_AT_MOST));
        let (held, reports, token) = (inbox.clone(), witness_inbox.clone(), client.cancel_token());
        tokio::spawn(async move {
            loop {
                match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                    Some(Ok(AsyncMessage::Notice(notice))) if notice.message() == super::witness::MARK => {
                        let report = notice.detail().unwrap_or_default().to_owned();
                        deliver(&reports, &witness_tx, report);
                    }
                    Some(Ok(AsyncMessage::Notice(notice))) => {
                        if deliver(&held, &notice_tx, notice_text(&notice)) {
                            cancel(&token);
                        }
                    }
                    Some(Ok(AsyncMessage::Notification(n))) => {
                        let notification = Notification {
                            channel: n.channel().to_owned(),
                            payload: n.payload().to_owned(),
                            from_pid: n.process_id(),
                        };
                        if deliver(&held, &notification_tx, notification) {
                            cancel(&token);
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => break,
                }
            }
        });
        let pid = client
            .simple_query("SELECT pg_backend_pid()")
            .await?
            .into_iter()
            .find_map(|m| match m {
                SimpleQueryMessage::Row(row) => row.get(0).and_then(|p| p.parse().ok()),
                _ => None,
            })
            .unwrap_or(0);
        Ok(SpecSession {
            link: Link::Postgres(Arc::new(client)),
            pid,
            inbox,
            witness_inbox,
            notices,
            witnessed,
            notifications,
            keep,
        })
    }

    /// A session of a spec run on MariaDB ([`super::mariadb`]): no notices, notifications or
    /// witness reports ever arrive on it (MariaDB sends none of them).
    pub fn on_mariadb(link: super::mariadb::MariaLink, keep: Keep) -> SpecSession {
        let pid = i32::try_from(link.thread()).unwrap_or(i32::MAX);
        let (_, notices) = mpsc::unbounded_channel();
        let (_, notifications) = mpsc::unbounded_channel();
        let (_, witnessed) = mpsc::unbounded_channel();
        SpecSession {
            link: Link::Mariadb(link),
            pid,
            inbox: Arc::new(Inbox::new(INBOX_AT_MOST)),
            witness_inbox: Arc::new(Inbox::new(WITNESSED_AT_MOST)),
            notices,
            witnessed,
            notifications,
            keep,
        }
    }

    /// The backend's process id (on MariaDB, the session's thread id).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The connection's client, for the control connection's own queries on PostgreSQL; none
    /// on MariaDB.
    pub fn client(&self) -> Option<&Client> {
        match &self.link {
            Link::Postgres(client) => Some(client),
            Link::Mariadb(_) => None,
        }
    }

    /// Sends `sql` (one or several statements, over the simple query protocol as the tester
    /// does, or MariaDB's text protocol) and returns at once; the answer arrives on the
    /// receiver when the query is done.
    pub fn send(&self, sql: &str) -> oneshot::Receiver<Answer> {
        let (reply, answer) = oneshot::channel();
        let sql = sql.to_owned();
        let keep = self.keep;
        self.inbox.start_query();
        match &self.link {
            Link::Postgres(client) => {
                let client = client.clone();
                tokio::spawn(async move {
                    let _ = reply.send(run(&client, &sql, keep).await);
                });
            }
            Link::Mariadb(link) => {
                let link = link.clone();
                tokio::spawn(async move {
                    let _ = reply.send(link.run(&sql, keep).await);
                });
            }
        }
        answer
    }

    /// [`SpecSession::send`]s `sql`, and `then` right behind it on the same connection: the
    /// server reads `then` as soon as `sql` is done, with no round trip to racelab between (what
    /// racelab asks after a step or a setup costs it no wait). Each is a query of its own, as
    /// if sent after the first's answer: `then` does not share an implicit transaction with
    /// `sql`, and runs whether `sql` failed or not.
    pub fn send_then(&self, sql: &str, then: &str) -> (oneshot::Receiver<Answer>, oneshot::Receiver<Answer>) {
        let (reply, answer) = oneshot::channel();
        let (then_reply, then_answer) = oneshot::channel();
        let (sql, then) = (sql.to_owned(), then.to_owned());
        let keep = self.keep;
        self.inbox.start_query();
        let client = match &self.link {
            Link::Postgres(client) => client.clone(),
            // One after the other on MariaDB (only the witness sends two, and it is
            // PostgreSQL's).
            Link::Mariadb(link) => {
                let link = link.clone();
                tokio::spawn(async move {
                    let _ = reply.send(link.run(&sql, keep).await);
                    let _ = then_reply.send(link.run(&then, keep).await);
                });
                return (answer, then_answer);
            }
        };
        tokio::spawn(async move {
            // Each request is queued on the connection when its stream is made, in this order.
            let first = client.simple_query_raw(&sql).await;
            let second = client.simple_query_raw(&then).await;
            let (first, second) = (
                collect(&client, first, keep).await,
                collect(&client, second, keep).await,
            );
            if first.cut_at.is_some() || second.cut_at.is_some() {
                take_late_cancel(&client).await;
            }
            let _ = reply.send(first);
            let _ = then_reply.send(second);
        });
        (answer, then_answer)
    }

    /// Runs `sql` and waits for its answer.
    pub async fn exec(&self, sql: &str) -> Answer {
        self.inbox.start_query();
        match &self.link {
            Link::Postgres(client) => run(client, sql, self.keep).await,
            Link::Mariadb(link) => link.run(sql, self.keep).await,
        }
    }

    /// Asks the server to cancel the query in flight (the tester's answer to a step that waits
    /// past its limit); why not, if it could not be asked.
    pub async fn cancel(&self) -> Result<(), String> {
        match &self.link {
            Link::Postgres(client) => client
                .cancel_token()
                .cancel_query(NoTls)
                .await
                .map_err(|e| e.to_string()),
            Link::Mariadb(link) => link.cancel().await,
        }
    }

    /// The notices received since last asked, each as the tester prints it (after the session's
    /// name). Once the query has sent more than [`INBOX_AT_MOST`], racelab's line saying so
    /// follows them, once.
    pub fn take_notices(&mut self) -> Vec<String> {
        let mut notices = take(&mut self.notices);
        if self.inbox.tell_overflow() {
            notices.push(format!(
                "racelab: more than {} MB of notices and notifications arrived before they could be \
                 printed; the rest were dropped and the query sending them cancelled\n",
                INBOX_AT_MOST >> 20
            ));
        }
        notices
    }

    /// The witness trigger's reports received since last asked (JSON objects, one per row).
    pub fn take_witnessed(&mut self) -> Vec<String> {
        let taken = take(&mut self.witnessed);
        self.witness_inbox.release(taken.iter().map(Held::held).sum());
        taken
    }

    /// Whether witness reports were dropped for want of room since last asked: what the
    /// witness saw is then incomplete.
    pub fn take_witness_lost(&self) -> bool {
        self.witness_inbox.overflowed.swap(false, Ordering::AcqRel)
    }

    /// The notifications received since last asked.
    pub fn take_notifications(&mut self) -> Vec<Notification> {
        take(&mut self.notifications)
    }
}

/// Everything `from` holds.
fn take<T>(from: &mut mpsc::UnboundedReceiver<T>) -> Vec<T> {
    std::iter::from_fn(|| from.try_recv().ok()).collect()
}

/// The bytes `rows` rows print as, at `widths` (the tester pads every value, NULL included, to
/// its column's width): a header, a rule, the rows, each with a separator per column.
pub(super) fn printed_size(widths: &[usize], rows: usize) -> usize {
    (rows + 2) * (widths.iter().sum::<usize>() + widths.len())
}

/// Runs `sql` and collects every result set, keeping at most `keep` of their rows: at most
/// `keep.rows` a set, and as many as print in `keep.bytes` in all (counted as printed, padding
/// included: a column of NULLs beside one long value prints as wide as that value on every row).
async fn run(client: &Client, sql: &str, keep: Keep) -> Answer {
    let answer = collect(client, client.simple_query_raw(sql).await, keep).await;
    if answer.cut_at.is_some() {
        take_late_cancel(client).await;
    }
    answer
}

/// After a query cut for what it sent ([`RECEIVED_AT_MOST`]): the cancel racelab sent may reach
/// the backend only once that query has ended (a cancel request is a connection of its own,
/// which the server reads when it reads it), and strike the connection's next query: the
/// ledger's, say. A short sleep of racelab's own takes it, whenever within half a second it
/// comes (a cancel that came while the backend waited for a command was ignored; the sleep then
/// just ends).
async fn take_late_cancel(client: &Client) {
    let _ = client.simple_query("SELECT pg_catalog.pg_sleep(0.5)").await;
}

/// The answer of a query sent (its stream, or why it could not be sent), as [`run`] says it.
async fn collect(
    client: &Client,
    sent: Result<tokio_postgres::SimpleQueryStream, tokio_postgres::Error>,
    keep: Keep,
) -> Answer {
    let mut answer = Answer::default();
    let stream = match sent {
        Ok(stream) => stream,
        Err(error) => {
            answer.failure = Some(Failure::of(error));
            return answer;
        }
    };
    futures_util::pin_mut!(stream);
    let mut open: Option<(ResultSet, Vec<usize>)> = None;
    // What the sets already complete print as, and every value received.
    let mut spent = 0usize;
    let mut received = 0usize;
    let mut cancelling = None;
    while let Some(message) = stream.next().await {
        match message {
            Ok(SimpleQueryMessage::RowDescription(columns)) => {
                let set = ResultSet {
                    columns: columns.iter().map(|c| c.name().to_owned()).collect(),
                    ..ResultSet::default()
                };
                let widths = set.columns.iter().map(String::len).collect();
                open = Some((set, widths));
            }
            Ok(SimpleQueryMessage::Row(row)) => {
                let Some((set, widths)) = open.as_mut() else { continue };
                let values: Vec<Option<String>> = (0..row.len()).map(|i| row.get(i).map(str::to_owned)).collect();
                // A value's bytes, and one for each value (a NULL costs its reading too).
                received += values
                    .iter()
                    .map(|v| 1 + v.as_ref().map_or(0, String::len))
                    .sum::<usize>();
                if received > RECEIVED_AT_MOST && answer.cut_at.is_none() {
                    answer.cut_at = Some(received);
                    let cancel = client.cancel_token();
                    cancelling = Some(tokio::spawn(async move { cancel.cancel_query(NoTls).await }));
                }
                let wider: Vec<usize> = widths
                    .iter()
                    .enumerate()
                    .map(|(j, w)| (*w).max(values.get(j).and_then(|v| v.as_ref()).map_or(0, String::len)))
                    .collect();
                if set.rows.len() < keep.rows && spent + printed_size(&wider, set.rows.len() + 1) <= keep.bytes {
                    *widths = wider;
                    set.rows.push(values);
                } else {
                    set.rows_dropped += 1;
                }
            }
            Ok(SimpleQueryMessage::CommandComplete(_)) => {
                answer.ends_with_rows = open.is_some();
                if let Some((set, widths)) = open.take() {
                    spent += printed_size(&widths, set.rows.len());
                    answer.sets.push(set);
                }
            }
            Ok(_) => {}
            Err(error) => {
                answer.failure = Some(Failure::of(error));
                break;
            }
        }
    }
    // The cancel is on its way before the answer is given; [`take_late_cancel`], once no query
    // of the caller's is queued behind this one, takes it if it comes late.
    if let Some(cancelling) = cancelling {
        let _ = cancelling.await;
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_sends_at_most_the_bound_taken_or_not_and_the_next_starts_anew() {
        let inbox = Inbox::new(INBOX_AT_MOST);
        let (to, mut from) = mpsc::unbounded_channel::<String>();
        assert!(!deliver(&inbox, &to, "x".repeat(INBOX_AT_MOST - 1)));
        assert_eq!(take(&mut from).len(), 1);
        assert!(!inbox.tell_overflow(), "nothing dropped yet");
        assert!(deliver(&inbox, &to, "yy".to_owned()), "taken, still counted: cancel");
        assert!(!deliver(&inbox, &to, "yy".to_owned()), "cancelled once, not again");
        assert!(take(&mut from).is_empty());
        assert!(inbox.tell_overflow(), "said once");
        assert!(!inbox.tell_overflow(), "and not again");
        inbox.start_query();
        assert!(!deliver(&inbox, &to, "yy".to_owned()));
        assert_eq!(take(&mut from), ["yy"]);
        inbox.start_query();
        assert!(!deliver(&inbox, &to, "x".repeat(INBOX_AT_MOST)), "at most, not fewer");
        assert!(deliver(&inbox, &to, "z".to_owned()), "a second flood is cancelled too");
    }

    #[test]
    fn the_witness_frees_what_is_taken() {
        let inbox = Inbox::new(8);
        let (to, mut from) = mpsc::unbounded_channel::<String>();
        assert!(!deliver(&inbox, &to, "x".repeat(8)));
        inbox.release(take(&mut from).iter().map(Held::held).sum());
        assert!(!deliver(&inbox, &to, "x".repeat(8)), "what was taken is free again");
    }

    #[test]
    fn what_a_set_prints_as_is_counted_with_its_padding() {
        let set = ResultSet {
            columns: vec!["a".into(), "b".into()],
            rows: vec![vec![Some("x".repeat(100)), None], vec![None, Some("yy".into())]],
            rows_dropped: 0,
        };
        let footer = "(2 rows)\n\n".len();
        assert_eq!(
            printed_size(&[100, 2], 2),
            super::super::table::print(&set).len() - footer
        );
    }
}
