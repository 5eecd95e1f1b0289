//! The run store: finished runs and their events, for permalinks and replays.

use futures_util::future::BoxFuture;
use shared::lesson::live::Answer;
pub use shared::protocol::StoredRun;
use shared::{Event, Outcome};
use sqlx::PgPool;
use sqlx::types::Json;

/// racelab's own run history, in the `runs` table (see `migrations/`).
#[derive(Clone)]
pub struct Store {
    pool: PgPool,
}

/// A row of `runs`, as stored: id, scenario, variant, outcome, events.
type RunRow = (String, String, String, Json<Outcome>, Json<Vec<Event>>);

impl Store {
    pub fn new(pool: PgPool) -> Self {
        Store { pool }
    }

    /// Keeps a finished run. Saving the same id twice keeps the first (ids are random; a repeat
    /// would be a bug, not a reason to lose a run).
    pub fn save<'a>(
        &'a self,
        id: &'a str,
        scenario: &'a str,
        variant: &'a str,
        outcome: &'a Outcome,
        events: &'a [Event],
    ) -> BoxFuture<'a, Result<(), sqlx::Error>> {
        Box::pin(async move { self.save_inner(id, scenario, variant, outcome, events).await })
    }

    async fn save_inner(
        &self,
        id: &str,
        scenario: &str,
        variant: &str,
        outcome: &Outcome,
        events: &[Event],
    ) -> Result<(), sqlx::Error> {
        sqlx::query(
            "INSERT INTO public.runs (id, scenario, variant, outcome, events) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(id)
        .bind(scenario)
        .bind(variant)
        .bind(Json(outcome))
        .bind(Json(events))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The newest run of `scenario`'s `variant` that completed, if any: the picture a scenario
    /// page's link preview shows.
    pub async fn latest(&self, scenario: &str, variant: &str) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar(
            "SELECT id FROM public.runs
              WHERE scenario = $1 AND variant = $2 AND outcome->>'status' = 'completed'
              ORDER BY finished_at DESC LIMIT 1",
        )
        .bind(scenario)
        .bind(variant)
        .fetch_optional(&self.pool)
        .await
    }

    /// The scenario a finished run played, if one has that id (its events stay where they are:
    /// an embed's page only asks whether it is a reader's spec).
    pub async fn scenario_of(&self, id: &str) -> Result<Option<String>, sqlx::Error> {
        sqlx::query_scalar("SELECT scenario FROM public.runs WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
    }

    /// A finished run, if one has that id.
    pub async fn load(&self, id: &str) -> Result<Option<StoredRun>, sqlx::Error> {
        let row: Option<RunRow> =
            sqlx::query_as("SELECT id, scenario, variant, outcome, events FROM public.runs WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(id, scenario, variant, outcome, events)| StoredRun {
            id,
            scenario,
            variant,
            outcome: outcome.0,
            events: events.0,
        }))
    }

    /// When a finished run finished, in seconds since 1970 (UTC), if one has that id: a
    /// recording made from it later is stamped with the day it ran.
    pub async fn finished_at(&self, id: &str) -> Result<Option<u64>, sqlx::Error> {
        let seconds: Option<i64> =
            sqlx::query_scalar("SELECT extract(epoch FROM finished_at)::int8 FROM public.runs WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(seconds.and_then(|s| u64::try_from(s).ok()))
    }

    /// Keeps a reader's spec and returns its id: the first 16 hex digits of its text's SHA-256.
    /// The same text twice is the same spec.
    pub async fn save_spec(&self, text: &str) -> Result<String, sqlx::Error> {
        self.save_named(Named::Specs, text).await
    }

    /// A saved spec's text, if one has that id. What cannot be a spec's id ([`is_spec_id`]) has
    /// none, and the database is not asked about it.
    pub async fn load_spec(&self, id: &str) -> Result<Option<String>, sqlx::Error> {
        self.load_named(Named::Specs, id).await
    }

    /// Keeps a trainer's lesson and returns its id, named by its content as a spec is
    /// ([`spec_id`]). The same text twice is the same lesson.
    pub async fn save_lesson(&self, text: &str) -> Result<String, sqlx::Error> {
        self.save_named(Named::Lessons, text).await
    }

    /// A saved lesson's text, if one has that id (what cannot be an id has none).
    pub async fn load_lesson(&self, id: &str) -> Result<Option<String>, sqlx::Error> {
        self.load_named(Named::Lessons, id).await
    }

    async fn save_named(&self, table: Named, text: &str) -> Result<String, sqlx::Error> {
        let id = spec_id(text);
        let sql = format!(
            "INSERT INTO public.{} (id, text) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING",
            table.name()
        );
        sqlx::query(&sql).bind(&id).bind(text).execute(&self.pool).await?;
        Ok(id)
    }

    async fn load_named(&self, table: Named, id: &str) -> Result<Option<String>, sqlx::Error> {
        if !is_spec_id(id) {
            return Ok(None);
        }
        let sql = format!("SELECT text FROM public.{} WHERE id = $1", table.name());
        sqlx::query_scalar(&sql).bind(id).fetch_optional(&self.pool).await
    }
}

/// How one lesson round went across every session kept: `(round, sessions, answers, right)`.
pub type RoundFigures = (usize, i64, i64, i64);

/// A lesson's answers, kept: each session's results, and across sessions each round's figures.
impl Store {
    /// Keeps round `round`'s scored `answers` of session `session` (of lesson `lesson`), in place
    /// of any it kept for the same round before (the trainer repeated it).
    pub async fn keep_answers(
        &self,
        session: &str,
        lesson: &str,
        round: usize,
        answers: &[Answer],
    ) -> Result<(), sqlx::Error> {
        let round = i32::try_from(round).unwrap_or(i32::MAX);
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM public.lesson_answers WHERE session = $1 AND round = $2")
            .bind(session)
            .bind(round)
            .execute(&mut *tx)
            .await?;
        for answer in answers {
            sqlx::query(
                "INSERT INTO public.lesson_answers (session, lesson, round, handle, answer, is_right, millis)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(session)
            .bind(lesson)
            .bind(round)
            .bind(&answer.handle)
            .bind(&answer.choice)
            .bind(answer.right)
            .bind(i64::try_from(answer.millis).unwrap_or(i64::MAX))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await
    }

    /// Session `session`'s answers and its lesson's id; `None` for a session with none kept.
    pub async fn answers(&self, session: &str) -> Result<Option<(String, Vec<Answer>)>, sqlx::Error> {
        let rows: Vec<(String, i32, String, String, bool, i64)> = sqlx::query_as(
            "SELECT lesson, round, handle, answer, is_right, millis FROM public.lesson_answers
             WHERE session = $1 ORDER BY round, handle",
        )
        .bind(session)
        .fetch_all(&self.pool)
        .await?;
        let lesson = rows.first().map(|row| row.0.clone());
        let answers = rows
            .into_iter()
            .map(|(_, round, handle, choice, right, millis)| Answer {
                round: usize::try_from(round).unwrap_or_default(),
                handle,
                choice,
                right,
                millis: u64::try_from(millis).unwrap_or_default(),
            })
            .collect();
        Ok(lesson.map(|lesson| (lesson, answers)))
    }

    /// Each round of lesson `lesson` that anyone answered, over every session kept.
    pub async fn figures(&self, lesson: &str) -> Result<Vec<RoundFigures>, sqlx::Error> {
        let rows: Vec<(i32, i64, i64, i64)> = sqlx::query_as(
            "SELECT round, count(DISTINCT session), count(*), count(*) FILTER (WHERE is_right)
             FROM public.lesson_answers WHERE lesson = $1 GROUP BY round ORDER BY round",
        )
        .bind(lesson)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(round, sessions, answers, right)| {
                (usize::try_from(round).unwrap_or_default(), sessions, answers, right)
            })
            .collect())
    }

    /// Deletes answers older than `days` days; returns how many.
    pub async fn forget_answers(&self, days: u32) -> Result<u64, sqlx::Error> {
        let done =
            sqlx::query("DELETE FROM public.lesson_answers WHERE answered_at < now() - make_interval(days => $1)")
                .bind(i32::try_from(days).unwrap_or(i32::MAX))
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected())
    }
}

/// The tables of texts named by their content ([`spec_id`]): readers' specs, trainers' lessons.
#[derive(Clone, Copy)]
enum Named {
    Specs,
    Lessons,
}

impl Named {
    fn name(self) -> &'static str {
        match self {
            Named::Specs => "specs",
            Named::Lessons => "lessons",
        }
    }
}

/// Whether `id` could be a spec's id ([`spec_id`]'s 16 hex digits): anything else names no spec,
/// and is not worth asking the database about (a NUL byte in it would be an error there).
pub use shared::spec::is_saved_id as is_spec_id;

/// A spec's id: its content's name.
pub fn spec_id(text: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_spec_is_named_by_its_content() {
        let a = super::spec_id("session s step a { SELECT 1; }");
        assert_eq!(a.len(), 16);
        assert_eq!(a, super::spec_id("session s step a { SELECT 1; }"));
        assert_ne!(a, super::spec_id("session s step a { SELECT 2; }"));
        assert!(super::is_spec_id(&a));
    }

    #[test]
    fn only_sixteen_hex_digits_can_be_a_specs_id() {
        for id in [
            "",
            "0123456789abcde",
            "0123456789abcdef0",
            "0123456789abcdeg",
            "0123456789abcd\0f",
        ] {
            assert!(!super::is_spec_id(id), "{id:?}");
        }
        assert!(super::is_spec_id("0123456789abcdef"));
    }
}
