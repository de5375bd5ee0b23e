//! An export named by a descriptor already open (`/proc/self/fd/N`, as the
//! hub names a file it opened and checked): SQLite reads that descriptor,
//! never a file found by name again.
//!
//! SQLite's own unix VFS cannot: it resolves every symbolic link of a path
//! itself (`/proc/self/fd/N` becomes the name the file had, which another
//! process may have swapped for a link to elsewhere since), and opens with
//! `O_NOFOLLOW`, which refuses the descriptor's link outright. So such a
//! path opens through a VFS of its own: the main database a duplicate of
//! the descriptor, read with `pread`, immutable (no locks, no journal);
//! every other file SQLite opens (its temporary files) the unix VFS's.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::Path;
use std::sync::OnceLock;

use rusqlite::ffi;

/// The VFS's name, for a URI's `vfs=`.
pub(super) const VFS: &str = "nsys2perfetto-fd";

/// The descriptor `path` names, where it names one of this process's
/// (`/proc/self/fd/N` or `/dev/fd/N`).
pub(super) fn descriptor_of(path: &Path) -> Option<c_int> {
    let text = path.to_str()?;
    let number = text
        .strip_prefix("/proc/self/fd/")
        .or_else(|| text.strip_prefix("/dev/fd/"))?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    number.parse().ok()
}

/// Registers the VFS (once); whether it is there to be named.
pub(super) fn registered() -> bool {
    static DONE: OnceLock<bool> = OnceLock::new();
    *DONE.get_or_init(|| {
        // SAFETY: the unix VFS lives as long as the process; the copy made
        // of it is leaked, as SQLite keeps a registered VFS for ever.
        unsafe {
            let unix = ffi::sqlite3_vfs_find(c"unix".as_ptr());
            if unix.is_null() {
                return false;
            }
            UNIX.get_or_init(|| Unix(unix));
            let mut vfs = *unix;
            vfs.zName = c"nsys2perfetto-fd".as_ptr();
            vfs.pNext = std::ptr::null_mut();
            vfs.szOsFile = vfs.szOsFile.max(std::mem::size_of::<FdFile>() as c_int);
            vfs.xOpen = Some(open);
            vfs.xFullPathname = Some(full_pathname);
            ffi::sqlite3_vfs_register(Box::into_raw(Box::new(vfs)), 0) == ffi::SQLITE_OK
        }
    })
}

/// The unix VFS, which every file but a descriptor's is left to.
struct Unix(*mut ffi::sqlite3_vfs);
// SAFETY: a VFS is shared by every connection of the process by design.
unsafe impl Send for Unix {}
unsafe impl Sync for Unix {}
static UNIX: OnceLock<Unix> = OnceLock::new();

fn unix() -> *mut ffi::sqlite3_vfs {
    UNIX.get().map_or(std::ptr::null_mut(), |u| u.0)
}

/// An open main database: SQLite's file header, then the descriptor.
#[repr(C)]
struct FdFile {
    base: ffi::sqlite3_file,
    fd: c_int,
}

/// The descriptor a name SQLite passes names, if it does.
unsafe fn named_descriptor(name: *const c_char) -> Option<c_int> {
    if name.is_null() {
        return None;
    }
    let text = CStr::from_ptr(name).to_str().ok()?;
    descriptor_of(Path::new(text))
}

unsafe extern "C" fn full_pathname(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    size: c_int,
    out: *mut c_char,
) -> c_int {
    if named_descriptor(name).is_none() {
        let unix = unix();
        return match (*unix).xFullPathname {
            Some(full) => full(unix, name, size, out),
            None => ffi::SQLITE_CANTOPEN,
        };
    }
    // As it is: resolving the link would name the file again.
    let bytes = CStr::from_ptr(name).to_bytes_with_nul();
    if bytes.len() > size as usize {
        return ffi::SQLITE_CANTOPEN;
    }
    std::ptr::copy_nonoverlapping(bytes.as_ptr().cast(), out, bytes.len());
    ffi::SQLITE_OK
}

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let descriptor = match flags & ffi::SQLITE_OPEN_MAIN_DB {
        0 => None,
        _ => named_descriptor(name),
    };
    let Some(fd) = descriptor else {
        let unix = unix();
        return match (*unix).xOpen {
            Some(open) => open(unix, name, file, flags, out_flags),
            None => ffi::SQLITE_CANTOPEN,
        };
    };
    (*file).pMethods = std::ptr::null();
    let own = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0);
    if own < 0 {
        return ffi::SQLITE_CANTOPEN;
    }
    let opened = file.cast::<FdFile>();
    (*opened).fd = own;
    (*opened).base.pMethods = &METHODS;
    if !out_flags.is_null() {
        *out_flags = ffi::SQLITE_OPEN_READONLY;
    }
    ffi::SQLITE_OK
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(lock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

unsafe fn fd_of(file: *mut ffi::sqlite3_file) -> c_int {
    (*file.cast::<FdFile>()).fd
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    libc::close(fd_of(file));
    ffi::SQLITE_OK
}

unsafe extern "C" fn read(
    file: *mut ffi::sqlite3_file,
    buffer: *mut c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    let fd = fd_of(file);
    let wanted = amount as usize;
    let mut got = 0usize;
    while got < wanted {
        let n = libc::pread(
            fd,
            buffer.cast::<u8>().add(got).cast(),
            wanted - got,
            (offset + got as i64) as libc::off_t,
        );
        match n {
            0 => break,
            n if n < 0 => {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return ffi::SQLITE_IOERR_READ;
            }
            n => got += n as usize,
        }
    }
    if got < wanted {
        // As SQLite asks of a VFS: the rest zeroed, and said short.
        std::ptr::write_bytes(buffer.cast::<u8>().add(got), 0, wanted - got);
        return ffi::SQLITE_IOERR_SHORT_READ;
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn write(
    _file: *mut ffi::sqlite3_file,
    _buffer: *const c_void,
    _amount: c_int,
    _offset: ffi::sqlite3_int64,
) -> c_int {
    ffi::SQLITE_READONLY
}

unsafe extern "C" fn truncate(_file: *mut ffi::sqlite3_file, _size: ffi::sqlite3_int64) -> c_int {
    ffi::SQLITE_READONLY
}

unsafe extern "C" fn sync(_file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn file_size(
    file: *mut ffi::sqlite3_file,
    size: *mut ffi::sqlite3_int64,
) -> c_int {
    let mut stat: libc::stat = std::mem::zeroed();
    if libc::fstat(fd_of(file), &mut stat) != 0 {
        return ffi::SQLITE_IOERR_FSTAT;
    }
    *size = stat.st_size as ffi::sqlite3_int64;
    ffi::SQLITE_OK
}

/// Immutable: no lock is taken, none needed.
unsafe extern "C" fn lock(_file: *mut ffi::sqlite3_file, _level: c_int) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn check_reserved_lock(_file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    *out = 0;
    ffi::SQLITE_OK
}

unsafe extern "C" fn file_control(
    _file: *mut ffi::sqlite3_file,
    _op: c_int,
    _arg: *mut c_void,
) -> c_int {
    ffi::SQLITE_NOTFOUND
}

unsafe extern "C" fn sector_size(_file: *mut ffi::sqlite3_file) -> c_int {
    4096
}

unsafe extern "C" fn device_characteristics(_file: *mut ffi::sqlite3_file) -> c_int {
    ffi::SQLITE_IOCAP_IMMUTABLE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_descriptors_own_names_are_descriptors() {
        assert_eq!(descriptor_of(Path::new("/proc/self/fd/12")), Some(12));
        assert_eq!(descriptor_of(Path::new("/dev/fd/3")), Some(3));
        for other in [
            "/proc/self/fd/",
            "/proc/self/fd/1/x",
            "/proc/1/fd/3",
            "run.sqlite",
            "/proc/self/fd/-1",
        ] {
            assert_eq!(descriptor_of(Path::new(other)), None, "{other}");
        }
    }
}
