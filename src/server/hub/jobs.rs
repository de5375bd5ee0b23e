//! The hub's conversions as jobs over HTTP: `/api/convert/RUN` follows one
//! (started where none runs) as server-sent events, a line of JSON every
//! tenth of a second (its state and the fraction done) until it ends;
//! `/trace/RUN` waits for the same job and sends the trace; `/api/jobs`
//! lists them. A client waiting holds the job: when the last one goes (its
//! connection closes: a Cancel button, a closed tab), the job is cancelled
//! and leaves nothing in the cache. The bookkeeping is the hub's
//! (`crate::workflows::hub::jobs`), and so is starting them.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::Shared;
use crate::server::refusal::Refusal;
use crate::server::url;
use crate::workflows::hub::catalog::Entry;
use crate::workflows::hub::jobs::{Job, State as JobState};
use crate::workflows::hub::state::Hub;

/// How often a follower hears of its job, and a waiter looks at it.
const TICK: Duration = Duration::from_millis(100);

/// Whether the query asks for Chrome's JSON.
pub(super) fn wants_json(uri: &axum::http::Uri) -> bool {
    url::query_value(uri.query().unwrap_or(""), "format").as_deref() == Some("json")
}

/// The report of `id` in the list now, looked for off the connection's
/// thread.
pub(super) async fn entry_of(hub: &Arc<Hub>, id: String) -> Result<Entry, Refusal> {
    let lister = Arc::clone(hub);
    match tokio::task::spawn_blocking(move || lister.find(&id)).await {
        Ok(Some(entry)) => Ok(entry),
        _ => Err(Refusal::no_such_report()),
    }
}

/// Waits for `job` to end, as one of its waiters (dropped, as when the
/// client goes, it cancels the job if no one else waits).
async fn ended(job: &Arc<Job>) -> JobState {
    let _waiting = job.wait();
    loop {
        match job.state() {
            JobState::Running => tokio::time::sleep(TICK).await,
            state => return state,
        }
    }
}

/// Waits for `job` to end (as [`ended`]): done, or refused with its
/// error, or as `cancelled` says where it was cancelled.
pub(super) async fn done(job: &Arc<Job>, cancelled: &'static str) -> Result<(), Refusal> {
    match ended(job).await {
        JobState::Done => Ok(()),
        JobState::Failed { error } => Err(Refusal::failed(error)),
        JobState::Cancelled | JobState::Running => {
            Err(Refusal::new(StatusCode::SERVICE_UNAVAILABLE, cancelled))
        }
    }
}

/// What `work` made on a blocking thread (a cached thing, made again
/// only where evicted since its job), its error refused in the CLI's words.
pub(super) async fn made_again<T: Send + 'static>(
    work: impl FnOnce() -> crate::Result<T> + Send + 'static,
) -> Result<T, Refusal> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| Refusal::work_failed())?
        .map_err(Refusal::failed)
}

/// What a request does where what it asks for is not made yet.
#[derive(Clone, Copy)]
pub(super) enum OnMiss {
    /// Makes it, as a job (a POST).
    Make,
    /// Answers a page with a button that asks for it (a GET): a GET never
    /// starts a job.
    Ask,
}

impl OnMiss {
    /// As the request's `method` says: only a POST starts work.
    pub(super) fn of(method: &Method) -> OnMiss {
        match *method == Method::POST {
            true => OnMiss::Make,
            false => OnMiss::Ask,
        }
    }
}

/// Follows the conversion of a report: server-sent events, each the job
/// as JSON (`{"id", "what", "state", "done", "waiting"}`), the last one
/// when it ended (`done`, `failed` with its `error`, or `cancelled`).
pub(super) async fn follow(
    State(app): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
    uri: axum::http::Uri,
) -> Result<Response, Refusal> {
    let entry = entry_of(&app.hub, id).await?;
    Ok(events(app.hub.conversion(entry, wants_json(&uri))))
}

/// Server-sent events of `job`, as a client waiting for it: every tenth of
/// a second until it ends; a client that goes leaves the job (cancelling it
/// if no one else waits).
pub(super) fn events(job: Arc<Job>) -> Response {
    let waiting = job.wait();
    let events =
        futures_util::stream::unfold((Some(waiting), true), |(waiting, first)| async move {
            let waiting = waiting?;
            if !first {
                tokio::time::sleep(TICK).await;
            }
            let seen = waiting.job().seen();
            let ended = seen.state != JobState::Running;
            let event = format!(
                "data: {}\n\n",
                serde_json::to_string(&seen).expect("a job serializes")
            );
            let next = (!ended).then_some(waiting);
            Some((Ok::<_, Infallible>(event), (next, false)))
        });
    event_stream(Body::from_stream(events))
}

/// The one event of a job that could not start: failed, saying `why` (in
/// the CLI's words), as a job's last event says it.
pub(super) fn failed_event(why: &str) -> Response {
    let seen = serde_json::json!({
        "id": null,
        "what": null,
        "state": "failed",
        "error": why,
        "done": null,
        "waiting": 0,
    });
    event_stream(Body::from(format!("data: {seen}\n\n")))
}

/// A response of server-sent events, never cached.
fn event_stream(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The jobs running and the last ended, as JSON.
pub(super) async fn list(State(app): State<Shared>) -> Response {
    let seen: Vec<_> = app.hub.work.jobs.all().iter().map(|j| j.seen()).collect();
    (
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_string(&seen).expect("jobs serialize"),
    )
        .into_response()
}
