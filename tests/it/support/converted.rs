//! Fixtures converted once per test run, with the default options: many tests check
//! different facts of the same conversions, and converting each fixture again (and
//! importing it into trace_processor again) in every such test was most of the
//! suite's run time.
//!
//! A test that needs other options, or writes beside the trace, converts on its own
//! (tests/it/support/convert.rs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use nsys2perfetto::{Options, Summary};

use super::checker::Checked;
use super::convert::convert_imported;
use super::tp::Imported;

/// One fixture's conversion with the default options, judged as
/// [`convert_imported`] judges it.
pub struct Converted {
    /// The trace, decoded by the checker.
    pub trace: Checked,
    pub summary: Summary,
    /// What trace_processor imported, where it is at hand and the checker found the
    /// trace valid.
    pub imported: Option<Imported>,
    /// The trace file, kept until the test run ends.
    pub path: PathBuf,
}

/// `input` converted with the default options: the first test to ask converts it,
/// the others (and those asking meanwhile) get the same conversion.
pub fn converted(input: &Path) -> Arc<Converted> {
    let slot = {
        let mut slots = SLOTS.lock().unwrap_or_else(|e| e.into_inner());
        let next = slots.len();
        slots
            .entry(input.to_owned())
            .or_insert_with(|| (next, Arc::default()))
            .clone()
    };
    let (index, once) = slot;
    once.get_or_init(|| {
        // Numbered, not named by the input: two fixtures may share a file name.
        let path = run_dir().join(format!("{index}.perfetto-trace"));
        let (trace, summary, imported) = convert_imported(input, &path, &Options::default());
        Arc::new(Converted {
            trace,
            summary,
            imported,
            path,
        })
    })
    .clone()
}

type Slot = (usize, Arc<OnceLock<Arc<Converted>>>);

/// Each input's number and conversion, made once.
static SLOTS: Mutex<BTreeMap<PathBuf, Slot>> = Mutex::new(BTreeMap::new());

/// The directory of this run's traces (and other files made once per run), removed
/// when the run ends.
static RUN_DIR: OnceLock<PathBuf> = OnceLock::new();

pub fn run_dir() -> &'static Path {
    RUN_DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        // SAFETY: registers a function of no arguments that only reads a static.
        unsafe { libc::atexit(remove_run_dir) };
        dir
    })
}

extern "C" fn remove_run_dir() {
    if let Some(dir) = RUN_DIR.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}
