//! Rows read for summaries, in table order: only the columns a summary
//! groups by and measures. No time order is needed to sum, so these read
//! straight through each table on the report's own connection.

use super::cpu::{OSRT, OSRT_COLUMNS};
use super::cuda::{repeats_a_call, GRAPH_TRACE, GRAPH_TRACE_COLUMNS, MEMSET_COLUMNS, RUNTIME};
use super::cuda::{API, GPU, KERNEL, KERNEL_NAMES, MEMCPY, MEMCPY_COLUMNS, MEMSET};
use super::ids::pid_of;
use super::libraries::{arg_columns, CallCols, Library};
use super::metrics::{CPU_FAULTS, UM_CPU_FAULTS};
use super::nvtx::TABLE as NVTX_TABLE;
use super::nvtx::{RangeCols, NVTXT_PUSH_POP, NVTXT_START_END, PUSH_POP, START_END};
use super::select::{any_of, quote, Row, Select};
use super::Report;

/// `OSRT_API.eventClass` of the calls themselves (the others are their
/// backtrace records).
const OSRT_CALL_CLASS: i64 = 27;

/// A CUDA runtime or driver API call.
pub(crate) struct ApiRow<'r> {
    pub name: &'r str,
    pub start: i64,
    pub end: i64,
    /// A record that repeats another call (to carry its backtrace).
    pub repeats_a_call: bool,
}

/// A whole CUDA graph as the GPU ran it.
pub(crate) struct GraphRow {
    pub graph_id: Option<i64>,
    pub start: i64,
    pub end: i64,
}

/// A kernel execution.
pub(crate) struct KernelRow<'r> {
    /// Demangled, or the short name where the export has no demangled one.
    pub name: &'r str,
    pub start: i64,
    pub end: i64,
}

/// A memory copy (with its `copyKind`) or a memset (`copy_kind` `None`).
pub(crate) struct MemoryRow {
    pub copy_kind: Option<i64>,
    pub bytes: i64,
    pub start: i64,
    pub end: i64,
}

/// An NVTX push/pop or start/end range.
pub(crate) struct RangeRow<'r> {
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
    pub(crate) fn each_api_row(&self, mut f: impl FnMut(ApiRow<'_>)) -> rusqlite::Result<()> {
        self.each_row(RUNTIME, "", |s| {
            let start = s.take(API.start);
            let end = s.take(API.end);
            // Calls without their thread are unreadable, as in the CUDA stream.
            s.take(API.global_tid);
            let name = s.take(API.name_id);
            let event_class = s.take(API.event_class);
            let strings = &self.strings;
            move |r: &Row| {
                f(ApiRow {
                    name: strings.name(name.get(r)?),
                    start: start.get(r)?,
                    end: end.get(r)?,
                    repeats_a_call: repeats_a_call(event_class.get(r)?),
                });
                Ok(())
            }
        })
    }

    /// Calls `f` with each run of a whole CUDA graph (`--cuda-graph-trace=graph`).
    pub(crate) fn each_graph_row(&self, mut f: impl FnMut(GraphRow)) -> rusqlite::Result<()> {
        self.each_row(GRAPH_TRACE, "", |s| {
            let start = s.take(GPU.start);
            let end = s.take(GPU.end);
            let graph_id = s.take(GRAPH_TRACE_COLUMNS.graph_id);
            move |r: &Row| {
                f(GraphRow {
                    graph_id: graph_id.get(r)?,
                    start: start.get(r)?,
                    end: end.get(r)?,
                });
                Ok(())
            }
        })
    }

    /// Calls `f` with each kernel execution.
    pub(crate) fn each_kernel_row(&self, mut f: impl FnMut(KernelRow<'_>)) -> rusqlite::Result<()> {
        self.each_row(KERNEL, "", |s| {
            let start = s.take(GPU.start);
            let end = s.take(GPU.end);
            let demangled = s.take(KERNEL_NAMES.demangled_name);
            let short = s.take(KERNEL_NAMES.short_name);
            let strings = &self.strings;
            move |r: &Row| {
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
            }
        })
    }

    /// Calls `f` with each memory copy, then each memset.
    pub(crate) fn each_memory_row(&self, mut f: impl FnMut(MemoryRow)) -> rusqlite::Result<()> {
        for table in [MEMCPY, MEMSET] {
            self.each_row(table, "", |s| {
                let start = s.take(GPU.start);
                let end = s.take(GPU.end);
                let (bytes, copy_kind) = match table {
                    MEMCPY => (
                        s.take(MEMCPY_COLUMNS.bytes),
                        Some(s.take(MEMCPY_COLUMNS.copy_kind)),
                    ),
                    _ => (s.take(MEMSET_COLUMNS.bytes), None),
                };
                let f = &mut f;
                move |r: &Row| {
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
                }
            })?;
        }
        Ok(())
    }

    /// Calls `f` with each OS runtime call (name, start, end), leaving out
    /// the records that only carry a call's backtrace.
    pub(crate) fn each_osrt_row(&self, mut f: impl FnMut(&str, i64, i64)) -> rusqlite::Result<()> {
        let class = OSRT_COLUMNS.event_class.name();
        let filter = match self.has_column(OSRT, class) {
            true => format!("{} = {OSRT_CALL_CLASS}", quote(class)),
            false => {
                // Every version writes it: without it, the records that only
                // carry a backtrace are counted as calls.
                self.note_read_without(OSRT, [class]);
                String::new()
            }
        };
        let strings = &self.strings;
        self.each_row(OSRT, &filter, |s| {
            let start = s.take(OSRT_COLUMNS.start);
            let end = s.take(OSRT_COLUMNS.end);
            let name = s.take(OSRT_COLUMNS.name_id);
            move |r: &Row| {
                f(strings.name(name.get(r)?), start.get(r)?, end.get(r)?);
                Ok(())
            }
        })
    }

    /// Calls `f` with each NVTX push/pop and start/end range.
    pub(crate) fn each_range_row(&self, mut f: impl FnMut(RangeRow<'_>)) -> rusqlite::Result<()> {
        let filter = any_of(
            "eventType",
            &[PUSH_POP, START_END, NVTXT_PUSH_POP, NVTXT_START_END],
        );
        let strings = &self.strings;
        let domains = &self.meta.nvtx_domains;
        self.each_row(NVTX_TABLE, &filter, |s| {
            let c = RangeCols::take(s);
            move |r: &Row| {
                let pid = pid_of(c.global_tid.get(r)?);
                let domain = c.domain_id.get(r)?.unwrap_or(0);
                // A registered string wins over inline text, as in nsys.
                let text = match strings.lookup(c.text_id.get(r)?) {
                    Some(t) => t.to_owned(),
                    None => c.text.get(r)?.unwrap_or_default(),
                };
                f(RangeRow {
                    domain: domains.get(&(pid, domain)).map(String::as_str),
                    text,
                    push_pop: matches!(c.event_type.get(r)?, PUSH_POP | NVTXT_PUSH_POP),
                    start: c.start.get(r)?,
                    end: c.end.get(r)?,
                });
                Ok(())
            }
        })
    }

    /// The tables of `library` with the columns of a call taken into
    /// their `Select`, less those that cannot be read.
    fn library_selects(&self, library: Library) -> Vec<(Select<'_>, CallCols)> {
        self.library_tables()
            .into_iter()
            .filter(|(l, _)| *l == library)
            .filter_map(|(_, table)| {
                let mut s = Select::new(&self.schema, &table);
                let call = self.library_call_columns(&mut s)?;
                Some((s, call))
            })
            .collect()
    }

    /// Calls `f` with each OpenMP event of every `OPENMP_EVENT_KIND_*` table:
    /// the table, the event's name, start and end.
    pub(crate) fn each_openmp_row(
        &self,
        mut f: impl FnMut(&str, &str, i64, i64),
    ) -> rusqlite::Result<()> {
        for (s, call) in self.library_selects(Library::OpenMp) {
            let strings = &self.strings;
            self.each_selected(&s, "", |r| {
                let start = call.start.get(r)?;
                f(
                    s.table(),
                    strings.name(call.name.get(r)?),
                    start,
                    call.end.get(r)?.unwrap_or(start),
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
        for (mut s, call) in self.library_selects(Library::OpenAcc) {
            let file = s.first_of(arg_columns("file"));
            let line = s.first_of(arg_columns("line"));
            let strings = &self.strings;
            self.each_selected(&s, "", |r| {
                let start = call.start.get(r)?;
                f(
                    strings.name(call.name.get(r)?),
                    strings.lookup(file.get(r)?),
                    line.get(r)?,
                    start,
                    call.end.get(r)?.unwrap_or(start),
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
        self.each_row(UM_CPU_FAULTS, "", |s| {
            let instruction = s.take(CPU_FAULTS.cpu_instruction);
            let strings = &self.strings;
            move |r: &Row| {
                f(strings.lookup(instruction.get(r)?));
                Ok(())
            }
        })
    }
}
