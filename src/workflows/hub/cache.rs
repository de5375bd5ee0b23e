//! The hub's cache directory: per report, its headline, its report page and
//! its traces, each computed once and kept under a key made of the file's
//! identity (device, inode, size, modification time) and its name in the
//! list; a file that changes gets a new key, so nothing stale is ever
//! served, and what is kept under a key was read from that very file
//! ([`Readable`]), never from another that took its name for a moment.
//! Every file here is written through the one output path ([`OutputFile`]):
//! it appears only when complete. Its size is bounded ([`Bound`]): pages and
//! traces least recently used are removed past the limit, and made again
//! when asked for.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::bound::{Bound, Pinned};
use super::catalog::Entry;
use super::headline::Headline;
use super::pages::write_report;
use crate::analysis::gpu_time::{Page, ReportOptions};
use crate::error::{Error, Result};
use crate::workflows::analyses::report_file;
use crate::workflows::file::convert_file;
use crate::workflows::output::OutputFile;
use crate::{Format, Options, Progress};

/// The key of a report in the cache: its file's identity and its name in
/// the list (which its pages show), hashed (FNV-1a, 64 bits), in hex.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

impl CacheKey {
    /// The key of `entry` as listed.
    pub fn of(entry: &Entry) -> CacheKey {
        CacheKey::of_text(&format!(
            "{}\0{}",
            entry.id,
            CacheKey::of_file(entry).as_str()
        ))
    }

    /// The key of `entry`'s file alone, whatever its name: what is the same
    /// for every name of it (its export).
    pub fn of_file(entry: &Entry) -> CacheKey {
        CacheKey::of_text(&format!(
            "{}\0{}\0{}\0{}",
            entry.device, entry.inode, entry.size, entry.modified_ns
        ))
    }

    /// The key of `text`.
    pub fn of_text(text: &str) -> CacheKey {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in text.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        CacheKey(format!("{hash:016x}"))
    }

    /// As a file name's start.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A cache directory.
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
    /// A lock per file being made: two requests of one trace convert it once.
    making: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
    bound: Bound,
}

impl Cache {
    /// The cache in `dir`, made if missing, of at most `limit` bytes of
    /// pages and traces (the least recently used evicted past it, now and
    /// whenever a file is made).
    pub fn open(dir: &Path, limit: u64) -> Result<Cache> {
        std::fs::create_dir_all(dir).map_err(|cause| Error::Output {
            path: dir.to_owned(),
            cause,
        })?;
        let cache = Cache {
            dir: dir.to_owned(),
            making: Mutex::new(HashMap::new()),
            bound: Bound::new(limit),
        };
        cache.bound.evict(dir);
        Ok(cache)
    }

    /// Its limit, in bytes.
    pub fn limit(&self) -> u64 {
        self.bound.limit()
    }

    /// Removes the least recently used pages and traces not in use until
    /// the cache fits its limit; returns the files removed.
    pub fn evict(&self) -> Vec<PathBuf> {
        self.bound.evict(&self.dir)
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self, key: &CacheKey, what: &str) -> PathBuf {
        self.dir.join(format!("{}.{what}", key.as_str()))
    }

    /// The cache's file `name` (made or not yet), held in use.
    pub(super) fn pin_file(&self, name: &str) -> Pinned {
        self.bound.pin(&self.dir.join(name))
    }

    /// The headline of `entry`, where it was computed.
    pub fn headline(&self, entry: &Entry) -> Option<Headline> {
        let text = std::fs::read(self.file(&CacheKey::of(entry), "headline.json")).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Computes the headline and the report page of `entry` (once: a
    /// second caller waits for the first) and keeps them. A report that
    /// cannot be read gets a headline saying why.
    pub fn compute_headline(&self, entry: &Entry, options: &Options) -> Result<Headline> {
        let key = CacheKey::of(entry);
        let path = self.file(&key, "headline.json");
        // One an older hub kept (other fields) is made again, not shown.
        if path.is_file() && self.headline(entry).is_none() {
            let _ = std::fs::remove_file(&path);
        }
        self.once(&path, || self.read_report(entry, &key, options).map(|_| ()))?;
        self.headline(entry).ok_or_else(|| Error::Unreadable {
            path: path.clone(),
            cause: std::io::Error::other("the headline just written cannot be read"),
        })
    }

    /// Reads `entry`'s report once and writes its report page and its
    /// headline. A report that cannot be read gets a headline saying why.
    fn read_report(&self, entry: &Entry, key: &CacheKey, options: &Options) -> Result<Headline> {
        // A file that is not the one listed now is no headline of it:
        // nothing is kept, and it is read again when listed again.
        let opened = entry.open()?;
        let read = self
            .readable_from(entry, opened, options)
            .and_then(|readable| {
                report_file(readable.path(), &ReportOptions::default(), &options.read)
                    .map_err(|e| readable.told(e))
            });
        let headline = match read {
            Ok(mut run) => {
                run.path = entry.relative().to_owned();
                let page = Page {
                    runs: vec![run],
                    steps: None,
                };
                let path = self.file(key, "report.html");
                let _held = self.bound.pin(&path);
                OutputFile::new(path).write_with(|out| write_report(out, &page, Some(entry)))?;
                Headline::of_run(&page.runs[0])
            }
            Err(e @ Error::Interrupted { .. }) => return Err(e),
            Err(e) => Headline::failed(&e.to_string()),
        };
        let json = serde_json::to_vec(&headline).expect("a headline serializes");
        OutputFile::new(self.file(key, "headline.json")).write_with(|out| out.write_all(&json))?;
        Ok(headline)
    }

    /// The report page of `entry` (HTML, as `report -o page.html` writes
    /// it), computed with its headline where not yet (or evicted since),
    /// held in use until dropped.
    pub fn report_page(&self, entry: &Entry, options: &Options) -> Result<Pinned> {
        let key = CacheKey::of(entry);
        let page = self.bound.pin(&self.file(&key, "report.html"));
        self.once(page.path(), || {
            let headline = match self.headline(entry) {
                Some(known) => known,
                None => self.compute_headline(entry, options)?,
            };
            if let Some(error) = headline.error {
                return Err(Error::Serve { reason: error });
            }
            if page.path().is_file() {
                return Ok(());
            }
            self.read_report(entry, &key, options).map(|_| ())
        })?;
        Ok(page)
    }

    /// The trace of `entry` in `options.format`, converted once with
    /// `options` (as `convert` converts with its default flags; stopped by
    /// its cancellation flag, leaving nothing), held in use until dropped.
    /// `progress` hears how far the conversion is, where one runs.
    pub fn trace(
        &self,
        entry: &Entry,
        options: &Options,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Pinned> {
        let trace = self.bound.pin(&self.trace_file(entry, options));
        let path = trace.path();
        self.once(path, || {
            let readable = self.readable(entry, options)?;
            convert_file(readable.path(), OutputFile::new(path), options, progress)
                .map(|_| ())
                .map_err(|e| readable.told(e))
        })?;
        Ok(trace)
    }

    /// The trace [`Cache::trace`] gives, where it is made already (held in
    /// use); none where it is not, and nothing is made: a look that starts
    /// no work (a GET of the hub never does).
    pub fn kept_trace(&self, entry: &Entry, options: &Options) -> Option<Pinned> {
        self.kept(&self.trace_file(entry, options))
    }

    /// The file of the trace of `entry` in `options.format`.
    fn trace_file(&self, entry: &Entry, options: &Options) -> PathBuf {
        let ext = match (options.format, options.gzip) {
            (Format::Json, Some(_)) => "json.gz",
            (format, _) => format.extension(),
        };
        self.file(&CacheKey::of(entry), &format!("trace.{ext}"))
    }

    /// The cache's file at `path`, held in use, where it is made (a file
    /// appears only complete); none where it is not.
    pub(super) fn kept(&self, path: &Path) -> Option<Pinned> {
        let held = self.bound.pin(path);
        held.path().is_file().then_some(held)
    }

    /// Runs `make` unless `path` exists, one caller at a time per path;
    /// then evicts what passes the limit (`path`, held by the caller, not).
    pub(super) fn once(&self, path: &Path, make: impl FnOnce() -> Result<()>) -> Result<()> {
        let lock = {
            let mut making = self.making.lock().unwrap_or_else(|e| e.into_inner());
            making.entry(path.to_owned()).or_default().clone()
        };
        let _held = lock.lock().unwrap_or_else(|e| e.into_inner());
        if path.is_file() {
            return Ok(());
        }
        let made = make();
        self.evict();
        made
    }
}
