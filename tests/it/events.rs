//! CUDA events: each `cudaEventRecord` call carries the event and stream it
//! recorded, and a flow leads from it to every synchronization that waited
//! on that record; what cannot be linked is counted, never guessed.
//!
//! Synthetic exports cover both ways exports tie a wait to its record
//! (`eventSyncId`, and the event's latest earlier record in older exports);
//! the real fixtures are checked against SQL over their tables.

use std::path::PathBuf;

use crate::support::checker::{Checked, Slice, Value};
use crate::support::convert::convert_synthetic;
use crate::support::source::{event_records_without_call, event_waits, linked_event_waits, open};
use crate::support::synth::{
    GpuStream, Synth, Thread, CUDA_EVENT, EVENT_SYNC, NO_EVENT, STREAM_SYNC, STREAM_WAIT_EVENT,
    SYNC,
};

const MAIN: Thread = Thread { pid: 100, tid: 100 };
const WORKER: Thread = Thread { pid: 100, tid: 101 };
const COMPUTE: GpuStream = GpuStream {
    pid: 100,
    device: 0,
    context: 1,
    stream: 7,
};
const COPY: GpuStream = GpuStream {
    stream: 13,
    ..COMPUTE
};
/// Synchronizations on no stream (`cudaEventSynchronize`).
const NO_STREAM: GpuStream = GpuStream {
    stream: 4_294_967_295,
    ..COMPUTE
};

/// The flows into synchronizations, as (from, to) slices.
fn event_flows(trace: &Checked) -> Vec<(&Slice, &Slice)> {
    trace
        .flows
        .iter()
        .map(|&(from, to)| (&trace.slices[from], &trace.slices[to]))
        .filter(|(_, to)| to.category == "cuda_sync")
        .collect()
}

fn int(slice: &Slice, arg: &str) -> Option<i64> {
    match slice.args.get(arg) {
        Some(Value::Int(v)) => Some(*v),
        _ => None,
    }
}

/// The CUDA stream a GPU slice ran on, as its track's name says: "Stream 7",
/// "Stream 7 (context 2)".
fn stream_of(trace: &Checked, slice: &Slice) -> Option<i64> {
    let name = trace.tracks[&slice.track].name.as_deref()?;
    let number = name.strip_prefix("Stream ")?;
    let digits = number.split(|c: char| !c.is_ascii_digit()).next()?;
    digits.parse().ok()
}

/// A stream recording an event that another stream and the host wait on.
fn record_and_waits(s: &mut Synth, sync_ids: bool) {
    let id = |n: i64| sync_ids.then_some(n);
    // The GPU, as every export lists it: that of the synchronizations.
    s.gpu(0, "NVIDIA H100 80GB HBM3");
    s.api(MAIN, 1_000..1_100, "cudaEventRecord_v3020").corr(10);
    s.event_record(COMPUTE, 5).corr(10).sync_id(id(1));
    s.api(MAIN, 1_200..1_300, "cudaStreamWaitEvent_v3020")
        .corr(11);
    s.sync(COPY, 1_210..1_290, STREAM_WAIT_EVENT)
        .corr(11)
        .event(5)
        .sync_id(id(1));
    // The host waits on it from another thread.
    s.api(WORKER, 2_000..3_000, "cudaEventSynchronize_v3020")
        .corr(12);
    s.sync(NO_STREAM, 2_010..2_990, EVENT_SYNC)
        .corr(12)
        .event(5)
        .sync_id(id(1));
    // Event 5 recorded again: the next wait is on the second record.
    s.api(MAIN, 4_000..4_100, "cudaEventRecord_v3020").corr(13);
    s.event_record(COMPUTE, 5).corr(13).sync_id(id(2));
    s.api(MAIN, 5_000..5_500, "cudaEventSynchronize_v3020")
        .corr(14);
    s.sync(NO_STREAM, 5_010..5_490, EVENT_SYNC)
        .corr(14)
        .event(5)
        .sync_id(id(2));
    // A stream synchronization waits on no event.
    s.api(MAIN, 6_000..6_500, "cudaStreamSynchronize_v3020")
        .corr(15);
    s.sync(COMPUTE, 6_010..6_490, STREAM_SYNC).corr(15);
}

#[test]
fn each_wait_is_linked_to_the_record_it_waited_on() {
    for sync_ids in [true, false] {
        let (trace, summary) = convert_synthetic(|s| {
            record_and_waits(s, sync_ids);
            if !sync_ids {
                // Exports before nsys 2025.1.
                s.drop_column(CUDA_EVENT, "eventSyncId");
                s.drop_column(SYNC, "eventSyncId");
            }
        });
        let flows = event_flows(&trace);
        let links: Vec<(i64, u64)> = flows
            .iter()
            .map(|(from, to)| (int(from, "correlation_id").unwrap(), to.ts))
            .collect();
        assert_eq!(
            links,
            [(10, 1_210), (10, 2_010), (13, 5_010)],
            "eventSyncId: {sync_ids}"
        );
        for (record, wait) in &flows {
            assert_eq!(record.name, "cudaEventRecord");
            assert_eq!(int(record, "event_id"), Some(5));
            assert_eq!(int(record, "event_stream"), Some(7));
            assert_eq!(int(wait, "event_id"), Some(5));
            assert_eq!(
                int(wait, "event_record_correlation_id"),
                int(record, "correlation_id")
            );
        }
        assert_eq!(summary.event_flows, 3);
        assert_eq!(summary.flows, 0, "launch flows are counted apart");
        assert_eq!(
            (
                summary.event_waits_unrecorded,
                summary.event_waits_before_record,
                summary.event_records_without_call
            ),
            (0, 0, 0)
        );
        assert!(summary.warnings().is_empty(), "{:?}", summary.warnings());
        let stream_sync = trace
            .slices
            .iter()
            .find(|s| s.ts == 6_010)
            .expect("the stream sync");
        assert!(!stream_sync.args.contains_key("event_record_correlation_id"));
    }
}

#[test]
fn waits_that_cannot_be_linked_are_counted() {
    let (trace, summary) = convert_synthetic(|s| {
        // A wait whose record the export tied to no record (0), one on a
        // record the table does not have, and one that starts before its
        // record's call (clocks of two threads, say).
        s.api(MAIN, 1_000..1_100, "cudaStreamWaitEvent_v3020")
            .corr(20);
        s.sync(COPY, 1_010..1_090, STREAM_WAIT_EVENT)
            .corr(20)
            .event(1)
            .sync_id(0);
        s.api(MAIN, 1_200..1_300, "cudaStreamWaitEvent_v3020")
            .corr(21);
        s.sync(COPY, 1_210..1_290, STREAM_WAIT_EVENT)
            .corr(21)
            .event(9)
            .sync_id(99);
        s.api(WORKER, 2_000..2_100, "cudaEventSynchronize_v3020")
            .corr(22);
        s.sync(NO_STREAM, 2_010..2_090, EVENT_SYNC)
            .corr(22)
            .event(5)
            .sync_id(3);
        s.api(MAIN, 2_050..2_150, "cudaEventRecord_v3020").corr(23);
        s.event_record(COMPUTE, 5).corr(23).sync_id(3);
        // A record whose call is not in the report (cropped).
        s.event_record(COMPUTE, 6).corr(24).sync_id(4);
        // A wait on no event (nsys 2026 writes eventSyncId 0 there).
        s.api(MAIN, 3_000..3_100, "cudaStreamSynchronize_v3020")
            .corr(25);
        s.sync(COMPUTE, 3_010..3_090, STREAM_SYNC)
            .corr(25)
            .event(NO_EVENT)
            .sync_id(0);
    });
    assert!(event_flows(&trace).is_empty());
    assert_eq!(trace.count("cuda_sync"), 4, "every wait is in the trace");
    assert_eq!(
        (
            summary.event_flows,
            summary.event_waits_unrecorded,
            summary.event_waits_before_record,
            summary.event_records_without_call
        ),
        (0, 2, 1, 1)
    );
    let warnings = summary.warnings().join("\n");
    for expected in [
        "2 synchronizations wait on a CUDA event recorded before the capture started",
        "1 synchronization starts before the call that recorded",
        "1 CUDA event record has no recording call",
    ] {
        assert!(warnings.contains(expected), "{expected}: {warnings}");
    }
    // The record call still says what it recorded.
    let record = trace
        .slices
        .iter()
        .find(|s| s.name == "cudaEventRecord")
        .unwrap();
    assert_eq!(int(record, "event_id"), Some(5));
}

#[test]
fn event_flows_and_launch_flows_leave_one_call_apart() {
    // One wait's flow and a kernel's launch flow, from calls of equal
    // correlation ids in two processes.
    let other = Thread { pid: 200, tid: 200 };
    let other_stream = GpuStream {
        pid: 200,
        ..COMPUTE
    };
    let (trace, summary) = convert_synthetic(|s| {
        s.api(MAIN, 1_000..1_100, "cudaEventRecord_v3020").corr(7);
        s.event_record(COMPUTE, 1).corr(7).sync_id(1);
        s.api(other, 1_000..1_100, "cudaLaunchKernel_v7000").corr(7);
        s.kernel(other_stream, 1_500..2_500, "k").corr(7);
        s.api(MAIN, 2_000..2_100, "cudaStreamWaitEvent_v3020")
            .corr(8);
        s.sync(COPY, 2_010..2_090, STREAM_WAIT_EVENT)
            .corr(8)
            .event(1)
            .sync_id(1);
    });
    assert_eq!((summary.flows, summary.event_flows), (1, 1));
    assert_eq!(trace.flows.len(), 2);
    let targets: Vec<&str> = trace
        .flows
        .iter()
        .map(|&(_, to)| trace.slices[to].category.as_str())
        .collect();
    assert_eq!(targets, ["cuda_kernel", "cuda_sync"]);
}

fn fixtures() -> Vec<PathBuf> {
    crate::support::fixtures::all().unwrap_or_default()
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn fixtures_link_every_wait_whose_record_they_hold() {
    for input in fixtures() {
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let db = open(&input);
        let converted = crate::support::converted::converted(&input);
        let (trace, summary) = (&converted.trace, &converted.summary);
        trace.assert_valid();
        let flows = event_flows(trace);
        let expected = linked_event_waits(&db);
        assert_eq!(flows.len() as u64, expected, "{name}: event flows");
        assert_eq!(summary.event_flows, expected, "{name}: in the summary");
        assert_eq!(
            summary.event_flows
                + summary.event_waits_unrecorded
                + summary.event_waits_before_record,
            event_waits(&db),
            "{name}: every wait on an event is linked or counted"
        );
        assert_eq!(
            summary.event_records_without_call,
            event_records_without_call(&db),
            "{name}: records without a call"
        );
        for (record, wait) in flows {
            assert_eq!(record.category, "cuda_api", "{name}");
            assert!(
                record.name.contains("EventRecord"),
                "{name}: {}",
                record.name
            );
            assert!(record.ts <= wait.ts, "{name}: a flow runs forward");
            // The record's event is the one the wait names.
            assert_eq!(int(record, "event_id"), int(wait, "event_id"), "{name}");
            assert!(int(record, "event_stream").is_some(), "{name}");
            assert_eq!(
                int(wait, "event_record_correlation_id"),
                int(record, "correlation_id"),
                "{name}"
            );
        }
        eprintln!(
            "{name}: {} event flows, {} waits unrecorded, {} before their record",
            summary.event_flows, summary.event_waits_unrecorded, summary.event_waits_before_record
        );
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_h100_capture_links_its_event_queries_and_stream_waits() {
    let Some(input) = fixtures()
        .into_iter()
        .find(|f| f.ends_with("h100_torch_graph_node.sqlite"))
    else {
        return;
    };
    let converted = crate::support::converted::converted(&input);
    let (trace, summary) = (&converted.trace, &converted.summary);
    let flows = event_flows(trace);
    // 108 cudaEventQuery syncs and 2 cross-stream waits name a record of
    // the table; 67 waits name event 1 with no record (eventSyncId 0).
    assert_eq!(flows.len(), 110);
    let cross_stream = flows
        .iter()
        .filter(|(record, wait)| {
            wait.name == "Stream wait sync" && int(record, "event_stream") != stream_of(trace, wait)
        })
        .count();
    assert_eq!(cross_stream, 2);
    assert_eq!(summary.event_waits_unrecorded, 67);
    // Every record of the table is on its call.
    let records = trace
        .slices
        .iter()
        .filter(|s| s.args.contains_key("event_id") && s.category == "cuda_api")
        .count();
    assert_eq!(records, 76);
}

#[test]
fn a_record_says_when_the_device_completed_it() {
    let (trace, _) = convert_synthetic(|s| {
        s.api(MAIN, 1_000..1_100, "cudaEventRecord_v3020").corr(10);
        s.event_record(COMPUTE, 5).corr(10).completed(1_800);
        // nsys writes 0 where it did not collect the time.
        s.api(MAIN, 2_000..2_100, "cudaEventRecord_v3020").corr(11);
        s.event_record(COMPUTE, 6).corr(11);
    });
    let records: Vec<(Option<i64>, Option<i64>)> = trace
        .slices
        .iter()
        .map(|s| (int(s, "event_id"), int(s, "event_completed")))
        .collect();
    assert_eq!(records, [(Some(5), Some(1_800)), (Some(6), None)]);
}
