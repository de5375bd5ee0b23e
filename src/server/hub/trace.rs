//! A run's trace, converted once (`?format=json`: Chrome's JSON, gzipped)
//! and sent as a download named after the run. A POST converts it as a job
//! (followed at `/api/convert/RUN`: a client that goes while it runs
//! cancels it if no one else waits); a GET sends it where it is made
//! already, else a page with a button that asks for it.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::Response;

use super::jobs::{ended, entry_of, wants_json};
use super::read::ask;
use super::Shared;
use crate::server::files::{file_response, Sending};
use crate::server::refusal::Refusal;
use crate::workflows::hub::bound::Pinned;
use crate::workflows::hub::catalog::Entry;
use crate::workflows::hub::jobs::State as JobState;

/// The trace, converted where not yet (a job), sent.
pub(super) async fn trace(
    State(app): State<Shared>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Response, Refusal> {
    let json = wants_json(&uri);
    let entry = entry_of(&app.hub, id).await?;
    let job = app.hub.conversion(entry.clone(), json);
    match ended(&job).await {
        JobState::Done => {}
        JobState::Failed { error } => return Err(Refusal::failed(error)),
        JobState::Cancelled | JobState::Running => {
            return Err(Refusal::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the conversion was cancelled",
            ))
        }
    }
    let worker = Arc::clone(&app.hub);
    // Made: from the cache (made again only where evicted meanwhile).
    let looked = entry.clone();
    let kept = tokio::task::spawn_blocking(move || {
        worker
            .cache
            .trace(&looked, &worker.trace_options(json), &mut |_| {})
    })
    .await;
    match kept {
        Ok(Ok(trace)) => Ok(sent(trace, &entry).await),
        Ok(Err(e)) => Err(Refusal::failed(e)),
        Err(_) => Err(Refusal::work_failed()),
    }
}

/// A GET of a trace: the trace where it is made already, else a page with
/// a button that asks for it: a GET never starts a conversion.
pub(super) async fn trace_if_made(
    State(app): State<Shared>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Response, Refusal> {
    let json = wants_json(&uri);
    let entry = entry_of(&app.hub, id).await?;
    let worker = Arc::clone(&app.hub);
    let looked = entry.clone();
    let kept = tokio::task::spawn_blocking(move || {
        worker
            .cache
            .kept_trace(&looked, &worker.trace_options(json))
    })
    .await;
    match kept {
        Ok(Some(trace)) => Ok(sent(trace, &entry).await),
        _ => Ok(ask(
            &app,
            &uri,
            &format!("Download {}", entry.relative()),
            &format!(
                "The trace of {} is not made yet: it is converted once (that takes a while), \
                 then downloaded; later downloads are instant.",
                entry.relative()
            ),
            "Convert and download",
        )),
    }
}

/// The trace of `entry`, sent as a download named after the run.
async fn sent(trace: Pinned, entry: &Entry) -> Response {
    let ext = trace
        .path()
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.split_once(".trace."))
        .map_or("perfetto-trace", |(_, ext)| ext)
        .to_owned();
    let name = format!("{}.{ext}", entry.stem());
    let path = trace.path().to_owned();
    let sending = Sending::of("application/octet-stream").download(&name);
    file_response(&path, trace, sending).await
}
