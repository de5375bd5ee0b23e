//! A conversion's [`Filter`] as SQL conditions on the rows of each event
//! table ([`RowFilter`]), which the readers take as a parameter and count
//! the rows they left out into; and the one read that keeping the GPU work
//! of calls inside NVTX ranges needs besides the streams.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::filter::Filter;

use super::cuda::{self, API};
use super::devices::DEVICE_NOT_RECORDED;
use super::ids::{pid_of, pid_sql, tid_of};
use super::select::quote;
use super::{libraries, metrics, nvtx, scan, Report};

/// What a reading of a report keeps of each event table's rows: a filter,
/// with what it needs of the report worked out once, and the rows it left
/// out so far. The readers narrow their scans by it and count into it; the
/// caller reads the count back ([`RowFilter::left_out`]).
#[derive(Default)]
pub(crate) struct RowFilter {
    /// `None`: every row.
    filter: Option<Filter>,
    /// `IN (...)` list of the StringIds ids of the kernel names kept, when
    /// kernels are filtered by name.
    kernel_names: Option<String>,
    /// SQL for the device of a row of each table whose `deviceId` is not
    /// recorded (see `devices`), when GPUs are filtered.
    placed_on: BTreeMap<&'static str, String>,
    /// Rows left out, by table.
    left_out: Mutex<BTreeMap<String, u64>>,
}

impl RowFilter {
    /// Keeps every row.
    pub(crate) fn none() -> Self {
        Self::default()
    }

    /// Keeps the rows of `report` that `filter` keeps.
    pub(crate) fn new(report: &Report, filter: &Filter) -> rusqlite::Result<Self> {
        if filter.is_empty() {
            return Ok(Self::none());
        }
        let kernel_names = filter.kernels.as_ref().map(|re| {
            let ids: Vec<String> = report
                .strings
                .ids()
                .filter(|(_, s)| re.is_match(s))
                .map(|(id, _)| id.to_string())
                .collect();
            ids.join(", ")
        });
        // A GPU keeps the rows of its contexts, wherever their row says.
        let mut placed_on = BTreeMap::new();
        if !filter.gpus.is_empty() {
            let devices = report.context_devices()?;
            let recorded = DEVICE_NOT_RECORDED
                .into_iter()
                .filter(|t| report.schema.has_column(t, "deviceId"));
            for table in recorded {
                placed_on.insert(table, devices.device_sql(&report.pid_column(table)));
            }
        }
        Ok(Self {
            filter: Some(filter.clone()),
            kernel_names,
            placed_on,
            left_out: Mutex::default(),
        })
    }

    /// The filter, unless it keeps everything.
    pub(crate) fn filter(&self) -> Option<&Filter> {
        self.filter.as_ref()
    }

    /// Notes that the filter left out `rows` rows of `table`.
    pub(crate) fn note_left_out(&self, table: &str, rows: u64) {
        if rows > 0 {
            *self
                .left_out
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(table.to_owned())
                .or_default() += rows;
        }
    }

    /// The rows the filter left out so far, by table.
    pub(crate) fn left_out(&self) -> Vec<(String, u64)> {
        let noted = self.left_out.lock().unwrap_or_else(|e| e.into_inner());
        noted.iter().map(|(t, n)| (t.clone(), *n)).collect()
    }
}

impl RowFilter {
    /// SQL that the rows of `table` of `report` kept by the filter match
    /// (times in column `time`), or empty when it keeps them all.
    pub(crate) fn sql(&self, report: &Report, table: &str, time: &str) -> String {
        let Some(f) = &self.filter else {
            return String::new();
        };
        let has = |c: &str| report.schema.has_column(table, c);
        let mut all = window_sql(report, f, table, time);
        if !f.pids.is_empty() {
            let pid = if has("globalPid") {
                Some(pid_sql("globalPid"))
            } else if has("globalTid") {
                Some(pid_sql("globalTid"))
            } else if cuda::GPU_OP_TABLES.contains(&table) || table == cuda::SYNC {
                Some(report.pid_column(table))
            } else {
                None
            };
            if let Some(pid) = pid {
                all.push(format!("{pid} IN ({})", list(&f.pids)));
            }
        }
        if !f.gpus.is_empty() {
            if let Some(device) = self.placed_on.get(table) {
                all.push(format!("({device}) IN ({})", list(&f.gpus)));
            } else if has("deviceId") {
                all.push(format!("\"deviceId\" IN ({})", list(&f.gpus)));
            } else if table == libraries::OPENGL_WORKLOAD && has("gpu") {
                // OpenGL work is on the GPU its row names.
                all.push(format!("\"gpu\" IN ({})", list(&f.gpus)));
            } else if table == metrics::GPU_METRICS && has("typeId") {
                // The metric set's low byte is the GPU.
                all.push(format!("(\"typeId\" & 255) IN ({})", list(&f.gpus)));
            }
        }
        if let (Some(ids), cuda::KERNEL) = (&self.kernel_names, table) {
            let names = cuda::KERNEL_NAMES;
            let by = [names.short_name.name(), names.demangled_name.name()]
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

    /// The conditions that the NVTX ranges which may enclose a CUDA API
    /// call the filter keeps match: those of its processes, begun before the
    /// end of its time window (see `Report::for_each_thread_range`).
    pub(crate) fn thread_range_sql(&self) -> Vec<String> {
        let mut all = Vec::new();
        if let Some(f) = &self.filter {
            if let Some(end) = f.time.end {
                all.push(format!("\"start\" <= {end}"));
            }
            if !f.pids.is_empty() {
                all.push(format!("{} IN ({})", pid_sql("globalTid"), list(&f.pids)));
            }
        }
        all
    }
}

/// The conditions of `f`'s time window on the rows of `table` (times in
/// column `time`).
fn window_sql(report: &Report, f: &Filter, table: &str, time: &str) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    let t = quote(time);
    if let Some(start) = f.time.start {
        if report.schema.has_column(table, "end") && table != metrics::MEMORY_USAGE {
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

impl Report {
    /// Calls `f` with each CUDA API call outside the time window of
    /// `filter` that launched GPU work inside it which the filter's other
    /// conditions keep (a kernel running in the window, launched before
    /// it): that work is kept when its launch is inside a kept NVTX range,
    /// though the call itself is not in the trace. Calls that only repeat
    /// another (CUDA backtrace records) are left out: the call they repeat
    /// owns the launch.
    pub(crate) fn for_each_launch_outside_window<E: From<rusqlite::Error>>(
        &self,
        filter: &RowFilter,
        mut f: impl FnMut(OutsideLaunch) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(kept) = filter.filter() else {
            return Ok(());
        };
        if kept.time.is_everything() {
            return Ok(());
        }
        let (gpu, api) = (cuda::GPU, API);
        // The launches (pid, correlationId) of the GPU work kept.
        let launched: Vec<String> = cuda::GPU_OP_TABLES
            .into_iter()
            .filter(|t| {
                self.schema.has_column(t, gpu.correlation_id.name())
                    && self.schema.has_column(t, gpu.start.name())
            })
            .map(|table| {
                let mut sql = format!(
                    "SELECT {} AS pid, {} AS corr FROM {} WHERE {1} IS NOT NULL",
                    self.pid_column(table),
                    quote(gpu.correlation_id.name()),
                    quote(table)
                );
                let kept = filter.sql(self, table, "start");
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
            let start = s.take(api.start);
            s.take(api.end);
            let gtid = s.take(api.global_tid);
            let correlation = s.take(api.correlation_id);
            if s.missing().is_some() || !s.has(api.correlation_id.name()) {
                // The API reader says why it cannot read the table; calls
                // without correlation ids launched nothing known.
                continue;
            }
            let inside = window_sql(self, kept, table, "start").join(" AND ");
            let mut all = vec![
                format!("NOT COALESCE(({inside}), 0)"),
                format!(
                    "({}, \"correlationId\") IN (SELECT pid, corr FROM ({launched}))",
                    pid_sql("globalTid")
                ),
            ];
            if s.has(api.event_class.name()) {
                let repeats = list(&cuda::BACKTRACE_EVENT_CLASSES);
                all.push(format!(
                    "(\"eventClass\" IS NULL OR \"eventClass\" NOT IN ({repeats}))"
                ));
            }
            if !kept.pids.is_empty() {
                all.push(format!(
                    "{} IN ({})",
                    pid_sql("globalTid"),
                    list(&kept.pids)
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
                let Some(correlation_id) = correlation.get(r)? else {
                    continue;
                };
                f(OutsideLaunch {
                    pid: pid_of(gtid),
                    tid: tid_of(gtid),
                    start: start.get(r)?,
                    correlation_id,
                })?;
            }
        }
        Ok(())
    }
}

/// A CUDA API call outside the time window that launched GPU work inside it.
pub(crate) struct OutsideLaunch {
    pub pid: u32,
    pub tid: u32,
    pub start: i64,
    pub correlation_id: i64,
}

pub(crate) fn list<T: ToString>(values: &[T]) -> String {
    values
        .iter()
        .map(T::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
