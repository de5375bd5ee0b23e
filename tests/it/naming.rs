//! Tracks are named for what they are, alike on every GPU and in every
//! process, on the real reports in ../shared/fixtures.

use std::collections::{BTreeMap, BTreeSet};

use std::sync::Arc;

use crate::support::checker::Checked;
use crate::support::converted::Converted;
use crate::support::fixtures::fixture;

fn convert(name: &str) -> Option<Arc<Converted>> {
    let input = fixture(name)?;
    let converted = crate::support::converted::converted(&input);
    converted.trace.assert_valid();
    Some(converted)
}

/// The names of the tracks directly inside a top-level "GPU ..." group.
fn stream_names(trace: &Checked) -> Vec<String> {
    let gpu_groups: BTreeSet<u64> = trace
        .tracks
        .iter()
        .filter(|(_, t)| {
            t.parent.is_none() && t.name.as_deref().is_some_and(|n| n.starts_with("GPU "))
        })
        .map(|(uuid, _)| *uuid)
        .collect();
    trace
        .tracks
        .values()
        .filter(|t| t.parent.is_some_and(|p| gpu_groups.contains(&p)))
        .filter_map(|t| t.name.clone())
        .filter(|n| n.starts_with("Stream ") || n.starts_with("No stream"))
        .collect()
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn work_on_no_stream_is_named_so() {
    let Some(converted) = convert("h100_torch_graph_node.sqlite") else {
        return;
    };
    let trace = &converted.trace;
    let names = stream_names(trace);
    assert!(!names.iter().any(|n| n.contains("4294967295")), "{names:?}");
    let no_stream: Vec<_> = trace
        .slices
        .iter()
        .filter(|s| trace.tracks[&s.track].name.as_deref() == Some("No stream"))
        .collect();
    assert!(!no_stream.is_empty(), "synchronizations on no stream");
    assert!(no_stream.iter().all(|s| s.category == "cuda_sync"));
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn streams_are_named_alike_on_every_gpu() {
    let Some(files) = crate::support::fixtures::all() else {
        return;
    };
    for input in files {
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let converted = crate::support::converted::converted(&input);
        let (trace, _) = (&converted.trace, &converted.summary);
        let names = stream_names(trace);
        // Either every stream says its process, or none does.
        let with_pid: BTreeSet<bool> = names.iter().map(|n| n.contains("(pid ")).collect();
        assert!(with_pid.len() <= 1, "{name}: {names:?}");
        // Within a GPU, one name is one stream (its lanes repeat its name
        // and description): the UI merges same-named siblings into a row.
        for (uuid, group) in trace.tracks.iter().filter(|(_, t)| t.parent.is_none()) {
            let mut streams: BTreeMap<&str, BTreeSet<Option<&str>>> = BTreeMap::new();
            for t in trace.tracks.values().filter(|t| t.parent == Some(*uuid)) {
                if let Some(n) = t.name.as_deref().filter(|n| n.starts_with("Stream ")) {
                    streams
                        .entry(n)
                        .or_default()
                        .insert(t.description.as_deref());
                }
            }
            for (stream, descriptions) in streams {
                assert_eq!(
                    descriptions.len(),
                    1,
                    "{name}: {:?} has several {stream:?}: {descriptions:?}",
                    group.name
                );
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn two_processes_on_two_gpus_name_their_streams_with_the_pid() {
    let Some(converted) = convert("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let trace = &converted.trace;
    let names = stream_names(trace);
    assert!(!names.is_empty());
    assert!(names.iter().all(|n| n.contains("(pid ")), "{names:?}");
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn nsys_markers_without_a_thread_sit_on_their_process() {
    let Some(input) = fixture("abacus_report1.sqlite") else {
        return;
    };
    let converted = crate::support::converted::converted(&input);
    let (trace, _) = (&converted.trace, &converted.summary);
    assert!(
        !trace
            .tracks
            .values()
            .any(|t| t.thread_name.as_deref() == Some("Thread 0") || t.tid == Some(0)),
        "a thread 0"
    );
    let markers: Vec<_> = trace
        .slices
        .iter()
        .filter(|s| trace.tracks[&s.track].name.as_deref() == Some("nsys markers"))
        .collect();
    let db = crate::support::source::open(&input);
    let expected: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM OSRT_API WHERE (globalTid & 16777215) = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(markers.len() as i64, expected);
    assert!(markers
        .iter()
        .any(|s| s.name == "OS runtime libraries profiling started"));
    for s in markers {
        let process = trace.tracks[&trace.tracks[&s.track].parent.unwrap()].clone();
        assert!(process.pid.is_some() && process.tid.is_none());
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn ranks_started_by_nsys_are_named_by_their_program() {
    let Some(converted) = convert("cori_run1_report1.sqlite") else {
        return;
    };
    let trace = &converted.trace;
    let processes: Vec<&str> = trace
        .tracks
        .values()
        .filter(|t| t.tid.is_none())
        .filter_map(|t| t.process_name.as_deref())
        .collect();
    assert!(processes.contains(&"gem_main"), "{processes:?}");
    assert!(!processes.contains(&"nsys-launcher"), "{processes:?}");
}
