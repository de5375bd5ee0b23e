//! Conversions as jobs: followed live (`/api/convert/RUN`, server-sent
//! events with the fraction done), cancelled when the last client waiting
//! goes, leaving nothing in the cache; a job two clients wait for goes on
//! when one of them goes, and gives `convert`'s bytes.

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use super::cache::converted_by_cli;
use super::{names_in, runs, Server};

/// Starts (or joins) the conversion by `POST /api/convert/ID` and reads events until one says the job is
/// under way with some of it done; returns the connection and that event.
///
/// A socket of its own rather than the client crate's: a client that goes
/// is one whose connection closes at once (`gone`), where the crate may
/// keep a connection it did not read to its end.
pub(super) fn follow_until_under_way(
    server: &Server,
    id: &str,
) -> (BufReader<TcpStream>, serde_json::Value) {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    write!(
        stream,
        "POST /api/convert/{id} HTTP/1.1\r\nHost: {}\r\nOrigin: {}\r\n{}Content-Length: 0\r\n\r\n",
        server.host(),
        server.origin(),
        server.credentials("POST")
    )
    .unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the events ended");
        // Chunked: the event's line sits between the chunks' sizes.
        let Some(data) = line.trim().strip_prefix("data: ") else {
            continue;
        };
        let event: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(event["state"], "running", "{event}");
        if event["done"].as_f64().is_some_and(|d| d > 0.0) {
            return (reader, event);
        }
    }
}

/// The client of `reader` goes: its connection closed both ways, now.
fn gone(reader: BufReader<TcpStream>) {
    reader.get_ref().shutdown(Shutdown::Both).unwrap();
}

/// The job numbered `id` as `/api/jobs` lists it, once ended.
fn ended_job(server: &Server, id: u64) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let jobs: Vec<serde_json::Value> =
            serde_json::from_slice(&server.get("/api/jobs").body).unwrap();
        let job = jobs.into_iter().find(|j| j["id"] == id).expect("listed");
        if job["state"] != "running" {
            return job;
        }
        assert!(Instant::now() < deadline, "still running: {job}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The cache's trace files and files being written.
fn traces_in(cache: &std::path::Path) -> Vec<String> {
    names_in(cache)
        .into_iter()
        .filter(|n| n.contains(".trace.") || n.starts_with('.'))
        .collect()
}

#[test]
fn serve_cancels_a_conversion_no_one_waits_for_and_keeps_nothing() {
    // The largest fixture: its conversion takes long enough to be seen.
    let Some((dir, copies)) = runs(&["cori_run1_report1.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let list = server.reports_with_headlines();
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let (reader, event) = follow_until_under_way(&server, &id);
    let job = event["id"].as_u64().unwrap();
    assert_eq!(event["waiting"], 1, "{event}");
    assert_eq!(
        event["what"],
        format!("convert {}", list[0]["path"].as_str().unwrap())
    );
    // The only client goes.
    gone(reader);
    let ended = ended_job(&server, job);
    assert_eq!(ended["state"], "cancelled", "{ended}");
    // Nothing of it is left in the cache, finished or half-written.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !traces_in(server.cache_dir()).is_empty() {
        assert!(
            Instant::now() < deadline,
            "left in the cache: {:?}",
            traces_in(server.cache_dir())
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Asked for again, it is converted whole: convert's bytes.
    let served = server.post(&format!("/trace/{id}"));
    assert_eq!(served.status, 200, "{}", served.text());
    assert!(served.body == converted_by_cli(&copies[0]));
}

#[test]
fn serve_goes_on_with_a_conversion_another_client_waits_for() {
    let Some((dir, copies)) = runs(&["cori_run1_report1.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let list = server.reports_with_headlines();
    let id = list[0]["id"].as_str().unwrap().to_owned();
    let (first, event) = follow_until_under_way(&server, &id);
    // A second client joins the same job, then the first goes.
    let (second, joined) = follow_until_under_way(&server, &id);
    assert_eq!(joined["id"], event["id"], "{joined}");
    assert_eq!(joined["waiting"], 2, "{joined}");
    drop(first);
    let ended = ended_job(&server, event["id"].as_u64().unwrap());
    assert_eq!(ended["state"], "done", "{ended}");
    assert_eq!(ended["done"], 1.0);
    drop(second);
    let served = server.post(&format!("/trace/{id}"));
    assert!(served.body == converted_by_cli(&copies[0]));
}
