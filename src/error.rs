//! The errors a user can meet, each worded to fit on one line.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{} is neither an Nsight Systems report (.nsys-rep, .qdrep) nor an SQLite export", path.display())]
    UnknownFormat { path: PathBuf },

    #[error("{} is an SQLite database but not an Nsight Systems export (it has no StringIds table)", path.display())]
    NotAnExport { path: PathBuf },

    #[error("{} is damaged or truncated: {source}", path.display())]
    Damaged {
        path: PathBuf,
        source: rusqlite::Error,
    },

    #[error(
        "cannot convert {} without nsys: {reason}; install Nsight Systems, pass --nsys PATH, \
         or export it yourself with `nsys export --type sqlite`",
        path.display()
    )]
    NsysMissing { path: PathBuf, reason: String },

    #[error(
        "nsys {nsys_version} could not export {} (captured with nsys {capture_version}): {message}; \
         {advice}",
        path.display()
    )]
    NsysRefused {
        path: PathBuf,
        nsys_version: String,
        capture_version: String,
        message: String,
        advice: String,
    },

    #[error("cannot write {}: {source}", path.display())]
    Output {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
