//! Traces made of several runs, as jobs like the conversions:
//! `/api/make/compare?run=A&run=B` (both runs in one trace, as `compare A B
//! --trace` writes it) and `/api/make/merge?run=...` (as `merge` writes
//! it) follow the job as server-sent events; `/made/compare?...` and
//! `/made/merge?...` wait for it and send the trace.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use nsys2perfetto::hub::jobs::State as JobState;
use nsys2perfetto::hub::{self, Cache, Entry, Job, Made};

use super::jobs::{ended, events, started};
use super::{file_response, refused, url, Shared};

/// What `kind` names, and the runs the query names, in their order.
async fn asked(
    hub: &Shared,
    kind: &str,
    uri: &axum::http::Uri,
) -> Result<(Made, Vec<Entry>), Response> {
    let made = match kind {
        "compare" => Made::Compared,
        "merge" => Made::Merged,
        _ => return Err(refused(StatusCode::NOT_FOUND, "no such page")),
    };
    let ids = url::query_values(uri.query().unwrap_or(""), "run");
    let (count, exactly) = made.runs_needed();
    if ids.len() < count || exactly && ids.len() != count {
        let needed = match exactly {
            true => format!("{count} runs"),
            false => format!("at least {count} run"),
        };
        return Err(refused(
            StatusCode::BAD_REQUEST,
            &format!("{} needs {needed}: ?run=RUN&run=RUN", made.name()),
        ));
    }
    let dirs = hub.dirs.clone();
    let found = tokio::task::spawn_blocking(move || {
        let (listed, _) = hub::scan(&dirs);
        ids.iter()
            .map(|id| listed.iter().find(|e| &e.id == id).cloned())
            .collect::<Option<Vec<Entry>>>()
    })
    .await;
    match found {
        Ok(Some(entries)) => Ok((made, entries)),
        _ => Err(refused(StatusCode::NOT_FOUND, "no such report")),
    }
}

/// The job making `made` of `entries` (joined where one runs).
fn making(hub: &Shared, made: Made, entries: Vec<Entry>) -> Arc<Job> {
    let key = Cache::made_key(made, &entries);
    let names: Vec<&str> = entries.iter().map(|e| e.relative()).collect();
    let what = format!("{} {}", made.name(), names.join(" "));
    started(hub, &key, &what, move |hub, options, progress| {
        hub.cache.made(made, &entries, options, progress).map(drop)
    })
}

/// Follows the job that makes the trace (starting it where none runs).
pub(super) async fn follow(
    State(hub): State<Shared>,
    axum::extract::Path(kind): axum::extract::Path<String>,
    uri: axum::http::Uri,
) -> Response {
    match asked(&hub, &kind, &uri).await {
        Ok((made, entries)) => events(making(&hub, made, entries)),
        Err(r) => r,
    }
}

/// The trace, once made, as a download.
pub(super) async fn download(
    State(hub): State<Shared>,
    axum::extract::Path(kind): axum::extract::Path<String>,
    uri: axum::http::Uri,
) -> Response {
    let (made, entries) = match asked(&hub, &kind, &uri).await {
        Ok(asked) => asked,
        Err(r) => return r,
    };
    let job = making(&hub, made, entries.clone());
    match ended(&job).await {
        JobState::Done => {}
        JobState::Failed { error } => {
            return refused(StatusCode::UNPROCESSABLE_ENTITY, &format!("error: {error}"))
        }
        JobState::Cancelled | JobState::Running => {
            return refused(StatusCode::SERVICE_UNAVAILABLE, "the job was cancelled")
        }
    }
    let worker = Arc::clone(&hub);
    let kept = tokio::task::spawn_blocking(move || {
        worker
            .cache
            .made(made, &entries, &worker.options, &mut |_| {})
    })
    .await;
    let name = format!("{}.perfetto-trace", made.name());
    match kept {
        Ok(Ok(trace)) => file_response(trace, "application/octet-stream", Some(&name)).await,
        Ok(Err(e)) => refused(StatusCode::UNPROCESSABLE_ENTITY, &format!("error: {e}")),
        Err(_) => refused(StatusCode::INTERNAL_SERVER_ERROR, "the work failed"),
    }
}
