//! Checks what we write against the official Perfetto schema, as shipped in the
//! PyPI package `perfetto` (`pip install perfetto protobuf`):
//! - `proto/perfetto_trace.proto` must be a faithful subset of it
//!   (`tests/official_schema.py`);
//! - a converted trace must decode with it, without unknown fields
//!   (`tests/decode_official.py`).
//!
//! Without python3 or those modules the tests skip with a message on stderr,
//! except when `CI` is set: CI installs them, so there a missing module fails.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::fixtures::skip;

const PYTHON: &str = "python3";
const INSTALL_HINT: &str = "pip install perfetto protobuf";

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run_python(args: &[&std::ffi::OsStr]) -> std::io::Result<Output> {
    Command::new(PYTHON)
        .args(args)
        .current_dir(manifest_dir())
        .output()
}

/// Whether python3 can import everything the scripts need. When it cannot,
/// prints why and returns false (or panics in CI).
fn python_ready(test: &str) -> bool {
    // google.protobuf first: perfetto's generated modules import it.
    let modules = [
        "google.protobuf",
        "perfetto",
        "perfetto.protos.perfetto.trace.perfetto_trace_pb2",
    ];
    for module in modules {
        let code = format!("import {module}");
        let output = match run_python(&["-c".as_ref(), code.as_ref()]) {
            Ok(output) => output,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                skip(&format!(
                    "{PYTHON} not found on PATH (install Python 3, then {INSTALL_HINT})"
                ));
                return false;
            }
            Err(e) => panic!("{test}: cannot run {PYTHON}: {e}"),
        };
        if !output.status.success() {
            let why = if module == "perfetto.protos.perfetto.trace.perfetto_trace_pb2" {
                format!(
                    "python3 module '{module}' not importable; the installed \
                     'perfetto' package is too old or broken (pip install -U perfetto protobuf)"
                )
            } else {
                format!("python3 module '{module}' not installed ({INSTALL_HINT})")
            };
            let stderr = String::from_utf8_lossy(&output.stderr);
            if let Some(last) = stderr.lines().last() {
                eprintln!("{test}: {PYTHON} says: {last}");
            }
            skip(&why);
            return false;
        }
    }
    true
}

fn script(name: &str) -> PathBuf {
    manifest_dir().join("tests").join(name)
}

/// Runs a script, echoes its output, and returns its stdout if it exited 0.
fn run_script(test: &str, name: &str, arg: &Path) -> String {
    let script = script(name);
    let output = run_python(&[script.as_os_str(), arg.as_os_str()])
        .unwrap_or_else(|e| panic!("{test}: cannot run {PYTHON} {}: {e}", script.display()));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    print!("{stdout}");
    eprint!("{stderr}");
    assert!(
        output.status.success(),
        "{test}: {PYTHON} tests/{name} {} failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        arg.display(),
        output.status,
    );
    stdout
}

/// The unsigned integer after `"key":` in the (flat-keyed) JSON the decode
/// script prints. Its keys are unique, so a plain search is enough.
fn json_number(json: &str, key: &str) -> Option<u64> {
    let needle = format!("\"{key}\":");
    let start = json.find(&needle)? + needle.len();
    let rest = json[start..].trim_start();
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[test]
fn subset_matches_official_schema() {
    const TEST: &str = "subset_matches_official_schema";
    if !python_ready(TEST) {
        return;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let fds = dir.path().join("perfetto_subset.fds");
    std::fs::write(&fds, nsys2perfetto::perfetto::proto::SUBSET_DESCRIPTOR)
        .expect("write descriptor set");
    let stdout = run_script(TEST, "official_schema.py", &fds);
    assert!(
        stdout.contains("match the official Perfetto schema"),
        "{TEST}: unexpected output: {stdout}"
    );
}

/// Converts `input` and decodes the trace with the official schema: it must
/// parse, carry no field unknown to Perfetto, and close every slice it opens.
fn decode_with_official_schema(test: &str, input: &Path) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let trace = dir.path().join("trace.perfetto-trace");
    let (checked, summary) =
        crate::support::convert::convert_into(input, &trace, &nsys2perfetto::Options::default());
    checked.assert_valid();
    eprintln!("{test}: {summary}");

    let json = run_script(test, "decode_official.py", &trace);
    let number = |key| {
        json_number(&json, key).unwrap_or_else(|| panic!("{test}: no \"{key}\" number in {json}"))
    };
    let begins = number("SLICE_BEGIN");
    assert!(begins > 0, "{test}: no SLICE_BEGIN events: {json}");
    assert_eq!(
        begins,
        number("SLICE_END"),
        "{test}: SLICE_BEGIN and SLICE_END counts differ: {json}"
    );
    let flows = summary.flows + summary.event_flows;
    assert_eq!(number("flow_ids"), flows, "{test}: {json}");
    assert_eq!(number("terminating_flow_ids"), flows, "{test}: {json}");
    assert_eq!(number("unknown_fields"), 0, "{test}: {json}");
}

#[test]
fn demo_trace_decodes_with_official_schema() {
    const TEST: &str = "demo_trace_decodes_with_official_schema";
    if python_ready(TEST) {
        decode_with_official_schema(TEST, &manifest_dir().join("demo/demo.sqlite"));
    }
}

#[test]
fn converted_fixture_decodes_with_official_schema() {
    const TEST: &str = "converted_fixture_decodes_with_official_schema";
    if !python_ready(TEST) {
        return;
    }
    let Some(fixture) = crate::support::fixtures::fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    decode_with_official_schema(TEST, &fixture);
}
