//! The bound on the cache directory's size (`--cache-size`): once the files
//! in it pass the limit, the least recently used go first. A file in use is
//! never removed: one being written is a temporary file (only its finished
//! form can be removed), and one being made or served is held by a
//! [`Pinned`] from before it is made until the last byte is sent. The
//! headlines are kept whatever the limit: they are small, and the list
//! needs every one of them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// The files of a cache in use, by how many hold each, and the limit.
#[derive(Debug)]
pub struct Bound {
    limit: u64,
    held: Arc<Mutex<HashMap<PathBuf, usize>>>,
    /// The last eviction had to keep files in use past the limit: the next
    /// release evicts again.
    over: Arc<AtomicBool>,
}

/// A cache file held in use: not removed until dropped.
#[derive(Debug)]
pub struct Pinned {
    path: PathBuf,
    bound: Bound,
}

impl Pinned {
    /// The file held.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        {
            let mut held = self.bound.lock();
            if let Some(count) = held.get_mut(&self.path) {
                *count -= 1;
                if *count == 0 {
                    held.remove(&self.path);
                }
            }
        }
        if self.bound.over.load(Ordering::Relaxed) {
            if let Some(dir) = self.path.parent() {
                self.bound.evict(dir);
            }
        }
    }
}

/// Whether a cache file counts against the limit: not a headline.
fn counted(name: &str) -> bool {
    !name.ends_with(".headline.json")
}

/// Whether a counted file is a temporary one being written (the one output
/// path's `.nsys2perfetto-*.tmp`), which only its writer removes.
fn being_written(name: &str) -> bool {
    name.starts_with('.')
}

impl Bound {
    /// At most `limit` bytes of evictable files.
    pub fn new(limit: u64) -> Bound {
        Bound {
            limit,
            held: Arc::default(),
            over: Arc::default(),
        }
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, usize>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds `path` (made or not yet) in use, and marks it used now.
    pub fn pin(&self, path: &Path) -> Pinned {
        *self.lock().entry(path.to_owned()).or_default() += 1;
        // Its modification time is its last use: the order of eviction,
        // kept across restarts.
        if let Ok(file) = std::fs::File::options().append(true).open(path) {
            let _ = file.set_modified(SystemTime::now());
        }
        Pinned {
            path: path.to_owned(),
            bound: Bound {
                limit: self.limit,
                held: Arc::clone(&self.held),
                over: Arc::clone(&self.over),
            },
        }
    }

    /// Removes the least recently used files of `dir` not in use until its
    /// files (temporary ones counted, headlines not) fit the limit. Returns
    /// the files removed.
    pub fn evict(&self, dir: &Path) -> Vec<PathBuf> {
        let held = self.lock();
        let Ok(listing) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut total = 0u64;
        let mut candidates = Vec::new();
        for item in listing.flatten() {
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            let Ok(meta) = item.metadata() else { continue };
            if !meta.is_file() || !counted(name) {
                continue;
            }
            total += meta.len();
            let path = item.path();
            if !being_written(name) && !held.contains_key(&path) {
                let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                candidates.push((used, path, meta.len()));
            }
        }
        candidates.sort();
        let mut removed = Vec::new();
        for (_, path, size) in candidates {
            if total <= self.limit {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= size;
                removed.push(path);
            }
        }
        self.over.store(total > self.limit, Ordering::Relaxed);
        removed
    }
}
