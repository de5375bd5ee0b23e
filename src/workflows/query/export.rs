//! A query run over the SQLite export itself, where no trace_processor is
//! at hand: the export opened read-only, and each statement asked by
//! SQLite whether it writes (`sqlite3_stmt_readonly`) before it runs.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use super::statements::{refused, Statement};
use super::Answer;
use crate::error::{Error, Result};
use crate::render::table::Cell;

/// Whether SQLite failed for the file, not for the statement.
fn damaged(e: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if matches!(f.code, DatabaseCorrupt | NotADatabase))
}

/// Runs `statements` over the export `path`; the last one's rows are the
/// answer. Stopped once `cancel` is set, as [`Error::Interrupted`] of `run`.
pub(super) fn run(
    path: &Path,
    statements: &[Statement],
    cancel: Option<Arc<AtomicBool>>,
    run: &Path,
) -> Result<Answer> {
    if let Some(include) = statements.iter().find(|s| s.words[0] == "INCLUDE") {
        return Err(refused(&format!(
            "{:?} needs trace_processor (the SQLite export has no Perfetto modules)",
            include.text
        )));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let db = Connection::open_with_flags(path, flags).map_err(|e| Error::Unreadable {
        path: path.to_owned(),
        cause: std::io::Error::other(e),
    })?;
    if let Some(cancel) = cancel.clone() {
        db.progress_handler(10_000, Some(move || cancel.load(Ordering::Relaxed)));
    }
    let failed =
        |e: rusqlite::Error| match cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            true => Error::Interrupted {
                path: run.to_owned(),
            },
            // A damaged export is said as every command says it.
            false if damaged(&e) => Error::Damaged {
                path: run.to_owned(),
                cause: crate::error::DatabaseError(e),
            },
            false => Error::QueryFailed {
                reason: e.to_string(),
            },
        };
    let mut answer = Answer::default();
    for statement in statements {
        let mut prepared = db.prepare(&statement.text).map_err(failed)?;
        if !prepared.readonly() {
            return Err(refused(&format!(
                "SQLite says {:?} writes: only reads are run",
                statement.text
            )));
        }
        let columns: Vec<String> = prepared
            .column_names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let count = columns.len();
        let mut rows = Vec::new();
        let mut stepped = prepared.raw_query();
        while let Some(row) = stepped.next().map_err(failed)? {
            let cells = (0..count)
                .map(|c| row.get_ref(c).map(cell))
                .collect::<rusqlite::Result<Vec<Cell>>>()
                .map_err(failed)?;
            rows.push(cells);
        }
        answer = Answer {
            columns,
            rows,
            left_out: 0,
        };
    }
    Ok(answer)
}

/// A value as trace_processor prints it: reals with six decimals, a blob
/// by its size.
fn cell(value: ValueRef<'_>) -> Cell {
    match value {
        ValueRef::Null => Cell::Empty,
        ValueRef::Integer(n) => Cell::Int(i128::from(n)),
        ValueRef::Real(r) => Cell::Real(r, 6),
        ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => Cell::Text(format!("<blob of {} bytes>", b.len())),
    }
}
