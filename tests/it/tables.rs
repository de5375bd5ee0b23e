//! Every table of an export that holds timed rows is converted or named in
//! a warning. Each table of every fixture (the 2022.4 reference export
//! `nvtx_c_full_nonlazy` holds all 139 tables of that schema, the 2022.2
//! one 96) must be in one of the converter's declared lists
//! (`nsys2perfetto::table_role`): converted, known to hold no timed events,
//! or known not converted (warned about). Tables that no fixture has rows
//! of (OpenGL, file accesses of OS runtime calls) are built with the
//! columns NVIDIA's schema gives, converted, and must land exactly.

use std::collections::BTreeMap;

use nsys2perfetto::{table_role, Options, TableRole};

use crate::support::checker::Value;
use crate::support::convert::{convert, synthetic};
use crate::support::fixtures::all;
use crate::support::source::open;
use crate::support::synth::Thread;

const MAIN: Thread = Thread { pid: 100, tid: 100 };
const WORKER: Thread = Thread { pid: 100, tid: 101 };

#[test]
fn every_table_of_every_fixture_is_converted_or_declared_untimed_or_warned_about() {
    let Some(files) = all() else {
        return;
    };
    let mut unknown: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut roles: BTreeMap<&str, usize> = BTreeMap::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let db = open(file);
        let mut stmt = db
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .unwrap();
        let tables: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for table in tables {
            match table_role(&table) {
                Some(role) => {
                    *roles
                        .entry(match role {
                            TableRole::Converted => "converted",
                            TableRole::Untimed => "untimed",
                            TableRole::NotConverted => "not converted",
                        })
                        .or_default() += 1;
                }
                None => unknown.entry(table).or_default().push(name.clone()),
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "tables in no declared list (src/nsys/tables.rs), with the fixtures that have them: {unknown:#?}"
    );
    assert!(roles.len() == 3, "{roles:?}");
}

/// A file access row: (thread id as recorded, descriptor, span, event type, bytes).
fn file_access(
    s: &mut crate::support::synth::Synth,
    thread: i64,
    fd: i64,
    span: (i64, i64),
    kind: i64,
) {
    s.row(
        "OSRT_FILE_ACCESS_EVENTS",
        vec![
            ("fileAccessId", fd.into()),
            ("threadId", thread.into()),
            ("startedAt", span.0.into()),
            ("endedAt", span.1.into()),
            ("eventType", kind.into()),
            ("apiCallId", (span.0 / 1000).into()),
            ("bytesProcessed", 4096.into()),
        ],
    );
}

fn gl(s: &mut crate::support::synth::Synth, table: &str, span: (i64, i64), name: &str) {
    let name = s.string(name);
    s.row(
        table,
        vec![
            ("start", span.0.into()),
            ("end", span.1.into()),
            ("eventClass", 0.into()),
            ("globalTid", MAIN.global_tid().into()),
            ("nameId", name.into()),
            ("returnValue", 0.into()),
            ("frameId", 1.into()),
            ("contextId", 7.into()),
            ("gpu", 0.into()),
        ],
    );
}

#[test]
fn opengl_calls_gpu_work_and_file_accesses_land_and_unknown_timed_tables_are_named() {
    let (_dir, input) = synthetic(|s| {
        s.process(100, "viewer");
        s.thread(MAIN, "main");
        s.thread(WORKER, "io");
        s.gpu(0, "NVIDIA RTX A6000");
        gl(s, "OPENGL_API", (1_000, 1_500), "glDrawArrays");
        gl(s, "OPENGL_API", (2_000, 2_300), "glFinish");
        gl(s, "OPENGL_WORKLOAD", (1_600, 3_000), "glDrawArrays");
        gl(s, "OPENGL_WORKLOAD", (2_500, 3_500), "glDrawArrays");
        for (id, name, label) in [(1, "OPEN", "open"), (2, "READ", "read")] {
            s.row(
                "ENUM_OSRT_FILE_ACCESS_EVENT_TYPE",
                vec![
                    ("id", id.into()),
                    ("name", name.to_owned().into()),
                    ("label", label.to_owned().into()),
                ],
            );
        }
        s.row(
            "OSRT_FILE_ACCESS_DESCRIPTORS",
            vec![
                ("fileAccessId", 3.into()),
                ("processId", 100.into()),
                ("openedAt", 900.into()),
                ("filePath", "/data/weights.bin".to_owned().into()),
            ],
        );
        // The thread as a globalTid packs it, and as a plain tid.
        file_access(s, MAIN.global_tid(), 3, (900, 1_200), 1);
        file_access(s, 101, 3, (1_300, 2_700), 2);
        file_access(s, 101, 3, (2_000, 2_100), 2);
        // Timed rows of a table not converted, and of a table no list
        // names (a newer nsys's): both named; rows of a table of no timed
        // events (PROCESSES) are not.
        let name = s.string("vkQueueSubmit");
        s.row(
            "VULKAN_API",
            vec![
                ("start", 5_000.into()),
                ("end", 5_100.into()),
                ("eventClass", 0.into()),
                ("globalTid", MAIN.global_tid().into()),
                ("nameId", name.into()),
            ],
        );
        s.row(
            "FUTURE_EVENTS",
            vec![
                ("beganAt", 6_000.into()),
                ("globalTid", MAIN.global_tid().into()),
            ],
        );
    });
    // `convert` has trace_processor import the trace, where ../shared has it.
    let (trace, summary) = convert(&input, &Options::default());
    trace.assert_valid();
    let named: Vec<(&str, u64)> = summary
        .unconverted
        .iter()
        .map(|u| (u.table.as_str(), u.rows))
        .collect();
    assert_eq!(named, [("FUTURE_EVENTS", 1), ("VULKAN_API", 1)]);

    let of = |category: &str| -> Vec<(u64, u64, String, String)> {
        let mut v: Vec<_> = trace
            .slices
            .iter()
            .filter(|s| s.category == category)
            .map(|s| {
                let track = &trace.tracks[&s.track];
                let parent = track.parent.map(|p| {
                    let p = &trace.tracks[&p];
                    p.name.clone().or(p.thread_name.clone()).unwrap_or_default()
                });
                (
                    s.ts,
                    s.dur,
                    s.name.clone(),
                    format!("{} in {parent:?}", track.name.clone().unwrap_or_default()),
                )
            })
            .collect();
        v.sort();
        v
    };
    let on_main = "OpenGL in Some(\"main\")".to_owned();
    assert_eq!(
        of("opengl"),
        [
            (1_000, 500, "glDrawArrays".into(), on_main.clone()),
            (2_000, 300, "glFinish".into(), on_main),
        ]
    );
    let gpu = of("opengl_workload");
    assert_eq!(gpu.len(), 2);
    for ((ts, dur, name, track), (a, b)) in gpu.iter().zip([(1_600, 3_000), (2_500, 3_500)]) {
        assert_eq!((*ts, *dur, name.as_str()), (a, b - a, "glDrawArrays"));
        assert!(
            track.starts_with("OpenGL workload, GL context 7 in Some(\"GPU 0"),
            "{track}"
        );
    }
    assert_eq!(
        of("file_access"),
        [
            (
                900,
                300,
                "open".into(),
                "File access in Some(\"main\")".into()
            ),
            (
                1_300,
                1_400,
                "read".into(),
                "File access in Some(\"io\")".into()
            ),
            (
                2_000,
                100,
                "read".into(),
                "File access in Some(\"io\")".into()
            ),
        ]
    );
    for s in trace.slices.iter().filter(|s| s.category == "file_access") {
        assert_eq!(
            s.args.get("path"),
            Some(&Value::Str("/data/weights.bin".into()))
        );
        assert_eq!(s.args.get("bytes"), Some(&Value::Int(4096)));
    }
    let gl_call = trace
        .slices
        .iter()
        .find(|s| s.category == "opengl")
        .unwrap();
    assert_eq!(gl_call.args.get("frame"), Some(&Value::Int(1)));
    assert_eq!(gl_call.args.get("context"), Some(&Value::Int(7)));
}
