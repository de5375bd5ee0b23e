//! Sampled and counted GPU data: GPU metrics (`GPU_METRICS`, named by
//! `TARGET_INFO_GPU_METRICS`), CUDA memory allocations and frees
//! (`CUDA_GPU_MEMORY_USAGE_EVENTS`), memory-pool operations
//! (`CUDA_GPU_MEMORY_POOL_EVENTS`) and unified-memory page faults
//! (`CUDA_UM_GPU_PAGE_FAULT_EVENTS`, `CUDA_UM_CPU_PAGE_FAULT_EVENTS`),
//! merged in time order.

use rusqlite::types::ValueRef;
use rusqlite::Row;
use rustc_hash::FxHashMap;

use super::ids::pid_of;
use super::scan::{order_key, NoPrescan, OrderKey, Streamed, TableScan};
use super::strings::StringTable;
use super::Report;

pub const GPU_METRICS: &str = "GPU_METRICS";
pub const METRIC_NAMES: &str = "TARGET_INFO_GPU_METRICS";
pub const MEMORY_USAGE: &str = "CUDA_GPU_MEMORY_USAGE_EVENTS";
pub const MEMORY_POOLS: &str = "CUDA_GPU_MEMORY_POOL_EVENTS";
pub const UM_GPU_FAULTS: &str = "CUDA_UM_GPU_PAGE_FAULT_EVENTS";
pub const UM_CPU_FAULTS: &str = "CUDA_UM_CPU_PAGE_FAULT_EVENTS";

/// A sample's value, as stored (integers in most versions).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MetricValue {
    Int(i64),
    Real(f64),
}

/// A CUDA memory pool (`cudaMemPool_t`) as it stood at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoolState {
    /// The pool's base address, which tells pools apart.
    pub address: i64,
    /// Bytes the pool holds from the device.
    pub size: Option<i64>,
    /// Bytes of the pool that allocations use.
    pub used: Option<i64>,
}

/// A memory pool created, trimmed or destroyed.
pub struct PoolOperation {
    pub ts: i64,
    pub pid: u32,
    pub device: i64,
    pub state: PoolState,
    /// `ENUM_CUDA_MEMPOOL_OPER`.
    pub operation: Option<i64>,
    /// `ENUM_CUDA_MEMPOOL_TYPE`.
    pub pool_type: Option<i64>,
    pub min_bytes_to_keep: Option<i64>,
    pub release_threshold: Option<i64>,
    pub correlation_id: Option<i64>,
}

pub enum DeviceEvent {
    /// One sample of one GPU metric.
    Metric {
        ts: i64,
        /// The metric set's id: the GPU is its low byte.
        type_id: i64,
        metric_id: i64,
        value: MetricValue,
    },
    /// Device memory allocated (`freed` false) or freed.
    Memory {
        ts: i64,
        pid: u32,
        device: i64,
        bytes: i64,
        freed: bool,
        /// The local pool the memory came from or went back to, after the
        /// operation (nsys 2022.4 and later; none for plain `cudaMalloc`).
        pool: Option<PoolState>,
    },
    /// A memory pool created, trimmed or destroyed.
    Pool(PoolOperation),
    /// Page faults a GPU raised on unified memory, handled during [start, end].
    GpuFaults {
        start: i64,
        end: i64,
        pid: u32,
        device: i64,
        address: Option<i64>,
        faults: Option<i64>,
        /// `ENUM_CUDA_UNIF_MEM_ACCESS_TYPE`.
        access: Option<i64>,
    },
    /// A page fault the CPU raised on unified memory.
    CpuFault {
        ts: i64,
        pid: u32,
        address: Option<i64>,
    },
}

impl DeviceEvent {
    fn key(&self) -> OrderKey {
        match *self {
            DeviceEvent::Metric { ts, .. }
            | DeviceEvent::Memory { ts, .. }
            | DeviceEvent::CpuFault { ts, .. } => order_key(ts, ts),
            DeviceEvent::Pool(ref op) => order_key(op.ts, op.ts),
            DeviceEvent::GpuFaults { start, end, .. } => order_key(start, end),
        }
    }
}

impl Report {
    /// Metric names by (typeId, metricId).
    pub fn gpu_metric_names(&self) -> rusqlite::Result<FxHashMap<(i64, i64), String>> {
        let s = &self.schema;
        let mut names = FxHashMap::default();
        if !["typeId", "metricId", "metricName"]
            .iter()
            .all(|c| s.has_column(METRIC_NAMES, c))
        {
            return Ok(names);
        }
        let conn = self.conn();
        let mut stmt = conn.prepare(&format!(
            "SELECT typeId, metricId, metricName FROM {METRIC_NAMES}"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            names.insert((r.get(0)?, r.get(1)?), r.get(2)?);
        }
        Ok(names)
    }

    /// Calls `f` with every GPU metric sample, memory event and unified-memory
    /// fault, in time order.
    pub fn for_each_device_event<E: From<rusqlite::Error>>(
        &self,
        mut f: impl FnMut(DeviceEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        let s = &self.schema;
        let c = |t: &str, col: &str| s.column_or_null(t, col);
        let has = |t: &str, cols: &[&str]| self.readable(t, cols);
        let mut scans: Vec<TableScan<'_, DeviceEvent>> = Vec::new();
        let mut scan = |table: &str, columns: Vec<String>, time: &'static str, decode| {
            scans.push(TableScan {
                table: table.to_owned(),
                time,
                columns: columns.join(", "),
                filter: String::new(),
                decode,
                key: DeviceEvent::key,
                prescan: String::new(),
            });
        };
        if has(GPU_METRICS, &["timestamp", "typeId", "metricId", "value"]) {
            scan(
                GPU_METRICS,
                vec![
                    "timestamp".into(),
                    "typeId".into(),
                    "metricId".into(),
                    "value".into(),
                ],
                "timestamp",
                decode_metric,
            );
        }
        if has(
            MEMORY_USAGE,
            &[
                "start",
                "globalPid",
                "deviceId",
                "bytes",
                "memoryOperationType",
            ],
        ) {
            scan(
                MEMORY_USAGE,
                vec![
                    "start".into(),
                    "globalPid".into(),
                    "deviceId".into(),
                    "bytes".into(),
                    "memoryOperationType".into(),
                    c(MEMORY_USAGE, "localMemoryPoolAddress"),
                    c(MEMORY_USAGE, "localMemoryPoolSize"),
                    c(MEMORY_USAGE, "localMemoryPoolUtilizedSize"),
                ],
                "start",
                decode_memory,
            );
        }
        if has(
            MEMORY_POOLS,
            &["start", "globalPid", "deviceId", "address", "operationType"],
        ) {
            scan(
                MEMORY_POOLS,
                vec![
                    "start".into(),
                    "globalPid".into(),
                    "deviceId".into(),
                    "address".into(),
                    c(MEMORY_POOLS, "localMemoryPoolSize"),
                    c(MEMORY_POOLS, "localMemoryPoolUtilizedSize"),
                    "operationType".into(),
                    c(MEMORY_POOLS, "poolType"),
                    c(MEMORY_POOLS, "minBytesToKeep"),
                    c(MEMORY_POOLS, "localMemoryPoolReleaseThreshold"),
                    c(MEMORY_POOLS, "correlationId"),
                ],
                "start",
                decode_pool,
            );
        }
        if has(UM_GPU_FAULTS, &["start", "end", "globalPid", "deviceId"]) {
            scan(
                UM_GPU_FAULTS,
                vec![
                    "start".into(),
                    "\"end\"".into(),
                    "globalPid".into(),
                    "deviceId".into(),
                    c(UM_GPU_FAULTS, "address"),
                    c(UM_GPU_FAULTS, "numberOfPageFaults"),
                    c(UM_GPU_FAULTS, "faultAccessType"),
                ],
                "start",
                decode_gpu_faults,
            );
        }
        if has(UM_CPU_FAULTS, &["start", "globalPid"]) {
            scan(
                UM_CPU_FAULTS,
                vec![
                    "start".into(),
                    "globalPid".into(),
                    c(UM_CPU_FAULTS, "address"),
                ],
                "start",
                decode_cpu_fault,
            );
        }
        if scans.is_empty() {
            return Ok(());
        }
        self.stream(scans, NoPrescan, |item| match item {
            Streamed::Prescanned(()) => Ok(()),
            Streamed::Event(e) => f(e),
        })
    }
}

fn decode_metric(_: &StringTable, r: &Row<'_>) -> rusqlite::Result<DeviceEvent> {
    let value = match r.get_ref(3)? {
        ValueRef::Real(v) => MetricValue::Real(v),
        other => MetricValue::Int(other.as_i64_or_null()?.unwrap_or(0)),
    };
    Ok(DeviceEvent::Metric {
        ts: r.get(0)?,
        type_id: r.get(1)?,
        metric_id: r.get(2)?,
        value,
    })
}

fn decode_memory(_: &StringTable, r: &Row<'_>) -> rusqlite::Result<DeviceEvent> {
    let pool = match r.get::<_, Option<i64>>(5)? {
        Some(address) => Some(PoolState {
            address,
            size: r.get(6)?,
            used: r.get(7)?,
        }),
        None => None,
    };
    Ok(DeviceEvent::Memory {
        ts: r.get(0)?,
        pid: pid_of(r.get::<_, Option<i64>>(1)?.unwrap_or(0)),
        device: r.get::<_, Option<i64>>(2)?.unwrap_or(0),
        bytes: r.get::<_, Option<i64>>(3)?.unwrap_or(0),
        // ENUM_CUDA_DEV_MEM_EVENT_OPER: 0 allocation, 1 deallocation.
        freed: r.get::<_, Option<i64>>(4)? == Some(1),
        pool,
    })
}

fn decode_pool(_: &StringTable, r: &Row<'_>) -> rusqlite::Result<DeviceEvent> {
    Ok(DeviceEvent::Pool(PoolOperation {
        ts: r.get(0)?,
        pid: pid_of(r.get::<_, Option<i64>>(1)?.unwrap_or(0)),
        device: r.get::<_, Option<i64>>(2)?.unwrap_or(0),
        state: PoolState {
            address: r.get::<_, Option<i64>>(3)?.unwrap_or(0),
            size: r.get(4)?,
            used: r.get(5)?,
        },
        operation: r.get(6)?,
        pool_type: r.get(7)?,
        min_bytes_to_keep: r.get(8)?,
        release_threshold: r.get(9)?,
        correlation_id: r.get(10)?,
    }))
}

fn decode_gpu_faults(_: &StringTable, r: &Row<'_>) -> rusqlite::Result<DeviceEvent> {
    Ok(DeviceEvent::GpuFaults {
        start: r.get(0)?,
        end: r.get::<_, Option<i64>>(1)?.unwrap_or(r.get(0)?),
        pid: pid_of(r.get::<_, Option<i64>>(2)?.unwrap_or(0)),
        device: r.get::<_, Option<i64>>(3)?.unwrap_or(0),
        address: r.get(4)?,
        faults: r.get(5)?,
        access: r.get(6)?,
    })
}

fn decode_cpu_fault(_: &StringTable, r: &Row<'_>) -> rusqlite::Result<DeviceEvent> {
    Ok(DeviceEvent::CpuFault {
        ts: r.get(0)?,
        pid: pid_of(r.get::<_, Option<i64>>(1)?.unwrap_or(0)),
        address: r.get(2)?,
    })
}
