//! Text to [`Spec`]: the tester's scanner and grammar, token for token, with errors that say
//! where and what was expected.
//!
//! What the tester's scanner does, and so this one:
//! - keywords (`setup`, `teardown`, `session`, `step`, `permutation`, `notices`) are whole
//!   words; `setup1` is a name. Names are `[A-Za-z_…][A-Za-z0-9_$…]*` (any non-ASCII letter
//!   too), or double-quoted with `""` for a quote.
//! - an SQL block runs from `{` to the first `}`, whatever quotes or comments lie between;
//!   spaces and tabs (not newlines) right after `{` and right before `}` are not part of it.
//!   The rest is sent to the server as it stands, and printed as it stands.
//! - `#` starts a comment to the end of the line, outside SQL blocks.

use super::{Blocker, Check, Permutation, PermutationStep, Pos, Session, Spec, Step};

/// A spec that does not parse: where, and what was wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub at: Pos,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.message)
    }
}

impl std::error::Error for ParseError {}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Keyword(Keyword),
    Name(String),
    Sql(String),
    Integer(u32),
    Punct(char),
    End,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keyword {
    Notices,
    Permutation,
    Session,
    Setup,
    Step,
    Teardown,
}

impl Keyword {
    fn from_word(word: &str) -> Option<Keyword> {
        Some(match word {
            "notices" => Keyword::Notices,
            "permutation" => Keyword::Permutation,
            "session" => Keyword::Session,
            "setup" => Keyword::Setup,
            "step" => Keyword::Step,
            "teardown" => Keyword::Teardown,
            _ => return None,
        })
    }

    fn word(self) -> &'static str {
        match self {
            Keyword::Notices => "notices",
            Keyword::Permutation => "permutation",
            Keyword::Session => "session",
            Keyword::Setup => "setup",
            Keyword::Step => "step",
            Keyword::Teardown => "teardown",
        }
    }
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Keyword(k) => write!(f, "\"{}\"", k.word()),
            Token::Name(name) => write!(f, "the name \"{name}\""),
            Token::Sql(_) => write!(f, "an SQL block"),
            Token::Integer(n) => write!(f, "the number {n}"),
            Token::Punct(c) => write!(f, "\"{c}\""),
            Token::End => write!(f, "the end of the spec"),
        }
    }
}

/// `[A-Za-z_]` or any non-ASCII character: where the tester's names may start.
pub(super) fn name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || !c.is_ascii()
}

/// Where the tester's names may go on: a start, a digit or `$`.
pub(super) fn name_continues(c: char) -> bool {
    name_start(c) || c.is_ascii_digit() || c == '$'
}

/// The spaces the tester skips (a newline counts lines, so it is apart).
fn space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\x0c')
}

struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: u32,
    column: u32,
    checks: Vec<Check>,
    /// Question lines (`# question:`, `# choice`, `# answer`), and the first malformed one.
    asked: Vec<(super::question::Line, Pos)>,
    malformed: Option<ParseError>,
    /// The `# database:` line's, and where it was; a second or an unknown one is an error.
    database: Option<(super::Database, Pos)>,
    misnamed: Option<ParseError>,
}

impl Lexer<'_> {
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            column: self.column,
        }
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn error(at: Pos, message: impl Into<String>) -> ParseError {
        ParseError {
            at,
            message: message.into(),
        }
    }

    fn next_token(&mut self) -> Result<(Token, Pos), ParseError> {
        loop {
            let at = self.pos();
            let Some(&c) = self.chars.peek() else {
                return Ok((Token::End, at));
            };
            match c {
                '\n' => {
                    self.bump();
                }
                c if space(c) => {
                    self.bump();
                }
                '#' => self.comment(at),
                '"' => return self.quoted(at).map(|name| (Token::Name(name), at)),
                '{' => return self.sql(at).map(|sql| (Token::Sql(sql), at)),
                ',' | '(' | ')' | '*' => {
                    self.bump();
                    return Ok((Token::Punct(c), at));
                }
                c if c.is_ascii_digit() => return self.integer(at).map(|n| (Token::Integer(n), at)),
                c if name_start(c) => {
                    let mut word = String::new();
                    while let Some(&c) = self.chars.peek().filter(|c| name_continues(**c)) {
                        word.push(c);
                        self.bump();
                    }
                    let token = Keyword::from_word(&word).map_or(Token::Name(word), Token::Keyword);
                    return Ok((token, at));
                }
                other => return Err(Self::error(at, format!("unexpected character \"{other}\""))),
            }
        }
    }

    /// A comment, to the end of the line (a `\r` ends it too, as in the tester). A
    /// `# check: <SQL>` comment is kept as a check, a question's lines as the question.
    fn comment(&mut self, at: Pos) {
        let mut text = String::new();
        while let Some(&c) = self.chars.peek().filter(|c| **c != '\n' && **c != '\r') {
            text.push(c);
            self.bump();
        }
        let body = text.trim_start_matches('#').trim_start();
        match super::question::line(body) {
            Ok(Some(line)) => self.asked.push((line, at)),
            Ok(None) => {}
            Err(message) => {
                if self.malformed.is_none() {
                    self.malformed = Some(Self::error(at, message));
                }
            }
        }
        if let Some(name) = body.strip_prefix("database:") {
            self.name_database(name, at);
        }
        if let Some(sql) = body.strip_prefix("check:") {
            let sql = sql.trim();
            if !sql.is_empty() {
                self.checks.push(Check {
                    sql: sql.to_owned(),
                    at,
                });
            }
        }
    }

    /// A `# database:` line: the first names the spec's database; one naming no database
    /// racelab plays on, or a second, is an error at its line.
    fn name_database(&mut self, name: &str, at: Pos) {
        let problem = match (super::Database::named(name), self.database) {
            (None, _) => format!(
                "unknown database \"{}\": a spec plays on postgresql or mariadb",
                name.trim()
            ),
            (Some(_), Some((_, first))) => {
                format!("a second \"# database:\" line (the first is at line {})", first.line)
            }
            (Some(database), None) => {
                self.database = Some((database, at));
                return;
            }
        };
        if self.misnamed.is_none() {
            self.misnamed = Some(Self::error(at, problem));
        }
    }

    fn quoted(&mut self, at: Pos) -> Result<String, ParseError> {
        self.bump();
        let mut name = String::new();
        loop {
            match self.chars.peek().copied() {
                None => return Err(Self::error(at, "unterminated quoted name")),
                Some('\n') => return Err(Self::error(self.pos(), "unexpected newline in quoted name")),
                Some('"') => {
                    self.bump();
                    if self.chars.peek() == Some(&'"') {
                        self.bump();
                        name.push('"');
                    } else {
                        return Ok(name);
                    }
                }
                Some(c) => {
                    self.bump();
                    name.push(c);
                }
            }
        }
    }

    fn sql(&mut self, at: Pos) -> Result<String, ParseError> {
        self.bump();
        while self.chars.peek().is_some_and(|c| space(*c)) {
            self.bump();
        }
        let mut sql = String::new();
        loop {
            match self.bump() {
                None => return Err(Self::error(at, "unterminated SQL block: no \"}\" after this \"{\"")),
                Some('}') => {
                    let kept = sql.trim_end_matches(space).len();
                    sql.truncate(kept);
                    return Ok(sql);
                }
                Some(c) => sql.push(c),
            }
        }
    }

    fn integer(&mut self, at: Pos) -> Result<u32, ParseError> {
        let mut digits = String::new();
        while let Some(&c) = self.chars.peek().filter(|c| c.is_ascii_digit()) {
            digits.push(c);
            self.bump();
        }
        digits
            .parse()
            .map_err(|_| Self::error(at, format!("the number {digits} is too large")))
    }
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    token: Token,
    at: Pos,
}

impl Parser<'_> {
    fn advance(&mut self) -> Result<(Token, Pos), ParseError> {
        let (next, at) = self.lexer.next_token()?;
        let token = std::mem::replace(&mut self.token, next);
        let was = std::mem::replace(&mut self.at, at);
        Ok((token, was))
    }

    fn is(&self, keyword: Keyword) -> bool {
        self.token == Token::Keyword(keyword)
    }

    fn expected(&self, what: &str) -> ParseError {
        ParseError {
            at: self.at,
            message: format!("expected {what}, found {}", self.token),
        }
    }

    fn name(&mut self, what: &str) -> Result<(String, Pos), ParseError> {
        match &self.token {
            Token::Name(_) => match self.advance()? {
                (Token::Name(name), at) => Ok((name, at)),
                _ => Err(self.expected(what)),
            },
            Token::Keyword(k) => Err(ParseError {
                at: self.at,
                message: format!(
                    "expected {what}, found the keyword \"{}\" (quote it to use it as a name)",
                    k.word()
                ),
            }),
            _ => Err(self.expected(what)),
        }
    }

    fn sql(&mut self, after: &str) -> Result<String, ParseError> {
        match &self.token {
            Token::Sql(_) => match self.advance()? {
                (Token::Sql(sql), _) => Ok(sql),
                _ => Err(self.expected("an SQL block")),
            },
            _ => Err(self.expected(&format!("an SQL block {{ … }} after {after}"))),
        }
    }

    fn spec(&mut self) -> Result<Spec, ParseError> {
        let mut spec = Spec::default();
        while self.is(Keyword::Setup) {
            self.advance()?;
            spec.setup.push(self.sql("\"setup\"")?);
        }
        if self.is(Keyword::Teardown) {
            self.advance()?;
            spec.teardown = Some(self.sql("\"teardown\"")?);
        }
        if !self.is(Keyword::Session) {
            let what = if spec.teardown.is_some() {
                "\"session\" (the one teardown comes after every setup, before the sessions)"
            } else {
                "\"setup\", \"teardown\" or \"session\""
            };
            return Err(self.expected(what));
        }
        while self.is(Keyword::Session) {
            spec.sessions.push(self.session()?);
        }
        while self.is(Keyword::Permutation) {
            spec.permutations.push(self.permutation()?);
        }
        if self.token != Token::End {
            let what = if spec.permutations.is_empty() {
                "\"step\", \"teardown\", \"session\" or \"permutation\""
            } else {
                "a step name or \"permutation\""
            };
            return Err(self.expected(what));
        }
        Ok(spec)
    }

    fn session(&mut self) -> Result<Session, ParseError> {
        self.advance()?;
        let (name, at) = self.name("a session name after \"session\"")?;
        let mut session = Session {
            name,
            at,
            ..Session::default()
        };
        if self.is(Keyword::Setup) {
            self.advance()?;
            session.setup = Some(self.sql("\"setup\"")?);
        }
        if !self.is(Keyword::Step) {
            return Err(self.expected(&format!("\"step\" (session {} needs at least one)", session.name)));
        }
        while self.is(Keyword::Step) {
            self.advance()?;
            let (name, at) = self.name("a step name after \"step\"")?;
            let sql = self.sql(&format!("step {name}"))?;
            session.steps.push(Step { name, sql, at });
        }
        if self.is(Keyword::Teardown) {
            self.advance()?;
            session.teardown = Some(self.sql("\"teardown\"")?);
        }
        Ok(session)
    }

    fn permutation(&mut self) -> Result<Permutation, ParseError> {
        let (_, at) = self.advance()?;
        let mut permutation = Permutation { steps: Vec::new(), at };
        while let Token::Name(_) = self.token {
            permutation.steps.push(self.permutation_step()?);
        }
        if permutation.steps.is_empty() {
            return Err(self.expected("a step name after \"permutation\""));
        }
        Ok(permutation)
    }

    fn permutation_step(&mut self) -> Result<PermutationStep, ParseError> {
        let (name, at) = self.name("a step name")?;
        let mut step = PermutationStep {
            name,
            blockers: Vec::new(),
            at,
        };
        if self.token == Token::Punct('(') {
            self.advance()?;
            loop {
                step.blockers.push(self.blocker()?);
                match self.token {
                    Token::Punct(',') => {
                        self.advance()?;
                    }
                    Token::Punct(')') => {
                        self.advance()?;
                        break;
                    }
                    _ => return Err(self.expected("\",\" or \")\"")),
                }
            }
        }
        Ok(step)
    }

    fn blocker(&mut self) -> Result<Blocker, ParseError> {
        if self.token == Token::Punct('*') {
            self.advance()?;
            return Ok(Blocker::Once);
        }
        let (step, _) = self.name("a blocking step's name or \"*\"")?;
        if !self.is(Keyword::Notices) {
            return Ok(Blocker::Step(step));
        }
        self.advance()?;
        match self.token {
            Token::Integer(count) => {
                self.advance()?;
                Ok(Blocker::Notices { step, count })
            }
            _ => Err(self.expected("a number after \"notices\"")),
        }
    }
}

/// Parses a spec as PostgreSQL's isolation tester does. The `# check:` comments it ignores
/// are kept in [`Spec::checks`]. [`Spec::validate`] then checks what the grammar cannot (names
/// that refer to steps).
pub fn parse(text: &str) -> Result<Spec, ParseError> {
    let mut lexer = Lexer {
        chars: text.chars().peekable(),
        line: 1,
        column: 1,
        checks: Vec::new(),
        asked: Vec::new(),
        malformed: None,
        database: None,
        misnamed: None,
    };
    let (token, at) = lexer.next_token()?;
    let mut parser = Parser { lexer, token, at };
    let mut spec = parser.spec()?;
    spec.checks = std::mem::take(&mut parser.lexer.checks);
    if let Some(error) = parser.lexer.misnamed.take() {
        return Err(error);
    }
    spec.database = parser.lexer.database.map(|(database, _)| database).unwrap_or_default();
    // Comments that only look like choices or answers, in a spec that asks nothing, are
    // comments: the tester's specs may say "# answer …" in their own words.
    let asked = std::mem::take(&mut parser.lexer.asked);
    if asked
        .iter()
        .any(|(line, _)| matches!(line, super::question::Line::Question(_)))
    {
        if let Some(error) = parser.lexer.malformed.take() {
            return Err(error);
        }
        spec.question = super::question::assemble(asked).map_err(|(at, message)| ParseError { at, message })?;
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Spec {
        parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn err(text: &str) -> ParseError {
        match parse(text) {
            Ok(spec) => panic!("{text:?} parsed: {spec:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn setups_teardown_sessions_steps_and_permutations() {
        let s = ok(
            "setup { CREATE TABLE t (k int); }\nsetup { INSERT INTO t VALUES (1); }\nteardown { DROP TABLE t; }\n\
                    session s1\nsetup { BEGIN; }\nstep a { SELECT 1; }\nstep b { COMMIT; }\nteardown { SELECT 2; }\n\
                    session s2\nstep c { SELECT 3; }\npermutation a c b\npermutation c a b\n",
        );
        assert_eq!(s.setup, vec!["CREATE TABLE t (k int);", "INSERT INTO t VALUES (1);"]);
        assert_eq!(s.teardown.as_deref(), Some("DROP TABLE t;"));
        assert_eq!(s.sessions.len(), 2);
        assert_eq!(s.sessions[0].setup.as_deref(), Some("BEGIN;"));
        assert_eq!(s.sessions[0].teardown.as_deref(), Some("SELECT 2;"));
        assert_eq!(s.sessions[0].steps[1].name, "b");
        assert_eq!(s.sessions[0].steps[1].at, Pos { line: 7, column: 6 });
        assert_eq!(s.sessions[1].setup, None);
        let names: Vec<_> = s.permutations[1].steps.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["c", "a", "b"]);
    }

    #[test]
    fn an_sql_block_keeps_newlines_and_drops_only_the_spaces_at_its_ends() {
        let s = ok("session s step a\n{\n  SELECT 1;\n  SELECT '#not a comment';  \n}");
        assert_eq!(
            s.sessions[0].steps[0].sql,
            "\n  SELECT 1;\n  SELECT '#not a comment';  \n"
        );
        let s = ok("session s step a {  \t SELECT 1; \t }");
        assert_eq!(s.sessions[0].steps[0].sql, "SELECT 1;");
        let s = ok("session s step a {}");
        assert_eq!(s.sessions[0].steps[0].sql, "");
    }

    #[test]
    fn an_sql_block_ends_at_the_first_closing_brace_as_in_the_tester() {
        let e = err("session s step a { SELECT '{\"a\": 1}'; }");
        assert_eq!(e.at, Pos { line: 1, column: 36 });
        assert_eq!(e.message, "unexpected character \"'\"");
    }

    #[test]
    fn names_may_be_quoted_and_keywords_are_whole_words() {
        let s = ok(
            "session \"s \"\"one\"\"\" step \"step\" { SELECT 1; } step setup1 { SELECT 2; } step x$y { SELECT 3; } step émile { SELECT 4; }",
        );
        assert_eq!(s.sessions[0].name, "s \"one\"");
        let names: Vec<_> = s.sessions[0].steps.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["step", "setup1", "x$y", "émile"]);
        let e = err("session s step setup { SELECT 1; }");
        assert!(e.message.contains("keyword \"setup\""), "{e}");
    }

    #[test]
    fn blockers_once_steps_and_notices() {
        let s = ok("session a step x { SELECT 1; } session b step y { SELECT 2; } permutation x(*) y(x, x notices 3)");
        let p = &s.permutations[0];
        assert_eq!(p.steps[0].blockers, vec![Blocker::Once]);
        assert_eq!(
            p.steps[1].blockers,
            vec![
                Blocker::Step("x".into()),
                Blocker::Notices {
                    step: "x".into(),
                    count: 3
                }
            ]
        );
    }

    #[test]
    fn comments_are_skipped_and_check_comments_kept() {
        let s = ok(
            "# a race\n# check: SELECT sum(amount) <= 5000 FROM expenses\nsession s # the only one\nstep a { SELECT 1; } #check:SELECT true\n#   check:   \n",
        );
        assert_eq!(s.checks.len(), 2);
        assert_eq!(s.checks[0].sql, "SELECT sum(amount) <= 5000 FROM expenses");
        assert_eq!(s.checks[0].at, Pos { line: 2, column: 1 });
        assert_eq!(s.checks[1].sql, "SELECT true");
    }

    #[test]
    fn a_database_line_says_where_the_spec_plays() {
        assert_eq!(
            ok("session s step a { SELECT 1; }").database,
            super::super::Database::Postgresql
        );
        let on_mariadb = ok("# a race\n#   database:  MariaDB \nsession s step a { SELECT 1; }");
        assert_eq!(on_mariadb.database, super::super::Database::Mariadb);
        assert_eq!(
            super::super::title("# a race\n# database: mariadb\n").as_deref(),
            Some("a race")
        );
        assert_eq!(
            super::super::title("# database: mariadb\n# a race\n").as_deref(),
            Some("a race")
        );
        let unknown = err("# database: oracle\nsession s step a { SELECT 1; }");
        assert_eq!(unknown.at.line, 1);
        assert!(unknown.message.contains("\"oracle\""), "{}", unknown.message);
        let twice = err("# database: mariadb\n\n# database: postgresql\nsession s step a { SELECT 1; }");
        assert_eq!(twice.at.line, 3);
        assert!(twice.message.contains("line 1"), "{}", twice.message);
        let printed = super::super::print::print(&on_mariadb);
        assert!(printed.starts_with("# database: mariadb\n"), "{printed}");
        assert_eq!(
            parse(&printed).map(|s| s.database).ok(),
            Some(super::super::Database::Mariadb)
        );
    }

    #[test]
    fn errors_say_where_and_what_was_expected() {
        let e = err("setup { SELECT 1; }\n\nsession s\nstep { SELECT 1; }");
        assert_eq!(e.at, Pos { line: 4, column: 6 });
        assert_eq!(e.message, "expected a step name after \"step\", found an SQL block");
        assert_eq!(
            e.to_string(),
            "line 4, column 6: expected a step name after \"step\", found an SQL block"
        );

        let e = err("session s\nstep a { SELECT 1;");
        assert_eq!(e.at, Pos { line: 2, column: 8 });
        assert!(e.message.starts_with("unterminated SQL block"));

        let e = err("session \"s\nstep a { SELECT 1; }");
        assert_eq!(e.message, "unexpected newline in quoted name");

        let e = err("session s step a { SELECT 1; } permutation a(");
        assert_eq!(
            e.message,
            "expected a blocking step's name or \"*\", found the end of the spec"
        );

        let e = err("session s step a { SELECT 1; } permutation a(b notices)");
        assert_eq!(e.message, "expected a number after \"notices\", found \")\"");

        let e = err("session s step a { SELECT 1; } permutation");
        assert_eq!(
            e.message,
            "expected a step name after \"permutation\", found the end of the spec"
        );

        let e = err("session s step a { SELECT 1; } ; ");
        assert_eq!((e.at.column, e.message.as_str()), (32, "unexpected character \";\""));
    }

    #[test]
    fn the_grammar_orders_its_parts_as_the_tester_does() {
        assert!(
            err("")
                .message
                .starts_with("expected \"setup\", \"teardown\" or \"session\"")
        );
        assert!(
            err("session s setup { BEGIN; }")
                .message
                .starts_with("expected \"step\" (session s needs at least one)")
        );
        // One global teardown, after the setups and before the sessions.
        assert!(
            err("teardown { SELECT 1; } setup { SELECT 2; } session s step a { SELECT 1; }")
                .message
                .contains("the one teardown")
        );
        // After permutations, only permutations.
        assert!(
            err("session s step a { SELECT 1; } permutation a session t step b { SELECT 1; }")
                .message
                .starts_with("expected a step name or \"permutation\"")
        );
        // A session's teardown ends the session: no steps after it.
        assert!(
            err("session s step a { SELECT 1; } teardown { SELECT 1; } step b { SELECT 1; }")
                .message
                .starts_with("expected \"step\", \"teardown\", \"session\"")
        );
    }

    #[test]
    fn a_number_too_large_is_an_error_not_a_wrap() {
        let e =
            err("session a step x { SELECT 1; } session b step y { SELECT 2; } permutation x(y notices 99999999999)");
        assert_eq!(e.message, "the number 99999999999 is too large");
    }
}
