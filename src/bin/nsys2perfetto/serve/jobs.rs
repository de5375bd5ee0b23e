//! The hub's conversions as jobs over HTTP: `/api/convert/RUN` follows one
//! (started where none runs) as server-sent events, a line of JSON every
//! tenth of a second (its state and the fraction done) until it ends;
//! `/trace/RUN` waits for the same job and sends the trace; `/api/jobs`
//! lists them. A client waiting holds the job: when the last one goes (its
//! connection closes: a Cancel button, a closed tab), the job is cancelled
//! and leaves nothing in the cache. The bookkeeping is the library's
//! (`nsys2perfetto::hub::jobs`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use nsys2perfetto::hub::jobs::State as JobState;
use nsys2perfetto::hub::{CacheKey, Entry, Job};
use nsys2perfetto::{Error, Format, Options, Progress};

use super::{refused, url, Hub, Shared};

/// How often a follower hears of its job, and a waiter looks at it.
const TICK: Duration = Duration::from_millis(100);

impl Hub {
    /// The options of a conversion to Perfetto's format or, `json`,
    /// Chrome's JSON (gzipped).
    pub(super) fn trace_options(&self, json: bool) -> Options {
        let mut options = self.options.clone();
        if json {
            options.format = Format::Json;
        }
        options
    }
}

/// Whether the query asks for Chrome's JSON.
pub(super) fn wants_json(uri: &axum::http::Uri) -> bool {
    url::query_value(uri.query().unwrap_or(""), "format").as_deref() == Some("json")
}

/// The job converting `entry` (joined where one runs).
pub(super) fn conversion(hub: &Shared, entry: Entry, json: bool) -> Arc<Job> {
    let key = format!(
        "{}.{}",
        CacheKey::of(&entry).as_str(),
        if json { "json" } else { "perfetto" }
    );
    let what = format!("convert {}", entry.relative());
    started(hub, &key, &what, move |hub, options, progress| {
        let mut options = options.clone();
        options.format = hub.trace_options(json).format;
        hub.cache.trace(&entry, &options, progress).map(drop)
    })
}

/// The job that makes `key` (joined where one runs; else started, `-j` at
/// a time with the other reads a user waits for): `work` makes it with the
/// hub's options and the job's cancellation flag, telling `progress`.
pub(super) fn started(
    hub: &Shared,
    key: &str,
    what: &str,
    work: impl FnOnce(&Hub, &Options, &mut dyn FnMut(Progress)) -> nsys2perfetto::Result<()>
        + Send
        + 'static,
) -> Arc<Job> {
    let (job, new) = hub.jobs.join_or_start(key, what);
    if new {
        let hub = Arc::clone(hub);
        let job = Arc::clone(&job);
        tokio::spawn(async move {
            let permit = hub.foreground.clone().acquire_owned().await;
            let worker = Arc::clone(&hub);
            let working = Arc::clone(&job);
            let done = tokio::task::spawn_blocking(move || {
                let _permit = permit;
                if working.cancelled() {
                    return Err(Error::Serve {
                        reason: "cancelled before it started".into(),
                    });
                }
                let options = working.options(&worker.options);
                super::trimmed(|| work(&worker, &options, &mut |p| working.progressed(p)))
            })
            .await;
            let result = done.unwrap_or_else(|_| {
                Err(Error::Serve {
                    reason: "the job failed".into(),
                })
            });
            hub.jobs.end(&job, result);
        });
    }
    job
}

/// The report of `id` in the list now, looked for off the connection's
/// thread.
pub(super) async fn entry_of(hub: &Shared, id: String) -> Result<Entry, Response> {
    let lister = Arc::clone(hub);
    match tokio::task::spawn_blocking(move || lister.find(&id)).await {
        Ok(Some(entry)) => Ok(entry),
        _ => Err(refused(StatusCode::NOT_FOUND, "no such report")),
    }
}

/// Waits for `job` to end, as one of its waiters (dropped, as when the
/// client goes, it cancels the job if no one else waits).
pub(super) async fn ended(job: &Arc<Job>) -> JobState {
    let _waiting = job.wait();
    loop {
        match job.state() {
            JobState::Running => tokio::time::sleep(TICK).await,
            state => return state,
        }
    }
}

/// Follows the conversion of a report: server-sent events, each the job
/// as JSON (`{"id", "what", "state", "done", "waiting"}`), the last one
/// when it ended (`done`, `failed` with its `error`, or `cancelled`).
pub(super) async fn follow(
    State(hub): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
    uri: axum::http::Uri,
) -> Response {
    let entry = match entry_of(&hub, id).await {
        Ok(entry) => entry,
        Err(r) => return r,
    };
    events(conversion(&hub, entry, wants_json(&uri)))
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
pub(super) async fn list(State(hub): State<Shared>) -> Response {
    let seen: Vec<_> = hub.jobs.all().iter().map(|j| j.seen()).collect();
    (
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::to_string(&seen).expect("jobs serialize"),
    )
        .into_response()
}
