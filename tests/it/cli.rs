//! The command line on bad input: one clear line, a non-zero exit, no output
//! file and nothing left behind; and on good input, the output where promised.
//! Interrupted by a signal, it leaves nothing behind either.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::checker;
use crate::support::program::{demo, BIN};

fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// A real export of ../shared/fixtures, or `None` (having said why) in a
/// fresh clone without ../shared; in CI its absence fails the test.
fn fixture(relative: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures")
        .join(relative);
    if path.is_file() {
        return Some(path);
    }
    assert!(!in_ci(), "{} is absent in CI", path.display());
    eprintln!(
        "SKIP: {} is absent (a fresh clone without ../shared)",
        path.display()
    );
    None
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("binary runs")
}

/// Fails unless `args` is refused with one error line mentioning `needle`,
/// and the directory holds nothing new afterwards.
fn assert_refused(dir: &Path, args: &[&str], needle: &str) {
    assert_refused_with(dir, args, needle, 1)
}

/// [`assert_refused`] for a command line refused before any input is read:
/// exit status 2, as for any other usage error.
fn assert_usage_refused(dir: &Path, args: &[&str], needle: &str) {
    assert_refused_with(dir, args, needle, 2)
}

fn assert_refused_with(dir: &Path, args: &[&str], needle: &str, code: i32) {
    let before = listing(dir);
    let out = run(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line, got {stderr:?}");
    assert!(lines[0].starts_with("nsys2perfetto: error: "), "{stderr}");
    assert!(
        lines[0].contains(needle),
        "{args:?}: {stderr:?} should mention {needle:?}"
    );
    assert!(!stderr.contains("panicked"));
    assert!(
        !stderr.contains("os error"),
        "{args:?}: io errors in plain words: {stderr}"
    );
    assert_eq!(listing(dir), before, "{args:?} left files behind");
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn bad_inputs_get_one_line_errors_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("text.sqlite"), "not a database\n").unwrap();
    std::fs::write(d.join("empty.sqlite"), "").unwrap();
    rusqlite::Connection::open(d.join("other.sqlite"))
        .unwrap()
        .execute_batch("CREATE TABLE t(a); INSERT INTO t VALUES (1);")
        .unwrap();
    let export = std::fs::read(demo()).unwrap();
    std::fs::write(d.join("truncated.sqlite"), &export[..export.len() / 2]).unwrap();
    std::fs::write(d.join("header-only.sqlite"), &export[..100]).unwrap();
    std::fs::write(
        d.join("fake.nsys-rep"),
        "NVIDIA Tegra Profiler Report 1.\nnothing else",
    )
    .unwrap();

    assert_refused(
        d,
        &["convert", "missing.sqlite"],
        "cannot read missing.sqlite: no such file or directory",
    );
    assert_refused(
        d,
        &["convert", "text.sqlite"],
        "neither an Nsight Systems report",
    );
    assert_refused(d, &["convert", "empty.sqlite"], "empty");
    assert_refused(
        d,
        &["convert", "other.sqlite"],
        "not an Nsight Systems export",
    );
    assert_refused(d, &["convert", "truncated.sqlite"], "damaged or truncated");
    assert_refused(d, &["convert", "header-only.sqlite"], "header-only.sqlite");
    let demo = demo();
    let demo = demo.to_str().unwrap();
    assert_usage_refused(
        d,
        &["convert", demo, "-o", "no/such/dir/out.trace"],
        "cannot write no/such/dir/out.trace: directory no/such/dir does not exist",
    );
    assert_refused(
        d,
        &["convert", "fake.nsys-rep", "--nsys", "/nonexistent/nsys"],
        "without nsys",
    );
}

#[test]
fn input_is_not_modified_and_output_lands_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("run.sqlite");
    std::fs::copy(demo(), &input).unwrap();
    let before = std::fs::read(&input).unwrap();
    let out = run(dir.path(), &["convert", "run.sqlite"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&input).unwrap(), before, "input untouched");
    assert_eq!(
        listing(dir.path()),
        ["run.perfetto-trace", "run.sqlite"],
        "no journal or temp files"
    );
    let output = dir.path().join("run.perfetto-trace");
    let trace = std::fs::read(&output).unwrap();
    assert_eq!(&trace[..2], &[0x1f, 0x8b], "gzip by default");
    crate::support::convert::check_trace(&output).assert_valid();
}

/// A trace is for sharing: it gets the permissions of any new file (0666 less
/// the umask), not the private mode of a temporary file.
#[cfg(unix)]
#[test]
fn output_gets_the_permissions_of_a_new_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("sh")
        .current_dir(dir.path())
        .args([
            "-c",
            &format!("umask 022 && exec {BIN} convert -q -o run.trace \"$0\""),
        ])
        .arg(demo())
        .status()
        .unwrap();
    assert!(status.success());
    let mode = std::fs::metadata(dir.path().join("run.trace"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);
}

#[test]
fn no_gzip_and_explicit_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &[
            "convert",
            demo().to_str().unwrap(),
            "--no-gzip",
            "-o",
            "t.pb",
            "-q",
        ],
    );
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "-q prints nothing: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = std::fs::read(dir.path().join("t.pb")).unwrap();
    assert_eq!(
        trace[0], 0x0A,
        "raw protobuf starts with Trace.packet's tag"
    );
    crate::support::convert::check_trace(&dir.path().join("t.pb")).assert_valid();
}

#[test]
fn several_inputs_each_get_their_own_output() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.sqlite", "b.sqlite"] {
        std::fs::copy(demo(), dir.path().join(name)).unwrap();
    }
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let out = run(
        dir.path(),
        &["convert", "a.sqlite", "b.sqlite", "-o", "out"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        listing(&dir.path().join("out")),
        ["a.perfetto-trace", "b.perfetto-trace"]
    );
    let summary = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        summary.lines().count(),
        2,
        "a summary line per input: {summary}"
    );
    assert!(
        summary.contains("cuda_kernel") && summary.contains("flows"),
        "{summary}"
    );
}

#[test]
fn a_failing_input_does_not_stop_the_others() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(demo(), dir.path().join("good.sqlite")).unwrap();
    let out = run(
        dir.path(),
        &["convert", "missing.sqlite", "good.sqlite", "-q"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(dir.path().join("good.perfetto-trace").is_file());
}

/// The trace never replaces an input: not the same path, nor another name
/// of the same file (a hard or symbolic link), nor another input of the run.
#[test]
fn an_output_that_is_an_input_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(demo(), d.join("run.sqlite")).unwrap();
    std::fs::hard_link(d.join("run.sqlite"), d.join("hard.sqlite")).unwrap();
    // An export named like a trace: its default output is itself.
    std::fs::copy(demo(), d.join("odd.perfetto-trace")).unwrap();
    let original = std::fs::read(demo()).unwrap();
    let refusals: &[&[&str]] = &[
        &["convert", "run.sqlite", "-o", "run.sqlite"],
        &["convert", "run.sqlite", "-o", "./run.sqlite"],
        &["convert", "run.sqlite", "-o", "hard.sqlite"],
        &["convert", "odd.perfetto-trace"],
        &["convert", "run.sqlite", "odd.perfetto-trace", "-o", "."],
    ];
    for args in refusals {
        assert_usage_refused(d, args, "is the input");
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("run.sqlite", d.join("link.trace")).unwrap();
        assert_usage_refused(
            d,
            &["convert", "run.sqlite", "-o", "link.trace"],
            "is the input",
        );
        std::fs::remove_file(d.join("link.trace")).unwrap();
    }
    // One input's trace would be another input.
    std::fs::copy(demo(), d.join("run.perfetto-trace")).unwrap();
    assert_usage_refused(
        d,
        &["convert", "odd.perfetto-trace", "run.sqlite"],
        "is the input",
    );
    std::fs::remove_file(d.join("run.perfetto-trace")).unwrap();
    for name in ["run.sqlite", "hard.sqlite", "odd.perfetto-trace"] {
        assert_eq!(std::fs::read(d.join(name)).unwrap(), original, "{name}");
    }
    // The library refuses too, before writing anything.
    let err = nsys2perfetto::convert_file(
        &d.join("run.sqlite"),
        d.join("hard.sqlite"),
        &Default::default(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("is the input"), "{err}");
    assert_eq!(std::fs::read(d.join("run.sqlite")).unwrap(), original);
    assert_eq!(
        listing(d),
        ["hard.sqlite", "odd.perfetto-trace", "run.sqlite"]
    );
}

/// Inputs whose traces would have the same name are refused before any is
/// converted: one trace never silently replaces another.
#[test]
fn inputs_that_would_share_a_trace_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["a", "b", "out"] {
        std::fs::create_dir(d.join(sub)).unwrap();
    }
    std::fs::copy(demo(), d.join("a/x.sqlite")).unwrap();
    std::fs::copy(demo(), d.join("b/x.sqlite")).unwrap();
    std::fs::write(d.join("a/x.nsys-rep"), "not looked at").unwrap();
    assert_usage_refused(
        d,
        &["convert", "a/x.sqlite", "b/x.sqlite", "-o", "out"],
        "would both be written to out/x.perfetto-trace",
    );
    assert_usage_refused(
        d,
        &["convert", "a/x.sqlite", "a/x.nsys-rep"],
        "would both be written to a/x.perfetto-trace",
    );
    assert_usage_refused(
        d,
        &["convert", "a/x.sqlite", "a/../a/x.sqlite"],
        "would both be written",
    );
    assert!(listing(&d.join("out")).is_empty());
    assert_eq!(listing(&d.join("a")), ["x.nsys-rep", "x.sqlite"]);
}

/// `-o` naming a directory (existing, or written with a trailing slash)
/// puts the trace in it under the input's name.
#[test]
fn output_directory_for_one_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(demo(), d.join("run.sqlite")).unwrap();
    std::fs::create_dir(d.join("out")).unwrap();
    for out in ["out", "out/"] {
        let result = run(d, &["convert", "run.sqlite", "-o", out, "-q"]);
        assert!(
            result.status.success(),
            "-o {out}: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        assert_eq!(listing(&d.join("out")), ["run.perfetto-trace"], "-o {out}");
        crate::support::convert::check_trace(&d.join("out/run.perfetto-trace")).assert_valid();
        std::fs::remove_file(d.join("out/run.perfetto-trace")).unwrap();
    }
    std::fs::write(d.join("file"), "").unwrap();
    assert_usage_refused(
        d,
        &["convert", "run.sqlite", "run.sqlite", "-o", "file"],
        "file is not a directory",
    );
    assert_usage_refused(
        d,
        &["convert", "run.sqlite", "run.sqlite", "-o", "missing"],
        "directory missing does not exist (write missing/ to have it made)",
    );
    assert_usage_refused(
        d,
        &["convert", "run.sqlite", "-o", "file/"],
        "file/ is not a directory",
    );
}

/// A missing directory named with a trailing slash is made, with its
/// missing parents (as `mkdir -p`), for one input, several, or directories
/// (the README's `convert runs/ -o traces/`); one named without the slash is
/// refused, and so is a file where a directory must be.
#[test]
fn a_missing_output_directory_named_with_a_slash_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("runs/a")).unwrap();
    std::fs::copy(demo(), d.join("run.sqlite")).unwrap();
    std::fs::copy(demo(), d.join("runs/a/x.sqlite")).unwrap();
    let converted = |args: &[&str]| {
        let out = run(d, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
    };
    converted(&["convert", "run.sqlite", "-o", "new/", "-q"]);
    assert_eq!(listing(&d.join("new")), ["run.perfetto-trace"]);
    converted(&["convert", "run.sqlite", "-o", "deep/er/", "-q"]);
    assert_eq!(listing(&d.join("deep/er")), ["run.perfetto-trace"]);
    converted(&["convert", "runs/", "-o", "traces/", "-q"]);
    assert_eq!(listing(&d.join("traces/a")), ["x.perfetto-trace"]);
    crate::support::convert::check_trace(&d.join("traces/a/x.perfetto-trace")).assert_valid();

    assert_usage_refused(
        d,
        &["convert", "runs/", "-o", "elsewhere"],
        "directory elsewhere does not exist (write elsewhere/ to have it made)",
    );
    std::fs::write(d.join("file"), "").unwrap();
    assert_usage_refused(
        d,
        &["convert", "runs/", "-o", "file"],
        "file is not a directory",
    );
    assert_usage_refused(
        d,
        &["convert", "runs/", "-o", "file/"],
        "file/ is not a directory",
    );
}

/// An output's name and the format asked for never disagree silently: a
/// `--format` the name contradicts, or a `--level` for plain JSON, is
/// refused in one line naming both, before anything is read.
#[test]
fn a_format_or_level_the_output_name_contradicts_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(demo(), d.join("run.sqlite")).unwrap();
    let refusals: &[(&[&str], &str)] = &[
        (
            &[
                "convert",
                "run.sqlite",
                "--format",
                "perfetto",
                "-o",
                "x.json",
            ],
            "--format perfetto and the output x.json disagree",
        ),
        (
            &[
                "convert",
                "run.sqlite",
                "--format",
                "json",
                "-o",
                "x.perfetto-trace",
            ],
            "--format json and the output x.perfetto-trace disagree",
        ),
        (
            &["convert", "run.sqlite", "-o", "x.json", "--level", "5"],
            "--level and the output x.json, plain JSON",
        ),
        (
            &["convert", "run.sqlite", "--format", "json", "--level", "5"],
            "--level with plain JSON",
        ),
        (
            &[
                "merge",
                "run.sqlite",
                "--format",
                "perfetto",
                "-o",
                "m.json",
            ],
            "--format perfetto and the output m.json disagree",
        ),
        (
            &["merge", "run.sqlite", "-o", "m.json", "--level", "5"],
            "--level and the output m.json, plain JSON",
        ),
        (
            &["profile", "--format", "json", "--level", "5", "--", "true"],
            "--level with plain JSON",
        ),
    ];
    for (args, needle) in refusals {
        assert_usage_refused(d, args, needle);
    }
}

/// `merge` follows the output's name as `convert` does (JSON for .json),
/// and takes `--format` and `--exclude`; directories converted to JSON are
/// named .json, plain.
#[test]
fn merge_and_directories_write_the_format_their_names_say() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("runs")).unwrap();
    std::fs::copy(demo(), d.join("runs/a.sqlite")).unwrap();
    let ok = |args: &[&str]| {
        let out = run(d, args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {stderr}");
        stderr
    };
    let json = |name: &str| {
        let bytes = std::fs::read(d.join(name)).unwrap();
        assert!(
            bytes.starts_with(b"{\"displayTimeUnit\""),
            "{name} is not plain JSON"
        );
    };
    ok(&["merge", "runs/a.sqlite", "-o", "m.json"]);
    json("m.json");
    ok(&[
        "merge",
        "runs/a.sqlite",
        "--format",
        "json",
        "-o",
        "m.trace",
    ]);
    json("m.trace");
    let gz = std::fs::read({
        ok(&["merge", "runs/a.sqlite", "-o", "m.json.gz"]);
        d.join("m.json.gz")
    })
    .unwrap();
    assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzipped by its name");

    let all = ok(&["merge", "runs/a.sqlite", "-o", "all.perfetto-trace"]);
    assert!(all.contains("cuda_api"), "{all}");
    let lighter = ok(&[
        "merge",
        "runs/a.sqlite",
        "--exclude",
        "cuda",
        "-o",
        "light.perfetto-trace",
    ]);
    assert!(!lighter.contains("cuda_api"), "{lighter}");
    assert!(lighter.contains("nvtx"), "{lighter}");
    crate::support::convert::check_trace(&d.join("light.perfetto-trace")).assert_valid();

    ok(&["convert", "runs", "--format", "json", "-q"]);
    json("runs/a.json");
    assert!(!d.join("runs/a.perfetto-trace").exists());
}

/// A file that is not a report, but that nsys or this program made, is
/// named for what it is, with what to do: nsys's raw capture goes through
/// its QdstrmImporter; a trace is opened.
#[test]
fn a_raw_capture_or_a_trace_as_input_is_told_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("run.qdstrm"), b"raw capture bytes").unwrap();
    assert_refused(
        d,
        &["convert", "run.qdstrm"],
        "run.qdstrm is nsys's raw capture, not a report: import it with \
         `QdstrmImporter -i run.qdstrm` from the host-linux-x64 folder",
    );
    std::fs::copy(demo(), d.join("run.sqlite")).unwrap();
    let out = run(d, &["convert", "run.sqlite", "-q"]);
    assert!(out.status.success(), "{out:?}");
    std::fs::remove_file(d.join("run.sqlite")).unwrap();
    let trace = "run.perfetto-trace is already a trace, not a report: \
                 open it with `nsys2perfetto open run.perfetto-trace`";
    assert_refused(d, &["convert", "run.perfetto-trace"], trace);
    assert_refused(
        d,
        &[
            "convert",
            "run.perfetto-trace",
            "-o",
            "again.perfetto-trace",
        ],
        trace,
    );
    assert_refused(d, &["stats", "run.perfetto-trace"], trace);
}

/// `merge` of one report says "1 report".
#[test]
fn merge_counts_its_reports_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(demo(), d.join("run.sqlite")).unwrap();
    let out = run(d, &["merge", "run.sqlite", "-o", "m.perfetto-trace"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("\n1 report -> m.perfetto-trace"),
        "{stderr}"
    );
}

/// The progress bar is drawn only once there is something to count: no
/// frame of "100% 0/0 rows" (convert) or "100%" (merge) before the real one.
#[cfg(unix)]
#[test]
fn the_progress_bar_never_starts_at_100_percent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::copy(demo(), d.join("run.sqlite")).unwrap();
    // `script` gives the program a terminal, where the bar is drawn.
    let in_terminal = |command: &str| {
        let out = Command::new("script")
            .args(["-qec", command, "/dev/null"])
            .current_dir(d)
            .env("COLUMNS", "120")
            .output();
        match out {
            Ok(out) if out.status.success() => {
                Some(String::from_utf8_lossy(&out.stdout).into_owned())
            }
            Ok(out) => panic!("{command}: {out:?}"),
            Err(e) => {
                assert!(!in_ci(), "script: {e}");
                eprintln!("SKIP the_progress_bar_never_starts_at_100_percent: no `script` ({e})");
                None
            }
        }
    };
    let Some(converted) = in_terminal(&format!("{BIN} convert run.sqlite")) else {
        return;
    };
    assert!(converted.contains("run.sqlite: opening"), "{converted:?}");
    assert!(!converted.contains("0/0 rows"), "{converted:?}");
    let Some(merged) = in_terminal(&format!(
        "{BIN} merge run.sqlite run.sqlite -o m.perfetto-trace"
    )) else {
        return;
    };
    let first = merged.find('%').expect("a progress bar");
    assert!(!merged[..first].ends_with("100"), "{merged:?}");
}

/// `-o -` writes the trace to standard output; messages stay on standard error.
#[test]
fn output_to_standard_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let demo = demo();
    let out = run(d, &["convert", demo.to_str().unwrap(), "-o", "-"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        listing(d).is_empty(),
        "nothing written beside: {:?}",
        listing(d)
    );
    assert_eq!(&out.stdout[..2], &[0x1f, 0x8b], "gzip by default");
    let trace = crate::support::convert::check_bytes(&out.stdout, "the trace on standard output");
    trace.assert_valid();
    let summary = nsys2perfetto::convert_file(
        &demo,
        d.join("file.trace"),
        &Default::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(
        trace.slices.len() as u64,
        summary.slices.values().sum::<u64>()
    );
    assert_eq!(trace.flows.len() as u64, summary.flows);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("-> standard output ("), "{stderr}");

    let raw = run(
        d,
        &[
            "convert",
            demo.to_str().unwrap(),
            "-o",
            "-",
            "--no-gzip",
            "-q",
        ],
    );
    assert!(raw.status.success());
    assert!(raw.stderr.is_empty());
    assert_eq!(checker::check(&raw.stdout).slices.len(), trace.slices.len());

    std::fs::copy(&demo, d.join("a.sqlite")).unwrap();
    std::fs::remove_file(d.join("file.trace")).unwrap();
    assert_usage_refused(
        d,
        &["convert", "a.sqlite", "a.sqlite", "-o", "-"],
        "one input",
    );
}

/// Messages say what to do. Without -o, a trace goes beside its input; when
/// that directory cannot be written, the error points to -o.
#[cfg(unix)]
#[test]
fn a_read_only_input_directory_suggests_o() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ro = d.join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::copy(demo(), ro.join("run.sqlite")).unwrap();
    std::fs::set_permissions(
        ro.join("run.sqlite"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let mut command = Command::new(BIN);
    command.current_dir(d).args(["convert", "ro/run.sqlite"]);
    // Permissions do not bind root: run as nobody then, where nobody can
    // reach the program and the input (not in a clone under a directory
    // that only root may enter).
    if unsafe { libc::geteuid() } == 0 {
        let reachable = Command::new("sh")
            .args([
                "-c",
                "test -x \"$0\" && cd \"$1\" && test -r ro/run.sqlite",
                BIN,
            ])
            .arg(d)
            .uid(65534)
            .gid(65534)
            .status()
            .is_ok_and(|s| s.success());
        if !reachable {
            eprintln!(
                "SKIP a_read_only_input_directory_suggests_o: user nobody cannot reach {} or {}",
                BIN,
                d.display()
            );
            return;
        }
        command.uid(65534).gid(65534);
    }
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "nsys2perfetto: error: cannot write ro/run.perfetto-trace: permission denied; \
         use -o to write the trace elsewhere"
    );
    assert_eq!(listing(&ro), ["run.sqlite"]);
}

/// A command line that clap refuses, or whose value clap's parser refuses,
/// is refused as every other error: in one line with the program's prefix,
/// exit status 2, before anything is read.
#[test]
fn refused_values_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let demo = demo();
    let demo = demo.to_str().unwrap();
    let refusals: &[(&[&str], &str)] = &[
        (
            &["convert", demo, "--time", "5s:3s"],
            "ends before it starts",
        ),
        (
            &["convert", demo, "--time", "5:"],
            "'5' has no unit: write 5ns, 5us, 5ms or 5s",
        ),
        (
            &["merge", demo, "-o", "m.trace", "--rank-from-name", "("],
            "--rank-from-name <REGEX>': not a regular expression: unclosed group",
        ),
        // A GPU id of -1 would keep no GPU work at all; written either way,
        // it is refused alike.
        (&["convert", demo, "--gpu", "-1"], "a GPU id is 0 or more"),
        (&["convert", demo, "--gpu=-1"], "a GPU id is 0 or more"),
        (&["convert", demo, "--gpu", "0,-1"], "a GPU id is 0 or more"),
        (&["convert", demo, "--pid", "-1"], "not a process id"),
        (
            &["convert", demo, "--time", "9999999999s:"],
            "'9999999999s' is too large a time (at most 9223372036s)",
        ),
        (
            &["analyze", demo, "--util-threshold", "150"],
            "150 is not in 0..=100",
        ),
        (&["convert", demo, "--no-such-flag"], "unexpected argument"),
        (
            &["convert"],
            "required arguments were not provided: <INPUT>",
        ),
        (
            &["stats", "--report", "nope", demo],
            "invalid value 'nope' for '--report <NAME,...>' [possible values: cuda_api_sum,",
        ),
    ];
    for (args, needle) in refusals {
        assert_usage_refused(d, args, needle);
    }
    // Help and version are no errors, and stay as clap prints them.
    let help = run(d, &["convert", "--help"]);
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: nsys2perfetto convert"));
    let version = run(d, &["--version"]);
    assert!(version.status.success());
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("nsys2perfetto "));
}

/// `-o - | head -c 100`: a reader that stops early had what it wanted. The
/// conversion ends quietly with status 0 (as `git log | head` does), not
/// with "broken pipe" and a failure.
#[test]
fn a_reader_that_stops_early_ends_the_conversion_quietly() {
    use std::io::Read;
    let demo = demo();
    // JSON, 200 KiB for the demo: more than a pipe holds.
    let mut child = Command::new(BIN)
        .args(["convert", "--format", "json", "-o", "-"])
        .arg(&demo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut head = [0u8; 100];
    stdout.read_exact(&mut head).unwrap();
    assert_eq!(head[0], b'{', "the trace's JSON");
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

/// Counts read as English ("1 flow", "2 flows"), and a report without
/// slices says what it has instead of "no events".
#[test]
fn summary_lines_read_right() {
    let Some(jacc) = fixture("sqlite/jacc_cg_trace.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["convert", jacc.to_str().unwrap(), "-o", "t.trace"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let line = stderr.lines().last().unwrap();
    assert!(!line.contains("no events"), "{line}");
    assert!(line.contains("5094 CPU samples"), "{line}");
    assert!(!line.contains("0 flows"), "{line}");
}

/// An export without any event table converts to an empty trace, and says so.
#[test]
fn an_export_without_event_tables_is_said_to_be_empty() {
    let Some(kmeans) = fixture("sqlite/kmeans_report1.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["convert", kmeans.to_str().unwrap(), "-o", "t.trace"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].starts_with("nsys2perfetto: warning: ") && lines[0].contains("no event tables"),
        "{stderr}"
    );
    assert!(lines[1].contains("no events"), "{stderr}");
    crate::support::convert::check_trace(&dir.path().join("t.trace")).assert_valid();
}

/// `convert --help` names every part `--exclude` takes.
/// `--level`'s help says the default level (the flag has no default value of
/// its own: it is refused where it means nothing).
#[test]
fn level_help_says_the_default() {
    for command in ["convert", "merge", "profile"] {
        let out = run(Path::new("."), &[command, "--help"]);
        let help = String::from_utf8_lossy(&out.stdout);
        let default = format!("(default: {})", nsys2perfetto::DEFAULT_GZIP_LEVEL);
        assert!(help.contains(&default), "{command}: {help}");
    }
}

#[test]
fn help_lists_every_part() {
    let out = Command::new(BIN)
        .args(["convert", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let exclude = &help[help.find("--exclude").expect("--exclude documented")..];
    let exclude = &exclude[..exclude.find("--nsys").unwrap_or(exclude.len())];
    for part in nsys2perfetto::Part::ALL {
        assert!(
            exclude.contains(part.name()),
            "--exclude help misses {}: {exclude}",
            part.name()
        );
    }
}

/// Signals: SIGINT and SIGTERM stop a conversion cleanly, with exit status
/// 128 + the signal's number, one line, and nothing left behind.
#[cfg(unix)]
mod signals {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Child;
    use std::time::{Duration, Instant};

    /// Polls `ready` for up to a minute (a loaded machine is slow), failing
    /// the test if the child exits first.
    fn wait_for(child: &mut Child, what: &str, mut ready: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !ready() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("exited ({status}) before {what}");
            }
            assert!(Instant::now() < deadline, "no {what} after a minute");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn signal(child: &Child, signal: i32) {
        let pid = child.id() as libc::pid_t;
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
    }

    fn temp_files(dir: &Path) -> Vec<String> {
        listing(dir)
            .into_iter()
            .filter(|n| n.starts_with(".nsys2perfetto-"))
            .collect()
    }

    /// An export big enough that converting it takes a while: the demo's
    /// API calls repeated 10,000 times (2.2 M rows).
    fn big_export(path: &Path) {
        std::fs::copy(demo(), path).unwrap();
        rusqlite::Connection::open(path)
            .unwrap()
            .execute_batch(
                "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < 10000)
                 INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME
                 SELECT start + n * 10000000, end + n * 10000000, eventClass, globalTid,
                        correlationId + n * 1000000, nameId, returnValue, callchainId
                 FROM CUPTI_ACTIVITY_KIND_RUNTIME, k ORDER BY 1",
            )
            .unwrap();
    }

    #[test]
    fn an_interrupted_conversion_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        big_export(&d.join("big.sqlite"));
        for (sig, name, code) in [
            (libc::SIGINT, "SIGINT", 130),
            (libc::SIGTERM, "SIGTERM", 143),
        ] {
            let mut child = Command::new(BIN)
                .current_dir(d)
                .args(["convert", "big.sqlite"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // Signalled while it converts: the temporary trace is made
            // before the first row is read (and filled only at the end, too
            // briefly to be caught on a loaded machine).
            wait_for(&mut child, "a temporary trace", || {
                !temp_files(d).is_empty()
            });
            signal(&child, sig);
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(code),
                "{name}: exits by itself, with 128 + {sig} ({:?}): {stderr}",
                out.status.signal()
            );
            assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
            assert!(
                stderr.starts_with("nsys2perfetto: interrupted") && stderr.contains("big.sqlite"),
                "{name}: {stderr}"
            );
            assert_eq!(listing(d), ["big.sqlite"], "{name} left files behind");
        }
    }

    /// A stand-in for `nsys export` that writes part of its export, then
    /// waits in a child of its own (as a real nsys's helpers would), having
    /// noted that child's pid in `$FAKE_NSYS_PID`.
    const SLOW_NSYS: &str = r#"#!/bin/sh
if [ "$1" = "--version" ]; then
    echo "NVIDIA Nsight Systems version 2099.1.1.1-0000000"
    exit 0
fi
out=
while [ $# -gt 0 ]; do
    if [ "$1" = "--output" ]; then out=$2; fi
    shift
done
echo "partial" > "$out"
sleep 300 &
echo $! > "$FAKE_NSYS_PID.tmp"
mv "$FAKE_NSYS_PID.tmp" "$FAKE_NSYS_PID"
wait
"#;

    fn alive(pid: i32) -> bool {
        // A zombie has finished: only its exit status is left to collect.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|stat| !stat.split(") ").nth(1).unwrap_or("").starts_with('Z'))
    }

    #[test]
    fn an_interrupted_export_kills_nsys_and_removes_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let nsys = d.join("slow-nsys");
        crate::support::nsys::stand_in(&nsys, SLOW_NSYS);
        std::fs::write(
            d.join("run.nsys-rep"),
            "NVIDIA Tegra Profiler Report 1.\nrest",
        )
        .unwrap();
        let tmp = d.join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let pid_file = d.join("nsys.pid");
        for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
            let _ = std::fs::remove_file(&pid_file);
            let mut child = Command::new(BIN)
                .current_dir(d)
                .args(["convert", "run.nsys-rep", "--nsys"])
                .arg(&nsys)
                .env("TMPDIR", &tmp)
                .env("FAKE_NSYS_PID", &pid_file)
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            wait_for(&mut child, "nsys's export", || pid_file.is_file());
            let helper: i32 = std::fs::read_to_string(&pid_file)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert_eq!(listing(&tmp).len(), 1, "the export's directory");
            signal(&child, sig);
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(code), "{stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert_eq!(
                crate::support::program::left_in_temp_dir(&tmp),
                Vec::<std::path::PathBuf>::new(),
                "export left behind"
            );
            let deadline = Instant::now() + Duration::from_secs(10);
            while alive(helper) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert!(!alive(helper), "nsys's child {helper} still runs");
            assert_eq!(listing(d), ["nsys.pid", "run.nsys-rep", "slow-nsys", "tmp"]);
        }
    }
}

/// The library's cancellation flag, set before the conversion starts: it
/// fails as interrupted, having written nothing.
#[test]
fn a_cancelled_conversion_writes_nothing() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let mut options = nsys2perfetto::Options::default();
    options.read.cancel = Some(Arc::new(AtomicBool::new(true)));
    let output = dir.path().join("t.trace");
    let err = nsys2perfetto::convert_file(&demo(), &output, &options, &mut |_| {}).unwrap_err();
    assert!(
        matches!(err, nsys2perfetto::Error::Interrupted { .. }),
        "{err}"
    );
    let err =
        nsys2perfetto::convert_to_writer(&demo(), Vec::new(), &options, &mut |_| {}).unwrap_err();
    assert!(
        matches!(err, nsys2perfetto::Error::Interrupted { .. }),
        "{err}"
    );
    assert!(listing(dir.path()).is_empty());
}

/// A named pipe as the output is written into, not replaced by a file (the
/// rule that keeps `-o /dev/null` and `-o /dev/stdout` from replacing those
/// devices for the whole machine).
#[cfg(unix)]
#[test]
fn a_pipe_as_output_is_written_into_not_replaced() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("trace.fifo");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    for args in [
        vec!["convert", demo().to_str().unwrap(), "-o"],
        vec!["stats", demo().to_str().unwrap(), "-o"],
    ] {
        let child = Command::new(BIN)
            .args(&args)
            .arg(&fifo)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut bytes = Vec::new();
        std::fs::File::open(&fifo)
            .unwrap()
            .read_to_end(&mut bytes)
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!bytes.is_empty(), "{args:?}: nothing came through the pipe");
        if args[0] == "convert" {
            assert_eq!(bytes[..2], [0x1f, 0x8b], "a gzipped trace");
        }
        let kind = std::fs::metadata(&fifo).unwrap().file_type();
        assert!(
            std::os::unix::fs::FileTypeExt::is_fifo(&kind),
            "{args:?} replaced the pipe"
        );
        assert_eq!(
            listing(dir.path()),
            ["trace.fifo"],
            "{args:?} left files behind"
        );
    }
}

/// Inputs that are not regular files: a named pipe would block the open
/// until some writer came (for ever, and through the first Ctrl-C, which
/// only asks the conversion to stop), a device may never end. Each command
/// refuses them at once, in one line, leaving nothing behind.
#[cfg(unix)]
#[test]
fn a_named_pipe_or_device_as_input_is_refused_at_once() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("run.sqlite");
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    std::fs::copy(demo(), d.join("demo.sqlite")).unwrap();
    let cases: [(&[&str], &str); 8] = [
        (&["convert", "run.sqlite"], "a named pipe (FIFO)"),
        (&["convert", "/dev/zero"], "a character device"),
        (&["stats", "run.sqlite"], "a named pipe (FIFO)"),
        (&["analyze", "run.sqlite"], "a named pipe (FIFO)"),
        (
            &["compare", "demo.sqlite", "run.sqlite"],
            "a named pipe (FIFO)",
        ),
        (
            &[
                "merge",
                "demo.sqlite",
                "run.sqlite",
                "-o",
                "m.perfetto-trace",
            ],
            "a named pipe (FIFO)",
        ),
        (
            &[
                "series",
                "-q",
                "--param",
                "n=1",
                "run.sqlite",
                "--events",
                "cpush",
            ],
            "a named pipe (FIFO)",
        ),
        (
            &["open", "run.sqlite", "--no-browser"],
            "a named pipe (FIFO)",
        ),
    ];
    for (args, what) in cases {
        let before = listing(d);
        let mut child = Command::new(BIN)
            .current_dir(d)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A loaded machine is slow, but not a minute slow to refuse.
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if child.try_wait().unwrap().is_none() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?}: still waiting on its input after a minute");
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one line: {stderr}");
        assert!(
            stderr.starts_with("nsys2perfetto: error: cannot read ")
                && stderr.contains(&format!("it is {what}, not a regular file")),
            "{args:?}: {stderr}"
        );
        assert_eq!(listing(d), before, "{args:?} left files behind");
    }
}

/// Past the file size limit (`ulimit -f`), every command that writes a file
/// fails with one line that says so, and leaves no temporary file behind,
/// where SIGXFSZ used to kill it mid-write.
#[cfg(unix)]
pub(crate) mod file_size_limit {
    use super::*;
    use std::os::unix::process::{CommandExt, ExitStatusExt};

    /// The soft limit, in bytes: less than any of the outputs below, and
    /// than the temporary files their commands write.
    const LIMIT: u64 = 100;

    /// Runs the binary in `dir` with `args` under the file size limit.
    fn run_limited(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
        run_within(LIMIT, dir, args, env)
    }

    /// Runs the binary in `dir` with `args` under a file size limit of
    /// `bytes`.
    pub(crate) fn run_within(
        bytes: u64,
        dir: &Path,
        args: &[&str],
        env: &[(&str, &Path)],
    ) -> Output {
        let mut command = Command::new(BIN);
        command.current_dir(dir).args(args);
        for (name, value) in env {
            command.env(name, value);
        }
        // SAFETY: only setrlimit(2), async-signal-safe, between fork and exec.
        unsafe {
            command.pre_exec(move || {
                let mut limit = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                limit.rlim_cur = bytes as libc::rlim_t;
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command.output().unwrap()
    }

    /// A stand-in for `nsys profile`: it runs the command, then makes the
    /// report a copy of `$REPORT` (an export, which reads as one), having
    /// raised its own file size limit (the hard limit is not lowered).
    const PROFILING_NSYS: &str = r#"#!/bin/sh
if [ "$1" = "--version" ]; then
    echo "NVIDIA Nsight Systems version 2022.4.2.1-0000000"
    exit 0
fi
shift
out=
while [ $# -gt 0 ]; do
    case "$1" in
        --output) out=$2; shift 2 ;;
        --*) shift ;;
        *) break ;;
    esac
done
"$@"
ulimit -f unlimited
cp "$REPORT" "$out.nsys-rep"
"#;

    /// The file that `args` write: the last argument but for `-q` and
    /// profile's command; a directory's trace.
    fn output(args: &[&str]) -> String {
        match args[0] {
            "convert" if args[1] == "runs" => "traces/c.perfetto-trace".to_owned(),
            "profile" => "run.perfetto-trace".to_owned(),
            "series" => "plot.svg".to_owned(),
            _ => args.iter().rev().find(|a| **a != "-q").unwrap().to_string(),
        }
    }

    #[test]
    fn a_write_past_the_limit_is_an_error_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for name in ["a.sqlite", "b.sqlite", "runs/c.sqlite"] {
            std::fs::create_dir_all(d.join(name).parent().unwrap()).unwrap();
            std::fs::copy(demo(), d.join(name)).unwrap();
        }
        let nsys = d.join("nsys");
        crate::support::nsys::stand_in(&nsys, PROFILING_NSYS);
        let nsys = nsys.to_str().unwrap();
        let cases: [&[&str]; 9] = [
            &["convert", "a.sqlite", "-q", "-o", "a.perfetto-trace"],
            &["convert", "a.sqlite", "-q", "-o", "a.json"],
            &["convert", "runs", "-q", "-o", "traces/"],
            &[
                "merge",
                "a.sqlite",
                "b.sqlite",
                "-q",
                "-o",
                "m.perfetto-trace",
            ],
            &["stats", "a.sqlite", "-o", "stats.txt"],
            &["analyze", "a.sqlite", "-o", "findings.txt"],
            &[
                "compare",
                "a.sqlite",
                "b.sqlite",
                "--trace",
                "both.perfetto-trace",
            ],
            &[
                "series", "--param", "n=1", "a.sqlite", "--param", "n=2", "b.sqlite", "--events",
                "cpush", "--svg", "plot.svg", "-q",
            ],
            &["profile", "-q", "-o", "run", "--nsys", nsys, "--", "true"],
        ];
        for args in cases {
            let before = listing(d);
            let out = run_limited(d, args, &[("REPORT", &demo())]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.signal(),
                None,
                "{args:?}: killed by a signal: {stderr}"
            );
            assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
            // One line: the error, or the row of the file in a directory's
            // table.
            let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error: ")).collect();
            assert_eq!(errors.len(), 1, "{args:?}: one error line: {stderr}");
            assert!(
                errors[0].contains(&format!(
                    "cannot write {}: file size limit exceeded (ulimit -f: {LIMIT} bytes)",
                    output(args)
                )),
                "{args:?}: {stderr}"
            );
            assert!(!stderr.contains("os error"), "{args:?}: {stderr}");
            // The report nsys made stays (as after any failed conversion);
            // no temporary file, no partial output.
            let made = |n: &String| n != "run.nsys-rep" && n != "traces";
            let mut after = listing(d);
            after.retain(made);
            assert_eq!(
                after,
                before.into_iter().filter(made).collect::<Vec<_>>(),
                "{args:?} left files behind"
            );
            if d.join("traces").is_dir() {
                assert!(listing(&d.join("traces")).is_empty(), "{args:?}");
            }
        }
    }
}
