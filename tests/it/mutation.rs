//! Mutation: chosen bits flipped in chosen rows of a copy of a real export,
//! as damage on disk or in transit would. Values a trace cannot hold (a CPU
//! number trace_processor refuses the whole trace for) are left out with a
//! warning that counts them; the trace still loads, without an error.

use nsys2perfetto::Options;
use rusqlite::Connection;

use crate::support::convert::convert;
use crate::support::fixtures::fixture;

/// Flips `bit` of `column` in the `nth` row (by rowid) of `table`.
fn flip(db: &Connection, table: &str, column: &str, nth: i64, bit: u32) {
    let rowid: i64 = db
        .query_row(
            &format!("SELECT rowid FROM {table} ORDER BY rowid LIMIT 1 OFFSET ?1"),
            [nth],
            |r| r.get(0),
        )
        .unwrap();
    let value: i64 = db
        .query_row(
            &format!("SELECT \"{column}\" FROM {table} WHERE rowid = ?1"),
            [rowid],
            |r| r.get(0),
        )
        .unwrap();
    db.execute(
        &format!("UPDATE {table} SET \"{column}\" = ?1 WHERE rowid = ?2"),
        [value ^ (1i64 << bit), rowid],
    )
    .unwrap();
}

fn count(db: &Connection, sql: &str) -> u64 {
    db.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

#[test]
fn flipped_bits_in_scheduling_and_samples_never_make_the_trace_unloadable() {
    let Some(source) = fixture("nvtx_c_full.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("mutated.sqlite");
    std::fs::copy(&source, &export).unwrap();
    let mut perms = std::fs::metadata(&export).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&export, perms).unwrap();
    let db = Connection::open(&export).unwrap();
    let bad_cpu = "(cpu < 0 OR cpu >= 1024)";
    let before = count(
        &db,
        &format!("SELECT COUNT(*) FROM SCHED_EVENTS WHERE {bad_cpu}"),
    );
    assert_eq!(before, 0, "the source is sound");
    // CPU numbers: over 1023, negative (the sign bit), and past 32 bits
    // (which a cast to u32 would wrap back to a plausible CPU).
    flip(&db, "SCHED_EVENTS", "cpu", 10, 10);
    flip(&db, "SCHED_EVENTS", "cpu", 20, 63);
    flip(&db, "SCHED_EVENTS", "cpu", 30, 32);
    flip(&db, "SCHED_EVENTS", "cpu", 31, 31);
    flip(&db, "COMPOSITE_EVENTS", "cpu", 5, 11);
    flip(&db, "COMPOSITE_EVENTS", "cpu", 6, 63);
    // Times: one far in the future (a trace holds it), one negative.
    flip(&db, "SCHED_EVENTS", "start", 40, 62);
    flip(&db, "SCHED_EVENTS", "start", 50, 63);
    // Ids: a pid bit and a VM bit of a thread.
    flip(&db, "SCHED_EVENTS", "globalTid", 60, 30);
    flip(&db, "SCHED_EVENTS", "globalTid", 61, 50);

    let sched_bad = count(
        &db,
        &format!("SELECT COUNT(*) FROM SCHED_EVENTS WHERE {bad_cpu} AND start >= 0"),
    );
    let sched_negative = count(&db, "SELECT COUNT(*) FROM SCHED_EVENTS WHERE start < 0");
    let sched_all = count(&db, "SELECT COUNT(*) FROM SCHED_EVENTS");
    let samples_bad = count(
        &db,
        &format!("SELECT COUNT(*) FROM COMPOSITE_EVENTS WHERE {bad_cpu} AND start >= 0"),
    );
    let samples_all = count(
        &db,
        "SELECT COUNT(*) FROM COMPOSITE_EVENTS WHERE start >= 0",
    );
    drop(db);
    assert_eq!((sched_bad, sched_negative, samples_bad), (4, 1, 2));

    // `convert` has trace_processor import the trace (where ../shared has
    // it): an import error or a number unlike the checker's fails the test.
    let (trace, summary) = convert(&export, &Options::default());
    trace.assert_valid();
    assert_eq!(summary.sched_on_bad_cpu, sched_bad);
    assert_eq!(summary.samples_on_bad_cpu, samples_bad);
    assert_eq!(summary.before_time_zero.get("sched"), Some(&sched_negative));
    assert_eq!(summary.sched_events, sched_all - sched_bad - sched_negative);
    assert_eq!(
        summary.cpu_samples, samples_all,
        "samples stay, without their CPU"
    );
    let warnings = summary.warnings();
    for (n, what) in [
        (sched_bad, "scheduling events name a CPU outside 0..1023"),
        (samples_bad, "CPU samples name a CPU outside 0..1023"),
    ] {
        let line = format!("{n} {what}");
        assert!(
            warnings.iter().any(|w| w.starts_with(&line)),
            "{line}: {warnings:?}"
        );
    }
    assert!(trace.samples.iter().all(|s| s.cpu.is_none_or(|c| c < 1024)));
}
