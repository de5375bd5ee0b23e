//! The same flags and exits in every command: `-q` accepted by all; exit 1
//! for a runtime error (a missing input among them) and 2 for a usage error;
//! a `--format` that the output's name contradicts refused as a usage error;
//! a closed standard output or error never a panic (exit 101).

use crate::support::program::{demo, BIN};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command.current_dir(dir).args(args).stdin(Stdio::null());
    command
}

fn run(dir: &Path, args: &[&str]) -> Output {
    command(dir, args).output().expect("binary runs")
}

/// A directory holding two copies of the demo export, a.sqlite and b.sqlite.
fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.sqlite", "b.sqlite"] {
        std::fs::copy(demo(), dir.path().join(name)).unwrap();
    }
    dir
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Fails unless `args` ends with `code` and one line of error that says
/// `needle`, writing nothing.
fn assert_fails(dir: &Path, args: &[&str], code: i32, needle: &str) {
    let before = listing(dir);
    let out = run(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line, got {stderr:?}");
    assert!(lines[0].starts_with("nsys2perfetto: error: "), "{stderr}");
    assert!(
        lines[0].contains(needle),
        "{args:?}: {stderr:?} should say {needle:?}"
    );
    assert!(!stderr.contains("os error"), "{args:?}: {stderr}");
    assert_eq!(listing(dir), before, "{args:?} wrote something");
}

/// Every command takes `-q`: those that can run here succeed with nothing
/// on standard error; `open` and `profile`, which need a browser or nsys,
/// fail for what they lack, not for `-q`.
#[test]
fn every_command_takes_quiet() {
    let dir = setup();
    let d = dir.path();
    let quiet: &[&[&str]] = &[
        &["convert", "a.sqlite", "-q", "-o", "a.perfetto-trace"],
        &[
            "merge",
            "a.sqlite",
            "b.sqlite",
            "-q",
            "-o",
            "m.perfetto-trace",
        ],
        &["stats", "a.sqlite", "-q"],
        &["analyze", "a.sqlite", "-q"],
        &[
            "compare",
            "a.sqlite",
            "b.sqlite",
            "-q",
            "--trace",
            "c.perfetto-trace",
        ],
        &[
            "series", "--param", "n=1", "a.sqlite", "--param", "n=2", "b.sqlite", "--events",
            "cpush", "-q",
        ],
        &["report", "a.sqlite", "-q", "-o", "r.md"],
    ];
    for args in quiet {
        let out = run(d, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert_eq!(stderr, "", "{args:?}");
    }
    assert_fails(
        d,
        &["open", "missing.sqlite", "-q"],
        1,
        "cannot read missing.sqlite",
    );
    let nsys = d.join("no-nsys");
    let nsys = nsys.to_str().unwrap();
    let out = run(d, &["profile", "-q", "--nsys", nsys, "--", "true"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("was not found"), "{stderr}");
}

/// A missing input is a runtime error, exit status 1, in every command; an
/// unknown flag a usage error, exit status 2.
#[test]
fn a_missing_input_exits_1_and_a_usage_error_2_everywhere() {
    let dir = setup();
    let d = dir.path();
    let missing: &[&[&str]] = &[
        &["convert", "missing.sqlite"],
        &["merge", "missing.sqlite", "-o", "m.perfetto-trace"],
        &["stats", "missing.sqlite"],
        &["analyze", "missing.sqlite"],
        &["compare", "a.sqlite", "missing.sqlite"],
        &[
            "series",
            "--param",
            "n=1",
            "missing.sqlite",
            "--events",
            "x",
        ],
        &["report", "missing.sqlite"],
        &["report", "missing.sqlite", "-o", "r.md"],
        &["open", "missing.sqlite"],
        &["serve", "missing.sqlite"],
    ];
    for args in missing {
        assert_fails(
            d,
            args,
            1,
            "cannot read missing.sqlite: no such file or directory",
        );
    }
    for command in [
        "convert", "merge", "stats", "analyze", "compare", "series", "report", "open", "serve",
    ] {
        assert_fails(d, &[command, "--no-such-flag"], 2, "--no-such-flag");
    }
    // profile takes what follows as the command to profile: a flag it
    // lacks is refused.
    assert_fails(
        d,
        &["profile", "--series", "n=1", "--", "true"],
        2,
        "--events",
    );
}

/// A `--format` that the output's name contradicts is refused, in one line,
/// before anything is read; without `--format`, the name chooses.
#[test]
fn a_format_the_output_name_contradicts_is_refused_everywhere() {
    let dir = setup();
    let d = dir.path();
    let refusals: &[(&[&str], &str)] = &[
        (
            &["report", "a.sqlite", "-o", "x.html", "--format", "md"],
            "--format md and the output x.html disagree",
        ),
        (
            &["report", "a.sqlite", "-o", "x.md", "--format", "json"],
            "--format json and the output x.md disagree",
        ),
        (
            &["stats", "a.sqlite", "-o", "x.csv", "--format", "json"],
            "--format json and the output x.csv disagree",
        ),
        (
            &["stats", "a.sqlite", "-o", "x.json", "--format", "table"],
            "--format table and the output x.json disagree",
        ),
        (
            &["analyze", "a.sqlite", "-o", "x.json", "--format", "csv"],
            "--format csv and the output x.json disagree",
        ),
        (
            &[
                "compare", "a.sqlite", "b.sqlite", "-o", "x.csv", "--format", "table",
            ],
            "--format table and the output x.csv disagree",
        ),
        (
            &[
                "compare",
                "a.sqlite",
                "b.sqlite",
                "--summary",
                "-o",
                "x.json",
                "--format",
                "csv",
            ],
            "--format csv and the output x.json disagree",
        ),
        (
            &[
                "convert", "a.sqlite", "-o", "x.json", "--format", "perfetto",
            ],
            "--format perfetto and the output x.json disagree",
        ),
    ];
    for (args, needle) in refusals {
        assert_fails(d, args, 2, needle);
    }
    // The name chooses: the same bytes as --format asked on standard output.
    let chosen: &[(&[&str], &str, &str)] = &[
        // One table: several in CSV go to a file each (FILE_<table>.csv).
        (
            &["stats", "a.sqlite", "--report", "cuda_api_sum"],
            "x.csv",
            "csv",
        ),
        (&["stats", "a.sqlite"], "x.json", "json"),
        (&["analyze", "a.sqlite"], "x.csv", "csv"),
        (&["compare", "a.sqlite", "b.sqlite"], "x.json", "json"),
    ];
    for (args, name, format) in chosen {
        let to_file = [*args, &["-o", name]].concat();
        let out = run(d, &to_file);
        assert!(
            out.status.success(),
            "{to_file:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let asked = [*args, &["--format", format]].concat();
        let out = run(d, &asked);
        assert!(out.status.success(), "{asked:?}");
        let written = std::fs::read_to_string(d.join(name)).unwrap();
        // Names of files differ from standard output by nothing: both name
        // the reports as given.
        assert_eq!(written, String::from_utf8_lossy(&out.stdout), "{to_file:?}");
        std::fs::remove_file(d.join(name)).unwrap();
    }
}

/// A pipe whose reading end is closed (the reader gone before the program
/// writes).
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

/// Standard error a pipe nobody reads: messages are lost, the exit status
/// is what it would be, and no command panics (exit status 101).
#[test]
fn a_closed_standard_error_is_no_panic() {
    let dir = setup();
    let d = dir.path();
    let cases: &[(&[&str], i32)] = &[
        (&["convert", "a.sqlite", "-o", "a.perfetto-trace"], 0),
        (&["convert", "missing.sqlite"], 1),
        (&["convert", "--no-such-flag"], 2),
        (
            &["merge", "a.sqlite", "b.sqlite", "-o", "m.perfetto-trace"],
            0,
        ),
        (&["stats", "missing.sqlite"], 1),
        (&["analyze", "missing.sqlite"], 1),
        (
            &[
                "compare",
                "a.sqlite",
                "b.sqlite",
                "--trace",
                "c.perfetto-trace",
            ],
            0,
        ),
        (
            &[
                "series", "--param", "n=1", "a.sqlite", "--param", "n=2", "b.sqlite", "--events",
                "cpush",
            ],
            0,
        ),
        (&["report", "a.sqlite", "-o", "r.md"], 0),
        (&["open", "missing.sqlite"], 1),
    ];
    for (args, code) in cases {
        let out = command(d, args)
            .stdout(Stdio::null())
            .stderr(closed_pipe())
            .status()
            .unwrap();
        assert_eq!(out.code(), Some(*code), "{args:?}");
    }
}

/// Standard output a pipe nobody reads: the program ends quietly, with
/// status 0 (the reader had what it wanted), never a panic.
#[test]
fn a_closed_standard_output_is_no_panic() {
    let dir = setup();
    let d = dir.path();
    let cases: &[&[&str]] = &[
        &["stats", "a.sqlite"],
        &["analyze", "a.sqlite"],
        &["compare", "a.sqlite", "b.sqlite"],
        &["compare", "a.sqlite", "b.sqlite", "--summary"],
        &[
            "series", "--param", "n=1", "a.sqlite", "--param", "n=2", "b.sqlite", "--events",
            "cpush", "-q",
        ],
        &["report", "a.sqlite"],
        &["convert", "a.sqlite", "-q", "-o", "-"],
    ];
    for args in cases {
        let out = command(d, args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// With `-o` given, no message tells to name the output with -o.
#[test]
fn with_o_given_no_message_says_to_give_it() {
    let dir = setup();
    let d = dir.path();
    let out = run(d, &["convert", "a.sqlite", "-o", "a.sqlite"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("it is the input"), "{stderr}");
    assert!(!stderr.contains("with -o"), "{stderr}");
}

/// A temporary directory that does not exist is said once, in one line,
/// with what to do.
#[test]
fn stats_names_a_missing_temporary_directory_once() {
    let dir = setup();
    let d = dir.path();
    let missing = d.join("no-such-tmp");
    let out = command(d, &["stats", "a.sqlite"])
        .env("TMPDIR", &missing)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(stderr.matches("TMPDIR").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("temporary").count(), 1, "{stderr}");
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    assert!(!stderr.contains("os error"), "{stderr}");
}

/// A full disk (`/dev/full` answers every write with ENOSPC) is one line
/// that says so, exit status 1, in every command that writes a file.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_one_line() {
    let dir = setup();
    let d = dir.path();
    let full = "/dev/full";
    let cases: &[&[&str]] = &[
        &["convert", "a.sqlite", "-q", "-o", full],
        &["merge", "a.sqlite", "b.sqlite", "-q", "-o", full],
        &["stats", "a.sqlite", "-o", full],
        &["analyze", "a.sqlite", "-o", full],
        &["compare", "a.sqlite", "b.sqlite", "-o", full],
        &["compare", "a.sqlite", "b.sqlite", "-q", "--trace", full],
        &[
            "series", "--param", "n=1", "a.sqlite", "--param", "n=2", "b.sqlite", "--events",
            "cpush", "-q", "-o", full,
        ],
        &["report", "a.sqlite", "--format", "md", "-o", full],
    ];
    for args in cases {
        let out = run(d, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error: ")).collect();
        assert_eq!(
            errors,
            [format!(
                "nsys2perfetto: error: cannot write {full}: no space left on device"
            )],
            "{args:?}: {stderr}"
        );
    }
}
