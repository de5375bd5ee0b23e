//! The program under test and the demo export beside it, named once for every test
//! that runs the command line.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `nsys2perfetto` program cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_nsys2perfetto");

/// A command of the program.
pub fn program() -> Command {
    Command::new(BIN)
}

/// The repository's small demo export (demo/demo.sqlite), there in every checkout.
pub fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/demo.sqlite")
}

/// What a run left in `tmp`, its TMPDIR: every entry but the user's folder
/// of temporaries (`nsys2perfetto-<uid>`, kept for the next run) while it
/// is empty.
pub fn left_in_temp_dir(tmp: &Path) -> Vec<PathBuf> {
    // SAFETY: geteuid(2) has no preconditions.
    let folder = tmp.join(format!("nsys2perfetto-{}", unsafe { libc::geteuid() }));
    let empty = |path: &Path| std::fs::read_dir(path).is_ok_and(|mut e| e.next().is_none());
    let mut left: Vec<PathBuf> = std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|path| !(*path == folder && empty(path)))
        .collect();
    left.sort();
    left
}
