//! Converting an export in a test: the trace is written to a temporary
//! directory and comes back decoded by the checker.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use nsys2perfetto::{Options, Summary};

use super::checker::{self, Checked};
use super::synth::Synth;

/// Converts `input` with `options`; the trace is decoded, not yet judged.
pub fn convert(input: &Path, options: &Options) -> (Checked, Summary) {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.perfetto-trace");
    let summary = nsys2perfetto::convert_file(input, &output, options, &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", input.display()));
    (checker::check_file(&output), summary)
}

/// The synthetic export `fill` makes, in a directory that lives as long as
/// the returned handle.
pub fn synthetic(fill: impl FnOnce(&mut Synth)) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("synthetic.sqlite");
    let mut synth = Synth::new(&input);
    fill(&mut synth);
    synth.finish();
    (dir, input)
}

/// The synthetic export `fill` makes, converted with the default options:
/// the trace must import without an error.
pub fn convert_synthetic(fill: impl FnOnce(&mut Synth)) -> (Checked, Summary) {
    let (_dir, input) = synthetic(fill);
    let (trace, summary) = convert(&input, &Options::default());
    trace.assert_valid();
    (trace, summary)
}
