//! The summaries, defined as nsys 2025.3 defines them, and how each is
//! computed from one pass over its tables.

use crate::analysis::{missing, Needs};
use crate::error::Failure;
use crate::nsys::metrics::UM_CPU_FAULTS;
use crate::nsys::names::{api_stats_name, memcpy_stats_name, RangeNames, MEMSET_STATS_NAME};
use crate::nsys::{cpu, cuda, nvtx, Report};

use super::aggregate::{Groups, Ranked, Stats};
use super::plausible::PlausibleGroups;
use super::spill::SpillKey;
use super::table::{spread_cells, Cell, RowSource, Rows, Table};

/// A summary `nsys stats` prints, by its old and new names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum StatsReport {
    /// `cuda_api_sum`: CUDA API calls.
    CudaApiSum,
    /// `cuda_gpu_kern_sum`: kernels.
    GpuKernSum,
    /// `cuda_gpu_mem_time_sum`: memory operations by time.
    GpuMemTimeSum,
    /// `cuda_gpu_mem_size_sum`: memory operations by size.
    GpuMemSizeSum,
    /// `cuda_gpu_sum`: kernels and memory operations.
    GpuSum,
    /// `nvtx_sum`: NVTX ranges.
    NvtxSum,
    /// `nvtx_pushpop_sum`: NVTX push/pop ranges.
    NvtxPushPopSum,
    /// `nvtx_startend_sum`: NVTX start/end ranges.
    NvtxStartEndSum,
    /// `osrt_sum`: OS runtime calls.
    OsrtSum,
    /// `cuda_kern_exec_sum`: kernel launch and execution.
    KernExecSum,
    /// `openacc_sum`: OpenACC events.
    OpenAccSum,
    /// `um_cpu_page_faults_sum`: unified memory CPU page faults.
    UmCpuPageFaultsSum,
    /// `openmp_sum`: OpenMP events.
    OpenMpEventSum,
    /// `nvtx_gpu_proj_sum`: NVTX ranges projected onto the GPU.
    NvtxGpuProjSum,
    /// `nvtx_kern_sum`: kernels by NVTX range.
    NvtxKernSum,
    /// `cuda_api_trace`: every CUDA API call, a row each, in time order.
    CudaApiTrace,
    /// `cuda_gpu_trace`: every kernel, memory copy and memset, a row each,
    /// in time order.
    CudaGpuTrace,
    /// `nvtx_gpu_proj_trace`: every NVTX range projected onto the GPU, a
    /// row each, by projected start.
    NvtxGpuProjTrace,
    /// `nvtx_pushpop_trace`: every NVTX push/pop range, a row each, with
    /// its place in its thread's tree of ranges.
    NvtxPushPopTrace,
}

impl StatsReport {
    /// Every summary.
    pub const ALL: [StatsReport; 19] = [
        StatsReport::CudaApiSum,
        StatsReport::GpuKernSum,
        StatsReport::GpuMemTimeSum,
        StatsReport::GpuMemSizeSum,
        StatsReport::GpuSum,
        StatsReport::NvtxSum,
        StatsReport::NvtxPushPopSum,
        StatsReport::NvtxStartEndSum,
        StatsReport::OsrtSum,
        StatsReport::KernExecSum,
        StatsReport::OpenAccSum,
        StatsReport::UmCpuPageFaultsSum,
        StatsReport::OpenMpEventSum,
        StatsReport::NvtxGpuProjSum,
        StatsReport::NvtxKernSum,
        StatsReport::CudaApiTrace,
        StatsReport::CudaGpuTrace,
        StatsReport::NvtxGpuProjTrace,
        StatsReport::NvtxPushPopTrace,
    ];

    /// What `stats` prints when not told: where time goes on the CPU and the GPU.
    pub const DEFAULT: [StatsReport; 5] = [
        StatsReport::NvtxSum,
        StatsReport::CudaApiSum,
        StatsReport::GpuKernSum,
        StatsReport::GpuMemTimeSum,
        StatsReport::GpuMemSizeSum,
    ];

    /// The name of nsys 2023 and later (`cuda_api_sum`).
    pub fn name(self) -> &'static str {
        self.names().0
    }

    /// The name of nsys 2022.4 and earlier (`cudaapisum`).
    pub fn legacy_name(self) -> &'static str {
        self.names().1
    }

    /// (new name, old name).
    fn names(self) -> (&'static str, &'static str) {
        match self {
            StatsReport::CudaApiSum => ("cuda_api_sum", "cudaapisum"),
            StatsReport::GpuKernSum => ("cuda_gpu_kern_sum", "gpukernsum"),
            StatsReport::GpuMemTimeSum => ("cuda_gpu_mem_time_sum", "gpumemtimesum"),
            StatsReport::GpuMemSizeSum => ("cuda_gpu_mem_size_sum", "gpumemsizesum"),
            StatsReport::GpuSum => ("cuda_gpu_sum", "gpusum"),
            StatsReport::NvtxSum => ("nvtx_sum", "nvtxsum"),
            StatsReport::NvtxPushPopSum => ("nvtx_pushpop_sum", "nvtxppsum"),
            StatsReport::NvtxStartEndSum => ("nvtx_startend_sum", "nvtxsesum"),
            StatsReport::OsrtSum => ("osrt_sum", "osrtsum"),
            StatsReport::KernExecSum => ("cuda_kern_exec_sum", "kernexecsum"),
            StatsReport::OpenAccSum => ("openacc_sum", "openaccsum"),
            StatsReport::UmCpuPageFaultsSum => ("um_cpu_page_faults_sum", "umcpupagefaults"),
            StatsReport::OpenMpEventSum => ("openmp_sum", "openmpevtsum"),
            StatsReport::NvtxGpuProjSum => ("nvtx_gpu_proj_sum", "nvtxgpuproj"),
            StatsReport::NvtxKernSum => ("nvtx_kern_sum", "nvtxkernsum"),
            StatsReport::CudaApiTrace => ("cuda_api_trace", "cudaapitrace"),
            StatsReport::CudaGpuTrace => ("cuda_gpu_trace", "gputrace"),
            // 2022.4's `nvtxgpuproj` lists these rows, but that name is the
            // summary's here (as it has been): the trace has its new name only.
            StatsReport::NvtxGpuProjTrace => ("nvtx_gpu_proj_trace", "nvtx_gpu_proj_trace"),
            StatsReport::NvtxPushPopTrace => ("nvtx_pushpop_trace", "nvtxpptrace"),
        }
    }

    /// What the summary is, for people (`CUDA API Summary`).
    pub fn title(self) -> &'static str {
        match self {
            StatsReport::CudaApiSum => "CUDA API Summary",
            StatsReport::GpuKernSum => "CUDA GPU Kernel Summary",
            StatsReport::GpuMemTimeSum => "CUDA GPU MemOps Summary (by Time)",
            StatsReport::GpuMemSizeSum => "CUDA GPU MemOps Summary (by Size)",
            StatsReport::GpuSum => "CUDA GPU Summary (Kernels/MemOps)",
            StatsReport::NvtxSum => "NVTX Range Summary",
            StatsReport::NvtxPushPopSum => "NVTX Push/Pop Range Summary",
            StatsReport::NvtxStartEndSum => "NVTX Start/End Range Summary",
            StatsReport::OsrtSum => "OS Runtime Summary",
            StatsReport::KernExecSum => "CUDA Kernel Launch & Exec Time Summary",
            StatsReport::OpenAccSum => "OpenACC Summary",
            StatsReport::UmCpuPageFaultsSum => "Unified Memory CPU Page Faults Summary",
            StatsReport::OpenMpEventSum => "OpenMP Event Summary",
            StatsReport::NvtxGpuProjSum => "NVTX GPU Projection Summary",
            StatsReport::NvtxKernSum => "NVTX Range Kernel Summary",
            StatsReport::CudaApiTrace => "CUDA API Trace",
            StatsReport::CudaGpuTrace => "CUDA GPU Trace",
            StatsReport::NvtxGpuProjTrace => "NVTX GPU Projection Trace",
            StatsReport::NvtxPushPopTrace => "NVTX Push/Pop Range Trace",
        }
    }

    /// Computes the summary of `report`, its NVTX ranges named as recorded.
    pub fn compute(self, report: &Report) -> crate::Result<Table> {
        self.compute_with(report, RangeNames::Recorded)
    }

    /// Computes the summary of `report`, its NVTX ranges named as `names` says.
    pub fn compute_with(self, report: &Report, names: RangeNames) -> crate::Result<Table> {
        let (mut table, rows) = self.computed(report, names)?;
        rows.each(&mut |row| {
            table.rows.push(row.to_vec());
            Ok(())
        })
        .map_err(|e| crate::error::Failure::from(e).of(report.path()))?;
        Ok(table)
    }

    /// Computes the summary of `report`: its table without rows, and its
    /// rows, in memory or set aside in a temporary file where they are
    /// many (see `spill`).
    pub(crate) fn computed(
        self,
        report: &Report,
        names: RangeNames,
    ) -> crate::Result<(Table, Rows)> {
        let unreadable_before = report.unreadable_names();
        let rows = self.rows(report, names).map_err(|e| e.of(report.path()))?;
        let no_data = match rows.is_empty() {
            true => missing(report, self.needs()),
            false => None,
        };
        // Its own tables, any other it found unreadable as it read, and the
        // small tables of names and times that every summary may show.
        let needs = self.needs();
        let incomplete = report
            .unreadable_among(|t| {
                needs.iter().any(|any| any.contains(&t))
                    || !unreadable_before.iter().any(|b| b == t)
                    || crate::nsys::table_role(t) == Some(crate::nsys::TableRole::Untimed)
            })
            .iter()
            .map(|u| u.warning(crate::nsys::NOT_READ))
            .collect();
        let table = Table {
            name: self.name().to_owned(),
            title: self.title().to_owned(),
            columns: self.columns().iter().map(|c| (*c).to_owned()).collect(),
            rows: Vec::new(),
            no_data,
            incomplete,
        };
        Ok((table, rows))
    }

    /// The tables the summary reads (none declared for the OpenACC and
    /// OpenMP summaries, which read every table of a family).
    fn needs(self) -> Needs {
        const GPU_WORK: &[&str] = &[cuda::KERNEL, cuda::MEMCPY, cuda::MEMSET];
        const MEMORY: &[&str] = &[cuda::MEMCPY, cuda::MEMSET];
        match self {
            StatsReport::CudaApiSum | StatsReport::CudaApiTrace => &[&[cuda::RUNTIME]],
            StatsReport::GpuKernSum => &[&[cuda::KERNEL]],
            StatsReport::GpuMemTimeSum | StatsReport::GpuMemSizeSum => &[MEMORY],
            StatsReport::GpuSum | StatsReport::CudaGpuTrace => &[GPU_WORK],
            StatsReport::NvtxSum
            | StatsReport::NvtxPushPopSum
            | StatsReport::NvtxStartEndSum
            | StatsReport::NvtxPushPopTrace => &[&[nvtx::TABLE]],
            StatsReport::OsrtSum => &[&[cpu::OSRT]],
            StatsReport::KernExecSum => &[&[cuda::RUNTIME], &[cuda::KERNEL]],
            StatsReport::UmCpuPageFaultsSum => &[&[UM_CPU_FAULTS]],
            StatsReport::NvtxGpuProjSum | StatsReport::NvtxGpuProjTrace => {
                &[&[nvtx::TABLE], &[cuda::RUNTIME], GPU_WORK]
            }
            StatsReport::NvtxKernSum => &[&[nvtx::TABLE], &[cuda::RUNTIME], &[cuda::KERNEL]],
            StatsReport::OpenAccSum | StatsReport::OpenMpEventSum => &[],
        }
    }

    fn rows(self, report: &Report, names: RangeNames) -> Result<Rows, Failure> {
        Ok(match self {
            StatsReport::CudaApiSum => api_sum(report)?,
            StatsReport::GpuKernSum => kernel_sum(report)?,
            StatsReport::GpuMemTimeSum => memory_sum(report, Measure::Time)?,
            StatsReport::GpuMemSizeSum => memory_sum(report, Measure::Size)?,
            StatsReport::GpuSum => gpu_sum(report)?,
            StatsReport::NvtxSum => nvtx_sum(report, names, |_| true, true)?,
            StatsReport::NvtxPushPopSum => nvtx_sum(report, names, |push_pop| push_pop, false)?,
            StatsReport::NvtxStartEndSum => nvtx_sum(report, names, |push_pop| !push_pop, false)?,
            StatsReport::OsrtSum => osrt_sum(report)?,
            StatsReport::KernExecSum => Box::new(super::launches::kern_exec_sum(report)?),
            StatsReport::OpenAccSum => openacc_sum(report)?,
            StatsReport::UmCpuPageFaultsSum => Box::new(cpu_page_faults_sum(report)?),
            StatsReport::OpenMpEventSum => openmp_sum(report)?,
            StatsReport::NvtxGpuProjSum => {
                Box::new(super::nvtx_gpu::nvtx_gpu_proj_sum(report, names)?)
            }
            StatsReport::NvtxKernSum => Box::new(super::nvtx_gpu::nvtx_kern_sum(report, names)?),
            StatsReport::CudaApiTrace => super::traces::api_trace(report)?,
            StatsReport::CudaGpuTrace => super::traces::gpu_trace(report)?,
            StatsReport::NvtxGpuProjTrace => {
                Box::new(super::nvtx_gpu_trace::nvtx_gpu_proj_trace(report, names)?)
            }
            StatsReport::NvtxPushPopTrace => Box::new(
                super::nvtx_pushpop_trace::nvtx_pushpop_trace(report, names)?,
            ),
        })
    }

    fn columns(self) -> &'static [&'static str] {
        const TIME: [&str; 8] = [
            "Time (%)",
            "Total Time (ns)",
            "Instances",
            "Avg (ns)",
            "Med (ns)",
            "Min (ns)",
            "Max (ns)",
            "StdDev (ns)",
        ];
        match self {
            StatsReport::CudaApiSum | StatsReport::OsrtSum | StatsReport::OpenAccSum => &[
                "Time (%)",
                "Total Time (ns)",
                "Num Calls",
                "Avg (ns)",
                "Med (ns)",
                "Min (ns)",
                "Max (ns)",
                "StdDev (ns)",
                "Name",
            ],
            StatsReport::KernExecSum => &super::launches::COLUMNS,
            StatsReport::CudaApiTrace => &super::traces::API_TRACE_COLUMNS,
            StatsReport::CudaGpuTrace => &super::traces::GPU_TRACE_COLUMNS,
            StatsReport::NvtxGpuProjTrace => &super::nvtx_gpu_trace::COLUMNS,
            StatsReport::NvtxPushPopTrace => &super::nvtx_pushpop_trace::COLUMNS,
            StatsReport::NvtxGpuProjSum => &super::nvtx_gpu::COLUMNS,
            StatsReport::NvtxKernSum => &super::nvtx_gpu::KERNEL_COLUMNS,
            StatsReport::UmCpuPageFaultsSum => &["CPU Page Faults", "CPU Instruction Address"],
            StatsReport::GpuKernSum => &[
                TIME[0], TIME[1], TIME[2], TIME[3], TIME[4], TIME[5], TIME[6], TIME[7], "Name",
            ],
            StatsReport::OpenMpEventSum => &[
                TIME[0], TIME[1], "Count", TIME[3], TIME[4], TIME[5], TIME[6], TIME[7], "Name",
            ],
            StatsReport::GpuMemTimeSum => &[
                TIME[0],
                TIME[1],
                "Count",
                TIME[3],
                TIME[4],
                TIME[5],
                TIME[6],
                TIME[7],
                "Operation",
            ],
            StatsReport::GpuMemSizeSum => &[
                "Total (MB)",
                "Count",
                "Avg (MB)",
                "Med (MB)",
                "Min (MB)",
                "Max (MB)",
                "StdDev (MB)",
                "Operation",
            ],
            StatsReport::GpuSum => &[
                TIME[0],
                TIME[1],
                TIME[2],
                TIME[3],
                TIME[4],
                TIME[5],
                TIME[6],
                TIME[7],
                "Category",
                "Operation",
            ],
            StatsReport::NvtxSum => &[
                TIME[0], TIME[1], TIME[2], TIME[3], TIME[4], TIME[5], TIME[6], TIME[7], "Style",
                "Range",
            ],
            // One style each: no Style column, as nsys printed them.
            StatsReport::NvtxPushPopSum | StatsReport::NvtxStartEndSum => &[
                TIME[0], TIME[1], TIME[2], TIME[3], TIME[4], TIME[5], TIME[6], TIME[7], "Range",
            ],
        }
    }
}

impl std::str::FromStr for StatsReport {
    type Err = String;

    /// Either name, old or new.
    fn from_str(s: &str) -> Result<Self, String> {
        StatsReport::ALL
            .into_iter()
            .find(|r| {
                let (new, old) = r.names();
                s == new || s == old
            })
            .ok_or_else(|| {
                let known: Vec<&str> = StatsReport::ALL.iter().map(|r| r.name()).collect();
                format!("unknown report {s:?} (known: {})", known.join(", "))
            })
    }
}

impl std::fmt::Display for StatsReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The time columns of a row: share of `grand`, total, count, average,
/// median, min, max, standard deviation.
fn time_cells(s: &Stats, grand: i128) -> Vec<Cell> {
    let share = match grand {
        0 => Cell::Empty,
        _ => Cell::Real(s.total as f64 * 100.0 / grand as f64, 1),
    };
    let mut cells = vec![share, Cell::Int(s.total), Cell::Int(i128::from(s.count))];
    cells.extend(spread_cells(s));
    cells
}

/// Rows of time statistics by name, with the name (and any other key
/// columns) after them, made as they are read.
fn time_rows<K, F>(groups: Ranked<K>, keys: F) -> Rows
where
    K: Clone + SpillKey + 'static,
    F: Fn(K) -> Vec<Cell> + 'static,
{
    Box::new(TimeRows { groups, keys })
}

struct TimeRows<K, F> {
    groups: Ranked<K>,
    keys: F,
}

impl<K: Clone + SpillKey, F: Fn(K) -> Vec<Cell>> RowSource for TimeRows<K, F> {
    fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    fn each(&self, f: &mut dyn FnMut(&[Cell]) -> std::io::Result<()>) -> std::io::Result<()> {
        let grand = self.groups.total;
        self.groups.each(&mut |k, s| {
            let mut row = time_cells(s, grand);
            row.extend((self.keys)(k));
            f(&row)
        })
    }
}

/// Which rows of the API call table are calls.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApiRecords {
    /// Every row, as `nsys stats` counts them: a call recorded twice to carry
    /// its backtrace (`--cudabacktrace`) counts twice, the second record under
    /// its name without a version suffix (`cudaMemcpy` beside `cudaMemcpy_v3020`).
    Every,
    /// The calls themselves, once each.
    Calls,
}

/// Durations by API name as recorded. Names that differ only in their
/// version suffix (`cudaMemcpy`, `cudaMemcpy_v3020`) are two groups, as nsys
/// groups by name id; the summary prints both without the suffix.
pub(crate) fn api_groups(
    report: &Report,
    records: ApiRecords,
) -> Result<Vec<(String, Stats)>, Failure> {
    api_grouped(report, records)?.finish()
}

fn api_grouped(report: &Report, records: ApiRecords) -> Result<Groups<String>, Failure> {
    let mut groups = PlausibleGroups::new(report)?;
    report.each_api_row(|row| {
        if records == ApiRecords::Every || !row.repeats_a_call {
            groups.add_named_span(cuda::RUNTIME, row.name, row.start, row.end);
        }
    })?;
    Ok(groups.groups)
}

fn api_sum(report: &Report) -> Result<Rows, Failure> {
    let groups = api_grouped(report, ApiRecords::Every)?.rank()?;
    Ok(time_rows(groups, |name: String| {
        vec![Cell::Text(api_stats_name(&name).to_owned())]
    }))
}

/// Kernel durations by name.
pub(crate) fn kernel_groups(report: &Report) -> Result<Vec<(String, Stats)>, Failure> {
    kernel_grouped(report)?.finish()
}

/// Kernels grouped by name; only those whose times can be right (the
/// others are counted, see `TimeCheck`).
fn kernel_grouped(report: &Report) -> Result<Groups<String>, Failure> {
    let mut groups = PlausibleGroups::new(report)?;
    report.each_kernel_row(|k| groups.add_named_span(cuda::KERNEL, k.name, k.start, k.end))?;
    Ok(groups.groups)
}

/// The `n` kernel names with most total time, ranked as `cuda_gpu_kern_sum`
/// ranks them, and the total of every kernel: memory holds `n` groups more
/// than the summary does, however many names there are. Kernels whose
/// times cannot be right are left out (as `report`'s GPU pass leaves them).
pub(crate) fn top_kernel_groups(
    report: &Report,
    n: usize,
) -> Result<(Vec<(String, Stats)>, i128), Failure> {
    let ranked = kernel_grouped(report)?.rank()?;
    let mut top = Vec::new();
    ranked.each(&mut |name, stats| {
        if top.len() < n {
            top.push((name, *stats));
        }
        Ok(())
    })?;
    Ok((top, ranked.total))
}

/// Runs of whole CUDA graphs by graph, named as in the trace.
pub(crate) fn graph_groups(report: &Report) -> Result<Vec<(String, Stats)>, Failure> {
    let mut groups = PlausibleGroups::new(report)?;
    report.each_graph_row(|g| {
        let name = crate::nsys::cuda::graph_name(g.graph_id);
        groups.add_span(cuda::GRAPH_TRACE, &name, g.start, g.end);
    })?;
    groups.groups.finish()
}

fn kernel_sum(report: &Report) -> Result<Rows, Failure> {
    Ok(time_rows(kernel_grouped(report)?.rank()?, |name| {
        vec![Cell::Text(name)]
    }))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Measure {
    Time,
    Size,
}

/// Memory operations by kind (a few): their durations or their sizes.
fn memory_groups(report: &Report, measure: Measure) -> Result<Ranked<String>, Failure> {
    let mut groups = PlausibleGroups::new(report)?;
    report.each_memory_row(|m| {
        let name = memory_stats_name(m.copy_kind);
        let table = memory_table(m.copy_kind);
        match measure {
            Measure::Time => groups.add_span(table, &name, m.start, m.end),
            Measure::Size => groups.add(table, (m.start, m.end), &name, m.bytes),
        }
    })?;
    groups.groups.rank()
}

fn memory_sum(report: &Report, measure: Measure) -> Result<Rows, Failure> {
    let groups = memory_groups(report, measure)?;
    if measure == Measure::Time {
        return Ok(time_rows(groups, |name| vec![Cell::Text(name)]));
    }
    // Sizes in MB (10^6 bytes), three decimals, as nsys prints them.
    let mb = |bytes: f64| Cell::Real(bytes / 1e6, 3);
    let mut rows = Vec::new();
    groups.each(&mut |name, s| {
        rows.push(vec![
            mb(s.total as f64),
            Cell::Int(i128::from(s.count)),
            mb(s.mean),
            mb(s.median),
            mb(s.min as f64),
            mb(s.max as f64),
            mb(s.stddev),
            Cell::Text(name),
        ]);
        Ok(())
    })?;
    Ok(Box::new(rows))
}

/// The summaries' name of a memory operation: a copy of `copy_kind`, or a
/// memset.
fn memory_stats_name(copy_kind: Option<i64>) -> String {
    match copy_kind {
        Some(kind) => memcpy_stats_name(kind),
        None => MEMSET_STATS_NAME.to_owned(),
    }
}

/// The table of a memory operation: a copy of `copy_kind`, or a memset.
pub(crate) fn memory_table<K>(copy_kind: Option<K>) -> &'static str {
    match copy_kind {
        Some(_) => cuda::MEMCPY,
        None => cuda::MEMSET,
    }
}

/// What a row of `cuda_gpu_sum` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum GpuCategory {
    Kernel,
    Memory,
}

impl SpillKey for GpuCategory {
    fn encode(&self, out: &mut Vec<u8>) {
        (*self == GpuCategory::Kernel).encode(out);
    }

    fn decode(input: &mut &[u8]) -> Option<Self> {
        Some(match bool::decode(input)? {
            true => GpuCategory::Kernel,
            false => GpuCategory::Memory,
        })
    }
}

fn gpu_sum(report: &Report) -> Result<Rows, Failure> {
    let mut groups = PlausibleGroups::new(report)?;
    report.each_kernel_row(|k| {
        let key = (k.name.to_owned(), GpuCategory::Kernel);
        groups.add_span(cuda::KERNEL, &key, k.start, k.end);
    })?;
    report.each_memory_row(|m| {
        let key = (memory_stats_name(m.copy_kind), GpuCategory::Memory);
        groups.add_span(memory_table(m.copy_kind), &key, m.start, m.end);
    })?;
    Ok(time_rows(groups.groups.rank()?, |(name, category)| {
        let category = match category {
            GpuCategory::Kernel => "CUDA_KERNEL",
            GpuCategory::Memory => "MEMORY_OPER",
        };
        vec![Cell::Text(category.to_owned()), Cell::Text(name)]
    }))
}

/// NVTX ranges of one `domain:name` and style: (name, push/pop).
pub(crate) type RangeGroup = (String, bool);

/// NVTX range durations by (`domain:name`, push/pop), each name as `names`
/// says: the default domain has an empty name, so its ranges read `:name`.
/// A range open at the end of the capture lasts until the last time of any
/// NVTX row.
pub(crate) fn nvtx_groups(
    report: &Report,
    names: RangeNames,
    style: impl Fn(bool) -> bool,
) -> Result<Vec<(RangeGroup, Stats)>, Failure> {
    nvtx_grouped(report, names, style)?.finish()
}

fn nvtx_grouped(
    report: &Report,
    names: RangeNames,
    style: impl Fn(bool) -> bool,
) -> Result<Groups<RangeGroup>, Failure> {
    let last = report.nvtx_last_time()?;
    let mut groups = PlausibleGroups::new(report)?;
    report.each_range_row(|r| {
        if !style(r.push_pop) {
            return;
        }
        let end = r.end.or(last).unwrap_or(r.start);
        let name = format!("{}:{}", r.domain.unwrap_or(""), names.of(&r.text));
        groups.add_span(nvtx::TABLE, &(name, r.push_pop), r.start, end);
    })?;
    Ok(groups.groups)
}

fn nvtx_sum(
    report: &Report,
    names: RangeNames,
    style: impl Fn(bool) -> bool,
    style_column: bool,
) -> Result<Rows, Failure> {
    Ok(time_rows(
        nvtx_grouped(report, names, style)?.rank()?,
        move |(name, push_pop): RangeGroup| {
            let style = if push_pop { "PushPop" } else { "StartEnd" };
            match style_column {
                true => vec![Cell::Text(style.to_owned()), Cell::Text(name)],
                false => vec![Cell::Text(name)],
            }
        },
    ))
}

fn osrt_sum(report: &Report) -> Result<Rows, Failure> {
    let mut groups = PlausibleGroups::new(report)?;
    report.each_osrt_row(|name, start, end| groups.add_named_span(cpu::OSRT, name, start, end))?;
    Ok(time_rows(groups.groups.rank()?, |name| {
        vec![Cell::Text(name)]
    }))
}

/// The OpenACC and OpenMP tables, as one family each, for the count of
/// events left out for their times (see [`crate::nsys::TimeCheck`]).
const OPENACC_TABLES: &str = "CUPTI_ACTIVITY_KIND_OPENACC_*";
const OPENMP_TABLES: &str = "OPENMP_EVENT_KIND_*";

/// OpenACC events by name, with `@file:line` where the source is recorded.
fn openacc_sum(report: &Report) -> Result<Rows, Failure> {
    let mut groups = PlausibleGroups::new(report)?;
    let mut key = String::new();
    report.each_openacc_row(|name, file, line, start, end| {
        key.clear();
        key.push_str(name);
        if let Some(file) = file {
            key.push('@');
            key.push_str(file);
            key.push(':');
            if let Some(line) = line {
                key.push_str(&line.to_string());
            }
        }
        groups.add_named_span(OPENACC_TABLES, &key, start, end);
    })?;
    Ok(time_rows(groups.groups.rank()?, |name| {
        vec![Cell::Text(name)]
    }))
}

/// OpenMP events by name within each kind of event (a name in two tables
/// is two rows, as nsys sums each table apart).
fn openmp_sum(report: &Report) -> Result<Rows, Failure> {
    let mut groups = PlausibleGroups::new(report)?;
    let mut key = (String::new(), String::new());
    report.each_openmp_row(|table, name, start, end| {
        key.0.clear();
        key.0.push_str(table);
        key.1.clear();
        key.1.push_str(name);
        groups.add_span(OPENMP_TABLES, &key, start, end);
    })?;
    Ok(time_rows(
        groups.groups.rank()?,
        |(_, name): (String, String)| vec![Cell::Text(name)],
    ))
}

/// Unified-memory CPU page faults counted by faulting instruction, most first.
fn cpu_page_faults_sum(report: &Report) -> Result<Vec<Vec<Cell>>, Failure> {
    let mut counts: Vec<(Option<String>, u64)> = Vec::new();
    let mut index: rustc_hash::FxHashMap<Option<String>, usize> = Default::default();
    report.each_cpu_page_fault(|instruction| {
        let key = instruction.map(str::to_owned);
        match index.get(&key) {
            Some(&at) => counts[at].1 += 1,
            None => {
                index.insert(key.clone(), counts.len());
                counts.push((key, 1));
            }
        }
    })?;
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    Ok(counts
        .into_iter()
        .map(|(instruction, n)| {
            vec![
                Cell::Int(i128::from(n)),
                instruction.map_or(Cell::Empty, Cell::Text),
            ]
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back() {
        for r in StatsReport::ALL {
            let (new, old) = r.names();
            assert_eq!(new.parse::<StatsReport>(), Ok(r));
            assert_eq!(old.parse::<StatsReport>(), Ok(r));
        }
        assert!("nope".parse::<StatsReport>().is_err());
    }
}
