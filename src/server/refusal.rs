//! Why a request is refused, as one type ([`Refusal`]: a status and one
//! line), and how a refusal reaches whoever asked ([`Asker`]): under
//! `/api/` as JSON (`{"error", "status"}`), to a browser as a page of the
//! hub's (its header, the way home), to anyone else as the line of text.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::workflows::hub::pages;

/// A request refused: its status, and one line saying why.
#[derive(Debug)]
pub(crate) struct Refusal {
    status: StatusCode,
    why: String,
}

impl Refusal {
    pub(crate) fn new(status: StatusCode, why: impl Into<String>) -> Refusal {
        Refusal {
            status,
            why: why.into(),
        }
    }

    /// Why, in one line.
    pub(crate) fn why(&self) -> &str {
        &self.why
    }

    /// A report not in the list (or never there).
    pub(crate) fn no_such_report() -> Refusal {
        Refusal::new(StatusCode::NOT_FOUND, "no such report")
    }

    /// What the work asked for failed, in the CLI's words.
    pub(crate) fn failed(error: impl std::fmt::Display) -> Refusal {
        Refusal::new(StatusCode::UNPROCESSABLE_ENTITY, format!("error: {error}"))
    }

    /// The thread doing the work ended without an answer (it panicked).
    pub(crate) fn work_failed() -> Refusal {
        Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, "the work failed")
    }

    /// The server is stopping.
    pub(crate) fn stopping() -> Refusal {
        Refusal::new(StatusCode::SERVICE_UNAVAILABLE, "stopping")
    }
}

impl IntoResponse for Refusal {
    /// Its line of text; [`Asker::shape`] gives it the shape of who asked.
    fn into_response(self) -> Response {
        (
            self.status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{}\n", self.why),
        )
            .into_response()
    }
}

/// Who asks, as far as the shape of a refusal goes: a script of the API,
/// a browser's page, or anyone else.
pub(crate) enum Asker {
    Api,
    Browser,
    Other,
}

impl Asker {
    pub(crate) fn of(request: &Request) -> Asker {
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
    /// error status, its one line of text: a [`Refusal`], or axum's own):
    /// `{"error", "status"}` for the API, a page of the hub's (with the way
    /// home) for a browser.
    pub(crate) async fn shape(&self, answer: Response) -> Response {
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
