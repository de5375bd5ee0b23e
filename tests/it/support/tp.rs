//! Perfetto's own trace_processor (../shared/tools/trace_processor_shell) as
//! the judge of a trace: it imports the trace as the UI does, and what it
//! built must be what the checker decoded from the same bytes, without one
//! import error.
//!
//! Each run re-parses the whole trace, so one query gathers every number:
//! rows of (kind, key, name, n, Σts in two halves, Σdur in two halves, open).
//! Sums are taken in 32-bit halves: a long trace's Σts overflows SQLite's i64.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::process::Command;

use super::checker::Checked;

const QUERY: &str = "
SELECT 'stat' AS kind,
       name || COALESCE('[' || idx || ']', '') || ' (' || severity || ', ' || source || ')' AS key,
       NULL AS name, value AS n,
       NULL AS ts_hi, NULL AS ts_lo, NULL AS dur_hi, NULL AS dur_lo, NULL AS open
FROM stats WHERE value > 0 AND severity IN ('error', 'data_loss')
UNION ALL
SELECT 'slices', COALESCE(category, ''), NULL, COUNT(*),
       SUM(ts >> 32), SUM(ts & 4294967295),
       SUM(CASE WHEN dur >= 0 THEN dur >> 32 END), SUM(CASE WHEN dur >= 0 THEN dur & 4294967295 END),
       SUM(dur < 0)
FROM slice GROUP BY category
UNION ALL
SELECT 'flows', '', NULL, COUNT(*), NULL, NULL, NULL, NULL, NULL FROM flow
UNION ALL
SELECT 'thread', 'pid ' || COALESCE(p.pid, '?') || ' tid ' || t.tid, t.name, COUNT(*),
       NULL, NULL, NULL, NULL, NULL
FROM slice s JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid)
     LEFT JOIN process p USING (upid)
GROUP BY t.utid
UNION ALL
SELECT 'sched', '', NULL, COUNT(*),
       SUM(s.ts >> 32), SUM(s.ts & 4294967295),
       SUM(CASE WHEN s.dur >= 0 THEN s.dur >> 32 END),
       SUM(CASE WHEN s.dur >= 0 THEN s.dur & 4294967295 END),
       SUM(s.dur < 0)
FROM sched s JOIN thread t USING (utid) WHERE t.tid != 0
UNION ALL
SELECT 'thread_state', '', NULL, COUNT(*),
       SUM(ts >> 32), SUM(ts & 4294967295),
       SUM(CASE WHEN dur >= 0 THEN dur >> 32 END), SUM(CASE WHEN dur >= 0 THEN dur & 4294967295 END),
       SUM(dur < 0)
FROM thread_state
UNION ALL
SELECT 'perf_sample', '', NULL, COUNT(*), SUM(ts >> 32), SUM(ts & 4294967295),
       NULL, NULL, NULL
FROM perf_sample
UNION ALL
SELECT 'counter', '', NULL, COUNT(*), SUM(ts >> 32), SUM(ts & 4294967295), NULL, NULL, NULL
FROM counter
";

/// How many rows, their Σts, the Σdur of those that end, and how many do
/// not (trace_processor's `dur = -1`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub count: u64,
    pub ts: u128,
    pub dur: u128,
    pub open: u64,
}

impl Totals {
    fn of(rows: impl IntoIterator<Item = (u64, Option<u64>)>) -> Totals {
        rows.into_iter()
            .fold(Totals::default(), |t, (ts, dur)| Totals {
                count: t.count + 1,
                ts: t.ts + u128::from(ts),
                dur: t.dur + u128::from(dur.unwrap_or(0)),
                open: t.open + u64::from(dur.is_none()),
            })
    }
}

impl fmt::Display for Totals {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "{} rows, Σts {}, Σdur {}, {} without end",
            self.count, self.ts, self.dur, self.open
        )
    }
}

/// What trace_processor made of a trace, or what the checker expects it to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Imported {
    /// Non-zero `stats` of severity error or data_loss: "name[idx] (severity, source)" → value.
    pub problems: BTreeMap<String, u64>,
    /// Slices per category.
    pub slices: BTreeMap<String, Totals>,
    pub flows: u64,
    /// Threads with slices: "pid P tid T" → (thread name, slices).
    pub threads: BTreeMap<String, (Option<String>, u64)>,
    /// `sched` slices of threads other than the idle one.
    pub sched: Totals,
    pub thread_states: Totals,
    pub perf_samples: Totals,
    pub counters: Totals,
}

/// Imports `trace` with the trace_processor at `binary`.
pub fn import(binary: &Path, trace: &Path) -> Imported {
    let out = Command::new(binary)
        .arg("query")
        .arg(trace)
        .arg(QUERY)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "trace_processor failed on {}: {stderr}",
        trace.display()
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8 CSV");
    let rows = super::nsys::csv_rows(&text);
    let header = [
        "kind", "key", "name", "n", "ts_hi", "ts_lo", "dur_hi", "dur_lo", "open",
    ];
    assert_eq!(
        rows.first()
            .map(|h| h.iter().map(String::as_str).collect::<Vec<_>>()),
        Some(header.to_vec()),
        "trace_processor's answer for {}: {text}{stderr}",
        trace.display()
    );
    let mut imported = Imported::default();
    for row in &rows[1..] {
        let number = |i: usize| -> i128 {
            match row[i].as_str() {
                "[NULL]" => 0,
                v => v
                    .parse()
                    .unwrap_or_else(|e| panic!("{}: {e} in {row:?}", header[i])),
            }
        };
        let unsigned = |v: i128| -> u128 {
            u128::try_from(v).unwrap_or_else(|_| panic!("negative sum in {row:?}"))
        };
        let totals = Totals {
            count: number(3) as u64,
            ts: unsigned((number(4) << 32) + number(5)),
            dur: unsigned((number(6) << 32) + number(7)),
            open: number(8) as u64,
        };
        let key = row[1].clone();
        match row[0].as_str() {
            "stat" => {
                imported.problems.insert(key, totals.count);
            }
            "slices" => {
                imported.slices.insert(key, totals);
            }
            "flows" => imported.flows = totals.count,
            "thread" => {
                let name = Some(row[2].clone()).filter(|n| n != "[NULL]");
                imported.threads.insert(key, (name, totals.count));
            }
            "sched" => imported.sched = totals,
            "thread_state" => imported.thread_states = totals,
            "perf_sample" => imported.perf_samples = totals,
            "counter" => imported.counters = totals,
            kind => panic!("unexpected row kind {kind} from trace_processor"),
        }
    }
    imported
}

/// What trace_processor should make of the trace the checker decoded as `c`.
pub fn expected(c: &Checked) -> Imported {
    let mut slices: BTreeMap<String, Totals> = BTreeMap::new();
    let mut threads: BTreeMap<String, (Option<String>, u64)> = BTreeMap::new();
    for s in &c.slices {
        let t = slices.entry(s.category.clone()).or_default();
        *t = Totals {
            count: t.count + 1,
            ts: t.ts + u128::from(s.ts),
            dur: t.dur + u128::from(s.dur),
            open: 0,
        };
        if let Some(thread) = c.thread_of(s.track) {
            let pid = thread.pid.map_or("?".to_owned(), |p| p.to_string());
            let key = format!("pid {pid} tid {}", thread.tid.unwrap_or(0));
            let entry = threads
                .entry(key)
                .or_insert_with(|| (thread.thread_name.clone(), 0));
            entry.1 += 1;
        }
    }
    Imported {
        problems: BTreeMap::new(),
        slices,
        flows: c.flows.len() as u64,
        threads,
        sched: Totals::of(c.sched.iter().map(|s| (s.ts, s.dur))),
        thread_states: Totals::of(c.thread_states.iter().map(|s| (s.ts, s.dur))),
        perf_samples: Totals::of(c.samples.iter().map(|s| (s.ts, Some(0)))),
        counters: Totals::of(c.counters.iter().map(|s| (s.ts, Some(0)))),
    }
}

/// The differences between what trace_processor imported and what was expected,
/// one line each (empty: they agree).
pub fn differences(imported: &Imported, expected: &Imported) -> Vec<String> {
    let mut out = Vec::new();
    for (stat, value) in &imported.problems {
        out.push(format!("import problem: {stat} = {value}"));
    }
    let categories: std::collections::BTreeSet<&String> = imported
        .slices
        .keys()
        .chain(expected.slices.keys())
        .collect();
    for category in categories {
        let (got, want) = (
            imported.slices.get(category).copied().unwrap_or_default(),
            expected.slices.get(category).copied().unwrap_or_default(),
        );
        if got != want {
            out.push(format!(
                "slices of category {category:?}: trace_processor has {got}; the checker {want}"
            ));
        }
    }
    if imported.flows != expected.flows {
        out.push(format!(
            "flows: trace_processor has {}; the checker {}",
            imported.flows, expected.flows
        ));
    }
    let threads: std::collections::BTreeSet<&String> = imported
        .threads
        .keys()
        .chain(expected.threads.keys())
        .collect();
    for thread in threads {
        let (got, want) = (imported.threads.get(thread), expected.threads.get(thread));
        if got != want {
            out.push(format!(
                "{thread} (name, slices): trace_processor has {got:?}; the checker {want:?}"
            ));
        }
        if got.is_some_and(|(name, _)| name.as_deref().is_none_or(str::is_empty)) {
            out.push(format!("{thread} has slices but no name"));
        }
    }
    for (what, got, want) in [
        (
            "sched (threads other than idle)",
            imported.sched,
            expected.sched,
        ),
        (
            "thread_state",
            imported.thread_states,
            expected.thread_states,
        ),
        ("perf_sample", imported.perf_samples, expected.perf_samples),
        ("counter", imported.counters, expected.counters),
    ] {
        if got != want {
            out.push(format!(
                "{what}: trace_processor has {got}; the checker {want}"
            ));
        }
    }
    out
}

/// Imports `trace` with the trace_processor at `binary` and fails on any
/// import problem or any difference from what the checker decoded as `c`;
/// `what` names the trace in the failure (its source, say).
pub fn assert_agrees(binary: &Path, trace: &Path, c: &Checked, what: &str) -> Imported {
    let imported = import(binary, trace);
    let differences = differences(&imported, &expected(c));
    assert!(
        differences.is_empty(),
        "trace_processor on the trace of {what}:\n  {}",
        differences.join("\n  ")
    );
    imported
}
