//! `open`: a real HTTP client (std's TcpStream) against the server: CORS for
//! ui.perfetto.dev only, one fetch of the exact bytes, the port freed after;
//! a report converted first; trace_processor_shell for big traces; bad
//! input refused with nothing left running.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::fixtures::{require, Need};
use crate::support::program::{demo, BIN};

const UI: &str = "https://ui.perfetto.dev";

/// A port free now on 127.0.0.1.
fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `open` on `input`, on `port`, with no browser.
fn spawn_open(input: &Path, port: u16, extra: &[&str]) -> Child {
    Command::new(BIN)
        .arg("open")
        .arg(input)
        .args(["--no-browser", "--port", &port.to_string()])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Connects once the server listens (a minute at most: a loaded machine,
/// a conversion first), failing if `child` exits before.
fn connect(child: &mut Child, port: u16) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(stream) = TcpStream::connect(("127.0.0.1", port)) {
            return stream;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            panic!("exited ({status}) before listening: {stderr}");
        }
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on `stream`; the server closes the connection
/// after its answer.
fn request(mut stream: TcpStream, method: &str, path: &str, headers: &[(&str, &str)]) -> Response {
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete head");
    let text = String::from_utf8(raw[..end].to_vec()).unwrap();
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap();
    assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
    let status = status_line[9..12].parse().unwrap();
    let headers = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    let body = raw[end + 4..].to_vec();
    let response = Response {
        status,
        headers,
        body,
    };
    if let Some(length) = response.header("Content-Length") {
        if method != "HEAD" {
            assert_eq!(length.parse::<usize>().unwrap(), response.body.len());
        }
    }
    response
}

/// Waits for `child` to exit (a minute at most), killing it otherwise.
fn finish(mut child: Child) -> (std::process::ExitStatus, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("still running a minute after the trace was fetched");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn port_is_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// A trace served to the UI: the preflight answered for ui.perfetto.dev,
/// another origin and another path refused (the server stays up), then one
/// GET gets the file's exact bytes with the UI's CORS header; the command
/// ends by itself and the port is free again.
#[test]
fn serves_a_trace_once_to_the_ui_only() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run 1.perfetto-trace");
    let status = Command::new(BIN)
        .args(["convert", "-q"])
        .arg(demo())
        .arg("-o")
        .arg(&trace)
        .status()
        .unwrap();
    assert!(status.success());
    let bytes = std::fs::read(&trace).unwrap();
    let port = free_port();
    let mut child = spawn_open(&trace, port, &[]);
    let path = "/run%201.perfetto-trace";

    let preflight = request(
        connect(&mut child, port),
        "OPTIONS",
        path,
        &[
            ("Origin", UI),
            ("Access-Control-Request-Method", "GET"),
            ("Access-Control-Request-Private-Network", "true"),
        ],
    );
    assert_eq!(preflight.status, 204);
    assert_eq!(preflight.header("Access-Control-Allow-Origin"), Some(UI));
    assert_eq!(
        preflight.header("Access-Control-Allow-Private-Network"),
        Some("true")
    );
    assert!(preflight
        .header("Access-Control-Allow-Methods")
        .is_some_and(|m| m.contains("GET")));

    let foreign = request(
        connect(&mut child, port),
        "GET",
        path,
        &[("Origin", "https://example.com")],
    );
    assert_eq!(foreign.status, 403);
    assert_eq!(foreign.header("Access-Control-Allow-Origin"), None);
    let elsewhere = request(
        connect(&mut child, port),
        "GET",
        "/other",
        &[("Origin", UI)],
    );
    assert_eq!(elsewhere.status, 404);
    // Without the UI's origin in CORS mode, the trace is refused and the one
    // fetch not spent: another site's <img> (cross-site, no-cors, no
    // Origin), a tab opened on the URL, a bare client, a no-cors request
    // of the UI's page.
    let refused: [&[(&str, &str)]; 4] = [
        &[
            ("Sec-Fetch-Site", "cross-site"),
            ("Sec-Fetch-Mode", "no-cors"),
            ("Sec-Fetch-Dest", "image"),
        ],
        &[("Sec-Fetch-Site", "none"), ("Sec-Fetch-Mode", "navigate")],
        &[],
        &[("Origin", UI), ("Sec-Fetch-Mode", "no-cors")],
    ];
    for headers in refused {
        for method in ["GET", "HEAD"] {
            let answer = request(connect(&mut child, port), method, path, headers);
            assert_eq!(answer.status, 403, "{method} {headers:?}");
        }
    }

    // A connection that never asks anything (as browsers open) holds
    // nothing up.
    let idle = connect(&mut child, port);
    let fetched = request(
        connect(&mut child, port),
        "GET",
        path,
        &[
            ("Origin", UI),
            ("Sec-Fetch-Site", "cross-site"),
            ("Sec-Fetch-Mode", "cors"),
        ],
    );
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.header("Access-Control-Allow-Origin"), Some(UI));
    assert_eq!(
        fetched.header("Content-Type"),
        Some("application/octet-stream")
    );
    assert!(fetched.body == bytes, "the trace's exact bytes");
    let (status, stderr) = finish(child);
    drop(idle);
    assert!(status.success(), "{stderr}");
    // The UI fetches from 9001 only, from another port with its flag on,
    // which reads the port from rpc_port.
    assert_ne!(port, 9001);
    assert!(
        stderr.contains(&format!(
            "https://ui.perfetto.dev/#!/?rpc_port={port}&url=http://127.0.0.1:{port}{path}"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("fetches from 127.0.0.1:9001 only")
            && stderr.contains("https://ui.perfetto.dev/#!/flags/cspAllowAnyWebsocketPort"),
        "{stderr}"
    );
    // The UI fetches from 9001 only: the tunnel ends there, whatever the port.
    assert!(
        stderr.contains(&format!("ssh -L 9001:127.0.0.1:{port} ")),
        "{stderr}"
    );
    if port != 9001 {
        assert!(
            stderr.contains(&format!(
                ", then open https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001{path}\n"
            )),
            "{stderr}"
        );
    }
    assert!(port_is_free(port), "port {port} still taken");
}

/// A report is converted first; the trace served is what `convert` makes
/// of it, and the temporary trace is gone afterwards.
#[test]
fn converts_a_report_first() {
    let dir = tempfile::tempdir().unwrap();
    let expected = dir.path().join("demo.perfetto-trace");
    let status = Command::new(BIN)
        .args(["convert", "-q"])
        .arg(demo())
        .arg("-o")
        .arg(&expected)
        .status()
        .unwrap();
    assert!(status.success());
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let port = free_port();
    let mut child = Command::new(BIN)
        .arg("open")
        .arg(demo())
        .args(["--no-browser", "--port", &port.to_string()])
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let fetched = request(
        connect(&mut child, port),
        "GET",
        "/demo.perfetto-trace",
        &[("Origin", UI)],
    );
    assert_eq!(fetched.status, 200);
    assert!(fetched.body == std::fs::read(&expected).unwrap());
    let (status, stderr) = finish(child);
    assert!(status.success(), "{stderr}");
    assert_eq!(
        crate::support::program::left_in_temp_dir(&tmp),
        Vec::<std::path::PathBuf>::new(),
        "left in TMPDIR"
    );
    assert!(port_is_free(port));
}

/// A JSON trace (`convert --format json`, Chrome's trace event format) is
/// served as it is, as the UI reads it.
#[test]
fn serves_a_json_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("demo.json");
    let status = Command::new(BIN)
        .args(["convert", "-q", "--format", "json"])
        .arg(demo())
        .arg("-o")
        .arg(&trace)
        .status()
        .unwrap();
    assert!(status.success());
    let port = free_port();
    let mut child = spawn_open(&trace, port, &[]);
    let fetched = request(
        connect(&mut child, port),
        "GET",
        "/demo.json",
        &[("Origin", UI)],
    );
    assert_eq!(fetched.status, 200);
    assert!(fetched.body == std::fs::read(&trace).unwrap());
    let (status, stderr) = finish(child);
    assert!(status.success(), "{stderr}");
    assert!(port_is_free(port));
}

/// Ctrl-C before the fetch: the command ends with 130 and the port is free.
#[test]
fn ctrl_c_frees_the_port() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.perfetto-trace");
    std::fs::write(&trace, [0x0a, 0x00]).unwrap();
    let port = free_port();
    let mut child = spawn_open(&trace, port, &[]);
    drop(connect(&mut child, port));
    // SAFETY: kill(2) has no memory-safety preconditions.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let (status, stderr) = finish(child);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(port_is_free(port));
}

/// A trace too big for a tab (here: --native, whatever its size) goes to
/// trace_processor_shell on the port, which answers the UI's RPC status
/// request; Ctrl-C stops it and frees the port.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn big_traces_go_to_trace_processor() {
    let Some(tp) = require(Need::TraceProcessor) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("demo.perfetto-trace");
    let status = Command::new(BIN)
        .args(["convert", "-q"])
        .arg(demo())
        .arg("-o")
        .arg(&trace)
        .status()
        .unwrap();
    assert!(status.success());
    let port = free_port();
    let tp = tp.to_str().unwrap().to_owned();
    let mut child = spawn_open(&trace, port, &["--native", "--tp", &tp]);
    // trace_processor answers /status once it has loaded the trace.
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        let response = request(
            connect(&mut child, port),
            "GET",
            "/status",
            &[("Origin", UI)],
        );
        if response.status == 200 && !response.body.is_empty() {
            break response;
        }
        assert!(Instant::now() < deadline, "no status from trace_processor");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(status.header("Access-Control-Allow-Origin"), Some(UI));
    // SAFETY: kill(2) has no memory-safety preconditions.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let (status, stderr) = finish(child);
    assert_eq!(status.code(), Some(130), "{stderr}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !port_is_free(port) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(port_is_free(port), "trace_processor still holds {port}");
}

/// Bad input: one line, exit 1, nothing listening afterwards.
#[test]
fn refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("notes.txt"), "not a trace").unwrap();
    let taken = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let taken_port = taken.local_addr().unwrap().port();
    std::fs::write(d.join("t.perfetto-trace"), [0x0a, 0x00]).unwrap();
    let port = free_port().to_string();
    let taken_arg = taken_port.to_string();
    let cases: [(&[&str], &str); 4] = [
        (
            &["open", "missing.perfetto-trace", "--port", &port],
            "cannot read missing.perfetto-trace",
        ),
        (
            &["open", "notes.txt", "--port", &port],
            "notes.txt is neither",
        ),
        (
            &[
                "open",
                "t.perfetto-trace",
                "--no-browser",
                "--port",
                &taken_arg,
            ],
            "is in use",
        ),
        (
            &[
                "open",
                "t.perfetto-trace",
                "--native",
                "--tp",
                "/nonexistent/tp",
                "--port",
                &port,
            ],
            "cannot start /nonexistent/tp",
        ),
    ];
    for (args, needle) in cases {
        let out = Command::new(BIN)
            .current_dir(d)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("nsys2perfetto: error: ") && stderr.contains(needle),
            "{args:?}: {stderr:?} should say {needle:?}"
        );
        assert!(
            port_is_free(port.parse().unwrap()),
            "{args:?} left a port open"
        );
    }
    drop(taken);
}

/// Chromium (Debian's, headless), where installed: a page of another origin
/// cannot read the trace (the server refuses it, and the browser's CORS
/// check fails), nor spend its one fetch by a `no-cors` request (which
/// carries no Origin) or by opening the URL itself, while the server stays
/// up; the UI's request then gets it, and `open` ends. Without Chromium it skips and says so
/// (CI installs it, so there it fails instead).
#[test]
fn headless_chromium_is_refused_elsewhere_and_fetches_it() {
    use std::os::unix::process::CommandExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let Some(chromium) = ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    }) else {
        crate::support::fixtures::skip("no chromium on PATH (apt-get install chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("demo.perfetto-trace");
    let status = Command::new(BIN)
        .args(["convert", "-q"])
        .arg(demo())
        .arg("-o")
        .arg(&trace)
        .status()
        .unwrap();
    assert!(status.success());
    let port = free_port();
    let mut child = spawn_open(&trace, port, &[]);
    drop(connect(&mut child, port));
    let browser = |url: &str| {
        let mut command = Command::new(&chromium);
        command
            .args(["--headless", "--no-sandbox", "--disable-gpu"])
            .arg(format!(
                "--user-data-dir={}",
                dir.path().join("chromium").display()
            ))
            .args(["--virtual-time-budget=5000", "--dump-dom", url])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0);
        command.spawn().unwrap()
    };
    let page = format!(
        "data:text/html,<body><script>fetch('http://127.0.0.1:{port}/demo.perfetto-trace')\
         .then(r=>r.arrayBuffer()).then(b=>document.body.textContent='read '+b.byteLength)\
         .catch(e=>document.body.textContent='refused')</script></body>"
    );
    let dom_of = |mut page: Child| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while page.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                // SAFETY: kill(2) has no memory-safety preconditions.
                unsafe { libc::kill(-(page.id() as libc::pid_t), libc::SIGKILL) };
                panic!("chromium did not finish the page in two minutes");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let dom = page.wait_with_output().unwrap();
        String::from_utf8_lossy(&dom.stdout).into_owned()
    };
    let dom = dom_of(browser(&page));
    assert!(dom.contains("refused"), "{dom}");
    assert!(
        child.try_wait().unwrap().is_none(),
        "open ended on a refused fetch"
    );
    // Another site's page (http://localhost:P, cross-site to 127.0.0.1)
    // with the trace as an image and a no-cors fetch: requests without
    // Origin. It cannot read them, but they must not take the trace from
    // the UI either.
    let site = OnePage::serve(&format!(
        "<body><img src='http://127.0.0.1:{port}/demo.perfetto-trace'><script>\
         fetch('http://127.0.0.1:{port}/demo.perfetto-trace',{{mode:'no-cors'}})\
         .then(r=>document.body.append('sent '+r.type))\
         .catch(e=>document.body.append('failed'))</script></body>"
    ));
    let dom = dom_of(browser(&format!("http://localhost:{}/", site.port)));
    assert!(
        dom.contains("sent opaque") || dom.contains("failed"),
        "{dom}"
    );
    assert!(
        site.served() > 0,
        "chromium never loaded the other site's page"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "open served its one fetch to another site's no-cors request"
    );
    // A tab opened on the trace's URL.
    let dom = dom_of(browser(&format!(
        "http://127.0.0.1:{port}/demo.perfetto-trace"
    )));
    assert!(dom.contains("only ui.perfetto.dev may fetch"), "{dom}");
    assert!(
        child.try_wait().unwrap().is_none(),
        "open served its one fetch to a tab"
    );

    // The UI's request, as Chromium sends it from ui.perfetto.dev.
    let fetched = request(
        connect(&mut child, port),
        "GET",
        "/demo.perfetto-trace",
        &[
            ("Origin", UI),
            ("Sec-Fetch-Site", "cross-site"),
            ("Sec-Fetch-Mode", "cors"),
        ],
    );
    assert_eq!(fetched.status, 200);
    let (status, stderr) = finish(child);
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("the trace was fetched"), "{stderr}");
    assert!(port_is_free(port));
}

/// A web site of one page, on 127.0.0.1 (reached as `localhost`, another
/// site than 127.0.0.1), served by a thread until dropped.
struct OnePage {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    served: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl OnePage {
    fn serve(html: &str) -> OnePage {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::sync::Arc;
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicUsize::new(0));
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{html}",
            html.len()
        );
        let (stopped, count) = (Arc::clone(&stop), Arc::clone(&served));
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        stream.set_nonblocking(false).unwrap();
                        stream
                            .set_read_timeout(Some(Duration::from_secs(5)))
                            .unwrap();
                        let mut head = Vec::new();
                        let mut byte = [0u8; 1];
                        while !head.ends_with(b"\r\n\r\n") {
                            match stream.read(&mut byte) {
                                Ok(1) => head.push(byte[0]),
                                _ => break,
                            }
                        }
                        let _ = stream.write_all(response.as_bytes());
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        OnePage {
            port,
            stop,
            served,
            thread: Some(thread),
        }
    }

    /// How many requests it answered.
    fn served(&self) -> usize {
        self.served.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for OnePage {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
