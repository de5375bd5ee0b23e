//! The one guard every request of the hub passes, and what it answers
//! with: the Host (strictly `NAME[:PORT]` with this server's port; on
//! loopback a loopback name, against DNS rebinding), the token (`?token=`,
//! which sets this hub's own cookie, `Authorization: Bearer`, or the
//! cookie), and for anything but a GET the page's own Origin and the hub's
//! CSRF token (a header its script sends, or a form's field). Every answer
//! carries a Content-Security-Policy (scripts only from the hub, no
//! framing), `Referrer-Policy: no-referrer` and `nosniff`; a refusal is a
//! page for a browser, JSON under `/api/`, else its line of text. Jobs
//! (what a POST starts) are bounded per client.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use http_body_util::BodyExt as _;
use nsys2perfetto::hub::pages::{self, CSRF_FIELD};

use super::{refused, url, Shared};

/// The header by which the hub's script sends the CSRF token.
pub(super) const CSRF_HEADER: &str = "x-csrf-token";

/// The shortest token taken (`--token`).
pub(super) const SHORTEST_TOKEN: usize = 16;

/// How many jobs one client may have under way at once.
pub(super) const JOBS_PER_CLIENT: usize = 4;

/// The largest form body read for its CSRF field.
const FORM_LIMIT: usize = 16 * 1024;

/// Scripts only from the hub (no inline script or handler), no plugin,
/// no framing, forms only to the hub. Styles inline: the one renderer's
/// pages carry their stylesheet.
const POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                      img-src 'self' data:; object-src 'none'; base-uri 'none'; \
                      form-action 'self'; frame-ancestors 'none'";

/// What the guard checks against.
pub(super) struct Guard {
    /// The token every request must carry (none: `--no-token`).
    pub token: Option<String>,
    /// Listening on loopback: the Host must be a loopback name.
    pub loopback: bool,
    /// The port listened on, known once listening.
    pub port: OnceLock<u16>,
    /// The token every POST carries, proof it comes from a page of this
    /// hub (pages and the script hold it; other sites cannot read them).
    pub csrf: String,
    /// Jobs under way, by client.
    jobs: Mutex<HashMap<String, usize>>,
}

impl Guard {
    pub fn new(token: Option<String>, loopback: bool, csrf: String) -> Guard {
        Guard {
            token,
            loopback,
            port: OnceLock::new(),
            csrf,
            jobs: Mutex::new(HashMap::new()),
        }
    }

    fn port(&self) -> u16 {
        self.port.get().copied().unwrap_or(0)
    }

    /// This hub's cookie of `what` (`token`, `client`): named by its port,
    /// so that hubs on one host (whose cookies a browser shares) keep theirs.
    fn cookie_name(&self, what: &str) -> String {
        format!("nsys2perfetto_{what}_{}", self.port())
    }
}

/// Who asks, for the bound on jobs: the browser (its cookie), else the
/// address.
#[derive(Clone)]
struct Client(String);

/// Every request passes here; every answer (a refusal in its shape, with
/// the headers every answer carries) leaves by it.
pub(super) async fn guard(State(hub): State<Shared>, request: Request, next: Next) -> Response {
    let asker = Asker::of(&request);
    let answer = checked(&hub, request, next).await;
    secured(asker.shape(answer).await)
}

/// The request checked, then answered.
async fn checked(hub: &Shared, request: Request, next: Next) -> Response {
    let guard = &hub.guard;
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let Some(name) = host_name(&host, guard.port()) else {
        return refused(
            StatusCode::FORBIDDEN,
            "refused: the Host must be this server's address and port (NAME:PORT)",
        );
    };
    if guard.loopback && !is_loopback_name(name) {
        return refused(
            StatusCode::FORBIDDEN,
            "this server answers requests to 127.0.0.1 or localhost only",
        );
    }
    let mut cookies = Vec::new();
    if let Some(token) = &guard.token {
        let token_cookie = guard.cookie_name("token");
        let from_query = url::query_value(request.uri().query().unwrap_or(""), "token");
        let given = from_query
            .clone()
            .or_else(|| bearer(headers))
            .or_else(|| cookie(headers, &token_cookie));
        if !given.is_some_and(|g| same_secret(&g, token)) {
            return refused(
                StatusCode::UNAUTHORIZED,
                "this server needs its token: open the URL it printed (with ?token=)",
            );
        }
        if from_query.is_some() {
            cookies.push(format!(
                "{token_cookie}={token}; Path=/; HttpOnly; SameSite=Strict"
            ));
        }
    }
    if loaded_by_another_site(headers) {
        return refused(
            StatusCode::FORBIDDEN,
            "refused: a page of another site may open this hub, not load from it",
        );
    }
    let client_cookie = guard.cookie_name("client");
    let client = match cookie(headers, &client_cookie).filter(|c| is_client_id(c)) {
        Some(id) => id,
        None => {
            let id = super::new_token().unwrap_or_default();
            if !id.is_empty() {
                cookies.push(format!(
                    "{client_cookie}={id}; Path=/; HttpOnly; SameSite=Strict"
                ));
            }
            // This request counts as its address's.
            let address = request
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map_or("unknown".to_owned(), |c| c.0.ip().to_string());
            format!("address {address}")
        }
    };
    let mut request = request;
    if request.method() != Method::GET && request.method() != Method::HEAD {
        if !from_own_page(request.headers(), &host) {
            return refused(
                StatusCode::FORBIDDEN,
                "refused: a change must come from this server's own page (its Origin)",
            );
        }
        let carried;
        (request, carried) = csrf_of(request).await;
        if !carried.is_some_and(|c| same_secret(&c, &guard.csrf)) {
            return refused(
                StatusCode::FORBIDDEN,
                "refused: a change must come from this server's own page (its CSRF token)",
            );
        }
    }
    request.extensions_mut().insert(Client(client));
    let mut response = next.run(request).await;
    for cookie in cookies {
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
    response
}

/// Who asks, as far as the shape of a refusal goes: a script of the API,
/// a browser's page, or anyone else.
enum Asker {
    Api,
    Browser,
    Other,
}

impl Asker {
    fn of(request: &Request) -> Asker {
        let accepts_html = request
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/html"));
        match request.uri().path() {
            path if path.starts_with("/api/") => Asker::Api,
            _ if accepts_html => Asker::Browser,
            _ => Asker::Other,
        }
    }

    /// `answer` in the shape this asker reads, where it is a refusal (an
    /// error status, its one line of text): `{"error", "status"}` for the
    /// API, a page of the hub's (with the way home) for a browser.
    async fn shape(&self, answer: Response) -> Response {
        let refusal = answer.status().is_client_error() || answer.status().is_server_error();
        let text = answer
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/plain"));
        if !refusal || !text || matches!(self, Asker::Other) {
            return answer;
        }
        let (mut parts, body) = answer.into_parts();
        let line = axum::body::to_bytes(body, 64 * 1024)
            .await
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
            .unwrap_or_default();
        let status = parts.status;
        let (kind, body) = match self {
            Asker::Api => (
                "application/json",
                serde_json::json!({ "error": line, "status": status.as_u16() })
                    .to_string()
                    .into_bytes(),
            ),
            _ => {
                let title = format!(
                    "{} {}",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("Refused")
                );
                let mut page = Vec::new();
                if pages::write_message(&mut page, &title, &line).is_err() {
                    return Response::from_parts(parts, Body::from(line));
                }
                ("text/html; charset=utf-8", page)
            }
        };
        parts.headers.remove(header::CONTENT_LENGTH);
        parts
            .headers
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
        Response::from_parts(parts, Body::from(body))
    }
}

/// Whether a request that changes something comes from a page of this
/// server: its Origin is the server's (`http://` and the Host asked for);
/// or, where the browser said `null` (a form's POST under
/// `Referrer-Policy: no-referrer` is sent so), the browser's own word
/// that the page is of this origin (`Sec-Fetch-Site`, which no page can
/// set).
fn from_own_page(headers: &HeaderMap, host: &str) -> bool {
    let said = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    match said(header::ORIGIN.as_str()) {
        Some("null") => said("sec-fetch-site") == Some("same-origin"),
        Some(origin) => origin.eq_ignore_ascii_case(&format!("http://{host}")),
        None => false,
    }
}

/// Whether the browser says a page of another site (another port of this
/// host included) loads this (an `<img>`, a script, a frame, a fetch)
/// rather than opening it as a page: refused before any work, whatever
/// the route, as its answer is no use to that page anyway (Fetch Metadata;
/// requests without these headers are not a browser's page's).
fn loaded_by_another_site(headers: &HeaderMap) -> bool {
    let said = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let another_site = matches!(said("sec-fetch-site"), Some("same-site" | "cross-site"));
    let opened =
        said("sec-fetch-mode") == Some("navigate") && said("sec-fetch-dest") == Some("document");
    another_site && !opened
}

/// `response` with the headers every answer carries.
fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, POLICY),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (
            header::HeaderName::from_static("cross-origin-resource-policy"),
            "same-origin",
        ),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The CSRF token a request carries: its header, else (a form sent by
/// POST) its field; the request given back whole.
async fn csrf_of(request: Request) -> (Request, Option<String>) {
    if let Some(value) = request
        .headers()
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
    {
        let value = value.to_owned();
        return (request, Some(value));
    }
    let form = request
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| {
            v.as_bytes()
                .starts_with(b"application/x-www-form-urlencoded")
        });
    if !form {
        return (request, None);
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, FORM_LIMIT)
        .await
        .unwrap_or_default();
    let field = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| url::query_value(text, CSRF_FIELD));
    (Request::from_parts(parts, Body::from(bytes)), field)
}

/// A job's route: at most [`JOBS_PER_CLIENT`] under way per client; the
/// slot is held until the answer's last byte is sent (or the client goes).
pub(super) async fn one_of_the_clients_jobs(
    State(hub): State<Shared>,
    request: Request,
    next: Next,
) -> Response {
    let client = request
        .extensions()
        .get::<Client>()
        .map_or_else(String::new, |c| c.0.clone());
    let Some(slot) = Slot::take(&hub, client) else {
        return refused(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "refused: {JOBS_PER_CLIENT} jobs of yours are under way already: wait for one \
                 to end, or cancel one"
            ),
        );
    };
    let (parts, body) = next.run(request).await.into_parts();
    let body = body.map_frame(move |frame| {
        let _held = &slot;
        frame
    });
    Response::from_parts(parts, Body::new(body))
}

/// One job of a client's under way.
struct Slot {
    hub: Shared,
    client: String,
}

impl Slot {
    fn take(hub: &Shared, client: String) -> Option<Slot> {
        let mut jobs = hub.guard.jobs.lock().unwrap_or_else(|e| e.into_inner());
        let under_way = jobs.entry(client.clone()).or_default();
        if *under_way >= JOBS_PER_CLIENT {
            return None;
        }
        *under_way += 1;
        Some(Slot {
            hub: Arc::clone(hub),
            client,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut jobs = self
            .hub
            .guard
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(under_way) = jobs.get_mut(&self.client) {
            *under_way -= 1;
            if *under_way == 0 {
                jobs.remove(&self.client);
            }
        }
    }
}

/// Whether a client cookie is one the guard gives (128 bits in hex).
fn is_client_id(value: &str) -> bool {
    value.len() == 32 && value.bytes().all(|b| b.is_ascii_hexdigit())
}

fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    value.strip_prefix("Bearer ").map(|t| t.trim().to_owned())
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then(|| v.to_owned())
        })
}

/// Whether `given` is `secret`, compared in time that does not tell where
/// they differ.
fn same_secret(given: &str, secret: &str) -> bool {
    let (a, b) = (given.as_bytes(), secret.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// The name a Host header gives, where it is strictly `NAME[:PORT]` with
/// this server's `port` (none said: HTTP's 80): NAME a DNS name, an IPv4
/// address or a bracketed IPv6 one. Anything else (`NAME:PORT@other`,
/// spaces, a second port, another port) is none.
fn host_name(host: &str, port: u16) -> Option<&str> {
    let (name, given) = match host.strip_prefix('[') {
        Some(rest) => {
            let (v6, after) = rest.split_once(']')?;
            v6.parse::<std::net::Ipv6Addr>().ok()?;
            let given = match after {
                "" => None,
                after => Some(after.strip_prefix(':')?),
            };
            (&host[..v6.len() + 2], given)
        }
        None => {
            let (name, given) = match host.split_once(':') {
                Some((name, given)) => (name, Some(given)),
                None => (host, None),
            };
            is_dns_name(name).then_some(())?;
            (name, given)
        }
    };
    let port_is_ours = match given {
        None => port == 80,
        Some(given) => given == port.to_string(),
    };
    port_is_ours.then_some(name)
}

/// Whether `name` is a DNS name (or an IPv4 address): dot-separated labels
/// of letters, digits and inner hyphens.
fn is_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// Whether a Host's name is a loopback one: `localhost`, 127.x.y.z, [::1].
fn is_loopback_name(name: &str) -> bool {
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}
