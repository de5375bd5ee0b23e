//! What the server may touch: the runs under its directories, and nothing
//! else; and how large an answer may be.

use std::path::{Path, PathBuf};

/// The served directories, by their real paths.
pub struct Scope {
    roots: Vec<PathBuf>,
}

impl Scope {
    /// The directories `dirs` (the current one where none is named).
    pub fn of(dirs: &[PathBuf]) -> anyhow::Result<Scope> {
        let dirs = match dirs.is_empty() {
            true => vec![PathBuf::from(".")],
            false => dirs.to_vec(),
        };
        let mut roots = Vec::new();
        for dir in dirs {
            let root = dir
                .canonicalize()
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", dir.display()))?;
            roots.push(root);
        }
        Ok(Scope { roots })
    }

    /// The served directories.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The real path of `given` (absolute, or relative to one of the
    /// directories), refused where it is not under one of them.
    pub fn inside(&self, given: &str) -> Result<PathBuf, String> {
        let path = Path::new(given);
        let candidates: Vec<PathBuf> = match path.is_absolute() {
            true => vec![path.to_owned()],
            false => self.roots.iter().map(|r| r.join(path)).collect(),
        };
        let mut outside = None;
        for candidate in candidates {
            let Ok(real) = candidate.canonicalize() else {
                continue;
            };
            if self.roots.iter().any(|root| real.starts_with(root)) {
                return Ok(real);
            }
            outside = Some(real);
        }
        let served = self.served();
        Err(match outside {
            Some(real) => format!(
                "{} is outside the served directories ({served}): refused",
                real.display()
            ),
            None => format!("{given}: no such file under the served directories ({served})"),
        })
    }

    /// A folder to write into: under the served directories, existing.
    pub fn folder(&self, given: &str) -> Result<PathBuf, String> {
        let real = self.inside(given)?;
        match real.is_dir() {
            true => Ok(real),
            false => Err(format!("{} is no folder", real.display())),
        }
    }

    fn served(&self) -> String {
        let shown: Vec<String> = self.roots.iter().map(|r| r.display().to_string()).collect();
        shown.join(", ")
    }
}
