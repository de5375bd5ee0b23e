//! The CPU side of every real export that has it: OS runtime calls with their
//! stacks, CPU samples with theirs, and context switches, compared with SQL
//! over the source written here. Fresh clones without ../shared skip.

use std::collections::BTreeMap;

use crate::support::checker::Checked;
use crate::support::convert::convert;
use crate::support::sched::SchedSlice;
use crate::support::source::{has_table, open, source_totals};
use rusqlite::Connection;

/// A call chain as "outermost;...;innermost" function names, by SQL.
fn chains(db: &Connection, table: &str) -> BTreeMap<i64, String> {
    let mut out = BTreeMap::new();
    if !has_table(db, table) {
        return out;
    }
    let sql = format!(
        "SELECT c.id, COALESCE(NULLIF(s.value, ''), '[unknown]') FROM {table} c
         LEFT JOIN StringIds s ON s.id = c.symbol ORDER BY c.id, c.stackDepth DESC"
    );
    let mut stmt = db.prepare(&sql).unwrap();
    let mut rows = stmt.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        let (id, f): (i64, String) = (r.get(0).unwrap(), r.get(1).unwrap());
        let chain: &mut String = out.entry(id).or_default();
        if !chain.is_empty() {
            chain.push(';');
        }
        chain.push_str(&f);
    }
    out
}

/// (ts, tid, chain) of the slices of `category` that have a stack.
fn slice_stacks(trace: &Checked, category: &str) -> Vec<(u64, u32, String)> {
    let mut out: Vec<(u64, u32, String)> = trace
        .slices
        .iter()
        .filter(|s| s.category == category && !s.callstack.is_empty())
        .map(|s| {
            let tid = trace.thread_of(s.track).and_then(|t| t.tid).unwrap() as u32;
            (s.ts, tid, joined(&s.callstack))
        })
        .collect();
    out.sort();
    out
}

fn joined(stack: &[crate::support::stacks::NamedFrame]) -> String {
    stack
        .iter()
        .map(|f| f.function.as_str())
        .collect::<Vec<_>>()
        .join(";")
}

/// (start, tid, chain) of the calls in `table` with a stack in `chains_table`, by SQL.
fn call_stacks(db: &Connection, table: &str, chains_table: &str) -> Vec<(u64, u32, String)> {
    if !crate::support::source::has_column(db, table, "callchainId") {
        return Vec::new();
    }
    let chains = chains(db, chains_table);
    let sql = format!(
        "SELECT start, globalTid & 16777215, callchainId FROM {table} WHERE start >= 0 AND callchainId IS NOT NULL"
    );
    let mut stmt = db.prepare(&sql).unwrap();
    let mut out: Vec<(u64, u32, String)> = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .unwrap()
        .filter_map(|r| {
            let (start, tid, id) = r.unwrap();
            chains
                .get(&id)
                .map(|c| (start as u64, tid as u32, c.clone()))
        })
        .collect();
    out.sort();
    out
}

/// (start, tid, chain) of every CPU sample, by SQL.
fn sample_stacks(db: &Connection) -> Vec<(u64, u32, String)> {
    let chains = chains(db, "SAMPLING_CALLCHAINS");
    let mut stmt = db
        .prepare("SELECT id, start, globalTid & 16777215 FROM COMPOSITE_EVENTS WHERE start >= 0")
        .unwrap();
    let mut out: Vec<(u64, u32, String)> = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .unwrap()
        .map(|r| {
            let (id, start, tid) = r.unwrap();
            (
                start as u64,
                tid as u32,
                chains.get(&id).cloned().unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

/// A thread's time on a CPU: from its sched-in to the next sched-out of that
/// CPU (open if none), by SQL and a walk over each CPU's events.
fn sched_intervals(db: &Connection) -> Vec<SchedSlice> {
    let mut stmt = db
        .prepare("SELECT cpu, start, isSchedIn, globalTid & 16777215 FROM SCHED_EVENTS WHERE start >= 0 ORDER BY cpu, start, rowid")
        .unwrap();
    let rows: Vec<(u32, u64, bool, i32)> = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, i64>(0)? as u32,
                r.get::<_, i64>(1)? as u64,
                r.get::<_, i64>(2)? != 0,
                r.get::<_, i64>(3)? as i32,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = Vec::new();
    let mut running: Option<(u32, u64, i32)> = None;
    for (cpu, ts, sched_in, tid) in rows {
        // Whoever ran on this CPU stops at its next event; on a new CPU, the
        // last one of the previous CPU never stopped.
        if let Some((c, start, t)) = running.take() {
            out.push(SchedSlice {
                cpu: c,
                ts: start,
                dur: (c == cpu).then(|| ts - start),
                tid: t,
            });
        }
        if sched_in {
            running = Some((cpu, ts, tid));
        }
    }
    if let Some((cpu, ts, tid)) = running {
        out.push(SchedSlice {
            cpu,
            ts,
            dur: None,
            tid,
        });
    }
    out.sort();
    out
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn osrt_samples_and_scheduling_match_the_source() {
    let Some(files) = crate::support::fixtures::all() else {
        return;
    };
    let mut checked = [0; 3];
    let mut cuda_stacks = 0;
    for input in files {
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let converted = crate::support::converted::converted(&input);
        let (trace, summary) = (&converted.trace, &converted.summary);
        trace.assert_valid();
        let db = open(&input);

        assert_eq!(
            trace.totals("osrt"),
            source_totals(&db, "OSRT_API"),
            "{name}: osrt (count, Σts, Σdur)"
        );
        if has_table(&db, "OSRT_API") {
            let ours = slice_stacks(trace, "osrt");
            let expected = call_stacks(&db, "OSRT_API", "OSRT_CALLCHAINS");
            assert_eq!(ours, expected, "{name}: osrt stacks");
            checked[0] += 1;
        }
        if has_table(&db, "CUPTI_ACTIVITY_KIND_RUNTIME") {
            let ours = slice_stacks(trace, "cuda_api");
            let expected = call_stacks(&db, "CUPTI_ACTIVITY_KIND_RUNTIME", "CUDA_CALLCHAINS");
            assert_eq!(ours, expected, "{name}: CUDA API backtraces");
            cuda_stacks += expected.len();
        }

        if has_table(&db, "COMPOSITE_EVENTS") {
            let mut ours: Vec<(u64, u32, String)> = trace
                .samples
                .iter()
                .map(|s| (s.ts, s.tid, joined(&s.stack)))
                .collect();
            ours.sort();
            let expected = sample_stacks(&db);
            assert_eq!(
                ours.len(),
                expected.len(),
                "{name}: one sample per COMPOSITE_EVENTS row"
            );
            assert_eq!(ours, expected, "{name}: samples and their stacks");
            assert_eq!(
                summary.cpu_samples,
                expected.len() as u64,
                "{name}: summary"
            );
            checked[1] += 1;
        } else {
            assert!(trace.samples.is_empty(), "{name}: samples from nowhere");
        }

        if has_table(&db, "SCHED_EVENTS") {
            let mut ours = trace.sched.clone();
            ours.sort();
            assert_eq!(ours, sched_intervals(&db), "{name}: sched intervals");
            checked[2] += 1;
        } else {
            assert!(trace.sched.is_empty(), "{name}: scheduling from nowhere");
        }
        eprintln!("{name}: {summary}");
    }
    assert!(
        checked.iter().all(|&n| n >= 3),
        "fixtures with osrt, samples, sched: {checked:?}"
    );
    assert!(cuda_stacks > 0, "a fixture has CUDA API backtraces");
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn excluded_parts_are_left_out() {
    let Some(files) = crate::support::fixtures::all() else {
        return;
    };
    let input = files
        .iter()
        .find(|f| f.ends_with("nvtx_c_full.sqlite"))
        .expect("nvtx_c_full");
    let mut options = nsys2perfetto::Options::default();
    for part in [
        nsys2perfetto::Part::Osrt,
        nsys2perfetto::Part::Samples,
        nsys2perfetto::Part::Sched,
    ] {
        options.parts = options.parts.without(part);
    }
    let (trace, summary) = convert(input, &options);
    trace.assert_valid();
    assert_eq!(trace.count("osrt"), 0);
    assert!(trace.samples.is_empty() && trace.sched.is_empty());
    assert!(trace.count("nvtx") > 0, "NVTX stays");
    assert_eq!(summary.cpu_samples + summary.sched_events, 0);

    let converted = crate::support::converted::converted(input);
    let (full, _) = (&converted.trace, &converted.summary);
    assert!(full.count("osrt") > 0 && !full.samples.is_empty() && !full.sched.is_empty());
}
