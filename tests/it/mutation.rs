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

/// Copies of `fixture`: one with the first three rows of `table` starting at
/// 9223372036854775000 (near i64::MAX, as one flipped bit or a broken
/// export gives: each now ends before it starts), and one without those
/// rows, which is what leaving them out must give.
fn far_starts(
    dir: &std::path::Path,
    fixture_name: &str,
    table: &str,
) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    far_times(dir, fixture_name, table, "start")
}

/// [`far_starts`], the time of `column` (start or end) set near i64::MAX.
fn far_times(
    dir: &std::path::Path,
    fixture_name: &str,
    table: &str,
    column: &str,
) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    far_times_where(dir, fixture_name, table, column, "1")
}

/// [`far_times`], of the first three rows where `condition` holds.
fn far_times_where(
    dir: &std::path::Path,
    fixture_name: &str,
    table: &str,
    column: &str,
    condition: &str,
) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let source = fixture(fixture_name)?;
    let copy = |name: &str| {
        let path = dir.join(name);
        std::fs::write(&path, std::fs::read(&source).unwrap()).unwrap();
        let db = Connection::open(&path).unwrap();
        // Exports name tables in foreign keys that they lack.
        db.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        (db, path)
    };
    let first_three =
        format!("rowid IN (SELECT rowid FROM {table} WHERE {condition} ORDER BY rowid LIMIT 3)");
    let (db, mutated) = copy("mutated.sqlite");
    let changed = db
        .execute(
            &format!("UPDATE {table} SET {column} = 9223372036854775000 WHERE {first_three}"),
            [],
        )
        .unwrap();
    assert_eq!(changed, 3);
    let (db, without) = copy("without.sqlite");
    assert_eq!(
        db.execute(&format!("DELETE FROM {table} WHERE {first_three}"), [])
            .unwrap(),
        3
    );
    Some((mutated, without))
}

/// The exports and tables of the issue: memsets of one, kernels of the other.
const FAR_STARTS: [(&str, &str); 2] = [
    ("dlprof_nsys_profile.sqlite", "CUPTI_ACTIVITY_KIND_MEMSET"),
    (
        "pipit_saxpy_mpi_cuda_rank0.sqlite",
        "CUPTI_ACTIVITY_KIND_KERNEL",
    ),
];

/// Runs the program with `args`, the export's path written as `{}`; its
/// status, standard output (with the export's name taken out) and error.
fn run_on(args: &[&str], export: &std::path::Path) -> (Option<i32>, String, String) {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{}", &export.display().to_string()))
        .collect();
    let out = std::process::Command::new(crate::support::program::BIN)
        .args(&args)
        .output()
        .unwrap();
    let name = export.file_name().unwrap().to_string_lossy().into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout)
        .replace(&export.display().to_string(), "EXPORT")
        .replace(&name, "EXPORT");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stdout, stderr)
}

/// A time near i64::MAX hung `report` (its time line doubled its buckets
/// past i64), skewed `analyze`'s gaps and made the totals of `series`,
/// `stats` and `compare` negative: each now leaves such events out, says
/// how many once, and answers as on the export without them (which draws
/// no such warning).
#[test]
fn far_starts_are_left_out_of_every_analysis_with_a_count() {
    for (name, table) in FAR_STARTS {
        let dir = tempfile::tempdir().unwrap();
        let Some((mutated, without)) = far_starts(dir.path(), name, table) else {
            return;
        };
        let untouched = fixture(name).unwrap();
        let untouched = untouched.to_str().unwrap();
        let series = [
            "series",
            "--param",
            "b=1",
            "{}",
            "--events",
            "kernel:.*",
            "api:.*",
            "memset",
            "nvtx-gpu:.*",
        ];
        // Every summary and trace that reads CUDA events.
        let summaries = "cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,\
                         cuda_gpu_mem_size_sum,cuda_gpu_sum,cuda_kern_exec_sum,\
                         nvtx_gpu_proj_sum,nvtx_kern_sum,cuda_api_trace,cuda_gpu_trace";
        let stats = ["stats", "--format", "csv", "--report", summaries, "{}"];
        let events = "3 events have times that cannot be right";
        let cases: [(&[&str], &str); 7] = [
            (&["report", "--format", "json", "{}"], events),
            (&["analyze", "{}"], events),
            (&series, "3 event(s) with times that cannot be right"),
            (&stats, events),
            (&["compare", "--format", "csv", "{}", untouched], events),
            (
                &["report", "--format", "json", "--step", ".*", "{}"],
                events,
            ),
            (&["report", "--step", ".*", "--measure-only", "{}"], events),
        ];
        for (args, warning) in cases {
            let (status, stdout, stderr) = run_on(args, &mutated);
            assert_eq!(status, Some(0), "{name} {args:?}: {stderr}");
            assert!(stderr.contains(warning), "{name} {args:?}: {stderr}");
            let warnings = stderr.lines().filter(|l| l.contains("warning"));
            assert_eq!(warnings.count(), 1, "{name} {args:?}: {stderr}");
            let (status, expected, stderr) = run_on(args, &without);
            assert_eq!(status, Some(0), "{name} {args:?}: {stderr}");
            assert!(
                !stderr.contains("cannot be right"),
                "{name} {args:?}: {stderr}"
            );
            assert_eq!(stdout, expected, "{name} {args:?}");
        }
    }
}

/// The summaries of NVTX ranges and OS runtime calls, and the CUDA API
/// and NVTX push/pop traces, took a range or call that ends before it starts (a start near
/// i64::MAX) as centuries long: each is left out, counted once, and the
/// answer is that of the export without it.
#[test]
fn far_starts_of_ranges_and_os_calls_are_left_out_of_stats_with_a_count() {
    let name = "h100_torch_graph_node.sqlite";
    // Push/pop ranges (59), not the domains' records before them.
    let cases = [
        (
            "NVTX_EVENTS",
            "eventType = 59",
            "nvtx_sum,nvtx_pushpop_sum,nvtx_pushpop_trace",
        ),
        ("OSRT_API", "1", "osrt_sum"),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", "1", "cuda_api_trace"),
    ];
    for (table, condition, summaries) in cases {
        let dir = tempfile::tempdir().unwrap();
        let Some((mutated, without)) = far_times_where(dir.path(), name, table, "start", condition)
        else {
            return;
        };
        let args = ["stats", "--format", "csv", "--report", summaries, "{}"];
        let (status, stdout, stderr) = run_on(&args, &mutated);
        assert_eq!(status, Some(0), "{table}: {stderr}");
        assert!(
            stderr.contains("3 events have times that cannot be right"),
            "{table}: {stderr}"
        );
        let warnings = stderr.lines().filter(|l| l.contains("warning"));
        assert_eq!(warnings.count(), 1, "{table}: {stderr}");
        let (status, expected, stderr) = run_on(&args, &without);
        assert_eq!(status, Some(0), "{table}: {stderr}");
        assert!(!stderr.contains("cannot be right"), "{table}: {stderr}");
        assert_eq!(stdout, expected, "{table}");
    }
}

/// Kernels that end far past the capture (their start kept) made the GPU
/// busy time of measured steps centuries long: they are left out, counted.
#[test]
fn far_ends_are_left_out_of_steps_with_a_count() {
    let (name, table) = FAR_STARTS[1];
    let dir = tempfile::tempdir().unwrap();
    let Some((mutated, without)) = far_times(dir.path(), name, table, "end") else {
        return;
    };
    let measured = ["report", "--step", ".*", "--measure-only", "{}"];
    for args in [
        &measured[..],
        &["report", "--format", "json", "--step", ".*", "{}"],
    ] {
        let (status, stdout, stderr) = run_on(args, &mutated);
        assert_eq!(status, Some(0), "{args:?}: {stderr}");
        assert!(
            stderr.contains("3 events have times that cannot be right"),
            "{args:?}: {stderr}"
        );
        let warnings = stderr.lines().filter(|l| l.contains("warning"));
        assert_eq!(warnings.count(), 1, "{args:?}: {stderr}");
        let (_, expected, _) = run_on(args, &without);
        assert_eq!(stdout, expected, "{args:?}");
    }
}

/// Every command ends on such an export, with status 0 (`convert` writes
/// the events as instants, counted, as before).
#[test]
fn every_command_ends_on_far_starts() {
    for (name, table) in FAR_STARTS {
        let dir = tempfile::tempdir().unwrap();
        let Some((mutated, _)) = far_starts(dir.path(), name, table) else {
            return;
        };
        let trace = dir.path().join("t.perfetto-trace");
        let merged = dir.path().join("m.perfetto-trace");
        let (trace, merged) = (trace.to_str().unwrap(), merged.to_str().unwrap());
        let commands: [&[&str]; 8] = [
            &["convert", "{}", "-o", trace],
            &["stats", "{}"],
            &["analyze", "{}"],
            &["report", "{}"],
            &["report", "--format", "json", "--step", ".*", "{}"],
            &[
                "series",
                "--param",
                "b=1",
                "{}",
                "--events",
                "kernel:.*",
                "memset",
            ],
            &["compare", "{}", "{}"],
            &["merge", "{}", "{}", "-o", merged],
        ];
        for args in commands {
            let (status, _, stderr) = run_on(args, &mutated);
            assert_eq!(status, Some(0), "{name} {args:?}: {stderr}");
            assert!(!stderr.contains("panicked"), "{name} {args:?}: {stderr}");
            if args[0] == "convert" {
                assert!(
                    stderr.contains("3 events end before they start"),
                    "{name}: {stderr}"
                );
            }
        }
    }
}
