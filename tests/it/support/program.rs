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
