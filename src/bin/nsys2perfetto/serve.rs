//! `serve`: the hub, a web page of a team's runs. Every report under the
//! directories, each with its headline; one click to Perfetto; the report,
//! stats and findings pages; uploads. The HTTP stack is axum on tokio; what
//! is no HTTP (the list, the cache, the pages) is the library's
//! (`nsys2perfetto::hub`).
//!
//! Safe by default: it listens on 127.0.0.1; on any other address every
//! request must carry the token (printed in the URL; `?token=` sets a
//! cookie). A request must name this server as its Host where it listens
//! on loopback without a token (no DNS rebinding), and a POST must come
//! from the server's own page (its Origin). Only the files the list holds,
//! the cache's and the page's own script are served: a URL names a report
//! by its id in the list, never by a path of the machine.

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Context as _};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use http_body_util::BodyExt as _;
use nsys2perfetto::hub::jobs::State as JobState;
use nsys2perfetto::hub::{self, pages, upload, Cache, CacheKey, Entry, Headline, Jobs, Pinned};
use nsys2perfetto::Options;
use tokio::sync::Semaphore;

use crate::signals::Signals;
use crate::Usage;

mod accelerator;
mod jobs;
mod made;

/// Serve a web page of the runs under DIRs: their headlines, each opened in
/// Perfetto in one click, their report, stats and findings pages, and
/// uploads by drag and drop.
///
/// It listens on 127.0.0.1 unless --bind says otherwise; reach it from a
/// laptop through `ssh -L` (the line is printed). Any other address needs
/// the token (generated unless --token), checked on every request.
#[derive(clap::Args)]
pub struct Args {
    /// The directories of runs (default: the current one): every export and
    /// report below them, as `convert DIR` finds them.
    #[arg(value_name = "DIR")]
    dirs: Vec<PathBuf>,

    /// The port (0: any free one).
    #[arg(long, default_value_t = 8765)]
    port: u16,

    /// The address to listen on. Any other than a loopback one needs the
    /// token on every request.
    #[arg(long, value_name = "ADDR", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,

    /// The token every request must carry (`?token=`, which sets a cookie,
    /// or the header `Authorization: Bearer TOKEN`); generated when
    /// listening on an address other than loopback.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,

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
    token: Option<String>,
    /// Loopback without a token: the Host must be a loopback name.
    check_host: bool,
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
    let token = match (args.token, loopback) {
        (Some(t), _) if t.is_empty() || !t.bytes().all(|b| b.is_ascii_graphic()) => {
            return Err(Usage("--token must be printable ASCII, without spaces".into()).into())
        }
        (Some(t), _) => Some(t),
        (None, true) => None,
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
        check_host: loopback && token.is_none(),
        token,
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
        .route("/findings/{*id}", get(findings_page))
        .route("/open/{*id}", get(open_page))
        .route("/compare", get(compare_page))
        .route("/trace/{*id}", get(trace))
        .route("/api/convert/{*id}", get(jobs::follow))
        .route("/api/jobs", get(jobs::list))
        .route("/api/fit/{*id}", get(accelerator::fit))
        .route("/api/tp/{*id}", post(accelerator::start))
        .route("/api/make/{kind}", get(made::follow))
        .route("/made/{kind}", get(made::download))
        .route(
            "/upload",
            post(receive).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .fallback(|| async { refused(StatusCode::NOT_FOUND, "no such page") })
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&hub),
            guard,
        ))
        .with_state(hub);
    crate::http::serve(listener, app, crate::http::raised(cancel), GRACE).await
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
fn new_token() -> anyhow::Result<String> {
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

const COOKIE: &str = "nsys2perfetto_token";

/// Every request passes here: the token, the Host, the Origin of a POST.
async fn guard(State(hub): State<Shared>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned();
    if hub.check_host && !url::is_loopback_host(&host) {
        return refused(
            StatusCode::FORBIDDEN,
            "this server answers requests to 127.0.0.1 or localhost only (start it with --token to name it otherwise)",
        );
    }
    let mut set_cookie = None;
    if let Some(token) = &hub.token {
        let from_query = url::query_value(request.uri().query().unwrap_or(""), "token");
        let given = from_query
            .clone()
            .or_else(|| bearer(headers))
            .or_else(|| cookie(headers, COOKIE));
        if !given.is_some_and(|g| same_secret(&g, token)) {
            return refused(
                StatusCode::UNAUTHORIZED,
                "this server needs its token: open the URL it printed (with ?token=)",
            );
        }
        if from_query.is_some() {
            set_cookie = Some(format!(
                "{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
            ));
        }
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok());
        let own = origin.is_some_and(|o| url::origin_is_host(o, &host));
        if !own {
            return refused(
                StatusCode::FORBIDDEN,
                "refused: a change must come from this server's own page (its Origin)",
            );
        }
    }
    let mut response = next.run(request).await;
    if let Some(cookie) = set_cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::HeaderName::from_static("x-frame-options"),
        HeaderValue::from_static("DENY"),
    );
    response
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    value.strip_prefix("Bearer ").map(|t| t.trim().to_owned())
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then(|| v.to_owned())
        })
}

/// Whether `given` is `secret`, compared in time that does not tell where
/// they differ.
fn same_secret(given: &str, secret: &str) -> bool {
    let (a, b) = (given.as_bytes(), secret.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
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

async fn config(State(hub): State<Shared>) -> Response {
    let body = serde_json::json!({ "ui": hub.ui }).to_string();
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

    /// Whether `origin` is `http://HOST`, the page this server sent.
    pub fn origin_is_host(origin: &str, host: &str) -> bool {
        !host.is_empty() && origin.eq_ignore_ascii_case(&format!("http://{host}"))
    }

    /// Whether a Host header names a loopback address (any port).
    pub fn is_loopback_host(host: &str) -> bool {
        let name = match host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => host.rsplit_once(':').map_or(host, |(h, _)| h),
        };
        name.eq_ignore_ascii_case("localhost")
            || name
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}
