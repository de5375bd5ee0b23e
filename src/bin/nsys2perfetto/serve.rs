//! `serve`: the hub, a web page of a team's runs. Every report under the
//! directories, each with its headline; one click to Perfetto; the report,
//! stats and findings pages; uploads. The HTTP stack is axum on tokio; what
//! is no HTTP (the list, the cache, the pages) is the library's
//! (`nsys2perfetto::hub`).
//!
//! Safe by default: it listens on 127.0.0.1, and every request must carry
//! the token (printed in the URL; `?token=` sets this hub's cookie), as
//! Jupyter does; `--no-token` is for loopback only. A request must name
//! this server as its Host (on loopback a loopback name: no DNS
//! rebinding), a POST must come from the server's own page (its Origin and
//! CSRF token), and no GET starts work ([`guard`]). Only the files the list
//! holds, the cache's and the page's own script are served: a URL names a
//! report by its id in the list, never by a path of the machine.

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Context as _};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::handler::Handler;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, MethodRouter};
use axum::Router;
use http_body_util::BodyExt as _;
use nsys2perfetto::hub::jobs::State as JobState;
use nsys2perfetto::hub::{self, pages, upload, Cache, CacheKey, Entry, Headline, Jobs, Pinned};
use nsys2perfetto::stats::StatsReport;
use nsys2perfetto::Options;
use tokio::sync::Semaphore;

use crate::signals::Signals;
use crate::Usage;

mod accelerator;
mod guard;
mod jobs;
mod made;

/// Serve a web page of the runs under DIRs: their headlines, each opened in
/// Perfetto in one click, their report, stats and findings pages, and
/// uploads by drag and drop.
///
/// It listens on 127.0.0.1 unless --bind says otherwise; reach it from a
/// laptop through `ssh -L` (the line is printed). Every request needs the
/// token (generated unless --token, printed in the URL).
#[derive(clap::Args)]
pub struct Args {
    /// The directories of runs (default: the current one): every export and
    /// report below them, as `convert DIR` finds them.
    #[arg(value_name = "DIR")]
    dirs: Vec<PathBuf>,

    /// The port (0: any free one).
    #[arg(long, default_value_t = 8765)]
    port: u16,

    /// The address to listen on.
    #[arg(long, value_name = "ADDR", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,

    /// The token every request must carry (`?token=`, which sets a cookie,
    /// or the header `Authorization: Bearer TOKEN`): at least 16 letters,
    /// digits, '-', '.', '_' or '~'; generated (128 random bits) unless
    /// given.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,

    /// No token: any user of this machine can then read every run and
    /// upload files as you. Only with a loopback --bind.
    #[arg(long, conflicts_with = "token")]
    no_token: bool,

    /// The Perfetto UI to open traces in (a self-hosted one, say).
    #[arg(long, value_name = "URL", default_value = "https://ui.perfetto.dev")]
    ui: String,

    /// How many reports are read at once (headlines, conversions).
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value_t = 2)]
    jobs: usize,

    /// Where headlines, pages and traces are kept (default:
    /// $XDG_CACHE_HOME/nsys2perfetto/hub, or ~/.cache/nsys2perfetto/hub).
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,

    /// The most the cache's pages and traces may take: past it, the least
    /// recently used are removed (never one being made or sent), and made
    /// again when asked for. Bytes, or with a unit, as --max-upload.
    #[arg(long, value_name = "SIZE", default_value = "4GiB", value_parser = parse_size)]
    cache_size: u64,

    /// Where uploads go (default: the first DIR).
    #[arg(long, value_name = "DIR")]
    upload_dir: Option<PathBuf>,

    /// The largest upload taken: bytes, or with a unit (K, M, G, KiB, MiB,
    /// GiB).
    #[arg(long, value_name = "SIZE", default_value = "8GiB", value_parser = parse_size)]
    max_upload: u64,

    /// The nsys CLI used to export .nsys-rep/.qdrep reports.
    #[arg(long, value_name = "PATH", default_value = "nsys")]
    nsys: PathBuf,

    /// trace_processor_shell, offered for traces too big for a browser tab
    /// as the UI's accelerator, as `open --tp` uses it (default:
    /// trace_processor_shell, then trace_processor, on PATH).
    #[arg(long, value_name = "PATH")]
    tp: Option<PathBuf>,

    /// The port of 127.0.0.1 trace_processor listens on. The UI looks for
    /// it on 9001; on another port only with its flag "Relax Content
    /// Security Policy for 127.0.0.1:*" on.
    #[arg(long, value_name = "PORT", default_value_t = nsys2perfetto::serve::DEFAULT_PORT)]
    tp_port: u16,

    /// The memory a trace may need in a browser tab's trace_processor
    /// (bytes, or with a unit); past it, the page offers trace_processor.
    /// For tests: the tab's real limit is the default.
    #[arg(long, value_name = "SIZE", hide = true, value_parser = parse_size,
          default_value_t = crate::tab_memory::BROWSER_TAB_LIMIT)]
    tab_limit: u64,

    /// Only the URL, the `ssh -L` line and errors: no note of what is served.
    #[arg(short, long)]
    quiet: bool,
}

/// A size: bytes, or with a unit (K, M, G: powers of 1024, as KiB...).
fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is no size (say 500M or 8GiB)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("{text:?}: unknown unit (K, M, G, T)")),
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// What every request shares.
struct Hub {
    dirs: Vec<PathBuf>,
    upload_dir: PathBuf,
    cache: Cache,
    options: Options,
    /// What every request is checked against.
    guard: guard::Guard,
    ui: String,
    max_upload: u64,
    /// Headlines known, by key.
    headlines: Mutex<HashMap<CacheKey, Headline>>,
    /// Headlines queued or being computed.
    queued: Mutex<HashSet<CacheKey>>,
    /// Reads in the background (headlines), `-j` at a time.
    background: Arc<Semaphore>,
    /// Reads a user waits for (conversions, pages), `-j` at a time.
    foreground: Arc<Semaphore>,
    /// Conversions a user waits for.
    jobs: Jobs,
    /// trace_processor, for traces too big for a tab.
    accelerators: accelerator::Accelerators,
}

type Shared = Arc<Hub>;

pub fn run(args: Args, signals: &Signals) -> anyhow::Result<std::process::ExitCode> {
    let mut dirs = match args.dirs.is_empty() {
        true => vec![PathBuf::from(".")],
        false => args.dirs,
    };
    for dir in &dirs {
        if let Err(cause) = std::fs::metadata(dir) {
            return Err(nsys2perfetto::Error::Unreadable {
                path: dir.clone(),
                cause,
            }
            .into());
        }
        if !dir.is_dir() {
            return Err(Usage(format!("{} is not a directory", dir.display())).into());
        }
    }
    let upload_dir = args.upload_dir.unwrap_or_else(|| dirs[0].clone());
    if !upload_dir.is_dir() {
        return Err(Usage(format!(
            "--upload-dir {} is not a directory",
            upload_dir.display()
        ))
        .into());
    }
    if !dirs.contains(&upload_dir) {
        dirs.push(upload_dir.clone());
    }
    if url::parse_origin(&args.ui).is_none() {
        return Err(Usage(format!("--ui {}: not an http(s) URL", args.ui)).into());
    }
    let loopback = args.bind.is_loopback();
    let token = match (args.token, args.no_token) {
        // As it goes in the printed URL and in a cookie, unencoded.
        (Some(t), _)
            if !t
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b)) =>
        {
            return Err(
                Usage("--token must be letters, digits, '-', '.', '_' or '~'".into()).into(),
            )
        }
        (Some(t), _) if t.len() < guard::SHORTEST_TOKEN => {
            return Err(Usage(format!(
                "--token must be at least {} characters (say nothing to have one made)",
                guard::SHORTEST_TOKEN
            ))
            .into())
        }
        (Some(t), _) => Some(t),
        (None, true) if !loopback => {
            return Err(Usage(format!(
                "--no-token is for a loopback --bind only: on {} anyone who reaches the port \
                 would read every run",
                args.bind
            ))
            .into())
        }
        (None, true) => {
            crate::warn(
                "--no-token: any user of this machine can read every run, download its traces \
                 and upload files as you",
            );
            None
        }
        (None, false) => Some(new_token()?),
    };
    let cache_dir = match args.cache {
        Some(dir) => dir,
        None => default_cache()?,
    };
    let cache = Cache::open(&cache_dir, args.cache_size)?;
    let mut options = Options::default();
    options.nsys = args.nsys;
    // Each job has its flag of its own (cancelled when no one waits for it,
    // or when the server stops); the headlines have the program's.
    options.cancel = Some(Arc::clone(&signals.cancel));
    let jobs = args.jobs.max(1);
    let hub = Arc::new(Hub {
        dirs,
        upload_dir,
        cache,
        options,
        guard: guard::Guard::new(token, loopback, new_token()?),
        ui: args.ui,
        max_upload: args.max_upload,
        headlines: Mutex::new(HashMap::new()),
        queued: Mutex::new(HashSet::new()),
        background: Arc::new(Semaphore::new(jobs)),
        foreground: Arc::new(Semaphore::new(jobs)),
        jobs: Jobs::default(),
        accelerators: accelerator::Accelerators::new(args.tp, args.tp_port, args.tab_limit),
    });
    let runtime = crate::http::runtime(2 * jobs + 8)?;
    let cancel = Arc::clone(&signals.cancel);
    let served = runtime.block_on(serve(
        Arc::clone(&hub),
        (args.bind, args.port),
        args.quiet,
        cancel,
    ));
    hub.jobs.cancel_all();
    hub.accelerators.stop();
    served?;
    // Reads under way stop at the cancellation flag; uploads under way lose
    // their sender and leave nothing.
    runtime.shutdown_timeout(Duration::from_secs(10));
    Err(crate::Interrupted("serve stopped".into()).into())
}

async fn serve(
    hub: Shared,
    (bind, port): (IpAddr, u16),
    quiet: bool,
    cancel: Arc<std::sync::atomic::AtomicBool>,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(bind, port))
        .await
        .with_context(|| format!("cannot listen on {}", SocketAddr::new(bind, port)))?;
    let address = listener.local_addr()?;
    let _ = hub.guard.port.set(address.port());
    announce(&hub, address, quiet);
    tokio::spawn(watch(Arc::clone(&hub)));
    let app = Router::new()
        .route("/", get(home))
        .route(pages::SCRIPT_PATH, get(script))
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/api/config", get(config))
        .route("/api/reports", get(reports_json))
        .route("/report/{*id}", get(report_page))
        .route("/stats/{*id}", get(stats_page))
        .route("/api/rows/{*id}", get(stats_rows))
        .route("/findings/{*id}", get(findings_page))
        .route("/open/{*id}", get(open_page))
        .route("/compare", get(compare_page))
        // What starts work is a POST (a job's, bounded per client); a GET
        // gives what is made already, or a page with a button that asks.
        .route("/trace/{*id}", job(&hub, trace).get(trace_if_made))
        .route(
            "/api/convert/{*id}",
            job(&hub, jobs::follow).get(needs_post),
        )
        .route("/api/jobs", get(jobs::list))
        .route("/api/fit/{*id}", get(accelerator::fit))
        .route("/api/tp/{*id}", job(&hub, accelerator::start))
        .route("/api/make/{kind}", job(&hub, made::follow).get(needs_post))
        .route(
            "/made/{kind}",
            job(&hub, made::download).get(made::download_if_made),
        )
        .route(
            "/upload",
            post(receive).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .fallback(|| async { refused(StatusCode::NOT_FOUND, "no such page") })
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&hub),
            guard::guard,
        ))
        .with_state(hub);
    crate::http::serve(listener, app, crate::http::raised(cancel), GRACE).await
}

/// A route whose POST starts a job: at most a few under way per client.
fn job<H, T>(hub: &Shared, handler: H) -> MethodRouter<Shared>
where
    H: Handler<T, Shared>,
    T: 'static,
{
    post(handler).layer(axum::middleware::from_fn_with_state(
        Arc::clone(hub),
        guard::one_of_the_clients_jobs,
    ))
}

/// A GET of a URL that only a POST acts on.
async fn needs_post() -> Response {
    let mut response = refused(
        StatusCode::METHOD_NOT_ALLOWED,
        "refused: a POST from the hub's page starts this job; a GET never does",
    );
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    response
}

/// How long requests under way may go on once the server is stopping.
const GRACE: Duration = Duration::from_secs(2);

/// Prints where to open the page, and how to reach it from a laptop.
fn announce(hub: &Hub, address: SocketAddr, quiet: bool) {
    let port = address.port();
    let shown = match address.ip() {
        IpAddr::V6(ip) => format!("[{ip}]"),
        IpAddr::V4(ip) if ip.is_unspecified() => host_name(),
        IpAddr::V4(ip) => ip.to_string(),
    };
    let query = hub
        .guard
        .token
        .as_ref()
        .map(|t| format!("?token={t}"))
        .unwrap_or_default();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "http://{shown}:{port}/{query}");
    if address.ip().is_loopback() {
        let _ = writeln!(
            out,
            "from a laptop: ssh -N -L {port}:127.0.0.1:{port} {}, then open http://localhost:{port}/{query}",
            host_name()
        );
    }
    let _ = out.flush();
    if quiet {
        return;
    }
    let dirs: Vec<String> = hub.dirs.iter().map(|d| d.display().to_string()).collect();
    crate::note(format_args!(
        "serving the reports under {}; cache in {} (at most {}); Ctrl-C stops",
        dirs.join(", "),
        hub.cache.dir().display(),
        pages::human_bytes(hub.cache.limit())
    ));
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "THIS-MACHINE".to_owned())
}

/// 128 random bits, in hex.
pub(super) fn new_token() -> anyhow::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot make a token (no /dev/urandom): give one with --token")?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn default_cache() -> anyhow::Result<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .ok_or_else(|| {
            anyhow!("no cache directory (neither XDG_CACHE_HOME nor HOME): give --cache")
        })?;
    Ok(base.join("nsys2perfetto").join("hub"))
}

/// A refusal: its status and one line saying why, as text.
fn refused(status: StatusCode, why: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{why}\n"),
    )
        .into_response()
}

/// The page a GET of a job's URL gets where what it makes is not made yet:
/// `what` it would make, and a button that asks for it by POST.
fn ask(hub: &Hub, uri: &axum::http::Uri, title: &str, what: &str, button: &str) -> Response {
    let action = uri.path_and_query().map_or(uri.path(), |p| p.as_str());
    let mut out = Vec::new();
    match pages::write_ask(&mut out, title, what, action, &hub.guard.csrf, button) {
        Ok(()) => html(out),
        Err(_) => refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the page could not be made",
        ),
    }
}

/// An HTML page.
fn html(body: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

impl Hub {
    /// The reports now, each with its headline where known; the headlines
    /// missing are queued.
    fn list(self: &Arc<Self>) -> (Vec<(Entry, Option<Headline>)>, Vec<String>) {
        let (entries, failed) = hub::scan(&self.dirs);
        let mut listed = Vec::with_capacity(entries.len());
        for entry in entries {
            let key = CacheKey::of(&entry);
            let known = self.known(&key, &entry);
            if known.is_none() {
                self.queue(key, &entry);
            }
            listed.push((entry, known));
        }
        let failed = failed
            .into_iter()
            .map(|(dir, e)| format!("{} cannot be read: {e}", dir.display()))
            .collect();
        (listed, failed)
    }

    fn known(&self, key: &CacheKey, entry: &Entry) -> Option<Headline> {
        let mut known = self.headlines.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = known.get(key) {
            return Some(h.clone());
        }
        let found = self.cache.headline(entry)?;
        known.insert(key.clone(), found.clone());
        Some(found)
    }

    /// Computes the headline of `entry` in the background, `-j` at a time.
    fn queue(self: &Arc<Self>, key: CacheKey, entry: &Entry) {
        if !self
            .queued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone())
        {
            return;
        }
        let hub = Arc::clone(self);
        let entry = entry.clone();
        tokio::spawn(async move {
            let Ok(_permit) = hub.background.clone().acquire_owned().await else {
                return;
            };
            let worker = Arc::clone(&hub);
            let entry2 = entry.clone();
            let computed = tokio::task::spawn_blocking(move || {
                trimmed(|| worker.cache.compute_headline(&entry2, &worker.options))
            })
            .await;
            if let Ok(Ok(headline)) = computed {
                hub.headlines
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key.clone(), headline);
            }
            hub.queued
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key);
        });
    }

    /// The report of id `id`, if the list holds it now.
    fn find(&self, id: &str) -> Option<Entry> {
        hub::scan(&self.dirs).0.into_iter().find(|e| e.id == id)
    }
}

/// Runs `read` (a report read: a page, a headline, a trace), then gives
/// the memory it freed back to the system. glibc keeps what a thread frees
/// in that thread's arena, so every thread of the blocking pool would keep
/// the peak of the largest read it ever ran: measured, 160 MiB after 36
/// stats pages of a 2 MiB export on 7 threads, against 57 MiB for one.
fn trimmed<T>(read: impl FnOnce() -> T) -> T {
    let done = read();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator's.
    unsafe {
        libc::malloc_trim(0);
    }
    done
}

/// New files get their headlines without anyone asking for the page.
async fn watch(hub: Shared) {
    loop {
        let lister = Arc::clone(&hub);
        let _ = tokio::task::spawn_blocking(move || lister.list()).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

async fn home(State(hub): State<Shared>) -> Response {
    let lister = Arc::clone(&hub);
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
        Ok(Ok(page)) => html(page),
        _ => refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the page could not be made",
        ),
    }
}

async fn script() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        pages::SCRIPT,
    )
        .into_response()
}

/// What the page's script needs: the UI, and the CSRF token its POSTs
/// carry (another site's page cannot read it).
async fn config(State(hub): State<Shared>) -> Response {
    let body = serde_json::json!({ "ui": hub.ui, "csrf": hub.guard.csrf }).to_string();
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn reports_json(State(hub): State<Shared>) -> Response {
    let lister = Arc::clone(&hub);
    let Ok((reports, _)) = tokio::task::spawn_blocking(move || lister.list()).await else {
        return refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the list could not be made",
        );
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
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Runs `work` on the entry of `id` on a blocking thread, `-j` at a time
/// with the other reads a user waits for; a report not in the list is 404.
async fn with_entry<T: Send + 'static>(
    hub: &Shared,
    id: &str,
    work: impl FnOnce(&Hub, &Entry) -> nsys2perfetto::Result<T> + Send + 'static,
) -> Result<T, Response> {
    let Ok(_permit) = hub.foreground.clone().acquire_owned().await else {
        return Err(refused(StatusCode::SERVICE_UNAVAILABLE, "stopping"));
    };
    let worker = Arc::clone(hub);
    let id = id.to_owned();
    let done = tokio::task::spawn_blocking(move || {
        let Some(entry) = worker.find(&id) else {
            return Err(None);
        };
        trimmed(|| work(&worker, &entry)).map_err(|e| Some(e.to_string()))
    })
    .await;
    match done {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(None)) => Err(refused(StatusCode::NOT_FOUND, "no such report")),
        Ok(Err(Some(why))) => Err(refused(
            StatusCode::UNPROCESSABLE_ENTITY,
            &format!("error: {why}"),
        )),
        Err(_) => Err(refused(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the work failed",
        )),
    }
}

async fn report_page(
    State(hub): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    match with_entry(&hub, &id, |hub, entry| {
        hub.cache.report_page(entry, &hub.options)
    })
    .await
    {
        Ok(page) => file_response(page, "text/html; charset=utf-8", None).await,
        Err(r) => r,
    }
}

async fn stats_page(
    State(hub): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    match with_entry(&hub, &id, |hub, entry| {
        let mut out = Vec::new();
        let run = hub.cache.readable(entry, &hub.options)?;
        pages::write_stats(&mut out, &run, &hub.options).map(|()| out)
    })
    .await
    {
        Ok(page) => html(page),
        Err(r) => r,
    }
}

/// Every row of one summary of a stats page (`?summary=nvtx_sum`), as
/// JSON: what its table script filters, sorts and shows all of.
async fn stats_rows(
    State(hub): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
    uri: axum::http::Uri,
) -> Response {
    let asked = url::query_value(uri.query().unwrap_or(""), "summary");
    let Some(report) = asked.and_then(|s| s.parse::<StatsReport>().ok()) else {
        return refused(StatusCode::BAD_REQUEST, "which summary? ?summary=NAME");
    };
    match with_entry(&hub, &id, move |hub, entry| {
        let mut out = Vec::new();
        let run = hub.cache.readable(entry, &hub.options)?;
        pages::write_stats_rows(&mut out, &run, report, &hub.options).map(|()| out)
    })
    .await
    {
        Ok(rows) => (
            [
                (header::CONTENT_TYPE, "application/json"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            rows,
        )
            .into_response(),
        Err(r) => r,
    }
}

async fn findings_page(
    State(hub): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    match with_entry(&hub, &id, |hub, entry| {
        let mut out = Vec::new();
        let run = hub.cache.readable(entry, &hub.options)?;
        pages::write_findings_page(&mut out, &run, &hub.options).map(|()| out)
    })
    .await
    {
        Ok(page) => html(page),
        Err(r) => r,
    }
}

async fn open_page(
    State(hub): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    match with_entry(&hub, &id, |_, entry| {
        let mut out = Vec::new();
        pages::write_open(&mut out, entry)
            .map(|()| out)
            .map_err(|cause| nsys2perfetto::Error::Writer { cause })
    })
    .await
    {
        Ok(page) => html(page),
        Err(r) => r,
    }
}

/// Two runs compared: `?a=ID&b=ID`.
async fn compare_page(State(hub): State<Shared>, uri: axum::http::Uri) -> Response {
    let query = uri.query().unwrap_or("");
    let (Some(a), Some(b)) = (url::query_value(query, "a"), url::query_value(query, "b")) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "compare needs two runs: ?a=RUN&b=RUN",
        );
    };
    let Ok(_permit) = hub.foreground.clone().acquire_owned().await else {
        return refused(StatusCode::SERVICE_UNAVAILABLE, "stopping");
    };
    let worker = Arc::clone(&hub);
    let done = tokio::task::spawn_blocking(move || {
        let (listed, _) = hub::scan(&worker.dirs);
        let find = |id: &str| listed.iter().find(|e| e.id == id);
        let (Some(a), Some(b)) = (find(&a), find(&b)) else {
            return Err(None);
        };
        let mut out = Vec::new();
        trimmed(|| {
            let a = worker.cache.readable(a, &worker.options)?;
            let b = worker.cache.readable(b, &worker.options)?;
            pages::write_compare(&mut out, &a, &b, &worker.options)
        })
        .map(|()| out)
        .map_err(|e| Some(e.to_string()))
    })
    .await;
    match done {
        Ok(Ok(page)) => html(page),
        Ok(Err(None)) => refused(StatusCode::NOT_FOUND, "no such report"),
        Ok(Err(Some(why))) => refused(StatusCode::UNPROCESSABLE_ENTITY, &format!("error: {why}")),
        Err(_) => refused(StatusCode::INTERNAL_SERVER_ERROR, "the work failed"),
    }
}

/// The trace of a report, converted once (`?format=json`: Chrome's JSON,
/// gzipped), sent as a download. Its conversion is a job (followed at
/// `/api/convert/RUN`): a client that goes while it runs cancels it if no
/// one else waits.
async fn trace(
    State(hub): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
    uri: axum::http::Uri,
) -> Response {
    let json = jobs::wants_json(&uri);
    let entry = match jobs::entry_of(&hub, id).await {
        Ok(entry) => entry,
        Err(r) => return r,
    };
    let job = jobs::conversion(&hub, entry.clone(), json);
    match jobs::ended(&job).await {
        JobState::Done => {}
        JobState::Failed { error } => {
            return refused(StatusCode::UNPROCESSABLE_ENTITY, &format!("error: {error}"))
        }
        JobState::Cancelled | JobState::Running => {
            return refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "the conversion was cancelled",
            )
        }
    }
    let worker = Arc::clone(&hub);
    // Made: from the cache (made again only where evicted meanwhile).
    let kept = tokio::task::spawn_blocking(move || {
        let trace = worker
            .cache
            .trace(&entry, &worker.trace_options(json), &mut |_| {})?;
        let ext = trace
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.split_once(".trace."))
            .map_or("perfetto-trace", |(_, ext)| ext)
            .to_owned();
        Ok::<_, nsys2perfetto::Error>((trace, format!("{}.{ext}", entry.stem())))
    })
    .await;
    match kept {
        Ok(Ok((trace, name))) => {
            file_response(trace, "application/octet-stream", Some(&name)).await
        }
        Ok(Err(e)) => refused(StatusCode::UNPROCESSABLE_ENTITY, &format!("error: {e}")),
        Err(_) => refused(StatusCode::INTERNAL_SERVER_ERROR, "the work failed"),
    }
}

/// A GET of a trace: the trace where it is made already (sent as `trace`
/// sends it), else a page with a button that asks for it: a GET never
/// starts a conversion.
async fn trace_if_made(
    State(hub): State<Shared>,
    axum::extract::Path(id): axum::extract::Path<String>,
    uri: axum::http::Uri,
) -> Response {
    let json = jobs::wants_json(&uri);
    let entry = match jobs::entry_of(&hub, id.clone()).await {
        Ok(entry) => entry,
        Err(r) => return r,
    };
    let worker = Arc::clone(&hub);
    let looked = entry.clone();
    let kept = tokio::task::spawn_blocking(move || {
        let options = worker.trace_options(json);
        worker
            .cache
            .kept(|cache| cache.trace(&looked, &options, &mut |_| {}))
    })
    .await;
    match kept {
        Ok(Some(held)) => {
            let sent = trace(State(hub), axum::extract::Path(id), uri).await;
            drop(held);
            sent
        }
        _ => ask(
            &hub,
            &uri,
            &format!("Download {}", entry.relative()),
            &format!(
                "The trace of {} is not made yet: it is converted once (that takes a while), \
                 then downloaded; later downloads are instant.",
                entry.relative()
            ),
            "Convert and download",
        ),
    }
}

/// A file of the cache, streamed; held in use (never evicted) until its
/// last byte is sent or the client goes.
async fn file_response(file: Pinned, kind: &'static str, download: Option<&str>) -> Response {
    let opened = match tokio::fs::File::open(file.path()).await {
        Ok(opened) => opened,
        Err(e) => return refused(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    };
    let size = opened.metadata().await.map(|m| m.len()).ok();
    let stream = futures_util::stream::unfold((opened, file), |(mut opened, file)| async move {
        use tokio::io::AsyncReadExt;
        let mut buffer = vec![0u8; 256 * 1024];
        match opened.read(&mut buffer).await {
            Ok(0) => None,
            Ok(n) => {
                buffer.truncate(n);
                Some((Ok::<_, std::io::Error>(buffer), (opened, file)))
            }
            Err(e) => Some((Err(e), (opened, file))),
        }
    });
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    if let Some(size) = size {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    }
    if let Some(name) = download {
        let ascii: String = name
            .chars()
            .map(|c| match c.is_ascii_graphic() && c != '"' && c != '\\' {
                true => c,
                false => '_',
            })
            .collect();
        if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{ascii}\"")) {
            headers.insert(header::CONTENT_DISPOSITION, value);
        }
    }
    response
}

/// A piece of an upload, as the blocking writer hears of it.
enum Piece {
    Data(Vec<u8>),
    Broken(String),
    End,
}

/// An upload: the body of the POST, streamed into a file of the upload
/// directory (`?name=` its name) that appears only when all came.
async fn receive(State(hub): State<Shared>, request: Request) -> Response {
    let name = url::query_value(request.uri().query().unwrap_or(""), "name").unwrap_or_default();
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = format!(
        "refused: larger than the limit of {} (--max-upload)",
        pages::human_bytes(hub.max_upload)
    );
    if declared.is_some_and(|size| size > hub.max_upload) {
        return refused(StatusCode::PAYLOAD_TOO_LARGE, &too_large);
    }
    let name = match upload::UploadName::new(&name) {
        Ok(name) => name,
        Err(why) => return refused(StatusCode::BAD_REQUEST, &why),
    };
    let (sender, mut pieces) = tokio::sync::mpsc::channel::<Piece>(8);
    let limit = hub.max_upload;
    let dir = hub.upload_dir.clone();
    let writer = tokio::task::spawn_blocking(move || {
        upload::save(&dir, &name, limit, &mut || match pieces.blocking_recv() {
            Some(Piece::Data(data)) => Some(Ok(data)),
            Some(Piece::Broken(why)) => Some(Err(why)),
            Some(Piece::End) => None,
            // The request was dropped (the server stopping): not all came.
            None => Some(Err("the upload was cut off".into())),
        })
    });
    let mut body = request.into_body();
    loop {
        let piece = match body.frame().await {
            None => Piece::End,
            Some(Err(e)) => Piece::Broken(e.to_string()),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => Piece::Data(data.to_vec()),
                Err(_) => continue,
            },
        };
        let last = !matches!(piece, Piece::Data(_));
        if sender.send(piece).await.is_err() || last {
            break;
        }
    }
    drop(sender);
    match writer.await {
        Ok(Ok(target)) => {
            let shown = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (StatusCode::OK, shown).into_response()
        }
        Ok(Err(upload::UploadError::Stopped(upload::Stopped::TooLarge(_)))) => {
            refused(StatusCode::PAYLOAD_TOO_LARGE, &too_large)
        }
        Ok(Err(upload::UploadError::Stopped(upload::Stopped::Broken(why)))) => refused(
            StatusCode::BAD_REQUEST,
            &format!("upload cut off: {why}; nothing kept"),
        ),
        Ok(Err(upload::UploadError::Refused(why))) => {
            refused(StatusCode::UNPROCESSABLE_ENTITY, &why)
        }
        Ok(Err(upload::UploadError::Failed(e))) => {
            refused(StatusCode::INTERNAL_SERVER_ERROR, &format!("error: {e}"))
        }
        Err(_) => refused(StatusCode::INTERNAL_SERVER_ERROR, "the upload failed"),
    }
}

/// The little URL and header parsing the guard needs.
mod url {
    /// Every value of `name` in a query string, percent-decoded, in order.
    pub fn query_values(query: &str, name: &str) -> Vec<String> {
        query
            .split('&')
            .filter_map(|pair| {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                (decode(k)? == name).then(|| decode(v)).flatten()
            })
            .collect()
    }

    /// `name`'s value in a query string, percent-decoded.
    pub fn query_value(query: &str, name: &str) -> Option<String> {
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k)? == name).then(|| decode(v)).flatten()
        })
    }

    /// `text` percent-decoded (`+` as a space, as forms write it); none
    /// where it is not UTF-8.
    pub fn decode(text: &str) -> Option<String> {
        let bytes = text.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'%' if i + 2 < bytes.len() => {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
                    out.push(u8::from_str_radix(hex, 16).ok()?);
                    i += 3;
                }
                b'+' => {
                    out.push(b' ');
                    i += 1;
                }
                b => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        String::from_utf8(out).ok()
    }

    /// The origin (`scheme://host[:port]`) of an http(s) URL.
    pub fn parse_origin(url: &str) -> Option<String> {
        let (scheme, rest) = url.split_once("://")?;
        if scheme != "http" && scheme != "https" {
            return None;
        }
        let host = rest.split(['/', '?', '#']).next()?;
        (!host.is_empty()).then(|| format!("{scheme}://{host}"))
    }
}
