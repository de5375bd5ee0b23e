//! The profiler itself: its overhead (`PROFILER_OVERHEAD`,
//! `CUPTI_ACTIVITY_KIND_OVERHEAD`) as slices per thread, and its diagnostics
//! (`DIAGNOSTIC_EVENT`) as instants, in a top-level "nsys" group; and event
//! tables that nothing converts, named in a warning.

use crate::support::checker::{Checked, Slice, Value};
use crate::support::convert::{convert, convert_synthetic, synthetic};
use crate::support::source::{has_table, instant_totals, open, source_totals};
use crate::support::synth::{Thread, ERROR, INFO, WARNING};

const MAIN: Thread = Thread { pid: 100, tid: 100 };
const HELPER: Thread = Thread { pid: 100, tid: 105 };

fn of<'t>(trace: &'t Checked, category: &str) -> Vec<&'t Slice> {
    trace
        .slices
        .iter()
        .filter(|s| s.category == category)
        .collect()
}

fn text<'s>(slice: &'s Slice, arg: &str) -> Option<&'s str> {
    match slice.args.get(arg) {
        Some(Value::Str(v)) => Some(v),
        _ => None,
    }
}

fn track<'t>(trace: &'t Checked, slice: &Slice) -> &'t str {
    trace.tracks[&slice.track].name.as_deref().unwrap_or("")
}

#[test]
fn overhead_and_diagnostics_are_in_the_nsys_group() {
    let (trace, summary) = convert_synthetic(|s| {
        s.process(100, "python3");
        s.thread(MAIN, "python3");
        s.thread(HELPER, "CUPTI worker");
        s.profiler_overhead(Some(MAIN), 100..500, "CUDA profiling initialization");
        s.profiler_overhead(Some(MAIN), 600..700, "CUPTI Buffer flush")
            .overhead_type(3);
        s.profiler_overhead(Some(HELPER), 610..650, "CUPTI Buffer flush")
            .overhead_type(3);
        s.profiler_overhead(None, 800..900, "TLS allocation");
        // CUPTI's account of an API call's cost, within nsys's.
        s.cupti_overhead(MAIN, 650..690, "Command Buffer Full")
            .corr(42)
            .overhead_type(8);
        s.diagnostic(INFO, "Profiling has started.");
        s.diagnostic(WARNING, "No cuDNN events collected.")
            .at(50)
            .pid(100);
        s.diagnostic(ERROR, "").at(900).pid(100);
        // Before the session started: not in the trace, and said so.
        s.diagnostic(INFO, "Event 'CPU Cycles' used to trigger sampling.")
            .at(-10);
    });
    let spans = |category| -> Vec<(u64, u64, String, String)> {
        of(&trace, category)
            .iter()
            .map(|s| (s.ts, s.dur, s.name.clone(), track(&trace, s).to_owned()))
            .collect()
    };
    let on = |t: &str| t.to_owned();
    assert_eq!(
        spans("nsys_overhead"),
        [
            (
                100,
                400,
                on("CUDA profiling initialization"),
                on("Overhead: python3 (tid 100)")
            ),
            (
                600,
                100,
                on("CUPTI Buffer flush"),
                on("Overhead: python3 (tid 100)")
            ),
            (
                610,
                40,
                on("CUPTI Buffer flush"),
                on("Overhead: CUPTI worker (tid 105)")
            ),
            (800, 100, on("TLS allocation"), on("Overhead")),
        ]
    );
    assert_eq!(
        spans("cupti_overhead"),
        [(
            650,
            40,
            on("Command Buffer Full"),
            on("Overhead: python3 (tid 100)")
        )]
    );
    let diagnostics = of(&trace, "nsys_diagnostic");
    let seen: Vec<(u64, u64, &str, Option<&str>)> = diagnostics
        .iter()
        .map(|s| (s.ts, s.dur, s.name.as_str(), text(s, "severity")))
        .collect();
    assert_eq!(
        seen,
        [
            (0, 0, "Profiling has started.", Some("Info")),
            (50, 0, "No cuDNN events collected.", Some("Warning")),
            (900, 0, "Diagnostic", Some("Error")),
        ]
    );
    assert_eq!(text(diagnostics[0], "source"), Some("Daemon"));
    assert_eq!(
        text(diagnostics[0], "timestamp_type"),
        Some("Target timestamp")
    );
    assert!(!diagnostics[0].args.contains_key("pid"));
    assert_eq!(diagnostics[1].args.get("pid"), Some(&Value::Int(100)));
    assert_eq!(summary.before_time_zero.get("nsys_diagnostic"), Some(&1));

    // Kinds and correlation ids as args.
    let flush = of(&trace, "nsys_overhead")[1];
    assert_eq!(
        text(flush, "overhead_type"),
        Some("Buffer flush (Profiler)")
    );
    let cupti = of(&trace, "cupti_overhead")[0];
    assert_eq!(
        text(cupti, "overhead_type"),
        Some("Command buffer full (CUDA)")
    );
    assert_eq!(cupti.args.get("correlation_id"), Some(&Value::Int(42)));

    // All of it in one top-level group, apart from the processes.
    for s in trace.slices.iter() {
        let root = trace.root_of(s.track);
        assert_eq!(root.name.as_deref(), Some("nsys"), "{}", s.name);
        assert!(trace.thread_of(s.track).is_none());
    }
}

#[test]
fn the_nsys_part_can_be_left_out_and_its_tables_are_then_not_warned_about() {
    let (_dir, input) = synthetic(|s| {
        s.profiler_overhead(Some(MAIN), 100..500, "TLS allocation");
        s.diagnostic(INFO, "Profiling has started.");
    });
    let mut options = nsys2perfetto::Options::default();
    options.parts = nsys2perfetto::Parts::all().without(nsys2perfetto::Part::Nsys);
    let (trace, summary) = convert(&input, &options);
    trace.assert_valid();
    assert!(trace.slices.is_empty());
    assert!(summary.unconverted.is_empty(), "{:?}", summary.unconverted);
    assert!(summary.warnings().is_empty(), "{:?}", summary.warnings());
    assert_eq!(
        "nsys".parse::<nsys2perfetto::Part>(),
        Ok(nsys2perfetto::Part::Nsys)
    );
}

#[test]
fn event_tables_nothing_reads_are_named_with_their_rows() {
    let (_dir, input) = synthetic(|s| {
        let name = s.string("vkQueueSubmit");
        for start in [1_000_i64, 2_000] {
            s.row(
                "VULKAN_API",
                vec![
                    ("start", start.into()),
                    ("end", (start + 100).into()),
                    ("eventClass", 0.into()),
                    ("globalTid", MAIN.global_tid().into()),
                    ("nameId", name.into()),
                ],
            );
        }
        s.api(MAIN, 1_000..2_000, "cudaFree_v3020").corr(1);
        // A library's table: its part reads it.
        s.cudnn(MAIN, 3_000..3_100, "glDrawArrays");
    });
    let (trace, summary) = convert(&input, &Default::default());
    trace.assert_valid();
    let named: Vec<(&str, u64)> = summary
        .unconverted
        .iter()
        .map(|u| (u.table.as_str(), u.rows))
        .collect();
    assert_eq!(named, [("VULKAN_API", 2)]);
    assert!(summary
        .warnings()
        .contains(&"VULKAN_API is not converted: its 2 rows are not in the trace".to_owned()));
    // Tables of parts the user leaves out are left out on purpose.
    for part in [nsys2perfetto::Part::Libraries, nsys2perfetto::Part::Cuda] {
        let mut options = nsys2perfetto::Options::default();
        options.parts = nsys2perfetto::Parts::all().without(part);
        let (_, summary) = convert(&input, &options);
        let named: Vec<&str> = summary
            .unconverted
            .iter()
            .map(|u| u.table.as_str())
            .collect();
        assert_eq!(named, ["VULKAN_API"], "without {part:?}");
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn fixtures_show_all_their_overhead_and_diagnostics() {
    let Some(files) = crate::support::fixtures::all() else {
        return;
    };
    for input in files {
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let db = open(&input);
        let converted = crate::support::converted::converted(&input);
        let (trace, summary) = (&converted.trace, &converted.summary);
        trace.assert_valid();
        for (category, table) in [
            ("nsys_overhead", "PROFILER_OVERHEAD"),
            ("cupti_overhead", "CUPTI_ACTIVITY_KIND_OVERHEAD"),
        ] {
            assert_eq!(
                trace.totals(category),
                source_totals(&db, table),
                "{name}: {category} (count, Σts, Σdur)"
            );
            for s in of(trace, category) {
                assert_eq!(trace.root_of(s.track).name.as_deref(), Some("nsys"));
                assert!(
                    track(trace, s).starts_with("Overhead"),
                    "{name}: {}",
                    track(trace, s)
                );
            }
        }
        let diagnostics = instant_totals(&db, "DIAGNOSTIC_EVENT", "timestamp");
        assert_eq!(
            trace.totals("nsys_diagnostic"),
            diagnostics,
            "{name}: diagnostics (count, Σts, Σdur)"
        );
        let all = match has_table(&db, "DIAGNOSTIC_EVENT") {
            true => db
                .query_row("SELECT COUNT(*) FROM DIAGNOSTIC_EVENT", [], |r| {
                    r.get::<_, i64>(0)
                })
                .unwrap() as u64,
            false => 0,
        };
        let before = summary.before_time_zero.get("nsys_diagnostic").copied();
        assert_eq!(
            diagnostics.0 + before.unwrap_or(0),
            all,
            "{name}: diagnostics before time 0 are counted"
        );
        // Every diagnostic has its text and severity.
        for s in of(trace, "nsys_diagnostic") {
            assert!(!s.name.is_empty(), "{name}");
            assert!(text(s, "severity").is_some(), "{name}: {}", s.name);
        }
        assert!(
            summary.unconverted.is_empty(),
            "{name}: {:?}",
            summary.unconverted
        );
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_h100_capture_shows_its_warnings_and_where_nsys_cost_time() {
    let Some(input) = crate::support::fixtures::all().and_then(|files| {
        files
            .into_iter()
            .find(|f| f.ends_with("h100_torch_graph_node.sqlite"))
    }) else {
        return;
    };
    let converted = crate::support::converted::converted(&input);
    let (trace, _) = (&converted.trace, &converted.summary);
    let diagnostics = of(trace, "nsys_diagnostic");
    assert_eq!(diagnostics.len(), 23);
    let warnings = diagnostics
        .iter()
        .filter(|s| text(s, "severity") == Some("Warning"))
        .count();
    assert_eq!(warnings, 10);
    assert!(diagnostics
        .iter()
        .any(|s| s.name == "Profiling has started." && s.ts == 0));
    // 318 rows of the main thread (tid 862), the rest on ten other threads.
    let main = of(trace, "nsys_overhead")
        .into_iter()
        .filter(|s| track(trace, s) == "Overhead: python3 (tid 862)")
        .count();
    assert_eq!(main, 318);
}
