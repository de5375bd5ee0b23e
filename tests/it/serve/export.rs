//! A report (`.nsys-rep`) is exported by nsys once per file, and that
//! export shared by its headline, its pages, its trace and what is made of
//! it with other runs: counted by an nsys that notes each run of it.

use std::os::unix::fs::PermissionsExt;

use super::{id_in, Server};
use crate::support::fixtures::{fixture, require, Need};

#[test]
fn serve_exports_a_report_once_for_every_page_and_job() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let Some(nsys) = require(Need::Nsys) else {
        return;
    };
    let Some(export) = fixture("nsys-ai_mock.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        shared.join("fixtures/reports/dlprof_nsys_profile.nsys-rep"),
        dir.path().join("run.nsys-rep"),
    )
    .unwrap();
    std::fs::copy(&export, dir.path().join("other.sqlite")).unwrap();
    // An nsys that notes each run, then runs the real one.
    let tools = tempfile::tempdir().unwrap();
    let log = tools.path().join("runs.txt");
    let counting = tools.path().join("nsys");
    std::fs::write(
        &counting,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec {} \"$@\"\n",
            log.display(),
            nsys.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&counting, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = Server::start(&[dir.path()], &["--nsys", counting.to_str().unwrap()]);
    let list = server.reports_with_headlines();
    let run = id_in(&list, "run.nsys-rep");
    let other = id_in(&list, "other.sqlite");
    assert!(
        list.iter().all(|r| r["headline"]["error"].is_null()),
        "{list:?}"
    );
    for path in [
        format!("/report/{run}"),
        format!("/stats/{run}"),
        format!("/stats/{run}"),
        format!("/findings/{run}"),
        format!("/trace/{run}"),
        format!("/trace/{run}?format=json"),
        format!("/compare?a={run}&b={other}"),
        format!("/made/merge?run={run}&run={other}"),
    ] {
        let response = server.get(&path);
        assert_eq!(response.status, 200, "{path}: {}", response.text());
    }
    let runs = std::fs::read_to_string(&log).unwrap_or_default();
    let exports = runs.lines().filter(|l| l.starts_with("export")).count();
    assert_eq!(exports, 1, "nsys ran: {runs}");
}
