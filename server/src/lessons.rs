//! A trainer's lesson checked against what this racelab plays and keeps: its file read
//! ([`shared::lesson`], every mistake at its line), then each round that names a scenario,
//! variant, PostgreSQL version or saved spec this racelab does not have refused by name.

use crate::engine::Engine;
use crate::store::StoredRun;
use shared::lesson::{Lesson, LessonError, Plays, Race};

/// The lesson `text`, or everything wrong with it: a mistake in the file stops the reading at
/// its line; every round that names what is not here is listed.
pub async fn check(engine: &Engine, text: &str) -> Result<Lesson, Vec<LessonError>> {
    let lesson = shared::lesson::parse(text).map_err(|e| vec![e])?;
    let mut refused = against_catalog(&lesson, &engine.versions());
    let limits = crate::specs::Limits::default();
    for round in &lesson.rounds {
        let Race::Spec { id, permutation } = &round.race else {
            continue;
        };
        let at = |message: String| LessonError {
            line: round.line,
            message: format!("\"{}\": {message}", round.title),
        };
        let saved = match engine.store.load_spec(id).await {
            Ok(saved) => saved,
            Err(error) => {
                refused.push(at(format!("racelab could not look spec {id} up: {error}")));
                continue;
            }
        };
        let Some(saved) = saved else {
            refused.push(at(format!("racelab keeps no spec {id}")));
            continue;
        };
        let count =
            crate::specs::read(&saved, &limits).map_or(0, |spec| crate::specs::permutations(&spec, &limits).len());
        if let Some(p) = permutation.filter(|&p| p > count) {
            refused.push(at(format!("spec {id} has {count} permutations, not {p}")));
        }
    }
    for round in &lesson.rounds {
        let Race::Recording { src } = &round.race else { continue };
        let Some(run) = shared::lesson::kept_run(src) else {
            continue;
        };
        if let Err(why) = replayable(engine, run).await {
            refused.push(LessonError {
                line: round.line,
                message: format!("\"{}\": {why}", round.title),
            });
        }
    }
    refused.sort_by_key(|e| e.line);
    match refused.is_empty() {
        true => Ok(lesson),
        false => Err(refused),
    }
}

/// Why a recording round's run cannot be replayed: the lesson's check and the room say the same.
#[derive(Debug, thiserror::Error)]
pub enum Unreplayable {
    #[error("racelab keeps no run {0} to replay")]
    NotKept(String),
    #[error("racelab could not read run {id} from its store: {error}")]
    Store { id: String, error: sqlx::Error },
}

/// The run this racelab keeps under `id`, for a recording round to replay.
pub async fn replayable(engine: &Engine, id: &str) -> Result<StoredRun, Unreplayable> {
    match engine.store.load(id).await {
        Ok(Some(run)) => Ok(run),
        Ok(None) => Err(Unreplayable::NotKept(id.to_owned())),
        Err(error) => Err(Unreplayable::Store {
            id: id.to_owned(),
            error,
        }),
    }
}

/// The rounds of `lesson` that name a scenario, variant or PostgreSQL version (of `versions`)
/// racelab does not play.
pub fn against_catalog(lesson: &Lesson, versions: &[u32]) -> Vec<LessonError> {
    let scenarios: Vec<shared::ScenarioInfo> = crate::labs::catalog()
        .into_iter()
        .flat_map(|lab| lab.scenarios)
        .collect();
    let plays = Plays {
        scenarios: &scenarios,
        postgres: versions,
    };
    shared::lesson::refusals(lesson, &plays)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sample in the repository plays here, round by round: every scenario, variant and
    /// question it names is in the catalog.
    #[test]
    fn the_sample_lesson_names_only_what_racelab_plays() {
        let text = include_str!("../../lessons/isolation-in-an-hour.lesson.md");
        let lesson = shared::lesson::parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(against_catalog(&lesson, &[15, 18]), []);
        let mut wrong = lesson;
        wrong.rounds[0].race = Race::Scenario {
            id: "isolation/write-skew".into(),
            variant: "mariadb-chaos".into(),
            postgres: Some(12),
        };
        let refused: Vec<String> = against_catalog(&wrong, &[15, 18])
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(refused[0].starts_with(
            "line 8: \"Two managers overspend a budget\": isolation/write-skew has no variant mariadb-chaos"
        ));
        assert!(refused[1].ends_with("racelab plays on PostgreSQL 15 and 18 here, not 12"));
    }
}
