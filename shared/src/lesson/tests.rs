use super::*;
use crate::catalog::{Choice, Prediction, VariantInfo};

/// The lesson in the repository, which the tests and the docs play.
const SAMPLE: &str = include_str!("../../../lessons/isolation-in-an-hour.lesson.md");

#[test]
fn the_sample_lesson_reads_round_by_round() {
    let lesson = parse(SAMPLE).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lesson.title, "Isolation levels in an hour");
    assert!(
        lesson
            .about
            .as_deref()
            .is_some_and(|a| a.ends_with("on a real PostgreSQL.")),
        "an indented line goes on with about: {:?}",
        lesson.about
    );
    assert_eq!(lesson.leaderboard, Leaderboard::Shown);
    let titles: Vec<&str> = lesson.rounds.iter().map(|r| r.title.as_str()).collect();
    assert_eq!(titles.len(), 5, "{titles:?}");
    let second = &lesson.rounds[1];
    assert_eq!(
        second.race,
        Race::Scenario {
            id: "isolation/write-skew".into(),
            variant: "serializable".into(),
            postgres: None,
        }
    );
    let question = second.question.as_ref().expect("the trainer's own question");
    assert_eq!(
        question.answer,
        Derived::Failed {
            code: Some("40001".into())
        }
    );
    let ids: Vec<&str> = question.choices.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["alice", "bob", "nobody"]);
    assert!(
        second
            .explain
            .as_deref()
            .is_some_and(|e| e.contains("refused the second commit"))
    );
    assert_eq!(lesson.rounds[0].question, None, "the scenario's own question");
    assert_eq!(lesson.rounds[0].notes.len(), 1);
}

/// A lesson without its rounds' line numbers: what printing it again must keep.
fn unnumbered(mut lesson: Lesson) -> Lesson {
    for round in &mut lesson.rounds {
        round.line = 0;
    }
    lesson
}

#[test]
fn a_lesson_printed_reads_back_as_itself() {
    let lesson = parse(SAMPLE).unwrap_or_else(|e| panic!("{e}"));
    let printed = print(&lesson);
    let again = parse(&printed).unwrap_or_else(|e| panic!("{e}\n{printed}"));
    assert_eq!(unnumbered(again), unnumbered(lesson.clone()));
    // Every kind of race, and a hidden leaderboard, survive too.
    let mut more = lesson;
    more.leaderboard = Leaderboard::Hidden;
    more.rounds[0].race = Race::Spec {
        id: "0123456789abcdef".into(),
        permutation: Some(2),
    };
    more.rounds[1].race = Race::Recording {
        src: "https://example.com/write-skew.racelab.json".into(),
    };
    more.rounds[2].race = Race::Scenario {
        id: "isolation/lost-update".into(),
        variant: "repeatable-read".into(),
        postgres: Some(18),
    };
    let again = parse(&print(&more)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(unnumbered(again), unnumbered(more));
}

const HEAD: &str = "---\ntitle: T\n---\n";

/// Asserts that reading `text` fails with a message that starts with `expected`.
fn refused_at(text: &str, expected: &str) {
    let said = match parse(text) {
        Ok(lesson) => panic!("{text:?} read as {lesson:?}"),
        Err(error) => error.to_string(),
    };
    assert!(
        said.starts_with(expected),
        "{text:?}:\n  said     {said}\n  expected {expected}"
    );
}

#[test]
fn a_mistake_in_the_front_matter_is_named_at_its_line() {
    let cases = [
        ("", "line 1: the lesson is empty"),
        ("title: T\n", "line 1: a lesson starts with its front matter"),
        ("---\ntitle: T\n", "line 2: the front matter is never closed"),
        (
            "---\ntitle: T\ncolour: red\n---\n",
            "line 3: the front matter says title, about or leaderboard",
        ),
        (
            "---\ntitle: T\ntitle: U\n---\n",
            "line 3: title is said twice (first on line 2)",
        ),
        (
            "---\ntitle: T\nleaderboard: maybe\n---\n",
            "line 3: the leaderboard is shown or hidden",
        ),
        (
            "---\nabout: x\n---\n## R\nscenario: a/b\nvariant: v\n",
            "line 1: the front matter names the lesson",
        ),
        (HEAD, "line 3: a lesson has at least one round"),
    ];
    for (text, expected) in cases {
        refused_at(text, expected);
    }
}

#[test]
fn a_mistake_in_a_round_is_named_at_its_line() {
    // Each after the same three lines of front matter ([`HEAD`]): a round starts on line 4.
    let cases = [
        ("scenario: a/b\n", "line 4: write each round under a `## heading`"),
        ("## \n", "line 4: a round's heading names it"),
        ("## R\nscenario a/b\n", "line 5: expected `key: value`"),
        ("## R\nscenario:\n", "line 5: scenario says nothing"),
        ("## R\ncolour: red\n", "line 5: a round says scenario, variant"),
        ("## R\nscenario: a/b\n", "line 4: \"R\" names its scenario's variant"),
        ("## R\nvariant: v\n", "line 4: \"R\" plays one race"),
        ("## R\nscenario: a/b\nspec: abc\n", "line 4: \"R\" plays one race"),
        (
            "## R\nrecording: ws.racelab.json\n",
            "line 5: a recording is named by its whole address",
        ),
        (
            "## R\nscenario: a/b\nvariant: v\nvariant: w\n",
            "line 7: variant is said twice in this round (first on line 6)",
        ),
        (
            "## R\nscenario: a/b\nvariant: v\npostgres: new\n",
            "line 7: postgres (a major version) is a whole number",
        ),
        (
            "## R\nspec: abc\npermutation: 0\n",
            "line 6: permutation is a whole number",
        ),
        (
            "## R\nspec: abc\npostgres: 18\n",
            "line 6: postgres goes with a scenario",
        ),
        (
            "## R\nscenario: a/b\nvariant: v\npermutation: 2\n",
            "line 7: permutation goes with a spec",
        ),
        (
            "## R\nscenario: a/b\nvariant: v\nquestion: Who?\nchoice a: A\nchoice b: B\n",
            "line 7: a question says how its answer is read off the run",
        ),
        (
            "## R\nscenario: a/b\nvariant: v\nquestion: Who?\nchoice a: A\nanswer: verdict\n",
            "line 7: a question offers at least two choices",
        ),
        (
            "## R\nscenario: a/b\nvariant: v\nchoice a: A\n",
            "line 7: a choice goes with a question",
        ),
        (
            "## R\nscenario: a/b\nvariant: v\nanswer: verdict\n",
            "line 7: an answer goes with a question",
        ),
        (
            "## R\nscenario: a/b\nvariant: v\nquestion: Q?\nchoice a: A\nchoice a: B\n",
            "line 9: choice a is said twice (first on line 8)",
        ),
        (
            "## R\nscenario: a/b\nvariant: v\nquestion: Q?\nchoice a b: A\n",
            "line 8: a choice's id is a word",
        ),
        (
            "## R\nscenario: a/b\nvariant: v\nanswer: who knows\n",
            "line 7: an answer is derived from the run",
        ),
    ];
    for (body, expected) in cases {
        refused_at(&format!("{HEAD}{body}"), expected);
    }
}

fn catalog() -> Vec<ScenarioInfo> {
    let variant = |id: &str| VariantInfo {
        id: id.into(),
        label: id.into(),
        description: String::new(),
    };
    let scenario = |id: &str, predict: bool| ScenarioInfo {
        id: id.into(),
        title: id.into(),
        hook: String::new(),
        about: String::new(),
        steppable: true,
        workload: false,
        variants: vec![variant("read-committed"), variant("serializable")],
        predict: predict.then(|| Prediction {
            question: "What happens?".into(),
            choices: vec![Choice {
                id: "both".into(),
                label: "Both".into(),
                only_on: None,
            }],
        }),
    };
    vec![
        scenario("isolation/write-skew", true),
        scenario("isolation/load-test", false),
    ]
}

#[test]
fn a_round_naming_what_racelab_does_not_play_is_refused_by_name() {
    let text = format!(
        "{HEAD}## Fine\nscenario: isolation/write-skew\nvariant: serializable\npostgres: 18\n\
         ## Unknown scenario\nscenario: isolation/nope\nvariant: serializable\n\
         ## Unknown variant\nscenario: isolation/write-skew\nvariant: chaos\n\
         ## Old version\nscenario: isolation/write-skew\nvariant: serializable\npostgres: 12\n\
         ## Nothing to ask\nscenario: isolation/load-test\nvariant: serializable\n\
         ## A spec\nspec: 0123456789abcdef\n"
    );
    let lesson = parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let catalog = catalog();
    let plays = Plays {
        scenarios: &catalog,
        postgres: &[15, 18],
    };
    let refused: Vec<String> = refusals(&lesson, &plays).iter().map(ToString::to_string).collect();
    assert_eq!(
        refused,
        [
            "line 8: \"Unknown scenario\": racelab has no scenario isolation/nope",
            "line 11: \"Unknown variant\": isolation/write-skew has no variant chaos (it has read-committed, serializable)",
            "line 14: \"Old version\": racelab plays on PostgreSQL 15 and 18 here, not 12",
            "line 18: \"Nothing to ask\": isolation/load-test asks no question: write one (question:, choice, answer:)",
        ]
    );
}

#[test]
fn a_recording_round_is_read_from_the_run_racelab_keeps_or_from_its_address() {
    assert_eq!(kept_run("/api/runs/4f2a-9c/recording"), Some("4f2a-9c"));
    assert_eq!(kept_run("/runs/4f2a-9c"), Some("4f2a-9c"));
    assert_eq!(recording_address("/runs/4f2a-9c"), "/api/runs/4f2a-9c/recording");
    for elsewhere in [
        "https://blog.example/ws.racelab.json",
        "ws.racelab.json",
        "/api/runs//recording",
        "/api/runs/../x/recording",
        "/runs/a b",
    ] {
        assert_eq!(kept_run(elsewhere), None, "{elsewhere}");
        assert_eq!(recording_address(elsewhere), elsewhere);
    }
}

#[test]
fn rounds_are_counted_from_one() {
    let lesson =
        parse(include_str!("../../../lessons/isolation-in-an-hour.lesson.md")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lesson.round(0), None);
    assert_eq!(lesson.round(1), lesson.rounds.first());
    assert_eq!(lesson.round(lesson.rounds.len()), lesson.rounds.last());
    assert_eq!(lesson.round(lesson.rounds.len() + 1), None);
}
