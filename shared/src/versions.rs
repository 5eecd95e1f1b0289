//! PostgreSQL versions side by side: the versions racelab plays on (one choice each, whatever
//! the number of servers), and where the transcripts of one race on two versions part.

use crate::catalog::PostgresServer;

/// `PostgreSQL 18.6 (…)` or `postgres (PostgreSQL) 18.6` → 18.
pub fn major_of(version: &str) -> Option<u32> {
    let number = version
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .find(|word| word.starts_with(|c: char| c.is_ascii_digit()))?;
    number.split('.').next()?.parse().ok()
}

/// A run asked for a PostgreSQL version no server has; says which there are.
#[derive(Debug, PartialEq)]
pub struct NoSuchVersion {
    pub asked: u32,
    pub have: Vec<u32>,
}

impl std::fmt::Display for NoSuchVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let have: Vec<String> = self.have.iter().map(u32::to_string).collect();
        write!(
            f,
            "no PostgreSQL {} server here; runs play on PostgreSQL {}",
            self.asked,
            have.join(" or ")
        )
    }
}

impl std::error::Error for NoSuchVersion {}

/// `PostgreSQL 15.20 (Debian 15.20-0+deb12u1)` → `PostgreSQL 15.20`: the distribution's suffix
/// left out, the number is what a reader compares.
pub fn short(version: &str) -> &str {
    version.split(" (").next().unwrap_or(version)
}

/// Each version once, in the servers' order: `(15, "PostgreSQL 15.20")` ([`short`]).
pub fn versions(servers: &[PostgresServer]) -> Vec<(u32, String)> {
    let mut versions: Vec<(u32, String)> = Vec::new();
    for server in servers {
        if !versions.iter().any(|(major, _)| *major == server.major) {
            versions.push((server.major, short(&server.version).to_owned()));
        }
    }
    versions
}

/// Where two transcripts part: the first line (numbered from 1) that differs, with each side's
/// text (empty where one transcript has ended); none if they are the same.
pub fn first_difference(one: &str, other: &str) -> Option<(usize, String, String)> {
    let (mut a, mut b) = (one.lines(), other.lines());
    let mut number = 0;
    loop {
        number += 1;
        match (a.next(), b.next()) {
            (None, None) => return None,
            (x, y) if x == y => {}
            (x, y) => {
                return Some((
                    number,
                    x.unwrap_or_default().to_owned(),
                    y.unwrap_or_default().to_owned(),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str, version: &str, major: u32) -> PostgresServer {
        PostgresServer {
            name: name.into(),
            version: version.into(),
            major,
            up: true,
            detail: version.into(),
        }
    }

    #[test]
    fn versions_read_as_their_major() {
        assert_eq!(major_of("PostgreSQL 15.20 (Debian 15.20-0+deb12u1)"), Some(15));
        assert_eq!(major_of("PostgreSQL 18.6"), Some(18));
        assert_eq!(major_of("postgres (PostgreSQL) 18.6"), Some(18));
        assert_eq!(major_of("PostgreSQL 9.6.24"), Some(9));
        assert_eq!(major_of("no version here"), None);
    }

    #[test]
    fn an_unknown_version_names_those_there_are() {
        let error = NoSuchVersion {
            asked: 17,
            have: vec![15, 18],
        };
        assert_eq!(
            error.to_string(),
            "no PostgreSQL 17 server here; runs play on PostgreSQL 15 or 18"
        );
    }

    #[test]
    fn each_version_once_in_the_servers_order() {
        let servers = [
            server("a:5432", "PostgreSQL 15.20 (Debian 15.20-0+deb12u1)", 15),
            server("b:5433", "PostgreSQL 18.6", 18),
            server("c:5434", "PostgreSQL 15.20 (Debian 15.20-0+deb12u1)", 15),
        ];
        assert_eq!(
            versions(&servers),
            vec![(15, "PostgreSQL 15.20".to_owned()), (18, "PostgreSQL 18.6".to_owned())]
        );
        assert!(versions(&[]).is_empty());
        assert_eq!(short("PostgreSQL 18.6"), "PostgreSQL 18.6");
    }

    #[test]
    fn transcripts_part_at_their_first_different_line() {
        assert_eq!(first_difference("a\nb\nc", "a\nb\nc"), None);
        assert_eq!(
            first_difference("a\nb\nc", "a\nB\nc"),
            Some((2, "b".to_owned(), "B".to_owned()))
        );
        assert_eq!(
            first_difference("a\nb", "a\nb\nc"),
            Some((3, String::new(), "c".to_owned()))
        );
        assert_eq!(first_difference("", ""), None);
    }
}
