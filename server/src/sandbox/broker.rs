//! A run's broker namespaces: its topics (created with the tutorial's partition count) and its
//! consumer groups, all named `racelab.<run>.<name>`, deleted after the run.
//!
//! Consumer groups come into being when a consumer first joins, so they are not created here;
//! cleanup lists the broker's groups and deletes every one under the run's prefix.

use super::SandboxError;
use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::types::RDKafkaErrorCode;
use std::time::Duration;

/// How long one admin call may take before the broker counts as unreachable.
const TIMEOUT: Duration = Duration::from_secs(10);

/// An admin client for `brokers`.
pub fn admin(brokers: &str) -> Result<AdminClient<DefaultClientContext>, SandboxError> {
    ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("socket.timeout.ms", "5000")
        .create()
        .map_err(|e| SandboxError::Broker(e.to_string()))
}

fn options() -> AdminOptions {
    AdminOptions::new()
        .request_timeout(Some(TIMEOUT))
        .operation_timeout(Some(TIMEOUT))
}

/// Creates the run's topics: `(logical name, topic name, partitions)`.
pub async fn create_topics(brokers: &str, topics: &[(String, String, i32)]) -> Result<(), SandboxError> {
    let admin = admin(brokers)?;
    let new: Vec<NewTopic<'_>> = topics
        .iter()
        .map(|(_, name, partitions)| NewTopic::new(name, *partitions, TopicReplication::Fixed(1)))
        .collect();
    let results = admin
        .create_topics(new.iter(), &options())
        .await
        .map_err(|e| SandboxError::Broker(e.to_string()))?;
    for result in results {
        if let Err((topic, code)) = result
            && code != RDKafkaErrorCode::TopicAlreadyExists
        {
            return Err(SandboxError::Broker(format!("could not create topic {topic}: {code}")));
        }
    }
    Ok(())
}

/// Deletes the run's topics and every consumer group under its prefix. Topics already gone are
/// not an error (cleanup runs twice when a run is cancelled while its sandbox is being made).
pub async fn remove_run(brokers: &str, run_id: &str, topics: &[(String, String, i32)]) -> Result<(), SandboxError> {
    let admin = admin(brokers)?;
    let names: Vec<&str> = topics.iter().map(|(_, name, _)| name.as_str()).collect();
    let results = admin
        .delete_topics(&names, &options())
        .await
        .map_err(|e| SandboxError::Broker(e.to_string()))?;
    for result in results {
        if let Err((topic, code)) = result
            && code != RDKafkaErrorCode::UnknownTopicOrPartition
        {
            return Err(SandboxError::Broker(format!("could not delete topic {topic}: {code}")));
        }
    }
    let mut groups = run_groups(brokers, run_id).await?;
    // A consumer that just closed may still be leaving its group: give it a moment. Then remove
    // the members that will never leave by themselves (killed ones, static ones), and try again.
    let started = tokio::time::Instant::now();
    let mut evicted = false;
    while !groups.is_empty() {
        groups = delete_groups(&admin, &groups).await?;
        if groups.is_empty() {
            break;
        }
        let waited = started.elapsed();
        if !evicted && waited >= GRACE {
            for group in &groups {
                evict_members(brokers, group).await?;
            }
            evicted = true;
        } else if evicted && waited >= GRACE + AFTER_EVICTION {
            return Err(SandboxError::Broker(format!(
                "consumer groups {} still have members after they were asked to leave",
                groups.join(", ")
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

/// How long cleanup lets closed consumers leave by themselves, and how long it waits after
/// asking the rest to leave.
const GRACE: Duration = Duration::from_secs(1);
const AFTER_EVICTION: Duration = Duration::from_secs(3);

/// Deletes `groups`; returns those that still have members.
async fn delete_groups(
    admin: &AdminClient<DefaultClientContext>,
    groups: &[String],
) -> Result<Vec<String>, SandboxError> {
    let names: Vec<&str> = groups.iter().map(String::as_str).collect();
    let results = admin
        .delete_groups(&names, &options())
        .await
        .map_err(|e| SandboxError::Broker(e.to_string()))?;
    let mut busy = Vec::new();
    for result in results {
        match result {
            Ok(_) | Err((_, RDKafkaErrorCode::GroupIdNotFound)) => {}
            Err((group, RDKafkaErrorCode::NonEmptyGroup)) => busy.push(group),
            Err((group, code)) => {
                return Err(SandboxError::Broker(format!("could not delete group {group}: {code}")));
            }
        }
    }
    Ok(busy)
}

/// Makes every member of `group` leave it (see [`crate::services::kafka_wire`]).
async fn evict_members(brokers: &str, group: &str) -> Result<(), SandboxError> {
    let wanted = group.to_owned();
    let members = listed(brokers, move |client| {
        let list = client.fetch_group_list(Some(&wanted), TIMEOUT)?;
        Ok(list
            .groups()
            .iter()
            .filter(|g| g.name() == wanted)
            .flat_map(|g| g.members().iter().map(|m| m.id().to_owned()))
            .collect())
    })
    .await?;
    if members.is_empty() {
        return Ok(());
    }
    tracing::info!(%group, members = members.len(), "removing members that never left, so the group can be deleted");
    crate::services::kafka_wire::leave_group(brokers, group, &members)
        .await
        .map_err(SandboxError::Broker)
}

/// The broker's consumer groups under run `run_id`'s prefix.
pub async fn run_groups(brokers: &str, run_id: &str) -> Result<Vec<String>, SandboxError> {
    let prefix = super::broker_name(run_id, "");
    listed(brokers, move |client| {
        let list = client.fetch_group_list(None, TIMEOUT)?;
        Ok(list
            .groups()
            .iter()
            .map(|g| g.name().to_owned())
            .filter(|name| name.starts_with(&prefix))
            .collect())
    })
    .await
}

/// Runs a listing on an admin client's inner client. librdkafka's listings block their caller,
/// so it runs off the runtime's threads.
async fn listed(
    brokers: &str,
    list: impl FnOnce(&rdkafka::client::Client<DefaultClientContext>) -> rdkafka::error::KafkaResult<Vec<String>>
    + Send
    + 'static,
) -> Result<Vec<String>, SandboxError> {
    let admin = admin(brokers)?;
    tokio::task::spawn_blocking(move || list(admin.inner()).map_err(|e| SandboxError::Broker(e.to_string())))
        .await
        .map_err(|e| SandboxError::Broker(e.to_string()))?
}
