//! `nvtx_gpu_proj_sum`: NVTX ranges projected onto the GPU, summed by range
//! name and style, as nsys 2025.3 sums its `nvtx_gpu_proj_trace`.
//!
//! A range's place in the tree of ranges (its level, its parent) is nsys's:
//! the parent is the tightest range of the same thread that encloses it
//! (least (child start - parent start) + (parent end - child end)), among
//! the ranges that start and end on one thread; the level counts the
//! ancestors. The children a range has are those of its children that were
//! projected.
//!
//! The NVTX pass keeps the ranges (about 40 bytes each) for the CUDA pass
//! that projects them; everything else streams.

use rustc_hash::FxHashMap;

use crate::nsys::nvtx::NvtxKind;
use crate::nsys::{Report, Streamed};
use crate::projection::{Projector, Range};

use super::aggregate::Values;
use super::table::Cell;

pub(super) const COLUMNS: [&str; 14] = [
    "Range",
    "Style",
    "Total Proj Time (ns)",
    "Total Range Time (ns)",
    "Range Instances",
    "Proj Avg (ns)",
    "Proj Med (ns)",
    "Proj Min (ns)",
    "Proj Max (ns)",
    "Proj StdDev (ns)",
    "Total GPU Ops",
    "Avg GPU Ops",
    "Avg Range Lvl",
    "Avg Num Child",
];

/// What the summary keeps of a range while it is projected.
struct RangeInfo {
    /// Its group: an index into the (name, push/pop) keys.
    group: u32,
    level: u32,
    /// The order of the range among the thread-local ranges.
    id: u64,
    parent: Option<u64>,
}

/// A range open on its thread while later ones start: a candidate parent.
struct Enclosing {
    start: i64,
    end: i64,
    id: u64,
    level: u32,
}

#[derive(Default)]
struct Group {
    projected: Values,
    range_time: i128,
    ops: u64,
    levels: u64,
    children: u64,
}

pub(super) fn nvtx_gpu_proj_sum(report: &Report) -> rusqlite::Result<Vec<Vec<Cell>>> {
    let last = report.nvtx_last_time()?;
    let domains = &report.meta().nvtx_domains;
    let mut keys: Vec<(String, bool)> = Vec::new();
    let mut key_index: FxHashMap<(String, bool), u32> = FxHashMap::default();
    let mut ranges: Vec<Range<RangeInfo>> = Vec::new();
    let mut open: FxHashMap<(u32, u32), Vec<Enclosing>> = FxHashMap::default();
    let mut next_id = 0u64;
    report.for_each_nvtx_event(|e| -> rusqlite::Result<()> {
        // Only ranges that start and end on one thread are projected, or
        // parents of projected ones.
        if e.kind == NvtxKind::Mark || e.end_tid.is_some() {
            return Ok(());
        }
        let end = e.end.or(last).unwrap_or(e.start);
        let id = next_id;
        next_id += 1;
        let stack = open.entry((e.pid, e.tid)).or_default();
        stack.retain(|r| r.end >= e.start);
        let parent = stack
            .iter()
            .filter(|r| r.start <= e.start && r.end >= end)
            .min_by_key(|r| (e.start - r.start) + (r.end - end));
        let (parent, level) = match parent {
            Some(p) => (Some(p.id), p.level + 1),
            None => (None, 0),
        };
        stack.push(Enclosing {
            start: e.start,
            end,
            id,
            level,
        });
        let Ok(start) = u64::try_from(e.start) else {
            return Ok(());
        };
        let domain = domains.get(&(e.pid, e.domain)).map_or("", String::as_str);
        let name = format!("{domain}:{}", e.text.as_ref().map_or("", |t| t.as_str()));
        let push_pop = e.kind == NvtxKind::PushPop;
        let key = (name, push_pop);
        let group = match key_index.get(&key) {
            Some(&g) => g,
            None => {
                let g = keys.len() as u32;
                keys.push(key.clone());
                key_index.insert(key, g);
                g
            }
        };
        ranges.push(Range {
            start,
            end: e.end.and_then(|t| u64::try_from(t).ok()),
            pid: e.pid,
            tid: e.tid,
            data: RangeInfo {
                group,
                level,
                id,
                parent,
            },
        });
        Ok(())
    })?;
    drop(open);
    if ranges.is_empty() {
        return Ok(Vec::new());
    }

    let mut groups: Vec<Group> = (0..keys.len()).map(|_| Group::default()).collect();
    // Projected ranges' groups, and how many projected children each parent has.
    let mut projected_group: FxHashMap<u64, u32> = FxHashMap::default();
    let mut children: FxHashMap<u64, u64> = FxHashMap::default();
    let mut take = |projector: &mut Projector<RangeInfo>| {
        while let Some(p) = projector.next_ready() {
            let info = &p.range.data;
            let g = &mut groups[info.group as usize];
            g.projected
                .push(i64::try_from(p.last - p.first).unwrap_or(i64::MAX));
            g.range_time += i128::from(p.range_end) - i128::from(p.range.start);
            g.ops += u64::from(p.launches);
            g.levels += u64::from(info.level);
            projected_group.insert(info.id, info.group);
            if let Some(parent) = info.parent {
                *children.entry(parent).or_default() += 1;
            }
        }
    };
    let open_until = last.and_then(|t| u64::try_from(t).ok());
    let mut projector = Projector::with_ranges(ranges, open_until);
    report.for_each_cuda_event(|streamed| -> rusqlite::Result<()> {
        if let Streamed::Event(event) = streamed {
            projector.cuda_event(&event);
            take(&mut projector);
        }
        Ok(())
    })?;
    projector.finish();
    take(&mut projector);
    for (parent, n) in children {
        if let Some(&g) = projected_group.get(&parent) {
            groups[g as usize].children += n;
        }
    }

    let mut rows: Vec<(i128, Vec<Cell>)> = Vec::new();
    for ((name, push_pop), mut g) in keys.into_iter().zip(groups) {
        let Some(s) = g.projected.stats() else {
            continue;
        };
        let n = s.count as f64;
        let style = if push_pop { "PushPop" } else { "StartEnd" };
        rows.push((
            s.total,
            vec![
                Cell::Text(name),
                Cell::Text(style.to_owned()),
                Cell::Int(s.total),
                Cell::Int(g.range_time),
                Cell::Int(i128::from(s.count)),
                Cell::Real(s.mean, 1),
                Cell::Real(s.median, 1),
                Cell::Int(i128::from(s.min)),
                Cell::Int(i128::from(s.max)),
                Cell::Real(s.stddev, 1),
                Cell::Int(i128::from(g.ops)),
                Cell::Real(g.ops as f64 / n, 1),
                Cell::Real(g.levels as f64 / n, 1),
                Cell::Real(g.children as f64 / n, 1),
            ],
        ));
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    Ok(rows.into_iter().map(|(_, row)| row).collect())
}
