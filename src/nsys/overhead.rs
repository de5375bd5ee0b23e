//! What nsys records about itself: the time its profiling cost
//! (`PROFILER_OVERHEAD`, and CUPTI's own account in
//! `CUPTI_ACTIVITY_KIND_OVERHEAD`) and its diagnostic messages
//! (`DIAGNOSTIC_EVENT`), merged in time order.
//!
//! Their columns changed between versions (`returnValue` until 2025.3,
//! `overheadType` from 2026.1; `correlationId` in 2020.5), so all but the
//! times are optional.

use rustc_hash::FxHashMap;

use super::ids::{pid_of, tid_of};
use super::row_filter::RowFilter;
use super::scan::{order_key, OrderKey, TableScan};
use super::select::{Row, Select};
use super::Report;

pub(crate) const PROFILER_OVERHEAD: &str = "PROFILER_OVERHEAD";
pub(crate) const CUPTI_OVERHEAD: &str = "CUPTI_ACTIVITY_KIND_OVERHEAD";
pub(crate) const DIAGNOSTICS: &str = "DIAGNOSTIC_EVENT";

/// Where an overhead is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OverheadSource {
    /// `PROFILER_OVERHEAD`: nsys's own work (injection, buffer flushes, ...).
    Profiler,
    /// `CUPTI_ACTIVITY_KIND_OVERHEAD`: what CUPTI says it and CUDA cost.
    Cupti,
}

/// Time the profiler cost a thread.
pub(crate) struct Overhead<'r> {
    pub source: OverheadSource,
    pub start: i64,
    pub end: i64,
    /// `None` where the row names no thread.
    pub thread: Option<(u32, u32)>,
    /// As recorded (`CUPTI Buffer flush`); empty where the row names none.
    pub name: &'r str,
    /// `ENUM_CUPTI_OVERHEAD_TYPE` (nsys 2026.1 and later).
    pub overhead_type: Option<i64>,
    pub return_value: Option<i64>,
    pub correlation_id: Option<i64>,
}

/// A message nsys logged while profiling or analysing.
pub(crate) struct Diagnostic {
    pub ts: i64,
    /// The process it is about; `None` for the session as a whole.
    pub pid: Option<u32>,
    pub text: Option<String>,
    /// `ENUM_DIAGNOSTIC_SEVERITY_LEVEL`.
    pub severity: Option<i64>,
    /// `ENUM_DIAGNOSTIC_SOURCE_TYPE`.
    pub source: Option<i64>,
    /// `ENUM_DIAGNOSTIC_TIMESTAMP_SOURCE`: whose clock took the time.
    pub timestamp_type: Option<i64>,
}

pub(crate) enum NsysEvent<'r> {
    Overhead(Overhead<'r>),
    Diagnostic(Diagnostic),
}

/// The labels of the numbers these tables hold, by table; the export's own
/// `ENUM_` tables where it has them, else the values nsys 2025.3 uses.
pub(crate) struct NsysLabels {
    pub overhead_types: FxHashMap<i64, String>,
    pub severities: FxHashMap<i64, String>,
    pub sources: FxHashMap<i64, String>,
    pub timestamp_types: FxHashMap<i64, String>,
}

fn key(event: &NsysEvent) -> OrderKey {
    match event {
        NsysEvent::Overhead(o) => order_key(o.start, o.end),
        NsysEvent::Diagnostic(d) => order_key(d.ts, d.ts),
    }
}

impl Report {
    /// Calls `f` with every overhead and diagnostic that `filter` keeps, in
    /// time order.
    pub(crate) fn for_each_nsys_event<E: From<rusqlite::Error>>(
        &self,
        filter: &RowFilter,
        f: impl FnMut(NsysEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut scans = Vec::new();
        for (table, source) in [
            (PROFILER_OVERHEAD, OverheadSource::Profiler),
            (CUPTI_OVERHEAD, OverheadSource::Cupti),
        ] {
            scans.extend(self.overhead_scan(table, source));
        }
        scans.extend(self.diagnostic_scan());
        self.stream_events(scans, filter, f)
    }

    fn overhead_scan(
        &self,
        table: &str,
        source: OverheadSource,
    ) -> Option<TableScan<'_, NsysEvent<'_>>> {
        let declare = |s: &mut Select| {
            let start = s.required("start");
            let end = s.expected::<i64>("end");
            let gtid = s.expected::<i64>("globalTid");
            let name = s.expected("nameId");
            let overhead_type = s.optional("overheadType");
            let return_value = s.optional("returnValue");
            let correlation_id = s.optional("correlationId");
            let strings = &self.strings;
            move |r: &Row| {
                let start = start.get(r)?;
                Ok(NsysEvent::Overhead(Overhead {
                    source,
                    start,
                    end: end.get(r)?.unwrap_or(start),
                    thread: gtid.get(r)?.map(|g| (pid_of(g), tid_of(g))),
                    name: strings.name(name.get(r)?),
                    overhead_type: overhead_type.get(r)?,
                    return_value: return_value.get(r)?,
                    correlation_id: correlation_id.get(r)?,
                }))
            }
        };
        self.scan(table, declare, key)
    }

    fn diagnostic_scan(&self) -> Option<TableScan<'_, NsysEvent<'_>>> {
        let declare = |s: &mut Select| {
            let ts = s.required("timestamp");
            let gpid = s.expected::<i64>("globalPid");
            let text = s.expected("text");
            let severity = s.expected("severity");
            let source = s.expected("source");
            let timestamp_type = s.expected("timestampType");
            move |r: &Row| {
                Ok(NsysEvent::Diagnostic(Diagnostic {
                    ts: ts.get(r)?,
                    // nsys's own messages carry a globalPid of no process (pid 0).
                    pid: gpid.get(r)?.map(pid_of).filter(|&pid| pid != 0),
                    text: text.get(r)?,
                    severity: severity.get(r)?,
                    source: source.get(r)?,
                    timestamp_type: timestamp_type.get(r)?,
                }))
            }
        };
        self.scan(DIAGNOSTICS, declare, key)
            .map(|scan| scan.time("timestamp"))
    }

    /// The labels of overhead types and of diagnostics' severities, sources
    /// and timestamp types.
    pub(crate) fn nsys_labels(&self) -> rusqlite::Result<NsysLabels> {
        let fill = |defaults: &[&str]| -> FxHashMap<i64, String> {
            defaults
                .iter()
                .enumerate()
                .map(|(i, s)| (i as i64, (*s).to_owned()))
                .collect()
        };
        let mut labels = NsysLabels {
            overhead_types: fill(&[
                "Undefined",
                "Unknown",
                "Driver JIT compiler (CUDA)",
                "Buffer flush (Profiler)",
                "Instrumentation (Profiler)",
                "Resource creation/destruction (Profiler)",
                "Runtime module loading (CUDA)",
                "Lazy function loading (CUDA)",
                "Command buffer full (CUDA)",
            ]),
            severities: fill(&["Unknown", "Info", "Warning", "Error", "Verbose"]),
            sources: fill(&["Unknown source", "Injection", "Daemon", "Analysis"]),
            timestamp_types: fill(&["Unknown timestamp", "Target timestamp", "Host timestamp"]),
        };
        let tables: [(&str, &mut FxHashMap<i64, String>); 4] = [
            ("ENUM_CUPTI_OVERHEAD_TYPE", &mut labels.overhead_types),
            ("ENUM_DIAGNOSTIC_SEVERITY_LEVEL", &mut labels.severities),
            ("ENUM_DIAGNOSTIC_SOURCE_TYPE", &mut labels.sources),
            (
                "ENUM_DIAGNOSTIC_TIMESTAMP_SOURCE",
                &mut labels.timestamp_types,
            ),
        ];
        for (table, map) in tables {
            let Some(mut s) = self.select(table) else {
                continue;
            };
            let id = s.required("id");
            let label = s.required("label");
            if s.missing().is_some() {
                continue;
            }
            self.each_selected(&s, "\"label\" IS NOT NULL", |r| {
                map.insert(id.get(r)?, label.get(r)?);
                Ok(())
            })?;
        }
        Ok(labels)
    }
}
