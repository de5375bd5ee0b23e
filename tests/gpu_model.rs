//! Perfetto's own GPU model (`--gpu-model typed`), judged by trace_processor
//! against SQL over the source and against the TrackEvent trace of the same
//! report: per category the same GPU work (count, Σts, Σdur), the same
//! launch links, every GPU of `TARGET_INFO_GPU`, every context with its
//! process; and the queries of the UI's GPU plugins find what they look for.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use nsys2perfetto::{GpuModel, Options};
use rusqlite::Connection;
use support::convert::{convert_imported, trace_processor};
use support::source::{has_column, has_table, open, source_totals};
use support::tp::Totals;

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
    support::nsys::csv_rows(&text).into_iter().skip(1).collect()
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
    if !has_table(db, table) || !has_column(db, table, "busLocation") {
        return gpus;
    }
    let id = if has_column(db, table, "id") {
        "id"
    } else {
        "deviceId"
    };
    let sql = format!(
        "SELECT name || ' @ ' || busLocation, COUNT(DISTINCT {id}) FROM {table} GROUP BY 1"
    );
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
fn typed_gpu_work_matches_the_source_and_the_trackevent_trace_on_every_fixture() {
    let Some(fixtures) = support::fixtures::all() else {
        return;
    };
    let Some(binary) = trace_processor() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for fixture in fixtures {
        let name = fixture.file_name().unwrap().to_string_lossy().into_owned();
        let slices = dir.path().join(format!("{name}.slices.perfetto-trace"));
        let (_, _, imported) = convert_imported(&fixture, &slices, &Options::default());
        let trackevent = imported.expect("trace_processor imported the TrackEvent trace");
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
