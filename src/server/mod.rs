//! The HTTP servers, axum on tokio (the `serve` feature): the hub of
//! `serve` ([`serve_hub`]: a web page of a team's runs, behind one guard
//! for its token, Host, Origin and CSRF token) and `open`'s one-trace
//! server ([`TraceServer`]: a trace handed to ui.perfetto.dev). Both run on
//! one stack, refuse with one type of refusal (JSON under `/api/`, a page
//! for a browser) and send files with one responder. What the hub holds
//! that is no HTTP (its list, cache, pages and jobs) is the hub module's.
//! [`url`] (encoding and decoding) is there without the feature.

pub mod url;

#[cfg(feature = "serve")]
mod files;
#[cfg(feature = "serve")]
mod guard;
#[cfg(feature = "serve")]
mod hub;
#[cfg(feature = "serve")]
mod open;
#[cfg(feature = "serve")]
mod refusal;
#[cfg(feature = "serve")]
mod stack;

#[cfg(feature = "serve")]
pub use hub::{new_token, serve_hub, HubSettings, SHORTEST_TOKEN};
#[cfg(feature = "serve")]
pub use open::{Served, TraceServer};
