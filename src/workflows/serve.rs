//! Handing a trace to ui.perfetto.dev: a one-file HTTP server on
//! 127.0.0.1, the address the UI is allowed to fetch from, that answers the
//! UI's origin only and stops once the trace was fetched whole.
//!
//! The UI's page may fetch over plain HTTP from `http://127.0.0.1:9001`
//! only: its Content-Security-Policy (`connect-src`, set in Perfetto's
//! `ui/src/frontend/index.ts`) names that address for trace_processor's
//! RPC. Its flag "Relax Content Security Policy for 127.0.0.1:*"
//! (`cspAllowAnyWebsocketPort`) puts the port of the UI URL's `rpc_port`
//! argument there instead.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::error::{plain, Error, Result};

/// The only origin allowed to read the trace.
pub const UI_ORIGIN: &str = "https://ui.perfetto.dev";

/// The port the UI fetches traces from, and where it looks for a
/// trace_processor of its own.
pub const DEFAULT_PORT: u16 = 9001;

/// The UI's flag that lets it fetch from the port its URL's `rpc_port`
/// names instead of [`DEFAULT_PORT`].
pub const UI_PORT_FLAG: &str = "https://ui.perfetto.dev/#!/flags/cspAllowAnyWebsocketPort";

/// A trace file served once on 127.0.0.1.
pub struct TraceServer {
    listener: TcpListener,
    trace: PathBuf,
    /// The URL path of the trace: `/` and its file name.
    path: String,
}

/// How serving ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
        let file = File::open(trace).map_err(|cause| Error::Unreadable {
            path: trace.to_owned(),
            cause,
        })?;
        drop(file);
        let listener = TcpListener::bind(("127.0.0.1", port)).map_err(|e| Error::Serve {
            reason: match e.kind() {
                io::ErrorKind::AddrInUse => format!(
                    "port {port} of 127.0.0.1 is in use (another trace being served, or a \
                     trace_processor?): stop it, or choose another port"
                ),
                _ => format!("cannot listen on 127.0.0.1:{port}: {}", plain(&e)),
            },
        })?;
        let name = trace
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "trace".to_owned());
        Ok(TraceServer {
            listener,
            trace: trace.to_owned(),
            path: format!("/{}", percent_encode(&name)),
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

    /// The UI's URL that opens the trace: from a port other than
    /// [`DEFAULT_PORT`], with that port as `rpc_port`, which the UI fetches
    /// from only with its flag [`UI_PORT_FLAG`] on.
    pub fn ui_url(&self) -> String {
        match self.local_addr().port() {
            DEFAULT_PORT => format!("{UI_ORIGIN}/#!/?url={}", self.trace_url()),
            port => format!("{UI_ORIGIN}/#!/?rpc_port={port}&url={}", self.trace_url()),
        }
    }

    /// Answers requests until the trace was sent whole once, or `cancel` is
    /// set. Preflight requests (OPTIONS) are answered along the way;
    /// requests from another origin, or for another path, are refused. The
    /// trace goes only to a CORS request from the UI's origin: a request
    /// without that `Origin` (a page's `<img>` or `no-cors` fetch of another
    /// site sends none, nor does a browser's own navigation), or whose
    /// `Sec-Fetch-Mode` is not `cors`, is refused before it counts as the
    /// one fetch.
    /// The port is freed when the server is dropped.
    pub fn serve(self, cancel: &AtomicBool) -> Result<Served> {
        let failed = |e: io::Error| Error::Serve {
            reason: format!("cannot accept connections: {}", plain(&e)),
        };
        self.listener.set_nonblocking(true).map_err(failed)?;
        // A connection each on a thread of its own: a browser opens
        // connections it may never use, which must not hold up the one that
        // asks for the trace. Once done, those still open are shut.
        let fetched = AtomicBool::new(false);
        let open: Mutex<Vec<TcpStream>> = Mutex::new(Vec::new());
        let stop = || fetched.load(Ordering::Relaxed) || cancel.load(Ordering::Relaxed);
        let outcome = std::thread::scope(|scope| {
            let outcome = loop {
                if fetched.load(Ordering::Relaxed) {
                    break Ok(Served::Fetched);
                }
                if cancel.load(Ordering::Relaxed) {
                    break Ok(Served::Cancelled);
                }
                match self.listener.accept() {
                    Ok((stream, _)) => {
                        if let Ok(clone) = stream.try_clone() {
                            open.lock().unwrap_or_else(|e| e.into_inner()).push(clone);
                        }
                        let (server, fetched, stop) = (&self, &fetched, &stop);
                        scope.spawn(move || {
                            if let Ok(Answered::Trace) = server.answer(stream, stop) {
                                fetched.store(true, Ordering::Relaxed);
                            }
                        });
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        std::thread::sleep(POLL);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => break Err(failed(e)),
                }
            };
            for stream in open.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                let _ = stream.shutdown(Shutdown::Both);
            }
            outcome
        });
        match outcome {
            // Sent whole while a signal came: the trace was fetched.
            Ok(Served::Cancelled) if fetched.load(Ordering::Relaxed) => Ok(Served::Fetched),
            outcome => outcome,
        }
    }

    /// Reads one request on `stream` and answers it.
    fn answer(&self, stream: TcpStream, stop: &dyn Fn() -> bool) -> io::Result<Answered> {
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(IDLE))?;
        stream.set_write_timeout(Some(IDLE))?;
        let mut reader = BufReader::new(stream.try_clone()?);
        let request = match read_request(&mut reader)? {
            Some(request) => request,
            None => return Ok(Answered::Other),
        };
        let mut out = stream;
        let origin_ok = request.origin.as_deref().is_none_or(|o| o == UI_ORIGIN);
        let target = request.target.split(['?', '#']).next().unwrap_or("");
        let from_the_ui = request.origin.as_deref() == Some(UI_ORIGIN)
            && request.fetch_mode.as_deref().is_none_or(|m| m == "cors");
        let answered = match request.method.as_str() {
            "GET" | "HEAD" if target == self.path && !from_the_ui => {
                respond(
                    &mut out,
                    "403 Forbidden",
                    &cors_headers(&request),
                    "only ui.perfetto.dev may fetch this trace: open the URL `open` printed\n",
                )?;
                Answered::Other
            }
            _ if !origin_ok => {
                respond(
                    &mut out,
                    "403 Forbidden",
                    &[],
                    "only ui.perfetto.dev may fetch this trace\n",
                )?;
                Answered::Other
            }
            "OPTIONS" => {
                let mut headers = cors_headers(&request);
                headers.push(("Access-Control-Allow-Methods", "GET, OPTIONS".into()));
                if let Some(asked) = &request.request_headers {
                    headers.push(("Access-Control-Allow-Headers", asked.clone()));
                }
                if request.private_network {
                    headers.push(("Access-Control-Allow-Private-Network", "true".into()));
                }
                headers.push(("Access-Control-Max-Age", "600".into()));
                headers.push(("Content-Length", "0".into()));
                write_head(&mut out, "204 No Content", &headers)?;
                Answered::Other
            }
            "GET" | "HEAD" if target == self.path => {
                let mut file = File::open(&self.trace)?;
                let length = file.metadata()?.len();
                let mut headers = cors_headers(&request);
                headers.push(("Content-Type", "application/octet-stream".into()));
                headers.push(("Content-Length", length.to_string()));
                headers.push(("Cache-Control", "no-store".into()));
                write_head(&mut out, "200 OK", &headers)?;
                if request.method == "HEAD" {
                    Answered::Other
                } else {
                    copy_cancellable(&mut file, &mut out, stop)?;
                    out.flush()?;
                    Answered::Trace
                }
            }
            "GET" | "HEAD" => {
                respond(
                    &mut out,
                    "404 Not Found",
                    &cors_headers(&request),
                    "no such trace\n",
                )?;
                Answered::Other
            }
            _ => {
                let mut headers = cors_headers(&request);
                headers.push(("Allow", "GET, HEAD, OPTIONS".into()));
                respond(&mut out, "405 Method Not Allowed", &headers, "")?;
                Answered::Other
            }
        };
        let _ = out.shutdown(Shutdown::Write);
        Ok(answered)
    }
}

enum Answered {
    Trace,
    Other,
}

/// How often the listener is checked for connections and cancellation.
const POLL: Duration = Duration::from_millis(20);

/// How long a client may keep the server waiting in a request.
const IDLE: Duration = Duration::from_secs(30);

/// The longest request head read.
const MAX_HEAD: usize = 64 << 10;

struct Request {
    method: String,
    target: String,
    origin: Option<String>,
    /// `Sec-Fetch-Mode`: `cors` for the UI's fetch, `no-cors` for a
    /// page's `<img>` or opaque fetch, `navigate` for a browser's tab.
    fetch_mode: Option<String>,
    request_headers: Option<String>,
    private_network: bool,
}

/// The request line and the headers that matter here; `None` for a
/// connection closed before a request.
fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Request>> {
    let mut head = Vec::new();
    let mut line = Vec::new();
    let mut first = None;
    let mut request = Request {
        method: String::new(),
        target: String::new(),
        origin: None,
        fetch_mode: None,
        request_headers: None,
        private_network: false,
    };
    loop {
        line.clear();
        let n = reader
            .by_ref()
            .take(MAX_HEAD as u64)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(None);
        }
        head.extend_from_slice(&line);
        if head.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request too long",
            ));
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\r', '\n']);
        if first.is_none() {
            first = Some(text.to_owned());
            let mut parts = text.split_whitespace();
            request.method = parts.next().unwrap_or("").to_owned();
            request.target = parts.next().unwrap_or("").to_owned();
            continue;
        }
        if text.is_empty() {
            return Ok(Some(request));
        }
        if let Some((name, value)) = text.split_once(':') {
            let value = value.trim().to_owned();
            match name.trim().to_ascii_lowercase().as_str() {
                "origin" => request.origin = Some(value),
                "sec-fetch-mode" => request.fetch_mode = Some(value.to_ascii_lowercase()),
                "access-control-request-headers" => request.request_headers = Some(value),
                "access-control-request-private-network" => {
                    request.private_network = value.eq_ignore_ascii_case("true")
                }
                _ => {}
            }
        }
    }
}

/// CORS headers for a request from the UI's origin (requests without an
/// origin, such as curl's, need none).
fn cors_headers(request: &Request) -> Vec<(&'static str, String)> {
    let mut headers = vec![("Vary", "Origin".to_owned())];
    if request.origin.as_deref() == Some(UI_ORIGIN) {
        headers.push(("Access-Control-Allow-Origin", UI_ORIGIN.to_owned()));
    }
    headers
}

fn write_head(out: &mut impl Write, status: &str, headers: &[(&str, String)]) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())
}

fn respond(
    out: &mut impl Write,
    status: &str,
    headers: &[(&str, String)],
    body: &str,
) -> io::Result<()> {
    let mut headers = headers.to_vec();
    headers.push(("Content-Type", "text/plain; charset=utf-8".into()));
    headers.push(("Content-Length", body.len().to_string()));
    write_head(out, status, &headers)?;
    out.write_all(body.as_bytes())
}

/// Copies `from` into `to`, stopping with an error once `stop` says so.
fn copy_cancellable(
    from: &mut impl Read,
    to: &mut impl Write,
    stop: &dyn Fn() -> bool,
) -> io::Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    loop {
        if stop() {
            return Err(io::Error::other("interrupted"));
        }
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
    }
}

/// A file name as a URL path segment: unreserved characters as they are,
/// every other byte %-encoded.
pub(crate) fn percent_encode(name: &str) -> String {
    let mut out = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What a file given to `open` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceKind {
    /// A Perfetto trace, gzipped.
    GzipTrace,
    /// A Perfetto trace, raw protobuf.
    Trace,
    /// A trace in Chrome's JSON trace event format (as `convert --format
    /// json` writes), which the UI reads as well.
    ChromeJson,
    /// An Nsight Systems report or SQLite export, to convert first.
    Report,
}

/// What `path` holds, judged by its first bytes.
pub fn trace_kind(path: &Path) -> Result<TraceKind> {
    match super::input::sniff(path) {
        Ok(_) => return Ok(TraceKind::Report),
        Err(Error::UnknownFormat { .. } | Error::AlreadyTrace { .. }) => {}
        Err(e) => return Err(e),
    }
    let mut head = Vec::with_capacity(64);
    let unreadable = |cause| Error::Unreadable {
        path: path.to_owned(),
        cause,
    };
    File::open(path)
        .and_then(|f| f.take(64).read_to_end(&mut head))
        .map_err(unreadable)?;
    // JSON's first character, after a byte order mark and white space.
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&head);
    let json_start = text.iter().find(|b| !b.is_ascii_whitespace());
    match (head.as_slice(), json_start) {
        ([0x1f, 0x8b, ..], _) => Ok(TraceKind::GzipTrace),
        // A trace's first field is a TracePacket (field 1, length-delimited).
        ([0x0a, _, ..], _) => Ok(TraceKind::Trace),
        // An object ({"traceEvents": ...}) or an array of events.
        (_, Some(b'{' | b'[')) => Ok(TraceKind::ChromeJson),
        _ => Err(Error::Serve {
            reason: format!(
                "{} is neither a Perfetto trace, a JSON trace nor an Nsight Systems report or export",
                path.display()
            ),
        }),
    }
}

/// Starts `tp` (trace_processor_shell) as the UI's accelerator: an HTTP
/// RPC server on 127.0.0.1:`port` with `trace` loaded, in a process group
/// of its own (a Ctrl-C at the terminal reaches the caller, which stops it).
/// For `open`: hidden, being no part of what the library offers, but here
/// to word its error as every other.
#[doc(hidden)]
pub fn spawn_trace_processor(tp: &Path, trace: &Path, port: u16) -> Result<std::process::Child> {
    let mut command = std::process::Command::new(tp);
    command
        .args(["--httpd", "--http-ip-address", "127.0.0.1", "--http-port"])
        .arg(port.to_string())
        .arg(trace)
        .stdin(std::process::Stdio::null());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    command.spawn().map_err(|e| Error::Serve {
        reason: format!(
            "cannot start {}: {}; pass --tp PATH to trace_processor_shell",
            tp.display(),
            plain(&e)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_encoded_for_urls() {
        assert_eq!(
            percent_encode("run 1.perfetto-trace"),
            "run%201.perfetto-trace"
        );
        assert_eq!(percent_encode("a#b?c"), "a%23b%3Fc");
    }
}
