//! Trainers' lessons over HTTP: `POST /api/lessons` keeps one (`GET /api/lessons/{id}` reads it
//! back), `GET /api/lessons/{id}/figures` says how each round went across every session kept, and
//! a session's results, at the secret address its room's trainer was given, are
//! `GET /api/results/{session}` (the summary) and `GET /api/results/{session}/csv`.

use super::AppState;
use super::error::ApiError;
use axum::extract::rejection::StringRejection;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use shared::lesson::Lesson;
use shared::lesson::live::{Standing, standings};

/// A lesson's body: a session's rounds, well under this.
const LESSON_BODY_LIMIT: usize = 64 * 1024;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/lessons",
            post(save_lesson).layer(axum::extract::DefaultBodyLimit::max(LESSON_BODY_LIMIT)),
        )
        .route("/api/lessons/{id}", get(saved_lesson))
        .route("/api/lessons/{id}/figures", get(figures))
        .route("/api/results/{session}", get(summary))
        .route("/api/results/{session}/csv", get(csv))
}

/// A saved lesson: its id (its link is `/lessons/<id>`), its text, and what it reads as.
#[derive(serde::Serialize)]
struct SavedLesson {
    id: String,
    text: String,
    title: String,
    /// Each round's heading, in order.
    rounds: Vec<String>,
}

impl SavedLesson {
    fn of(id: String, text: String, lesson: &Lesson) -> SavedLesson {
        SavedLesson {
            id,
            text,
            title: lesson.title.clone(),
            rounds: lesson.rounds.iter().map(|r| r.title.clone()).collect(),
        }
    }
}

/// Keeps a lesson that holds (`201`, its id), or says every mistake at its line (`400`,
/// [`ApiError::Lesson`]) and keeps nothing.
async fn save_lesson(
    State(state): State<AppState>,
    text: Result<String, StringRejection>,
) -> Result<(StatusCode, Json<SavedLesson>), ApiError> {
    let text = text?;
    let lesson = crate::lessons::check(&state.engine, &text)
        .await
        .map_err(ApiError::Lesson)?;
    let id = state.engine.store.save_lesson(&text).await?;
    Ok((StatusCode::CREATED, Json(SavedLesson::of(id, text, &lesson))))
}

async fn saved_lesson(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<SavedLesson>, ApiError> {
    let (text, lesson) = kept(&state, &id).await?;
    Ok(Json(SavedLesson::of(id, text, &lesson)))
}

/// Lesson `id`'s text and what it reads as; 404 when none is kept under that id.
pub async fn kept(state: &AppState, id: &str) -> Result<(String, Lesson), ApiError> {
    let text = state
        .engine
        .store
        .load_lesson(id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no saved lesson has the id {id:?}")))?;
    let lesson =
        shared::lesson::parse(&text).map_err(|e| ApiError::Internal(format!("a kept lesson reads wrong: {e}")))?;
    Ok((text, lesson))
}

/// How one round went: across every session kept (figures), or in one session (its summary).
#[derive(serde::Serialize)]
struct RoundFigures {
    number: usize,
    title: String,
    /// Sessions that played it (1 in a session's summary).
    sessions: i64,
    answers: i64,
    right: i64,
}

/// `GET /api/lessons/{id}/figures`: each round of the lesson, how many sessions played it and
/// what share of answers were right; no handle appears (rounds never played are listed at 0).
async fn figures(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<Vec<RoundFigures>>, ApiError> {
    let (_, lesson) = kept(&state, &id).await?;
    let kept = state.engine.store.figures(&id).await?;
    let rounds = lesson
        .rounds
        .iter()
        .enumerate()
        .map(|(i, round)| {
            let (sessions, answers, right) = kept
                .iter()
                .find(|(number, ..)| *number == i + 1)
                .map_or((0, 0, 0), |&(_, s, a, r)| (s, a, r));
            RoundFigures {
                number: i + 1,
                title: round.title.clone(),
                sessions,
                answers,
                right,
            }
        })
        .collect();
    Ok(Json(rounds))
}

/// A session's summary: its lesson, each round's right answers, and the final leaderboard.
#[derive(serde::Serialize)]
struct Summary {
    lesson: String,
    title: String,
    rounds: Vec<RoundFigures>,
    leaderboard: Vec<Standing>,
}

/// `GET /api/results/{session}`: the summary of a session (404 until a round was answered, and
/// after its results were deleted).
async fn summary(State(state): State<AppState>, Path(session): Path<String>) -> Result<Json<Summary>, ApiError> {
    let (lesson_id, answers) = answered(&state, &session).await?;
    let (_, lesson) = kept(&state, &lesson_id).await?;
    let rounds = lesson
        .rounds
        .iter()
        .enumerate()
        .map(|(i, round)| {
            let of_round = answers.iter().filter(|a| a.round == i + 1);
            let (answers, right) = of_round.fold((0, 0), |(n, r), a| (n + 1, r + i64::from(a.right)));
            RoundFigures {
                number: i + 1,
                title: round.title.clone(),
                sessions: i64::from(answers > 0),
                answers,
                right,
            }
        })
        .collect();
    Ok(Json(Summary {
        lesson: lesson_id,
        title: lesson.title,
        rounds,
        leaderboard: standings(&answers, []),
    }))
}

/// `GET /api/results/{session}/csv`: every answer of the session, one per line.
async fn csv(State(state): State<AppState>, Path(session): Path<String>) -> Result<Response, ApiError> {
    let (_, answers) = answered(&state, &session).await?;
    let body = shared::lesson::live::csv(&answers);
    let headers = [
        (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
        (
            header::CONTENT_DISPOSITION,
            "attachment; filename=\"racelab-results.csv\"",
        ),
    ];
    Ok((headers, body).into_response())
}

/// Session `session`'s lesson id and answers; 404 when none are kept (a session nobody answered
/// in yet, one past its retention, or an address that is no session's).
async fn answered(state: &AppState, session: &str) -> Result<(String, Vec<shared::lesson::live::Answer>), ApiError> {
    state.engine.store.answers(session).await?.ok_or_else(|| {
        ApiError::NotFound("no results are kept at this address (none yet, or deleted after their time)".into())
    })
}
