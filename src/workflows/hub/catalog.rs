//! The reports a hub lists: every export and report under its directories,
//! by the rule `convert DIR` follows (`find_reports`), less any whose
//! real path leaves its directory (a symbolic link to elsewhere): the hub
//! serves nothing of the machine but what lies under its directories.
//! Each entry records where its file really is under its directory and
//! which file it is (device, inode, size, modification time): it is read
//! only through a handle opened beneath the directory and checked to be
//! that file ([`super::opened`]).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::workflows::directories::find_reports;

/// One report or export under a directory of the hub.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Entry {
    /// How the hub names it in URLs: the directory's place among the hub's
    /// directories, `/`, and its path below it, `/`-separated.
    pub id: String,
    /// The file.
    pub path: PathBuf,
    /// Its size, bytes.
    pub size: u64,
    /// Its modification time, ns since the Unix epoch.
    pub modified_ns: i128,
    /// The real path of its directory.
    pub root: PathBuf,
    /// Its real path below `root`: no component a symbolic link when listed.
    pub within: PathBuf,
    /// The device it is on.
    pub device: u64,
    /// Its inode there.
    pub inode: u64,
}

impl Entry {
    /// Its path below its directory, as shown.
    pub fn relative(&self) -> &str {
        self.id.split_once('/').map_or(&self.id[..], |(_, r)| r)
    }

    /// Its file name less its extension, in any case (`a/run.nsys-rep` →
    /// `run`): what files made of it are named after.
    pub fn stem(&self) -> &str {
        let name = self.relative().rsplit('/').next().unwrap_or("");
        let lower = name.to_ascii_lowercase();
        super::upload::EXTENSIONS
            .iter()
            .find(|e| lower.len() > e.len() + 1 && lower.ends_with(&format!(".{e}")))
            .map_or(name, |e| &name[..name.len() - e.len() - 1])
    }
}

impl Entry {
    /// The entry of one file named alone (as `query RUN` names it), listed
    /// under the directory it really is in (a link named is followed: the
    /// user named it): what the cache keys it by.
    pub fn of_file(path: &Path) -> std::io::Result<Entry> {
        let real = path.canonicalize()?;
        let dir = real.parent().unwrap_or(Path::new("/"));
        entry(0, dir, dir, &real).ok_or_else(|| {
            std::io::Error::other("not a regular file with a UTF-8 name under its directory")
        })
    }
}

/// Every report or export under `dirs`, newest first (then by id). A
/// directory that cannot be read is left out, with why, in the second
/// list (the others are still listed).
pub fn scan(dirs: &[PathBuf]) -> (Vec<Entry>, Vec<(PathBuf, std::io::Error)>) {
    let mut entries = Vec::new();
    let mut failed = Vec::new();
    for (place, dir) in dirs.iter().enumerate() {
        let root = match dir.canonicalize() {
            Ok(root) => root,
            Err(e) => {
                failed.push((dir.clone(), e));
                continue;
            }
        };
        let found = match find_reports(dir) {
            Ok(found) => found,
            Err(e) => {
                failed.push((dir.clone(), e));
                continue;
            }
        };
        for (path, _) in found {
            if let Some(entry) = entry(place, dir, &root, &path) {
                entries.push(entry);
            }
        }
    }
    entries.sort_by(|a, b| {
        b.modified_ns
            .cmp(&a.modified_ns)
            .then_with(|| a.id.cmp(&b.id))
    });
    (entries, failed)
}

/// The entry of `path`, found under `dir` (whose real path is `root`):
/// none where its real path is not under `root`, is no regular file (a
/// link swapped in since it was resolved, say), its name is not UTF-8 (no
/// URL could name it faithfully), or it vanished.
fn entry(place: usize, dir: &Path, root: &Path, path: &Path) -> Option<Entry> {
    let real = path.canonicalize().ok()?;
    let within = real.strip_prefix(root).ok()?.to_owned();
    // Not followed: the real path holds no link, unless one came since.
    let meta = std::fs::symlink_metadata(&real).ok()?;
    if !meta.is_file() {
        return None;
    }
    let relative = path.strip_prefix(dir).ok()?;
    let mut parts = Vec::new();
    for part in relative.components() {
        parts.push(part.as_os_str().to_str()?);
    }
    let (device, inode) = device_and_inode(&meta);
    Some(Entry {
        id: format!("{place}/{}", parts.join("/")),
        path: path.to_owned(),
        size: meta.len(),
        modified_ns: modified_ns(&meta),
        root: root.to_owned(),
        within,
        device,
        inode,
    })
}

/// A file's modification time, ns since the Unix epoch (0 before it).
pub(super) fn modified_ns(meta: &std::fs::Metadata) -> i128 {
    meta.modified()
        .ok()
        .and_then(|m| m.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i128)
}

/// A file's device and inode.
#[cfg(unix)]
pub(super) fn device_and_inode(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// A file's device and inode: none known here.
#[cfg(not(unix))]
pub(super) fn device_and_inode(_meta: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// `ns` since the Unix epoch as UTC `YYYY-MM-DD HH:MM`.
pub fn utc_minute(ns: i128) -> String {
    let secs = (ns / 1_000_000_000) as i64;
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// Now, ns since the Unix epoch.
pub fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_minutes_as_date_prints_them() {
        assert_eq!(utc_minute(0), "1970-01-01 00:00");
        // date -u -d @1795795200 → 2026-11-27 16:00
        assert_eq!(
            utc_minute(1_795_795_200 * 1_000_000_000),
            "2026-11-27 16:00"
        );
        assert_eq!(utc_minute(951_782_400 * 1_000_000_000), "2000-02-29 00:00");
    }
}
