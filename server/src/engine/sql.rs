//! The PostgreSQL helpers every part of racelab uses: run one statement and read its rows as
//! plain [`Value`]s, name a session. A leaf: it knows nothing of actors, runs or sandboxes, so
//! all of them can use it.

use super::BoxFuture;
use super::error::StepError;
use futures_util::TryStreamExt;
use shared::Value;
use sqlx::postgres::{PgArguments, PgConnection, PgRow};
use sqlx::query::Query;
use sqlx::{Column, Either, Executor, Postgres, Row, TypeInfo};

/// What a statement returned: its command tag (`UPDATE 1`) and its rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub tag: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// Rows an INSERT, UPDATE or DELETE changed (`UPDATE 0` is 0).
    pub affected: u64,
}

impl Output {
    /// Its rows as a step's result shows them: none for a statement that returns no columns.
    pub fn shown_rows(&self) -> Option<shared::event::Rows> {
        (!self.columns.is_empty()).then(|| shared::event::Rows {
            columns: self.columns.clone(),
            rows: self.rows.clone(),
        })
    }

    /// How many rows the statement returned.
    pub fn row_count(&self) -> usize {
        self.rows.len()
    }

    /// The integer in the first column of the first row (`SELECT spent …`, `RETURNING spent`).
    pub fn int(&self) -> Result<i64, StepError> {
        self.rows
            .first()
            .and_then(|row| row.first())
            .and_then(Value::as_int)
            .ok_or_else(|| StepError::Shape(format!("expected an integer, got {:?}", self.rows)))
    }

    /// The integer in column `col` of the first row.
    pub fn int_at(&self, col: usize) -> Result<i64, StepError> {
        self.rows
            .first()
            .and_then(|row| row.get(col))
            .and_then(Value::as_int)
            .ok_or_else(|| StepError::Shape(format!("expected an integer in column {col}, got {:?}", self.rows)))
    }
}

/// Runs one statement. Without parameters it goes over the simple query protocol (as psql and
/// the tutorials' BEGIN/COMMIT do); with parameters, as a prepared statement with bound values.
///
/// Boxed, with `Send` checked here where the lifetimes are concrete: sqlx's executor traits are
/// generic over lifetimes, and left unboxed they defeat the compiler's proof that the callers'
/// futures are `Send` (rust-lang/rust#102211).
pub(crate) fn execute<'a>(
    conn: &'a mut PgConnection,
    sql: &'a str,
    params: &'a [Value],
) -> BoxFuture<'a, Result<Output, sqlx::Error>> {
    Box::pin(async move {
        let mut output = if params.is_empty() {
            collect(conn, sql, sql).await?
        } else {
            collect(conn, sql, bind_all(sqlx::query(sql), params)).await?
        };
        // An empty result still has a header, as psql shows it (` key | status `, `(0 rows)`).
        if output.columns.is_empty() && output.rows.is_empty() && output.tag.starts_with("SELECT") {
            output.columns = describe_columns(conn, sql).await?;
        }
        Ok(output)
    })
}

/// The column names `sql` would return, without running it: a snapshot of an empty table still
/// shows its header. Prepared, not described: sqlx's `describe` also infers each column's
/// nullability (two more queries and an `EXPLAIN`), which a header does not need. Boxed like
/// [`execute`].
pub(crate) fn describe_columns<'a>(
    conn: &'a mut PgConnection,
    sql: &'a str,
) -> BoxFuture<'a, Result<Vec<String>, sqlx::Error>> {
    Box::pin(async move {
        use sqlx::{Column, Statement};
        let prepared = conn.prepare(sql).await?;
        Ok(prepared.columns().iter().map(|c| c.name().to_owned()).collect())
    })
}

fn bind_all<'q>(mut query: Query<'q, Postgres, PgArguments>, params: &'q [Value]) -> Query<'q, Postgres, PgArguments> {
    for param in params {
        query = match param {
            Value::Null => query.bind(None::<i64>),
            Value::Bool(b) => query.bind(*b),
            Value::Int(i) => query.bind(*i),
            Value::Float(x) => query.bind(*x),
            Value::Text(s) => query.bind(s.as_str()),
        };
    }
    query
}

async fn collect<'q, E>(conn: &mut PgConnection, sql: &str, query: E) -> Result<Output, sqlx::Error>
where
    E: sqlx::Execute<'q, Postgres> + 'q,
{
    let mut stream = conn.fetch_many(query);
    let mut columns = Vec::new();
    let mut rows = Vec::new();
    let mut affected = 0u64;
    while let Some(item) = stream.try_next().await? {
        match item {
            Either::Left(done) => affected += done.rows_affected(),
            Either::Right(row) => {
                if columns.is_empty() {
                    columns = row.columns().iter().map(|c| c.name().to_owned()).collect();
                }
                rows.push(decode_row(&row));
            }
        }
    }
    Ok(Output {
        tag: command_tag(sql, affected),
        columns,
        rows,
        affected,
    })
}

/// The command tag PostgreSQL's psql would show: `SELECT 1`, `INSERT 0 1`, `UPDATE 0`, `COMMIT`.
pub fn command_tag(sql: &str, affected: u64) -> String {
    let verb = sql.split_whitespace().next().unwrap_or_default().to_ascii_uppercase();
    match verb.as_str() {
        "INSERT" => format!("INSERT 0 {affected}"),
        "SELECT" | "UPDATE" | "DELETE" | "WITH" | "MERGE" => format!("{verb} {affected}"),
        _ => verb,
    }
}

/// Decodes a row by its column types: numbers and booleans as themselves, everything else as the
/// text a reader would see in psql (a uuid, a jsonb document, a timestamptz, `\x…` bytes, an
/// interval). A type racelab cannot read is shown by name rather than guessed at.
fn decode_row(row: &PgRow) -> Vec<Value> {
    (0..row.columns().len())
        .map(|i| {
            let type_name = row.columns()[i].type_info().name().to_owned();
            match decode_cell(row, i, &type_name) {
                Ok(Some(v)) => v,
                Ok(None) => Value::Null,
                Err(e) => Value::Text(format!("<undecodable {type_name}: {e}>")),
            }
        })
        .collect()
}

/// One cell. Numbers, booleans and text by their type; in the text protocol (a query without
/// parameters) every other type already arrives as PostgreSQL's own text, which is what a reader
/// should see; in the binary protocol the types racelab's labs use are formatted as psql would.
fn decode_cell(row: &PgRow, i: usize, type_name: &str) -> Result<Option<Value>, sqlx::Error> {
    use sqlx::ValueRef as _;
    use sqlx::types::chrono::{DateTime, NaiveDateTime, Utc};
    Ok(match type_name {
        "INT2" => row.try_get::<Option<i16>, _>(i)?.map(|v| Value::Int(v.into())),
        "INT4" => row.try_get::<Option<i32>, _>(i)?.map(|v| Value::Int(v.into())),
        "INT8" => row.try_get::<Option<i64>, _>(i)?.map(Value::Int),
        "BOOL" => row.try_get::<Option<bool>, _>(i)?.map(Value::Bool),
        "FLOAT4" => row.try_get::<Option<f32>, _>(i)?.map(|v| Value::Float(v.into())),
        "FLOAT8" => row.try_get::<Option<f64>, _>(i)?.map(Value::Float),
        "TEXT" | "VARCHAR" | "NAME" | "BPCHAR" => row.try_get::<Option<String>, _>(i)?.map(Value::Text),
        _ => {
            let raw = row.try_get_raw(i)?;
            if raw.is_null() {
                return Ok(None);
            }
            if raw.format() == sqlx::postgres::PgValueFormat::Text {
                let text = raw.as_str().map_err(sqlx::Error::Decode)?;
                return Ok(Some(Value::Text(text.to_owned())));
            }
            let text = match type_name {
                "UUID" => row.try_get::<sqlx::types::Uuid, _>(i)?.hyphenated().to_string(),
                "JSON" | "JSONB" => jsonb_text(&row.try_get::<sqlx::types::JsonValue, _>(i)?),
                "TIMESTAMPTZ" => timestamptz_text(&row.try_get::<DateTime<Utc>, _>(i)?),
                "TIMESTAMP" => row
                    .try_get::<NaiveDateTime, _>(i)?
                    .format("%Y-%m-%d %H:%M:%S%.f")
                    .to_string(),
                "BYTEA" => bytea_text(&row.try_get::<Vec<u8>, _>(i)?),
                "INTERVAL" => {
                    let iv = row.try_get::<sqlx::postgres::types::PgInterval, _>(i)?;
                    interval_text(iv.months, iv.days, iv.microseconds)
                }
                _ => format!("<{type_name}>"),
            };
            Some(Value::Text(text))
        }
    })
}

/// `2026-10-12 11:39:00.616311+00`: a timestamptz as psql prints it in UTC (microseconds, no
/// trailing zeros, none at all on a whole second).
pub fn timestamptz_text(t: &sqlx::types::chrono::DateTime<sqlx::types::chrono::Utc>) -> String {
    let mut text = t.format("%Y-%m-%d %H:%M:%S%.6f").to_string();
    while text.ends_with('0') {
        text.pop();
    }
    if text.ends_with('.') {
        text.pop();
    }
    text + "+00"
}

/// A JSON document as PostgreSQL prints a jsonb: keys shortest first (then bytewise), `", "` and
/// `": "` between items, so a value reads the same whichever protocol brought it.
pub fn jsonb_text(value: &sqlx::types::JsonValue) -> String {
    use sqlx::types::JsonValue as J;
    match value {
        J::Object(map) => {
            let mut entries: Vec<(&String, &J)> = map.iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
            let items: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}: {}", J::String(k.clone()), jsonb_text(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        J::Array(items) => format!("[{}]", items.iter().map(jsonb_text).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

/// `\x7b22…`: bytes as psql prints a bytea (hex output, PostgreSQL's default).
pub fn bytea_text(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(2 + bytes.len() * 2);
    text.push_str("\\x");
    for b in bytes {
        text.push_str(&format!("{b:02x}"));
    }
    text
}

/// An interval as PostgreSQL's default output style writes it: `00:00:00`, `8 days`,
/// `1 day 02:03:04.5`, `-00:00:01`.
pub fn interval_text(months: i32, days: i32, micros: i64) -> String {
    let mut parts = Vec::new();
    let (years, months) = (months / 12, months % 12);
    let plural = |n: i64, unit: &str| format!("{n} {unit}{}", if n.abs() == 1 { "" } else { "s" });
    if years != 0 {
        parts.push(plural(years.into(), "year"));
    }
    if months != 0 {
        parts.push(plural(months.into(), "mon"));
    }
    if days != 0 {
        parts.push(plural(days.into(), "day"));
    }
    if micros != 0 || parts.is_empty() {
        let sign = if micros < 0 { "-" } else { "" };
        let total = micros.unsigned_abs();
        let (secs, frac) = (total / 1_000_000, total % 1_000_000);
        let mut time = format!("{sign}{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
        if frac != 0 {
            let digits = format!("{frac:06}");
            time.push('.');
            time.push_str(digits.trim_end_matches('0'));
        }
        parts.push(time);
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_tags_follow_psql() {
        assert_eq!(command_tag("SELECT spent FROM teams", 1), "SELECT 1");
        assert_eq!(command_tag("insert into expenses values (1)", 1), "INSERT 0 1");
        assert_eq!(command_tag("UPDATE teams SET spent = 0", 0), "UPDATE 0");
        assert_eq!(command_tag("COMMIT", 0), "COMMIT");
        assert_eq!(command_tag("BEGIN ISOLATION LEVEL SERIALIZABLE", 0), "BEGIN");
    }

    #[test]
    fn intervals_read_as_postgres_prints_them() {
        assert_eq!(interval_text(0, 0, 0), "00:00:00");
        assert_eq!(interval_text(0, 8, 0), "8 days");
        assert_eq!(interval_text(0, 1, 7_384_500_000), "1 day 02:03:04.5");
        assert_eq!(interval_text(14, 0, 0), "1 year 2 mons");
        assert_eq!(interval_text(0, 0, -1_000_000), "-00:00:01");
    }

    #[test]
    fn jsonb_reads_as_postgres_prints_it() {
        let doc = serde_json::json!({"currency": "USD", "amount_cents": 2500, "data": [1, {}]});
        assert_eq!(
            jsonb_text(&doc),
            r#"{"data": [1, {}], "currency": "USD", "amount_cents": 2500}"#
        );
    }

    #[test]
    fn timestamps_and_bytes_read_as_psql_prints_them() {
        use sqlx::types::chrono::{NaiveDate, TimeZone, Utc};
        let t = NaiveDate::from_ymd_opt(2026, 10, 12)
            .and_then(|d| d.and_hms_micro_opt(11, 39, 0, 616_311))
            .expect("a time")
            .and_utc();
        assert_eq!(timestamptz_text(&t), "2026-10-12 11:39:00.616311+00");
        let whole = Utc.with_ymd_and_hms(2026, 10, 12, 11, 39, 0).single().expect("a time");
        assert_eq!(timestamptz_text(&whole), "2026-10-12 11:39:00+00");
        assert_eq!(bytea_text(&[0x7b, 0x0a]), "\\x7b0a");
    }
}
