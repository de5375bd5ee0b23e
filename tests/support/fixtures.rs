//! The real exports in ../shared/fixtures. A fresh clone has no ../shared:
//! then tests say so and skip.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Every SQLite export of the fixture set, or `None` (having said why).
pub fn all() -> Option<Vec<PathBuf>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures");
    if !root.is_dir() {
        eprintln!(
            "SKIP: {} is absent (a fresh clone without ../shared)",
            root.display()
        );
        return None;
    }
    let mut files = Vec::new();
    for dir in ["sqlite", "local"] {
        for entry in std::fs::read_dir(root.join(dir)).ok()?.flatten() {
            if entry.path().extension().is_some_and(|e| e == "sqlite") {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    Some(files)
}
