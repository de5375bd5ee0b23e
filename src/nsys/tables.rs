//! Which event tables each reader streams: the one list that the progress
//! total, the report's fingerprint and the search for unread tables share;
//! and what a conversion does with every table an export may have
//! ([`table_role`]).

use super::libraries::Library;
use super::{cpu, cuda, events, file_access, graphs, metrics, nvtx, overhead, Report};

/// The event streams of a report, each read by one `Report::for_each_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum EventStream {
    /// [`Report::for_each_cuda_event`], with CUDA event records and graph creation.
    Cuda,
    /// [`Report::for_each_nvtx_event`].
    Nvtx,
    /// [`Report::for_each_osrt_call`].
    OsRuntime,
    /// [`Report::for_each_library_call`].
    Libraries,
    /// [`Report::for_each_cpu_sample`].
    CpuSamples,
    /// [`Report::for_each_sched_event`].
    Scheduling,
    /// [`Report::for_each_device_event`].
    Device,
    /// The profiler's own overhead and diagnostics.
    Profiler,
}

impl EventStream {
    pub(crate) const ALL: [EventStream; 8] = [
        EventStream::Cuda,
        EventStream::Nvtx,
        EventStream::OsRuntime,
        EventStream::Libraries,
        EventStream::CpuSamples,
        EventStream::Scheduling,
        EventStream::Device,
        EventStream::Profiler,
    ];

    /// The stream's tables whose names are fixed.
    fn named_tables(self) -> &'static [&'static str] {
        match self {
            EventStream::Cuda => &[
                cuda::RUNTIME,
                cuda::DRIVER,
                cuda::KERNEL,
                cuda::MEMCPY,
                cuda::MEMSET,
                cuda::SYNC,
                cuda::GRAPH_TRACE,
                events::TABLE,
                graphs::GRAPH_EVENTS,
                graphs::GRAPH_NODE_EVENTS,
            ],
            EventStream::Nvtx => &[nvtx::TABLE],
            EventStream::OsRuntime => &[
                cpu::OSRT,
                file_access::FILE_ACCESS,
                file_access::FILE_DESCRIPTORS,
            ],
            // Named by the export (OpenMP): see `Report::library_tables`.
            EventStream::Libraries => &[],
            EventStream::CpuSamples => &[cpu::SAMPLES],
            EventStream::Scheduling => &[cpu::SCHED],
            EventStream::Device => &[
                metrics::GPU_METRICS,
                metrics::MEMORY_USAGE,
                metrics::MEMORY_POOLS,
                metrics::UM_GPU_FAULTS,
                metrics::UM_CPU_FAULTS,
            ],
            EventStream::Profiler => &[
                overhead::PROFILER_OVERHEAD,
                overhead::CUPTI_OVERHEAD,
                overhead::DIAGNOSTICS,
            ],
        }
    }
}

impl Report {
    /// The tables of this export that `stream` reads.
    pub(crate) fn tables_of(&self, stream: EventStream) -> Vec<String> {
        let mut tables: Vec<String> = stream
            .named_tables()
            .iter()
            .filter(|t| self.schema.has_table(t))
            .map(|t| (*t).to_owned())
            .collect();
        if stream == EventStream::Libraries {
            tables.extend(self.library_tables().into_iter().map(|(_, t)| t));
        }
        tables
    }
}

/// What a conversion does with a table of an export, by its name: the
/// declared lists that the warning about tables not converted and the test
/// of every fixture's tables share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableRole {
    /// Its rows are converted (when its part is chosen).
    Converted,
    /// It holds no timed events: strings, names, labels, descriptions of
    /// the target, call stacks, the export's own metadata.
    Untimed,
    /// Its rows are timed events the converter does not read: a table of
    /// it with rows is named in a warning.
    NotConverted,
}

/// Tables of no timed events, and the prefixes of whole families of them.
const UNTIMED: &[&str] = &[
    "StringIds",
    "ThreadNames",
    "ProcessStreams",
    "PROCESSES",
    "ANALYSIS_DETAILS",
    "ANALYSIS_FILE",
    "EXPORT_META_DATA",
    "META_DATA_CAPTURE",
    "META_DATA_EXPORT",
    "UnwindMethodType",
    cpu::OSRT_CALLCHAINS,
    cpu::SAMPLE_CALLCHAINS,
    cuda::CALLCHAINS,
    "NVTX_PAYLOAD_SCHEMAS",
    "NVTX_PAYLOAD_SCHEMA_ENTRIES",
    "NVTX_PAYLOAD_ENUMS",
    "NVTX_PAYLOAD_ENUM_ENTRIES",
    "MPI_RANKS",
    "MPI_COMMUNICATORS",
];
const UNTIMED_PREFIXES: &[&str] = &["ENUM_", "TARGET_INFO_"];

/// Tables of timed events that are not converted (graphics APIs and
/// Windows' GPU scheduling, which nsys records on Windows targets; SLI;
/// the WDDM memory budget), and the prefixes of families of them.
const NOT_CONVERTED: &[&str] = &[
    "D3D11_PIX_DEBUG_API",
    "D3D12_PIX_DEBUG_API",
    "DX12_API",
    "DX12_MEMORY_OPERATION",
    "DX12_WORKLOAD",
    "DEMOTED_BYTES_EVENTS",
    "ETW_EVENTS_DEPRECATED_TABLE",
    "FECS_EVENTS",
    "GPU_MEMORY_BUDGET_EVENTS",
    "GPU_MEMORY_USAGE_EVENTS",
    "KHR_DEBUG_EVENTS",
    "NV_LOAD_BALANCE_EVENTS",
    "NV_LOAD_BALANCE_MASTER_EVENTS",
    "SLI_P2P",
    "SLI_QUERIES",
    "SLI_STATS",
    "TOTAL_BYTES_RESIDENT_IN_SEGMENT_EVENTS",
    "VULKAN_API",
    "VULKAN_DEBUG_API",
    "VULKAN_PIPELINE_CREATION_EVENTS",
    "VULKAN_PIPELINE_STAGE_EVENTS",
    "VULKAN_WORKLOAD",
];
const NOT_CONVERTED_PREFIXES: &[&str] = &["WDDM_"];

/// What a conversion does with the table named `table`; `None` for a table
/// none of the lists names (a newer nsys's): a conversion names it in a
/// warning where it has rows, as it does a table it does not convert.
pub fn table_role(table: &str) -> Option<TableRole> {
    let named = |list: &[&str], prefixes: &[&str]| {
        list.contains(&table) || prefixes.iter().any(|p| table.starts_with(p))
    };
    let streamed = EventStream::ALL
        .iter()
        .any(|s| s.named_tables().contains(&table));
    if streamed || Library::of_table(table).is_some() {
        Some(TableRole::Converted)
    } else if named(UNTIMED, UNTIMED_PREFIXES) {
        Some(TableRole::Untimed)
    } else if named(NOT_CONVERTED, NOT_CONVERTED_PREFIXES) {
        Some(TableRole::NotConverted)
    } else {
        None
    }
}
