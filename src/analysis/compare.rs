//! Two reports side by side: per kernel, whole CUDA graph, CUDA API and NVTX
//! range, what changed in total time, count, average and share of GPU time,
//! kind by kind (their times are of different clocks: GPU time, CPU time in
//! a call, wall time of a range), largest change first within each. A kernel's (or a whole graph's) GPU time is its
//! duration, its share that of the report's GPU time (every kernel, memcpy,
//! memset and whole graph). An API call recorded twice to carry its
//! backtrace counts once. An NVTX range's
//! GPU time is its projection onto the GPU (from the start of the first GPU
//! operation launched within it to the end of the last, as
//! `nvtx_gpu_proj_sum` totals it), which holds the idle time between its
//! operations too: its share is that of the span of the report's GPU work
//! (first start to last end), so that a range that keeps the GPU in hand
//! from the first operation to the last counts 100%. API calls have none.

use crate::error::Failure;
use crate::nsys::{Report, TimeCheck};

use super::stats::projected_by_name;
use super::stats::Stats;
use super::stats::{api_groups, graph_groups, kernel_groups, nvtx_groups};
use super::stats::{memory_table, ApiRecords, StatsReport};
use super::stats::{Cell, Table};
use crate::nsys::names::{api_stats_name, RangeNames};

/// What is compared of one report: its kernels, whole CUDA graphs, API calls
/// and NVTX ranges by name, and its GPU time (kernels, whole graphs and
/// memory operations).
#[derive(Clone, Debug)]
pub struct RunSummary {
    /// By kernel name.
    pub kernels: Vec<(String, Stats)>,
    /// Runs of whole CUDA graphs (`--cuda-graph-trace=graph`), by graph.
    pub graphs: Vec<(String, Stats)>,
    /// By API name (without its version suffix).
    pub api_calls: Vec<(String, Stats)>,
    /// By `domain:name` (push/pop and start/end ranges of one name together).
    pub nvtx_ranges: Vec<(String, Stats)>,
    /// The projected GPU time of the NVTX ranges of each `domain:name` that
    /// launched GPU work (ranges that start and end on one thread).
    pub nvtx_projected: Vec<(String, i128)>,
    /// From the first start of a kernel, memcpy or memset to the last end
    /// (0 in an export without NVTX data: only NVTX shares use it).
    pub gpu_span: i128,
    /// The summed durations of every kernel, memcpy, memset and whole graph.
    pub gpu_time: i128,
    /// The tables it could not read (they lack columns their rows need):
    /// what depends on them is incomplete. Empty where every table was read.
    pub incomplete: Vec<crate::Unreadable>,
}

impl RunSummary {
    /// Reads what is compared of `report`, in one pass over each table,
    /// its NVTX ranges named as recorded.
    pub fn of(report: &Report) -> crate::Result<RunSummary> {
        Self::of_with(report, RangeNames::Recorded)
    }

    /// [`RunSummary::of`], its NVTX ranges named as `names` says.
    pub fn of_with(report: &Report, names: RangeNames) -> crate::Result<RunSummary> {
        Self::read(report, names).map_err(|e| e.of(report.path()))
    }

    fn read(report: &Report, names: RangeNames) -> Result<RunSummary, Failure> {
        let kernels = kernel_groups(report)?;
        let mut memory_time: i128 = 0;
        let mut check = TimeCheck::new(report)?;
        report.each_memory_row(|m| {
            if check.allow(memory_table(m.copy_kind), m.start, m.end) {
                memory_time += i128::from(m.end - m.start);
            }
        })?;
        let graphs = graph_groups(report)?;
        let kernel_time: i128 = kernels.iter().chain(&graphs).map(|(_, s)| s.total).sum();
        // Push/pop and start/end ranges of one name are one row here, and so
        // are API names with and without a version suffix.
        let nvtx = nvtx_groups(report, names, |_| true)?
            .into_iter()
            .map(|((name, _), stats)| (name, stats));
        let api = api_groups(report, ApiRecords::Calls)?
            .into_iter()
            .map(|(name, stats)| (api_stats_name(&name).to_owned(), stats));
        let (nvtx_projected, gpu_span) = projected_by_name(report, names)?;
        Ok(RunSummary {
            kernels,
            graphs,
            api_calls: merge_names(api),
            nvtx_ranges: merge_names(nvtx),
            nvtx_projected,
            gpu_span,
            gpu_time: kernel_time + memory_time,
            incomplete: report.unreadable(),
        })
    }
}

/// Why a comparison of runs A and B is incomplete: a line per table that
/// either could not read (`A: ...`), for [`Table::incomplete`].
pub fn incomplete_sides(a: &[crate::Unreadable], b: &[crate::Unreadable]) -> Vec<String> {
    let side = |name: &'static str, of: &[crate::Unreadable]| {
        of.iter()
            .map(move |u| format!("{name}: {}", u.warning(crate::nsys::NOT_READ)))
            .collect::<Vec<_>>()
    };
    let mut lines = side("A", a);
    lines.extend(side("B", b));
    lines
}

/// Groups of one name made one, by total descending.
fn merge_names(groups: impl Iterator<Item = (String, Stats)>) -> Vec<(String, Stats)> {
    let mut out: Vec<(String, Stats)> = Vec::new();
    let mut index: rustc_hash::FxHashMap<String, usize> = rustc_hash::FxHashMap::default();
    for (name, stats) in groups {
        match index.get(&name) {
            Some(&at) => out[at].1 = merge(&out[at].1, &stats),
            None => {
                index.insert(name.clone(), out.len());
                out.push((name, stats));
            }
        }
    }
    out.sort_by_key(|g| std::cmp::Reverse(g.1.total));
    out
}

/// Count, total and mean of two groups together (the rest is not compared).
fn merge(a: &Stats, b: &Stats) -> Stats {
    let count = a.count + b.count;
    let total = a.total + b.total;
    Stats {
        count,
        total,
        mean: total as f64 / count as f64,
        median: f64::NAN,
        min: a.min.min(b.min),
        max: a.max.max(b.max),
        stddev: f64::NAN,
    }
}

/// What a compared row is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A kernel, by name.
    Kernel,
    /// A whole CUDA graph's runs, by graph.
    Graph,
    /// A CUDA API function.
    Api,
    /// An NVTX range, by `domain:name`.
    Nvtx,
}

impl Kind {
    /// Every kind, in the order the comparison shows them.
    pub const ALL: [Kind; 4] = [Kind::Kernel, Kind::Graph, Kind::Api, Kind::Nvtx];

    /// Its one name: in the "Kind" column, and as `--kind` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Kernel => "kernel",
            Kind::Graph => "graph",
            Kind::Api => "api",
            Kind::Nvtx => "nvtx",
        }
    }
}

impl std::str::FromStr for Kind {
    type Err = String;

    /// The kind of this [`Kind::name`].
    fn from_str(s: &str) -> Result<Self, String> {
        Kind::ALL
            .into_iter()
            .find(|&k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.into_iter().map(Kind::name).collect();
                format!("unknown kind {s:?} (kinds: {})", names.join(", "))
            })
    }
}

/// One name in each report (`None` where a report has none of it).
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// What the name is.
    pub kind: Kind,
    /// The name.
    pub name: String,
    /// In the first report.
    pub a: Option<Side>,
    /// In the second report.
    pub b: Option<Side>,
}

/// A name in one report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Side {
    /// How many times it occurs.
    pub count: u64,
    /// Its total time (ns).
    pub total: i128,
    /// Its mean time (ns).
    pub mean: f64,
    /// The GPU time of a kernel or graph (its total) or of an NVTX range (its
    /// projected time, 0 if it launched nothing); none for API calls.
    pub gpu_time: Option<i128>,
    /// `gpu_time` in percent of the report's: for a kernel or graph of its GPU time,
    /// for an NVTX range of the span of its GPU work (none where that is 0).
    pub gpu_share: Option<f64>,
}

impl Difference {
    /// B's total minus A's (a name absent counts as 0).
    pub fn total_change(&self) -> i128 {
        let total = |s: &Option<Side>| s.map_or(0, |s| s.total);
        total(&self.b) - total(&self.a)
    }

    /// The total's change in percent of A's (none where A has none).
    pub fn total_change_percent(&self) -> Option<f64> {
        let a = self.a.map_or(0, |s| s.total);
        (a != 0).then(|| self.total_change() as f64 * 100.0 / a as f64)
    }

    /// B's count minus A's (a name absent counts as 0).
    pub fn count_change(&self) -> i128 {
        let count = |s: &Option<Side>| s.map_or(0, |s| i128::from(s.count));
        count(&self.b) - count(&self.a)
    }
}

/// Every kernel, graph, API and NVTX name of either report, kind by kind
/// (kernels, graphs, API calls, NVTX ranges), within a kind by the absolute
/// change of its total time (largest first; ties by name).
pub fn compare(a: &RunSummary, b: &RunSummary) -> Vec<Difference> {
    let mut out = Vec::new();
    let sides =
        |groups: &[(String, Stats)], gpu: &dyn Fn(&str, &Stats) -> Option<i128>, all: i128| {
            groups
                .iter()
                .map(|(name, s)| {
                    let gpu_time = gpu(name, s);
                    let side = Side {
                        count: s.count,
                        total: s.total,
                        mean: s.mean,
                        gpu_time,
                        gpu_share: gpu_time
                            .filter(|_| all > 0)
                            .map(|t| t as f64 * 100.0 / all as f64),
                    };
                    (name.clone(), side)
                })
                .collect::<Vec<_>>()
        };
    let projected = |r: &RunSummary| -> rustc_hash::FxHashMap<String, i128> {
        r.nvtx_projected.iter().cloned().collect()
    };
    let (a_projected, b_projected) = (projected(a), projected(b));
    let kernel = |_: &str, s: &Stats| Some(s.total);
    let api = |_: &str, _: &Stats| None;
    let a_nvtx = |name: &str, _: &Stats| Some(a_projected.get(name).copied().unwrap_or(0));
    let b_nvtx = |name: &str, _: &Stats| Some(b_projected.get(name).copied().unwrap_or(0));
    type GpuTime<'f> = &'f dyn Fn(&str, &Stats) -> Option<i128>;
    // Each kind: its groups, GPU time and the whole its share is of, in A and in B.
    let pairs: [(Kind, _, _, GpuTime, GpuTime, [i128; 2]); 4] = [
        (
            Kind::Kernel,
            &a.kernels,
            &b.kernels,
            &kernel,
            &kernel,
            [a.gpu_time, b.gpu_time],
        ),
        (
            Kind::Graph,
            &a.graphs,
            &b.graphs,
            &kernel,
            &kernel,
            [a.gpu_time, b.gpu_time],
        ),
        (Kind::Api, &a.api_calls, &b.api_calls, &api, &api, [0, 0]),
        (
            Kind::Nvtx,
            &a.nvtx_ranges,
            &b.nvtx_ranges,
            &a_nvtx,
            &b_nvtx,
            [a.gpu_span, b.gpu_span],
        ),
    ];
    for (kind, in_a, in_b, a_gpu, b_gpu, [a_whole, b_whole]) in pairs {
        let a_sides = sides(in_a, a_gpu, a_whole);
        let b_sides = sides(in_b, b_gpu, b_whole);
        let mut b_index: rustc_hash::FxHashMap<&str, Side> =
            b_sides.iter().map(|(n, s)| (n.as_str(), *s)).collect();
        for (name, side) in &a_sides {
            out.push(Difference {
                kind,
                b: b_index.remove(name.as_str()),
                name: name.clone(),
                a: Some(*side),
            });
        }
        for (name, side) in &b_sides {
            if b_index.contains_key(name.as_str()) {
                out.push(Difference {
                    kind,
                    name: name.clone(),
                    a: None,
                    b: Some(*side),
                });
            }
        }
    }
    out.sort_by(|x, y| {
        x.kind
            .cmp(&y.kind)
            .then(y.total_change().abs().cmp(&x.total_change().abs()))
            .then_with(|| x.name.cmp(&y.name))
    });
    out
}

/// The differences of `kinds` only, at most `top` of each kind (the first:
/// the largest changes), from [`compare`]'s order.
pub fn top_by_kind(
    differences: Vec<Difference>,
    kinds: &[Kind],
    top: Option<usize>,
) -> Vec<Difference> {
    let mut taken = [0usize; Kind::ALL.len()];
    differences
        .into_iter()
        .filter(|d| kinds.contains(&d.kind))
        .filter(|d| {
            let n = &mut taken[d.kind as usize];
            *n += 1;
            top.is_none_or(|top| *n <= top)
        })
        .collect()
}

/// The columns of [`comparison_table`] left out, first to last, where its
/// lines must fit a narrow terminal: the sides before the changes, the
/// changes of total time and GPU share last.
pub const NARROWING: [&str; 12] = [
    "Avg A (ns)",
    "Avg B (ns)",
    "GPU Time A (%)",
    "GPU Time B (%)",
    "Count A",
    "Count B",
    "Avg Change (ns)",
    "Total A (ns)",
    "Total B (ns)",
    "Count Change",
    "Total Change (%)",
    "GPU Time Change (%)",
];

/// `table` (a [`comparison_table`]) without the columns it takes to fit in
/// lines of `width` characters (names kept at least
/// [`Fit::SHORTEST_NAME`](crate::stats::Fit::SHORTEST_NAME) long), in the
/// order of [`NARROWING`]; returns the headers of the columns left out.
pub fn fit_to_width(table: &mut Table, width: usize) -> Vec<String> {
    crate::render::table::leave_out_to_fit(table, width, &NARROWING)
}

/// The differences as a table (B minus A in each change column).
pub fn comparison_table(differences: &[Difference]) -> Table {
    let columns = [
        "Kind",
        "Total A (ns)",
        "Total B (ns)",
        "Total Change (ns)",
        "Total Change (%)",
        "Count A",
        "Count B",
        "Count Change",
        "Avg A (ns)",
        "Avg B (ns)",
        "Avg Change (ns)",
        "GPU Time A (%)",
        "GPU Time B (%)",
        "GPU Time Change (%)",
        "Name",
    ];
    let real = |v: Option<f64>, decimals| v.map_or(Cell::Empty, |v| Cell::Real(v, decimals));
    let rows = differences
        .iter()
        .map(|d| {
            let total = |s: &Option<Side>| Cell::Int(s.map_or(0, |s| s.total));
            let count = |s: &Option<Side>| Cell::Int(s.map_or(0, |s| i128::from(s.count)));
            let mean = |s: &Option<Side>| s.map(|s| s.mean);
            // A name absent from one report has no GPU time there.
            let share = |s: &Option<Side>| match s {
                Some(s) => s.gpu_share,
                None if d.kind != Kind::Api => Some(0.0),
                None => None,
            };
            let change = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) => Some(b - a),
                _ => None,
            };
            vec![
                Cell::Text(d.kind.name().to_owned()),
                total(&d.a),
                total(&d.b),
                Cell::Int(d.total_change()),
                real(d.total_change_percent(), 1),
                count(&d.a),
                count(&d.b),
                Cell::Int(d.count_change()),
                real(mean(&d.a), 1),
                real(mean(&d.b), 1),
                real(change(mean(&d.a), mean(&d.b)), 1),
                real(share(&d.a), 2),
                real(share(&d.b), 2),
                real(change(share(&d.a), share(&d.b)), 2),
                Cell::Text(d.name.clone()),
            ]
        })
        .collect();
    Table {
        name: "compare".to_owned(),
        title: format!(
            "Differences (B - A) of kernels, CUDA graphs, CUDA API calls ({}) and NVTX ranges",
            StatsReport::CudaApiSum.name()
        ),
        columns: columns.iter().map(|c| (*c).to_owned()).collect(),
        rows,
        no_data: None,
        incomplete: Vec::new(),
    }
}
