//! `mcp`: a Model Context Protocol server over standard input and output,
//! for coding agents: the answers of `report`, `stats`, `compare` and
//! `query` on the runs under some directories, as the same JSON the command
//! line writes, with a summary in words ([`server`]).

mod answers;
mod scope;
mod server;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use rmcp::ServiceExt;

use nsys2perfetto::hub::Cache;

use crate::exporter::Exporter;
use crate::signals::Signals;

/// Serve the runs under DIRs to coding agents over MCP (Model Context
/// Protocol), on standard input and output: tools list_reports, report,
/// stats, findings, compare, steps, query (read-only SQL) and convert, and
/// each run's report page as a Markdown resource. Paths outside DIRs are refused.
#[derive(clap::Args)]
pub struct Args {
    /// Directories of reports and exports (default: the current one).
    #[arg(value_name = "DIR")]
    dirs: Vec<PathBuf>,

    /// Where converted traces and exports of reports are kept (default:
    /// $XDG_CACHE_HOME/nsys2perfetto/query, as for `query`).
    #[arg(long, value_name = "DIR")]
    cache: Option<PathBuf>,

    /// The most bytes of JSON one answer may take: past it, rows are left
    /// out (and counted), or the answer refused.
    #[arg(long, value_name = "BYTES", default_value_t = 100_000)]
    max_answer_bytes: usize,

    #[command(flatten)]
    exporter: Exporter,
}

/// The most the cache's traces may take.
const CACHE_LIMIT: u64 = 4 << 30;

pub fn run(args: Args, _signals: &Signals) -> anyhow::Result<ExitCode> {
    let scope = scope::Scope::of(&args.dirs)?;
    let dir = match args.cache {
        Some(dir) => dir,
        None => nsys2perfetto::query::default_cache_dir().ok_or_else(|| {
            crate::Usage(
                "no cache directory (neither XDG_CACHE_HOME nor HOME): give --cache".into(),
            )
        })?,
    };
    let cache = Cache::open(&dir, CACHE_LIMIT)?;
    let server = server::Server(Arc::new(server::State {
        scope,
        cache,
        nsys: args.exporter.nsys,
        max_bytes: args.max_answer_bytes,
    }));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| anyhow::anyhow!("cannot start the MCP server: {e}"))?;
        running
            .waiting()
            .await
            .map_err(|e| anyhow::anyhow!("the MCP server stopped: {e}"))?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
