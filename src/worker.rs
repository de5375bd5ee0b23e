//! What becomes of a panic on a thread the crate starts.
//!
//! Every such thread (the converting workers, the readers that feed them
//! rows, the gzip compressors of the sequences) is joined by the thread that
//! started it, and [`outcome`] resumes its panic there, payload and all. So a
//! panic anywhere travels up the chain of joins to the caller of the
//! conversion, as if it had happened on the caller's own thread: never
//! swallowed, never turned into an error that reads like bad input.

/// The value a joined thread returned, or its panic, resumed here.
pub(crate) fn outcome<T>(joined: std::thread::Result<T>) -> T {
    joined.unwrap_or_else(|payload| std::panic::resume_unwind(payload))
}
