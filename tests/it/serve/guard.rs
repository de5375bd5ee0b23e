//! The hub's guard, as an attacker on the same machine or another site
//! would try it: the token on loopback by default (`--no-token` only
//! there, saying what it means; short tokens refused), the Host checked on
//! loopback whatever the token and parsed strictly, a cookie per hub, no
//! job started by a GET nor by a POST without the page's Origin and CSRF
//! token, jobs bounded per client, and the headers every answer carries.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{names_in, runs, Following, Server, BIN};

/// The files of the cache that a job makes (or is writing).
fn made_in(cache: &std::path::Path) -> Vec<String> {
    names_in(cache)
        .into_iter()
        .filter(|n| {
            n.starts_with('.')
                || n.contains(".trace.")
                || n.ends_with(".perfetto-trace")
                || n.ends_with(".steps.html")
        })
        .collect()
}

/// The jobs `/api/jobs` lists.
fn jobs(server: &Server) -> Vec<serde_json::Value> {
    let listed = server.get("/api/jobs");
    assert_eq!(listed.status, 200, "{}", listed.text());
    serde_json::from_slice(&listed.body).unwrap()
}

#[test]
fn serve_needs_its_token_on_loopback_by_default() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    let token = server
        .token
        .clone()
        .unwrap_or_else(|| panic!("no token in {}", server.url));
    assert!(
        token.len() >= 32 && token.bytes().all(|b| b.is_ascii_hexdigit()),
        "{token}"
    );
    // Any local user (curl as nobody) with the right Host but no token.
    for path in [
        "/",
        "/api/reports",
        "/api/config",
        "/api/jobs",
        "/report/0/nsys-ai_mock.sqlite",
        "/stats/0/nsys-ai_mock.sqlite",
        "/trace/0/nsys-ai_mock.sqlite",
        "/assets/hub.js",
    ] {
        let refused = server.send_as_stranger("GET", path, &[], &[]);
        assert_eq!(refused.status, 401, "{path}: {}", refused.text());
        assert!(!refused.text().contains("nsys-ai_mock"), "{path}");
    }
    let body = std::fs::read(dir.path().join("nsys-ai_mock.sqlite")).unwrap();
    let origin = server.origin();
    let upload = server.send_as_stranger(
        "POST",
        "/upload?name=planted.sqlite",
        &[("Origin", &origin)],
        &body,
    );
    assert_eq!(upload.status, 401, "{}", upload.text());
    assert_eq!(names_in(dir.path()), ["nsys-ai_mock.sqlite"]);
    // With the token: served.
    assert_eq!(server.get("/api/reports").status, 200);
}

/// `serve DIR --port 0 ARGS`: its exit status and standard error, or, where
/// it is still serving after a minute, a failure.
fn refused_start(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let cache = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .arg("serve")
        .arg(dir)
        .args(["--port", "0", "--cache"])
        .arg(cache.path())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve {args:?} was not refused: it serves");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.code(), stderr)
}

#[test]
fn serve_refuses_short_tokens_and_no_token_off_loopback() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    for (args, says) in [
        (&["--token", "abc123"][..], "at least 16 characters"),
        (
            &["--token", "0123456789abcde"][..],
            "at least 16 characters",
        ),
        (
            &["--token", "0123456789abcdef;Domain=x"][..],
            "--token must be letters, digits",
        ),
        (
            &["--no-token", "--bind", "0.0.0.0"][..],
            "--no-token is for a loopback --bind only",
        ),
    ] {
        let (code, stderr) = refused_start(dir.path(), args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}

#[test]
fn serve_without_a_token_on_loopback_says_what_it_means() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .arg("serve")
        .arg(dir.path())
        .args(["--port", "0", "--no-token", "-q", "--cache"])
        .arg(cache.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let mut warning = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut warning)
        .unwrap();
    let port: u16 = url
        .trim()
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {url:?}"));
    let answer =
        |host: &str| super::request(port, "GET", "/api/reports", &[("Host", host)], &[]).status;
    let own = answer(&format!("127.0.0.1:{port}"));
    let rebound = answer(&format!("evil.example:{port}"));
    let _ = child.kill();
    let _ = child.wait();
    assert!(!url.contains("token"), "{url}");
    assert!(
        warning.contains("--no-token: any user of this machine can read every run"),
        "{warning}"
    );
    assert_eq!(own, 200);
    // The Host is checked still (DNS rebinding).
    assert_eq!(rebound, 403);
}

#[test]
fn serve_on_loopback_checks_the_host_with_a_token_too() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let token = "a-token-of-twenty-chars";
    let server = Server::start(&[dir.path()], &["--token", token]);
    assert_eq!(server.token.as_deref(), Some(token), "{}", server.url);
    assert_eq!(server.get("/api/reports").status, 200);
    // A page of another site whose name points at 127.0.0.1, the token
    // guessed or not: the Host is refused first.
    let host = format!("evil.example:{}", server.port);
    let rebound = server.send("GET", "/api/reports", &[("Host", &host)], &[]);
    assert_eq!(rebound.status, 403, "{}", rebound.text());
}

#[test]
fn serve_names_its_cookie_after_its_port() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let tokens = ["token-of-hub-a-0123456789", "token-of-hub-b-0123456789"];
    let hubs: Vec<Server> = tokens
        .iter()
        .map(|t| Server::start(&[dir.path()], &["--token", t]))
        .collect();
    // Each sets its cookie, named by its port.
    let cookies: Vec<String> = hubs
        .iter()
        .zip(tokens)
        .map(|(hub, token)| {
            let opened = hub.send_as_stranger("GET", &format!("/?token={token}"), &[], &[]);
            assert_eq!(opened.status, 200, "{}", opened.text());
            let cookie = opened
                .headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
                .map(|(_, v)| v.split(';').next().unwrap().to_owned())
                .find(|c| c.contains("token"))
                .expect("a token cookie");
            assert_eq!(cookie, format!("nsys2perfetto_token_{}={token}", hub.port));
            cookie
        })
        .collect();
    // A browser sends every cookie of the host to each hub (cookies know
    // no port): each hub takes its own, and only its own.
    let both = cookies.join("; ");
    for (i, hub) in hubs.iter().enumerate() {
        let reports = hub.send_as_stranger("GET", "/api/reports", &[("Cookie", &both)], &[]);
        assert_eq!(reports.status, 200, "hub {i}: {}", reports.text());
        let other = &cookies[1 - i];
        let refused = hub.send_as_stranger("GET", "/api/reports", &[("Cookie", other)], &[]);
        assert_eq!(refused.status, 401, "hub {i} took the other's cookie");
    }
}

#[test]
fn serve_starts_no_job_by_get_nor_by_a_post_of_another_page() {
    let names = ["nsys-ai_mock.sqlite", "dlprof_nsys_profile.sqlite"];
    let Some((dir, _)) = runs(&names) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    // Headlines are the hub's own work, not a client's.
    server.reports_with_headlines();
    let (a, b) = ("0/nsys-ai_mock.sqlite", "0/dlprof_nsys_profile.sqlite");
    let two = format!("run={a}&run={b}");
    let asks = [
        format!("/trace/{a}"),
        format!("/trace/{a}?format=json"),
        format!("/made/compare?{two}"),
        format!("/made/merge?{two}"),
        format!("/made/steps?run={a}&step=*"),
    ];
    let jobs_urls = [
        format!("/api/convert/{a}"),
        format!("/api/convert/{a}?format=json"),
        format!("/api/make/compare?{two}"),
        format!("/api/make/merge?{two}"),
        format!("/api/make/steps?run={a}&step=*"),
    ];
    // A GET of a job's URL: what is made (nothing yet), or a page with a
    // button that asks for it by POST, carrying the CSRF token.
    for url in &asks {
        let page = server.get(url);
        assert_eq!(page.status, 200, "{url}: {}", page.text());
        assert_eq!(
            page.header("content-type"),
            Some("text/html; charset=utf-8"),
            "{url}"
        );
        let html = page.text();
        let action = url.replace('&', "&amp;");
        assert!(
            html.contains(&format!("<form method=\"post\" action=\"{action}\">")),
            "{url}: {html}"
        );
        assert!(
            html.contains(&format!(
                "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
                server.csrf()
            )),
            "{url}"
        );
    }
    for url in &jobs_urls {
        let refused = server.get(url);
        assert_eq!(refused.status, 405, "{url}: {}", refused.text());
    }
    let fit = server.get(&format!("/api/fit/{a}"));
    assert_eq!(fit.status, 409, "{}", fit.text());
    // POSTs from another page: another Origin (a form, a no-cors fetch of
    // another site, or of another port of this host, whose requests carry
    // the cookie), or no CSRF token.
    let foreign_origins = [
        "http://evil.example".to_owned(),
        format!("http://127.0.0.1:{}", server.port.wrapping_add(1)),
        "null".to_owned(),
    ];
    for url in asks.iter().chain(&jobs_urls) {
        for origin in &foreign_origins {
            let refused = server.send("POST", url, &[("Origin", origin)], &[]);
            assert_eq!(refused.status, 403, "{url} from {origin}");
        }
        // A page whose Origin is hidden (`null`) and that the browser says
        // is of another site.
        let hidden = server.send(
            "POST",
            url,
            &[("Origin", "null"), ("Sec-Fetch-Site", "same-site")],
            &[],
        );
        assert_eq!(hidden.status, 403, "{url}: {}", hidden.text());
        let origin = server.origin();
        let no_csrf = server.send(
            "POST",
            url,
            &[("Origin", &origin), ("X-CSRF-Token", "guessed")],
            &[],
        );
        assert_eq!(no_csrf.status, 403, "{url}: {}", no_csrf.text());
    }
    // What a browser says of a load by another site's page (an `<img>`, a
    // no-cors fetch, a frame): refused before anything, a page read
    // included; a link of another site that opens the hub is followed.
    let stats = format!("/stats/{a}");
    for url in asks.iter().chain(&jobs_urls).chain([&stats]) {
        for (site, mode, dest) in [
            ("same-site", "no-cors", "image"),
            ("cross-site", "no-cors", "empty"),
            ("same-site", "navigate", "iframe"),
        ] {
            let loaded = server.send(
                "GET",
                url,
                &[
                    ("Sec-Fetch-Site", site),
                    ("Sec-Fetch-Mode", mode),
                    ("Sec-Fetch-Dest", dest),
                ],
                &[],
            );
            assert_eq!(loaded.status, 403, "{url} {site} {mode} {dest}");
        }
    }
    let linked = server.send(
        "GET",
        "/",
        &[
            ("Sec-Fetch-Site", "cross-site"),
            ("Sec-Fetch-Mode", "navigate"),
            ("Sec-Fetch-Dest", "document"),
        ],
        &[],
    );
    assert_eq!(linked.status, 200);
    // Nothing started, nothing made.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(jobs(&server), Vec::<serde_json::Value>::new());
    assert_eq!(made_in(server.cache_dir()), Vec::<String>::new());
    // The page's button (a form POST, its CSRF token a field; its Origin
    // `null`, as Chromium sends a form's under `Referrer-Policy:
    // no-referrer`, and the browser's word that it is of this origin)
    // converts and sends the trace; a GET then sends it too, made.
    let form = format!("csrf={}", server.csrf());
    let converted = super::request(
        server.port,
        "POST",
        &asks[0],
        &[
            ("Host", &server.host()),
            ("Origin", "null"),
            ("Sec-Fetch-Site", "same-origin"),
            (
                "Authorization",
                &format!("Bearer {}", server.token.as_deref().unwrap()),
            ),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        form.as_bytes(),
    );
    assert_eq!(converted.status, 200, "{}", converted.text());
    let kept = server.get(&asks[0]);
    assert_eq!(kept.status, 200);
    assert!(kept.body == converted.body, "the GET sent other bytes");
}

/// A stand-in for `nsys` whose export never ends (until killed): a job
/// exporting a report lasts while a test looks at it.
const STALLING_NSYS: &str = "#!/bin/sh
if [ \"$1\" = \"--version\" ]; then
    echo \"NVIDIA Nsight Systems version 2099.1.1.1-0000000\"
    exit 0
fi
exec sleep 120
";

#[test]
fn serve_bounds_the_jobs_under_way_of_one_client() {
    let dir = tempfile::tempdir().unwrap();
    let nsys = dir.path().join("stalling-nsys");
    crate::support::nsys::stand_in(&nsys, STALLING_NSYS);
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    std::fs::write(
        runs.join("slow.nsys-rep"),
        "NVIDIA Tegra Profiler Report 1.\nrest",
    )
    .unwrap();
    let mut server = Server::start(&[&runs], &["--nsys", nsys.to_str().unwrap()]);
    let id = "0/slow.nsys-rep";
    // As many as a client may have: each follows the conversion (its
    // export never ends).
    let mut following: Vec<Following> = (0..4)
        .map(|i| followed_or_refused(&server, id).unwrap_or_else(|| panic!("job {i} refused")))
        .collect();
    let one_more = server.post(&format!("/api/convert/{id}"));
    assert_eq!(one_more.status, 429, "{}", one_more.text());
    assert!(
        one_more.text().contains("4 jobs of yours are under way"),
        "{}",
        one_more.text()
    );
    // Another client (a browser of its own) is served.
    let cookie = format!(
        "nsys2perfetto_client_{}=0123456789abcdef0123456789abcdef",
        server.port
    );
    let (status, other) = server.follow(&format!("/api/convert/{id}"), &[("Cookie", &cookie)]);
    assert_eq!(status, 200);
    drop(other);
    // One of the first goes: the client may start one more.
    let gone = following.pop().unwrap();
    drop(gone);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(again) = followed_or_refused(&server, id) {
            following.push(again);
            break;
        }
        assert!(Instant::now() < deadline, "the slot never came back");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(following);
    // Stopped as Ctrl-C stops it: the stalled exports are killed with it.
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
}

/// The connection following the conversion of `id` (a POST of the
/// page's), or none where it is refused as one job too many (429).
fn followed_or_refused(server: &Server, id: &str) -> Option<Following> {
    let (status, following) = server.follow(&format!("/api/convert/{id}"), &[]);
    match status {
        429 => None,
        _ => {
            assert_eq!(status, 200);
            Some(following)
        }
    }
}

#[test]
fn serve_sends_its_security_headers_and_pages_without_inline_script() {
    let names = ["nsys-ai_mock.sqlite", "dlprof_nsys_profile.sqlite"];
    let Some((dir, _)) = runs(&names) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    server.reports_with_headlines();
    let (a, b) = ("0/nsys-ai_mock.sqlite", "0/dlprof_nsys_profile.sqlite");
    let pages = [
        "/".to_owned(),
        format!("/report/{a}"),
        format!("/stats/{a}"),
        format!("/findings/{a}"),
        format!("/open/{a}"),
        format!("/compare?a={a}&b={b}"),
        format!("/trace/{a}"),
        format!("/made/merge?run={a}&run={b}"),
    ];
    let others = [
        "/assets/hub.js".to_owned(),
        "/api/reports".to_owned(),
        "/no/such/page".to_owned(),
        format!("/api/convert/{a}"),
    ];
    // A refusal carries them too.
    let stranger = server.send_as_stranger("GET", "/", &[], &[]);
    let mut answers: Vec<(String, super::Response)> = pages
        .iter()
        .chain(&others)
        .map(|p| (p.clone(), server.get(p)))
        .collect();
    answers.push(("/ without the token".into(), stranger));
    for (path, answer) in &answers {
        let policy = answer
            .header("content-security-policy")
            .unwrap_or_else(|| panic!("{path}: no Content-Security-Policy"));
        let directives: Vec<&str> = policy.split(';').map(str::trim).collect();
        assert!(
            directives.contains(&"script-src 'self'"),
            "{path}: {policy}"
        );
        assert!(
            directives.contains(&"frame-ancestors 'none'"),
            "{path}: {policy}"
        );
        assert_eq!(
            answer.header("referrer-policy"),
            Some("no-referrer"),
            "{path}"
        );
        assert_eq!(
            answer.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
    }
    // Every page's script is the hub's file: no inline script, no handler
    // (a table's rows may ride in a JSON data block, which runs nothing).
    for (path, answer) in answers.iter().take(pages.len()) {
        assert_eq!(answer.status, 200, "{path}: {}", answer.text());
        let html = answer.text();
        for (at, _) in html.match_indices("<script") {
            assert!(
                html[at..].starts_with("<script src=\"/assets/hub.js\" defer></script>")
                    || html[at..].starts_with("<script type=\"application/json\""),
                "{path}: an inline script"
            );
        }
        let lower = html.to_ascii_lowercase();
        for handler in [
            " onclick=",
            " onload=",
            " onerror=",
            " onsubmit=",
            "javascript:",
        ] {
            assert!(!lower.contains(handler), "{path}: {handler}");
        }
    }
}

#[test]
fn serve_parses_the_host_strictly() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let port = server.port;
    let other_port = if port == 1 { 2 } else { port - 1 };
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let answer = server.send("GET", "/api/reports", &[("Host", &host)], &[]);
        assert_eq!(answer.status, 200, "{host}: {}", answer.text());
    }
    for host in [
        format!("127.0.0.1:{port}@evil.com"),
        format!("localhost:{port}@evil.com"),
        "localhost.evil.com".to_owned(),
        format!("localhost.evil.com:{port}"),
        format!("127.0.0.1.evil.com:{port}"),
        format!("127.0.0.1:{port} x"),
        format!("127.0.0.1:{other_port}"),
        "127.0.0.1".to_owned(),
        "localhost".to_owned(),
        format!("127.0.0.1:{port}:{port}"),
        format!("127.0.0.1:0{port}"),
        format!("127.0.0.1:+{port}"),
        "127.0.0.1:".to_owned(),
        format!("[::1]{port}"),
        format!("[::1]:{port}]"),
        format!("evil.com/x:{port}"),
        format!("evil.com#127.0.0.1:{port}"),
        format!("127.0.0.1%2e:{port}"),
        String::new(),
    ] {
        let answer = server.send("GET", "/api/reports", &[("Host", &host)], &[]);
        assert!(
            [400, 403].contains(&answer.status),
            "{host:?}: {} {}",
            answer.status,
            answer.text()
        );
        assert!(!answer.text().contains("nsys-ai_mock"), "{host:?}");
    }
}

#[test]
fn serve_refuses_in_the_shape_the_asker_reads() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    // The API: JSON, the status and the line.
    let not_made = server.get("/api/fit/0/nsys-ai_mock.sqlite");
    let stranger = server.send_as_stranger("GET", "/api/reports", &[], &[]);
    for (answer, status, says) in [
        (&not_made, 409, "not made yet"),
        (&stranger, 401, "needs its token"),
    ] {
        assert_eq!(answer.status, status, "{}", answer.text());
        assert_eq!(answer.header("content-type"), Some("application/json"));
        let said: serde_json::Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(said["status"], status, "{said}");
        assert!(said["error"].as_str().unwrap().contains(says), "{said}");
    }
    // A browser: a page of the hub's, with the way home.
    let html = [("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")];
    for (answer, status, says) in [
        (
            server.send("GET", "/no/such/page", &html, &[]),
            404,
            "no such page",
        ),
        (
            server.send("GET", "/report/0/no-such-run.sqlite", &html, &[]),
            404,
            "no such report",
        ),
        (
            server.send_as_stranger("GET", "/", &html, &[]),
            401,
            "needs its token",
        ),
    ] {
        assert_eq!(answer.status, status, "{}", answer.text());
        assert_eq!(
            answer.header("content-type"),
            Some("text/html; charset=utf-8")
        );
        let page = answer.text();
        assert!(page.contains("<a href=\"/\">"), "{page}");
        assert!(page.contains(says), "{page}");
    }
    // Anyone else (curl): the line, as text.
    let plain = server.get("/no/such/page");
    assert_eq!(plain.status, 404);
    assert_eq!(plain.text(), "no such page\n");
}
