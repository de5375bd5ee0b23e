//! The one HTTP stack, axum on tokio, as the hub and `open`'s one-trace
//! server both run it: the runtime, and a server that stops when
//! told, giving requests under way a moment to end.

use std::future::{Future, IntoFuture as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;

use crate::error::{Error, Result};

/// The runtime the servers run on: two threads for connections, and
/// `blocking` for reads of files and reports.
pub(crate) fn runtime(blocking: usize) -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(blocking.max(1))
        .enable_all()
        .build()
        .map_err(|e| Error::Serve {
            reason: format!("cannot start the server's threads: {e}"),
        })
}

/// Resolves once `flag` is set.
pub(crate) async fn raised(flag: Arc<AtomicBool>) {
    while !flag.load(Ordering::Relaxed) {
        tokio::time::sleep(POLL).await;
    }
}

/// How often a flag is checked.
const POLL: Duration = Duration::from_millis(20);

/// Serves `app` on `listener` until `stop` resolves; then connections that
/// are idle close at once, and requests under way get `grace` to end. One
/// that does not (an upload that stalls) is dropped with the runtime.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    stop: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
) -> Result<()> {
    let (stopping, stopped) = tokio::sync::watch::channel(false);
    let stop = async move {
        stop.await;
        let _ = stopping.send(true);
    };
    // Each request knows its peer's address (the hub bounds jobs by it).
    let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
    let server = std::pin::pin!(axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .into_future());
    let deadline = std::pin::pin!(async move {
        let mut stopped = stopped;
        let _ = stopped.wait_for(|s| *s).await;
        tokio::time::sleep(grace).await;
    });
    match futures_util::future::select(server, deadline).await {
        futures_util::future::Either::Left((served, _)) => served.map_err(|e| Error::Serve {
            reason: format!("the server failed: {e}"),
        }),
        futures_util::future::Either::Right(_) => Ok(()),
    }
}
