//! A listed file swapped, again and again, for a symbolic link to a file
//! outside the served directory while its pages and trace are asked for:
//! the hub reads only the file it listed, through a handle it opened
//! beneath the directory and checked, so nothing of the outside file is
//! ever sent or kept in the cache, and once the file is back every page is
//! the real file's.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rusqlite::Connection;

use super::cache::converted_by_cli;
use super::{names_in, runs, Server};
use crate::support::fixtures::fixture;

/// How many swaps at least race the requests.
const SWAPS: usize = 1000;

/// How many rounds of requests at least race them.
const ROUNDS: usize = 40;

/// Every string of the export at `path` (its StringIds).
fn strings_of(path: &Path) -> Vec<String> {
    let db = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut stmt = db.prepare("SELECT value FROM StringIds").unwrap();
    let rows = stmt.query_map([], |r| r.get::<_, String>(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

/// The kernels' names of the export at `path` (short and demangled).
fn kernel_names(path: &Path) -> Vec<String> {
    let db = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut stmt = db
        .prepare(
            "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k \
             JOIN StringIds s ON s.id IN (k.shortName, k.demangledName)",
        )
        .unwrap();
    let rows = stmt.query_map([], |r| r.get::<_, String>(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

/// Whether `bytes` hold `text`.
fn holds(bytes: &[u8], text: &str) -> bool {
    bytes.windows(text.len()).any(|w| w == text.as_bytes())
}

#[test]
fn serve_never_reads_a_file_swapped_in_for_a_listed_one() {
    let Some((dir, copies)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let Some(secret_source) = fixture("nsys-ai_healthy_1pct.sqlite") else {
        return;
    };
    let listed = &copies[0];
    // Outside the served directory, on the same file system (renames).
    let outside = tempfile::tempdir_in(dir.path().parent().unwrap()).unwrap();
    let secret = outside.path().join("secret.sqlite");
    std::fs::copy(&secret_source, &secret).unwrap();
    // The real file's other name, to put it back under its own.
    let kept = outside.path().join("kept.sqlite");
    std::fs::hard_link(listed, &kept).unwrap();
    // The outside file's kernels, none a string of the listed file: any of
    // them in an answer is the outside file's data.
    let real_strings = strings_of(listed);
    let secret_only: Vec<String> = kernel_names(&secret)
        .into_iter()
        .filter(|k| !real_strings.contains(k) && !k.contains(['<', '>', '&', '"', '\'']))
        .collect();
    assert!(
        !secret_only.is_empty(),
        "the two exports share every kernel"
    );
    let real_kernels: Vec<String> = kernel_names(listed)
        .into_iter()
        .filter(|k| !k.contains(['<', '>', '&', '"', '\'']))
        .collect();
    assert!(!real_kernels.is_empty());
    let real_trace = converted_by_cli(listed);

    let swaps = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let mut answered = Vec::new();
    let server = std::thread::scope(|scope| {
        scope.spawn(|| {
            let link = outside.path().join("link");
            let back = outside.path().join("back");
            while !done.load(Ordering::Relaxed) || swaps.load(Ordering::Relaxed) < SWAPS {
                std::os::unix::fs::symlink(&secret, &link).unwrap();
                std::fs::rename(&link, listed).unwrap();
                std::thread::sleep(Duration::from_micros(300));
                std::fs::hard_link(&kept, &back).unwrap();
                std::fs::rename(&back, listed).unwrap();
                std::thread::sleep(Duration::from_micros(300));
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        });
        // Started while the swaps go on: its first headline races them too.
        let server = Server::start(&[dir.path()], &[]);
        let id = "0/nsys-ai_mock.sqlite";
        let paths = [
            format!("/stats/{id}"),
            format!("/report/{id}"),
            format!("/findings/{id}"),
            // A trace is made by a POST (its event stream), then sent by a GET.
            format!("/api/convert/{id}"),
            format!("/trace/{id}"),
            "/api/reports".to_owned(),
        ];
        let mut round = 0;
        while round < ROUNDS || swaps.load(Ordering::Relaxed) < SWAPS {
            for path in &paths {
                let response = if path.starts_with("/api/convert/") {
                    server.post(path)
                } else {
                    server.get(path)
                };
                answered.push((path.clone(), response));
            }
            round += 1;
        }
        done.store(true, Ordering::Relaxed);
        server
    });
    // The real file is back under its name.
    let ok = answered.iter().filter(|(_, r)| r.status == 200).count();
    eprintln!(
        "{} swaps raced {} requests: {ok} answered 200, the others refused",
        swaps.load(Ordering::Relaxed),
        answered.len()
    );
    let mut served_whole = 0;
    for (path, response) in &answered {
        for name in &secret_only {
            assert!(
                !holds(&response.body, name),
                "{path} sent the outside file's {name:?} (status {})",
                response.status
            );
        }
        // A trace not made (its conversion refused while the name was a link)
        // is asked for by a page with a button: any other answer is the trace.
        let asked = response
            .header("Content-Type")
            .is_some_and(|t| t.starts_with("text/html"));
        if response.status == 200 && path.starts_with("/trace/") && !asked {
            assert!(
                response.body == real_trace,
                "{path}: not the listed file's trace"
            );
        }
        if response.status == 200 && path.starts_with("/stats/") {
            served_whole += 1;
        }
    }
    assert!(
        served_whole > 0,
        "no stats page was served while the swaps went on: {:?}",
        answered
            .iter()
            .map(|(p, r)| (p, r.status, r.text().chars().take(200).collect::<String>()))
            .collect::<Vec<_>>()
    );
    // Nothing of the outside file kept: every file of the cache, and every
    // page and the trace now, are the listed file's.
    let cache = server.cache_dir();
    for name in names_in(cache) {
        let Ok(bytes) = std::fs::read(cache.join(&name)) else {
            continue;
        };
        for secret_name in &secret_only {
            assert!(
                !holds(&bytes, secret_name),
                "the cache's {name} holds {secret_name:?}"
            );
        }
    }
    let id = "0/nsys-ai_mock.sqlite";
    let made = server.post(&format!("/api/convert/{id}"));
    assert_eq!(made.status, 200, "{}", made.text());
    let trace = server.get(&format!("/trace/{id}"));
    assert_eq!(trace.status, 200, "{}", trace.text());
    assert!(
        trace.body == real_trace,
        "the trace now is not the listed file's"
    );
    for page in ["stats", "report"] {
        let response = server.get(&format!("/{page}/{id}"));
        assert_eq!(response.status, 200, "{page}: {}", response.text());
        assert!(
            real_kernels.iter().any(|k| holds(&response.body, k)),
            "{page} shows none of the listed file's kernels"
        );
    }
    let list = server.reports_with_headlines();
    let top = list[0]["headline"]["top_kernel"][0].as_str().unwrap_or("");
    assert!(
        real_strings.iter().any(|s| s == top),
        "the headline's top kernel {top:?} is not the listed file's"
    );
}
