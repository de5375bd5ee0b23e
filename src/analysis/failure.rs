//! Why an analysis of a report failed, and what the user is told: a report
//! that cannot be read is damaged; a temporary file that cannot be written or
//! read back (values set aside for medians, findings set aside for sorting)
//! is no damage to the report.

use std::io;
use std::path::Path;

use crate::error::{DatabaseError, Error};

#[derive(Debug)]
pub(crate) enum Failure {
    /// The report's database could not be read.
    Read(rusqlite::Error),
    /// A temporary file failed.
    Spill(io::Error),
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Self {
        Failure::Read(e)
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Spill(e)
    }
}

impl Failure {
    /// The error of analysing the report at `report`.
    pub(crate) fn of(self, report: &Path) -> Error {
        match self {
            Failure::Read(cause) => Error::Damaged {
                path: report.to_owned(),
                cause: DatabaseError(cause),
            },
            Failure::Spill(cause) => Error::Output {
                path: std::env::temp_dir(),
                cause,
            },
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
        assert!(matches!(e, Error::Output { .. }), "{e}");
        let e = Failure::from(rusqlite::Error::InvalidQuery).of(Path::new("r.sqlite"));
        assert!(matches!(e, Error::Damaged { .. }));
    }
}
