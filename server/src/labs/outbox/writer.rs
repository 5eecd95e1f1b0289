//! The payment service with an outbox: every change to a payment and the event that describes it
//! are written in one transaction, so an event exists if and only if its change committed.
//! Nothing here talks to the broker; the relay does that later.
//!
//! It prints what the tutorial's `payments.py` prints: `pay_001: authorize recorded`,
//! `pay_001: capture recorded`; a capture of a payment that is not authorized raises
//! `ValueError: pay_001 is not authorized` and rolls back, outbox row and all.

use crate::engine::{PgActor, RunError};
use shared::Value;

/// Authorizes payment `id` for `amount_cents` and records `payment.authorized` beside it.
pub async fn authorize(payments: &PgActor, id: &str, amount_cents: i64) -> Result<(), RunError> {
    payments.begin().await?;
    payments
        .query(
            "INSERT INTO payments (id, amount_cents, currency, status) VALUES ($1, $2, 'USD', 'authorized')",
            &[id.into(), amount_cents.into()],
        )
        .await?;
    payments
        .query(
            "INSERT INTO outbox (aggregate_id, event_type, payload)
             VALUES ($1, 'payment.authorized', jsonb_build_object('amount_cents', $2::int, 'currency', 'USD'))",
            &[id.into(), amount_cents.into()],
        )
        .await?;
    payments.commit().await?;
    payments.lane().say_exactly(format!("{id}: authorize recorded"));
    Ok(())
}

/// Captures payment `id` if it is authorized, recording `payment.captured` beside it; returns
/// whether it was. A payment that is not authorized rolls the whole transaction back.
pub async fn capture(payments: &PgActor, id: &str) -> Result<bool, RunError> {
    payments.begin().await?;
    let captured = payments
        .query(
            "UPDATE payments SET status = 'captured', updated_at = now()
             WHERE id = $1 AND status = 'authorized' RETURNING amount_cents, currency",
            &[id.into()],
        )
        .await?;
    let Some(row) = captured.rows.first() else {
        payments.rollback().await?;
        payments
            .lane()
            .say_exactly(format!("ValueError: {id} is not authorized"));
        return Ok(false);
    };
    let (amount, currency) = (row[0].clone(), row.get(1).cloned().unwrap_or(Value::Null));
    payments
        .query(
            "INSERT INTO outbox (aggregate_id, event_type, payload)
             VALUES ($1, 'payment.captured', jsonb_build_object('amount_cents', $2::int, 'currency', $3::text))",
            &[id.into(), amount, currency],
        )
        .await?;
    payments.commit().await?;
    payments.lane().say_exactly(format!("{id}: capture recorded"));
    Ok(true)
}
