//! A job's steps alone through the library (`report --step` writes them
//! with the rest of the page), for benchmarks of the steps pass by itself:
//! Markdown (or JSON, or the HTML fragment) of the steps the glob picks in
//! the reports given.
//!
//! ```sh
//! cargo run --release --example job_steps -- 'ProfilerStep*' rank0.sqlite rank1.sqlite
//! cargo run --release --example job_steps -- --json 'ProfilerStep*' rank*.sqlite
//! ```

use std::path::PathBuf;

use nsys2perfetto::steps::{measure_steps, JobSteps, StepOptions, StepPattern};
use nsys2perfetto::ReadOptions;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let write: fn(&JobSteps, &mut dyn std::io::Write) -> std::io::Result<()> =
        match args.first().map(String::as_str) {
            Some("--json") => JobSteps::write_json,
            Some("--html") => JobSteps::write_html,
            _ => JobSteps::write_markdown,
        };
    if args.first().is_some_and(|a| a.starts_with("--")) {
        args.remove(0);
    }
    let Some((pattern, reports)) = args.split_first() else {
        eprintln!("usage: job_steps [--json|--html] PATTERN REPORT...");
        std::process::exit(2);
    };
    let run = || -> nsys2perfetto::Result<JobSteps> {
        let options = StepOptions::new(StepPattern::new(pattern)?);
        let inputs: Vec<PathBuf> = reports.iter().map(PathBuf::from).collect();
        measure_steps(&inputs, &options, &ReadOptions::default(), &mut |_| {})
    };
    match run() {
        Ok(job) => write(&job, &mut std::io::stdout().lock()).expect("stdout"),
        Err(e) => {
            eprintln!("job_steps: error: {e}");
            std::process::exit(1);
        }
    }
}
