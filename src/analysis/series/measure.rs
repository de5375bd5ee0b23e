//! The time and count of the events of one report that match each pattern,
//! in one streamed pass over each event table the patterns need.
//!
//! Memory holds, per pattern, sums of the matching events' durations and
//! what their exact median needs (see [`ValueSets`]: durations of few events,
//! a histogram of many, whose durations wait in a temporary file), and, for
//! `nvtx-gpu:` patterns, the ranges the projector holds (those open at the
//! CUDA stream's time or waiting for their GPU work); not the report.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::analysis::projection::{Projector, Range, RangeFeed};
use crate::analysis::stats::ValueSets;
use crate::error::Failure;
use crate::nsys::cuda::CudaEvent;
use crate::nsys::libraries::Library;
use crate::nsys::names::{api_stats_name, RangeNames};
use crate::nsys::nvtx::NvtxKind;
use crate::nsys::{PlausibleTimes, Report, RowFilter, Streamed};

use super::pattern::{EventKind, EventPattern};
use super::SeriesCell;

/// The cells of `report`, one per pattern, in the order of `patterns`;
/// NVTX patterns match range names as `names` says. Events whose times
/// cannot be right are left out: how many, it returns beside.
pub(super) fn measure(
    report: &Report,
    patterns: &[EventPattern],
    names: RangeNames,
) -> Result<(Vec<SeriesCell>, u64), Failure> {
    let plausible = report.plausible_times()?;
    let mut left_out = 0;
    // A set of durations per pattern, by index.
    let mut durations = ValueSets::default();
    let of_kind = |kind: EventKind| -> Vec<usize> {
        (0..patterns.len())
            .filter(|&i| patterns[i].kind() == kind)
            .collect()
    };
    let mut kernels = Matcher::new(patterns, of_kind(EventKind::Kernel));
    let mut api = Matcher::new(patterns, of_kind(EventKind::CudaApi));
    let mut cudnn = Matcher::new(patterns, of_kind(EventKind::Cudnn));
    let mut cublas = Matcher::new(patterns, of_kind(EventKind::Cublas));
    let mut nvtx = Matcher::new(patterns, of_kind(EventKind::Nvtx));
    let mut nvtx_gpu = Matcher::new(patterns, of_kind(EventKind::NvtxGpu));
    // The `nvtx:` durations, where they are summed beside the CUDA pass.
    let mut nvtx_stats: Option<ValueSets> = None;

    let cuda_needed = !(kernels.is_empty() && api.is_empty());
    let mut cuda = |projector: Option<&mut Projector<Arc<[usize]>>>,
                    durations: &mut ValueSets|
     -> Result<u64, Failure> {
        if !cuda_needed && projector.is_none() {
            return Ok(0);
        }
        cuda_pass(
            report,
            plausible,
            &mut kernels,
            &mut api,
            projector,
            durations,
        )
    };
    if nvtx_gpu.is_empty() {
        if !nvtx.is_empty() {
            left_out += nvtx_pass(
                report,
                names,
                plausible,
                &mut nvtx,
                &mut nvtx_gpu,
                &mut durations,
                None,
            )?;
        }
        left_out += cuda(None, &mut durations)?;
    } else {
        // The NVTX ranges go to the projector as the CUDA stream reaches
        // them, from a thread of their own; `nvtx:` durations are summed there.
        // Ranges still open when the capture stopped end at the last time of
        // any NVTX row, as nsys ends them.
        let open_until = report.nvtx_last_time()?.and_then(|t| u64::try_from(t).ok());
        let ((nvtx_durations, nvtx_left_out), cuda_left_out) =
            crate::analysis::projection::streamed(
                open_until,
                |feed| {
                    let mut nvtx_durations = ValueSets::default();
                    let left_out = nvtx_pass(
                        report,
                        names,
                        plausible,
                        &mut nvtx,
                        &mut nvtx_gpu,
                        &mut nvtx_durations,
                        Some(feed),
                    )?;
                    Ok((nvtx_durations, left_out))
                },
                |projector| cuda(Some(projector), &mut durations),
            )?;
        left_out += nvtx_left_out + cuda_left_out;
        nvtx_stats = Some(nvtx_durations);
    }

    if !(cudnn.is_empty() && cublas.is_empty()) {
        report.for_each_library_call(&RowFilter::none(), |call| -> Result<(), Failure> {
            let matcher = match call.library {
                Library::Cudnn => &mut cudnn,
                Library::Cublas => &mut cublas,
                _ => return Ok(()),
            };
            if !plausible.allow(call.start, call.end) {
                left_out += 1;
                return Ok(());
            }
            for &p in matcher.matching(call.name, "") {
                durations.add(p, call.end - call.start);
            }
            Ok(())
        })?;
    }
    let mut stats = durations.finish()?;
    stats.resize(patterns.len(), None);
    // Each pattern is of one kind: its set is in one of the two.
    if let Some(nvtx_durations) = nvtx_stats {
        for (at, s) in nvtx_durations.finish()?.into_iter().enumerate() {
            if s.is_some() {
                stats[at] = s;
            }
        }
    }
    Ok((stats.into_iter().map(SeriesCell::of).collect(), left_out))
}

/// The NVTX pass: durations of the ranges `nvtx` patterns match, and, to
/// `projected`, the ranges `nvtx_gpu` patterns match (in start order), with
/// those patterns; each range's name as `names` says.
fn nvtx_pass(
    report: &Report,
    names: RangeNames,
    plausible: PlausibleTimes,
    nvtx: &mut Matcher<'_>,
    nvtx_gpu: &mut Matcher<'_>,
    durations: &mut ValueSets,
    mut projected: Option<&mut RangeFeed<Arc<[usize]>>>,
) -> Result<u64, Failure> {
    // The sets of patterns ranges match, each kept once and shared.
    let mut pattern_sets: FxHashMap<Box<[usize]>, Arc<[usize]>> = FxHashMap::default();
    let mut left_out = 0;
    report.for_each_nvtx_event(&RowFilter::none(), |e| -> Result<(), Failure> {
        if e.kind == NvtxKind::Mark {
            return Ok(());
        }
        if e.end.is_some_and(|end| !plausible.allow(e.start, end)) {
            left_out += 1;
            return Ok(());
        }
        let name = names.of(e.text.as_ref().map_or("", |t| t.as_str()));
        if let Some(end) = e.end {
            for &p in nvtx.matching_text(name) {
                durations.add(p, end - e.start);
            }
        }
        // NVIDIA projects only ranges that start and end on one thread.
        let Some(projected) = projected.as_deref_mut() else {
            return Ok(());
        };
        if e.end_tid.is_none() {
            let matching = nvtx_gpu.matching_text(name);
            if !matching.is_empty() {
                let set = match pattern_sets.get(matching) {
                    Some(set) => Arc::clone(set),
                    None => {
                        let set: Arc<[usize]> = matching.into();
                        pattern_sets.insert(matching.into(), Arc::clone(&set));
                        set
                    }
                };
                // Times before the capture's origin cannot be projected.
                if let Ok(start) = u64::try_from(e.start) {
                    projected.send(Range {
                        start,
                        end: e.end.and_then(|end| u64::try_from(end).ok()),
                        pid: e.pid,
                        tid: e.tid,
                        data: set,
                    });
                }
            }
        }
        Ok(())
    })?;
    Ok(left_out)
}

/// The CUDA pass: durations of the calls and kernels `api` and `kernels`
/// patterns match, and of the projections `projector` makes; how many
/// events it left out for times that cannot be right.
fn cuda_pass(
    report: &Report,
    plausible: PlausibleTimes,
    kernels: &mut Matcher<'_>,
    api: &mut Matcher<'_>,
    mut projector: Option<&mut Projector<Arc<[usize]>>>,
    durations: &mut ValueSets,
) -> Result<u64, Failure> {
    let mut left_out = 0;
    report.for_each_cuda_event(&RowFilter::none(), |streamed| -> Result<(), Failure> {
        let Streamed::Event(event) = streamed else {
            return Ok(());
        };
        let (start, end) = event.span();
        if !plausible.allow(start, end) {
            left_out += 1;
            return Ok(());
        }
        match &event {
            // A record that repeats a call (to carry its stack) is no call of its own.
            // Matched as recorded and as nsys's reports name it.
            CudaEvent::Api(call) if !call.repeats_a_call => {
                for &p in api.matching(call.name, api_stats_name(call.name)) {
                    durations.add(p, call.end - call.start);
                }
            }
            CudaEvent::Kernel(k) => {
                let demangled = k.demangled_name.unwrap_or("");
                for &p in kernels.matching(k.short_name, demangled) {
                    durations.add(p, k.common.end - k.common.start);
                }
            }
            _ => {}
        }
        if let Some(projector) = projector.as_deref_mut() {
            projector.cuda_event(&event);
            take_projected(projector, durations);
        }
        Ok(())
    })?;
    if let Some(projector) = projector {
        projector.finish();
        take_projected(projector, durations);
    }
    Ok(left_out)
}

/// Each finished projection's duration, for each pattern of its range.
fn take_projected(projector: &mut Projector<Arc<[usize]>>, durations: &mut ValueSets) {
    while let Some(p) = projector.next_ready() {
        let duration = i64::try_from(p.last - p.first).unwrap_or(i64::MAX);
        for &pattern in p.range.data.iter() {
            durations.add(pattern, duration);
        }
    }
}

/// The most NVTX messages whose matches are remembered at once.
const TEXT_CACHE: usize = 4096;

/// The patterns of one kind, and which of them each name seen so far matched.
struct Matcher<'p> {
    patterns: &'p [EventPattern],
    /// Indices into `patterns`.
    mine: Vec<usize>,
    /// By the address and length of the names (strings of the report's
    /// StringIds, which stay put): events repeat few names many times.
    by_address: FxHashMap<(usize, usize, usize, usize), Box<[usize]>>,
    /// By text, for names that are not StringIds (NVTX messages inline).
    by_text: FxHashMap<Box<str>, Box<[usize]>>,
}

impl<'p> Matcher<'p> {
    fn new(patterns: &'p [EventPattern], mine: Vec<usize>) -> Self {
        Self {
            patterns,
            mine,
            by_address: FxHashMap::default(),
            by_text: FxHashMap::default(),
        }
    }

    fn is_empty(&self) -> bool {
        self.mine.is_empty()
    }

    /// The patterns that match `name` or `other_name` (a kernel's short and
    /// demangled names); both are strings of the report's StringIds.
    fn matching(&mut self, name: &str, other_name: &str) -> &[usize] {
        if self.mine.is_empty() {
            return &[];
        }
        let key = (
            name.as_ptr() as usize,
            name.len(),
            other_name.as_ptr() as usize,
            other_name.len(),
        );
        let (patterns, mine) = (self.patterns, &self.mine);
        self.by_address.entry(key).or_insert_with(|| {
            mine.iter()
                .copied()
                .filter(|&p| {
                    patterns[p].matches(name)
                        || (!other_name.is_empty() && patterns[p].matches(other_name))
                })
                .collect()
        })
    }

    /// The patterns that match `name`, of any origin.
    fn matching_text(&mut self, name: &str) -> &[usize] {
        if self.mine.is_empty() {
            return &[];
        }
        if !self.by_text.contains_key(name) {
            // Names that number their ranges ("step 1234") never repeat:
            // keep the cache from growing with the report.
            if self.by_text.len() >= TEXT_CACHE {
                self.by_text.clear();
            }
            let found = self
                .mine
                .iter()
                .copied()
                .filter(|&p| self.patterns[p].matches(name))
                .collect();
            self.by_text.insert(name.into(), found);
        }
        &self.by_text[name]
    }
}
