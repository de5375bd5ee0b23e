//! A listed report as the library's readers take it: an export, read
//! through its opened and checked handle ([`Opened`]); a report
//! (`.nsys-rep`, `.qdrep`), exported by nsys once per file (its device,
//! inode, size and modification time) into the cache, where every page and
//! job of it reads that one export. nsys is given a copy made from the
//! handle, never the report's name.

use std::io::{Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::bound::Pinned;
use super::cache::{Cache, CacheKey};
use super::catalog::Entry;
use super::opened::Opened;
use crate::error::{Error, Result};
use crate::nsys_cli::{export_to_sqlite, REPORT_MAGIC};
use crate::Options;

/// A listed report, open, with the export its readers read.
#[derive(Debug)]
pub struct Readable {
    entry: Entry,
    opened: Opened,
    /// The cache's export of a report, held in use.
    export: Option<Pinned>,
}

impl Readable {
    /// The report as listed.
    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    /// What readers are given: the opened export's own name, or the
    /// cache's export of the report.
    pub fn path(&self) -> &Path {
        match &self.export {
            Some(export) => export.path(),
            None => self.opened.path(),
        }
    }

    /// `e`, met reading [`Readable::path`], naming the report as listed.
    pub fn told(&self, e: Error) -> Error {
        renamed(e, self.path(), self.entry.relative())
    }
}

/// `e`, met reading several of `readables` together, naming each as listed.
fn told(readables: &[Readable], e: Error) -> Error {
    readables.iter().fold(e, |e, r| r.told(e))
}

/// `e` with `from` named `to` in its words; a cancellation stays one.
fn renamed(e: Error, from: &Path, to: &str) -> Error {
    match e {
        Error::Interrupted { .. } => Error::Interrupted { path: to.into() },
        e => Error::Serve {
            reason: e.to_string().replace(&from.display().to_string(), to),
        },
    }
}

/// Whether `opened` starts as a report does.
fn is_report(opened: &Opened) -> bool {
    let mut head = [0u8; REPORT_MAGIC.len()];
    read_head(opened, &mut head).is_ok_and(|n| head[..n] == *REPORT_MAGIC)
}

#[cfg(unix)]
fn read_head(opened: &Opened, head: &mut [u8]) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(opened.file(), head, 0)
}

#[cfg(not(unix))]
fn read_head(opened: &Opened, head: &mut [u8]) -> std::io::Result<usize> {
    use std::io::Read;
    let mut file = opened.file();
    file.seek(SeekFrom::Start(0))?;
    file.read(head)
}

impl Cache {
    /// `entry` opened ([`Entry::open`]) and made readable: a report
    /// exported with `options.nsys` unless the cache holds its export
    /// (stopped by `options`' cancellation flag, leaving nothing).
    pub fn readable(&self, entry: &Entry, options: &Options) -> Result<Readable> {
        self.readable_from(entry, entry.open()?, options)
    }

    /// The cache's file `name`, made once (a second caller waits for the
    /// first) by `make` of `entries` together: it reads the paths of their
    /// readable copies ([`Cache::readable`]) and writes the path it is
    /// given; an error names each run as listed. Held in use until dropped.
    pub(super) fn made_of_runs(
        &self,
        name: &str,
        entries: &[Entry],
        options: &Options,
        make: impl FnOnce(&[PathBuf], &Path) -> Result<()>,
    ) -> Result<Pinned> {
        let made = self.pin_file(name);
        let path = made.path();
        self.once(path, || {
            let readables = entries
                .iter()
                .map(|e| self.readable(e, options))
                .collect::<Result<Vec<_>>>()?;
            let inputs: Vec<PathBuf> = readables.iter().map(|r| r.path().to_owned()).collect();
            make(&inputs, path).map_err(|e| told(&readables, e))
        })?;
        Ok(made)
    }

    /// [`Cache::readable`] of `entry` opened as `opened`.
    pub(super) fn readable_from(
        &self,
        entry: &Entry,
        opened: Opened,
        options: &Options,
    ) -> Result<Readable> {
        if !is_report(&opened) {
            return Ok(Readable {
                entry: entry.clone(),
                opened,
                export: None,
            });
        }
        let name = format!("{}.export.sqlite", CacheKey::of_file(entry).as_str());
        let export = self.pin_file(&name);
        self.once(export.path(), || {
            self.export(entry, &opened, export.path(), options)
        })?;
        Ok(Readable {
            entry: entry.clone(),
            opened,
            export: Some(export),
        })
    }

    /// Exports the report `opened` to `target`: nsys reads a copy made
    /// from the handle, in a directory of the cache's own, removed after.
    fn export(
        &self,
        entry: &Entry,
        opened: &Opened,
        target: &Path,
        options: &Options,
    ) -> Result<()> {
        let temporary = |cause| Error::Output {
            path: self.dir().to_owned(),
            cause,
        };
        let work = tempfile::Builder::new()
            .prefix(".nsys2perfetto-")
            .tempdir_in(self.dir())
            .map_err(temporary)?;
        // nsys goes by the name's extension: the listed one's.
        let ext = match entry.path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("qdrep") => "qdrep",
            _ => "nsys-rep",
        };
        let copy: PathBuf = work.path().join(format!("report.{ext}"));
        let mut source = opened.file();
        source.seek(SeekFrom::Start(0)).map_err(temporary)?;
        let mut out = std::fs::File::create(&copy).map_err(temporary)?;
        std::io::copy(&mut source, &mut out).map_err(temporary)?;
        drop(out);
        let made = export_to_sqlite(
            &copy,
            &options.read.nsys,
            work.path(),
            options.read.cancel.as_deref(),
        )
        .map_err(|e| renamed(e, &copy, entry.relative()))?;
        std::fs::rename(&made, target).map_err(temporary)
    }
}
