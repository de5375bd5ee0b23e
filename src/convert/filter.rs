//! The CUDA activity inside kept NVTX ranges (`Filter::gpu_in_nvtx`): the
//! spans of time each thread spends inside a kept range, read before the
//! CUDA stream. Only the ranges kept are held, merged where they overlap, so
//! memory follows what the filter keeps, not the size of the report.

use rustc_hash::FxHashMap;

use crate::filter::Filter;
use crate::nsys::nvtx::NvtxKind;
use crate::nsys::Report;

use super::nvtx::domain_name;
use super::ConvertError;

/// Per thread (pid, tid), the spans covered by kept NVTX ranges: sorted,
/// disjoint, inclusive.
#[derive(Default)]
pub struct NvtxSpans {
    by_thread: FxHashMap<(u32, u32), Vec<(i64, i64)>>,
}

impl NvtxSpans {
    /// The spans of the NVTX ranges of `report` that `filter` keeps.
    pub fn read(report: &Report, filter: &Filter) -> Result<Self, ConvertError> {
        let meta = report.meta();
        let mut by_thread: FxHashMap<(u32, u32), Vec<(i64, i64)>> = FxHashMap::default();
        report.for_each_nvtx_event(|e| -> Result<(), ConvertError> {
            // Ranges that end on another thread enclose no call of one thread.
            if e.kind == NvtxKind::Mark || e.end_tid.is_some_and(|t| t != e.tid) {
                return Ok(());
            }
            let domain = match e.domain {
                0 => None,
                id => Some(
                    meta.nvtx_domains
                        .get(&(e.pid, id))
                        .map_or("", String::as_str),
                ),
            };
            let keep = match e.text.as_ref().map(|t| t.as_str()) {
                Some(text) if !text.is_empty() => filter.keeps_nvtx(text, domain),
                _ => filter.keeps_nvtx(&domain_name(meta, e.pid, e.domain), domain),
            };
            if keep {
                let end = e.end.unwrap_or(i64::MAX);
                by_thread
                    .entry((e.pid, e.tid))
                    .or_default()
                    .push((e.start, end.max(e.start)));
            }
            Ok(())
        })?;
        for spans in by_thread.values_mut() {
            spans.sort_unstable();
            let mut merged: Vec<(i64, i64)> = Vec::with_capacity(spans.len());
            for &(start, end) in spans.iter() {
                match merged.last_mut() {
                    Some(last) if start <= last.1 => last.1 = last.1.max(end),
                    _ => merged.push((start, end)),
                }
            }
            *spans = merged;
        }
        Ok(Self { by_thread })
    }

    /// Whether a call of thread (pid, tid) at `t` is inside a kept range.
    pub fn covers(&self, pid: u32, tid: u32, t: i64) -> bool {
        let Some(spans) = self.by_thread.get(&(pid, tid)) else {
            return false;
        };
        let after = spans.partition_point(|&(start, _)| start <= t);
        after > 0 && spans[after - 1].1 >= t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_the_union_of_ranges() {
        let mut spans = NvtxSpans::default();
        spans
            .by_thread
            .insert((1, 2), vec![(10, 20), (30, i64::MAX)]);
        assert!(spans.covers(1, 2, 10));
        assert!(spans.covers(1, 2, 20));
        assert!(!spans.covers(1, 2, 25));
        assert!(!spans.covers(1, 2, 9));
        assert!(spans.covers(1, 2, 1 << 40));
        assert!(!spans.covers(1, 3, 15));
    }
}
