//! Traces too big for a browser tab: the page asks `/api/fit/RUN` whether
//! the trace fits a tab (the estimate `open` makes), and where not offers
//! trace_processor as the UI's accelerator, as `open --tp` does: `POST
//! /api/tp/RUN` starts it on the cache's trace, which it loads (its own
//! `/status` names the file); the server stops it when it stops. Without a
//! trace_processor the answer says why there is no offer. The tab's limit
//! is lowered with the hidden `--tab-limit` (the fixtures are small).

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::support::fixtures::{require, Need};

use super::{names_in, request, runs, Server};

/// A port of 127.0.0.1 free now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    listener.local_addr().unwrap().port()
}

/// What `GET path` on 127.0.0.1:`port` answers (the connection retried
/// for a minute while nothing listens yet).
fn get_from(port: u16, path: &str) -> super::Response {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(_) => return request(port, "GET", path, &[], &[]),
            Err(e) => assert!(Instant::now() < deadline, "nothing on port {port}: {e}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn fit(server: &Server, id: &str) -> serde_json::Value {
    // Converted first, as the page does: a GET converts nothing.
    let converted = server.post(&format!("/trace/{id}"));
    assert_eq!(converted.status, 200, "{}", converted.text());
    let answer = server.get(&format!("/api/fit/{id}"));
    assert_eq!(answer.status, 200, "{}", answer.text());
    serde_json::from_slice(&answer.body).unwrap()
}

#[test]
fn serve_offers_trace_processor_for_a_trace_too_big_for_a_tab() {
    let Some(tp) = require(Need::TraceProcessor) else {
        return;
    };
    let name = "nsys-ai_mock.sqlite";
    let Some((dir, _)) = runs(&[name]) else {
        return;
    };
    let id = format!("0/{name}");
    // The tab's real limit: the trace fits, nothing is offered.
    let server = Server::start(&[dir.path()], &[]);
    let fits = fit(&server, &id);
    assert_eq!(fits["fits"], true, "{fits}");
    assert!(fits["message"].is_null(), "{fits}");
    drop(server);

    let port = free_port();
    let limit = "1K";
    let mut server = Server::start(
        &[dir.path()],
        &[
            "--tab-limit",
            limit,
            "--tp",
            tp.to_str().unwrap(),
            "--tp-port",
            &port.to_string(),
        ],
    );
    let big = fit(&server, &id);
    assert_eq!(big["fits"], false, "{big}");
    assert_eq!(big["limit"], 1024, "{big}");
    let needs = big["needs"].as_u64().unwrap();
    assert!(needs > 1024, "{big}");
    // The estimate `open` makes: 4.4 bytes of memory per byte of the
    // trace uncompressed, at least 5 times its gzipped size.
    let trace = names_in(server.cache_dir())
        .into_iter()
        .find(|n| n.ends_with(".trace.perfetto-trace"))
        .expect("converted into the cache");
    let gzipped = std::fs::metadata(server.cache_dir().join(&trace))
        .unwrap()
        .len();
    assert!(
        needs >= gzipped * 5 * 44 / 10,
        "{needs} for {gzipped} bytes"
    );
    let message = big["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("{name} needs about "))
            && message.contains("more than a browser tab has"),
        "{message}"
    );
    assert_eq!(big["tp"], true, "{big}");
    // Started only by the page itself (its Origin), as every change.
    let host = format!("127.0.0.1:{}", server.port);
    let foreign = server.send(
        "POST",
        &format!("/api/tp/{id}"),
        &[("Origin", "https://example.com")],
        &[],
    );
    assert_eq!(foreign.status, 403, "{}", foreign.text());
    let origin = format!("http://{host}");
    let started = server.send(
        "POST",
        &format!("/api/tp/{id}"),
        &[("Host", &host), ("Origin", &origin)],
        &[],
    );
    assert_eq!(started.status, 200, "{}", started.text());
    let answer: serde_json::Value = serde_json::from_slice(&started.body).unwrap();
    assert_eq!(
        answer["url"],
        format!("https://ui.perfetto.dev/#!/?rpc_port={port}")
    );
    // trace_processor loaded the cache's trace.
    let status = get_from(port, "/status");
    assert_eq!(status.status, 200);
    let loaded = String::from_utf8_lossy(&status.body).into_owned();
    assert!(loaded.contains(&trace), "{loaded:?} names not {trace}");
    // Stopped with the server.
    // SAFETY: kill(2) on the server's own pid.
    assert_eq!(
        unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) },
        0
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "still serving after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let gone = TcpStream::connect(("127.0.0.1", port)).map(|mut s| {
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
    });
    assert!(gone.is_err(), "trace_processor still listens on {port}");

    // No trace_processor: the answer says why there is no offer, and none
    // starts.
    let server = Server::start(
        &[dir.path()],
        &[
            "--tab-limit",
            limit,
            "--tp",
            "/nonexistent/trace_processor_shell",
        ],
    );
    let none = fit(&server, &id);
    assert_eq!(
        (&none["fits"], &none["tp"]),
        (&false.into(), &false.into()),
        "{none}"
    );
    assert_eq!(
        none["no_tp"],
        "--tp /nonexistent/trace_processor_shell: no such file"
    );
    let host = format!("127.0.0.1:{}", server.port);
    let origin = format!("http://{host}");
    let refused = server.send(
        "POST",
        &format!("/api/tp/{id}"),
        &[("Host", &host), ("Origin", &origin)],
        &[],
    );
    assert_eq!(refused.status, 422, "{}", refused.text());
    assert!(
        refused.text().contains("no such file"),
        "{}",
        refused.text()
    );
}
