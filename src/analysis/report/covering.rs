//! What the CPU threads of a process did during a GPU's longest idle
//! stretches: per thread, the CUDA API call and the NVTX range that
//! overlapped the stretch most (among equals, the shorter: the innermost
//! range). A second pass, over only the calls that overlap a stretch (one
//! scan, the stretches in its WHERE clause) and the NVTX ranges.

use rustc_hash::FxHashMap;

use crate::analysis::Failure;
use crate::nsys::{Report, RowFilter};

use super::gpu::Gap;
use super::model::{IdleStretch, ThreadActivity};

/// The most threads told per stretch, the busiest first.
const THREADS: usize = 4;

/// The best (overlap, -length, name) per (stretch, thread), for calls and ranges.
type Best = FxHashMap<(usize, u32), (i64, i64, String)>;

fn offer(best: &mut Best, key: (usize, u32), overlap: i64, length: i64, name: &str) {
    let better = match best.get(&key) {
        None => true,
        Some(&(o, l, _)) => (overlap, -length) > (o, l),
    };
    if better {
        best.insert(key, (overlap, -length, name.to_owned()));
    }
}

fn overlap(gap: &Gap, start: i64, end: i64) -> i64 {
    end.min(gap.end) - start.max(gap.start)
}

/// The stretches, each with what its process's threads did.
pub(super) fn idle_stretches(report: &Report, gaps: &[Gap]) -> Result<Vec<IdleStretch>, Failure> {
    let mut calls = Best::default();
    let mut ranges = Best::default();
    let windows: Vec<(i64, i64)> = gaps.iter().map(|g| (g.start, g.end)).collect();
    report.each_call_within(&windows, |call| {
        for (i, gap) in gaps.iter().enumerate() {
            let o = overlap(gap, call.start, call.end);
            if gap.pid == Some(call.pid) && o > 0 {
                offer(
                    &mut calls,
                    (i, call.tid),
                    o,
                    call.end - call.start,
                    call.name,
                );
            }
        }
    })?;
    if !gaps.is_empty() {
        report.for_each_thread_range(&RowFilter::none(), |r| -> Result<(), Failure> {
            let (Some(end), Some(text)) = (r.end, r.text) else {
                return Ok(());
            };
            for (i, gap) in gaps.iter().enumerate() {
                let o = overlap(gap, r.start, end);
                if gap.pid == Some(r.pid) && o > 0 {
                    offer(&mut ranges, (i, r.tid), o, end - r.start, text);
                }
            }
            Ok(())
        })?;
    }
    let threads = &report.meta().threads;
    Ok(gaps
        .iter()
        .enumerate()
        .map(|(i, gap)| {
            let mut tids: Vec<u32> = calls
                .keys()
                .chain(ranges.keys())
                .filter(|k| k.0 == i)
                .map(|k| k.1)
                .collect();
            tids.sort_unstable();
            tids.dedup();
            let busiest = |tid: &u32| {
                let call = calls.get(&(i, *tid)).map_or(0, |b| b.0);
                let range = ranges.get(&(i, *tid)).map_or(0, |b| b.0);
                (std::cmp::Reverse(call.max(range)), *tid)
            };
            tids.sort_by_key(busiest);
            tids.truncate(THREADS);
            let told = |best: &Best, tid: u32| best.get(&(i, tid)).map(|b| (b.2.clone(), b.0));
            IdleStretch {
                start: gap.start,
                end: gap.end,
                waiting_from: gap.waiting_from,
                pid: gap.pid,
                threads: tids
                    .into_iter()
                    .map(|tid| ThreadActivity {
                        tid,
                        name: gap.pid.and_then(|pid| threads.get(&(pid, tid)).cloned()),
                        call: told(&calls, tid),
                        range: told(&ranges, tid),
                    })
                    .collect(),
            }
        })
        .collect())
}
