//! A scaled report (millions of events) converts as faithfully as the
//! fixtures. Needs the input scripts/bench.sh makes; run with
//! `cargo test --release --test scale -- --ignored`.

use std::path::PathBuf;

use crate::support::checker;
use crate::support::convert::trace_processor;
use crate::support::source::{launched_ops, nvtx_totals, open, source_totals, CUDA_TABLES};

#[test]
#[ignore = "needs target/bench/h100_x500.sqlite from scripts/bench.sh (or NSYS2PERFETTO_SCALED)"]
fn scaled_report_converts_faithfully() {
    let input = std::env::var_os("NSYS2PERFETTO_SCALED")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench/h100_x500.sqlite")
        });
    if !input.is_file() {
        eprintln!(
            "SKIP: {} is absent (scripts/bench.sh makes it)",
            input.display()
        );
        return;
    }
    let dir = tempfile::tempdir_in(input.parent().unwrap()).unwrap();
    let output = dir.path().join("scaled.perfetto-trace");
    let summary =
        nsys2perfetto::convert_file(&input, &output, &Default::default(), &mut |_| {}).unwrap();
    let trace = checker::check_lean(&std::fs::read(&output).unwrap());
    trace.assert_valid();
    if let Some(binary) = trace_processor() {
        crate::support::tp::assert_agrees(&binary, &output, &trace, &input.display().to_string());
    }
    let db = open(&input);
    for (category, table) in CUDA_TABLES {
        assert_eq!(
            trace.totals(category),
            source_totals(&db, table),
            "{category} (count, Σts, Σdur)"
        );
    }
    assert_eq!(
        trace.totals("nvtx"),
        nvtx_totals(&db, trace.trace_end()),
        "nvtx (count, Σts, Σdur)"
    );
    assert_eq!(trace.flows.len() as u64, launched_ops(&db), "flows");
    eprintln!(
        "{}: {summary}; {} slices, {} flows checked",
        input.display(),
        trace.slices.len(),
        trace.flows.len()
    );
}
