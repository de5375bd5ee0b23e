//! `stats` on a report whose NVTX ranges nearly all have names of their own
//! (PyTorch puts an op id in each): memory stays flat in every format, and
//! the summary still equals SQL over the export, row for row and in order.
//!
//! Its own test file: the peak memory of the command is its own process's,
//! measured as the command ends (`wait4`), with no other test's commands
//! running in this process.

use std::collections::HashMap;
use std::path::Path;

use crate::support::synth::{distinct_nvtx_name, distinct_nvtx_names};
use rusqlite::Connection;

const BIN: &str = env!("CARGO_BIN_EXE_nsys2perfetto");

/// Distinct names: twelve times the groups `stats` holds in memory.
const NAMES: usize = 200_000;

/// The most a run may take. Holding every group, its row and its text took
/// about 1.4 kB a name (some 280 MB here); the summaries need about 20 MB
/// whatever the number of names.
const PEAK_LIMIT_KIB: i64 = 80 * 1024;

/// A row of `nvtx_sum` as SQL computes it: name, count, total, min, max.
type Group = (String, i64, i64, i64, i64);

/// `nvtx_sum`'s groups by SQL over `export`: by total descending, ties in
/// order of first appearance.
fn sql_groups(export: &Path) -> Vec<Group> {
    let db = Connection::open(export).unwrap();
    let mut statement = db
        .prepare(
            "SELECT ':' || text, COUNT(*), SUM(end - start), MIN(end - start), MAX(end - start)
             FROM NVTX_EVENTS GROUP BY text ORDER BY 3 DESC, MIN(rowid)",
        )
        .unwrap();
    let rows = statement
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// The durations of the ranges named `text`, sorted.
fn durations(export: &Path, text: &str) -> Vec<i64> {
    let db = Connection::open(export).unwrap();
    let mut statement = db
        .prepare("SELECT end - start FROM NVTX_EVENTS WHERE text = ?1 ORDER BY 1")
        .unwrap();
    let rows = statement.query_map([text], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

/// The fields of a CSV line (quoted fields may hold commas and quotes).
fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => fields.push(String::new()),
            (c, _) => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

/// Runs the command with standard output into `stdout`: whether it
/// succeeded, its standard error, and its peak resident memory in KiB.
#[cfg(target_os = "linux")]
// wait4 reaps the child, not Child::wait.
#[allow(clippy::zombie_processes)]
fn run_measured(args: &[&std::ffi::OsStr], stdout: &Path) -> (bool, String, i64) {
    let stderr = stdout.with_extension("stderr");
    let child = std::process::Command::new(BIN)
        .args(args)
        .stdout(std::fs::File::create(stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: a zeroed rusage is valid; wait4 fills it for this child only.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    let errors = std::fs::read_to_string(&stderr).unwrap();
    (ok, errors, usage.ru_maxrss)
}

#[cfg(target_os = "linux")]
#[test]
fn memory_stays_flat_with_many_distinct_names_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("names.sqlite");
    distinct_nvtx_names(&export, NAMES);
    // The runs first, while this process is small: a child's peak counts
    // the memory it had before it started the command, as this process's copy.
    let formats = ["table", "csv", "json"];
    for format in formats {
        let out = dir.path().join(format!("stats.{format}"));
        let args = [
            "stats".as_ref(),
            "--format".as_ref(),
            format.as_ref(),
            export.as_os_str(),
        ];
        let (ok, errors, peak) = run_measured(&args, &out);
        assert!(ok, "{format}: {errors}");
        assert!(
            peak < PEAK_LIMIT_KIB,
            "{format}: peak {peak} KiB, over {PEAK_LIMIT_KIB} KiB for {NAMES} names"
        );
    }
    let expected = sql_groups(&export);
    assert_eq!(expected.len(), NAMES + 2);
    for format in formats {
        let text = std::fs::read_to_string(dir.path().join(format!("stats.{format}"))).unwrap();
        match format {
            "csv" => check_csv(&text, &expected, &export),
            "table" => check_table(&text, &expected),
            _ => check_json(&text, &expected),
        }
    }
}

/// Every row equals SQL's, in SQL's order; the medians and deviations of
/// the repeated names (one held in memory, one past the groups held) equal
/// their definitions.
fn check_csv(text: &str, expected: &[Group], export: &Path) {
    let header = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range";
    let rows: Vec<Vec<String>> = text
        .lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(csv_fields)
        .collect();
    assert_eq!(rows.len(), expected.len());
    let mut by_name: HashMap<&str, &Vec<String>> = HashMap::new();
    for (row, (name, count, total, min, max)) in rows.iter().zip(expected) {
        let got = [&row[9], &row[2], &row[1], &row[5], &row[6]].map(|c| c.to_owned());
        let want = [
            name.clone(),
            count.to_string(),
            total.to_string(),
            min.to_string(),
            max.to_string(),
        ];
        assert_eq!(got, want, "{row:?}");
        assert_eq!(row[8], "PushPop");
        by_name.insert(&row[9], row);
    }
    for text in ["forward", "backward"] {
        let values = durations(export, text);
        let n = values.len();
        let median = match n % 2 {
            1 => values[n / 2] as f64,
            _ => (values[n / 2 - 1] + values[n / 2]) as f64 / 2.0,
        };
        let mean = values.iter().sum::<i64>() as f64 / n as f64;
        let squares: f64 = values.iter().map(|&v| (v as f64 - mean).powi(2)).sum();
        let stddev = (squares / (n - 1) as f64).sqrt();
        let row = by_name[format!(":{text}").as_str()];
        let cell = |i: usize| row[i].parse::<f64>().unwrap();
        assert!(
            (cell(4) - median).abs() <= 0.05,
            "{text}: {row:?} median {median}"
        );
        assert!(
            (cell(7) - stddev).abs() <= 0.05 + 1e-9 * stddev,
            "{text}: {row:?} {stddev}"
        );
    }
    // A distinct name from past the groups held, with its one value.
    let name = format!(":{}", distinct_nvtx_name(NAMES - 1));
    assert_eq!(by_name[name.as_str()][2], "1");
}

/// A line per group, in SQL's order, its columns aligned over every row.
fn check_table(text: &str, expected: &[Group]) {
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("(nvtx_sum)"))
        .filter(|l| l.contains(" PushPop "))
        .collect();
    assert_eq!(lines.len(), expected.len());
    let column = lines[0].find(" PushPop ").unwrap();
    for (line, (name, ..)) in lines.iter().zip(expected) {
        assert_eq!(line.find(" PushPop "), Some(column), "{line}");
        assert!(line.ends_with(&format!(" {name}")), "{line} against {name}");
    }
}

/// One object holding every group.
fn check_json(text: &str, expected: &[Group]) {
    let line = text
        .lines()
        .find(|l| l.starts_with("{\"table\":\"nvtx_sum\","))
        .unwrap();
    assert_eq!(line.matches(",\"range\":").count(), expected.len());
    let last = &expected[expected.len() - 1].0;
    assert!(
        line.ends_with(&format!(",\"range\":\"{last}\"}}]}}")),
        "{}",
        &line[line.len() - 200..]
    );
}
