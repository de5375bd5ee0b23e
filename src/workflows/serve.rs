//! Handing a trace to ui.perfetto.dev: the rules of the one-file server on
//! 127.0.0.1 (the address the UI is allowed to fetch from) that `open`
//! runs, which answers the UI's origin only and stops once the trace was
//! fetched whole; the server itself is `nsys2perfetto::server`'s (with the
//! `serve` feature). Also what a trace needs of a browser tab
//! ([`estimated_tab_memory`]), and trace_processor for the traces too big
//! for one ([`trace_processor_on_path`], [`spawn_trace_processor`]).
//!
//! The UI's page may fetch over plain HTTP from `http://127.0.0.1:9001`
//! only: its Content-Security-Policy (`connect-src`, set in Perfetto's
//! `ui/src/frontend/index.ts`) names that address for trace_processor's
//! RPC. Its flag "Relax Content Security Policy for 127.0.0.1:*"
//! (`cspAllowAnyWebsocketPort`) puts the port of the UI URL's `rpc_port`
//! argument there instead.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::error::{plain, Error, Result};
pub use crate::workflows::tab_memory::{estimated_tab_memory, BROWSER_TAB_LIMIT};

/// The only origin allowed to read the trace.
pub const UI_ORIGIN: &str = "https://ui.perfetto.dev";

/// The port the UI fetches traces from, and where it looks for a
/// trace_processor of its own.
pub const DEFAULT_PORT: u16 = 9001;

/// The UI's flag that lets it fetch from the port its URL's `rpc_port`
/// names instead of [`DEFAULT_PORT`].
pub const UI_PORT_FLAG: &str = "https://ui.perfetto.dev/#!/flags/cspAllowAnyWebsocketPort";

/// The URL path a trace is served at: `/` and its file name, encoded.
pub fn trace_path(trace: &Path) -> String {
    let name = trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".to_owned());
    format!("/{}", crate::server::url::encode(&name))
}

/// The UI's URL that opens the trace at `trace_path` served on 127.0.0.1:`port`:
/// from a port other than [`DEFAULT_PORT`], with that port as `rpc_port`,
/// which the UI fetches from only with its flag [`UI_PORT_FLAG`] on.
pub fn ui_url(port: u16, trace_path: &str) -> String {
    let trace_url = format!("http://127.0.0.1:{port}{trace_path}");
    match port {
        DEFAULT_PORT => format!("{UI_ORIGIN}/#!/?url={trace_url}"),
        port => format!("{UI_ORIGIN}/#!/?rpc_port={port}&url={trace_url}"),
    }
}

/// Whether a request may be answered at all: one without an `Origin` (curl,
/// a browser's navigation) or from the UI's. Others are refused whatever
/// they ask.
pub fn origin_allowed(origin: Option<&str>) -> bool {
    origin.is_none_or(|o| o == UI_ORIGIN)
}

/// Whether a request may have the trace: only a CORS request from the UI's
/// origin. A request without that `Origin` (a page's `<img>` or `no-cors`
/// fetch of another site sends none, nor does a browser's own navigation),
/// or whose `Sec-Fetch-Mode` is not `cors`, is refused before it counts as
/// the one fetch.
pub fn may_fetch_trace(origin: Option<&str>, fetch_mode: Option<&str>) -> bool {
    origin == Some(UI_ORIGIN) && fetch_mode.is_none_or(|m| m.eq_ignore_ascii_case("cors"))
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

/// trace_processor_shell, else trace_processor, on PATH.
pub fn trace_processor_on_path() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["trace_processor_shell", "trace_processor"]
        .iter()
        .find_map(|program| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(program))
                .find(|p| p.is_file())
        })
}

/// Starts `tp` (trace_processor_shell) as the UI's accelerator: an HTTP
/// RPC server on 127.0.0.1:`port` with `trace` loaded, in a process group
/// of its own (a Ctrl-C at the terminal reaches the caller, which stops it).
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
    fn only_the_uis_cors_requests_get_the_trace() {
        assert!(may_fetch_trace(Some(UI_ORIGIN), Some("cors")));
        assert!(may_fetch_trace(Some(UI_ORIGIN), None));
        assert!(!may_fetch_trace(Some(UI_ORIGIN), Some("no-cors")));
        assert!(!may_fetch_trace(None, Some("cors")));
        assert!(!may_fetch_trace(Some("https://example.com"), Some("cors")));
        assert!(origin_allowed(None) && origin_allowed(Some(UI_ORIGIN)));
        assert!(!origin_allowed(Some("https://example.com")));
    }
}
