//! The labs: one folder per tutorial, one file per scenario.
//!
//! Every scenario module has the same small shape: a doc comment that opens with the rule and the
//! expected result as numbers, a [`ScenarioDef`] naming its variants, actors, sandbox and budget,
//! and a `play` function that drives the actors in the tutorial's order. Each lab joins [`LABS`],
//! and the kinds of child-process actor it runs (`racelab actor <kind>`: the shop API that
//! crashes, the outbox's relay and notifier) join [`CHILD_KINDS`].

pub mod idempotency;
pub mod isolation;
pub mod locks;
pub mod outbox;

use crate::engine::child::{ChildKind, SQL_SCRIPT};
use crate::engine::{BoxFuture, Budget, Run, RunError, Scenario};
use crate::sandbox::Spec;
use shared::catalog::database_of;
use shared::event::ActorInfo;
use shared::{Choice, Lab, Ledger, Prediction, ScenarioInfo, Service, Table, Value, VariantInfo};

/// A variant as written in a scenario module: `(id, tab label, one-line description)`.
pub type VariantDef = (&'static str, &'static str, &'static str);

/// A scenario as data plus its `play` function; implements [`Scenario`] for the engine.
pub struct ScenarioDef {
    /// `lab/scenario`.
    pub id: &'static str,
    pub title: &'static str,
    pub hook: &'static str,
    /// Two or three sentences for the scenario page: what to watch for.
    pub about: &'static str,
    /// See [`ScenarioInfo::steppable`].
    pub steppable: bool,
    /// See [`ScenarioInfo::workload`].
    pub workload: bool,
    pub variants: &'static [VariantDef],
    /// What the run's sandbox holds (the lab's schema SQL, Redis keys, topics).
    pub sandbox: Spec,
    /// The actors of a variant, in swimlane order.
    pub actors: fn(&str) -> Vec<ActorInfo>,
    /// What a run of a variant holds; `None`: one PostgreSQL connection per actor.
    pub budget: Option<fn(&str) -> Budget>,
    pub play: for<'a> fn(&'a Run, &'a str) -> BoxFuture<'a, Result<(), RunError>>,
    /// See [`Scenario::summarize`].
    pub summarize: Option<fn(&[Ledger]) -> String>,
    /// What a reader is asked to predict before the run, and each variant's answer.
    pub predict: Option<&'static PredictDef>,
}

/// Predict, then run: a question, its choices, and for each variant the choice that happens and
/// why, in a sentence. The answers are the scenario's constants, like its expected ledger; the
/// scenario's tests check each against what the database really did.
pub struct PredictDef {
    pub question: &'static str,
    /// `(id, label)`: `("bob-40001", "Bob's COMMIT fails with 40001")`.
    pub choices: &'static [(&'static str, &'static str)],
    /// Choices offered on one SQL database only, because they name its own error
    /// ([`shared::Choice::only_on`]): `("bob-1020", Service::Mariadb)`.
    pub only_on: &'static [(&'static str, Service)],
    /// `(variant, choice, why)`.
    pub answers: &'static [(&'static str, &'static str, &'static str)],
}

impl Scenario for ScenarioDef {
    fn info(&self) -> ScenarioInfo {
        ScenarioInfo {
            id: self.id.to_owned(),
            title: self.title.to_owned(),
            hook: self.hook.to_owned(),
            about: self.about.to_owned(),
            steppable: self.steppable,
            workload: self.workload,
            variants: self
                .variants
                .iter()
                .map(|(id, label, description)| VariantInfo {
                    id: (*id).to_owned(),
                    label: (*label).to_owned(),
                    description: (*description).to_owned(),
                })
                .collect(),
            predict: self.predict.map(|predict| Prediction {
                question: predict.question.to_owned(),
                choices: predict
                    .choices
                    .iter()
                    .map(|(id, label)| Choice {
                        id: (*id).to_owned(),
                        label: (*label).to_owned(),
                        only_on: predict.only_on.iter().find(|(only, _)| only == id).map(|(_, on)| *on),
                    })
                    .collect(),
            }),
        }
    }

    fn reveal(&self, variant: &str) -> Option<(String, String)> {
        self.predict?
            .answers
            .iter()
            .find(|(v, _, _)| *v == variant)
            .map(|(_, choice, why)| ((*choice).to_owned(), (*why).to_owned()))
    }

    fn sandbox(&self) -> &Spec {
        &self.sandbox
    }

    fn sandbox_for(&self, variant: &str) -> &Spec {
        match database_of(variant) {
            Service::Mariadb => &crate::sandbox::NOTHING,
            _ => &self.sandbox,
        }
    }

    /// A scenario without a budget of its own is one PostgreSQL session per actor (the default
    /// budget counts exactly that): each can be connected ahead. Not on MariaDB, whose
    /// sessions open in the run's own sandbox there.
    fn sessions_ahead(&self, variant: &str) -> Vec<String> {
        match self.budget {
            None if database_of(variant) == Service::Postgres => {
                (self.actors)(variant).into_iter().map(|actor| actor.name).collect()
            }
            _ => Vec::new(),
        }
    }

    fn actors(&self, variant: &str) -> Vec<ActorInfo> {
        (self.actors)(variant)
    }

    fn budget(&self, variant: &str) -> Budget {
        match self.budget {
            Some(budget) => budget(variant),
            None => {
                let actors = u32::try_from((self.actors)(variant).len()).unwrap_or(u32::MAX);
                match database_of(variant) {
                    // The actors and the run's own session in its sandbox there.
                    Service::Mariadb => Budget::postgres(0).and_mariadb(actors.saturating_add(1)),
                    _ => Budget::postgres(actors),
                }
            }
        }
    }

    fn play<'a>(&'a self, run: &'a Run, variant: &'a str) -> BoxFuture<'a, Result<(), RunError>> {
        (self.play)(run, variant)
    }

    fn summarize(&self, runs: &[Ledger]) -> Option<String> {
        self.summarize.map(|summarize| summarize(runs))
    }
}

/// A lab: its catalog header and scenarios.
pub struct LabDef {
    pub id: &'static str,
    pub title: &'static str,
    pub services: &'static [Service],
    pub scenarios: &'static [&'static ScenarioDef],
}

/// Every lab racelab can run.
pub static LABS: &[&LabDef] = &[&isolation::LAB, &outbox::LAB, &idempotency::LAB, &locks::LAB];

/// Every kind of child-process actor (`racelab actor <kind>`): the engine's own and the labs'.
pub static CHILD_KINDS: &[&ChildKind] = &[
    &SQL_SCRIPT,
    &idempotency::shop_api::SHOP_API,
    &outbox::relay::RELAY,
    &outbox::notifier::NOTIFIER,
    &outbox::dual_write::NAIVE,
];

/// The scenario with id `lab/scenario`, if there is one.
pub fn find(id: &str) -> Option<&'static ScenarioDef> {
    LABS.iter()
        .flat_map(|lab| lab.scenarios.iter())
        .find(|s| s.id == id)
        .copied()
}

/// The catalog as plain data.
pub fn catalog() -> Vec<Lab> {
    LABS.iter()
        .map(|lab| Lab {
            id: lab.id.to_owned(),
            title: lab.title.to_owned(),
            services: lab.services.to_vec(),
            scenarios: lab.scenarios.iter().map(|s| s.info()).collect(),
        })
        .collect()
}

/// 26 random base32 characters (A–Z, 2–7), 130 bits: Go's `rand.Text()`, which the tutorials use
/// for lock tokens and idempotency keys.
pub fn rand_text() -> String {
    use rand::Rng;
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut rng = rand::rng();
    (0..26)
        .map(|_| char::from(ALPHABET[rng.random_range(0..ALPHABET.len())]))
        .collect()
}

/// The tutorial's own figures for a scenario, as a reference ledger: `(figure, what its runs
/// showed)`. Shown beside ours, never judged against.
pub fn tutorial_figures(rows: &[(&str, &str)]) -> Ledger {
    Ledger {
        tables: vec![Table {
            name: "The tutorial's runs".into(),
            columns: vec!["figure".into(), "tutorial".into()],
            key_columns: 1,
            rows: rows
                .iter()
                .map(|(figure, seen)| vec![Value::from(*figure), Value::from(*seen)])
                .collect(),
        }],
    }
}

/// Actors named `names`, all with the same session detail.
pub fn actors_at(names: &[&str], detail: &str) -> Vec<ActorInfo> {
    names
        .iter()
        .map(|n| ActorInfo {
            name: (*n).to_owned(),
            detail: detail.to_owned(),
        })
        .collect()
}

/// "the locks and idempotency labs need it", from the catalog.
pub fn needed_by(service: shared::Service) -> String {
    if service == shared::Service::Mariadb {
        // No lab needs it whole: its variants named `mariadb-…` do, and readers' specs there.
        let labs: Vec<&str> = LABS
            .iter()
            .filter(|lab| {
                lab.scenarios.iter().any(|s| {
                    s.variants
                        .iter()
                        .any(|(v, _, _)| database_of(v) == shared::Service::Mariadb)
                })
            })
            .map(|lab| lab.id)
            .collect();
        return format!(
            "the {} lab's mariadb-… variants and specs saying `# database: mariadb` wait for it",
            labs.join(", ")
        );
    }
    let labs: Vec<String> = catalog()
        .into_iter()
        .filter(|lab| lab.services.contains(&service))
        .map(|lab| lab.id)
        .collect();
    match labs.as_slice() {
        [] => "no lab needs it".into(),
        [one] => format!("the {one} lab needs it"),
        [first @ .., last] => format!("the {} and {last} labs need it", first.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a reset writes back into a finished run's sandbox (`sandbox::reset`): each lab's
    /// seed rows, read from its schema SQL; tables only, nothing.
    #[test]
    fn a_reset_writes_back_each_labs_seed_rows() {
        use crate::sandbox::seed_statements;
        assert_eq!(
            seed_statements(isolation::SCHEMA),
            ["INSERT INTO teams (id, name, budget) VALUES ('design', 'Design', 5000)"]
        );
        assert_eq!(
            seed_statements(locks::SCHEMA),
            ["INSERT INTO wallets (id, balance) VALUES (42, 100)"]
        );
        for (_, sql) in idempotency::SANDBOX.schemas.iter().chain(outbox::SANDBOX.schemas) {
            assert!(seed_statements(sql).is_empty(), "{sql}");
        }
    }

    #[test]
    fn the_labs_needing_a_service_come_from_the_catalog() {
        assert_eq!(needed_by(shared::Service::Kafka), "the outbox lab needs it");
        assert!(
            needed_by(shared::Service::Redis).starts_with("the "),
            "{}",
            needed_by(shared::Service::Redis)
        );
    }

    #[test]
    fn scenario_ids_are_unique_and_belong_to_their_lab() {
        let mut ids: Vec<&str> = LABS.iter().flat_map(|l| l.scenarios.iter().map(|s| s.id)).collect();
        for lab in LABS {
            for s in lab.scenarios {
                assert!(
                    s.id.starts_with(&format!("{}/", lab.id)),
                    "{} is not in {}",
                    s.id,
                    lab.id
                );
                assert!(!s.variants.is_empty(), "{} has no variants", s.id);
            }
        }
        let count = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), count, "duplicate scenario ids");
    }

    /// The isolation lab plays whole on MariaDB: each of its PostgreSQL variants has one of the
    /// same name there (`mariadb-…`), so the database picker keeps the reader's choice.
    #[test]
    fn every_isolation_variant_has_its_mariadb_counterpart() {
        let isolation = LABS.iter().find(|l| l.id == "isolation").expect("the isolation lab");
        for scenario in isolation.scenarios {
            let ids: Vec<&str> = scenario.variants.iter().map(|(id, _, _)| *id).collect();
            for id in ids.iter().filter(|id| !id.starts_with(shared::catalog::MARIADB_PREFIX)) {
                let there = format!("{}{id}", shared::catalog::MARIADB_PREFIX);
                assert!(ids.contains(&there.as_str()), "{}: no {there}", scenario.id);
            }
        }
    }

    /// A question is only fair if every variant has one answer among the choices its reader is
    /// offered (on its own database), and the choices can be told apart.
    #[test]
    fn every_prediction_answers_each_variant_with_one_of_its_choices() {
        let asking: Vec<&ScenarioDef> = LABS
            .iter()
            .flat_map(|l| l.scenarios.iter().copied())
            .filter(|s| s.predict.is_some())
            .collect();
        assert!(!asking.is_empty());
        for s in asking {
            let Some(predict) = s.predict else { continue };
            let ids: Vec<&str> = predict.choices.iter().map(|(id, _)| *id).collect();
            assert!((3..=5).contains(&ids.len()), "{}: {} choices", s.id, ids.len());
            let mut unique = ids.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), ids.len(), "{}: choice ids repeat", s.id);
            assert!(predict.question.ends_with('?'), "{}: {}", s.id, predict.question);
            for (only, _) in predict.only_on {
                assert!(
                    ids.contains(only),
                    "{}: {only} is offered on one database but is no choice",
                    s.id
                );
            }
            let info = s.info();
            for (variant, _, _) in s.variants {
                let answers: Vec<_> = predict.answers.iter().filter(|(v, _, _)| v == variant).collect();
                assert_eq!(answers.len(), 1, "{}: {variant} needs one answer", s.id);
                let (_, choice, why) = answers[0];
                let offered: Vec<String> = info
                    .question_at(variant)
                    .map(|q| q.choices.into_iter().map(|c| c.id).collect())
                    .unwrap_or_default();
                assert!(
                    (3..=5).contains(&offered.len()),
                    "{}: {variant} is offered {} choices",
                    s.id,
                    offered.len()
                );
                assert!(
                    offered.iter().any(|o| o == choice),
                    "{}: {variant}'s answer {choice} is not among its choices {offered:?}",
                    s.id
                );
                assert!(
                    why.len() > 40 && why.ends_with('.'),
                    "{}: {variant}: say why in a sentence",
                    s.id
                );
            }
            assert_eq!(
                predict.answers.len(),
                s.variants.len(),
                "{}: answers for unknown variants",
                s.id
            );
        }
    }

    #[test]
    fn find_knows_every_scenario_and_nothing_else() {
        assert!(find("isolation/write-skew").is_some());
        assert!(find("isolation/nope").is_none());
    }
}
