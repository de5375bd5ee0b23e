//! Findings: the rules of `nsys analyze`, computed in streaming passes over
//! an export.
//!
//! Six rules, with NVIDIA's definitions and default thresholds (nsys 2022.4's
//! rule scripts; nsys 2025.3 gives the same findings on the exports tested):
//!
//! - [`Rule::CudaMemcpySync`]: copies made by synchronous `cudaMemcpy*` calls,
//!   except host-to-device copies of 64 000 bytes or less and copies within
//!   one device;
//! - [`Rule::CudaMemsetSync`]: synchronous `cudaMemset*` on pinned or managed memory;
//! - [`Rule::CudaMemcpyAsync`]: `cudaMemcpy*Async` copies from or to pageable
//!   memory, which run synchronously;
//! - [`Rule::CudaApiSync`]: `cudaDeviceSynchronize` and `cudaStreamSynchronize` calls;
//! - [`Rule::GpuGaps`]: time over a threshold in which a device ran nothing
//!   of a process, between its first and last work;
//! - [`Rule::GpuTimeUtil`]: stretches of that time whose GPU time use is
//!   below a threshold.
//!
//! GPU work is every kernel, memcpy and memset, and the profiler's CUDA
//! overhead (flushes and the like) within it. One pass reads the calls and
//! the work together, one the profiler's overhead, and [`Rule::GpuTimeUtil`]
//! reads the work once more (its chunks depend on the time range found by
//! the first pass). What stays in memory is a few numbers per device and
//! process, the gaps found (which the profiler's overhead may shorten), a
//! filter of fixed size that tells the calls whose copy is in the export,
//! the copying calls whose copy has not come yet, and a few thousand
//! findings: the others wait, sorted, in a temporary file ([`Findings`]).

mod codec;
mod cuda_api_sync;
mod cuda_memcpy_async;
mod cuda_memcpy_sync;
mod cuda_memset_sync;
mod gpu_gaps;
mod gpu_time_util;
mod sorted;
mod written;

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::str::FromStr;

use rustc_hash::FxHashMap;

use crate::analysis::{missing, Needs};
use crate::error::Failure;
use crate::error::{Error, Result};
use crate::nsys::gpu_work::{GpuOp, OpKind, Work};
use crate::nsys::overhead::{NsysEvent, OverheadSource};
use crate::nsys::{cuda, Report, RowFilter, MEMORY_KINDS};

pub use sorted::Findings;
pub(crate) use sorted::Order;
pub(crate) use written::rule_tables;
pub use written::write_findings;

/// A rule of `nsys analyze`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// Copies made by synchronous `cudaMemcpy*` calls.
    CudaMemcpySync,
    /// Synchronous `cudaMemset*` calls on pinned or managed memory.
    CudaMemsetSync,
    /// `cudaMemcpy*Async` copies from or to pageable memory, which run synchronously.
    CudaMemcpyAsync,
    /// `cudaDeviceSynchronize` and `cudaStreamSynchronize` calls.
    CudaApiSync,
    /// Time over a threshold in which a device ran nothing of a process.
    GpuGaps,
    /// Stretches of a process's GPU time whose use is below a threshold.
    GpuTimeUtil,
}

impl Rule {
    /// Every rule, in the order `nsys analyze` runs them.
    pub const ALL: [Rule; 6] = [
        Rule::CudaMemcpySync,
        Rule::CudaMemsetSync,
        Rule::CudaMemcpyAsync,
        Rule::CudaApiSync,
        Rule::GpuGaps,
        Rule::GpuTimeUtil,
    ];

    /// The index of the rule in [`Rule::ALL`].
    pub(crate) fn index(self) -> usize {
        Rule::ALL.iter().position(|&r| r == self).expect("a rule")
    }

    /// The name nsys 2024 and later know the rule by.
    pub fn name(self) -> &'static str {
        match self {
            Rule::CudaMemcpySync => "cuda_memcpy_sync",
            Rule::CudaMemsetSync => "cuda_memset_sync",
            Rule::CudaMemcpyAsync => "cuda_memcpy_async",
            Rule::CudaApiSync => "cuda_api_sync",
            Rule::GpuGaps => "gpu_gaps",
            Rule::GpuTimeUtil => "gpu_time_util",
        }
    }

    /// The name of nsys 2022.4 and earlier.
    pub fn legacy_name(self) -> &'static str {
        match self {
            Rule::CudaMemcpySync => "cuda-sync-memcpy",
            Rule::CudaMemsetSync => "cuda-sync-memset",
            Rule::CudaMemcpyAsync => "cuda-async-memcpy",
            Rule::CudaApiSync => "cuda-sync-api",
            Rule::GpuGaps => "gpu-starv",
            Rule::GpuTimeUtil => "gpu-low-util",
        }
    }

    /// What the rule finds, as a heading.
    pub fn title(self) -> &'static str {
        match self {
            Rule::CudaMemcpySync => "Synchronous memcpy",
            Rule::CudaMemsetSync => "Synchronous memset",
            Rule::CudaMemcpyAsync => "Async memcpy with pageable memory",
            Rule::CudaApiSync => "Synchronizing CUDA API calls",
            Rule::GpuGaps => "GPU gaps",
            Rule::GpuTimeUtil => "Low GPU utilization",
        }
    }

    /// The tables the rule reads: the API calls and the copies or memsets
    /// they made, or any GPU work.
    pub(crate) fn needs(self) -> Needs {
        const GPU_WORK: &[&str] = &[cuda::KERNEL, cuda::MEMCPY, cuda::MEMSET];
        match self {
            Rule::CudaMemcpySync | Rule::CudaMemcpyAsync => &[&[cuda::RUNTIME], &[cuda::MEMCPY]],
            Rule::CudaMemsetSync => &[&[cuda::RUNTIME], &[cuda::MEMSET]],
            Rule::CudaApiSync => &[&[cuda::RUNTIME]],
            Rule::GpuGaps | Rule::GpuTimeUtil => &[GPU_WORK],
        }
    }

    fn reads_calls(self) -> bool {
        !matches!(self, Rule::GpuGaps | Rule::GpuTimeUtil)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Rule {
    type Err = String;

    /// Either name of a rule ([`Rule::name`], [`Rule::legacy_name`]).
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Rule::ALL
            .into_iter()
            .find(|r| r.name() == s || r.legacy_name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Rule::ALL.iter().map(|r| r.name()).collect();
                format!("unknown rule {s:?} (rules: {})", names.join(", "))
            })
    }
}

/// The rules' thresholds; the defaults are NVIDIA's.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Thresholds {
    /// [`Rule::GpuGaps`]: gaps longer than this many nanoseconds (500 ms
    /// by default; [`parse_duration`](crate::analyze::parse_duration) reads
    /// `500ms`, `1.5ms`, `200us`).
    pub gap_ns: u64,
    /// [`Rule::GpuTimeUtil`]: chunks whose GPU time use is below this percentage.
    pub util_percent: u32,
    /// [`Rule::GpuTimeUtil`]: the number of equal chunks each device's time
    /// range is cut into, 1 to 1000.
    pub util_chunks: u32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            gap_ns: 500_000_000,
            util_percent: 50,
            util_chunks: 30,
        }
    }
}

/// Where a finding happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Place {
    /// On a CPU thread (an API call).
    Thread {
        /// The process.
        pid: u32,
        /// The thread.
        tid: u32,
    },
    /// On a GPU: a device of a process, on a stream when one operation is meant.
    Gpu {
        /// The process, where the work names one.
        pid: Option<u32>,
        /// The device (`deviceId`).
        device: i64,
        /// The CUDA context, where one operation is meant.
        context: Option<i64>,
        /// The stream, where one operation is meant.
        stream: Option<i64>,
    },
}

impl Place {
    /// Its pid, tid, device, context and stream, by name, each where it has
    /// one: what a finding's table and its trace event say of its place.
    pub(crate) fn ids(&self) -> [(&'static str, Option<i64>); 5] {
        let (pid, tid, device, context, stream) = match *self {
            Place::Thread { pid, tid } => (Some(pid), Some(tid), None, None, None),
            Place::Gpu {
                pid,
                device,
                context,
                stream,
            } => (pid, None, Some(device), context, stream),
        };
        [
            ("pid", pid.map(i64::from)),
            ("tid", tid.map(i64::from)),
            ("device", device),
            ("context", context),
            ("stream", stream),
        ]
    }
}

/// One thing a rule found.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Finding {
    /// The rule that found it.
    pub rule: Rule,
    /// Nanoseconds, on the export's clock.
    pub start: i64,
    /// Nanoseconds.
    pub duration: i64,
    /// Where it happened.
    pub place: Place,
    /// The API call behind it, as recorded (`cudaMemcpyAsync_v3020`).
    pub api: Option<String>,
    /// The correlation ids of the events behind it: the call (and its GPU
    /// operation), or for a gap the work that ends before it and the work
    /// that starts after it (absent where profiler overhead bounds the gap).
    pub correlation_ids: Vec<i64>,
    /// Memory kinds (`Pageable`, `Device`) of a copy's source and
    /// destination, or of a memset's memory.
    pub src_kind: Option<&'static str>,
    /// The destination's memory kind, for a copy.
    pub dst_kind: Option<&'static str>,
    /// The memory kind of a memset.
    pub memory_kind: Option<&'static str>,
    /// The bytes copied or set.
    pub bytes: Option<i64>,
    /// [`Rule::GpuTimeUtil`]: the GPU time in use, in percent, to one decimal.
    pub in_use_percent: Option<f64>,
    /// [`Rule::GpuGaps`]: the correlationIds of the work before the gap and
    /// of the work after it, `None` where profiler overhead bounds it.
    pub gap_between: Option<[Option<i64>; 2]>,
}

impl Finding {
    fn new(rule: Rule, start: i64, end: i64, place: Place) -> Self {
        Self {
            rule,
            start,
            duration: end - start,
            place,
            api: None,
            correlation_ids: Vec::new(),
            src_kind: None,
            dst_kind: None,
            memory_kind: None,
            bytes: None,
            in_use_percent: None,
            gap_between: None,
        }
    }

    /// A finding about GPU operation `op`, launched by the call `api`.
    fn of_op(rule: Rule, op: &GpuOp, api: &str) -> Self {
        let mut f = Finding::new(rule, op.start, op.end, gpu_place(op, Some(op.place.stream)));
        f.api = Some(api.to_owned());
        f.correlation_ids.extend(op.correlation_id);
        match op.kind {
            OpKind::Memcpy(copy, _) => {
                f.bytes = copy.bytes;
                f.src_kind = copy.src_kind.map(memory_kind);
                f.dst_kind = copy.dst_kind.map(memory_kind);
            }
            OpKind::Memset(memset) => {
                f.bytes = memset.bytes;
                f.memory_kind = memset.memory_kind.map(memory_kind);
            }
            OpKind::Kernel => {}
        }
        f
    }
}

fn gpu_place(op: &GpuOp, stream: Option<i64>) -> Place {
    Place::Gpu {
        pid: op.place.pid,
        device: op.place.device,
        context: op.place.context,
        stream,
    }
}

/// The name of a `CUPTI_ACTIVITY_MEMORY_KIND`, as nsys prints it.
pub(crate) fn memory_kind(kind: i64) -> &'static str {
    usize::try_from(kind)
        .ok()
        .and_then(|k| MEMORY_KINDS.get(k))
        .copied()
        .unwrap_or("Unknown")
}

/// Whether `name` matches the SQL `LIKE` pattern `pattern` (`%` for any
/// text, ASCII case ignored), as the rules' definitions match API names.
fn like(name: &str, pattern: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let pattern = pattern.to_ascii_lowercase();
    let mut parts = pattern.split('%');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return part.is_empty() || rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Every name pattern a call of interest to `rules` matches.
fn call_patterns(rules: &[Rule]) -> Vec<&'static str> {
    let mut patterns = Vec::new();
    for rule in rules {
        patterns.extend_from_slice(match rule {
            Rule::CudaMemcpySync => cuda_memcpy_sync::CALLS,
            Rule::CudaMemsetSync => cuda_memset_sync::CALLS,
            Rule::CudaMemcpyAsync => cuda_memcpy_async::CALLS,
            Rule::CudaApiSync => cuda_api_sync::CALLS,
            Rule::GpuGaps | Rule::GpuTimeUtil => &[],
        });
    }
    patterns
}

/// A process's work on one device: (pid, device).
type Lane = (u32, i64);

/// The time range of each lane's work: first start, last end, and the
/// context of its first operation.
pub(crate) type Ranges = BTreeMap<Lane, (i64, i64, Option<i64>)>;

/// The names of the `PROFILER_OVERHEAD` rows that count as GPU work.
const CUDA_OVERHEADS: [&str; 3] = [
    "CUDA profiling data flush overhead",
    "CUDA profiling stop overhead",
    "CUDA profiling overhead",
];

/// A rule about the GPU operation of a call: whether a call's name is of
/// interest, and the finding (if any) about its operation.
type CopyRule = (Rule, fn(&str) -> bool, fn(&str, &GpuOp) -> Option<Finding>);

const COPY_RULES: [CopyRule; 3] = [
    (
        Rule::CudaMemcpySync,
        cuda_memcpy_sync::matches,
        cuda_memcpy_sync::check,
    ),
    (
        Rule::CudaMemsetSync,
        cuda_memset_sync::matches,
        cuda_memset_sync::check,
    ),
    (
        Rule::CudaMemcpyAsync,
        cuda_memcpy_async::matches,
        cuda_memcpy_async::check,
    ),
];

/// Runs `rules` over `report`. Findings come by rule, in the order of
/// `rules`, each rule's in nsys's order: the longest first (lowest
/// utilization first for [`Rule::GpuTimeUtil`]). However many there are,
/// few are held in memory: the others wait in a temporary file. A rule whose
/// tables the export lacks is skipped, and the findings say why
/// ([`Findings::skipped`]).
pub fn analyze(report: &Report, rules: &[Rule], thresholds: &Thresholds) -> Result<Findings> {
    if !(1..=1000).contains(&thresholds.util_chunks) {
        return Err(Error::InvalidOption(format!(
            "{} chunks: the number of chunks is 1 to 1000",
            thresholds.util_chunks
        )));
    }
    let mut findings = Findings::new(Order::Report {
        rules: rules.to_vec(),
    });
    let mut runnable = Vec::new();
    for &rule in rules {
        match missing(report, rule.needs()) {
            Some(why) => findings.skip(rule, why),
            None => runnable.push(rule),
        }
    }
    let impossible_times = run(report, &runnable, thresholds, &mut |f| findings.push(f))
        .map_err(|e: Failure| e.of(report.path()))?;
    for rule in runnable {
        let needs = rule.needs();
        let unread = report.unreadable_among(|t| needs.iter().any(|any| any.contains(&t)));
        let why = unread
            .iter()
            .map(|u| u.warning(crate::nsys::NOT_READ))
            .collect();
        findings.mark_incomplete(rule, why);
    }
    findings.left_out_for_times(impossible_times);
    findings.finish();
    Ok(findings)
}

/// Hands the findings of `rules` to `found`, in no order; fails where the
/// export cannot be read, or where `found` fails. Calls and GPU work whose
/// times cannot be right are left out: how many, it returns.
pub(crate) fn run<E: From<rusqlite::Error> + From<io::Error>>(
    report: &Report,
    rules: &[Rule],
    thresholds: &Thresholds,
    found: &mut dyn FnMut(Finding) -> io::Result<()>,
) -> std::result::Result<u64, E> {
    let plausible = report.plausible_times()?;
    let mut impossible_times = 0;
    let has = |r: Rule| rules.contains(&r);
    let call_names = report.string_ids_like(&call_patterns(rules))?;
    let needs_ops = rules.iter().any(|&r| r != Rule::CudaApiSync);
    let mut launches = PendingCalls::default();
    let mut gaps = gpu_gaps::Gaps::new(i64::try_from(thresholds.gap_ns).unwrap_or(i64::MAX));
    let reads_calls = rules.iter().any(|r| r.reads_calls());
    if reads_calls || needs_ops {
        report.for_each_gpu_work(
            &RowFilter::none(),
            &call_names,
            needs_ops,
            |work| -> std::result::Result<(), E> {
                let (start, end) = match &work {
                    Work::Call { call, .. } => (call.start, call.end),
                    Work::Op(op) => (op.start, op.end),
                };
                if !plausible.allow(start, end) {
                    impossible_times += 1;
                    return Ok(());
                }
                match work {
                    Work::Call { call, copies } => {
                        if has(Rule::CudaApiSync) && cuda_api_sync::matches(call.name) {
                            found(cuda_api_sync::finding(&call))?;
                        }
                        let copying = copies
                            && COPY_RULES
                                .iter()
                                .any(|(rule, matches, _)| has(*rule) && matches(call.name));
                        if let (Some(corr), true) = (call.correlation_id, copying) {
                            launches.add(corr, call.pid, call.name);
                        }
                    }
                    Work::Op(op) => {
                        if matches!(op.kind, OpKind::Memcpy(..) | OpKind::Memset(_)) {
                            if let Some(corr) = op.correlation_id {
                                for name in launches.take(corr, op.place.pid) {
                                    for (rule, _, check) in COPY_RULES {
                                        if let (true, Some(f)) = (has(rule), check(name, &op)) {
                                            found(f)?;
                                        }
                                    }
                                }
                            }
                        }
                        gaps.op(&op);
                    }
                }
                Ok(())
            },
        )?;
    }
    if !(has(Rule::GpuGaps) || has(Rule::GpuTimeUtil)) {
        return Ok(impossible_times);
    }
    let ranges = gaps.ranges();
    let mut util = gpu_time_util::Utilization::new(&ranges, thresholds);
    report.for_each_nsys_event(&RowFilter::none(), |event| -> rusqlite::Result<()> {
        let NsysEvent::Overhead(o) = event else {
            return Ok(());
        };
        let Some((pid, _)) = o.thread else {
            return Ok(());
        };
        if o.source != OverheadSource::Profiler || !CUDA_OVERHEADS.contains(&o.name) {
            return Ok(());
        }
        // It counts on every device of its process, within the range of
        // that device's work.
        for (&(p, device), &(first, last, _)) in ranges.range((pid, i64::MIN)..=(pid, i64::MAX)) {
            debug_assert_eq!(p, pid);
            if o.start > first && o.end < last {
                gaps.overhead((pid, device), o.start, o.end);
                util.add((pid, device), o.start, o.end);
            }
        }
        Ok(())
    })?;
    if has(Rule::GpuGaps) {
        gaps.findings().into_iter().try_for_each(&mut *found)?;
    }
    if has(Rule::GpuTimeUtil) {
        let all = RowFilter::none();
        report.for_each_gpu_work(&all, &[], true, |work| -> rusqlite::Result<()> {
            if let Work::Op(op) = work {
                let right = plausible.allow(op.start, op.end);
                if let (Some(pid), true, true) = (op.place.pid, op.start > 0, right) {
                    util.add((pid, op.place.device), op.start, op.end);
                }
            }
            Ok(())
        })?;
        util.findings().into_iter().try_for_each(&mut *found)?;
    }
    Ok(impossible_times)
}

/// The copying calls whose GPU operation has not come yet, by correlationId.
/// A call comes before its operation (it starts first), and goes once the
/// operation comes: what stays is the calls in flight (calls whose
/// operation the export lacks are not kept, see `Call::copies`).
#[derive(Default)]
struct PendingCalls<'r> {
    by_correlation: FxHashMap<i64, Vec<(u32, &'r str)>>,
}

impl<'r> PendingCalls<'r> {
    fn add(&mut self, corr: i64, pid: u32, name: &'r str) {
        self.by_correlation
            .entry(corr)
            .or_default()
            .push((pid, name));
    }

    /// The names of the calls of process `pid` (any, where the operation
    /// names no process) with this correlationId, which are taken out.
    fn take(&mut self, corr: i64, pid: Option<u32>) -> Vec<&'r str> {
        let Some(calls) = self.by_correlation.get_mut(&corr) else {
            return Vec::new();
        };
        let mut taken = Vec::new();
        calls.retain(|&(p, name)| match pid.is_none_or(|pid| pid == p) {
            true => {
                taken.push(name);
                false
            }
            false => true,
        });
        if calls.is_empty() {
            self.by_correlation.remove(&corr);
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_matches_as_sqlite_does() {
        assert!(like("cudaMemcpyAsync_v3020", "cudaMemcpy%Async%"));
        assert!(like("cudamemcpy2DAsync", "cudaMemcpy%Async%"));
        assert!(!like("cudaMemcpy_v3020", "cudaMemcpy%Async%"));
        assert!(like("cudaMemcpy_v3020", "cudaMemcpy%"));
        assert!(like("cudaMemsetAsync", "%async%"));
        assert!(like("cudaStreamSynchronize", "cudaStreamSynchronize%"));
        assert!(!like("xcudaStreamSynchronize", "cudaStreamSynchronize%"));
        assert!(like("abc", "abc"));
        assert!(!like("abcd", "abc"));
    }

    #[test]
    fn rules_are_known_by_both_names() {
        for rule in Rule::ALL {
            assert_eq!(rule.name().parse::<Rule>(), Ok(rule));
            assert_eq!(rule.legacy_name().parse::<Rule>(), Ok(rule));
        }
        assert!("gpu_idle".parse::<Rule>().is_err());
    }

    #[test]
    fn pending_calls_match_by_process() {
        let mut pending = PendingCalls::default();
        pending.add(7, 1, "cudaMemcpy");
        pending.add(7, 2, "cudaMemcpyAsync");
        assert_eq!(pending.take(7, Some(2)), ["cudaMemcpyAsync"]);
        assert_eq!(pending.take(7, Some(2)), Vec::<&str>::new());
        assert_eq!(pending.take(7, None), ["cudaMemcpy"]);
        assert!(pending.by_correlation.is_empty());
    }
}
