//! What the hub holds while it runs, HTTP aside: its directories and
//! cache, the headlines known and those queued (computed in the
//! background, `-j` at a time), the jobs a user waits for (run `-j` at a
//! time), and trace_processor for traces too big for a tab. The server
//! (`crate::server`) answers requests with it.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;

use tokio::sync::Semaphore;

use super::accelerator::Accelerators;
use super::cache::{Cache, CacheKey};
use super::catalog::{scan, Entry};
use super::headline::Headline;
use super::jobs::{Job, Jobs};
use crate::error::{Error, Result};
use crate::{Format, Options, Progress};

/// What every request shares: what the hub was made of (the flags of
/// `serve`), and the work under way.
pub(crate) struct Hub {
    /// The directories of runs.
    pub(crate) dirs: Vec<PathBuf>,
    /// Where uploads go (one of `dirs`).
    pub(crate) upload_dir: PathBuf,
    pub(crate) cache: Cache,
    /// The options every read starts from (its cancellation flag the
    /// program's).
    pub(crate) options: Options,
    /// The Perfetto UI traces are opened in.
    pub(crate) ui: String,
    /// The largest upload taken.
    pub(crate) max_upload: u64,
    /// trace_processor, for traces too big for a tab.
    pub(crate) accelerators: Accelerators,
    pub(crate) work: Work,
}

/// The work a hub has under way: headlines (computed in the background)
/// and the reads and jobs a user waits for.
pub(crate) struct Work {
    /// Headlines known, by key.
    headlines: Mutex<HashMap<CacheKey, Headline>>,
    /// Headlines queued or being computed.
    queued: Mutex<HashSet<CacheKey>>,
    /// Reads in the background (headlines), `-j` at a time.
    background: Arc<Semaphore>,
    /// Reads a user waits for (conversions, pages), `-j` at a time.
    pub(crate) foreground: Arc<Semaphore>,
    /// Conversions a user waits for.
    pub(crate) jobs: Jobs,
}

impl Work {
    /// No work yet; `jobs` reads at once, in the background and in the
    /// foreground each.
    pub(crate) fn new(jobs: usize) -> Work {
        let jobs = jobs.max(1);
        Work {
            headlines: Mutex::new(HashMap::new()),
            queued: Mutex::new(HashSet::new()),
            background: Arc::new(Semaphore::new(jobs)),
            foreground: Arc::new(Semaphore::new(jobs)),
            jobs: Jobs::default(),
        }
    }
}

impl Hub {
    /// The reports now, each with its headline where known; the headlines
    /// missing are queued.
    pub(crate) fn list(self: &Arc<Self>) -> (Vec<(Entry, Option<Headline>)>, Vec<String>) {
        let (entries, failed) = scan(&self.dirs);
        let mut listed = Vec::with_capacity(entries.len());
        for entry in entries {
            let key = CacheKey::of(&entry);
            let known = self.known(&key, &entry);
            if known.is_none() {
                self.queue(key, &entry);
            }
            listed.push((entry, known));
        }
        let failed = failed
            .into_iter()
            .map(|(dir, e)| format!("{} cannot be read: {e}", dir.display()))
            .collect();
        (listed, failed)
    }

    fn known(&self, key: &CacheKey, entry: &Entry) -> Option<Headline> {
        let mut known = self
            .work
            .headlines
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(h) = known.get(key) {
            return Some(h.clone());
        }
        let found = self.cache.headline(entry)?;
        known.insert(key.clone(), found.clone());
        Some(found)
    }

    /// Computes the headline of `entry` in the background, `-j` at a time.
    fn queue(self: &Arc<Self>, key: CacheKey, entry: &Entry) {
        if !self
            .work
            .queued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone())
        {
            return;
        }
        let hub = Arc::clone(self);
        let entry = entry.clone();
        tokio::spawn(async move {
            let Ok(_permit) = hub.work.background.clone().acquire_owned().await else {
                return;
            };
            let worker = Arc::clone(&hub);
            let entry2 = entry.clone();
            let computed = tokio::task::spawn_blocking(move || {
                trimmed(|| worker.cache.compute_headline(&entry2, &worker.options))
            })
            .await;
            if let Ok(Ok(headline)) = computed {
                hub.work
                    .headlines
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key.clone(), headline);
            }
            hub.work
                .queued
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&key);
        });
    }

    /// The report of id `id`, if the list holds it now.
    pub(crate) fn find(&self, id: &str) -> Option<Entry> {
        scan(&self.dirs).0.into_iter().find(|e| e.id == id)
    }

    /// The options of a conversion to Perfetto's format or, `json`,
    /// Chrome's JSON (gzipped).
    pub(crate) fn trace_options(&self, json: bool) -> Options {
        let mut options = self.options.clone();
        if json {
            options.format = Format::Json;
        }
        options
    }

    /// The job converting `entry` (joined where one runs).
    pub(crate) fn conversion(self: &Arc<Self>, entry: Entry, json: bool) -> Arc<Job> {
        let key = format!(
            "{}.{}",
            CacheKey::of(&entry).as_str(),
            if json { "json" } else { "perfetto" }
        );
        let what = format!("convert {}", entry.relative());
        self.started(&key, &what, move |hub, options, progress| {
            let mut options = options.clone();
            options.format = hub.trace_options(json).format;
            hub.cache.trace(&entry, &options, progress).map(drop)
        })
    }

    /// The job that makes `key` (joined where one runs; else started, `-j`
    /// at a time with the other reads a user waits for): `work` makes it
    /// with the hub's options and the job's cancellation flag, telling
    /// `progress`.
    pub(crate) fn started(
        self: &Arc<Self>,
        key: &str,
        what: &str,
        work: impl FnOnce(&Hub, &Options, &mut dyn FnMut(Progress)) -> Result<()> + Send + 'static,
    ) -> Arc<Job> {
        let (job, new) = self.work.jobs.join_or_start(key, what);
        if new {
            let hub = Arc::clone(self);
            let job = Arc::clone(&job);
            tokio::spawn(async move {
                let permit = hub.work.foreground.clone().acquire_owned().await;
                let worker = Arc::clone(&hub);
                let working = Arc::clone(&job);
                let done = tokio::task::spawn_blocking(move || {
                    let _permit = permit;
                    if working.cancelled() {
                        return Err(Error::Serve {
                            reason: "cancelled before it started".into(),
                        });
                    }
                    let options = working.options(&worker.options);
                    trimmed(|| work(&worker, &options, &mut |p| working.progressed(p)))
                })
                .await;
                let result = done.unwrap_or_else(|_| {
                    Err(Error::Serve {
                        reason: "the job failed".into(),
                    })
                });
                hub.work.jobs.end(&job, result);
            });
        }
        job
    }

    /// Stops what runs: the jobs, trace_processor.
    pub(crate) fn stop(&self) {
        self.work.jobs.cancel_all();
        self.accelerators.stop();
    }
}

/// Runs `read` (a report read: a page, a headline, a trace), then gives
/// the memory it freed back to the system. glibc keeps what a thread frees
/// in that thread's arena, so every thread of the blocking pool would keep
/// the peak of the largest read it ever ran: measured, 160 MiB after 36
/// stats pages of a 2 MiB export on 7 threads, against 57 MiB for one.
pub(crate) fn trimmed<T>(read: impl FnOnce() -> T) -> T {
    let done = read();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory of the allocator's.
    unsafe {
        libc::malloc_trim(0);
    }
    done
}
