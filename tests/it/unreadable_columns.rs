//! An export whose event table lacks a column its rows need (renamed here,
//! one at a time, in a copy of a real export): `convert` leaves the table out
//! and says so. Every analysing command reads its tables through the same
//! probe: an answer that changes for want of the table says so on standard
//! error (naming the table and the column) and marks itself incomplete in
//! its output (text, CSV, JSON, pages), never silently smaller. On the
//! untouched export nothing is said or marked.

use std::path::Path;

use rusqlite::Connection;

use crate::support::fixtures::fixture;
use crate::support::program::program;

/// The event tables the analyses read.
const TABLES: [&str; 7] = [
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "NVTX_EVENTS",
    "OSRT_API",
];

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

/// The tables `convert` leaves out of `export`, with what they lack.
fn left_out_by_convert(export: &Path) -> Vec<(String, String)> {
    let sink = std::io::sink();
    let options = nsys2perfetto::Options::default();
    let (_, summary) =
        nsys2perfetto::convert_to_writer(export, sink, &options, &mut |_| {}).unwrap();
    summary
        .unreadable
        .into_iter()
        .map(|u| (u.table, u.missing))
        .collect()
}

#[test]
fn every_command_warns_and_marks_what_a_table_it_could_not_read_leaves_out() {
    let Some(source) = fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let untouched_dir = tempfile::tempdir().unwrap();
    let untouched = untouched_dir.path().join("x.sqlite");
    std::fs::copy(&source, &untouched).unwrap();
    let columns: Vec<(String, String)> = {
        let db = Connection::open(&untouched).unwrap();
        TABLES
            .iter()
            .flat_map(|table| {
                let sql = format!("SELECT name FROM pragma_table_info('{table}')");
                let mut stmt = db.prepare(&sql).unwrap();
                let names: Vec<String> = stmt
                    .query_map([], |r| r.get(0))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                names.into_iter().map(|c| (table.to_string(), c))
            })
            .collect()
    };
    assert!(columns.len() > 50, "the fixture has its event tables");

    // The untouched export: nothing said, nothing marked.
    let commands = commands();
    let whole: Vec<Answer> = commands
        .iter()
        .map(|args| run(untouched_dir.path(), args))
        .collect();
    for (args, answer) in commands.iter().zip(&whole) {
        assert!(!answer.marked(), "{args:?} marks an untouched export");
        assert!(
            !answer.stderr.contains("not read"),
            "{args:?} warns on an untouched export: {}",
            answer.stderr
        );
    }

    let mut unreadable_columns = Vec::new();
    for (table, column) in &columns {
        let dir = tempfile::tempdir().unwrap();
        let export = dir.path().join("x.sqlite");
        std::fs::copy(&untouched, &export).unwrap();
        let renamed = format!("ALTER TABLE {table} RENAME COLUMN \"{column}\" TO \"{column}_x\"");
        Connection::open(&export)
            .unwrap()
            .execute_batch(&renamed)
            .unwrap();
        let left_out = left_out_by_convert(&export);
        if left_out.is_empty() {
            continue;
        }
        assert!(
            left_out.len() == 1
                && left_out[0].0 == *table
                && left_out[0].1.contains(column.as_str()),
            "{table}.{column}: {left_out:?}"
        );
        unreadable_columns.push(format!("{table}.{column}"));
        for (args, whole) in commands.iter().zip(&whole) {
            let answer = run(dir.path(), args);
            let said = answer.stderr.lines().any(|line| {
                line.contains("warning")
                    && line.contains(table.as_str())
                    && line.contains(&format!("no {column} column"))
            });
            if answer.stdout == whole.stdout {
                assert!(
                    !said,
                    "{args:?} warns of {table}.{column}, and its answer is whole"
                );
                continue;
            }
            assert!(
                said,
                "{args:?} answers otherwise without {table}.{column}, and says nothing: {}",
                answer.stderr
            );
            assert!(
                answer.marked(),
                "{args:?} answers otherwise without {table}.{column}, unmarked"
            );
        }
    }
    // The case is among them: kernels without their stream.
    assert!(
        unreadable_columns.contains(&"CUPTI_ACTIVITY_KIND_KERNEL.streamId".to_owned()),
        "{unreadable_columns:?}"
    );
    assert!(unreadable_columns.len() >= 10, "{unreadable_columns:?}");
}

#[test]
fn a_kernel_table_without_streams_marks_every_command() {
    let Some(source) = fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("x.sqlite");
    std::fs::copy(&source, &export).unwrap();
    let db = Connection::open(&export).unwrap();
    let kernels: i64 = db
        .query_row("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| {
            r.get(0)
        })
        .unwrap();
    db.execute_batch("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN streamId TO s")
        .unwrap();
    drop(db);
    let warning = format!(
        "x.sqlite: CUPTI_ACTIVITY_KIND_KERNEL has no streamId column: its {kernels} rows are not read"
    );
    // Every command's answer depends on the kernels: each says so, and marks it.
    for args in commands() {
        if args.contains(&"--measure-only") {
            continue;
        }
        let answer = run(dir.path(), &args);
        assert!(
            answer.stderr.contains(&warning),
            "{args:?}: {}",
            answer.stderr
        );
        assert!(answer.marked(), "{args:?} is unmarked");
    }
    // In JSON, where: the run, the rules that read kernels, the summaries.
    let page: serde_json::Value =
        serde_json::from_str(&run(dir.path(), &["report", "--format", "json", "x.sqlite"]).stdout)
            .unwrap();
    let incomplete = &page["runs"][0]["incomplete"][0];
    assert_eq!(incomplete["table"], "CUPTI_ACTIVITY_KIND_KERNEL");
    assert_eq!(incomplete["missing"], "streamId");
    assert_eq!(incomplete["rows"], kernels);
    let findings = run(dir.path(), &["analyze", "--format", "json", "x.sqlite"]).stdout;
    let marked: Vec<String> = findings
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|rule| rule.get("incomplete").is_some())
        .map(|rule| rule["table"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(marked, ["gpu_gaps", "gpu_time_util"]);
}
