//! A file sent to the hub: where it goes (a name of its own, never one
//! that exists) and how it is written (piece by piece as it comes, into a
//! temporary file renamed when complete: a half-sent file leaves nothing).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::workflows::output::OutputFile;

/// The extensions the hub takes.
pub const EXTENSIONS: [&str; 3] = ["sqlite", "nsys-rep", "qdrep"];

/// Where a file sent as `name` goes in `dir`: its name without any
/// directory, refused unless it ends in one of [`EXTENSIONS`]; where a file
/// of that name exists (or is `taken`: another upload's), `STEM-2.EXT`,
/// `STEM-3.EXT`, ... the first free.
pub fn place_for(dir: &Path, name: &str, taken: &dyn Fn(&Path) -> bool) -> Result<PathBuf> {
    let base = name.rsplit(['/', '\\']).next().unwrap_or("").trim();
    let ext = EXTENSIONS
        .iter()
        .find(|e| base.len() > e.len() + 1 && base.ends_with(&format!(".{e}")));
    let (Some(ext), false) = (ext, base.starts_with('.') || base.contains('\0')) else {
        return Err(Error::InvalidOption(format!(
            "{name:?} is no report: the hub takes .sqlite exports and .nsys-rep or .qdrep reports"
        )));
    };
    let stem = &base[..base.len() - ext.len() - 1];
    let mut candidate = dir.join(base);
    let mut n = 2;
    while taken(&candidate) || std::fs::symlink_metadata(&candidate).is_ok() {
        candidate = dir.join(format!("{stem}-{n}.{ext}"));
        n += 1;
    }
    Ok(candidate)
}

/// Why an upload stopped short.
#[derive(Debug)]
pub enum Stopped {
    /// It grew past the limit (bytes).
    TooLarge(u64),
    /// The sender went away, or sent something broken.
    Broken(String),
}

/// Writes the pieces `next` gives (`None`: the end) into `target`,
/// appearing there only when all came, at most `limit` bytes. Returns its
/// size.
pub fn save(
    target: &Path,
    limit: u64,
    next: &mut dyn FnMut() -> Option<std::result::Result<Vec<u8>, String>>,
) -> std::result::Result<u64, UploadError> {
    let mut size = 0u64;
    let mut stopped = None;
    let written = OutputFile::new(target).write(|out| {
        while let Some(piece) = next() {
            let piece = match piece {
                Ok(piece) => piece,
                Err(why) => {
                    stopped = Some(Stopped::Broken(why));
                    return Err(Error::Serve {
                        reason: "upload stopped".into(),
                    });
                }
            };
            size += piece.len() as u64;
            if size > limit {
                stopped = Some(Stopped::TooLarge(limit));
                return Err(Error::Serve {
                    reason: "upload too large".into(),
                });
            }
            out.write_all(&piece).map_err(|cause| Error::Output {
                path: target.to_owned(),
                cause,
            })?;
        }
        Ok(())
    });
    match (written, stopped) {
        (Ok(()), _) => Ok(size),
        (Err(_), Some(stopped)) => Err(UploadError::Stopped(stopped)),
        (Err(e), None) => Err(UploadError::Failed(e)),
    }
}

/// Why [`save`] kept nothing.
#[derive(Debug)]
pub enum UploadError {
    /// The upload was cut short or too large.
    Stopped(Stopped),
    /// The file could not be written.
    Failed(Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_their_own_and_never_replace_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(
            place_for(d, "run.sqlite", &|_| false).unwrap(),
            d.join("run.sqlite")
        );
        assert_eq!(
            place_for(d, "../../etc/run.sqlite", &|_| false).unwrap(),
            d.join("run.sqlite")
        );
        assert_eq!(
            place_for(d, "C:\\x\\run.qdrep", &|_| false).unwrap(),
            d.join("run.qdrep")
        );
        std::fs::write(d.join("run.sqlite"), b"x").unwrap();
        std::fs::write(d.join("run-2.sqlite"), b"x").unwrap();
        assert_eq!(
            place_for(d, "run.sqlite", &|_| false).unwrap(),
            d.join("run-3.sqlite")
        );
        for bad in ["run.txt", ".sqlite", "..", "", "a/.hidden.sqlite", "sqlite"] {
            assert!(place_for(d, bad, &|_| false).is_err(), "{bad:?}");
        }
    }
}
