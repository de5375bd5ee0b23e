//! A file sent to the hub: its name (checked before anything is written:
//! no directory, no character a terminal or a list would show as something
//! else, a known extension in any case), how it is written (piece by piece
//! as it comes, into a temporary file), what it must hold (an export that
//! reads, or a report's signature), and how it is published: under its
//! name, or the next free one, never replacing a file, even one another
//! process creates meanwhile (`renameat2(RENAME_NOREPLACE)`, or `link`
//! then `unlink`). A half-sent, refused or failed upload leaves nothing.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::nsys::Report;
use crate::nsys_cli::REPORT_MAGIC;
use crate::workflows::input::SQLITE_MAGIC;

/// The extensions the hub takes, as it publishes them (a name's own in
/// any case: `RUN.SQLITE` is published as `RUN.sqlite`, the name the list
/// finds).
pub const EXTENSIONS: [&str; 3] = ["sqlite", "nsys-rep", "qdrep"];

/// The longest name taken, in bytes: a file name may have 255, and
/// `-N` and the temporary file's name need room.
pub const MAX_NAME: usize = 200;

/// The name an upload is published under: its stem and its extension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadName {
    stem: String,
    ext: &'static str,
}

impl UploadName {
    /// The name sent as `name`, without any directory; refused (with why,
    /// in one line that names no path of the server's) where it does not
    /// end in one of [`EXTENSIONS`] (in any case), is hidden (`.`), could
    /// pass for an option (`-`), holds a control character (a newline, a
    /// tab) or one that reorders or hides text (U+202E and the like), or
    /// is longer than [`MAX_NAME`] bytes.
    pub fn new(name: &str) -> Result<UploadName, String> {
        let base = name.rsplit(['/', '\\']).next().unwrap_or("").trim();
        if base.len() > MAX_NAME {
            return Err(format!(
                "refused: the name is too long ({} bytes; at most {MAX_NAME})",
                base.len()
            ));
        }
        if let Some(c) = base.chars().find(|&c| is_hostile(c)) {
            return Err(format!(
                "refused: the name holds U+{:04X}, a character that is not shown as itself",
                u32::from(c)
            ));
        }
        if base.starts_with('-') {
            return Err(format!(
                "refused: {base:?} starts with '-', which a command would take for an option"
            ));
        }
        let lower = base.to_ascii_lowercase();
        let ext = EXTENSIONS
            .iter()
            .find(|e| lower.len() > e.len() + 1 && lower.ends_with(&format!(".{e}")));
        let (Some(ext), false) = (ext, base.starts_with('.')) else {
            return Err(format!(
                "refused: {base:?} is no report: the hub takes .sqlite exports and .nsys-rep or .qdrep reports"
            ));
        };
        Ok(UploadName {
            stem: base[..base.len() - ext.len() - 1].to_owned(),
            ext,
        })
    }

    /// The `n`th name to try: `STEM.EXT`, then `STEM-2.EXT`, ...
    fn numbered(&self, n: usize) -> String {
        match n {
            1 => format!("{}.{}", self.stem, self.ext),
            n => format!("{}-{n}.{}", self.stem, self.ext),
        }
    }

    /// As published, where the name is free.
    pub fn shown(&self) -> String {
        self.numbered(1)
    }
}

/// Whether `c` is no character to put in a file name shown to others: a
/// control character, or one that changes the direction of text or hides
/// itself (bidirectional overrides and isolates, marks, zero-width ones).
fn is_hostile(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2069}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// Why an upload stopped short.
#[derive(Debug)]
pub enum Stopped {
    /// It grew past the limit (bytes).
    TooLarge(u64),
    /// The sender went away, or sent something broken.
    Broken(String),
}

/// Why [`save`] kept nothing.
#[derive(Debug)]
pub enum UploadError {
    /// The upload was cut short or too large.
    Stopped(Stopped),
    /// What came is no export or report: why, naming it as sent.
    Refused(String),
    /// The file could not be written.
    Failed(Error),
}

/// The most names tried before giving up.
const TRIES: usize = 10_000;

/// Writes the pieces `next` gives (`None`: the end), at most `limit`
/// bytes, into a temporary file of `dir`; checks what came is what `name`
/// says; publishes it as `name` or the next free name in `dir`. Returns
/// where it is.
pub fn save(
    dir: &Path,
    name: &UploadName,
    limit: u64,
    next: &mut dyn FnMut() -> Option<std::result::Result<Vec<u8>, String>>,
) -> std::result::Result<PathBuf, UploadError> {
    let failed = |cause| {
        UploadError::Failed(Error::Output {
            path: dir.join(name.shown()),
            cause,
        })
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".nsys2perfetto-").suffix(".tmp");
    // As every new file: 0666 less the umask, not a temporary file's 0600.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut temporary = builder.tempfile_in(dir).map_err(failed)?;
    let mut size = 0u64;
    while let Some(piece) = next() {
        let piece = piece.map_err(|why| UploadError::Stopped(Stopped::Broken(why)))?;
        size += piece.len() as u64;
        if size > limit {
            return Err(UploadError::Stopped(Stopped::TooLarge(limit)));
        }
        temporary.write_all(&piece).map_err(failed)?;
    }
    temporary.as_file().sync_all().map_err(failed)?;
    check(temporary.path(), name).map_err(UploadError::Refused)?;
    for n in 1..=TRIES {
        let target = dir.join(name.numbered(n));
        match temporary.persist_noclobber(&target) {
            Ok(_) => return Ok(target),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => temporary = e.file,
            Err(e) => return Err(failed(e.error)),
        }
    }
    Err(failed(std::io::Error::other(format!(
        "no free name among {TRIES} tried"
    ))))
}

/// Whether the file at `path` holds what `name` says: an export SQLite
/// opens and that has an export's tables, or a report's signature. Why
/// not, naming it as sent.
fn check(path: &Path, name: &UploadName) -> std::result::Result<(), String> {
    let shown = name.shown();
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(64).read_to_end(&mut head))
        .map_err(|e| format!("refused: {shown} cannot be read back: {e}"))?;
    let is_export = head.starts_with(SQLITE_MAGIC);
    let is_report = head.starts_with(REPORT_MAGIC);
    let why = match (name.ext, is_export, is_report) {
        _ if head.is_empty() => "it is empty".to_owned(),
        ("sqlite", true, _) => match Report::open(path) {
            Ok(_) => return Ok(()),
            Err(e) => e.to_string().replace(&path.display().to_string(), &shown),
        },
        ("sqlite", _, true) => "it is an Nsight Systems report: name it .nsys-rep".to_owned(),
        ("sqlite", _, _) => "it is not an SQLite database".to_owned(),
        (_, _, true) => return Ok(()),
        (_, true, _) => "it is an SQLite export: name it .sqlite".to_owned(),
        _ => "it does not start with an Nsight Systems report's signature".to_owned(),
    };
    Err(format!("refused: {shown}: {why}; nothing kept"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_their_own_in_any_case_and_shown_as_themselves() {
        let shown = |name: &str| UploadName::new(name).map(|n| n.shown());
        assert_eq!(shown("run.sqlite").unwrap(), "run.sqlite");
        assert_eq!(shown("../../etc/run.sqlite").unwrap(), "run.sqlite");
        assert_eq!(shown("C:\\x\\run.qdrep").unwrap(), "run.qdrep");
        assert_eq!(shown("RUN.SQLITE").unwrap(), "RUN.sqlite");
        assert_eq!(shown("a.Nsys-Rep").unwrap(), "a.nsys-rep");
        assert_eq!(
            UploadName::new("run.sqlite").unwrap().numbered(3),
            "run-3.sqlite"
        );
        for bad in [
            "run.txt",
            ".sqlite",
            "..",
            "",
            "a/.hidden.sqlite",
            "sqlite",
            "-rf.sqlite",
            "a\nb.sqlite",
            "a\tb.sqlite",
            "a\rb.sqlite",
            "a\u{7f}.sqlite",
            "a\u{85}.sqlite",
            "evil\u{202E}etilqs.sqlite",
            "a\u{2066}b.sqlite",
            "a\u{200B}.sqlite",
            "a\0.sqlite",
        ] {
            assert!(UploadName::new(bad).is_err(), "{bad:?}");
        }
        let long = format!("{}.sqlite", "a".repeat(300));
        let why = UploadName::new(&long).unwrap_err();
        assert!(why.contains("too long") && why.len() < 100, "{why}");
    }
}
