//! Uploads: the body of a POST, streamed into a file of the upload
//! directory (`?name=` its name) that appears only when all came, checked
//! and published by the hub (`crate::workflows::hub::upload`), never
//! replacing a file.

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt as _;

use super::Shared;
use crate::server::refusal::Refusal;
use crate::server::url;
use crate::workflows::hub::{pages, upload};

/// A piece of an upload, as the blocking writer hears of it.
enum Piece {
    Data(Vec<u8>),
    Broken(String),
    End,
}

/// An upload: the body of the POST, streamed into a file of the upload
/// directory (`?name=` its name) that appears only when all came.
pub(super) async fn receive(
    State(app): State<Shared>,
    request: Request,
) -> Result<Response, Refusal> {
    let hub = &app.hub;
    let name = url::query_value(request.uri().query().unwrap_or(""), "name").unwrap_or_default();
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let too_large = format!(
        "refused: larger than the limit of {} (--max-upload)",
        pages::human_bytes(hub.max_upload)
    );
    if declared.is_some_and(|size| size > hub.max_upload) {
        return Err(Refusal::new(StatusCode::PAYLOAD_TOO_LARGE, too_large));
    }
    let name =
        upload::UploadName::new(&name).map_err(|why| Refusal::new(StatusCode::BAD_REQUEST, why))?;
    let (sender, mut pieces) = tokio::sync::mpsc::channel::<Piece>(8);
    let limit = hub.max_upload;
    let dir = hub.upload_dir.clone();
    let writer = tokio::task::spawn_blocking(move || {
        upload::save(&dir, &name, limit, &mut || match pieces.blocking_recv() {
            Some(Piece::Data(data)) => Some(Ok(data)),
            Some(Piece::Broken(why)) => Some(Err(why)),
            Some(Piece::End) => None,
            // The request was dropped (the server stopping): not all came.
            None => Some(Err("the upload was cut off".into())),
        })
    });
    let mut body = request.into_body();
    loop {
        let piece = match body.frame().await {
            None => Piece::End,
            Some(Err(e)) => Piece::Broken(e.to_string()),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => Piece::Data(data.to_vec()),
                Err(_) => continue,
            },
        };
        let last = !matches!(piece, Piece::Data(_));
        if sender.send(piece).await.is_err() || last {
            break;
        }
    }
    drop(sender);
    let refusal = match writer.await {
        Ok(Ok(target)) => {
            let shown = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Ok((StatusCode::OK, shown).into_response());
        }
        Ok(Err(upload::UploadError::Stopped(upload::Stopped::TooLarge(_)))) => {
            Refusal::new(StatusCode::PAYLOAD_TOO_LARGE, too_large)
        }
        Ok(Err(upload::UploadError::Stopped(upload::Stopped::Broken(why)))) => Refusal::new(
            StatusCode::BAD_REQUEST,
            format!("upload cut off: {why}; nothing kept"),
        ),
        Ok(Err(upload::UploadError::Refused(why))) => {
            Refusal::new(StatusCode::UNPROCESSABLE_ENTITY, why)
        }
        Ok(Err(upload::UploadError::Failed(e))) => {
            Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, format!("error: {e}"))
        }
        Err(_) => Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, "the upload failed"),
    };
    Err(refusal)
}
