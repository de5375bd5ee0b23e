//! `.nsys-rep`/`.qdrep` reports go through a real `nsys export`. These tests need
//! nsys (.ci/install-nsys installs 2022.4) and ../shared; without either they
//! say why and skip, except that CI must have nsys.

mod support;

use std::path::{Path, PathBuf};

use support::checker;

fn reports_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/reports");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIP: {} is absent (a fresh clone without ../shared)",
            dir.display()
        );
        None
    }
}

fn nsys_available(test: &str) -> bool {
    support::nsys::available(test)
}

#[test]
fn reports_convert_like_their_sqlite_exports() {
    let Some(dir) = reports_dir() else { return };
    if !nsys_available("reports_convert_like_their_sqlite_exports") {
        return;
    }
    let sqlite = dir.join("../sqlite");
    for (report, export) in [
        ("dlprof_nsys_profile.nsys-rep", "dlprof_nsys_profile.sqlite"),
        ("abacus_report1.qdrep", "abacus_report1.sqlite"),
        ("cori_run1_report1.qdrep", "cori_run1_report1.sqlite"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let (a, b) = (out.path().join("a.trace"), out.path().join("b.trace"));
        let options = nsys2perfetto::Options::default();
        let from_report = nsys2perfetto::convert_file(&dir.join(report), &a, &options, &mut |_| {})
            .unwrap_or_else(|e| panic!("{report}: {e}"));
        let from_export =
            nsys2perfetto::convert_file(&sqlite.join(export), &b, &options, &mut |_| {}).unwrap();
        let trace = checker::check_file(&a);
        trace.assert_valid();
        assert_eq!(
            from_report.slices, from_export.slices,
            "{report}: same events as its export"
        );
        assert_eq!(
            (from_report.flows, from_report.event_flows),
            (from_export.flows, from_export.event_flows),
            "{report}: same flows as its export"
        );
        assert_eq!(
            trace.flows.len() as u64,
            from_report.flows + from_report.event_flows
        );
    }
}

#[test]
fn a_report_too_new_for_nsys_names_both_versions() {
    let Some(dir) = reports_dir() else { return };
    if !nsys_available("a_report_too_new_for_nsys_names_both_versions") {
        return;
    }
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
