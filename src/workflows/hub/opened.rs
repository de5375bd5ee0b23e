//! A listed report opened for reading: beneath its directory's handle, no
//! component of its real path followed if it is a symbolic link, and
//! checked to be the very file the list found (device, inode, size,
//! modification time). Between the listing and the reading another process
//! may swap the name for a link to a file elsewhere; such a swap then fails
//! the opening, never reads that file. Every reader is given the opened
//! handle's own name ([`Opened::path`]), not the file's.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::catalog::{device_and_inode, modified_ns, Entry};
use crate::error::{Error, Result};

/// A listed report's file, open and checked.
#[derive(Debug)]
pub struct Opened {
    file: File,
    /// The name readers are given.
    path: PathBuf,
}

impl Opened {
    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// A name of the open file itself (`/proc/self/fd/N`): opening it
    /// opens this file whatever its name now holds; SQLite reads it through
    /// the handle (`crate::nsys::descriptor`).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The name of `file` itself.
#[cfg(unix)]
fn own_name(file: &File, _listed: &Path) -> PathBuf {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    match cfg!(target_os = "linux") {
        true => PathBuf::from(format!("/proc/self/fd/{fd}")),
        false => PathBuf::from(format!("/dev/fd/{fd}")),
    }
}

/// No name of an open file here: its listed name.
#[cfg(not(unix))]
fn own_name(_file: &File, listed: &Path) -> PathBuf {
    listed.to_owned()
}

impl Entry {
    /// Opens this report's file, refused where its real path now holds a
    /// symbolic link or it is no longer the file listed.
    pub fn open(&self) -> Result<Opened> {
        let changed = |why: &str| Error::Serve {
            reason: format!(
                "{} changed since it was listed ({why}): reload the list",
                self.relative()
            ),
        };
        let file = open_beneath(&self.root, &self.within).map_err(|e| {
            changed(&match e.raw_os_error() {
                #[cfg(unix)]
                Some(libc::ELOOP) | Some(libc::ENOTDIR) => "a symbolic link is in its place".into(),
                _ => crate::error::plain(&e),
            })
        })?;
        let meta = file
            .metadata()
            .map_err(|e| changed(&crate::error::plain(&e)))?;
        let listed = (self.device, self.inode, self.size, self.modified_ns);
        let (device, inode) = device_and_inode(&meta);
        let found = (device, inode, meta.len(), modified_ns(&meta));
        if !meta.is_file() || found != listed {
            return Err(changed("another file is in its place"));
        }
        let path = own_name(&file, &self.root.join(&self.within));
        Ok(Opened { file, path })
    }
}

/// Opens `within`, a relative path, beneath the directory `root`: each
/// directory opened relative to the one before it, none a symbolic link,
/// and the file itself not a link either (`O_NOFOLLOW`), nor waited for (a
/// FIFO put in its place opens without a writer).
#[cfg(unix)]
fn open_beneath(root: &Path, within: &Path) -> std::io::Result<File> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;

    let invalid = || std::io::Error::from(std::io::ErrorKind::InvalidInput);
    let mut parts = Vec::new();
    for part in within.components() {
        match part {
            std::path::Component::Normal(name) => {
                parts.push(CString::new(name.as_bytes()).map_err(|_| invalid())?)
            }
            _ => return Err(invalid()),
        }
    }
    let mut at = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(root)?;
    for (i, name) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let kind = match last {
            true => libc::O_NONBLOCK | libc::O_NOCTTY,
            false => libc::O_DIRECTORY,
        };
        let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW | kind;
        // SAFETY: a valid directory descriptor and a NUL-terminated name;
        // the descriptor returned is owned by the File made of it.
        let fd = unsafe { libc::openat(at.as_raw_fd(), name.as_ptr(), flags) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        at = unsafe { File::from_raw_fd(fd) };
    }
    Ok(at)
}

/// Opens `within` beneath `root`, by name: no handle-relative opening here.
#[cfg(not(unix))]
fn open_beneath(root: &Path, within: &Path) -> std::io::Result<File> {
    File::open(root.join(within))
}
