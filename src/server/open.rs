//! `open`'s server: one trace file on 127.0.0.1, handed to ui.perfetto.dev
//! only, until it was fetched whole once. On the one HTTP stack, sent by the
//! one file responder; the rules of who gets what are
//! [`crate::serve`]'s.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;

use super::files::{file_response, Sending};
use super::refusal::Refusal;
use super::stack;
use crate::error::{Error, Result};
use crate::workflows::serve::{may_fetch_trace, origin_allowed, trace_path, ui_url, UI_ORIGIN};

/// A trace file served once on 127.0.0.1.
pub struct TraceServer {
    listener: TcpListener,
    trace: PathBuf,
    /// The URL path of the trace: `/` and its file name.
    path: String,
}

/// How serving ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// The trace was sent whole.
    Fetched,
    /// The cancellation flag was set first.
    Cancelled,
}

impl TraceServer {
    /// Listens on 127.0.0.1:`port` (0 for any free port) for requests of
    /// `trace`.
    pub fn bind(trace: &Path, port: u16) -> Result<TraceServer> {
        std::fs::File::open(trace).map_err(|cause| Error::Unreadable {
            path: trace.to_owned(),
            cause,
        })?;
        let listener = TcpListener::bind(("127.0.0.1", port)).map_err(|e| Error::Serve {
            reason: match e.kind() {
                std::io::ErrorKind::AddrInUse => format!(
                    "port {port} of 127.0.0.1 is in use (another trace being served, or a \
                     trace_processor?): stop it, or choose another port"
                ),
                _ => format!("cannot listen on 127.0.0.1:{port}: {e}"),
            },
        })?;
        Ok(TraceServer {
            listener,
            trace: trace.to_owned(),
            path: trace_path(trace),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The URL of the trace.
    pub fn trace_url(&self) -> String {
        format!("http://127.0.0.1:{}{}", self.local_addr().port(), self.path)
    }

    /// The UI's URL that opens the trace.
    pub fn ui_url(&self) -> String {
        ui_url(self.local_addr().port(), &self.path)
    }

    /// Answers requests until the trace was sent whole once, or `cancel` is
    /// set. Preflight requests (OPTIONS) are answered along the way;
    /// requests from another origin, or for another path, are refused, as
    /// is the trace to any but a CORS request of the UI's origin. The port
    /// is free again when this returns.
    pub fn serve(self, cancel: &Arc<AtomicBool>) -> Result<Served> {
        let fetched = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let trace = Arc::new(Trace {
            file: self.trace,
            path: self.path,
            fetched: Arc::clone(&fetched),
            stop: Arc::clone(&stop),
        });
        let app = Router::new().fallback(answer).with_state(trace);
        let runtime = stack::runtime(4)?;
        let cannot_listen = |e: std::io::Error| Error::Serve {
            reason: format!("cannot listen: {e}"),
        };
        self.listener.set_nonblocking(true).map_err(cannot_listen)?;
        let served = runtime.block_on(async {
            let listener =
                tokio::net::TcpListener::from_std(self.listener).map_err(cannot_listen)?;
            // Fetched: the response's last bytes go out, idle connections
            // close. Cancelled: what is under way stops.
            let (fetched, cancel) = (Arc::clone(&fetched), Arc::clone(cancel));
            let ended = async move {
                let fetched = std::pin::pin!(stack::raised(fetched));
                let cancelled = std::pin::pin!(stack::raised(cancel));
                let first = futures_util::future::select(fetched, cancelled).await;
                if let futures_util::future::Either::Right(_) = first {
                    stop.store(true, Ordering::Relaxed);
                }
            };
            stack::serve(listener, app, ended, GRACE).await
        });
        runtime.shutdown_timeout(Duration::from_secs(1));
        served?;
        // Sent whole while a signal came: the trace was fetched.
        match fetched.load(Ordering::Relaxed) {
            true => Ok(Served::Fetched),
            false => Ok(Served::Cancelled),
        }
    }
}

/// How long the last response may take to go out once the trace was read
/// whole, or a request under way once cancelled.
const GRACE: Duration = Duration::from_secs(2);

/// What the requests share.
struct Trace {
    file: PathBuf,
    path: String,
    /// Set once the file was read to its end into a response.
    fetched: Arc<AtomicBool>,
    /// Set on cancellation: a response under way stops.
    stop: Arc<AtomicBool>,
}

/// Every request: the trace, its preflight, or a refusal.
async fn answer(
    State(trace): State<Arc<Trace>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let text = |name: HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let origin = text(header::ORIGIN);
    let fetch_mode = headers.get("sec-fetch-mode").and_then(|v| v.to_str().ok());
    let cors = cors_headers(origin);
    let is_trace = uri.path() == trace.path;
    let get = method == Method::GET || method == Method::HEAD;
    if get && is_trace && !may_fetch_trace(origin, fetch_mode) {
        return plain(
            StatusCode::FORBIDDEN,
            cors,
            "only ui.perfetto.dev may fetch this trace: open the URL `open` printed",
        );
    }
    if !origin_allowed(origin) {
        return plain(
            StatusCode::FORBIDDEN,
            HeaderMap::new(),
            "only ui.perfetto.dev may fetch this trace",
        );
    }
    if method == Method::OPTIONS {
        let mut headers_out = cors;
        headers_out.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, OPTIONS"),
        );
        if let Some(asked) = headers.get(header::ACCESS_CONTROL_REQUEST_HEADERS) {
            headers_out.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
        }
        let private = headers
            .get("access-control-request-private-network")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if private {
            headers_out.insert(
                "access-control-allow-private-network",
                HeaderValue::from_static("true"),
            );
        }
        headers_out.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from(600));
        return (StatusCode::NO_CONTENT, headers_out).into_response();
    }
    if get && is_trace {
        return file(&trace, cors, method == Method::HEAD).await;
    }
    if get {
        return plain(StatusCode::NOT_FOUND, cors, "no such trace");
    }
    let mut headers_out = cors;
    headers_out.insert(
        header::ALLOW,
        HeaderValue::from_static("GET, HEAD, OPTIONS"),
    );
    plain(StatusCode::METHOD_NOT_ALLOWED, headers_out, "")
}

/// The trace, streamed; the flag `fetched` set once it was read to its end.
async fn file(trace: &Arc<Trace>, headers: HeaderMap, head_only: bool) -> Response {
    let sending = Sending {
        headers,
        head_only,
        sent_whole: Some(Arc::clone(&trace.fetched)),
        stop: Some(Arc::clone(&trace.stop)),
        ..Sending::of("application/octet-stream")
    };
    file_response(&trace.file, (), sending).await
}

/// CORS headers for a request from the UI's origin (requests without an
/// origin, such as curl's, need none).
fn cors_headers(origin: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::VARY, HeaderValue::from_static("Origin"));
    if origin == Some(UI_ORIGIN) {
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static(UI_ORIGIN),
        );
    }
    headers
}

/// A refusal of one line of text, with `headers`.
fn plain(status: StatusCode, headers: HeaderMap, why: &str) -> Response {
    (headers, Refusal::new(status, why)).into_response()
}
