//! A Redis actor: one reader-named client (a request racing for the lock) on its own connection.
//!
//! Every command is a step on the actor's lane (`service: Redis`), written as redis-cli would
//! show it and with the tutorial's key names: the run's prefix is added on the way out and never
//! shown. Replies are results in redis-cli's words (`OK`, `(nil)`, `(integer) 1`); error replies
//! are errors with their first word as the code (`ERR unknown command 'delex'` is the very
//! failure the locks tutorial warns about, so it is data, not a crash).
//!
//! Why a connection each: fifty racing servers are fifty clients, and one shared multiplexed
//! connection would queue their commands in one pipe, which is not the race the tutorial shows.

use super::error::{RunError, StepError};
use super::lane::Lane;
use super::run::Run;
use shared::event::ErrorKind;
use shared::{Service, Table, Value};
use std::time::Duration;

/// How long an actor may wait to connect to Redis.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// One argument of a command: a key (prefixed with the run's namespace on the way out) or a
/// plain argument.
#[derive(Clone, Debug)]
enum Part {
    Key(String),
    Arg(String),
    /// A Lua script: its source on the wire, its name on the timeline.
    Script {
        name: String,
        source: String,
    },
}

/// A Redis command as a scenario writes it: `Command::new("SET").key("lock:wallet:42")
/// .arg(token).arg("NX").arg("PX").arg(2000)`.
#[derive(Clone, Debug)]
pub struct Command {
    name: String,
    parts: Vec<Part>,
}

impl Command {
    pub fn new(name: &str) -> Command {
        Command {
            name: name.to_owned(),
            parts: Vec::new(),
        }
    }

    /// A key, as the tutorial names it; the run's prefix is added when the command is sent.
    pub fn key(mut self, key: &str) -> Command {
        self.parts.push(Part::Key(key.to_owned()));
        self
    }

    /// A plain argument (a value, a flag, a TTL).
    pub fn arg(mut self, arg: impl ToString) -> Command {
        self.parts.push(Part::Arg(arg.to_string()));
        self
    }

    /// A Lua script (for `EVAL`): sent whole, shown as `<name>` so a lane stays readable; the
    /// scenario's page says what the script does.
    pub fn script(mut self, name: &str, source: &str) -> Command {
        self.parts.push(Part::Script {
            name: name.to_owned(),
            source: source.to_owned(),
        });
        self
    }

    /// The command as redis-cli shows it, with the tutorial's key names: `SET lock:wallet:42
    /// 4Q… NX PX 2000`. Arguments with spaces (a Lua script) are quoted.
    pub fn text(&self) -> String {
        let mut text = self.name.clone();
        for part in &self.parts {
            text.push(' ');
            let s = match part {
                Part::Key(s) | Part::Arg(s) => s,
                Part::Script { name, .. } => {
                    text.push_str(&format!("<{name}>"));
                    continue;
                }
            };
            if s.contains(char::is_whitespace) || s.is_empty() {
                text.push_str(&format!("'{}'", s.replace('\'', "\\'")));
            } else {
                text.push_str(s);
            }
        }
        text
    }

    /// The command as sent, under `prefix`.
    fn packed(&self, prefix: &str) -> redis::Cmd {
        let mut cmd = redis::cmd(&self.name);
        for part in &self.parts {
            match part {
                Part::Key(key) => cmd.arg(format!("{prefix}{key}")),
                Part::Arg(arg) | Part::Script { source: arg, .. } => cmd.arg(arg),
            };
        }
        cmd
    }
}

/// A `redis-server` the run started for itself; killed when dropped.
pub struct PrivateRedis {
    pub client: redis::Client,
    /// `127.0.0.1:<port>`.
    pub address: String,
    _child: tokio::process::Child,
}

/// The handle a scenario holds for one Redis actor.
pub struct RedisActor {
    lane: Lane,
    conn: redis::aio::MultiplexedConnection,
    prefix: String,
}

impl Run {
    /// Opens a Redis actor: its own connection, its keys under the run's prefix.
    pub async fn redis(&self, name: &str) -> Result<RedisActor, RunError> {
        self.open_redis(name, false).await
    }

    /// A quiet Redis actor (one of fifty racing requests whose steps would drown the timeline).
    pub async fn redis_worker(&self, name: &str) -> Result<RedisActor, RunError> {
        self.open_redis(name, true).await
    }

    async fn open_redis(&self, name: &str, quiet: bool) -> Result<RedisActor, RunError> {
        let client = self.core().reach.services.redis.clone();
        self.redis_on(name, &client, None, quiet).await
    }

    /// A Redis actor on `client`'s server (a private one, see [`Run::private_redis`]), whose
    /// every reply is waited for at most `response_timeout` (a client's own read timeout), if
    /// given.
    pub async fn redis_on(
        &self,
        name: &str,
        client: &redis::Client,
        response_timeout: Option<Duration>,
        quiet: bool,
    ) -> Result<RedisActor, RunError> {
        let prefix = self
            .core()
            .sandbox
            .redis_prefix
            .clone()
            .ok_or_else(|| RunError::Other("this scenario's sandbox has no Redis namespace".into()))?;
        let mut config = redis::AsyncConnectionConfig::new().set_connection_timeout(CONNECT_TIMEOUT);
        if let Some(timeout) = response_timeout {
            config = config.set_response_timeout(timeout);
        }
        let conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| RunError::Other(format!("cannot reach Redis for {name}: {e}")))?;
        Ok(RedisActor {
            lane: self.lane(name, quiet),
            conn,
            prefix,
        })
    }

    /// Starts a `redis-server` of the run's own on a free loopback port, for a scenario that
    /// must stall Redis itself (`CLIENT PAUSE`) without stalling the server every other reader
    /// uses. It keeps nothing on disk and dies with the handle (and so with the run).
    pub async fn private_redis(&self) -> Result<PrivateRedis, RunError> {
        use crate::embedded::{process, redis as server};
        let port =
            process::free_port().map_err(|e| RunError::Other(format!("no free port for a private Redis: {e}")))?;
        let mut command = server::command(port);
        command
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        // kill_on_drop covers every way a run ends; this covers racelab itself being killed.
        process::die_with_parent(&mut command, libc::SIGKILL);
        let child = command
            .spawn()
            .map_err(|e| RunError::Other(format!("cannot start redis-server (is it installed?): {e}")))?;
        let url = format!("redis://127.0.0.1:{port}");
        let client = redis::Client::open(url.as_str()).map_err(|e| RunError::Other(e.to_string()))?;
        if !server::answers_soon(&url).await {
            return Err(RunError::Other(format!(
                "the private redis-server on port {port} never answered"
            )));
        }
        Ok(PrivateRedis {
            client,
            address: format!("127.0.0.1:{port}"),
            _child: child,
        })
    }

    /// A ledger table of Redis keys (`key`, `value`, `ttl_ms`), read with racelab's own
    /// connection: the tutorial's key names, their string values (or their type), and PTTL
    /// (`-1` never expires, `-2` absent, which is shown as a missing row).
    pub async fn redis_keys(&self, name: &str, keys: &[&str]) -> Result<Table, RunError> {
        let core = self.core();
        let prefix = core.sandbox.redis_prefix.clone().unwrap_or_default();
        let mut conn = crate::sandbox::redis::connect(&core.reach.services.redis)
            .await
            .map_err(|e| RunError::Other(format!("cannot reach Redis: {e}")))?;
        let mut rows = Vec::new();
        for key in keys {
            let full = format!("{prefix}{key}");
            let kind: String = redis::cmd("TYPE")
                .arg(&full)
                .query_async(&mut conn)
                .await
                .map_err(|e| RunError::Other(format!("Redis: {e}")))?;
            if kind == "none" {
                continue;
            }
            let value = if kind == "string" {
                let value: String = redis::cmd("GET")
                    .arg(&full)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| RunError::Other(format!("Redis: {e}")))?;
                Value::Text(value)
            } else {
                Value::Text(format!("<{kind}>"))
            };
            let ttl: i64 = redis::cmd("PTTL")
                .arg(&full)
                .query_async(&mut conn)
                .await
                .map_err(|e| RunError::Other(format!("Redis: {e}")))?;
            rows.push(vec![Value::from(*key), value, Value::Int(ttl)]);
        }
        Ok(Table {
            name: name.to_owned(),
            columns: vec!["key".into(), "value".into(), "ttl_ms".into()],
            key_columns: 1,
            rows,
        })
    }
}

impl RedisActor {
    /// The reader's name for this actor.
    pub fn name(&self) -> &str {
        self.lane.name()
    }

    /// The actor's lane, for transcript lines.
    pub fn lane(&self) -> &Lane {
        &self.lane
    }

    /// Sends one command and waits for its reply.
    pub async fn run(&self, command: &Command) -> Result<redis::Value, StepError> {
        self.send(command, None, true).await
    }

    /// Sends one command without a card on the timeline: a retry of the step just shown (a busy
    /// `SET NX` tried every few milliseconds), which the caller sums up in a note instead. An
    /// error reply still shows.
    pub async fn run_again(&self, command: &Command) -> Result<redis::Value, StepError> {
        self.send(command, None, false).await
    }

    /// Sends one command and gives up waiting after `deadline` (the command may still run): a
    /// timeout error on this lane, like a client whose context deadline cut the read short.
    pub async fn run_within(&self, command: &Command, deadline: Duration) -> Result<redis::Value, StepError> {
        self.send(command, Some(deadline), true).await
    }

    async fn send(
        &self,
        command: &Command,
        deadline: Option<Duration>,
        shown: bool,
    ) -> Result<redis::Value, StepError> {
        let text = command.text();
        if shown {
            self.lane.gate(Service::Redis, &text).await;
            self.lane.step(Service::Redis, &text, &[], None);
        }
        let packed = command.packed(&self.prefix);
        let mut conn = self.conn.clone();
        let reply = packed.query_async::<redis::Value>(&mut conn);
        let reply = match deadline {
            None => reply.await,
            Some(limit) => match tokio::time::timeout(limit, reply).await {
                Ok(reply) => reply,
                Err(_) => {
                    let after_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
                    self.lane
                        .error(ErrorKind::Timeout, None, format!("no reply within {after_ms} ms"));
                    return Err(StepError::Timeout {
                        actor: self.name().to_owned(),
                        after_ms,
                    });
                }
            },
        };
        match reply {
            Ok(value) => {
                if shown {
                    self.lane.result(reply_text(&value, &self.prefix), None, None);
                }
                Ok(value)
            }
            Err(error) if error.is_timeout() => {
                // The connection's own read timeout, not the caller's deadline.
                self.lane.error(ErrorKind::Timeout, None, format!("no reply: {error}"));
                Err(StepError::Timeout {
                    actor: self.name().to_owned(),
                    after_ms: 0,
                })
            }
            Err(error) if error.kind() == redis::ErrorKind::IoError || error.is_connection_dropped() => {
                let message = error.to_string();
                self.lane.error(ErrorKind::Connection, None, message.clone());
                Err(StepError::Lost {
                    service: shared::Service::Redis,
                    actor: self.name().to_owned(),
                    reason: message,
                })
            }
            Err(error) => {
                let (code, message) = error_text(&error);
                // Redis quotes the arguments of a command it refuses; show the tutorial's keys.
                let message = message.replace(&self.prefix, "");
                self.lane.error(ErrorKind::Redis, Some(code.clone()), message.clone());
                Err(StepError::Redis { code, message })
            }
        }
    }
}

/// The integer a reply carries: an integer reply, or a string holding one (`GET` of a counter).
pub fn reply_int(value: &redis::Value) -> Option<i64> {
    match value {
        redis::Value::Int(i) => Some(*i),
        redis::Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.trim().parse().ok(),
        redis::Value::SimpleString(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// A server error as Redis sent it: its first word (`ERR`) and the whole line.
pub fn error_text(error: &redis::RedisError) -> (String, String) {
    let code = error.code().unwrap_or("ERR").to_owned();
    let message = match error.detail() {
        Some(detail) => format!("{code} {detail}"),
        None => error.to_string(),
    };
    (code, message)
}

/// A reply in redis-cli's words: `OK`, `(nil)`, `(integer) 29884`, `"100"`, numbered lines for
/// an array. Keys under the run's prefix are shown without it.
pub fn reply_text(value: &redis::Value, prefix: &str) -> String {
    use redis::Value as R;
    match value {
        R::Nil => "(nil)".into(),
        R::Okay => "OK".into(),
        R::Int(i) => format!("(integer) {i}"),
        R::SimpleString(s) => s.clone(),
        R::BulkString(bytes) => {
            let text = String::from_utf8_lossy(bytes);
            format!("\"{}\"", text.strip_prefix(prefix).unwrap_or(&text))
        }
        R::Double(x) => format!("(double) {x}"),
        R::Boolean(b) => format!("({b})"),
        R::Array(items) | R::Set(items) => {
            if items.is_empty() {
                return "(empty array)".into();
            }
            items
                .iter()
                .enumerate()
                .map(|(i, item)| format!("{}) {}", i + 1, reply_text(item, prefix)))
                .collect::<Vec<_>>()
                .join("\n")
        }
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_show_the_tutorials_keys_and_send_the_runs() {
        let set = Command::new("SET")
            .key("lock:{wallet:42}")
            .arg("token-a")
            .arg("NX")
            .arg("PX")
            .arg(30000);
        assert_eq!(set.text(), "SET lock:{wallet:42} token-a NX PX 30000");
        let packed = set.packed("racelab:0123456789ab:");
        let args: Vec<String> = packed
            .args_iter()
            .map(|a| match a {
                redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                redis::Arg::Cursor => "<cursor>".into(),
            })
            .collect();
        assert_eq!(
            args[1], "racelab:0123456789ab:lock:{wallet:42}",
            "the hash tag is still the first"
        );
        let script = Command::new("EVAL").arg("return 1").arg(1).key("lock:wallet:42");
        assert_eq!(script.text(), "EVAL 'return 1' 1 lock:wallet:42");
        let named = Command::new("EVAL")
            .script("release script", "return 1")
            .arg(1)
            .key("k");
        assert_eq!(named.text(), "EVAL <release script> 1 k");
    }

    #[test]
    fn integers_come_from_integer_and_string_replies() {
        assert_eq!(reply_int(&redis::Value::Int(34)), Some(34));
        assert_eq!(reply_int(&redis::Value::BulkString(b"100".to_vec())), Some(100));
        assert_eq!(reply_int(&redis::Value::Nil), None);
    }

    #[test]
    fn replies_read_like_redis_cli() {
        use redis::Value as R;
        assert_eq!(reply_text(&R::Okay, ""), "OK");
        assert_eq!(reply_text(&R::Nil, ""), "(nil)");
        assert_eq!(reply_text(&R::Int(29884), ""), "(integer) 29884");
        assert_eq!(
            reply_text(&R::BulkString(b"racelab:ab:lock:x".to_vec()), "racelab:ab:"),
            "\"lock:x\""
        );
        assert_eq!(
            reply_text(&R::Array(vec![R::Int(1), R::Nil]), ""),
            "1) (integer) 1\n2) (nil)"
        );
    }
}
