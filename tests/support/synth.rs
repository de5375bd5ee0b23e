//! Synthetic Nsight Systems SQLite exports, for tests and the demo report.
//!
//! Tables and columns are named, ordered and typed as in a recent `nsys export`
//! (2026.2), and created the first time a row of them is added, as nsys does:
//! a test that adds no NVTX event gets a file without `NVTX_EVENTS`.
//! `drop_table` and `drop_column` make the older or trimmed exports the
//! reader must also accept.
//!
//! Failures panic: this is test support, and a broken fixture is a broken test.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;

use rusqlite::types::Value;
use rusqlite::Connection;

pub const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
pub const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
pub const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
pub const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";
pub const SYNC: &str = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
pub const NVTX: &str = "NVTX_EVENTS";
pub const CUDA_EVENT: &str = "CUPTI_ACTIVITY_KIND_CUDA_EVENT";
pub const GRAPH_EVENTS: &str = "CUDA_GRAPH_EVENTS";
pub const GRAPH_NODE_EVENTS: &str = "CUDA_GRAPH_NODE_EVENTS";
pub const PROFILER_OVERHEAD: &str = "PROFILER_OVERHEAD";
pub const CUPTI_OVERHEAD: &str = "CUPTI_ACTIVITY_KIND_OVERHEAD";
pub const DIAGNOSTIC_EVENT: &str = "DIAGNOSTIC_EVENT";

/// What CUPTI writes in `eventId` and `eventSyncId` when no event is involved.
pub const NO_EVENT: i64 = 4_294_967_295;

// eventClass (ENUM_NSYS_EVENT_CLASS) of the CUDA graph tables.
pub const GRAPH_NODE_CREATION: i64 = 77;
pub const GRAPH_EXEC_CREATION: i64 = 94;
pub const GRAPH_CREATION: i64 = 95;

// Diagnostics (ENUM_DIAGNOSTIC_SEVERITY_LEVEL, ENUM_DIAGNOSTIC_SOURCE_TYPE).
pub const INFO: i64 = 1;
pub const WARNING: i64 = 2;
pub const ERROR: i64 = 3;
const DAEMON: i64 = 2;
const TARGET_TIMESTAMP: i64 = 1;

// Memcpy copyKind (ENUM_CUDA_MEMCPY_OPER).
pub const HTOD: i64 = 1;
pub const DTOH: i64 = 2;
pub const DTOD: i64 = 8;
pub const PTOP: i64 = 10;

// Synchronization syncType (ENUM_CUPTI_SYNC_TYPE).
pub const EVENT_SYNC: i64 = 1;
pub const STREAM_WAIT_EVENT: i64 = 2;
pub const STREAM_SYNC: i64 = 3;
pub const CONTEXT_SYNC: i64 = 4;

// NVTX eventType (ENUM_NSYS_EVENT_TYPE).
const NVTX_MARK: i64 = 34;
const NVTX_PUSH_POP: i64 = 59;
const NVTX_START_END: i64 = 60;
const NVTX_DOMAIN_CREATE: i64 = 75;

// eventClass (ENUM_NSYS_EVENT_CLASS) of CUPTI_ACTIVITY_KIND_RUNTIME rows.
const CUDA_RUNTIME_CLASS: i64 = 0;
const CUDA_DRIVER_CLASS: i64 = 1;

/// `vmId` of the local machine: the bits nsys puts above pid and tid.
const LOCAL_VM: i64 = 1 << 48;

/// Column definitions of the tables this builder writes, as in
/// `nsys export` 2026.2 (`TARGET_INFO_GPU` from 2026.2 too).
const TABLES: &[(&str, &[&str])] = &[
    // CUDA event records: no times of their own (`timestamp`, the event's
    // completion on the device, from 2026.2 and 0 where not collected).
    (
        CUDA_EVENT,
        &[
            "timestamp INTEGER",
            "deviceId INTEGER NOT NULL",
            "contextId INTEGER NOT NULL",
            "greenContextId INTEGER",
            "streamId INTEGER NOT NULL",
            "correlationId INTEGER",
            "globalPid INTEGER",
            "eventId INTEGER NOT NULL",
            "eventSyncId INTEGER",
        ],
    ),
    // A graphics API the converter does not read (2022.4).
    (
        "OPENGL_API",
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "eventClass INTEGER NOT NULL",
            "globalTid INTEGER",
            "endGlobalTid INTEGER",
            "correlationId INTEGER",
            "endCorrelationId INTEGER",
            "nameId INTEGER NOT NULL",
            "endNameId INTEGER",
            "returnValue INTEGER NOT NULL",
            "frameId INTEGER",
            "contextId INTEGER",
            "gpu INTEGER",
            "display INTEGER",
        ],
    ),
    // The creation of CUDA graphs, execs and nodes (nsys 2025.3 and 2026.2).
    (
        GRAPH_EVENTS,
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "eventClass INTEGER NOT NULL",
            "globalTid INTEGER",
            "nameId INTEGER NOT NULL",
            "graphId INTEGER",
            "originalGraphId INTEGER",
            "graphExecId INTEGER",
        ],
    ),
    (
        GRAPH_NODE_EVENTS,
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "eventClass INTEGER NOT NULL",
            "globalTid INTEGER",
            "nameId INTEGER NOT NULL",
            "graphNodeId INTEGER NOT NULL",
            "originalGraphNodeId INTEGER",
        ],
    ),
    // The profiler's own overhead and diagnostics (2026.2).
    (
        PROFILER_OVERHEAD,
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "globalTid INTEGER",
            "nameId INTEGER NOT NULL",
            "overheadType INTEGER NOT NULL",
        ],
    ),
    (
        CUPTI_OVERHEAD,
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "eventClass INTEGER NOT NULL",
            "globalTid INTEGER",
            "correlationId INTEGER",
            "nameId INTEGER",
            "overheadType INTEGER NOT NULL",
        ],
    ),
    (
        DIAGNOSTIC_EVENT,
        &[
            "timestamp INTEGER NOT NULL",
            "timestampType INTEGER NOT NULL",
            "source INTEGER NOT NULL",
            "severity INTEGER NOT NULL",
            "text TEXT NOT NULL",
            "globalPid INTEGER",
        ],
    ),
    // Graph-level records of `--cuda-graph-trace=graph` (nsys 2023 and later).
    (
        "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "deviceId INTEGER NOT NULL",
            "contextId INTEGER NOT NULL",
            "greenContextId INTEGER",
            "streamId INTEGER NOT NULL",
            "correlationId INTEGER",
            "globalPid INTEGER",
            "graphId INTEGER",
            "graphExecId INTEGER",
        ],
    ),
    // GPU metrics (nsys 2023 and later) and CUDA memory / unified memory (2022.4).
    (
        "GPU_METRICS",
        &[
            "timestamp INTEGER",
            "typeId INTEGER NOT NULL",
            "metricId INTEGER NOT NULL",
            "value INTEGER NOT NULL",
        ],
    ),
    (
        "TARGET_INFO_GPU_METRICS",
        &[
            "typeId INTEGER NOT NULL",
            "sourceId INTEGER NOT NULL",
            "typeName TEXT NOT NULL",
            "metricId INTEGER NOT NULL",
            "metricName TEXT NOT NULL",
        ],
    ),
    (
        "CUDA_GPU_MEMORY_USAGE_EVENTS",
        &[
            "start INTEGER NOT NULL",
            "globalPid INTEGER NOT NULL",
            "deviceId INTEGER NOT NULL",
            "contextId INTEGER NOT NULL",
            "address INTEGER NOT NULL",
            "pc INTEGER NOT NULL",
            "bytes INTEGER NOT NULL",
            "memKind INTEGER NOT NULL",
            "memoryOperationType INTEGER NOT NULL",
            "name TEXT",
            "correlationId INTEGER",
            "localMemoryPoolAddress INTEGER",
            "localMemoryPoolReleaseThreshold INTEGER",
            "localMemoryPoolSize INTEGER",
            "localMemoryPoolUtilizedSize INTEGER",
            "importedMemoryPoolAddress INTEGER",
            "importedMemoryPoolProcessId INTEGER",
        ],
    ),
    (
        "CUDA_GPU_MEMORY_POOL_EVENTS",
        &[
            "start INTEGER NOT NULL",
            "globalPid INTEGER NOT NULL",
            "deviceId INTEGER NOT NULL",
            "address INTEGER NOT NULL",
            "operationType INTEGER NOT NULL",
            "poolType INTEGER NOT NULL",
            "correlationId INTEGER",
            "minBytesToKeep INTEGER",
            "localMemoryPoolReleaseThreshold INTEGER",
            "localMemoryPoolSize INTEGER",
            "localMemoryPoolUtilizedSize INTEGER",
        ],
    ),
    (
        "CUDA_UM_GPU_PAGE_FAULT_EVENTS",
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "globalPid INTEGER NOT NULL",
            "deviceId INTEGER NOT NULL",
            "address INTEGER NOT NULL",
            "numberOfPageFaults INTEGER NOT NULL",
            "faultAccessType INTEGER NOT NULL",
        ],
    ),
    (
        "CUDA_UM_CPU_PAGE_FAULT_EVENTS",
        &[
            "start INTEGER NOT NULL",
            "globalPid INTEGER NOT NULL",
            "address INTEGER NOT NULL",
            "originalFaultPc INTEGER",
            "CpuInstruction INTEGER",
            "module INTEGER",
            "unresolvedFaultPc INTEGER",
        ],
    ),
    // Library tables, as nsys 2022.4 (cuDNN, cuBLAS, OpenACC, OpenMP) and
    // later versions (MPI) name them.
    (
        "CUDNN_EVENTS",
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "eventClass INTEGER NOT NULL",
            "globalTid INTEGER",
            "nameId INTEGER NOT NULL",
        ],
    ),
    (
        "CUBLAS_EVENTS",
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "eventClass INTEGER NOT NULL",
            "globalTid INTEGER",
            "nameId INTEGER NOT NULL",
        ],
    ),
    (
        "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "nameId INTEGER NOT NULL",
            "globalTid INTEGER",
            "eventKind INTEGER NOT NULL",
            "DeviceType INTEGER NOT NULL",
            "lineNo INTEGER NOT NULL",
            "cuDeviceId INTEGER NOT NULL",
            "cuContextId INTEGER NOT NULL",
            "cuStreamId INTEGER NOT NULL",
            "srcFile INTEGER",
            "funcName INTEGER",
            "numGangs INTEGER",
            "numWorkers INTEGER",
            "vectorLength INTEGER",
            "kernelName INTEGER",
        ],
    ),
    (
        "OPENMP_EVENT_KIND_PARALLEL",
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "eventClass INTEGER NOT NULL",
            "globalTid INTEGER",
            "correlationId INTEGER",
            "nameId INTEGER NOT NULL",
            "eventKind INTEGER",
            "parallelId INTEGER",
            "parentTaskId INTEGER",
        ],
    ),
    (
        "MPI_P2P_EVENTS",
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "globalTid INTEGER",
            "textId INTEGER",
            "commHandle INTEGER",
            "tag INTEGER",
            "remoteRank INTEGER",
            "size INTEGER",
            "requestHandle INTEGER",
        ],
    ),
    (
        "MPI_COLLECTIVES_EVENTS",
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "globalTid INTEGER",
            "textId INTEGER",
            "commHandle INTEGER",
            "rootRank INTEGER",
            "size INTEGER",
            "collSendSize INTEGER",
            "collRecvSize INTEGER",
            "requestHandle INTEGER",
        ],
    ),
    // MPI ranks and UCX (UCP) calls, as NVIDIA's SQLite schema reference
    // documents them (no fixture has them).
    (
        "MPI_RANKS",
        &["globalTid INTEGER NOT NULL", "rank INTEGER NOT NULL"],
    ),
    (
        "UCP_WORKERS",
        &["globalTid INTEGER NOT NULL", "workerUid INTEGER NOT NULL"],
    ),
    (
        "UCP_SUBMIT_EVENTS",
        &[
            "start INTEGER NOT NULL",
            "end INTEGER",
            "globalTid INTEGER",
            "textId INTEGER",
            "bufferAddr INTEGER",
            "packedSize INTEGER",
            "peerWorkerUid INTEGER",
            "tag INTEGER",
        ],
    ),
    (
        "UCP_PROGRESS_EVENTS",
        &[
            "start INTEGER NOT NULL",
            "end INTEGER",
            "globalTid INTEGER",
            "textId INTEGER",
            "bufferAddr INTEGER",
            "packedSize INTEGER",
            "peerWorkerUid INTEGER",
            "tag INTEGER",
        ],
    ),
    (
        "UCP_EVENTS",
        &[
            "start INTEGER NOT NULL",
            "end INTEGER",
            "globalTid INTEGER",
            "textId INTEGER",
        ],
    ),
    // CUDA contexts (green ones from nsys 2024.5; numMultiprocessors 2026.1)
    // and call stacks: CUDA API backtraces and CPU samples, as the schema
    // reference documents them.
    (
        "TARGET_INFO_CUDA_CONTEXT_INFO",
        &[
            "nullStreamId INTEGER NOT NULL",
            "hwId INTEGER NOT NULL",
            "vmId INTEGER NOT NULL",
            "processId INTEGER NOT NULL",
            "deviceId INTEGER NOT NULL",
            "contextId INTEGER NOT NULL",
            "parentContextId INTEGER",
            "isGreenContext INTEGER",
            "numMultiprocessors INTEGER",
        ],
    ),
    (
        "CUDA_CALLCHAINS",
        &[
            "id INTEGER NOT NULL",
            "symbol INTEGER NOT NULL",
            "module INTEGER NOT NULL",
            "unresolved INTEGER",
            "originalIP INTEGER",
            "stackDepth INTEGER NOT NULL",
            "PRIMARY KEY (id, stackDepth)",
        ],
    ),
    (
        "COMPOSITE_EVENTS",
        &[
            "id INTEGER NOT NULL PRIMARY KEY",
            "start INTEGER NOT NULL",
            "cpu INTEGER",
            "threadState INTEGER",
            "globalTid INTEGER",
            "cpuCycles INTEGER NOT NULL",
        ],
    ),
    (
        "SAMPLING_CALLCHAINS",
        &[
            "id INTEGER NOT NULL",
            "symbol INTEGER NOT NULL",
            "module INTEGER NOT NULL",
            "kernelMode INTEGER",
            "thumbCode INTEGER",
            "unresolved INTEGER",
            "specialEntry INTEGER",
            "originalIP INTEGER",
            "unwindMethod INTEGER",
            "stackDepth INTEGER NOT NULL",
            "PRIMARY KEY (id, stackDepth)",
        ],
    ),
    (
        "StringIds",
        &["id INTEGER NOT NULL PRIMARY KEY", "value TEXT NOT NULL"],
    ),
    (
        "PROCESSES",
        &["globalPid INTEGER", "pid INTEGER", "name TEXT"],
    ),
    (
        "ThreadNames",
        &[
            "nameId INTEGER NOT NULL",
            "priority INTEGER",
            "globalTid INTEGER",
        ],
    ),
    (
        "TARGET_INFO_GPU",
        &[
            "vmId INTEGER NOT NULL",
            "id INTEGER NOT NULL",
            "name TEXT",
            "busLocation TEXT",
            "isDiscrete INTEGER",
            "l2CacheSize INTEGER",
            "totalMemory INTEGER",
            "memoryBandwidth INTEGER",
            "clockRate INTEGER",
            "smCount INTEGER",
            "pwGpuId INTEGER",
            "uuid TEXT",
            "luid INTEGER",
            "chipName TEXT",
            "cuDevice INTEGER",
            "ctxswDevPath TEXT",
            "ctrlDevPath TEXT",
            "revision INTEGER",
            "nodeMask INTEGER",
            "constantMemory INTEGER",
            "maxIPC INTEGER",
            "maxRegistersPerBlock INTEGER",
            "maxShmemPerBlock INTEGER",
            "maxShmemPerBlockOptin INTEGER",
            "maxShmemPerSm INTEGER",
            "maxRegistersPerSm INTEGER",
            "threadsPerWarp INTEGER",
            "asyncEngines INTEGER",
            "maxWarpsPerSm INTEGER",
            "maxBlocksPerSm INTEGER",
            "maxThreadsPerBlock INTEGER",
            "maxBlockDimX INTEGER",
            "maxBlockDimY INTEGER",
            "maxBlockDimZ INTEGER",
            "maxGridDimX INTEGER",
            "maxGridDimY INTEGER",
            "maxGridDimZ INTEGER",
            "computeMajor INTEGER",
            "computeMinor INTEGER",
            "smMajor INTEGER",
            "smMinor INTEGER",
        ],
    ),
    (
        "TARGET_INFO_SESSION_START_TIME",
        &[
            "utcEpochNs INTEGER",
            "utcTime TEXT",
            "localTime TEXT",
            "systemClockNs INTEGER",
        ],
    ),
    (
        RUNTIME,
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "eventClass INTEGER NOT NULL",
            "globalTid INTEGER",
            "correlationId INTEGER",
            "nameId INTEGER NOT NULL",
            "returnValue INTEGER NOT NULL",
            "callchainId INTEGER",
        ],
    ),
    (
        KERNEL,
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "deviceId INTEGER NOT NULL",
            "contextId INTEGER NOT NULL",
            "greenContextId INTEGER",
            "streamId INTEGER NOT NULL",
            "correlationId INTEGER",
            "globalPid INTEGER",
            "demangledName INTEGER NOT NULL",
            "shortName INTEGER NOT NULL",
            "mangledName INTEGER",
            "launchType INTEGER",
            "cacheConfig INTEGER",
            "registersPerThread INTEGER NOT NULL",
            "gridX INTEGER NOT NULL",
            "gridY INTEGER NOT NULL",
            "gridZ INTEGER NOT NULL",
            "blockX INTEGER NOT NULL",
            "blockY INTEGER NOT NULL",
            "blockZ INTEGER NOT NULL",
            "staticSharedMemory INTEGER NOT NULL",
            "dynamicSharedMemory INTEGER NOT NULL",
            "localMemoryPerThread INTEGER NOT NULL",
            "localMemoryTotal INTEGER NOT NULL",
            "gridId INTEGER NOT NULL",
            "sharedMemoryExecuted INTEGER",
            "graphNodeId INTEGER",
            "sharedMemoryLimitConfig INTEGER",
            "qmdBulkReleaseDone INTEGER",
            "qmdPreexitDone INTEGER",
            "qmdLastCtaDone INTEGER",
            "graphId INTEGER",
            "clusterX INTEGER",
            "clusterY INTEGER",
            "clusterZ INTEGER",
            "clusterSchedulingPolicy INTEGER",
            "maxPotentialClusterSize INTEGER",
            "maxActiveClusters INTEGER",
            "sharedMemoryRequestedPercentage INTEGER",
            "tensorSizeMinusOneElements TEXT NOT NULL",
        ],
    ),
    (
        MEMCPY,
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "deviceId INTEGER NOT NULL",
            "contextId INTEGER NOT NULL",
            "greenContextId INTEGER",
            "streamId INTEGER NOT NULL",
            "correlationId INTEGER",
            "globalPid INTEGER",
            "bytes INTEGER NOT NULL",
            "copyKind INTEGER NOT NULL",
            "deprecatedSrcId INTEGER",
            "srcKind INTEGER",
            "dstKind INTEGER",
            "srcDeviceId INTEGER",
            "srcContextId INTEGER",
            "dstDeviceId INTEGER",
            "dstContextId INTEGER",
            "migrationCause INTEGER",
            "graphNodeId INTEGER",
            "virtualAddress INTEGER",
            "copyCount INTEGER",
        ],
    ),
    (
        MEMSET,
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "deviceId INTEGER NOT NULL",
            "contextId INTEGER NOT NULL",
            "greenContextId INTEGER",
            "streamId INTEGER NOT NULL",
            "correlationId INTEGER",
            "globalPid INTEGER",
            "value INTEGER NOT NULL",
            "bytes INTEGER NOT NULL",
            "graphNodeId INTEGER",
            "memKind INTEGER",
        ],
    ),
    (
        SYNC,
        &[
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "deviceId INTEGER NOT NULL",
            "contextId INTEGER NOT NULL",
            "greenContextId INTEGER",
            "streamId INTEGER NOT NULL",
            "correlationId INTEGER",
            "globalPid INTEGER",
            "deprecatedSyncType INTEGER",
            "syncType INTEGER NOT NULL",
            "eventId INTEGER NOT NULL",
            "eventSyncId INTEGER",
        ],
    ),
    (
        NVTX,
        &[
            "start INTEGER NOT NULL",
            "end INTEGER",
            "eventType INTEGER NOT NULL",
            "rangeId INTEGER",
            "category INTEGER",
            "color INTEGER",
            "text TEXT",
            "globalTid INTEGER",
            "endGlobalTid INTEGER",
            "textId INTEGER",
            "domainId INTEGER",
            "uint64Value INTEGER",
            "int64Value INTEGER",
            "doubleValue REAL",
            "uint32Value INTEGER",
            "int32Value INTEGER",
            "floatValue REAL",
            "jsonTextId INTEGER",
            "jsonText TEXT",
            "binaryData TEXT",
        ],
    ),
];

/// A CPU thread of the profiled machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thread {
    pub pid: u32,
    pub tid: u32,
}

impl Thread {
    /// nsys's packed thread id: `(1 << 48) | pid << 24 | tid`.
    pub fn global_tid(self) -> i64 {
        assert!(
            self.tid < 1 << 24,
            "tid {} does not fit in 24 bits",
            self.tid
        );
        global_pid(self.pid) | i64::from(self.tid)
    }
}

/// nsys's packed process id: a `globalTid` with tid 0.
pub fn global_pid(pid: u32) -> i64 {
    assert!(pid < 1 << 24, "pid {pid} does not fit in 24 bits");
    LOCAL_VM | i64::from(pid) << 24
}

/// Where GPU work runs: nsys names a stream by process, device, context and
/// stream id (stream ids are unique only within a context).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuStream {
    pub pid: u32,
    /// `TARGET_INFO_GPU.id`.
    pub device: i64,
    pub context: i64,
    pub stream: i64,
}

enum TableState {
    Present {
        dropped_columns: Vec<String>,
    },
    /// Dropped by the test: stays absent, its rows are discarded.
    Dropped,
}

/// A synthetic export being written. Call [`Synth::finish`] to keep it:
/// everything is one transaction, rolled back if the builder is dropped.
pub struct Synth {
    conn: Connection,
    tables: HashMap<String, TableState>,
    strings: HashMap<String, i64>,
    next_grid_id: i64,
    next_nvtx_range_id: i64,
}

impl Synth {
    /// Starts an export at `path`, replacing any file there. `StringIds` is
    /// created at once: every nsys export has it, and the reader requires it.
    pub fn new(path: &Path) -> Synth {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("synth: cannot replace {}: {e}", path.display()),
        }
        let conn = Connection::open(path)
            .unwrap_or_else(|e| panic!("synth: cannot create {}: {e}", path.display()));
        let mut synth = Synth {
            conn,
            tables: HashMap::new(),
            strings: HashMap::new(),
            next_grid_id: 1,
            next_nvtx_range_id: 1,
        };
        synth.exec("BEGIN");
        synth.create_table("StringIds");
        synth
    }

    /// The `StringIds` id of `s`, added on first use.
    pub fn string(&mut self, s: &str) -> i64 {
        if let Some(&id) = self.strings.get(s) {
            return id;
        }
        let id = self.strings.len() as i64 + 1;
        self.strings.insert(s.to_owned(), id);
        self.insert("StringIds", vec![("id", id.into()), ("value", text(s))]);
        id
    }

    pub fn process(&mut self, pid: u32, name: &str) {
        self.insert(
            "PROCESSES",
            vec![
                ("globalPid", global_pid(pid).into()),
                ("pid", pid.into()),
                ("name", text(name)),
            ],
        );
    }

    pub fn thread(&mut self, thread: Thread, name: &str) {
        let name_id = self.string(name);
        self.insert(
            "ThreadNames",
            vec![
                ("nameId", name_id.into()),
                // What nsys records for names it reads from the OS.
                ("priority", 20.into()),
                ("globalTid", thread.global_tid().into()),
            ],
        );
    }

    /// A GPU; `id` is the `deviceId` of the GPU activity rows.
    pub fn gpu(&mut self, id: i64, name: &str) {
        self.insert(
            "TARGET_INFO_GPU",
            vec![
                ("vmId", LOCAL_VM.into()),
                ("id", id.into()),
                ("name", text(name)),
            ],
        );
    }

    /// The wall clock of session time 0. Only `utcEpochNs` is written: the
    /// text columns are nullable and the reader does not use them.
    pub fn session_start(&mut self, unix_ns: i64) {
        self.insert(
            "TARGET_INFO_SESSION_START_TIME",
            vec![("utcEpochNs", unix_ns.into())],
        );
    }

    /// A CUDA API call that succeeded. `name` as nsys records it, version
    /// suffix included (`cudaLaunchKernel_v7000`); `cu*` names are driver calls.
    pub fn api(&mut self, thread: Thread, start: i64, end: i64, name: &str, correlation_id: i64) {
        let name_id = self.string(name);
        let class = if name.starts_with("cuda") {
            CUDA_RUNTIME_CLASS
        } else {
            CUDA_DRIVER_CLASS
        };
        self.insert(
            RUNTIME,
            vec![
                ("start", start.into()),
                ("end", end.into()),
                ("eventClass", class.into()),
                ("globalTid", thread.global_tid().into()),
                ("correlationId", correlation_id.into()),
                ("nameId", name_id.into()),
                ("returnValue", 0.into()),
            ],
        );
    }

    /// A kernel with a fixed, plausible launch configuration: tests care about
    /// where and when it ran, not its shape.
    pub fn kernel(
        &mut self,
        on: GpuStream,
        start: i64,
        end: i64,
        correlation_id: i64,
        short_name: &str,
        demangled_name: &str,
    ) {
        let short_id = self.string(short_name);
        let demangled_id = self.string(demangled_name);
        let grid_id = self.next_grid_id;
        self.next_grid_id += 1;
        let mut row = gpu_columns(on, start, end, correlation_id);
        row.extend([
            ("demangledName", demangled_id.into()),
            ("shortName", short_id.into()),
            ("launchType", 1.into()), // regular
            ("registersPerThread", 32.into()),
            ("gridX", 264.into()),
            ("gridY", 1.into()),
            ("gridZ", 1.into()),
            ("blockX", 256.into()),
            ("blockY", 1.into()),
            ("blockZ", 1.into()),
            ("staticSharedMemory", 0.into()),
            ("dynamicSharedMemory", 0.into()),
            ("localMemoryPerThread", 0.into()),
            ("localMemoryTotal", 0.into()),
            ("gridId", grid_id.into()),
            ("tensorSizeMinusOneElements", text("[]")),
        ]);
        self.insert(KERNEL, row);
    }

    /// A copy of `bytes`; `copy_kind` is a memcpy copyKind ([`HTOD`], ...).
    pub fn memcpy(
        &mut self,
        on: GpuStream,
        start: i64,
        end: i64,
        correlation_id: i64,
        bytes: i64,
        copy_kind: i64,
    ) {
        // Memory kinds as a typical program has them: pinned host, device.
        let (src_kind, dst_kind) = match copy_kind {
            HTOD => (Some(1), Some(2)),
            DTOH => (Some(2), Some(1)),
            DTOD | PTOP => (Some(2), Some(2)),
            _ => (None, None),
        };
        let mut row = gpu_columns(on, start, end, correlation_id);
        row.extend([
            ("bytes", bytes.into()),
            ("copyKind", copy_kind.into()),
            ("srcKind", src_kind.into()),
            ("dstKind", dst_kind.into()),
            ("copyCount", 1.into()),
        ]);
        self.insert(MEMCPY, row);
    }

    /// Zeroing `bytes` of device memory.
    pub fn memset(&mut self, on: GpuStream, start: i64, end: i64, correlation_id: i64, bytes: i64) {
        let mut row = gpu_columns(on, start, end, correlation_id);
        row.extend([
            ("value", 0.into()),
            ("bytes", bytes.into()),
            ("memKind", 2.into()), // device
        ]);
        self.insert(MEMSET, row);
    }

    /// A synchronization; `sync_type` is a syncType ([`STREAM_SYNC`], ...).
    /// `correlation_id` is that of the API call that waited.
    pub fn sync(
        &mut self,
        on: GpuStream,
        start: i64,
        end: i64,
        correlation_id: i64,
        sync_type: i64,
    ) {
        let mut row = gpu_columns(on, start, end, correlation_id);
        row.extend([
            ("syncType", sync_type.into()),
            // What nsys writes when no CUDA event is involved.
            ("eventId", 4_294_967_295_i64.into()),
        ]);
        self.insert(SYNC, row);
    }

    /// A `cudaEventRecord` of event `event_id` on `on`, made by the call with
    /// `correlation_id`; `sync_id` is its `eventSyncId` (nsys 2025.1 and later).
    pub fn event_record(
        &mut self,
        on: GpuStream,
        correlation_id: i64,
        event_id: i64,
        sync_id: Option<i64>,
    ) {
        self.insert(
            CUDA_EVENT,
            vec![
                ("deviceId", on.device.into()),
                ("contextId", on.context.into()),
                ("streamId", on.stream.into()),
                ("correlationId", correlation_id.into()),
                ("globalPid", global_pid(on.pid).into()),
                ("eventId", event_id.into()),
                ("eventSyncId", sync_id.into()),
                ("timestamp", 0.into()),
            ],
        );
    }

    /// A synchronization that waited on event `event_id` (the record
    /// `sync_id`, where given): an `EVENT_SYNC` or `STREAM_WAIT_EVENT`.
    #[allow(clippy::too_many_arguments)]
    pub fn event_wait(
        &mut self,
        on: GpuStream,
        start: i64,
        end: i64,
        correlation_id: i64,
        sync_type: i64,
        event_id: i64,
        sync_id: Option<i64>,
    ) {
        let mut row = gpu_columns(on, start, end, correlation_id);
        row.extend([
            ("syncType", sync_type.into()),
            ("eventId", event_id.into()),
            ("eventSyncId", sync_id.into()),
        ]);
        self.insert(SYNC, row);
    }

    /// A graph (`graph_exec` `None`) or graph exec created by `thread` at `ts`.
    pub fn graph_created(
        &mut self,
        thread: Thread,
        ts: i64,
        graph_id: i64,
        graph_exec: Option<i64>,
    ) {
        let (class, name) = match graph_exec {
            None => (GRAPH_CREATION, "Graph Creation"),
            Some(_) => (GRAPH_EXEC_CREATION, "GraphExec Creation"),
        };
        let name_id = self.string(name);
        self.insert(
            GRAPH_EVENTS,
            vec![
                ("start", ts.into()),
                ("end", ts.into()),
                ("eventClass", class.into()),
                ("globalTid", thread.global_tid().into()),
                ("nameId", name_id.into()),
                ("graphId", graph_id.into()),
                ("graphExecId", graph_exec.into()),
            ],
        );
    }

    /// Graph node `node` created by `thread` at `ts`; `original` is the node
    /// it was instantiated from.
    pub fn graph_node_created(
        &mut self,
        thread: Thread,
        ts: i64,
        node: i64,
        original: Option<i64>,
    ) {
        let name_id = self.string("Graph Node Creation");
        self.insert(
            GRAPH_NODE_EVENTS,
            vec![
                ("start", ts.into()),
                ("end", ts.into()),
                ("eventClass", GRAPH_NODE_CREATION.into()),
                ("globalTid", thread.global_tid().into()),
                ("nameId", name_id.into()),
                ("graphNodeId", node.into()),
                ("originalGraphNodeId", original.into()),
            ],
        );
    }

    /// A kernel run as graph node `node` (see [`Synth::kernel`]).
    #[allow(clippy::too_many_arguments)]
    pub fn graph_kernel(
        &mut self,
        on: GpuStream,
        start: i64,
        end: i64,
        correlation_id: i64,
        name: &str,
        graph_id: i64,
        node: i64,
    ) {
        self.kernel(on, start, end, correlation_id, name, name);
        self.exec(&format!(
            "UPDATE \"{KERNEL}\" SET graphId = {graph_id}, graphNodeId = {node} WHERE rowid = last_insert_rowid()"
        ));
    }

    /// Profiler overhead `name` on `thread` (none: `globalTid` NULL);
    /// `overhead_type` is an `ENUM_CUPTI_OVERHEAD_TYPE`.
    pub fn profiler_overhead(
        &mut self,
        thread: Option<Thread>,
        start: i64,
        end: i64,
        name: &str,
        overhead_type: i64,
    ) {
        let name_id = self.string(name);
        self.insert(
            PROFILER_OVERHEAD,
            vec![
                ("start", start.into()),
                ("end", end.into()),
                ("globalTid", thread.map(Thread::global_tid).into()),
                ("nameId", name_id.into()),
                ("overheadType", overhead_type.into()),
            ],
        );
    }

    /// Overhead CUPTI reports for the API call `correlation_id` of `thread`.
    pub fn cupti_overhead(
        &mut self,
        thread: Thread,
        start: i64,
        end: i64,
        correlation_id: i64,
        name: &str,
        overhead_type: i64,
    ) {
        let name_id = self.string(name);
        self.insert(
            CUPTI_OVERHEAD,
            vec![
                ("start", start.into()),
                ("end", end.into()),
                ("eventClass", 103.into()), // CUDA overhead
                ("globalTid", thread.global_tid().into()),
                ("correlationId", correlation_id.into()),
                ("nameId", name_id.into()),
                ("overheadType", overhead_type.into()),
            ],
        );
    }

    /// A diagnostic message from nsys's daemon about process `pid` (none:
    /// the session), as nsys writes it.
    pub fn diagnostic(&mut self, ts: i64, pid: Option<u32>, severity: i64, message: &str) {
        // nsys's own messages carry this globalPid: a VM id, no process.
        const NO_PROCESS: i64 = -144_115_188_075_855_872;
        self.insert(
            DIAGNOSTIC_EVENT,
            vec![
                ("timestamp", ts.into()),
                ("timestampType", TARGET_TIMESTAMP.into()),
                ("source", DAEMON.into()),
                ("severity", severity.into()),
                ("text", text(message)),
                ("globalPid", pid.map_or(NO_PROCESS, global_pid).into()),
            ],
        );
    }

    /// An NVTX push/pop range; `end` is `None` for a range still open when
    /// the capture stopped. `domain` 0 is the default domain.
    pub fn nvtx_push_pop(
        &mut self,
        thread: Thread,
        start: i64,
        end: Option<i64>,
        message: &str,
        domain: i64,
    ) {
        self.insert(
            NVTX,
            vec![
                ("start", start.into()),
                ("end", end.into()),
                ("eventType", NVTX_PUSH_POP.into()),
                ("text", text(message)),
                ("globalTid", thread.global_tid().into()),
                ("domainId", domain.into()),
            ],
        );
    }

    /// An NVTX start/end range, started on `start_thread` and ended on
    /// `end_thread` (not recorded while `end` is `None`).
    pub fn nvtx_start_end(
        &mut self,
        start_thread: Thread,
        end_thread: Thread,
        start: i64,
        end: Option<i64>,
        message: &str,
        domain: i64,
    ) {
        let range_id = self.next_nvtx_range_id;
        self.next_nvtx_range_id += 1;
        let end_tid = end.map(|_| end_thread.global_tid());
        self.insert(
            NVTX,
            vec![
                ("start", start.into()),
                ("end", end.into()),
                ("eventType", NVTX_START_END.into()),
                ("rangeId", range_id.into()),
                ("text", text(message)),
                ("globalTid", start_thread.global_tid().into()),
                ("endGlobalTid", end_tid.into()),
                ("domainId", domain.into()),
            ],
        );
    }

    pub fn nvtx_mark(&mut self, thread: Thread, ts: i64, message: &str, domain: i64) {
        self.insert(
            NVTX,
            vec![
                ("start", ts.into()),
                ("eventType", NVTX_MARK.into()),
                ("text", text(message)),
                ("globalTid", thread.global_tid().into()),
                ("domainId", domain.into()),
            ],
        );
    }

    /// Names NVTX domain `domain` of the thread's process.
    pub fn nvtx_domain(&mut self, thread: Thread, ts: i64, domain: i64, name: &str) {
        self.insert(
            NVTX,
            vec![
                ("start", ts.into()),
                ("eventType", NVTX_DOMAIN_CREATE.into()),
                ("text", text(name)),
                ("globalTid", thread.global_tid().into()),
                ("domainId", domain.into()),
            ],
        );
    }

    /// A CUDA context of process `pid` on GPU `device`; `parent` is the
    /// context a green context was made from, `sm_count` its SMs.
    pub fn cuda_context(
        &mut self,
        pid: u32,
        device: i64,
        context: i64,
        green: bool,
        parent: Option<i64>,
        sm_count: Option<i64>,
    ) {
        self.insert(
            "TARGET_INFO_CUDA_CONTEXT_INFO",
            vec![
                ("nullStreamId", 7.into()),
                ("hwId", 0.into()),
                ("vmId", 1.into()),
                ("processId", pid.into()),
                ("deviceId", device.into()),
                ("contextId", context.into()),
                // nsys writes 0 for "no parent" and for a context's SM count.
                ("parentContextId", parent.unwrap_or(0).into()),
                ("isGreenContext", i64::from(green).into()),
                ("numMultiprocessors", sm_count.unwrap_or(0).into()),
            ],
        );
    }

    /// Records the GPU work added so far on `on` as run in green context
    /// `green`; other work keeps the 0 nsys writes for "no green context".
    pub fn green_context(&mut self, on: GpuStream, green: i64) {
        for table in [KERNEL, MEMCPY, MEMSET, SYNC] {
            if !matches!(self.tables.get(table), Some(TableState::Present { .. })) {
                continue;
            }
            self.exec(&format!(
                "UPDATE \"{table}\" SET greenContextId = 0 WHERE greenContextId IS NULL"
            ));
            self.exec(&format!(
                "UPDATE \"{table}\" SET greenContextId = {green} WHERE globalPid = {} AND deviceId = {} AND contextId = {} AND streamId = {}",
                global_pid(on.pid),
                on.device,
                on.context,
                on.stream
            ));
        }
    }

    /// Call chain `id` of `table` (`CUDA_CALLCHAINS`, `SAMPLING_CALLCHAINS`,
    /// ...): `frames` as (function, module), innermost first.
    pub fn callchain(&mut self, table: &str, id: i64, frames: &[(&str, &str)]) {
        for (depth, (function, module)) in frames.iter().enumerate() {
            let symbol = self.string(function);
            let module = self.string(module);
            self.insert(
                table,
                vec![
                    ("id", id.into()),
                    ("symbol", symbol.into()),
                    ("module", module.into()),
                    ("stackDepth", (depth as i64).into()),
                ],
            );
        }
    }

    /// CPU sample `id` of `thread` on `cpu`; its stack is `SAMPLING_CALLCHAINS` `id`.
    pub fn cpu_sample(&mut self, thread: Thread, id: i64, ts: i64, cpu: i64) {
        self.insert(
            "COMPOSITE_EVENTS",
            vec![
                ("id", id.into()),
                ("start", ts.into()),
                ("cpu", cpu.into()),
                ("globalTid", thread.global_tid().into()),
                ("cpuCycles", 0.into()),
            ],
        );
    }

    /// Adds a row of any table this module knows the schema of.
    pub fn row(&mut self, table: &str, row: Vec<(&str, Value)>) {
        self.insert(table, row);
    }

    /// Removes `column` from `table`, creating the table if it has no row yet:
    /// the file will not have the column, whatever is added before or after.
    pub fn drop_column(&mut self, table: &str, column: &str) {
        match self.tables.get(table) {
            Some(TableState::Dropped) => return,
            Some(TableState::Present { .. }) => {}
            None => self.create_table(table),
        }
        self.exec(&format!("ALTER TABLE \"{table}\" DROP COLUMN \"{column}\""));
        if let Some(TableState::Present { dropped_columns }) = self.tables.get_mut(table) {
            dropped_columns.push(column.to_owned());
        }
    }

    /// Removes `table`: the file will not have it, whatever is added before or after.
    pub fn drop_table(&mut self, table: &str) {
        self.exec(&format!("DROP TABLE IF EXISTS \"{table}\""));
        self.tables.insert(table.to_owned(), TableState::Dropped);
    }

    /// Commits and compacts the file.
    pub fn finish(self) {
        self.exec("COMMIT");
        // Dropped columns and tables leave free pages behind.
        self.exec("VACUUM");
    }

    fn create_table(&mut self, table: &str) {
        let columns = TABLES
            .iter()
            .find(|(name, _)| *name == table)
            .map(|(_, columns)| *columns)
            .unwrap_or_else(|| panic!("synth: no schema for table {table}"));
        self.exec(&format!(
            "CREATE TABLE \"{table}\" ({})",
            columns.join(", ")
        ));
        self.tables.insert(
            table.to_owned(),
            TableState::Present {
                dropped_columns: Vec::new(),
            },
        );
    }

    /// Adds a row; columns it does not name are NULL.
    fn insert(&mut self, table: &str, mut row: Vec<(&str, Value)>) {
        match self.tables.get(table) {
            Some(TableState::Dropped) => return,
            Some(TableState::Present { dropped_columns }) => {
                row.retain(|(c, _)| !dropped_columns.iter().any(|d| d == c));
            }
            None => {
                self.create_table(table);
                return self.insert(table, row);
            }
        }
        if row.is_empty() {
            return;
        }
        let names: Vec<String> = row.iter().map(|(c, _)| format!("\"{c}\"")).collect();
        let sql = format!(
            "INSERT INTO \"{table}\" ({}) VALUES ({})",
            names.join(", "),
            vec!["?"; row.len()].join(", ")
        );
        let mut stmt = self
            .conn
            .prepare_cached(&sql)
            .unwrap_or_else(|e| panic!("synth: {sql}: {e}"));
        stmt.execute(rusqlite::params_from_iter(row.into_iter().map(|(_, v)| v)))
            .unwrap_or_else(|e| panic!("synth: {sql}: {e}"));
    }

    fn exec(&self, sql: &str) {
        self.conn
            .execute_batch(sql)
            .unwrap_or_else(|e| panic!("synth: {sql}: {e}"));
    }
}

/// The columns every GPU activity table starts with. `greenContextId` stays
/// NULL, as in exports before 2024.5, so traces carry no meaningless arg.
fn gpu_columns(
    on: GpuStream,
    start: i64,
    end: i64,
    correlation_id: i64,
) -> Vec<(&'static str, Value)> {
    vec![
        ("start", start.into()),
        ("end", end.into()),
        ("deviceId", on.device.into()),
        ("contextId", on.context.into()),
        ("streamId", on.stream.into()),
        ("correlationId", correlation_id.into()),
        ("globalPid", global_pid(on.pid).into()),
    ]
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}
