//! Just enough of Firefox's Marionette protocol to drive `firefox-esr` without geckodriver
//! (which no registry reachable here ships): length-prefixed JSON over TCP, one command at a time.
//!
//! A frame is `<len>:<json>`; a command is `[0, id, name, params]`, its answer
//! `[1, id, error, result]`. The commands are the WebDriver ones under Marionette's names.

use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub struct Marionette {
    stream: TcpStream,
    next_id: u64,
}

impl Marionette {
    /// Connects (retrying while Firefox starts) and opens a WebDriver session.
    pub async fn connect(port: u16) -> Marionette {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let stream = loop {
            match TcpStream::connect(("127.0.0.1", port)).await {
                Ok(stream) => break stream,
                Err(error) if tokio::time::Instant::now() < deadline => {
                    let _ = error;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("Firefox's Marionette never listened on {port}: {error}"),
            }
        };
        let mut client = Marionette { stream, next_id: 0 };
        let hello = client.read_frame().await;
        assert_eq!(hello["applicationType"], "gecko", "not a Marionette server: {hello}");
        client
            .command("WebDriver:NewSession", json!({ "strictFileInteractability": true }))
            .await;
        client
    }

    /// Sends one command and returns its result; a Marionette error fails the test with its text.
    pub async fn command(&mut self, name: &str, params: Value) -> Value {
        self.next_id += 1;
        let body = json!([0, self.next_id, name, params]).to_string();
        let frame = format!("{}:{body}", body.len());
        self.stream
            .write_all(frame.as_bytes())
            .await
            .expect("write to Marionette");
        loop {
            let answer = self.read_frame().await;
            if answer[0] == 1 && answer[1] == self.next_id {
                assert!(answer[2].is_null(), "{name} failed: {}", answer[2]);
                return answer[3].clone();
            }
        }
    }

    async fn read_frame(&mut self) -> Value {
        let mut length = Vec::new();
        loop {
            let byte = self.stream.read_u8().await.expect("read from Marionette");
            if byte == b':' {
                break;
            }
            length.push(byte);
        }
        let length: usize = String::from_utf8_lossy(&length).parse().expect("a frame length");
        let mut body = vec![0; length];
        self.stream
            .read_exact(&mut body)
            .await
            .expect("read a Marionette frame");
        serde_json::from_slice(&body).expect("a JSON frame")
    }

    pub async fn navigate(&mut self, url: &str) {
        self.command("WebDriver:Navigate", json!({ "url": url })).await;
    }

    /// Runs a script in the page and returns what it returns.
    pub async fn script(&mut self, script: &str) -> Value {
        self.command("WebDriver:ExecuteScript", json!({ "script": script, "args": [] }))
            .await["value"]
            .clone()
    }

    /// Polls (every 50 ms, up to 30 s) until `script` returns something truthy; returns it.
    pub async fn wait_for(&mut self, what: &str, script: &str) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let value = self.script(script).await;
            if !(value.is_null() || value == false || value == "") {
                return value;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "Firefox: timed out waiting for {what}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A PNG of the whole page.
    pub async fn screenshot(&mut self) -> Vec<u8> {
        use base64_decode::decode;
        let encoded = self.command("WebDriver:TakeScreenshot", json!({ "full": true })).await["value"].clone();
        decode(encoded.as_str().unwrap_or_default())
    }
}

/// Base64 without a crate: screenshots are the only binary Marionette sends.
mod base64_decode {
    pub fn decode(text: &str) -> Vec<u8> {
        let value = |c: u8| match c {
            b'A'..=b'Z' => Some(c - b'A'),
            b'a'..=b'z' => Some(c - b'a' + 26),
            b'0'..=b'9' => Some(c - b'0' + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        };
        let sextets: Vec<u8> = text.bytes().filter_map(value).collect();
        sextets
            .chunks(4)
            .flat_map(|chunk| {
                let bits = chunk.iter().fold(0u32, |acc, s| (acc << 6) | u32::from(*s)) << (6 * (4 - chunk.len()));
                let bytes = [(bits >> 16) as u8, (bits >> 8) as u8, bits as u8];
                bytes.into_iter().take(chunk.len().saturating_sub(1))
            })
            .collect()
    }
}
