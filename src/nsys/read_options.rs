//! How an input is read, whatever is done with it after: the `nsys` CLI
//! that exports `.nsys-rep`/`.qdrep` reports, the flag that stops the work,
//! and who hears of what the reading met. Every entry point that opens a
//! path takes these, and nothing of a conversion's options.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::Unreadable;
use crate::error::{Error, Result};

/// How to read a report or export. Start from [`ReadOptions::new`] (or
/// [`Default`]) and set what differs, field by field or with the `with_`
/// methods.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadOptions {
    /// The `nsys` CLI used to export `.nsys-rep`/`.qdrep` reports.
    pub nsys: PathBuf,
    /// Set it (from a signal handler, another thread) to stop the work: it
    /// then fails with [`Error::Interrupted`](crate::Error::Interrupted)
    /// soon after, having stopped nsys and removed its temporary files.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Told, once an analysis (not a conversion, whose
    /// [`Summary`](crate::Summary) says it) has read an input, of each
    /// event table of it that could not be read: it lacks columns its rows
    /// need. The answer marks what depends on it as incomplete; this is for
    /// saying so as well (on standard error).
    pub on_unreadable: Option<OnUnreadable>,
    /// Told, once an analysis has read an input, how many of its CUDA
    /// events it left out for times that cannot be right (ending before
    /// they start, or far past the capture's end), where any: for the
    /// answers that carry no such count of their own (`stats`, `compare`,
    /// steps measured alone); see
    /// [`impossible_times_warning`](crate::impossible_times_warning).
    pub on_impossible_times: Option<OnImpossibleTimes>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            nsys: PathBuf::from("nsys"),
            cancel: None,
            on_unreadable: None,
            on_impossible_times: None,
        }
    }
}

impl ReadOptions {
    /// Reports exported with the `nsys` on the `PATH`; nothing stops the
    /// work and no one hears of what the reading met.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reports exported with the nsys CLI at `nsys`.
    pub fn with_nsys(mut self, nsys: impl Into<PathBuf>) -> Self {
        self.nsys = nsys.into();
        self
    }

    /// The work stopped once `cancel` is set.
    pub fn with_cancel(mut self, cancel: Arc<AtomicBool>) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// See [`ReadOptions::on_unreadable`].
    pub fn with_on_unreadable(mut self, hear: Option<OnUnreadable>) -> Self {
        self.on_unreadable = hear;
        self
    }

    /// See [`ReadOptions::on_impossible_times`].
    pub fn with_on_impossible_times(mut self, hear: Option<OnImpossibleTimes>) -> Self {
        self.on_impossible_times = hear;
        self
    }

    /// Whether the work has been asked to stop.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    }

    /// [`Error::Interrupted`] about `path` once the work has been asked to
    /// stop: looked at before each input is started, since a small report
    /// can be read whole before SQLite looks at the flag.
    pub(crate) fn stop_if_cancelled(&self, path: &Path) -> Result<()> {
        match self.cancelled() {
            true => Err(Error::Interrupted {
                path: path.to_owned(),
            }),
            false => Ok(()),
        }
    }
}

/// Hears of the tables an analysis could not read, with the path of their
/// input (see [`ReadOptions::on_unreadable`]).
#[derive(Clone)]
pub struct OnUnreadable(pub Arc<HearUnreadable>);

/// What [`OnUnreadable`] calls: with an input's path, and a table of it
/// that could not be read.
pub type HearUnreadable = dyn Fn(&Path, &Unreadable) + Send + Sync;

/// Hears how many CUDA events an analysis left out of an input for their
/// times, with the input's path (see [`ReadOptions::on_impossible_times`]).
#[derive(Clone)]
pub struct OnImpossibleTimes(pub Arc<HearImpossibleTimes>);

/// What [`OnImpossibleTimes`] calls: with an input's path, and how many of
/// its CUDA events were left out.
pub type HearImpossibleTimes = dyn Fn(&Path, u64) + Send + Sync;

impl std::fmt::Debug for OnImpossibleTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnImpossibleTimes(..)")
    }
}

impl std::fmt::Debug for OnUnreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnUnreadable(..)")
    }
}
