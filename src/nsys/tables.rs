//! Which event tables each reader streams: the one list that the progress
//! total, the report's fingerprint and the search for unread tables share.

use super::{cpu, cuda, events, graphs, metrics, nvtx, overhead, Report};

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
            EventStream::OsRuntime => &[cpu::OSRT],
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
