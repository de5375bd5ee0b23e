//! Reports (`.nsys-rep`, `.qdrep`) are exported to SQLite by `nsys export`.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::children::{self, Stop};
use crate::error::{Error, Result};
use crate::nsys::Version;

/// The first bytes of a report (`.nsys-rep`, or the older `.qdrep`).
pub(crate) const REPORT_MAGIC: &[u8] = b"NVIDIA Tegra Profiler Report ";

/// Exports `report` to `<dir>/report.sqlite` with `nsys export`, run directly
/// (no shell). `nsys` is the CLI to use (`nsys` from PATH by default).
///
/// While nsys runs, `cancel` is watched: once set, nsys (with any process it
/// started) is stopped and the export fails with [`Error::Interrupted`].
pub(crate) fn export_to_sqlite(
    report: &Path,
    nsys: &Path,
    dir: &Path,
    cancel: Option<&AtomicBool>,
) -> Result<PathBuf> {
    let out = dir.join("report.sqlite");
    let missing = |reason: String| Error::NsysMissing {
        path: report.to_owned(),
        reason,
    };
    // nsys's messages go to files beside its export: no pipe to drain while
    // waiting, and they go when the directory goes.
    let (stdout_path, stderr_path) = (dir.join("nsys-stdout.txt"), dir.join("nsys-stderr.txt"));
    let capture = |path: &Path| {
        File::create(path).map_err(|e| Error::Output {
            path: path.to_owned(),
            cause: e,
        })
    };
    let mut command = Command::new(nsys);
    command
        .args([
            "export",
            "--type",
            "sqlite",
            "--force-overwrite",
            "true",
            "--output",
        ])
        .arg(&out)
        .arg(report)
        .stdin(Stdio::null())
        .stdout(capture(&stdout_path)?)
        .stderr(capture(&stderr_path)?);
    // A group of its own, so that stopping it stops its helpers too.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    children::dies_with_parent(&mut command);
    let mut child = command.spawn().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => missing(format!("{} was not found", nsys.display())),
        _ => missing(format!(
            "{} could not be run: {}",
            nsys.display(),
            crate::error::plain(&e)
        )),
    })?;
    let running = children::running(child.id(), Stop::Group);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                stop(&mut child);
                return Err(missing(format!(
                    "{} could not be waited for: {}",
                    nsys.display(),
                    crate::error::plain(&e)
                )));
            }
        }
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            stop(&mut child);
            return Err(Error::Interrupted {
                path: report.to_owned(),
            });
        }
        std::thread::sleep(POLL);
    };
    drop(running);
    if status.success() && out.is_file() {
        return Ok(out);
    }
    let read = |path: &Path| std::fs::read(path).unwrap_or_default();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&read(&stderr_path)),
        String::from_utf8_lossy(&read(&stdout_path))
    );
    if let Some(no_room) = out_of_space(report, &out, &text) {
        return Err(no_room);
    }
    let message = nsys_message(&text).unwrap_or_else(|| match status.code() {
        Some(code) => format!("it exited with status {code} and said nothing"),
        None => format!("it stopped ({status}) and said nothing"),
    });
    let nsys_version = nsys_version(nsys);
    let capture_version = capture_version(report);
    let advice = advice(nsys, nsys_version.as_ref(), capture_version.as_ref(), &text);
    Err(Error::NsysRefused {
        path: report.to_owned(),
        nsys: match &nsys_version {
            Some(version) => format!("nsys {version}"),
            None => nsys.display().to_string(),
        },
        capture_version: capture_version.map(|v| v.to_string()),
        message,
        advice,
    })
}

/// The error of an export that failed for want of space in the temporary
/// directory that holds `export`, if that is why: nsys said so (SQLite's
/// "database or disk is full", which nsys prints after an internal
/// "Failed to de-initialize insert statement"), or the file system is left
/// (almost) full. Its messages went to that same file system, so they may
/// be lost: the free space tells even then.
fn out_of_space(report: &Path, export: &Path, said: &str) -> Option<Error> {
    let said = said.to_ascii_lowercase();
    let says_full = said.contains("disk is full") || said.contains("no space left");
    let dir = export.parent()?;
    let free = free_space(dir);
    let left_full = free.is_some_and(|free| free < NEARLY_FULL);
    if !says_full && !left_full {
        return None;
    }
    let reached = std::fs::metadata(export).map_or(0, |m| m.len());
    let left = free.map_or(String::new(), |free| format!(", {} left", mib(free)));
    let cause = std::io::Error::new(
        std::io::ErrorKind::StorageFull,
        format!(
            "nsys's export of {} stopped at {}{left}; an export is often several times the \
             size of its report",
            report.display(),
            mib(reached)
        ),
    );
    // The directory the user chose (TMPDIR), not the ones made in it.
    Some(Error::temporary(cause))
}

/// Free space below which a file system counts as full: less than SQLite
/// and nsys write at a time.
const NEARLY_FULL: u64 = 1 << 20;

/// The bytes an unprivileged process may still write on the file system
/// that holds `dir`.
fn free_space(dir: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: statvfs(3) reads a NUL-terminated path and writes only
        // the struct it is given, which is plain data.
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
            return None;
        }
        #[allow(clippy::unnecessary_cast)] // the field types differ by platform
        Some((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// A size in MiB, to one decimal: the scale of exports.
fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

/// How often a running nsys is checked on.
const POLL: Duration = Duration::from_millis(20);

/// Stops nsys and its helpers: asked first (SIGTERM), so that nsys can
/// clean up after itself, then forced once nsys is gone or 2 s have passed.
fn stop(child: &mut Child) {
    #[cfg(unix)]
    {
        let group = -(child.id() as libc::pid_t);
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(group, libc::SIGTERM) };
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        // Helpers still running in the group are stopped too.
        // SAFETY: as above.
        unsafe { libc::kill(group, libc::SIGKILL) };
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// What to do about a report that nsys refused to export.
fn advice(
    nsys: &Path,
    nsys_version: Option<&Version>,
    capture: Option<&Version>,
    said: &str,
) -> String {
    let newer = match (capture, nsys_version) {
        (Some(capture), Some(nsys)) => capture > nsys,
        _ => false,
    };
    if newer || says_version_unsupported(said) {
        match capture {
            Some(capture) => format!(
                "the report comes from a newer nsys: use nsys {capture} or later (--nsys PATH)"
            ),
            None => "the report comes from a newer nsys: export it with a newer one (--nsys PATH)"
                .to_owned(),
        }
    } else if nsys_version.is_none() {
        format!(
            "{} did not say its version: is it the nsys CLI? (--nsys PATH)",
            nsys.display()
        )
    } else {
        "check that the report is complete, or export it with the nsys that captured it".to_owned()
    }
}

/// Whether nsys said that it does not support the report's version.
fn says_version_unsupported(said: &str) -> bool {
    let said = said.to_ascii_lowercase();
    said.contains("version not supported")
        || said.contains("unsupported version")
        || (said.contains("version") && said.contains("is not supported"))
}

/// The most telling line of nsys's output, for a one-line error.
pub(super) fn nsys_message(text: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = lines
        .iter()
        .find(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("error")
                || l.contains("invalid")
                || l.contains("failed")
                || l.contains("cannot")
                || l.contains("not supported")
        })
        .or(lines.first())?;
    Some(line.trim_start_matches("Error:").trim().to_owned())
}

fn nsys_version(nsys: &Path) -> Option<Version> {
    let out = Command::new(nsys)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    // "NVIDIA Nsight Systems version 2022.4.2.1-df9881f"
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find_map(Version::parse)
}

/// The nsys version that captured `report`. Reports from 2023 on name it in
/// their header (`...Report 2025@5@1@...`); older ones carry the install
/// directory of the capturing nsys early in the file.
pub(crate) fn capture_version(report: &Path) -> Option<Version> {
    let mut head = Vec::new();
    File::open(report)
        .ok()?
        .take(4 << 20)
        .read_to_end(&mut head)
        .ok()?;
    let first_line = head.split(|&b| b == b'\n').next()?;
    if let Some(rest) = first_line.strip_prefix(REPORT_MAGIC) {
        let parts: Vec<&str> = std::str::from_utf8(rest).ok()?.split('@').take(3).collect();
        if let Some(version) = Version::parse(&parts.join(".")).filter(|_| parts.len() == 3) {
            return Some(version);
        }
    }
    Version::from_install_dir(&String::from_utf8_lossy(&head))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_capture_version_from_header_or_install_path() {
        let dir = tempfile::tempdir().unwrap();
        let reports: [(&str, &[u8], &str); 2] = [
            (
                "r.nsys-rep",
                b"NVIDIA Tegra Profiler Report 2025@5@1@121-2551v0.\n\x0bLocal",
                "2025.5.1",
            ),
            // Older reports name no version in their header.
            (
                "r.qdrep",
                b"NVIDIA Tegra Profiler Report 1.\n..4/opt/nvidia/nsight-systems/2022.1.3/target",
                "2022.1.3",
            ),
        ];
        for (name, head, version) in reports {
            let path = dir.path().join(name);
            std::fs::write(&path, head).unwrap();
            assert_eq!(capture_version(&path).unwrap().to_string(), version);
        }
    }

    #[test]
    fn advice_says_newer_only_when_it_is() {
        let v = |t: &str| Version::parse(t).unwrap();
        let nsys = Path::new("nsys");
        let advice_for = |capture: Option<&str>, version: Option<&str>, said: &str| {
            let (capture, version) = (capture.map(v), version.map(v));
            advice(nsys, version.as_ref(), capture.as_ref(), said)
        };
        let newer = advice_for(Some("2022.10.1"), Some("2022.4.2.1"), "");
        assert!(newer.contains("use nsys 2022.10.1 or later"), "{newer}");
        let older = advice_for(Some("2022.1.3"), Some("2022.4.2.1"), "");
        assert!(
            older.starts_with("check that the report is complete"),
            "{older}"
        );
        let unknown_nsys = advice_for(Some("2022.1.3"), None, "");
        assert!(
            unknown_nsys.contains("did not say its version"),
            "{unknown_nsys}"
        );
        let unsupported = advice_for(None, Some("2024.1.1"), "Version not supported");
        assert!(unsupported.contains("newer nsys"), "{unsupported}");
        let unsupported = advice_for(None, None, "Error: Version not supported");
        assert!(unsupported.contains("newer nsys"), "{unsupported}");
    }

    #[test]
    fn picks_the_error_line() {
        let out = "Processing events...\nError: Version number is invalid\n";
        assert_eq!(
            nsys_message(out).as_deref(),
            Some("Version number is invalid")
        );
    }
}
