//! Converting an export in a test: the trace is written to a temporary
//! directory and comes back decoded by the checker. Where ../shared has
//! trace_processor, it imports every trace too and must agree with the
//! checker (tests/it/support/tp.rs).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nsys2perfetto::{Options, Summary};

use super::checker::{self, Checked};
use super::fixtures::{locate, skip, Need};
use super::synth::Synth;
use super::tp;

/// Converts `input` with `options`; the trace is decoded, not yet judged
/// by the test (trace_processor has judged it, where the checker found it valid).
pub fn convert(input: &Path, options: &Options) -> (Checked, Summary) {
    let dir = tempfile::tempdir().unwrap();
    convert_into(input, &dir.path().join("out.perfetto-trace"), options)
}

/// [`convert`], writing the trace to `output`, where the caller can read it.
pub fn convert_into(input: &Path, output: &Path, options: &Options) -> (Checked, Summary) {
    let (checked, summary, _) = convert_imported(input, output, options);
    (checked, summary)
}

/// [`convert_into`], also returning what trace_processor imported (`None`:
/// trace_processor is absent, or the checker found the trace invalid).
pub fn convert_imported(
    input: &Path,
    output: &Path,
    options: &Options,
) -> (Checked, Summary, Option<tp::Imported>) {
    let summary = nsys2perfetto::convert_file(input, output, options, &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", input.display()));
    let (checked, imported) = judged(output, &input.display().to_string());
    (checked, summary, imported)
}

/// The trace in the file `trace`, decoded by the checker, and imported by
/// trace_processor where present: there any import error, or any number that
/// differs from the checker's, fails the test.
///
/// A trace the checker finds invalid is left to the test to judge: the
/// checker's errors say more than the numbers that follow from them.
pub fn check_trace(trace: &Path) -> Checked {
    judged(trace, &trace.display().to_string()).0
}

/// [`check_trace`], naming the trace `what` in failures; with what
/// trace_processor imported, where it did.
fn judged(trace: &Path, what: &str) -> (Checked, Option<tp::Imported>) {
    let checked = checker::check_file(trace);
    let mut imported = None;
    if checked.errors.is_empty() {
        if let Some(binary) = trace_processor() {
            imported = Some(tp::assert_agrees(&binary, trace, &checked, what));
        }
    }
    (checked, imported)
}

/// [`check_trace`] on bytes, such as traces concatenated as `cat` joins
/// them; `what` names them in failures.
pub fn check_bytes(bytes: &[u8], what: &str) -> Checked {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.perfetto-trace");
    std::fs::write(&path, bytes).unwrap();
    judged(&path, what).0
}

/// The trace_processor binary, looked for once per test binary: without it
/// the first test to convert says so, and the checker alone judges traces
/// (in CI, every test that converts fails).
pub fn trace_processor() -> Option<PathBuf> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| match locate(Need::TraceProcessor) {
            Ok(binary) => Some(binary),
            Err(reason) => {
                skip(&format!(
                    "trace_processor checks, here and in the tests after it: {reason}"
                ));
                None
            }
        })
        .clone()
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
