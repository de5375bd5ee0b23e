//! What the hub makes of several runs, as jobs like the conversions:
//! `/api/make/compare?run=A&run=B` (both runs in one trace, as `compare A B
//! --trace` writes it), `/api/make/merge?run=...` (as `merge` writes it)
//! and `/api/make/steps?run=...&step=PATTERN` (the page `report --step
//! PATTERN` writes, under the hub's header) follow the job as server-sent
//! events; `/made/KIND?...` waits for it and sends the trace (a download)
//! or the page. Each starts the job by POST only: a GET of
//! `/made/KIND?...` sends what is made already, or a page with a button
//! that asks for it.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, Uri};
use axum::response::Response;

use super::jobs::{done, events, failed_event, made_again, OnMiss};
use super::read::ask;
use super::Shared;
use crate::server::files::{file_response, Sending};
use crate::server::refusal::Refusal;
use crate::server::url;
use crate::steps::StepPattern;
use crate::workflows::hub::bound::Pinned;
use crate::workflows::hub::catalog::{scan, Entry};
use crate::workflows::hub::jobs::Job;
use crate::workflows::hub::made::Made;
use crate::workflows::hub::state::Hub;
use crate::workflows::hub::Cache;
use crate::{Options, Progress};

/// What a query asks the hub to make of its runs.
#[derive(Clone)]
enum Making {
    /// A trace of them (`compare --trace`, `merge`).
    Trace(Made),
    /// The page of `report --step PATTERN`.
    Steps(StepPattern),
}

impl Making {
    /// Its name in URLs.
    fn name(&self) -> &'static str {
        match self {
            Making::Trace(made) => made.name(),
            Making::Steps(_) => "steps",
        }
    }

    /// How many runs it takes: exactly, or at least.
    fn runs_needed(&self) -> (usize, bool) {
        match self {
            Making::Trace(made) => made.runs_needed(),
            // As `report --step`: one report may hold several ranks.
            Making::Steps(_) => (1, false),
        }
    }

    /// The key of its job, as of the cache's file.
    fn key(&self, entries: &[Entry]) -> String {
        match self {
            Making::Trace(made) => Cache::made_key(*made, entries),
            Making::Steps(pattern) => Cache::steps_key(entries, pattern),
        }
    }

    /// What it makes of `entries`, as the jobs' list says it.
    fn what(&self, entries: &[Entry]) -> String {
        let names: Vec<&str> = entries.iter().map(|e| e.relative()).collect();
        match self {
            Making::Steps(pattern) => format!("steps '{}' of {}", pattern.text(), names.join(" ")),
            Making::Trace(made) => format!("{} {}", made.name(), names.join(" ")),
        }
    }

    /// Makes it of `entries` (once; from the cache after), held in use.
    fn make(
        &self,
        hub: &Hub,
        entries: &[Entry],
        options: &Options,
        progress: &mut dyn FnMut(Progress),
    ) -> crate::Result<Pinned> {
        match self {
            Making::Trace(made) => hub.cache.made(*made, entries, options, progress),
            Making::Steps(pattern) => hub.cache.steps_page(entries, pattern, options, progress),
        }
    }

    /// What it made of `entries` where it is made already, held in use;
    /// none where not (and nothing is made).
    fn kept(&self, hub: &Hub, entries: &[Entry]) -> Option<Pinned> {
        match self {
            Making::Trace(made) => hub.cache.kept_made(*made, entries),
            Making::Steps(pattern) => hub.cache.kept_steps_page(entries, pattern),
        }
    }

    /// How what it made is sent: a trace as a download, a page to read.
    fn sending(&self, entries: &[Entry]) -> Sending {
        match self {
            Making::Trace(made) => {
                Sending::of("application/octet-stream").download(&made.download_name(entries))
            }
            Making::Steps(_) => Sending::of("text/html; charset=utf-8"),
        }
    }
}

/// What `kind` names (with its query's `step` for steps), and the runs the
/// query names, in their order. A bad step pattern is refused with the
/// CLI's message.
async fn asked(hub: &Arc<Hub>, kind: &str, uri: &Uri) -> Result<(Making, Vec<Entry>), Refusal> {
    let query = uri.query().unwrap_or("");
    let making = match kind {
        "compare" => Making::Trace(Made::Compared),
        "merge" => Making::Trace(Made::Merged),
        "steps" => match url::query_value(query, "step") {
            None => {
                return Err(Refusal::new(
                    StatusCode::BAD_REQUEST,
                    "steps needs a step pattern: ?run=RUN&step=PATTERN",
                ))
            }
            Some(text) => match StepPattern::new(&text) {
                Ok(pattern) => Making::Steps(pattern),
                Err(e) => return Err(Refusal::new(StatusCode::BAD_REQUEST, format!("error: {e}"))),
            },
        },
        _ => return Err(Refusal::new(StatusCode::NOT_FOUND, "no such page")),
    };
    let ids = url::query_values(query, "run");
    let (count, exactly) = making.runs_needed();
    if ids.len() < count || exactly && ids.len() != count {
        let needed = match exactly {
            true => format!("{count} runs"),
            false => format!("at least {count} run"),
        };
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            format!("{} needs {needed}: ?run=RUN&run=RUN", making.name()),
        ));
    }
    let dirs = hub.dirs.clone();
    let found = tokio::task::spawn_blocking(move || {
        let (listed, _) = scan(&dirs);
        ids.iter()
            .map(|id| listed.iter().find(|e| &e.id == id).cloned())
            .collect::<Option<Vec<Entry>>>()
    })
    .await;
    match found {
        Ok(Some(entries)) => Ok((making, entries)),
        _ => Err(Refusal::no_such_report()),
    }
}

/// The job making `making` of `entries` (joined where one runs).
fn job(hub: &Arc<Hub>, making: Making, entries: Vec<Entry>) -> Arc<Job> {
    let key = making.key(&entries);
    let what = making.what(&entries);
    hub.started(&key, &what, move |hub, options, progress| {
        making.make(hub, &entries, options, progress).map(drop)
    })
}

/// Follows the job that makes it (starting it where none runs). A query
/// that can start none gets one event, a failed job's, saying why: the page
/// that follows shows it as it shows any job's error.
pub(super) async fn follow(
    State(app): State<Shared>,
    Path(kind): Path<String>,
    uri: Uri,
) -> Response {
    match asked(&app.hub, &kind, &uri).await {
        Ok((making, entries)) => events(job(&app.hub, making, entries)),
        Err(refusal) => {
            let why = refusal.why();
            failed_event(why.strip_prefix("error: ").unwrap_or(why))
        }
    }
}

/// What was made: made first where not yet, as a job, by a POST; a GET
/// sends it where it is made already, else a page with a button that asks
/// for it: a GET never starts a job. A trace is sent as a download, a
/// page to read.
pub(super) async fn download(
    State(app): State<Shared>,
    Path(kind): Path<String>,
    request: Parts,
) -> Result<Response, Refusal> {
    let uri = &request.uri;
    let (making, entries) = asked(&app.hub, &kind, uri).await?;
    let worker = Arc::clone(&app.hub);
    let (wanted, runs) = (making.clone(), entries.clone());
    let kept = tokio::task::spawn_blocking(move || wanted.kept(&worker, &runs))
        .await
        .map_err(|_| Refusal::work_failed())?;
    let held = match (kept, OnMiss::of(&request.method)) {
        (Some(held), _) => held,
        (None, OnMiss::Ask) => {
            let what = making.what(&entries);
            return Ok(ask(
                &app,
                uri,
                &what,
                &format!(
                    "Not made yet: {what}. It is made once (that takes a while), then sent; \
                     later asks are instant."
                ),
                "Make it",
            ));
        }
        (None, OnMiss::Make) => {
            let running = job(&app.hub, making.clone(), entries.clone());
            done(&running, "the job was cancelled").await?;
            let worker = Arc::clone(&app.hub);
            let (wanted, runs) = (making.clone(), entries.clone());
            made_again(move || wanted.make(&worker, &runs, &worker.options, &mut |_| {})).await?
        }
    };
    let path = held.path().to_owned();
    Ok(file_response(&path, held, making.sending(&entries)).await)
}
