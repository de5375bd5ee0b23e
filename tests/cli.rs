//! The command line on bad input: one clear line, a non-zero exit, no output
//! file and nothing left behind; and on good input, the output where promised.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_nsys2perfetto");

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/demo.sqlite")
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
    let before = listing(dir);
    let out = run(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line, got {stderr:?}");
    assert!(lines[0].starts_with("nsys2perfetto: error: "), "{stderr}");
    assert!(
        lines[0].contains(needle),
        "{args:?}: {stderr:?} should mention {needle:?}"
    );
    assert!(!stderr.contains("panicked"));
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
        "cannot read missing.sqlite",
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
    assert_refused(d, &["convert", "."], "is a directory");
    let demo = demo();
    let demo = demo.to_str().unwrap();
    assert_refused(
        d,
        &["convert", demo, "-o", "no/such/dir/out.trace"],
        "cannot write no/such/dir/out.trace",
    );
    let stderr =
        String::from_utf8(run(d, &["convert", demo, "-o", "no/such/out.trace"]).stderr).unwrap();
    assert!(
        stderr
            .trim_end()
            .ends_with("cannot write no/such/out.trace: no file can be created in its directory"),
        "the error names the output, not a temporary file: {stderr}"
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
    support::convert::check_trace(&output).assert_valid();
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
    support::convert::check_trace(&dir.path().join("t.pb")).assert_valid();
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
