//! Synthetic Nsight Systems SQLite exports, for tests and the demo report.
//!
//! Tables and columns are named, ordered and typed as in a recent `nsys export`
//! (2026.2), and created the first time a row of them is added, as nsys does:
//! a test that adds no NVTX event gets a file without `NVTX_EVENTS`.
//! `drop_table` and `drop_column` make the older or trimmed exports the
//! reader must also accept.
//!
//! A row is made by a builder named for what it records, with the few values
//! that tell it apart as arguments (a thread or stream, a `start..end` span,
//! a name) and the others set by name, so that none can be swapped unnoticed:
//! `s.kernel(STREAM, 3_000..4_000, "gemm").corr(7).graph(1).node(2);`. It is
//! written at the end of that statement; columns left unset hold plausible
//! values, or NULL where nsys allows it.
//!
//! Failures panic: this is test support, and a broken fixture is a broken test.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::ops::{Range, RangeFrom};
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
pub const GRAPH_TRACE: &str = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
pub const CUDA_CALLCHAINS: &str = "CUDA_CALLCHAINS";
pub const SAMPLING_CALLCHAINS: &str = "SAMPLING_CALLCHAINS";

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
    // Vulkan: a graphics API the converter does not read (2022.4).
    (
        "VULKAN_API",
        &[
            "id INTEGER NOT NULL PRIMARY KEY",
            "start INTEGER NOT NULL",
            "end INTEGER NOT NULL",
            "eventClass INTEGER NOT NULL",
            "globalTid INTEGER",
            "correlationId INTEGER",
            "endCorrelationId INTEGER",
            "nameId INTEGER NOT NULL",
            "contextId INTEGER",
        ],
    ),
    // A table no nsys has (yet): a newer one's events, timed by other names.
    (
        "FUTURE_EVENTS",
        &[
            "beganAt INTEGER NOT NULL",
            "finishedAt INTEGER",
            "globalTid INTEGER",
        ],
    ),
    // File accesses of OS runtime calls and their descriptors, as NVIDIA's
    // schema reference gives them (nsys 2025).
    (
        "OSRT_FILE_ACCESS_EVENTS",
        &[
            "fileAccessId INTEGER",
            "threadId INTEGER",
            "startedAt INTEGER",
            "endedAt INTEGER",
            "eventType INTEGER",
            "apiCallId INTEGER",
            "bytesProcessed INTEGER",
            "context TEXT",
        ],
    ),
    (
        "OSRT_FILE_ACCESS_DESCRIPTORS",
        &[
            "fileAccessId INTEGER",
            "processId INTEGER",
            "openedAt INTEGER",
            "closedAt INTEGER",
            "filePath TEXT",
        ],
    ),
    (
        "ENUM_OSRT_FILE_ACCESS_EVENT_TYPE",
        &["id INTEGER NOT NULL PRIMARY KEY", "name TEXT", "label TEXT"],
    ),
    // OpenGL calls, and the GPU work of them (2022.4; the same columns).
    (
        "OPENGL_WORKLOAD",
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
        GRAPH_TRACE,
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
        CUDA_CALLCHAINS,
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
        SAMPLING_CALLCHAINS,
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

/// A synthetic export being written. Call [`Synth::finish`] to keep it:
/// everything is one transaction, rolled back if the builder is dropped.
pub struct Synth {
    conn: Connection,
    /// Each table created so far, with the columns a test dropped from it.
    tables: HashMap<String, Vec<String>>,
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
    pub fn api(&mut self, thread: Thread, span: Range<i64>, name: &str) -> Row<'_, ApiCall> {
        let class = if name.starts_with("cuda") {
            CUDA_RUNTIME_CLASS
        } else {
            CUDA_DRIVER_CLASS
        };
        let name_id = self.string(name);
        let columns = vec![
            ("start", span.start.into()),
            ("end", span.end.into()),
            ("eventClass", class.into()),
            ("globalTid", thread.global_tid().into()),
            ("nameId", name_id.into()),
            ("returnValue", 0.into()),
        ];
        Row::new(self, RUNTIME, columns)
    }

    /// A kernel with a fixed, plausible launch configuration: tests care about
    /// where and when it ran, not its shape. `name` is its short name.
    pub fn kernel(&mut self, on: GpuStream, span: Range<i64>, name: &str) -> Row<'_, Kernel> {
        let name_id = self.string(name);
        let grid_id = self.next_grid_id;
        self.next_grid_id += 1;
        let mut columns = gpu_columns(on, span);
        columns.extend([
            ("demangledName", name_id.into()),
            ("shortName", name_id.into()),
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
        Row::new(self, KERNEL, columns)
    }

    /// A copy; `copy_kind` is a memcpy copyKind ([`HTOD`], ...).
    pub fn memcpy(&mut self, on: GpuStream, span: Range<i64>, copy_kind: i64) -> Row<'_, Memcpy> {
        // Memory kinds as a typical program has them: pinned host, device.
        let (src_kind, dst_kind) = match copy_kind {
            HTOD => (Some(1), Some(2)),
            DTOH => (Some(2), Some(1)),
            DTOD | PTOP => (Some(2), Some(2)),
            _ => (None, None),
        };
        let mut columns = gpu_columns(on, span);
        columns.extend([
            ("bytes", 0.into()),
            ("copyKind", copy_kind.into()),
            ("srcKind", src_kind.into()),
            ("dstKind", dst_kind.into()),
            ("copyCount", 1.into()),
        ]);
        Row::new(self, MEMCPY, columns)
    }

    /// Zeroing device memory.
    pub fn memset(&mut self, on: GpuStream, span: Range<i64>) -> Row<'_, Memset> {
        let mut columns = gpu_columns(on, span);
        columns.extend([
            ("value", 0.into()),
            ("bytes", 0.into()),
            ("memKind", 2.into()), // device
        ]);
        Row::new(self, MEMSET, columns)
    }

    /// A synchronization; `sync_type` is a syncType ([`STREAM_SYNC`], ...).
    /// Its correlation id is that of the API call that waited; it waits on
    /// no CUDA event unless `.event()` names one.
    pub fn sync(
        &mut self,
        on: GpuStream,
        span: Range<i64>,
        sync_type: i64,
    ) -> Row<'_, Synchronization> {
        let mut columns = gpu_columns(on, span);
        columns.extend([("syncType", sync_type.into()), ("eventId", NO_EVENT.into())]);
        Row::new(self, SYNC, columns)
    }

    /// A `cudaEventRecord` of event `event_id` on `on`; the device's
    /// completion time is 0, as where nsys did not collect it.
    pub fn event_record(&mut self, on: GpuStream, event_id: i64) -> Row<'_, EventRecord> {
        let columns = vec![
            ("deviceId", on.device.into()),
            ("contextId", on.context.into()),
            ("streamId", on.stream.into()),
            ("globalPid", global_pid(on.pid).into()),
            ("eventId", event_id.into()),
            ("timestamp", 0.into()),
        ];
        Row::new(self, CUDA_EVENT, columns)
    }

    /// A CUDA graph run traced as a whole (`--cuda-graph-trace=graph`).
    pub fn graph_run(&mut self, on: GpuStream, span: Range<i64>) -> Row<'_, GraphRun> {
        let columns = gpu_columns(on, span);
        Row::new(self, GRAPH_TRACE, columns)
    }

    /// The creation of a graph by `thread` at `ts`; of a graph exec where
    /// `.exec()` names one.
    pub fn graph_created(&mut self, thread: Thread, ts: i64) -> Row<'_, GraphCreation> {
        let name_id = self.string("Graph Creation");
        let columns = vec![
            ("start", ts.into()),
            ("end", ts.into()),
            ("eventClass", GRAPH_CREATION.into()),
            ("globalTid", thread.global_tid().into()),
            ("nameId", name_id.into()),
        ];
        Row::new(self, GRAPH_EVENTS, columns)
    }

    /// The creation of a graph node by `thread` at `ts`.
    pub fn graph_node_created(&mut self, thread: Thread, ts: i64) -> Row<'_, GraphNodeCreation> {
        let name_id = self.string("Graph Node Creation");
        let columns = vec![
            ("start", ts.into()),
            ("end", ts.into()),
            ("eventClass", GRAPH_NODE_CREATION.into()),
            ("globalTid", thread.global_tid().into()),
            ("nameId", name_id.into()),
        ];
        Row::new(self, GRAPH_NODE_EVENTS, columns)
    }

    /// Profiler overhead `name` on `thread` (none: `globalTid` NULL).
    pub fn profiler_overhead(
        &mut self,
        thread: Option<Thread>,
        span: Range<i64>,
        name: &str,
    ) -> Row<'_, ProfilerOverhead> {
        let name_id = self.string(name);
        let columns = vec![
            ("start", span.start.into()),
            ("end", span.end.into()),
            ("globalTid", thread.map(Thread::global_tid).into()),
            ("nameId", name_id.into()),
            ("overheadType", 0.into()),
        ];
        Row::new(self, PROFILER_OVERHEAD, columns)
    }

    /// Overhead CUPTI reports for an API call of `thread` (its correlation id).
    pub fn cupti_overhead(
        &mut self,
        thread: Thread,
        span: Range<i64>,
        name: &str,
    ) -> Row<'_, CuptiOverhead> {
        let name_id = self.string(name);
        let columns = vec![
            ("start", span.start.into()),
            ("end", span.end.into()),
            ("eventClass", 103.into()), // CUDA overhead
            ("globalTid", thread.global_tid().into()),
            ("nameId", name_id.into()),
            ("overheadType", 0.into()),
        ];
        Row::new(self, CUPTI_OVERHEAD, columns)
    }

    /// A diagnostic message from nsys's daemon, at time 0 and about the
    /// session (no process) unless set otherwise, as nsys writes it.
    pub fn diagnostic(&mut self, severity: i64, message: &str) -> Row<'_, Diagnostic> {
        // nsys's own messages carry this globalPid: a VM id, no process.
        const NO_PROCESS: i64 = -144_115_188_075_855_872;
        let columns = vec![
            ("timestamp", 0.into()),
            ("timestampType", TARGET_TIMESTAMP.into()),
            ("source", DAEMON.into()),
            ("severity", severity.into()),
            ("text", text(message)),
            ("globalPid", NO_PROCESS.into()),
        ];
        Row::new(self, DIAGNOSTIC_EVENT, columns)
    }

    /// An NVTX push/pop range (`start..` for one still open when the capture
    /// stopped), in the default domain unless set otherwise.
    pub fn nvtx_push_pop(
        &mut self,
        thread: Thread,
        span: impl Span,
        message: &str,
    ) -> Row<'_, NvtxRange> {
        let (start, end) = span.bounds();
        let columns = vec![
            ("start", start.into()),
            ("end", end.into()),
            ("eventType", NVTX_PUSH_POP.into()),
            ("text", text(message)),
            ("globalTid", thread.global_tid().into()),
            ("domainId", 0.into()),
        ];
        Row::new(self, NVTX, columns)
    }

    /// An NVTX start/end range started on `thread`, and ended there unless
    /// `.ended_on()` says otherwise (`start..`: never ended).
    pub fn nvtx_start_end(
        &mut self,
        thread: Thread,
        span: impl Span,
        message: &str,
    ) -> Row<'_, NvtxStartEnd> {
        let (start, end) = span.bounds();
        let range_id = self.next_nvtx_range_id;
        self.next_nvtx_range_id += 1;
        let columns = vec![
            ("start", start.into()),
            ("end", end.into()),
            ("eventType", NVTX_START_END.into()),
            ("rangeId", range_id.into()),
            ("text", text(message)),
            ("globalTid", thread.global_tid().into()),
            ("domainId", 0.into()),
        ];
        Row::new(self, NVTX, columns)
    }

    pub fn nvtx_mark(&mut self, thread: Thread, ts: i64, message: &str) -> Row<'_, NvtxMark> {
        let columns = vec![
            ("start", ts.into()),
            ("eventType", NVTX_MARK.into()),
            ("text", text(message)),
            ("globalTid", thread.global_tid().into()),
            ("domainId", 0.into()),
        ];
        Row::new(self, NVTX, columns)
    }

    /// Names NVTX domain `domain` of the thread's process (at time 0 unless
    /// set otherwise).
    pub fn nvtx_domain(&mut self, thread: Thread, domain: i64, name: &str) -> Row<'_, NvtxDomain> {
        let columns = vec![
            ("start", 0.into()),
            ("eventType", NVTX_DOMAIN_CREATE.into()),
            ("text", text(name)),
            ("globalTid", thread.global_tid().into()),
            ("domainId", domain.into()),
        ];
        Row::new(self, NVTX, columns)
    }

    /// CUDA context `context` of process `pid`, on device 0 unless set otherwise.
    pub fn cuda_context(&mut self, pid: u32, context: i64) -> Row<'_, CudaContext> {
        let columns = vec![
            ("nullStreamId", 7.into()),
            ("hwId", 0.into()),
            ("vmId", 1.into()),
            ("processId", pid.into()),
            ("deviceId", 0.into()),
            ("contextId", context.into()),
            // nsys writes 0 for "no parent" and for a context's SM count.
            ("parentContextId", 0.into()),
            ("isGreenContext", 0.into()),
            ("numMultiprocessors", 0.into()),
        ];
        Row::new(self, "TARGET_INFO_CUDA_CONTEXT_INFO", columns)
    }

    /// Records the GPU work added so far on `on` as run in green context
    /// `green`; other work keeps the 0 nsys writes for "no green context".
    pub fn green_context(&mut self, on: GpuStream, green: i64) {
        for table in [KERNEL, MEMCPY, MEMSET, SYNC] {
            if !self.tables.contains_key(table) {
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

    /// Call chain `id` of `table` ([`CUDA_CALLCHAINS`], [`SAMPLING_CALLCHAINS`],
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

    /// A CPU sample of `thread` at `ts`; `.callchain()` names its stack.
    pub fn cpu_sample(&mut self, thread: Thread, ts: i64) -> Row<'_, CpuSample> {
        let columns = vec![
            ("start", ts.into()),
            ("globalTid", thread.global_tid().into()),
            ("cpuCycles", 0.into()),
        ];
        Row::new(self, "COMPOSITE_EVENTS", columns)
    }

    /// A cuDNN call.
    pub fn cudnn(&mut self, thread: Thread, span: Range<i64>, name: &str) -> Row<'_, LibraryCall> {
        self.library_call("CUDNN_EVENTS", thread, span, name)
    }

    /// A cuBLAS call.
    pub fn cublas(&mut self, thread: Thread, span: Range<i64>, name: &str) -> Row<'_, LibraryCall> {
        self.library_call("CUBLAS_EVENTS", thread, span, name)
    }

    /// An OpenMP parallel region.
    pub fn openmp(&mut self, thread: Thread, span: Range<i64>, name: &str) -> Row<'_, LibraryCall> {
        self.library_call("OPENMP_EVENT_KIND_PARALLEL", thread, span, name)
    }

    fn library_call(
        &mut self,
        table: &'static str,
        thread: Thread,
        span: Range<i64>,
        name: &str,
    ) -> Row<'_, LibraryCall> {
        let name_id = self.string(name);
        let columns = vec![
            ("start", span.start.into()),
            ("end", span.end.into()),
            ("eventClass", 0.into()),
            ("globalTid", thread.global_tid().into()),
            ("nameId", name_id.into()),
        ];
        Row::new(self, table, columns)
    }

    /// An OpenACC kernel launch, on device 0, context 0, stream 0 unless
    /// `.on()` says otherwise.
    pub fn openacc(&mut self, thread: Thread, span: Range<i64>, name: &str) -> Row<'_, OpenAcc> {
        let name_id = self.string(name);
        let columns = vec![
            ("start", span.start.into()),
            ("end", span.end.into()),
            ("nameId", name_id.into()),
            ("globalTid", thread.global_tid().into()),
            ("eventKind", 0.into()),
            ("DeviceType", 0.into()),
            ("lineNo", 0.into()),
            ("cuDeviceId", 0.into()),
            ("cuContextId", 0.into()),
            ("cuStreamId", 0.into()),
        ];
        Row::new(self, "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH", columns)
    }

    /// An MPI point-to-point call.
    pub fn mpi_p2p(&mut self, thread: Thread, span: Range<i64>, name: &str) -> Row<'_, MpiP2p> {
        self.text_call("MPI_P2P_EVENTS", thread, span, name)
    }

    /// An MPI collective call.
    pub fn mpi_collective(
        &mut self,
        thread: Thread,
        span: Range<i64>,
        name: &str,
    ) -> Row<'_, MpiCollective> {
        self.text_call("MPI_COLLECTIVES_EVENTS", thread, span, name)
    }

    /// `thread` belongs to MPI rank `rank`.
    pub fn mpi_rank(&mut self, thread: Thread, rank: i64) {
        self.insert(
            "MPI_RANKS",
            vec![
                ("globalTid", thread.global_tid().into()),
                ("rank", rank.into()),
            ],
        );
    }

    /// A UCX (UCP) call with no transfer details (`UCP_EVENTS`).
    pub fn ucx(&mut self, thread: Thread, span: Range<i64>, name: &str) -> Row<'_, LibraryCall> {
        self.text_call("UCP_EVENTS", thread, span, name)
    }

    /// A UCX transfer submitted.
    pub fn ucx_submit(&mut self, thread: Thread, span: Range<i64>, name: &str) -> Row<'_, Ucx> {
        self.text_call("UCP_SUBMIT_EVENTS", thread, span, name)
    }

    /// A UCX transfer progressed.
    pub fn ucx_progress(&mut self, thread: Thread, span: Range<i64>, name: &str) -> Row<'_, Ucx> {
        self.text_call("UCP_PROGRESS_EVENTS", thread, span, name)
    }

    /// `thread`'s UCX worker is `uid`.
    pub fn ucx_worker(&mut self, thread: Thread, uid: i64) {
        self.insert(
            "UCP_WORKERS",
            vec![
                ("globalTid", thread.global_tid().into()),
                ("workerUid", uid.into()),
            ],
        );
    }

    /// A call of the MPI and UCX tables, named by `textId`.
    fn text_call<K>(
        &mut self,
        table: &'static str,
        thread: Thread,
        span: Range<i64>,
        name: &str,
    ) -> Row<'_, K> {
        let name_id = self.string(name);
        let columns = vec![
            ("start", span.start.into()),
            ("end", span.end.into()),
            ("globalTid", thread.global_tid().into()),
            ("textId", name_id.into()),
        ];
        Row::new(self, table, columns)
    }

    /// Adds a row of any table this module knows the schema of.
    pub fn row(&mut self, table: &str, row: Vec<(&str, Value)>) {
        self.insert(table, row);
    }

    /// Removes `column` from `table`, creating the table if it has no row yet:
    /// the file will not have the column, whatever is added before or after.
    pub fn drop_column(&mut self, table: &str, column: &str) {
        if !self.tables.contains_key(table) {
            self.create_table(table);
        }
        self.exec(&format!("ALTER TABLE \"{table}\" DROP COLUMN \"{column}\""));
        if let Some(dropped_columns) = self.tables.get_mut(table) {
            dropped_columns.push(column.to_owned());
        }
    }

    /// Commits and compacts the file.
    pub fn finish(self) {
        self.exec("COMMIT");
        // Dropped columns leave free pages behind.
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
        self.tables.insert(table.to_owned(), Vec::new());
    }

    /// Adds a row; columns it does not name are NULL.
    fn insert(&mut self, table: &str, mut row: Vec<(&str, Value)>) {
        match self.tables.get(table) {
            Some(dropped_columns) => {
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
fn gpu_columns(on: GpuStream, span: Range<i64>) -> Vec<(&'static str, Value)> {
    vec![
        ("start", span.start.into()),
        ("end", span.end.into()),
        ("deviceId", on.device.into()),
        ("contextId", on.context.into()),
        ("streamId", on.stream.into()),
        ("globalPid", global_pid(on.pid).into()),
    ]
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

/// When a range ran: `start..end`, or `start..` for one that never ended.
pub trait Span {
    fn bounds(self) -> (i64, Option<i64>);
}

impl Span for Range<i64> {
    fn bounds(self) -> (i64, Option<i64>) {
        (self.start, Some(self.end))
    }
}

impl Span for RangeFrom<i64> {
    fn bounds(self) -> (i64, Option<i64>) {
        (self.start, None)
    }
}

/// A row being added, its columns set by name: it is written when dropped,
/// at the end of the statement that made it
/// (`s.api(MAIN, 1_000..2_000, "cudaFree_v3020").corr(1);`).
/// Its kind `K` decides which setters it has.
pub struct Row<'s, K> {
    synth: &'s mut Synth,
    table: &'static str,
    columns: Vec<(&'static str, Value)>,
    kind: PhantomData<K>,
}

impl<'s, K> Row<'s, K> {
    fn new(synth: &'s mut Synth, table: &'static str, columns: Vec<(&'static str, Value)>) -> Self {
        Row {
            synth,
            table,
            columns,
            kind: PhantomData,
        }
    }

    /// Sets `column`, replacing what was there: for columns no setter names.
    pub fn set(mut self, column: &'static str, value: impl Into<Value>) -> Self {
        let value = value.into();
        match self.columns.iter_mut().find(|(c, _)| *c == column) {
            Some(slot) => slot.1 = value,
            None => self.columns.push((column, value)),
        }
        self
    }

    /// Sets `column` to the `StringIds` id of `s`.
    fn string(self, column: &'static str, s: &str) -> Self {
        let id = self.synth.string(s);
        self.set(column, id)
    }

    fn get(&self, column: &str) -> &Value {
        self.columns
            .iter()
            .find(|(c, _)| *c == column)
            .map_or(&Value::Null, |(_, v)| v)
    }
}

impl<K> Drop for Row<'_, K> {
    fn drop(&mut self) {
        // A test failing while the row was built has failed already.
        if !std::thread::panicking() {
            let columns = std::mem::take(&mut self.columns);
            self.synth.insert(self.table, columns);
        }
    }
}

/// Declares kinds of [`Row`] with their setters: `name: type => column`
/// sets that column.
macro_rules! kinds {
    ($($kind:ident { $($(#[$doc:meta])* $name:ident: $ty:ty => $column:literal;)* })*) => {
        $(
            pub enum $kind {}

            impl Row<'_, $kind> {
                $(
                    $(#[$doc])*
                    pub fn $name(self, value: $ty) -> Self {
                        self.set($column, value)
                    }
                )*
            }
        )*
    };
}

kinds! {
    ApiCall {
        corr: i64 => "correlationId";
        /// Its backtrace: `CUDA_CALLCHAINS` `id`.
        callchain: i64 => "callchainId";
    }
    Kernel {
        corr: i64 => "correlationId";
        graph: i64 => "graphId";
        node: i64 => "graphNodeId";
    }
    Memcpy {
        corr: i64 => "correlationId";
        bytes: i64 => "bytes";
    }
    Memset {
        corr: i64 => "correlationId";
        bytes: i64 => "bytes";
    }
    Synchronization {
        corr: i64 => "correlationId";
        /// Waits on CUDA event `id`.
        event: i64 => "eventId";
    }
    EventRecord {
        corr: i64 => "correlationId";
        /// When the device completed the record (nsys 2026.2).
        completed: i64 => "timestamp";
    }
    GraphRun {
        corr: i64 => "correlationId";
        graph: i64 => "graphId";
        exec: i64 => "graphExecId";
    }
    GraphCreation {
        graph: i64 => "graphId";
    }
    GraphNodeCreation {
        node: i64 => "graphNodeId";
        /// The node this one was instantiated from.
        original: i64 => "originalGraphNodeId";
    }
    ProfilerOverhead {
        /// An `ENUM_CUPTI_OVERHEAD_TYPE` (0 unless set).
        overhead_type: i64 => "overheadType";
    }
    CuptiOverhead {
        corr: i64 => "correlationId";
        /// An `ENUM_CUPTI_OVERHEAD_TYPE` (0 unless set).
        overhead_type: i64 => "overheadType";
    }
    Diagnostic {
        at: i64 => "timestamp";
    }
    NvtxRange {
        domain: i64 => "domainId";
    }
    NvtxStartEnd {
        domain: i64 => "domainId";
    }
    NvtxMark {
        domain: i64 => "domainId";
    }
    NvtxDomain {
        at: i64 => "start";
    }
    CudaContext {
        /// Its number of SMs.
        sms: i64 => "numMultiprocessors";
    }
    CpuSample {
        /// Its stack: `SAMPLING_CALLCHAINS` `id`, the sample's own id.
        callchain: i64 => "id";
        cpu: i64 => "cpu";
    }
    LibraryCall {}
    OpenAcc {
        line: i64 => "lineNo";
        gangs: i64 => "numGangs";
        workers: i64 => "numWorkers";
        vector_length: i64 => "vectorLength";
    }
    MpiP2p {
        bytes: i64 => "size";
        tag: i64 => "tag";
        remote_rank: i64 => "remoteRank";
    }
    MpiCollective {
        root_rank: i64 => "rootRank";
        send_bytes: i64 => "collSendSize";
        recv_bytes: i64 => "collRecvSize";
    }
    Ucx {
        bytes: i64 => "packedSize";
        tag: i64 => "tag";
        buffer: i64 => "bufferAddr";
        /// The peer's worker uid.
        peer: i64 => "peerWorkerUid";
    }
}

impl Row<'_, Kernel> {
    /// The demangled name (by default the short one).
    pub fn demangled(self, name: &str) -> Self {
        self.string("demangledName", name)
    }
}

impl Row<'_, Synchronization> {
    /// The `eventSyncId` of the record waited on (nsys 2025.1 and later; 0
    /// ties the wait to no record).
    pub fn sync_id(self, id: impl Into<Option<i64>>) -> Self {
        self.set("eventSyncId", id.into())
    }
}

impl Row<'_, EventRecord> {
    /// The record's `eventSyncId` (nsys 2025.1 and later).
    pub fn sync_id(self, id: impl Into<Option<i64>>) -> Self {
        self.set("eventSyncId", id.into())
    }
}

impl Row<'_, GraphCreation> {
    /// The creation of graph exec `id` (of the graph), not of a graph.
    pub fn exec(self, id: i64) -> Self {
        self.set("graphExecId", id)
            .set("eventClass", GRAPH_EXEC_CREATION)
            .string("nameId", "GraphExec Creation")
    }
}

impl Row<'_, Diagnostic> {
    /// About process `pid`.
    pub fn pid(self, pid: u32) -> Self {
        self.set("globalPid", global_pid(pid))
    }
}

impl Row<'_, NvtxStartEnd> {
    /// Ended on `thread`. nsys records the ending thread only where it is
    /// another than the starting one, and once the range has ended.
    pub fn ended_on(self, thread: Thread) -> Self {
        let tid = thread.global_tid();
        if *self.get("end") == Value::Null || *self.get("globalTid") == Value::Integer(tid) {
            return self;
        }
        self.set("endGlobalTid", tid)
    }
}

impl Row<'_, CudaContext> {
    /// A green context, made from context `parent`.
    pub fn green_from(self, parent: i64) -> Self {
        self.set("isGreenContext", 1).set("parentContextId", parent)
    }
}

impl Row<'_, OpenAcc> {
    pub fn on(self, stream: GpuStream) -> Self {
        self.set("cuDeviceId", stream.device)
            .set("cuContextId", stream.context)
            .set("cuStreamId", stream.stream)
    }

    pub fn file(self, name: &str) -> Self {
        self.string("srcFile", name)
    }

    pub fn function(self, name: &str) -> Self {
        self.string("funcName", name)
    }

    pub fn kernel(self, name: &str) -> Self {
        self.string("kernelName", name)
    }
}
