//! Directories an output needs that are not there yet: made when it is
//! written (as `mkdir -p` makes them), and removed again where they stayed
//! empty (a run interrupted or failed before its first file), so that a
//! run leaves no empty folder it made.

use std::path::{Path, PathBuf};

/// The missing directories of some outputs, from the outermost in.
#[derive(Debug, Default)]
pub struct NewDirectories {
    missing: Vec<PathBuf>,
}

impl NewDirectories {
    /// The directories among `dirs` and their ancestors that do not exist
    /// now.
    pub fn missing<'a>(dirs: impl IntoIterator<Item = &'a Path>) -> NewDirectories {
        let mut missing: Vec<PathBuf> = Vec::new();
        for dir in dirs {
            // Without a trailing slash: "d/" and "d" are one directory.
            let mut at = Some(dir.components().as_path());
            while let Some(d) = at.filter(|d| !d.as_os_str().is_empty()) {
                if std::fs::symlink_metadata(d).is_ok() {
                    break;
                }
                missing.push(d.to_owned());
                at = d.parent();
            }
        }
        missing.sort();
        missing.dedup();
        NewDirectories { missing }
    }

    /// Makes them all; where one cannot be made, those made are removed
    /// again, and its error returned.
    pub fn make(&self) -> std::io::Result<()> {
        for dir in &self.missing {
            if let Err(e) = std::fs::create_dir_all(dir) {
                self.remove_empty();
                return Err(e);
            }
        }
        Ok(())
    }

    /// Removes those of them that are empty, the innermost first (a parent
    /// then empty in its turn goes too). A directory something was written
    /// into stays.
    pub fn remove_empty(&self) {
        for dir in self.missing.iter().rev() {
            // Fails, and so keeps it, where the directory holds anything.
            let _ = std::fs::remove_dir(dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_and_removed_where_empty() {
        let root = tempfile::tempdir().unwrap();
        let a = root.path().join("a/b/c");
        let kept = root.path().join("a/kept");
        let new = NewDirectories::missing([a.as_path(), kept.as_path()]);
        new.make().unwrap();
        assert!(a.is_dir() && kept.is_dir());
        std::fs::write(kept.join("file"), b"x").unwrap();
        new.remove_empty();
        assert!(!root.path().join("a/b").exists());
        assert!(kept.join("file").is_file());
    }
}
