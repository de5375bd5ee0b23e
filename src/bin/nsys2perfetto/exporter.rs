//! `--nsys`, the flag of every command that reads reports: the nsys CLI
//! that exports them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use nsys2perfetto::ReadOptions;

use crate::signals::Signals;

/// The nsys CLI that exports `.nsys-rep`/`.qdrep` reports.
#[derive(clap::Args, Clone, Debug)]
pub struct Exporter {
    /// The nsys CLI used to export .nsys-rep/.qdrep reports.
    #[arg(long, value_name = "PATH", default_value = "nsys")]
    pub nsys: PathBuf,
}

impl Exporter {
    /// How the command reads its inputs: see [`read_options`].
    pub fn read_options(&self, signals: &Signals) -> ReadOptions {
        read_options(&self.nsys, signals)
    }
}

/// How a command reads its inputs: reports exported with `nsys`, the work
/// stopped by the program's signals.
pub fn read_options(nsys: &Path, signals: &Signals) -> ReadOptions {
    ReadOptions::new()
        .with_nsys(nsys)
        .with_cancel(Arc::clone(&signals.cancel))
}
