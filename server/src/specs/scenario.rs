//! A reader's spec as a scenario the engine plays like any other: queued, admitted within its
//! budget, stepped, cancelled, stored and replayed. Its id is `spec/<id>` (the saved spec's),
//! its variants are its permutations (`p1`, `p2`, …) and `every`, which plays them all and sums
//! each up for the matrix.

use super::{Choice, Limits, SpecError, permutations, play_on, play_on_mariadb, read};
use crate::engine::{Budget, Run, RunError, Scenario};
use crate::sandbox::Spec as Sandbox;
use futures_util::future::BoxFuture;
use shared::event::ActorInfo;
use shared::spec::Spec;
use shared::{ScenarioInfo, VariantInfo};

pub use shared::spec::matrix::EVERY;

/// A spec's sandbox is its own database and role (`confine`), made as it plays: the engine's
/// has nothing in it.
static NOTHING: Sandbox = Sandbox {
    schemas: &[],
    redis: false,
    topics: &[],
};

pub struct SpecScenario {
    id: String,
    text: String,
    spec: Spec,
    limits: Limits,
    /// Each permutation's steps, by name.
    orders: Vec<Vec<String>>,
}

impl SpecScenario {
    /// Reads saved spec `id` within a page's limits.
    pub fn new(id: &str, text: &str) -> Result<SpecScenario, SpecError> {
        let limits = Limits::default();
        let spec = read(text, &limits)?;
        let orders = permutations(&spec, &limits)
            .into_iter()
            .map(|p| p.into_iter().map(|s| s.name).collect())
            .collect();
        Ok(SpecScenario {
            id: format!("spec/{id}"),
            text: text.to_owned(),
            spec,
            limits,
            orders,
        })
    }

    fn choice(&self, variant: &str) -> Option<Choice> {
        if variant == EVERY {
            return Some(Choice::Matrix);
        }
        let index: usize = variant.strip_prefix('p')?.parse().ok()?;
        (1..=self.orders.len()).contains(&index).then(|| Choice::One(index - 1))
    }
}

impl Scenario for SpecScenario {
    fn info(&self) -> ScenarioInfo {
        let mut variants: Vec<VariantInfo> = self
            .orders
            .iter()
            .enumerate()
            .map(|(i, order)| VariantInfo {
                id: format!("p{}", i + 1),
                label: format!("Permutation {}", i + 1),
                description: order.join(" "),
            })
            .collect();
        variants.push(VariantInfo {
            id: EVERY.to_owned(),
            label: "Every permutation".to_owned(),
            description: format!(
                "all {} permutations, one row each, grouped by outcome",
                self.orders.len()
            ),
        });
        let sessions: Vec<&str> = self.spec.sessions.iter().map(|s| s.name.as_str()).collect();
        ScenarioInfo {
            id: self.id.clone(),
            title: shared::spec::title(&self.text).unwrap_or_else(|| "A race of your own".to_owned()),
            hook: format!(
                "{} sessions ({}), {} permutation{}",
                sessions.len(),
                sessions.join(", "),
                self.orders.len(),
                if self.orders.len() == 1 { "" } else { "s" }
            ),
            about: match self.spec.database {
                shared::spec::Database::Mariadb => {
                    "A spec in PostgreSQL's isolation-tester format, in MariaDB's SQL, played on a real MariaDB in a database of its own."
                }
                shared::spec::Database::Postgresql => {
                    "A spec in PostgreSQL's isolation-tester format, played on a real PostgreSQL in a sandbox of its own."
                }
            }
            .to_owned(),
            steppable: true,
            workload: false,
            variants,
            predict: self.spec.question.as_ref().map(|q| shared::Prediction {
                question: q.text.clone(),
                choices: q
                    .choices
                    .iter()
                    .map(|(id, label)| shared::Choice {
                        id: id.clone(),
                        label: label.clone(),
                        only_on: None,
                    })
                    .collect(),
            }),
        }
    }

    /// The author's answer for permutation `pK`, and why.
    fn reveal(&self, variant: &str) -> Option<(String, String)> {
        let Some(Choice::One(index)) = self.choice(variant) else {
            return None;
        };
        let answer = self
            .spec
            .question
            .as_ref()?
            .answers
            .iter()
            .find(|a| a.permutation == index + 1)?;
        Some((answer.choice.clone(), answer.why.clone()))
    }

    fn sandbox(&self) -> &Sandbox {
        &NOTHING
    }

    fn actors(&self, _variant: &str) -> Vec<ActorInfo> {
        // A lane per session; the tester's own connection draws none (its output is the
        // transcript, its snapshots the ledger).
        self.spec
            .sessions
            .iter()
            .map(|s| ActorInfo {
                name: s.name.clone(),
                detail: s.setup.as_deref().map(|sql| sql.trim().to_owned()).unwrap_or_default(),
            })
            .collect()
    }

    /// Its sessions and the tester's connection, on the spec's database.
    fn budget(&self, _variant: &str) -> Budget {
        let sessions = u32::try_from(self.spec.sessions.len() + 1).unwrap_or(u32::MAX);
        match self.spec.database {
            shared::spec::Database::Mariadb => Budget::postgres(0).and_mariadb(sessions),
            shared::spec::Database::Postgresql => Budget::postgres(sessions),
        }
    }

    fn play<'a>(&'a self, run: &'a Run, variant: &'a str) -> BoxFuture<'a, Result<(), RunError>> {
        Box::pin(async move {
            let choice = self
                .choice(variant)
                .ok_or_else(|| RunError::Other(format!("this spec has no permutation {variant:?}")))?;
            let lane = |name: &str, quiet: bool| run.lane(name, quiet);
            let played = match self.spec.database {
                shared::spec::Database::Mariadb => {
                    // A cancelled run is dropped mid-play, and its sandbox removed as it goes.
                    let running = std::future::pending();
                    play_on_mariadb(run.mariadb_url(), &self.spec, &self.limits, choice, &lane, running).await
                }
                shared::spec::Database::Postgresql => {
                    play_on(run.database_url(), run.id(), &self.spec, &self.limits, choice, &lane).await
                }
            };
            played.map(|_| ()).map_err(|error| RunError::Other(error.to_string()))
        })
    }
}
