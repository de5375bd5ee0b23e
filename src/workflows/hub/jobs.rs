//! The hub's jobs: work a user waits for (a conversion), with how far it is
//! and a way to stop it. One job per thing made: a second client asking for
//! it waits for the same job. A job runs while someone waits for it: when
//! the last client waiting goes (closes the page, cancels), it is cancelled
//! through the cancellation flag the conversion already watches (as Ctrl-C
//! stops `convert`), and what it was writing is removed by the one output
//! path. The server runs the work; this is the bookkeeping, no HTTP.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::{Options, Progress};

/// Where a job is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum State {
    /// Under way (or waiting for its turn).
    Running,
    /// Made: the file is in the cache.
    Done,
    /// Failed, saying why in the CLI's words.
    Failed {
        /// The one-line error.
        error: String,
    },
    /// Stopped: no one waited for it any more, or the server stopped.
    Cancelled,
}

/// One job.
#[derive(Debug)]
pub struct Job {
    /// Its number, in the order jobs started.
    pub id: u64,
    /// What it makes, as the page says it (`convert RUN`).
    pub what: String,
    key: String,
    cancel: Arc<AtomicBool>,
    rows_read: AtomicU64,
    rows_total: AtomicU64,
    waiting: AtomicUsize,
    state: Mutex<State>,
}

/// A job as the page sees it.
#[derive(Debug, Serialize)]
pub struct Seen {
    /// Its number.
    pub id: u64,
    /// What it makes.
    pub what: String,
    /// Where it is.
    #[serde(flatten)]
    pub state: State,
    /// The fraction done, from the rows read over the rows there are to
    /// read (an estimate); none before it is known.
    pub done: Option<f64>,
    /// How many clients wait for it.
    pub waiting: usize,
}

impl Job {
    /// `base` with this job's cancellation flag.
    pub fn options(&self, base: &Options) -> Options {
        let mut options = base.clone();
        options.read.cancel = Some(Arc::clone(&self.cancel));
        options
    }

    /// Hears how far the work is (the conversion's progress callback).
    pub fn progressed(&self, progress: Progress) {
        self.rows_total
            .store(progress.rows_total, Ordering::Relaxed);
        self.rows_read.store(progress.rows_read, Ordering::Relaxed);
    }

    /// Where it is now.
    pub fn state(&self) -> State {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Whether it still runs and is not being cancelled.
    fn joinable(&self) -> bool {
        self.state() == State::Running && !self.cancel.load(Ordering::Relaxed)
    }

    /// Whether it was told to stop.
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Stops it (where it runs): the work stops at its next write.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// What the page shows of it.
    pub fn seen(&self) -> Seen {
        let total = self.rows_total.load(Ordering::Relaxed);
        let read = self.rows_read.load(Ordering::Relaxed);
        let state = self.state();
        Seen {
            id: self.id,
            what: self.what.clone(),
            done: match (&state, total) {
                (State::Done, _) => Some(1.0),
                (_, 0) => None,
                _ => Some((read as f64 / total as f64).min(1.0)),
            },
            state,
            waiting: self.waiting.load(Ordering::Relaxed),
        }
    }

    /// A client waits for it until the guard is dropped; the last to go
    /// cancels it where it still runs.
    pub fn wait(self: &Arc<Self>) -> Waiting {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        Waiting(Arc::clone(self))
    }
}

/// A client waiting for a job.
#[derive(Debug)]
pub struct Waiting(Arc<Job>);

impl Waiting {
    /// The job waited for.
    pub fn job(&self) -> &Arc<Job> {
        &self.0
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.0.waiting.fetch_sub(1, Ordering::SeqCst) == 1 && self.0.state() == State::Running {
            self.0.cancel();
        }
    }
}

/// The jobs running, and the last ones ended.
#[derive(Debug, Default)]
pub struct Jobs {
    running: Mutex<HashMap<String, Arc<Job>>>,
    ended: Mutex<VecDeque<Arc<Job>>>,
    next: AtomicU64,
}

/// How many ended jobs are remembered (for the page to read their end).
const REMEMBERED: usize = 100;

impl Jobs {
    /// The running job that makes `key`, or a new one (then `true`: the
    /// caller runs its work and calls [`Jobs::end`]). A job being cancelled
    /// is not joined: a new one starts, and waits for the file's lock.
    pub fn join_or_start(&self, key: &str, what: &str) -> (Arc<Job>, bool) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(job) = running.get(key).filter(|j| j.joinable()) {
            return (Arc::clone(job), false);
        }
        let job = Arc::new(Job {
            id: self.next.fetch_add(1, Ordering::Relaxed) + 1,
            what: what.to_owned(),
            key: key.to_owned(),
            cancel: Arc::default(),
            rows_read: AtomicU64::new(0),
            rows_total: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            state: Mutex::new(State::Running),
        });
        running.insert(key.to_owned(), Arc::clone(&job));
        (job, true)
    }

    /// Ends `job` with what its work gave.
    pub fn end(&self, job: &Arc<Job>, result: Result<()>) {
        let state = match result {
            Ok(()) => State::Done,
            Err(Error::Interrupted { .. }) => State::Cancelled,
            Err(_) if job.cancel.load(Ordering::Relaxed) => State::Cancelled,
            Err(e) => State::Failed {
                error: e.to_string(),
            },
        };
        *job.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
        {
            let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if running.get(&job.key).is_some_and(|j| Arc::ptr_eq(j, job)) {
                running.remove(&job.key);
            }
        }
        let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        ended.push_back(Arc::clone(job));
        if ended.len() > REMEMBERED {
            ended.pop_front();
        }
    }

    /// The job numbered `id`, running or recently ended.
    pub fn find(&self, id: u64) -> Option<Arc<Job>> {
        self.all().into_iter().find(|j| j.id == id)
    }

    /// Every job running and the last ended, oldest first.
    pub fn all(&self) -> Vec<Arc<Job>> {
        let mut all: Vec<Arc<Job>> = self
            .ended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        all.extend(
            self.running
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .cloned(),
        );
        all.sort_by_key(|j| j.id);
        all
    }

    /// Cancels every job running (the server stopping).
    pub fn cancel_all(&self) {
        for job in self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            job.cancel();
        }
    }
}
