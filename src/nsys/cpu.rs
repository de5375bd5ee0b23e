//! The CPU side of a report: OS runtime calls (`OSRT_API`), context switches
//! (`SCHED_EVENTS`) and CPU samples (`COMPOSITE_EVENTS`), each in time order,
//! and the call chains of calls and samples.

use rusqlite::Row;

use super::ids::{pid_of, tid_of};
use super::scan::{order_key, NoPrescan, OrderKey, Streamed, TableScan};
use super::strings::StringTable;
use super::Report;

pub const OSRT: &str = "OSRT_API";
pub const OSRT_CALLCHAINS: &str = "OSRT_CALLCHAINS";
pub const SCHED: &str = "SCHED_EVENTS";
pub const SAMPLES: &str = "COMPOSITE_EVENTS";
pub const SAMPLE_CALLCHAINS: &str = "SAMPLING_CALLCHAINS";

/// An OS runtime call (libc, pthread, ioctl, ...).
pub struct OsrtCall<'r> {
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
pub struct SchedEvent {
    pub start: i64,
    pub cpu: u32,
    pub sched_in: bool,
    pub pid: u32,
    pub tid: u32,
    /// `ENUM_SAMPLING_THREAD_STATE` of a thread scheduled out (nsys 2024.5+).
    pub thread_state: Option<i64>,
}

/// A CPU sample of a thread; its stack is `SAMPLING_CALLCHAINS` rows of `id`.
#[derive(Clone, Copy, Debug)]
pub struct CpuSample {
    pub id: i64,
    pub start: i64,
    pub pid: u32,
    pub tid: u32,
    pub cpu: Option<u32>,
}

/// A frame of a call chain: StringIds of its function and module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainFrame {
    pub symbol: i64,
    pub module: i64,
}

impl Report {
    /// Calls `f` with every OS runtime call, in time order.
    pub fn for_each_osrt_call<E: From<rusqlite::Error>>(
        &self,
        mut f: impl FnMut(OsrtCall<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(scan) = self.scan(
            OSRT,
            &["start", "end", "globalTid", "nameId"],
            &[
                "start",
                "end",
                "globalTid",
                "nameId",
                "returnValue",
                "callchainId",
            ],
            decode_osrt,
            |c: &OsrtCall| order_key(c.start, c.end),
        ) else {
            return Ok(());
        };
        self.stream(vec![scan], NoPrescan, |item| match item {
            Streamed::Prescanned(()) => Ok(()),
            Streamed::Event(call) => f(call),
        })
    }

    /// Calls `f` with every scheduling event, in time order.
    pub fn for_each_sched_event<E: From<rusqlite::Error>>(
        &self,
        mut f: impl FnMut(SchedEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(scan) = self.scan(
            SCHED,
            &["start", "cpu", "isSchedIn", "globalTid"],
            &["start", "cpu", "isSchedIn", "globalTid", "threadState"],
            decode_sched,
            |e: &SchedEvent| order_key(e.start, e.start),
        ) else {
            return Ok(());
        };
        self.stream(vec![scan], NoPrescan, |item| match item {
            Streamed::Prescanned(()) => Ok(()),
            Streamed::Event(e) => f(e),
        })
    }

    /// Calls `f` with every CPU sample, in time order.
    pub fn for_each_cpu_sample<E: From<rusqlite::Error>>(
        &self,
        mut f: impl FnMut(CpuSample) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(scan) = self.scan(
            SAMPLES,
            &["id", "start", "globalTid"],
            &["id", "start", "globalTid", "cpu"],
            decode_sample,
            |s: &CpuSample| order_key(s.start, s.start),
        ) else {
            return Ok(());
        };
        self.stream(vec![scan], NoPrescan, |item| match item {
            Streamed::Prescanned(()) => Ok(()),
            Streamed::Event(s) => f(s),
        })
    }

    /// The frames of call chain `id` of `table` (`OSRT_CALLCHAINS` or
    /// `SAMPLING_CALLCHAINS`), innermost first, into `out`.
    pub fn callchain(
        &self,
        table: &str,
        id: i64,
        out: &mut Vec<ChainFrame>,
    ) -> rusqlite::Result<()> {
        out.clear();
        if !self.schema.has_table(table) {
            return Ok(());
        }
        let conn = self.conn();
        // (id, stackDepth) is the table's primary key: one index lookup.
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT symbol, module FROM {table} WHERE id = ?1 ORDER BY stackDepth"
        ))?;
        let mut rows = stmt.query([id])?;
        while let Some(row) = rows.next()? {
            out.push(ChainFrame {
                symbol: row.get(0)?,
                module: row.get(1)?,
            });
        }
        Ok(())
    }

    /// A scan of `table` reading `columns` (NULL where absent), or `None`
    /// when the table or one of the `required` columns is missing.
    fn scan<'r, T>(
        &'r self,
        table: &str,
        required: &[&str],
        columns: &[&str],
        decode: fn(&'r StringTable, &Row) -> rusqlite::Result<T>,
        key: fn(&T) -> OrderKey,
    ) -> Option<TableScan<'r, T>> {
        if !self.readable(table, required) {
            return None;
        }
        let columns: Vec<String> = columns
            .iter()
            .map(|c| self.schema.column_or_null(table, c))
            .collect();
        Some(TableScan {
            table: table.to_owned(),
            time: "start",
            columns: columns.join(", "),
            filter: String::new(),
            decode,
            key,
            prescan: String::new(),
        })
    }
}

fn decode_osrt<'r>(strings: &'r StringTable, r: &Row<'_>) -> rusqlite::Result<OsrtCall<'r>> {
    let gtid: i64 = r.get(2)?;
    Ok(OsrtCall {
        start: r.get(0)?,
        end: r.get(1)?,
        pid: pid_of(gtid),
        tid: tid_of(gtid),
        name: r
            .get::<_, Option<i64>>(3)?
            .and_then(|id| strings.get(id))
            .unwrap_or(""),
        return_value: r.get(4)?,
        callchain: r.get(5)?,
    })
}

fn decode_sched(_: &StringTable, r: &Row<'_>) -> rusqlite::Result<SchedEvent> {
    let gtid = r.get::<_, Option<i64>>(3)?.unwrap_or(0);
    Ok(SchedEvent {
        start: r.get(0)?,
        cpu: r.get::<_, i64>(1)? as u32,
        sched_in: r.get::<_, i64>(2)? != 0,
        pid: pid_of(gtid),
        tid: tid_of(gtid),
        thread_state: r.get(4)?,
    })
}

fn decode_sample(_: &StringTable, r: &Row<'_>) -> rusqlite::Result<CpuSample> {
    let gtid = r.get::<_, Option<i64>>(2)?.unwrap_or(0);
    Ok(CpuSample {
        id: r.get(0)?,
        start: r.get(1)?,
        pid: pid_of(gtid),
        tid: tid_of(gtid),
        cpu: r.get::<_, Option<i64>>(3)?.map(|c| c as u32),
    })
}
