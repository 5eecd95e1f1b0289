//! `/lessons` and `/lessons/{id}`: write a trainer's lesson (docs/lessons.md), read as it is
//! typed with every mistake at its line, keep it for a link (the server then checks each round
//! against what it plays and keeps), and open each round's race with its question.

use crate::api::{fetch_json, post_text_answer};
use crate::components::embed_code::LessonEmbedCode;
use crate::components::error_view::{ErrorView, loading};
use leptos::prelude::*;
use shared::json::{self, FromJson, Json, JsonError};
use shared::lesson::{Lesson, LessonError, Race};

/// The lesson a new page starts from: the repository's sample, which the tests play.
const SAMPLE: &str = include_str!("../../../lessons/isolation-in-an-hour.lesson.md");

/// A kept lesson, as `POST /api/lessons` and `GET /api/lessons/{id}` answer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Kept {
    pub id: String,
    pub text: String,
}

impl FromJson for Kept {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Kept {
            id: json.get("id")?,
            text: json.get("text")?,
        })
    }
}

/// One mistake the server found, as its `400` lists them.
struct Mistake(LessonError);

impl FromJson for Mistake {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Mistake(LessonError {
            line: json.get("line")?,
            message: json.get("message")?,
        }))
    }
}

/// `/lessons` (`id`: none) starts from the sample; `/lessons/{id}` from a kept lesson.
#[component]
pub fn LessonsPage(id: Option<String>) -> impl IntoView {
    let Some(id) = id else {
        return view! { <LessonWriter text=SAMPLE.to_owned() kept=None /> }.into_any();
    };
    let found = crate::api::fetched(async move { fetch_json::<Kept>(&format!("/api/lessons/{id}")).await });
    view! {
        {move || found.get().map(|result| match result {
            Err(message) => view! { <ErrorView message=message /> }.into_any(),
            Ok(kept) => view! { <LessonWriter text=kept.text.clone() kept=Some(kept) /> }.into_any(),
        }).unwrap_or_else(|| loading("Loading the lesson…"))}
    }
    .into_any()
}

#[component]
fn LessonWriter(text: String, kept: Option<Kept>) -> impl IntoView {
    let text = RwSignal::new(text);
    let kept = RwSignal::new(kept);
    let reading = Memo::new(move |_| text.with(|t| shared::lesson::parse(t)));
    // What the server refused, for the text it was sent: gone once the text changes.
    let refused = RwSignal::new(None::<(String, Vec<LessonError>)>);
    let saving = RwSignal::new(false);
    let unchanged = move || kept.with(|k| k.as_ref().is_some_and(|k| text.with(|t| *t == k.text)));
    let keep = move |_| {
        let body = text.get_untracked();
        saving.set(true);
        leptos::task::spawn_local(async move {
            match post_text_answer("/api/lessons", &body).await {
                Ok((201, answer)) => match json::from_str::<Kept>(&answer) {
                    Ok(answer) => {
                        refused.set(None);
                        crate::api::go_quietly(&format!("/lessons/{}", answer.id));
                        kept.set(Some(answer));
                    }
                    Err(e) => refused.set(Some((body, vec![whole(format!("unexpected answer: {e}"))]))),
                },
                Ok((_, answer)) => refused.set(Some((body, mistakes(&answer)))),
                Err(message) => refused.set(Some((body, vec![whole(message)]))),
            }
            saving.set(false);
        });
    };
    let cannot_keep = move || saving.get() || reading.with(Result::is_err) || unchanged();
    let shown_refusals = move || {
        refused.with(|r| {
            r.as_ref()
                .filter(|(sent, _)| text.with(|t| t == sent))
                .map(|(_, list)| list.clone())
        })
    };
    view! {
        <article class="rl-write rl-lessons">
            <h1>"Write a lesson"</h1>
            <p class="rl-explain">
                "The races of one training session, a "<code>"## heading"</code>" a round: a scenario at a variant, a "
                "reader's saved spec, or a recording; the room's question (the scenario's own, or yours, whose right "
                "answer is read off the run), notes for you, and what to explain after it plays. Keep it for a link; "
                "send the text to a colleague, or keep it beside your slides."
            </p>
            <textarea id="rl-lesson-text" class="rl-lesson-text" spellcheck="false" aria-label="The lesson"
                rows=move || text.with(|t| t.lines().count().max(12) + 1)
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))></textarea>
            {move || reading_line(&reading.get())}
            <div class="rl-write-actions">
                <button class="rl-lesson-keep" on:click=keep disabled=cannot_keep>
                    {move || if unchanged() { "Kept" } else { "Keep it" }}
                </button>
            </div>
            {move || shown_refusals().map(|list| view! {
                <ul class="rl-lesson-refused" role="alert">
                    {list.into_iter().map(|m| view! { <li data-line=m.line.to_string()>{m.to_string()}</li> }).collect_view()}
                </ul>
            })}
            {move || kept.get().filter(|_| unchanged()).map(|k| {
                let origin = crate::api::origin();
                view! {
                    <p class="rl-lesson-link">
                        "Kept at "<a href=format!("/lessons/{}", k.id)>{format!("{origin}/lessons/{}", k.id)}</a>
                        ". A kept lesson never changes: edit it and keep it again for a new link."
                    </p>
                    <RunWithARoom id=k.id.clone() />
                    <p class="rl-lesson-alone-link">
                        <a href=format!("/lessons/{}/alone", k.id)>"Take it alone"</a>
                        " (predict, run, score: a link to send someone who missed the session)"
                    </p>
                    <LessonEmbedCode id=k.id.clone() title=title_of(&k.text) />
                }
            })}
            {move || reading.get().ok().map(|lesson| view! { <Rounds lesson=lesson /> })}
        </article>
    }
}

/// A kept lesson's title, for its embed's iframe.
fn title_of(text: &str) -> String {
    shared::lesson::parse(text).map(|l| l.title).unwrap_or_default()
}

/// A room opened for a lesson, as `POST /api/rooms` answers: its code, the trainer's token and
/// where the session's results will be read.
struct Opened {
    id: String,
    trainer_token: String,
    results: String,
}

impl FromJson for Opened {
    fn from_json(json: &Json) -> Result<Self, JsonError> {
        Ok(Opened {
            id: json.get("id")?,
            trainer_token: json.get("trainer_token")?,
            results: json.get("results")?,
        })
    }
}

/// Opens a room that runs lesson `id` and goes to its trainer's page (the token and the results'
/// address ride in the fragment, which no server is sent).
#[component]
fn RunWithARoom(id: String) -> impl IntoView {
    let problem = RwSignal::new(None::<String>);
    let opening = RwSignal::new(false);
    let open = move |_| {
        let body = format!("{{\"lesson\":{}}}", shared::json::quote(&id));
        opening.set(true);
        leptos::task::spawn_local(async move {
            match crate::api::post_text::<Opened>("/api/rooms", &body).await {
                Ok(room) => {
                    let results = room.results.trim_start_matches("/api/results/");
                    crate::api::go_to(&format!(
                        "/room/{}#trainer={}&results={results}",
                        room.id, room.trainer_token
                    ));
                }
                Err(message) => {
                    problem.set(Some(message));
                    opening.set(false);
                }
            }
        });
    };
    view! {
        <p class="rl-lesson-teach">
            <button class="rl-lesson-room" on:click=open disabled=move || opening.get()>"Run it with a room"</button>
            " Participants join from a code or a QR code; you open each round, they predict, the run decides."
        </p>
        {move || problem.get().map(|m| view! { <p class="rl-notice rl-notice--refused" role="alert">{m}</p> })}
    }
}

/// What the reader makes of the text now: its rounds, or its first mistake at its line.
fn reading_line(reading: &Result<Lesson, LessonError>) -> impl IntoView + use<> {
    let (ok, said) = match reading {
        Ok(lesson) => (
            true,
            format!("Reads as \"{}\": {} rounds.", lesson.title, lesson.rounds.len()),
        ),
        Err(mistake) => (false, mistake.to_string()),
    };
    view! { <p class="rl-lesson-reading" data-ok=ok.to_string() role="status">{said}</p> }
}

/// The server's mistakes from a refusal's body, or its sentence.
fn mistakes(answer: &str) -> Vec<LessonError> {
    let parsed = json::parse(answer).ok();
    let listed = parsed
        .as_ref()
        .and_then(|a| a.get::<Vec<Mistake>>("mistakes").ok())
        .map(|list| list.into_iter().map(|m| m.0).collect::<Vec<_>>())
        .filter(|list| !list.is_empty());
    listed.unwrap_or_else(|| {
        let sentence = parsed.and_then(|a| a.get::<String>("error").ok());
        vec![whole(sentence.unwrap_or_else(|| answer.to_owned()))]
    })
}

/// A refusal about the whole lesson, not one line.
fn whole(message: String) -> LessonError {
    LessonError { line: 0, message }
}

/// Each round, its race a link that opens it with its question.
#[component]
fn Rounds(lesson: Lesson) -> impl IntoView {
    let rounds = lesson
        .rounds
        .into_iter()
        .map(|round| {
            let (what, href) = race_link(&round.race);
            let asked = round.question.as_ref().map(|q| q.text.clone());
            view! {
                <li class="rl-lesson-round" data-line=round.line.to_string()>
                    <a class="rl-lesson-race" href=href>{round.title.clone()}</a>
                    " "<span class="rl-lesson-what">{what}</span>
                    {asked.map(|q| view! { <p class="rl-lesson-question">{q}</p> })}
                </li>
            }
        })
        .collect_view();
    view! { <ol class="rl-lesson-rounds">{rounds}</ol> }
}

/// What a round plays, in a few words, and where its race opens asking its question.
fn race_link(race: &Race) -> (String, String) {
    match race {
        Race::Scenario { id, variant, postgres } => {
            let on = postgres.map(|v| format!("&postgres={v}")).unwrap_or_default();
            (
                format!("{id} at {variant}"),
                format!("/lab/{id}?variant={variant}&predict=1{on}"),
            )
        }
        Race::Spec { id, permutation } => {
            let p = permutation.unwrap_or(1);
            (
                format!("spec {id}, permutation {p}"),
                format!("/s/{id}?variant=p{p}&predict=1"),
            )
        }
        Race::Recording { src } => {
            let encoded: String = js_sys::encode_uri_component(src).into();
            (
                "a recording".to_owned(),
                format!("/embed/recording?src={encoded}&predict=1"),
            )
        }
    }
}
