//! `compare` against SQL over the two exports: two ranks of one MPI job
//! (the same program on two GPUs), and a report against itself, where every
//! change is zero.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::support::fixtures::{fixture, require, Need};
use crate::support::source::{has_column, has_table, open};
use nsys2perfetto::compare::{compare, comparison_table, run_summary, Kind, RunSummary};
use nsys2perfetto::stats::Cell;
use nsys2perfetto::Report;
use rusqlite::Connection;

/// (count, total) by name.
pub(crate) type Groups = BTreeMap<String, (u64, i128)>;

fn groups(db: &Connection, sql: &str) -> Groups {
    let mut stmt = db.prepare(sql).unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                (r.get::<_, i64>(1)? as u64, i128::from(r.get::<_, i64>(2)?)),
            ))
        })
        .unwrap();
    let mut out = Groups::new();
    for row in rows {
        let (name, (count, total)) = row.unwrap();
        let entry = out.entry(name).or_default();
        entry.0 += count;
        entry.1 += total;
    }
    out
}

/// What SQL says of an export: kernels, runs of whole CUDA graphs, API calls
/// (version suffix of six characters dropped, as nsys drops it; "CUDA
/// backtrace" records, eventClass 67 and 68, left out: they repeat a call),
/// NVTX ranges by `domain:name`, and the GPU time of kernels, whole graphs,
/// copies and memsets (summed) and of kernels, copies and memsets (first
/// start to last end); and what nsys 2025.3 says
/// of its NVTX ranges' projected GPU time, by `domain:name`, where its
/// `nvtx_gpu_proj_sum` of the export is stored.
pub(crate) struct Expected {
    pub(crate) kernels: Groups,
    graphs: Groups,
    pub(crate) api: Groups,
    pub(crate) nvtx: Groups,
    pub(crate) gpu_time: i128,
    /// From the first start of GPU work to the last end.
    gpu_span: i128,
    nvtx_projected: Option<BTreeMap<String, i128>>,
}

/// The "Total Proj Time (ns)" of nsys 2025.3's `nvtx_gpu_proj_sum` of the
/// fixture `path`, summed by range name (both styles), if stored.
fn nsys_projection(path: &Path) -> Option<BTreeMap<String, i128>> {
    let stem = path.file_stem()?.to_str()?;
    let stored = crate::support::fixtures::shared_dir().join(format!(
        "fixtures/nsys-2025.3-stats/{stem}_nvtx_gpu_proj_sum.csv"
    ));
    let text = std::fs::read_to_string(stored).ok()?;
    let rows = crate::support::nsys::csv_rows(&text);
    let column = |name: &str| rows[0].iter().position(|c| c == name).unwrap();
    let (range, total) = (column("Range"), column("Total Proj Time (ns)"));
    let mut by_name = BTreeMap::new();
    for row in &rows[1..] {
        *by_name.entry(row[range].clone()).or_default() += row[total].parse::<i128>().unwrap();
    }
    Some(by_name)
}

pub(crate) fn expected(path: &Path) -> Expected {
    let db = open(path);
    let kernels = groups(
        &db,
        "SELECT s.value, count(*), sum(k.end - k.start)
         FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON s.id = k.demangledName
         GROUP BY 1",
    );
    let graph_table = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
    let graphs = match has_table(&db, graph_table) {
        false => Groups::new(),
        true => groups(
            &db,
            &format!(
                "SELECT 'CUDA graph ' || graphId, count(*), sum(end - start)
                 FROM {graph_table} GROUP BY 1"
            ),
        ),
    };
    let calls = match has_column(&db, "CUPTI_ACTIVITY_KIND_RUNTIME", "eventClass") {
        true => "WHERE coalesce(r.eventClass, 0) NOT IN (67, 68)",
        false => "",
    };
    let api = groups(
        &db,
        &format!(
            "SELECT CASE substr(s.value, -6, 2)
                    WHEN '_v' THEN substr(s.value, 1, length(s.value) - 6) ELSE s.value END,
                    count(*), sum(r.end - r.start)
             FROM CUPTI_ACTIVITY_KIND_RUNTIME r LEFT JOIN StringIds s ON s.id = r.nameId
             {calls} GROUP BY 1"
        ),
    );
    let nvtx = match has_table(&db, "NVTX_EVENTS") {
        false => Groups::new(),
        true => groups(
            &db,
            "WITH last AS (SELECT max(max(start), max(coalesce(end, start))) AS t FROM NVTX_EVENTS),
                  domains AS (SELECT domainId, (globalTid >> 24) & 16777215 AS pid, text
                              FROM NVTX_EVENTS WHERE eventType = 75)
             SELECT coalesce(d.text, '') || ':' || coalesce(s.value, n.text),
                    count(*), sum(coalesce(n.end, (SELECT t FROM last)) - n.start)
             FROM NVTX_EVENTS n
             LEFT JOIN domains d ON d.domainId = n.domainId
                  AND d.pid = (n.globalTid >> 24) & 16777215
             LEFT JOIN StringIds s ON s.id = n.textId
             WHERE n.eventType IN (59, 60, 70, 71)
             GROUP BY 1",
        ),
    };
    let mut gpu_time = 0i128;
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for table in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ] {
        if has_table(&db, table) {
            let t: Option<i64> = db
                .query_row(&format!("SELECT sum(end - start) FROM {table}"), [], |r| {
                    r.get(0)
                })
                .unwrap();
            gpu_time += i128::from(t.unwrap_or(0));
            let (f, l): (Option<i64>, Option<i64>) = db
                .query_row(
                    &format!("SELECT min(start), max(end) FROM {table}"),
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            first = first.min(f.unwrap_or(i64::MAX));
            last = last.max(l.unwrap_or(i64::MIN));
        }
    }
    if has_table(&db, graph_table) {
        let t: Option<i64> = db
            .query_row(
                &format!("SELECT sum(end - start) FROM {graph_table}"),
                [],
                |r| r.get(0),
            )
            .unwrap();
        gpu_time += i128::from(t.unwrap_or(0));
    }
    let gpu_span = match first <= last {
        true => i128::from(last) - i128::from(first),
        false => 0,
    };
    Expected {
        kernels,
        graphs,
        api,
        nvtx,
        gpu_time,
        gpu_span,
        nvtx_projected: nsys_projection(path),
    }
}

fn summary(path: &Path) -> RunSummary {
    run_summary(&Report::open(path).unwrap()).unwrap()
}

/// Checks every difference of `a` and `b` against SQL over both (and the
/// NVTX ranges' GPU time against nsys's projection); returns the number of
/// rows checked and of NVTX ranges on either side that launched GPU work.
fn check(a_path: &Path, b_path: &Path) -> (usize, usize) {
    let (a, b) = (summary(a_path), summary(b_path));
    let (ea, eb) = (expected(a_path), expected(b_path));
    assert_eq!(a.gpu_time, ea.gpu_time);
    assert_eq!(b.gpu_time, eb.gpu_time);
    let differences = compare(&a, &b);
    let mut seen = 0;
    let mut nvtx_on_gpu = 0;
    for (kind, in_a, in_b) in [
        (Kind::Kernel, &ea.kernels, &eb.kernels),
        (Kind::Graph, &ea.graphs, &eb.graphs),
        (Kind::Api, &ea.api, &eb.api),
        (Kind::Nvtx, &ea.nvtx, &eb.nvtx),
    ] {
        let names: std::collections::BTreeSet<&String> = in_a.keys().chain(in_b.keys()).collect();
        let ours: Vec<_> = differences.iter().filter(|d| d.kind == kind).collect();
        assert_eq!(ours.len(), names.len(), "{kind:?}: names");
        for d in ours {
            let (ca, ta) = in_a.get(&d.name).copied().unwrap_or_default();
            let (cb, tb) = in_b.get(&d.name).copied().unwrap_or_default();
            let what = format!("{kind:?} {}", d.name);
            assert_eq!(d.total_change(), tb - ta, "{what}: total change");
            assert_eq!(
                d.count_change(),
                cb as i128 - ca as i128,
                "{what}: count change"
            );
            for (side, count, total, e) in [(&d.a, ca, ta, &ea), (&d.b, cb, tb, &eb)] {
                let gpu = e.gpu_time;
                match side {
                    None => assert_eq!(count, 0, "{what}: missing side"),
                    Some(s) => {
                        assert_eq!((s.count, s.total), (count, total), "{what}");
                        assert!(
                            (s.mean - total as f64 / count as f64).abs() < 1e-6,
                            "{what}: mean"
                        );
                        match kind {
                            Kind::Kernel | Kind::Graph => {
                                assert_eq!(s.gpu_time, Some(total), "{what}: GPU time");
                                let share = total as f64 * 100.0 / gpu as f64;
                                assert!(
                                    (s.gpu_share.unwrap() - share).abs() < 1e-9,
                                    "{what}: share"
                                );
                            }
                            Kind::Nvtx => {
                                let projected = e
                                    .nvtx_projected
                                    .as_ref()
                                    .expect("nsys's projection of an export with NVTX ranges");
                                let time = projected.get(&d.name).copied().unwrap_or(0);
                                assert_eq!(s.gpu_time, Some(time), "{what}: projected GPU time");
                                let share = time as f64 * 100.0 / e.gpu_span as f64;
                                assert!(share <= 100.0, "{what}: {share}% of the GPU span");
                                assert!(
                                    (s.gpu_share.unwrap() - share).abs() < 1e-9,
                                    "{what}: share"
                                );
                                nvtx_on_gpu += usize::from(time > 0);
                            }
                            Kind::Api => {
                                assert_eq!((s.gpu_time, s.gpu_share), (None, None), "{what}")
                            }
                        }
                    }
                }
            }
            seen += 1;
        }
    }
    // Kind by kind, largest absolute change of total time first within each.
    let order: Vec<(Kind, std::cmp::Reverse<i128>)> = differences
        .iter()
        .map(|d| (d.kind, std::cmp::Reverse(d.total_change().abs())))
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "not sorted by kind, then impact"
    );
    (seen, nvtx_on_gpu)
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn two_ranks_of_one_job_differ_as_sql_over_their_exports_says() {
    let (Some(shared), Some(rank1), Some(_)) = (
        require(Need::Shared),
        fixture("cori_run1_report1.sqlite"),
        require(Need::Nsys),
    ) else {
        return;
    };
    // Rank 2 is a report only: export it here.
    let dir = tempfile::tempdir().unwrap();
    let rank2 = dir.path().join("rank2.sqlite");
    let status = Command::new("nsys")
        .args(["export", "--type", "sqlite", "--output"])
        .arg(&rank2)
        .arg(shared.join("fixtures/reports/cori_run1_report2.qdrep"))
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let (rows, _) = check(&rank1, &rank2);
    assert!(rows >= 20, "{rows} rows");
    // The same program: the same names, and the same number of each.
    let (a, b) = (summary(&rank1), summary(&rank2));
    let differences = compare(&a, &b);
    assert!(differences.iter().all(|d| d.a.is_some() && d.b.is_some()));
    assert!(differences.iter().any(|d| d.total_change() != 0));
    let kernel_counts_equal = differences
        .iter()
        .filter(|d| d.kind == Kind::Kernel)
        .all(|d| d.count_change() == 0);
    assert!(kernel_counts_equal);
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_report_against_itself_changes_nothing() {
    let Some(path) = fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let (rows, nvtx_on_gpu) = check(&path, &path);
    assert!(rows > 90, "{rows} rows");
    assert!(nvtx_on_gpu > 2, "{nvtx_on_gpu} NVTX ranges with GPU time");
    let s = summary(&path);
    let differences = compare(&s, &s);
    let table = comparison_table(&differences);
    assert_eq!(table.rows.len(), differences.len());
    let change_columns: Vec<usize> = table
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| c.contains("Change"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(change_columns.len(), 5);
    for row in &table.rows {
        for &c in &change_columns {
            match &row[c] {
                Cell::Int(v) => assert_eq!(*v, 0),
                Cell::Real(v, _) => assert_eq!(*v, 0.0),
                Cell::Empty => {}
                other => panic!("{other:?} in a change column"),
            }
        }
    }
    // Kernels, API calls and NVTX ranges are all there.
    for kind in [Kind::Kernel, Kind::Api, Kind::Nvtx] {
        assert!(differences.iter().any(|d| d.kind == kind), "{kind:?}");
    }
}

/// Two captures of one program (CUDA graph launched whole, or node by
/// node): NVTX ranges with their GPU time on both sides, as nsys projects it.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn two_captures_differ_in_nvtx_gpu_time_as_nsys_projects_it() {
    let (Some(node), Some(whole)) = (
        fixture("h100_torch_graph_node.sqlite"),
        fixture("h100_torch_graph_whole.sqlite"),
    ) else {
        return;
    };
    let (rows, nvtx_on_gpu) = check(&node, &whole);
    assert!(rows > 90, "{rows} rows");
    assert!(nvtx_on_gpu > 4, "{nvtx_on_gpu} NVTX ranges with GPU time");
    let differences = compare(&summary(&node), &summary(&whole));
    // The graph the node-by-node capture shows as its kernels runs 10 times whole.
    let graphs: Vec<_> = differences
        .iter()
        .filter(|d| d.kind == Kind::Graph)
        .collect();
    assert_eq!(graphs.len(), 1, "{graphs:?}");
    assert_eq!((graphs[0].a, graphs[0].count_change()), (None, 10));
    let share_changed = differences.iter().any(|d| {
        d.kind == Kind::Nvtx && d.a.and_then(|s| s.gpu_share) != d.b.and_then(|s| s.gpu_share)
    });
    assert!(share_changed, "no NVTX range changed its share of GPU time");
}

#[test]
fn the_command_prints_a_report_against_itself_as_no_change() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/demo.sqlite");
    let out = crate::support::program::program()
        .args(["compare", "--format", "csv"])
        .arg(&demo)
        .arg(&demo)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    // One table, alone: its header first.
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[0], "Kind");
    let change = header
        .iter()
        .position(|c| *c == "Total Change (ns)")
        .unwrap();
    let mut rows = 0;
    for line in lines {
        assert_eq!(line.split(',').nth(change), Some("0"), "{line}");
        rows += 1;
    }
    assert!(rows > 0);
    let missing = crate::support::program::program()
        .args(["compare", "/nonexistent/a.sqlite"])
        .arg(&demo)
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
}

/// `--trace`: both runs in one trace, each under top-level tracks labelled
/// `A: ` or `B: `, their first GPU work at the same time, and every slice of
/// each run there.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_command_writes_both_runs_into_one_trace_aligned_at_their_first_gpu_work() {
    let (Some(a), Some(b)) = (
        fixture("h100_torch_graph_node.sqlite"),
        fixture("h100_torch_graph_whole.sqlite"),
    ) else {
        return;
    };
    let merged = compared_trace(&a, &b);
    let label = |s: &crate::support::checker::Slice| {
        let root = merged.root_of(s.track);
        let name = match (root.pid, root.tid) {
            (Some(pid), Some(_)) => merged
                .tracks
                .values()
                .find(|t| t.pid == Some(pid) && t.tid.is_none())
                .and_then(|p| p.process_name.clone()),
            _ => root.name.clone().or(root.process_name.clone()),
        };
        name.unwrap_or_default().chars().take(3).collect::<String>()
    };
    let gpu_work = ["cuda_kernel", "cuda_memcpy", "cuda_memset"];
    let mut first = BTreeMap::new();
    let mut count = BTreeMap::new();
    for s in &merged.slices {
        let side = label(s);
        *count.entry(side.clone()).or_insert(0usize) += 1;
        if gpu_work.contains(&s.category.as_str()) {
            let t = first.entry(side).or_insert(u64::MAX);
            *t = (*t).min(s.ts);
        }
    }
    for (side, input) in [("A: ", &a), ("B: ", &b)] {
        let converted = crate::support::converted::converted(input);
        let (single, _) = (&converted.trace, &converted.summary);
        assert_eq!(
            count.get(side),
            Some(&single.slices.len()),
            "{side}{count:?}"
        );
    }
    assert_eq!(count.len(), 2, "every slice is under A or B: {count:?}");
    assert_eq!(first["A: "], first["B: "], "first GPU work aligned");
}

/// `--trace` with a report compared with itself: the two runs' processes
/// stay two (B's pids moved apart from A's), and each is named with the pid
/// its report records, as SQL over the export finds it.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_trace_of_both_runs_names_each_process_with_its_real_pid() {
    let Some(a) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let db = open(&a);
    let pids: Vec<i64> = db
        .prepare(
            "SELECT DISTINCT (globalTid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_RUNTIME \
             ORDER BY 1",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(pids.len(), 2);
    let merged = compared_trace(&a, &a);
    let processes: BTreeMap<i32, String> = merged
        .tracks
        .values()
        .filter(|t| t.pid.is_some() && t.tid.is_none())
        .filter_map(|t| Some((t.pid?, t.process_name.clone()?)))
        .collect();
    for side in ["A", "B"] {
        for pid in &pids {
            let name = db
                .query_row("SELECT name FROM PROCESSES WHERE pid = ?1", [pid], |r| {
                    r.get::<_, String>(0)
                })
                .unwrap();
            let labelled = format!("{side}: {name} (pid {pid})");
            let with = processes.values().filter(|n| **n == labelled).count();
            assert_eq!(with, 1, "{labelled} in {processes:?}");
        }
    }
    assert_eq!(processes.len(), 2 * pids.len(), "{processes:?}");
}

/// A call recorded twice, the second record (eventClass 67 or 68) to carry
/// its backtrace (`--cudabacktrace`), is one call: a report with such
/// records against itself counts each call once, as SQL over the calls does.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn calls_recorded_twice_for_their_backtrace_count_once() {
    if let Some(path) = fixture("pipit_saxpy_mpi_cuda_rank0.sqlite") {
        let calls: Groups = summary(&path)
            .api_calls
            .iter()
            .map(|(n, s)| (n.clone(), (s.count, s.total)))
            .collect();
        assert_eq!(calls, expected(&path).api);
        assert_eq!(calls["cudaMemcpy"].0, 15);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("backtraces.sqlite");
    let mut s = crate::support::synth::Synth::new(&path);
    let main = crate::support::synth::Thread { pid: 7, tid: 7 };
    let stream = crate::support::synth::GpuStream {
        pid: 7,
        device: 0,
        context: 1,
        stream: 7,
    };
    s.process(7, "app");
    s.thread(main, "app");
    s.gpu(0, "GPU");
    for i in 0..4 {
        let t = 10_000 * i;
        s.api(main, t..t + 1_000, "cudaLaunchKernel_v7000").corr(i);
        s.api(main, t..t + 1_000, "cudaLaunchKernel")
            .corr(i)
            .set("eventClass", 67 + i % 2);
        s.kernel(stream, t + 2_000..t + 3_000, "k").corr(i);
    }
    s.api(main, 50_000..50_500, "cudaStreamSynchronize_v3020")
        .corr(9);
    s.api(main, 50_000..50_500, "cudaStreamSynchronize")
        .corr(9)
        .set("eventClass", 67);
    s.finish();
    let summary = summary(&path);
    let calls: BTreeMap<&str, (u64, i128)> = summary
        .api_calls
        .iter()
        .map(|(n, s)| (n.as_str(), (s.count, s.total)))
        .collect();
    let expected = BTreeMap::from([
        ("cudaLaunchKernel", (4, 4_000)),
        ("cudaStreamSynchronize", (1, 500)),
    ]);
    assert_eq!(calls, expected);
    check(&path, &path);
}

/// `--kind` picks kinds of rows, `--top N` the N largest changes of each,
/// and "Total Change (%)" is the change in percent of A's total: one-time
/// setup calls no longer outrank the kernels, which come first.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_command_groups_rows_by_kind_with_the_top_changes_of_each() {
    let (Some(node), Some(whole)) = (
        fixture("h100_torch_graph_node.sqlite"),
        fixture("h100_torch_graph_whole.sqlite"),
    ) else {
        return;
    };
    let run = |extra: &[&str]| -> Vec<Vec<String>> {
        let out = crate::support::program::program()
            .args(["compare", "--format", "csv"])
            .args([&node, &whole])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        crate::support::nsys::csv_rows(&crate::support::nsys::unmarked(
            &String::from_utf8(out.stdout).unwrap(),
        ))
    };
    let all = run(&[]);
    let column = |name: &str| all[0].iter().position(|c| c == name).unwrap();
    let (kind, total_a, change, percent) = (
        column("Kind"),
        column("Total A (ns)"),
        column("Total Change (ns)"),
        column("Total Change (%)"),
    );
    let kinds: Vec<&str> = all[1..].iter().map(|r| r[kind].as_str()).collect();
    let mut grouped = kinds.clone();
    grouped.dedup();
    // Issue 27.11: one vocabulary, the Kind column's names are those
    // `--kind` takes, and each picks the rows that bear it.
    assert_eq!(grouped, ["kernel", "graph", "api", "nvtx"]);
    for name in grouped {
        let picked = run(&["--kind", name]);
        let expected: Vec<&Vec<String>> = all[1..].iter().filter(|r| r[kind] == name).collect();
        assert_eq!(
            picked[1..].iter().collect::<Vec<_>>(),
            expected,
            "--kind {name}"
        );
    }
    for row in &all[1..] {
        let a: f64 = row[total_a].parse().unwrap();
        let c: f64 = row[change].parse().unwrap();
        match a == 0.0 {
            true => assert_eq!(row[percent], "", "{row:?}"),
            false => {
                let p: f64 = row[percent].parse().unwrap();
                assert!((p - c * 100.0 / a).abs() <= 0.05 + 1e-9, "{row:?}");
            }
        }
    }
    let top = run(&["--kind", "kernel,api", "--top", "3"]);
    let expected: Vec<&Vec<String>> = all[1..]
        .iter()
        .filter(|r| r[kind] == "kernel")
        .take(3)
        .chain(all[1..].iter().filter(|r| r[kind] == "api").take(3))
        .collect();
    assert_eq!(top[1..].iter().collect::<Vec<_>>(), expected);
    let out = crate::support::program::program()
        .args(["compare", "--kind", "kernal"])
        .args([&node, &whole])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("kernel, graph, api, nvtx"), "{stderr}");
}

/// The trace `compare --trace` writes of `a` and `b`, checked as valid.
fn compared_trace(a: &Path, b: &Path) -> crate::support::checker::Checked {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("both.perfetto-trace");
    let out = crate::support::program::program()
        .args(["compare", "--format", "csv", "--trace"])
        .arg(&trace)
        .args([a, b])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged = crate::support::convert::check_trace(&trace);
    merged.assert_valid();
    merged
}

/// Issue 27.11: on a terminal of 120 columns the comparison's lines fit in
/// 120 characters (its widest columns left out first, the changes and the
/// names kept), where all its columns take far more.
#[test]
fn the_comparison_fits_a_terminal_by_leaving_out_columns() {
    let (Some(node), Some(whole)) = (
        fixture("h100_torch_graph_node.sqlite"),
        fixture("h100_torch_graph_whole.sqlite"),
    ) else {
        return;
    };
    use nsys2perfetto::compare::fit_to_width;
    use nsys2perfetto::stats::{Fit, TableFormat};
    let (a, b) = (
        run_summary(&Report::open(&node).unwrap()).unwrap(),
        run_summary(&Report::open(&whole).unwrap()).unwrap(),
    );
    let mut table = comparison_table(&compare(&a, &b));
    let longest = |table: &nsys2perfetto::stats::Table| {
        let mut text = Vec::new();
        let files = ["a".to_owned(), "b".to_owned()];
        table
            .write(&mut text, TableFormat::Table, &files, Fit::Line(120))
            .unwrap();
        let text = String::from_utf8(text).unwrap();
        // The rows, after the header's rule.
        let rows = text.split_once("\n  --").unwrap().1;
        rows.lines()
            .skip(1)
            .map(|l| l.chars().count())
            .max()
            .unwrap()
    };
    assert!(longest(&table) > 120, "all columns fit already");
    let left_out = fit_to_width(&mut table, 120);
    assert!(longest(&table) <= 120, "{left_out:?}");
    assert!(!left_out.is_empty());
    for kept in ["Kind", "Total Change (ns)", "Name"] {
        assert!(table.columns.iter().any(|c| c == kept), "{kept}");
    }
    for gone in &left_out {
        assert!(!table.columns.contains(gone));
    }
}
