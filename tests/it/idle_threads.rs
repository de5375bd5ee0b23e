//! `report`: what the CPU threads did in a GPU's longest idle stretches,
//! against SQL over the source: per thread of the stretch's process, the
//! call (CUDA API or OS runtime) it spent most time in, summed by name, and
//! how many calls; the function most of its CPU samples were taken in, and
//! how many samples. On the H100 capture the 5 s stretch was spent in OS
//! runtime calls (`stat64`, `mmap64`, ...), not in the one CUDA call that
//! overlapped it.

use std::collections::BTreeMap;

use nsys2perfetto::report::{report_file, ReportOptions};
use nsys2perfetto::ReadOptions;
use rusqlite::Connection;

use crate::support::fixtures::fixture;
use crate::support::source::{has_column, has_table, open};

/// Per thread: calls by name (count, time overlapping `[from, to)`).
type Calls = BTreeMap<u32, BTreeMap<String, (u64, i64)>>;
/// Per thread: samples by the function they were taken in.
type Samples = BTreeMap<u32, BTreeMap<String, u64>>;

fn calls_in(db: &Connection, (from, to): (i64, i64), pid: u32) -> Calls {
    let of = |table: &str, name: &str| {
        let mut sql = format!(
            "SELECT globalTid & 16777215 AS tid, {name} AS name, start AS t_start, \"end\" AS t_end FROM {table} t
             LEFT JOIN StringIds s ON s.id = t.nameId
             WHERE start < {to} AND \"end\" > {from} AND ((globalTid >> 24) & 16777215) = {pid}"
        );
        if has_column(db, table, "eventClass") && table != "OSRT_API" {
            // Records that repeat a call for its backtrace.
            sql.push_str(" AND (eventClass IS NULL OR eventClass NOT IN (67, 68))");
        }
        sql
    };
    // CUDA names as nsys's reports print them, without a `_vNNNN` suffix.
    let cuda = "CASE WHEN substr(s.value, -6, 2) = '_v' \
                THEN substr(s.value, 1, length(s.value) - 6) ELSE COALESCE(s.value, '') END";
    let parts: Vec<String> = [
        ("CUPTI_ACTIVITY_KIND_RUNTIME", cuda),
        ("CUPTI_ACTIVITY_KIND_DRIVER", cuda),
        ("OSRT_API", "COALESCE(s.value, '')"),
    ]
    .into_iter()
    .filter(|(t, _)| has_table(db, t))
    .map(|(t, name)| of(t, name))
    .collect();
    let sql = format!(
        "SELECT tid, name, COUNT(*), SUM(MIN(t_end, {to}) - MAX(t_start, {from})) FROM ({}) GROUP BY tid, name",
        parts.join(" UNION ALL ")
    );
    let mut out = Calls::new();
    let mut stmt = db.prepare(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut rows = stmt.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        let (tid, name, n, time): (u32, String, i64, i64) = (
            r.get(0).unwrap(),
            r.get(1).unwrap(),
            r.get(2).unwrap(),
            r.get(3).unwrap(),
        );
        out.entry(tid).or_default().insert(name, (n as u64, time));
    }
    out
}

fn samples_in(db: &Connection, (from, to): (i64, i64), pid: u32) -> Samples {
    let mut out = Samples::new();
    if !has_table(db, "COMPOSITE_EVENTS") {
        return out;
    }
    let sql = format!(
        "SELECT e.globalTid & 16777215, COALESCE((SELECT s.value FROM SAMPLING_CALLCHAINS c
                 JOIN StringIds s ON s.id = c.symbol WHERE c.id = e.id AND c.stackDepth = 0), ''),
                COUNT(*)
         FROM COMPOSITE_EVENTS e
         WHERE e.start >= {from} AND e.start < {to} AND ((e.globalTid >> 24) & 16777215) = {pid}
         GROUP BY 1, 2"
    );
    let mut stmt = db.prepare(&sql).unwrap();
    let mut rows = stmt.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        let (tid, function, n): (u32, String, i64) =
            (r.get(0).unwrap(), r.get(1).unwrap(), r.get(2).unwrap());
        out.entry(tid).or_default().insert(function, n as u64);
    }
    out
}

/// The name with the greatest value (the first name of equals), among
/// those that are names.
fn most<T: Copy + Ord>(by_name: impl Iterator<Item = (String, T)>) -> Option<(String, T)> {
    let mut all: Vec<(String, T)> = by_name.filter(|(name, _)| !name.is_empty()).collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    all.into_iter().next()
}

#[test]
fn idle_stretches_tell_the_calls_and_samples_of_each_thread_as_sql_finds_them() {
    let mut os_calls_told = 0;
    let mut samples_told = 0;
    for name in [
        "h100_torch_graph_node.sqlite",
        "llama3_real_inference_simulation.sqlite",
        "icon_gpu.sqlite",
        "nsys-ai_h100_2gpu_1s.sqlite",
    ] {
        let Some(path) = fixture(name) else {
            return;
        };
        let db = open(&path);
        let run = report_file(&path, &ReportOptions::default(), &ReadOptions::default()).unwrap();
        let osrt_names: Vec<String> = match has_table(&db, "OSRT_API") {
            true => {
                let mut stmt = db
                    .prepare("SELECT DISTINCT s.value FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId")
                    .unwrap();
                let names = stmt.query_map([], |r| r.get(0)).unwrap();
                names.map(Result::unwrap).collect()
            }
            false => Vec::new(),
        };
        let mut stretches = 0;
        for gpu in &run.gpus {
            for s in &gpu.largest_idle {
                let Some(pid) = s.pid else { continue };
                stretches += 1;
                let calls = calls_in(&db, (s.start, s.end), pid);
                let samples = samples_in(&db, (s.start, s.end), pid);
                let activity = |tid: u32| {
                    let c: u64 = calls.get(&tid).map_or(0, |m| m.values().map(|v| v.0).sum());
                    let n: u64 = samples.get(&tid).map_or(0, |m| m.values().sum());
                    c + n
                };
                let what = format!("{name}: stretch {}..{} of pid {pid}", s.start, s.end);
                for t in &s.threads {
                    let by_name = calls.get(&t.tid).cloned().unwrap_or_default();
                    let expected_call = most(by_name.iter().map(|(n, v)| (n.clone(), v.1)));
                    assert_eq!(t.call, expected_call, "{what}: thread {}", t.tid);
                    let n: u64 = by_name.values().map(|v| v.0).sum();
                    assert_eq!(t.calls, n, "{what}: thread {} calls", t.tid);
                    let sampled = samples.get(&t.tid).cloned().unwrap_or_default();
                    assert_eq!(t.sampled, most(sampled.clone().into_iter()), "{what}");
                    assert_eq!(t.samples, sampled.values().sum::<u64>(), "{what}");
                    if let Some((call, _)) = &t.call {
                        os_calls_told += usize::from(osrt_names.contains(call));
                    }
                    samples_told += usize::from(t.sampled.is_some());
                }
                // The busiest threads are told, busiest first.
                let told: Vec<u64> = s.threads.iter().map(|t| activity(t.tid)).collect();
                assert!(told.windows(2).all(|w| w[0] >= w[1]), "{what}: {told:?}");
                if s.threads.len() == 4 {
                    let untold = calls
                        .keys()
                        .chain(samples.keys())
                        .filter(|tid| s.threads.iter().all(|t| t.tid != **tid))
                        .map(|tid| activity(*tid))
                        .max()
                        .unwrap_or(0);
                    assert!(untold <= told[3], "{what}: a busier thread untold");
                }
            }
        }
        assert!(stretches > 0, "{name}: no idle stretch");
        if name.starts_with("h100") {
            // The 5 s stretch: the main thread was in OS runtime calls.
            let longest = &run.gpus[0].largest_idle[0];
            let main = longest
                .threads
                .iter()
                .find(|t| Some(t.tid) == longest.pid)
                .expect("the main thread is told");
            let (call, _) = main.call.as_ref().unwrap();
            assert!(
                osrt_names.contains(call),
                "{name}: the main thread's {call}"
            );
        }
    }
    assert!(
        os_calls_told > 0 && samples_told > 0,
        "{os_calls_told} {samples_told}"
    );
}
