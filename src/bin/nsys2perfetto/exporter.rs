//! `--nsys`, the flag of every command that reads reports: the nsys CLI
//! that exports them.

use std::path::PathBuf;

/// The nsys CLI that exports `.nsys-rep`/`.qdrep` reports.
#[derive(clap::Args, Clone, Debug)]
pub struct Exporter {
    /// The nsys CLI used to export .nsys-rep/.qdrep reports.
    #[arg(long, value_name = "PATH", default_value = "nsys")]
    pub nsys: PathBuf,
}
