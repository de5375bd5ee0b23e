//! A bounded load on 127.0.0.1: many clients at once asking for pages and
//! traces while several uploads stream in. Every answer is right (each
//! trace `convert`'s bytes, each upload the file sent), and the server's
//! peak memory (VmHWM) stays within a generous bound of its input: traces
//! and uploads are streamed, never held whole, and conversions are `-j`
//! at a time.

use std::path::Path;

use super::cache::converted_by_cli;
use super::{runs, Server};

/// A line of /proc/PID/status in KiB (`VmHWM`: the peak resident set).
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

const CLIENTS: usize = 24;
const ROUNDS: usize = 3;
const UPLOADS: usize = 4;

#[test]
fn serve_under_load_answers_every_request_rightly_in_bounded_memory() {
    if !Path::new("/proc/self/status").is_file() {
        eprintln!("skipped: no /proc to read the server's memory from");
        return;
    }
    let names = [
        "nsys-ai_h100_2gpu_1s.sqlite",
        "h100_torch_graph_whole.sqlite",
        "dlprof_nsys_profile.sqlite",
        "nsys-ai_healthy_1pct.sqlite",
    ];
    let Some((dir, copies)) = runs(&names) else {
        return;
    };
    let expected: Vec<Vec<u8>> = copies.iter().map(|c| converted_by_cli(c)).collect();
    let input: u64 = copies
        .iter()
        .map(|c| std::fs::metadata(c).unwrap().len())
        .sum();
    let upload_source = std::fs::read(&copies[2]).unwrap();
    let server = Server::start(&[dir.path()], &[]);
    let pid = server.child.id();
    let list = server.reports_with_headlines();
    let ids: Vec<String> = names.iter().map(|n| super::id_in(&list, n)).collect();
    let idle = status_kib(pid, "VmRSS");
    let host = format!("127.0.0.1:{}", server.port);
    let origin = format!("http://{host}");
    let uploaded: Vec<String> = std::thread::scope(|scope| {
        for client in 0..CLIENTS {
            let (server, ids, expected) = (&server, &ids, &expected);
            scope.spawn(move || {
                for round in 0..ROUNDS {
                    // Each client its own order, so that conversions and
                    // sends of every run overlap.
                    let run = (client + round) % ids.len();
                    let id = &ids[run];
                    for page in ["/".to_owned(), "/api/reports".to_owned()]
                        .into_iter()
                        .chain([format!("/report/{id}"), format!("/stats/{id}")])
                    {
                        let response = server.get(&page);
                        assert_eq!(response.status, 200, "{page}: {}", response.text());
                    }
                    // Each client a browser of its own (its cookie): the
                    // jobs are bounded per client.
                    let cookie = format!("nsys2perfetto_client_{}={client:032x}", server.port);
                    let trace = server.send(
                        "POST",
                        &format!("/trace/{id}"),
                        &[("Origin", &server.origin()), ("Cookie", &cookie)],
                        &[],
                    );
                    assert_eq!(trace.status, 200, "{}", trace.text());
                    assert!(trace.body == expected[run], "{} differs", names[run]);
                }
            });
        }
        let sending: Vec<_> = (0..UPLOADS)
            .map(|n| {
                let (server, host, origin, body) = (&server, &host, &origin, &upload_source);
                scope.spawn(move || {
                    let response = server.send(
                        "POST",
                        &format!("/upload?name=uploaded-{n}.sqlite"),
                        &[("Host", host), ("Origin", origin)],
                        body,
                    );
                    assert_eq!(response.status, 200, "{}", response.text());
                    response.text()
                })
            })
            .collect();
        sending.into_iter().map(|s| s.join().unwrap()).collect()
    });
    for name in &uploaded {
        assert!(
            std::fs::read(dir.path().join(name)).unwrap() == upload_source,
            "{name} differs from what was sent"
        );
    }
    let peak = status_kib(pid, "VmHWM");
    eprintln!(
        "serve under load: idle {idle} KiB, peak {peak} KiB; input {} KiB ({} requests, {UPLOADS} uploads)",
        input / 1024,
        CLIENTS * ROUNDS * 5
    );
    // Generous: the program and its threads, plus a few times the input.
    let bound = 128 * 1024 + 16 * input / 1024;
    assert!(
        peak < bound,
        "peak RSS {peak} KiB over {bound} KiB for {} KiB of input",
        input / 1024
    );
}
