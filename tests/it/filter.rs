//! Filters on a conversion: each keeps exactly the rows that SQL over the
//! source export with the same condition finds, says how many it left out,
//! and leaves a trace that imports cleanly (no flow without both ends).

use std::collections::BTreeMap;
use std::process::Command;

use crate::support::checker::{Checked, Value};
use crate::support::convert::{convert, convert_into};
use crate::support::fixtures::fixture;
use crate::support::program::BIN;
use crate::support::source::{gpu_of_row_sql, has_column, has_table, open, CUDA_TABLES};
use nsys2perfetto::{Filter, Options, Part, Parts, Summary, TimeWindow};
use rusqlite::Connection;

fn count(db: &Connection, sql: &str) -> u64 {
    db.query_row(sql, [], |r| r.get::<_, i64>(0))
        .unwrap_or_else(|e| panic!("{sql}: {e}")) as u64
}

fn options(filter: Filter) -> Options {
    let mut options = Options::default();
    options.filter = filter;
    options
}

/// The CUDA tables of the export, with their slice category.
fn cuda_tables(db: &Connection) -> Vec<(&'static str, &'static str)> {
    CUDA_TABLES
        .into_iter()
        .filter(|(_, t)| has_table(db, t))
        .collect()
}

/// A window over the middle of the CUDA API calls, from the start of the
/// call 30% of the way through them to that of the call 60% through.
fn middle_window(db: &Connection) -> (i64, i64) {
    let n = count(
        db,
        "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE start >= 0",
    );
    let at = |k: u64| -> i64 {
        db.query_row(
            "SELECT start FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE start >= 0 ORDER BY start LIMIT 1 OFFSET ?1",
            [k as i64],
            |r| r.get(0),
        )
        .unwrap()
    };
    (at(n * 3 / 10), at(n * 6 / 10))
}

fn filtered_out(summary: &Summary, category: &str) -> u64 {
    summary.filtered_out.get(category).copied().unwrap_or(0)
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_time_window_keeps_what_overlaps_it_and_clips_slices_at_its_edges() {
    for name in [
        "h100_torch_graph_node.sqlite",
        "nsys-ai_h100_2gpu_1s.sqlite",
        "abacus_report1.sqlite",
    ] {
        let Some(input) = fixture(name) else { return };
        let db = open(&input);
        let (from, to) = middle_window(&db);
        let window = TimeWindow {
            start: Some(from),
            end: Some(to),
        };
        let (trace, summary) = convert(&input, &options(Filter::default().time(window)));
        trace.assert_valid();
        for (category, table) in cuda_tables(&db) {
            let all = count(
                &db,
                &format!("SELECT COUNT(*) FROM {table} WHERE start >= 0"),
            );
            let overlapping = format!(
                "SELECT COUNT(*) FROM {table} WHERE start >= 0 AND \"end\" >= {from} AND start <= {to}"
            );
            let kept = count(&db, &overlapping);
            assert_eq!(trace.count(category), kept, "{name}: {category}");
            assert_eq!(
                filtered_out(&summary, category),
                all - kept,
                "{name}: {category}"
            );
            let clipped_start = count(&db, &format!("{overlapping} AND start < {from}"));
            let clipped_end = count(&db, &format!("{overlapping} AND \"end\" > {to}"));
            let with = |arg: &str| {
                trace
                    .slices
                    .iter()
                    .filter(|s| s.category == category && s.args.contains_key(arg))
                    .count() as u64
            };
            assert_eq!(with("clipped_start"), clipped_start, "{name}: {category}");
            assert_eq!(with("clipped_end"), clipped_end, "{name}: {category}");
        }
        if has_table(&db, "OSRT_API") {
            let kept = count(&db, &format!(
                "SELECT COUNT(*) FROM OSRT_API WHERE start >= 0 AND \"end\" >= {from} AND start <= {to}"
            ));
            assert_eq!(trace.count("osrt"), kept, "{name}: osrt");
        }
        if has_table(&db, "NVTX_EVENTS") {
            // Marks inside the window; ranges overlapping it, those never
            // ended included.
            let kept = count(
                &db,
                &format!(
                    "SELECT COUNT(*) FROM NVTX_EVENTS WHERE start >= 0 AND start <= {to} AND (
                   (eventType IN (34, 65) AND start >= {from})
                   OR (eventType IN (59, 60, 70, 71) AND COALESCE(\"end\", 1 << 62) >= {from}))"
                ),
            );
            assert_eq!(trace.count("nvtx"), kept, "{name}: nvtx");
        }
        for s in &trace.slices {
            assert!(
                s.ts >= from as u64 && s.ts + s.dur <= to as u64,
                "{name}: {} at {}+{} is outside the window",
                s.name,
                s.ts,
                s.dur
            );
            if let Some(Value::Uint(start)) = s.args.get("clipped_start") {
                assert!(*start < from as u64 && s.ts == from as u64);
            }
        }
        assert!(
            trace.count("cuda_api") > 0,
            "{name}: the window holds calls"
        );
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn memory_use_in_a_window_counts_what_was_allocated_before_it() {
    let Some(input) = fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let db = open(&input);
    let (from, _) = middle_window(&db);
    let (whole, _) = convert(&input, &Options::default());
    let window = TimeWindow {
        start: Some(from),
        end: None,
    };
    let (part, summary) = convert(&input, &options(Filter::default().time(window)));
    part.assert_valid();
    let values = |t: &Checked| -> BTreeMap<(u64, String), f64> {
        t.counters
            .iter()
            .filter(|c| {
                t.tracks[&c.track]
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("CUDA memory"))
            })
            .map(|c| ((c.ts, t.tracks[&c.track].name.clone().unwrap()), c.value))
            .collect()
    };
    let whole_values = values(&whole);
    let part_values = values(&part);
    let before = count(
        &db,
        &format!(
            "SELECT COUNT(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS WHERE start >= 0 AND start < {from}"
        ),
    );
    assert!(
        before > 0 && !part_values.is_empty(),
        "the window splits the allocations"
    );
    assert_eq!(filtered_out(&summary, "cuda_memory"), before);
    for (key, value) in &part_values {
        assert!(key.0 >= from as u64);
        assert_eq!(whole_values.get(key), Some(value), "{key:?}");
    }
    assert_eq!(
        part_values.len(),
        whole_values.keys().filter(|k| k.0 >= from as u64).count()
    );
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn pids_keep_their_own_processes_only() {
    let Some(input) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let db = open(&input);
    let pid: i64 = db
        .query_row(
            "SELECT (globalTid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let (trace, summary) = convert(&input, &options(Filter::default().pids([pid as u32])));
    trace.assert_valid();
    for (category, table) in cuda_tables(&db) {
        let column = match has_column(&db, table, "globalPid") {
            true => "globalPid",
            false => "globalTid",
        };
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE start >= 0 AND ((\"{column}\" >> 24) & 16777215) = {pid}");
        let all = count(
            &db,
            &format!("SELECT COUNT(*) FROM {table} WHERE start >= 0"),
        );
        let kept = count(&db, &sql);
        assert_eq!(trace.count(category), kept, "{category}");
        assert_eq!(filtered_out(&summary, category), all - kept, "{category}");
    }
    let nvtx = count(
        &db,
        &format!("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60, 65, 70, 71) AND ((globalTid >> 24) & 16777215) = {pid}"),
    );
    assert_eq!(trace.count("nvtx"), nvtx);
    for s in &trace.slices {
        let root = trace.root_of(s.track);
        if let Some(p) = root.pid {
            assert_eq!(i64::from(p), pid, "{} on {:?}", s.name, root.name);
        }
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn gpus_keep_the_work_of_their_devices_and_launches_link_to_it_alone() {
    let Some(input) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let db = open(&input);
    let (trace, summary) = convert(&input, &options(Filter::default().gpus([1])));
    trace.assert_valid();
    for (category, table) in cuda_tables(&db) {
        if !has_column(&db, table, "deviceId") {
            continue;
        }
        // Synchronizations record no GPU: theirs is their context's.
        let kept = count(
            &db,
            &format!(
                "SELECT COUNT(*) FROM {table} o WHERE start >= 0 AND {} = 1",
                gpu_of_row_sql(&db, table)
            ),
        );
        assert!(kept > 0, "{category}");
        assert_eq!(trace.count(category), kept, "{category}");
        assert!(filtered_out(&summary, category) > 0, "{category}");
    }
    let (whole, _) = convert(&input, &Options::default());
    assert_eq!(trace.count("cuda_api"), whole.count("cuda_api"));
    assert!(trace.flows.len() < whole.flows.len() && !trace.flows.is_empty());
    for &(from, to) in &trace.flows {
        let to = &trace.slices[to];
        assert!(trace.slices[from].category == "cuda_api");
        // The GPU is named by the track group the work is on.
        let gpu = trace.gpu_place(to.track).map(|(gpu, _)| gpu);
        assert_eq!(
            gpu,
            Some(1),
            "{} on {:?}",
            to.name,
            trace.root_of(to.track).name
        );
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn kernels_by_name_keep_the_matching_ones_and_their_flows() {
    let Some(input) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let db = open(&input);
    // SQLite's LIKE ignores ASCII case, as (?i) does.
    let names = "(SELECT id FROM StringIds WHERE value LIKE '%gemm%')";
    let kept = count(
        &db,
        &format!("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start >= 0 AND (shortName IN {names} OR demangledName IN {names})"),
    );
    let all = count(
        &db,
        "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start >= 0",
    );
    assert!(kept > 0 && kept < all);
    let (trace, summary) = convert(
        &input,
        &options(Filter::default().kernels("(?i)gemm").unwrap()),
    );
    trace.assert_valid();
    assert_eq!(trace.count("cuda_kernel"), kept);
    assert_eq!(filtered_out(&summary, "cuda_kernel"), all - kept);
    let (whole, _) = convert(&input, &Options::default());
    for category in ["cuda_api", "cuda_memcpy", "cuda_memset", "cuda_sync"] {
        assert_eq!(trace.count(category), whole.count(category), "{category}");
    }
    let linked_kernels = trace
        .flows
        .iter()
        .filter(|&&(_, to)| trace.slices[to].category == "cuda_kernel")
        .count();
    let whole_linked_matching = whole
        .flows
        .iter()
        .filter(|&&(_, to)| {
            let s = &whole.slices[to];
            let demangled = match s.args.get("demangled_name") {
                Some(Value::Str(d)) => d.to_lowercase().contains("gemm"),
                _ => false,
            };
            s.category == "cuda_kernel" && (s.name.to_lowercase().contains("gemm") || demangled)
        })
        .count();
    assert_eq!(linked_kernels, whole_linked_matching);
}

/// NVTX timeline events whose name matches `keep`, by SQL and `keep`.
fn nvtx_matching(db: &Connection, keep: impl Fn(&str, i64) -> bool) -> (u64, u64) {
    let mut stmt = db
        .prepare(
            "SELECT COALESCE(e.text, s.value, ''), COALESCE(e.domainId, 0) FROM NVTX_EVENTS e
             LEFT JOIN StringIds s ON s.id = e.textId
             WHERE e.eventType IN (34, 59, 60, 65, 70, 71) AND e.start >= 0",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .unwrap();
    let (mut kept, mut all) = (0, 0);
    for row in rows {
        let (text, domain) = row.unwrap();
        all += 1;
        kept += u64::from(keep(&text, domain));
    }
    (kept, all)
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn nvtx_names_keep_the_matching_ranges() {
    for (name, pattern) in [
        ("nsys-ai_h100_2gpu_1s.sqlite", "^aten::(mul|add)"),
        ("memfusion_report1.sqlite", "Conv_2[0-9]+$"),
        ("h100_torch_graph_node.sqlite", "^step"),
    ] {
        let Some(input) = fixture(name) else { return };
        let db = open(&input);
        let re = regex::Regex::new(pattern).unwrap();
        let (kept, all) = nvtx_matching(&db, |text, _| !text.is_empty() && re.is_match(text));
        let (trace, summary) = convert(&input, &options(Filter::default().nvtx(pattern).unwrap()));
        trace.assert_valid();
        assert_eq!(trace.count("nvtx"), kept, "{name}");
        assert_eq!(filtered_out(&summary, "nvtx"), all - kept, "{name}");
        assert!(kept > 0 && kept < all, "{name}: {kept} of {all}");
        // The GPU projection is of the kept ranges alone.
        for s in trace.slices.iter().filter(|s| s.category == "nvtx_gpu") {
            assert!(re.is_match(&s.name), "{name}: {}", s.name);
        }
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn an_nvtx_domain_keeps_its_own_events() {
    let Some(input) = fixture("pipit_saxpy_mpi_cuda_rank0.sqlite") else {
        return;
    };
    let db = open(&input);
    let mpi: Vec<i64> = db
        .prepare("SELECT DISTINCT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'MPI'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!mpi.is_empty());
    let (kept, all) = nvtx_matching(&db, |_, domain| mpi.contains(&domain));
    assert!(kept > 0 && kept < all, "{kept} of {all}");
    let (trace, summary) = convert(&input, &options(Filter::default().nvtx_domain("MPI")));
    trace.assert_valid();
    assert_eq!(trace.count("nvtx"), kept);
    assert_eq!(filtered_out(&summary, "nvtx"), all - kept);
    let (default_only, _) = convert(&input, &options(Filter::default().nvtx_domain("default")));
    let (in_default, _) = nvtx_matching(&db, |_, domain| domain == 0);
    assert_eq!(default_only.count("nvtx"), in_default);
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn filters_combine_and_no_filter_changes_nothing() {
    let Some(input) = fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let db = open(&input);
    let (from, to) = middle_window(&db);
    let dir = tempfile::tempdir().unwrap();
    let (plain, plain_summary) = convert_into(&input, &dir.path().join("a"), &Options::default());
    let empty = Filter::default()
        .time(TimeWindow::default())
        .pids([])
        .gpus([]);
    let (same, same_summary) = convert_into(&input, &dir.path().join("b"), &options(empty));
    assert_eq!(plain_summary, same_summary);
    assert!(same_summary.filtered_out.is_empty());
    assert_eq!(
        std::fs::read(dir.path().join("a")).unwrap(),
        std::fs::read(dir.path().join("b")).unwrap()
    );
    assert_eq!(plain.slices.len(), same.slices.len());
    let both = Filter::default()
        .time(TimeWindow {
            start: Some(from),
            end: Some(to),
        })
        .gpus([0])
        .kernels("(?i)gemm|elementwise")
        .unwrap();
    let mut opts = options(both);
    opts.parts = Parts::all().without(Part::Osrt);
    let (trace, summary) = convert(&input, &opts);
    trace.assert_valid();
    assert!(summary.to_string().contains("filtered out: "), "{summary}");
    assert_eq!(trace.count("osrt"), 0);
}

fn run(args: &[&str]) -> (bool, i32, String) {
    let out = Command::new(BIN).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (
        out.status.success(),
        out.status.code().unwrap_or(-1),
        stderr,
    )
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_command_line_takes_filters_and_refuses_bad_ones_in_one_line() {
    let Some(input) = fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.perfetto-trace");
    let (input, out_s) = (input.to_str().unwrap(), out.to_str().unwrap());
    let (ok, _, stderr) = run(&[
        "convert",
        input,
        "-o",
        out_s,
        "--only",
        "cuda,nvtx",
        "--time",
        "1.2s:",
        "--kernels",
        "gemm",
        "--pid",
        "1,2",
        "--gpu",
        "0",
    ]);
    assert!(ok, "{stderr}");
    let checked = crate::support::convert::check_trace(&out);
    checked.assert_valid();
    assert_eq!(checked.count("osrt"), 0);
    assert!(stderr.contains("filtered out: "), "{stderr}");
    let (ok, _, stderr) = run(&[
        "convert",
        input,
        "-o",
        out_s,
        "--nvtx",
        "^step",
        "--gpu-in-nvtx",
        "--time",
        "6s:11s",
    ]);
    assert!(ok, "{stderr}");
    let checked = crate::support::convert::check_trace(&out);
    checked.assert_valid();
    assert!(checked.count("cuda_kernel") > 0, "{stderr}");
    for (bad, says) in [
        (
            vec!["--nvtx", "("],
            "--nvtx '(' is not a regular expression",
        ),
        (
            vec!["--kernels", "[a-"],
            "--kernels '[a-' is not a regular expression",
        ),
        (vec!["--time", "2s:1s"], "ends before it starts"),
        (vec!["--time", "5m:"], "unknown unit"),
        (vec!["--pid", "x"], "invalid value"),
    ] {
        std::fs::remove_file(&out).ok();
        let mut args = vec!["convert", input, "-o", out_s];
        args.extend(bad.iter().copied());
        let (ok, code, stderr) = run(&args);
        assert!(!ok && code == 2, "{bad:?}: {code} {stderr}");
        assert!(stderr.contains(says), "{bad:?}: {stderr}");
        assert!(
            stderr.lines().next().unwrap().contains(says),
            "{bad:?}: {stderr}"
        );
        assert!(!out.exists(), "{bad:?}: no trace is written");
    }
}

/// SQL for the CUDA API calls `r` made inside an NVTX range (push/pop or
/// start/end, begun and ended on the call's thread) whose name matches the
/// GLOB `pattern` (any range: `None`); the ranges go in a temporary table
/// first.
fn call_in_range_sql(db: &Connection, pattern: Option<&str>) -> String {
    let named = match pattern {
        Some(pattern) => format!("COALESCE(n.text, s.value) GLOB '{pattern}'"),
        None => "1".to_owned(),
    };
    call_in_ranges_where(db, &named)
}

/// [`call_in_range_sql`] for the ranges `n` (with their registered name
/// `s`) that match `named`.
fn call_in_ranges_where(db: &Connection, named: &str) -> String {
    db.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp.kept_ranges;
         CREATE TEMP TABLE kept_ranges AS
           SELECT n.globalTid AS tid, n.start AS start, COALESCE(n.\"end\", 1 << 62) AS stop
           FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
           WHERE n.eventType IN (59, 60, 70, 71)
             AND (n.endGlobalTid IS NULL OR n.endGlobalTid = n.globalTid)
             AND {named};"
    ))
    .unwrap();
    "EXISTS (SELECT 1 FROM temp.kept_ranges k
       WHERE k.tid = r.globalTid AND k.start <= r.start AND k.stop >= r.start)"
        .to_owned()
}

/// SQL for the GPU operations `o` whose launch (the first call of its pid and
/// correlationId) matches `call`, a condition on the call `r`.
fn launched_by_sql(call: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM (
           SELECT (globalTid >> 24) & 16777215 AS pid, correlationId AS corr,
                  MIN(start) AS start, globalTid
           FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1, 2) r
         WHERE r.pid = ((o.globalPid >> 24) & 16777215) AND r.corr = o.correlationId
           AND r.start <= o.start AND {call})"
    )
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn gpu_in_nvtx_keeps_the_calls_inside_kept_ranges_and_what_they_launched() {
    for (name, regex, glob) in [
        ("h100_torch_graph_node.sqlite", "^step", "step*"),
        ("nsys-ai_h100_2gpu_1s.sqlite", "^aten::mm", "aten::mm*"),
    ] {
        let Some(input) = fixture(name) else { return };
        let db = open(&input);
        let inside = call_in_range_sql(&db, Some(glob));
        let calls = count(
            &db,
            &format!("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.start >= 0 AND {inside}"),
        );
        let all_calls = count(
            &db,
            "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE start >= 0",
        );
        assert!(
            calls > 0 && calls < all_calls,
            "{name}: {calls} of {all_calls}"
        );
        let filter = Filter::default().nvtx(regex).unwrap().gpu_in_nvtx();
        let (trace, summary) = convert(&input, &options(filter));
        trace.assert_valid();
        assert_eq!(trace.count("cuda_api"), calls, "{name}");
        assert_eq!(
            filtered_out(&summary, "cuda_api"),
            all_calls - calls,
            "{name}"
        );
        assert_eq!(trace.count("cuda_sync"), 0, "{name}");
        let mut launched_total = 0;
        for (category, table) in cuda_tables(&db) {
            if category == "cuda_api" || category == "cuda_sync" {
                continue;
            }
            // The first call of each launch (pid, correlationId) owns it.
            let launched = count(
                &db,
                &format!(
                    "SELECT COUNT(*) FROM {table} o JOIN (
                       SELECT (globalTid >> 24) & 16777215 AS pid, correlationId AS corr,
                              MIN(start) AS start, globalTid
                       FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1, 2) r
                     ON r.pid = ((o.globalPid >> 24) & 16777215) AND r.corr = o.correlationId
                     WHERE o.start >= 0 AND r.start <= o.start AND {inside}"
                ),
            );
            assert_eq!(trace.count(category), launched, "{name}: {category}");
            launched_total += launched;
        }
        assert!(launched_total > 0, "{name}");
        // Every GPU operation kept arrives by a flow from its launch.
        let flows_to_gpu = trace
            .flows
            .iter()
            .filter(|&&(from, to)| {
                trace.slices[from].category == "cuda_api" && trace.slices[to].category != "nvtx"
            })
            .count() as u64;
        assert_eq!(flows_to_gpu, launched_total, "{name}");
        assert_eq!(summary.flows, launched_total, "{name}");
    }
}

#[test]
fn gpu_metrics_follow_their_gpu_and_the_window() {
    use rusqlite::types::Value as Sql;
    let (_dir, input) = crate::support::convert::synthetic(|s| {
        for gpu in [0i64, 1] {
            s.gpu(gpu, "NVIDIA H100");
            // A metric set's low byte is its GPU.
            let set = 0x100 | gpu;
            s.row(
                "TARGET_INFO_GPU_METRICS",
                vec![
                    ("typeId", set.into()),
                    ("sourceId", gpu.into()),
                    ("typeName", Sql::Text("GH100".into())),
                    ("metricId", 0.into()),
                    ("metricName", Sql::Text("SMs Active [Throughput %]".into())),
                ],
            );
            for ts in [1000i64, 2000, 3000, 4000] {
                s.row(
                    "GPU_METRICS",
                    vec![
                        ("timestamp", ts.into()),
                        ("typeId", set.into()),
                        ("metricId", 0.into()),
                        ("value", (ts / 100 + gpu * 1000).into()),
                    ],
                );
            }
        }
    });
    let (all, _) = convert(&input, &Options::default());
    assert_eq!(all.counters.len(), 8);
    let window = TimeWindow {
        start: Some(2000),
        end: Some(3000),
    };
    let (trace, summary) = convert(&input, &options(Filter::default().gpus([1]).time(window)));
    trace.assert_valid();
    let kept: Vec<u64> = trace.counters.iter().map(|c| c.ts).collect();
    assert_eq!(kept, [2000, 3000]);
    assert_eq!(filtered_out(&summary, "gpu_metrics"), 6);
    let values: Vec<f64> = trace.counters.iter().map(|c| c.value).collect();
    assert_eq!(values, [1020.0, 1030.0], "GPU 1's values");
}

/// One filter, with what it keeps as SQL over the source export.
#[derive(Clone, Copy, Debug)]
enum Kept {
    Time(i64, i64),
    Pid(u32),
    Gpu(i64),
    /// Kernels by name: the regular expression, and the same as LIKE
    /// patterns (SQLite's LIKE ignores ASCII case, as `(?i)` does).
    Kernels(&'static str, &'static str),
    /// NVTX ranges by name: the regular expression, and the same as GLOB.
    Nvtx(&'static str, &'static str),
    NvtxDomain(&'static str),
    InNvtx,
}

/// SQL for the ids of the NVTX domains named `name`.
fn domain_ids(name: &str) -> String {
    format!("(SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = '{name}')")
}

impl Kept {
    fn add_to(self, f: Filter) -> Filter {
        match self {
            Kept::Time(from, to) => f.time(TimeWindow {
                start: Some(from),
                end: Some(to),
            }),
            Kept::Pid(pid) => f.pids([pid]),
            Kept::Gpu(gpu) => f.gpus([gpu]),
            Kept::Kernels(re, _) => f.kernels(re).unwrap(),
            Kept::Nvtx(re, _) => f.nvtx(re).unwrap(),
            Kept::NvtxDomain(name) => f.nvtx_domain(name),
            Kept::InNvtx => f.gpu_in_nvtx(),
        }
    }

    /// The condition on a row `o` of `table` (of slice category `category`)
    /// that this filter keeps; `in_range` is the condition on a call `r` of
    /// being inside a kept NVTX range.
    fn sql(self, db: &Connection, category: &str, table: &str, in_range: &str) -> String {
        let nvtx = table == "NVTX_EVENTS";
        match self {
            // Marks inside the window; ranges overlapping it, those never
            // ended included.
            Kept::Time(from, to) if nvtx => format!(
                "o.start <= {to} AND ((o.eventType IN (34, 65) AND o.start >= {from})
                   OR (o.eventType IN (59, 60, 70, 71) AND COALESCE(o.\"end\", 1 << 62) >= {from}))"
            ),
            Kept::Time(from, to) => format!("o.\"end\" >= {from} AND o.start <= {to}"),
            Kept::Pid(pid) => {
                let column = match has_column(db, table, "globalPid") {
                    true => "globalPid",
                    false => "globalTid",
                };
                format!("((o.{column} >> 24) & 16777215) = {pid}")
            }
            Kept::Gpu(gpu) if has_column(db, table, "deviceId") => {
                format!("{} = {gpu}", gpu_of_row_sql(db, table))
            }
            Kept::Kernels(_, like) if category == "cuda_kernel" => {
                let names = format!("(SELECT id FROM StringIds WHERE value LIKE '{like}')");
                format!("(o.shortName IN {names} OR o.demangledName IN {names})")
            }
            Kept::Nvtx(_, glob) if nvtx => format!(
                "COALESCE(o.text, (SELECT value FROM StringIds WHERE id = o.textId), '') GLOB '{glob}'"
            ),
            Kept::NvtxDomain(name) if nvtx => format!("o.domainId IN {}", domain_ids(name)),
            Kept::InNvtx => match category {
                "cuda_api" => in_range.replace("r.", "o."),
                "cuda_sync" => "0".to_owned(),
                "nvtx" => "1".to_owned(),
                _ => launched_by_sql(in_range),
            },
            _ => "1".to_owned(),
        }
    }
}

/// Converts `input` with `filters` together, and compares each category's
/// count, and what the summary says was filtered out, with SQL: a row is
/// kept when every filter keeps it. Returns the trace and its summary.
fn assert_kept_as_sql(name: &str, input: &std::path::Path, filters: &[Kept]) -> (Checked, Summary) {
    let db = open(input);
    let ranges: Vec<String> = filters
        .iter()
        .filter_map(|k| match k {
            Kept::Nvtx(_, glob) => Some(format!("COALESCE(n.text, s.value) GLOB '{glob}'")),
            Kept::NvtxDomain(name) => Some(format!("n.domainId IN {}", domain_ids(name))),
            _ => None,
        })
        .chain(["1".to_owned()])
        .collect();
    let in_range = call_in_ranges_where(&db, &ranges.join(" AND "));
    let filter = filters.iter().fold(Filter::default(), |f, k| k.add_to(f));
    let (trace, summary) = convert(input, &options(filter));
    trace.assert_valid();
    let mut tables = cuda_tables(&db);
    tables.push(("nvtx", "NVTX_EVENTS"));
    for (category, table) in tables {
        let mut base = "o.start >= 0".to_owned();
        if category == "nvtx" {
            base.push_str(" AND o.eventType IN (34, 59, 60, 65, 70, 71)");
        }
        let all = count(&db, &format!("SELECT COUNT(*) FROM {table} o WHERE {base}"));
        let conditions: Vec<String> = filters
            .iter()
            .map(|k| k.sql(&db, category, table, &in_range))
            .collect();
        let kept = count(
            &db,
            &format!(
                "SELECT COUNT(*) FROM {table} o WHERE {base} AND {}",
                conditions.join(" AND ")
            ),
        );
        eprintln!("{name} {filters:?}: {category} {kept} of {all}");
        assert_eq!(
            trace.count(category),
            kept,
            "{name} {filters:?}: {category} kept"
        );
        assert_eq!(
            filtered_out(&summary, category),
            all - kept,
            "{name} {filters:?}: {category} filtered out"
        );
    }
    (trace, summary)
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn gpu_in_nvtx_with_a_time_window_keeps_the_work_of_kept_ranges_that_overlaps_it() {
    let mut launched_before_window = 0;
    for (name, regex, glob) in [
        ("nsys-ai_h100_2gpu_1s.sqlite", "^aten::mm", "aten::mm*"),
        ("h100_torch_graph_node.sqlite", "^step", "step*"),
    ] {
        let Some(input) = fixture(name) else { return };
        let db = open(&input);
        let (from, to) = middle_window(&db);
        let filters = [Kept::Nvtx(regex, glob), Kept::InNvtx, Kept::Time(from, to)];
        let (trace, summary) = assert_kept_as_sql(name, &input, &filters);
        assert_eq!(trace.count("cuda_sync"), 0, "{name}");
        // Some of the work was launched before the window, inside a kept
        // range: it stays, without a flow (its launch is not in the trace).
        let inside = call_in_range_sql(&db, Some(glob));
        let ops_of = |call: &str| -> u64 {
            cuda_tables(&db)
                .into_iter()
                .filter(|(c, _)| !matches!(*c, "cuda_api" | "cuda_sync"))
                .map(|(_, table)| {
                    count(
                        &db,
                        &format!(
                            "SELECT COUNT(*) FROM {table} o WHERE o.start >= 0
                               AND o.\"end\" >= {from} AND o.start <= {to} AND {}",
                            launched_by_sql(call)
                        ),
                    )
                })
                .sum()
        };
        let kept_ops = ops_of(&inside);
        let launched_in_window = ops_of(&format!(
            "{inside} AND (SELECT \"end\" FROM CUPTI_ACTIVITY_KIND_RUNTIME c
               WHERE c.globalTid = r.globalTid AND c.start = r.start
                 AND c.correlationId = r.corr) >= {from}"
        ));
        assert!(
            launched_in_window > 0 && launched_in_window <= kept_ops,
            "{name}: {launched_in_window} of {kept_ops} launched in the window"
        );
        launched_before_window += kept_ops - launched_in_window;
        assert_eq!(summary.flows, launched_in_window, "{name}");
        let flows_to_gpu = trace
            .flows
            .iter()
            .filter(|&&(from, to)| {
                trace.slices[from].category == "cuda_api" && trace.slices[to].category != "nvtx"
            })
            .count() as u64;
        assert_eq!(flows_to_gpu, launched_in_window, "{name}");
        assert!(
            summary.gpu_ops_without_launch == 0,
            "{name}: {summary}: work launched before the window has its launch in the report"
        );
        for s in &trace.slices {
            assert!(
                s.ts >= from as u64 && s.ts + s.dur <= to as u64,
                "{name}: {} at {}+{} is outside the window",
                s.name,
                s.ts,
                s.dur
            );
        }
    }
    assert!(launched_before_window > 0, "the windows cut launches off");
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn every_pair_of_filters_keeps_what_both_keep() {
    let name = "nsys-ai_h100_2gpu_1s.sqlite";
    let Some(input) = fixture(name) else { return };
    let db = open(&input);
    let (from, to) = middle_window(&db);
    let pid: i64 = db
        .query_row(
            "SELECT (globalTid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_RUNTIME
             GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let filters = [
        Kept::Time(from, to),
        Kept::Pid(pid as u32),
        Kept::Gpu(1),
        Kept::Kernels("(?i)gemm", "%gemm%"),
        Kept::Nvtx("^aten::mm", "aten::mm*"),
        Kept::InNvtx,
    ];
    for (k, &a) in filters.iter().enumerate() {
        for &b in &filters[k + 1..] {
            assert_kept_as_sql(name, &input, &[a, b]);
        }
    }
    // --gpu-in-nvtx with the name of the ranges and each other filter.
    for &other in &filters[..4] {
        assert_kept_as_sql(name, &input, &[filters[4], Kept::InNvtx, other]);
    }
    // With a domain instead of names.
    let name = "pipit_saxpy_mpi_cuda_rank0.sqlite";
    let Some(input) = fixture(name) else { return };
    let (trace, _) = assert_kept_as_sql(name, &input, &[Kept::NvtxDomain("MPI"), Kept::InNvtx]);
    assert!(trace.count("cuda_api") > 0 && trace.count("nvtx") > 0);
}

#[test]
fn gpu_in_nvtx_with_a_window_follows_each_event_s_own_time() {
    use crate::support::synth::{GpuStream, Thread};
    const MAIN: Thread = Thread { pid: 100, tid: 100 };
    const WORKER: Thread = Thread { pid: 100, tid: 101 };
    const OTHER: Thread = Thread { pid: 100, tid: 102 };
    const STREAM: GpuStream = GpuStream {
        pid: 100,
        device: 0,
        context: 1,
        stream: 7,
    };
    const LAUNCH: &str = "cudaLaunchKernel_v7000";
    let (_dir, input) = crate::support::convert::synthetic(|s| {
        s.gpu(0, "NVIDIA H100");
        s.nvtx_push_pop(MAIN, 1_000..30_000, "keep");
        s.nvtx_push_pop(OTHER, 3_000..4_000, "drop");
        // Ends before the window; its call lasts into it.
        s.nvtx_push_pop(WORKER, 5_000..6_000, "keep");
        // Launched before the window, runs inside it.
        s.api(MAIN, 2_000..2_100, LAUNCH).corr(1);
        s.kernel(STREAM, 12_000..13_000, "early").corr(1);
        // Launched and run inside it.
        s.api(MAIN, 15_000..15_100, LAUNCH).corr(2);
        s.kernel(STREAM, 16_000..17_000, "inside").corr(2);
        // Launched inside it, runs after it.
        s.api(MAIN, 19_000..19_100, LAUNCH).corr(3);
        s.kernel(STREAM, 25_000..26_000, "late").corr(3);
        // Launched in a range not kept.
        s.api(OTHER, 3_500..3_600, LAUNCH).corr(4);
        s.kernel(STREAM, 14_000..15_000, "dropped").corr(4);
        s.api(WORKER, 5_500..11_000, LAUNCH).corr(5);
        s.kernel(STREAM, 11_500..12_000, "long_call").corr(5);
    });
    let filter = Filter::default()
        .nvtx("^keep$")
        .unwrap()
        .gpu_in_nvtx()
        .time(TimeWindow {
            start: Some(10_000),
            end: Some(20_000),
        });
    let (trace, summary) = convert(&input, &options(filter));
    trace.assert_valid();
    let names = |category: &str| -> Vec<&str> {
        let mut names: Vec<&str> = trace
            .slices
            .iter()
            .filter(|s| s.category == category)
            .map(|s| s.name.as_str())
            .collect();
        names.sort_unstable();
        names
    };
    assert_eq!(names("cuda_kernel"), ["early", "inside", "long_call"]);
    let calls: Vec<u64> = trace
        .slices
        .iter()
        .filter(|s| s.category == "cuda_api")
        .map(|s| s.ts)
        .collect();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(names("nvtx"), ["keep"]);
    assert_eq!(filtered_out(&summary, "cuda_api"), 2);
    assert_eq!(filtered_out(&summary, "cuda_kernel"), 2);
    assert_eq!(filtered_out(&summary, "nvtx"), 2);
    // The launches in the trace link to their kernels; the early kernel's
    // launch is in the report, outside the window.
    let linked: Vec<&str> = trace
        .flows
        .iter()
        .map(|&(_, to)| trace.slices[to].name.as_str())
        .collect();
    assert_eq!(linked.len(), 2, "{linked:?}");
    assert!(linked.contains(&"inside") && linked.contains(&"long_call"));
    assert_eq!(summary.gpu_ops_without_launch, 0, "{summary}");
}

/// The values of the first column of `sql`'s rows.
fn column<T: rusqlite::types::FromSql>(db: &Connection, sql: &str) -> Vec<T> {
    db.prepare(sql)
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The first start and the last end of the export's events, by SQL over
/// every table with a time column, in seconds as the warnings write them.
fn event_span_text(db: &Connection) -> (String, String) {
    let tables: Vec<String> = column(db, "SELECT name FROM sqlite_master WHERE type = 'table'");
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for table in tables {
        for time in ["start", "timestamp", "end"] {
            if !has_column(db, &table, time) {
                continue;
            }
            let sql = format!("SELECT MIN({time}), MAX({time}) FROM \"{table}\"");
            let (min, max): (Option<i64>, Option<i64>) = db
                .query_row(&sql, [], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap();
            if time != "end" {
                first = first.min(min.unwrap_or(i64::MAX));
            }
            last = last.max(max.unwrap_or(i64::MIN));
        }
    }
    let seconds = |ns: i64| format!("{:.6}s", ns as f64 / 1e9);
    (seconds(first), seconds(last))
}

/// A `--pid`, `--gpu` or `--nvtx-domain` that no event is of, or a window
/// outside the events, says so with what the report holds: its processes
/// and GPUs with events, its NVTX domains, the span of its events (each
/// found by SQL here); filters that match say nothing.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn filters_that_match_nothing_say_what_the_report_holds() {
    let Some(input) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let db = open(&input);
    let pid = "((globalTid >> 24) & 16777215)";
    let cuda_pids: Vec<i64> = column(
        &db,
        &format!("SELECT DISTINCT {pid} FROM CUPTI_ACTIVITY_KIND_RUNTIME"),
    );
    assert!(!cuda_pids.is_empty());
    let missing_pid = 16_777_000u32;
    assert_eq!(
        count(
            &db,
            &format!(
                "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE {pid} = {missing_pid}"
            )
        ),
        0
    );
    let lines = |filter: Filter| {
        let (trace, summary) = convert(&input, &options(filter));
        trace.assert_valid();
        assert!(
            summary
                .kept_nothing
                .iter()
                .all(|l| summary.warnings().contains(l)),
            "each is a warning"
        );
        (summary.kept_nothing, trace.slices.len())
    };

    let (said, slices) = lines(Filter::default().pids([missing_pid]));
    let [line] = &said[..] else {
        panic!("{said:?}")
    };
    assert!(
        line.starts_with(&format!(
            "--pid {missing_pid} matches no event: the processes with events are "
        )),
        "{line}"
    );
    for pid in &cuda_pids {
        let name: String = db
            .query_row("SELECT name FROM PROCESSES WHERE pid = ?1", [pid], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(line.contains(&format!("{pid} ({name})")), "{pid}: {line}");
    }
    assert_eq!(slices, 0);
    let (said, slices) = lines(Filter::default().pids([cuda_pids[0] as u32, missing_pid]));
    assert_eq!(said.len(), 1, "only the pid without events: {said:?}");
    assert!(slices > 0);

    let gpus: Vec<i64> = column(
        &db,
        "SELECT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION \
         SELECT deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION \
         SELECT deviceId FROM CUPTI_ACTIVITY_KIND_MEMSET UNION \
         SELECT deviceId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION ORDER BY 1",
    );
    let (said, _) = lines(Filter::default().gpus([7]));
    let [line] = &said[..] else {
        panic!("{said:?}")
    };
    let listed = line
        .strip_prefix("--gpu 7 matches no event: the GPUs with events are ")
        .unwrap_or_else(|| panic!("{line}"));
    let listed: Vec<i64> = listed
        .split(", ")
        .map(|gpu| gpu.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(listed, gpus, "{line}");
    let (said, _) = lines(Filter::default().gpus(gpus.iter().copied()));
    assert!(said.is_empty(), "{said:?}");

    // Every NVTX event of this export is in the default domain.
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM NVTX_EVENTS WHERE domainId <> 0"),
        0
    );
    let (said, _) = lines(Filter::default().nvtx_domain("NCCL"));
    assert_eq!(
        said,
        ["--nvtx-domain NCCL matches no event: its NVTX domains are default"]
    );
    let (said, _) = lines(Filter::default().nvtx_domain("default"));
    assert!(said.is_empty(), "{said:?}");

    let (first, last) = event_span_text(&db);
    let window: TimeWindow = "0.2s:0.4s".parse().unwrap();
    let (said, slices) = lines(Filter::default().time(window));
    assert_eq!(
        said,
        [format!(
            "--time 200ms:400ms matches no event: the report's events span {first} to {last} of the session"
        )]
    );
    assert_eq!(slices, 0);
    let (said, _) = lines(Filter::default().time(TimeWindow {
        start: Some(0),
        end: None,
    }));
    assert!(said.is_empty(), "{said:?}");
}

/// Issue 27.7: a `--kernels` or `--nvtx` pattern that matches no name of
/// the report says so, with the names there are (most frequent first, as
/// SQL over the export counts them); a pattern that matches says nothing.
#[test]
fn name_patterns_that_match_nothing_say_which_names_there_are() {
    let input = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/demo.sqlite");
    let db = open(&input);
    let said = |filter: Filter| {
        let (trace, summary) = convert(&input, &options(filter));
        trace.assert_valid();
        summary.kept_nothing
    };
    // The names, the most frequent first, as the line lists them.
    let listed = |sql: &str| -> String {
        let names: Vec<String> = db
            .prepare(sql)
            .unwrap()
            .query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(names.len() > 1, "{sql}");
        let shown: Vec<String> = names
            .iter()
            .take(8)
            .map(|n| match n.char_indices().nth(60) {
                Some((at, _)) => format!("'{}…'", &n[..at]),
                None => format!("'{n}'"),
            })
            .collect();
        let more = match names.len().saturating_sub(8) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        format!("{}{more}", shown.join(", "))
    };
    let kernels = listed(
        "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s \
         ON s.id = k.demangledName GROUP BY 1 ORDER BY COUNT(*) DESC, 1",
    );
    assert_eq!(
        said(Filter::default().kernels("^no such kernel$").unwrap()),
        [format!(
            "--kernels '^no such kernel$' matches nothing: the report's kernels are {kernels}"
        )]
    );
    assert!(said(Filter::default().kernels("sgemm").unwrap()).is_empty());
    let ranges = listed(
        "SELECT COALESCE(n.text, s.value) FROM NVTX_EVENTS n LEFT JOIN StringIds s \
         ON s.id = n.textId WHERE n.eventType IN (59, 60, 70, 71) \
         GROUP BY 1 ORDER BY COUNT(*) DESC, 1",
    );
    assert_eq!(
        said(Filter::default().nvtx("^nothing$").unwrap()),
        [format!(
            "--nvtx '^nothing$' matches nothing: the report's NVTX ranges are {ranges}"
        )]
    );
    assert!(said(Filter::default().nvtx("forward").unwrap()).is_empty());
    // Parts chosen and then left out, all of them: refused, naming the parts.
    let (ok, code, stderr) = run(&[
        "convert",
        input.to_str().unwrap(),
        "--only",
        "cuda",
        "--exclude",
        "cuda",
    ]);
    assert!(!ok && code == 2, "{stderr}");
    assert!(
        stderr
            .contains("--only cuda --exclude cuda leaves no part to convert (the parts are cuda, "),
        "{stderr}"
    );
}

/// With NVTX ranges left out by name or domain, their projections are
/// counted as left out too: kept and left out make the unfiltered count.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn projections_of_the_ranges_left_out_are_counted_as_filtered_out() {
    let Some(input) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let (_, all) = convert(&input, &Options::default());
    let projected = all.slices["nvtx_gpu"];
    assert!(projected > 0);
    let (trace, summary) = convert(&input, &options(Filter::default().nvtx_domain("NCCL")));
    assert_eq!(trace.count("nvtx_gpu"), 0);
    assert_eq!(filtered_out(&summary, "nvtx_gpu"), projected);
    assert!(
        summary
            .to_string()
            .contains(&format!("nvtx_gpu {projected}")),
        "{summary}"
    );
    let (trace, summary) = convert(&input, &options(Filter::default().nvtx("^aten::").unwrap()));
    trace.assert_valid();
    let kept = trace.count("nvtx_gpu");
    assert!(kept > 0 && kept < projected, "{kept} of {projected}");
    assert_eq!(kept + filtered_out(&summary, "nvtx_gpu"), projected);
}

/// The projection is made of the cuda and nvtx parts: `--only nvtx_gpu`
/// without them is refused, and a library call without them is told so.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_nvtx_projection_without_its_parts_is_refused_or_said() {
    let Some(input) = fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.perfetto-trace");
    let (input_s, out_s) = (input.to_str().unwrap(), out.to_str().unwrap());
    for (only, needs) in [
        ("nvtx_gpu", "cuda and nvtx"),
        ("nvtx_gpu,cuda", "nvtx:"),
        ("nvtx_gpu,nvtx", "cuda:"),
    ] {
        let (ok, code, stderr) = run(&["convert", input_s, "-o", out_s, "--only", only]);
        assert!(!ok && code == 2, "{only}: {stderr}");
        assert!(
            stderr.contains(&format!("--only nvtx_gpu needs {needs}")),
            "{only}: {stderr}"
        );
        assert!(!out.exists());
    }
    let (ok, _, stderr) = run(&[
        "convert",
        input_s,
        "-o",
        out_s,
        "--only",
        "nvtx_gpu,cuda,nvtx",
    ]);
    assert!(ok, "{stderr}");
    assert!(crate::support::convert::check_trace(&out).count("nvtx_gpu") > 0);
    let mut without_cuda = Options::default();
    without_cuda.parts = Parts::all().without(Part::Cuda);
    let (_, summary) = convert(&input, &without_cuda);
    assert!(
        summary.warnings().iter().any(
            |w| w.starts_with("nvtx_gpu is not in the trace") && w.contains("cuda is left out")
        ),
        "{:?}",
        summary.warnings()
    );
}

/// The warning is printed in every mode that converts: a file alone, and
/// each file of a directory, named after it.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_window_outside_the_events_is_said_for_a_file_and_in_a_directory() {
    let Some(input) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("in");
    std::fs::create_dir(&tree).unwrap();
    let linked = tree.join("run.sqlite");
    std::os::unix::fs::symlink(&input, &linked).unwrap();
    let expected = format!(
        "nsys2perfetto: warning: {}: --time 200ms:400ms matches no event: the report's events span ",
        linked.display()
    );
    let alone = dir.path().join("alone.perfetto-trace");
    let out = dir.path().join("out/");
    for args in [
        vec![linked.to_str().unwrap(), "-o", alone.to_str().unwrap()],
        vec![tree.to_str().unwrap(), "-o", out.to_str().unwrap()],
    ] {
        let mut all = vec!["convert", "--time", "0.2s:0.4s"];
        all.extend(args);
        let (ok, _, stderr) = run(&all);
        assert!(ok, "{stderr}");
        assert_eq!(stderr.matches(&expected).count(), 1, "{all:?}: {stderr}");
    }
}
