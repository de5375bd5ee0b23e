//! `serve`, the hub: the real program on a free port, driven by a real HTTP
//! client (ureq): the list and its headlines against SQL over
//! the exports, the trace served against `convert`'s, and the security
//! model: traversal in every form, the token off loopback, the Host on
//! loopback, cross-origin POSTs, uploads too large or cut off, hostile
//! names shown as text. The `Server` helper sends the token the server
//! printed (and its CSRF token on a POST) with every request, as the page
//! in a browser would; `send_as_stranger` sends none (`guard`'s tests).
//! Only requests no client sends whole (a body cut off halfway, a body
//! still being sent when refused) are written by hand on a socket.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::support::fixtures::fixture;

mod cache;
mod export;
mod guard;
mod jobs;
mod load;
mod made;
mod names;
mod pages;
mod swap;
mod tables;
mod tp;
mod upload;

const BIN: &str = env!("CARGO_BIN_EXE_nsys2perfetto");

/// A running `serve`, stopped when dropped.
struct Server {
    child: Child,
    /// What it printed first: the URL to open.
    url: String,
    port: u16,
    cache: tempfile::TempDir,
    /// The token in the URL it printed (none: `--no-token`).
    token: Option<String>,
    /// The CSRF token its page's POSTs carry (asked of `/api/config` once).
    csrf: OnceLock<String>,
}

impl Server {
    /// `serve DIRS --port 0` with a cache of its own and `extra` flags.
    fn start(dirs: &[&Path], extra: &[&str]) -> Server {
        let cache = tempfile::tempdir().unwrap();
        let mut child = Command::new(BIN)
            .arg("serve")
            .args(dirs)
            .args(["--port", "0", "--cache"])
            .arg(cache.path())
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = lines
            .next()
            .expect("serve printed its URL")
            .expect("a line");
        // The rest of standard output is read (and dropped) so that the
        // server never blocks on it.
        std::thread::spawn(move || lines.for_each(drop));
        let port = url
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|host| host.rsplit(':').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {url:?}"));
        let token = url.split_once("?token=").map(|(_, t)| t.to_owned());
        Server {
            child,
            url,
            port,
            cache,
            token,
            csrf: OnceLock::new(),
        }
    }

    /// The CSRF token of its pages.
    fn csrf(&self) -> &str {
        self.csrf.get_or_init(|| {
            let config = self.get("/api/config");
            assert_eq!(config.status, 200, "{}", config.text());
            let config: serde_json::Value = serde_json::from_slice(&config.body).unwrap();
            config["csrf"].as_str().expect("a CSRF token").to_owned()
        })
    }

    /// `Host: 127.0.0.1:PORT`, its own.
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `http://127.0.0.1:PORT`, the Origin of its own pages.
    fn origin(&self) -> String {
        format!("http://{}", self.host())
    }

    /// The header lines a request of its page carries: the token, and on
    /// a POST the CSRF token (for requests written by hand).
    fn credentials(&self, method: &str) -> String {
        let mut lines = String::new();
        if let Some(token) = &self.token {
            lines.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        if method != "GET" && method != "HEAD" {
            lines.push_str(&format!("X-CSRF-Token: {}\r\n", self.csrf()));
        }
        lines
    }

    /// A POST of its own page (its Origin, its CSRF token): what starts a
    /// job.
    fn post(&self, path: &str) -> Response {
        let origin = self.origin();
        self.send("POST", path, &[("Origin", &origin)], &[])
    }

    /// Its cache directory.
    fn cache_dir(&self) -> &Path {
        self.cache.path()
    }

    fn get(&self, path: &str) -> Response {
        self.send("GET", path, &[], &[])
    }

    /// One request of `method` on `path` with `headers` (its own Host
    /// unless given) and `body`, as its page sends them: with the token
    /// (unless `headers` or `path` carry one) and, on a POST, the CSRF
    /// token (unless given).
    fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
        let given = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        let mut all: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        let carries_token = given("authorization")
            || path.contains("token=")
            || headers.iter().any(|(n, v)| {
                n.eq_ignore_ascii_case("cookie") && v.contains("nsys2perfetto_token")
            });
        if let (Some(token), false) = (&self.token, carries_token) {
            all.push(("Authorization".into(), format!("Bearer {token}")));
        }
        if method != "GET" && method != "HEAD" && !given("x-csrf-token") {
            all.push(("X-CSRF-Token".into(), self.csrf().to_owned()));
        }
        let all: Vec<(&str, &str)> = all.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        self.send_as_stranger(method, path, &all, body)
    }

    /// One request as anyone could send it: `headers` (its own Host unless
    /// given) and nothing more, no token.
    fn send_as_stranger(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        let host = self.host();
        let mut all = headers.to_vec();
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
            all.push(("Host", &host));
        }
        request(self.port, method, path, &all, body)
    }

    /// A POST of its own page whose answer is read as it comes (a job's
    /// events): its status, and its body line by line. Dropped, the
    /// connection closes, as a page that goes closes it.
    fn follow(&self, path: &str, headers: &[(&str, &str)]) -> (u16, Following) {
        let origin = self.origin();
        let host = self.host();
        let token = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut all = vec![("Origin", origin.as_str()), ("Host", host.as_str())];
        all.extend_from_slice(headers);
        if let Some(token) = &token {
            all.push(("Authorization", token));
        }
        all.push(("X-CSRF-Token", self.csrf()));
        let answer = agent()
            .run(built("POST", self.port, path, &all).body(()).unwrap())
            .expect("an answer");
        let status = answer.status().as_u16();
        (status, BufReader::new(answer.into_body().into_reader()))
    }

    /// The list `/api/reports` gives, once every headline is known (two
    /// minutes at most).
    fn reports_with_headlines(&self) -> Vec<serde_json::Value> {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let response = self.get("/api/reports");
            assert_eq!(response.status, 200, "{}", response.text());
            let list: Vec<serde_json::Value> = serde_json::from_slice(&response.body).unwrap();
            if list.iter().all(|r| !r["headline"].is_null()) {
                return list;
            }
            assert!(Instant::now() < deadline, "headlines never came: {list:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The id of the run at `path` in a list `/api/reports` gave.
fn id_in(list: &[serde_json::Value], path: &str) -> String {
    let run = list.iter().find(|r| r["path"] == path);
    let run = run.unwrap_or_else(|| panic!("{path} is not listed: {list:?}"));
    run["id"].as_str().unwrap().to_owned()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
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

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// An answer's body, read as it comes.
type Following = BufReader<ureq::BodyReader<'static>>;

/// The client every test sends with: answers of any status given back
/// (not as errors), no redirect followed, two minutes at most.
fn agent() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(Duration::from_secs(120)))
            .build(),
    )
}

/// A request of `method` on `path` of 127.0.0.1:`port` with `headers` (a
/// Host among them, else the URL's).
fn built(
    method: &str,
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
) -> ureq::http::request::Builder {
    let mut request = ureq::http::Request::builder()
        .method(method)
        .uri(format!("http://127.0.0.1:{port}{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request
}

/// One request of `method` on `path` of 127.0.0.1:`port` with `headers`
/// and `body`, its answer read whole.
fn request(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
    let mut request = built(method, port, path, headers);
    // A body is sent once the server asks for it: a request refused first
    // (its name, its size, its Origin) gets the refusal, not a broken pipe.
    if !body.is_empty() {
        request = request.header("Expect", "100-continue");
    }
    let answer = agent().run(request.body(body).unwrap());
    answered(method, path, answer)
}

/// [`request`] with a body read as it is sent (its length among `headers`).
fn request_streamed(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: ureq::SendBody,
) -> Response {
    let answer = agent().run(built(method, port, path, headers).body(body).unwrap());
    answered(method, path, answer)
}

/// The answer to `method path`, read whole.
fn answered(
    method: &str,
    path: &str,
    answer: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> Response {
    let mut answer = answer.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let headers = answer
        .headers()
        .iter()
        .map(|(n, v)| {
            let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (n.as_str().to_owned(), value)
        })
        .collect();
    let mut body = Vec::new();
    answer
        .body_mut()
        .as_reader()
        .read_to_end(&mut body)
        .unwrap();
    Response {
        status: answer.status().as_u16(),
        headers,
        body,
    }
}

/// The status and text of the answer on `stream`, where the request was
/// written by hand (its body refused before it was all sent).
fn answer_on(mut stream: TcpStream) -> (u16, String) {
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text.get(9..12).and_then(|s| s.parse().ok());
    let status = status.unwrap_or_else(|| panic!("no answer in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

/// A directory holding copies of the fixtures `names`, the first the
/// oldest.
fn runs(names: &[&str]) -> Option<(tempfile::TempDir, Vec<PathBuf>)> {
    let dir = tempfile::tempdir().unwrap();
    let mut copies = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let source = fixture(name)?;
        let copy = dir.path().join(name);
        std::fs::copy(&source, &copy).unwrap();
        let when = std::time::SystemTime::UNIX_EPOCH
            + Duration::from_secs(1_700_000_000 + 3600 * i as u64);
        std::fs::File::options()
            .write(true)
            .open(&copy)
            .unwrap()
            .set_modified(when)
            .unwrap();
        copies.push(copy);
    }
    Some((dir, copies))
}

/// The files of `dir`, by name.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// One value of `sql` over the export at `path`.
fn sql_value<T: rusqlite::types::FromSql>(path: &Path, sql: &str) -> T {
    let db = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    db.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Per GPU of the export at `path`, the union of its kernels, memcpys and
/// memsets over the span from its first start to its last end; averaged.
fn busy_of_span(path: &Path) -> f64 {
    let db = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut work: std::collections::BTreeMap<i64, Vec<(i64, i64)>> = Default::default();
    for table in ["KERNEL", "MEMCPY", "MEMSET"] {
        let sql = format!("SELECT deviceId, start, end FROM CUPTI_ACTIVITY_KIND_{table}");
        let Ok(mut rows) = db.prepare(&sql) else {
            continue;
        };
        let rows = rows
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap();
        for row in rows {
            let (device, start, end) = row.unwrap();
            work.entry(device).or_default().push((start, end));
        }
    }
    let shares: Vec<f64> = work
        .into_values()
        .map(|mut ops| {
            ops.sort();
            let (first, last) = (ops[0].0, ops.iter().map(|o| o.1).max().unwrap());
            let (mut busy, mut until) = (0, i64::MIN);
            for (start, end) in ops {
                let from = start.max(until);
                if end > from {
                    busy += end - from;
                    until = end;
                }
            }
            busy as f64 / (last - first) as f64
        })
        .collect();
    shares.iter().sum::<f64>() / shares.len() as f64
}

#[test]
fn serve_lists_reports_newest_first_with_headlines_from_the_exports() {
    let Some((dir, copies)) = runs(&["nsys-ai_h100_2gpu_1s.sqlite", "dlprof_nsys_profile.sqlite"])
    else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    let list = server.reports_with_headlines();
    let paths: Vec<&str> = list.iter().map(|r| r["path"].as_str().unwrap()).collect();
    // Newest first: the second copy is an hour newer.
    assert_eq!(
        paths,
        ["dlprof_nsys_profile.sqlite", "nsys-ai_h100_2gpu_1s.sqlite"]
    );
    for (report, copy) in list.iter().zip(copies.iter().rev()) {
        let headline = &report["headline"];
        assert!(headline["error"].is_null(), "{headline}");
        let gpus: i64 = sql_value(
            copy,
            "SELECT count(DISTINCT deviceId) FROM (SELECT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL \
             UNION ALL SELECT deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY)",
        );
        assert_eq!(headline["gpus"], gpus, "{}", copy.display());
        assert_eq!(report["size"], std::fs::metadata(copy).unwrap().len());
        // The top kernel: the name (demangled, as nsys stats names kernels)
        // with most summed time, and that time.
        let (name, time): (String, i64) = {
            let db = Connection::open_with_flags(copy, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
            db.query_row(
                "SELECT s.value, sum(k.end - k.start) AS t FROM CUPTI_ACTIVITY_KIND_KERNEL k \
                 JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value ORDER BY t DESC LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
        };
        assert_eq!(headline["top_kernel"][0], name, "{}", copy.display());
        assert_eq!(headline["top_kernel"][1], time, "{}", copy.display());
        // How busy the GPUs were while they worked: per GPU the union of
        // its kernels, copies and memsets over its first start to last
        // end, averaged (not over the capture: nsys-ai_h100_2gpu_1s is a
        // second of work cropped from 296 s of capture).
        let share = headline["busy_of_span"].as_f64().unwrap();
        let expected = busy_of_span(copy);
        assert!(
            (share - expected).abs() < 1e-9,
            "{}: {share} against {expected}",
            copy.display()
        );
    }
    // The home page shows them, with the numbers.
    let home = server.get("/").text();
    assert!(home.contains("dlprof_nsys_profile.sqlite"), "{home}");
    assert!(
        home.contains("/open/0/dlprof_nsys_profile.sqlite"),
        "{home}"
    );
    // A file added later appears without a restart.
    std::fs::copy(&copies[1], dir.path().join("later.sqlite")).unwrap();
    let list = server.reports_with_headlines();
    assert_eq!(list[0]["path"], "later.sqlite");
}

#[test]
fn serve_gives_the_traces_convert_writes() {
    let Some((dir, copies)) = runs(&["dlprof_nsys_profile.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let served = server.post("/trace/0/dlprof_nsys_profile.sqlite");
    assert_eq!(served.status, 200, "{}", served.text());
    assert_eq!(
        served.header("Content-Disposition"),
        Some("attachment; filename=\"dlprof_nsys_profile.perfetto-trace\"")
    );
    let out = tempfile::tempdir().unwrap();
    let trace = out.path().join("t.perfetto-trace");
    let status = Command::new(BIN)
        .arg("convert")
        .arg(&copies[0])
        .arg("-o")
        .arg(&trace)
        .arg("-q")
        .status()
        .unwrap();
    assert!(status.success());
    let converted = std::fs::read(&trace).unwrap();
    assert!(
        served.body == converted,
        "the served trace differs from convert's"
    );
    // Twice: the same bytes, from the cache.
    assert!(server.get("/trace/0/dlprof_nsys_profile.sqlite").body == converted);
    // Chrome's JSON, gzipped, as `convert --format json -o RUN.json.gz` writes it, linked
    // from the home page.
    let home = server.get("/").text();
    assert!(
        home.contains("href=\"/trace/0/dlprof_nsys_profile.sqlite?format=json\""),
        "no JSON link on the home page"
    );
    let served = server.post("/trace/0/dlprof_nsys_profile.sqlite?format=json");
    assert_eq!(served.status, 200, "{}", served.text());
    let disposition = served.header("Content-Disposition").unwrap_or_default();
    assert!(
        disposition == "attachment; filename=\"dlprof_nsys_profile.json.gz\"",
        "{disposition}"
    );
    let json = out.path().join("t.json.gz");
    let status = Command::new(BIN)
        .arg("convert")
        .arg(&copies[0])
        .args(["--format", "json", "-q", "-o"])
        .arg(&json)
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        served.body == std::fs::read(&json).unwrap(),
        "the served JSON differs from convert's"
    );
    // Nothing was written beside the report.
    assert_eq!(names_in(dir.path()), ["dlprof_nsys_profile.sqlite"]);
}

#[test]
fn serve_refuses_traversal_in_every_form() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    // A report outside the directory, reached through a link inside it,
    // and a secret beside the directory.
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.sqlite");
    std::fs::copy(fixture("nsys-ai_healthy_1pct.sqlite").unwrap(), &secret).unwrap();
    std::os::unix::fs::symlink(&secret, dir.path().join("escape.sqlite")).unwrap();
    let server = Server::start(&[dir.path()], &[]);
    let list = server.get("/api/reports").text();
    assert!(list.contains("nsys-ai_mock.sqlite"), "{list}");
    assert!(
        !list.contains("escape"),
        "a link leaving the directory is listed: {list}"
    );
    let secret_bytes = std::fs::read(&secret).unwrap();
    let relative = format!(
        "../{}/secret.sqlite",
        outside.path().file_name().unwrap().to_str().unwrap()
    );
    let probes = [
        format!("/trace/0/{relative}"),
        "/trace/0/escape.sqlite".to_owned(),
        "/report/0/escape.sqlite".to_owned(),
        "/trace/0/../../../../etc/passwd".to_owned(),
        "/trace/0/%2e%2e/%2e%2e/%2e%2e/etc/passwd".to_owned(),
        "/trace/0/..%2f..%2f..%2fetc%2fpasswd".to_owned(),
        "/trace/0/%252e%252e/%252e%252e/etc/passwd".to_owned(),
        "/trace/0%2f..%2f..%2fetc%2fpasswd".to_owned(),
        "/report/1/nsys-ai_mock.sqlite".to_owned(),
        "/stats//etc/passwd".to_owned(),
        "/assets/../Cargo.toml".to_owned(),
        "/assets/%2e%2e/Cargo.toml".to_owned(),
        "/../../../../etc/passwd".to_owned(),
        "/%2e%2e/%2e%2e/etc/passwd".to_owned(),
    ];
    for probe in &probes {
        let response = server.get(probe);
        assert_eq!(response.status, 404, "{probe}: {}", response.text());
        assert!(!response.text().contains("root:"), "{probe}");
        assert!(
            !response
                .body
                .windows(64)
                .any(|w| secret_bytes.starts_with(w)),
            "{probe} sent the secret"
        );
    }
    // The one report is served.
    assert_eq!(server.get("/trace/0/nsys-ai_mock.sqlite").status, 200);
}

#[test]
fn serve_off_loopback_needs_its_token_on_every_request() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &["--bind", "0.0.0.0"]);
    let (_, token) = server
        .url
        .split_once("?token=")
        .unwrap_or_else(|| panic!("no token in {}", server.url));
    assert!(token.len() >= 32, "{token}");
    let host = server.host();
    let as_stranger = |path: &str| server.send_as_stranger("GET", path, &[("Host", &host)], &[]);
    for path in [
        "/",
        "/api/reports",
        "/trace/0/nsys-ai_mock.sqlite",
        "/assets/hub.js",
    ] {
        let refused = as_stranger(path);
        assert_eq!(refused.status, 401, "{path}: {}", refused.text());
        let wrong = as_stranger(&format!("{path}?token=x{}", &token[1..]));
        assert_eq!(wrong.status, 401, "{path}");
    }
    let with_token = as_stranger(&format!("/?token={token}"));
    assert_eq!(with_token.status, 200);
    let cookie = with_token
        .header("Set-Cookie")
        .expect("a cookie")
        .to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap();
    let by_cookie = server.send_as_stranger(
        "GET",
        "/api/reports",
        &[("Cookie", pair), ("Host", &host)],
        &[],
    );
    assert_eq!(by_cookie.status, 200);
    let bearer = format!("Bearer {token}");
    let by_header = server.send_as_stranger(
        "GET",
        "/api/reports",
        &[("Authorization", &bearer), ("Host", &host)],
        &[],
    );
    assert_eq!(by_header.status, 200);
    // A POST with the token still needs its own Origin.
    let origin = format!("http://{host}");
    let body = std::fs::read(dir.path().join("nsys-ai_mock.sqlite")).unwrap();
    let foreign = server.send(
        "POST",
        "/upload?name=x.sqlite",
        &[
            ("Authorization", &bearer),
            ("Host", &host),
            ("Origin", "http://evil.example"),
        ],
        &body,
    );
    assert_eq!(foreign.status, 403);
    let own = server.send(
        "POST",
        "/upload?name=x.sqlite",
        &[
            ("Authorization", &bearer),
            ("Host", &host),
            ("Origin", &origin),
        ],
        &body,
    );
    assert_eq!(own.status, 200, "{}", own.text());
}

#[test]
fn serve_on_loopback_answers_loopback_names_only() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let port = server.port;
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
    ] {
        assert_eq!(
            server.send("GET", "/", &[("Host", &host)], &[]).status,
            200,
            "{host}"
        );
    }
    // A page of another site whose name was pointed at 127.0.0.1 (DNS rebinding).
    for host in [
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        format!("127.0.0.1.evil.example:{port}"),
    ] {
        let host = host.as_str();
        let response = server.send("GET", "/api/reports", &[("Host", host)], &[]);
        assert_eq!(response.status, 403, "{host}");
    }
}

#[test]
fn serve_refuses_cross_origin_posts() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let body = std::fs::read(dir.path().join("nsys-ai_mock.sqlite")).unwrap();
    let host = format!("127.0.0.1:{}", server.port);
    for origin in [
        Some("http://evil.example"),
        Some("null"),
        Some("https://127.0.0.1:1"),
        None,
    ] {
        let mut headers = vec![("Host", host.as_str())];
        if let Some(origin) = origin {
            headers.push(("Origin", origin));
        }
        let response = server.send("POST", "/upload?name=new.sqlite", &headers, &body);
        assert_eq!(response.status, 403, "{origin:?}: {}", response.text());
    }
    assert_eq!(names_in(dir.path()), ["nsys-ai_mock.sqlite"]);
    let origin = format!("http://{host}");
    let own = server.send(
        "POST",
        "/upload?name=nsys-ai_mock.sqlite",
        &[("Host", &host), ("Origin", &origin)],
        &body,
    );
    assert_eq!(own.status, 200, "{}", own.text());
    // The name existed: the upload got a new one, the file is untouched.
    assert_eq!(own.text(), "nsys-ai_mock-2.sqlite");
    assert_eq!(
        names_in(dir.path()),
        ["nsys-ai_mock-2.sqlite", "nsys-ai_mock.sqlite"]
    );
    assert!(std::fs::read(dir.path().join("nsys-ai_mock-2.sqlite")).unwrap() == body);
}

#[test]
fn serve_refuses_uploads_over_the_limit_and_keeps_nothing() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &["--max-upload", "100K"]);
    let host = format!("127.0.0.1:{}", server.port);
    let origin = format!("http://{host}");
    let body = std::fs::read(dir.path().join("nsys-ai_mock.sqlite")).unwrap();
    assert!(body.len() > 100 * 1024);
    // Its length said first.
    let response = server.send(
        "POST",
        "/upload?name=big.sqlite",
        &[("Host", &host), ("Origin", &origin)],
        &body,
    );
    assert_eq!(response.status, 413, "{}", response.text());
    assert!(response.text().contains("100.0 KiB"), "{}", response.text());
    // Its length not said (chunked): refused once past the limit.
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream
        .write_all(
            format!(
                "POST /upload?name=big.sqlite HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\n\
                 {}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                server.credentials("POST")
            )
            .as_bytes(),
        )
        .unwrap();
    for piece in body.chunks(16 * 1024) {
        let sent = stream
            .write_all(format!("{:x}\r\n", piece.len()).as_bytes())
            .and_then(|()| stream.write_all(piece))
            .and_then(|()| stream.write_all(b"\r\n"));
        if sent.is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let (status, text) = answer_on(stream);
    assert_eq!(status, 413, "{text}");
    assert_eq!(names_in(dir.path()), ["nsys-ai_mock.sqlite"]);
}

#[test]
fn serve_keeps_nothing_of_an_upload_cut_off_halfway() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let host = format!("127.0.0.1:{}", server.port);
    let origin = format!("http://{host}");
    let body = std::fs::read(dir.path().join("nsys-ai_mock.sqlite")).unwrap();
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream
        .write_all(
            format!(
                "POST /upload?name=half.sqlite HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\n\
                 {}Content-Length: {}\r\n\r\n",
                server.credentials("POST"),
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
    stream.write_all(&body[..body.len() / 2]).unwrap();
    // Half of it is being written: a temporary file exists, under a name
    // the list does not take.
    std::thread::sleep(Duration::from_millis(500));
    assert!(!server.get("/api/reports").text().contains("half"));
    stream.shutdown(Shutdown::Both).unwrap();
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(30);
    while names_in(dir.path()) != ["nsys-ai_mock.sqlite"] {
        assert!(
            Instant::now() < deadline,
            "left behind: {:?}",
            names_in(dir.path())
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The server goes on: a whole upload is taken.
    let whole = server.send(
        "POST",
        "/upload?name=whole.sqlite",
        &[("Host", &host), ("Origin", &origin)],
        &body,
    );
    assert_eq!(whole.status, 200, "{}", whole.text());
    assert!(std::fs::read(dir.path().join("whole.sqlite")).unwrap() == body);
}

#[test]
fn serve_shows_hostile_names_as_text_on_every_page() {
    let Some(source) = fixture("dlprof_nsys_profile.sqlite") else {
        return;
    };
    const HOSTILE: &str = "<script>alert(1)</script><img src=x onerror=alert(2)>&amp;";
    let dir = tempfile::tempdir().unwrap();
    let name = "run <b>bold<i> & 'quoted'.sqlite";
    let copy = dir.path().join(name);
    std::fs::copy(&source, &copy).unwrap();
    {
        let db = Connection::open(&copy).unwrap();
        // The top kernel's names, and every NVTX range's text.
        db.execute(
            "UPDATE StringIds SET value = ?1 WHERE id IN (SELECT demangledName FROM \
             CUPTI_ACTIVITY_KIND_KERNEL GROUP BY demangledName ORDER BY sum(end - start) DESC LIMIT 1)",
            [HOSTILE],
        )
        .unwrap();
        db.execute(
            "UPDATE NVTX_EVENTS SET text = ?1 WHERE text IS NOT NULL",
            [HOSTILE],
        )
        .unwrap();
    }
    let server = Server::start(&[dir.path()], &[]);
    let list = server.reports_with_headlines();
    assert_eq!(list[0]["headline"]["top_kernel"][0], HOSTILE, "{list:?}");
    let id: Vec<String> = list[0]["id"]
        .as_str()
        .unwrap()
        .split('/')
        .map(percent_encode)
        .collect();
    let id = id.join("/");
    // Every range a step: the hostile text names them all; made (a POST),
    // then shown by a GET.
    let steps = format!("/made/steps?run={id}&step=*");
    assert_eq!(server.post(&steps).status, 200);
    let escaped =
        "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&amp;amp;";
    for (page, shows) in [
        ("/".to_owned(), true),
        (format!("/report/{id}"), true),
        (format!("/stats/{id}"), true),
        (format!("/findings/{id}"), false),
        (format!("/open/{id}"), false),
        // Every range a step: the hostile text names them all.
        (steps.clone(), true),
    ] {
        let response = server.get(&page);
        assert_eq!(response.status, 200, "{page}: {}", response.text());
        let html = response.text();
        assert!(!html.contains("<script>alert"), "{page}");
        assert!(!html.contains("<img"), "{page}");
        assert!(!html.contains("<b>bold"), "{page}");
        assert!(
            html.contains("run &lt;b&gt;bold&lt;i&gt; &amp; &#39;quoted&#39;.sqlite"),
            "{page}"
        );
        if shows {
            assert!(
                html.contains(escaped),
                "{page} does not show the name as text"
            );
        }
        // The only scripts are the page's own; a table's data block (not
        // a script) holds no `<` that could end it.
        for (at, _) in html.match_indices("<script") {
            let data = "<script type=\"application/json\" class=\"rows\">";
            match html[at..].strip_prefix(data) {
                Some(rest) => assert!(
                    !rest.split("</script>").next().unwrap().contains('<'),
                    "{page}"
                ),
                None => assert!(
                    html[at..].starts_with("<script src=\"/assets/hub.js\""),
                    "{page}"
                ),
            }
        }
    }
}

/// A URL path segment (as the hub writes ids).
fn percent_encode(part: &str) -> String {
    part.bytes()
        .map(
            |b| match b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                true => (b as char).to_string(),
                false => format!("%{b:02X}"),
            },
        )
        .collect()
}

/// Every row of every table of an HTML page: its cells' text, entities
/// decoded (a name shown shortened: its whole name, the short one's title).
fn html_rows(html: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for row in html.split("<tr>").skip(1) {
        let row = row.split("</tr>").next().unwrap();
        let cells = row
            .split("<td")
            .skip(1)
            .map(|cell| {
                let text = match cell.split_once("<summary title=\"") {
                    Some((_, titled)) => titled.split('"').next().unwrap(),
                    None => &cell[cell.find('>').unwrap() + 1..cell.find("</td>").unwrap()],
                };
                text.replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&quot;", "\"")
                    .replace("&#39;", "'")
                    .replace("&amp;", "&")
            })
            .collect::<Vec<_>>();
        if !cells.is_empty() {
            rows.push(cells);
        }
    }
    rows
}

#[test]
fn serve_compares_two_runs_with_the_numbers_compare_prints() {
    let Some((dir, copies)) = runs(&[
        "h100_torch_graph_whole.sqlite",
        "h100_torch_graph_node.sqlite",
    ]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let page =
        server.get("/compare?a=0/h100_torch_graph_whole.sqlite&b=0/h100_torch_graph_node.sqlite");
    assert_eq!(page.status, 200, "{}", page.text());
    let shown = html_rows(&page.text());
    let cli = |extra: &[&str]| {
        let out = Command::new(BIN)
            .arg("compare")
            .args(&copies)
            .args(["--format", "csv"])
            .args(extra)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The header left out: the page shows the rows.
        let rows = crate::support::nsys::csv_rows(&String::from_utf8(out.stdout).unwrap());
        rows.into_iter().skip(1).collect::<Vec<_>>()
    };
    let summary = cli(&["--summary"]);
    // The page shows the names first.
    let top: Vec<Vec<String>> = cli(&["--top", "10"])
        .into_iter()
        .map(|mut row| {
            row.rotate_right(1);
            row
        })
        .collect();
    assert!(summary.len() > 3 && top.len() > 3, "{summary:?} {top:?}");
    for row in summary.iter().chain(&top) {
        assert!(shown.contains(row), "{row:?} is not on the page");
    }
    assert_eq!(shown.len(), summary.len() + top.len());
    // Only runs of the list.
    let response = server.get("/compare?a=0/h100_torch_graph_whole.sqlite&b=0/../../etc/passwd");
    assert_eq!(response.status, 404);
}

#[test]
fn serve_stopped_by_sigterm_leaves_no_half_upload() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    let mut server = Server::start(&[dir.path()], &[]);
    let host = format!("127.0.0.1:{}", server.port);
    let body = std::fs::read(dir.path().join("nsys-ai_mock.sqlite")).unwrap();
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream
        .write_all(
            format!(
                "POST /upload?name=half.sqlite HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\n\
                 {}Content-Length: {}\r\n\r\n",
                server.credentials("POST"),
                body.len()
            )
            .as_bytes(),
        )
        .unwrap();
    stream.write_all(&body[..body.len() / 2]).unwrap();
    // Being written: a temporary file beside the runs.
    let deadline = Instant::now() + Duration::from_secs(30);
    while names_in(dir.path()).len() < 2 {
        assert!(Instant::now() < deadline, "no temporary file appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on the server's own pid.
    assert_eq!(
        unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) },
        0
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "still serving after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status}");
    // The upload that never ended left nothing, and the run is untouched.
    assert_eq!(names_in(dir.path()), ["nsys-ai_mock.sqlite"]);
    drop(stream);
}
