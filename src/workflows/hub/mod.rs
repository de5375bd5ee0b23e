//! The hub of `serve`: what a web page of a team's runs needs that is no
//! HTTP. The reports under some directories ([`catalog`]), each read only
//! through a handle opened beneath its directory and checked to be the file
//! listed ([`opened`], [`readable`]: a report exported once per file), each
//! one's headline and trace computed once and kept in a cache directory
//! keyed by the file's identity ([`cache`]), its size
//! bounded ([`bound`]), what is made of several runs ([`made`], [`steps`]), and the pages,
//! made by the one renderer (`crate::render`) as every page of the
//! commands is ([`pages`]). With the `serve` feature, also what the hub
//! holds while it runs (its headline queue, jobs and trace_processor); its
//! HTTP is `crate::server`'s.

#[cfg(feature = "serve")]
pub(crate) mod accelerator;
pub mod bound;
pub mod cache;
pub mod catalog;
pub mod headline;
pub mod jobs;
pub mod made;
pub mod opened;
pub mod pages;
pub mod readable;
#[cfg(feature = "serve")]
pub(crate) mod state;
pub mod steps;
pub mod upload;

pub use bound::Pinned;
pub use cache::{Cache, CacheKey};
pub use catalog::{scan, Entry};
pub use headline::Headline;
pub use jobs::{Job, Jobs};
pub use made::Made;
pub use opened::Opened;
pub use readable::Readable;
