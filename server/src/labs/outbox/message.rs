//! The messages on the `payments` topic, byte for byte as the tutorial's Python programs write
//! them (`json.dumps`, so `", "` and `": "` between items), and read back.
//!
//! - The relay's event: `{"event_id": "<uuid>", "type": "payment.captured", "payment_id":
//!   "pay_001", "occurred_at": "<created_at.isoformat()>", "data": <payload>}`. The payload is the
//!   outbox row's jsonb as PostgreSQL prints it (keys shortest first, `", "` and `": "`), which is
//!   what `json.dumps` of psycopg's dict gives back.
//! - The naive dual write's message: `{"type": "payment.captured", "payment_id": "pay_002",
//!   "data": {}}`, with no event id, which is why the notifier cannot read it.

use serde::Deserialize;

/// The relay's message for one outbox row. `created_at` is the row's timestamp as psql prints it
/// (`2026-10-21 09:12:33.1234+00`), `payload` its jsonb as PostgreSQL prints it.
pub fn event(event_id: &str, event_type: &str, payment_id: &str, created_at: &str, payload: &str) -> String {
    format!(
        "{{\"event_id\": {}, \"type\": {}, \"payment_id\": {}, \"occurred_at\": {}, \"data\": {payload}}}",
        quoted(event_id),
        quoted(event_type),
        quoted(payment_id),
        quoted(&isoformat(created_at)),
    )
}

/// The naive program's message: no event id.
pub fn naive(payment_id: &str) -> String {
    format!(
        "{{\"type\": \"payment.captured\", \"payment_id\": {}, \"data\": {{}}}}",
        quoted(payment_id)
    )
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// A timestamptz as psql prints it in UTC (`2026-10-21 09:12:33.1234+00`, trailing zeros of the
/// microseconds dropped) as Python's `datetime.isoformat()` writes it
/// (`2026-10-21T09:12:33.123400+00:00`: six digits, or none when there are none).
pub fn isoformat(psql: &str) -> String {
    let body = psql.strip_suffix("+00").unwrap_or(psql).replacen(' ', "T", 1);
    match body.split_once('.') {
        Some((seconds, fraction)) => format!("{seconds}.{fraction:0<6}+00:00"),
        None => format!("{body}+00:00"),
    }
}

/// What a consumer reads from a message: its event id (none for the naive one), type and payment.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Read {
    #[serde(default)]
    pub event_id: Option<String>,
    #[serde(rename = "type")]
    pub event_type: String,
    pub payment_id: String,
}

/// Reads a message's value; `None` if it is not one of the lab's messages.
pub fn read(value: &str) -> Option<Read> {
    serde_json::from_str(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_read_as_pythons_json_dumps_writes_them() {
        let message = event(
            "0b7c6e1e-3f0a-4f7e-9d2c-5a1b2c3d4e5f",
            "payment.captured",
            "pay_001",
            "2026-10-21 09:12:33.1234+00",
            r#"{"currency": "USD", "amount_cents": 2500}"#,
        );
        assert_eq!(
            message,
            r#"{"event_id": "0b7c6e1e-3f0a-4f7e-9d2c-5a1b2c3d4e5f", "type": "payment.captured", "payment_id": "pay_001", "occurred_at": "2026-10-21T09:12:33.123400+00:00", "data": {"currency": "USD", "amount_cents": 2500}}"#
        );
        let back = read(&message).expect("the lab's message");
        assert_eq!(back.event_id.as_deref(), Some("0b7c6e1e-3f0a-4f7e-9d2c-5a1b2c3d4e5f"));
        assert_eq!(
            (back.event_type.as_str(), back.payment_id.as_str()),
            ("payment.captured", "pay_001")
        );
    }

    #[test]
    fn the_naive_message_has_no_event_id() {
        let message = naive("pay_002");
        assert_eq!(
            message,
            r#"{"type": "payment.captured", "payment_id": "pay_002", "data": {}}"#
        );
        assert_eq!(read(&message).and_then(|m| m.event_id), None);
    }

    #[test]
    fn whole_seconds_have_no_fraction_as_in_python() {
        assert_eq!(isoformat("2026-10-21 09:12:33+00"), "2026-10-21T09:12:33+00:00");
        assert_eq!(
            isoformat("2026-10-21 09:12:33.5+00"),
            "2026-10-21T09:12:33.500000+00:00"
        );
    }
}
