//! `convert DIR`: every report below a directory, converted in parallel;
//! one broken file fails alone.

use std::path::Path;
use std::process::Command;

use crate::support::fixtures::{require, Need};
use crate::support::program::BIN;

/// A tree of links to real exports and reports, an export beside its own
/// report, and a broken file.
fn tree(shared: &Path, root: &Path) {
    let fixtures = shared.join("fixtures");
    let link = |from: &str, to: &str| {
        let to = root.join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(fixtures.join(from), to).unwrap();
    };
    link("sqlite/nsys-ai_mock.sqlite", "a/mock.sqlite");
    link("sqlite/nsys-ai_healthy_1pct.sqlite", "a/b/healthy.sqlite");
    link("reports/dlprof_nsys_profile.nsys-rep", "c/dlprof.nsys-rep");
    // The report's own export, beside it but older: converted once, as the
    // report, exported again.
    let export = root.join("c/dlprof.sqlite");
    let bytes = std::fs::read(fixtures.join("sqlite/dlprof_nsys_profile.sqlite")).unwrap();
    std::fs::write(&export, bytes).unwrap();
    set_modified(&export, std::time::SystemTime::UNIX_EPOCH);
    std::fs::write(root.join("a/b/broken.sqlite"), b"not a database at all").unwrap();
    std::fs::write(root.join("a/notes.txt"), b"not a report").unwrap();
}

/// Sets the modification time of `path`, a file this test wrote.
fn set_modified(path: &Path, time: std::time::SystemTime) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_directory_converts_every_report_below_and_one_failure_fails_alone() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    if require(Need::Nsys).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let output = dir.path().join("out");
    tree(&shared, &input);
    std::fs::create_dir(&output).unwrap();
    let run = Command::new(BIN)
        .arg("convert")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .args(["-j", "2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    // The table names every file, the broken one with its error.
    for name in [
        "mock.sqlite",
        "healthy.sqlite",
        "dlprof.nsys-rep",
        "broken.sqlite",
    ] {
        assert!(stderr.contains(name), "{name} not in: {stderr}");
    }
    assert!(!stderr.contains("dlprof.sqlite"), "{stderr}");
    assert!(stderr.contains("3 converted, 1 failed"), "{stderr}");
    let broken_line = stderr
        .lines()
        .find(|l| l.contains("broken.sqlite"))
        .unwrap();
    assert!(broken_line.contains("error:"), "{broken_line}");

    // The output mirrors the tree; each trace is valid and holds what a
    // conversion of its own file holds.
    let expected = [
        ("a/mock.perfetto-trace", "a/mock.sqlite"),
        ("a/b/healthy.perfetto-trace", "a/b/healthy.sqlite"),
        ("c/dlprof.perfetto-trace", "c/dlprof.nsys-rep"),
    ];
    for (trace, source) in expected {
        let trace = output.join(trace);
        assert!(trace.is_file(), "{} missing", trace.display());
        let checked = crate::support::convert::check_trace(&trace);
        checked.assert_valid();
        let (single, _) = crate::support::convert::convert(
            &input.join(source),
            &nsys2perfetto::Options::default(),
        );
        assert_eq!(checked.slices.len(), single.slices.len(), "{source}");
        let events: u64 = checked.slices.len() as u64;
        // The file's row of the table (its warnings, printed before the
        // table, name it too).
        let line = stderr
            .lines()
            .filter(|l| !l.starts_with("nsys2perfetto: warning:"))
            .find(|l| l.contains(Path::new(source).file_name().unwrap().to_str().unwrap()))
            .unwrap();
        assert!(
            line.split_whitespace()
                .any(|w| w.parse::<u64>().ok() >= Some(events)),
            "{line}"
        );
    }
    assert!(!output.join("a/b/broken.perfetto-trace").exists());
    let written: Vec<_> = walk(&output);
    assert_eq!(written.len(), 3, "{written:?}");
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn without_o_traces_go_beside_their_reports() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir_all(input.join("x")).unwrap();
    std::os::unix::fs::symlink(
        shared.join("fixtures/sqlite/nsys-ai_mock.sqlite"),
        input.join("x/mock.sqlite"),
    )
    .unwrap();
    let run = Command::new(BIN)
        .arg("convert")
        .arg(&input)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.stderr.is_empty(), "--quiet prints nothing on success");
    crate::support::convert::check_trace(&input.join("x/mock.perfetto-trace")).assert_valid();
}

#[test]
fn a_directory_with_nothing_to_convert_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"text").unwrap();
    let run = Command::new(BIN)
        .arg("convert")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("no .sqlite, .nsys-rep or .qdrep file"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn two_directories_that_would_write_one_trace_are_refused_before_converting() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    for sub in ["x", "y"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        std::os::unix::fs::symlink(
            shared.join("fixtures/sqlite/nsys-ai_mock.sqlite"),
            dir.path().join(sub).join("mock.sqlite"),
        )
        .unwrap();
    }
    let run = Command::new(BIN)
        .arg("convert")
        .arg(dir.path().join("x"))
        .arg(dir.path().join("y"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("would both be written to"), "{stderr}");
    assert_eq!(walk(&out).len(), 0, "nothing converted");
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_directory_conversion_prints_each_files_warnings_and_counts_them() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let output = dir.path().join("out");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::create_dir(&output).unwrap();
    let file = input.join("icon_gpu.sqlite");
    std::os::unix::fs::symlink(shared.join("fixtures/sqlite/icon_gpu.sqlite"), &file).unwrap();
    let stderr = |args: &[&std::ffi::OsStr]| {
        let run = Command::new(BIN)
            .arg("convert")
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        assert!(run.status.success(), "{stderr}");
        stderr
    };
    let warnings = |stderr: &str| -> Vec<String> {
        stderr
            .lines()
            .filter(|l| l.starts_with("nsys2perfetto: warning: "))
            .map(str::to_owned)
            .collect()
    };
    let alone = stderr(&[
        file.as_os_str(),
        "-o".as_ref(),
        dir.path().join("alone.perfetto-trace").as_os_str(),
    ]);
    let alone = warnings(&alone);
    assert!(
        alone.iter().any(|w| w.contains("start before time 0")),
        "{alone:?}"
    );
    let batch = stderr(&[input.as_os_str(), "-o".as_ref(), output.as_os_str()]);
    // The same warnings, once each, named after the file.
    assert_eq!(warnings(&batch), alone, "{batch}");
    let prefix = format!("nsys2perfetto: warning: {}: ", file.display());
    assert!(alone.iter().all(|w| w.starts_with(&prefix)), "{alone:?}");
    // The table counts them, in the column before the time.
    let mut table = batch.lines().skip_while(|l| !l.starts_with("file "));
    let header: Vec<&str> = table.next().unwrap().split_whitespace().collect();
    assert_eq!(header[header.len() - 2..], ["warnings", "time"], "{batch}");
    let row: Vec<&str> = table.next().unwrap().split_whitespace().collect();
    assert_eq!(row[row.len() - 2], alone.len().to_string(), "{batch}");
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn an_export_as_new_as_its_report_is_converted_in_its_place_without_nsys() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let output = dir.path().join("out");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::create_dir(&output).unwrap();
    // A report nsys could not read, and its export, newer: with no nsys on
    // PATH the export is all there is to convert.
    let report = input.join("run.nsys-rep");
    let export = input.join("run.sqlite");
    std::fs::write(&report, b"not a report nsys could export").unwrap();
    let bytes = std::fs::read(shared.join("fixtures/sqlite/nsys-ai_mock.sqlite")).unwrap();
    std::fs::write(&export, bytes).unwrap();
    let when = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
    set_modified(&report, when);
    set_modified(&export, when);
    let empty = dir.path().join("no-nsys");
    std::fs::create_dir(&empty).unwrap();
    let run = Command::new(BIN)
        .arg("convert")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .env("PATH", &empty)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let note = format!(
        "nsys2perfetto: note: {}: converted from its export {}",
        report.display(),
        export.display()
    );
    assert!(stderr.lines().any(|l| l.starts_with(&note)), "{stderr}");
    assert!(stderr.contains("1 converted"), "{stderr}");
    crate::support::convert::check_trace(&output.join("run.perfetto-trace")).assert_valid();
}
