//! What the CPU threads did in a few chosen stretches of time: the CUDA API
//! calls that overlap any of them, read in one scan of the call tables with
//! the stretches in its WHERE clause, so that a report of millions of calls
//! sends only the few that matter. Records that only repeat a call to carry
//! its backtrace are left out.

use super::columns::TakeAll;
use super::cuda::{calls_themselves_sql, API, DRIVER, RUNTIME};
use super::ids::{pid_of, tid_of};
use super::names::api_stats_name;
use super::select::quote;
use super::Report;

/// A CUDA API call as the readers of windows see it.
pub(crate) struct WindowCall<'r> {
    pub pid: u32,
    pub tid: u32,
    pub start: i64,
    pub end: i64,
    /// Without its version suffix (`cudaMemcpy`).
    pub name: &'r str,
}

impl Report {
    /// The capture's time span, where the export records it
    /// (`ANALYSIS_DETAILS`' `startTime` and `stopTime`).
    pub(crate) fn capture_span(&self) -> rusqlite::Result<Option<(i64, i64)>> {
        const TABLE: &str = "ANALYSIS_DETAILS";
        if !(self.schema.has_column(TABLE, "startTime")
            && self.schema.has_column(TABLE, "stopTime"))
        {
            return Ok(None);
        }
        let sql = format!("SELECT MIN(startTime), MAX(stopTime) FROM {TABLE}");
        let (start, stop): (Option<i64>, Option<i64>) = self
            .conn()
            .query_row(&sql, [], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(start.zip(stop).filter(|(start, stop)| stop > start))
    }

    /// Calls `f` with every CUDA API call that overlaps one of `windows`
    /// (`[start, end)` each), in no particular order.
    pub(crate) fn each_call_within(
        &self,
        windows: &[(i64, i64)],
        mut f: impl FnMut(WindowCall<'_>),
    ) -> rusqlite::Result<()> {
        if windows.is_empty() {
            return Ok(());
        }
        let overlaps = windows
            .iter()
            .map(|(start, end)| format!("(\"start\" < {end} AND \"end\" > {start})"))
            .collect::<Vec<_>>()
            .join(" OR ");
        for table in [RUNTIME, DRIVER] {
            let Some(mut s) = self.select(table) else {
                continue;
            };
            let c = API.take_all(&mut s);
            if !self.readable(&s) {
                continue;
            }
            let mut filter = format!("({overlaps})");
            if s.has(API.event_class.name()) {
                filter.push_str(" AND ");
                filter.push_str(&calls_themselves_sql());
            }
            let sql = format!("SELECT {} FROM {} WHERE {filter}", s.sql(), quote(table));
            self.each_row_apart(&sql, |r| {
                let gtid = c.global_tid.get(r)?;
                f(WindowCall {
                    pid: pid_of(gtid),
                    tid: tid_of(gtid),
                    start: c.start.get(r)?,
                    end: c.end.get(r)?,
                    name: api_stats_name(self.strings.name(c.name_id.get(r)?)),
                });
                Ok::<(), rusqlite::Error>(())
            })?;
        }
        Ok(())
    }
}
