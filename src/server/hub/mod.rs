//! The hub of `serve` over HTTP: a web page of a team's runs. Every report
//! under the directories, each with its headline; one click to Perfetto;
//! the report, stats and findings pages; uploads. What is no HTTP (the
//! list, the cache, the pages, the jobs) is the hub's
//! (`crate::workflows::hub`); this answers requests with it.
//!
//! Safe by default: every request must carry the token (printed in the
//! URL; `?token=` sets this hub's cookie), as Jupyter does; no token is for
//! loopback only. A request must name this server as its Host (on loopback
//! a loopback name: no DNS rebinding), a POST must come from the server's
//! own page (its Origin and CSRF token), and no GET starts work (the
//! guard). Only the files the list holds, the cache's and the page's own
//! script are served: a URL names a report by its id in the list, never
//! by a path of the machine.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use axum::handler::Handler;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse as _, Response};
use axum::routing::{get, post, MethodRouter};
use axum::Router;

use super::guard::{self, Guard};
use super::refusal::Refusal;
use super::stack;
use crate::error::{Error, Result};
use crate::workflows::hub::accelerator::Accelerators;
use crate::workflows::hub::pages;
use crate::workflows::hub::state::{Hub, Work};
use crate::workflows::hub::Cache;
use crate::Options;

mod accelerator;
mod jobs;
mod made;
mod read;
mod trace;
mod upload;

/// What a hub serves, and how: the flags of `serve`.
#[derive(Debug)]
#[non_exhaustive]
pub struct HubSettings {
    /// The directories of runs (the upload directory among them).
    pub dirs: Vec<PathBuf>,
    /// Where uploads go.
    pub upload_dir: PathBuf,
    /// Where headlines, pages and traces are kept.
    pub cache_dir: PathBuf,
    /// The most the cache's pages and traces may take, in bytes.
    pub cache_size: u64,
    /// The options every read starts from (the nsys CLI; the cancellation
    /// flag that stops the headlines).
    pub options: Options,
    /// The token every request must carry; none only on loopback.
    pub token: Option<String>,
    /// The address to listen on, and the port (0: any free one).
    pub address: SocketAddr,
    /// The Perfetto UI traces are opened in (its URL).
    pub ui: String,
    /// The largest upload taken, in bytes.
    pub max_upload: u64,
    /// How many reports are read at once.
    pub jobs: usize,
    /// trace_processor_shell, for traces too big for a tab (none: the one
    /// on PATH).
    pub tp: Option<PathBuf>,
    /// The port trace_processor listens on.
    pub tp_port: u16,
    /// The memory a trace may need in a tab's trace_processor.
    pub tab_limit: u64,
}

impl HubSettings {
    /// The settings of a hub of `dirs` (uploads to the first), caching in
    /// `cache_dir`, on `address`, with `token`; the rest as `serve`'s
    /// defaults.
    pub fn new(
        dirs: Vec<PathBuf>,
        cache_dir: PathBuf,
        address: SocketAddr,
        token: Option<String>,
    ) -> HubSettings {
        HubSettings {
            upload_dir: dirs.first().cloned().unwrap_or_else(|| PathBuf::from(".")),
            dirs,
            cache_dir,
            cache_size: 4 << 30,
            options: Options::default(),
            token,
            address,
            ui: "https://ui.perfetto.dev".into(),
            max_upload: 8 << 30,
            jobs: 2,
            tp: None,
            tp_port: crate::workflows::serve::DEFAULT_PORT,
            tab_limit: crate::workflows::serve::BROWSER_TAB_LIMIT,
        }
    }
}

/// What every request shares: the hub, and the guard it is behind.
struct App {
    hub: Arc<Hub>,
    guard: Arc<Guard>,
}

type Shared = Arc<App>;

/// Serves the hub `settings` describe until `cancel` is set; `listening`
/// hears the address once it listens (to print its URL). Running jobs and
/// trace_processor are stopped before it returns.
pub fn serve_hub(
    settings: HubSettings,
    cancel: &Arc<AtomicBool>,
    listening: impl FnOnce(SocketAddr),
) -> Result<()> {
    let address = settings.address;
    let jobs = settings.jobs.max(1);
    let app = App::new(settings)?;
    let runtime = stack::runtime(2 * jobs + 8)?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|e| Error::Serve {
                reason: format!("cannot listen on {address}: {e}"),
            })?;
        let bound = listener.local_addr().map_err(|e| Error::Serve {
            reason: format!("cannot listen on {address}: {e}"),
        })?;
        let _ = app.guard.port.set(bound.port());
        listening(bound);
        tokio::spawn(watch(Arc::clone(&app.hub)));
        let stop = stack::raised(Arc::clone(cancel));
        stack::serve(listener, router(Arc::clone(&app)), stop, GRACE).await
    });
    app.hub.stop();
    // Reads under way stop at the cancellation flag; uploads under way lose
    // their sender and leave nothing.
    runtime.shutdown_timeout(Duration::from_secs(10));
    served
}

impl App {
    /// The hub `settings` describe, its cache opened, behind its guard.
    fn new(settings: HubSettings) -> Result<Shared> {
        if settings.token.is_none() && !settings.address.ip().is_loopback() {
            return Err(Error::Serve {
                reason: format!(
                    "no token is for a loopback address only: on {} anyone who reaches the \
                     port would read every run",
                    settings.address.ip()
                ),
            });
        }
        if settings
            .token
            .as_ref()
            .is_some_and(|t| t.len() < guard::SHORTEST_TOKEN)
        {
            return Err(Error::Serve {
                reason: format!(
                    "a token must be at least {} characters",
                    guard::SHORTEST_TOKEN
                ),
            });
        }
        let cache = Cache::open(&settings.cache_dir, settings.cache_size)?;
        let loopback = settings.address.ip().is_loopback();
        let hub = Hub {
            dirs: settings.dirs,
            upload_dir: settings.upload_dir,
            cache,
            options: settings.options,
            ui: settings.ui,
            max_upload: settings.max_upload,
            accelerators: Accelerators::new(settings.tp, settings.tp_port, settings.tab_limit),
            work: Work::new(settings.jobs),
        };
        Ok(Arc::new(App {
            hub: Arc::new(hub),
            guard: Arc::new(Guard::new(settings.token, loopback, new_token()?)),
        }))
    }
}

/// 128 random bits, in hex: a token for a hub (`--token` unless given).
pub fn new_token() -> Result<String> {
    guard::new_token()
}

/// The shortest token a hub takes.
pub const SHORTEST_TOKEN: usize = guard::SHORTEST_TOKEN;

/// The hub's routes, every one behind the guard.
fn router(app: Shared) -> Router {
    Router::new()
        .route("/", get(read::home))
        .route(pages::SCRIPT_PATH, get(read::script))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/api/config", get(read::config))
        .route("/api/reports", get(read::reports_json))
        .route("/report/{*id}", get(read::report_page))
        .route(
            "/stats/{*id}",
            get(|app, id| read::run_page(app, id, pages::write_stats)),
        )
        .route("/api/rows/{*id}", get(read::stats_rows))
        .route(
            "/findings/{*id}",
            get(|app, id| read::run_page(app, id, pages::write_findings_page)),
        )
        .route("/open/{*id}", get(read::open_page))
        .route("/compare", get(read::compare_page))
        // What starts work is a POST (a job's, bounded per client); a GET
        // gives what is made already, or a page with a button that asks.
        .route("/trace/{*id}", job(&app, trace::trace).get(trace::trace))
        .route(
            "/api/convert/{*id}",
            job(&app, jobs::follow).get(needs_post),
        )
        .route("/api/jobs", get(jobs::list))
        .route("/api/fit/{*id}", get(accelerator::fit))
        .route("/api/tp/{*id}", job(&app, accelerator::start))
        .route("/api/make/{kind}", job(&app, made::follow).get(needs_post))
        .route(
            "/made/{kind}",
            job(&app, made::download).get(made::download),
        )
        .route(
            "/upload",
            post(upload::receive).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .fallback(|| async { Refusal::new(StatusCode::NOT_FOUND, "no such page") })
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app.guard),
            guard::guard,
        ))
        .with_state(app)
}

/// A route whose POST starts a job: at most a few under way per client.
fn job<H, T>(app: &Shared, handler: H) -> MethodRouter<Shared>
where
    H: Handler<T, Shared>,
    T: 'static,
{
    post(handler).layer(axum::middleware::from_fn_with_state(
        Arc::clone(&app.guard),
        guard::one_of_the_clients_jobs,
    ))
}

/// A GET of a URL that only a POST acts on.
async fn needs_post() -> Response {
    let mut response = Refusal::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "refused: a POST from the hub's page starts this job; a GET never does",
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// How long requests under way may go on once the server is stopping.
const GRACE: Duration = Duration::from_secs(2);

/// New files get their headlines without anyone asking for the page.
async fn watch(hub: Arc<Hub>) {
    loop {
        let lister = Arc::clone(&hub);
        let _ = tokio::task::spawn_blocking(move || lister.list()).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

#[cfg(test)]
mod tests;
