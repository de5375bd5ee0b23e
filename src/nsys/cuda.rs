//! CUDA API calls and GPU activity, read as one stream in time order.
//!
//! Each table is read with `ORDER BY` start (zero-length events first at equal
//! starts, then longer before shorter, so nesting is outer-first) and the
//! tables are merged, so a launch always comes before the work it launched.

use rusqlite::{Row, Rows};

use super::ids::{pid_of, pid_sql, tid_of};
use super::Report;

pub const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
pub const DRIVER: &str = "CUPTI_ACTIVITY_KIND_DRIVER";
pub const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
pub const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
pub const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
pub const SYNC: &str = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";

/// Tables of GPU operations that API calls launch.
pub const GPU_OP_TABLES: [&str; 3] = [KERNEL, MEMCPY, MEMSET];

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
    /// GPU operations of the report with this call's (pid, correlationId).
    pub gpu_ops: u32,
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
    pub green_context: Option<i64>,
    pub graph_node: Option<i64>,
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

pub struct Sync {
    pub common: GpuCommon,
    pub sync_type: Option<i64>,
    pub event_id: Option<i64>,
}

pub enum CudaEvent<'r> {
    Api(ApiCall<'r>),
    Kernel(Kernel<'r>),
    Memcpy(Memcpy),
    Memset(Memset),
    Sync(Sync),
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
        }
    }
}

/// The order events are written in: by start; at equal starts zero-length first,
/// then the longer (outer) before the shorter (inner).
pub fn order_key((start, end): (i64, i64)) -> (i64, bool, std::cmp::Reverse<i64>) {
    (start, end > start, std::cmp::Reverse(end))
}

pub(super) const ORDER_BY: &str = "ORDER BY start, \"end\" > start, \"end\" DESC";

type Decode = for<'r> fn(&'r Report, &Row) -> rusqlite::Result<CudaEvent<'r>>;

impl Report {
    /// Calls `f` with every CUDA event of the report, in time order.
    pub fn for_each_cuda_event<E>(
        &self,
        mut f: impl FnMut(CudaEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<rusqlite::Error>,
    {
        let queries = self.cuda_queries()?;
        let mut statements = Vec::new();
        for (sql, decode) in &queries {
            statements.push((self.conn.prepare(sql)?, *decode));
        }
        let mut sources: Vec<(Rows<'_>, Decode)> = Vec::new();
        for (stmt, decode) in statements.iter_mut() {
            sources.push((stmt.query([])?, *decode));
        }
        let mut heads: Vec<Option<CudaEvent<'_>>> = Vec::with_capacity(sources.len());
        for (rows, decode) in sources.iter_mut() {
            heads.push(next_event(self, rows, *decode)?);
        }
        loop {
            let next = heads
                .iter()
                .enumerate()
                .filter_map(|(i, h)| h.as_ref().map(|e| (order_key(e.span()), i)))
                .min();
            let Some((_, i)) = next else { return Ok(()) };
            let (rows, decode) = &mut sources[i];
            let event = std::mem::replace(&mut heads[i], next_event(self, rows, *decode)?);
            f(event.expect("chosen head exists"))?;
        }
    }

    fn cuda_queries(&self) -> rusqlite::Result<Vec<(String, Decode)>> {
        let mut queries: Vec<(String, Decode)> = Vec::new();
        let launch_counts = self.launch_counts()?;
        for table in [RUNTIME, DRIVER] {
            if !self.schema.has_column(table, "globalTid") {
                continue;
            }
            queries.push((self.api_query(table, launch_counts), decode_api));
        }
        let gpu = |table: &str, extra: &[&str]| -> Option<String> {
            if !self.schema.has_column(table, "start") || !self.schema.has_column(table, "streamId")
            {
                return None;
            }
            let mut cols = vec![
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
            cols.extend(extra.iter().map(|c| self.schema.column_or_null(table, c)));
            Some(format!(
                "SELECT {} FROM {table} {ORDER_BY}",
                cols.join(", ")
            ))
        };
        let kernel_cols = [
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
        queries.extend(gpu(KERNEL, &kernel_cols).map(|q| (q, decode_kernel as Decode)));
        queries.extend(
            gpu(MEMCPY, &["bytes", "copyKind", "srcKind", "dstKind"])
                .map(|q| (q, decode_memcpy as Decode)),
        );
        queries.extend(
            gpu(MEMSET, &["bytes", "value", "memKind"]).map(|q| (q, decode_memset as Decode)),
        );
        queries.extend(gpu(SYNC, &["syncType", "eventId"]).map(|q| (q, decode_sync as Decode)));
        Ok(queries)
    }

    /// API calls with the number of GPU operations each launched (`launches`
    /// names the table of those counts, if the report has GPU operations).
    fn api_query(&self, table: &str, launches: Option<&str>) -> String {
        let c = |col| match self.schema.has_column(table, col) {
            true => format!("a.\"{col}\""),
            false => "NULL".to_owned(),
        };
        let (ops, join) = match launches.filter(|_| self.schema.has_column(table, "correlationId"))
        {
            Some(launches) => {
                // "CUDA backtrace" records (eventClass 67, 68) repeat a call, with its
                // correlationId, to carry its stack: the call itself owns the launch.
                let ops = match self.schema.has_column(table, "eventClass") {
                    true => "CASE WHEN a.eventClass IN (67, 68) THEN 0 ELSE l.n END",
                    false => "l.n",
                };
                let pid = pid_sql("a.globalTid");
                (
                    ops,
                    format!("LEFT JOIN {launches} l ON l.pid = {pid} AND l.corr = a.correlationId"),
                )
            }
            None => ("0", String::new()),
        };
        format!(
            "SELECT a.start, a.\"end\", a.globalTid, {}, {}, {}, {ops} FROM {table} a {join} \
             ORDER BY a.start, a.\"end\" > a.start, a.\"end\" DESC",
            c("correlationId"),
            c("nameId"),
            c("returnValue"),
        )
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

    /// A temp table `(pid, corr, n)`: how many GPU operations each launch has.
    /// Built once, in SQLite's temp store, so memory stays flat.
    fn launch_counts(&self) -> rusqlite::Result<Option<&'static str>> {
        let parts: Vec<String> = GPU_OP_TABLES
            .iter()
            .filter(|t| self.schema.has_column(t, "correlationId"))
            .map(|t| {
                format!(
                    "SELECT {} AS pid, correlationId AS corr FROM {t}",
                    self.pid_column(t)
                )
            })
            .collect();
        if parts.is_empty() {
            return Ok(None);
        }
        self.conn.execute_batch(&format!(
            "DROP TABLE IF EXISTS temp.launch_ops;
             CREATE TEMP TABLE launch_ops AS
               SELECT pid, corr, COUNT(*) AS n FROM ({}) WHERE pid IS NOT NULL AND corr IS NOT NULL GROUP BY pid, corr;
             CREATE INDEX temp.launch_ops_key ON launch_ops(pid, corr);",
            parts.join(" UNION ALL ")
        ))?;
        Ok(Some("temp.launch_ops"))
    }
}

fn next_event<'r>(
    report: &'r Report,
    rows: &mut Rows<'_>,
    decode: Decode,
) -> rusqlite::Result<Option<CudaEvent<'r>>> {
    match rows.next()? {
        Some(row) => decode(report, row).map(Some),
        None => Ok(None),
    }
}

fn decode_api<'r>(report: &'r Report, r: &Row) -> rusqlite::Result<CudaEvent<'r>> {
    let gtid: i64 = r.get(2)?;
    let name_id: Option<i64> = r.get(4)?;
    Ok(CudaEvent::Api(ApiCall {
        start: r.get(0)?,
        end: r.get(1)?,
        pid: pid_of(gtid),
        tid: tid_of(gtid),
        correlation_id: r.get(3)?,
        name: report.string(name_id),
        return_value: r.get(5)?,
        gpu_ops: r.get::<_, Option<i64>>(6)?.unwrap_or(0) as u32,
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
        green_context: r.get(7)?,
        graph_node: r.get(8)?,
    })
}

/// Index of the first table-specific column.
const EXTRA: usize = 9;

fn decode_kernel<'r>(report: &'r Report, r: &Row) -> rusqlite::Result<CudaEvent<'r>> {
    let g = |i: usize| r.get::<_, Option<i64>>(EXTRA + i);
    let short_name = report.string(g(0)?);
    Ok(CudaEvent::Kernel(Kernel {
        common: decode_common(r)?,
        short_name,
        demangled_name: g(1)?.and_then(|id| report.strings.get(id)),
        grid: [g(2)?, g(3)?, g(4)?],
        block: [g(5)?, g(6)?, g(7)?],
        registers_per_thread: g(8)?,
        static_shared_memory: g(9)?,
        dynamic_shared_memory: g(10)?,
        local_memory_per_thread: g(11)?,
        local_memory_total: g(12)?,
        launch_type: g(13)?,
        graph_id: g(14)?,
    }))
}

fn decode_memcpy<'r>(_: &'r Report, r: &Row) -> rusqlite::Result<CudaEvent<'r>> {
    let g = |i: usize| r.get::<_, Option<i64>>(EXTRA + i);
    Ok(CudaEvent::Memcpy(Memcpy {
        common: decode_common(r)?,
        bytes: g(0)?,
        copy_kind: g(1)?,
        src_kind: g(2)?,
        dst_kind: g(3)?,
    }))
}

fn decode_memset<'r>(_: &'r Report, r: &Row) -> rusqlite::Result<CudaEvent<'r>> {
    let g = |i: usize| r.get::<_, Option<i64>>(EXTRA + i);
    Ok(CudaEvent::Memset(Memset {
        common: decode_common(r)?,
        bytes: g(0)?,
        value: g(1)?,
        memory_kind: g(2)?,
    }))
}

fn decode_sync<'r>(_: &'r Report, r: &Row) -> rusqlite::Result<CudaEvent<'r>> {
    let g = |i: usize| r.get::<_, Option<i64>>(EXTRA + i);
    Ok(CudaEvent::Sync(Sync {
        common: decode_common(r)?,
        sync_type: g(0)?,
        event_id: g(1)?,
    }))
}

impl Report {
    /// Every place (device, process, context, stream) that has GPU activity, sorted.
    pub fn gpu_places(&self) -> rusqlite::Result<Vec<GpuPlace>> {
        let parts: Vec<String> = GPU_OP_TABLES
            .iter()
            .chain([&SYNC])
            .filter(|t| self.schema.has_column(t, "streamId"))
            .map(|t| {
                format!(
                    "SELECT DISTINCT {} AS d, {} AS p, {} AS c, streamId AS s FROM {t}",
                    self.schema.column_or_null(t, "deviceId"),
                    self.pid_column(t),
                    self.schema.column_or_null(t, "contextId"),
                )
            })
            .collect();
        if parts.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT DISTINCT d, p, c, s FROM ({}) ORDER BY d, p, c, s",
            parts.join(" UNION ALL ")
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let places = stmt
            .query_map([], |r| {
                Ok(GpuPlace {
                    device: r.get::<_, Option<i64>>(0)?.unwrap_or(0),
                    pid: r.get::<_, Option<i64>>(1)?.map(|p| p as u32),
                    context: r.get(2)?,
                    stream: r.get(3)?,
                })
            })?
            .collect();
        places
    }
}
