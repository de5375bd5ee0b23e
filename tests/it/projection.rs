//! The NVTX GPU projection equals NVIDIA's own (`nsys stats --report
//! nvtxgpuproj`, nsys 2022.4) on every fixture with NVTX ranges, CUDA API
//! calls and GPU work: projected start, duration, number of GPU operations,
//! and the thread of the range. Synthetic exports add the cases no fixture
//! has, each with its projections written out (and nsys's, where nsys is at
//! hand, equal to them).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::support::checker::{Slice, Value};
use crate::support::convert::{convert, synthetic};
use crate::support::fixtures::{require, Need};
use crate::support::source::{has_table, open};
use crate::support::synth::{GpuStream, Synth, Thread, HTOD};

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
    let rows: Vec<Vec<String>> = crate::support::nsys::csv_rows(&text)
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
    let (trace, _) = convert(input, &Default::default());
    trace.assert_valid();
    let mut out = Projections::new();
    for s in trace.slices.iter().filter(|s| s.category == "nvtx_gpu") {
        let arg = |name: &str| uint_arg(s, name);
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

fn uint_arg(slice: &Slice, name: &str) -> u64 {
    match slice.args.get(name) {
        Some(Value::Uint(v)) => *v,
        other => panic!("{name}: {other:?}"),
    }
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
        let (trace, _) = convert(&input, options);
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

// Synthetic exports: NVIDIA's definition where no fixture pins it down.

const MAIN: Thread = Thread { pid: 100, tid: 100 };
const OTHER: Thread = Thread { pid: 100, tid: 101 };
const STREAM: GpuStream = GpuStream {
    pid: 100,
    device: 0,
    context: 1,
    stream: 7,
};
const LAUNCH: &str = "cudaLaunchKernel_v7000";

/// A projection: (range, projected start, projected duration, GPU ops).
type Projection = (String, u64, u64, u64);

/// The projections of the export `fill` makes, sorted, and each one's source
/// range as (start, duration).
fn projected(fill: impl FnOnce(&mut Synth)) -> (Vec<Projection>, Vec<(u64, u64)>) {
    let (_dir, input) = synthetic(fill);
    if require(Need::Nsys).is_some() {
        assert_eq!(
            our_projections(&input),
            nsys_projections(&input),
            "projections differ from nsys's"
        );
    }
    let (trace, _) = convert(&input, &Default::default());
    trace.assert_valid();
    let mut found: Vec<_> = trace
        .slices
        .iter()
        .filter(|s| s.category == "nvtx_gpu")
        .map(|s| {
            let projection = (s.name.clone(), s.ts, s.dur, uint_arg(s, "gpu_ops"));
            let range = (uint_arg(s, "range_start"), uint_arg(s, "range_duration"));
            (projection, range)
        })
        .collect();
    found.sort();
    found.into_iter().unzip()
}

fn expected(projections: &[(&str, u64, u64, u64)]) -> Vec<Projection> {
    projections
        .iter()
        .map(|&(name, ts, dur, ops)| (name.to_owned(), ts, dur, ops))
        .collect()
}

#[test]
fn launches_from_another_thread_are_not_projected() {
    let (found, _) = projected(|s| {
        s.nvtx_push_pop(MAIN, 1_000..10_000, "step");
        s.api(OTHER, 2_000..3_000, LAUNCH).corr(1);
        s.kernel(STREAM, 4_000..5_000, "other").corr(1);
        s.api(MAIN, 6_000..7_000, LAUNCH).corr(2);
        s.kernel(STREAM, 8_000..8_500, "mine").corr(2);
    });
    assert_eq!(found, expected(&[("step", 8_000, 500, 1)]));
}

#[test]
fn only_launches_wholly_inside_the_range_are_projected() {
    let (found, _) = projected(|s| {
        s.nvtx_push_pop(MAIN, 1_000..5_000, "step");
        // Calls that start before the range, or end after it.
        s.api(MAIN, 500..1_500, LAUNCH).corr(1);
        s.kernel(STREAM, 6_000..7_000, "early").corr(1);
        s.api(MAIN, 4_500..5_500, LAUNCH).corr(2);
        s.kernel(STREAM, 7_000..8_000, "late").corr(2);
        // Calls on the range's edges are inside.
        s.api(MAIN, 1_000..1_200, LAUNCH).corr(3);
        s.kernel(STREAM, 2_000..2_500, "first").corr(3);
        s.api(MAIN, 4_800..5_000, "cudaMemsetAsync_v3020").corr(4);
        s.memset(STREAM, 5_500..5_600).bytes(256).corr(4);
    });
    assert_eq!(found, expected(&[("step", 2_000, 3_600, 2)]));
}

#[test]
fn nested_ranges_both_project() {
    let (found, _) = projected(|s| {
        s.nvtx_push_pop(MAIN, 1_000..20_000, "outer");
        s.nvtx_push_pop(MAIN, 2_000..8_000, "inner");
        s.api(MAIN, 3_000..3_500, LAUNCH).corr(1);
        s.kernel(STREAM, 4_000..6_000, "k").corr(1);
        s.api(MAIN, 10_000..10_500, "cudaMemcpyAsync_v3020").corr(2);
        s.memcpy(STREAM, 11_000..12_000, HTOD).bytes(4_096).corr(2);
    });
    assert_eq!(
        found,
        expected(&[("inner", 4_000, 2_000, 1), ("outer", 4_000, 8_000, 2)])
    );
}

#[test]
fn a_projection_lasts_until_its_work_ends_after_the_range() {
    let (found, range) = projected(|s| {
        s.nvtx_push_pop(MAIN, 1_000..2_000, "step");
        s.api(MAIN, 1_200..1_400, LAUNCH).corr(1);
        s.kernel(STREAM, 5_000..9_000, "k").corr(1);
        s.api(MAIN, 1_500..1_600, "cudaMemsetAsync_v3020").corr(2);
        s.memset(STREAM, 9_500..9_600).bytes(256).corr(2);
    });
    assert_eq!(found, expected(&[("step", 5_000, 4_600, 2)]));
    assert_eq!(range, [(1_000, 1_000)]);
}

#[test]
fn a_graph_launch_counts_once_with_all_its_kernels() {
    let (found, _) = projected(|s| {
        s.nvtx_push_pop(MAIN, 1_000..3_000, "replay");
        s.api(MAIN, 1_500..2_000, "cudaGraphLaunch_v10000").corr(9);
        for (node, span) in [(1, 4_000..5_000), (2, 5_000..6_500), (3, 6_500..7_000)] {
            s.kernel(STREAM, span, "node").corr(9).graph(1).node(node);
        }
        s.api(MAIN, 2_100..2_200, LAUNCH).corr(10);
        s.kernel(STREAM, 7_500..8_000, "k").corr(10);
    });
    assert_eq!(found, expected(&[("replay", 4_000, 4_000, 2)]));
}

#[test]
fn a_graph_run_traced_whole_is_not_projected() {
    let (found, _) = projected(|s| {
        s.nvtx_push_pop(MAIN, 1_000..3_000, "replay");
        s.api(MAIN, 1_500..2_000, "cudaGraphLaunch_v10000").corr(9);
        s.graph_run(STREAM, 4_000..9_000).corr(9).graph(1).exec(2);
        s.api(MAIN, 2_100..2_200, LAUNCH).corr(10);
        s.kernel(STREAM, 9_500..10_000, "k").corr(10);
    });
    assert_eq!(found, expected(&[("replay", 9_500, 500, 1)]));
}

#[test]
fn start_end_ranges_project_when_they_end_on_their_own_thread() {
    let (found, _) = projected(|s| {
        s.nvtx_start_end(MAIN, 1_000..5_000, "one thread");
        s.nvtx_start_end(MAIN, 1_000..6_000, "two threads")
            .ended_on(OTHER);
        s.api(MAIN, 2_000..2_500, LAUNCH).corr(1);
        s.kernel(STREAM, 3_000..4_000, "k").corr(1);
    });
    assert_eq!(found, expected(&[("one thread", 3_000, 1_000, 1)]));
}

#[test]
fn a_range_open_at_the_end_of_the_capture_ends_with_the_nvtx_data() {
    let (found, range) = projected(|s| {
        s.nvtx_push_pop(MAIN, 1_000.., "open");
        s.nvtx_push_pop(MAIN, 5_000..7_000, "closed");
        s.nvtx_mark(MAIN, 12_000, "last");
        s.api(MAIN, 2_000..2_500, LAUNCH).corr(1);
        s.kernel(STREAM, 3_000..4_000, "k").corr(1);
        s.api(MAIN, 8_000..8_500, LAUNCH).corr(2);
        s.kernel(STREAM, 9_000..9_500, "k").corr(2);
        // After the last NVTX event: outside.
        s.api(MAIN, 13_000..13_500, LAUNCH).corr(3);
        s.kernel(STREAM, 14_000..14_500, "k").corr(3);
    });
    assert_eq!(found, expected(&[("open", 3_000, 6_500, 2)]));
    assert_eq!(range, [(1_000, 11_000)]);
}

#[test]
fn a_range_open_at_the_end_of_the_capture_ends_with_the_last_nvtx_row() {
    let (found, range) = projected(|s| {
        s.nvtx_push_pop(MAIN, 1_000.., "open");
        s.nvtx_push_pop(MAIN, 1_500..1_600, "closed");
        // The last NVTX row: no range or mark, but it ends the NVTX data.
        s.nvtx_domain(MAIN, 1, "Loader").at(20_000);
        s.api(MAIN, 2_000..2_500, LAUNCH).corr(1);
        s.kernel(STREAM, 3_000..4_000, "k").corr(1);
        s.api(MAIN, 15_000..15_500, LAUNCH).corr(2);
        s.kernel(STREAM, 16_000..17_000, "k").corr(2);
    });
    assert_eq!(found, expected(&[("open", 3_000, 14_000, 2)]));
    assert_eq!(range, [(1_000, 19_000)]);
}
