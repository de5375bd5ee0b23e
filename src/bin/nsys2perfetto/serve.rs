//! `serve`: the hub, a web page of a team's runs. Every report under the
//! directories, each with its headline; one click to Perfetto; the report,
//! stats and findings pages; uploads. This parses its flags and prints
//! where to open it; the hub and its server are the library's
//! (`nsys2perfetto::server::serve_hub`), safe by default: it listens on
//! 127.0.0.1, and every request must carry the token (printed in the URL),
//! as Jupyter does; `--no-token` is for loopback only.

use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use anyhow::anyhow;
use nsys2perfetto::server::{new_token, serve_hub, url, HubSettings, SHORTEST_TOKEN};
use nsys2perfetto::Options;

use crate::exporter::Exporter;
use crate::flags::parse_size;
use crate::host::host_name;
use crate::signals::Signals;
use crate::Usage;

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

    #[command(flatten)]
    exporter: Exporter,

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
          default_value_t = nsys2perfetto::serve::BROWSER_TAB_LIMIT)]
    tab_limit: u64,

    /// Only the URL, the `ssh -L` line and errors: no note of what is served.
    #[arg(short, long)]
    quiet: bool,
}

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
    if url::origin(&args.ui).is_none() {
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
        (Some(t), _) if t.len() < SHORTEST_TOKEN => {
            return Err(Usage(format!(
                "--token must be at least {} characters (say nothing to have one made)",
                SHORTEST_TOKEN
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
    // Each job has its flag of its own (cancelled when no one waits for it,
    // or when the server stops); the headlines have the program's.
    let options = Options::default().with_read(args.exporter.read_options(signals));
    let mut settings = HubSettings::new(
        dirs,
        cache_dir,
        SocketAddr::new(args.bind, args.port),
        token,
    );
    settings.upload_dir = upload_dir;
    settings.cache_size = args.cache_size;
    settings.options = options;
    settings.ui = args.ui;
    settings.max_upload = args.max_upload;
    settings.jobs = args.jobs;
    settings.tp = args.tp;
    settings.tp_port = args.tp_port;
    settings.tab_limit = args.tab_limit;
    let shown = Shown {
        dirs: settings.dirs.clone(),
        cache_dir: settings.cache_dir.clone(),
        cache_size: settings.cache_size,
        token: settings.token.clone(),
        quiet: args.quiet,
    };
    serve_hub(settings, &signals.cancel, |address| {
        announce(&shown, address)
    })?;
    Err(crate::Interrupted("serve stopped".into()).into())
}

/// What the lines printed once listening say.
struct Shown {
    dirs: Vec<PathBuf>,
    cache_dir: PathBuf,
    cache_size: u64,
    token: Option<String>,
    quiet: bool,
}

/// Prints where to open the page, and how to reach it from a laptop.
fn announce(said: &Shown, address: SocketAddr) {
    let port = address.port();
    let shown = match address.ip() {
        IpAddr::V6(ip) => format!("[{ip}]"),
        IpAddr::V4(ip) if ip.is_unspecified() => host_name(),
        IpAddr::V4(ip) => ip.to_string(),
    };
    let query = said
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
    if said.quiet {
        return;
    }
    let dirs: Vec<String> = said.dirs.iter().map(|d| d.display().to_string()).collect();
    crate::note(format_args!(
        "serving the reports under {}; cache in {} (at most {}); Ctrl-C stops",
        dirs.join(", "),
        said.cache_dir.display(),
        crate::human_bytes(said.cache_size)
    ));
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
