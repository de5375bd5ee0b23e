//! Where the GPU time of a run went, on one page (the `report` command).
//!
//! Per GPU, its busy time (the union of its kernels, memcpys, memsets and
//! whole-graph runs) as a share of the capture and of the span of its work,
//! and its idle time between its first and last work split by why: an idle
//! stretch is *host-bound* until the start of the CUDA API call that
//! launched the work ending it (nothing was queued for the GPU), and
//! *waiting* from then on (the work was launched, and waited behind a
//! synchronization, a copy, another stream, or the launch's own latency);
//! where the export lacks that call, the stretch is *unattributed*. The
//! longest stretches come with what the process's CPU threads did then.
//! GPU time by kind of work (see `kinds`), the share of communication time
//! overlapped by computation, the launch call time and launch-to-start
//! delay per kind (quantiles from a bounded histogram, see `sketch`), the
//! kernels and NVTX scopes with most GPU time, and what `analyze`'s rules
//! find.
//!
//! Each part streams over the export as the other commands do: memory
//! holds per-GPU numbers, histograms of fixed size, the launches whose work
//! has not all come, and the few longest idle stretches; not the report.

mod covering;
mod gpu;
mod kinds;
mod model;
mod page;
mod sketch;
mod summary;
mod timeline;

use crate::analysis::analyze::{analyze, Finding, Place, Rule, Thresholds};
use crate::analysis::stats::{projected_by_name_seeing, top_kernel_groups, ProjectedName, Stats};
use crate::analysis::steps::{JobSteps, StepOptions};
use crate::error::Failure;
use crate::error::Result;
use crate::nsys::names::RangeNames;
use crate::nsys::Report;
use std::thread::ScopedJoinHandle;

pub use kinds::KindPattern;
pub use model::{
    GpuTimeline, GpuUse, IdleStretch, KindTime, LaunchDelays, NamedTime, NvtxScopes, RuleFindings,
    RunReport, ThreadActivity,
};
pub(crate) use page::write_html_under;
pub use page::{write_page, PageFormat};
pub use summary::summary_table;

/// What a report holds. Start from [`ReportOptions::default`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReportOptions {
    /// Kernel kinds of the user's, matched before the built-in ones.
    pub kinds: Vec<KindPattern>,
    /// How many of each GPU's longest idle stretches are told.
    pub idle_stretches: usize,
    /// How many kernels and NVTX scopes are listed.
    pub top: usize,
    /// How many findings of each rule are told.
    pub findings: usize,
    /// The steps of the job the runs make (an NVTX range pattern, as
    /// `ProfilerStep*`), measured across them as ranks; `None`: no job view.
    pub steps: Option<StepOptions>,
}

impl Default for ReportOptions {
    fn default() -> Self {
        Self {
            kinds: Vec::new(),
            idle_stretches: 5,
            top: 10,
            findings: 3,
            steps: None,
        }
    }
}

/// The report of one run.
pub fn report(report: &Report, options: &ReportOptions) -> Result<RunReport> {
    read(report, options).map_err(|e| match e {
        Read::Failed(f) => f.of(report.path()),
        Read::Refused(e) => e,
    })
}

/// A page: the report of each run, and, where [`ReportOptions::steps`]
/// asks, the steps of the job the runs make.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Page {
    /// A report per run, in the order of the inputs.
    pub runs: Vec<RunReport>,
    /// The job's steps across the runs, its ranks.
    pub steps: Option<JobSteps>,
}

enum Read {
    Failed(Failure),
    Refused(crate::Error),
}

impl<E: Into<Failure>> From<E> for Read {
    fn from(e: E) -> Self {
        Read::Failed(e.into())
    }
}

fn read(report: &Report, options: &ReportOptions) -> std::result::Result<RunReport, Read> {
    let kinds = kinds::Kinds::new(&options.kinds).map_err(Read::Refused)?;
    let projection = projection_needed(report)?;
    // The top kernels and `analyze`'s rules need nothing of the GPU pass:
    // they read on a thread of their own beside it, so that both cores stay
    // busy to the end instead of each pass running alone in turn.
    std::thread::scope(|scope| {
        let beside = scope.spawn(|| {
            let top = top_kernel_groups(report, options.top);
            (top, findings(report, options.findings))
        });
        read_gpu(report, options, kinds, projection, beside)
    })
}

/// What the top kernels and `analyze`'s rules read, beside the GPU pass.
type Beside<'scope> = ScopedJoinHandle<
    'scope,
    (
        std::result::Result<(Vec<(String, Stats)>, i128), Failure>,
        Result<Vec<RuleFindings>>,
    ),
>;

/// The GPU pass, the NVTX projection (where `projection`) and the idle
/// stretches, then what `beside` read.
fn read_gpu(
    report: &Report,
    options: &ReportOptions,
    kinds: kinds::Kinds,
    projection: bool,
    beside: Beside<'_>,
) -> std::result::Result<RunReport, Read> {
    let plausible = report.plausible_times()?;
    let mut pass = gpu::GpuPass::new(kinds, options.idle_stretches, plausible);
    // The GPU pass and the NVTX projection read the CUDA stream once, together.
    let projected = match projection {
        true => {
            let copy_kinds = &report.meta().copy_kinds;
            projected_by_name_seeing(report, RangeNames::Grouped, |event| {
                pass.event(event, copy_kinds)
            })?
        }
        false => None,
    };
    if projected.is_none() {
        pass.run(report)?;
    }
    let capture = report.capture_span()?.or(pass.events);
    let gpus_seen = !pass.devices.is_empty();

    let gaps: Vec<gpu::Gap> = pass.devices.values().flat_map(|d| d.gaps.clone()).collect();
    let mut stretches = covering::idle_stretches(report, &gaps)?.into_iter();
    let gpu_names = &report.meta().gpus;
    let timeline = &pass.timeline;
    let gpus = pass
        .devices
        .iter()
        .enumerate()
        .map(|(lane, (&device, d))| GpuUse {
            device,
            name: gpu_names.get(&device).cloned(),
            first_start: d.first_start,
            last_end: d.busy_until,
            busy: d.busy,
            host_bound: d.host_bound,
            waiting: d.waiting,
            unattributed: d.unattributed,
            communication: d.communication,
            overlapped: d.overlapped,
            largest_idle: stretches.by_ref().take(d.gaps.len()).collect(),
            timeline: timeline.lanes.get(lane).cloned().unwrap_or_default(),
        })
        .collect();
    let timeline = (timeline.width, timeline.origin.unwrap_or(0));

    let names = pass.kinds.into_names();
    let mut kinds: Vec<KindTime> = pass
        .kind_time
        .iter()
        .zip(&pass.kind_count)
        .enumerate()
        .filter(|(_, (_, &count))| count > 0)
        .map(|(k, (&time, &count))| KindTime {
            kind: names[k].clone(),
            time,
            count,
        })
        .collect();
    kinds.sort_by_key(|k| std::cmp::Reverse(k.time));
    let quantiles = |s: &sketch::Sketch| [0.5, 0.9, 0.99].map(|q| s.quantile(q).unwrap_or(0));
    let launches = kinds
        .iter()
        .filter_map(|k| {
            let at = names.iter().position(|n| *n == k.kind)?;
            let l = &pass.launches[at];
            (l.delay.count() > 0).then(|| LaunchDelays {
                kind: k.kind.clone(),
                calls: l.call_time.count(),
                call_time: quantiles(&l.call_time),
                launched: l.delay.count(),
                delay: quantiles(&l.delay),
            })
        })
        .collect();

    let (top, findings) = crate::worker::outcome(beside.join());
    let (top, kernel_time) = top?;
    let top_kernels = top
        .into_iter()
        .map(|(name, stats)| NamedTime {
            name,
            time: stats.total,
            count: Some(stats.count),
        })
        .collect();

    Ok(RunReport {
        path: report.path().display().to_string(),
        capture,
        gpus,
        timeline,
        kinds,
        launches,
        top_kernels,
        kernel_time,
        nvtx: nvtx_scopes(report, options.top, !gpus_seen, projected),
        findings: findings.map_err(Read::Refused)?,
        incomplete: report.unreadable(),
        impossible_times: pass.impossible_times,
    })
}

/// Whether the NVTX projection is to run: the export has NVTX ranges and
/// GPU work. Without GPU work, no range can have launched any: the
/// projection (whose memory grows with the number of distinct range names)
/// is not run.
fn projection_needed(report: &Report) -> rusqlite::Result<bool> {
    use crate::nsys::cuda::{GRAPH_TRACE, KERNEL, MEMCPY, MEMSET};
    if !report.has_table(crate::nsys::nvtx::TABLE) {
        return Ok(false);
    }
    for table in [KERNEL, MEMCPY, MEMSET, GRAPH_TRACE] {
        if report.has_rows(table)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The NVTX ranges with most projected GPU time, by grouped name, from the
/// projection (`None` where it did not run: see [`projection_needed`]).
/// Names are grouped before the projection keys them, so its groups are
/// operators, not instances.
fn nvtx_scopes(
    report: &Report,
    top: usize,
    no_gpu_work: bool,
    projected: Option<(Vec<ProjectedName>, i128)>,
) -> NvtxScopes {
    let skipped = |why: &str| NvtxScopes {
        skipped: Some(why.to_owned()),
        ..NvtxScopes::default()
    };
    if !report.has_table(crate::nsys::nvtx::TABLE) {
        return skipped("the export has no NVTX_EVENTS table (no NVTX ranges were recorded)");
    }
    if no_gpu_work {
        return skipped(
            "the export has no GPU work (kernel, memcpy, memset) to project NVTX ranges onto",
        );
    }
    // No NVTX row: no range projected.
    let (projected, gpu_span) = projected.unwrap_or_default();
    if projected.is_empty() {
        return skipped("no NVTX range (push/pop or start/end on one thread) launched GPU work");
    }
    let mut grouped: rustc_hash::FxHashMap<String, (i128, u64)> = rustc_hash::FxHashMap::default();
    for (name, time, ranges) in projected {
        // `domain:name`; the default domain has no name.
        let name = name.strip_prefix(':').unwrap_or(&name);
        let sum = grouped.entry(name.to_owned()).or_default();
        sum.0 += time;
        sum.1 += ranges;
    }
    let mut scopes: Vec<NamedTime> = grouped
        .into_iter()
        .map(|(name, (time, ranges))| NamedTime {
            name,
            time,
            count: Some(ranges),
        })
        .collect();
    scopes.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| a.name.cmp(&b.name)));
    scopes.truncate(top);
    NvtxScopes {
        skipped: None,
        top: scopes,
        gpu_span,
    }
}

/// What each rule of `analyze` finds, with its defaults.
fn findings(report: &Report, keep: usize) -> Result<Vec<RuleFindings>> {
    let found = analyze(report, &Rule::ALL, &Thresholds::default())?;
    let mut out: Vec<RuleFindings> = Rule::ALL
        .iter()
        .map(|&rule| RuleFindings {
            rule: rule.name().to_owned(),
            title: rule.title().to_owned(),
            count: found.count(rule),
            skipped: found.skipped(rule).map(str::to_owned),
            top: Vec::new(),
        })
        .collect();
    let failed = |cause: std::io::Error| Failure::from(cause).of(report.path());
    for f in found.iter().map_err(failed)? {
        let f = f.map_err(failed)?;
        let entry = &mut out[f.rule.index()];
        if entry.top.len() < keep {
            entry.top.push(finding_line(&f));
        }
    }
    Ok(out)
}

/// A finding on one line: when, how long, where, and what.
fn finding_line(f: &Finding) -> String {
    let place = match f.place {
        Place::Thread { pid, tid } => format!("process {pid}, thread {tid}"),
        Place::Gpu { pid, device, .. } => match pid {
            Some(pid) => format!("GPU {device}, process {pid}"),
            None => format!("GPU {device}"),
        },
    };
    let mut line = format!(
        "at {} for {} on {place}",
        crate::render::format::seconds(i128::from(f.start)),
        crate::render::format::duration(i128::from(f.duration))
    );
    if let Some(api) = &f.api {
        line.push_str(&format!(": {}", crate::nsys::names::api_stats_name(api)));
    }
    if let Some(percent) = f.in_use_percent {
        line.push_str(&format!(": {percent:.1}% in use"));
    }
    line
}
