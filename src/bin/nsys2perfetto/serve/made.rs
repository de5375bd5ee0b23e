//! What the hub makes of several runs, as jobs like the conversions:
//! `/api/make/compare?run=A&run=B` (both runs in one trace, as `compare A B
//! --trace` writes it), `/api/make/merge?run=...` (as `merge` writes it)
//! and `/api/make/steps?run=...&step=PATTERN` (the page `report --step
//! PATTERN` writes) follow the job as server-sent events; `/made/KIND?...`
//! waits for it and sends the trace (a download) or the page. Each starts
//! the job by POST only: a GET of `/made/KIND?...` sends what is made
//! already, or a page with a button that asks for it.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use nsys2perfetto::hub::jobs::State as JobState;
use nsys2perfetto::hub::{self, Cache, Entry, Job, Made, Pinned};
use nsys2perfetto::steps::StepPattern;
use nsys2perfetto::{Options, Progress};

use super::jobs::{ended, events, failed_event, started};
use super::{ask, file_response, refused, url, Hub, Shared};

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
    ) -> nsys2perfetto::Result<Pinned> {
        match self {
            Making::Trace(made) => hub.cache.made(*made, entries, options, progress),
            Making::Steps(pattern) => hub.cache.steps_page(entries, pattern, options, progress),
        }
    }
}

/// Why a query asks for nothing that can be made: a status and one line.
struct Refusal(StatusCode, String);

/// What `kind` names (with its query's `step` for steps), and the runs the
/// query names, in their order. A bad step pattern is refused with the
/// CLI's message.
async fn asked(
    hub: &Shared,
    kind: &str,
    uri: &axum::http::Uri,
) -> Result<(Making, Vec<Entry>), Refusal> {
    let query = uri.query().unwrap_or("");
    let making = match kind {
        "compare" => Making::Trace(Made::Compared),
        "merge" => Making::Trace(Made::Merged),
        "steps" => match url::query_value(query, "step") {
            None => {
                return Err(Refusal(
                    StatusCode::BAD_REQUEST,
                    "steps needs a step pattern: ?run=RUN&step=PATTERN".into(),
                ))
            }
            Some(text) => match StepPattern::new(&text) {
                Ok(pattern) => Making::Steps(pattern),
                Err(e) => return Err(Refusal(StatusCode::BAD_REQUEST, format!("error: {e}"))),
            },
        },
        _ => return Err(Refusal(StatusCode::NOT_FOUND, "no such page".into())),
    };
    let ids = url::query_values(query, "run");
    let (count, exactly) = making.runs_needed();
    if ids.len() < count || exactly && ids.len() != count {
        let needed = match exactly {
            true => format!("{count} runs"),
            false => format!("at least {count} run"),
        };
        return Err(Refusal(
            StatusCode::BAD_REQUEST,
            format!("{} needs {needed}: ?run=RUN&run=RUN", making.name()),
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
        Ok(Some(entries)) => Ok((making, entries)),
        _ => Err(Refusal(StatusCode::NOT_FOUND, "no such report".into())),
    }
}

/// The job making `making` of `entries` (joined where one runs).
fn job(hub: &Shared, making: Making, entries: Vec<Entry>) -> Arc<Job> {
    let key = making.key(&entries);
    let what = making.what(&entries);
    started(hub, &key, &what, move |hub, options, progress| {
        making.make(hub, &entries, options, progress).map(drop)
    })
}

/// Follows the job that makes it (starting it where none runs). A query
/// that can start none gets one event, a failed job's, saying why: the page
/// that follows shows it as it shows any job's error.
pub(super) async fn follow(
    State(hub): State<Shared>,
    axum::extract::Path(kind): axum::extract::Path<String>,
    uri: axum::http::Uri,
) -> Response {
    match asked(&hub, &kind, &uri).await {
        Ok((making, entries)) => events(job(&hub, making, entries)),
        Err(Refusal(_, why)) => failed_event(why.strip_prefix("error: ").unwrap_or(&why)),
    }
}

/// What was made, once it is: a trace as a download, a page to read.
pub(super) async fn download(
    State(hub): State<Shared>,
    axum::extract::Path(kind): axum::extract::Path<String>,
    uri: axum::http::Uri,
) -> Response {
    let (making, entries) = match asked(&hub, &kind, &uri).await {
        Ok(asked) => asked,
        Err(Refusal(status, why)) => return refused(status, &why),
    };
    let running = job(&hub, making.clone(), entries.clone());
    match ended(&running).await {
        JobState::Done => {}
        JobState::Failed { error } => {
            return refused(StatusCode::UNPROCESSABLE_ENTITY, &format!("error: {error}"))
        }
        JobState::Cancelled | JobState::Running => {
            return refused(StatusCode::SERVICE_UNAVAILABLE, "the job was cancelled")
        }
    }
    let download = match &making {
        Making::Trace(made) => made.download_name(&entries),
        Making::Steps(_) => String::new(),
    };
    let worker = Arc::clone(&hub);
    let wanted = making.clone();
    let kept = tokio::task::spawn_blocking(move || {
        wanted.make(&worker, &entries, &worker.options, &mut |_| {})
    })
    .await;
    match (kept, making) {
        (Ok(Ok(page)), Making::Steps(_)) => {
            file_response(page, "text/html; charset=utf-8", None).await
        }
        (Ok(Ok(trace)), Making::Trace(_)) => {
            file_response(trace, "application/octet-stream", Some(&download)).await
        }
        (Ok(Err(e)), _) => refused(StatusCode::UNPROCESSABLE_ENTITY, &format!("error: {e}")),
        (Err(_), _) => refused(StatusCode::INTERNAL_SERVER_ERROR, "the work failed"),
    }
}

/// A GET of what is made: sent where it is made already (as `download`
/// sends it), else a page with a button that asks for it: a GET never
/// starts a job.
pub(super) async fn download_if_made(
    State(hub): State<Shared>,
    axum::extract::Path(kind): axum::extract::Path<String>,
    uri: axum::http::Uri,
) -> Response {
    let (making, entries) = match asked(&hub, &kind, &uri).await {
        Ok(asked) => asked,
        Err(Refusal(status, why)) => return refused(status, &why),
    };
    let what = making.what(&entries);
    let worker = Arc::clone(&hub);
    let kept = tokio::task::spawn_blocking(move || {
        worker
            .cache
            .kept(|_| making.make(&worker, &entries, &worker.options, &mut |_| {}))
    })
    .await;
    match kept {
        Ok(Some(held)) => {
            let sent = download(State(hub), axum::extract::Path(kind), uri).await;
            drop(held);
            sent
        }
        _ => ask(
            &hub,
            &uri,
            &what,
            &format!(
                "Not made yet: {what}. It is made once (that takes a while), then sent; later \
                 asks are instant."
            ),
            "Make it",
        ),
    }
}
