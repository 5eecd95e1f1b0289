//! Where a spec plays: PostgreSQL, or MariaDB when a `# database: mariadb` line says so (its SQL
//! is then MariaDB's). The line is a comment to the tester, as `# check:` is, so the text alone
//! says where it plays: a saved spec, its link and its embed carry it with nothing else.

/// The server a spec plays on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Database {
    #[default]
    Postgresql,
    Mariadb,
}

impl Database {
    /// As a `# database:` line names it.
    pub fn name(self) -> &'static str {
        match self {
            Database::Postgresql => "postgresql",
            Database::Mariadb => "mariadb",
        }
    }

    /// The database a `# database:` line names, in any case (`postgres` too).
    pub fn named(name: &str) -> Option<Database> {
        match name.trim().to_ascii_lowercase().as_str() {
            "postgresql" | "postgres" => Some(Database::Postgresql),
            "mariadb" => Some(Database::Mariadb),
            _ => None,
        }
    }

    /// The service its sessions speak to.
    pub fn service(self) -> crate::Service {
        match self {
            Database::Postgresql => crate::Service::Postgres,
            Database::Mariadb => crate::Service::Mariadb,
        }
    }
}

/// The spec the editor opens with on MariaDB: the same two managers, in MariaDB's SQL.
pub const STARTER_MARIADB: &str = include_str!("starter.mariadb.spec");

/// Where `text` plays, read from its first `# database:` line alone (PostgreSQL without one, or
/// with one naming no database racelab plays on): what /write's picker shows while the reader
/// types, even before the rest parses.
pub fn database_of(text: &str) -> Database {
    text.lines()
        .find(|line| names_a_database(line))
        .and_then(|line| line.split_once("database:"))
        .and_then(|(_, name)| Database::named(name))
        .unwrap_or_default()
}

/// Whether `line` is a `# database:` line.
fn names_a_database(line: &str) -> bool {
    line.trim_start()
        .strip_prefix('#')
        .is_some_and(|rest| rest.trim_start().starts_with("database:"))
}

/// `text` made to play on `database`, as /write's picker does it: the starter swapped for the
/// other database's starter (its SQL differs too); otherwise every `# database:` line taken
/// out, and for MariaDB one put after the opening comment lines' first (the title stays the
/// title).
pub fn with_database(text: &str, database: Database) -> String {
    match (text, database) {
        (super::STARTER, Database::Mariadb) => return STARTER_MARIADB.to_owned(),
        (STARTER_MARIADB, Database::Postgresql) => return super::STARTER.to_owned(),
        _ => {}
    }
    let mut lines: Vec<&str> = text.split_inclusive('\n').filter(|l| !names_a_database(l)).collect();
    if database == Database::Mariadb {
        let after_title = usize::from(lines.first().is_some_and(|l| l.trim_start().starts_with('#')));
        lines.insert(after_title, "# database: mariadb\n");
    }
    lines.concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picker_swaps_the_starters_and_otherwise_writes_the_line() {
        assert_eq!(with_database(super::super::STARTER, Database::Mariadb), STARTER_MARIADB);
        assert_eq!(
            with_database(STARTER_MARIADB, Database::Postgresql),
            super::super::STARTER
        );
        let mine = "# my race\nsession s step a { SELECT 1; }\n";
        let on_mariadb = with_database(mine, Database::Mariadb);
        assert_eq!(
            on_mariadb,
            "# my race\n# database: mariadb\nsession s step a { SELECT 1; }\n"
        );
        assert_eq!(with_database(&on_mariadb, Database::Mariadb), on_mariadb, "once");
        assert_eq!(with_database(&on_mariadb, Database::Postgresql), mine);
        assert_eq!(
            with_database("session s step a { }", Database::Mariadb),
            "# database: mariadb\nsession s step a { }"
        );
        assert_eq!(database_of(&on_mariadb), Database::Mariadb);
        assert_eq!(database_of(mine), Database::Postgresql);
        assert_eq!(database_of("# database: oracle\n"), Database::Postgresql);
        let parsed = super::super::parse(&on_mariadb).map(|s| s.database);
        assert_eq!(parsed.ok(), Some(Database::Mariadb));
        assert_eq!(super::super::title(&on_mariadb).as_deref(), Some("my race"));
    }

    #[test]
    fn the_mariadb_starter_reads_as_a_spec_on_mariadb() {
        let spec = super::super::parse(STARTER_MARIADB).expect("the starter parses");
        assert_eq!(spec.database, Database::Mariadb);
        assert_eq!(spec.permutations.len(), 2);
        assert!(spec.question.is_some());
    }
}
