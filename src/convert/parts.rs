//! The parts a trace can carry, each declared once: its name, what it
//! reads, what its tables' rows become, whether Chrome's JSON has a place
//! for it, and who writes it. Everything else about a part is derived from
//! [`Part::declared`].

use std::io::{self, Write};

use crate::nsys::overhead as o;
use crate::nsys::{cpu, cuda as c, file_access, graphs as g, metrics as m, nvtx as n};
use crate::nsys::{EventStream, Report};

use super::pipeline::Writer;
use super::{cuda, graphs, libraries, memory_pools, metrics, nvtx, osrt, overhead, samples, sched};

/// The kinds of data a trace can carry; all by default, any can be left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// CUDA API calls, GPU kernels, memcpy, memset and sync, with launch flows.
    Cuda,
    /// NVTX ranges and marks.
    Nvtx,
    /// NVTX ranges projected onto the GPU (needs `cuda` and `nvtx`).
    NvtxGpu,
    /// OS runtime calls, with their call stacks, and their file accesses.
    Osrt,
    /// Calls into cuDNN, cuBLAS, OpenACC, OpenMP, MPI, UCX, the video codecs
    /// and OpenGL, and the GPU work of OpenGL calls.
    Libraries,
    /// CPU samples, with their call stacks.
    Samples,
    /// Context switches (thread scheduling).
    Sched,
    /// GPU metrics, CUDA memory use and memory pools, unified-memory page faults.
    Metrics,
    /// The profiler's own overhead and its diagnostic messages.
    Nsys,
}

/// What a part is.
pub(super) struct Declared<W: Write> {
    /// The name `--exclude` knows it by.
    name: &'static str,
    /// The event streams it reads.
    reads: &'static [EventStream],
    /// The category of what the rows of each of its tables become (the
    /// slices' category, or the kind of counter or sample); a table not
    /// listed here is its own category.
    categories: &'static [(&'static str, &'static str)],
    /// Whether Chrome's JSON carries it: it has no place for CPU samples
    /// or context switches.
    in_json: bool,
    /// Who writes its sequence.
    pub writer: Writer<W>,
}

impl Part {
    /// Every part, in the order they are declared in.
    pub const ALL: [Part; 9] = [
        Part::Cuda,
        Part::Nvtx,
        Part::NvtxGpu,
        Part::Osrt,
        Part::Libraries,
        Part::Samples,
        Part::Sched,
        Part::Metrics,
        Part::Nsys,
    ];

    /// The one declaration of each part.
    pub(super) fn declared<W: Write>(self) -> Declared<W> {
        match self {
            Part::Cuda => Declared {
                name: "cuda",
                reads: &[EventStream::Cuda],
                categories: &[
                    (c::RUNTIME, cuda::API),
                    (c::DRIVER, cuda::API),
                    (c::KERNEL, cuda::KERNEL),
                    (c::MEMCPY, cuda::MEMCPY),
                    (c::MEMSET, cuda::MEMSET),
                    (c::SYNC, cuda::SYNC),
                    (c::GRAPH_TRACE, cuda::GRAPH),
                    (g::GRAPH_EVENTS, graphs::GRAPH_CREATION),
                    (g::GRAPH_NODE_EVENTS, graphs::GRAPH_CREATION),
                ],
                in_json: true,
                writer: Writer::Cuda,
            },
            Part::Nvtx => Declared {
                name: "nvtx",
                reads: &[EventStream::Nvtx],
                categories: &[(n::TABLE, nvtx::NVTX)],
                in_json: true,
                writer: Writer::Nvtx,
            },
            Part::NvtxGpu => Declared {
                name: "nvtx_gpu",
                // Made of the CUDA and NVTX streams, which it does not read itself.
                reads: &[],
                categories: &[],
                in_json: true,
                writer: Writer::Cuda,
            },
            Part::Osrt => Declared {
                name: "osrt",
                reads: &[EventStream::OsRuntime],
                categories: &[
                    (cpu::OSRT, osrt::OSRT),
                    (file_access::FILE_ACCESS, osrt::FILE_ACCESS),
                ],
                in_json: true,
                writer: Writer::Cpu(osrt::write),
            },
            Part::Libraries => Declared {
                name: "libraries",
                reads: &[EventStream::Libraries],
                // The tables are named by the export, the categories by the library.
                categories: &[],
                in_json: true,
                writer: Writer::Cpu(libraries::write),
            },
            Part::Samples => Declared {
                name: "samples",
                reads: &[EventStream::CpuSamples],
                categories: &[(cpu::SAMPLES, samples::SAMPLES)],
                in_json: false,
                writer: Writer::Cpu(samples::write),
            },
            Part::Sched => Declared {
                name: "sched",
                reads: &[EventStream::Scheduling],
                categories: &[(cpu::SCHED, sched::SCHED)],
                in_json: false,
                writer: Writer::Cpu(sched::write),
            },
            Part::Metrics => Declared {
                name: "metrics",
                reads: &[EventStream::Device],
                categories: &[
                    (m::MEMORY_USAGE, metrics::CUDA_MEMORY),
                    (m::GPU_METRICS, metrics::GPU_METRICS),
                    (m::MEMORY_POOLS, memory_pools::MEMORY_POOL),
                    (m::UM_GPU_FAULTS, metrics::UNIFIED_MEMORY),
                    (m::UM_CPU_FAULTS, metrics::UNIFIED_MEMORY),
                ],
                in_json: true,
                writer: Writer::Cpu(metrics::write),
            },
            Part::Nsys => Declared {
                name: "nsys",
                reads: &[EventStream::Profiler],
                categories: &[
                    (o::PROFILER_OVERHEAD, overhead::NSYS_OVERHEAD),
                    (o::CUPTI_OVERHEAD, overhead::CUPTI_OVERHEAD),
                    (o::DIAGNOSTICS, overhead::DIAGNOSTIC),
                ],
                in_json: true,
                writer: Writer::Cpu(overhead::write),
            },
        }
    }

    /// What the declaration says apart from the writer, which alone depends
    /// on the trace's output.
    fn about(self) -> Declared<io::Sink> {
        self.declared()
    }

    /// The name `--exclude` knows the part by.
    pub fn name(self) -> &'static str {
        self.about().name
    }

    /// Whether Chrome's JSON has a place for the part.
    pub(super) fn in_json(self) -> bool {
        self.about().in_json
    }

    /// The part's place in [`Part::ALL`].
    pub(super) const fn index(self) -> usize {
        self as usize
    }

    /// The tables of `report` the part reads its events from.
    pub(crate) fn tables(self, report: &Report) -> Vec<String> {
        self.about()
            .reads
            .iter()
            .flat_map(|s| report.tables_of(*s))
            .collect()
    }
}

/// The category of what a table's rows become (the slices' category, or
/// the kind of counter or sample), or the table's name where that varies.
pub(super) fn category_of(table: &str) -> String {
    Part::ALL
        .iter()
        .flat_map(|p| p.about().categories)
        .find(|(t, _)| *t == table)
        .map_or(table, |(_, category)| category)
        .to_owned()
}

impl std::str::FromStr for Part {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Part::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Part::ALL.iter().map(|p| p.name()).collect();
                format!("unknown part '{s}' (expected one of: {})", names.join(", "))
            })
    }
}

// A part's place in `Part::ALL` is its index: the list is in declaration order.
const _: () = {
    let mut i = 0;
    while i < Part::ALL.len() {
        assert!(
            Part::ALL[i].index() == i,
            "Part::ALL is in declaration order"
        );
        i += 1;
    }
};

/// A set of [`Part`]s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parts([bool; Part::ALL.len()]);

impl Parts {
    /// Every part.
    pub fn all() -> Self {
        Parts([true; Part::ALL.len()])
    }

    /// Whether the set holds `part`.
    pub fn has(self, part: Part) -> bool {
        self.0[part.index()]
    }

    /// The set without `part`.
    pub fn without(mut self, part: Part) -> Self {
        self.0[part.index()] = false;
        self
    }
}

impl Default for Parts {
    fn default() -> Self {
        Parts::all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_left_out_is_the_only_one_missing() {
        for left_out in Part::ALL {
            let parts = Parts::all().without(left_out);
            for part in Part::ALL {
                assert_eq!(parts.has(part), part != left_out, "{part:?}");
            }
            assert!(!parts.without(left_out).has(left_out));
        }
    }

    #[test]
    fn a_table_has_one_category() {
        let mut tables: Vec<&str> = Part::ALL
            .iter()
            .flat_map(|p| p.about().categories)
            .map(|(table, _)| *table)
            .collect();
        let declared = tables.len();
        tables.sort_unstable();
        tables.dedup();
        assert_eq!(tables.len(), declared);
    }
}
