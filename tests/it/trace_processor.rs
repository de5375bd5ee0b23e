//! The judge itself: trace_processor's import, as tests/it/support/tp.rs reads
//! it, has the numbers of a trace built here packet by packet, reports what is
//! wrong with a broken one, and any disagreement with the checker fails.

use std::path::{Path, PathBuf};

use crate::support::checker;
use crate::support::fixtures::{require, Need};
use crate::support::tp::{self, Totals};
use nsys2perfetto::perfetto::proto::{
    trace_packet, track_event, EventCategory, EventName, InternedData, ThreadDescriptor, Trace,
    TracePacket, TrackDescriptor, TrackEvent,
};
use prost::Message;

const THREAD_TRACK: u64 = 10;

fn on_sequence(data: trace_packet::Data, ts: Option<u64>) -> TracePacket {
    TracePacket {
        timestamp: ts,
        data: Some(data),
        optional_trusted_packet_sequence_id: Some(
            trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(1),
        ),
        ..Default::default()
    }
}

/// The sequence's first packet: clears its state, interns category 1 ("work")
/// and names 1 ("a") and 2 ("b"), and describes the thread 2 of process 1.
fn start() -> TracePacket {
    let mut p = on_sequence(
        trace_packet::Data::TrackDescriptor(TrackDescriptor {
            uuid: Some(THREAD_TRACK),
            thread: Some(ThreadDescriptor {
                pid: Some(1),
                tid: Some(2),
                thread_name: Some("main".into()),
            }),
            ..Default::default()
        }),
        None,
    );
    p.sequence_flags = Some(trace_packet::SequenceFlags::SeqIncrementalStateCleared as u32);
    p.interned_data = Some(InternedData {
        event_categories: vec![EventCategory {
            iid: Some(1),
            name: Some("work".into()),
        }],
        event_names: ["a", "b"]
            .iter()
            .zip(1..)
            .map(|(name, iid)| EventName {
                iid: Some(iid),
                name: Some((*name).into()),
            })
            .collect(),
        ..Default::default()
    });
    p
}

/// An event of `kind` on the thread, in category "work" and named by the
/// interned name `name_iid` (an END carries neither).
fn event(kind: track_event::Type, name_iid: u64) -> TrackEvent {
    TrackEvent {
        r#type: Some(kind as i32),
        track_uuid: Some(THREAD_TRACK),
        category_iids: if kind == track_event::Type::SliceEnd {
            Vec::new()
        } else {
            vec![1]
        },
        name_field: (kind != track_event::Type::SliceEnd)
            .then_some(track_event::NameField::NameIid(name_iid)),
        ..Default::default()
    }
}

fn packet(ts: u64, e: TrackEvent) -> TracePacket {
    on_sequence(trace_packet::Data::TrackEvent(e), Some(ts))
}

fn write(dir: &Path, packets: Vec<TracePacket>) -> PathBuf {
    let path = dir.join("t.pb");
    std::fs::write(&path, Trace { packet: packets }.encode_to_vec()).unwrap();
    path
}

#[test]
fn a_sound_trace_imports_as_the_checker_decoded_it() {
    let Some(binary) = require(Need::TraceProcessor) else {
        return;
    };
    use track_event::Type::*;
    let dir = tempfile::tempdir().unwrap();
    let trace = write(
        dir.path(),
        vec![
            start(),
            packet(
                100,
                TrackEvent {
                    flow_ids: vec![7],
                    ..event(SliceBegin, 1)
                },
            ),
            packet(150, event(SliceEnd, 0)),
            packet(
                200,
                TrackEvent {
                    terminating_flow_ids: vec![7],
                    ..event(Instant, 2)
                },
            ),
        ],
    );
    let checked = checker::check_file(&trace);
    checked.assert_valid();
    let imported = tp::import(&binary, &trace);
    assert_eq!(
        imported.slices.get("work"),
        Some(&Totals {
            count: 2,
            ts: 300,
            dur: 50,
            open: 0
        })
    );
    assert_eq!(imported.flows, 1);
    assert_eq!(
        imported.threads.get("pid 1 tid 2"),
        Some(&(Some("main".to_owned()), 2))
    );
    assert!(imported.problems.is_empty(), "{:?}", imported.problems);
    assert_eq!(tp::differences(&imported, &tp::expected(&checked)), [""; 0]);
}

#[test]
fn import_problems_and_disagreements_are_reported() {
    let Some(binary) = require(Need::TraceProcessor) else {
        return;
    };
    use track_event::Type::*;
    let dir = tempfile::tempdir().unwrap();
    // An event on no sequence (trace_processor drops it as an error), and a
    // BEGIN that never ends.
    let mut without_sequence = packet(100, event(Instant, 2));
    without_sequence.optional_trusted_packet_sequence_id = None;
    let trace = write(
        dir.path(),
        vec![start(), without_sequence, packet(200, event(SliceBegin, 1))],
    );
    let checked = checker::check_file(&trace);
    assert!(!checked.errors.is_empty(), "the checker sees it too");
    let imported = tp::import(&binary, &trace);
    let differences = tp::differences(&imported, &tp::expected(&checked));
    assert!(
        differences.contains(
            &"import problem: track_event_missing_sequence_id (error, analysis) = 1".to_owned()
        ),
        "{differences:?}"
    );
    assert!(
        differences
            .iter()
            .any(|d| d.starts_with("slices of category \"work\"")),
        "the open slice has no end in trace_processor: {differences:?}"
    );

    // What the checker decoded, with one flow more than there is.
    let mut expected = tp::expected(&checked);
    expected.flows += 1;
    let differences = tp::differences(&imported, &expected);
    assert!(
        differences.contains(&"flows: trace_processor has 0; the checker 1".to_owned()),
        "{differences:?}"
    );
}
