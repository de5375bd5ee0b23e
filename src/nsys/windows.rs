//! What the CPU threads did in a few chosen stretches of time: the CUDA API
//! and OS runtime calls that overlap any of them, and the CPU samples taken
//! in them, each read in one scan of its tables with the stretches in its
//! WHERE clause, so that a report of millions of calls sends only the few
//! that matter. Records that only repeat a CUDA call to carry its backtrace
//! are left out.

use super::columns::TakeAll;
use super::cpu::{OSRT, OSRT_COLUMNS, SAMPLES, SAMPLE_CALLCHAINS};
use super::cuda::{calls_themselves_sql, API, DRIVER, RUNTIME};
use super::ids::{pid_of, tid_of};
use super::names::api_stats_name;
use super::select::{quote, Select};
use super::Report;

/// A CUDA API or OS runtime call as the readers of windows see it.
pub(crate) struct WindowCall<'r> {
    pub pid: u32,
    pub tid: u32,
    pub start: i64,
    pub end: i64,
    /// A CUDA call's without its version suffix (`cudaMemcpy`), an OS
    /// runtime call's as recorded (`stat64`).
    pub name: &'r str,
}

impl<'r> WindowCall<'r> {
    /// A call of the thread `global_tid` (`globalTid`).
    fn of_thread(global_tid: i64, start: i64, end: i64, name: &'r str) -> Self {
        WindowCall {
            pid: pid_of(global_tid),
            tid: tid_of(global_tid),
            start,
            end,
            name,
        }
    }
}

/// A CPU sample as the readers of windows see it.
pub(crate) struct WindowSample<'r> {
    pub pid: u32,
    pub tid: u32,
    pub at: i64,
    /// The function it was taken in (the innermost frame of its stack);
    /// empty where the stack is not recorded.
    pub function: &'r str,
}

/// SQL that a row whose times are in `start` and `end` overlaps one of
/// `windows` (`[start, end)` each).
fn overlaps_sql(windows: &[(i64, i64)], start: &str, end: &str) -> String {
    windows
        .iter()
        .map(|(from, to)| format!("({start} < {to} AND {end} > {from})"))
        .collect::<Vec<_>>()
        .join(" OR ")
}

impl Report {
    /// The capture's time span, where the export records it
    /// (`ANALYSIS_DETAILS`' `startTime` and `stopTime`).
    pub(crate) fn capture_span(&self) -> rusqlite::Result<Option<(i64, i64)>> {
        const TABLE: &str = "ANALYSIS_DETAILS";
        if !self.schema.has_table(TABLE) {
            return Ok(None);
        }
        // Every version writes both: a table without them is noted.
        let lacking = self.schema.lacking(TABLE, &["startTime", "stopTime"]);
        if !lacking.is_empty() {
            self.note_read_without(TABLE, &lacking);
            return Ok(None);
        }
        let sql = format!("SELECT MIN(startTime), MAX(stopTime) FROM {TABLE}");
        let (start, stop): (Option<i64>, Option<i64>) = self
            .conn()
            .query_row(&sql, [], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(start.zip(stop).filter(|(start, stop)| stop > start))
    }

    /// Calls `f` with every CUDA API and OS runtime call that overlaps one
    /// of `windows` (`[start, end)` each), in no particular order.
    pub(crate) fn each_call_within(
        &self,
        windows: &[(i64, i64)],
        mut f: impl FnMut(WindowCall<'_>),
    ) -> rusqlite::Result<()> {
        if windows.is_empty() {
            return Ok(());
        }
        let overlaps = overlaps_sql(windows, "\"start\"", "\"end\"");
        for table in [RUNTIME, DRIVER] {
            let Some((s, c)) = self.readable_select(table, |s| API.take_all(s)) else {
                continue;
            };
            let mut filter = format!("({overlaps})");
            if s.has(API.event_class.name()) {
                filter.push_str(" AND ");
                filter.push_str(&calls_themselves_sql());
            }
            let sql = format!("SELECT {} FROM {} WHERE {filter}", s.sql(), quote(table));
            self.each_row_apart(&sql, |r| {
                let name = api_stats_name(self.strings.name(c.name_id.get(r)?));
                let (gtid, start, end) = (c.global_tid.get(r)?, c.start.get(r)?, c.end.get(r)?);
                f(WindowCall::of_thread(gtid, start, end, name));
                Ok::<(), rusqlite::Error>(())
            })?;
        }
        if let Some((s, c)) = self.readable_select(OSRT, |s| OSRT_COLUMNS.take_all(s)) {
            let sql = format!("SELECT {} FROM {OSRT} WHERE {overlaps}", s.sql());
            self.each_row_apart(&sql, |r| {
                let name = self.strings.name(c.name_id.get(r)?);
                let (gtid, start, end) = (c.global_tid.get(r)?, c.start.get(r)?, c.end.get(r)?);
                f(WindowCall::of_thread(gtid, start, end, name));
                Ok::<(), rusqlite::Error>(())
            })?;
        }
        Ok(())
    }

    /// Calls `f` with every CPU sample taken in one of `windows` (`[start,
    /// end)` each), with the function it was taken in, in no particular order.
    pub(crate) fn each_sample_within(
        &self,
        windows: &[(i64, i64)],
        mut f: impl FnMut(WindowSample<'_>),
    ) -> rusqlite::Result<()> {
        if windows.is_empty() {
            return Ok(());
        }
        // The columns the samples' own reader needs, probed as it probes
        // them: a table without them is noted unreadable, not skipped unsaid.
        let probe = |s: &mut Select| {
            s.required::<i64>("id");
            s.required::<i64>("start");
            s.required::<Option<i64>>("globalTid");
        };
        if self.readable_select(SAMPLES, probe).is_none() {
            return Ok(());
        }
        let has = |t: &str, c: &str| self.schema.has_column(t, c);
        let within = overlaps_sql(windows, "e.\"start\"", "e.\"start\" + 1");
        // The innermost frame is at depth 0.
        let function = match ["id", "symbol", "stackDepth"]
            .iter()
            .all(|c| has(SAMPLE_CALLCHAINS, c))
            && has(SAMPLES, "id")
        {
            true => format!(
                "(SELECT c.symbol FROM {} c WHERE c.id = e.id AND c.stackDepth = 0)",
                quote(SAMPLE_CALLCHAINS)
            ),
            false => "NULL".to_owned(),
        };
        let sql = format!(
            "SELECT e.\"start\", e.globalTid, {function} FROM {} e WHERE {within}",
            quote(SAMPLES)
        );
        self.each_row_apart(&sql, |r| {
            let gtid: i64 = r.get::<_, Option<i64>>(1)?.unwrap_or(0);
            f(WindowSample {
                pid: pid_of(gtid),
                tid: tid_of(gtid),
                at: r.get(0)?,
                function: self.strings.name(r.get(2)?),
            });
            Ok::<(), rusqlite::Error>(())
        })
    }
}
