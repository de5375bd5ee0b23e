//! Sampled and counted GPU data: GPU metrics (`GPU_METRICS`, named by
//! `TARGET_INFO_GPU_METRICS`), CUDA memory allocations and frees
//! (`CUDA_GPU_MEMORY_USAGE_EVENTS`), memory-pool operations
//! (`CUDA_GPU_MEMORY_POOL_EVENTS`) and unified-memory page faults
//! (`CUDA_UM_GPU_PAGE_FAULT_EVENTS`, `CUDA_UM_CPU_PAGE_FAULT_EVENTS`),
//! merged in time order.

use rusqlite::types::ValueRef;
use rustc_hash::FxHashMap;

use super::columns::{columns, ReadRow, TakeAll, Taken};
use super::ids::pid_of;
use super::row_filter::RowFilter;
use super::scan::{order_key, OrderKey, TableScan};
use super::select::{Row, Select};
use super::Report;

pub(crate) const GPU_METRICS: &str = "GPU_METRICS";
pub(crate) const METRIC_NAMES: &str = "TARGET_INFO_GPU_METRICS";
pub(crate) const MEMORY_USAGE: &str = "CUDA_GPU_MEMORY_USAGE_EVENTS";
pub(crate) const MEMORY_POOLS: &str = "CUDA_GPU_MEMORY_POOL_EVENTS";
pub(crate) const UM_GPU_FAULTS: &str = "CUDA_UM_GPU_PAGE_FAULT_EVENTS";
pub(crate) const UM_CPU_FAULTS: &str = "CUDA_UM_CPU_PAGE_FAULT_EVENTS";

columns! {
    /// The columns of [`UM_CPU_FAULTS`].
    pub(crate) struct CpuFaultColumns = CPU_FAULTS {
        start: i64 = required("start"),
        global_pid: Option<i64> = required("globalPid"),
        address: Option<i64> = optional("address"),
        cpu_instruction: Option<i64> = optional("CpuInstruction"),
    }
}

/// A sample's value, as stored (integers in most versions).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum MetricValue {
    Int(i64),
    Real(f64),
}

/// A CUDA memory pool (`cudaMemPool_t`) as it stood at one moment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PoolState {
    /// The pool's base address, which tells pools apart.
    pub address: i64,
    /// Bytes the pool holds from the device.
    pub size: Option<i64>,
    /// Bytes of the pool that allocations use.
    pub used: Option<i64>,
}

columns! {
    /// When, in which process and on which GPU: the first columns of
    /// [`MEMORY_USAGE`], [`MEMORY_POOLS`] and [`UM_GPU_FAULTS`].
    struct OnDeviceColumns = ON_DEVICE {
        start: i64 = required("start"),
        global_pid: Option<i64> = required("globalPid"),
        device_id: Option<i64> = required("deviceId"),
    }
}

impl OnDeviceColumns<Taken> {
    /// (start, pid, device) of row `r`.
    fn place(&self, r: &Row) -> rusqlite::Result<(i64, u32, i64)> {
        let pid = pid_of(self.global_pid.get(r)?.unwrap_or(0));
        Ok((self.start.get(r)?, pid, self.device_id.get(r)?.unwrap_or(0)))
    }
}

columns! {
    /// How much of a memory pool is held and used (nsys 2022.4 and later),
    /// in [`MEMORY_USAGE`] and [`MEMORY_POOLS`].
    struct PoolUseColumns = POOL_USE {
        size: Option<i64> = expected("localMemoryPoolSize"),
        used: Option<i64> = expected("localMemoryPoolUtilizedSize"),
    }
}

impl PoolUseColumns<Taken> {
    /// The state of the pool at `address` in row `r`.
    fn state(&self, address: i64, r: &Row) -> rusqlite::Result<PoolState> {
        Ok(PoolState {
            address,
            size: self.size.get(r)?,
            used: self.used.get(r)?,
        })
    }
}

columns! {
    /// The columns of [`MEMORY_POOLS`] that say what was done to a pool.
    struct PoolSettingColumns = POOL_SETTINGS {
        /// `ENUM_CUDA_MEMPOOL_OPER`.
        operation: Option<i64> = required("operationType"),
        /// `ENUM_CUDA_MEMPOOL_TYPE`.
        pool_type: Option<i64> = expected("poolType"),
        min_bytes_to_keep: Option<i64> = optional("minBytesToKeep"),
        release_threshold: Option<i64> = expected("localMemoryPoolReleaseThreshold"),
        correlation_id: Option<i64> = expected("correlationId"),
    }
    /// What a pool operation did, and to what settings.
    pub(crate) struct PoolSettings;
}

/// A memory pool created, trimmed or destroyed.
pub(crate) struct PoolOperation {
    pub ts: i64,
    pub pid: u32,
    pub device: i64,
    pub state: PoolState,
    pub settings: PoolSettings,
}

pub(crate) enum DeviceEvent {
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
    pub(crate) fn gpu_metric_names(&self) -> rusqlite::Result<FxHashMap<(i64, i64), String>> {
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
            names.insert((r.get("typeId")?, r.get("metricId")?), r.get("metricName")?);
        }
        Ok(names)
    }

    /// Calls `f` with every GPU metric sample, memory event and unified-memory
    /// fault that `filter` keeps, in time order.
    pub(crate) fn for_each_device_event<E: From<rusqlite::Error>>(
        &self,
        filter: &RowFilter,
        f: impl FnMut(DeviceEvent) -> Result<(), E>,
    ) -> Result<(), E> {
        let scans = [
            self.metric_scan(),
            self.memory_scan(),
            self.pool_scan(),
            self.gpu_fault_scan(),
            self.cpu_fault_scan(),
        ];
        self.stream_events(scans.into_iter().flatten().collect(), filter, f)
    }

    fn metric_scan(&self) -> Option<TableScan<'_, DeviceEvent>> {
        let declare = |s: &mut Select| {
            let ts = s.required("timestamp");
            let type_id = s.required("typeId");
            let metric_id = s.required("metricId");
            let value = s.required::<()>("value");
            move |r: &Row| {
                let value = match value.raw(r)? {
                    ValueRef::Real(v) => MetricValue::Real(v),
                    other => MetricValue::Int(other.as_i64_or_null()?.unwrap_or(0)),
                };
                Ok(DeviceEvent::Metric {
                    ts: ts.get(r)?,
                    type_id: type_id.get(r)?,
                    metric_id: metric_id.get(r)?,
                    value,
                })
            }
        };
        self.scan(GPU_METRICS, declare, DeviceEvent::key)
            .map(|scan| scan.time("timestamp"))
    }

    fn memory_scan(&self) -> Option<TableScan<'_, DeviceEvent>> {
        let declare = |s: &mut Select| {
            let on = ON_DEVICE.take_all(s);
            let bytes = s.required::<Option<i64>>("bytes");
            let operation = s.required::<Option<i64>>("memoryOperationType");
            let pool = s.optional("localMemoryPoolAddress");
            let pool_use = POOL_USE.take_all(s);
            move |r: &Row| {
                let (ts, pid, device) = on.place(r)?;
                let pool = match pool.get(r)? {
                    Some(address) => Some(pool_use.state(address, r)?),
                    None => None,
                };
                Ok(DeviceEvent::Memory {
                    ts,
                    pid,
                    device,
                    bytes: bytes.get(r)?.unwrap_or(0),
                    // ENUM_CUDA_DEV_MEM_EVENT_OPER: 0 allocation, 1 deallocation.
                    freed: operation.get(r)? == Some(1),
                    pool,
                })
            }
        };
        self.scan(MEMORY_USAGE, declare, DeviceEvent::key)
    }

    fn pool_scan(&self) -> Option<TableScan<'_, DeviceEvent>> {
        let declare = |s: &mut Select| {
            let on = ON_DEVICE.take_all(s);
            let address = s.required::<Option<i64>>("address");
            let pool_use = POOL_USE.take_all(s);
            let settings = POOL_SETTINGS.take_all(s);
            move |r: &Row| {
                let (ts, pid, device) = on.place(r)?;
                Ok(DeviceEvent::Pool(PoolOperation {
                    ts,
                    pid,
                    device,
                    state: pool_use.state(address.get(r)?.unwrap_or(0), r)?,
                    settings: settings.read(r)?,
                }))
            }
        };
        self.scan(MEMORY_POOLS, declare, DeviceEvent::key)
    }

    fn gpu_fault_scan(&self) -> Option<TableScan<'_, DeviceEvent>> {
        let declare = |s: &mut Select| {
            let on = ON_DEVICE.take_all(s);
            let end = s.required::<Option<i64>>("end");
            let address = s.optional("address");
            let faults = s.optional("numberOfPageFaults");
            let access = s.optional("faultAccessType");
            move |r: &Row| {
                let (start, pid, device) = on.place(r)?;
                Ok(DeviceEvent::GpuFaults {
                    start,
                    end: end.get(r)?.unwrap_or(start),
                    pid,
                    device,
                    address: address.get(r)?,
                    faults: faults.get(r)?,
                    access: access.get(r)?,
                })
            }
        };
        self.scan(UM_GPU_FAULTS, declare, DeviceEvent::key)
    }

    fn cpu_fault_scan(&self) -> Option<TableScan<'_, DeviceEvent>> {
        let declare = |s: &mut Select| {
            let ts = s.take(CPU_FAULTS.start);
            let gpid = s.take(CPU_FAULTS.global_pid);
            let address = s.take(CPU_FAULTS.address);
            move |r: &Row| {
                Ok(DeviceEvent::CpuFault {
                    ts: ts.get(r)?,
                    pid: pid_of(gpid.get(r)?.unwrap_or(0)),
                    address: address.get(r)?,
                })
            }
        };
        self.scan(UM_CPU_FAULTS, declare, DeviceEvent::key)
    }
}
