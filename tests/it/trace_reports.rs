//! `stats`' trace reports, a row per event, against nsys's own: nsys
//! 2022.4's `cudaapitrace` is run here on a copy of each export, and our
//! `cuda_api_trace` in CSV is the file it writes, byte for byte.

use std::path::Path;
use std::process::Command;

use crate::support::fixtures::{fixture, require, Need};
use crate::support::program::program;

/// Exports of several nsys versions, with calls of one start on several
/// threads, backtrace records and threads of several names.
const FIXTURES: [&str; 5] = [
    "h100_torch_graph_node.sqlite",
    "dlprof_nsys_profile.sqlite",
    "cori_run1_report1.sqlite",
    "pipit_saxpy_mpi_cuda_rank0.sqlite",
    "llama3_real_inference_simulation.sqlite",
];

/// What nsys 2022.4's `report` writes of `export` in CSV, or `None` where
/// it writes nothing.
fn nsys_csv(export: &Path, report: &str) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    // nsys may write into the export it reads: give it a copy.
    let copy = dir.path().join("report.sqlite");
    std::fs::copy(export, &copy).unwrap();
    let out = Command::new("nsys")
        .args(["stats", "--format", "csv", "--report", report, "--output"])
        .arg(dir.path().join("out"))
        .arg(&copy)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nsys stats: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(dir.path().join(format!("out_{report}.csv")))
        .ok()
        .filter(|t| !t.is_empty())
}

#[test]
fn cuda_api_trace_is_what_nsys_writes_byte_for_byte() {
    if require(Need::Nsys).is_none() {
        return;
    }
    let mut compared = 0;
    for name in FIXTURES {
        let Some(export) = fixture(name) else {
            return;
        };
        let Some(theirs) = nsys_csv(&export, "cudaapitrace") else {
            continue;
        };
        let out = program()
            .args(["stats", "--report", "cuda_api_trace", "--format", "csv"])
            .arg(&export)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours = String::from_utf8(out.stdout).unwrap();
        assert!(theirs.lines().count() > 50, "{name}: nsys traced calls");
        assert!(ours == theirs, "{name}: the traces differ");
        compared += 1;
    }
    assert_eq!(compared, FIXTURES.len(), "nsys traced every fixture");
}
