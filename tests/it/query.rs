//! `query`: its rows against trace_processor run directly on the converted
//! trace (`trace_processor_shell -q`), in each format; against SQLite over
//! the export where it falls back to the export; writing SQL refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::fixtures::{fixture, require, Need};
use crate::support::nsys::csv_rows;
use crate::support::program::program;
use crate::support::source::open;

/// A query whose answer has text, integers, reals and NULL.
const SQL: &str = "SELECT name, COUNT(*) AS n, SUM(dur) AS total, AVG(dur) / 1e3 AS mean_us, \
                   NULL AS empty FROM slice GROUP BY name ORDER BY n DESC, name LIMIT 12";

fn query(run: &Path, cache: &Path, extra: &[&str]) -> Output {
    program()
        .arg("query")
        .arg(run)
        .arg(SQL)
        .arg("--cache")
        .arg(cache)
        .args(extra)
        .output()
        .unwrap()
}

/// trace_processor's own answer over a trace `convert` wrote: the header
/// and rows as it prints them, quotes taken off, NULL as empty text.
fn direct(tp: &Path, run: &Path, tmp: &Path) -> Vec<Vec<String>> {
    let trace = tmp.join("direct.pftrace");
    let converted = program()
        .arg("convert")
        .arg(run)
        .arg("-o")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(
        converted.status.success(),
        "{}",
        String::from_utf8_lossy(&converted.stderr)
    );
    let sql = tmp.join("q.sql");
    std::fs::write(&sql, SQL).unwrap();
    let out = Command::new(tp)
        .arg("-q")
        .arg(&sql)
        .arg(&trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    // trace_processor quotes text (escaping no quote: none is in these
    // names) and prints NULL as "[NULL]".
    csv_rows(&printed)
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|f| if f == "[NULL]" { String::new() } else { f })
                .collect()
        })
        .collect()
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn query_answers_as_trace_processor_does_in_each_format() {
    let (Some(run), Some(tp)) = (
        fixture("h100_torch_graph_whole.sqlite"),
        require(Need::TraceProcessor),
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let expected = direct(&tp, &run, tmp.path());
    assert!(expected.len() > 10, "{expected:?}");
    let tp_flag = ["--trace-processor", tp.to_str().unwrap()];

    let csv = stdout(&query(
        &run,
        &cache,
        &[&tp_flag[..], &["--format", "csv"]].concat(),
    ));
    assert_eq!(csv_rows(&csv), expected);

    let json = stdout(&query(
        &run,
        &cache,
        &[&tp_flag[..], &["--format", "json"]].concat(),
    ));
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows.len(), expected.len() - 1);
    for (row, want) in rows.iter().zip(&expected[1..]) {
        assert_eq!(row["name"], want[0].as_str());
        assert_eq!(row["n"].as_i64().unwrap().to_string(), want[1]);
        assert_eq!(row["total"].as_i64().unwrap().to_string(), want[2]);
        let mean: f64 = want[3].parse().unwrap();
        assert!(
            (row["mean_us"].as_f64().unwrap() - mean).abs() < 1e-9,
            "{row}"
        );
        assert!(row["empty"].is_null());
    }

    // By the environment's variable, as by the flag.
    let text = program()
        .args(["query", run.to_str().unwrap(), SQL, "--cache"])
        .arg(&cache)
        .env("NSYS2PERFETTO_TRACE_PROCESSOR", &tp)
        .output()
        .unwrap();
    let text = stdout(&text);
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("name"))
        .collect();
    assert_eq!(lines.len(), expected.len() + 1, "{text}");
    for (line, want) in lines[2..].iter().zip(&expected[1..]) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let want: Vec<&str> = want
            .iter()
            .map(String::as_str)
            .filter(|w| !w.is_empty())
            .collect();
        // Names hold no spaces here but for a few: compare from the right.
        assert_eq!(cells[cells.len() - 3..], want[want.len() - 3..], "{line}");
    }

    // Converted once: the cache holds one trace after three queries.
    let traces: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".trace."))
        .collect();
    assert_eq!(traces.len(), 1, "{traces:?}");
}

#[test]
fn query_without_trace_processor_reads_the_export_and_says_so() {
    let Some(run) = fixture("h100_torch_graph_whole.sqlite") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let sql = "SELECT s.value AS name, COUNT(*) AS n, SUM(k.end - k.start) AS total \
               FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName \
               GROUP BY s.value ORDER BY total DESC, name";
    let out = program()
        .args([
            "query",
            run.to_str().unwrap(),
            sql,
            "--format",
            "csv",
            "--cache",
        ])
        .arg(tmp.path())
        .env("PATH", tmp.path())
        .env_remove("NSYS2PERFETTO_TRACE_PROCESSOR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no trace_processor at hand"), "{stderr}");
    assert!(
        stderr.contains("the SQLite export is queried instead"),
        "{stderr}"
    );
    let rows = csv_rows(&stdout(&out));
    let db = open(&run);
    let mut expected = vec![vec!["name".to_owned(), "n".to_owned(), "total".to_owned()]];
    let mut stmt = db.prepare(sql).unwrap();
    let found = stmt
        .query_map([], |r| {
            Ok(vec![
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?.to_string(),
                r.get::<_, i64>(2)?.to_string(),
            ])
        })
        .unwrap();
    expected.extend(found.map(Result::unwrap));
    assert!(expected.len() > 2);
    assert_eq!(rows, expected);
}

#[test]
fn query_refuses_writing_sql_on_either_engine() {
    let Some(run) = fixture("h100_torch_graph_whole.sqlite") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let before = std::fs::read(&run).unwrap().len();
    for engine in [
        vec!["--export"],
        vec!["--trace-processor", "/nonexistent/tp"],
    ] {
        for sql in [
            "DELETE FROM StringIds",
            "SELECT 1; DROP TABLE StringIds",
            "WITH a AS (SELECT 1) INSERT INTO StringIds SELECT 1, 'x' FROM a",
            "ATTACH DATABASE 'x.db' AS x",
        ] {
            let out = program()
                .args(["query", run.to_str().unwrap(), sql, "--cache"])
                .arg(tmp.path())
                .args(&engine)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{sql}: {stderr}");
            assert!(
                stderr.starts_with("nsys2perfetto: error: query refused: "),
                "{stderr}"
            );
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(out.stdout.is_empty());
        }
    }
    assert_eq!(std::fs::read(&run).unwrap().len(), before);
    // Nothing was converted for a refused query.
    assert!(std::fs::read_dir(tmp.path())
        .unwrap()
        .all(|e| { !e.unwrap().path().to_string_lossy().contains(".trace.") }));
}

/// A run named through a symbolic link (a mirror of the fixtures, as the
/// docs' examples run in) is queried as the file it names; the refusal of
/// writing SQL comes before the run is looked at at all.
#[test]
fn query_follows_a_link_to_the_run_and_refuses_before_reading() {
    let Some(run) = fixture("h100_torch_graph_whole.sqlite") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let link = tmp.path().join("linked.sqlite");
    std::os::unix::fs::symlink(&run, &link).unwrap();
    let sql = "SELECT COUNT(*) AS n FROM CUPTI_ACTIVITY_KIND_KERNEL";
    let out = program()
        .args([
            "query",
            link.to_str().unwrap(),
            sql,
            "--export",
            "--format",
            "csv",
            "--cache",
        ])
        .arg(tmp.path().join("cache"))
        .output()
        .unwrap();
    let n: i64 = open(&run).query_row(sql, [], |r| r.get(0)).unwrap();
    assert_eq!(
        csv_rows(&stdout(&out)),
        [vec!["n".to_owned()], vec![n.to_string()]]
    );

    let missing = tmp.path().join("no such run.sqlite");
    let out = program()
        .args([
            "query",
            missing.to_str().unwrap(),
            "DROP TABLE slice",
            "--export",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("query refused: DROP is no read"),
        "{stderr}"
    );
}

/// A truncated export is said to be damaged, in the words every other
/// command uses, not in SQLite's.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn query_of_a_truncated_export_says_it_is_damaged() {
    let Some(run) = fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(&run).unwrap();
    let truncated = tmp.path().join("cut.sqlite");
    std::fs::write(&truncated, &bytes[..bytes.len() * 2 / 5]).unwrap();
    let said = |args: &[&str]| {
        let out = program()
            .args(args)
            .env("PATH", tmp.path())
            .env_remove("NSYS2PERFETTO_TRACE_PROCESSOR")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        stderr
            .lines()
            .filter(|l| l.contains("error"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let path = truncated.to_str().unwrap();
    let cache = tmp.path().join("cache");
    let query = said(&[
        "query",
        path,
        "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME",
        "--cache",
        cache.to_str().unwrap(),
    ]);
    // What `report` says of the same file.
    let report = said(&["report", path]);
    assert_eq!(query.len(), 1, "{query:?}");
    assert!(
        query[0].contains("cut.sqlite is damaged or truncated"),
        "{query:?}"
    );
    assert!(
        report[0].contains("cut.sqlite is damaged or truncated"),
        "{report:?}"
    );
}
