//! A conversion's [`Filter`] as SQL conditions on the rows of each event
//! table, and the rows those conditions left out.

use std::sync::Arc;

use crate::filter::Filter;

use super::ids::pid_sql;
use super::select::quote;
use super::{cuda, metrics, nvtx, Report};

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
        let mut all: Vec<String> = Vec::new();
        let t = quote(time);
        if let Some(start) = f.time.start {
            if has("end") && table != metrics::MEMORY_USAGE {
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

fn list<T: ToString>(values: &[T]) -> String {
    values
        .iter()
        .map(T::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
