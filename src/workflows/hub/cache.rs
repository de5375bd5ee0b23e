//! The hub's cache directory: per report, its headline, its report page and
//! its traces, each computed once and kept under a key made of the file's
//! path, size and modification time; a file that changes gets a new key,
//! so nothing stale is ever served. Every file here is written through the
//! one output path ([`OutputFile`]): it appears only when complete.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::catalog::Entry;
use super::headline::Headline;
use crate::analysis::gpu_time::{write_page, Page, PageFormat, ReportOptions};
use crate::error::{Error, Result};
use crate::workflows::analyses::report_file;
use crate::workflows::file::convert_file;
use crate::workflows::output::OutputFile;
use crate::{Format, Options};

/// The key of a report in the cache: its path, size and modification time,
/// hashed (FNV-1a, 64 bits), in hex.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

impl CacheKey {
    /// The key of `entry` as it is now.
    pub fn of(entry: &Entry) -> CacheKey {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let path = entry
            .path
            .canonicalize()
            .unwrap_or_else(|_| entry.path.clone());
        let text = format!("{}\0{}\0{}", path.display(), entry.size, entry.modified_ns);
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
}

impl Cache {
    /// The cache in `dir`, made if missing.
    pub fn open(dir: &Path) -> Result<Cache> {
        std::fs::create_dir_all(dir).map_err(|cause| Error::Output {
            path: dir.to_owned(),
            cause,
        })?;
        Ok(Cache {
            dir: dir.to_owned(),
            making: Mutex::new(HashMap::new()),
        })
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self, key: &CacheKey, what: &str) -> PathBuf {
        self.dir.join(format!("{}.{what}", key.as_str()))
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
        self.once(&path, || {
            let headline = match report_file(&entry.path, &ReportOptions::default(), options) {
                Ok(mut run) => {
                    run.path = entry.relative().to_owned();
                    let page = Page {
                        runs: vec![run],
                        steps: None,
                    };
                    OutputFile::new(self.file(&key, "report.html"))
                        .write_with(|out| write_page(out, &page, PageFormat::Html))?;
                    Headline::of_run(&page.runs[0])
                }
                Err(e @ Error::Interrupted { .. }) => return Err(e),
                Err(e) => Headline::failed(&e.to_string()),
            };
            let json = serde_json::to_vec(&headline).expect("a headline serializes");
            OutputFile::new(&path).write_with(|out| out.write_all(&json))?;
            Ok(())
        })?;
        self.headline(entry).ok_or_else(|| Error::Unreadable {
            path: path.clone(),
            cause: std::io::Error::other("the headline just written cannot be read"),
        })
    }

    /// The report page of `entry` (HTML, as `report -o page.html` writes
    /// it), computed with its headline where not yet.
    pub fn report_page(&self, entry: &Entry, options: &Options) -> Result<PathBuf> {
        let page = self.file(&CacheKey::of(entry), "report.html");
        if !page.is_file() {
            let headline = self.compute_headline(entry, options)?;
            if let Some(error) = headline.error {
                return Err(Error::Serve { reason: error });
            }
        }
        Ok(page)
    }

    /// The trace of `entry` in `options.format`, converted once with
    /// `options` (as `convert` converts with its default flags).
    pub fn trace(&self, entry: &Entry, options: &Options) -> Result<PathBuf> {
        let key = CacheKey::of(entry);
        let ext = match (options.format, options.gzip) {
            (Format::Json, Some(_)) => "json.gz",
            (format, _) => format.extension(),
        };
        let path = self.file(&key, &format!("trace.{ext}"));
        self.once(&path, || {
            convert_file(&entry.path, OutputFile::new(&path), options, &mut |_| {}).map(|_| ())
        })?;
        Ok(path)
    }

    /// Runs `make` unless `path` exists, one caller at a time per path.
    fn once(&self, path: &Path, make: impl FnOnce() -> Result<()>) -> Result<()> {
        let lock = {
            let mut making = self.making.lock().unwrap_or_else(|e| e.into_inner());
            making.entry(path.to_owned()).or_default().clone()
        };
        let _held = lock.lock().unwrap_or_else(|e| e.into_inner());
        if path.is_file() {
            return Ok(());
        }
        make()
    }
}
