//! The one file responder of both servers: a file streamed as the body of
//! a 200, its length said, never cached by the browser. The hub sends the
//! cache's traces and pages with it (each held in use until its last byte
//! is sent or the client goes); `open` its one trace (noting when it was
//! read whole, breaking off when told to stop).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::refusal::Refusal;

/// How a file is sent.
pub(crate) struct Sending {
    /// Its Content-Type.
    pub(crate) kind: &'static str,
    /// The name it is saved as (a download), if it is one.
    pub(crate) download: Option<String>,
    /// Headers it carries besides (CORS).
    pub(crate) headers: HeaderMap,
    /// Only the head (a HEAD request).
    pub(crate) head_only: bool,
    /// Set once its last byte was read into the response.
    pub(crate) sent_whole: Option<Arc<AtomicBool>>,
    /// Once set, the response breaks off.
    pub(crate) stop: Option<Arc<AtomicBool>>,
}

impl Sending {
    /// A file of `kind`, nothing more.
    pub(crate) fn of(kind: &'static str) -> Sending {
        Sending {
            kind,
            download: None,
            headers: HeaderMap::new(),
            head_only: false,
            sent_whole: None,
            stop: None,
        }
    }

    /// Saved as `name`.
    pub(crate) fn download(mut self, name: &str) -> Sending {
        self.download = Some(name.to_owned());
        self
    }
}

/// How much is read at a time.
const PIECE: usize = 256 * 1024;

/// The file at `path`, streamed as `sending` says; `held` (a file of the
/// cache held in use) is kept until the last byte is sent or the client
/// goes.
pub(crate) async fn file_response(
    path: &Path,
    held: impl Send + 'static,
    sending: Sending,
) -> Response {
    let opened = match tokio::fs::File::open(path).await {
        Ok(opened) => opened,
        Err(e) => return (sending.headers, server_error(e)).into_response(),
    };
    let length = match opened.metadata().await {
        Ok(m) => m.len(),
        Err(e) => return (sending.headers, server_error(e)).into_response(),
    };
    let mut headers = sending.headers;
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(sending.kind));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Some(value) = sending.download.as_deref().and_then(disposition) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    if sending.head_only {
        return (StatusCode::OK, headers).into_response();
    }
    let (sent_whole, stop) = (sending.sent_whole, sending.stop);
    let state = (opened, held, 0u64);
    let stream = futures_util::stream::unfold(state, move |(mut file, held, sent)| {
        let (sent_whole, stop) = (sent_whole.clone(), stop.clone());
        async move {
            use tokio::io::AsyncReadExt as _;
            if stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed)) {
                return Some((
                    Err(std::io::Error::other("interrupted")),
                    (file, held, sent),
                ));
            }
            let mut buffer = vec![0u8; PIECE];
            match file.read(&mut buffer).await {
                Ok(0) => {
                    if sent == length {
                        if let Some(whole) = &sent_whole {
                            whole.store(true, Ordering::Relaxed);
                        }
                    }
                    None
                }
                Ok(n) => {
                    buffer.truncate(n);
                    let sent = sent + n as u64;
                    // The last bytes: hyper, which knows the length, may not
                    // ask for the end.
                    if sent == length {
                        if let Some(whole) = &sent_whole {
                            whole.store(true, Ordering::Relaxed);
                        }
                    }
                    Some((Ok(buffer), (file, held, sent)))
                }
                Err(e) => Some((Err(e), (file, held, sent))),
            }
        }
    });
    (StatusCode::OK, headers, Body::from_stream(stream)).into_response()
}

fn server_error(e: std::io::Error) -> Refusal {
    Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
}

/// `attachment; filename="NAME"`, NAME in printable ASCII (others `_`).
fn disposition(name: &str) -> Option<HeaderValue> {
    let ascii: String = name
        .chars()
        .map(|c| match c.is_ascii_graphic() && c != '"' && c != '\\' {
            true => c,
            false => '_',
        })
        .collect();
    HeaderValue::from_str(&format!("attachment; filename=\"{ascii}\"")).ok()
}
