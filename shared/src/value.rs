//! One database value, as plain data: a cell in a ledger snapshot or a statement parameter.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A value as racelab shows it. Scenarios only use integers, text and booleans; anything else a
/// query returns is carried as its text form so nothing is lost on the way to the reader.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

impl Value {
    /// The integer inside, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The text inside, if this is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The value written as an SQL literal (`'design'`, `3000`, `NULL`), for showing parameters.
    pub fn sql_literal(&self) -> String {
        match self {
            Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => f.write_str(&crate::float::display(*x)),
            Value::Text(s) => f.write_str(s),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v.into())
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

#[cfg(test)]
mod tests {
    use super::Value;

    #[test]
    fn literals_quote_text_and_escape_quotes() {
        assert_eq!(Value::from("design").sql_literal(), "'design'");
        assert_eq!(Value::from("o'neil").sql_literal(), "'o''neil'");
        assert_eq!(Value::from(3000).sql_literal(), "3000");
        assert_eq!(Value::Null.sql_literal(), "NULL");
    }

    #[test]
    fn json_round_trip_keeps_integers_integers() {
        let values = vec![Value::Null, Value::Bool(true), Value::Int(3000), Value::from("bob")];
        let json = serde_json::to_string(&values).expect("serialise");
        assert_eq!(json, r#"[null,true,3000,"bob"]"#);
        let back: Vec<Value> = serde_json::from_str(&json).expect("deserialise");
        assert_eq!(back, values);
    }
}
