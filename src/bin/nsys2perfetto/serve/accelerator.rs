//! Traces too big for a browser tab, as `open` handles them: the UI's own
//! trace_processor (WebAssembly in the tab) cannot hold them, so the page
//! offers to load the trace in trace_processor_shell on this machine,
//! which the UI then uses as its accelerator (`open --tp`). `/api/fit/RUN`
//! says whether a run's trace fits a tab (the estimate `open` makes) and,
//! where not, whether the offer can be made (or why not); `POST
//! /api/tp/RUN` starts trace_processor on it (stopping the one before: the
//! UI talks to one) and answers the UI's URL that uses it. The server stops
//! it when it stops.

use std::path::PathBuf;
use std::process::Child;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use nsys2perfetto::hub::Pinned;
use nsys2perfetto::serve::{spawn_trace_processor, TraceKind, DEFAULT_PORT};

use super::{jobs, refused, Hub, Shared};
use crate::human_bytes;
use crate::tab_memory::estimated_tab_memory;

/// The trace_processor for traces too big for a tab: where it is, or why
/// there is none; its port; the tab's limit.
pub(super) struct Accelerators {
    /// The program, or why there is none (a line the page shows).
    pub program: Result<PathBuf, String>,
    /// The port it listens on (the UI's default, 9001, unless told).
    pub port: u16,
    /// The memory beyond which a trace does not fit a tab.
    pub tab_limit: u64,
    /// The one running, with the trace it loaded (kept in the cache while
    /// it runs).
    running: Mutex<Option<(Child, Pinned)>>,
}

impl Accelerators {
    /// `given` (`--tp`), else trace_processor_shell or trace_processor on
    /// PATH, as `open` looks for it.
    pub fn new(given: Option<PathBuf>, port: u16, tab_limit: u64) -> Accelerators {
        let program = match given {
            Some(path) if path.is_file() => Ok(path),
            Some(path) => Err(format!("--tp {}: no such file", path.display())),
            None => crate::host::on_path(&["trace_processor_shell", "trace_processor"]).ok_or_else(
                || {
                    "trace_processor_shell is not on PATH: start serve with --tp PATH \
                     (https://perfetto.dev/docs/analysis/trace-processor)"
                        .to_owned()
                },
            ),
        };
        Accelerators {
            program,
            port,
            tab_limit,
            running: Mutex::new(None),
        }
    }

    /// Stops the one running, if any.
    pub fn stop(&self) {
        let old = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some((mut child, _trace)) = old {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts trace_processor on `trace`, stopping the one before.
    fn start(&self, trace: Pinned) -> nsys2perfetto::Result<()> {
        let program = self
            .program
            .clone()
            .map_err(|reason| nsys2perfetto::Error::Serve { reason })?;
        self.stop();
        if std::net::TcpListener::bind(("127.0.0.1", self.port)).is_err() {
            return Err(nsys2perfetto::Error::Serve {
                reason: format!(
                    "port {} of 127.0.0.1 is in use (another trace_processor?): stop what \
                     uses it, or start serve with another --tp-port",
                    self.port
                ),
            });
        }
        let child = spawn_trace_processor(&program, trace.path(), self.port)?;
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = Some((child, trace));
        Ok(())
    }
}

/// The trace of `id` (Perfetto's format), converted once; where not
/// `convert`, only one made already (a GET starts no work): 409 where none
/// is.
async fn converted(hub: &Shared, id: String, convert: bool) -> Result<(Pinned, String), Response> {
    let entry = jobs::entry_of(hub, id).await?;
    let worker = Arc::clone(hub);
    let done = tokio::task::spawn_blocking(move || {
        let options = worker.trace_options(false);
        let trace = match convert {
            true => worker.cache.trace(&entry, &options, &mut |_| {})?,
            false => {
                let kept = worker
                    .cache
                    .kept(|cache| cache.trace(&entry, &options, &mut |_| {}));
                kept.ok_or_else(|| nsys2perfetto::Error::Serve {
                    reason: format!(
                        "the trace of {} is not made yet: its conversion (POST \
                         /api/convert/RUN) makes it",
                        entry.relative()
                    ),
                })?
            }
        };
        Ok::<_, nsys2perfetto::Error>((trace, entry.relative().to_owned()))
    })
    .await;
    match done {
        Ok(Ok(made)) => Ok(made),
        Ok(Err(e @ nsys2perfetto::Error::Serve { .. })) if !convert => {
            Err(refused(StatusCode::CONFLICT, &format!("error: {e}")))
        }
        Ok(Err(e)) => Err(refused(
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("error: {e}"),
        )),
        Err(_) => Err(refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the work failed",
        )),
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
    State(hub): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    let (trace, name) = match converted(&hub, id, false).await {
        Ok(made) => made,
        Err(r) => return r,
    };
    let needs = match estimated_tab_memory(trace.path(), TraceKind::GzipTrace) {
        Ok(needs) => needs,
        Err(e) => return refused(StatusCode::INTERNAL_SERVER_ERROR, &format!("error: {e}")),
    };
    let limit = hub.accelerators.tab_limit;
    let fits = needs <= limit;
    let message = (!fits).then(|| {
        format!(
            "{name} needs about {} in trace_processor, more than a browser tab has ({})",
            human_bytes(needs),
            human_bytes(limit)
        )
    });
    json(serde_json::json!({
        "fits": fits,
        "needs": needs,
        "limit": limit,
        "message": message,
        "tp": hub.accelerators.program.is_ok(),
        "no_tp": hub.accelerators.program.as_ref().err(),
    }))
}

/// Starts trace_processor on the trace of a run: `{"url"}`, the UI's URL
/// that uses it.
pub(super) async fn start(
    State(hub): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    let (trace, _) = match converted(&hub, id, true).await {
        Ok(made) => made,
        Err(r) => return r,
    };
    let worker = Arc::clone(&hub);
    let started = tokio::task::spawn_blocking(move || worker.accelerators.start(trace)).await;
    match started {
        Ok(Ok(())) => json(serde_json::json!({ "url": ui_url(&hub) })),
        Ok(Err(e)) => refused(StatusCode::UNPROCESSABLE_ENTITY, &format!("error: {e}")),
        Err(_) => refused(StatusCode::INTERNAL_SERVER_ERROR, "the work failed"),
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
