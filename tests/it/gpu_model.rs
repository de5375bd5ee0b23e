//! Perfetto's own GPU model (`--gpu-model typed`), judged by trace_processor
//! against SQL over the source and against the TrackEvent trace of the same
//! report: per category the same GPU work (count, Σts, Σdur), the same
//! launch links, every GPU of `TARGET_INFO_GPU`, every context with its
//! process; and the queries of the UI's GPU plugins find what they look for.
//! GPU metrics and CUDA memory use as GPU counters, against SQL over the
//! source and the TrackEvent trace's counters; the TrackEvent trace's `gpu`
//! rows, against `TARGET_INFO_GPU`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::support::convert::trace_processor;
use crate::support::source::{has_column, has_table, open, source_totals};
use crate::support::synth::global_pid;
use crate::support::tp::Totals;
use nsys2perfetto::{GpuModel, Options};
use rusqlite::types::Value;
use rusqlite::Connection;

/// Our category, the stage description its typed slices carry, its table.
const CATEGORIES: [(&str, &str, &str); 4] = [
    (
        "cuda_kernel",
        "Compute kernel",
        "CUPTI_ACTIVITY_KIND_KERNEL",
    ),
    ("cuda_memcpy", "Memory copy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
    ("cuda_memset", "Memory set", "CUPTI_ACTIVITY_KIND_MEMSET"),
    ("cuda_graph", "Graph run", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"),
];

fn typed() -> Options {
    let mut options = Options::default();
    options.gpu_model = GpuModel::Typed;
    options
}

/// The rows (header left out) of trace_processor's answer to `sql`.
fn query(binary: &Path, trace: &Path, sql: &str) -> Vec<Vec<String>> {
    let out = Command::new(binary)
        .arg("query")
        .arg(trace)
        .arg(sql)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    assert!(
        out.status.success(),
        "trace_processor failed on {}: {}",
        trace.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8 CSV");
    crate::support::nsys::csv_rows(&text)
        .into_iter()
        .skip(1)
        .collect()
}

/// Everything the typed trace is judged on, in one import: rows of (kind,
/// key, n, Σts in halves, Σdur in halves).
const TYPED: &str = "
INCLUDE PERFETTO MODULE std.gpu.context;
SELECT 'stat' AS kind, name || ' (' || severity || ', ' || source || ')' AS key, value AS n,
       NULL AS ts_hi, NULL AS ts_lo, NULL AS dur_hi, NULL AS dur_lo
FROM stats WHERE value > 0 AND severity IN ('error', 'data_loss')
UNION ALL
SELECT 'gpu_slice', EXTRACT_ARG(arg_set_id, 'description'), COUNT(*),
       SUM(ts >> 32), SUM(ts & 4294967295), SUM(dur >> 32), SUM(dur & 4294967295)
FROM gpu_slice GROUP BY 2
UNION ALL
SELECT 'flows', '', COUNT(*), NULL, NULL, NULL, NULL FROM flow
UNION ALL
SELECT 'gpu', COALESCE(name, '') || ' @ ' || COALESCE(pci_bdf, ''), COUNT(*), NULL, NULL, NULL, NULL
FROM gpu GROUP BY 2
UNION ALL
SELECT 'context', pid || ' ' || api, COUNT(*), NULL, NULL, NULL, NULL FROM gpu_context GROUP BY 2
";

#[derive(Debug, Default)]
struct Typed {
    problems: Vec<String>,
    slices: BTreeMap<String, Totals>,
    flows: u64,
    gpus: BTreeMap<String, u64>,
    contexts: BTreeMap<String, u64>,
}

fn typed_import(binary: &Path, trace: &Path) -> Typed {
    let mut t = Typed::default();
    for row in query(binary, trace, TYPED) {
        let number = |i: usize| -> u128 {
            match row[i].as_str() {
                "[NULL]" => 0,
                v => v.parse().unwrap_or_else(|e| panic!("{e} in {row:?}")),
            }
        };
        let n = number(2) as u64;
        let key = row[1].clone();
        match row[0].as_str() {
            "stat" => t.problems.push(format!("{key}: {n}")),
            "gpu_slice" => {
                let totals = Totals {
                    count: n,
                    ts: (number(3) << 32) + number(4),
                    dur: (number(5) << 32) + number(6),
                    open: 0,
                };
                t.slices.insert(key, totals);
            }
            "flows" => t.flows = n,
            "gpu" => {
                t.gpus.insert(key, n);
            }
            "context" => {
                t.contexts.insert(key, n);
            }
            kind => panic!("unexpected row kind {kind}"),
        }
    }
    t
}

/// The GPUs of `TARGET_INFO_GPU`, as the `gpu` rows name them.
fn source_gpus(db: &Connection) -> BTreeMap<String, u64> {
    let mut gpus = BTreeMap::new();
    let table = "TARGET_INFO_GPU";
    if !has_table(db, table) {
        return gpus;
    }
    let bus = match has_column(db, table, "busLocation") {
        true => "COALESCE(busLocation, '')",
        false => "''",
    };
    let id = if has_column(db, table, "id") {
        "id"
    } else {
        "deviceId"
    };
    let sql =
        format!("SELECT name || ' @ ' || {bus}, COUNT(DISTINCT {id}) FROM {table} GROUP BY 1");
    let mut stmt = db.prepare(&sql).unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })
        .unwrap();
    for row in rows {
        let (key, n) = row.unwrap();
        gpus.insert(key, n);
    }
    gpus
}

/// The (process, context) pairs with GPU work at or after time 0, counted
/// per process, where the export says the process of GPU work.
fn source_contexts(db: &Connection) -> Option<BTreeMap<String, u64>> {
    let mut selects = Vec::new();
    for (_, _, table) in CATEGORIES {
        if !has_table(db, table) {
            continue;
        }
        if !has_column(db, table, "globalPid") {
            return None;
        }
        selects.push(format!(
            "SELECT (globalPid >> 24) & 16777215 AS pid, contextId FROM {table} WHERE start >= 0"
        ));
    }
    if selects.is_empty() {
        return Some(BTreeMap::new());
    }
    let sql = format!(
        "SELECT pid || ' CUDA', COUNT(*) FROM (SELECT DISTINCT pid, contextId FROM ({})) GROUP BY 1",
        selects.join(" UNION ALL ")
    );
    let mut stmt = db.prepare(&sql).unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
        })
        .unwrap();
    Some(rows.map(|r| r.unwrap()).collect())
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn typed_gpu_work_matches_the_source_and_the_trackevent_trace_on_every_fixture() {
    let Some(fixtures) = crate::support::fixtures::all() else {
        return;
    };
    let Some(binary) = trace_processor() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for fixture in fixtures {
        let name = fixture.file_name().unwrap().to_string_lossy().into_owned();
        let converted = crate::support::converted::converted(&fixture);
        let trackevent =
            (converted.imported.as_ref()).expect("trace_processor imported the TrackEvent trace");
        // The TrackEvent trace has the GPUs too (`GpuInfo`), and only those.
        let default = typed_import(&binary, &converted.path);
        assert!(
            default.problems.is_empty(),
            "{name}: {:?}",
            default.problems
        );
        assert_eq!(
            default.gpus,
            source_gpus(&open(&fixture)),
            "{name}: `gpu` of the TrackEvent trace vs TARGET_INFO_GPU"
        );
        let trace = dir.path().join(format!("{name}.typed.perfetto-trace"));
        nsys2perfetto::convert_file(&fixture, &trace, &typed(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = typed_import(&binary, &trace);
        let db = open(&fixture);

        assert!(got.problems.is_empty(), "{name}: {:?}", got.problems);
        for (category, stage, table) in CATEGORIES {
            let typed = got.slices.get(stage).copied().unwrap_or_default();
            let slices = trackevent.slices.get(category).copied().unwrap_or_default();
            assert_eq!(typed, slices, "{name}: {category}, typed vs slices");
            if category != "cuda_graph" {
                let (count, ts, dur) = source_totals(&db, table);
                let source = Totals {
                    count,
                    ts,
                    dur,
                    open: 0,
                };
                assert_eq!(typed, source, "{name}: {category}, typed vs {table}");
            }
        }
        assert!(
            got.slices
                .keys()
                .all(|k| CATEGORIES.iter().any(|c| c.1 == k)),
            "{name}: gpu_slice of another stage: {:?}",
            got.slices
        );
        assert_eq!(
            got.flows, trackevent.flows,
            "{name}: launch links (and event flows) of the typed trace vs the flows of the slices'"
        );
        let gpus = source_gpus(&db);
        for (gpu, n) in &gpus {
            assert_eq!(
                got.gpus.get(gpu),
                Some(n),
                "{name}: GPU {gpu} of TARGET_INFO_GPU in `gpu` {:?}",
                got.gpus
            );
        }
        if let Some(contexts) = source_contexts(&db) {
            assert_eq!(got.contexts, contexts, "{name}: gpu_context by pid");
        }
    }
}

/// The kernel list of the UI plugin com.meta.GpuCompute (its Summary tab),
/// as ui/src/plugins/com.meta.GpuCompute/summary.ts queries it in Perfetto
/// v58.2 (fetchKernelSummaryRows), with the metric names its sections
/// register; its render stage category COMPUTE is 2 (details.ts).
const GPU_COMPUTE_SUMMARY: &str = "
    WITH compute_slices AS (
      SELECT s.id, s.ts, s.dur, s.arg_set_id, s.name
      FROM gpu_slice s
      INNER JOIN gpu_track tr ON tr.id = s.track_id
      WHERE s.render_stage_category = 2
    ),
    counter_vals AS (
      SELECT
        cs.id AS slice_id,
        tc.name AS metric_name,
        c.value
      FROM compute_slices cs
      INNER JOIN counter c ON c.ts >= cs.ts AND (cs.dur IS NULL OR c.ts < cs.ts + cs.dur)
      INNER JOIN gpu_counter_track tc ON tc.id = c.track_id
        AND tc.name IN ('gpu__time_duration.sum')
      WHERE c.value <> 0
    )
    SELECT
      cs.id AS id,
      COALESCE(
        EXTRACT_ARG(cs.arg_set_id, 'kernel_demangled_name'),
        EXTRACT_ARG(cs.arg_set_id, 'kernel_name'),
        cs.name
      ) AS demangledName,
      CAST(EXTRACT_ARG(cs.arg_set_id, 'registers_per_thread') AS REAL) AS registers_per_thread,
      CAST(EXTRACT_ARG(cs.arg_set_id, 'launch.grid_size.x') AS REAL)
        * CAST(COALESCE(EXTRACT_ARG(cs.arg_set_id, 'launch.grid_size.y'), 1) AS REAL)
        * CAST(COALESCE(EXTRACT_ARG(cs.arg_set_id, 'launch.grid_size.z'), 1) AS REAL) AS grid_size,
      COALESCE(
        (SELECT cv.value FROM counter_vals cv WHERE cv.slice_id = cs.id AND cv.metric_name = 'gpu__time_duration.sum' LIMIT 1),
        CAST(cs.dur AS REAL)
      ) AS durationNSecNum
    FROM compute_slices cs
    ORDER BY cs.ts ASC;
";

/// The launch arguments of one kernel in com.meta.GpuCompute's Details tab
/// (details.ts: kernelQueryBody with its infrastructure metrics and those of
/// the Launch Statistics section, section/launch_statistics.ts; the compute
/// counter group is 6), for the slice `{id}`.
const GPU_COMPUTE_DETAILS: &str = "
    SELECT s.id AS kernel_id, s.name AS kernel_slice_name, s.ts AS launch_ts, s.dur AS launch_dur,
           tc.name AS metric_label, SUM(c.value) AS metric_sum_value, AVG(c.value) AS metric_avg_value,
      EXTRACT_ARG(s.arg_set_id, 'kernel_demangled_name') as kernel_demangled_name,
      EXTRACT_ARG(s.arg_set_id, 'launch.workgroup_size.x') as launch_workgroup_size_x,
      EXTRACT_ARG(s.arg_set_id, 'launch.workgroup_size.y') as launch_workgroup_size_y,
      EXTRACT_ARG(s.arg_set_id, 'launch.workgroup_size.z') as launch_workgroup_size_z,
      EXTRACT_ARG(s.arg_set_id, 'launch.grid_size.x') as launch_grid_size_x,
      EXTRACT_ARG(s.arg_set_id, 'launch.grid_size.y') as launch_grid_size_y,
      EXTRACT_ARG(s.arg_set_id, 'launch.grid_size.z') as launch_grid_size_z,
      EXTRACT_ARG(s.arg_set_id, 'process_id') as process_id,
      EXTRACT_ARG(s.arg_set_id, 'registers_per_thread') as registers_per_thread,
      EXTRACT_ARG(s.arg_set_id, 'shared_mem_dynamic') as shared_mem_dynamic,
      EXTRACT_ARG(s.arg_set_id, 'shared_mem_static') as shared_mem_static
    FROM gpu_slice s
    INNER JOIN gpu_track tr ON tr.id = s.track_id
    LEFT JOIN counter c ON c.ts >= s.ts AND c.ts < s.ts + s.dur
      AND c.track_id IN (
        SELECT gc_tc.id FROM gpu_counter_track gc_tc
        INNER JOIN gpu_counter_group gc ON gc.track_id = gc_tc.id
          AND gc.group_id = 6
      )
    LEFT JOIN gpu_counter_track tc ON tc.id = c.track_id
    WHERE s.render_stage_category = 2
      AND s.id = {id}
    GROUP BY kernel_id, metric_label
    ORDER BY s.ts ASC;
";

/// The streams the UI plugin dev.perfetto.GpuByProcess nests as process ›
/// device › context › stream (ui/src/plugins/dev.perfetto.GpuByProcess/
/// index.ts in Perfetto v58.2, discoverCudaHipTracks).
const GPU_BY_PROCESS_STREAMS: &str = "
    INCLUDE PERFETTO MODULE std.gpu.context;
    SELECT
      s.upid AS upid,
      extract_arg(s.arg_set_id, 'device') AS device,
      s.context_id AS context,
      extract_arg(s.arg_set_id, 'stream') AS stream,
      gc.api AS api,
      p.pid AS pid,
      p.name AS process_name
    FROM gpu_slice s
    JOIN process p USING (upid)
    LEFT JOIN gpu_context gc ON gc.context_id = s.context_id
    WHERE s.upid IS NOT NULL
      AND s.context_id IS NOT NULL
      AND extract_arg(s.arg_set_id, 'device') IS NOT NULL
      AND extract_arg(s.arg_set_id, 'stream') IS NOT NULL
    GROUP BY s.upid, device, s.context_id, stream
    ORDER BY s.upid, device, s.context_id, stream
";

/// The slices of one stream's leaf track in dev.perfetto.GpuByProcess
/// (createGpuSliceDataset with the where clause of a CUDA stream), counted.
const GPU_BY_PROCESS_LEAF: &str = "
    SELECT COUNT(*) FROM (
      WITH filtered AS (
        SELECT id, name, ts, dur, track_id
        FROM gpu_slice
        WHERE upid = {upid} AND extract_arg(arg_set_id, 'device') = {device}
          AND context_id = {context} AND extract_arg(arg_set_id, 'stream') = {stream}
      ), relayout AS (
        SELECT id, layout_depth AS depth
        FROM experimental_slice_layout(COALESCE(
          (SELECT group_concat(track_id) FROM (
            SELECT DISTINCT track_id FROM filtered ORDER BY track_id
          )),
          ''
        ))
      )
      SELECT id, name, ts, dur, depth
      FROM filtered
      JOIN relayout USING (id)
      ORDER BY ts
    )
";

/// Rows of `sql` over the source, as text.
fn source_rows(db: &Connection, sql: &str) -> Vec<Vec<String>> {
    let mut stmt = db.prepare(sql).unwrap();
    let columns = stmt.column_count();
    let rows = stmt
        .query_map([], |r| {
            (0..columns)
                .map(|i| {
                    Ok(match r.get_ref(i)? {
                        rusqlite::types::ValueRef::Null => "[NULL]".to_owned(),
                        rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                        rusqlite::types::ValueRef::Real(v) => v.to_string(),
                        rusqlite::types::ValueRef::Text(t) => {
                            String::from_utf8_lossy(t).into_owned()
                        }
                        rusqlite::types::ValueRef::Blob(_) => "[BLOB]".to_owned(),
                    })
                })
                .collect()
        })
        .unwrap();
    rows.map(|r| r.unwrap()).collect()
}

/// A number trace_processor printed (REALs print as `200.0`).
fn numeric(text: &str) -> f64 {
    text.parse()
        .unwrap_or_else(|e| panic!("{e}: {text:?} is not a number"))
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_gpu_plugins_queries_find_kernels_with_launch_statistics_and_the_stream_nesting() {
    let Some(fixture) = crate::support::fixtures::fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let Some(binary) = trace_processor() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("typed.perfetto-trace");
    nsys2perfetto::convert_file(&fixture, &trace, &typed(), &mut |_| {}).unwrap();
    let db = open(&fixture);

    // Summary: one row per kernel, with its demangled name, registers, grid
    // size and duration, as the source has them.
    let mut summary: Vec<(String, i64, i64, i64)> = query(&binary, &trace, GPU_COMPUTE_SUMMARY)
        .iter()
        .map(|r| {
            (
                r[1].clone(),
                numeric(&r[2]) as i64,
                numeric(&r[3]) as i64,
                numeric(&r[4]) as i64,
            )
        })
        .collect();
    let mut expected: Vec<(String, i64, i64, i64)> = source_rows(
        &db,
        "SELECT d.value, k.registersPerThread, k.gridX * k.gridY * k.gridZ, k.\"end\" - k.start
         FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d ON d.id = k.demangledName
         WHERE k.start >= 0",
    )
    .iter()
    .map(|r| {
        (
            r[0].clone(),
            r[1].parse().unwrap(),
            r[2].parse().unwrap(),
            r[3].parse().unwrap(),
        )
    })
    .collect();
    assert!(!expected.is_empty(), "the fixture has kernels");
    summary.sort();
    expected.sort();
    assert_eq!(summary.len(), expected.len(), "kernels in the Summary tab");
    assert_eq!(summary, expected, "the Summary tab's kernels");

    // Details: the first kernel's launch statistics are the source's.
    let first = query(
        &binary,
        &trace,
        "SELECT id, ts FROM gpu_slice WHERE render_stage_category = 2 ORDER BY ts, id LIMIT 1",
    );
    let (id, ts) = (&first[0][0], &first[0][1]);
    let details = query(&binary, &trace, &GPU_COMPUTE_DETAILS.replace("{id}", id));
    assert_eq!(details.len(), 1, "one row (no counters): {details:?}");
    let got: Vec<&str> = details[0][7..].iter().map(String::as_str).collect();
    let source = source_rows(
        &db,
        &format!(
            "SELECT d.value, k.blockX, k.blockY, k.blockZ, k.gridX, k.gridY, k.gridZ,
                    (k.globalPid >> 24) & 16777215, k.registersPerThread,
                    k.dynamicSharedMemory, k.staticSharedMemory
             FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d ON d.id = k.demangledName
             WHERE k.start = {ts}"
        ),
    );
    assert!(
        source.iter().any(|row| row.iter().eq(got.iter())),
        "Details of the kernel at {ts}: {got:?}, the source's: {source:?}"
    );

    // GpuByProcess: process › device › context › stream, each stream with
    // its work, as the source has them.
    let streams = query(&binary, &trace, GPU_BY_PROCESS_STREAMS);
    let got: Vec<String> = streams
        .iter()
        .map(|r| format!("pid {} device {} stream {} {}", r[5], r[1], r[3], r[4]))
        .collect();
    let places = "
        SELECT (globalPid >> 24) & 16777215 AS pid, deviceId, contextId, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start >= 0
        UNION ALL SELECT (globalPid >> 24) & 16777215, deviceId, contextId, streamId FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE start >= 0
        UNION ALL SELECT (globalPid >> 24) & 16777215, deviceId, contextId, streamId FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE start >= 0";
    let expected: Vec<String> = source_rows(
        &db,
        &format!(
            "SELECT pid, deviceId, streamId, COUNT(*) FROM ({places})
             GROUP BY pid, deviceId, contextId, streamId ORDER BY pid, deviceId, contextId, streamId"
        ),
    )
    .iter()
    .map(|r| format!("pid {} device {} stream {} CUDA", r[0], r[1], r[2]))
    .collect();
    assert!(!expected.is_empty());
    assert_eq!(got, expected, "GpuByProcess's streams");
    let expected_counts: Vec<String> = source_rows(
        &db,
        &format!(
            "SELECT COUNT(*) FROM ({places}) GROUP BY pid, deviceId, contextId, streamId
             ORDER BY pid, deviceId, contextId, streamId"
        ),
    )
    .into_iter()
    .map(|r| r[0].clone())
    .collect();
    let leaves: Vec<String> = streams
        .iter()
        .map(|r| {
            GPU_BY_PROCESS_LEAF
                .replace("{upid}", &r[0])
                .replace("{device}", &r[1])
                .replace("{context}", &r[2])
                .replace("{stream}", &r[3])
        })
        .collect();
    let counts: Vec<String> = leaves
        .iter()
        .map(|sql| query(&binary, &trace, sql)[0][0].clone())
        .collect();
    assert_eq!(
        counts, expected_counts,
        "the work on each stream's leaf track"
    );
}

/// GPU work of a converted trace: typed (gpu_slice) or TrackEvent (slices
/// of the GPU categories), with the trace's import problems.
fn gpu_work(binary: &Path, trace: &Path, model: GpuModel) -> (u64, u64, Vec<Vec<String>>) {
    let sql = match model {
        GpuModel::Typed => "SELECT COUNT(*), COALESCE(SUM(dur), 0) FROM gpu_slice",
        _ => {
            "SELECT COUNT(*), COALESCE(SUM(dur), 0) FROM slice WHERE category IN
              ('cuda_kernel', 'cuda_memcpy', 'cuda_memset', 'cuda_graph')"
        }
    };
    let row = &query(binary, trace, sql)[0];
    let problems = query(
        binary,
        trace,
        "SELECT name, value FROM stats WHERE value > 0 AND severity IN ('error', 'data_loss')",
    );
    (row[0].parse().unwrap(), row[1].parse().unwrap(), problems)
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn merge_filters_and_findings_keep_the_same_gpu_work_in_both_models() {
    let (Some(a), Some(b)) = (
        crate::support::fixtures::fixture("nsys-ai_h100_2gpu_1s.sqlite"),
        crate::support::fixtures::fixture("h100_torch_graph_whole.sqlite"),
    ) else {
        return;
    };
    let Some(binary) = trace_processor() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut runs: Vec<(String, Options)> = Vec::new();
    let mut filtered = Options::default();
    filtered.filter = nsys2perfetto::Filter::default()
        .gpus(vec![1])
        .kernels("elementwise")
        .unwrap();
    runs.push(("filtered".into(), filtered));
    let mut findings = Options::default();
    findings.findings = Some(nsys2perfetto::analyze::Thresholds::default());
    runs.push(("findings".into(), findings));
    for (what, options) in runs {
        let mut work = Vec::new();
        for model in [GpuModel::TrackEvent, GpuModel::Typed] {
            let trace = dir.path().join(format!("{what}-{model:?}.perfetto-trace"));
            let mut options = options.clone();
            options.gpu_model = model;
            nsys2perfetto::convert_file(&a, &trace, &options, &mut |_| {}).unwrap();
            let (count, dur, problems) = gpu_work(&binary, &trace, model);
            assert!(problems.is_empty(), "{what}, {model:?}: {problems:?}");
            work.push((count, dur));
        }
        assert!(work[0].0 > 0, "{what}: GPU work in the trace");
        assert_eq!(work[0], work[1], "{what}: the GPU work of both models");
    }
    let mut merged = Vec::new();
    for model in [GpuModel::TrackEvent, GpuModel::Typed] {
        let trace = dir.path().join(format!("merged-{model:?}.perfetto-trace"));
        let mut options = Options::default();
        options.gpu_model = model;
        nsys2perfetto::merge::merge_files(
            &[a.clone(), b.clone()],
            &trace,
            &options,
            &nsys2perfetto::merge::MergeOptions::default(),
            &mut |_| {},
        )
        .unwrap();
        let (count, dur, problems) = gpu_work(&binary, &trace, model);
        assert!(problems.is_empty(), "merged, {model:?}: {problems:?}");
        merged.push((count, dur));
    }
    assert_eq!(merged[0], merged[1], "merged: the GPU work of both models");
    let parts: u64 = [&a, &b]
        .iter()
        .map(|f| {
            let db = open(f);
            CATEGORIES
                .iter()
                .map(|(_, _, table)| source_totals(&db, table).0)
                .sum::<u64>()
        })
        .sum();
    assert_eq!(merged[1].0, parts, "merged: every report's GPU work");
}

/// Per counter track of the trace: (name, GPU, unit, group) of a GPU
/// counter, (name, track id, "", "") of another, -> (count, Σts, Σvalue in
/// thousandths).
type CounterTotals = BTreeMap<(String, String, String, String), (u64, u128, i64)>;

fn counter_totals(binary: &Path, trace: &Path, gpu_counters: bool) -> CounterTotals {
    let sql = match gpu_counters {
        true => {
            "SELECT t.name, g.name, COALESCE(t.unit, ''),
                    (SELECT GROUP_CONCAT(group_id) FROM gpu_counter_group WHERE track_id = t.id),
                    COUNT(*), SUM(c.ts), CAST(ROUND(SUM(c.value) * 1e3) AS INT)
             FROM counter c JOIN gpu_counter_track t ON c.track_id = t.id
             JOIN gpu g ON g.id = t.gpu_id GROUP BY t.id"
        }
        false => {
            "SELECT t.name, t.id, '', '', COUNT(*), SUM(c.ts),
                    CAST(ROUND(SUM(c.value) * 1e3) AS INT)
             FROM counter c JOIN counter_track t ON c.track_id = t.id
             WHERE t.id NOT IN (SELECT id FROM gpu_counter_track) GROUP BY t.id"
        }
    };
    let problems = query(
        binary,
        trace,
        "SELECT name FROM stats WHERE value > 0 AND severity IN ('error', 'data_loss')",
    );
    assert!(problems.is_empty(), "{}: {problems:?}", trace.display());
    query(binary, trace, sql)
        .into_iter()
        .map(|r| {
            let n = |i: usize| {
                r[i].parse::<i128>()
                    .unwrap_or_else(|e| panic!("{e}: {r:?}"))
            };
            let key = (r[0].clone(), r[1].clone(), r[2].clone(), r[3].clone());
            (key, (n(4) as u64, n(5) as u128, n(6) as i64))
        })
        .collect()
}

/// CUDA memory use per (device, pid) as SQL sees it: (count, Σstart, Σ of
/// the running total after each allocation or free, in time order).
fn source_memory(db: &Connection) -> BTreeMap<(i64, i64), (u64, u128, i64)> {
    let sql = "SELECT deviceId, pid, COUNT(*), SUM(start), SUM(total) FROM (
                 SELECT deviceId, (globalPid >> 24) & 16777215 AS pid, start,
                        SUM(CASE memoryOperationType WHEN 1 THEN -bytes ELSE bytes END)
                          OVER (PARTITION BY deviceId, globalPid ORDER BY start, rowid) AS total
                 FROM CUDA_GPU_MEMORY_USAGE_EVENTS)
               WHERE start >= 0 GROUP BY 1, 2";
    let mut stmt = db.prepare(sql).unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                (r.get::<_, i64>(0)?, r.get::<_, i64>(1)?),
                (
                    r.get::<_, i64>(2)? as u64,
                    r.get::<_, i64>(3)? as u128,
                    r.get::<_, i64>(4)? * 1_000,
                ),
            ))
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// The typed trace's GPU counters and the TrackEvent trace's counter tracks
/// of the same report, track by track (name, count, Σts, Σvalue).
fn same_counters(typed: &CounterTotals, trackevent: &CounterTotals, what: &str) {
    let strip = |t: &CounterTotals| -> BTreeMap<String, (u64, u128, i64)> {
        t.iter().map(|(k, v)| (k.0.clone(), *v)).collect()
    };
    assert_eq!(
        strip(typed),
        strip(trackevent),
        "{what}: typed vs TrackEvent counters"
    );
}

#[test]
fn cuda_memory_use_is_a_gpu_counter_of_its_gpu_on_the_fixtures_that_record_it() {
    let Some(binary) = trace_processor() else {
        return;
    };
    let Some(fixtures) = crate::support::fixtures::all() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for fixture in fixtures {
        let name = fixture.file_name().unwrap().to_string_lossy().into_owned();
        let db = open(&fixture);
        if !has_table(&db, "CUDA_GPU_MEMORY_USAGE_EVENTS") {
            continue;
        }
        let source = source_memory(&db);
        if source.is_empty() {
            continue;
        }
        let typed_trace = dir.path().join(format!("{name}.typed.perfetto-trace"));
        nsys2perfetto::convert_file(&fixture, &typed_trace, &typed(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let default_trace = &crate::support::converted::converted(&fixture).path;
        let typed_counters = counter_totals(&binary, &typed_trace, true);
        let gpus = source_gpus(&db);
        for ((device, pid), totals) in &source {
            let suffix = format!("(pid {pid})");
            let found: Vec<_> = typed_counters
                .iter()
                .filter(|(k, _)| k.0.starts_with("CUDA memory: ") && k.0.ends_with(&suffix))
                .collect();
            assert_eq!(
                found.len(),
                1,
                "{name}: pid {pid} on GPU {device}: {found:?}"
            );
            let ((_, gpu, unit, group), got) = found[0];
            assert_eq!(got, totals, "{name}: CUDA memory of pid {pid}");
            assert_eq!((unit.as_str(), group.as_str()), ("B", "5"), "bytes, MEMORY");
            assert!(
                gpus.keys().any(|g| g.starts_with(&format!("{gpu} @"))),
                "{name}: the counter's GPU {gpu} is one of TARGET_INFO_GPU {gpus:?}"
            );
        }
        let memory = |t: &CounterTotals| -> CounterTotals {
            t.iter()
                .filter(|(k, _)| k.0.starts_with("CUDA memory: "))
                .map(|(k, v)| (k.clone(), *v))
                .collect()
        };
        let trackevent = counter_totals(&binary, default_trace, false);
        same_counters(&memory(&typed_counters), &memory(&trackevent), &name);
        checked += 1;
    }
    // h100_torch_graph_node records it (pipit_saxpy's table is empty).
    assert!(checked >= 1, "no fixture records CUDA memory use");
}

#[test]
fn gpu_metrics_and_memory_are_gpu_counters_with_units_and_groups() {
    let Some(binary) = trace_processor() else {
        return;
    };
    let (dir, input) = crate::support::convert::synthetic(|s| {
        s.process(100, "trainer");
        s.gpu(0, "NVIDIA A100");
        s.gpu(1, "NVIDIA H100");
        let metrics = [
            (0, "SMs Active [Throughput %]"),
            (1, "GPC Clock Frequency [MHz]"),
            (2, "DRAM Read Bandwidth [Throughput %]"),
            (3, "PCIe Read Requests to BAR1 [Requests]"),
        ];
        // Metric sets 0x100 and 0x101: GPUs 0 and 1, the same metric names.
        for type_id in [0x100i64, 0x101] {
            for (metric, name) in metrics {
                s.row(
                    "TARGET_INFO_GPU_METRICS",
                    vec![
                        ("typeId", type_id.into()),
                        ("sourceId", (type_id & 0xFF).into()),
                        ("typeName", Value::Text("GA100".into())),
                        ("metricId", metric.into()),
                        ("metricName", Value::Text(name.into())),
                    ],
                );
            }
        }
        let mut seed = 7u64;
        for ts in (1000..60_000).step_by(1000) {
            for type_id in [0x100i64, 0x101] {
                for (metric, name) in metrics {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let value = match name.contains("Clock") {
                        true => 1_000_000_000 + (seed >> 34) as i64,
                        false => (seed >> 57) as i64,
                    };
                    s.row(
                        "GPU_METRICS",
                        vec![
                            ("timestamp", (ts + type_id).into()),
                            ("typeId", type_id.into()),
                            ("metricId", metric.into()),
                            ("value", value.into()),
                        ],
                    );
                }
            }
        }
        let pid = Value::Integer(global_pid(100));
        for (ts, bytes, op) in [
            (1500, 1i64 << 20, 0),
            (2500, 4 << 20, 0),
            (3500, 1 << 20, 1),
        ] {
            s.row(
                "CUDA_GPU_MEMORY_USAGE_EVENTS",
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
                ],
            );
        }
    });
    let typed_trace = dir.path().join("typed.perfetto-trace");
    nsys2perfetto::convert_file(&input, &typed_trace, &typed(), &mut |_| {}).unwrap();
    let default_trace = dir.path().join("default.perfetto-trace");
    nsys2perfetto::convert_file(&input, &default_trace, &Options::default(), &mut |_| {}).unwrap();
    let got = counter_totals(&binary, &typed_trace, true);

    // The source, with the unit conversion of the TrackEvent model: clocks
    // stored in Hz are given in the MHz their name says.
    let db = open(&input);
    let mut stmt = db
        .prepare(
            "SELECT n.metricName, g.name, COUNT(*), SUM(m.timestamp),
                    CAST(ROUND(SUM(CASE WHEN n.metricName LIKE '%[MHz]' AND m.value >= 1e6
                                   THEN m.value / 1e6 ELSE m.value END) * 1e3) AS INT)
             FROM GPU_METRICS m
             JOIN TARGET_INFO_GPU_METRICS n USING (typeId, metricId)
             JOIN TARGET_INFO_GPU g ON g.id = m.typeId & 255
             GROUP BY 1, 2",
        )
        .unwrap();
    let source: Vec<(String, String, (u64, u128, i64))> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                (
                    r.get::<_, i64>(2)? as u64,
                    r.get::<_, i64>(3)? as u128,
                    r.get(4)?,
                ),
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(source.len(), 8, "four metrics on each of two GPUs");
    let expected_unit_and_group = |metric: &str| match metric {
        "SMs Active [Throughput %]" => ("%", "6"),
        "GPC Clock Frequency [MHz]" => ("MHz", "1"),
        "DRAM Read Bandwidth [Throughput %]" => ("%", "5"),
        // Requests: a unit Perfetto has no name for, kept in the name.
        _ => ("", "5"),
    };
    for (metric, gpu, totals) in &source {
        let (unit, group) = expected_unit_and_group(metric);
        let key = (
            metric.clone(),
            gpu.clone(),
            unit.to_owned(),
            group.to_owned(),
        );
        assert_eq!(got.get(&key), Some(totals), "{key:?} in {got:?}");
    }
    let memory = (
        "CUDA memory: trainer (pid 100)".to_owned(),
        "NVIDIA H100".to_owned(),
        "B".to_owned(),
        "5".to_owned(),
    );
    let in_use = (1i64 << 20) + (5 << 20) + (4 << 20);
    assert_eq!(got.get(&memory), Some(&(3, 7500, in_use * 1_000)));
    assert_eq!(got.len(), source.len() + 1, "{got:?}");

    // The same values as the TrackEvent trace's counter tracks, whose
    // metric tracks of the two GPUs share names: compare the sums per name.
    let by_name = |t: &CounterTotals| -> BTreeMap<String, (u64, u128, i64)> {
        let mut m: BTreeMap<String, (u64, u128, i64)> = BTreeMap::new();
        for (k, v) in t {
            let e = m.entry(k.0.clone()).or_default();
            *e = (e.0 + v.0, e.1 + v.1, e.2 + v.2);
        }
        m
    };
    let trackevent = counter_totals(&binary, &default_trace, false);
    assert_eq!(
        by_name(&got),
        by_name(&trackevent),
        "typed vs TrackEvent counters"
    );
}
