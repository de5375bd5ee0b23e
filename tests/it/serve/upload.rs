//! Uploads: never replacing a file, not even one another process creates
//! under the same name while the upload is on its way; checked before they
//! are published (an export that reads, a report's signature), refused
//! with why and leaving nothing otherwise; names that would show as
//! something else, or pass for an option, refused; a name too long a clear
//! refusal; extensions in any case. And an export that is no SQLite file
//! hides no report beside it.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use super::{names_in, percent_encode, request_streamed, runs, Response, Server};
use crate::support::fixtures::{require, Need};

/// An upload of `body` as `name`, from the server's own page.
fn upload(server: &Server, name: &str, body: &[u8]) -> Response {
    let host = format!("127.0.0.1:{}", server.port);
    let origin = format!("http://{host}");
    let path = format!("/upload?name={}", percent_encode(name));
    server.send("POST", &path, &[("Host", &host), ("Origin", &origin)], body)
}

/// The files of `dir`, each with its bytes.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    names_in(dir)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

#[test]
fn serve_upload_racing_a_file_of_its_name_never_replaces_that_file() {
    let Some((dir, copies)) = runs(&["nsys-ai_mock.sqlite", "nsys-ai_healthy_1pct.sqlite"]) else {
        return;
    };
    let sent = std::fs::read(&copies[0]).unwrap();
    let theirs = std::fs::read(&copies[1]).unwrap();
    let server = Server::start(&[dir.path()], &[]);
    let host = format!("127.0.0.1:{}", server.port);
    let origin = format!("http://{host}");
    let token = format!("Bearer {}", server.token.as_deref().unwrap());
    let length = sent.len().to_string();
    let race = dir.path().join("race.sqlite");
    // While the upload is on its way, another process makes the name its
    // own.
    let mut body = Midway {
        body: &sent,
        at: 0,
        midway: Some(Box::new(|| {
            std::thread::sleep(Duration::from_millis(500));
            std::fs::write(&race, &theirs).unwrap();
        })),
    };
    let headers = [
        ("Host", host.as_str()),
        ("Origin", &origin),
        ("Authorization", &token),
        ("X-CSRF-Token", server.csrf()),
        ("Content-Length", &length),
    ];
    let response = request_streamed(
        server.port,
        "POST",
        "/upload?name=race.sqlite",
        &headers,
        ureq::SendBody::from_reader(&mut body),
    );
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.text(), "race-2.sqlite");
    assert!(
        std::fs::read(&race).unwrap() == theirs,
        "the other process's file was replaced"
    );
    assert!(std::fs::read(dir.path().join("race-2.sqlite")).unwrap() == sent);
}

/// A body sent as a client reads it: its first half, then `midway` runs,
/// then the rest.
struct Midway<'a> {
    body: &'a [u8],
    at: usize,
    midway: Option<Box<dyn FnOnce() + 'a>>,
}

impl Read for Midway<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let half = self.body.len() / 2;
        if self.at == half {
            if let Some(midway) = self.midway.take() {
                midway();
            }
        }
        let end = match self.at < half {
            true => half,
            false => self.body.len(),
        };
        let n = buffer.len().min(end - self.at);
        buffer[..n].copy_from_slice(&self.body[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn serve_refuses_uploads_that_are_no_export_or_report_and_keeps_nothing() {
    let Some((dir, copies)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let report =
        std::fs::read(shared.join("fixtures/reports/dlprof_nsys_profile.nsys-rep")).unwrap();
    let export = std::fs::read(&copies[0]).unwrap();
    // An SQLite database, but no export: none of an export's tables.
    let scratch = tempfile::tempdir().unwrap();
    let plain = scratch.path().join("plain.sqlite");
    rusqlite::Connection::open(&plain)
        .unwrap()
        .execute_batch("CREATE TABLE notes(text TEXT); INSERT INTO notes VALUES ('hello');")
        .unwrap();
    let plain = std::fs::read(&plain).unwrap();
    let mut fake_report = b"NVIDIA Tegra Profiler".to_vec();
    fake_report.extend(vec![0x5a; 4096]);
    let refused: [(&str, &[u8]); 7] = [
        ("empty.sqlite", b""),
        ("text.sqlite", b"not a database, just a line of text\n"),
        ("plain.sqlite", &plain),
        ("report.sqlite", &report),
        ("fake.nsys-rep", &fake_report),
        ("text.qdrep", b"hello\n"),
        ("export.nsys-rep", &export),
    ];
    let before = contents(dir.path());
    let server = Server::start(&[dir.path()], &[]);
    for (name, body) in refused {
        let response = upload(&server, name, body);
        assert_eq!(response.status, 422, "{name}: {}", response.text());
        let why = response.text();
        assert!(
            why.starts_with("refused: ") && why.contains(name),
            "{name}: {why}"
        );
        assert!(
            !why.contains(&*dir.path().to_string_lossy()),
            "{name}: {why}"
        );
        assert!(
            contents(dir.path()) == before,
            "{name} left {:?}",
            names_in(dir.path())
        );
    }
    // What is what it says is taken.
    assert_eq!(upload(&server, "run.nsys-rep", &report).status, 200);
    assert_eq!(upload(&server, "run.sqlite", &export).status, 200);
}

#[test]
fn serve_refuses_upload_names_that_show_as_something_else() {
    let Some((dir, copies)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let body = std::fs::read(&copies[0]).unwrap();
    let server = Server::start(&[dir.path()], &[]);
    let before = names_in(dir.path());
    let long = format!("{}.sqlite", "r".repeat(300));
    for name in [
        "two\nlines.sqlite",
        "a\ttab.sqlite",
        "carriage\r.sqlite",
        "bell\u{7}.sqlite",
        "evil\u{202E}etilqs.sqlite",
        "isolate\u{2066}.sqlite",
        "-rf.sqlite",
        "--help.nsys-rep",
        long.as_str(),
    ] {
        let response = upload(&server, name, &body);
        assert_eq!(response.status, 400, "{name:?}: {}", response.text());
        let why = response.text();
        assert!(why.starts_with("refused: "), "{name:?}: {why}");
        assert!(
            !why.contains(&*dir.path().to_string_lossy()),
            "{name:?}: {why}"
        );
        assert!(why.len() < 200, "{name:?}: {why}");
        assert_eq!(names_in(dir.path()), before, "{name:?}");
    }
    // An extension in capitals is one: published as the list finds it.
    let capitals = upload(&server, "RUN.SQLITE", &body);
    assert_eq!(capitals.status, 200, "{}", capitals.text());
    assert_eq!(capitals.text(), "RUN.sqlite");
    let list = server.get("/api/reports").text();
    assert!(list.contains("\"RUN.sqlite\""), "{list}");
}

#[test]
fn serve_lists_a_report_beside_an_export_that_is_no_sqlite_file() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("run.nsys-rep");
    std::fs::copy(
        shared.join("fixtures/reports/dlprof_nsys_profile.nsys-rep"),
        &report,
    )
    .unwrap();
    // Newer than the report: were it an export, it would stand for it.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(dir.path().join("run.sqlite"), b"garbage, not SQLite\n").unwrap();
    let server = Server::start(&[dir.path()], &[]);
    let list = server.get("/api/reports").text();
    assert!(
        list.contains("\"run.nsys-rep\""),
        "the report is hidden: {list}"
    );
}
