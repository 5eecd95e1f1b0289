//! The lab's figures: what the tutorial's `verify.py` counts, in the six lines it prints them in,
//! and the ledger table the page compares against a correct system's.
//!
//! ```text
//! payments captured:          1000
//! outbox events:              2000 (0 unpublished)
//! messages on the topic:      2201 (201 duplicates)
//! events processed once:      2000
//! receipts sent:              1000 for 1000 payments
//! projection shows captured:  1000
//! ```
//!
//! The arithmetic a sound pipeline keeps, whatever crashed: every event published
//! (`unpublished = 0`), messages = events + duplicates, every event processed once, one receipt
//! per captured payment, and the projection agreeing with the payments.

use crate::engine::{Run, RunError};
use shared::{Check, Table, Value};

/// The ledger table's name.
pub const TABLE: &str = "figures";

/// The counts `verify.py` prints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    pub captured: i64,
    pub events: i64,
    pub unpublished: i64,
    pub messages: i64,
    pub processed: i64,
    pub receipts: i64,
    pub receipt_payments: i64,
    pub projection_captured: i64,
}

/// A figure's label in the ledger, and how to read it.
type Row = (&'static str, fn(&Figures) -> i64);

/// The figures, in the order verify prints them.
const ROWS: [Row; 8] = [
    ("payments captured", |f| f.captured),
    ("outbox events", |f| f.events),
    ("unpublished", |f| f.unpublished),
    ("messages on the topic", |f| f.messages),
    ("events processed once", |f| f.processed),
    ("receipts sent", |f| f.receipts),
    ("payments with a receipt", |f| f.receipt_payments),
    ("projection shows captured", |f| f.projection_captured),
];

impl Figures {
    /// Counts them in the run's databases and on its topic (`topic`: the topic's table, whose
    /// rows are its messages, as verify sums the partitions' high watermarks).
    pub async fn of(run: &Run, topic: &Table) -> Result<Figures, RunError> {
        let payments = run.schema("payments")?;
        let notifier = run.schema("notifier")?;
        let counts = run
            .check(
                &format!(
                    "SELECT (SELECT count(*) FROM {p}.payments WHERE status = 'captured'),
                            (SELECT count(*) FROM {p}.outbox),
                            (SELECT count(*) FROM {p}.outbox WHERE published_at IS NULL),
                            (SELECT count(*) FROM {n}.processed_events),
                            (SELECT count(*) FROM {n}.receipts_sent),
                            (SELECT count(DISTINCT payment_id) FROM {n}.receipts_sent),
                            (SELECT count(*) FROM {n}.payment_status WHERE status = 'captured')",
                    p = crate::sandbox::postgres::quote_ident(payments),
                    n = crate::sandbox::postgres::quote_ident(notifier),
                ),
                &[],
            )
            .await?;
        let at = |i: usize| counts.int_at(i);
        Ok(Figures {
            captured: at(0)?,
            events: at(1)?,
            unpublished: at(2)?,
            messages: topic.rows.len() as i64,
            processed: at(3)?,
            receipts: at(4)?,
            receipt_payments: at(5)?,
            projection_captured: at(6)?,
        })
    }

    /// The six lines verify prints, labels padded to 28 characters.
    pub fn lines(&self) -> Vec<String> {
        vec![
            format!("{:<28}{}", "payments captured:", self.captured),
            format!(
                "{:<28}{} ({} unpublished)",
                "outbox events:", self.events, self.unpublished
            ),
            format!(
                "{:<28}{} ({} duplicates)",
                "messages on the topic:",
                self.messages,
                self.messages - self.events
            ),
            format!("{:<28}{}", "events processed once:", self.processed),
            format!(
                "{:<28}{} for {} payments",
                "receipts sent:", self.receipts, self.receipt_payments
            ),
            format!("{:<28}{}", "projection shows captured:", self.projection_captured),
        ]
    }

    /// As a ledger table: one row per figure.
    pub fn table(&self) -> Table {
        Table {
            name: TABLE.into(),
            columns: vec!["figure".into(), "count".into()],
            key_columns: 1,
            rows: ROWS
                .iter()
                .map(|(label, get)| vec![Value::from(*label), Value::Int(get(self))])
                .collect(),
        }
    }

    /// Reads them back from their table (zeros for a figure it lacks).
    pub fn from_table(table: Option<&Table>) -> Figures {
        let get = |label: &str| {
            table
                .and_then(|t| {
                    t.rows
                        .iter()
                        .find(|r| r.first().and_then(Value::as_text) == Some(label))
                })
                .and_then(|r| r.get(1))
                .and_then(Value::as_int)
                .unwrap_or(0)
        };
        Figures {
            captured: get(ROWS[0].0),
            events: get(ROWS[1].0),
            unpublished: get(ROWS[2].0),
            messages: get(ROWS[3].0),
            processed: get(ROWS[4].0),
            receipts: get(ROWS[5].0),
            receipt_payments: get(ROWS[6].0),
            projection_captured: get(ROWS[7].0),
        }
    }

    /// One check per figure that matters here: `actual` holds what these expected figures say.
    /// A figure a correct system keeps at zero and the run left at zero says nothing, and is
    /// left out; every other figure is checked.
    pub fn checks(&self, actual: &Figures) -> Vec<Check> {
        ROWS.iter()
            .map(|(label, get)| (label, get(self), get(actual)))
            .filter(|(_, want, got)| *want != 0 || *got != 0)
            .map(|(label, want, got)| Check::new(format!("{label}: {want}"), got.to_string(), want == got))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chaos() -> Figures {
        Figures {
            captured: 1000,
            events: 2000,
            unpublished: 0,
            messages: 2201,
            processed: 2000,
            receipts: 1000,
            receipt_payments: 1000,
            projection_captured: 1000,
        }
    }

    #[test]
    fn verify_prints_six_lines_padded_to_28() {
        assert_eq!(
            chaos().lines(),
            [
                "payments captured:          1000",
                "outbox events:              2000 (0 unpublished)",
                "messages on the topic:      2201 (201 duplicates)",
                "events processed once:      2000",
                "receipts sent:              1000 for 1000 payments",
                "projection shows captured:  1000",
            ]
        );
    }

    #[test]
    fn figures_survive_their_table_and_compare_one_by_one() {
        let figures = chaos();
        assert_eq!(Figures::from_table(Some(&figures.table())), figures);
        let fewer = Figures {
            receipts: 1001,
            ..figures
        };
        let broken: Vec<String> = figures
            .checks(&fewer)
            .into_iter()
            .filter(|c| !c.holds)
            .map(|c| c.rule)
            .collect();
        assert_eq!(broken, ["receipts sent: 1000"]);
    }
}
