//! The Kafka protocol requests racelab sends itself, where librdkafka does not offer them: find a
//! group's coordinator, make members leave a group on their behalf (`LeaveGroup` v3, the request
//! behind Kafka's own "remove members from consumer group"), and ask a broker which API versions
//! it speaks (`ApiVersions` v0: the health probe, since a broker that accepts a connection may
//! still answer nothing; and what a recording's stamp says of the broker, since the protocol has
//! no request for a broker's product or version).
//!
//! Why: a consumer killed at a crash point never leaves its group, and a static member
//! (`group.instance.id`) never leaves even when it closes. Apache Kafka drops such members once
//! their session times out; the Kafka-compatible broker the tests use never does. Either way the
//! run's group cannot be deleted while it has members, so cleanup asks the coordinator to
//! remove them first. Only error codes are read from the answers.

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const FIND_COORDINATOR: i16 = 10;
const LEAVE_GROUP: i16 = 13;
const API_VERSIONS: i16 = 18;
/// How long one request may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// One Kafka request, encoded (request header v1, non-flexible versions only).
struct Request {
    bytes: Vec<u8>,
}

impl Request {
    fn new(api_key: i16, version: i16, correlation: i32) -> Request {
        let mut request = Request { bytes: Vec::new() };
        request
            .i16(api_key)
            .i16(version)
            .i32(correlation)
            .string("racelab-cleanup");
        request
    }

    fn i16(&mut self, v: i16) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_be_bytes());
        self
    }

    fn i32(&mut self, v: i32) -> &mut Self {
        self.bytes.extend_from_slice(&v.to_be_bytes());
        self
    }

    fn string(&mut self, s: &str) -> &mut Self {
        let len = i16::try_from(s.len()).unwrap_or(i16::MAX);
        self.i16(len);
        self.bytes.extend_from_slice(&s.as_bytes()[..len as usize]);
        self
    }

    fn null_string(&mut self) -> &mut Self {
        self.i16(-1)
    }
}

/// A response being read: big-endian fields in order.
struct Response {
    bytes: Vec<u8>,
    at: usize,
}

impl Response {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self.at + n;
        let slice = self
            .bytes
            .get(self.at..end)
            .ok_or("a response shorter than its fields")?;
        self.at = end;
        Ok(slice)
    }

    fn i16(&mut self) -> Result<i16, String> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> Result<i32, String> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn string(&mut self) -> Result<String, String> {
        let len = self.i16()?;
        if len < 0 {
            return Ok(String::new());
        }
        Ok(String::from_utf8_lossy(self.take(len as usize)?).into_owned())
    }
}

/// Sends `request` to `address` and reads its response (after the correlation id).
async fn exchange(address: &str, request: Request) -> Result<Response, String> {
    let io = async {
        let mut stream = TcpStream::connect(address).await.map_err(|e| e.to_string())?;
        let size = i32::try_from(request.bytes.len()).map_err(|e| e.to_string())?;
        stream.write_all(&size.to_be_bytes()).await.map_err(|e| e.to_string())?;
        stream.write_all(&request.bytes).await.map_err(|e| e.to_string())?;
        let mut size = [0u8; 4];
        stream.read_exact(&mut size).await.map_err(|e| e.to_string())?;
        let size = usize::try_from(i32::from_be_bytes(size)).map_err(|e| e.to_string())?;
        if size > 1 << 20 {
            return Err(format!("a {size}-byte answer to a small request"));
        }
        let mut bytes = vec![0u8; size];
        stream.read_exact(&mut bytes).await.map_err(|e| e.to_string())?;
        Ok(Response { bytes, at: 4 })
    };
    tokio::time::timeout(TIMEOUT, io)
        .await
        .map_err(|_| format!("{address} did not answer in time"))?
}

/// Whether the broker at `address` answers a request (`ApiVersions` v0): any answer, even an
/// error code, is a broker that is alive; no answer within the caller's deadline is not.
pub async fn answers(address: &str) -> Result<(), String> {
    let mut response = exchange(address, Request::new(API_VERSIONS, 0, 3)).await?;
    response.i16().map(|_error_code| ())
}

/// The API versions the broker at `address` speaks (`ApiVersions` v0): each API's key and the
/// highest version of it the broker answers.
pub async fn api_versions(address: &str) -> Result<Vec<(i16, i16)>, String> {
    let mut response = exchange(address, Request::new(API_VERSIONS, 0, 4)).await?;
    read_api_versions(&mut response)
}

fn read_api_versions(response: &mut Response) -> Result<Vec<(i16, i16)>, String> {
    let error = response.i16()?;
    if error != 0 {
        return Err(format!("ApiVersions answered error {error}"));
    }
    let count = response.i32()?;
    // Each entry is 6 bytes: a count past what the answer holds is a broken answer.
    let left = response.bytes.len().saturating_sub(response.at);
    let count = usize::try_from(count).unwrap_or(0).min(left / 6);
    (0..count)
        .map(|_| {
            let key = response.i16()?;
            let _min = response.i16()?;
            Ok((key, response.i16()?))
        })
        .collect()
}

/// The broker as a recording's stamp names it, from what it speaks: `Kafka protocol Produce
/// v9/Fetch v13` (no parentheses or commas: the stamp's line lists services with commas and
/// drops a version's parenthesised suffix). The protocol says nothing of the broker's product or version; its highest
/// Produce and Fetch tell one broker (or release of Apache Kafka) from another.
pub fn protocol_named(apis: &[(i16, i16)]) -> Option<String> {
    let highest = |key: i16| apis.iter().find(|(k, _)| *k == key).map(|(_, max)| *max);
    let (produce, fetch) = (highest(PRODUCE)?, highest(FETCH)?);
    Some(format!("Kafka protocol Produce v{produce}/Fetch v{fetch}"))
}

const PRODUCE: i16 = 0;
const FETCH: i16 = 1;

/// `host:port` of `group`'s coordinator, asked of `bootstrap`.
async fn coordinator(bootstrap: &str, group: &str) -> Result<String, String> {
    let mut request = Request::new(FIND_COORDINATOR, 1, 1);
    request.string(group).bytes.push(0); // key_type 0: a group
    let mut response = exchange(bootstrap, request).await?;
    let _throttle = response.i32()?;
    let error = response.i16()?;
    let _message = response.string()?;
    if error != 0 {
        return Err(format!("FindCoordinator for {group} answered error {error}"));
    }
    let _node = response.i32()?;
    let host = response.string()?;
    let port = response.i32()?;
    Ok(format!("{host}:{port}"))
}

/// Makes `members` (member ids) leave `group`, as if each had said goodbye itself.
pub async fn leave_group(brokers: &str, group: &str, members: &[String]) -> Result<(), String> {
    let bootstrap = brokers.split(',').next().unwrap_or(brokers).trim();
    let address = coordinator(bootstrap, group).await?;
    let mut request = Request::new(LEAVE_GROUP, 3, 2);
    request.string(group).i32(i32::try_from(members.len()).unwrap_or(0));
    for member in members {
        request.string(member).null_string();
    }
    let mut response = exchange(&address, request).await?;
    let _throttle = response.i32()?;
    match response.i16()? {
        0 => Ok(()),
        error => Err(format!("LeaveGroup for {group} answered error {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_the_header_then_the_fields() {
        let mut request = Request::new(LEAVE_GROUP, 3, 2);
        request.string("g").i32(1).string("m").null_string();
        let mut expected = vec![0, 13, 0, 3, 0, 0, 0, 2, 0, 15];
        expected.extend_from_slice(b"racelab-cleanup");
        expected.extend_from_slice(&[0, 1, b'g', 0, 0, 0, 1, 0, 1, b'm', 0xff, 0xff]);
        assert_eq!(request.bytes, expected);
    }

    #[test]
    fn the_broker_is_named_by_the_highest_produce_and_fetch_it_speaks() {
        // error 0, three APIs: Produce 0–9, Fetch 0–12, ApiVersions 0–3.
        let mut bytes = vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 3];
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 9, 0, 1, 0, 0, 0, 12, 0, 18, 0, 0, 0, 3]);
        let apis = read_api_versions(&mut Response { bytes, at: 4 }).expect("an answer");
        assert_eq!(apis, [(0, 9), (1, 12), (18, 3)]);
        assert_eq!(
            protocol_named(&apis).as_deref(),
            Some("Kafka protocol Produce v9/Fetch v12")
        );
        assert_eq!(protocol_named(&apis[1..]), None, "no Produce, no name");
        // A count past what the answer holds reads what is there (and allocates no more).
        let mut bytes = vec![0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff];
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 9]);
        assert_eq!(read_api_versions(&mut Response { bytes, at: 4 }), Ok(vec![(0, 9)]));
        let bytes = vec![0, 0, 0, 0, 0, 35, 0, 0, 0, 0];
        assert!(
            read_api_versions(&mut Response { bytes, at: 4 }).is_err(),
            "an error code"
        );
    }

    #[test]
    fn a_short_response_is_an_error_not_a_panic() {
        let mut response = Response {
            bytes: vec![0, 0, 0, 1, 0],
            at: 4,
        };
        assert!(response.i16().is_err());
    }
}
