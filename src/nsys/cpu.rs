//! The CPU side of a report: OS runtime calls (`OSRT_API`), context switches
//! (`SCHED_EVENTS`) and CPU samples (`COMPOSITE_EVENTS`), each in time order,
//! and the call chains of calls and samples.

use super::columns::{columns, TakeAll};
use super::ids::{pid_of, tid_of};
use super::row_filter::RowFilter;
use super::scan::order_key;
use super::select::{quote, Row, Select};
use super::Report;

pub(crate) const OSRT: &str = "OSRT_API";

columns! {
    /// The columns of [`OSRT`]: calls of a thread, each with a name column.
    pub(crate) struct OsrtColumns = OSRT_COLUMNS {
        start: i64 = required("start"),
        end: i64 = required("end"),
        global_tid: i64 = required("globalTid"),
        name_id: Option<i64> = required("nameId"),
        return_value: Option<i64> = expected("returnValue"),
        callchain_id: Option<i64> = optional("callchainId"),
        event_class: Option<i64> = expected("eventClass"),
    }
}
pub(crate) const OSRT_CALLCHAINS: &str = "OSRT_CALLCHAINS";
pub(crate) const SCHED: &str = "SCHED_EVENTS";
pub(crate) const SAMPLES: &str = "COMPOSITE_EVENTS";
pub(crate) const SAMPLE_CALLCHAINS: &str = "SAMPLING_CALLCHAINS";

/// An OS runtime call (libc, pthread, ioctl, ...).
pub(crate) struct OsrtCall<'r> {
    pub start: i64,
    pub end: i64,
    pub pid: u32,
    pub tid: u32,
    pub name: &'r str,
    pub return_value: Option<i64>,
    /// Its stack in `OSRT_CALLCHAINS`, when recorded.
    pub callchain: Option<i64>,
}

/// A thread scheduled in or out of a CPU.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SchedEvent {
    pub start: i64,
    /// As recorded: a damaged export may name any number.
    pub cpu: i64,
    pub sched_in: bool,
    pub pid: u32,
    pub tid: u32,
    /// `ENUM_SAMPLING_THREAD_STATE` of a thread scheduled out (nsys 2024.5+).
    pub thread_state: Option<i64>,
}

/// A CPU sample of a thread; its stack is `SAMPLING_CALLCHAINS` rows of `id`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CpuSample {
    pub id: i64,
    pub start: i64,
    pub pid: u32,
    pub tid: u32,
    /// As recorded: a damaged export may name any number.
    pub cpu: Option<i64>,
}

/// A frame of a call chain: StringIds of its function and module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChainFrame {
    pub symbol: i64,
    pub module: i64,
}

impl Report {
    /// Calls `f` with every OS runtime call that `filter` keeps, in time order.
    pub(crate) fn for_each_osrt_call<E: From<rusqlite::Error>>(
        &self,
        filter: &RowFilter,
        f: impl FnMut(OsrtCall<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let declare = |s: &mut Select| {
            let c = OSRT_COLUMNS.take_all(s);
            let strings = &self.strings;
            move |r: &Row| {
                let gtid = c.global_tid.get(r)?;
                Ok(OsrtCall {
                    start: c.start.get(r)?,
                    end: c.end.get(r)?,
                    pid: pid_of(gtid),
                    tid: tid_of(gtid),
                    name: strings.name(c.name_id.get(r)?),
                    return_value: c.return_value.get(r)?,
                    callchain: c.callchain_id.get(r)?,
                })
            }
        };
        let key = |c: &OsrtCall| order_key(c.start, c.end);
        let scan = self.scan(OSRT, declare, key);
        self.stream_events(scan.into_iter().collect(), filter, f)
    }

    /// Calls `f` with every scheduling event that `filter` keeps, in time order.
    pub(crate) fn for_each_sched_event<E: From<rusqlite::Error>>(
        &self,
        filter: &RowFilter,
        f: impl FnMut(SchedEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        let declare = |s: &mut Select| {
            let start = s.required("start");
            let cpu = s.required::<i64>("cpu");
            let sched_in = s.required::<i64>("isSchedIn");
            let gtid = s.required::<Option<i64>>("globalTid");
            let thread_state = s.optional("threadState");
            move |r: &Row| {
                let gtid = gtid.get(r)?.unwrap_or(0);
                Ok(SchedEvent {
                    start: start.get(r)?,
                    cpu: cpu.get(r)?,
                    sched_in: sched_in.get(r)? != 0,
                    pid: pid_of(gtid),
                    tid: tid_of(gtid),
                    thread_state: thread_state.get(r)?,
                })
            }
        };
        let key = |e: &SchedEvent| order_key(e.start, e.start);
        let scan = self.scan(SCHED, declare, key);
        self.stream_events(scan.into_iter().collect(), filter, f)
    }

    /// Calls `f` with every CPU sample that `filter` keeps, in time order.
    pub(crate) fn for_each_cpu_sample<E: From<rusqlite::Error>>(
        &self,
        filter: &RowFilter,
        f: impl FnMut(CpuSample) -> Result<(), E>,
    ) -> Result<(), E> {
        let declare = |s: &mut Select| {
            let id = s.required("id");
            let start = s.required("start");
            let gtid = s.required::<Option<i64>>("globalTid");
            let cpu = s.optional::<i64>("cpu");
            move |r: &Row| {
                let gtid = gtid.get(r)?.unwrap_or(0);
                Ok(CpuSample {
                    id: id.get(r)?,
                    start: start.get(r)?,
                    pid: pid_of(gtid),
                    tid: tid_of(gtid),
                    cpu: cpu.get(r)?,
                })
            }
        };
        let key = |s: &CpuSample| order_key(s.start, s.start);
        let scan = self.scan(SAMPLES, declare, key);
        self.stream_events(scan.into_iter().collect(), filter, f)
    }

    /// The frames of call chain `id` of `table` (`OSRT_CALLCHAINS` or
    /// `SAMPLING_CALLCHAINS`), innermost first, into `out`.
    pub(crate) fn callchain(
        &self,
        table: &str,
        id: i64,
        out: &mut Vec<ChainFrame>,
    ) -> rusqlite::Result<()> {
        out.clear();
        if !self.schema.has_table(table) {
            return Ok(());
        }
        let missing = (self.schema).lacking(table, &["id", "stackDepth", "symbol", "module"]);
        if !missing.is_empty() {
            // The calls keep their place and time, without their stacks.
            self.note_unreadable(table, missing.join(", "));
            return Ok(());
        }
        let conn = self.conn();
        // (id, stackDepth) is the table's primary key: one index lookup.
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT symbol, module FROM {} WHERE id = ?1 ORDER BY stackDepth",
            quote(table)
        ))?;
        let mut rows = stmt.query([id])?;
        while let Some(row) = rows.next()? {
            out.push(ChainFrame {
                symbol: row.get("symbol")?,
                module: row.get("module")?,
            });
        }
        Ok(())
    }
}
