//! A small JSON reader: text to a [`Json`] tree, and [`FromJson`] to read a type out of it.
//!
//! Why not serde here: the browser app decodes every frame the server sends, and serde's derived
//! decoders for racelab's internally tagged, flattened frames cost the embed bundle 62 KB gzip
//! (each frame is buffered into serde's `Content`, and every nested type is compiled once per
//! deserializer) — more than a blog embed can carry (docs/embedding.md, "The embed bundle"). The server
//! keeps serde for writing; the app reads the same JSON with this module and the impls in
//! [`crate::decode`], which the tests hold equal to serde's on every kind of frame.

use std::fmt;

/// A parsed JSON value. Numbers keep their text, so an integer is read exactly whatever its size.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    /// Members in document order.
    Object(Vec<(String, Json)>),
}

/// Why a text is not JSON, or not the value a reader expected (`rows[2]: expected an integer`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonError(String);

impl JsonError {
    pub fn new(message: impl Into<String>) -> JsonError {
        JsonError(message.into())
    }

    /// The same error, placed inside `field`.
    fn within(self, field: &str) -> JsonError {
        JsonError(format!("{field}: {}", self.0))
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JsonError {}

/// How deep arrays and objects may nest: far beyond any frame, and well short of the stack.
const MAX_DEPTH: usize = 128;

/// Parses one JSON document (surrounding whitespace allowed, nothing else).
pub fn parse(text: &str) -> Result<Json, JsonError> {
    let mut parser = Parser { text, at: 0, depth: 0 };
    let value = parser.value()?;
    parser.skip_whitespace();
    if parser.at < text.len() {
        return Err(parser.error("the end of the document"));
    }
    Ok(value)
}

/// Parses `text` and reads a `T` from it.
pub fn from_str<T: FromJson>(text: &str) -> Result<T, JsonError> {
    T::from_json(&parse(text)?)
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn error(&self, expected: &str) -> JsonError {
        JsonError(format!("expected {expected} at byte {}", self.at))
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_whitespace();
        let found = self.peek() == Some(byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn value(&mut self) -> Result<Json, JsonError> {
        self.skip_whitespace();
        match self.peek() {
            Some(b'{') => self.nested(b'}', Parser::object),
            Some(b'[') => self.nested(b']', Parser::array),
            Some(b'"') => self.string().map(Json::String),
            Some(b't') => self.word("true", Json::Bool(true)),
            Some(b'f') => self.word("false", Json::Bool(false)),
            Some(b'n') => self.word("null", Json::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => Err(self.error("a value")),
        }
    }

    /// An array or object: opens, reads its members with `members`, closes with `close`.
    fn nested(&mut self, close: u8, members: fn(&mut Self) -> Result<Json, JsonError>) -> Result<Json, JsonError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(JsonError::new("nested too deeply"));
        }
        self.at += 1;
        let value = match (self.eat(close), close) {
            (true, b']') => Ok(Json::Array(Vec::new())),
            (true, _) => Ok(Json::Object(Vec::new())),
            (false, _) => members(self),
        };
        self.depth -= 1;
        value
    }

    fn array(&mut self) -> Result<Json, JsonError> {
        let mut items = Vec::new();
        loop {
            items.push(self.value()?);
            if self.eat(b']') {
                return Ok(Json::Array(items));
            }
            if !self.eat(b',') {
                return Err(self.error("`,` or `]`"));
            }
        }
    }

    fn object(&mut self) -> Result<Json, JsonError> {
        let mut members = Vec::new();
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error("a member name"));
            }
            let name = self.string()?;
            if !self.eat(b':') {
                return Err(self.error("`:`"));
            }
            members.push((name, self.value()?));
            if self.eat(b'}') {
                return Ok(Json::Object(members));
            }
            if !self.eat(b',') {
                return Err(self.error("`,` or `}`"));
            }
        }
    }

    fn word(&mut self, word: &str, value: Json) -> Result<Json, JsonError> {
        if self.text[self.at..].starts_with(word) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.error(word))
        }
    }

    /// A number, kept as its text (JSON's grammar, checked here; read as a type later).
    fn number(&mut self) -> Result<Json, JsonError> {
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        match self.peek() {
            Some(b'0') => self.at += 1,
            _ => self.digits()?,
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            self.digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            self.digits()?;
        }
        let text = &self.text[start..self.at];
        // As serde_json does: a fraction or exponent that no f64 holds is an error.
        if text.contains(['.', 'e', 'E']) && !crate::float::parse(text).is_some_and(f64::is_finite) {
            return Err(JsonError::new("number out of range"));
        }
        Ok(Json::Number(text.to_owned()))
    }

    /// One or more digits.
    fn digits(&mut self) -> Result<(), JsonError> {
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        if self.at == start {
            Err(self.error("a digit"))
        } else {
            Ok(())
        }
    }

    fn string(&mut self) -> Result<String, JsonError> {
        self.at += 1; // the opening quote
        let mut out = String::new();
        loop {
            // Copy the run up to the next quote, escape or control character as it is: all are
            // ASCII, so the run ends on a character boundary.
            let rest = &self.text[self.at..];
            let end = rest
                .find(|c| c == '"' || c == '\\' || c < ' ')
                .ok_or_else(|| self.error("the end of a string"))?;
            out.push_str(&rest[..end]);
            self.at += end;
            match rest.as_bytes()[end] {
                b'"' => {
                    self.at += 1;
                    return Ok(out);
                }
                b'\\' => self.at += 1,
                _ => return Err(self.error("an escaped control character")),
            }
            let escape = self.peek().ok_or_else(|| self.error("an escape"))?;
            self.at += 1;
            out.push(match escape {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => self.unicode_escape()?,
                _ => return Err(self.error("an escape")),
            });
        }
    }

    /// The character of a `\uXXXX` escape (the `\u` already read), joining a surrogate pair.
    fn unicode_escape(&mut self) -> Result<char, JsonError> {
        let first = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&first) {
            if !self.text[self.at..].starts_with("\\u") {
                return Err(self.error("the second half of a surrogate pair"));
            }
            self.at += 2;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return Err(self.error("the second half of a surrogate pair"));
            }
            0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
        } else {
            first
        };
        char::from_u32(code).ok_or_else(|| self.error("a character"))
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let digits = self
            .text
            .get(self.at..self.at + 4)
            .filter(|digits| digits.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("four hex digits"))?;
        let code = u32::from_str_radix(digits, 16).map_err(|_| self.error("four hex digits"))?;
        self.at += 4;
        Ok(code)
    }
}

impl Json {
    /// The member called `name`, if this is an object that has one.
    pub fn member(&self, name: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(n, _)| n == name).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Reads the required member `name`.
    pub fn get<T: FromJson>(&self, name: &str) -> Result<T, JsonError> {
        let value = self
            .member(name)
            .ok_or_else(|| JsonError(format!("missing field `{name}`")))?;
        T::from_json(value).map_err(|e| e.within(name))
    }

    /// Reads the member `name`, `None` when it is missing or `null` (serde's rule for `Option`).
    pub fn opt<T: FromJson>(&self, name: &str) -> Result<Option<T>, JsonError> {
        match self.member(name) {
            None | Some(Json::Null) => Ok(None),
            Some(value) => T::from_json(value).map(Some).map_err(|e| e.within(name)),
        }
    }

    /// The text of a string.
    pub fn str(&self) -> Result<&str, JsonError> {
        match self {
            Json::String(s) => Ok(s),
            _ => Err(JsonError::new("expected a string")),
        }
    }

    /// The tag of an internally tagged object (`"type": "commit"`).
    pub fn tag(&self, name: &str) -> Result<&str, JsonError> {
        self.member(name)
            .ok_or_else(|| JsonError(format!("missing field `{name}`")))?
            .str()
            .map_err(|e| e.within(name))
    }

    fn number(&self) -> Result<&str, JsonError> {
        match self {
            Json::Number(n) => Ok(n),
            _ => Err(JsonError::new("expected a number")),
        }
    }
}

/// The error for a tag or name no variant has.
pub fn unknown_variant(name: &str) -> JsonError {
    JsonError(format!("unknown variant `{name}`"))
}

/// A type read from a [`Json`] value, as serde would read it from the same text.
pub trait FromJson: Sized {
    fn from_json(json: &Json) -> Result<Self, JsonError>;
}

impl FromJson for String {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        json.str().map(str::to_owned)
    }
}

impl FromJson for bool {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        match json {
            Json::Bool(b) => Ok(*b),
            _ => Err(JsonError::new("expected a boolean")),
        }
    }
}

impl FromJson for f64 {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        crate::float::parse(json.number()?).ok_or_else(|| JsonError::new("expected a number"))
    }
}

/// Integers: the number's text read as `i64` or `u64` (so `1.0` and `1e3` are not integers, as
/// with serde), then narrowed.
macro_rules! integers {
    ($wide:ty => $($narrow:ty),*) => {$(
        impl FromJson for $narrow {
            fn from_json(json: &Json) -> Result<Self, JsonError> {
                json.number()?
                    .parse::<$wide>()
                    .ok()
                    .and_then(|n| <$narrow>::try_from(n).ok())
                    .ok_or_else(|| JsonError::new(concat!("expected an integer (", stringify!($narrow), ")")))
            }
        }
    )*};
}
integers!(u64 => u64, u32, u16, usize);
integers!(i64 => i64, i32);

impl<T: FromJson> FromJson for Vec<T> {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        match json {
            Json::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| T::from_json(item).map_err(|e| e.within(&i.to_string())))
                .collect(),
            _ => Err(JsonError::new("expected an array")),
        }
    }
}

/// A pair, written as a two-element array (an HTTP header: `["Retry-After", "1"]`).
impl<A: FromJson, B: FromJson> FromJson for (A, B) {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        match json {
            Json::Array(items) if items.len() == 2 => Ok((A::from_json(&items[0])?, B::from_json(&items[1])?)),
            _ => Err(JsonError::new("expected a pair")),
        }
    }
}

/// Writes `text` as a JSON string, quotes included.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// serde_json's tree for the same text, in ours: the reference the parser is held to.
    fn from_serde(value: &serde_json::Value) -> Json {
        match value {
            serde_json::Value::Null => Json::Null,
            serde_json::Value::Bool(b) => Json::Bool(*b),
            serde_json::Value::Number(n) => Json::Number(n.to_string()),
            serde_json::Value::String(s) => Json::String(s.clone()),
            serde_json::Value::Array(items) => Json::Array(items.iter().map(from_serde).collect()),
            serde_json::Value::Object(members) => {
                Json::Object(members.iter().map(|(k, v)| (k.clone(), from_serde(v))).collect())
            }
        }
    }

    fn any_json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i64>().prop_map(|n| serde_json::json!(n)),
            any::<u64>().prop_map(|n| serde_json::json!(n)),
            (-1e12f64..1e12).prop_map(|n| serde_json::json!(n)),
            any::<String>().prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..6)
                    .prop_map(|members| serde_json::Value::Object(members.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

        /// Whatever serde_json writes, compact or pretty, we read as serde_json reads it.
        #[test]
        fn reads_what_serde_writes(value in any_json()) {
            let expected = from_serde(&value);
            let compact = serde_json::to_string(&value).expect("write");
            prop_assert_eq!(parse(&compact).expect("compact"), expected.clone());
            let pretty = serde_json::to_string_pretty(&value).expect("write");
            prop_assert_eq!(parse(&pretty).expect("pretty"), expected);
        }

        /// Our quoting reads back, in serde_json and in ours, as the text it quoted.
        #[test]
        fn quoted_text_reads_back(text in any::<String>()) {
            let quoted = quote(&text);
            prop_assert_eq!(serde_json::from_str::<String>(&quoted).expect("serde reads it"), text.clone());
            prop_assert_eq!(from_str::<String>(&quoted).expect("we read it"), text);
        }

        /// Near-JSON is accepted exactly when serde_json accepts it, and never panics.
        #[test]
        fn accepts_what_serde_accepts(text in "[\\[\\]{}\",:0-9a-z\\\\ .eE+\n\t-]{0,40}") {
            let serde = serde_json::from_str::<serde_json::Value>(&text);
            prop_assert_eq!(parse(&text).is_ok(), serde.is_ok(), "{:?}", serde);
        }
    }

    #[test]
    fn escapes_and_surrogate_pairs() {
        let text = r#""a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00""#;
        assert_eq!(from_str::<String>(text).expect("read"), "a\"b\\c/d\u{8}\u{c}\n\r\té😀");
        assert!(parse(r#""\ud83d""#).is_err(), "a lone high surrogate");
        assert!(parse(r#""\ud83dx""#).is_err());
        assert!(parse(r#""\q""#).is_err());
        assert!(parse(r#""\u+041""#).is_err(), "a sign is not a hex digit");
        assert!(parse(r#""open"#).is_err());
    }

    #[test]
    fn integers_are_exact_and_narrowed() {
        assert_eq!(from_str::<u64>("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(from_str::<i64>("-9223372036854775808"), Ok(i64::MIN));
        assert!(from_str::<u16>("70000").is_err());
        assert!(from_str::<u64>("-1").is_err());
        assert!(from_str::<u64>("1.0").is_err());
        assert!(from_str::<u64>("1e3").is_err());
        assert_eq!(from_str::<f64>("1e3"), Ok(1000.0));
    }

    #[test]
    fn errors_say_where() {
        let json = parse(r#"{"rows": [[1, 2], [3, "x"]]}"#).expect("parse");
        let error = json.get::<Vec<Vec<u64>>>("rows").expect_err("a string among integers");
        assert_eq!(error.to_string(), "rows: 1: 1: expected a number");
        assert_eq!(
            json.get::<String>("name").expect_err("missing").to_string(),
            "missing field `name`"
        );
    }

    #[test]
    fn refuses_what_is_not_one_document() {
        for bad in [
            "",
            "   ",
            "{",
            "[1,]",
            "[1 2]",
            "{\"a\" 1}",
            "{\"a\":1,}",
            "tru",
            "nul",
            "1 2",
            "{}x",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be refused");
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(parse(&deep).is_err(), "nesting past the limit");
        let fine = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse(&fine).is_ok());
    }

    #[test]
    fn pairs_and_options() {
        let json = parse(r#"{"h": [["Retry-After", "1"]], "gone": null}"#).expect("parse");
        assert_eq!(
            json.get::<Vec<(String, String)>>("h"),
            Ok(vec![("Retry-After".to_owned(), "1".to_owned())])
        );
        assert_eq!(json.opt::<String>("gone"), Ok(None));
        assert_eq!(json.opt::<String>("absent"), Ok(None));
    }
}
