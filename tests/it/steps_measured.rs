//! Steps measured apart and combined (`report --step P --measure-only`,
//! then `report --step P` over what it wrote): the page's steps equal those
//! of `report --step P` over the reports themselves, whether each report
//! was measured by a command of its own (as a worker would), all into a
//! directory, or some given as reports beside measured ones.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::fixtures::{cori_exports, fixture};
use crate::support::program::BIN;

fn run(args: &[&std::ffi::OsStr]) -> Output {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn os<'a>(items: &'a [&'a str]) -> Vec<&'a std::ffi::OsStr> {
    items.iter().map(std::ffi::OsStr::new).collect()
}

/// `report --format json` of `inputs` with `args`: the page.
fn page(inputs: &[PathBuf], args: &[&str]) -> Value {
    let mut all = os(&["report", "--format", "json"]);
    all.extend(os(args));
    all.extend(inputs.iter().map(|p| p.as_os_str()));
    serde_json::from_slice(&run(&all).stdout).unwrap()
}

/// `--measure-only` of `inputs` to `output` (standard output for `-`);
/// what it printed.
fn measure(inputs: &[PathBuf], pattern: &str, output: &Path) -> Vec<u8> {
    let head = ["report", "--step", pattern, "--measure-only", "-o"];
    let mut all = os(&head);
    all.push(output.as_os_str());
    all.extend(inputs.iter().map(|p| p.as_os_str()));
    run(&all).stdout
}

/// Checks that the page's steps of `inputs` equal those combined from
/// their steps measured apart, three ways; `labels` are the options that
/// name ranks, given to both.
fn check_combined_equals_direct(inputs: &[PathBuf], pattern: &str, labels: &[&str], dir: &Path) {
    let mut args = vec!["--step", pattern];
    args.extend(labels);
    let direct = page(inputs, &args);
    let steps = &direct["steps"];
    assert_eq!(steps["ranks"].as_array().unwrap().len(), inputs.len());

    // Each report by a command of its own, as a worker would: one JSON line
    // to standard output, saying what it is and which report it measured.
    let mut measured = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let out = measure(std::slice::from_ref(input), pattern, Path::new("-"));
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let document: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(document["kind"], "nsys2perfetto.rank-steps");
        assert_eq!(document["version"], 1);
        assert_eq!(document["pattern"], pattern);
        assert_eq!(document["input"], input.to_str().unwrap());
        let path = dir.join(format!("worker{i}.json"));
        std::fs::write(&path, text).unwrap();
        measured.push(path);
    }
    let combined = page(&measured, &args);
    assert_eq!(combined["runs"], Value::Array(Vec::new()), "no report read");
    assert_eq!(combined["steps"], *steps, "measured one by one, combined");

    // All at once into a directory: a file each, named after its report.
    let all = dir.join("all");
    std::fs::create_dir(&all).unwrap();
    assert!(measure(inputs, pattern, &all).is_empty());
    let files: Vec<PathBuf> = inputs
        .iter()
        .map(|input| {
            let name = Path::new(input.file_name().unwrap()).with_extension("steps.json");
            all.join(name)
        })
        .collect();
    assert_eq!(std::fs::read_dir(&all).unwrap().count(), inputs.len());
    assert_eq!(page(&files, &args)["steps"], *steps, "from a directory");

    // All in one file of JSON Lines.
    let lines = dir.join("all.jsonl");
    measure(inputs, pattern, &lines);
    assert_eq!(
        page(std::slice::from_ref(&lines), &args)["steps"],
        *steps,
        "from one file of JSON Lines"
    );

    // The first as its report, the others measured: the same job, and the
    // report's run.
    let mut mixed = vec![inputs[0].clone()];
    mixed.extend(files[1..].iter().cloned());
    let page = page(&mixed, &args);
    assert_eq!(page["steps"], *steps, "a report beside measured steps");
    assert_eq!(page["runs"].as_array().unwrap().len(), 1);
}

/// The two H100 captures, their steps matched by name: measured apart and
/// combined, the same numbers as read together.
#[test]
fn h100_steps_measured_apart_combine_as_read_together() {
    let (Some(whole), Some(node)) = (
        fixture("h100_torch_graph_whole.sqlite"),
        fixture("h100_torch_graph_node.sqlite"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    check_combined_equals_direct(&[whole, node], "step *", &[], dir.path());
}

/// The 8 ranks of the Cori job, named by the rank in their file names (as
/// `merge` names them): measured apart and combined, the same ranks and
/// numbers as read together.
#[test]
fn cori_ranks_measured_apart_combine_as_read_together() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exports) = cori_exports(8) else {
        return;
    };
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    check_combined_equals_direct(
        &exports,
        "ProfilerStep*",
        &["--rank-from-name", r"report(\d+)"],
        &work,
    );
}

/// Measured steps are combined only with the pattern they were measured
/// with, only with --step, and only when they are such steps.
#[test]
fn measured_steps_are_refused_where_they_do_not_fit() {
    let Some(whole) = fixture("h100_torch_graph_whole.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let measured = dir.path().join("whole.json");
    measure(std::slice::from_ref(&whole), "step *", &measured);
    let other_json = dir.path().join("other.json");
    std::fs::write(&other_json, r#"{"traceEvents": []}"#).unwrap();
    let newer = dir.path().join("newer.json");
    std::fs::write(
        &newer,
        r#"{"kind": "nsys2perfetto.rank-steps", "version": 99}"#,
    )
    .unwrap();
    let cases: [(&[&str], &Path, &str); 4] = [
        (
            &["--step", "ProfilerStep*"],
            &measured,
            "measured as \"step *\", not \"ProfilerStep*\"",
        ),
        (
            &[],
            &measured,
            "holds measured steps: combine them with --step",
        ),
        (&["--step", "step *"], &other_json, "not measured steps"),
        (&["--step", "step *"], &newer, "version 99"),
    ];
    for (args, input, needle) in cases {
        let out = Command::new(BIN)
            .arg("report")
            .args(args)
            .arg(input)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
}
