//! The catalog: labs, their scenarios and variants, and the services each needs.

use serde::{Deserialize, Serialize};

/// A service an actor talks to. Labs list the ones they need so the catalog can say, before a
/// reader presses Run, that a lab cannot run because its broker is down.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Service {
    #[default]
    Postgres,
    Redis,
    Kafka,
    /// An HTTP server or client that racelab itself runs inside the sandbox.
    Http,
    /// A child process racelab starts (and may kill at a crash point).
    Process,
    /// MariaDB (InnoDB), the SQL database the isolation lab also plays on.
    Mariadb,
}

impl Service {
    pub fn label(self) -> &'static str {
        match self {
            Service::Postgres => "PostgreSQL",
            Service::Redis => "Redis",
            Service::Kafka => "Kafka",
            Service::Http => "HTTP",
            Service::Process => "process",
            Service::Mariadb => "MariaDB",
        }
    }
}

/// One variant of a scenario: an isolation level, or a fix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantInfo {
    /// The CLI argument: `read-committed`, `for-update`.
    pub id: String,
    /// A short label for a tab: `READ COMMITTED`, `row lock`.
    pub label: String,
    pub description: String,
}

/// How a variant that plays on MariaDB is named: `mariadb-` then what it plays
/// (`mariadb-repeatable-read`); every other variant plays on PostgreSQL.
pub const MARIADB_PREFIX: &str = "mariadb-";

impl VariantInfo {
    /// The SQL database this variant plays on ([`MARIADB_PREFIX`]).
    pub fn database(&self) -> Service {
        database_of(&self.id)
    }
}

/// The SQL database the variant called `id` plays on ([`MARIADB_PREFIX`]).
pub fn database_of(variant: &str) -> Service {
    if variant.starts_with(MARIADB_PREFIX) {
        Service::Mariadb
    } else {
        Service::Postgres
    }
}

/// The SQL databases `variants` play on, each once, in the order they first come.
pub fn databases(variants: &[VariantInfo]) -> Vec<Service> {
    let mut seen = Vec::new();
    for variant in variants {
        if !seen.contains(&variant.database()) {
            seen.push(variant.database());
        }
    }
    seen
}

/// The variant a reader who picks `database` plays next: the one that plays the same thing
/// there (`repeatable-read` ↔ `mariadb-repeatable-read`), else that database's first; `chosen`
/// itself if it plays there already or no variant does.
pub fn counterpart<'a>(variants: &'a [VariantInfo], chosen: &'a str, database: Service) -> &'a str {
    if database_of(chosen) == database {
        return chosen;
    }
    let plain = chosen.strip_prefix(MARIADB_PREFIX).unwrap_or(chosen);
    let there = |v: &&VariantInfo| v.database() == database;
    variants
        .iter()
        .filter(there)
        .find(|v| v.id.strip_prefix(MARIADB_PREFIX).unwrap_or(&v.id) == plain)
        .or_else(|| variants.iter().find(there))
        .map_or(chosen, |v| v.id.as_str())
}

/// One scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioInfo {
    /// `lab/scenario`, e.g. `isolation/write-skew`.
    pub id: String,
    pub title: String,
    /// One line that makes a reader want to press Run.
    pub hook: String,
    /// A short explanation for the scenario page: what to watch for.
    pub about: String,
    /// Whether it can be played one step at a time. A free-running workload cannot, and neither
    /// can a choreography whose outcome depends on timing inside the database (a deadlock is
    /// broken by whichever waiter's check runs first).
    pub steppable: bool,
    /// A free-running workload (the load test): drawn as progress and a chart per strategy
    /// instead of a timeline.
    pub workload: bool,
    pub variants: Vec<VariantInfo>,
    /// The question a reader answers before the run shows what happens (predict, then run);
    /// the right answer comes only with the run, in its `reveal` event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predict: Option<Prediction>,
}

/// What a reader is asked to predict, and the choices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub question: String,
    pub choices: Vec<Choice>,
}

/// One possible answer: `bob-40001`, "Bob's COMMIT fails with 40001".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    pub id: String,
    pub label: String,
    /// The one SQL database where this answer is worth offering, when it names that database's
    /// own error (`40001` on PostgreSQL, `1213` on MariaDB): a reader of the other is not asked
    /// to rule out an error their database never gives. `None`: offered on every database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub only_on: Option<Service>,
}

impl Prediction {
    /// The question as a reader of a variant that plays on `database` is asked it: the choices
    /// offered there, in their order.
    pub fn on(&self, database: Service) -> Prediction {
        Prediction {
            question: self.question.clone(),
            choices: self
                .choices
                .iter()
                .filter(|c| c.only_on.is_none_or(|only| only == database))
                .cloned()
                .collect(),
        }
    }
}

impl ScenarioInfo {
    /// The variant called `id`, if the scenario has one.
    pub fn variant(&self, id: &str) -> Option<&VariantInfo> {
        self.variants.iter().find(|v| v.id == id)
    }

    /// The question a reader answers before a run of `variant`: the scenario's, with the choices
    /// offered on the database `variant` plays on ([`Prediction::on`]); none at a spec's "every
    /// permutation", whose permutations each come to their own answer.
    pub fn question_at(&self, variant: &str) -> Option<Prediction> {
        self.predict
            .as_ref()
            .filter(|_| variant != crate::spec::matrix::EVERY)
            .map(|p| p.on(database_of(variant)))
    }

    /// The variant a page shows first: the one its address asks for, if the scenario has it,
    /// else its first (a spec's `p2` or `every` survives a reload and a shared link).
    pub fn variant_or_first(&self, wanted: Option<&str>) -> String {
        wanted
            .filter(|v| self.variant(v).is_some())
            .or_else(|| self.variants.first().map(|v| v.id.as_str()))
            .unwrap_or_default()
            .to_owned()
    }
}

/// One lab: a tutorial's worth of scenarios.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lab {
    /// `isolation`, `outbox`, `idempotency`, `locks`.
    pub id: String,
    pub title: String,
    pub services: Vec<Service>,
    pub scenarios: Vec<ScenarioInfo>,
}

/// A lab as `/api/labs` reports it: with whether each service it needs is up right now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabStatus {
    #[serde(flatten)]
    pub lab: Lab,
    /// Services the lab needs that are down; empty means the lab can run.
    pub down: Vec<Service>,
}

/// A PostgreSQL server runs play on, with its version (`GET /api/servers`, and `/healthz`):
/// what the version picker offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PostgresServer {
    /// `127.0.0.1:5432`
    pub name: String,
    /// `PostgreSQL 15.20`
    pub version: String,
    /// `15`: what a reader picks.
    pub major: u32,
    pub up: bool,
    /// Its version when up, or why it is down.
    pub detail: String,
}

/// Where a training room opened now reaches (`GET /api/rooms`, and `/healthz`): every racelab
/// replica sharing the server's Redis, or only the process that holds it (Redis is down).
#[cfg(feature = "rooms")]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RoomsReach {
    pub across_replicas: bool,
    /// Why, in the trainer's words.
    pub detail: String,
}

/// One scenario as `/api/scenarios/{lab}/{scenario}` reports it: what a scenario page or an embed
/// needs, without the whole catalog.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioStatus {
    pub scenario: ScenarioInfo,
    /// Services its lab needs that are down; empty means it can run.
    pub down: Vec<Service>,
    /// Where a room opened from this page reaches ("Teach this"); the embed app reads no rooms.
    #[cfg(feature = "rooms")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rooms: Option<RoomsReach>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_plays_on_mariadb_by_its_name_alone() {
        assert_eq!(database_of("mariadb-repeatable-read"), Service::Mariadb);
        assert_eq!(database_of("repeatable-read"), Service::Postgres);
        // Only as a prefix: a PostgreSQL variant may mention MariaDB further on.
        assert_eq!(database_of("like-mariadb-"), Service::Postgres);
        assert_eq!(Service::Mariadb.label(), "MariaDB");
    }

    #[test]
    fn switching_database_keeps_the_level_where_it_can() {
        let variants = spec_with(&[
            "read-committed",
            "serializable",
            "atomic",
            "mariadb-read-committed",
            "mariadb-serializable",
        ])
        .variants;
        assert_eq!(databases(&variants), [Service::Postgres, Service::Mariadb]);
        assert_eq!(
            counterpart(&variants, "serializable", Service::Mariadb),
            "mariadb-serializable"
        );
        assert_eq!(
            counterpart(&variants, "mariadb-serializable", Service::Postgres),
            "serializable"
        );
        // No such fix on MariaDB: its first variant.
        assert_eq!(
            counterpart(&variants, "atomic", Service::Mariadb),
            "mariadb-read-committed"
        );
        // Already there, or nowhere to go: unchanged.
        assert_eq!(counterpart(&variants, "atomic", Service::Postgres), "atomic");
        let only_postgres = spec_with(&["read-committed"]).variants;
        assert_eq!(databases(&only_postgres), [Service::Postgres]);
        assert_eq!(
            counterpart(&only_postgres, "read-committed", Service::Mariadb),
            "read-committed"
        );
    }

    fn spec_with(variants: &[&str]) -> ScenarioInfo {
        ScenarioInfo {
            id: "spec/0123456789abcdef".into(),
            title: "Lost update".into(),
            hook: String::new(),
            about: String::new(),
            steppable: true,
            workload: false,
            variants: variants
                .iter()
                .map(|id| VariantInfo {
                    id: (*id).into(),
                    label: (*id).into(),
                    description: String::new(),
                })
                .collect(),
            predict: None,
        }
    }

    #[test]
    fn a_spec_asks_its_question_at_each_permutation_but_not_at_every_one() {
        let mut spec = spec_with(&["p1", "p2", "every"]);
        assert_eq!(spec.question_at("p1"), None, "no question written");
        let asked = Prediction {
            question: "Which runs first?".into(),
            choices: vec![],
        };
        spec.predict = Some(asked.clone());
        assert_eq!(spec.question_at("p2"), Some(asked));
        assert_eq!(spec.question_at("every"), None);
    }

    #[test]
    fn each_database_is_asked_only_the_answers_worth_offering_there() {
        let choice = |id: &str, only_on| Choice {
            id: id.into(),
            label: id.into(),
            only_on,
        };
        let mut lost_update = spec_with(&["repeatable-read", "mariadb-repeatable-read"]);
        lost_update.predict = Some(Prediction {
            question: "What happens?".into(),
            choices: vec![
                choice("bob-erases", None),
                choice("bob-40001", Some(Service::Postgres)),
                choice("bob-1020", Some(Service::Mariadb)),
                choice("bob-waits", None),
            ],
        });
        let ids = |variant: &str| -> Vec<String> {
            let asked = lost_update
                .question_at(variant)
                .unwrap_or_else(|| panic!("{variant} asks"));
            asked.choices.into_iter().map(|c| c.id).collect()
        };
        assert_eq!(ids("repeatable-read"), ["bob-erases", "bob-40001", "bob-waits"]);
        assert_eq!(ids("mariadb-repeatable-read"), ["bob-erases", "bob-1020", "bob-waits"]);
    }

    #[test]
    fn a_page_shows_the_variant_its_address_asks_for_or_else_the_first() {
        let spec = spec_with(&["p1", "p2", "every"]);
        assert_eq!(spec.variant_or_first(Some("every")), "every");
        assert_eq!(spec.variant_or_first(Some("p2")), "p2");
        assert_eq!(spec.variant_or_first(Some("p9")), "p1");
        assert_eq!(spec.variant_or_first(None), "p1");
        assert_eq!(spec_with(&[]).variant_or_first(Some("p1")), "");
    }
}
