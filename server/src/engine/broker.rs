//! Broker lanes: a producer (the relay, the naive dual write) and a consumer (the notifier), on
//! real librdkafka clients against a Kafka-compatible broker.
//!
//! A produce is a step (`produce payments key=pay_001`, with the message as structure) whose
//! result is its delivery report (`delivered p1@0`): the broker acknowledged it. A received
//! message is a step of the consumer's lane with its partition and offset; committing an offset
//! is a step too. Topics and groups are the tutorial's names on the lane and the run's
//! (`racelab.<run>.payments`) on the wire. Keys go through librdkafka's default partitioner
//! (consistent_random, CRC32 of the key), so partitions are the tutorial's.
//!
//! Producers and consumers are built from a [`Lane`] and the [`Sandbox`], so a child process (a
//! relay that crashes) builds them the same way a scenario does.

use super::error::{RunError, StepError};
use super::lane::Lane;
use super::run::Run;
use crate::sandbox::Sandbox;
use rdkafka::consumer::{CommitMode, Consumer as _, StreamConsumer};
use rdkafka::message::{Headers as _, Message as _};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer as _};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use shared::event::{Detail, ErrorKind};
use shared::{Service, Table, Value};
use std::time::Duration;

/// A producer lane.
pub struct Producer {
    lane: Lane,
    producer: FutureProducer,
    sandbox: Sandbox,
}

/// What a consumer received.
#[derive(Clone, Debug, PartialEq)]
pub struct Received {
    /// The tutorial's topic name.
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<String>,
    pub value: Option<String>,
}

/// A consumer lane in a consumer group.
pub struct Consumer {
    lane: Lane,
    consumer: StreamConsumer,
    sandbox: Sandbox,
}

/// The run's name on the wire for the tutorial's topic `logical`.
fn wire_topic<'a>(sandbox: &'a Sandbox, logical: &str) -> Result<&'a str, StepError> {
    sandbox
        .topic(logical)
        .ok_or_else(|| StepError::Broker(format!("this run has no topic called {logical:?}")))
}

/// The tutorial's name for the run's topic `wire`.
fn logical_topic(sandbox: &Sandbox, wire: &str) -> String {
    sandbox
        .topics
        .iter()
        .find(|(_, name, _)| name == wire)
        .map_or_else(|| wire.to_owned(), |(logical, _, _)| logical.clone())
}

impl Run {
    /// A producer lane; `idempotent` as the outbox relay sets it (`enable.idempotence`, which
    /// implies `acks=all`).
    pub fn producer(&self, name: &str, idempotent: bool) -> Result<Producer, RunError> {
        self.producer_on(self.lane(name, false), idempotent)
    }

    /// A producer on a quiet lane, for setting a scenario's stage (the messages an earlier step
    /// of the tutorial left on the topic): nothing it sends is drawn.
    pub fn quiet_producer(&self, name: &str, idempotent: bool) -> Result<Producer, RunError> {
        self.producer_on(self.lane(name, true), idempotent)
    }

    fn producer_on(&self, lane: Lane, idempotent: bool) -> Result<Producer, RunError> {
        let core = self.core();
        Producer::new(lane, &core.reach.services.brokers, &core.sandbox, idempotent)
    }

    /// A consumer lane in the run's group `group` (the tutorial's name, e.g. `notifier`),
    /// subscribed to the tutorial's `topics`. See [`Consumer::new`] for `instance`.
    pub fn consumer(
        &self,
        name: &str,
        group: &str,
        instance: Option<&str>,
        topics: &[&str],
    ) -> Result<Consumer, RunError> {
        let core = self.core();
        let consumer = Consumer::new(
            self.lane(name, false),
            &core.reach.services.brokers,
            &core.sandbox,
            group,
            instance,
        )?;
        consumer.subscribe(topics)?;
        Ok(consumer)
    }

    /// Commits `offsets` (`(partition, next offset to read)`) on the tutorial's topic `topic` for
    /// the run's group `group`, from outside the group (as `kafka-consumer-groups
    /// --reset-offsets` would): setting the stage an earlier consumer left. The group must have
    /// no members.
    pub async fn set_group_offsets(&self, group: &str, topic: &str, offsets: &[(i32, i64)]) -> Result<(), RunError> {
        let core = self.core();
        let wire = wire_topic(&core.sandbox, topic)?.to_owned();
        let (brokers, group) = (
            core.reach.services.brokers.clone(),
            crate::sandbox::broker_name(&core.sandbox.run_id, group),
        );
        let offsets = offsets.to_vec();
        tokio::task::spawn_blocking(move || {
            let client: rdkafka::consumer::BaseConsumer = ClientConfig::new()
                .set("bootstrap.servers", &brokers)
                .set("group.id", &group)
                .set("enable.auto.commit", "false")
                .create()
                .map_err(|e| e.to_string())?;
            let mut list = TopicPartitionList::new();
            for (partition, offset) in offsets {
                list.add_partition_offset(&wire, partition, Offset::Offset(offset))
                    .map_err(|e| e.to_string())?;
            }
            client.commit(&list, CommitMode::Sync).map_err(|e| e.to_string())
        })
        .await
        .map_err(|e| RunError::Other(e.to_string()))?
        .map_err(|e| RunError::Other(format!("cannot set {topic}'s offsets: {e}")))
    }

    /// A ledger table of everything on the tutorial's topic `logical`: `partition`, `offset`,
    /// `key`, `value`, `headers`, in partition then offset order. Read with a consumer of its own
    /// (no group, no commits), up to each partition's high watermark.
    pub async fn topic_table(&self, name: &str, logical: &str) -> Result<Table, RunError> {
        let core = self.core();
        topic_table(&core.reach.services.brokers, &core.sandbox, name, logical).await
    }
}

impl Producer {
    pub fn new(lane: Lane, brokers: &str, sandbox: &Sandbox, idempotent: bool) -> Result<Producer, RunError> {
        let producer = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .set("enable.idempotence", if idempotent { "true" } else { "false" })
            // A mistyped topic fails loudly instead of being made on the fly.
            .set("allow.auto.create.topics", "false")
            .set("topic.metadata.propagation.max.ms", "1000")
            .set("message.timeout.ms", "30000")
            .create()
            .map_err(|e| RunError::Other(format!("cannot create a producer: {e}")))?;
        Ok(Producer {
            lane,
            producer,
            sandbox: sandbox.clone(),
        })
    }

    /// The producer's lane.
    pub fn lane(&self) -> &Lane {
        &self.lane
    }

    /// Produces one message with `key` (librdkafka's default partitioner picks the partition)
    /// and waits for its delivery report: `(partition, offset)` once the broker acknowledged it.
    pub async fn send(&self, topic: &str, key: &str, value: &str) -> Result<(i32, i64), StepError> {
        let text = format!("produce {topic} key={key}");
        self.lane.gate(Service::Kafka, &text).await;
        let sent = Detail::Message {
            topic: topic.to_owned(),
            partition: None,
            offset: None,
            key: Some(key.to_owned()),
            value: Some(value.to_owned()),
            headers: Vec::new(),
        };
        self.lane.step(Service::Kafka, &text, &[], Some(sent));
        let wire = wire_topic(&self.sandbox, topic)?;
        let record = FutureRecord::to(wire).key(key).payload(value);
        match self.producer.send(record, Duration::from_secs(30)).await {
            Ok(delivery) => {
                // Where it landed; the message itself is on the step already.
                let delivered = Detail::Message {
                    topic: topic.to_owned(),
                    partition: Some(delivery.partition),
                    offset: Some(delivery.offset),
                    key: None,
                    value: None,
                    headers: Vec::new(),
                };
                self.lane.result(
                    format!("delivered p{}@{}", delivery.partition, delivery.offset),
                    None,
                    Some(delivered),
                );
                Ok((delivery.partition, delivery.offset))
            }
            Err((error, _)) => {
                let code = error.rdkafka_error_code().map(|c| format!("{c:?}"));
                self.lane.error(ErrorKind::Broker, code, error.to_string());
                Err(StepError::Broker(error.to_string()))
            }
        }
    }

    /// Produces `messages` (`(key, value)`) in order, all queued before any is waited for, then
    /// waits for every delivery report (the relay's produce-then-flush): the `(partition,
    /// offset)` of each once the broker acknowledged it. Each message is drawn as its own step
    /// with its own delivery report, in order; in step mode the batch is one step. The first
    /// failure fails the batch.
    pub async fn send_all(&self, topic: &str, messages: &[(String, String)]) -> Result<Vec<(i32, i64)>, StepError> {
        let wire = wire_topic(&self.sandbox, topic)?;
        self.lane
            .gate(
                Service::Kafka,
                &format!("produce {} messages to {topic}", messages.len()),
            )
            .await;
        let mut deliveries = Vec::with_capacity(messages.len());
        for (key, value) in messages {
            let record = FutureRecord::to(wire).key(key.as_str()).payload(value.as_str());
            match self.producer.send_result(record) {
                Ok(delivery) => deliveries.push(delivery),
                Err((error, _)) => return Err(self.failed(&error)),
            }
        }
        let mut placed = Vec::with_capacity(deliveries.len());
        for ((key, value), delivery) in messages.iter().zip(deliveries) {
            let sent = Detail::Message {
                topic: topic.to_owned(),
                partition: None,
                offset: None,
                key: Some(key.clone()),
                value: Some(value.clone()),
                headers: Vec::new(),
            };
            self.lane
                .step(Service::Kafka, &format!("produce {topic} key={key}"), &[], Some(sent));
            match delivery.await {
                Ok(Ok(delivery)) => {
                    self.lane.result(
                        format!("delivered p{}@{}", delivery.partition, delivery.offset),
                        None,
                        Some(Detail::Message {
                            topic: topic.to_owned(),
                            partition: Some(delivery.partition),
                            offset: Some(delivery.offset),
                            key: None,
                            value: None,
                            headers: Vec::new(),
                        }),
                    );
                    placed.push((delivery.partition, delivery.offset));
                }
                Ok(Err((error, _))) => return Err(self.failed(&error)),
                Err(_) => {
                    let why = "the delivery report never came (the producer was closed)";
                    self.lane.error(ErrorKind::Broker, None, why);
                    return Err(StepError::Broker(why.into()));
                }
            }
        }
        Ok(placed)
    }

    /// Shows a broker error on the lane and makes it the step's error.
    fn failed(&self, error: &rdkafka::error::KafkaError) -> StepError {
        let code = error.rdkafka_error_code().map(|c| format!("{c:?}"));
        self.lane.error(ErrorKind::Broker, code, error.to_string());
        StepError::Broker(error.to_string())
    }

    /// Waits (at most `timeout`) until every queued message is delivered.
    pub fn flush(&self, timeout: Duration) -> Result<(), StepError> {
        self.producer
            .flush(timeout)
            .map_err(|e| StepError::Broker(e.to_string()))
    }
}

impl Consumer {
    /// A consumer in the run's group `group`, reading from the earliest offset, committing by
    /// hand (as the tutorial's notifier does). `instance` makes it a static member
    /// (`group.instance.id`): a restarted consumer with the same instance takes over its
    /// partitions at once instead of waiting for the dead one's session to expire.
    pub fn new(
        lane: Lane,
        brokers: &str,
        sandbox: &Sandbox,
        group: &str,
        instance: Option<&str>,
    ) -> Result<Consumer, RunError> {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", brokers)
            .set("group.id", crate::sandbox::broker_name(&sandbox.run_id, group))
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .set("allow.auto.create.topics", "false")
            .set("session.timeout.ms", "6000");
        if let Some(instance) = instance {
            config.set("group.instance.id", instance);
        }
        let consumer = config
            .create()
            .map_err(|e| RunError::Other(format!("cannot create a consumer: {e}")))?;
        Ok(Consumer {
            lane,
            consumer,
            sandbox: sandbox.clone(),
        })
    }

    /// The consumer's lane.
    pub fn lane(&self) -> &Lane {
        &self.lane
    }

    /// Subscribes to the tutorial's `topics`.
    pub fn subscribe(&self, topics: &[&str]) -> Result<(), RunError> {
        let wire: Vec<&str> = topics
            .iter()
            .map(|t| wire_topic(&self.sandbox, t))
            .collect::<Result<_, _>>()?;
        self.consumer
            .subscribe(&wire)
            .map_err(|e| RunError::Other(format!("cannot subscribe: {e}")))
    }

    /// The next message, or `None` if none came within `timeout`. A received message is a step
    /// on the lane (`receive payments p1@0`).
    pub async fn poll(&self, timeout: Duration) -> Result<Option<Received>, StepError> {
        let message = match tokio::time::timeout(timeout, self.consumer.recv()).await {
            Err(_) => return Ok(None),
            Ok(Err(error)) => {
                let code = error.rdkafka_error_code().map(|c| format!("{c:?}"));
                self.lane.error(ErrorKind::Broker, code, error.to_string());
                return Err(StepError::Broker(error.to_string()));
            }
            Ok(Ok(message)) => message,
        };
        let text_of = |bytes: Option<&[u8]>| bytes.map(|b| String::from_utf8_lossy(b).into_owned());
        let headers = message
            .headers()
            .map(|h| {
                h.iter()
                    .map(|header| (header.key.to_owned(), text_of(header.value).unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default();
        let received = Received {
            topic: logical_topic(&self.sandbox, message.topic()),
            partition: message.partition(),
            offset: message.offset(),
            key: text_of(message.key()),
            value: text_of(message.payload()),
        };
        let text = format!("receive {} p{}@{}", received.topic, received.partition, received.offset);
        self.lane.step(
            Service::Kafka,
            &text,
            &[],
            Some(Detail::Message {
                topic: received.topic.clone(),
                partition: Some(received.partition),
                offset: Some(received.offset),
                key: received.key.clone(),
                value: received.value.clone(),
                headers,
            }),
        );
        self.lane
            .result(format!("p{}@{}", received.partition, received.offset), None, None);
        Ok(Some(received))
    }

    /// Commits the offset after `message` (the next one to read), synchronously, as the
    /// notifier does after its database commit.
    pub async fn commit(&self, message: &Received) -> Result<(), StepError> {
        let text = format!(
            "commit offset {} p{}@{}",
            message.topic,
            message.partition,
            message.offset + 1
        );
        self.lane.gate(Service::Kafka, &text).await;
        self.lane.step(Service::Kafka, &text, &[], None);
        let wire = wire_topic(&self.sandbox, &message.topic)?;
        let mut offsets = TopicPartitionList::new();
        offsets
            .add_partition_offset(wire, message.partition, Offset::Offset(message.offset + 1))
            .map_err(|e| StepError::Broker(e.to_string()))?;
        match self.consumer.commit(&offsets, CommitMode::Sync) {
            Ok(()) => {
                self.lane.result("committed", None, None);
                Ok(())
            }
            Err(error) => {
                let code = error.rdkafka_error_code().map(|c| format!("{c:?}"));
                self.lane.error(ErrorKind::Broker, code, error.to_string());
                Err(StepError::Broker(error.to_string()))
            }
        }
    }
}

/// See [`Run::topic_table`].
pub async fn topic_table(brokers: &str, sandbox: &Sandbox, name: &str, logical: &str) -> Result<Table, RunError> {
    let wire = wire_topic(sandbox, logical)?.to_owned();
    let partitions = sandbox
        .topics
        .iter()
        .find(|(l, _, _)| l == logical)
        .map_or(1, |(_, _, p)| *p);
    let consumer: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", crate::sandbox::broker_name(&sandbox.run_id, "ledger"))
        .set("enable.auto.commit", "false")
        .create()
        .map_err(|e| RunError::Other(format!("cannot create a reader: {e}")))?;
    let watermarks = watermarks(brokers, &wire, partitions, logical).await?;
    let mut assignment = TopicPartitionList::new();
    let mut remaining = 0i64;
    for (partition, (low, high)) in (0..partitions).zip(&watermarks) {
        remaining += high - low;
        assignment
            .add_partition_offset(&wire, partition, Offset::Beginning)
            .map_err(|e| RunError::Other(e.to_string()))?;
    }
    consumer
        .assign(&assignment)
        .map_err(|e| RunError::Other(format!("cannot read {logical}: {e}")))?;
    let mut rows = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while remaining > 0 {
        let message = tokio::time::timeout_at(deadline, consumer.recv())
            .await
            .map_err(|_| RunError::Other(format!("reading {logical} took too long")))?
            .map_err(|e| RunError::Other(format!("cannot read {logical}: {e}")))?;
        rows.push(row_of(&message));
        remaining -= 1;
    }
    rows.sort_by_key(|row| (row[0].as_int(), row[1].as_int()));
    Ok(Table {
        name: name.to_owned(),
        columns: ["partition", "offset", "key", "value", "headers"]
            .iter()
            .map(|c| (*c).to_owned())
            .collect(),
        key_columns: 2,
        rows,
    })
}

/// Each of topic `wire`'s `partitions`' low and high watermarks (the first offset kept, the
/// next one to be written), asked of `brokers` by a client of its own; `logical` is the topic's
/// name in the error.
async fn watermarks(brokers: &str, wire: &str, partitions: i32, logical: &str) -> Result<Vec<(i64, i64)>, RunError> {
    // librdkafka's watermark query blocks its caller; keep it off the runtime's threads.
    let (brokers, wire) = (brokers.to_owned(), wire.to_owned());
    tokio::task::spawn_blocking(move || {
        let probe: rdkafka::consumer::BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .create()
            .map_err(|e| e.to_string())?;
        (0..partitions)
            .map(|p| {
                probe
                    .fetch_watermarks(&wire, p, Duration::from_secs(5))
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<Vec<(i64, i64)>, String>>()
    })
    .await
    .map_err(|e| RunError::Other(e.to_string()))?
    .map_err(|e| RunError::Other(format!("cannot read {logical}'s watermarks: {e}")))
}

/// A message as a row of the topic's table: partition, offset, key, value and headers
/// (`name=value, …`), the bytes read as text.
fn row_of(message: &impl rdkafka::message::Message) -> Vec<Value> {
    let text_of =
        |bytes: Option<&[u8]>| bytes.map_or(Value::Null, |b| Value::Text(String::from_utf8_lossy(b).into_owned()));
    let headers = message.headers().map_or(String::new(), |h| {
        h.iter()
            .map(|header| {
                format!(
                    "{}={}",
                    header.key,
                    String::from_utf8_lossy(header.value.unwrap_or_default())
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    });
    vec![
        Value::Int(message.partition().into()),
        Value::Int(message.offset()),
        text_of(message.key()),
        text_of(message.payload()),
        Value::Text(headers),
    ]
}
