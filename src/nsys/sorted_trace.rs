//! The plumbing of the streamed trace reports (`cuda_api_trace`,
//! `cuda_gpu_trace`): one query whose rows SQLite sorts, read anew each
//! time they are walked, on a connection of its own, so that memory stays
//! flat however many rows there are. What differs between the traces is
//! their SQL and their row ([`TraceRow`]); the walk is this one.

use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::select::quote;
use super::{Report, TimeCheck};

/// The row of a trace, as its query's columns hold it.
pub(crate) trait TraceRow: Sized {
    /// The table a row comes from and its start and end: what the check
    /// of times reads before the row is read whole.
    fn times(r: &rusqlite::Row<'_>) -> rusqlite::Result<(&'static str, i64, i64)>;

    /// The row, whose times (`start`, `end`) can be right.
    fn read(r: &rusqlite::Row<'_>, start: i64, end: i64) -> rusqlite::Result<Self>;
}

/// The rows of a report's trace, read anew each time they are walked, on a
/// connection of their own; rows whose times cannot be right are left out,
/// counted into the report (see [`TimeCheck`]). It holds no borrow of the
/// report: the rows are walked as they are written.
pub(crate) struct SortedTrace<R> {
    uri: String,
    cancel: Option<Arc<AtomicBool>>,
    sql: String,
    empty: bool,
    check: TimeCheck,
    row: PhantomData<R>,
}

impl<R: TraceRow> SortedTrace<R> {
    /// The trace that `sql` selects and sorts from `report`; `empty` where
    /// its tables have no row.
    pub(super) fn new(report: &Report, sql: String, empty: bool) -> rusqlite::Result<Self> {
        Ok(SortedTrace {
            uri: report.uri.clone(),
            cancel: report.cancel.clone(),
            sql,
            empty,
            check: TimeCheck::new(report)?,
            row: PhantomData,
        })
    }

    /// Whether there is no row.
    pub(crate) fn is_empty(&self) -> bool {
        self.empty
    }

    /// Calls `f` with each row whose times can be right, in the query's
    /// order.
    pub(crate) fn each<E: From<rusqlite::Error>>(
        &self,
        mut f: impl FnMut(&R) -> Result<(), E>,
    ) -> Result<(), E> {
        let conn = super::scan::open_read_only(&self.uri)?;
        // The sort spills to a temporary file, whatever SQLite was built
        // to prefer: memory stays flat however many rows there are.
        conn.pragma_update(None, "temp_store", "FILE")?;
        super::watch(&conn, self.cancel.as_ref());
        let mut check = self.check.again();
        let mut stmt = conn.prepare(&self.sql)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let (table, start, end) = R::times(r)?;
            if check.allow(table, start, end) {
                f(&R::read(r, start, end)?)?;
            }
        }
        Ok(())
    }
}

/// `alias.column` where the export has the column, `NULL` where not: a
/// trace prints an empty cell for what its export lacks.
pub(super) fn column_or_null(alias: &str, present: bool, column: &str) -> String {
    match present {
        true => format!("{alias}.{}", quote(column)),
        false => "NULL".to_owned(),
    }
}

/// The `LEFT JOIN`s of a trace's query, gathered as its columns are chosen.
#[derive(Default)]
pub(super) struct Joins(String);

impl Joins {
    /// `value`, read through `join` (added to the joins), where the export
    /// has what the join reads (`present`); `NULL` where not.
    pub(super) fn column(
        &mut self,
        present: bool,
        join: String,
        value: impl Into<String>,
    ) -> String {
        if !present {
            return "NULL".to_owned();
        }
        self.0.push_str(&join);
        value.into()
    }
}

impl fmt::Display for Joins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
