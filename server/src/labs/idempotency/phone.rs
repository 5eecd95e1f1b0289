//! The checkout client, playing the phone: a first attempt that waits 600 ms, later ones 3 s, up
//! to four attempts, 300 ms between them doubling each time, a new connection per attempt. It
//! retries when it got no answer, a 409 or a 5xx, and stops on anything else; it ignores
//! `Retry-After`. Its key is made once and sent on every attempt (`once`), made anew per attempt
//! (`new`), or not sent (`none`).
//!
//! It prints what the tutorial's client prints: `attempt 2: 409 {…}`, with ` (replayed)` when the
//! answer says so, or `attempt 1: no answer: timed out`.

use super::provider::DECLINED_CARD;
use super::{AMOUNT, CARD, CUSTOMER, CUSTOMER_HEADER};
use crate::engine::http::status_line;
use crate::engine::{Call, HttpClient, StepError};
use shared::Check;
use std::time::Duration;

/// Which key the phone sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyMode {
    /// The same key on every attempt: the given one, or one made up once.
    Once(String),
    /// A new key per attempt.
    New,
    /// No key.
    None,
}

/// The phone's settings (the tutorial's flags and their defaults).
#[derive(Clone, Debug)]
pub struct Settings {
    pub amount: i64,
    /// The amount on every attempt after the first: an app that recomputes the total (a tax line
    /// added) before it retries, the troubleshooting table's 422. `None`: the same body always.
    pub retry_amount: Option<i64>,
    pub card: String,
    /// Whose phone: the tutorial's client always says `cus_1001`.
    pub customer: String,
    pub key: KeyMode,
    pub first_timeout: Duration,
    pub timeout: Duration,
    pub attempts: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            amount: AMOUNT,
            retry_amount: None,
            card: CARD.into(),
            customer: CUSTOMER.into(),
            key: KeyMode::Once(crate::labs::rand_text()),
            first_timeout: Duration::from_millis(600),
            timeout: Duration::from_secs(3),
            attempts: 4,
        }
    }
}

impl Settings {
    /// The amount attempt `n` (from 1) sends.
    pub fn amount_of(&self, n: u32) -> i64 {
        match self.retry_amount {
            Some(amount) if n > 1 => amount,
            _ => self.amount,
        }
    }

    /// What a correct shop finally tells this phone: 402 for the declined card, 201 otherwise.
    pub fn correct_answer(&self) -> u16 {
        if self.card == DECLINED_CARD { 402 } else { 201 }
    }
}

/// The check that the phone's last attempt got `status`: what the customer is finally told.
pub fn told(attempts: &[Attempt], status: u16) -> Check {
    let last = attempts.len();
    let (actual, holds) = match attempts.last() {
        Some(Attempt::Answered {
            status: got, replayed, ..
        }) => (
            format!("attempt {last}: {got}{}", if *replayed { " (replayed)" } else { "" }),
            *got == status,
        ),
        Some(Attempt::NoAnswer(why)) => (format!("attempt {last}: no answer: {why}"), false),
        None => ("no attempt".to_owned(), false),
    };
    Check::new(
        format!("the phone is finally told {}", status_line(status)),
        actual,
        holds,
    )
}

/// The first wait between attempts; each later one doubles.
pub const BACKOFF: Duration = Duration::from_millis(300);

/// What one attempt came to.
#[derive(Clone, Debug, PartialEq)]
pub enum Attempt {
    Answered { status: u16, body: String, replayed: bool },
    NoAnswer(String),
}

impl Attempt {
    /// The line the client prints for attempt `n`.
    pub fn line(&self, n: u32) -> String {
        match self {
            Attempt::Answered { status, body, replayed } => {
                format!(
                    "attempt {n}: {status} {}{}",
                    body.trim(),
                    if *replayed { " (replayed)" } else { "" }
                )
            }
            Attempt::NoAnswer(why) => format!("attempt {n}: no answer: {why}"),
        }
    }

    /// Whether the client tries again after it: no answer, 409, or a 5xx.
    pub fn retries(&self) -> bool {
        match self {
            Attempt::NoAnswer(_) => true,
            Attempt::Answered { status, .. } => *status == 409 || *status >= 500,
        }
    }
}

/// Pays once, with retries, against the shop at `base`; prints each attempt's line (prefixed with
/// `prefix`, `copy 3 `, when several copies run), as a transcript line or, for one of many
/// copies whose lines the tutorial only shows counted, as a note. Returns the attempts.
pub async fn pay(phone: &HttpClient, base: &str, settings: &Settings, prefix: &str) -> Vec<Attempt> {
    pay_printing(phone, base, settings, prefix, true).await
}

/// As [`pay`]; `transcript` false makes the lines notes on the lane.
pub async fn pay_printing(
    phone: &HttpClient,
    base: &str,
    settings: &Settings,
    prefix: &str,
    transcript: bool,
) -> Vec<Attempt> {
    let mut attempts = Vec::new();
    let mut backoff = BACKOFF;
    for n in 1..=settings.attempts {
        let mut headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (CUSTOMER_HEADER.to_owned(), settings.customer.clone()),
        ];
        match &settings.key {
            KeyMode::Once(key) => headers.push(("Idempotency-Key".into(), key.clone())),
            KeyMode::New => headers.push(("Idempotency-Key".into(), crate::labs::rand_text())),
            KeyMode::None => {}
        }
        let call = Call {
            method: "POST".into(),
            base: base.to_owned(),
            path: "/payments".into(),
            headers,
            // Exactly as the tutorial's client formats it, spaces and all.
            body: format!(
                "{{\"amount\": {}, \"card\": {:?}}}",
                settings.amount_of(n),
                settings.card
            ),
            timeout: if n == 1 {
                settings.first_timeout
            } else {
                settings.timeout
            },
        };
        let attempt = match phone.send(&call).await {
            Ok(reply) => Attempt::Answered {
                status: reply.status,
                replayed: reply.header("idempotent-replayed") == Some("true"),
                body: reply.body,
            },
            Err(StepError::Timeout { .. }) => Attempt::NoAnswer("timed out".into()),
            Err(StepError::Lost { reason, .. }) => Attempt::NoAnswer(format!("Post \"{base}/payments\": {reason}")),
            Err(other) => Attempt::NoAnswer(other.to_string()),
        };
        let line = format!("{prefix}{}", attempt.line(n));
        if transcript {
            phone.lane().say_exactly(line);
        } else {
            phone.lane().note(line);
        }
        let again = attempt.retries();
        attempts.push(attempt);
        if !again {
            break;
        }
        // The client sleeps after every attempt it would retry, the last one too.
        tokio::time::sleep(backoff).await;
        backoff *= 2;
    }
    attempts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_the_tutorials_client_prints_them() {
        let replayed = Attempt::Answered {
            status: 201,
            body: "{\"id\":1}\n".into(),
            replayed: true,
        };
        assert_eq!(replayed.line(3), "attempt 3: 201 {\"id\":1} (replayed)");
        assert_eq!(
            Attempt::NoAnswer("timed out".into()).line(1),
            "attempt 1: no answer: timed out"
        );
        assert!(!replayed.retries());
        let conflict = Attempt::Answered {
            status: 409,
            body: String::new(),
            replayed: false,
        };
        assert!(conflict.retries());
        assert!(Attempt::NoAnswer("EOF".into()).retries());
        let declined = Attempt::Answered {
            status: 402,
            body: String::new(),
            replayed: false,
        };
        assert!(!declined.retries());
    }
}
