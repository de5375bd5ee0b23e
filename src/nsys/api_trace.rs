//! The rows of `cuda_api_trace`: every record of the CUDA runtime API table
//! in start order, each with the `ThreadNames` rows of its thread (its
//! name and priority), as nsys's report reads them: the same joins and the
//! same `ORDER BY`, so that calls of one start come in nsys's order. SQLite
//! sorts them, in its temporary store past its cache: memory stays flat
//! however many calls there are. The table is probed as every reader
//! probes it: one without the columns its rows need is noted unreadable.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::columns::TakeAll;
use super::cuda::{API, RUNTIME};
use super::select::quote;
use super::{strings, Report, TimeCheck};

/// One call, as the trace prints it.
pub(crate) struct ApiTraceRow {
    pub start: i64,
    pub end: i64,
    /// As recorded (`cudaMemcpy_v3020`), where the export names it.
    pub name: Option<String>,
    pub result: Option<i64>,
    pub correlation_id: Option<i64>,
    pub global_tid: Option<i64>,
    /// Its thread's, where `ThreadNames` has a row for it.
    pub priority: Option<i64>,
    pub thread: Option<String>,
}

/// The calls of a report, read anew each time they are walked, on a
/// connection of their own; calls whose times cannot be right are left
/// out, counted into the report (see [`TimeCheck`]).
pub(crate) struct ApiTrace {
    uri: String,
    cancel: Option<Arc<AtomicBool>>,
    sql: String,
    empty: bool,
    check: TimeCheck,
}

const THREAD_NAMES: &str = "ThreadNames";

impl Report {
    /// The trace of the CUDA runtime calls; `None` where the export lacks
    /// the table or a column its rows need.
    pub(crate) fn api_trace(&self) -> rusqlite::Result<Option<ApiTrace>> {
        let Some(mut s) = self.select(RUNTIME) else {
            return Ok(None);
        };
        let _ = API.take_all(&mut s);
        if !self.readable(&s) {
            return Ok(None);
        }
        let has = |table: &str, column: &str| self.schema.has_column(table, column);
        let column = |alias: &str, table: &str, name: &str| match has(table, name) {
            true => format!("{alias}.{}", quote(name)),
            false => "NULL".to_owned(),
        };
        let api = |name: &str| column("api", RUNTIME, name);
        let mut joins = String::new();
        let name = match has(RUNTIME, API.name_id.name()) && has(strings::TABLE, "value") {
            true => {
                joins.push_str(&format!(
                    " LEFT OUTER JOIN {} AS nstr ON nstr.id == api.nameId",
                    strings::TABLE
                ));
                "nstr.value"
            }
            false => "NULL",
        };
        let threads = ["globalTid", "nameId", "priority"]
            .iter()
            .all(|c| has(THREAD_NAMES, c));
        let (priority, thread) = match threads {
            true => {
                joins.push_str(&format!(
                    " LEFT OUTER JOIN {THREAD_NAMES} AS tname ON tname.globalTid == api.globalTid \
                     LEFT OUTER JOIN {} AS tstr ON tstr.id == tname.nameId",
                    strings::TABLE
                ));
                ("tname.priority", "tstr.value")
            }
            false => ("NULL", "NULL"),
        };
        let sql = format!(
            "SELECT api.start, api.\"end\", {name}, {}, {}, api.globalTid, {priority}, {thread} \
             FROM {} AS api{joins} ORDER BY 1",
            api(API.return_value.name()),
            api(API.correlation_id.name()),
            quote(RUNTIME),
        );
        Ok(Some(ApiTrace {
            uri: self.uri.clone(),
            cancel: self.cancel.clone(),
            sql,
            empty: !self.has_rows(RUNTIME)?,
            check: TimeCheck::new(self)?,
        }))
    }
}

impl ApiTrace {
    /// Whether there is no call.
    pub(crate) fn is_empty(&self) -> bool {
        self.empty
    }

    /// Calls `f` with each call whose times can be right, in start order.
    pub(crate) fn each<E: From<rusqlite::Error>>(
        &self,
        mut f: impl FnMut(&ApiTraceRow) -> Result<(), E>,
    ) -> Result<(), E> {
        let conn = super::scan::open_read_only(&self.uri)?;
        // The sort spills to a temporary file, whatever SQLite was built
        // to prefer: memory stays flat however many calls there are.
        conn.pragma_update(None, "temp_store", "FILE")?;
        super::watch(&conn, self.cancel.as_ref());
        let mut check = self.check.again();
        let mut stmt = conn.prepare(&self.sql)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let (start, end) = (r.get(0)?, r.get(1)?);
            if !check.allow(RUNTIME, start, end) {
                continue;
            }
            f(&ApiTraceRow {
                start,
                end,
                name: r.get(2)?,
                result: r.get(3)?,
                correlation_id: r.get(4)?,
                global_tid: r.get(5)?,
                priority: r.get(6)?,
                thread: r.get(7)?,
            })?;
        }
        Ok(())
    }
}
