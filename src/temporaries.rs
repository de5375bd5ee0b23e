//! The temporary folders of a run (a report's export by nsys, a trace that
//! `open` serves) live in one folder per user, `<TMPDIR>/nsys2perfetto-<uid>`
//! (mode 0700), each named with the pid of the run that made it. A run ended
//! by SIGKILL (the OOM killer, a killed Dask task) cannot remove its own:
//! the next run removes the folders of runs that are gone.
//! The Python package keeps its own temporary folders by the same rule
//! (`python/nsys2perfetto/_temporaries.py`, kind `python`), since SIGTERM
//! ends Python without its cleanup.

use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A new temporary folder, `<kind>-<pid>-<random>` in the user's folder,
/// removed when dropped. `kind` says what it holds (no `-` in it).
pub fn directory(kind: &str) -> Result<tempfile::TempDir> {
    let folder = users_folder().map_err(Error::temporary)?;
    remove_stale_in(&folder);
    tempfile::Builder::new()
        .prefix(&format!("{kind}-{}-", std::process::id()))
        .tempdir_in(&folder)
        .map_err(Error::temporary)
}

/// Removes the entries of runs that are gone, where the user's folder
/// exists (it is not made here): what a killed run left.
pub fn remove_stale() {
    let folder = folder_path();
    if is_own_folder(&folder).is_ok() {
        remove_stale_in(&folder);
    }
}

/// Removes this run's own entries: for a run about to end at once, without
/// the unwinding that drops them.
pub fn remove_own() {
    let folder = folder_path();
    if is_own_folder(&folder).is_err() {
        return;
    }
    remove_entries(&folder, |pid| pid == std::process::id());
}

/// `<TMPDIR>/nsys2perfetto-<uid>`.
fn folder_path() -> PathBuf {
    #[cfg(unix)]
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let user = unsafe { libc::geteuid() };
    #[cfg(not(unix))]
    let user = "user";
    std::env::temp_dir().join(format!("nsys2perfetto-{user}"))
}

/// The user's folder, made if missing; refused where it is not a folder of
/// this user's alone (another user's could be read or filled by them).
fn users_folder() -> io::Result<PathBuf> {
    let folder = folder_path();
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(&folder) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    is_own_folder(&folder)?;
    Ok(folder)
}

/// Whether `folder` is a folder (not a link to one) of this user's with no
/// access for others; an error that says why not.
fn is_own_folder(folder: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(folder)?;
    let refused = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{} {why}", folder.display()),
        ))
    };
    if !meta.is_dir() {
        return refused("is not a folder".to_owned());
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        // SAFETY: as in `folder_path`.
        let user = unsafe { libc::geteuid() };
        if meta.uid() != user {
            return refused(format!(
                "belongs to another user (uid {}): remove it",
                meta.uid()
            ));
        }
        if meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}

fn remove_stale_in(folder: &Path) {
    remove_entries(folder, |pid| !is_running(pid));
}

/// Removes the entries of `folder` whose pid `which` picks.
fn remove_entries(folder: &Path, which: impl Fn(u32) -> bool) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(pid_of) else {
            continue;
        };
        if !which(pid) {
            continue;
        }
        let path = entry.path();
        let _ = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
    }
}

/// The pid in an entry's name, `<kind>-<pid>-<random>`.
fn pid_of(name: &str) -> Option<u32> {
    name.split('-').nth(1)?.parse().ok()
}

/// Whether a process of pid `pid` runs (or is a zombie not yet reaped).
fn is_running(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: kill(2) with signal 0 only checks that the process exists.
        if unsafe { libc::kill(pid, 0) } == 0 {
            return true;
        }
        // Another user's process (EPERM) runs too.
        io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_pid() {
        assert_eq!(pid_of("export-1234-a1B2c3"), Some(1234));
        assert_eq!(pid_of("export-x-1"), None);
        assert_eq!(pid_of("stray"), None);
        assert!(is_running(std::process::id()));
    }
}
