//! `stats`' trace reports, a row per event, against nsys's own: nsys
//! 2022.4's `cudaapitrace` and `gputrace` are run here on a copy of each
//! export, and our `cuda_api_trace` and `cuda_gpu_trace` in CSV are the
//! files it writes, byte for byte (`cuda_gpu_trace` once 2022.4's two
//! habits that 2025.3 dropped are mapped: `None` for a missing value, and
//! its names of memory copies).

use std::path::Path;
use std::process::Command;

use crate::support::fixtures::{fixture, require, Need};
use crate::support::nsys::csv_rows;
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

/// Runs `stats --report REPORT --format csv` on `export`: its output.
fn ours_csv(export: &Path, report: &str) -> String {
    let out = program()
        .args(["stats", "--report", report, "--format", "csv"])
        .arg(export)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        export.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A line of nsys 2022.4's `gputrace` as 2025.3 writes it: a missing value
/// empty, not `None`, and a memory copy named as 2025.3's summaries name
/// it. The name, last, is quoted where it holds a comma (kernels): fields
/// before it are plain.
fn gpu_trace_line_2025(line: &str) -> String {
    let (plain, quoted) = match line.find('"') {
        Some(at) => line.split_at(at),
        None => (line, ""),
    };
    let mut fields: Vec<String> = plain.split(',').map(str::to_owned).collect();
    for field in &mut fields {
        if field == "None" {
            field.clear();
        }
    }
    if quoted.is_empty() {
        if let Some(name) = fields.last_mut() {
            *name = crate::stats::memcpy_2025_name(name);
        }
    }
    fields.join(",") + quoted
}

/// Exports with kernels, copies of several kinds (unified memory among
/// them) and memsets, of several nsys versions.
const GPU_FIXTURES: [&str; 6] = [
    "h100_torch_graph_node.sqlite",
    "dlprof_nsys_profile.sqlite",
    "cori_run1_report1.sqlite",
    "pipit_saxpy_mpi_cuda_rank0.sqlite",
    "llama3_real_inference_simulation.sqlite",
    "icon_gpu.sqlite",
];

#[test]
fn cuda_gpu_trace_is_what_nsys_writes_byte_for_byte() {
    if require(Need::Nsys).is_none() {
        return;
    }
    let mut compared = 0;
    for name in GPU_FIXTURES {
        let Some(export) = fixture(name) else {
            return;
        };
        let Some(theirs) = nsys_csv(&export, "gputrace") else {
            continue;
        };
        let theirs: String = theirs
            .lines()
            .map(|l| gpu_trace_line_2025(l) + "\n")
            .collect();
        let ours = ours_csv(&export, "cuda_gpu_trace");
        assert!(theirs.lines().count() > 15, "{name}: nsys traced GPU work");
        if ours != theirs {
            let first = ours.lines().zip(theirs.lines()).position(|(a, b)| a != b);
            panic!("{name}: the traces differ, first at line {first:?}");
        }
        compared += 1;
    }
    assert_eq!(compared, GPU_FIXTURES.len(), "nsys traced every fixture");
}

/// 2025.3's `nvtx_gpu_proj_trace` of the H100 captures, as NVIDIA wrote it.
#[test]
fn nvtx_gpu_proj_trace_is_what_nsys_2025_wrote_byte_for_byte() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    for name in ["h100_torch_graph_node", "h100_torch_graph_whole"] {
        let stored = shared.join(format!(
            "fixtures/nsys-2025.3-stats/{name}_nvtx_gpu_proj_trace.csv"
        ));
        let theirs = std::fs::read_to_string(stored).unwrap();
        let export = shared.join(format!("fixtures/sqlite/{name}.sqlite"));
        let ours = ours_csv(&export, "nvtx_gpu_proj_trace");
        assert!(
            theirs.lines().count() > 20,
            "{name}: NVIDIA projected ranges"
        );
        assert!(ours == theirs, "{name}: the traces differ");
    }
}

/// The same rows as nsys 2022.4's `nvtxgpuproj`, on every fixture it
/// projects ranges of, once three habits of 2022.4 that 2025.3 dropped are
/// mapped: `None` for a missing parent (2025.3: empty), the default NVTX
/// domain's ranges named without the leading `:`, and rows in no order (its
/// `ORDER BY "Projected Start"` names a column it calls `Projected
/// Start:ts_ns`, so SQLite sorts by a constant): its rows are compared in
/// 2025.3's order, by projected start, the longer first, then by range id.
#[test]
fn nvtx_gpu_proj_trace_has_the_rows_of_nsys_2022() {
    if require(Need::Nsys).is_none() {
        return;
    }
    let mut compared = 0;
    for name in FIXTURES.iter().chain(&["nsys-ai_h100_2gpu_1s.sqlite"]) {
        let Some(export) = fixture(name) else {
            return;
        };
        let Some(theirs) = nsys_csv(&export, "nvtxgpuproj") else {
            continue;
        };
        let mut theirs = csv_rows(&theirs);
        let header = theirs.remove(0);
        let number = |row: &[String], at: usize| row[at].parse::<i64>().unwrap();
        for row in &mut theirs {
            for field in row.iter_mut() {
                if field == "None" {
                    field.clear();
                }
            }
        }
        theirs.sort_by_key(|r| (number(r, 1), -number(r, 2), number(r, 11)));
        let mut ours = csv_rows(&ours_csv(&export, "nvtx_gpu_proj_trace"));
        assert_eq!(ours.remove(0), header, "{name}");
        assert_eq!(ours.len(), theirs.len(), "{name}: ranges");
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(a[1..], b[1..], "{name}: {a:?}");
            assert!(
                a[0] == b[0] || a[0] == format!(":{}", b[0]),
                "{name}: {a:?} {b:?}"
            );
        }
        compared += ours.len();
    }
    assert!(compared > 1000, "nsys projected ranges: {compared}");
}

/// nsys 2022.4's `nvtxpptrace`, row for row in the export's row order, on
/// every fixture with push/pop ranges, once its `None` (no parent) is
/// empty and its default domain's ranges get the leading `:` that 2025.3's
/// reports write (in the name and in the indented name). Names are
/// compared without their double quotes: 2022.4 writes a name that holds
/// some (`{"model_config": ...}`) neither quoted nor escaped, so CSV reads
/// it without them.
#[test]
fn nvtx_pushpop_trace_is_what_nsys_2022_writes() {
    if require(Need::Nsys).is_none() {
        return;
    }
    let mut compared = 0;
    for name in FIXTURES.iter().chain(&["nsys-ai_h100_2gpu_1s.sqlite"]) {
        let Some(export) = fixture(name) else {
            return;
        };
        let Some(theirs) = nsys_csv(&export, "nvtxpptrace") else {
            continue;
        };
        let theirs = csv_rows(&theirs);
        let ours = csv_rows(&ours_csv(&export, "nvtx_pushpop_trace"));
        assert_eq!(ours.len(), theirs.len(), "{name}: ranges");
        assert_eq!(ours[0], theirs[0], "{name}: header");
        let unquoted = |row: &[String]| -> Vec<String> {
            let mut row: Vec<String> = row
                .iter()
                .map(|f| match f.as_str() {
                    "None" => String::new(),
                    _ => f.clone(),
                })
                .collect();
            row[5] = row[5].replace('"', "");
            row[13] = row[13].replace('"', "");
            row
        };
        for (a, b) in ours.iter().zip(&theirs).skip(1) {
            let (a, b) = (unquoted(a), unquoted(b));
            assert_eq!(a[..5], b[..5], "{name}: {a:?}");
            assert_eq!(a[6..13], b[6..13], "{name}: {a:?}");
            let default_domain = a[5] == format!(":{}", b[5]);
            assert!(a[5] == b[5] || default_domain, "{name}: {a:?} {b:?}");
            let indent = "--".repeat(a[8].parse().unwrap());
            let tree = match default_domain {
                true => format!("{indent}:{}", b[5]),
                false => b[13].clone(),
            };
            assert_eq!(a[13], tree, "{name}: {a:?}");
        }
        compared += ours.len() - 1;
    }
    assert!(compared > 1000, "nsys traced push/pop ranges: {compared}");
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
