//! Putting a finished run's sandbox back as it was made, so the next run of its lab can play in
//! it instead of in a new one.
//!
//! Why: making a sandbox is DDL (a schema, its tables, their indexes and types: about thirteen
//! relations for the isolation lab) and dropping it is DDL again; every catalog change is also a
//! message every other session must read. In a crowd that was most of PostgreSQL's work
//! (docs/performance.md). Putting the rows back is a few DELETEs and INSERTs: no catalog row
//! changes, and the sessions that played in the sandbox before keep its tables in their caches.
//!
//! How, in one transaction per sandbox: every table's rows are deleted (a table before the tables
//! it references), every sequence starts again where it was made to start (`setval`, so the next
//! run's ids are the first run's), and the lab's seed rows (the `INSERT`s of its schema SQL) are
//! written again. The registry row's creation time is renewed in the same transaction: to the
//! sweep a reused sandbox is as young as a new one.
//!
//! When not: a run may have changed what the sandbox *is*, not only what it holds (a table made
//! or altered, a trigger, a grant). Deleting rows would not undo that, so before anything is
//! deleted the schema's shape (its relations, their columns, constraints, triggers, defaults,
//! indexes and grants) is compared with the shape it had when it was made; if they differ, the
//! reset is refused and the sandbox is destroyed as before.

use super::Sandbox;
use super::postgres::{CLEANUP_LOCK_TIMEOUT, quote_ident, script};
use sqlx::{PgPool, Row};
use std::collections::BTreeMap;

/// The relations of one schema, as the catalog has them now: each relation's shape (one text
/// per relation, sorted by name: its columns by name, type and nullability, so a column added,
/// dropped or retyped shows), and for the reset the tables with the tables they reference,
/// and the sequences with their start.
const RELATIONS: &str = "
SELECT c.relname::text,
       c.relkind::text,
       coalesce((SELECT array_agg(DISTINCT p.relname::text)
                   FROM pg_constraint f JOIN pg_class p ON p.oid = f.confrelid
                  WHERE f.conrelid = c.oid AND f.contype = 'f'
                    AND p.relnamespace = c.relnamespace AND p.oid <> c.oid), '{}'),
       (SELECT s.seqstart FROM pg_sequence s WHERE s.seqrelid = c.oid),
       concat_ws(':', c.relname, c.relkind, c.relchecks, c.relacl::text, c.relrowsecurity,
                 (SELECT string_agg(concat_ws(' ', a.attname, a.atttypid, a.atttypmod, a.attnotnull), ',' ORDER BY a.attnum)
                    FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
                 (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = c.oid),
                 (SELECT count(*) FROM pg_constraint k WHERE k.conrelid = c.oid),
                 (SELECT count(*) FROM pg_attrdef d WHERE d.adrelid = c.oid),
                 (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid),
                 (SELECT count(*) FROM pg_policy o WHERE o.polrelid = c.oid))
  FROM pg_class c
 WHERE c.relnamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = $1)
 ORDER BY c.relname";

/// One schema as the catalog has it: what it is, and what a reset must empty and restart.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Relations {
    /// Every relation's shape, sorted by name: compared, never interpreted.
    pub shape: String,
    /// Each table with the tables of its schema it references.
    tables: BTreeMap<String, Vec<String>>,
    /// Each sequence with the value it was made to start at.
    sequences: Vec<(String, i64)>,
}

/// Reads `schema`'s relations (on a session inside the caller's transaction, or the pool).
pub(super) async fn relations<'e>(db: impl sqlx::PgExecutor<'e>, schema: &str) -> Result<Relations, sqlx::Error> {
    let rows = sqlx::query(RELATIONS).bind(schema).fetch_all(db).await?;
    let mut relations = Relations::default();
    let mut shapes = Vec::with_capacity(rows.len());
    for row in rows {
        let name: String = row.try_get(0)?;
        let kind: String = row.try_get(1)?;
        let parents: Vec<String> = row.try_get(2)?;
        let start: Option<i64> = row.try_get(3)?;
        shapes.push(row.try_get::<String, _>(4)?);
        match (kind.as_str(), start) {
            ("r" | "p", _) => {
                relations.tables.insert(name, parents);
            }
            ("S", Some(start)) => relations.sequences.push((name, start)),
            _ => {}
        }
    }
    relations.shape = shapes.join(";");
    Ok(relations)
}

/// Tables in an order that deletes every row without breaking a foreign key: a table comes
/// before every table it references. `None` if references go round in a circle (no such order;
/// such a sandbox is destroyed, never reset).
fn deletion_order(tables: &BTreeMap<String, Vec<String>>) -> Option<Vec<&str>> {
    let mut order: Vec<&str> = Vec::with_capacity(tables.len());
    while order.len() < tables.len() {
        // A table whose every referencing table is already emptied may go now.
        let next = tables.keys().find(|name| {
            !order.contains(&name.as_str())
                && tables
                    .iter()
                    .filter(|(other, _)| !order.contains(&other.as_str()) && other != name)
                    .all(|(_, parents)| !parents.contains(name))
        })?;
        order.push(next);
    }
    Some(order)
}

/// The seed rows of a lab's schema SQL: its `INSERT` statements, in order. The SQL is racelab's
/// own (a lab's constant); comments are skipped and a `;` or `--` inside a quoted string is text.
pub fn seed_statements(sql: &str) -> Vec<String> {
    statements(sql)
        .into_iter()
        .filter(|statement| {
            statement
                .split_whitespace()
                .next()
                .is_some_and(|word| word.eq_ignore_ascii_case("insert"))
        })
        .collect()
}

/// `sql`'s statements, comments left out, each trimmed.
fn statements(sql: &str) -> Vec<String> {
    let mut statements = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                current.push(c);
            }
            '-' if !quoted && chars.peek() == Some(&'-') => {
                // A comment, to the end of its line.
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        current.push('\n');
                        break;
                    }
                }
            }
            ';' if !quoted => statements.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    statements.push(current);
    statements
        .into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The SQL that puts `schema` back as made: rows deleted, sequences restarted, the seed written.
fn reset_sql(schema: &str, relations: &Relations, seed: &[String]) -> Option<String> {
    let quoted = quote_ident(schema);
    let mut sql = format!("SET LOCAL search_path TO {quoted};\n");
    for table in deletion_order(&relations.tables)? {
        sql.push_str(&format!("DELETE FROM {};\n", quote_ident(table)));
    }
    for (sequence, start) in &relations.sequences {
        let name = format!("{quoted}.{}", quote_ident(sequence)).replace('\'', "''");
        sql.push_str(&format!("SELECT setval('{name}', {start}, false);\n"));
    }
    for statement in seed {
        sql.push_str(statement);
        sql.push_str(";\n");
    }
    Some(sql)
}

/// Puts every schema of `sandbox` back as made (`seeds`: each schema's seed statements, in the
/// sandbox's order) and renews its registry row, in one transaction. `Ok(false)`, with nothing
/// changed, if a schema is not the shape it was made (or has tables that reference each other
/// in a circle): the caller destroys it instead.
pub(super) async fn reset_schemas(
    pool: &PgPool,
    sandbox: &Sandbox,
    seeds: &[Vec<String>],
) -> Result<bool, sqlx::Error> {
    if sandbox.shapes.len() != sandbox.schemas.len() || seeds.len() != sandbox.schemas.len() {
        return Ok(false);
    }
    let mut tx = pool.begin().await?;
    // A lock someone outside the run holds waits this long at most; then the sandbox is
    // destroyed instead.
    let wait = format!("SET LOCAL lock_timeout = '{}ms'", CLEANUP_LOCK_TIMEOUT.as_millis());
    script(&mut tx, &wait).await?;
    // First: each schema's reset moves the search path into it.
    super::sweep::renew(&mut *tx, &sandbox.run_id).await?;
    for (((_, schema), made), seed) in sandbox.schemas.iter().zip(&sandbox.shapes).zip(seeds) {
        let now = relations(&mut *tx, schema).await?;
        if &now.shape != made {
            tracing::info!(run = %sandbox.run_id, %schema, "a run changed the schema itself: it is destroyed, not reset");
            return Ok(false);
        }
        let Some(sql) = reset_sql(schema, &now, seed) else {
            return Ok(false);
        };
        script(&mut tx, &sql).await?;
    }
    tx.commit().await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables(pairs: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        pairs
            .iter()
            .map(|(name, parents)| ((*name).to_owned(), parents.iter().map(|p| (*p).to_owned()).collect()))
            .collect()
    }

    #[test]
    fn a_table_is_emptied_before_the_tables_it_references() {
        let isolation = tables(&[("expenses", &["teams"]), ("teams", &[])]);
        assert_eq!(deletion_order(&isolation), Some(vec!["expenses", "teams"]));
        let chain = tables(&[("a", &[]), ("b", &["a"]), ("c", &["b", "a"])]);
        assert_eq!(deletion_order(&chain), Some(vec!["c", "b", "a"]));
        let apart = tables(&[("x", &[]), ("y", &[])]);
        assert_eq!(deletion_order(&apart), Some(vec!["x", "y"]));
    }

    #[test]
    fn a_table_that_references_itself_is_fine_and_a_circle_is_refused() {
        let tree = tables(&[("nodes", &["nodes"])]);
        assert_eq!(deletion_order(&tree), Some(vec!["nodes"]));
        let circle = tables(&[("a", &["b"]), ("b", &["a"])]);
        assert_eq!(deletion_order(&circle), None);
    }

    #[test]
    fn the_seed_is_the_insert_statements_of_the_sql() {
        // Shaped like a lab's schema file (the labs' own are checked in `labs`).
        let sql = "-- A team; its budget.\nCREATE TABLE teams (\n    id text PRIMARY KEY, -- the key\n    budget integer\n);\n\n\
                   -- Seeded; so every run starts here.\nINSERT INTO teams (id, budget) VALUES ('design', 5000);\n";
        assert_eq!(
            seed_statements(sql),
            ["INSERT INTO teams (id, budget) VALUES ('design', 5000)"]
        );
        // Tables only: nothing to write again.
        assert!(seed_statements("CREATE TABLE t (id int);\n-- INSERT INTO t VALUES (1);\n").is_empty());
        assert_eq!(
            seed_statements(
                "create table t (id int); insert into t values (1); -- one\nInsert into t values ('a;--b')"
            ),
            ["insert into t values (1)", "Insert into t values ('a;--b')"]
        );
    }

    #[test]
    fn a_reset_deletes_restarts_and_seeds_in_the_schema() {
        let relations = Relations {
            shape: String::new(),
            tables: tables(&[("expenses", &["teams"]), ("teams", &[])]),
            sequences: vec![("expenses_id_seq".to_owned(), 1)],
        };
        let seed = vec!["INSERT INTO teams VALUES ('design')".to_owned()];
        assert_eq!(
            reset_sql("run_0123456789ab", &relations, &seed).as_deref(),
            Some(
                "SET LOCAL search_path TO \"run_0123456789ab\";\n\
                 DELETE FROM \"expenses\";\n\
                 DELETE FROM \"teams\";\n\
                 SELECT setval('\"run_0123456789ab\".\"expenses_id_seq\"', 1, false);\n\
                 INSERT INTO teams VALUES ('design');\n"
            )
        );
        let circle = Relations {
            tables: tables(&[("a", &["b"]), ("b", &["a"])]),
            ..Relations::default()
        };
        assert_eq!(reset_sql("run_x", &circle, &[]), None);
    }
}
