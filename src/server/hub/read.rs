//! The hub's pages and lists, read from the hub as they are asked for: the
//! home page and its script, the list as JSON, and per run its report,
//! stats, findings and open pages, two runs compared. Reads of reports run
//! on blocking threads, `-j` at a time with the other reads a user waits
//! for; none starts a job.

use std::io::Write;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use super::{App, Shared};
use crate::analysis::stats::StatsReport;
use crate::server::files::{file_response, Sending};
use crate::server::refusal::Refusal;
use crate::server::url;
use crate::workflows::hub::catalog::{scan, Entry};
use crate::workflows::hub::pages;
use crate::workflows::hub::readable::Readable;
use crate::workflows::hub::state::{trimmed, Hub};
use crate::Options;

pub(super) async fn home(State(app): State<Shared>) -> Result<Response, Refusal> {
    let lister = Arc::clone(&app.hub);
    let page = tokio::task::spawn_blocking(move || {
        let (reports, unreadable) = lister.list();
        let mut out = Vec::new();
        let home = pages::Home {
            reports: &reports,
            upload_dir: &lister.upload_dir,
            dirs: &lister.dirs,
            unreadable: &unreadable,
        };
        pages::write_home(&mut out, &home).map(|()| out)
    })
    .await;
    match page {
        Ok(Ok(page)) => Ok(html(page)),
        _ => Err(Refusal::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the page could not be made",
        )),
    }
}

pub(super) async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        pages::SCRIPT,
    )
        .into_response()
}

/// What the page's script needs: the UI, and the CSRF token its POSTs
/// carry (another site's page cannot read it).
pub(super) async fn config(State(app): State<Shared>) -> Response {
    let body = serde_json::json!({ "ui": app.hub.ui, "csrf": app.guard.csrf }).to_string();
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

pub(super) async fn reports_json(State(app): State<Shared>) -> Result<Response, Refusal> {
    let lister = Arc::clone(&app.hub);
    let Ok((reports, _)) = tokio::task::spawn_blocking(move || lister.list()).await else {
        return Err(Refusal::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the list could not be made",
        ));
    };
    let list: Vec<serde_json::Value> = reports
        .iter()
        .map(|(entry, headline)| {
            serde_json::json!({
                "id": entry.id,
                "path": entry.relative(),
                "size": entry.size,
                "modified_ns": entry.modified_ns.to_string(),
                "headline": headline,
            })
        })
        .collect();
    let body = serde_json::Value::Array(list).to_string();
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// Runs `work` on a blocking thread, `-j` at a time with the other reads a
/// user waits for: none where it found no report, else what it made (an
/// error in the CLI's words).
pub(super) async fn read<T: Send + 'static>(
    hub: &Arc<Hub>,
    work: impl FnOnce(&Hub) -> Option<crate::Result<T>> + Send + 'static,
) -> Result<T, Refusal> {
    let Ok(_permit) = hub.work.foreground.clone().acquire_owned().await else {
        return Err(Refusal::stopping());
    };
    let worker = Arc::clone(hub);
    let done = tokio::task::spawn_blocking(move || trimmed(|| work(&worker))).await;
    match done {
        Ok(Some(Ok(value))) => Ok(value),
        Ok(None) => Err(Refusal::no_such_report()),
        Ok(Some(Err(e))) => Err(Refusal::failed(e)),
        Err(_) => Err(Refusal::work_failed()),
    }
}

/// Runs `work` on the entry of `id` as [`read`] runs it; a report not in
/// the list is 404.
async fn with_entry<T: Send + 'static>(
    hub: &Arc<Hub>,
    id: String,
    work: impl FnOnce(&Hub, &Entry) -> crate::Result<T> + Send + 'static,
) -> Result<T, Refusal> {
    read(hub, move |hub| hub.find(&id).map(|entry| work(hub, &entry))).await
}

/// What `write` makes of the run `id`, read through its handle (the
/// cache's [`readable`](crate::workflows::hub::Cache::readable)): a page's
/// or a table's bytes.
async fn written_of_run(
    hub: &Arc<Hub>,
    id: String,
    write: impl FnOnce(&mut Vec<u8>, &Readable, &Options) -> crate::Result<()> + Send + 'static,
) -> Result<Vec<u8>, Refusal> {
    with_entry(hub, id, move |hub, entry| {
        let mut out = Vec::new();
        let run = hub.cache.readable(entry, &hub.options)?;
        write(&mut out, &run, &hub.options).map(|()| out)
    })
    .await
}

pub(super) async fn report_page(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> Result<Response, Refusal> {
    let page = with_entry(&app.hub, id, |hub, entry| {
        hub.cache.report_page(entry, &hub.options)
    })
    .await?;
    let path = page.path().to_owned();
    Ok(file_response(&path, page, Sending::of("text/html; charset=utf-8")).await)
}

/// A page of the run of the path (`/stats/RUN`, `/findings/RUN`): what
/// `write` makes of it.
pub(super) async fn run_page(
    State(app): State<Shared>,
    Path(id): Path<String>,
    write: fn(&mut dyn Write, &Readable, &Options) -> crate::Result<()>,
) -> Result<Response, Refusal> {
    let page = written_of_run(&app.hub, id, move |out, run, options| {
        write(out, run, options)
    })
    .await?;
    Ok(html(page))
}

/// Every row of one summary of a stats page (`?summary=nvtx_sum`), as
/// JSON: what its table script filters, sorts and shows all of.
pub(super) async fn stats_rows(
    State(app): State<Shared>,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Response, Refusal> {
    let asked = url::query_value(uri.query().unwrap_or(""), "summary");
    let Some(report) = asked.and_then(|s| s.parse::<StatsReport>().ok()) else {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "which summary? ?summary=NAME",
        ));
    };
    let rows = written_of_run(&app.hub, id, move |out, run, options| {
        pages::write_stats_rows(out, run, report, options)
    })
    .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        rows,
    )
        .into_response())
}

pub(super) async fn open_page(
    State(app): State<Shared>,
    Path(id): Path<String>,
) -> Result<Response, Refusal> {
    let page = with_entry(&app.hub, id, |_, entry| {
        let mut out = Vec::new();
        pages::write_open(&mut out, entry)
            .map(|()| out)
            .map_err(|cause| crate::Error::Writer { cause })
    })
    .await?;
    Ok(html(page))
}

/// Two runs compared: `?a=ID&b=ID`.
pub(super) async fn compare_page(State(app): State<Shared>, uri: Uri) -> Result<Response, Refusal> {
    let query = uri.query().unwrap_or("");
    let (Some(a), Some(b)) = (url::query_value(query, "a"), url::query_value(query, "b")) else {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "compare needs two runs: ?a=RUN&b=RUN",
        ));
    };
    let page = read(&app.hub, move |hub| {
        let (listed, _) = scan(&hub.dirs);
        let find = |id: &str| listed.iter().find(|e| e.id == id);
        let (a, b) = (find(&a)?, find(&b)?);
        let mut out = Vec::new();
        let written = hub.cache.readable(a, &hub.options).and_then(|a| {
            let b = hub.cache.readable(b, &hub.options)?;
            pages::write_compare(&mut out, &a, &b, &hub.options)
        });
        Some(written.map(|()| out))
    })
    .await?;
    Ok(html(page))
}

/// The page a GET of a job's URL gets where what it makes is not made yet:
/// `what` it would make, and a button that asks for it by POST.
pub(super) fn ask(app: &App, uri: &Uri, title: &str, what: &str, button: &str) -> Response {
    let action = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
    let mut out = Vec::new();
    match pages::write_ask(&mut out, title, what, action, &app.guard.csrf, button) {
        Ok(()) => html(out),
        Err(_) => Refusal::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the page could not be made",
        )
        .into_response(),
    }
}

/// An HTML page.
pub(super) fn html(body: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}
