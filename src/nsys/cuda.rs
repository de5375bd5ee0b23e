//! CUDA API calls and GPU activity, read as one stream in time order.
//!
//! The tables are merged in time order (see `scan`), so a launch always comes
//! before the work it launched.

use rusqlite::Row;
use rustc_hash::FxHashMap;

use super::ids::{pid_of, pid_sql, tid_of};
use super::scan::{order_key, OrderKey, Prescan, Streamed, TableScan};
use super::strings::StringTable;
use super::Report;

pub const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
pub const DRIVER: &str = "CUPTI_ACTIVITY_KIND_DRIVER";
pub const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
pub const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
pub const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
pub const CALLCHAINS: &str = "CUDA_CALLCHAINS";
pub const SYNC: &str = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";

/// Tables of GPU operations that API calls launch.
/// Whole CUDA graphs as the GPU ran them (`--cuda-graph-trace=graph`).
pub const GRAPH_TRACE: &str = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
pub const GPU_OP_TABLES: [&str; 4] = [KERNEL, MEMCPY, MEMSET, GRAPH_TRACE];

/// A CUDA runtime or driver API call.
pub struct ApiCall<'r> {
    pub start: i64,
    pub end: i64,
    pub pid: u32,
    pub tid: u32,
    pub correlation_id: Option<i64>,
    /// As recorded, version suffix included (`cudaLaunchKernel_v7000`).
    pub name: &'r str,
    pub return_value: Option<i64>,
    /// A record that repeats another call (to carry its backtrace).
    pub repeats_a_call: bool,
    /// GPU operations of the report with this call's (pid, correlationId).
    pub gpu_ops: u32,
    /// Its stack in `CUDA_CALLCHAINS`, when recorded.
    pub callchain: Option<i64>,
}

/// Where GPU work ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GpuPlace {
    pub device: i64,
    /// `None` when the export says neither (trimmed exports without globalPid
    /// and with several processes).
    pub pid: Option<u32>,
    pub context: Option<i64>,
    pub stream: i64,
}

pub struct GpuCommon {
    pub start: i64,
    pub end: i64,
    pub place: GpuPlace,
    pub correlation_id: Option<i64>,
    /// `greenContextId`; `None` for work outside green contexts.
    pub green_context: Option<i64>,
    pub graph_node: Option<i64>,
}

/// A place with GPU work, and the green contexts its work ran in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlaceWork {
    pub place: GpuPlace,
    /// Distinct `greenContextId`s of the place's work, in ascending order.
    pub green_contexts: Vec<i64>,
}

pub struct Kernel<'r> {
    pub common: GpuCommon,
    pub short_name: &'r str,
    pub demangled_name: Option<&'r str>,
    pub grid: [Option<i64>; 3],
    pub block: [Option<i64>; 3],
    pub registers_per_thread: Option<i64>,
    pub static_shared_memory: Option<i64>,
    pub dynamic_shared_memory: Option<i64>,
    pub local_memory_per_thread: Option<i64>,
    pub local_memory_total: Option<i64>,
    pub launch_type: Option<i64>,
    pub graph_id: Option<i64>,
}

pub struct Memcpy {
    pub common: GpuCommon,
    pub bytes: Option<i64>,
    pub copy_kind: Option<i64>,
    pub src_kind: Option<i64>,
    pub dst_kind: Option<i64>,
}

pub struct Memset {
    pub common: GpuCommon,
    pub bytes: Option<i64>,
    pub value: Option<i64>,
    pub memory_kind: Option<i64>,
}

/// A whole CUDA graph run on a stream, in graph trace mode.
pub struct GraphRun {
    pub common: GpuCommon,
    pub graph_id: Option<i64>,
    pub graph_exec_id: Option<i64>,
}

pub struct Sync {
    pub common: GpuCommon,
    pub sync_type: Option<i64>,
    pub event_id: Option<i64>,
}

/// Events are moved several times on their way (sorted within a batch, sent to
/// the converting thread): kernels, the largest, are boxed to keep the others small.
pub enum CudaEvent<'r> {
    Api(ApiCall<'r>),
    Kernel(Box<Kernel<'r>>),
    Memcpy(Memcpy),
    Memset(Memset),
    Sync(Sync),
    Graph(GraphRun),
}

impl CudaEvent<'_> {
    /// (start, end) as recorded.
    pub fn span(&self) -> (i64, i64) {
        match self {
            CudaEvent::Api(a) => (a.start, a.end),
            CudaEvent::Kernel(k) => (k.common.start, k.common.end),
            CudaEvent::Memcpy(m) => (m.common.start, m.common.end),
            CudaEvent::Memset(m) => (m.common.start, m.common.end),
            CudaEvent::Sync(s) => (s.common.start, s.common.end),
            CudaEvent::Graph(g) => (g.common.start, g.common.end),
        }
    }
}

type Decode = for<'r> fn(&'r StringTable, &Row) -> rusqlite::Result<CudaEvent<'r>>;

fn key(event: &CudaEvent) -> OrderKey {
    let (start, end) = event.span();
    order_key(start, end)
}

impl Report {
    /// Calls `f` first with every place that has GPU activity (sorted), then
    /// with every CUDA event of the report, in time order.
    pub fn for_each_cuda_event<E>(
        &self,
        f: impl FnMut(Streamed<CudaEvent<'_>, Vec<PlaceWork>>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<rusqlite::Error>,
    {
        // GPU activity tables come first: their pre-scan finds the places and
        // counts the work of each launch, before any call is read.
        let mut scans = self.gpu_scans();
        let gpu_tables = scans.len();
        scans.extend(self.api_scans());
        self.stream(
            scans,
            GpuPrescan {
                gpu_tables,
                ..Default::default()
            },
            f,
        )
    }

    fn api_scans(&self) -> Vec<TableScan<'_, CudaEvent<'_>>> {
        let mut scans = Vec::new();
        for table in [RUNTIME, DRIVER] {
            if !self.readable(table, &["start", "end", "globalTid"]) {
                continue;
            }
            let c = |col| self.schema.column_or_null(table, col);
            let columns = format!(
                "start, \"end\", globalTid, {}, {}, {}, {}, {}",
                c("correlationId"),
                c("nameId"),
                c("returnValue"),
                c("eventClass"),
                c("callchainId")
            );
            scans.push(TableScan {
                table: table.to_owned(),
                time: "start",
                columns,
                filter: String::new(),
                decode: decode_api,
                key,
                prescan: String::new(),
            });
        }
        scans
    }

    fn gpu_scans(&self) -> Vec<TableScan<'_, CudaEvent<'_>>> {
        let kernel = [
            "shortName",
            "demangledName",
            "gridX",
            "gridY",
            "gridZ",
            "blockX",
            "blockY",
            "blockZ",
            "registersPerThread",
            "staticSharedMemory",
            "dynamicSharedMemory",
            "localMemoryPerThread",
            "localMemoryTotal",
            "launchType",
            "graphId",
        ];
        let tables: [(&str, &[&str], Decode); 5] = [
            (KERNEL, &kernel, decode_kernel),
            (
                MEMCPY,
                &["bytes", "copyKind", "srcKind", "dstKind"],
                decode_memcpy,
            ),
            (MEMSET, &["bytes", "value", "memKind"], decode_memset),
            (SYNC, &["syncType", "eventId"], decode_sync),
            (GRAPH_TRACE, &["graphId", "graphExecId"], decode_graph),
        ];
        let mut scans = Vec::new();
        for (table, extra, decode) in tables {
            if !self.readable(table, &["start", "end", "streamId"]) {
                continue;
            }
            let mut columns = vec![
                "start".to_owned(),
                "\"end\"".to_owned(),
                self.schema.column_or_null(table, "deviceId"),
                self.pid_column(table),
                self.schema.column_or_null(table, "contextId"),
                "streamId".to_owned(),
                self.schema.column_or_null(table, "correlationId"),
                self.schema.column_or_null(table, "greenContextId"),
                self.schema.column_or_null(table, "graphNodeId"),
            ];
            columns.extend(extra.iter().map(|c| self.schema.column_or_null(table, c)));
            // The pre-scan reads where the work ran and, for launched work, its launch.
            let launch = match GPU_OP_TABLES.contains(&table) {
                true => self.schema.column_or_null(table, "correlationId"),
                false => "NULL".to_owned(),
            };
            let prescan = format!(", {}, {launch}, {}", columns[2..6].join(", "), columns[7]);
            scans.push(TableScan {
                table: table.to_owned(),
                time: "start",
                columns: columns.join(", "),
                filter: String::new(),
                decode,
                key,
                prescan,
            });
        }
        scans
    }

    /// SQL for the pid of a GPU activity row: from globalPid, or, in trimmed
    /// exports without it, the one process that made CUDA calls (if only one did).
    pub(crate) fn pid_column(&self, table: &str) -> String {
        if self.schema.has_column(table, "globalPid") {
            pid_sql("globalPid")
        } else {
            self.sole_cuda_pid
                .map_or("NULL".to_owned(), |p| p.to_string())
        }
    }
}

/// What the pre-scan of the GPU tables learns: the places with activity and
/// their green contexts, and how many GPU operations each launch (pid,
/// correlationId) has.
#[derive(Default)]
struct GpuPrescan {
    /// The first scans are of GPU tables; the rest are API calls.
    gpu_tables: usize,
    /// Each place's green contexts, in the order first seen (few: one, mostly).
    places: std::collections::BTreeMap<GpuPlace, Vec<i64>>,
    launches: LaunchCounts,
}

impl Prescan<CudaEvent<'_>> for GpuPrescan {
    type Summary = Vec<PlaceWork>;

    /// GPU rows: rowid, start, device, pid, context, stream, correlationId,
    /// greenContextId.
    fn row(&mut self, scan: usize, row: &Row) -> rusqlite::Result<()> {
        if scan >= self.gpu_tables {
            return Ok(());
        }
        let pid = row.get::<_, Option<i64>>(3)?.map(|p| p as u32);
        let green_contexts = self
            .places
            .entry(GpuPlace {
                device: row.get::<_, Option<i64>>(2)?.unwrap_or(0),
                pid,
                context: row.get(4)?,
                stream: row.get(5)?,
            })
            .or_default();
        if let Some(green) = green_context(row.get(7)?) {
            if !green_contexts.contains(&green) {
                green_contexts.push(green);
            }
        }
        if let (Some(pid), Some(corr)) = (pid, row.get::<_, Option<i64>>(6)?) {
            self.launches.add(pid, corr);
        }
        Ok(())
    }

    fn summary(&mut self) -> Vec<PlaceWork> {
        std::mem::take(&mut self.places)
            .into_iter()
            .map(|(place, mut green_contexts)| {
                green_contexts.sort_unstable();
                PlaceWork {
                    place,
                    green_contexts,
                }
            })
            .collect()
    }

    fn complete(&self, event: &mut CudaEvent<'_>) {
        if let CudaEvent::Api(call) = event {
            call.gpu_ops = match (call.correlation_id, call.repeats_a_call) {
                (Some(corr), false) => self.launches.get(call.pid, corr),
                _ => 0,
            };
        }
    }
}

/// How many GPU operations each launch (pid, correlationId) has. One bit per
/// correlation id for "at least one", and a map for the few with several
/// (CUDA graphs): far smaller than the operations themselves.
#[derive(Default)]
struct LaunchCounts {
    /// By (pid, correlationId / 64): bit `correlationId % 64`.
    seen: FxHashMap<(u32, i64), u64>,
    /// Launches with more than one operation.
    several: FxHashMap<(u32, i64), u32>,
}

impl LaunchCounts {
    fn add(&mut self, pid: u32, corr: i64) {
        let bit = 1u64 << corr.rem_euclid(64);
        let word = self.seen.entry((pid, corr.div_euclid(64))).or_default();
        if *word & bit == 0 {
            *word |= bit;
        } else {
            *self.several.entry((pid, corr)).or_insert(1) += 1;
        }
    }

    fn get(&self, pid: u32, corr: i64) -> u32 {
        let bit = 1u64 << corr.rem_euclid(64);
        match self.seen.get(&(pid, corr.div_euclid(64))) {
            Some(word) if word & bit != 0 => self.several.get(&(pid, corr)).copied().unwrap_or(1),
            _ => 0,
        }
    }
}

fn decode_api<'r>(strings: &'r StringTable, r: &Row) -> rusqlite::Result<CudaEvent<'r>> {
    let gtid: i64 = r.get(2)?;
    let name_id: Option<i64> = r.get(4)?;
    Ok(CudaEvent::Api(ApiCall {
        start: r.get(0)?,
        end: r.get(1)?,
        pid: pid_of(gtid),
        tid: tid_of(gtid),
        correlation_id: r.get(3)?,
        name: name_id.and_then(|id| strings.get(id)).unwrap_or(""),
        return_value: r.get(5)?,
        // "CUDA backtrace" records (eventClass 67, 68) repeat a call, with its
        // correlationId, to carry its stack: the call itself owns the launch.
        repeats_a_call: matches!(r.get::<_, Option<i64>>(6)?, Some(67 | 68)),
        gpu_ops: 0,
        callchain: r.get(7)?,
    }))
}

fn decode_common(r: &Row) -> rusqlite::Result<GpuCommon> {
    Ok(GpuCommon {
        start: r.get(0)?,
        end: r.get(1)?,
        place: GpuPlace {
            device: r.get::<_, Option<i64>>(2)?.unwrap_or(0),
            pid: r.get::<_, Option<i64>>(3)?.map(|p| p as u32),
            context: r.get(4)?,
            stream: r.get(5)?,
        },
        correlation_id: r.get(6)?,
        green_context: green_context(r.get(7)?),
        graph_node: r.get(8)?,
    })
}

/// A `greenContextId` as recorded: exports write 0 for work outside green
/// contexts, and NULL before nsys 2024.5.
fn green_context(recorded: Option<i64>) -> Option<i64> {
    recorded.filter(|&id| id != 0)
}

/// Index of the first table-specific column.
const EXTRA: usize = 9;

fn decode_kernel<'r>(strings: &'r StringTable, r: &Row) -> rusqlite::Result<CudaEvent<'r>> {
    let g = |i: usize| r.get::<_, Option<i64>>(EXTRA + i);
    let short_name = g(0)?.and_then(|id| strings.get(id)).unwrap_or("");
    Ok(CudaEvent::Kernel(Box::new(Kernel {
        common: decode_common(r)?,
        short_name,
        demangled_name: g(1)?.and_then(|id| strings.get(id)),
        grid: [g(2)?, g(3)?, g(4)?],
        block: [g(5)?, g(6)?, g(7)?],
        registers_per_thread: g(8)?,
        static_shared_memory: g(9)?,
        dynamic_shared_memory: g(10)?,
        local_memory_per_thread: g(11)?,
        local_memory_total: g(12)?,
        launch_type: g(13)?,
        graph_id: g(14)?,
    })))
}

fn decode_memcpy<'r>(_: &'r StringTable, r: &Row) -> rusqlite::Result<CudaEvent<'r>> {
    let g = |i: usize| r.get::<_, Option<i64>>(EXTRA + i);
    Ok(CudaEvent::Memcpy(Memcpy {
        common: decode_common(r)?,
        bytes: g(0)?,
        copy_kind: g(1)?,
        src_kind: g(2)?,
        dst_kind: g(3)?,
    }))
}

fn decode_memset<'r>(_: &'r StringTable, r: &Row) -> rusqlite::Result<CudaEvent<'r>> {
    let g = |i: usize| r.get::<_, Option<i64>>(EXTRA + i);
    Ok(CudaEvent::Memset(Memset {
        common: decode_common(r)?,
        bytes: g(0)?,
        value: g(1)?,
        memory_kind: g(2)?,
    }))
}

fn decode_graph<'r>(_: &'r StringTable, r: &Row) -> rusqlite::Result<CudaEvent<'r>> {
    let g = |i: usize| r.get::<_, Option<i64>>(EXTRA + i);
    Ok(CudaEvent::Graph(GraphRun {
        common: decode_common(r)?,
        graph_id: g(0)?,
        graph_exec_id: g(1)?,
    }))
}

fn decode_sync<'r>(_: &'r StringTable, r: &Row) -> rusqlite::Result<CudaEvent<'r>> {
    let g = |i: usize| r.get::<_, Option<i64>>(EXTRA + i);
    Ok(CudaEvent::Sync(Sync {
        common: decode_common(r)?,
        sync_type: g(0)?,
        event_id: g(1)?,
    }))
}
