//! Traces too big for a browser tab, as `open` handles them: the UI's own
//! trace_processor (WebAssembly in the tab) cannot hold them, so the page
//! offers to load the trace in trace_processor_shell on this machine,
//! which the UI then uses as its accelerator (`open --tp`). `/api/fit/RUN`
//! says whether a run's trace fits a tab (the estimate `open` makes) and,
//! where not, whether the offer can be made (or why not); `POST
//! /api/tp/RUN` starts trace_processor on it (stopping the one before: the
//! UI talks to one) and answers the UI's URL that uses it. The hub holds
//! it (`crate::workflows::hub::accelerator`) and stops it when it stops.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use super::jobs::entry_of;
use super::Shared;
use crate::server::refusal::Refusal;
use crate::workflows::hub::bound::Pinned;
use crate::workflows::hub::pages::human_bytes;
use crate::workflows::hub::state::Hub;
use crate::workflows::serve::{estimated_tab_memory, TraceKind, DEFAULT_PORT};

/// The trace of `id` (Perfetto's format), converted once; where not
/// `convert`, only one made already (a GET starts no work): 409 where none
/// is.
async fn converted(hub: &Arc<Hub>, id: String, convert: bool) -> Result<(Pinned, String), Refusal> {
    let entry = entry_of(hub, id).await?;
    let worker = Arc::clone(hub);
    let done = tokio::task::spawn_blocking(move || {
        let options = worker.trace_options(false);
        let trace = match convert {
            true => worker.cache.trace(&entry, &options, &mut |_| {})?,
            false => {
                let kept = worker.cache.kept_trace(&entry, &options);
                kept.ok_or_else(|| crate::Error::Serve {
                    reason: format!(
                        "the trace of {} is not made yet: its conversion (POST \
                         /api/convert/RUN) makes it",
                        entry.relative()
                    ),
                })?
            }
        };
        Ok::<_, crate::Error>((trace, entry.relative().to_owned()))
    })
    .await;
    match done {
        Ok(Ok(made)) => Ok(made),
        Ok(Err(e @ crate::Error::Serve { .. })) if !convert => {
            Err(Refusal::new(StatusCode::CONFLICT, format!("error: {e}")))
        }
        Ok(Err(e)) => Err(Refusal::failed(e)),
        Err(_) => Err(Refusal::work_failed()),
    }
}

fn json(value: serde_json::Value) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// Whether the trace of a run fits a browser tab: `{"fits", "needs",
/// "limit", "message", "tp", "no_tp"}` (`message`: why it does not fit;
/// `tp`: whether trace_processor can be offered; `no_tp`: why not).
pub(super) async fn fit(
    State(app): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Response, Refusal> {
    let hub = &app.hub;
    let (trace, name) = converted(hub, id, false).await?;
    let needs = estimated_tab_memory(trace.path(), TraceKind::GzipTrace)
        .map_err(|e| Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, format!("error: {e}")))?;
    let limit = hub.accelerators.tab_limit;
    let fits = needs <= limit;
    let message = (!fits).then(|| {
        format!(
            "{name} needs about {} in trace_processor, more than a browser tab has ({})",
            human_bytes(needs),
            human_bytes(limit)
        )
    });
    Ok(json(serde_json::json!({
        "fits": fits,
        "needs": needs,
        "limit": limit,
        "message": message,
        "tp": hub.accelerators.program.is_ok(),
        "no_tp": hub.accelerators.program.as_ref().err(),
    })))
}

/// Starts trace_processor on the trace of a run: `{"url"}`, the UI's URL
/// that uses it.
pub(super) async fn start(
    State(app): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Response, Refusal> {
    let (trace, _) = converted(&app.hub, id, true).await?;
    let worker = Arc::clone(&app.hub);
    let started = tokio::task::spawn_blocking(move || worker.accelerators.start(trace)).await;
    match started {
        Ok(Ok(())) => Ok(json(serde_json::json!({ "url": ui_url(&app.hub) }))),
        Ok(Err(e)) => Err(Refusal::failed(e)),
        Err(_) => Err(Refusal::work_failed()),
    }
}

/// The UI's URL that offers the trace trace_processor loaded ("Use loaded
/// trace"): on another port than 9001, named by `rpc_port` (which the UI
/// follows with its flag "Relax Content Security Policy for 127.0.0.1:*").
fn ui_url(hub: &Hub) -> String {
    // The UI's page (a self-hosted one may have a path), its route after.
    let page = hub.ui.split('#').next().unwrap_or_default();
    let origin_only = page
        .split_once("://")
        .is_some_and(|(_, rest)| !rest.contains('/'));
    let page = match origin_only {
        true => format!("{page}/"),
        false => page.to_owned(),
    };
    match hub.accelerators.port {
        DEFAULT_PORT => format!("{page}#!/"),
        port => format!("{page}#!/?rpc_port={port}"),
    }
}
