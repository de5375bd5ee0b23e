//! `.nsys-rep`/`.qdrep` reports go through a real `nsys export`. These tests need
//! nsys (.ci/install-nsys installs 2022.4) and ../shared; without either they
//! say why and skip, except in CI, which must have both.

mod support;

use std::path::PathBuf;

use support::fixtures::{require, Need};

/// ../shared's reports, where nsys can export them; or `None`, having said why not.
fn reports_dir() -> Option<PathBuf> {
    let dir = require(Need::Shared)?.join("fixtures/reports");
    require(Need::Nsys)?;
    Some(dir)
}

#[test]
fn reports_convert_like_their_sqlite_exports() {
    let Some(dir) = reports_dir() else { return };
    let sqlite = dir.join("../sqlite");
    for (report, export) in [
        ("dlprof_nsys_profile.nsys-rep", "dlprof_nsys_profile.sqlite"),
        ("abacus_report1.qdrep", "abacus_report1.sqlite"),
        ("cori_run1_report1.qdrep", "cori_run1_report1.sqlite"),
    ] {
        let options = nsys2perfetto::Options::default();
        let (trace, from_report) = support::convert::convert(&dir.join(report), &options);
        let (_, from_export) = support::convert::convert(&sqlite.join(export), &options);
        trace.assert_valid();
        assert_eq!(
            from_report.slices, from_export.slices,
            "{report}: same events as its export"
        );
        assert_eq!(
            from_report.flows, from_export.flows,
            "{report}: same flows as its export"
        );
        assert_eq!(trace.flows.len() as u64, from_report.flows);
    }
}

#[test]
fn a_report_too_new_for_nsys_names_both_versions() {
    let Some(dir) = reports_dir() else { return };
    let report = dir.join("jax-toolbox_cuda_graph_pdl_stream_capture.nsys-rep");
    let out = tempfile::tempdir().unwrap();
    let output = out.path().join("t.perfetto-trace");
    let err = nsys2perfetto::convert_file(&report, &output, &Default::default(), &mut |_| {})
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("captured with nsys 2025.5.1"), "{message}");
    assert!(
        message.contains("Version number is invalid"),
        "quotes nsys: {message}"
    );
    assert!(
        message.contains("use nsys 2025.5.1 or later"),
        "says what to do: {message}"
    );
    assert!(!message.contains('\n'), "one line: {message}");
    assert!(!output.exists());
}
