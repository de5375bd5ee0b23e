//! `.nsys-rep`/`.qdrep` reports go through a real `nsys export`. These tests need
//! nsys (.ci/install-nsys installs 2022.4) and ../shared; without either they
//! say why and skip, except in CI, which must have both.

use std::path::{Path, PathBuf};

use crate::support::fixtures::{require, Need};
use crate::support::program::BIN;

/// ../shared's reports, where nsys can export them; or `None`, having said why not.
fn reports_dir() -> Option<PathBuf> {
    let dir = require(Need::Shared)?.join("fixtures/reports");
    require(Need::Nsys)?;
    Some(dir)
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn reports_convert_like_their_sqlite_exports() {
    let Some(dir) = reports_dir() else { return };
    let sqlite = dir.join("../sqlite");
    for (report, export) in [
        ("dlprof_nsys_profile.nsys-rep", "dlprof_nsys_profile.sqlite"),
        ("abacus_report1.qdrep", "abacus_report1.sqlite"),
        ("cori_run1_report1.qdrep", "cori_run1_report1.sqlite"),
    ] {
        let options = nsys2perfetto::Options::default();
        let (trace, from_report) = crate::support::convert::convert(&dir.join(report), &options);
        let (_, from_export) = crate::support::convert::convert(&sqlite.join(export), &options);
        trace.assert_valid();
        assert_eq!(
            from_report.slices, from_export.slices,
            "{report}: same events as its export"
        );
        assert_eq!(
            (from_report.flows, from_report.event_flows),
            (from_export.flows, from_export.event_flows),
            "{report}: same flows as its export"
        );
        assert_eq!(
            trace.flows.len() as u64,
            from_report.flows + from_report.event_flows
        );
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_report_too_new_for_nsys_names_both_versions() {
    let Some(dir) = reports_dir() else { return };
    let report = dir.join("jax-toolbox_cuda_graph_pdl_stream_capture.nsys-rep");
    let out = tempfile::tempdir().unwrap();
    let output = out.path().join("t.perfetto-trace");
    let err = nsys2perfetto::convert_file(&report, &output, &Default::default(), &mut |_| {})
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("captured with nsys 2025.5.1"), "{message}");
    assert!(
        message.contains("Version number is invalid"),
        "quotes nsys: {message}"
    );
    assert!(
        message.contains("use nsys 2025.5.1 or later"),
        "says what to do: {message}"
    );
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(!output.exists());
}

/// A stand-in nsys at `version` that refuses every report with `message`.
#[cfg(unix)]
fn refusing_nsys(dir: &Path, version: &str, message: &str) -> PathBuf {
    let path = dir.join(format!("nsys-{version}"));
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = \"--version\" ]; then\n  \
         echo 'NVIDIA Nsight Systems version {version}-0000000'\n  exit 0\nfi\n\
         echo '{message}' >&2\nexit 1\n"
    );
    crate::support::nsys::stand_in(&path, &script);
    path
}

/// The error of exporting `report` (its bytes) with `nsys`.
fn refusal(dir: &Path, report: &[u8], nsys: &Path) -> String {
    let input = dir.join("r.nsys-rep");
    std::fs::write(&input, report).unwrap();
    let mut options = nsys2perfetto::Options::default();
    options.read.nsys = nsys.to_owned();
    let err = nsys2perfetto::convert_file(&input, dir.join("r.trace"), &options, &mut |_| {})
        .unwrap_err();
    assert!(!dir.join("r.trace").exists());
    err.to_string()
}

const OLD_HEADER: &[u8] = b"NVIDIA Tegra Profiler Report 1.\n";

fn old_report(install_dir: &str) -> Vec<u8> {
    let mut bytes = OLD_HEADER.to_vec();
    bytes.extend_from_slice(b"\x00\x12TargetInstallDir\x00\x3a");
    bytes.extend_from_slice(install_dir.as_bytes());
    bytes.extend_from_slice(b"\x00more");
    bytes
}

/// Versions compare as numbers, and "newer" is said only when it is so.
#[cfg(unix)]
#[test]
fn advice_compares_versions_as_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nsys = refusing_nsys(d, "2022.4.2.1", "Error: something went wrong");
    // 2022.10 is newer than 2022.4, though not as text.
    let message = refusal(
        d,
        &old_report("/opt/nvidia/nsight-systems/2022.10.1/target-linux-x64"),
        &nsys,
    );
    assert!(
        message.contains("captured with nsys 2022.10.1"),
        "{message}"
    );
    assert!(message.contains("use nsys 2022.10.1 or later"), "{message}");
    // An older capture: nothing about versions to fix.
    let message = refusal(
        d,
        &old_report("/opt/nvidia/nsight-systems/2021.5.1/target-linux-x64"),
        &nsys,
    );
    assert!(message.contains("something went wrong"), "{message}");
    assert!(!message.contains("newer"), "{message}");
    assert!(
        message.contains("check that the report is complete"),
        "{message}"
    );
}

/// A CLI that is not nsys (it does not say its version) gets no advice to
/// use a newer nsys: as text "2022.1.3" sorts after "(unknown version)".
#[cfg(unix)]
#[test]
fn a_cli_without_a_version_is_not_called_older() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let message = refusal(
        d,
        &old_report("/opt/nvidia/nsight-systems/2022.1.3/target-linux-x64"),
        Path::new("/bin/false"),
    );
    assert!(!message.contains("newer"), "{message}");
    assert!(message.contains("captured with nsys 2022.1.3"), "{message}");
    assert!(
        message.contains("/bin/false did not say its version"),
        "{message}"
    );
    assert!(!message.contains('\n'), "{message}");
}

/// nsys as shipped inside Nsight Compute records its install directory as
/// `.../nsight-compute/<version>/host/target-linux-x64`; an nsys that finds
/// the report's version unsupported means the report is newer, even when
/// its version cannot be read.
#[cfg(unix)]
#[test]
fn unsupported_versions_are_called_newer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nsys = refusing_nsys(d, "2024.1.1.59", "Version not supported");
    let message = refusal(
        d,
        &old_report("/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64"),
        &nsys,
    );
    assert!(message.contains("captured with nsys 2025.3.1"), "{message}");
    assert!(message.contains("Version not supported"), "{message}");
    assert!(message.contains("use nsys 2025.3.1 or later"), "{message}");
    assert!(
        !message.contains("check that the report is complete"),
        "{message}"
    );

    let mut unknown = OLD_HEADER.to_vec();
    unknown.extend_from_slice(b"no install directory here");
    let message = refusal(d, &unknown, &nsys);
    assert!(message.contains("newer"), "{message}");
    assert!(
        !message.contains("check that the report is complete"),
        "{message}"
    );
}

/// Exports record the install directory of the nsys that captured them; its
/// version is read from each form it takes.
#[test]
fn exports_name_the_nsys_that_captured_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/sqlite");
    if !root.is_dir() {
        assert!(
            std::env::var_os("CI").is_none_or(|v| v.is_empty()),
            "{} is absent in CI",
            root.display()
        );
        eprintln!("SKIP: {} is absent", root.display());
        return;
    }
    for (export, version) in [
        // .../nsight-compute/2025.3.1/host/target-linux-x64
        ("h100_torch_graph_node.sqlite", Some("2025.3.1")),
        // /usr/local/cuda-12.1/nsight-systems-2023.1.2/target-linux-x64
        ("memfusion_report1.sqlite", Some("2023.1.2")),
        // /opt/nvidia/nsight-systems/2022.1.3/target-linux-x64
        ("dlprof_nsys_profile.sqlite", Some("2022.1.3")),
        ("kmeans_report1.sqlite", None),
    ] {
        let report = nsys2perfetto::Report::open(&root.join(export)).unwrap();
        assert_eq!(report.capture_version(), version, "{export}");
    }
}

/// Rank 5 of the Cori job ran on GPU 5 of its node, and its export says
/// deviceId 0 for every synchronization (CUPTI records none for them): they
/// are on GPU 5 with the rank's kernels, `--gpu 5` keeps them all and
/// `--gpu 0` none.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_rank_s_synchronizations_are_on_its_gpu_and_kept_by_it() {
    let Some(dir) = reports_dir() else { return };
    let report = dir.join("cori_run1_report5.qdrep");
    let Some(exports) = crate::support::fixtures::cori_exports(5) else {
        return;
    };
    let db = crate::support::source::open(&exports[4]);
    let count = |sql: &str| db.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64;
    let gpus = count("SELECT COUNT(DISTINCT deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL");
    assert_eq!(gpus, 1);
    let gpu = count("SELECT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1") as i64;
    let sync = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
    let syncs = count(&format!("SELECT COUNT(*) FROM {sync} WHERE start >= 0"));
    assert!(gpu != 0 && syncs > 0, "GPU {gpu}, {syncs} synchronizations");
    assert_eq!(
        count(&format!(
            "SELECT COUNT(*) FROM {sync} WHERE start >= 0 AND deviceId = 0"
        )),
        syncs,
        "the export puts them on device 0"
    );
    let filtered = |gpus: i64| {
        let mut options = nsys2perfetto::Options::default();
        options.filter = nsys2perfetto::Filter::default().gpus([gpus]);
        crate::support::convert::convert(&report, &options)
    };
    let (trace, summary) = filtered(gpu);
    trace.assert_valid();
    assert_eq!(trace.count("cuda_sync"), syncs);
    let places: Vec<_> = trace.by_gpu_place("cuda_sync").into_keys().collect();
    assert!(places.iter().all(|&(g, _)| g == gpu), "{places:?}");
    assert!(!summary.filtered_out.contains_key("cuda_sync"), "{summary}");
    let (trace, summary) = filtered(0);
    trace.assert_valid();
    assert_eq!(trace.count("cuda_sync"), 0);
    assert_eq!(summary.filtered_out.get("cuda_sync"), Some(&syncs));
}

/// A stand-in for `nsys export` that runs out of room as nsys 2022.4 does:
/// part of the export written, then SQLite's "database or disk is full"
/// behind nsys's internal "Failed to de-initialize insert statement".
#[cfg(unix)]
const FULL_DISK_NSYS: &str = r#"#!/bin/sh
if [ "$1" = "--version" ]; then
    echo "NVIDIA Nsight Systems version 2022.4.2.1-df9881f"
    exit 0
fi
out=
while [ $# -gt 0 ]; do
    if [ "$1" = "--output" ]; then out=$2; fi
    shift
done
head -c 106496 /dev/zero > "$out"
cat >&2 <<'SAID'
Failed to de-initialize insert statement: /build/QuadD/Tools/QdrepExporter/Source/src/export/dbapi.h(38): Throw in function void Nvidia::QuadD::DBConnection::check(int, Callable, Args&& ...)
Dynamic exception type: boost::wrapexcept<QuadDCommon::RuntimeException>
std::exception::what: RuntimeException
[QuadDCommon::tag_message*] = database or disk is full

Exportation error: database or disk is full
SAID
exit 1
"#;

/// Runs `convert <report> -q` in `dir` with `nsys` and `TMPDIR`; its
/// standard error, having checked that it failed with one line and left
/// neither a trace nor anything in `tmpdir`.
#[cfg(unix)]
fn convert_failing(dir: &Path, report: &Path, nsys: &Path, tmpdir: &Path) -> String {
    let out = std::process::Command::new(BIN)
        .current_dir(dir)
        .arg("convert")
        .arg(report)
        .args(["-q", "-o", "out.perfetto-trace", "--nsys"])
        .arg(nsys)
        .env("TMPDIR", tmpdir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("os error"), "{stderr}");
    assert!(!dir.join("out.perfetto-trace").exists());
    if tmpdir.is_dir() {
        let left = crate::support::program::left_in_temp_dir(tmpdir);
        assert!(left.is_empty(), "{left:?} left in {}", tmpdir.display());
    }
    stderr
}

/// nsys out of room in the temporary directory: the error says so, names
/// the directory and how to choose another, instead of quoting nsys's
/// internals and calling the report incomplete.
#[cfg(unix)]
#[test]
fn an_export_out_of_space_names_the_temporary_directory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nsys = d.join("nsys");
    crate::support::nsys::stand_in(&nsys, FULL_DISK_NSYS);
    std::fs::write(
        d.join("r.nsys-rep"),
        old_report("/opt/nvidia/nsight-systems/2022.4.2/x"),
    )
    .unwrap();
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let stderr = convert_failing(d, Path::new("r.nsys-rep"), &nsys, &tmp);
    assert!(
        stderr.starts_with(&format!(
            "nsys2perfetto: error: the temporary directory {} is full (nsys's export of r.nsys-rep stopped at 0.1 MiB",
            tmp.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("set TMPDIR to a directory with more room"),
        "{stderr}"
    );
    assert!(!stderr.contains("dbapi.h"), "{stderr}");
    assert!(!stderr.contains("report is complete"), "{stderr}");
}

/// A `TMPDIR` that does not exist is said not to exist, for a report's
/// export and for the temporary files of a conversion and of `analyze`.
#[cfg(unix)]
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_missing_temporary_directory_is_said_not_to_exist() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nsys = d.join("nsys");
    crate::support::nsys::stand_in(&nsys, FULL_DISK_NSYS);
    std::fs::write(d.join("r.nsys-rep"), OLD_HEADER).unwrap();
    let missing = d.join("missing");
    let expected = format!(
        "the temporary directory {} does not exist: create it, or set TMPDIR to a directory that exists",
        missing.display()
    );
    let stderr = convert_failing(d, Path::new("r.nsys-rep"), &nsys, &missing);
    assert!(
        stderr.starts_with(&format!("nsys2perfetto: error: {expected}")),
        "{stderr}"
    );
    // An export big enough that its conversion and its findings need
    // temporary files.
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let export = shared.join("fixtures/sqlite/abacus_report1.sqlite");
    for command in [&["convert", "-q"][..], &["analyze"]] {
        let out = std::process::Command::new(BIN)
            .current_dir(d)
            .args(command)
            .arg(&export)
            .args(["-o", "out.txt"])
            .env("TMPDIR", &missing)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{command:?}: {stderr}");
        assert!(stderr.contains(&expected), "{command:?}: {stderr}");
        assert!(!d.join("out.txt").exists(), "{command:?}");
    }
}

/// The real nsys, exporting into a temporary directory too small for the
/// export (a 1 MiB tmpfs: this needs the right to mount, which root in a
/// container may lack; then it says so and skips).
#[cfg(target_os = "linux")]
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_real_export_out_of_space_names_the_temporary_directory() {
    let Some(reports) = reports_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let small = d.join("small");
    std::fs::create_dir(&small).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&small)
        .output();
    match mounted {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            let said = String::from_utf8_lossy(&out.stderr);
            eprintln!("SKIP: no tmpfs could be mounted to fill: {}", said.trim());
            return;
        }
        Err(e) => {
            eprintln!("SKIP: no tmpfs could be mounted to fill: mount: {e}");
            return;
        }
    }
    /// Unmounts the tmpfs however the test ends.
    struct Mounted<'a>(&'a Path);
    impl Drop for Mounted<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _mounted = Mounted(&small);
    let report = reports.join("abacus_report1.qdrep");
    let stderr = convert_failing(d, &report, Path::new("nsys"), &small);
    assert!(
        stderr.starts_with(&format!(
            "nsys2perfetto: error: the temporary directory {} is full (nsys's export of {} stopped at ",
            small.display(),
            report.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("set TMPDIR to a directory with more room"),
        "{stderr}"
    );
}
