//! A run's trace, converted once (`?format=json`: Chrome's JSON, gzipped)
//! and sent as a download named after the run. A POST converts it as a job
//! (followed at `/api/convert/RUN`: a client that goes while it runs
//! cancels it if no one else waits); a GET sends it where it is made
//! already, else a page with a button that asks for it.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::response::Response;

use super::jobs::{done, entry_of, made_again, wants_json, OnMiss};
use super::read::ask;
use super::Shared;
use crate::server::files::{file_response, Sending};
use crate::server::refusal::Refusal;
use crate::workflows::hub::bound::Pinned;
use crate::workflows::hub::catalog::Entry;

/// The trace: converted where not yet (a job) by a POST, sent; a GET
/// sends it where it is made already, else a page with a button that asks
/// for it: a GET never starts a conversion.
pub(super) async fn trace(
    State(app): State<Shared>,
    Path(id): Path<String>,
    request: Parts,
) -> Result<Response, Refusal> {
    let json = wants_json(&request.uri);
    let entry = entry_of(&app.hub, id).await?;
    let worker = Arc::clone(&app.hub);
    let looked = entry.clone();
    let trace = match OnMiss::of(&request.method) {
        OnMiss::Make => {
            let job = app.hub.conversion(entry.clone(), json);
            done(&job, "the conversion was cancelled").await?;
            made_again(move || {
                worker
                    .cache
                    .trace(&looked, &worker.trace_options(json), &mut |_| {})
            })
            .await?
        }
        OnMiss::Ask => {
            let kept = tokio::task::spawn_blocking(move || {
                worker
                    .cache
                    .kept_trace(&looked, &worker.trace_options(json))
            })
            .await;
            match kept {
                Ok(Some(trace)) => trace,
                _ => {
                    return Ok(ask(
                        &app,
                        &request.uri,
                        &format!("Download {}", entry.relative()),
                        &format!(
                            "The trace of {} is not made yet: it is converted once (that takes \
                             a while), then downloaded; later downloads are instant.",
                            entry.relative()
                        ),
                        "Convert and download",
                    ))
                }
            }
        }
    };
    Ok(sent(trace, &entry).await)
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
