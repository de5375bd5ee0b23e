//! Rows read for summaries, in table order: only the columns a summary
//! groups by and measures. No time order is needed to sum, so these read
//! straight through each table on the report's own connection.

use super::cuda::{repeats_a_call, GRAPH_TRACE, KERNEL, MEMCPY, MEMSET, RUNTIME};
use super::ids::pid_of;
use super::nvtx::{NVTXT_PUSH_POP, NVTXT_START_END, PUSH_POP, START_END, TABLE as NVTX};
use super::select::any_of;
use super::Report;

/// `OSRT_API.eventClass` of the calls themselves (the others are their
/// backtrace records).
const OSRT_CALL_CLASS: i64 = 27;

/// The OpenACC tables, one per kind of event (`..._LAUNCH`, `..._DATA`, `..._OTHER`).
const OPENACC_PREFIX: &str = "CUPTI_ACTIVITY_KIND_OPENACC_";
const CPU_PAGE_FAULTS: &str = "CUDA_UM_CPU_PAGE_FAULT_EVENTS";
/// The OpenMP tables, one per kind of event (`..._PARALLEL`, `..._TASK`, ...).
const OPENMP_PREFIX: &str = "OPENMP_EVENT_KIND_";

/// A CUDA runtime or driver API call.
pub struct ApiRow<'r> {
    pub name: &'r str,
    pub start: i64,
    pub end: i64,
    /// A record that repeats another call (to carry its backtrace).
    pub repeats_a_call: bool,
}

/// A whole CUDA graph as the GPU ran it.
pub struct GraphRow {
    pub graph_id: Option<i64>,
    pub start: i64,
    pub end: i64,
}

/// A kernel execution.
pub struct KernelRow<'r> {
    /// Demangled, or the short name where the export has no demangled one.
    pub name: &'r str,
    pub start: i64,
    pub end: i64,
}

/// A memory copy (with its `copyKind`) or a memset (`copy_kind` `None`).
pub struct MemoryRow {
    pub copy_kind: Option<i64>,
    pub bytes: i64,
    pub start: i64,
    pub end: i64,
}

/// An NVTX push/pop or start/end range.
pub struct RangeRow<'r> {
    /// `domain:text` in a named domain; the text alone in the default one.
    pub domain: Option<&'r str>,
    pub text: String,
    pub push_pop: bool,
    pub start: i64,
    /// `None` for a range still open when the capture stopped.
    pub end: Option<i64>,
}

impl Report {
    /// Calls `f` with each row of `CUPTI_ACTIVITY_KIND_RUNTIME` (which holds
    /// runtime and driver calls alike).
    pub(crate) fn each_api_row<'r>(
        &'r self,
        mut f: impl FnMut(ApiRow<'r>),
    ) -> rusqlite::Result<()> {
        let Some(mut s) = self.select(RUNTIME) else {
            return Ok(());
        };
        let start = s.required("start");
        let end = s.required("end");
        // Calls without their thread are unreadable, as in the CUDA stream.
        s.required::<i64>("globalTid");
        let name = s.optional("nameId");
        let event_class = s.optional("eventClass");
        if !self.readable(&s) {
            return Ok(());
        }
        let strings = &self.strings;
        self.each_selected(&s, "", |r| {
            f(ApiRow {
                name: strings.name(name.get(r)?),
                start: start.get(r)?,
                end: end.get(r)?,
                repeats_a_call: repeats_a_call(event_class.get(r)?),
            });
            Ok(())
        })
    }

    /// Calls `f` with each run of a whole CUDA graph (`--cuda-graph-trace=graph`).
    pub(crate) fn each_graph_row(&self, mut f: impl FnMut(GraphRow)) -> rusqlite::Result<()> {
        let Some(mut s) = self.select(GRAPH_TRACE) else {
            return Ok(());
        };
        let start = s.required("start");
        let end = s.required("end");
        let graph_id = s.optional("graphId");
        if !self.readable(&s) {
            return Ok(());
        }
        self.each_selected(&s, "", |r| {
            f(GraphRow {
                graph_id: graph_id.get(r)?,
                start: start.get(r)?,
                end: end.get(r)?,
            });
            Ok(())
        })
    }

    /// Calls `f` with each kernel execution.
    pub(crate) fn each_kernel_row<'r>(
        &'r self,
        mut f: impl FnMut(KernelRow<'r>),
    ) -> rusqlite::Result<()> {
        let Some(mut s) = self.select(KERNEL) else {
            return Ok(());
        };
        let start = s.required("start");
        let end = s.required("end");
        let demangled = s.optional("demangledName");
        let short = s.optional("shortName");
        if !self.readable(&s) {
            return Ok(());
        }
        let strings = &self.strings;
        self.each_selected(&s, "", |r| {
            let name = strings
                .lookup(demangled.get(r)?)
                .or_else(|| strings.lookup(short.get(r).ok()?))
                .unwrap_or("");
            f(KernelRow {
                name,
                start: start.get(r)?,
                end: end.get(r)?,
            });
            Ok(())
        })
    }

    /// Calls `f` with each memory copy, then each memset.
    pub(crate) fn each_memory_row(&self, mut f: impl FnMut(MemoryRow)) -> rusqlite::Result<()> {
        for table in [MEMCPY, MEMSET] {
            let Some(mut s) = self.select(table) else {
                continue;
            };
            let start = s.required("start");
            let end = s.required("end");
            let bytes = s.optional::<i64>("bytes");
            let copy_kind = match table {
                MEMCPY => Some(s.required::<Option<i64>>("copyKind")),
                _ => None,
            };
            if !self.readable(&s) {
                continue;
            }
            self.each_selected(&s, "", |r| {
                f(MemoryRow {
                    copy_kind: match copy_kind {
                        Some(kind) => Some(kind.get(r)?.unwrap_or(0)),
                        None => None,
                    },
                    bytes: bytes.get(r)?.unwrap_or(0),
                    start: start.get(r)?,
                    end: end.get(r)?,
                });
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Calls `f` with each OS runtime call (name, start, end), leaving out
    /// the records that only carry a call's backtrace.
    pub(crate) fn each_osrt_row(&self, mut f: impl FnMut(&str, i64, i64)) -> rusqlite::Result<()> {
        let Some(mut s) = self.select(super::cpu::OSRT) else {
            return Ok(());
        };
        let start = s.required("start");
        let end = s.required("end");
        let name = s.optional("nameId");
        if !self.readable(&s) {
            return Ok(());
        }
        let filter = match s.has("eventClass") {
            true => format!("\"eventClass\" = {OSRT_CALL_CLASS}"),
            false => String::new(),
        };
        let strings = &self.strings;
        self.each_selected(&s, &filter, |r| {
            f(strings.name(name.get(r)?), start.get(r)?, end.get(r)?);
            Ok(())
        })
    }

    /// Calls `f` with each NVTX push/pop and start/end range.
    pub(crate) fn each_range_row(&self, mut f: impl FnMut(RangeRow<'_>)) -> rusqlite::Result<()> {
        let Some(mut s) = self.select(NVTX) else {
            return Ok(());
        };
        let event_type = s.required::<i64>("eventType");
        let start = s.required("start");
        let end = s.optional("end");
        let gtid = s.optional::<i64>("globalTid");
        let domain = s.optional::<i64>("domainId");
        let text = s.optional::<String>("text");
        let text_id = s.optional("textId");
        if !self.readable(&s) {
            return Ok(());
        }
        let filter = any_of(
            "eventType",
            &[PUSH_POP, START_END, NVTXT_PUSH_POP, NVTXT_START_END],
        );
        let strings = &self.strings;
        let domains = &self.meta.nvtx_domains;
        self.each_selected(&s, &filter, |r| {
            let pid = gtid.get(r)?.map_or(0, pid_of);
            let domain = domain.get(r)?.unwrap_or(0);
            // A registered string wins over inline text, as in nsys.
            let text = match strings.lookup(text_id.get(r)?) {
                Some(t) => t.to_owned(),
                None => text.get(r)?.unwrap_or_default(),
            };
            f(RangeRow {
                domain: domains.get(&(pid, domain)).map(String::as_str),
                text,
                push_pop: matches!(event_type.get(r)?, PUSH_POP | NVTXT_PUSH_POP),
                start: start.get(r)?,
                end: end.get(r)?,
            });
            Ok(())
        })
    }

    /// The tables whose names start with `prefix` (and go on), sorted.
    fn tables_named(&self, prefix: &str) -> Vec<String> {
        let mut tables: Vec<String> = self
            .schema
            .tables()
            .filter(|t| t.starts_with(prefix) && t.len() > prefix.len())
            .map(str::to_owned)
            .collect();
        tables.sort_unstable();
        tables
    }

    /// Calls `f` with each OpenMP event of every `OPENMP_EVENT_KIND_*` table:
    /// the table, the event's name, start and end.
    pub(crate) fn each_openmp_row(
        &self,
        mut f: impl FnMut(&str, &str, i64, i64),
    ) -> rusqlite::Result<()> {
        for table in self.tables_named(OPENMP_PREFIX) {
            let Some(mut s) = self.select(&table) else {
                continue;
            };
            let start = s.required("start");
            let end = s.required("end");
            let name = s.optional("nameId");
            if !self.readable(&s) {
                continue;
            }
            let strings = &self.strings;
            self.each_selected(&s, "", |r| {
                f(
                    &table,
                    strings.name(name.get(r)?),
                    start.get(r)?,
                    end.get(r)?,
                );
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Calls `f` with each OpenACC event of every `CUPTI_ACTIVITY_KIND_OPENACC_*`
    /// table: its name, source file and line (where recorded), start and end.
    pub(crate) fn each_openacc_row(
        &self,
        mut f: impl FnMut(&str, Option<&str>, Option<i64>, i64, i64),
    ) -> rusqlite::Result<()> {
        for table in self.tables_named(OPENACC_PREFIX) {
            let Some(mut s) = self.select(&table) else {
                continue;
            };
            let start = s.required("start");
            let end = s.required("end");
            let name = s.optional("nameId");
            let file = s.optional("srcFile");
            let line = s.optional("lineNo");
            if !self.readable(&s) {
                continue;
            }
            let strings = &self.strings;
            self.each_selected(&s, "", |r| {
                f(
                    strings.name(name.get(r)?),
                    strings.lookup(file.get(r)?),
                    line.get(r)?,
                    start.get(r)?,
                    end.get(r)?,
                );
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Calls `f` with the faulting CPU instruction (its address as text) of
    /// each unified-memory CPU page fault.
    pub(crate) fn each_cpu_page_fault(
        &self,
        mut f: impl FnMut(Option<&str>),
    ) -> rusqlite::Result<()> {
        let Some(mut s) = self.select(CPU_PAGE_FAULTS) else {
            return Ok(());
        };
        let instruction = s.optional("CpuInstruction");
        if !self.readable(&s) {
            return Ok(());
        }
        let strings = &self.strings;
        self.each_selected(&s, "", |r| {
            f(strings.lookup(instruction.get(r)?));
            Ok(())
        })
    }
}
