//! An export whose event table lacks a column its rows need (renamed here,
//! one at a time, in a copy of a real export): `convert` leaves the table out
//! and says so. Every analysing command reads its tables through the same
//! probe: an answer that changes for want of the table says so on standard
//! error (naming the table and the column) and marks itself incomplete in
//! its output (text, CSV, JSON, pages), never silently smaller. On the
//! untouched export nothing is said or marked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rusqlite::Connection;

use crate::support::fixtures::fixture;
use crate::support::program::program;

/// Every summary `stats` computes.
const SUMMARIES: &str = "cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,\
cuda_gpu_mem_size_sum,cuda_gpu_sum,nvtx_sum,nvtx_pushpop_sum,nvtx_startend_sum,osrt_sum,\
cuda_kern_exec_sum,openacc_sum,um_cpu_page_faults_sum,openmp_sum,nvtx_gpu_proj_sum,nvtx_kern_sum,\
cuda_api_trace";

/// Each command, in each of its output formats, on `x.sqlite`.
fn commands() -> Vec<Vec<&'static str>> {
    let series = [
        "series",
        "--param",
        "p=1",
        "x.sqlite",
        "--events",
        "kernel:.*",
        "api:.*",
        "nvtx:.*",
        "nvtx-gpu:.*",
    ];
    vec![
        vec!["report", "x.sqlite"],
        vec!["report", "--format", "json", "x.sqlite"],
        vec!["report", "--format", "html", "x.sqlite"],
        vec!["report", "--step", "step*", "x.sqlite"],
        vec!["report", "--step", "step*", "--format", "json", "x.sqlite"],
        vec!["report", "--step", "step*", "--measure-only", "x.sqlite"],
        vec!["analyze", "x.sqlite"],
        vec!["analyze", "--format", "csv", "x.sqlite"],
        vec!["analyze", "--format", "json", "x.sqlite"],
        vec!["stats", "--report", SUMMARIES, "x.sqlite"],
        vec![
            "stats", "--format", "csv", "--report", SUMMARIES, "x.sqlite",
        ],
        vec![
            "stats", "--format", "json", "--report", SUMMARIES, "x.sqlite",
        ],
        series.to_vec(),
        vec!["compare", "x.sqlite", "x.sqlite"],
        vec!["compare", "--format", "json", "x.sqlite", "x.sqlite"],
        vec!["compare", "--summary", "x.sqlite", "x.sqlite"],
    ]
}

/// What a command printed.
struct Answer {
    stdout: String,
    stderr: String,
}

impl Answer {
    /// Whether the output marks itself incomplete, in any of its formats.
    fn marked(&self) -> bool {
        self.stdout.to_lowercase().contains("incomplete")
    }
}

fn run(dir: &Path, args: &[&str]) -> Answer {
    let out = program().current_dir(dir).args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?} failed: {stderr}");
    Answer {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr,
    }
}

/// Every summary and trace report `stats` makes.
const EVERY_STATS_REPORT: &str = "cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,\
cuda_gpu_mem_size_sum,cuda_gpu_sum,nvtx_sum,nvtx_pushpop_sum,nvtx_startend_sum,osrt_sum,\
cuda_kern_exec_sum,openacc_sum,um_cpu_page_faults_sum,openmp_sum,nvtx_gpu_proj_sum,nvtx_kern_sum,\
cuda_api_trace,cuda_gpu_trace,nvtx_gpu_proj_trace,nvtx_pushpop_trace";

/// A command of the sweep, by its arguments, and whether its answer is the
/// trace it writes (`t.json`) rather than its standard output.
fn sweep_commands() -> Vec<(Vec<&'static str>, bool)> {
    vec![
        (vec!["report", "--format", "json", "x.sqlite"], false),
        (
            vec!["report", "--step", "step*", "--format", "json", "x.sqlite"],
            false,
        ),
        (
            vec!["analyze", "--format", "json", "--rows", "0", "x.sqlite"],
            false,
        ),
        (
            vec![
                "stats",
                "--format",
                "json",
                "--report",
                EVERY_STATS_REPORT,
                "x.sqlite",
            ],
            false,
        ),
        (
            vec![
                "series",
                "--param",
                "p=1",
                "x.sqlite",
                "--events",
                "kernel:.*",
                "api:.*",
                "nvtx:.*",
                "nvtx-gpu:.*",
            ],
            false,
        ),
        (
            vec!["compare", "--format", "json", "x.sqlite", "x.sqlite"],
            false,
        ),
        (vec!["convert", "x.sqlite", "-o", "t.json", "--force"], true),
    ]
}

/// What a command of the sweep answered: its exit status, its answer
/// (standard output, or the trace it wrote) and standard error.
struct Swept {
    code: Option<i32>,
    answer: Vec<u8>,
    stderr: String,
}

fn sweep_run(dir: &Path, args: &[&str], writes_trace: bool) -> Swept {
    let out = program().current_dir(dir).args(args).output().unwrap();
    let trace = dir.join("t.json");
    let answer = match writes_trace {
        true => std::fs::read(&trace).unwrap_or_default(),
        false => out.stdout,
    };
    let _ = std::fs::remove_file(&trace);
    Swept {
        code: out.status.code(),
        answer,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The (table, column) pairs that some real export lacks, its table being
/// there: a version's normal shape, whose answers may differ without a word.
fn lacking_in_some_real_export() -> BTreeSet<(String, String)> {
    let mut every: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut lacking = BTreeSet::new();
    let exports = crate::support::fixtures::all().unwrap_or_default();
    let schemas: Vec<BTreeMap<String, BTreeSet<String>>> =
        exports.iter().map(|e| schema_of(e)).collect();
    for schema in &schemas {
        for (table, columns) in schema {
            every
                .entry(table.clone())
                .or_default()
                .extend(columns.clone());
        }
    }
    for schema in &schemas {
        for (table, columns) in schema {
            for column in &every[table] {
                if !columns.contains(column) {
                    lacking.insert((table.clone(), column.clone()));
                }
            }
        }
    }
    lacking
}

/// Each table of `export` and its columns.
fn schema_of(export: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let db =
        Connection::open_with_flags(export, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p \
             WHERE m.type = 'table'",
        )
        .unwrap();
    let mut schema: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for row in stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
    {
        let (table, column) = row.unwrap();
        schema.entry(table).or_default().insert(column);
    }
    schema
}

/// Renames, one at a time, every column of every table with rows of a real
/// export (the enumerations' tables aside), and runs each command on the
/// copy: where its answer differs from the untouched export's, it says so
/// (a warning naming the table and the column, and "incomplete" in its
/// output; or a one-line error naming both), unless some real export lacks
/// that column too, which is a version's normal shape.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn every_command_says_so_when_a_renamed_column_changes_its_answer() {
    let Some(source) = fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let untouched_dir = tempfile::tempdir().unwrap();
    let untouched = untouched_dir.path().join("x.sqlite");
    std::fs::copy(&source, &untouched).unwrap();
    let version_shaped = lacking_in_some_real_export();
    let columns: Vec<(String, String)> = {
        let db = Connection::open(&untouched).unwrap();
        schema_of(&untouched)
            .into_iter()
            .filter(|(table, _)| !table.starts_with("ENUM_"))
            .filter(|(table, _)| {
                let sql = format!("SELECT EXISTS (SELECT 1 FROM \"{table}\")");
                db.query_row(&sql, [], |r| r.get::<_, bool>(0)).unwrap()
            })
            .flat_map(|(table, columns)| columns.into_iter().map(move |c| (table.clone(), c)))
            .collect()
    };
    assert!(columns.len() > 200, "the fixture has its tables");
    let commands = sweep_commands();
    let whole: Vec<Swept> = commands
        .iter()
        .map(|(args, trace)| sweep_run(untouched_dir.path(), args, *trace))
        .collect();
    for ((args, _), whole) in commands.iter().zip(&whole) {
        assert_eq!(whole.code, Some(0), "{args:?}: {}", whole.stderr);
        assert!(
            !whole.stderr.contains("column"),
            "{args:?}: {}",
            whole.stderr
        );
    }

    // Two at once: most of a run is the program's own work on one core.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let changed = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((table, column)) = columns.get(at) else {
                    break;
                };
                let dir = tempfile::tempdir().unwrap();
                let export = dir.path().join("x.sqlite");
                std::fs::copy(&untouched, &export).unwrap();
                let renamed =
                    format!("ALTER TABLE \"{table}\" RENAME COLUMN \"{column}\" TO \"{column}_x\"");
                Connection::open(&export)
                    .unwrap()
                    .execute_batch(&renamed)
                    .unwrap();
                for ((args, trace), whole) in commands.iter().zip(&whole) {
                    let swept = sweep_run(dir.path(), args, *trace);
                    if (swept.code, &swept.answer) == (whole.code, &whole.answer) {
                        continue;
                    }
                    changed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let named = |line: &str| line.contains(table.as_str()) && line.contains(column.as_str());
                    let told = match swept.code {
                        Some(0) if version_shaped.contains(&(table.clone(), column.clone())) => true,
                        Some(0) => {
                            let warned = swept.stderr.lines().any(|line| {
                                line.contains("warning")
                                    && named(line)
                                    && line.contains(&format!("no {column} column"))
                            });
                            let marked = *trace
                                || String::from_utf8_lossy(&swept.answer)
                                    .to_lowercase()
                                    .contains("incomplete");
                            warned && marked
                        }
                        _ => {
                            let errors: Vec<&str> =
                                swept.stderr.lines().filter(|l| l.contains("error")).collect();
                            errors.len() == 1 && named(errors[0])
                        }
                    };
                    if !told {
                        failures.lock().unwrap().push(format!(
                            "{table}.{column}: {args:?} answers otherwise (exit {:?}) and does not say so: {}",
                            swept.code, swept.stderr
                        ));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The sweep reaches what it means to: many renames change answers.
    assert!(changed.into_inner() > 100);
}

/// A copy of the kernel-rich fixture in `dir` (as `x.sqlite`) with the
/// kernel table's `column` renamed, and the kernels' count; `None` without
/// ../shared.
fn kernels_without(dir: &Path, column: &str) -> Option<i64> {
    let source = fixture("h100_torch_graph_node.sqlite")?;
    let export = dir.join("x.sqlite");
    std::fs::copy(&source, &export).unwrap();
    let db = Connection::open(&export).unwrap();
    let kernels: i64 = db
        .query_row("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| {
            r.get(0)
        })
        .unwrap();
    db.execute_batch(&format!(
        "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN {column} TO s"
    ))
    .unwrap();
    Some(kernels)
}

/// `report --format json` of `x.sqlite` in `dir`.
fn report_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&run(dir, &["report", "--format", "json", "x.sqlite"]).stdout).unwrap()
}

/// Every command, in every format, says `warning` and marks its answer.
fn every_command_warns_and_marks(dir: &Path, warning: &str) {
    for args in commands() {
        if args.contains(&"--measure-only") {
            continue;
        }
        let answer = run(dir, &args);
        assert!(
            answer.stderr.contains(warning),
            "{args:?}: {}",
            answer.stderr
        );
        assert!(answer.marked(), "{args:?} is unmarked");
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_kernel_table_without_streams_marks_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let Some(kernels) = kernels_without(dir.path(), "streamId") else {
        return;
    };
    let warning = format!(
        "x.sqlite: CUPTI_ACTIVITY_KIND_KERNEL has no streamId column: its {kernels} rows are not read"
    );
    // Every command's answer depends on the kernels: each says so, and marks it.
    every_command_warns_and_marks(dir.path(), &warning);
    // In JSON, where: the run, the rules that read kernels, the summaries.
    let page = report_json(dir.path());
    let incomplete = &page["runs"][0]["incomplete"][0];
    assert_eq!(incomplete["table"], "CUPTI_ACTIVITY_KIND_KERNEL");
    assert_eq!(incomplete["missing"], "streamId");
    assert_eq!(incomplete["rows"], kernels);
    assert_eq!(incomplete["read_without"], false);
    let findings = run(dir.path(), &["analyze", "--format", "json", "x.sqlite"]).stdout;
    let marked: Vec<String> = findings
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|rule| rule.get("incomplete").is_some())
        .map(|rule| rule["table"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(marked, ["gpu_gaps", "gpu_time_util"]);
}

/// The second case: kernels whose launches cannot be found. They
/// are read (GPU busy time is whole), and every answer says what is not.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_kernel_table_without_correlation_ids_is_read_and_marks_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let Some(kernels) = kernels_without(dir.path(), "correlationId") else {
        return;
    };
    let warning = format!(
        "x.sqlite: CUPTI_ACTIVITY_KIND_KERNEL has no correlationId column, which every nsys \
         version writes: its {kernels} rows are read without it, so what depends on it is incomplete"
    );
    every_command_warns_and_marks(dir.path(), &warning);
    let page = report_json(dir.path());
    let incomplete = &page["runs"][0]["incomplete"][0];
    assert_eq!(incomplete["missing"], "correlationId");
    assert_eq!(incomplete["read_without"], true);
    // The kernels themselves are all there: the busy time is the whole export's.
    let untouched = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("h100_torch_graph_node.sqlite").unwrap(),
        untouched.path().join("x.sqlite"),
    )
    .unwrap();
    let whole = report_json(untouched.path());
    let busy = |page: &serde_json::Value| -> Vec<serde_json::Value> {
        let gpus = page["runs"][0]["gpus"].as_array().unwrap().clone();
        gpus.iter()
            .map(|g| serde_json::json!([g["device"], g["busy"], g["first_start"], g["last_end"]]))
            .collect()
    };
    assert_eq!(busy(&page), busy(&whole));
    assert!(!busy(&whole).is_empty());
}
