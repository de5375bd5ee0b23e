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

/// `-o -` is standard output in every command and flag that names an
/// output: the same bytes as the file the name would get, and no file
/// named `-`. Two outputs on standard output, or several traces, are
/// refused in one line.
#[test]
fn dash_is_standard_output_everywhere() {
    let dir = setup();
    let d = dir.path();
    let series = "series --param n=1 a.sqlite --param n=2 b.sqlite --events cpush -q";
    // A command line writing the output under test to `{}`, and the name it
    // gets as a file.
    let cases: &[(String, &str)] = &[
        ("stats a.sqlite b.sqlite --format csv -o {}".into(), "s.csv"),
        ("stats a.sqlite --format json -o {}".into(), "s.json"),
        ("analyze a.sqlite --format csv -o {}".into(), "f.csv"),
        (
            "compare a.sqlite b.sqlite --format csv -o {}".into(),
            "c.csv",
        ),
        (
            "compare a.sqlite b.sqlite -q -o t.txt --trace {}".into(),
            "t.perfetto-trace",
        ),
        (format!("{series} -o t.csv --svg {{}}"), "p.svg"),
        (format!("{series} -o {{}}"), "t.csv"),
        (
            "merge a.sqlite b.sqlite -q -o {}".into(),
            "m.perfetto-trace",
        ),
        ("convert a.sqlite -q -o {}".into(), "a.perfetto-trace"),
        ("report a.sqlite --format md -q -o {}".into(), "r.md"),
    ];
    let words = |line: &str, name: &str| -> Vec<String> {
        line.split(' ').map(|w| w.replace("{}", name)).collect()
    };
    for (line, name) in cases {
        let to_file = words(line, name);
        let to_file: Vec<&str> = to_file.iter().map(String::as_str).collect();
        let out = run(d, &to_file);
        assert!(out.status.success(), "{to_file:?}: {out:?}");
        let to_stdout = words(line, "-");
        let to_stdout: Vec<&str> = to_stdout.iter().map(String::as_str).collect();
        let out = run(d, &to_stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{to_stdout:?}: {stderr}");
        assert!(!d.join("-").exists(), "{to_stdout:?} wrote a file named -");
        // Several CSV tables go to a file each, and to standard output one
        // after the other, as without -o.
        let expected = match name.ends_with(".csv") && line.starts_with("stats") {
            true => {
                let args: Vec<&str> = to_stdout[..to_stdout.len() - 2].to_vec();
                run(d, &args).stdout
            }
            false => std::fs::read(d.join(name)).unwrap(),
        };
        assert_eq!(out.stdout, expected, "{to_stdout:?}");
    }
    let refused: &[(String, &str)] = &[
        (
            "compare a.sqlite b.sqlite --trace -".into(),
            "would both go to standard output",
        ),
        (
            format!("{series} --svg -"),
            "would both go to standard output",
        ),
        (
            format!("{series} -o - --svg -"),
            "would both go to standard output",
        ),
        (
            "convert . -o -".into(),
            "-o - writes one trace to standard output",
        ),
    ];
    for (line, needle) in refused {
        let args: Vec<&str> = line.split(' ').collect();
        assert_fails(d, &args, 2, needle);
    }
}

/// Several CSV tables written to a file each are all written or none: a
/// table past the file size limit leaves none of those before it.
#[cfg(unix)]
#[test]
fn a_set_of_tables_is_all_or_nothing() {
    let dir = setup();
    let d = dir.path();
    let which = "cuda_api_sum,cuda_gpu_kern_sum";
    let args = ["stats", "a.sqlite", "--report", which, "-o", "s.csv"];
    // The limit: more than the first table's file, less than the second's.
    let out = run(d, &args);
    assert!(out.status.success(), "{out:?}");
    let first = std::fs::metadata(d.join("s_cuda_api_sum.csv"))
        .unwrap()
        .len();
    let second = std::fs::metadata(d.join("s_cuda_gpu_kern_sum.csv"))
        .unwrap()
        .len();
    assert!(first < second, "{first} {second}");
    for name in ["s_cuda_api_sum.csv", "s_cuda_gpu_kern_sum.csv"] {
        std::fs::remove_file(d.join(name)).unwrap();
    }
    let before = listing(d);
    let out = crate::cli::file_size_limit::run_within(first + 1, d, &args, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("file size limit exceeded"), "{stderr}");
    assert_eq!(listing(d), before, "{stderr}");
}

/// `-q` is errors only: no note of the files of several tables, of the
/// findings --rows left out, or of a long wait for nsys.
#[cfg(unix)]
#[test]
fn quiet_says_no_note() {
    let dir = setup();
    let d = dir.path();
    let cases: &[&[&str]] = &[
        &["stats", "a.sqlite", "--format", "csv", "-o", "s.csv"],
        &["analyze", "a.sqlite", "--format", "csv", "--rows", "1"],
    ];
    for args in cases {
        let out = run(d, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("note: "),
            "{args:?}: a note without -q: {stderr}"
        );
        let quiet = [*args, &["-q"]].concat();
        let out = run(d, &quiet);
        assert!(out.status.success(), "{quiet:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{quiet:?}");
    }
    // nsys that goes on 3 s after its command, then leaves a report.
    let nsys = d.join("nsys");
    crate::support::nsys::stand_in(
        &nsys,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'NVIDIA Nsight Systems version \
         2022.4.2.1-0000000'; exit 0; }\nshift; shift; out=$1; shift\n\"$@\"\nsleep 3\n\
         cp a.sqlite \"$out.nsys-rep\"\n",
    );
    let nsys = nsys.to_str().unwrap();
    for (quiet, name) in [(false, "loud"), (true, "quiet")] {
        let mut args = vec!["profile", "--wait-notice", "1", "--nsys", nsys, "-o", name];
        if quiet {
            args.push("-q");
        }
        args.extend(["--", "true"]);
        let out = run(d, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert_eq!(
            stderr.contains("waiting for nsys"),
            !quiet,
            "{args:?}: {stderr}"
        );
        if quiet {
            assert_eq!(stderr, "", "{args:?}");
        }
    }
}

/// A refused output name is a usage error, exit status 2, in every command:
/// a name `stats` makes from -o that is its input or an export, a report
/// that `profile -o` would replace. A misspelt option of `profile` is said
/// as such, not handed to nsys.
#[test]
fn a_refused_output_name_exits_2_everywhere() {
    let dir = setup();
    let d = dir.path();
    std::fs::copy(demo(), d.join("s_nvtx_sum.csv")).unwrap();
    std::fs::copy(demo(), d.join("existing.nsys-rep")).unwrap();
    let many = ["--report", "nvtx_sum,cuda_api_sum", "--format", "csv"];
    let cases: &[(&[&str], &str)] = &[
        (
            &[&["stats", "s_nvtx_sum.csv", "-o", "s.csv"], &many[..]].concat(),
            "it is the input",
        ),
        (
            &[&["stats", "a.sqlite", "-o", "s.csv"], &many[..]].concat(),
            "--force replaces it",
        ),
        (
            &[
                "profile", "--nsys", "no-nsys", "-o", "existing", "--", "true",
            ],
            "existing.nsys-rep exists",
        ),
        (&["profile", "--bogus"], "--bogus: no option of profile"),
    ];
    for (args, needle) in cases {
        assert_fails(d, args, 2, needle);
    }
}

/// The format follows the output's name, or the name is refused: `compare
/// --trace x.json` writes Chrome's JSON (as `merge -o x.json` does); a
/// table named .json or a plot named .png is refused before anything is
/// read.
#[test]
fn the_format_follows_the_name_or_is_refused() {
    let dir = setup();
    let d = dir.path();
    let out = run(
        d,
        &["compare", "a.sqlite", "b.sqlite", "-q", "--trace", "x.json"],
    );
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("x.json")).unwrap()).expect("JSON");
    assert!(!json["traceEvents"].as_array().unwrap().is_empty());
    std::fs::remove_file(d.join("x.json")).unwrap();
    let series = [
        "series", "--param", "n=1", "a.sqlite", "--param", "n=2", "b.sqlite", "--events", "cpush",
        "-q",
    ];
    let refused: &[(&[&str], &str)] = &[
        (
            &["-o", "x.json"],
            "x.json names a .json file, but what goes there is a CSV table",
        ),
        (
            &["--svg", "x.png"],
            "x.png names a .png file, but what goes there is an SVG plot",
        ),
    ];
    for (more, needle) in refused {
        assert_fails(d, &[&series[..], more].concat(), 2, needle);
    }
}

/// Names made from an output that is a device or a pipe (several CSV
/// tables, `FILE_<table>.csv`) are refused: before, `-o /dev/full` made
/// regular files /dev/full_<table>.csv. A FIFO stands in for the device.
#[cfg(unix)]
#[test]
fn names_made_from_a_device_are_refused() {
    let dir = setup();
    let d = dir.path();
    let fifo = d.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    assert_fails(
        d,
        &["stats", "a.sqlite", "--format", "csv", "-o", "pipe"],
        2,
        "cannot write files named after pipe: it is a device or a pipe",
    );
}

/// A directory a run made that no output went into is removed again: a
/// `convert DIR -o out/` whose every conversion failed leaves no empty
/// folders. `report --measure-only -o new/` makes its directory as `convert
/// -o new/` does.
#[test]
fn directories_made_for_nothing_are_removed_and_made_alike() {
    let dir = setup();
    let d = dir.path();
    std::fs::create_dir_all(d.join("runs/deep")).unwrap();
    std::fs::write(d.join("runs/deep/bad.sqlite"), b"no export").unwrap();
    let out = run(d, &["convert", "runs", "-q", "-o", "out/"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(!d.join("out").exists(), "an empty out/ is left");
    let out = run(
        d,
        &["convert", "runs/deep/bad.sqlite", "-q", "-o", "single/"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(!d.join("single").exists(), "an empty single/ is left");

    let measure = [
        "report",
        "--step",
        "step*",
        "--measure-only",
        "a.sqlite",
        "-q",
    ];
    let printed = run(d, &measure);
    assert!(printed.status.success(), "{printed:?}");
    let out = run(d, &[&measure[..], &["-o", "new/deeper/"]].concat());
    assert!(out.status.success(), "{out:?}");
    let written = std::fs::read(d.join("new/deeper/a.steps.json")).unwrap();
    assert_eq!(written, printed.stdout);
}

/// Errors say what failed in words of the user's: standard output, not
/// "the trace"; the output, not the temporary file beside it.
#[cfg(target_os = "linux")]
#[test]
fn errors_name_what_the_user_named() {
    let dir = setup();
    let d = dir.path();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = command(
        d,
        &[
            "series", "--param", "n=1", "a.sqlite", "--param", "n=2", "b.sqlite", "--events",
            "cpush", "-q",
        ],
    )
    .stdout(full)
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "nsys2perfetto: error: cannot write standard output: no space left on device"
    );
    // A directory where no file can be made, root or not: /proc.
    for format in ["x.json", "x.perfetto-trace"] {
        let output = format!("/proc/{format}");
        let out = run(d, &["merge", "a.sqlite", "b.sqlite", "-q", "-o", &output]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.starts_with(&format!("nsys2perfetto: error: cannot write {output}: ")),
            "{stderr}"
        );
        assert!(
            !stderr.contains(".tmp") && !stderr.contains("os error"),
            "{stderr}"
        );
    }
}

/// Every command interrupted while it reads says what it read and that it
/// wrote nothing, in one line: "no trace written" only where a trace was
/// to be. The report is exported by a stand-in for nsys that waits until
/// signalled.
#[cfg(unix)]
#[test]
fn an_interrupted_reading_says_nothing_written() {
    let dir = setup();
    let d = dir.path();
    let nsys = d.join("slow-nsys");
    crate::support::nsys::stand_in(
        &nsys,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'NVIDIA Nsight Systems version \
         2022.4.2.1-0000000'; exit 0; }\ntouch \"$STARTED\"\nsleep 300 &\nwait\n",
    );
    std::fs::write(
        d.join("run.nsys-rep"),
        "NVIDIA Tegra Profiler Report 1.\nrest",
    )
    .unwrap();
    let started = d.join("started");
    for command in ["analyze", "stats"] {
        let _ = std::fs::remove_file(&started);
        let mut child = Command::new(BIN)
            .current_dir(d)
            .args([command, "run.nsys-rep", "--nsys"])
            .arg(&nsys)
            .env("STARTED", &started)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !started.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "no export after a minute"
            );
            assert!(child.try_wait().unwrap().is_none(), "{command} ended");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // SAFETY: kill(2) on the child's pid.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{command}: {stderr}");
        assert_eq!(
            stderr.trim_end(),
            "nsys2perfetto: interrupted while reading run.nsys-rep; nothing written",
            "{command}"
        );
    }
}

/// An export that says a future nsys made it is read all the same, with one
/// note per run that names the newest version tested; none with `-q`, none
/// for an export of a version tested.
#[test]
fn an_export_of_a_future_nsys_is_noted_once() {
    let dir = setup();
    let d = dir.path();
    for (name, version) in [("future.sqlite", "2099.1"), ("b.sqlite", "2025.3.2.0")] {
        std::fs::copy(demo(), d.join(name)).unwrap();
        let conn = rusqlite::Connection::open(d.join(name)).unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
             INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '{version}');"
        ))
        .unwrap();
    }
    let series = "series --param n=1 future.sqlite --param n=2 b.sqlite --events cpush";
    let lines = [
        "convert future.sqlite -o f.perfetto-trace".to_owned(),
        "merge future.sqlite b.sqlite -o m.perfetto-trace".to_owned(),
        "stats future.sqlite b.sqlite".to_owned(),
        "analyze future.sqlite".to_owned(),
        "compare future.sqlite b.sqlite".to_owned(),
        series.to_owned(),
        "report future.sqlite b.sqlite".to_owned(),
    ];
    for line in &lines {
        let args: Vec<&str> = line.split(' ').collect();
        let out = run(d, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{line}: {stderr}");
        let notes: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("newer than"))
            .collect();
        assert_eq!(notes.len(), 1, "{line}: {stderr}");
        assert!(
            notes[0].starts_with("nsys2perfetto: note: future.sqlite: made by nsys 2099.1, newer than any version tested (the newest is 2026.2)"),
            "{line}: {stderr}"
        );
        let quiet = [&args[..], &["-q"]].concat();
        let out = run(d, &quiet);
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("newer than"),
            "{line} -q"
        );
    }
}

/// `stats`, `report` and `analyze` take directories as `convert` does:
/// every export and report below, in name order, each named by its path,
/// the same answer as those files named one by one.
#[test]
fn stats_report_and_analyze_take_directories() {
    let dir = setup();
    let d = dir.path();
    std::fs::create_dir_all(d.join("runs/deep")).unwrap();
    std::fs::copy(demo(), d.join("runs/x.sqlite")).unwrap();
    std::fs::copy(demo(), d.join("runs/deep/y.sqlite")).unwrap();
    // y's kernels cannot be read: its findings differ from x's, and it warns.
    rusqlite::Connection::open(d.join("runs/deep/y.sqlite"))
        .unwrap()
        .execute_batch("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN streamId TO s")
        .unwrap();
    std::fs::write(d.join("runs/notes.txt"), "not a report").unwrap();
    for command in ["stats", "report", "analyze"] {
        let by_directory = run(d, &[command, "runs", "--format", "json"]);
        let by_file = run(
            d,
            &[
                command,
                "runs/deep/y.sqlite",
                "runs/x.sqlite",
                "--format",
                "json",
            ],
        );
        assert!(by_directory.status.success(), "{by_directory:?}");
        assert!(by_file.status.success(), "{by_file:?}");
        assert_eq!(by_directory.stdout, by_file.stdout, "{command}");
        assert!(String::from_utf8_lossy(&by_directory.stdout).contains("runs/deep/y.sqlite"));
    }
    analyze_of_a_directory_is_analyze_of_each_report(d);
    std::fs::create_dir(d.join("empty")).unwrap();
    assert_fails(
        d,
        &["stats", "empty"],
        1,
        "no .sqlite, .nsys-rep or .qdrep file below empty",
    );
}

/// `analyze runs`: each report's findings as `analyze REPORT` finds them,
/// after a line naming the report on standard output (JSON's objects name
/// it), or with `-o`, in a file of its own named after it (all or none);
/// each report's warnings naming it.
fn analyze_of_a_directory_is_analyze_of_each_report(d: &Path) {
    let reports = ["runs/deep/y.sqlite", "runs/x.sqlite"];
    let warnings = |out: &Output| -> Vec<String> {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines = stderr.lines().filter(|l| l.contains("warning:"));
        lines.map(str::to_owned).collect()
    };
    for format in ["table", "csv", "json"] {
        let by_directory = run(d, &["analyze", "runs", "--format", format]);
        assert!(by_directory.status.success(), "{by_directory:?}");
        let (mut expected, mut expected_warnings) = (String::new(), Vec::new());
        for (i, report) in reports.iter().enumerate() {
            let alone = run(d, &["analyze", report, "--format", format]);
            assert!(alone.status.success(), "{alone:?}");
            if i > 0 && format != "json" {
                expected.push('\n');
            }
            match format {
                "table" => expected += &format!("** Findings of {report}:\n\n"),
                "csv" => expected += &format!("# Findings of {report}\n"),
                _ => {}
            }
            expected += &String::from_utf8_lossy(&alone.stdout);
            expected_warnings.extend(warnings(&alone));
        }
        assert_eq!(
            String::from_utf8_lossy(&by_directory.stdout),
            expected,
            "{format}"
        );
        assert_eq!(warnings(&by_directory), expected_warnings, "{format}");
        // Only y's kernels are unreadable, and the warnings say whose.
        assert!(!expected_warnings.is_empty());
        assert!(expected_warnings
            .iter()
            .all(|w| w.contains("runs/deep/y.sqlite: ")));
    }
    let out = run(d, &["analyze", "runs", "-o", "found.csv"]);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a file per report: found_y.csv, found_x.csv"),
        "{stderr}"
    );
    assert!(!d.join("found.csv").exists());
    for (report, file) in reports.iter().zip(["found_y.csv", "found_x.csv"]) {
        let alone = run(d, &["analyze", report, "-o", "alone.csv"]);
        assert!(alone.status.success(), "{alone:?}");
        let written = std::fs::read(d.join(file)).unwrap();
        assert_eq!(
            written,
            std::fs::read(d.join("alone.csv")).unwrap(),
            "{file}"
        );
    }
    // Two reports of one name would write one file: refused before any work.
    for twin in ["twins/a", "twins/b"] {
        std::fs::create_dir_all(d.join(twin)).unwrap();
        std::fs::copy(demo(), d.join(twin).join("r.sqlite")).unwrap();
    }
    assert_fails(
        d,
        &["analyze", "twins", "-o", "t.json"],
        2,
        "would both write t_r.json",
    );
    // A report that fails after another was analyzed leaves no file.
    std::fs::write(d.join("twins/b/r.sqlite"), "not a report").unwrap();
    std::fs::rename(d.join("twins/b/r.sqlite"), d.join("twins/b/s.sqlite")).unwrap();
    assert_fails(
        d,
        &["analyze", "twins", "-o", "t.json"],
        1,
        "twins/b/s.sqlite is neither",
    );
}

/// A JSON trace stopped by the file size limit says so, as a protobuf one
/// does, not that "the trace stopped before its end" (the transcoder only
/// saw the conversion go, its temporary file past the limit).
#[cfg(unix)]
#[test]
fn a_json_conversion_past_the_size_limit_says_so() {
    let Some(input) = crate::support::fixtures::fixture("abacus_report1.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = input.to_str().unwrap();
    let args = ["convert", input, "-q", "-o", "j.json"];
    let out = crate::cli::file_size_limit::run_within(1 << 20, d, &args, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("file size limit exceeded"), "{stderr}");
    assert!(!stderr.contains("stopped before its end"), "{stderr}");
    assert_eq!(listing(d), Vec::<String>::new());
}
