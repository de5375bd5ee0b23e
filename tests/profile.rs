//! `profile`: a command run under the real nsys, its report converted; the
//! raw capture imported where nsys could not; Ctrl-C leaves nothing behind.

// A test binary of its own, apart from `tests/it`: nsys 2022.4's `profile` hangs when another
// nsys runs beside it, and the tests of `tests/it` export reports with nsys in parallel; cargo
// runs test binaries one after the other.
#[allow(dead_code)]
#[path = "it/support/mod.rs"]
mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::convert::check_trace;
use crate::support::fixtures::{require, Need};

const BIN: &str = env!("CARGO_BIN_EXE_nsys2perfetto");

/// A C program with NVTX ranges: `outer` around three `inner`, a mark
/// `done`, then the exit code its first argument names, a second later (so
/// that `profile` sees it run, and tells a hang from its end).
const NVTX_PROGRAM: &str = r#"
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
  nvtxRangePushA("outer");
  for (int i = 0; i < 3; i++) { nvtxRangePushA("inner"); usleep(2000); nvtxRangePop(); }
  nvtxMarkA("done");
  nvtxRangePop();
  sleep(1);
  return argc > 1 ? atoi(argv[1]) : 0;
}
"#;

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The NVTX headers of the nsys install on PATH: `nvtx/include` beside the
/// real nsys program (`target-linux-x64`).
fn nvtx_include() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let nsys = std::env::split_paths(&path)
        .map(|d| d.join("nsys"))
        .find(|p| p.is_file())?;
    let real = std::fs::canonicalize(nsys).ok()?;
    let include = real.parent()?.join("nvtx/include");
    include
        .join("nvtx3/nvToolsExt.h")
        .is_file()
        .then_some(include)
}

/// One real nsys session at a time: tests run in parallel, and nsys 2022.4
/// sessions share one session manager.
static NSYS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How long nsys may go on after its command ended before a run counts as
/// hung: a good run of these tests' small programs ends a few seconds after
/// its command.
const HANG_AFTER_S: &str = "15";

/// Runs `profile` in `dir` with `args` (its own, after `profile`), or `None`
/// when nsys hung: nsys 2022.4 now and then never ends after the command has
/// (seen here on a loaded machine, with or without this tool). A hang is
/// what `profile` says of it, [`HANG_AFTER_S`] after the command ended; the
/// run is then stopped with SIGINT, which must end it cleanly (exit status
/// 130). A run still going after 5 minutes fails the test.
fn run_watched(dir: &Path, args: &[&str]) -> Option<Output> {
    use std::io::{BufRead, Read};
    let mut child = Command::new(BIN)
        .current_dir(dir)
        .args(["profile", "--wait-notice", HANG_AFTER_S])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, heard) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut said = Vec::new();
    let mut hung = false;
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "profile ran 5 minutes: {said:?}");
        match heard.recv_timeout(Duration::from_millis(50)) {
            Ok(line) => {
                hung |= line.contains("waiting for nsys to write its report");
                said.push(line);
            }
            Err(_) => continue,
        }
        if hung {
            signal(&child, libc::SIGINT);
            let status = child.wait().unwrap();
            reader.join().unwrap();
            said.extend(heard.try_iter());
            assert_eq!(status.code(), Some(130), "stopped after a hang: {said:?}");
            eprintln!("{args:?}: nsys hung; stopped: {said:?}");
            return None;
        }
    }
    let status = child.wait().unwrap();
    reader.join().unwrap();
    said.extend(heard.try_iter());
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    let mut stderr = said.join("\n").into_bytes();
    if !stderr.is_empty() {
        stderr.push(b'\n');
    }
    Some(Output {
        status,
        stdout,
        stderr,
    })
}

fn signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A directory holding NVTX_PROGRAM built as `nvtx_demo`, or `None` (having
/// said why) without nsys, its NVTX headers or a C compiler.
fn nvtx_demo() -> Option<tempfile::TempDir> {
    require(Need::Nsys)?;
    let Some(include) = nvtx_include() else {
        crate::support::fixtures::skip(
            "no NVTX headers beside nsys (target-linux-x64/nvtx/include)",
        );
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    build_nvtx_demo(dir.path(), &include).then_some(dir)
}

/// Builds NVTX_PROGRAM as `dir/nvtx_demo`; false (having said why) where
/// there is no C compiler.
fn build_nvtx_demo(dir: &Path, include: &Path) -> bool {
    std::fs::write(dir.join("nvtx_demo.c"), NVTX_PROGRAM).unwrap();
    let cc = Command::new("cc")
        .current_dir(dir)
        .arg("-I")
        .arg(include)
        .args(["nvtx_demo.c", "-o", "nvtx_demo", "-ldl"])
        .output();
    match cc {
        Ok(out) if out.status.success() => true,
        Ok(out) => panic!("cc failed: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => {
            crate::support::fixtures::skip(&format!("no C compiler (cc): {e}"));
            false
        }
    }
}

/// The real nsys 2022.4 profiles a C program with NVTX on this CPU-only
/// machine: the trace holds the program's ranges and mark at their nesting,
/// the command's exit code comes out, and nsys's raw capture is not left.
#[test]
fn profiles_a_c_program_and_its_nvtx_ranges() {
    let Some(dir) = nvtx_demo() else {
        return;
    };
    let d = dir.path();
    let _one_session = NSYS.lock().unwrap_or_else(|e| e.into_inner());
    let args = ["-t", "nvtx,osrt", "-o", "run", "--", "./nvtx_demo", "3"];
    // Three tries: a hang of nsys is nsys's (and is cleaned up after, which
    // run_watched checks); three in a row fail the test.
    let out = (0..3)
        .find_map(|_| run_watched(d, &args))
        .unwrap_or_else(|| panic!("nsys hung three times in a row"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "the command's exit code: {stderr}"
    );
    assert!(stderr.contains("report: run.nsys-rep"), "{stderr}");
    assert!(stderr.contains("trace:  run.perfetto-trace"), "{stderr}");
    let files = listing(d);
    assert!(
        files.contains(&"run.nsys-rep".to_owned()) && !files.contains(&"run.qdstrm".to_owned()),
        "{files:?}"
    );
    let checked = check_trace(&d.join("run.perfetto-trace"));
    assert!(checked.errors.is_empty(), "{:?}", checked.errors);
    let named =
        |name: &str| -> Vec<_> { checked.slices.iter().filter(|s| s.name == name).collect() };
    let (outer, inner, done) = (named("outer"), named("inner"), named("done"));
    assert_eq!(
        (outer.len(), inner.len(), done.len()),
        (1, 3, 1),
        "{stderr}"
    );
    let outer = outer[0];
    for slice in inner.iter().chain(&done) {
        assert!(
            slice.ts >= outer.ts && slice.ts + slice.dur <= outer.ts + outer.dur,
            "{} at {}+{} lies outside outer {}+{}",
            slice.name,
            slice.ts,
            slice.dur,
            outer.ts,
            outer.dur
        );
        assert_eq!(slice.depth, outer.depth + 1, "{}", slice.name);
    }
    // Each inner range slept 2 ms.
    assert!(inner.iter().all(|s| s.dur >= 2_000_000), "{inner:?}");
}

/// A stand-in for `nsys profile`: it runs nothing, writes the raw capture
/// `<output>.qdstrm` and exits with 5 (the command's exit code, as nsys
/// passes it on); `nsys export` is the real one's, `$REAL_NSYS`.
const QDSTRM_ONLY_NSYS: &str = r#"#!/bin/sh
if [ "$1" = "export" ] || [ "$1" = "--version" ]; then
    exec "$REAL_NSYS" "$@"
fi
out=
while [ $# -gt 0 ]; do
    if [ "$1" = "--output" ]; then out=$2; fi
    shift
done
echo "raw capture" > "$out.qdstrm"
exit 5
"#;

/// A stand-in for QdstrmImporter: it makes the report (`-o`) a copy of
/// `$REAL_REPORT`, and records its arguments in `$IMPORTER_ARGS`.
const IMPORTER: &str = r#"#!/bin/sh
echo "$@" > "$IMPORTER_ARGS"
out=
while [ $# -gt 0 ]; do
    if [ "$1" = "-o" ]; then out=$2; fi
    shift
done
cp "$REAL_REPORT" "$out"
"#;

/// Where nsys leaves only its raw capture, the QdstrmImporter of its
/// install (NVIDIA's layout: host-linux-x64 beside target-linux-x64) turns
/// it into the report, which is converted; the raw capture goes, and the
/// command's exit code comes out.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn imports_a_raw_capture_with_the_installs_importer() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let report = shared.join("fixtures/reports/dlprof_nsys_profile.nsys-rep");
    if require(Need::Nsys).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let install = d.join("nsight-systems/2022.4.2");
    std::fs::create_dir_all(install.join("target-linux-x64")).unwrap();
    std::fs::create_dir_all(install.join("host-linux-x64")).unwrap();
    let nsys = install.join("target-linux-x64/nsys");
    executable(&nsys, QDSTRM_ONLY_NSYS);
    executable(&install.join("host-linux-x64/QdstrmImporter"), IMPORTER);
    let work = d.join("work");
    std::fs::create_dir(&work).unwrap();
    let out = Command::new(BIN)
        .current_dir(&work)
        .args(["profile", "-o", "run", "--nsys"])
        .arg(&nsys)
        .args(["--", "true"])
        .env("REAL_NSYS", "nsys")
        .env("REAL_REPORT", &report)
        .env("IMPORTER_ARGS", d.join("importer-args"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(5),
        "the command's exit code: {stderr}"
    );
    let args = std::fs::read_to_string(d.join("importer-args")).unwrap();
    assert!(args.contains("-i run.qdstrm -o run.nsys-rep"), "{args}");
    assert!(stderr.contains("imported by"), "{stderr}");
    assert_eq!(
        listing(&work),
        ["run.nsys-rep", "run.perfetto-trace"],
        "{stderr}"
    );
    let checked = check_trace(&work.join("run.perfetto-trace"));
    assert!(checked.errors.is_empty(), "{:?}", checked.errors);
    // The report's 46 kernels (fixtures README).
    let kernels = checked
        .slices
        .iter()
        .filter(|s| s.category == "cuda_kernel")
        .count();
    assert_eq!(kernels, 46, "{stderr}");
}

/// With no importer near nsys nor on PATH, the error says which file is
/// left and how to import it; the raw capture stays, nothing else appears.
#[test]
fn says_which_raw_capture_is_left_without_an_importer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("bin")).unwrap();
    let nsys = d.join("bin/nsys");
    executable(&nsys, QDSTRM_ONLY_NSYS);
    let out = Command::new(BIN)
        .current_dir(d)
        .args(["profile", "-o", "run", "--nsys"])
        .arg(&nsys)
        .args(["--", "true"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if Path::new("/usr/bin/QdstrmImporter").exists() || Path::new("/bin/QdstrmImporter").exists() {
        crate::support::fixtures::skip("a QdstrmImporter is on /usr/bin or /bin");
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("nsys2perfetto: error: nsys left only run.qdstrm")
            && stderr.contains("QdstrmImporter -i run.qdstrm"),
        "{stderr}"
    );
    assert_eq!(listing(d), ["bin", "run.qdstrm"]);
}

/// A stand-in for `nsys profile` that runs the command in a child of its
/// own and waits, having noted the child's pid in `$FAKE_NSYS_PID`.
const WAITING_NSYS: &str = r#"#!/bin/sh
out=
while [ $# -gt 0 ]; do
    if [ "$1" = "--output" ]; then out=$2; fi
    shift
done
echo "raw capture" > "$out.qdstrm"
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

/// Ctrl-C while profiling: nsys and what it runs are stopped, what it wrote
/// is removed, and the exit status is 130.
#[test]
fn ctrl_c_stops_nsys_and_keeps_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nsys = d.join("nsys");
    executable(&nsys, WAITING_NSYS);
    let pid_file = d.join("nsys.pid");
    let mut child = Command::new(BIN)
        .current_dir(d)
        .args(["profile", "-o", "run", "--nsys"])
        .arg(&nsys)
        .args(["--", "true"])
        .env("FAKE_NSYS_PID", &pid_file)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pid_file.is_file() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "exited before nsys ran"
        );
        assert!(Instant::now() < deadline, "nsys did not start in a minute");
        std::thread::sleep(Duration::from_millis(5));
    }
    let helper: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("nsys2perfetto: interrupted while profiling true"),
        "{stderr}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(helper) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!alive(helper), "nsys's child {helper} still runs");
    assert_eq!(listing(d), ["nsys", "nsys.pid"]);
}

/// Bad command lines: one line, a non-zero exit, nothing written, and nsys
/// never run where the command line is at fault.
#[test]
fn refuses_bad_command_lines() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("taken.nsys-rep"), b"").unwrap();
    std::fs::write(d.join("done.perfetto-trace"), b"").unwrap();
    let cases: [(&[&str], &str, i32); 5] = [
        (
            &["profile", "--nsys", "/nonexistent/nsys", "--", "true"],
            "/nonexistent/nsys was not found",
            1,
        ),
        (
            &["profile", "-o", "missing/run", "--", "true"],
            "directory missing does not exist",
            1,
        ),
        (
            &["profile", "-o", "taken", "--", "true"],
            "taken.nsys-rep exists",
            2,
        ),
        (
            &["profile", "-o", "done", "--", "true"],
            "done.perfetto-trace exists",
            2,
        ),
        (&["profile", "-t", "nvtx"], "<COMMAND>", 2),
    ];
    for (args, needle, code) in cases {
        let before = listing(d);
        let out = Command::new(BIN)
            .current_dir(d)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{args:?}: {stderr:?} should say {needle:?}"
        );
        if !needle.starts_with('<') {
            assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        }
        assert_eq!(listing(d), before, "{args:?} left files");
    }
}

/// The processes whose command line holds `needle` (this test's own
/// temporary paths, or one nsys session's name), or with `^`, starts
/// with it (after the program's directory).
fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let matches = match needle.strip_prefix('^') {
            // The program itself, not a command line that names it.
            Some(start) => {
                cmdline.starts_with(start)
                    || cmdline.contains(&format!("/{start}")) && cmdline.starts_with('/')
            }
            None => cmdline.contains(needle),
        };
        if matches && alive(entry.file_name().to_string_lossy().parse().unwrap()) {
            found.push(cmdline);
        }
    }
    found
}

/// Ctrl-C while the real nsys profiles a long command: nsys, the command
/// and nsys's session agent all end, and neither the output directory nor
/// $TMPDIR keeps anything.
#[test]
fn ctrl_c_stops_the_real_nsys_and_its_agent() {
    stops_the_real_nsys(Stopping::CtrlC);
}

/// `timeout` running out while the real nsys profiles: timeout signals the
/// program, then its whole process group (a second signal in an instant);
/// nothing is left either.
#[test]
fn timeout_stops_the_real_nsys_and_its_agent() {
    stops_the_real_nsys(Stopping::Timeout);
}

/// A second Ctrl-C, a moment after the first, while nsys ends its session:
/// the program ends at once, and nothing outlives it.
#[test]
fn a_second_ctrl_c_stops_the_real_nsys_and_its_agent() {
    stops_the_real_nsys(Stopping::CtrlCTwice);
}

/// How a profiling run is stopped.
#[derive(PartialEq)]
enum Stopping {
    /// A SIGINT to the program.
    CtrlC,
    /// Two, 1 ms apart.
    CtrlCTwice,
    /// `timeout -s TERM` running out (SIGALRM to timeout, its own alarm).
    Timeout,
}

fn stops_the_real_nsys(how: Stopping) {
    if require(Need::Nsys).is_none() {
        return;
    }
    let _one_session = NSYS.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out_name = d.join("run");
    // A duration no other process is likely to sleep.
    let duration = format!(
        "{}.{}",
        200 + std::process::id() % 100,
        std::process::id() % 997
    );
    let mut command = match how {
        Stopping::CtrlC | Stopping::CtrlCTwice => Command::new(BIN),
        Stopping::Timeout => {
            let mut timeout = Command::new("timeout");
            timeout.args(["-s", "TERM", "600", BIN]);
            timeout
        }
    };
    let mut child = command
        .current_dir(d)
        .args(["profile", "-t", "osrt", "-o"])
        .arg(&out_name)
        .args([
            "--nsys-args",
            "--sample=none",
            "--cpuctxsw=none",
            "--",
            "sleep",
            &duration,
        ])
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Signalled once the command runs under nsys.
    let deadline = Instant::now() + Duration::from_secs(120);
    while processes_with(&format!("^sleep {duration} ")).is_empty() {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "exited before the command ran: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(
            Instant::now() < deadline,
            "the command did not start in two minutes"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let children = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .unwrap()
            .trim()
            .to_owned()
    };
    let program = match how {
        Stopping::Timeout => children(child.id()).parse().unwrap(),
        _ => child.id(),
    };
    let nsys_pid = children(program);
    match how {
        Stopping::CtrlC => signal(&child, libc::SIGINT),
        Stopping::CtrlCTwice => {
            signal(&child, libc::SIGINT);
            std::thread::sleep(Duration::from_millis(1));
            signal(&child, libc::SIGINT);
        }
        Stopping::Timeout => signal(&child, libc::SIGALRM),
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "still running two minutes after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    match how {
        Stopping::CtrlC => {
            assert_eq!(out.status.code(), Some(130), "{stderr}");
            assert!(
                stderr.contains("nsys2perfetto: interrupted while profiling sleep"),
                "{stderr}"
            );
        }
        Stopping::CtrlCTwice => assert_eq!(out.status.code(), Some(130), "{stderr}"),
        Stopping::Timeout => assert_eq!(out.status.code(), Some(124), "{stderr}"),
    }
    assert_eq!(listing(d), ["tmp"], "{stderr}");
    let left: Vec<String> = listing(&tmp)
        .into_iter()
        .filter(|n| n.contains("qdstrm") || n.contains("nsys-rep"))
        .collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let running = || {
        let mut running = processes_with(&format!("^sleep {duration} "));
        running.extend(processes_with(&d.display().to_string()));
        if !nsys_pid.is_empty() {
            running.extend(processes_with(&format!(
                "--session-name=profile-sleep-{nsys_pid}"
            )));
        }
        running
    };
    while !running().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(running(), Vec::<String>::new(), "still running");
}

/// A stand-in for `nsys profile` that runs the command itself and makes
/// its report a copy of `$REAL_REPORT`, passing on the command's exit code;
/// `nsys export` is the real one's, `$REAL_NSYS`.
const RUNNING_NSYS: &str = r#"#!/bin/sh
if [ "$1" = "export" ] || [ "$1" = "--version" ]; then
    exec "$REAL_NSYS" "$@"
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
status=$?
cp "$REAL_REPORT" "$out.nsys-rep"
exit $status
"#;

/// `--series`: the command run once per value with `$p` replaced, each
/// report converted, the events measured across the reports into a table
/// and a plot; the first non-zero exit code of the command comes out.
/// (nsys is a stand-in here: a real one is tested above, and a series of
/// real sessions only multiplies the chance that nsys 2022.4 hangs.)
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn profiles_a_series_and_measures_it() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    if require(Need::Nsys).is_none() {
        return;
    }
    let report = shared.join("fixtures/reports/dlprof_nsys_profile.nsys-rep");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nsys = d.join("nsys");
    executable(&nsys, RUNNING_NSYS);
    let out = Command::new(BIN)
        .current_dir(d)
        .args(["profile", "-q", "--nsys"])
        .arg(&nsys)
        .args(["--series", "code=0,3", "--events", "kernel:.*", "api:^cuda"])
        .args(["--table", "table.csv", "--svg", "plot.svg", "--"])
        .args(["sh", "-c", r#"echo "$0" >> values; exit "$0""#, "$p"])
        .env("REAL_NSYS", "nsys")
        .env("REAL_REPORT", &report)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "the first non-zero exit code: {stderr}"
    );
    let values = std::fs::read_to_string(d.join("values")).unwrap();
    assert_eq!(values, "0\n3\n", "$p replaced, in order");
    let files = listing(d);
    for name in [
        "run_0.nsys-rep",
        "run_0.perfetto-trace",
        "run_3.nsys-rep",
        "run_3.perfetto-trace",
    ] {
        assert!(
            files.contains(&name.to_owned()),
            "{name} missing: {files:?}"
        );
    }
    let table = std::fs::read_to_string(d.join("table.csv")).unwrap();
    let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(
        rows[0][..4],
        ["event", "kind", "code=0 count", "code=0 total_ns"],
        "{table}"
    );
    // The report's 46 kernels (fixtures README), in each run; the same
    // total twice, as both runs are the one report.
    let kernels = rows
        .iter()
        .find(|r| r[0] == "kernel:.*")
        .expect("a kernel row");
    assert_eq!((kernels[2], kernels[6]), ("46", "46"), "{table}");
    assert_eq!(kernels[3], kernels[7], "{table}");
    let checked = check_trace(&d.join("run_3.perfetto-trace"));
    let traced = checked
        .slices
        .iter()
        .filter(|s| s.category == "cuda_kernel")
        .count();
    assert_eq!(traced, 46);
    let svg = std::fs::read_to_string(d.join("plot.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("kernel:.*"), "{svg}");
}

/// What would fail `--series` after every run was profiled fails it before
/// the first: a value given twice, an unknown kind of pattern, a table or
/// plot in a directory that does not exist. The nsys here records each
/// call: it must never be called.
#[test]
fn a_series_that_would_fail_after_profiling_is_refused_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nsys = d.join("nsys");
    executable(
        &nsys,
        "#!/bin/sh\necho called >> \"$(dirname \"$0\")/called\"\nexit 1\n",
    );
    let cases: [(&[&str], &str); 4] = [
        (
            &["--series", "batch=8,8", "--events", "sgemm"],
            "batch=8 is given twice",
        ),
        (
            &["--series", "batch=8,16", "--events", "kernal:sgemm"],
            "unknown kind \"kernal:\"",
        ),
        (
            &[
                "--series",
                "batch=8,16",
                "--events",
                "sgemm",
                "--svg",
                "nodir/p.svg",
            ],
            "directory nodir does not exist",
        ),
        (
            &[
                "--series",
                "batch=8,16",
                "--events",
                "sgemm",
                "--table",
                "nodir/t.csv",
            ],
            "directory nodir does not exist",
        ),
    ];
    for (series, says) in cases {
        let out = Command::new(BIN)
            .current_dir(d)
            .args(["profile", "--nsys"])
            .arg(&nsys)
            .args(series)
            .args(["--", "echo", "$p"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{series:?}: {stderr}");
        assert!(stderr.contains(says), "{series:?}: {stderr}");
        assert!(!d.join("called").exists(), "{series:?}: nsys was run");
    }
}

/// A stand-in for nsys 2022.4's hang: it runs the command in a session of
/// its own (as nsys's launcher does), then never ends, its helper's pid in
/// `$FAKE_NSYS_PID`.
const HANGING_NSYS: &str = r#"#!/bin/sh
shift; shift; shift
setsid "$@" &
wait
sleep 300 &
echo $! > "$FAKE_NSYS_PID.tmp"
mv "$FAKE_NSYS_PID.tmp" "$FAKE_NSYS_PID"
wait
"#;

/// nsys that goes on after its command ended: once the notice's time has
/// passed, it is said what is waited for and how to stop it; Ctrl-C then
/// stops nsys (status 130).
#[test]
fn a_hanging_nsys_is_said_with_how_to_stop_it() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nsys = d.join("nsys");
    executable(&nsys, HANGING_NSYS);
    let pid_file = d.join("nsys.pid");
    let mut child = Command::new(BIN)
        .current_dir(d)
        .args(["profile", "-o", "run", "--wait-notice", "1", "--nsys"])
        .arg(&nsys)
        .args(["--", "sleep", "1"])
        .env("FAKE_NSYS_PID", &pid_file)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, heard) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            if lines.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    let mut said = Vec::new();
    let notice = loop {
        match heard.recv_timeout(Duration::from_secs(60)) {
            Ok(line) if line.contains("the command ended") => break line,
            Ok(line) => said.push(line),
            Err(e) => {
                let _ = child.kill();
                panic!("no word of the wait in a minute ({e}): {said:?}");
            }
        }
    };
    assert!(
        notice.starts_with("nsys2perfetto: note: the command ended ")
            && notice.contains("waiting for nsys to write its report")
            && notice.contains("Ctrl-C stops nsys"),
        "{notice}"
    );
    assert!(said.is_empty(), "{said:?}");
    assert!(
        child.try_wait().unwrap().is_none(),
        "still waiting for nsys"
    );
    signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let rest: Vec<String> = heard.iter().collect();
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert!(
        rest[0].contains("interrupted while profiling sleep"),
        "{rest:?}"
    );
    let helper: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(helper) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!alive(helper), "nsys's child {helper} still runs");
}
