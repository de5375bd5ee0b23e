//! CUDA API calls and GPU activity, read as one stream in time order.
//!
//! The tables are merged in time order (see `scan`), so a launch always comes
//! before the work it launched.

use rustc_hash::FxHashMap;

use super::columns::{columns, ReadRow, TakeAll, Taken};
use super::graphs::GraphCreation;
use super::ids::{pid_of, pid_sql, tid_of};
use super::row_filter::RowFilter;
use super::scan::{order_key, NoPrescan, OrderKey, Prescan, Streamed, TableScan};
use super::select::{Col, Row, Select};
use super::strings::StringTable;
use super::Report;

/// The `eventClass` of "CUDA backtrace" records: a second record of a call,
/// made only to carry its call stack.
pub(crate) const BACKTRACE_EVENT_CLASSES: [i64; 2] = [67, 68];

/// Whether a row of an API call table with this `eventClass` only repeats
/// another call (with its correlationId) to carry its stack: the call itself
/// is the other row, which owns the launch and the time.
pub(crate) fn repeats_a_call(event_class: Option<i64>) -> bool {
    event_class.is_some_and(|class| BACKTRACE_EVENT_CLASSES.contains(&class))
}

/// [`repeats_a_call`] in SQL: the condition that keeps the calls themselves
/// (for a table with an `eventClass` column).
pub(crate) fn calls_themselves_sql() -> String {
    let [a, b] = BACKTRACE_EVENT_CLASSES;
    format!("(\"eventClass\" IS NULL OR \"eventClass\" NOT IN ({a}, {b}))")
}

/// The name of a whole CUDA graph's run (`graphId`), in the trace and in
/// comparisons.
pub(crate) fn graph_name(graph_id: Option<i64>) -> String {
    match graph_id {
        Some(id) => format!("CUDA graph {id}"),
        None => "CUDA graph".to_owned(),
    }
}

pub(crate) const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
pub(crate) const DRIVER: &str = "CUPTI_ACTIVITY_KIND_DRIVER";
pub(crate) const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
pub(crate) const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
pub(crate) const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
pub(crate) const CALLCHAINS: &str = "CUDA_CALLCHAINS";
pub(crate) const SYNC: &str = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";

/// Whole CUDA graphs as the GPU ran them (`--cuda-graph-trace=graph`).
pub(crate) const GRAPH_TRACE: &str = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
/// Tables of GPU operations that API calls launch.
pub(crate) const GPU_OP_TABLES: [&str; 4] = [KERNEL, MEMCPY, MEMSET, GRAPH_TRACE];

columns! {
    /// The columns of the API call tables ([`RUNTIME`], [`DRIVER`]). A call
    /// without its thread cannot be placed; one without a name is named "".
    pub(crate) struct ApiColumns = API {
        start: i64 = required("start"),
        end: i64 = required("end"),
        global_tid: i64 = required("globalTid"),
        correlation_id: Option<i64> = expected("correlationId"),
        name_id: Option<i64> = expected("nameId"),
        return_value: Option<i64> = expected("returnValue"),
        event_class: Option<i64> = optional("eventClass"),
        callchain_id: Option<i64> = optional("callchainId"),
    }
}

columns! {
    /// The columns every GPU activity table has ([`KERNEL`], [`MEMCPY`],
    /// [`MEMSET`], [`SYNC`], [`GRAPH_TRACE`]): when and where the work ran.
    /// Every export has a stream for each; the process comes from
    /// `globalPid` (see [`Report::pid_column`]).
    pub(crate) struct GpuColumns = GPU {
        start: i64 = required("start"),
        end: i64 = required("end"),
        device_id: Option<i64> = expected("deviceId"),
        context_id: Option<i64> = expected("contextId"),
        stream_id: i64 = required("streamId"),
        correlation_id: Option<i64> = expected("correlationId"),
        green_context_id: Option<i64> = optional("greenContextId"),
        graph_node_id: Option<i64> = expected_in("graphNodeId", &[KERNEL, MEMCPY, MEMSET]),
    }
}

columns! {
    /// The names of a [`KERNEL`] (StringIds).
    pub(crate) struct KernelNameColumns = KERNEL_NAMES {
        short_name: Option<i64> = expected("shortName"),
        demangled_name: Option<i64> = expected("demangledName"),
    }
}

columns! {
    /// The columns of [`KERNEL`] besides the [`GPU`] ones and its names.
    pub(crate) struct KernelColumns = KERNEL_COLUMNS {
        grid_x: Option<i64> = expected("gridX"),
        grid_y: Option<i64> = expected("gridY"),
        grid_z: Option<i64> = expected("gridZ"),
        block_x: Option<i64> = expected("blockX"),
        block_y: Option<i64> = expected("blockY"),
        block_z: Option<i64> = expected("blockZ"),
        registers_per_thread: Option<i64> = expected("registersPerThread"),
        static_shared_memory: Option<i64> = expected("staticSharedMemory"),
        dynamic_shared_memory: Option<i64> = expected("dynamicSharedMemory"),
        local_memory_per_thread: Option<i64> = expected("localMemoryPerThread"),
        local_memory_total: Option<i64> = expected("localMemoryTotal"),
        launch_type: Option<i64> = expected("launchType"),
        graph_id: Option<i64> = optional("graphId"),
    }
    /// How a kernel was launched, as recorded.
    pub(crate) struct KernelLaunch;
}

columns! {
    /// The columns of [`MEMCPY`] besides the [`GPU`] ones.
    pub(crate) struct MemcpyColumns = MEMCPY_COLUMNS {
        bytes: Option<i64> = expected("bytes"),
        copy_kind: Option<i64> = expected("copyKind"),
        src_kind: Option<i64> = expected("srcKind"),
        dst_kind: Option<i64> = expected("dstKind"),
    }
    /// A memory copy's own values.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct MemcpyValues;
}

columns! {
    /// The devices of a [`MEMCPY`] (the trace places a copy by its stream).
    pub(crate) struct MemcpyDeviceColumns = MEMCPY_DEVICES {
        src_device_id: Option<i64> = optional("srcDeviceId"),
        dst_device_id: Option<i64> = optional("dstDeviceId"),
    }
    /// The devices a memory copy went from and to.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct CopyDevices;
}

columns! {
    /// The columns of [`MEMSET`] besides the [`GPU`] ones.
    pub(crate) struct MemsetColumns = MEMSET_COLUMNS {
        bytes: Option<i64> = expected("bytes"),
        value: Option<i64> = expected("value"),
        memory_kind: Option<i64> = expected("memKind"),
    }
    /// A memset's own values.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct MemsetValues;
}

columns! {
    /// The columns of [`SYNC`] besides the [`GPU`] ones.
    pub(crate) struct SyncColumns = SYNC_COLUMNS {
        sync_type: Option<i64> = expected("syncType"),
        event_id: Option<i64> = expected("eventId"),
        /// The record of the event waited on (nsys 2025.1 and later; see `events`).
        event_sync_id: Option<i64> = optional("eventSyncId"),
    }
    /// A synchronization's own values.
    pub(crate) struct SyncValues;
}

columns! {
    /// The columns of [`GRAPH_TRACE`] besides the [`GPU`] ones.
    pub(crate) struct GraphTraceColumns = GRAPH_TRACE_COLUMNS {
        graph_id: Option<i64> = optional("graphId"),
        graph_exec_id: Option<i64> = optional("graphExecId"),
    }
    /// A whole CUDA graph run's own values.
    pub(crate) struct GraphRunValues;
}

/// A CUDA runtime or driver API call, as every reader of one reads it.
pub(crate) struct ApiCall<'r> {
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
    /// GPU operations of the report with this call's (pid, correlationId),
    /// as the pre-scan of the CUDA stream counts them (0 where none does).
    pub gpu_ops: u32,
    /// Its stack in `CUDA_CALLCHAINS`, when recorded.
    pub callchain: Option<i64>,
}

/// Where GPU work ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct GpuPlace {
    pub device: i64,
    /// `None` when the export says neither (trimmed exports without globalPid
    /// and with several processes).
    pub pid: Option<u32>,
    pub context: Option<i64>,
    pub stream: i64,
}

#[derive(Clone, Copy)]
pub(crate) struct GpuCommon {
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
pub(crate) struct PlaceWork {
    pub place: GpuPlace,
    /// Distinct `greenContextId`s of the place's work, in ascending order.
    pub green_contexts: Vec<i64>,
}

pub(crate) struct Kernel<'r> {
    pub common: GpuCommon,
    pub short_name: &'r str,
    pub demangled_name: Option<&'r str>,
    pub launch: KernelLaunch,
}

impl KernelLaunch {
    /// The grid's x, y and z.
    pub(crate) fn grid(&self) -> [Option<i64>; 3] {
        [self.grid_x, self.grid_y, self.grid_z]
    }

    /// The block's x, y and z.
    pub(crate) fn block(&self) -> [Option<i64>; 3] {
        [self.block_x, self.block_y, self.block_z]
    }
}

/// GPU work of a table with the columns every GPU activity table has, and
/// the values of the table's own.
pub(crate) struct Activity<T> {
    pub common: GpuCommon,
    pub own: T,
}

pub(crate) type Memcpy = Activity<MemcpyValues>;
pub(crate) type Memset = Activity<MemsetValues>;
/// A whole CUDA graph run on a stream, in graph trace mode.
pub(crate) type GraphRun = Activity<GraphRunValues>;
pub(crate) type Sync = Activity<SyncValues>;

/// Events are moved several times on their way (sorted within a batch, sent to
/// the converting thread): kernels, the largest, are boxed to keep the others small.
pub(crate) enum CudaEvent<'r> {
    Api(ApiCall<'r>),
    Kernel(Box<Kernel<'r>>),
    Memcpy(Memcpy),
    Memset(Memset),
    Sync(Sync),
    Graph(GraphRun),
    GraphCreation(Box<GraphCreation<'r>>),
}

impl CudaEvent<'_> {
    /// (start, end) as recorded.
    pub(crate) fn span(&self) -> (i64, i64) {
        match self {
            CudaEvent::Api(a) => (a.start, a.end),
            CudaEvent::Kernel(k) => (k.common.start, k.common.end),
            CudaEvent::Memcpy(m) => (m.common.start, m.common.end),
            CudaEvent::Memset(m) => (m.common.start, m.common.end),
            CudaEvent::Sync(s) => (s.common.start, s.common.end),
            CudaEvent::Graph(g) => (g.common.start, g.common.end),
            CudaEvent::GraphCreation(g) => (g.start, g.end),
        }
    }

    /// Where the event goes in the stream's time order.
    pub(crate) fn key(&self) -> OrderKey {
        let (start, end) = self.span();
        order_key(start, end)
    }

    /// What GPU work a launch makes (a kernel, memcpy, memset, or a graph
    /// traced as a whole) has in common; `None` for other events.
    pub(crate) fn launched_work(&self) -> Option<&GpuCommon> {
        match self {
            CudaEvent::Kernel(k) => Some(&k.common),
            CudaEvent::Memcpy(m) => Some(&m.common),
            CudaEvent::Memset(m) => Some(&m.common),
            CudaEvent::Graph(g) => Some(&g.common),
            CudaEvent::Api(_) | CudaEvent::Sync(_) | CudaEvent::GraphCreation(_) => None,
        }
    }
}

impl Report {
    /// Calls `f` first with every place that has GPU activity (sorted), then
    /// with every CUDA event of the report, in time order.
    pub(crate) fn for_each_cuda_event<E>(
        &self,
        filter: &RowFilter,
        f: impl FnMut(Streamed<CudaEvent<'_>, Vec<PlaceWork>>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<rusqlite::Error>,
    {
        // GPU activity tables come first: their pre-scan finds the places and
        // counts the work of each launch, before any call is read.
        let mut prescan = GpuPrescan::default();
        let mut scans = self.gpu_scans(
            &[KERNEL, MEMCPY, MEMSET, SYNC, GRAPH_TRACE],
            Some(&mut prescan.columns),
        );
        scans.extend(self.api_scans());
        scans.extend(self.graph_creation_scans());
        self.stream(scans, prescan, filter, f)
    }

    fn api_scans(&self) -> Vec<TableScan<'_, CudaEvent<'_>>> {
        let strings = &self.strings;
        [RUNTIME, DRIVER]
            .into_iter()
            .filter_map(|table| {
                let declare = |s: &mut Select| {
                    let c = API.take_all(s);
                    move |r: &Row| c.read(r, strings).map(CudaEvent::Api)
                };
                self.scan(table, declare, CudaEvent::key)
            })
            .collect()
    }

    /// Calls `f` with every kernel, memcpy, memset and CUDA graph run (of
    /// graphs traced whole) of the report, in time order: the work that keeps
    /// a GPU busy. No API call, no synchronization, no pre-scan.
    pub(crate) fn for_each_gpu_op<E>(
        &self,
        filter: &RowFilter,
        mut f: impl FnMut(CudaEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<rusqlite::Error>,
    {
        let scans = self.gpu_scans(&GPU_OP_TABLES, None);
        self.stream(scans, NoPrescan, filter, |streamed| match streamed {
            Streamed::Event(event) => f(event),
            Streamed::Prescanned(()) => Ok(()),
        })
    }

    /// The scans of the GPU activity tables; `prescan` gets the columns each
    /// one's pre-scan reads, by scan.
    fn gpu_scans(
        &self,
        tables: &[&str],
        mut prescan: Option<&mut Vec<PlaceColumns>>,
    ) -> Vec<TableScan<'_, CudaEvent<'_>>> {
        let strings = &self.strings;
        let mut scans = Vec::new();
        for &table in tables {
            let Some(mut s) = self.select(table) else {
                continue;
            };
            let pid = self.pid_column(table);
            let common = GpuCommonCols::declare(&mut s, &pid);
            // Each table's own columns follow the common ones.
            let scan = match table {
                KERNEL => kernel(&mut s, common, strings),
                MEMCPY => activity(&mut s, common, MEMCPY_COLUMNS, CudaEvent::Memcpy),
                MEMSET => activity(&mut s, common, MEMSET_COLUMNS, CudaEvent::Memset),
                SYNC => activity(&mut s, common, SYNC_COLUMNS, CudaEvent::Sync),
                _ => activity(&mut s, common, GRAPH_TRACE_COLUMNS, CudaEvent::Graph),
            };
            if !self.readable(&s) {
                continue;
            }
            match prescan.as_deref_mut() {
                Some(prescan) => {
                    let mut places = Select::new(&self.schema, table);
                    prescan.push(PlaceColumns::declare(&mut places, &pid));
                    scans.push(scan.prescan(&places));
                }
                None => scans.push(scan),
            }
        }
        scans
    }

    /// SQL for the pid of a GPU activity row: from globalPid, or, in trimmed
    /// exports without it, the one process that made CUDA calls (if only one did).
    pub(crate) fn pid_column(&self, table: &str) -> String {
        if self.schema.has_column(table, "globalPid") {
            pid_sql("globalPid")
        } else {
            // Every untrimmed export has it: the process is taken as the
            // only one, where there is one, and noted.
            self.note_read_without(table, ["globalPid"]);
            self.sole_cuda_pid
                .map_or("NULL".to_owned(), |p| p.to_string())
        }
    }
}

impl ApiColumns<Taken> {
    /// The call of row `r`, named through `strings`; its GPU operations are
    /// counted later (see [`ApiCall::gpu_ops`]).
    pub(crate) fn read<'r>(
        &self,
        r: &Row,
        strings: &'r StringTable,
    ) -> rusqlite::Result<ApiCall<'r>> {
        let gtid = self.global_tid.get(r)?;
        Ok(ApiCall {
            start: self.start.get(r)?,
            end: self.end.get(r)?,
            pid: pid_of(gtid),
            tid: tid_of(gtid),
            correlation_id: self.correlation_id.get(r)?,
            name: strings.name(self.name_id.get(r)?),
            return_value: self.return_value.get(r)?,
            // "CUDA backtrace" records (eventClass 67, 68) repeat a call, with
            // its correlationId, to carry its stack: the call owns the launch.
            repeats_a_call: repeats_a_call(self.event_class.get(r)?),
            gpu_ops: 0,
            callchain: self.callchain_id.get(r)?,
        })
    }
}

/// What every GPU activity table's rows are read with.
#[derive(Clone, Copy)]
pub(crate) struct GpuCommonCols {
    columns: GpuColumns<Taken>,
    pid: Col<Option<i64>>,
}

impl GpuCommonCols {
    /// `pid` is the SQL of the row's pid (see [`Report::pid_column`]).
    pub(crate) fn declare(s: &mut Select, pid: &str) -> Self {
        Self {
            columns: GPU.take_all(s),
            pid: s.expr(pid.to_owned()),
        }
    }

    pub(crate) fn decode(&self, r: &Row) -> rusqlite::Result<GpuCommon> {
        let c = &self.columns;
        Ok(GpuCommon {
            start: c.start.get(r)?,
            end: c.end.get(r)?,
            place: GpuPlace {
                device: c.device_id.get(r)?.unwrap_or(0),
                pid: self.pid.get(r)?.map(|p| p as u32),
                context: c.context_id.get(r)?,
                stream: c.stream_id.get(r)?,
            },
            correlation_id: c.correlation_id.get(r)?,
            green_context: green_context(c.green_context_id.get(r)?),
            graph_node: c.graph_node_id.get(r)?,
        })
    }
}

fn kernel<'r>(
    s: &mut Select,
    common: GpuCommonCols,
    strings: &'r StringTable,
) -> TableScan<'r, CudaEvent<'r>> {
    let names = KERNEL_NAMES.take_all(s);
    let launch = KERNEL_COLUMNS.take_all(s);
    let decode = move |r: &Row| {
        Ok(CudaEvent::Kernel(Box::new(Kernel {
            common: common.decode(r)?,
            short_name: strings.name(names.short_name.get(r)?),
            demangled_name: strings.lookup(names.demangled_name.get(r)?),
            launch: launch.read(r)?,
        })))
    };
    TableScan::new(s, decode, CudaEvent::key)
}

/// The scan of a GPU activity table whose own columns, `columns`, are
/// handed on as they are, in `event`.
fn activity<'r, C, E>(
    s: &mut Select,
    common: GpuCommonCols,
    columns: C,
    event: E,
) -> TableScan<'r, CudaEvent<'r>>
where
    C: TakeAll,
    C::Taken: ReadRow + Send + 'r,
    E: Fn(Activity<<C::Taken as ReadRow>::Values>) -> CudaEvent<'r> + Send + 'r,
{
    let own = columns.take_all(s);
    let decode = move |r: &Row| {
        Ok(event(Activity {
            common: common.decode(r)?,
            own: own.read(r)?,
        }))
    };
    TableScan::new(s, decode, CudaEvent::key)
}

/// A `greenContextId` as recorded: exports write 0 for work outside green
/// contexts, and NULL before nsys 2024.5.
fn green_context(recorded: Option<i64>) -> Option<i64> {
    recorded.filter(|&id| id != 0)
}

/// What the pre-scan of a GPU table reads: where the work ran and, for
/// launched work, its launch.
#[derive(Clone, Copy)]
struct PlaceColumns {
    device: Col<Option<i64>>,
    pid: Col<Option<i64>>,
    context: Col<Option<i64>>,
    stream: Col<i64>,
    /// The correlationId of launched work; NULL for synchronization.
    launch: Col<Option<i64>>,
    green_context: Col<Option<i64>>,
}

impl PlaceColumns {
    fn declare(s: &mut Select, pid: &str) -> Self {
        let launched = GPU_OP_TABLES.contains(&s.table());
        Self {
            device: s.take(GPU.device_id),
            pid: s.expr(pid.to_owned()),
            context: s.take(GPU.context_id),
            stream: s.take(GPU.stream_id),
            launch: match launched {
                true => s.take(GPU.correlation_id),
                false => s.expr("NULL".to_owned()),
            },
            green_context: s.take(GPU.green_context_id),
        }
    }
}

/// What the pre-scan of the GPU tables learns: the places with activity and
/// their green contexts, and how many GPU operations each launch (pid,
/// correlationId) has.
#[derive(Default)]
struct GpuPrescan {
    /// What each GPU table's pre-scan reads, by scan; the scans after them
    /// are of API calls.
    columns: Vec<PlaceColumns>,
    /// Each place's green contexts, in the order first seen (few: one, mostly).
    places: std::collections::BTreeMap<GpuPlace, Vec<i64>>,
    launches: LaunchCounts,
}

impl Prescan<CudaEvent<'_>> for GpuPrescan {
    type Summary = Vec<PlaceWork>;

    fn row(&mut self, scan: usize, row: &Row) -> rusqlite::Result<()> {
        let Some(c) = self.columns.get(scan) else {
            return Ok(());
        };
        let pid = c.pid.get(row)?.map(|p| p as u32);
        let green_contexts = self
            .places
            .entry(GpuPlace {
                device: c.device.get(row)?.unwrap_or(0),
                pid,
                context: c.context.get(row)?,
                stream: c.stream.get(row)?,
            })
            .or_default();
        if let Some(green) = green_context(c.green_context.get(row)?) {
            if !green_contexts.contains(&green) {
                green_contexts.push(green);
            }
        }
        if let (Some(pid), Some(corr)) = (pid, c.launch.get(row)?) {
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
