//! Edge cases on synthetic exports built by tests/it/support/synth.rs: each test
//! builds the smallest report that has the case, converts it, and checks the
//! trace with the import rules of tests/it/support/checker.rs.

use crate::support::checker::{self, Checked, Value};
use crate::support::synth::{GpuStream, Synth, Thread, KERNEL, RUNTIME};
use nsys2perfetto::Summary;

struct Converted {
    trace: Checked,
    summary: Summary,
    _dir: tempfile::TempDir,
}

fn convert(fill: impl FnOnce(&mut Synth)) -> Converted {
    let (dir, input) = crate::support::convert::synthetic(fill);
    let (trace, summary) = crate::support::convert::convert(&input, &Default::default());
    trace.assert_valid();
    Converted {
        trace,
        summary,
        _dir: dir,
    }
}

const MAIN: Thread = Thread { pid: 100, tid: 100 };
const STREAM: GpuStream = GpuStream {
    pid: 100,
    device: 0,
    context: 1,
    stream: 7,
};

impl Converted {
    fn slices(&self, category: &str) -> Vec<&checker::Slice> {
        self.trace
            .slices
            .iter()
            .filter(|s| s.category == category)
            .collect()
    }

    fn spans(&self, category: &str) -> Vec<(u64, u64)> {
        let mut spans: Vec<_> = self
            .slices(category)
            .iter()
            .map(|s| (s.ts, s.dur))
            .collect();
        spans.sort();
        spans
    }

    fn track_name(&self, slice: &checker::Slice) -> &str {
        self.trace.tracks[&slice.track]
            .name
            .as_deref()
            .unwrap_or("")
    }
}

#[test]
fn correlation_id_reused_by_two_processes_links_within_each() {
    let a = Thread { pid: 100, tid: 101 };
    let b = Thread { pid: 200, tid: 201 };
    let c = convert(|s| {
        s.api(a, 1_000..2_000, "cudaLaunchKernel_v7000").corr(7);
        s.api(b, 1_500..2_500, "cudaLaunchKernel_v7000").corr(7);
        s.kernel(GpuStream { pid: 200, ..STREAM }, 3_000..4_000, "kb")
            .corr(7);
        s.kernel(GpuStream { pid: 100, ..STREAM }, 5_000..6_000, "ka")
            .corr(7);
        // Same correlation id, a third process, no launch in the report.
        s.kernel(GpuStream { pid: 300, ..STREAM }, 7_000..8_000, "kc")
            .corr(7);
    });
    assert_eq!(c.trace.flows.len(), 2);
    assert_eq!(c.summary.gpu_ops_without_launch, 1);
    for &(from, to) in &c.trace.flows {
        let launcher = c
            .trace
            .thread_of(c.trace.slices[from].track)
            .unwrap()
            .pid
            .unwrap();
        let kernel = &c.trace.slices[to];
        let expected = if launcher == 100 { "ka" } else { "kb" };
        assert_eq!(
            kernel.name, expected,
            "launch in pid {launcher} links its own kernel"
        );
    }
}

#[test]
fn a_graph_launch_links_every_kernel() {
    let c = convert(|s| {
        s.api(MAIN, 1_000..2_000, "cudaGraphLaunch_v10000").corr(9);
        for i in 0..3 {
            s.kernel(STREAM, 3_000 + i * 1_000..3_500 + i * 1_000, "node")
                .corr(9);
        }
    });
    assert_eq!(c.trace.flows.len(), 3, "one flow per kernel of the graph");
    assert!(c
        .trace
        .flows
        .iter()
        .all(|&(from, _)| c.trace.slices[from].name == "cudaGraphLaunch"));
}

#[test]
fn a_graph_run_in_graph_trace_mode_is_linked_not_projected() {
    let c = convert(|s| {
        s.nvtx_push_pop(MAIN, 500..2_500, "step");
        s.api(MAIN, 1_000..2_000, "cudaGraphLaunch_v10000").corr(9);
        s.graph_run(STREAM, 3_000..9_000).corr(9).graph(4).exec(12);
    });
    let [graph] = c.slices("cuda_graph")[..] else {
        panic!("one graph run: {:?}", c.slices("cuda_graph"));
    };
    assert_eq!(
        (graph.name.as_str(), graph.ts, graph.dur),
        ("CUDA graph 4", 3_000, 6_000)
    );
    assert_eq!(graph.args.get("graph_exec_id"), Some(&Value::Int(12)));
    assert_eq!(c.trace.flows.len(), 1, "the launch links to the graph run");
    assert_eq!(c.trace.slices[c.trace.flows[0].0].name, "cudaGraphLaunch");
    // NVIDIA's projection leaves whole-graph runs out (nsys 2022.4 and 2025.3
    // agree on the real capture): the range launched nothing it projects.
    assert!(
        c.slices("nvtx_gpu").is_empty(),
        "{:?}",
        c.slices("nvtx_gpu")
    );
}

#[test]
fn json_payloads_come_inline_or_through_string_ids() {
    let c = convert(|s| {
        let registered = s.string(r#"{"batch": 7}"#);
        s.nvtx_push_pop(MAIN, 1_000..1_500, "inline")
            .set("jsonText", r#"{"step": 3}"#.to_owned());
        s.nvtx_push_pop(MAIN, 2_000..2_500, "registered")
            .set("jsonTextId", registered);
        s.nvtx_push_pop(MAIN, 3_000..3_500, "none");
    });
    let json = |name: &str| {
        let slice = c.trace.slices.iter().find(|s| s.name == name).expect(name);
        slice.args.get("payload_json").cloned()
    };
    assert_eq!(json("inline"), Some(Value::Str(r#"{"step": 3}"#.into())));
    assert_eq!(
        json("registered"),
        Some(Value::Str(r#"{"batch": 7}"#.into()))
    );
    assert_eq!(json("none"), None);
}

#[test]
fn missing_tables_and_columns_mean_missing_events_and_args() {
    let c = convert(|s| {
        s.api(MAIN, 1_000..2_000, "cudaLaunchKernel_v7000").corr(1);
        s.kernel(STREAM, 3_000..4_000, "k").corr(1);
        s.drop_column(RUNTIME, "returnValue");
        s.drop_column(KERNEL, "demangledName");
        s.drop_column(KERNEL, "gridX");
    });
    let api = c.slices("cuda_api")[0];
    assert!(!api.args.contains_key("return_value"));
    assert_eq!(api.args.get("correlation_id"), Some(&Value::Int(1)));
    let kernel = c.slices("cuda_kernel")[0];
    assert!(!kernel.args.contains_key("demangled_name"));
    assert!(
        !kernel.args.contains_key("grid"),
        "grid needs all three dimensions"
    );
    assert_eq!(
        kernel.args.get("block"),
        Some(&Value::Str("256x1x1".into()))
    );
    assert_eq!(c.trace.flows.len(), 1);

    // Without correlation ids nothing links, and nothing is lost.
    let c = convert(|s| {
        s.api(MAIN, 1_000..2_000, "cudaLaunchKernel_v7000").corr(1);
        s.kernel(STREAM, 3_000..4_000, "k").corr(1);
        s.drop_column(KERNEL, "correlationId");
    });
    assert_eq!(
        (c.trace.count("cuda_api"), c.trace.count("cuda_kernel")),
        (1, 1)
    );
    assert!(c.trace.flows.is_empty());

    // A report with no event tables at all still makes a valid trace.
    let c = convert(|_| {});
    assert!(c.trace.slices.is_empty());
    assert!(
        c.trace.packets > 0,
        "trace_processor refuses an empty trace"
    );
}

#[test]
fn tables_without_the_columns_their_rows_need_are_reported() {
    let c = convert(|s| {
        s.api(MAIN, 1_000..2_000, "cudaLaunchKernel_v7000").corr(1);
        s.kernel(STREAM, 3_000..4_000, "k").corr(1);
        s.kernel(STREAM, 5_000..6_000, "k").corr(2);
        s.nvtx_push_pop(MAIN, 500..2_500, "step");
        s.drop_column(KERNEL, "streamId");
        s.drop_column("NVTX_EVENTS", "globalTid");
    });
    assert_eq!(
        c.trace.count("cuda_api"),
        1,
        "the readable table is converted"
    );
    assert_eq!(
        (c.trace.count("cuda_kernel"), c.trace.count("nvtx")),
        (0, 0)
    );
    let reported: Vec<(&str, &str, u64)> = c
        .summary
        .unreadable
        .iter()
        .map(|u| (u.table.as_str(), u.missing.as_str(), u.rows))
        .collect();
    assert_eq!(
        reported,
        [
            ("CUPTI_ACTIVITY_KIND_KERNEL", "streamId", 2),
            ("NVTX_EVENTS", "globalTid", 1)
        ]
    );
    let warnings = c.summary.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w == "CUPTI_ACTIVITY_KIND_KERNEL has no streamId column: its 2 rows are not in the trace"),
        "{warnings:?}"
    );
}

#[test]
fn gpu_work_without_globalpid_belongs_to_the_only_cuda_process() {
    let c = convert(|s| {
        s.api(MAIN, 1_000..2_000, "cudaLaunchKernel_v7000").corr(1);
        s.kernel(STREAM, 3_000..4_000, "k").corr(1);
        s.drop_column(KERNEL, "globalPid");
    });
    assert_eq!(c.trace.flows.len(), 1);

    // With two processes making CUDA calls, the owner is unknown: no link.
    let c = convert(|s| {
        s.api(MAIN, 1_000..2_000, "cudaLaunchKernel_v7000").corr(1);
        s.api(
            Thread { pid: 200, tid: 200 },
            1_000..2_000,
            "cudaLaunchKernel_v7000",
        )
        .corr(1);
        s.kernel(STREAM, 3_000..4_000, "k").corr(1);
        s.drop_column(KERNEL, "globalPid");
    });
    assert!(c.trace.flows.is_empty());
    assert_eq!(c.summary.gpu_ops_unknown_process, 1);
    assert_eq!(c.trace.count("cuda_kernel"), 1);
}

#[test]
fn overlapping_kernels_on_one_stream_go_on_lanes() {
    let c = convert(|s| {
        s.kernel(STREAM, 1_000..3_000, "a").corr(1);
        s.kernel(STREAM, 2_000..4_000, "b").corr(2);
        // Contained in `b`: still a lane of its own, GPU work does not nest.
        s.kernel(STREAM, 2_500..3_500, "c").corr(3);
        s.kernel(STREAM, 5_000..6_000, "d").corr(4);
    });
    assert_eq!(
        c.spans("cuda_kernel"),
        [
            (1_000, 2_000),
            (2_000, 2_000),
            (2_500, 1_000),
            (5_000, 1_000)
        ]
    );
    let kernels = c.slices("cuda_kernel");
    let lanes: std::collections::BTreeSet<u64> = kernels.iter().map(|s| s.track).collect();
    assert_eq!(lanes.len(), 3, "three kernels overlap at 2500");
    assert!(kernels.iter().all(|s| s.depth == 0));
    assert!(
        kernels.iter().all(|s| c.track_name(s) == "Stream 7"),
        "lanes share the stream's name"
    );
    let parents: std::collections::BTreeSet<_> =
        lanes.iter().map(|l| c.trace.tracks[l].parent).collect();
    assert_eq!(parents.len(), 1, "lanes are siblings in the GPU group");
    assert_eq!(
        c.trace.root_of(kernels[0].track).name.as_deref(),
        Some("GPU 0")
    );
}

#[test]
fn streams_are_ordered_numerically_under_their_gpu() {
    let c = convert(|s| {
        s.gpu(0, "NVIDIA H100 80GB HBM3");
        for (i, stream) in [10, 7, 13].into_iter().enumerate() {
            s.kernel(
                GpuStream { stream, ..STREAM },
                1_000 * (i as i64 + 1)..1_000 * (i as i64 + 1) + 500,
                "k",
            )
            .corr(1);
        }
    });
    let mut ranked: Vec<(i32, String)> = c
        .slices("cuda_kernel")
        .iter()
        .map(|s| {
            (
                c.trace.tracks[&s.track].rank.unwrap(),
                c.track_name(s).to_owned(),
            )
        })
        .collect();
    ranked.sort();
    let names: Vec<&str> = ranked.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["Stream 7", "Stream 10", "Stream 13"]);
    let group = c.trace.root_of(c.slices("cuda_kernel")[0].track);
    assert_eq!(group.name.as_deref(), Some("GPU 0: NVIDIA H100 80GB HBM3"));
}

#[test]
fn start_end_ranges_that_cross_threads_live_on_the_process() {
    let worker = Thread { pid: 100, tid: 105 };
    let c = convert(|s| {
        s.nvtx_domain(MAIN, 1, "Loader").at(10);
        s.nvtx_start_end(MAIN, 1_000..5_000, "prefetch")
            .ended_on(worker)
            .domain(1);
        s.nvtx_start_end(worker, 2_000..7_000, "overlapping")
            .ended_on(MAIN)
            .domain(1);
        s.nvtx_push_pop(MAIN, 1_500..1_800, "step");
    });
    assert_eq!(
        c.spans("nvtx"),
        [(1_000, 4_000), (1_500, 300), (2_000, 5_000)]
    );
    let prefetch = c
        .slices("nvtx")
        .into_iter()
        .find(|s| s.name == "prefetch")
        .unwrap();
    assert_eq!(c.track_name(prefetch), "NVTX: Loader");
    let track = &c.trace.tracks[&prefetch.track];
    assert!(
        c.trace.tracks[&track.parent.unwrap()]
            .process_name
            .is_some(),
        "on the process, not a thread"
    );
    assert_eq!(prefetch.args.get("end_tid"), Some(&Value::Int(105)));
    let step = c
        .slices("nvtx")
        .into_iter()
        .find(|s| s.name == "step")
        .unwrap();
    assert_eq!(c.track_name(step), "NVTX");
    assert_eq!(c.trace.thread_of(step.track).unwrap().tid, Some(100));
}

#[test]
fn unterminated_ranges_close_at_the_end_of_the_trace() {
    let c = convert(|s| {
        s.nvtx_push_pop(MAIN, 1_000.., "never popped");
        s.nvtx_push_pop(MAIN, 2_000..3_000, "inside");
        s.nvtx_start_end(MAIN, 1_500.., "never ended");
        s.api(MAIN, 8_000..9_000, "cudaDeviceSynchronize_v3020")
            .corr(1);
    });
    assert_eq!(c.summary.unterminated, 2);
    assert_eq!(
        c.spans("nvtx"),
        [(1_000, 8_000), (1_500, 7_500), (2_000, 1_000)]
    );
    let open: Vec<_> = c
        .slices("nvtx")
        .into_iter()
        .filter(|s| s.args.contains_key("unterminated"))
        .collect();
    assert_eq!(open.len(), 2);
    assert!(open
        .iter()
        .all(|s| s.args["unterminated"] == Value::Bool(true)));
    let inside = c
        .slices("nvtx")
        .into_iter()
        .find(|s| s.name == "inside")
        .unwrap();
    assert_eq!(inside.depth, 1, "nests in the open range");
}

#[test]
fn threads_without_names_get_a_fallback() {
    let c = convert(|s| {
        s.process(100, "train.py");
        s.thread(MAIN, "main");
        s.api(MAIN, 1_000..2_000, "cudaMalloc_v3020").corr(1);
        s.api(
            Thread { pid: 100, tid: 123 },
            1_000..2_000,
            "cudaFree_v3020",
        )
        .corr(2);
    });
    let mut names: Vec<String> = c
        .slices("cuda_api")
        .iter()
        .map(|s| {
            c.trace
                .thread_of(s.track)
                .unwrap()
                .thread_name
                .clone()
                .unwrap()
        })
        .collect();
    names.sort();
    assert_eq!(names, ["Thread 123", "main"]);
    assert_eq!(
        c.slices("cuda_api").iter().map(|s| s.name.as_str()).min(),
        Some("cudaFree")
    );
}

#[test]
fn zero_duration_events_are_instants() {
    let c = convert(|s| {
        s.api(MAIN, 1_000..1_000, "cudaGetLastError_v3020").corr(1);
        s.kernel(STREAM, 2_000..2_000, "empty").corr(2);
        s.nvtx_mark(MAIN, 3_000, "checkpoint");
    });
    assert_eq!(c.spans("cuda_api"), [(1_000, 0)]);
    assert_eq!(c.spans("cuda_kernel"), [(2_000, 0)]);
    assert_eq!(c.spans("nvtx"), [(3_000, 0)]);
}

#[test]
fn equal_timestamps_nest_and_follow_each_other() {
    let c = convert(|s| {
        // Same start: the longer is the parent.
        s.api(MAIN, 1_000..5_000, "outer_v1").corr(1);
        s.api(MAIN, 1_000..3_000, "inner_v1").corr(2);
        // Same end as its parent.
        s.api(MAIN, 4_000..5_000, "tail_v1").corr(3);
        // Starts where the previous ends; an instant at the boundary.
        s.api(MAIN, 5_000..6_000, "next_v1").corr(4);
        s.api(MAIN, 5_000..5_000, "instant_v1").corr(5);
    });
    let depth = |name: &str| {
        c.slices("cuda_api")
            .iter()
            .find(|s| s.name == name)
            .unwrap()
            .depth
    };
    assert_eq!(
        c.spans("cuda_api"),
        [
            (1_000, 2_000),
            (1_000, 4_000),
            (4_000, 1_000),
            (5_000, 0),
            (5_000, 1_000)
        ]
    );
    assert_eq!(
        (
            depth("outer"),
            depth("inner"),
            depth("tail"),
            depth("next"),
            depth("instant")
        ),
        (0, 1, 1, 0, 0)
    );
}

#[test]
fn events_before_time_zero_are_counted_not_written() {
    let c = convert(|s| {
        s.api(MAIN, -500..1_000, "cudaMalloc_v3020").corr(1);
        s.api(MAIN, 2_000..3_000, "cudaFree_v3020").corr(2);
    });
    assert_eq!(c.spans("cuda_api"), [(2_000, 1_000)]);
    assert_eq!(c.summary.before_time_zero.get("cuda_api"), Some(&1));
    assert!(c
        .summary
        .warnings()
        .iter()
        .any(|w| w.contains("before time 0")));
}

#[test]
fn memcpy_memset_and_sync_carry_their_args() {
    let c = convert(|s| {
        s.api(MAIN, 1_000..2_000, "cudaMemcpyAsync_v3020").corr(1);
        s.memcpy(STREAM, 3_000..5_000, crate::support::synth::HTOD)
            .bytes(4_000)
            .corr(1);
        s.api(MAIN, 6_000..7_000, "cudaMemsetAsync_v3020").corr(2);
        s.memset(STREAM, 8_000..9_000).bytes(256).corr(2);
        s.api(MAIN, 10_000..12_000, "cudaStreamSynchronize_v3020")
            .corr(3);
        s.sync(STREAM, 10_500..11_500, crate::support::synth::STREAM_SYNC)
            .corr(3);
    });
    let memcpy = c.slices("cuda_memcpy")[0];
    assert_eq!(memcpy.name, "Memcpy HtoD");
    assert_eq!(memcpy.args["bytes"], Value::Int(4_000));
    assert_eq!(memcpy.args["throughput_gbps"], Value::Double(2.0));
    assert_eq!(memcpy.args["src_kind"], Value::Str("Pinned".into()));
    assert_eq!(memcpy.args["dst_kind"], Value::Str("Device".into()));
    assert_eq!(c.slices("cuda_memset")[0].args["bytes"], Value::Int(256));
    assert_eq!(c.slices("cuda_sync")[0].name, "Stream sync");
    assert_eq!(
        c.trace.flows.len(),
        2,
        "memcpy and memset are launched work; sync is not"
    );
}

/// More distinct names than a sequence keeps interned (2^16), each used twice
/// so that they are interned, not just inlined.
fn many_unique_names(s: &mut Synth, pid: u32) {
    let thread = Thread { pid, tid: pid };
    for i in 0..UNIQUE_NAMES {
        let name = format!("aten::to, op_id = {i}");
        s.nvtx_push_pop(thread, 1_000 + 20 * i..1_005 + 20 * i, &name);
        s.nvtx_push_pop(thread, 1_010 + 20 * i..1_015 + 20 * i, &name);
    }
}

const UNIQUE_NAMES: i64 = 70_000;

#[test]
fn endless_unique_names_restart_interning_without_loss() {
    let c = convert(|s| many_unique_names(s, 100));
    // Two sequences start, and the NVTX one restarts its interning at least once.
    assert!(c.trace.resets >= 3, "{} resets", c.trace.resets);
    let nvtx = c.slices("nvtx");
    assert_eq!(nvtx.len() as i64, 2 * UNIQUE_NAMES);
    assert!(nvtx.iter().all(|s| s.dur == 5));
    for i in [0, UNIQUE_NAMES / 2, UNIQUE_NAMES - 1] {
        let name = format!("aten::to, op_id = {i}");
        assert_eq!(nvtx.iter().filter(|s| s.name == name).count(), 2, "{name}");
    }
}

#[test]
fn traces_that_restart_interning_still_concatenate() {
    let mut joined = Vec::new();
    let mut dirs = Vec::new();
    for pid in [100, 200] {
        let (dir, input) = crate::support::convert::synthetic(|s| many_unique_names(s, pid));
        let output = dir.path().join("out.perfetto-trace");
        crate::support::convert::convert_into(&input, &output, &Default::default());
        joined.extend(std::fs::read(&output).unwrap());
        dirs.push(dir);
    }
    let trace = crate::support::convert::check_bytes(&joined, "two synthetic traces joined");
    trace.assert_valid();
    assert_eq!(trace.count("nvtx") as i64, 4 * UNIQUE_NAMES);
}

#[test]
fn rows_stored_out_of_time_order_come_out_in_order() {
    // Two processes' calls stored one block after the other (as nsys does),
    // each block in time order: two sorted runs to merge.
    let other = Thread { pid: 200, tid: 200 };
    let c = convert(|s| {
        for i in 0..10_000 {
            s.api(
                MAIN,
                1_000 + 100 * i..1_050 + 100 * i,
                "cudaLaunchKernel_v7000",
            )
            .corr(i);
            s.kernel(STREAM, 1_060 + 100 * i..1_090 + 100 * i, "k")
                .corr(i);
        }
        for i in 0..10_000 {
            s.api(
                other,
                1_020 + 100 * i..1_070 + 100 * i,
                "cudaLaunchKernel_v7000",
            )
            .corr(i);
            s.kernel(
                GpuStream { pid: 200, ..STREAM },
                1_075 + 100 * i..1_095 + 100 * i,
                "k2",
            )
            .corr(i);
        }
    });
    assert_eq!(c.trace.count("cuda_api"), 20_000);
    assert_eq!(c.trace.flows.len(), 20_000);
    assert!(c
        .slices("cuda_kernel")
        .iter()
        .all(|s| s.dur == 30 || s.dur == 20));
}

#[test]
fn a_table_in_no_order_at_all_is_sorted_first() {
    // Newest first: every row is a run of its own, far more than are merged.
    let n = 6_000;
    let c = convert(|s| {
        for i in (0..n).rev() {
            s.api(MAIN, 1_000 + 100 * i..1_050 + 100 * i, "cudaMalloc_v3020")
                .corr(i);
            s.nvtx_push_pop(MAIN, 1_000 + 100 * i..1_080 + 100 * i, "step");
        }
    });
    assert_eq!(c.spans("cuda_api").len() as i64, n);
    assert!(c.slices("cuda_api").iter().all(|s| s.dur == 50));
    assert!(c.slices("nvtx").iter().all(|s| s.dur == 80 && s.depth == 0));
}

#[test]
fn only_failed_calls_and_unlinked_work_carry_return_values_and_correlation_ids() {
    let c = convert(|s| {
        s.api(MAIN, 1_000..2_000, "cudaLaunchKernel_v7000").corr(1);
        s.api(MAIN, 2_500..2_600, "cudaMalloc_v3020")
            .corr(2)
            .set("returnValue", 2);
        s.kernel(STREAM, 3_000..4_000, "launched").corr(1);
        // No launch of correlation id 3 in the report.
        s.kernel(STREAM, 5_000..6_000, "unlinked").corr(3);
    });
    assert_eq!(c.trace.flows.len(), 1);
    let api = c.slices("cuda_api");
    let by_name = |name: &str| *api.iter().find(|s| s.name == name).unwrap();
    let launch = by_name("cudaLaunchKernel");
    assert!(
        !launch.args.contains_key("return_value"),
        "success (0) is not written"
    );
    assert_eq!(launch.args.get("correlation_id"), Some(&Value::Int(1)));
    let malloc = by_name("cudaMalloc");
    assert_eq!(malloc.args.get("return_value"), Some(&Value::Int(2)));
    assert_eq!(malloc.args.get("correlation_id"), Some(&Value::Int(2)));
    let kernels = c.slices("cuda_kernel");
    let kernel = |name: &str| *kernels.iter().find(|s| s.name == name).unwrap();
    // Linked work: the id is its launch's, at the other end of the flow.
    let (from, to) = c.trace.flows[0];
    assert_eq!(c.trace.slices[from].name, "cudaLaunchKernel");
    assert_eq!(c.trace.slices[to].name, "launched");
    assert!(!kernel("launched").args.contains_key("correlation_id"));
    assert_eq!(
        kernel("unlinked").args.get("correlation_id"),
        Some(&Value::Int(3))
    );
}

#[test]
fn one_range_with_args_among_many_without_keeps_them_and_long_names_come_whole() {
    // NVTX colours, categories and payloads are read only where some row of
    // the export has one (the reader's pre-scan looks): a range that has
    // them, late among thousands that have none, must still carry them. And
    // names are copied into their events up to a length: past it, whole.
    let long = format!("{} end", "aten::very_long_operator_name, seq = 1".repeat(8));
    let c = convert(|s| {
        for i in 0..3_000 {
            s.nvtx_push_pop(MAIN, i * 10..i * 10 + 5, &format!("aten::mm, seq = {i}"));
        }
        s.nvtx_push_pop(MAIN, 40_000..40_500, "coloured")
            .set("color", 0xFF12_3456_i64)
            .set("int64Value", -7_i64);
        s.nvtx_push_pop(MAIN, 50_000..50_500, &long);
    });
    let nvtx = c.slices("nvtx");
    assert_eq!(nvtx.len(), 3_002);
    let coloured = nvtx
        .iter()
        .find(|s| s.name == "coloured")
        .expect("coloured");
    assert_eq!(
        coloured.args.get("color"),
        Some(&Value::Str("#123456".into()))
    );
    assert_eq!(coloured.args.get("payload"), Some(&Value::Int(-7)));
    assert!(nvtx.iter().any(|s| s.name == long), "the long name, whole");
    let plain = nvtx.iter().filter(|s| s.name.starts_with("aten::mm"));
    assert!(plain.clone().all(|s| s.args.is_empty()));
    assert_eq!(plain.count(), 3_000);
}

#[test]
fn ranges_without_args_anywhere_convert_without_them() {
    // The same export without the one range that has args: no row has a
    // colour or payload, so none is read, and every range is still there.
    let c = convert(|s| {
        for i in 0..3_000 {
            s.nvtx_push_pop(MAIN, i * 10..i * 10 + 5, &format!("aten::mm, seq = {i}"));
        }
    });
    let nvtx = c.slices("nvtx");
    assert_eq!(nvtx.len(), 3_000);
    assert!(nvtx.iter().all(|s| s.args.is_empty()));
}
