//! `report` against independent computations over the source: plain
//! interval unions in this file over the rows SQL reads (busy time, idle
//! stretches and their split, overlap), SQL joins of work and launch calls
//! (delays), SQL sums (kinds, kernels), and NVIDIA's own
//! `nvtx_gpu_proj_sum` of the H100 captures (NVTX scopes). Real fixtures:
//! the two H100 captures and nsys-ai_h100_2gpu_1s (two GPUs, two
//! processes); synthetic exports for the corners: overlapping streams,
//! communication beside computation on two GPUs, a GPU idle behind a
//! synchronization, no NVTX.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;

use crate::support::convert::synthetic;
use crate::support::fixtures::{fixture, require, skip, Need};
use crate::support::program::program;
use crate::support::source::{has_table, open};
use crate::support::synth::{GpuStream, Synth, Thread, HTOD};
use nsys2perfetto::report::{report, report_file, summary_table, ReportOptions, RunReport};
use nsys2perfetto::stats::Cell;
use nsys2perfetto::{ReadOptions, Report};
use rusqlite::Connection;

/// A GPU operation as SQL reads it.
#[derive(Clone, Debug)]
struct Op {
    start: i64,
    end: i64,
    device: i64,
    pid: Option<u32>,
    corr: Option<i64>,
    /// "kernel", "memset", "CUDA graph", or "memcpy <copyKind>".
    what: String,
}

fn ops(db: &Connection) -> Vec<Op> {
    let mut out = Vec::new();
    for (table, what) in [
        ("CUPTI_ACTIVITY_KIND_KERNEL", "'kernel'"),
        ("CUPTI_ACTIVITY_KIND_MEMCPY", "'memcpy ' || copyKind"),
        ("CUPTI_ACTIVITY_KIND_MEMSET", "'memset'"),
        ("CUPTI_ACTIVITY_KIND_GRAPH_TRACE", "'CUDA graph'"),
    ] {
        if !has_table(db, table) {
            continue;
        }
        let sql = format!(
            "SELECT start, end, deviceId, (globalPid >> 24) & 16777215, correlationId, {what} FROM {table}"
        );
        let mut stmt = db.prepare(&sql).unwrap();
        let rows = stmt
            .query_map([], |r| {
                Ok(Op {
                    start: r.get(0)?,
                    end: r.get(1)?,
                    device: r.get::<_, Option<i64>>(2)?.unwrap_or(0),
                    pid: r.get::<_, Option<i64>>(3)?.map(|p| p as u32),
                    corr: r.get(4)?,
                    what: r.get(5)?,
                })
            })
            .unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    // The reader's time order: by start, instants first, then longest first.
    out.sort_by_key(|o| (o.start, o.end > o.start, std::cmp::Reverse(o.end)));
    out
}

/// The launch calls, by (pid, correlationId): start and end; records that
/// repeat a call for its backtrace (eventClass 67, 68) left out.
fn calls(db: &Connection) -> HashMap<(u32, i64), (i64, i64)> {
    let sql = "SELECT (globalTid >> 24) & 16777215, correlationId, start, end
               FROM CUPTI_ACTIVITY_KIND_RUNTIME
               WHERE correlationId IS NOT NULL AND (eventClass IS NULL OR eventClass NOT IN (67, 68))";
    let mut stmt = db.prepare(sql).unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                (r.get::<_, i64>(0)? as u32, r.get(1)?),
                (r.get(2)?, r.get(3)?),
            ))
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// One GPU as computed here.
#[derive(Debug, Default)]
struct Expected {
    first: i64,
    last: i64,
    busy: i64,
    host_bound: i64,
    waiting: i64,
    unattributed: i64,
    /// Every idle stretch, longest first (earlier first among equals).
    gaps: Vec<(i64, i64)>,
}

/// Per device: the union of its work merged by hand, and each gap split at
/// the start of the launch call of the first operation after it.
fn expected(ops: &[Op], calls: &HashMap<(u32, i64), (i64, i64)>) -> BTreeMap<i64, Expected> {
    let mut by_device: BTreeMap<i64, Vec<&Op>> = BTreeMap::new();
    for op in ops {
        by_device.entry(op.device).or_default().push(op);
    }
    let mut out = BTreeMap::new();
    for (device, ops) in by_device {
        let mut e = Expected {
            first: ops[0].start,
            ..Expected::default()
        };
        // Merged intervals.
        let mut merged: Vec<(i64, i64)> = Vec::new();
        for op in &ops {
            match merged.last_mut() {
                Some(last) if op.start <= last.1 => last.1 = last.1.max(op.end),
                _ => merged.push((op.start, op.end)),
            }
        }
        e.busy = merged.iter().map(|(s, e)| e - s).sum();
        e.last = merged.last().unwrap().1;
        for pair in merged.windows(2) {
            let (g0, g1) = (pair[0].1, pair[1].0);
            e.gaps.push((g0, g1));
            let after = ops.iter().find(|o| o.start == g1).unwrap();
            let call = after
                .pid
                .zip(after.corr)
                .and_then(|key| calls.get(&key))
                .filter(|c| c.0 <= after.start);
            match call {
                Some(&(call_start, _)) => {
                    let from = call_start.clamp(g0, g1);
                    e.host_bound += from - g0;
                    e.waiting += g1 - from;
                }
                None => e.unattributed += g1 - g0,
            }
        }
        e.gaps
            .sort_by_key(|&(s, end)| (std::cmp::Reverse(end - s), s));
        out.insert(device, e);
    }
    out
}

/// The `q` quantile by nearest rank.
fn nearest_rank(values: &mut [i64], q: f64) -> i64 {
    values.sort_unstable();
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

/// Whether `got` is within the histogram's 1/128 of `exact`.
fn close(got: i64, exact: i64) -> bool {
    (got - exact).abs() <= exact / 128 + 1
}

fn check_against_source(path: &Path) {
    let db = open(path);
    let run = report_file(path, &ReportOptions::default(), &ReadOptions::default()).unwrap();
    let ops = ops(&db);
    let calls = calls(&db);
    let expected = expected(&ops, &calls);
    let name = path.display();

    // Per GPU: busy, span, idle split, longest stretches, time line.
    assert_eq!(
        run.gpus.iter().map(|g| g.device).collect::<Vec<_>>(),
        expected.keys().copied().collect::<Vec<_>>(),
        "{name}: GPUs"
    );
    for gpu in &run.gpus {
        let e = &expected[&gpu.device];
        let got = (gpu.first_start, gpu.last_end, gpu.busy);
        assert_eq!(
            got,
            (e.first, e.last, e.busy),
            "{name}: GPU {} busy",
            gpu.device
        );
        let split = (gpu.host_bound, gpu.waiting, gpu.unattributed);
        assert_eq!(
            split,
            (e.host_bound, e.waiting, e.unattributed),
            "{name}: GPU {} idle split",
            gpu.device
        );
        assert_eq!(
            gpu.busy + e.host_bound + e.waiting + e.unattributed,
            gpu.span()
        );
        let stretches: Vec<(i64, i64)> =
            gpu.largest_idle.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(
            stretches,
            e.gaps[..e.gaps.len().min(5)],
            "{name}: GPU {} stretches",
            gpu.device
        );
        assert_eq!(
            gpu.timeline.busy.iter().sum::<i64>(),
            gpu.busy,
            "{name}: time line busy"
        );
        assert_eq!(
            gpu.timeline.waiting.iter().sum::<i64>(),
            gpu.waiting,
            "{name}: time line waiting"
        );
    }

    // What the threads did in the stretches: tests/it/idle_threads.rs.

    // Kinds: memory operations by direction and memsets from SQL sums;
    // every kernel kind together is the kernels' sum.
    let kind_time = |kind: &str| {
        run.kinds
            .iter()
            .find(|k| k.kind == kind)
            .map_or(0, |k| k.time)
    };
    let mut sums: BTreeMap<String, i128> = BTreeMap::new();
    for op in &ops {
        let label = match op.what.as_str() {
            "memcpy 1" => "memcpy HtoD",
            "memcpy 2" => "memcpy DtoH",
            "memcpy 8" => "memcpy DtoD",
            other => other,
        };
        *sums.entry(label.to_owned()).or_default() += i128::from(op.end - op.start);
    }
    for (label, total) in &sums {
        if label == "kernel" {
            let not_kernels = ["memcpy", "memset", "CUDA graph"];
            let kernels: i128 = run
                .kinds
                .iter()
                .filter(|k| !not_kernels.iter().any(|n| k.kind.starts_with(n)))
                .map(|k| k.time)
                .sum();
            assert_eq!(kernels, *total, "{name}: kernel kinds");
        } else {
            assert_eq!(kind_time(label), *total, "{name}: {label}");
        }
    }

    // Launch delays of memsets and copies (their kind needs no pattern):
    // from the call's end to the operation's start, by an SQL join.
    for (what, kind) in [("memset", "memset"), ("memcpy 1", "memcpy HtoD")] {
        let mut delays: Vec<i64> = ops
            .iter()
            .filter(|o| o.what == what)
            .filter_map(|o| {
                let call = calls.get(&(o.pid?, o.corr?)).filter(|c| c.0 <= o.start)?;
                Some((o.start - call.1).max(0))
            })
            .collect();
        let Some(l) = run.launches.iter().find(|l| l.kind == kind) else {
            assert!(delays.is_empty(), "{name}: {kind} launches missing");
            continue;
        };
        assert_eq!(l.launched, delays.len() as u64, "{name}: {kind} launched");
        for (i, q) in [0.5, 0.9, 0.99].into_iter().enumerate() {
            let exact = nearest_rank(&mut delays, q);
            assert!(
                close(l.delay[i], exact),
                "{name}: {kind} delay q{q}: {} vs {exact}",
                l.delay[i]
            );
        }
    }

    // Top kernels: SQL's sums by name.
    let sql = "SELECT COALESCE(d.value, s.value), SUM(k.end - k.start), COUNT(*)
               FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
               LEFT JOIN StringIds d ON d.id = k.demangledName
               GROUP BY 1 ORDER BY 2 DESC";
    let mut stmt = db.prepare(sql).unwrap();
    let kernels: Vec<(String, i64, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        run.kernel_time,
        kernels.iter().map(|k| i128::from(k.1)).sum::<i128>()
    );
    for (got, (kname, total, count)) in run.top_kernels.iter().zip(&kernels) {
        assert_eq!(got.time, i128::from(*total), "{name}: kernel {kname}");
        assert_eq!(got.count, Some(*count as u64));
    }
    assert_eq!(run.top_kernels.len(), kernels.len().min(10));

    // Findings: as `analyze` counts them.
    let findings = nsys2perfetto::analyze::analyze_file(
        path,
        &nsys2perfetto::analyze::Rule::ALL,
        &nsys2perfetto::analyze::Thresholds::default(),
        &ReadOptions::default(),
    )
    .unwrap();
    for (f, rule) in run.findings.iter().zip(nsys2perfetto::analyze::Rule::ALL) {
        assert_eq!(f.count, findings.count(rule), "{name}: {}", f.rule);
    }

    // The capture.
    let capture: (i64, i64) = db
        .query_row(
            "SELECT startTime, stopTime FROM ANALYSIS_DETAILS",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(run.capture, Some(capture));
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn h100_captures_match_their_source() {
    for name in [
        "h100_torch_graph_node.sqlite",
        "h100_torch_graph_whole.sqlite",
    ] {
        let Some(path) = fixture(name) else { return };
        check_against_source(&path);
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn two_gpus_of_two_processes_match_their_source() {
    let Some(path) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    check_against_source(&path);
}

/// NVIDIA's `nvtx_gpu_proj_sum` of a capture, by grouped name.
fn nvidia_projection(capture: &str) -> Option<BTreeMap<String, (i128, u64)>> {
    let dir = require(Need::Shared)?.join("fixtures/nsys-2025.3-stats");
    let text =
        std::fs::read_to_string(dir.join(format!("{capture}_nvtx_gpu_proj_sum.csv"))).unwrap();
    let rows = crate::support::nsys::csv_rows(&text);
    let at = |column: &str| rows[0].iter().position(|c| c == column).unwrap();
    let (range, total, instances) = (
        at("Range"),
        at("Total Proj Time (ns)"),
        at("Range Instances"),
    );
    let mut by_name = BTreeMap::new();
    for row in &rows[1..] {
        let name = row[range].strip_prefix(':').unwrap_or(&row[range]);
        // The rule of `--group-names`, written again: PyTorch's decorations
        // go, then a number ending the name after `#` or a space.
        let name = name.split(", op_id = ").next().unwrap();
        let name = match name.rsplit_once([' ', '#']) {
            Some((head, n))
                if !head.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty() =>
            {
                head
            }
            _ => name,
        }
        .to_owned();
        let sum: &mut (i128, u64) = by_name.entry(name).or_default();
        sum.0 += row[total].parse::<i128>().unwrap();
        sum.1 += row[instances].parse::<u64>().unwrap();
    }
    Some(by_name)
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn nvtx_scopes_are_nvidias_projection() {
    for capture in ["h100_torch_graph_node", "h100_torch_graph_whole"] {
        let Some(path) = fixture(&format!("{capture}.sqlite")) else {
            return;
        };
        let Some(nvidia) = nvidia_projection(capture) else {
            return;
        };
        let run = report_file(&path, &ReportOptions::default(), &ReadOptions::default()).unwrap();
        assert!(run.nvtx.skipped.is_none());
        // Times and counts of ranges (the count JSON gives as `nvtx.top[].count`).
        let mut expected: Vec<(&String, i128, Option<u64>)> =
            nvidia.iter().map(|(n, t)| (n, t.0, Some(t.1))).collect();
        expected.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let got: Vec<(&String, i128, Option<u64>)> = run
            .nvtx
            .top
            .iter()
            .map(|n| (&n.name, n.time, n.count))
            .collect();
        assert_eq!(got, expected[..expected.len().min(10)], "{capture}");
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn pytorch_names_group_in_the_nvtx_scopes() {
    let Some(path) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let run = report_file(&path, &ReportOptions::default(), &ReadOptions::default()).unwrap();
    // 16.8k ranges with an op_id each: grouped, no name keeps one.
    assert!(!run.nvtx.top.is_empty());
    assert!(
        run.nvtx.top.iter().all(|n| !n.name.contains("op_id")),
        "{:?}",
        run.nvtx.top
    );
}

/// Process 1 on GPU 0 (two streams) and GPU 1.
const MAIN: Thread = Thread { pid: 1, tid: 1 };
const S1: GpuStream = GpuStream {
    pid: 1,
    device: 0,
    context: 1,
    stream: 7,
};
const S2: GpuStream = GpuStream {
    pid: 1,
    device: 0,
    context: 1,
    stream: 8,
};
const G1: GpuStream = GpuStream {
    pid: 1,
    device: 1,
    context: 2,
    stream: 9,
};

fn report_of(fill: impl FnOnce(&mut Synth)) -> RunReport {
    let (_dir, input) = synthetic(fill);
    let r = Report::open(&input).unwrap();
    report(&r, &ReportOptions::default()).unwrap()
}

/// The measure of the intersection of two sets of intervals, by hand.
fn intersection(a: &[(i64, i64)], b: &[(i64, i64)]) -> i64 {
    let union = |v: &[(i64, i64)]| {
        let mut v = v.to_vec();
        v.sort();
        let mut m: Vec<(i64, i64)> = Vec::new();
        for (s, e) in v {
            match m.last_mut() {
                Some(l) if s <= l.1 => l.1 = l.1.max(e),
                _ => m.push((s, e)),
            }
        }
        m
    };
    let (a, b) = (union(a), union(b));
    let mut total = 0;
    for &(s1, e1) in &a {
        for &(s2, e2) in &b {
            total += (e1.min(e2) - s1.max(s2)).max(0);
        }
    }
    total
}

#[test]
fn overlapping_streams_count_once_and_communication_overlap_is_measured() {
    let gemms = [(1_000, 5_000), (9_000, 12_000)];
    let nccl = [(3_000, 10_000), (4_000, 6_000)];
    let run = report_of(|s| {
        s.process(1, "python3");
        for (i, &(a, b)) in gemms.iter().enumerate() {
            s.kernel(S1, a..b, "sm90_xmma_gemm_bf16").corr(i as i64 + 1);
        }
        for (i, &(a, b)) in nccl.iter().enumerate() {
            s.kernel(S2, a..b, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL")
                .corr(i as i64 + 10);
        }
        // GPU 1: communication alone.
        s.kernel(G1, 2_000..3_000, "ncclDevKernel_AllGather_RING_LL")
            .corr(20);
    });
    let gpu0 = &run.gpus[0];
    // The union of both streams: 1000..12000, no gap.
    assert_eq!((gpu0.busy, gpu0.span()), (11_000, 11_000));
    assert_eq!(gpu0.host_bound + gpu0.waiting + gpu0.unattributed, 0);
    assert_eq!(gpu0.communication, 7_000);
    assert_eq!(gpu0.overlapped, intersection(&nccl, &gemms));
    let gpu1 = &run.gpus[1];
    assert_eq!((gpu1.communication, gpu1.overlapped), (1_000, 0));
    let kind = |k: &str| run.kinds.iter().find(|x| x.kind == k).unwrap().time;
    assert_eq!(kind("GEMM"), 7_000);
    assert_eq!(kind("communication"), 10_000);
}

#[test]
fn a_gpu_idle_behind_a_synchronization_is_waiting_after_the_launch() {
    let run = report_of(|s| {
        s.process(1, "python3");
        s.thread(MAIN, "main");
        s.api(MAIN, 500..900, "cudaLaunchKernel_v7000").corr(1);
        s.kernel(S1, 1_000..2_000, "elementwise_kernel").corr(1);
        // The host issues the copy at 2500; it starts at 6000, after a
        // synchronization on another stream held it.
        s.api(MAIN, 2_500..2_600, "cudaMemcpyAsync_v3020").corr(2);
        s.api(MAIN, 2_700..5_900, "cudaStreamSynchronize_v3020")
            .corr(3);
        s.memcpy(S1, 6_000..6_500, HTOD).corr(2);
        // A kernel whose launch call the export lacks.
        s.kernel(S1, 7_000..7_200, "elementwise_kernel").corr(99);
    });
    let gpu = &run.gpus[0];
    assert_eq!(gpu.busy, 1_000 + 500 + 200);
    assert_eq!(gpu.host_bound, 2_500 - 2_000);
    assert_eq!(gpu.waiting, 6_000 - 2_500);
    assert_eq!(gpu.unattributed, 7_000 - 6_500);
    let longest = &gpu.largest_idle[0];
    assert_eq!(
        (longest.start, longest.end, longest.waiting_from),
        (2_000, 6_000, Some(2_500))
    );
    let main = &longest.threads[0];
    assert_eq!(main.name.as_deref(), Some("main"));
    assert_eq!(main.call, Some(("cudaStreamSynchronize".to_owned(), 3_200)));
    assert!(
        run.nvtx.skipped.as_deref().unwrap().contains("NVTX_EVENTS"),
        "{:?}",
        run.nvtx
    );
    // Launch delays: copy 6000 - 2600; kernel 1000 - 900.
    let delay = |k: &str| run.launches.iter().find(|l| l.kind == k).unwrap().delay[0];
    assert!(
        close(delay("memcpy HtoD"), 3_400),
        "{}",
        delay("memcpy HtoD")
    );
    assert_eq!(delay("elementwise"), 100);
}

#[test]
fn user_kinds_come_before_the_built_in_ones() {
    let (_dir, input) = synthetic(|s| {
        s.process(1, "python3");
        s.kernel(S1, 1_000..2_000, "fused_moe_gemm_kernel").corr(1);
        s.kernel(S1, 3_000..3_500, "sm90_gemm").corr(2);
    });
    let mut options = ReportOptions::default();
    options.kinds = vec!["moe=moe".parse().unwrap()];
    let run = report_file(&input, &options, &ReadOptions::default()).unwrap();
    let kinds: Vec<(&str, i128)> = run
        .kinds
        .iter()
        .map(|k| (k.kind.as_str(), k.time))
        .collect();
    assert_eq!(kinds, [("moe", 1_000), ("GEMM", 500)]);
}

#[test]
fn pages_in_three_formats_hold_the_same_numbers() {
    let (dir, input) = synthetic(|s| {
        s.process(1, "python3");
        s.api(MAIN, 500..900, "cudaLaunchKernel_v7000").corr(1);
        s.kernel(S1, 1_000..2_000, "sm90_xmma_gemm").corr(1);
        s.nvtx_push_pop(MAIN, 400..950, "aten::mm, op_id = 7");
    });
    for (file, marker) in [
        ("page.html", "<!DOCTYPE html>"),
        ("page.md", "# "),
        ("page.json", "{\"runs\": ["),
    ] {
        let out = dir.path().join(file);
        let status = program()
            .arg("report")
            .arg(&input)
            .arg("-o")
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success());
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.starts_with(marker), "{file}: {text}");
        // The NVTX scope, grouped, and its projected time.
        assert!(text.contains("aten::mm"), "{file}");
        assert!(!text.contains("op_id = 7"), "{file}");
        if file != "page.json" {
            assert!(text.contains("1.000 µs"), "{file}");
        } else {
            assert!(text.contains("\"busy\": 1000"), "{file}");
            json_parses(&out);
        }
    }
    assert!(std::fs::read_to_string(dir.path().join("page.html"))
        .unwrap()
        .contains("<svg"));
}

/// Whether Python's JSON parser reads the file (skipped without python3).
fn json_parses(path: &Path) {
    let Ok(out) = Command::new("python3")
        .args(["-c", "import json,sys; json.load(open(sys.argv[1]))"])
        .arg(path)
        .output()
    else {
        return skip("python3 is not on PATH: the JSON page is not parsed");
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bad_command_lines_fail_on_one_line_and_write_nothing() {
    let (dir, input) = synthetic(|s| {
        s.kernel(S1, 1_000..2_000, "k").corr(1);
    });
    let cases: [(&[&str], i32); 3] = [
        (&["-o", "page.txt"], 2),
        (&["--kind", "moe"], 2),
        (&["--kind", "moe=("], 2),
    ];
    for (args, code) in cases {
        let out = program()
            .current_dir(dir.path())
            .arg("report")
            .arg(&input)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("nsys2perfetto: error: "), "{stderr}");
    }
    let missing = dir.path().join("missing.sqlite");
    let page = dir.path().join("page.html");
    let out = program()
        .arg("report")
        .arg(&input)
        .arg(&missing)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    assert!(!page.exists());
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn compare_summary_puts_both_runs_headlines_side_by_side() {
    let Some(a) = fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let Some(b) = fixture("h100_torch_graph_whole.sqlite") else {
        return;
    };
    let run_a = report_file(&a, &ReportOptions::default(), &ReadOptions::default()).unwrap();
    let run_b = report_file(&b, &ReportOptions::default(), &ReadOptions::default()).unwrap();
    let table = summary_table(&run_a, &run_b);
    let row = |measure: &str| {
        table
            .rows
            .iter()
            .find(|r| r[0] == Cell::Text(measure.into()))
            .unwrap()
            .clone()
    };
    // The idle split, from this file's own computation over each source.
    let side = |path: &Path| {
        let db = open(path);
        expected(&ops(&db), &calls(&db)).remove(&0).unwrap()
    };
    let (ea, eb) = (side(&a), side(&b));
    let waiting = row("GPU 0 idle waiting (ns)");
    assert_eq!(
        waiting[1..],
        [
            Cell::Int(ea.waiting.into()),
            Cell::Int(eb.waiting.into()),
            Cell::Int((eb.waiting - ea.waiting).into())
        ]
    );
    let busy = row("GPU 0 busy % of its work's span");
    let share = |e: &Expected| e.busy as f64 * 100.0 / (e.last - e.first) as f64;
    match (&busy[1], &busy[2], &busy[3]) {
        (Cell::Real(x, _), Cell::Real(y, _), Cell::Real(d, _)) => {
            assert!((x - share(&ea)).abs() < 1e-9 && (y - share(&eb)).abs() < 1e-9);
            assert!((d - (y - x)).abs() < 1e-9);
        }
        other => panic!("{other:?}"),
    }
    // A kind only B has: empty for A, no difference.
    let graph = row("CUDA graph share of GPU time %");
    assert_eq!((&graph[1], &graph[3]), (&Cell::Empty, &Cell::Empty));
    // The command prints the same table.
    let out = program()
        .args(["compare", "--summary", "--format", "csv"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "GPU 0 idle waiting (ns),{},{}",
            ea.waiting, eb.waiting
        )),
        "{text}"
    );
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_html_page_opens_in_chromium_without_console_errors() {
    let Some(path) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let Some(chromium) = chromium else {
        return skip("no chromium on PATH (CI installs it)");
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    let status = program()
        .arg("report")
        .arg(&path)
        .arg("-o")
        .arg(&page)
        .status()
        .unwrap();
    assert!(status.success());
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    // Chromium read the whole page: its last section is there.
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("Findings") && dom.contains("<svg"), "{dom}");
}

#[test]
fn nvtx_without_gpu_work_is_skipped_and_says_why() {
    let run = report_of(|s| {
        s.nvtx_push_pop(MAIN, 100..200, "forward");
    });
    assert!(run.gpus.is_empty() && run.kinds.is_empty());
    let why = run.nvtx.skipped.as_deref().unwrap();
    assert!(why.contains("no GPU work"), "{why}");
}

#[test]
fn several_reports_make_one_section_each() {
    let (dir, a) = synthetic(|s| {
        s.kernel(S1, 1_000..2_000, "sm90_gemm").corr(1);
    });
    let b = dir.path().join("b.sqlite");
    let mut synth = Synth::new(&b);
    synth.kernel(S1, 1_000..4_000, "sm90_gemm").corr(1);
    synth.finish();
    let out = program().arg("report").arg(&a).arg(&b).output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8_lossy(&out.stdout);
    let runs: Vec<&str> = page.lines().filter(|l| l.starts_with("# ")).collect();
    assert_eq!(
        runs,
        [format!("# {}", a.display()), format!("# {}", b.display())]
    );
    // Each section holds its own run's busy time.
    let sections: Vec<&str> = page.split("\n# ").collect();
    assert!(sections[0].contains("| Busy | 1.000 µs"), "{}", sections[0]);
    assert!(sections[1].contains("| Busy | 3.000 µs"), "{}", sections[1]);
}

/// `report --step`: the job's steps (whose numbers `tests/it/steps.rs` checks
/// against the source) head the page in every format, and each run's
/// section is the one it has without them; each report is read once.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn report_with_a_step_pattern_puts_the_job_s_steps_first() {
    use nsys2perfetto::report::{report_files, write_page, PageFormat};
    use nsys2perfetto::steps::{measure_steps, StepOptions, StepPattern};
    let (Some(whole), Some(node)) = (
        fixture("h100_torch_graph_whole.sqlite"),
        fixture("h100_torch_graph_node.sqlite"),
    ) else {
        return;
    };
    let inputs = vec![whole, node];
    let steps = StepOptions::new(StepPattern::new("step *").unwrap());
    let alone = measure_steps(&inputs, &steps, &ReadOptions::default(), &mut |_| {}).unwrap();
    let mut with_steps = ReportOptions::default();
    with_steps.steps = Some(steps);
    let mut read = Vec::new();
    let page = report_files(&inputs, &with_steps, &ReadOptions::default(), &mut |p| {
        read.push(p.to_owned())
    })
    .unwrap();
    assert_eq!(read, inputs, "each report read once, in order");
    assert_eq!(page.steps.as_ref(), Some(&alone));
    assert!(alone.steps.len() >= 5);
    let without = report_files(
        &inputs,
        &ReportOptions::default(),
        &ReadOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert!(without.steps.is_none());

    let mut steps_md = Vec::new();
    alone.write_markdown(&mut steps_md).unwrap();
    let mut steps_json = Vec::new();
    alone.write_json(&mut steps_json).unwrap();
    let steps_json = String::from_utf8(steps_json).unwrap();
    for (format, flag) in [
        (PageFormat::Markdown, "md"),
        (PageFormat::Json, "json"),
        (PageFormat::Html, "html"),
    ] {
        let mut expected_runs = Vec::new();
        write_page(&mut expected_runs, &without, format).unwrap();
        let out = program()
            .args(["report", "--step", "step *", "--format", flag])
            .args(&inputs)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let runs = String::from_utf8(expected_runs).unwrap();
        match format {
            PageFormat::Markdown => {
                let steps_md = String::from_utf8(steps_md.clone()).unwrap();
                assert_eq!(text, format!("{steps_md}\n{runs}"));
            }
            PageFormat::Json => {
                let runs = runs.trim_end().strip_suffix('}').unwrap();
                assert_eq!(
                    text,
                    format!("{runs}, \"steps\": {}}}\n", steps_json.trim_end())
                );
            }
            _ => {
                assert!(text.contains("<section class=\"job-steps\">"));
                assert!(text.find("job-steps").unwrap() < text.find("<h1>").unwrap());
            }
        }
    }
    // --rank-from-name needs --step.
    let out = program()
        .args(["report", "--rank-from-name", "(\\d+)"])
        .args(&inputs)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Names that are markup in HTML or Markdown, as C++ and users write them.
const HOSTILE: [&str; 5] = [
    "<script>alert(1)</script>",
    "at::native::<unnamed>::reduce<float>",
    "left|right",
    "run `tick` now",
    "*starred* and _under_ [link](x)",
];

/// A run whose kernels and NVTX ranges carry the hostile names, each
/// kernel launched inside the range of its name.
fn hostile_run() -> (tempfile::TempDir, std::path::PathBuf) {
    synthetic(|s| {
        s.process(1, "python3");
        for (i, name) in HOSTILE.iter().enumerate() {
            let at = 1_000 + i as i64 * 10_000;
            s.nvtx_push_pop(MAIN, at..at + 5_000, &format!("range {name}"));
            s.api(MAIN, at + 100..at + 400, "cudaLaunchKernel_v7000")
                .corr(i as i64 + 1);
            s.kernel(S1, at + 1_000..at + 2_000 + i as i64 * 100, name)
                .corr(i as i64 + 1);
        }
    })
}

fn report_text(input: &Path, format: &str) -> String {
    let out = program()
        .args(["report", "--format", format])
        .arg(input)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Issue 27 item 5. Markdown: every hostile name reads as itself, escaped
/// for CommonMark (GitHub strips `<unnamed>` left raw), and each table row
/// keeps its cells. JSON: each NVTX scope counts its ranges (was null).
#[test]
fn hostile_names_are_text_in_markdown_and_counted_in_json() {
    let (_dir, input) = hostile_run();
    let md = report_text(&input, "md");
    for raw in [
        "<script>",
        "<unnamed>",
        "<float>",
        "`tick`",
        "*starred*",
        "[link](x)",
    ] {
        assert!(!md.contains(raw), "{raw} left raw: {md}");
    }
    assert!(
        md.contains("at::native::\\<unnamed\\>::reduce\\<float\\>"),
        "{md}"
    );
    assert!(md.contains("\\<script\\>alert(1)\\</script\\>"), "{md}");
    assert!(md.contains("left\\|right"), "{md}");
    // Every row of a table has as many unescaped pipes as its header.
    let mut lines = md.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.starts_with('|') {
            continue;
        }
        let pipes = |l: &str| l.replace("\\|", "").matches('|').count();
        let width = pipes(line);
        while let Some(row) = lines.next_if(|l| l.starts_with('|')) {
            assert_eq!(pipes(row), width, "{row}");
        }
    }
    let json = report_text(&input, "json");
    let script = "import json,sys\n\
        run=json.load(sys.stdin)['runs'][0]\n\
        for n in run['nvtx']['top']: print(n['count'], n['name'])\n\
        for k in run['top_kernels']: print(k['count'], k['name'])\n";
    let Ok(mut python) = Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    else {
        return skip("no python3 to read the JSON back");
    };
    use std::io::Write;
    python
        .stdin
        .take()
        .unwrap()
        .write_all(json.as_bytes())
        .unwrap();
    let out = python.wait_with_output().unwrap();
    assert!(out.status.success(), "not JSON: {json}");
    let listed = String::from_utf8(out.stdout).unwrap();
    for name in HOSTILE {
        assert!(listed.contains(&format!("1 range {name}\n")), "{listed}");
        assert!(listed.contains(&format!("1 {name}\n")), "{listed}");
    }
}

/// Issue 27 item 5: the HTML page shows the hostile names as text: headless
/// Chromium finds no script but the page's own, and each name in the text.
#[test]
fn hostile_names_are_text_in_html() {
    let (dir, input) = hostile_run();
    let page = dir.path().join("page.html");
    let status = program()
        .arg("report")
        .arg(&input)
        .arg("-o")
        .arg(&page)
        .status()
        .unwrap();
    assert!(status.success());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script>"), "{html}");
    let Some(chromium) = chromium() else {
        return skip("no chromium on PATH (CI installs it)");
    };
    // A script of the test's, after the page: the count of scripts and the
    // page's text, as Chromium parsed them.
    let probe = dir.path().join("probe.html");
    std::fs::write(
        &probe,
        html.replace(
            "</body></html>",
            "<script>document.body.setAttribute('data-scripts', document.scripts.length);\
             document.body.setAttribute('data-text', document.body.innerText);</script></body></html>",
        ),
    )
    .unwrap();
    let out = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(format!("file://{}", probe.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("data-scripts=\"1\""), "{dom}");
    for name in HOSTILE {
        let shown = name
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        assert!(dom.contains(&format!("range {shown}")), "{name}: {dom}");
    }
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Issue 27 item 6: the chart of busy time over the run and the table of
/// idle stretches give times on one clock, the export's, in seconds, and
/// the chart's ticks are round: evenly spaced by 1, 2, 2.5 or 5 times a
/// power of ten, and within the GPU's work.
#[test]
fn the_busy_chart_ticks_round_times_on_the_clock_of_the_idle_table() {
    // Work from 5.2 s to 6.1 s, idle between.
    let run = |s: &mut Synth| {
        s.process(1, "python3");
        s.kernel(S1, 5_200_000_000..5_300_000_000, "gemm").corr(1);
        s.kernel(S1, 6_000_000_000..6_100_000_000, "gemm").corr(2);
    };
    let (dir, input) = synthetic(run);
    let page = dir.path().join("page.html");
    assert!(program()
        .arg("report")
        .arg(&input)
        .arg("-o")
        .arg(&page)
        .status()
        .unwrap()
        .success());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<td class=\"n\">5.300000 s</td>"),
        "the idle table"
    );
    let chart = &html[html.find("<svg").unwrap()..html.find("</svg>").unwrap()];
    assert!(chart.contains("the export's clock"), "{chart}");
    let ticks: Vec<f64> = chart
        .split("text-anchor=\"middle\">")
        .skip(1)
        .map(|t| t.split(" s</text>").next().unwrap().parse().unwrap())
        .collect();
    assert!(ticks.len() >= 3, "{ticks:?}");
    let step = ticks[1] - ticks[0];
    let power = 10f64.powf(step.log10().floor());
    assert!(
        [1.0, 2.0, 2.5, 5.0, 10.0]
            .iter()
            .any(|m| (step - m * power).abs() < 1e-9),
        "{ticks:?}"
    );
    for (i, t) in ticks.iter().enumerate() {
        assert!((t - ticks[0] - step * i as f64).abs() < 1e-9, "{ticks:?}");
        assert!((5.2..=6.1 + step).contains(t), "{ticks:?}");
    }
}
