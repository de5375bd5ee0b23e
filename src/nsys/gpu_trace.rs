//! The rows of `cuda_gpu_trace`: every kernel, memory copy and memset in
//! start order, with its launch configuration or its sizes and memory
//! kinds, its device, context and stream, as nsys's report reads them: the
//! three tables one after another, sorted by start, so that operations of
//! one start come in nsys's order. SQLite sorts them, in its temporary
//! store past its cache: memory stays flat however many there are. Each
//! table is probed as every reader probes it: one without the columns its
//! rows need is noted unreadable and left out.

use super::columns::TakeAll;
use super::cuda::{GPU, KERNEL, KERNEL_COLUMNS, KERNEL_NAMES, MEMCPY, MEMCPY_COLUMNS};
use super::cuda::{MEMSET, MEMSET_COLUMNS};
use super::meta::GPUS;
use super::names::{memcpy_stats_name, COPY_KINDS, MEMORY_KINDS, MEMSET_STATS_NAME};
use super::select::{quote, Select};
use super::sorted_trace::{column_or_null, Joins, SortedTrace, TraceRow};
use super::{strings, Report};

/// One GPU operation, as the trace prints it.
pub(crate) struct GpuTraceRow {
    pub start: i64,
    pub end: i64,
    pub correlation_id: Option<i64>,
    /// A kernel's grid and block sizes.
    pub grid: [Option<i64>; 3],
    pub block: [Option<i64>; 3],
    pub registers_per_thread: Option<i64>,
    /// Bytes of a kernel's static and dynamic shared memory.
    pub static_shared: Option<i64>,
    pub dynamic_shared: Option<i64>,
    /// Bytes a copy or memset wrote.
    pub bytes: Option<i64>,
    /// A copy's source memory kind, or a memset's memory kind.
    pub source_kind: Option<String>,
    pub destination_kind: Option<String>,
    /// `NAME (ID)`.
    pub device: Option<String>,
    pub context_id: Option<i64>,
    pub stream_id: Option<i64>,
    /// A kernel's demangled name, or the operation's (`[CUDA memset]`).
    pub name: Option<String>,
}

/// The GPU operations of a report, in start order.
pub(crate) type GpuTrace = SortedTrace<GpuTraceRow>;

/// The order of the trace's tables in the union, which orders operations
/// of one start.
const TABLES: [&str; 3] = [KERNEL, MEMCPY, MEMSET];

impl Report {
    /// The trace of the kernels, copies and memsets; `None` where the
    /// export has none of their tables in a form it can read.
    pub(crate) fn gpu_trace(&self) -> rusqlite::Result<Option<GpuTrace>> {
        let mut parts = Vec::new();
        let mut empty = true;
        for table in TABLES {
            let Some((s, _)) = self.readable_select(table, |s| GPU.take_all(s)) else {
                continue;
            };
            parts.push(self.gpu_trace_part(&s));
            empty &= !self.has_rows(table)?;
        }
        if parts.is_empty() {
            return Ok(None);
        }
        let kinds = values(MEMORY_KINDS.iter().map(|k| (*k).to_owned()));
        let copies = values((0..COPY_KINDS.len() as i64).map(memcpy_stats_name));
        let sql = format!(
            "WITH mem_kinds (id, name) AS ({kinds}), copy_names (id, name) AS ({copies}) \
             SELECT * FROM ({}) ORDER BY 2",
            parts.join(" UNION ALL ")
        );
        SortedTrace::new(self, sql, empty).map(Some)
    }

    /// The SELECT of one table's operations, in the trace's columns.
    fn gpu_trace_part(&self, s: &Select) -> String {
        let table = s.table();
        let at = |column: &str| column_or_null("op", s.has(column), column);
        let mut joins = Joins::default();
        let device_id = at(GPU.device_id.name());
        let gpu_name = joins.column(
            self.schema.has_column(GPUS, "id") && self.schema.has_column(GPUS, "name"),
            format!(" LEFT JOIN {GPUS} AS gpu ON gpu.id == {device_id}"),
            "gpu.name",
        );
        let kind = |column: &str, alias: &str, joins: &mut Joins| {
            joins.column(
                s.has(column),
                format!(
                    " LEFT JOIN mem_kinds AS {alias} ON {alias}.id == {}",
                    at(column)
                ),
                format!("{alias}.name"),
            )
        };
        let index = TABLES.iter().position(|t| *t == table).unwrap_or(0);
        let (launch, bytes, source, destination, name) = match table {
            KERNEL => {
                let k = &KERNEL_COLUMNS;
                let launch = [
                    k.grid_x,
                    k.grid_y,
                    k.grid_z,
                    k.block_x,
                    k.block_y,
                    k.block_z,
                    k.registers_per_thread,
                    k.static_shared_memory,
                    k.dynamic_shared_memory,
                ]
                .map(|c| at(c.name()))
                .join(", ");
                let demangled = KERNEL_NAMES.demangled_name.name();
                let name = joins.column(
                    s.has(demangled) && self.schema.has_column(strings::TABLE, "value"),
                    format!(
                        " LEFT JOIN {} AS dmn ON dmn.id == {}",
                        strings::TABLE,
                        at(demangled)
                    ),
                    "dmn.value",
                );
                (
                    launch,
                    "NULL".to_owned(),
                    "NULL".to_owned(),
                    "NULL".to_owned(),
                    name,
                )
            }
            MEMCPY => {
                let c = &MEMCPY_COLUMNS;
                let source = kind(c.src_kind.name(), "src", &mut joins);
                let destination = kind(c.dst_kind.name(), "dst", &mut joins);
                let name = joins.column(
                    s.has(c.copy_kind.name()),
                    format!(
                        " LEFT JOIN copy_names AS copy ON copy.id == {}",
                        at(c.copy_kind.name())
                    ),
                    "copy.name",
                );
                (
                    launch_nulls(),
                    at(c.bytes.name()),
                    source,
                    destination,
                    name,
                )
            }
            _ => {
                let c = &MEMSET_COLUMNS;
                let source = kind(c.memory_kind.name(), "mk", &mut joins);
                let name = format!("'{MEMSET_STATS_NAME}'");
                (
                    launch_nulls(),
                    at(c.bytes.name()),
                    source,
                    "NULL".to_owned(),
                    name,
                )
            }
        };
        format!(
            "SELECT {index}, op.start, op.\"end\", {}, {launch}, {bytes}, {source}, {destination}, \
             printf('%s (%d)', {gpu_name}, {device_id}), {}, {}, {name} FROM {} AS op{joins}",
            at(GPU.correlation_id.name()),
            at(GPU.context_id.name()),
            at(GPU.stream_id.name()),
            quote(table),
        )
    }
}

/// The nine launch columns of an operation that is no kernel.
fn launch_nulls() -> String {
    ["NULL"; 9].join(", ")
}

/// A `VALUES` list of `(index, 'name')`, for a table of names by number.
fn values(names: impl Iterator<Item = String>) -> String {
    let rows: Vec<String> = names
        .enumerate()
        .map(|(i, name)| format!("({i}, '{}')", name.replace('\'', "''")))
        .collect();
    format!("VALUES {}", rows.join(", "))
}

impl TraceRow for GpuTraceRow {
    fn times(r: &rusqlite::Row<'_>) -> rusqlite::Result<(&'static str, i64, i64)> {
        Ok((TABLES[r.get::<_, usize>(0)?], r.get(1)?, r.get(2)?))
    }

    fn read(r: &rusqlite::Row<'_>, start: i64, end: i64) -> rusqlite::Result<Self> {
        Ok(GpuTraceRow {
            start,
            end,
            correlation_id: r.get(3)?,
            grid: [r.get(4)?, r.get(5)?, r.get(6)?],
            block: [r.get(7)?, r.get(8)?, r.get(9)?],
            registers_per_thread: r.get(10)?,
            static_shared: r.get(11)?,
            dynamic_shared: r.get(12)?,
            bytes: r.get(13)?,
            source_kind: r.get(14)?,
            destination_kind: r.get(15)?,
            device: r.get(16)?,
            context_id: r.get(17)?,
            stream_id: r.get(18)?,
            name: r.get(19)?,
        })
    }
}
