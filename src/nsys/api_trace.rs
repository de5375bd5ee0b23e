//! The rows of `cuda_api_trace`: every record of the CUDA runtime API table
//! in start order, each with the `ThreadNames` rows of its thread (its
//! name and priority), as nsys's report reads them: the same joins and the
//! same `ORDER BY`, so that calls of one start come in nsys's order. SQLite
//! sorts them, in its temporary store past its cache: memory stays flat
//! however many calls there are. The table is probed as every reader
//! probes it: one without the columns its rows need is noted unreadable.

use super::columns::TakeAll;
use super::cuda::{API, RUNTIME};
use super::select::quote;
use super::sorted_trace::{column_or_null, Joins, SortedTrace, TraceRow};
use super::{strings, Report};

/// One call, as the trace prints it.
pub(crate) struct ApiTraceRow {
    pub start: i64,
    pub end: i64,
    /// As recorded (`cudaMemcpy_v3020`), where the export names it.
    pub name: Option<String>,
    pub result: Option<i64>,
    pub correlation_id: Option<i64>,
    pub thread: CallThread,
}

/// The thread that made a call: its `globalTid`, and the priority and
/// name of its `ThreadNames` row, where the export has one.
pub(crate) struct CallThread {
    pub global_tid: Option<i64>,
    pub priority: Option<i64>,
    pub name: Option<String>,
}

/// The calls of a report, in start order.
pub(crate) type ApiTrace = SortedTrace<ApiTraceRow>;

const THREAD_NAMES: &str = "ThreadNames";

impl Report {
    /// The trace of the CUDA runtime calls; `None` where the export lacks
    /// the table or a column its rows need.
    pub(crate) fn api_trace(&self) -> rusqlite::Result<Option<ApiTrace>> {
        if self.readable_select(RUNTIME, |s| API.take_all(s)).is_none() {
            return Ok(None);
        }
        let has = |table: &str, column: &str| self.schema.has_column(table, column);
        let api = |name: &str| column_or_null("api", has(RUNTIME, name), name);
        let mut joins = Joins::default();
        let name = joins.column(
            has(RUNTIME, API.name_id.name()) && has(strings::TABLE, "value"),
            format!(
                " LEFT OUTER JOIN {} AS nstr ON nstr.id == api.nameId",
                strings::TABLE
            ),
            "nstr.value",
        );
        let threads = ["globalTid", "nameId", "priority"]
            .iter()
            .all(|c| has(THREAD_NAMES, c));
        let priority = joins.column(
            threads,
            format!(" LEFT OUTER JOIN {THREAD_NAMES} AS tname ON tname.globalTid == api.globalTid"),
            "tname.priority",
        );
        let thread = joins.column(
            threads,
            format!(
                " LEFT OUTER JOIN {} AS tstr ON tstr.id == tname.nameId",
                strings::TABLE
            ),
            "tstr.value",
        );
        let sql = format!(
            "SELECT api.start, api.\"end\", {name}, {}, {}, api.globalTid, {priority}, {thread} \
             FROM {} AS api{joins} ORDER BY 1",
            api(API.return_value.name()),
            api(API.correlation_id.name()),
            quote(RUNTIME),
        );
        let empty = !self.has_rows(RUNTIME)?;
        SortedTrace::new(self, sql, empty).map(Some)
    }
}

impl TraceRow for ApiTraceRow {
    fn times(r: &rusqlite::Row<'_>) -> rusqlite::Result<(&'static str, i64, i64)> {
        Ok((RUNTIME, r.get(0)?, r.get(1)?))
    }

    fn read(r: &rusqlite::Row<'_>, start: i64, end: i64) -> rusqlite::Result<Self> {
        Ok(ApiTraceRow {
            start,
            end,
            name: r.get(2)?,
            result: r.get(3)?,
            correlation_id: r.get(4)?,
            thread: CallThread {
                global_tid: r.get(5)?,
                priority: r.get(6)?,
                name: r.get(7)?,
            },
        })
    }
}
