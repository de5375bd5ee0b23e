//! `open`: a trace (or a report, converted first) opened in ui.perfetto.dev.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};

use nsys2perfetto::serve::{
    estimated_tab_memory, spawn_trace_processor, trace_kind, trace_processor_on_path, TraceKind,
    BROWSER_TAB_LIMIT, DEFAULT_PORT, UI_ORIGIN, UI_PORT_FLAG,
};
use nsys2perfetto::server::{Served, TraceServer};
use nsys2perfetto::{convert_file, Options};

use crate::host::host_name;
use crate::reading::{quiet_help, Reading};
use crate::signals::Signals;
use crate::{human_bytes, Interrupted};

/// Open a trace in ui.perfetto.dev, converting a report first.
///
/// The trace is served once on 127.0.0.1 (only ui.perfetto.dev may fetch
/// it) and the UI opened on it in the browser; the command ends once the
/// trace was fetched, or at Ctrl-C. A trace too big for a browser tab is
/// loaded by trace_processor_shell instead, which the UI then uses as its
/// accelerator, until Ctrl-C.
#[derive(clap::Args)]
#[command(mut_args(quiet_help(
    "Only what is needed to reach the trace (the URL where no browser was opened, how to \
     tunnel) and errors: no summary of the conversion, no word once the trace was fetched"
)))]
pub struct Args {
    /// A Perfetto trace (gzipped or not), a JSON trace (Chrome's trace
    /// event format), or a report or export to convert first (into a
    /// temporary file, removed afterwards).
    #[arg(value_name = "TRACE_OR_REPORT")]
    input: PathBuf,

    /// The port on 127.0.0.1. The UI fetches from 9001 only (its
    /// Content-Security-Policy), from another port only with its flag
    /// "Relax Content Security Policy for 127.0.0.1:*" on; another port
    /// suits a tunnel to 9001 of the browser's machine.
    #[arg(long, default_value_t = DEFAULT_PORT)]
    port: u16,

    /// trace_processor_shell, for traces too big for a browser tab
    /// (default: trace_processor_shell, then trace_processor, on PATH).
    #[arg(long, value_name = "PATH")]
    tp: Option<PathBuf>,

    /// Load the trace in trace_processor_shell whatever its size.
    #[arg(long)]
    native: bool,

    /// Print the URL, open no browser.
    #[arg(long)]
    no_browser: bool,

    #[command(flatten)]
    reading: Reading,
}

/// Serves the trace until it was fetched (exit status 0), or until a signal
/// (an error: [`Interrupted`]).
pub fn run(args: Args, signals: &Signals) -> anyhow::Result<ExitCode> {
    let kind = trace_kind(&args.input)?;
    // A converted report lives in a directory removed when this returns.
    let mut _converted_dir = None;
    let (trace, kind) = match kind {
        TraceKind::Report => {
            let dir = nsys2perfetto::temporaries::directory("open")?;
            let name = Path::new(args.input.file_name().unwrap_or(args.input.as_os_str()))
                .with_extension("perfetto-trace");
            let trace = dir.path().join(name);
            let options = Options::default().with_read(args.reading.read_options(signals));
            let started = Instant::now();
            let summary = convert_file(&args.input, &trace, &options, &mut |_| {})?;
            if !args.reading.quiet {
                crate::say(format_args!(
                    "{}: {summary} in {:.2}s",
                    args.input.display(),
                    started.elapsed().as_secs_f64()
                ));
            }
            _converted_dir = Some(dir);
            (trace, TraceKind::GzipTrace)
        }
        kind => (args.input.clone(), kind),
    };
    let memory = estimated_tab_memory(&trace, kind)?;
    if args.native || memory > BROWSER_TAB_LIMIT {
        if !args.native {
            crate::say(format_args!(
                "{} needs about {} in trace_processor, more than a browser tab has ({}): \
                 it is loaded by trace_processor_shell instead",
                trace.display(),
                human_bytes(memory),
                human_bytes(BROWSER_TAB_LIMIT)
            ));
        }
        return serve_native(&args, &trace, signals);
    }
    let server = TraceServer::bind(&trace, args.port)?;
    let url = server.ui_url();
    let opened = !args.no_browser && open_browser(&url);
    if opened {
        crate::say(format_args!("opened {url}"));
    } else {
        crate::say(format_args!("open {url}"));
    }
    let port = server.local_addr().port();
    if port != DEFAULT_PORT {
        crate::note(format_args!(
            "ui.perfetto.dev fetches from 127.0.0.1:{DEFAULT_PORT} only (its Content-Security-Policy): \
             from port {port} it fetches only with its flag \"Relax Content Security Policy for \
             127.0.0.1:*\" on ({UI_PORT_FLAG}), then reading the port from the URL's rpc_port"
        ));
    }
    if !opened || std::env::var_os("SSH_CONNECTION").is_some() {
        crate::say(format_args!(
            "on another machine than the browser's, first: {}",
            tunnel(&server.trace_url(), server.local_addr().port())
        ));
    }
    crate::say(format_args!(
        "serving {} ({}) once on {}; Ctrl-C stops",
        trace.display(),
        human_bytes(std::fs::metadata(&trace).map(|m| m.len()).unwrap_or(0)),
        server.trace_url()
    ));
    match server.serve(&signals.cancel)? {
        Served::Fetched => {
            if !args.reading.quiet {
                crate::say(format_args!("the trace was fetched"));
            }
            Ok(ExitCode::SUCCESS)
        }
        _ => Err(Interrupted("interrupted before the trace was fetched".into()).into()),
    }
}

/// The `ssh -L` command that brings the trace served at `trace_url` (on
/// `port` of this machine) to the browser's machine: always to its port
/// 9001, the only one the UI fetches from; from another port, with the
/// URL to open there.
fn tunnel(trace_url: &str, port: u16) -> String {
    let forward = format!("ssh -L {DEFAULT_PORT}:127.0.0.1:{port} {}", host_name());
    if port == DEFAULT_PORT {
        return forward;
    }
    let served = format!("http://127.0.0.1:{port}");
    let path = trace_url.strip_prefix(&served).unwrap_or(trace_url);
    format!("{forward}, then open {UI_ORIGIN}/#!/?url=http://127.0.0.1:{DEFAULT_PORT}{path}")
}

/// trace_processor_shell serving the trace to the UI until Ctrl-C.
fn serve_native(args: &Args, trace: &Path, signals: &Signals) -> anyhow::Result<ExitCode> {
    let tp = match &args.tp {
        Some(tp) => tp.clone(),
        None => trace_processor_on_path().ok_or_else(|| {
            anyhow!(
                "trace_processor_shell is not on PATH: pass --tp PATH \
                     (https://perfetto.dev/docs/analysis/trace-processor)"
            )
        })?,
    };
    if std::net::TcpListener::bind(("127.0.0.1", args.port)).is_err() {
        bail!(
            "port {} of 127.0.0.1 is in use: stop what uses it, or choose another port",
            args.port
        );
    }
    let mut child = spawn_trace_processor(&tp, trace, args.port)?;
    let url = format!("{UI_ORIGIN}/#!/");
    crate::say(format_args!(
        "{} loads {} on 127.0.0.1:{}; the UI at {url} offers to use it (\"Use loaded trace\"); Ctrl-C stops it",
        tp.display(),
        trace.display(),
        args.port
    ));
    if !args.no_browser {
        open_browser(&url);
    }
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break Some(status);
        }
        if signals.cancel.load(Ordering::Relaxed) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    match status {
        Some(status) => bail!("{} stopped ({status})", tp.display()),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            Err(Interrupted("trace_processor stopped".into()).into())
        }
    }
}

/// Opens `url` with $BROWSER (a list separated by colons), xdg-open or
/// open; whether one of them did.
fn open_browser(url: &str) -> bool {
    let mut candidates: Vec<String> = std::env::var("BROWSER")
        .map(|b| {
            b.split(':')
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    candidates.extend(["xdg-open".to_owned(), "open".to_owned()]);
    candidates.iter().any(|program| {
        let child = Command::new(program)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(mut child) = child else {
            return false;
        };
        // xdg-open returns once the browser has the URL, and fails without
        // a desktop; a browser itself may keep running.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return status.success(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => return true,
            }
        }
    })
}
