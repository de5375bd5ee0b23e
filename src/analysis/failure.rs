//! Why reading a report into something failed, for a conversion and an
//! analysis alike: the report could not be read, or a file being written
//! could not be (the trace of a conversion; for an analysis, a temporary file
//! of values set aside for medians or findings set aside for sorting). Each
//! caller says what the file was; [`Failure::of`] says it for an analysis,
//! where a failed temporary file is no damage to the report.

use std::io;
use std::path::Path;

use crate::error::{DatabaseError, Error};

#[derive(Debug)]
pub(crate) enum Failure {
    /// The report's database could not be read.
    Read(rusqlite::Error),
    /// A file being written failed: the trace, or a temporary file.
    Write(io::Error),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Read(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Write(e)
    }
}

impl Failure {
    /// The error of analysing the report at `report`, whose only written
    /// files are temporary.
    pub(crate) fn of(self, report: &Path) -> Error {
        match self {
            Failure::Read(cause) => Error::Damaged {
                path: report.to_owned(),
                cause: DatabaseError(cause),
            },
            Failure::Write(cause) => Error::temporary(cause),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_spill_is_no_damage_to_the_report() {
        let cause = io::Error::new(io::ErrorKind::StorageFull, "no space left on device");
        let e = Failure::from(cause).of(Path::new("r.sqlite"));
        assert!(matches!(e, Error::TemporaryDirectory { .. }), "{e}");
        let e = Failure::from(rusqlite::Error::InvalidQuery).of(Path::new("r.sqlite"));
        assert!(matches!(e, Error::Damaged { .. }));
    }
}
