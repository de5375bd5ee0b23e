//! GPU metrics, CUDA memory use, memory pools and unified-memory faults, from
//! synthetic exports built to the documented schema, and CUDA memory use and
//! pools from the real H100 capture that has them.

use crate::support::checker::Value as Arg;
use crate::support::convert::convert;
use crate::support::synth::{global_pid, Synth};
use rusqlite::types::Value;

#[test]
fn counters_and_faults_land_in_their_gpu_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metrics.sqlite");
    let mut s = Synth::new(&path);
    s.process(100, "trainer");
    s.gpu(1, "NVIDIA H100");
    // Metric set 0x101 is GPU 1's.
    for (metric, name) in [
        (0, "SMs Active [Throughput %]"),
        (1, "GPC Clock Frequency [MHz]"),
    ] {
        s.row(
            "TARGET_INFO_GPU_METRICS",
            vec![
                ("typeId", 0x101.into()),
                ("sourceId", 1.into()),
                ("typeName", Value::Text("GH100".into())),
                ("metricId", metric.into()),
                ("metricName", Value::Text(name.into())),
            ],
        );
    }
    // nsys stores the clock in Hz, whatever its name says (an H100 reaches
    // 2,100,040,000 where TARGET_INFO_GPU.clockRate is 1,980,000,000).
    let clocks = [
        (1000, 10, 1_980_000_000i64),
        (2000, 55, 2_100_040_000),
        (3000, 100, 1_755_000_000),
    ];
    for (ts, sm, clock) in clocks {
        s.row(
            "GPU_METRICS",
            vec![
                ("timestamp", ts.into()),
                ("typeId", 0x101.into()),
                ("metricId", 0.into()),
                ("value", sm.into()),
            ],
        );
        s.row(
            "GPU_METRICS",
            vec![
                ("timestamp", ts.into()),
                ("typeId", 0x101.into()),
                ("metricId", 1.into()),
                ("value", clock.into()),
            ],
        );
    }
    let pid = Value::Integer(global_pid(100));
    let mem = |ts: i64, bytes: i64, op: i64| {
        vec![
            ("start", Value::Integer(ts)),
            ("globalPid", pid.clone()),
            ("deviceId", 1.into()),
            ("contextId", 1.into()),
            ("address", 0x7000.into()),
            ("pc", 0.into()),
            ("bytes", bytes.into()),
            ("memKind", 2.into()),
            ("memoryOperationType", op.into()),
        ]
    };
    s.row("CUDA_GPU_MEMORY_USAGE_EVENTS", mem(1500, 1 << 20, 0));
    s.row("CUDA_GPU_MEMORY_USAGE_EVENTS", mem(2500, 4 << 20, 0));
    s.row("CUDA_GPU_MEMORY_USAGE_EVENTS", mem(3500, 1 << 20, 1));
    s.row(
        "CUDA_UM_GPU_PAGE_FAULT_EVENTS",
        vec![
            ("start", 4000.into()),
            ("end", 4600.into()),
            ("globalPid", pid.clone()),
            ("deviceId", 1.into()),
            ("address", 0x9000.into()),
            ("numberOfPageFaults", 12.into()),
            ("faultAccessType", 2.into()),
        ],
    );
    s.row(
        "CUDA_UM_CPU_PAGE_FAULT_EVENTS",
        vec![
            ("start", 4200.into()),
            ("globalPid", pid),
            ("address", 0x9100.into()),
        ],
    );
    s.finish();

    let (trace, summary) = convert(&path, &Default::default());
    trace.assert_valid();
    assert_eq!(summary.counter_values, 6 + 3);

    let series = |name: &str| {
        let (&uuid, track) = trace
            .tracks
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("{name}"));
        let group = trace.tracks[&track.parent.unwrap()].name.clone().unwrap();
        let values: Vec<(u64, f64)> = trace
            .counters
            .iter()
            .filter(|c| c.track == uuid)
            .map(|c| (c.ts, c.value))
            .collect();
        (group, track.counter.clone().unwrap(), values)
    };
    assert_eq!(
        series("SMs Active [Throughput %]"),
        (
            "GPU 1: NVIDIA H100".into(),
            (None, Some("%".into())),
            vec![(1000, 10.0), (2000, 55.0), (3000, 100.0)]
        )
    );
    // In the MHz its name and unit say.
    assert_eq!(
        series("GPC Clock Frequency [MHz]"),
        (
            "GPU 1: NVIDIA H100".into(),
            (None, Some("MHz".into())),
            vec![(1000, 1980.0), (2000, 2100.04), (3000, 1755.0)]
        )
    );
    let memory = series("CUDA memory: trainer (pid 100)");
    assert_eq!(memory.0, "GPU 1: NVIDIA H100");
    assert_eq!(memory.1, (Some(3), None), "bytes (UNIT_SIZE_BYTES)");
    assert_eq!(
        memory.2,
        vec![(1500, 1048576.0), (2500, 5242880.0), (3500, 4194304.0)]
    );

    let fault = trace
        .slices
        .iter()
        .find(|s| s.name == "GPU page faults")
        .unwrap();
    assert_eq!(
        (fault.ts, fault.dur, fault.category.as_str()),
        (4000, 600, "unified_memory")
    );
    assert_eq!(fault.args.get("faults"), Some(&Arg::Int(12)));
    assert_eq!(fault.args.get("access"), Some(&Arg::Str("Write".into())));
    let cpu = trace
        .slices
        .iter()
        .find(|s| s.name == "CPU page fault")
        .unwrap();
    assert_eq!((cpu.ts, cpu.dur), (4200, 0));
    assert_eq!(
        trace.tracks[&cpu.track]
            .parent
            .and_then(|p| trace.tracks[&p].pid),
        Some(100)
    );

    let mut options = nsys2perfetto::Options::default();
    options.parts = options.parts.without(nsys2perfetto::Part::Metrics);
    let (light, _) = convert(&path, &options);
    assert!(light.counters.is_empty() && light.count("unified_memory") == 0);
}

#[test]
fn memory_pools_are_counters_and_operations_in_their_gpu_group() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pools.sqlite");
    let mut s = Synth::new(&path);
    s.process(100, "trainer");
    s.gpu(1, "NVIDIA H100");
    let pid = Value::Integer(global_pid(100));
    const POOL: i64 = 0x7f00_0000_0000;
    const MIB: i64 = 1 << 20;
    // ENUM_CUDA_MEMPOOL_OPER: 1 created, 2 destroyed, 3 trimmed.
    let pool_event = |ts: i64, op: i64, size: i64, used: i64| {
        vec![
            ("start", Value::Integer(ts)),
            ("globalPid", pid.clone()),
            ("deviceId", 1.into()),
            ("address", POOL.into()),
            ("operationType", op.into()),
            ("poolType", 1.into()),
            ("correlationId", (ts / 1000).into()),
            ("minBytesToKeep", 0.into()),
            ("localMemoryPoolReleaseThreshold", (64 * MIB).into()),
            ("localMemoryPoolSize", size.into()),
            ("localMemoryPoolUtilizedSize", used.into()),
        ]
    };
    // An allocation (op 0) or free (op 1), from the pool where `pool` says so.
    let usage = |ts: i64, bytes: i64, op: i64, pool: Option<(i64, i64)>| {
        let mut row = vec![
            ("start", Value::Integer(ts)),
            ("globalPid", pid.clone()),
            ("deviceId", 1.into()),
            ("contextId", 1.into()),
            ("address", 0x7000.into()),
            ("pc", 0.into()),
            ("bytes", bytes.into()),
            ("memKind", 2.into()),
            ("memoryOperationType", op.into()),
        ];
        if let Some((size, used)) = pool {
            row.extend([
                ("localMemoryPoolAddress", POOL.into()),
                ("localMemoryPoolSize", size.into()),
                ("localMemoryPoolUtilizedSize", used.into()),
            ]);
        }
        row
    };
    s.row("CUDA_GPU_MEMORY_POOL_EVENTS", pool_event(1000, 1, 0, 0));
    s.row(
        "CUDA_GPU_MEMORY_USAGE_EVENTS",
        usage(2000, 4 * MIB, 0, Some((32 * MIB, 4 * MIB))),
    );
    s.row("CUDA_GPU_MEMORY_USAGE_EVENTS", usage(2500, MIB, 0, None));
    s.row(
        "CUDA_GPU_MEMORY_USAGE_EVENTS",
        usage(3000, 4 * MIB, 1, Some((32 * MIB, 0))),
    );
    s.row(
        "CUDA_GPU_MEMORY_POOL_EVENTS",
        pool_event(4000, 3, 2 * MIB, 0),
    );
    // What the pool held when destroyed: the args keep it, the counters drop to 0.
    s.row(
        "CUDA_GPU_MEMORY_POOL_EVENTS",
        pool_event(5000, 2, 2 * MIB, 0),
    );
    s.finish();

    let (trace, summary) = convert(&path, &Default::default());
    trace.assert_valid();
    // 3 process-memory values, and size and use at 5 moments of the pool.
    assert_eq!(summary.counter_values, 3 + 2 * 5);
    assert_eq!(summary.slices.get("cuda_memory_pool").copied(), Some(3));

    let series = |name: &str| {
        let (&uuid, track) = trace
            .tracks
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("{name}"));
        let group = trace.tracks[&track.parent.unwrap()].name.clone().unwrap();
        assert_eq!(group, "GPU 1: NVIDIA H100", "{name}");
        assert_eq!(track.counter, Some((Some(3), None)), "{name} in bytes");
        trace
            .counters
            .iter()
            .filter(|c| c.track == uuid)
            .map(|c| (c.ts, c.value as i64))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        series("CUDA memory pool 0x7f0000000000: size"),
        [
            (1000, 0),
            (2000, 32 * MIB),
            (3000, 32 * MIB),
            (4000, 2 * MIB),
            (5000, 0)
        ]
    );
    assert_eq!(
        series("CUDA memory pool 0x7f0000000000: used"),
        [(1000, 0), (2000, 4 * MIB), (3000, 0), (4000, 0), (5000, 0)]
    );

    let operations: Vec<_> = trace
        .slices
        .iter()
        .filter(|s| s.category == "cuda_memory_pool")
        .collect();
    let names: Vec<(&str, u64, u64)> = operations
        .iter()
        .map(|s| (s.name.as_str(), s.ts, s.dur))
        .collect();
    assert_eq!(
        names,
        [
            ("Memory pool created", 1000, 0),
            ("Memory pool trimmed", 4000, 0),
            ("Memory pool destroyed", 5000, 0)
        ]
    );
    let track = &trace.tracks[&operations[0].track];
    assert_eq!(track.name.as_deref(), Some("CUDA memory pools"));
    assert_eq!(
        trace.tracks[&track.parent.unwrap()].name.as_deref(),
        Some("GPU 1: NVIDIA H100")
    );
    let destroyed = &operations[2].args;
    for (arg, value) in [
        ("pid", Arg::Int(100)),
        ("address", Arg::Uint(POOL as u64)),
        ("pool_type", Arg::Str("Local".into())),
        ("size", Arg::Int(2 * MIB)),
        ("used", Arg::Int(0)),
        ("release_threshold", Arg::Int(64 * MIB)),
        ("correlation_id", Arg::Int(5)),
    ] {
        assert_eq!(destroyed.get(arg), Some(&value), "{arg}");
    }

    let mut options = nsys2perfetto::Options::default();
    options.parts = options.parts.without(nsys2perfetto::Part::Metrics);
    let (light, _) = convert(&path, &options);
    assert!(light.counters.is_empty() && light.count("cuda_memory_pool") == 0);
}

/// The real capture with `--cuda-memory-usage=true` (nsys 2025.3, H100): one
/// counter value per allocation or free, each the process's running total on
/// its GPU, and one operation per pool event, against SQL over the export.
#[test]
fn cuda_memory_of_the_h100_capture_is_every_allocation_and_free() {
    let Some(input) = crate::support::fixtures::fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let (trace, _) = crate::support::convert::convert(&input, &Default::default());
    trace.assert_valid();
    let db = crate::support::source::open(&input);
    let expected: Vec<(i64, i64, i64, i64)> = db
        .prepare(
            "SELECT deviceId, (globalPid >> 24) & 16777215, COUNT(*),
                    SUM(CASE memoryOperationType WHEN 1 THEN -bytes ELSE bytes END)
             FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE start >= 0 GROUP BY 1, 2 ORDER BY 1, 2",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(!expected.is_empty());
    for (device, pid, rows, total) in expected {
        let (uuid, track) = trace
            .tracks
            .iter()
            .find(|(_, t)| {
                t.name.as_deref().is_some_and(|n| {
                    n.starts_with("CUDA memory: ") && n.ends_with(&format!("(pid {pid})"))
                }) && t.parent.is_some_and(|p| {
                    trace.tracks[&p]
                        .name
                        .as_deref()
                        .is_some_and(|g| g.starts_with(&format!("GPU {device}")))
                })
            })
            .unwrap_or_else(|| panic!("a CUDA memory track of pid {pid} on GPU {device}"));
        let values: Vec<&crate::support::checker::CounterSample> =
            trace.counters.iter().filter(|c| c.track == *uuid).collect();
        assert_eq!(values.len() as i64, rows, "{:?}", track.name);
        assert_eq!(
            values.last().unwrap().value,
            total as f64,
            "{:?}",
            track.name
        );
    }
    let pool_events: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM CUDA_GPU_MEMORY_POOL_EVENTS",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(trace.count("cuda_memory_pool") as i64, pool_events);
}
