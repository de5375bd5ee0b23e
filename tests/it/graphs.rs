//! The creation of CUDA graphs, execs and nodes (`CUDA_GRAPH_EVENTS`,
//! `CUDA_GRAPH_NODE_EVENTS`): instants on the calling thread's "CUDA graphs"
//! track, whose ids lead from a graph's GPU work to where it was made.

use std::collections::BTreeSet;

use crate::support::checker::{Checked, Slice, Value};
use crate::support::convert::convert_synthetic;
use crate::support::source::{open, source_totals};
use crate::support::synth::{GpuStream, Thread, GRAPH_EVENTS, GRAPH_NODE_EVENTS};

const CATEGORY: &str = "cuda_graph_creation";
const MAIN: Thread = Thread { pid: 100, tid: 100 };
const STREAM: GpuStream = GpuStream {
    pid: 100,
    device: 0,
    context: 1,
    stream: 7,
};

fn int(slice: &Slice, arg: &str) -> Option<i64> {
    match slice.args.get(arg) {
        Some(Value::Int(v)) => Some(*v),
        _ => None,
    }
}

fn created(trace: &Checked) -> Vec<&Slice> {
    trace
        .slices
        .iter()
        .filter(|s| s.category == CATEGORY)
        .collect()
}

/// The values of `arg` on the slices of `category`.
fn values(trace: &Checked, category: &str, arg: &str) -> BTreeSet<i64> {
    trace
        .slices
        .iter()
        .filter(|s| s.category == category)
        .filter_map(|s| int(s, arg))
        .collect()
}

#[test]
fn graphs_and_nodes_are_made_on_their_thread_with_their_ids() {
    // A graph of two nodes, instantiated (the exec's nodes are copies), then
    // launched: its kernels run as the exec's nodes.
    let (node_a, node_b) = (1 << 32, (1 << 32) + 1);
    let (exec_a, exec_b) = (2 << 32, (2 << 32) + 1);
    let (trace, summary) = convert_synthetic(|s| {
        s.thread(MAIN, "python3");
        s.graph_created(MAIN, 1_000).graph(1);
        s.graph_node_created(MAIN, 1_100).node(node_a);
        s.graph_node_created(MAIN, 1_200).node(node_b);
        s.graph_node_created(MAIN, 2_000)
            .node(exec_a)
            .original(node_a);
        s.graph_node_created(MAIN, 2_100)
            .node(exec_b)
            .original(node_b);
        s.graph_created(MAIN, 2_200).graph(1).exec(2);
        s.api(MAIN, 3_000..3_100, "cudaGraphLaunch_v10000").corr(50);
        s.kernel(STREAM, 3_500..4_000, "a")
            .corr(50)
            .graph(1)
            .node(exec_a);
        s.kernel(STREAM, 4_000..4_500, "b")
            .corr(50)
            .graph(1)
            .node(exec_b);
    });
    let made = created(&trace);
    let seen: Vec<(u64, u64, &str)> = made
        .iter()
        .map(|s| (s.ts, s.dur, s.name.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            (1_000, 0, "Graph Creation"),
            (1_100, 0, "Graph Node Creation"),
            (1_200, 0, "Graph Node Creation"),
            (2_000, 0, "Graph Node Creation"),
            (2_100, 0, "Graph Node Creation"),
            (2_200, 0, "GraphExec Creation"),
        ]
    );
    assert_eq!(summary.slices.get(CATEGORY), Some(&6));
    for s in &made {
        assert_eq!(trace.tracks[&s.track].name.as_deref(), Some("CUDA graphs"));
        let thread = trace.thread_of(s.track).expect("on a thread");
        assert_eq!((thread.pid, thread.tid), (Some(100), Some(100)));
    }
    assert_eq!(int(made[0], "graph_id"), Some(1));
    assert_eq!(int(made[3], "graph_node_id"), Some(exec_a));
    assert_eq!(int(made[3], "original_graph_node_id"), Some(node_a));
    assert_eq!(
        (int(made[5], "graph_id"), int(made[5], "graph_exec_id")),
        (Some(1), Some(2))
    );
    assert!(!made[1].args.contains_key("original_graph_node_id"));
    // Each kernel's node is one whose creation is in the trace.
    let kernel_nodes = values(&trace, "cuda_kernel", "graph_node_id");
    assert_eq!(kernel_nodes, BTreeSet::from([exec_a, exec_b]));
    assert!(kernel_nodes.is_subset(&values(&trace, CATEGORY, "graph_node_id")));
}

#[test]
fn graph_tables_without_id_columns_still_convert() {
    let (trace, _) = convert_synthetic(|s| {
        s.graph_created(MAIN, 1_000).graph(1);
        s.graph_node_created(MAIN, 1_100).node(1 << 32);
        s.drop_column(GRAPH_EVENTS, "graphId");
        s.drop_column(GRAPH_NODE_EVENTS, "originalGraphNodeId");
    });
    let made = created(&trace);
    assert_eq!(made.len(), 2);
    assert!(made[0].args.is_empty());
    assert_eq!(int(made[1], "graph_node_id"), Some(1 << 32));
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn fixtures_show_every_graph_creation() {
    let Some(files) = crate::support::fixtures::all() else {
        return;
    };
    for input in files {
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let db = open(&input);
        let converted = crate::support::converted::converted(&input);
        let (trace, _) = (&converted.trace, &converted.summary);
        trace.assert_valid();
        let (a, b) = (
            source_totals(&db, "CUDA_GRAPH_EVENTS"),
            source_totals(&db, "CUDA_GRAPH_NODE_EVENTS"),
        );
        assert_eq!(
            trace.totals(CATEGORY),
            (a.0 + b.0, a.1 + b.1, a.2 + b.2),
            "{name}: (count, Σts, Σdur)"
        );
        for s in created(trace) {
            let thread = trace.thread_of(s.track).expect("on a thread");
            assert!(thread.tid.is_some(), "{name}");
        }
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_h100_graphs_lead_from_their_gpu_work_to_their_creation() {
    let Some(files) = crate::support::fixtures::all() else {
        return;
    };
    let find = |file: &str| files.iter().find(|f| f.ends_with(file)).cloned();
    if let Some(input) = find("h100_torch_graph_node.sqlite") {
        let converted = crate::support::converted::converted(&input);
        let (trace, _) = (&converted.trace, &converted.summary);
        assert_eq!(created(trace).len(), 22);
        // Every node a kernel, memcpy or memset ran as was made in the trace.
        let made = values(trace, CATEGORY, "graph_node_id");
        for category in ["cuda_kernel", "cuda_memcpy", "cuda_memset"] {
            let nodes = values(trace, category, "graph_node_id");
            assert!(nodes.is_subset(&made), "{category}: {nodes:?}");
        }
        assert_eq!(values(trace, "cuda_kernel", "graph_node_id").len(), 6);
        // The exec's nodes name the nodes they were made from.
        let originals = values(trace, CATEGORY, "original_graph_node_id");
        assert_eq!(originals.len(), 7);
        assert!(originals.is_subset(&made));
    }
    if let Some(input) = find("h100_torch_graph_whole.sqlite") {
        let converted = crate::support::converted::converted(&input);
        let (trace, _) = (&converted.trace, &converted.summary);
        assert_eq!(created(trace).len(), 4);
        // The graph run names the exec whose creation is in the trace.
        let runs = values(trace, "cuda_graph", "graph_exec_id");
        assert_eq!(runs, BTreeSet::from([2]));
        assert_eq!(values(trace, CATEGORY, "graph_exec_id"), runs);
    }
}
