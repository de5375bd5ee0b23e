//! The hub's routes in process, as axum's own examples test theirs: the
//! router built as `serve_hub` builds it, each request answered by
//! `tower::ServiceExt::oneshot`, no socket. The guard's rules (the token,
//! the Host, the Origin and CSRF token of a change, no GET that starts
//! work, another site's loads), the headers every answer carries, and the
//! shape of a refusal: JSON under `/api/`, a page with the way home for a
//! browser.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::response::Response;
use tower::ServiceExt as _;

use super::{router, App, HubSettings, Shared};

const TOKEN: &str = "0123456789abcdef-token";
const PORT: u16 = 8765;

/// A hub of an empty directory, as `serve --port 8765 --token TOKEN` makes
/// it, and the runtime its handlers spawn on.
struct Hub {
    app: Shared,
    runtime: tokio::runtime::Runtime,
    _dirs: tempfile::TempDir,
}

impl Hub {
    fn new() -> Hub {
        let dirs = tempfile::tempdir().unwrap();
        let runs = dirs.path().join("runs");
        std::fs::create_dir(&runs).unwrap();
        let address = SocketAddr::from(([127, 0, 0, 1], PORT));
        let settings = HubSettings::new(
            vec![runs],
            dirs.path().join("cache"),
            address,
            Some(TOKEN.into()),
        );
        let app = App::new(settings).unwrap();
        app.guard.port.set(PORT).unwrap();
        Hub {
            app,
            runtime: crate::server::stack::runtime(4).unwrap(),
            _dirs: dirs,
        }
    }

    /// The answer to `request`, its body read whole.
    fn answer(&self, request: Request<Body>) -> (Response<()>, String) {
        self.runtime.block_on(async {
            let response = router(Arc::clone(&self.app))
                .oneshot(request)
                .await
                .unwrap();
            let (parts, body) = response.into_parts();
            let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
            (
                Response::from_parts(parts, ()),
                String::from_utf8_lossy(&bytes).into_owned(),
            )
        })
    }

    /// A GET of `path` as the hub's page sends it: its Host, its token.
    fn get(&self, path: &str) -> (Response<()>, String) {
        self.answer(own(Request::get(path)).body(Body::empty()).unwrap())
    }
}

/// A request of the hub's own page: its Host and token.
fn own(request: axum::http::request::Builder) -> axum::http::request::Builder {
    request
        .header(header::HOST, format!("127.0.0.1:{PORT}"))
        .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
}

#[test]
fn every_request_needs_the_token_and_the_query_sets_this_ports_cookie() {
    let hub = Hub::new();
    let stranger = Request::get("/api/reports")
        .header(header::HOST, format!("127.0.0.1:{PORT}"))
        .body(Body::empty())
        .unwrap();
    let (refused, body) = hub.answer(stranger);
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{body}");
    let (listed, body) = hub.get("/api/reports");
    assert_eq!(listed.status(), StatusCode::OK, "{body}");
    assert_eq!(body, "[]");
    let by_query = Request::get(format!("/?token={TOKEN}"))
        .header(header::HOST, format!("localhost:{PORT}"))
        .body(Body::empty())
        .unwrap();
    let (home, _) = hub.answer(by_query);
    assert_eq!(home.status(), StatusCode::OK);
    let cookie = home.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(
        cookie.starts_with(&format!("nsys2perfetto_token_{PORT}={TOKEN};")),
        "{cookie}"
    );
}

#[test]
fn the_host_must_be_this_servers_strictly() {
    let hub = Hub::new();
    for host in [
        format!("127.0.0.1:{PORT}@evil.example"),
        format!("evil.example:{PORT}"),
        "127.0.0.1:1".to_owned(),
        format!("127.0.0.1:{PORT}:{PORT}"),
    ] {
        let request = Request::get("/")
            .header(header::HOST, &host)
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::empty())
            .unwrap();
        let (answer, body) = hub.answer(request);
        assert_eq!(answer.status(), StatusCode::FORBIDDEN, "{host}: {body}");
    }
}

#[test]
fn every_answer_carries_the_policy_refusals_included() {
    let hub = Hub::new();
    for path in ["/", "/no/such/page", "/api/reports", "/assets/hub.js"] {
        let (answer, _) = hub.get(path);
        let headers = answer.headers();
        let policy = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(
            policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'"),
            "{path}: {policy}"
        );
        assert_eq!(headers[header::REFERRER_POLICY], "no-referrer", "{path}");
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff", "{path}");
    }
}

#[test]
fn a_refusal_is_json_under_api_a_page_with_the_way_home_for_a_browser() {
    let hub = Hub::new();
    let (api, body) = hub.get("/api/convert/0/none.sqlite");
    assert_eq!(api.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(api.headers()[header::ALLOW], "POST");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["status"], 405);
    assert!(json["error"].as_str().unwrap().contains("POST"), "{json}");
    let browser = own(Request::get("/stats/0/none.sqlite"))
        .header(header::ACCEPT, "text/html,application/xhtml+xml")
        .body(Body::empty())
        .unwrap();
    let (page, body) = hub.answer(browser);
    assert_eq!(page.status(), StatusCode::NOT_FOUND);
    assert!(page.headers()[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(body.contains("<a href=\"/\">"), "no way home: {body}");
    assert!(body.contains("no such report"), "{body}");
    // Anyone else: the line of text.
    let (plain, body) = hub.get("/stats/0/none.sqlite");
    assert_eq!(plain.status(), StatusCode::NOT_FOUND);
    assert_eq!(body, "no such report\n");
}

#[test]
fn no_get_starts_work_and_a_change_needs_the_pages_origin_and_csrf_token() {
    let hub = Hub::new();
    // Another site's page loading a job's URL: refused before any work.
    let loaded = own(Request::get("/made/merge?run=a&run=b"))
        .header("sec-fetch-site", "cross-site")
        .header("sec-fetch-mode", "no-cors")
        .header("sec-fetch-dest", "image")
        .body(Body::empty())
        .unwrap();
    assert_eq!(hub.answer(loaded).0.status(), StatusCode::FORBIDDEN);
    let (make, _) = hub.get("/api/make/merge?run=a&run=b");
    assert_eq!(make.status(), StatusCode::METHOD_NOT_ALLOWED);
    let origin = format!("http://127.0.0.1:{PORT}");
    let without_csrf = own(Request::post("/api/make/merge?run=a&run=b"))
        .header(header::ORIGIN, &origin)
        .body(Body::empty())
        .unwrap();
    assert_eq!(hub.answer(without_csrf).0.status(), StatusCode::FORBIDDEN);
    let foreign = own(Request::post("/api/make/merge?run=a&run=b"))
        .header(header::ORIGIN, "http://evil.example")
        .header("x-csrf-token", &hub.app.guard.csrf)
        .body(Body::empty())
        .unwrap();
    assert_eq!(hub.answer(foreign).0.status(), StatusCode::FORBIDDEN);
    let (jobs, body) = hub.get("/api/jobs");
    assert_eq!(jobs.status(), StatusCode::OK);
    assert_eq!(body, "[]", "a refused request started a job");
    // The page's own POST is heard: runs not in the list, said as a job's
    // failure.
    let own_post = own(Request::post("/api/make/merge?run=a&run=b"))
        .header(header::ORIGIN, &origin)
        .header("x-csrf-token", &hub.app.guard.csrf)
        .body(Body::empty())
        .unwrap();
    let (events, body) = hub.answer(own_post);
    assert_eq!(events.status(), StatusCode::OK);
    assert!(body.contains("\"state\":\"failed\""), "{body}");
    assert!(body.contains("no such report"), "{body}");
}
