//! Every real export in ../shared/fixtures converts into a trace that passes
//! the checker, with exactly the source's events, times and launch links.
//!
//! Expected numbers come from SQL written here, independently of the
//! converter's own queries, and trace_processor's import of each trace must
//! have them too. Fresh clones have no ../shared: then these tests say so
//! and skip.

use std::path::Path;

use crate::support::checker;
use crate::support::converted::Converted;
use crate::support::fixtures::fixture;
use crate::support::source::{gpu_rows_by_place, has_column, has_table, launched_ops, nvtx_totals};
use crate::support::source::{open, source_totals, GPU_WORK_TABLES};

fn convert(input: &Path) -> std::sync::Arc<Converted> {
    crate::support::converted::converted(input)
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn every_fixture_converts_faithfully() {
    let Some(files) = crate::support::fixtures::all() else {
        return;
    };
    assert!(
        files.len() >= 15,
        "expected the fixture set, found {}",
        files.len()
    );
    for input in files {
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        // trace_processor's own numbers are compared with the source's here,
        // as the checker's are (and the two with each other in convert_imported).
        let converted = convert(&input);
        let (trace, summary, imported) =
            (&converted.trace, &converted.summary, &converted.imported);
        trace.assert_valid();
        let db = open(&input);
        for (category, table) in [
            ("cuda_api", "CUPTI_ACTIVITY_KIND_RUNTIME"),
            ("cuda_kernel", "CUPTI_ACTIVITY_KIND_KERNEL"),
            ("cuda_memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
            ("cuda_memset", "CUPTI_ACTIVITY_KIND_MEMSET"),
            ("cuda_sync", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"),
            ("cuda_graph", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"),
        ] {
            let expected = source_totals(&db, table);
            assert_eq!(
                trace.totals(category),
                expected,
                "{name}: {category} (count, Σts, Σdur)"
            );
            if let Some(imported) = &imported {
                assert_eq!(
                    imported_totals(imported, category),
                    expected,
                    "{name}: {category} (count, Σts, Σdur) in trace_processor"
                );
            }
        }
        let expected = nvtx_totals(&db, trace.trace_end());
        assert_eq!(
            trace.totals("nvtx"),
            expected,
            "{name}: nvtx (count, Σts, Σdur)"
        );
        if let Some(imported) = &imported {
            assert_eq!(
                imported_totals(imported, "nvtx"),
                expected,
                "{name}: nvtx (count, Σts, Σdur) in trace_processor"
            );
        }

        // Flows into synchronizations come from event records (tests/it/events.rs).
        let launch_flows: Vec<(usize, usize)> = trace
            .flows
            .iter()
            .copied()
            .filter(|&(_, to)| trace.slices[to].category != "cuda_sync")
            .collect();
        let expected_flows = launched_ops(&db);
        assert_eq!(launch_flows.len() as u64, expected_flows, "{name}: flows");
        if let Some(imported) = &imported {
            assert_eq!(
                imported.flows,
                trace.flows.len() as u64,
                "{name}: flows in trace_processor"
            );
        }
        assert_eq!(
            summary.flows, expected_flows,
            "{name}: flows in the summary"
        );
        for &(from, to) in &launch_flows {
            let (from, to) = (&trace.slices[from], &trace.slices[to]);
            assert_eq!(from.category, "cuda_api", "{name}: flow source");
            assert!(
                ["cuda_kernel", "cuda_memcpy", "cuda_memset", "cuda_graph"]
                    .contains(&to.category.as_str()),
                "{name}: flow target"
            );
            // The correlation id is the launch's: its work, at the other
            // end of the flow, does not repeat it.
            assert!(
                matches!(
                    from.args.get("correlation_id"),
                    Some(checker::Value::Int(_))
                ),
                "{name}: a launch without its correlation id"
            );
            assert!(
                !to.args.contains_key("correlation_id"),
                "{name}: linked work repeats its launch's correlation id"
            );
        }
        for s in &trace.slices {
            if let Some(thread) = trace.thread_of(s.track) {
                assert!(
                    thread.thread_name.as_deref().is_some_and(|n| !n.is_empty()),
                    "{name}: unnamed thread"
                );
            }
        }
        eprintln!("{name}: {summary}");
    }
}

/// Every GPU slice is on the GPU its CUDA context ran on and under its own
/// process: GPU work by (GPU, pid) as the trace shows it equals SQL over the
/// source that puts each row on the GPU of its context's kernels.
/// Synchronizations record no GPU (exports write 0): on the 2-GPU capture,
/// those of the process whose kernels all run on GPU 1 must be there too.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn gpu_work_lands_on_the_gpu_of_its_context() {
    let Some(files) = crate::support::fixtures::all() else {
        return;
    };
    for input in files {
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let db = open(&input);
        let tables: Vec<(&str, &str)> = GPU_WORK_TABLES
            .into_iter()
            .filter(|(_, t)| has_table(&db, t) && has_column(&db, t, "deviceId"))
            .collect();
        if tables.is_empty() {
            continue;
        }
        let converted = convert(&input);
        let (trace, summary) = (&converted.trace, &converted.summary);
        trace.assert_valid();
        for (category, table) in tables {
            let expected = gpu_rows_by_place(&db, table, "1");
            let mut shown = trace.by_gpu_place(category);
            if !has_column(&db, table, "globalPid") {
                // The export names no process; the trace may name the only one.
                shown = shown
                    .into_iter()
                    .fold(Default::default(), |mut all, ((gpu, _), n)| {
                        *all.entry((gpu, None)).or_default() += n;
                        all
                    });
            }
            assert_eq!(shown, expected, "{name}: {category} by (GPU, pid)");
            if name == "nsys-ai_h100_2gpu_1s.sqlite" && category == "cuda_sync" {
                assert_eq!(
                    expected.get(&(1, Some(112))),
                    Some(&122),
                    "{name}: {expected:?}"
                );
            }
        }
        // Every fixture's synchronizations have a context with kernels, or
        // a single GPU.
        assert_eq!(summary.syncs_on_unknown_device, 0, "{name}");
    }
}

/// (count, Σts, Σdur) of a category's slices as trace_processor imported
/// them; every slice must have ended.
fn imported_totals(imported: &crate::support::tp::Imported, category: &str) -> (u64, u128, u128) {
    let t = imported.slices.get(category).copied().unwrap_or_default();
    assert_eq!(
        t.open, 0,
        "{category}: slices without end in trace_processor"
    );
    (t.count, t.ts, t.dur)
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn correlation_ids_shared_by_two_processes_link_within_each() {
    let Some(input) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let converted = convert(&input);
    let (trace, _) = (&converted.trace, &converted.summary);
    let mut pids = std::collections::BTreeSet::new();
    for &(from, to) in &trace.flows {
        let launcher = trace
            .thread_of(trace.slices[from].track)
            .and_then(|t| t.pid)
            .expect("launch on a thread");
        // A stream track describes its process as "... (pid N), context ...".
        let stream = &trace.tracks[&trace.slices[to].track];
        let description = stream
            .description
            .as_deref()
            .expect("stream tracks are described");
        assert!(
            description.contains(&format!("(pid {launcher})")),
            "launch in pid {launcher} linked to {description}"
        );
        pids.insert(launcher);
    }
    assert_eq!(pids.len(), 2, "both processes have linked launches");
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
#[allow(clippy::approx_constant)] // 2.718281828 is the payload the demo recorded
fn nvtx_domains_categories_payloads_and_threads_of_the_c_demo() {
    let Some(input) = fixture("nvtx_c_full.sqlite") else {
        return;
    };
    let converted = convert(&input);
    let (trace, summary) = (&converted.trace, &converted.summary);
    trace.assert_valid();
    assert_eq!(summary.slices.get("nvtx"), Some(&35));
    let find = |name: &str| {
        trace
            .slices
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let track = |s: &checker::Slice| trace.tracks[&s.track].name.clone().unwrap_or_default();
    use checker::Value;

    // Registered strings (textId) name ranges; domains name tracks; categories are named.
    let registered = find("registered_iter");
    assert_eq!(track(registered), "NVTX: C_DomainA");
    assert_eq!(
        registered.args.get("category"),
        Some(&Value::Str("iterations".into()))
    );
    let worker = find("worker_range");
    assert_eq!(
        worker.args.get("category"),
        Some(&Value::Str("workers".into()))
    );
    assert_eq!(
        trace
            .thread_of(worker.track)
            .unwrap()
            .thread_name
            .as_deref()
            .map(|n| n.starts_with("c-worker-")),
        Some(true)
    );
    // A category of the default domain, registered in the default domain.
    let inner = find("inner_u64");
    assert_eq!(track(inner), "NVTX");
    assert_eq!(
        inner.args.get("category"),
        Some(&Value::Str("default-domain-category".into()))
    );
    assert_eq!(
        inner.args.get("payload"),
        Some(&Value::Uint(123456789012345))
    );
    assert_eq!(inner.depth, 1, "pushed inside outer_ascii");
    assert_eq!(
        find("inner_double").args.get("payload"),
        Some(&Value::Double(2.718281828))
    );
    assert_eq!(
        find("inner_i32").args.get("payload"),
        Some(&Value::Int(-42))
    );
    assert!(trace.slices.iter().any(|s| s.name == "wide_char_range é中"));
    // ARGB 0xFF00FFFF → #00ffff.
    assert_eq!(
        find("cross_thread_0").args.get("color"),
        Some(&Value::Str("#00ffff".into()))
    );

    // Start/end ranges that end on other threads sit on the process.
    let cross = find("cross_thread_2");
    assert_eq!(track(cross), "NVTX: C_DomainB");
    assert_eq!(cross.args.get("end_tid"), Some(&Value::Int(18057)));
    let parent = trace.tracks[&cross.track].parent.unwrap();
    assert_eq!(
        trace.tracks[&parent].process_name.as_deref(),
        Some("./nvtx_c_demo")
    );
    // Marks are instants.
    assert_eq!(find("worker mark").dur, 0);
    assert_eq!(find("c program end").dur, 0);
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn wall_clock_comes_from_the_session_start() {
    let Some(input) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let converted = convert(&input);
    let (trace, _) = (&converted.trace, &converted.summary);
    let start: i64 = open(&input)
        .query_row(
            "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(trace.realtime_at_zero, Some(start as u64));
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn nothing_of_the_profiled_machines_environment_is_written() {
    let Some(files) = crate::support::fixtures::all() else {
        return;
    };
    for input in files {
        let db = open(&input);
        if !has_table(&db, "TARGET_INFO_SYSTEM_ENV") {
            continue;
        }
        let values: Vec<Vec<u8>> = db
            .prepare(
                "SELECT CAST(value AS BLOB) FROM TARGET_INFO_SYSTEM_ENV WHERE value IS NOT NULL",
            )
            .unwrap()
            .query_map([], |r| r.get::<_, Vec<u8>>(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        // Environment blobs are `K=V;K=V`: look for each variable on its own too.
        // Short values (a host name) may also be in the user's own event text, such as
        // the file paths in DLProf's NVTX messages: look for assignments and blobs.
        // Stack frames name the libraries a process loaded, and nsys's
        // diagnostics the libraries it loaded itself, which may sit in a
        // directory an environment variable also names: those paths are the
        // profile's own data, not the environment.
        let mut modules: Vec<Vec<u8>> = Vec::new();
        for table in ["OSRT_CALLCHAINS", "SAMPLING_CALLCHAINS"] {
            if has_table(&db, table) {
                let sql = format!(
                    "SELECT DISTINCT CAST(s.value AS BLOB) FROM {table} c JOIN StringIds s ON s.id IN (c.module, c.symbol)"
                );
                let mut stmt = db.prepare(&sql).unwrap();
                let rows = stmt.query_map([], |r| r.get::<_, Vec<u8>>(0)).unwrap();
                modules.extend(rows.map(Result::unwrap));
            }
        }
        if has_table(&db, "DIAGNOSTIC_EVENT") {
            let mut stmt = db
                .prepare("SELECT CAST(text AS BLOB) FROM DIAGNOSTIC_EVENT WHERE text IS NOT NULL")
                .unwrap();
            let rows = stmt.query_map([], |r| r.get::<_, Vec<u8>>(0)).unwrap();
            modules.extend(rows.map(Result::unwrap));
        }
        let in_stacks = |s: &[u8]| modules.iter().any(|m| m.windows(s.len()).any(|w| w == s));
        let secrets: Vec<&[u8]> = values
            .iter()
            .flat_map(|v| v.split(|&b| b == b';').chain([v.as_slice()]))
            .filter(|s| s.len() >= 24 || (s.len() >= 8 && s.contains(&b'=')))
            .filter(|s| !in_stacks(s))
            .collect();
        // The run's shared conversion, gunzipped: the raw trace's bytes.
        let trace = std::fs::read(&convert(&input).path).unwrap();
        let bytes = checker::decompress(&trace);
        for secret in secrets {
            let leaked = memchr::memmem::find(&bytes, secret).is_some();
            assert!(
                !leaked,
                "{}: {:?} is in the trace",
                input.display(),
                String::from_utf8_lossy(secret)
            );
        }
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn traces_of_two_ranks_concatenate_without_collisions() {
    let (Some(a), Some(b)) = (
        fixture("cori_run1_report1.sqlite"),
        fixture("abacus_report1.sqlite"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut joined = Vec::new();
    let mut flows = 0;
    for (i, input) in [a, b].iter().enumerate() {
        let output = dir.path().join(format!("{i}.perfetto-trace"));
        let summary = crate::support::convert::convert_into(input, &output, &Default::default()).1;
        flows += summary.flows + summary.event_flows;
        joined.extend(std::fs::read(&output).unwrap());
    }
    // Two gzip members, one after the other, as `cat` makes them.
    let trace = crate::support::convert::check_bytes(&joined, "two ranks joined");
    trace.assert_valid();
    assert_eq!(trace.flows.len() as u64, flows);
}
