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
use axum::response::{IntoResponse as _, Response};
use http_body_util::BodyExt as _;

use super::refusal::{Asker, Refusal};
use super::url;
use crate::error::{Error, Result};
use crate::workflows::hub::pages::CSRF_FIELD;

/// The header by which the hub's script sends the CSRF token.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";

/// The shortest token taken (`--token`).
pub(crate) const SHORTEST_TOKEN: usize = 16;

/// How many jobs one client may have under way at once.
pub(crate) const JOBS_PER_CLIENT: usize = 4;

/// The largest form body read for its CSRF field.
const FORM_LIMIT: usize = 16 * 1024;

/// Scripts only from the hub (no inline script or handler), no plugin,
/// no framing, forms only to the hub. Styles inline: the one renderer's
/// pages carry their stylesheet.
const POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                      img-src 'self' data:; object-src 'none'; base-uri 'none'; \
                      form-action 'self'; frame-ancestors 'none'";

/// What the guard checks against.
pub(crate) struct Guard {
    /// The token every request must carry (none: `--no-token`).
    pub(crate) token: Option<String>,
    /// Listening on loopback: the Host must be a loopback name.
    pub(crate) loopback: bool,
    /// The port listened on, known once listening.
    pub(crate) port: OnceLock<u16>,
    /// The token every POST carries, proof it comes from a page of this
    /// hub (pages and the script hold it; other sites cannot read them).
    pub(crate) csrf: String,
    /// Jobs under way, by client.
    jobs: Mutex<HashMap<String, usize>>,
}

impl Guard {
    pub(crate) fn new(token: Option<String>, loopback: bool, csrf: String) -> Guard {
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
pub(crate) async fn guard(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let asker = Asker::of(&request);
    let answer = checked(&guard, request, next).await;
    secured(asker.shape(answer).await)
}

/// The request checked, then answered.
async fn checked(guard: &Guard, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let Some(name) = host_name(&host, guard.port()) else {
        return refuse(
            StatusCode::FORBIDDEN,
            "refused: the Host must be this server's address and port (NAME:PORT)",
        );
    };
    if guard.loopback && !is_loopback_name(name) {
        return refuse(
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
            return refuse(
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
        return refuse(
            StatusCode::FORBIDDEN,
            "refused: a page of another site may open this hub, not load from it",
        );
    }
    let client_cookie = guard.cookie_name("client");
    let client = match cookie(headers, &client_cookie).filter(|c| is_client_id(c)) {
        Some(id) => id,
        None => {
            let id = new_token().unwrap_or_default();
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
            return refuse(
                StatusCode::FORBIDDEN,
                "refused: a change must come from this server's own page (its Origin)",
            );
        }
        let carried;
        (request, carried) = csrf_of(request).await;
        if !carried.is_some_and(|c| same_secret(&c, &guard.csrf)) {
            return refuse(
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
pub(crate) async fn one_of_the_clients_jobs(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let client = request
        .extensions()
        .get::<Client>()
        .map_or_else(String::new, |c| c.0.clone());
    let Some(slot) = Slot::take(&guard, client) else {
        return refuse(
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
    guard: Arc<Guard>,
    client: String,
}

impl Slot {
    fn take(guard: &Arc<Guard>, client: String) -> Option<Slot> {
        let mut jobs = guard.jobs.lock().unwrap_or_else(|e| e.into_inner());
        let under_way = jobs.entry(client.clone()).or_default();
        if *under_way >= JOBS_PER_CLIENT {
            return None;
        }
        *under_way += 1;
        Some(Slot {
            guard: Arc::clone(guard),
            client,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut jobs = self.guard.jobs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(under_way) = jobs.get_mut(&self.client) {
            *under_way -= 1;
            if *under_way == 0 {
                jobs.remove(&self.client);
            }
        }
    }
}

/// A refusal as the guard answers it.
fn refuse(status: StatusCode, why: &str) -> Response {
    Refusal::new(status, why).into_response()
}

/// 128 random bits, in hex: a token, a client's id.
pub(crate) fn new_token() -> Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| Error::Serve {
            reason: format!("cannot make a token (no /dev/urandom: {e}): give one with --token"),
        })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
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
