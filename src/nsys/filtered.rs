//! A conversion's [`Filter`] as SQL conditions on the rows of each event
//! table, and the rows those conditions left out; and the two reads that
//! keeping only the CUDA work inside NVTX ranges needs besides the streams.

use std::sync::Arc;

use rusqlite::types::ValueRef;

use crate::filter::Filter;

use super::ids::{pid_of, pid_sql, tid_of};
use super::select::quote;
use super::{cuda, metrics, nvtx, scan, Report};

/// A filter, with what it needs of the report worked out once.
pub(crate) struct Scope {
    pub filter: Filter,
    /// `IN (...)` list of the StringIds ids of the kernel names kept, when
    /// kernels are filtered by name.
    kernel_names: Option<String>,
}

impl Report {
    /// Applies `filter` to the readers of this report from now on (`None`:
    /// everything again).
    pub(crate) fn set_filter(&self, filter: Option<&Filter>) {
        let scope = filter.filter(|f| !f.is_empty()).map(|filter| {
            let kernel_names = filter.kernels.as_ref().map(|re| {
                let ids: Vec<String> = self
                    .strings
                    .ids()
                    .filter(|(_, s)| re.is_match(s))
                    .map(|(id, _)| id.to_string())
                    .collect();
                ids.join(", ")
            });
            Arc::new(Scope {
                filter: filter.clone(),
                kernel_names,
            })
        });
        *self.scope.write().unwrap_or_else(|e| e.into_inner()) = scope;
        self.filtered_out
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Held while a conversion runs: conversions of one report take turns,
    /// each with its own filter.
    pub(crate) fn converting(&self) -> std::sync::MutexGuard<'_, ()> {
        self.converting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The filter in force, if any.
    pub(crate) fn filter(&self) -> Option<Arc<Scope>> {
        self.scope.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// SQL that the rows of `table` kept by the filter match (times in
    /// column `time`), or empty when it keeps them all.
    pub(crate) fn filter_sql(&self, table: &str, time: &str) -> String {
        let Some(scope) = self.filter() else {
            return String::new();
        };
        let f = &scope.filter;
        let has = |c: &str| self.schema.has_column(table, c);
        let mut all = self.window_sql(f, table, time);
        if !f.pids.is_empty() {
            let pid = if has("globalPid") {
                Some(pid_sql("globalPid"))
            } else if has("globalTid") {
                Some(pid_sql("globalTid"))
            } else if cuda::GPU_OP_TABLES.contains(&table) || table == cuda::SYNC {
                Some(self.pid_column(table))
            } else {
                None
            };
            if let Some(pid) = pid {
                all.push(format!("{pid} IN ({})", list(&f.pids)));
            }
        }
        if !f.gpus.is_empty() {
            if has("deviceId") {
                all.push(format!("\"deviceId\" IN ({})", list(&f.gpus)));
            } else if table == metrics::GPU_METRICS && has("typeId") {
                // The metric set's low byte is the GPU.
                all.push(format!("(\"typeId\" & 255) IN ({})", list(&f.gpus)));
            }
        }
        if let (Some(ids), cuda::KERNEL) = (&scope.kernel_names, table) {
            let by = ["shortName", "demangledName"]
                .into_iter()
                .filter(|c| has(c))
                .map(|c| format!("{} IN ({ids})", quote(c)))
                .collect::<Vec<_>>();
            all.push(match by.is_empty() {
                true => "0".to_owned(),
                false => format!("({})", by.join(" OR ")),
            });
        }
        all.join(" AND ")
    }

    /// The conditions of `filter`'s time window on the rows of `table`
    /// (times in column `time`).
    fn window_sql(&self, f: &Filter, table: &str, time: &str) -> Vec<String> {
        let mut all: Vec<String> = Vec::new();
        let t = quote(time);
        if let Some(start) = f.time.start {
            if self.schema.has_column(table, "end") && table != metrics::MEMORY_USAGE {
                // An end NULL is a range that never ended (marks have none either).
                let open = match table {
                    nvtx::TABLE => format!(
                        "\"eventType\" NOT IN ({}, {})",
                        nvtx::MARK,
                        nvtx::NVTXT_MARK
                    ),
                    _ => "1".to_owned(),
                };
                all.push(format!(
                    "(\"end\" >= {start} OR {t} >= {start} OR (\"end\" IS NULL AND {open}))"
                ));
            } else if table != metrics::MEMORY_USAGE {
                // Memory use adds up from the first allocation: its earlier
                // rows are read, and not written (see the metrics).
                all.push(format!("{t} >= {start}"));
            }
        }
        if let Some(end) = f.time.end {
            all.push(format!("{t} <= {end}"));
        }
        all
    }

    /// Calls `f` with each NVTX range (push/pop or start/end) begun and
    /// ended on one thread, of the processes the filter keeps, that begins
    /// before the end of its time window: the ranges that may enclose a CUDA
    /// API call the filter keeps. Ranges that end before the window begins
    /// are read too, since a call begun in one may last into it. Not counted
    /// as filtered out: the NVTX part reads (and counts) the NVTX events.
    pub(crate) fn for_each_thread_nvtx_range<E: From<rusqlite::Error>>(
        &self,
        mut f: impl FnMut(ThreadRange<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(mut s) = self.select(nvtx::TABLE) else {
            return Ok(());
        };
        s.required::<i64>("eventType");
        let start = s.required("start");
        let end = s.optional("end");
        let gtid = s.required::<i64>("globalTid");
        let domain = s.optional::<i64>("domainId");
        let text = s.optional::<String>("text");
        let text_id = s.optional("textId");
        if !self.readable(&s) {
            return Ok(());
        }
        let ranges = [
            nvtx::PUSH_POP,
            nvtx::START_END,
            nvtx::NVTXT_PUSH_POP,
            nvtx::NVTXT_START_END,
        ];
        let mut all = vec![format!("\"eventType\" IN ({})", list(&ranges))];
        if s.has("endGlobalTid") {
            // Ranges that end on another thread enclose no call of one thread.
            all.push("(\"endGlobalTid\" IS NULL OR \"endGlobalTid\" = \"globalTid\")".into());
        }
        if let Some(scope) = self.filter() {
            let f = &scope.filter;
            if let Some(end) = f.time.end {
                all.push(format!("\"start\" <= {end}"));
            }
            if !f.pids.is_empty() {
                all.push(format!("{} IN ({})", pid_sql("globalTid"), list(&f.pids)));
            }
        }
        let sql = format!(
            "SELECT {} FROM {} WHERE {}",
            s.sql(),
            quote(nvtx::TABLE),
            all.join(" AND ")
        );
        let conn = scan::open_read_only(&self.uri)?;
        super::watch(&conn, self.cancel.as_ref());
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let gtid = gtid.get(r)?;
            let text = match text.raw(r)? {
                ValueRef::Text(t) => std::str::from_utf8(t).ok(),
                _ => self.strings.lookup(text_id.get(r)?),
            };
            f(ThreadRange {
                pid: pid_of(gtid),
                tid: tid_of(gtid),
                start: start.get(r)?,
                end: end.get(r)?,
                domain: domain.get(r)?.unwrap_or(0),
                text,
            })?;
        }
        Ok(())
    }

    /// Calls `f` with each CUDA API call outside the filter's time window
    /// that launched GPU work inside it which the filter's other conditions
    /// keep (a kernel running in the window, launched before it): that work
    /// is kept when its launch is inside a kept NVTX range, though the call
    /// itself is not in the trace. Calls that only repeat another (CUDA
    /// backtrace records) are left out: the call they repeat owns the launch.
    pub(crate) fn for_each_launch_outside_window<E: From<rusqlite::Error>>(
        &self,
        mut f: impl FnMut(OutsideLaunch) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(scope) = self.filter() else {
            return Ok(());
        };
        let filter = &scope.filter;
        if filter.time.is_everything() {
            return Ok(());
        }
        // The launches (pid, correlationId) of the GPU work kept.
        let launched: Vec<String> = cuda::GPU_OP_TABLES
            .into_iter()
            .filter(|t| {
                self.schema.has_column(t, "correlationId") && self.schema.has_column(t, "start")
            })
            .map(|table| {
                let mut sql = format!(
                    "SELECT {} AS pid, \"correlationId\" AS corr FROM {} WHERE \"correlationId\" IS NOT NULL",
                    self.pid_column(table),
                    quote(table)
                );
                let kept = self.filter_sql(table, "start");
                if !kept.is_empty() {
                    sql.push_str(" AND ");
                    sql.push_str(&kept);
                }
                sql
            })
            .collect();
        if launched.is_empty() {
            return Ok(());
        }
        let launched = launched.join(" UNION ALL ");
        let conn = scan::open_read_only(&self.uri)?;
        super::watch(&conn, self.cancel.as_ref());
        for table in [cuda::RUNTIME, cuda::DRIVER] {
            let Some(mut s) = self.select(table) else {
                continue;
            };
            let start = s.required("start");
            s.required::<i64>("end");
            let gtid = s.required::<i64>("globalTid");
            let correlation = s.required("correlationId");
            if s.missing().is_some() {
                // The API reader says why it cannot read the table.
                continue;
            }
            let inside = self.window_sql(filter, table, "start").join(" AND ");
            let mut all = vec![
                format!("NOT COALESCE(({inside}), 0)"),
                format!(
                    "({}, \"correlationId\") IN (SELECT pid, corr FROM ({launched}))",
                    pid_sql("globalTid")
                ),
            ];
            if s.has("eventClass") {
                all.push(cuda::calls_themselves_sql());
            }
            if !filter.pids.is_empty() {
                all.push(format!(
                    "{} IN ({})",
                    pid_sql("globalTid"),
                    list(&filter.pids)
                ));
            }
            let sql = format!(
                "SELECT {} FROM {} WHERE {}",
                s.sql(),
                quote(table),
                all.join(" AND ")
            );
            let mut stmt = conn.prepare(&sql)?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let gtid = gtid.get(r)?;
                f(OutsideLaunch {
                    pid: pid_of(gtid),
                    tid: tid_of(gtid),
                    start: start.get(r)?,
                    correlation_id: correlation.get(r)?,
                })?;
            }
        }
        Ok(())
    }

    /// Notes that the filter left out `rows` rows of `table`.
    pub(crate) fn note_filtered_out(&self, table: &str, rows: u64) {
        if rows > 0 {
            *self
                .filtered_out
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(table.to_owned())
                .or_default() += rows;
        }
    }

    /// The rows the filter left out so far, by table.
    pub(crate) fn filtered_out(&self) -> Vec<(String, u64)> {
        let noted = self.filtered_out.lock().unwrap_or_else(|e| e.into_inner());
        noted.iter().map(|(t, n)| (t.clone(), *n)).collect()
    }
}

/// An NVTX range begun and ended on one thread, as
/// `Report::for_each_thread_nvtx_range` reads it.
pub(crate) struct ThreadRange<'a> {
    pub pid: u32,
    pub tid: u32,
    pub start: i64,
    /// `None` for a range that never ended.
    pub end: Option<i64>,
    /// 0 for NVTX's default domain.
    pub domain: i64,
    /// The message, inline or registered.
    pub text: Option<&'a str>,
}

/// A CUDA API call outside the time window that launched GPU work inside it.
pub(crate) struct OutsideLaunch {
    pub pid: u32,
    pub tid: u32,
    pub start: i64,
    pub correlation_id: i64,
}

fn list<T: ToString>(values: &[T]) -> String {
    values
        .iter()
        .map(T::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
