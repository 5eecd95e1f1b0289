//! racelab's own tables (`migrations/`), compiled into the binary.
//!
//! sqlx's `migrate!` macro would list them for us, but compiling it builds a second copy of sqlx
//! for the macro: about 25 CPU-s of a first build, a minute of `cargo xtask play` on a fresh
//! machine shared with three other compiles. So they are listed here, and read as the macro
//! reads them (`sqlx_core::migrate::source::resolve_blocking`): the version and description
//! from the file's name, the text as it is, its SHA-384 as the checksum. A database migrated by
//! a build that used the macro sees the same migrations, and a test checks that this list is
//! the folder's.

use sqlx::migrate::{Migration, MigrationType, Migrator};
use std::borrow::Cow;

/// A migration file: its name and text.
macro_rules! migration {
    ($file:literal) => {
        ($file, include_str!(concat!("../../../migrations/", $file)))
    };
}

/// Every file in `migrations/`, oldest first.
const FILES: &[(&str, &str)] = &[
    migration!("20261202000000_runs.sql"),
    migration!("20261203000000_sandboxes.sql"),
    migration!("20261204000000_connection_leases.sql"),
    migration!("20261205000000_take_connection_lease.sql"),
    migration!("20261206000000_specs.sql"),
    migration!("20261207000000_lessons.sql"),
    migration!("20261208000000_lesson_answers.sql"),
];

/// The migrations, as `sqlx::migrate!("../migrations")` would make them, but for one thing: a
/// database a newer racelab has migrated further (a rolling deploy, when replicas of two
/// versions share it for a while; a developer's newer build beside CI's) does not stop this one
/// from starting. Every migration only adds (`CREATE TABLE IF NOT EXISTS`, a new function), so
/// what this racelab knows is still there as it knows it.
pub fn migrator() -> Migrator {
    Migrator {
        migrations: Cow::Owned(FILES.iter().filter_map(|(file, sql)| migration(file, sql)).collect()),
        ignore_missing: true,
        no_tx: false,
        locking: true,
    }
}

/// `20261202000000_runs.sql`'s migration: version 20261202000000, described as "runs" (a name's
/// underscores are spaces), in a transaction unless its text starts `-- no-transaction`. None
/// for a name not of that form (sqlx skips those too).
fn migration(file: &str, sql: &'static str) -> Option<Migration> {
    let (version, rest) = file.split_once('_')?;
    let description = rest.strip_suffix(".sql")?;
    Some(Migration::new(
        version.parse().ok()?,
        Cow::Owned(description.replace('_', " ")),
        MigrationType::Simple,
        Cow::Borrowed(sql),
        sql.starts_with("-- no-transaction"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_in_the_folder_is_listed_in_order() {
        let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations");
        let mut on_disk: Vec<String> = std::fs::read_dir(folder)
            .expect("the migrations folder")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".sql"))
            .collect();
        on_disk.sort();
        let listed: Vec<&str> = FILES.iter().map(|(file, _)| *file).collect();
        assert_eq!(listed, on_disk);
        for (file, sql) in FILES {
            let text = std::fs::read_to_string(format!("{folder}/{file}")).expect("a migration");
            assert_eq!(*sql, text, "{file} is compiled in as it is on disk");
        }
    }

    #[test]
    fn a_migration_is_read_from_its_name_as_sqlx_reads_it() {
        let runs = migration("20261202000000_runs.sql", "CREATE TABLE t ();").expect("a migration");
        assert_eq!(runs.version, 20261202000000);
        assert_eq!(runs.description, "runs");
        assert!(!runs.no_tx);
        // SHA-384 of the text, as `sqlx migrate` and the macro compute it.
        let hex: String = runs.checksum.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "48df901aeb9eaee055cf32ff2d4d261a8838d2593b61f77c4dcad32d588042463000f47989b1b9277c0b669e79e3e077"
        );
        let take = migration(
            "20261205000000_take_connection_lease.sql",
            "-- no-transaction\nSELECT 1;",
        )
        .expect("one");
        assert_eq!(take.description, "take connection lease");
        assert!(take.no_tx);
        assert!(migration("README.md", "").is_none());
        assert!(migration("x_runs.sql", "").is_none());
        assert_eq!(migrator().migrations.len(), FILES.len());
    }
}
