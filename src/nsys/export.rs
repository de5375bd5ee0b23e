//! Reports (`.nsys-rep`, `.qdrep`) are exported to SQLite by the `nsys` CLI.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Sqlite,
    /// An Nsight Systems report (`.nsys-rep`, or the older `.qdrep`).
    NsysReport,
}

const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";
const REPORT_MAGIC: &[u8] = b"NVIDIA Tegra Profiler Report ";

/// What `path` holds, judged by its first bytes (not by its name).
pub fn sniff(path: &Path) -> Result<FileKind> {
    let unreadable = |source| Error::Unreadable {
        path: path.to_owned(),
        source,
    };
    let mut head = [0u8; 64];
    let mut file = File::open(path).map_err(unreadable)?;
    if file.metadata().map_err(unreadable)?.is_dir() {
        return Err(unreadable(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory",
        )));
    }
    let n = read_up_to(&mut file, &mut head).map_err(unreadable)?;
    let head = &head[..n];
    if n == 0 {
        return Err(unreadable(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the file is empty",
        )));
    }
    if head.starts_with(SQLITE_MAGIC) {
        Ok(FileKind::Sqlite)
    } else if head.starts_with(REPORT_MAGIC) {
        Ok(FileKind::NsysReport)
    } else {
        Err(Error::UnknownFormat {
            path: path.to_owned(),
        })
    }
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Exports `report` to `<dir>/report.sqlite` with `nsys export`, run directly
/// (no shell). `nsys` is the CLI to use (`nsys` from PATH by default).
pub fn export_to_sqlite(report: &Path, nsys: &Path, dir: &Path) -> Result<PathBuf> {
    let out = dir.join("report.sqlite");
    let missing = |reason: String| Error::NsysMissing {
        path: report.to_owned(),
        reason,
    };
    let output = Command::new(nsys)
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
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => missing(format!("`{}` was not found", nsys.display())),
            _ => missing(format!("`{}` could not be run: {e}", nsys.display())),
        })?;
    if output.status.success() && out.is_file() {
        return Ok(out);
    }
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    let message =
        nsys_message(&text).unwrap_or_else(|| format!("nsys exited with {}", output.status));
    let nsys_version = nsys_version(nsys).unwrap_or_else(|| "(unknown version)".to_owned());
    let capture_version = capture_version(report).unwrap_or_else(|| "(unknown version)".to_owned());
    let advice = if capture_version > nsys_version && !capture_version.starts_with('(') {
        format!(
            "the report is newer than this nsys: use nsys {capture_version} or later (--nsys PATH)"
        )
    } else {
        "check that the report is complete, or export it with the nsys that captured it".to_owned()
    };
    Err(Error::NsysRefused {
        path: report.to_owned(),
        nsys_version,
        capture_version,
        message,
        advice,
    })
}

/// The most telling line of nsys's output, for a one-line error.
fn nsys_message(text: &str) -> Option<String> {
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
        })
        .or(lines.first())?;
    Some(line.trim_start_matches("Error:").trim().to_owned())
}

fn nsys_version(nsys: &Path) -> Option<String> {
    let out = Command::new(nsys).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    // "NVIDIA Nsight Systems version 2022.4.2.1-df9881f"
    text.split_whitespace()
        .find(|w| looks_like_version(w))
        .map(|w| w.split('-').next().unwrap_or(w).to_owned())
}

/// The nsys version that captured `report`. Reports from 2023 on name it in
/// their header (`...Report 2025@5@1@...`); older ones carry the install path
/// of the capturing nsys (`nsight-systems/2022.1.3/...`) early in the file.
pub fn capture_version(report: &Path) -> Option<String> {
    let mut head = Vec::new();
    File::open(report)
        .ok()?
        .take(4 << 20)
        .read_to_end(&mut head)
        .ok()?;
    let first_line = head.split(|&b| b == b'\n').next()?;
    if let Some(rest) = first_line.strip_prefix(REPORT_MAGIC) {
        let parts: Vec<&str> = std::str::from_utf8(rest).ok()?.split('@').take(3).collect();
        if parts.len() == 3
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Some(parts.join("."));
        }
    }
    let text = String::from_utf8_lossy(&head);
    let at = text.find("nsight-systems/")? + "nsight-systems/".len();
    let version: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    looks_like_version(&version).then_some(version)
}

fn looks_like_version(word: &str) -> bool {
    let word = word.split('-').next().unwrap_or(word);
    let parts: Vec<&str> = word.split('.').collect();
    parts.len() >= 3
        && parts[0].len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_capture_version_from_new_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.nsys-rep");
        std::fs::write(
            &path,
            b"NVIDIA Tegra Profiler Report 2025@5@1@121-2551v0.\n\x0bLocal",
        )
        .unwrap();
        assert_eq!(capture_version(&path).as_deref(), Some("2025.5.1"));
    }

    #[test]
    fn reads_capture_version_from_install_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.qdrep");
        std::fs::write(
            &path,
            b"NVIDIA Tegra Profiler Report 1.\n..4/opt/nvidia/nsight-systems/2022.1.3/target",
        )
        .unwrap();
        assert_eq!(capture_version(&path).as_deref(), Some("2022.1.3"));
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
