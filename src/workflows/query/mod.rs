//! `query`: read-only SQL over a run. Through trace_processor over the
//! run's Perfetto trace (converted once and kept in a cache, as the hub
//! keeps its traces), or, where no trace_processor is at hand, over the
//! run's SQLite export opened read-only. A statement that writes is
//! refused before anything runs ([`statements`]).

pub mod export;
pub mod shell;
pub mod statements;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::render::table::{Cell, Table};
use crate::workflows::hub::{Cache, Entry};
use crate::{Options, Progress};

pub use shell::{find_trace_processor, TRACE_PROCESSOR_VARIABLE};

/// What answers a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    /// trace_processor_shell, over the run's trace.
    TraceProcessor(PathBuf),
    /// SQLite, over the run's export.
    Export,
}

/// The rows a query gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    /// The names of its columns.
    pub columns: Vec<String>,
    /// Its rows, a cell per column.
    pub rows: Vec<Vec<Cell>>,
    /// How many rows a limit left out.
    pub left_out: usize,
}

impl Answer {
    /// As a table, written as every other table is (`--format`).
    pub fn table(&self) -> Table {
        Table {
            name: "query".into(),
            title: "Query".into(),
            columns: self.columns.clone(),
            rows: self.rows.clone(),
            no_data: None,
            incomplete: Vec::new(),
        }
    }

    /// At most `limit` rows, counting the others left out.
    pub fn limited(mut self, limit: Option<usize>) -> Answer {
        if let Some(limit) = limit.filter(|&l| l < self.rows.len()) {
            self.left_out += self.rows.len() - limit;
            self.rows.truncate(limit);
        }
        self
    }
}

/// Runs `sql` over the file `run`, named alone, with `engine`: every
/// statement a read (else refused, nothing run, before the run is even
/// looked at); the last statement's rows are the answer. The trace is
/// converted with `options` where `cache` does not hold it yet, `progress`
/// hearing how far; `options.cancel` stops the work, leaving nothing.
pub fn query_file(
    cache: &Cache,
    run: &Path,
    sql: &str,
    engine: &Engine,
    options: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<Answer> {
    let statements = statements::reads(sql)?;
    crate::workflows::input::sniff(run)?;
    let entry = Entry::of_file(run).map_err(|cause| Error::Unreadable {
        path: run.to_owned(),
        cause,
    })?;
    match engine {
        Engine::TraceProcessor(tp) => {
            let trace = cache.trace(&entry, options, progress)?;
            let cancel = options.read.cancel.as_deref();
            shell::run(tp, trace.path(), &statements, cancel, &entry.path)
        }
        Engine::Export => {
            let readable = cache.readable(&entry, options)?;
            export::run(
                readable.path(),
                &statements,
                options.read.cancel.clone(),
                &entry.path,
            )
        }
    }
}

/// Where the program keeps what queries convert, where no directory is
/// given: `$XDG_CACHE_HOME/nsys2perfetto/query`, or
/// `~/.cache/nsys2perfetto/query`; none without either variable.
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("nsys2perfetto").join("query"))
}
