//! The nsys versions this program was tested on (the fixtures' exports
//! run from 2022.1 to 2026.2): a report or export of a newer nsys is read
//! all the same, with a note that its tables may hold what no version
//! tested had.

use std::path::Path;

use super::input::{sniff, FileKind};

/// The newest nsys version (year, release) whose exports were tested.
const NEWEST_TESTED: (u32, u32) = (2026, 2);

/// A note for the report or export at `input` where the nsys that made it
/// is newer than any tested: the export's `EXPORT_PRODUCT_VERSION`, or a
/// report's capture version (its header). `None` where it is not newer, or
/// records no version.
pub fn untested_version(input: &Path) -> Option<String> {
    let version = match sniff(input).ok()? {
        FileKind::Sqlite => export_version(input)?,
        FileKind::NsysReport => crate::nsys_cli::capture_version(input)?.to_string(),
    };
    let newer = year_and_release(&version)? > NEWEST_TESTED;
    newer.then(|| {
        let (year, release) = NEWEST_TESTED;
        format!(
            "{}: made by nsys {version}, newer than any version tested (the newest is \
             {year}.{release}): it is read as {year}.{release}'s exports are, and what it \
             holds that they do not is left out",
            input.display()
        )
    })
}

/// `EXPORT_PRODUCT_VERSION` of the export at `path`, where it records one.
fn export_version(path: &Path) -> Option<String> {
    use rusqlite::{Connection, OpenFlags};
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).ok()?;
    ["META_DATA_EXPORT", "EXPORT_META_DATA"]
        .iter()
        .find_map(|table| {
            let sql = format!("SELECT value FROM {table} WHERE name = 'EXPORT_PRODUCT_VERSION'");
            conn.query_row(&sql, [], |r| r.get::<_, String>(0)).ok()
        })
}

/// The year and release of a version (`2025.3.2.0` is (2025, 3)).
fn year_and_release(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split(['.', '-']);
    let year = parts.next()?.trim().parse().ok()?;
    let release = parts.next()?.trim().parse().ok()?;
    Some((year, release))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_year_then_release() {
        assert_eq!(year_and_release("2025.3.2.0"), Some((2025, 3)));
        assert_eq!(year_and_release("2099.1"), Some((2099, 1)));
        assert!(year_and_release("2026.10.1").unwrap() > NEWEST_TESTED);
        assert!(year_and_release("2026.2.1.210").unwrap() <= NEWEST_TESTED);
        assert_eq!(year_and_release("unknown"), None);
    }
}
