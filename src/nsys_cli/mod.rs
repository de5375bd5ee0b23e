//! Running the `nsys` CLI: `nsys export` to turn a report into the SQLite
//! export that `nsys` (the reader) reads, and `nsys profile` (with the
//! `QdstrmImporter` of the same install) to make a report. Nothing here
//! reads a report's events.

mod children;
mod export;
mod profile;

pub use children::stop_children_now;

pub(crate) use export::{capture_version, export_to_sqlite, REPORT_MAGIC};
pub use profile::{LongWait, NsysProfile, Profiled};
