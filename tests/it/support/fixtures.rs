//! What tests need from outside the repository: the real exports and tools in
//! ../shared, and the `nsys` CLI. A fresh clone has none of them: there tests
//! say so and skip. CI must have them all, so there a missing one fails.

use std::path::{Path, PathBuf};

/// Something a test needs that a checkout may lack.
#[derive(Clone, Copy, Debug)]
pub enum Need {
    /// ../shared: the fixtures, their documentation and the tools.
    Shared,
    /// The `nsys` CLI on PATH.
    Nsys,
    /// Perfetto's trace_processor, ../shared/tools/trace_processor_shell.
    TraceProcessor,
}

/// Whether this run is CI's (`CI` set and not empty).
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty())
}

/// The name of the running test (libtest runs each test on a thread named so).
pub fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("<unnamed test>")
        .to_owned()
}

/// Says on stderr that the running test skips, and why; in CI, fails instead.
/// Written to stderr directly: libtest would hide an `eprintln!` of a test that passes.
///
/// A test that needs ../shared/fixtures as a whole is ignored where it is absent
/// (`cfg(shared_fixtures)`, set by build.rs), and counted so by libtest; this is for what
/// is found missing at run time (nsys, a Python module, part of a test's checks), and the
/// run ends by saying how many tests skipped something.
pub fn skip(reason: &str) {
    let test = test_name();
    if in_ci() {
        panic!("{test}: {reason} (CI is set, so this fails instead of skipping)");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {reason}");
    let mut skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    if skipped.is_empty() {
        // SAFETY: registers a function of no arguments that only reads a static.
        unsafe { libc::atexit(say_what_was_skipped) };
    }
    skipped.insert(test);
}

/// The tests that skipped something at run time.
static SKIPPED: std::sync::Mutex<std::collections::BTreeSet<String>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// At exit, after libtest's own count: how many tests skipped some of their checks.
extern "C" fn say_what_was_skipped() {
    use std::io::Write;
    let skipped = SKIPPED.lock().unwrap_or_else(|e| e.into_inner());
    let _ = writeln!(
        std::io::stderr(),
        "skipped at run time: {} test(s) left out some or all of their checks ({}); each said why on a SKIP line",
        skipped.len(),
        skipped.iter().cloned().collect::<Vec<_>>().join(", ")
    );
}

/// ../shared beside this checkout, or `$NSYS2PERFETTO_SHARED` (as for the Python tests).
pub fn shared_dir() -> PathBuf {
    match std::env::var_os("NSYS2PERFETTO_SHARED") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"),
    }
}

/// Where `need` is (the ../shared directory, the `nsys` command, the
/// trace_processor binary), or `None` after [`skip`] said why it is missing.
pub fn require(need: Need) -> Option<PathBuf> {
    locate(need).map_err(|reason| skip(&reason)).ok()
}

/// Where `need` is, or why it is missing.
pub fn locate(need: Need) -> Result<PathBuf, String> {
    // What is handed out, and what must exist for it to be there.
    let (found, must_exist) = match need {
        Need::Shared => (shared_dir(), shared_dir().join("fixtures")),
        Need::Nsys => {
            let runs = std::process::Command::new("nsys")
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success());
            if !runs {
                return Err(
                    "nsys is not on PATH (run .ci/install-nsys, or install Nsight Systems)".into(),
                );
            }
            return Ok(PathBuf::from("nsys"));
        }
        Need::TraceProcessor => {
            let binary = shared_dir().join("tools/trace_processor_shell");
            (binary.clone(), binary)
        }
    };
    if must_exist.exists() {
        Ok(found)
    } else {
        Err(format!(
            "{} is absent (a fresh clone without ../shared)",
            must_exist.display()
        ))
    }
}

/// Every SQLite export of the fixture set, or `None` (having said why).
pub fn all() -> Option<Vec<PathBuf>> {
    let root = require(Need::Shared)?.join("fixtures");
    let mut files = Vec::new();
    for dir in ["sqlite", "local"] {
        let entries = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("{}: {e}", root.join(dir).display()));
        for entry in entries.flatten() {
            if entry.path().extension().is_some_and(|e| e == "sqlite") {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    Some(files)
}

/// The export of the fixture set named `name` (such as `nvtx_c_full.sqlite`),
/// or `None` (having said why) without ../shared. A fixture set without it fails.
pub fn fixture(name: &str) -> Option<PathBuf> {
    let found = all()?
        .into_iter()
        .find(|f| f.file_name().is_some_and(|n| n == name));
    Some(found.unwrap_or_else(|| panic!("{name} is not in {}", shared_dir().display())))
}

/// The exports of the Cori job's first `ranks` ranks: report1's from
/// ../shared, the others exported by nsys from their .qdrep reports once per
/// test run (several tests read them, and each export takes nsys seconds).
pub fn cori_exports(ranks: usize) -> Option<Vec<PathBuf>> {
    let shared = require(Need::Shared)?;
    let nsys = require(Need::Nsys)?;
    let exports = CORI_EXPORTS.get_or_init(|| {
        let fixtures = shared.join("fixtures");
        let dir = super::converted::run_dir().join("cori");
        std::fs::create_dir_all(&dir).unwrap();
        let exported: Vec<PathBuf> = std::thread::scope(|scope| {
            let exporting: Vec<_> = (2..=CORI_RANKS)
                .map(|rank| {
                    let report = fixtures.join(format!("reports/cori_run1_report{rank}.qdrep"));
                    let export = dir.join(format!("cori_run1_report{rank}.sqlite"));
                    let nsys = &nsys;
                    scope.spawn(move || {
                        let status = std::process::Command::new(nsys)
                            .args(["export", "--type", "sqlite", "--output"])
                            .arg(&export)
                            .arg(&report)
                            .stdout(std::process::Stdio::null())
                            .stderr(std::process::Stdio::null())
                            .status()
                            .unwrap();
                        assert!(status.success(), "nsys export {}", report.display());
                        export
                    })
                })
                .collect();
            exporting.into_iter().map(|e| e.join().unwrap()).collect()
        });
        std::iter::once(fixtures.join("sqlite/cori_run1_report1.sqlite"))
            .chain(exported)
            .collect()
    });
    assert!(ranks <= CORI_RANKS, "the Cori job has {CORI_RANKS} ranks");
    Some(exports[..ranks].to_vec())
}

/// The ranks of the Cori job in ../shared.
const CORI_RANKS: usize = 8;

static CORI_EXPORTS: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
