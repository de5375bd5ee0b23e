//! The NVTX GPU projection equals NVIDIA's own (`nsys stats --report
//! nvtxgpuproj`, nsys 2022.4) on every fixture with NVTX ranges, CUDA API
//! calls and GPU work: projected start, duration, number of GPU operations,
//! and the thread of the range.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use support::checker::Value;
use support::fixtures::{require, Need};
use support::source::{has_table, open};

/// (projected start, projected duration, GPU ops, pid, tid) -> how many.
type Projections = BTreeMap<(u64, u64, u64, u64, u64), usize>;

fn nsys_projections(input: &Path) -> Projections {
    // nsys writes temporary tables into the export: give it a copy.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("report.sqlite");
    std::fs::copy(input, &copy).unwrap();
    let out = Command::new("nsys")
        .args([
            "stats",
            "--report",
            "nvtxgpuproj",
            "--format",
            "csv",
            "--output",
            "-",
        ])
        .arg(&copy)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nsys stats failed on {}",
        input.display()
    );
    parse_projections(&String::from_utf8_lossy(&out.stdout))
}

/// The rows of an `nvtxgpuproj` / `nvtx_gpu_proj_trace` CSV.
fn parse_projections(text: &str) -> Projections {
    let text: String = text
        .lines()
        .filter(|l| !l.starts_with("Processing"))
        .map(|l| format!("{l}\n"))
        .collect();
    let rows: Vec<Vec<String>> = support::nsys::csv_rows(&text)
        .into_iter()
        .filter(|r| r.len() > 1)
        .collect();
    // "SKIPPED: ... does not contain NV Tools Extension (NVTX) data."
    let Some(header) = rows.first().filter(|h| h.len() > 1) else {
        return Projections::new();
    };
    let at = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{name} in {header:?}"))
    };
    let columns = [
        at("Projected Start (ns)"),
        at("Projected Duration (ns)"),
        at("NumGPUOps"),
        at("PID"),
        at("TID"),
    ];
    let mut out = Projections::new();
    for row in &rows[1..] {
        let n = |i: usize| row[columns[i]].parse::<u64>().unwrap();
        *out.entry((n(0), n(1), n(2), n(3), n(4))).or_default() += 1;
    }
    out
}

fn our_projections(input: &Path) -> Projections {
    let (trace, _) = support::convert::convert(input, &Default::default());
    trace.assert_valid();
    let mut out = Projections::new();
    for s in trace.slices.iter().filter(|s| s.category == "nvtx_gpu") {
        let arg = |name: &str| match s.args.get(name) {
            Some(Value::Uint(v)) => *v,
            other => panic!("{name}: {other:?}"),
        };
        // "NVTX ranges of thread {tid} (pid {pid}) projected onto GPU ..."
        let description = trace.tracks[&s.track].description.as_deref().unwrap_or("");
        let words: Vec<&str> = description.split([' ', '(', ')']).collect();
        let after = |word: &str| -> u64 {
            let at = words.iter().position(|w| *w == word).unwrap();
            words[at + 1].parse().unwrap()
        };
        *out.entry((s.ts, s.dur, arg("gpu_ops"), after("pid"), after("thread")))
            .or_default() += 1;
    }
    out
}

#[test]
fn projected_ranges_equal_nsys_nvtxgpuproj() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    if require(Need::Nsys).is_none() {
        return;
    }
    let root = shared.join("fixtures/sqlite");
    let mut compared = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for input in entries {
        let db = open(&input);
        let applies = has_table(&db, "NVTX_EVENTS")
            && has_table(&db, "CUPTI_ACTIVITY_KIND_RUNTIME")
            && ["KERNEL", "MEMCPY", "MEMSET"]
                .iter()
                .any(|t| has_table(&db, &format!("CUPTI_ACTIVITY_KIND_{t}")));
        if !applies {
            continue;
        }
        let theirs = nsys_projections(&input);
        let ours = our_projections(&input);
        let name = input.file_name().unwrap().to_string_lossy();
        assert_eq!(ours, theirs, "{name}: projections differ from nsys's");
        eprintln!(
            "{name}: {} projected ranges equal nsys's",
            theirs.values().sum::<usize>()
        );
        compared += 1;
    }
    assert!(compared >= 6, "fixtures compared with nsys: {compared}");
}

/// The H100 captures were made with nsys 2025.3, whose own projection of them
/// is stored beside them: it must agree too (2022.4's is compared above).
#[test]
fn projected_ranges_equal_nsys_2025_3_on_the_h100_captures() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let root = shared.join("fixtures");
    for name in ["h100_torch_graph_node", "h100_torch_graph_whole"] {
        let csv = root.join(format!("nsys-2025.3-stats/{name}_nvtx_gpu_proj_trace.csv"));
        let theirs = parse_projections(&std::fs::read_to_string(&csv).unwrap());
        assert!(!theirs.is_empty(), "{name}: nsys 2025.3 projected ranges");
        let ours = our_projections(&root.join(format!("sqlite/{name}.sqlite")));
        assert_eq!(
            ours, theirs,
            "{name}: projections differ from nsys 2025.3's"
        );
    }
}

#[test]
fn the_projection_can_be_left_out() {
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/demo.sqlite");
    let convert = |options: &nsys2perfetto::Options| {
        let (trace, _) = support::convert::convert(&input, options);
        trace.assert_valid();
        trace
    };
    let full = convert(&Default::default());
    assert!(
        full.count("nvtx_gpu") > 0,
        "the demo's NVTX ranges launch GPU work"
    );
    let mut options = nsys2perfetto::Options::default();
    options.parts = options.parts.without(nsys2perfetto::Part::NvtxGpu);
    let light = convert(&options);
    assert_eq!(light.count("nvtx_gpu"), 0);
    for category in ["nvtx", "cuda_api", "cuda_kernel"] {
        assert_eq!(light.totals(category), full.totals(category), "{category}");
    }
}
