//! `nvtx_gpu_proj_sum`: NVTX ranges projected onto the GPU, summed by range
//! name and style, as nsys 2025.3 sums its `nvtx_gpu_proj_trace`.
//!
//! A range's place in the tree of ranges (its level, its parent) is nsys's:
//! the parent is the tightest range of the same thread that encloses it
//! (least (child start - parent start) + (parent end - child end)), among
//! the ranges that start and end on one thread; the level counts the
//! ancestors. The children a range has are those of its children that were
//! projected. nsys finds enclosing ranges in an SQLite R-tree, whose
//! coordinates are 32-bit floats rounded outwards: a range encloses another
//! only if it does in those coordinates too, which can make a range's
//! parent an outer one where two ends lie within a float step (16 µs at
//! 150 s).
//!
//! The NVTX pass runs on a thread of its own and sends the ranges in start
//! order to the projector, which takes each as the CUDA stream reaches its
//! start: memory holds the ranges open at the stream's time and those
//! waiting for the GPU work of their launches, not the report's ranges.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::analysis::projection::{streamed, Projector, Range, RangeFeed};
use crate::error::Failure;
use crate::nsys::cuda::{self, CudaEvent};
use crate::nsys::names::RangeNames;
use crate::nsys::nvtx::{self, NvtxKind};
use crate::nsys::{Report, RowFilter, Streamed, TimeCheck};

use super::aggregate::ValueSets;
use super::plausible::each_plausible_cuda_event;
use super::table::{spread_cells, Cell};

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

/// What the summaries and the trace keep of a range while it is projected.
pub(super) struct RangeInfo {
    /// Its group: an index into the (name, push/pop) keys.
    pub(super) group: u32,
    pub(super) level: u32,
    /// The order of the range among the thread-local ranges.
    id: u64,
    /// The group of its parent, where the parent is projected whenever the
    /// range is: the parent holds every launch the range holds.
    parent_group: Option<u32>,
    /// Its row in the export, and its parent's: nsys names ranges by them.
    pub(super) rowid: i64,
    pub(super) parent_rowid: Option<i64>,
    /// The rows of its ancestors and its own, outermost first (`:3:4`).
    pub(super) stack: String,
}

/// A range open on its thread while later ones start: a candidate parent.
struct Enclosing {
    start: i64,
    end: i64,
    level: u32,
    /// Its group; `None` for a range that cannot be projected.
    group: Option<u32>,
    rowid: i64,
    stack: String,
}

/// A group's sums; its projected durations are the set of its number in a
/// [`ValueSets`].
#[derive(Default)]
struct Group {
    range_time: i128,
    ops: u64,
    levels: u64,
    children: u64,
}

/// The (name, push/pop) keys that ranges' groups index.
pub(super) type Keys = Vec<(String, bool)>;

/// Sends the ranges that can be projected, in start order, with their place
/// in the tree of ranges, and returns the keys their groups index, each
/// name as `names` says. `last` is where ranges never ended end. Memory
/// holds the ranges still open on each thread (candidate parents) and the
/// keys.
fn send_ranges(
    report: &Report,
    names: RangeNames,
    last: Option<i64>,
    feed: &mut RangeFeed<RangeInfo>,
) -> Result<Keys, Failure> {
    let domains = &report.meta().nvtx_domains;
    let mut keys: Keys = Vec::new();
    let mut key_index: FxHashMap<(String, bool), u32> = FxHashMap::default();
    let mut open: FxHashMap<(u32, u32), Vec<Enclosing>> = FxHashMap::default();
    let mut next_id = 0u64;
    report.for_each_nvtx_event(&RowFilter::none(), |e| -> Result<(), Failure> {
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
        let parent = tightest_enclosing(stack.iter(), |r| (r.start, r.end), e.start, end);
        let (parent_group, level) = match parent {
            Some(p) => (p.group, p.level + 1),
            None => (None, 0),
        };
        let parent_rowid = parent.map(|p| p.rowid);
        let ancestors = parent.map_or("", |p| p.stack.as_str());
        let range_stack = format!("{ancestors}:{}", e.rowid);
        let Ok(start) = u64::try_from(e.start) else {
            stack.push(Enclosing {
                start: e.start,
                end,
                level,
                group: None,
                rowid: e.rowid,
                stack: range_stack,
            });
            return Ok(());
        };
        let domain = domains.get(&(e.pid, e.domain)).map_or("", String::as_str);
        let text = e.text.as_ref().map_or("", |t| t.as_str());
        let name = format!("{domain}:{}", names.of(text));
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
        stack.push(Enclosing {
            start: e.start,
            end,
            level,
            group: Some(group),
            rowid: e.rowid,
            stack: range_stack.clone(),
        });
        feed.send(Range {
            start,
            end: e.end.and_then(|t| u64::try_from(t).ok()),
            pid: e.pid,
            tid: e.tid,
            data: RangeInfo {
                group,
                level,
                id,
                parent_group,
                rowid: e.rowid,
                parent_rowid,
                stack: range_stack,
            },
        });
        Ok(())
    })?;
    Ok(keys)
}

/// Projects the NVTX ranges of `report` (as [`send_ranges`] sends them,
/// named as `names` says; `last` is where ranges never ended end) onto its
/// CUDA stream: `see` is
/// shown each CUDA event before the projector takes it (the projector
/// takes none whose times cannot be right), `take` is called
/// after each event and at the end to take the ranges done. Returns the
/// ranges' group keys.
pub(super) fn project(
    report: &Report,
    names: RangeNames,
    last: i64,
    mut see: impl FnMut(&CudaEvent<'_>),
    mut take: impl FnMut(&mut Projector<RangeInfo>),
) -> Result<Keys, Failure> {
    let (keys, ()) = streamed(
        u64::try_from(last).ok(),
        |feed| send_ranges(report, names, Some(last), feed),
        |projector| {
            let mut check = TimeCheck::new(report)?;
            report.for_each_cuda_event(&RowFilter::none(), |streamed| -> Result<(), Failure> {
                if let Streamed::Event(event) = streamed {
                    see(&event);
                    if !check.allow_event(&event) {
                        return Ok(());
                    }
                    projector.cuda_event(&event);
                    take(projector);
                }
                Ok(())
            })?;
            projector.finish();
            take(projector);
            Ok(())
        },
    )?;
    Ok(keys)
}

/// The range of `open` (with `bounds`) that encloses `start..end` most
/// tightly, as nsys finds a range's parent: least (start - its start) +
/// (its end - end), where it encloses the range both exactly and in the
/// R-tree's rounded bounds; the first of equals.
pub(super) fn tightest_enclosing<'a, T>(
    open: impl Iterator<Item = &'a T>,
    bounds: impl Fn(&T) -> (i64, i64),
    start: i64,
    end: i64,
) -> Option<&'a T> {
    open.filter(|r| {
        let (s, e) = bounds(r);
        s <= start
            && e >= end
            && rtree_low(s) <= rtree_low(start)
            && rtree_high(e) >= rtree_high(end)
    })
    .min_by_key(|r| {
        let (s, e) = bounds(r);
        (i128::from(start) - i128::from(s)) + (i128::from(e) - i128::from(end))
    })
}

/// A range's start as nsys's SQLite R-tree of ranges holds it: a 32-bit
/// float not above it (SQLite rounds a float that came out above down by
/// scaling with 1 - 2^-23, which may go more than one step).
fn rtree_low(t: i64) -> f32 {
    let d = t as f64;
    let f = d as f32;
    match f64::from(f) > d {
        true => (d * (1.0 - 1.0 / 8_388_608.0)) as f32,
        false => f,
    }
}

/// A range's end as the R-tree holds it: a 32-bit float not below it.
fn rtree_high(t: i64) -> f32 {
    let d = t as f64;
    let f = d as f32;
    match f64::from(f) < d {
        true => (d * (1.0 + 1.0 / 8_388_608.0)) as f32,
        false => f,
    }
}

pub(super) fn style(push_pop: bool) -> &'static str {
    match push_pop {
        true => "PushPop",
        false => "StartEnd",
    }
}

pub(super) fn nvtx_gpu_proj_sum(
    report: &Report,
    names: RangeNames,
) -> Result<Vec<Vec<Cell>>, Failure> {
    // No NVTX row, no range.
    let Some(last) = report.nvtx_last_time()? else {
        return Ok(Vec::new());
    };
    let mut groups: Vec<Group> = Vec::new();
    let mut projected = ValueSets::default();
    let take = |projector: &mut Projector<RangeInfo>| {
        while let Some(p) = projector.next_ready() {
            let info = &p.range.data;
            let at = info.group as usize;
            if groups.len() <= at {
                groups.resize_with(at + 1, Group::default);
            }
            let g = &mut groups[at];
            projected.add(at, i64::try_from(p.last - p.first).unwrap_or(i64::MAX));
            g.range_time += i128::from(p.range_end) - i128::from(p.range.start);
            g.ops += u64::from(p.launches);
            g.levels += u64::from(info.level);
            if let Some(parent) = info.parent_group {
                let parent = parent as usize;
                if groups.len() <= parent {
                    groups.resize_with(parent + 1, Group::default);
                }
                groups[parent].children += 1;
            }
        }
    };
    let keys = project(report, names, last, |_| {}, take)?;
    groups.resize_with(keys.len(), Group::default);

    let mut projected = projected.finish()?;
    projected.resize(groups.len(), None);
    let mut rows: Vec<(i128, Vec<Cell>)> = Vec::new();
    for (((name, push_pop), g), s) in keys.into_iter().zip(groups).zip(projected) {
        let Some(s) = s else {
            continue;
        };
        let n = s.count as f64;
        let mut row = vec![
            Cell::Text(name),
            Cell::Text(style(push_pop).to_owned()),
            Cell::Int(s.total),
            Cell::Int(g.range_time),
            Cell::Int(i128::from(s.count)),
        ];
        row.extend(spread_cells(&s));
        row.extend([
            Cell::Int(i128::from(g.ops)),
            Cell::Real(g.ops as f64 / n, 1),
            Cell::Real(g.levels as f64 / n, 1),
            Cell::Real(g.children as f64 / n, 1),
        ]);
        rows.push((s.total, row));
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    Ok(rows.into_iter().map(|(_, row)| row).collect())
}

/// A name's projected GPU time (ns) and how many of its ranges were projected.
pub(crate) type ProjectedName = (String, i128, u64);

/// [`projected_by_name_counted`] without the counts.
pub(crate) fn projected_by_name(
    report: &Report,
    names: RangeNames,
) -> Result<(Vec<(String, i128)>, i128), Failure> {
    let (projected, span) = projected_by_name_counted(report, names)?;
    let projected = projected.into_iter().map(|(n, t, _)| (n, t)).collect();
    Ok((projected, span))
}

/// The projected GPU time of the NVTX ranges of `report` by `domain:name`
/// (both styles together; each name as `names` says), and how many ranges
/// of the name were projected (launched GPU work), as
/// [`nvtx_gpu_proj_sum`] totals it: each range's
/// time from its first GPU operation's start to its last one's end. With
/// it, the span of the report's GPU work: from the first start of a kernel,
/// memcpy or memset to the last end (0 in an export without NVTX data).
///
/// The ranges stream to the projector as for [`nvtx_gpu_proj_sum`]: memory
/// holds a few batches, the open and waiting ranges, and the names.
fn projected_by_name_counted(
    report: &Report,
    names: RangeNames,
) -> Result<(Vec<ProjectedName>, i128), Failure> {
    // No NVTX row, no range: the span is not needed.
    Ok(projected_by_name_seeing(report, names, |_| {})?.unwrap_or_default())
}

/// [`projected_by_name_counted`], where `also` sees each event of the CUDA
/// stream the projection reads, so that another pass over that stream can
/// share the read; `None` where the export has no NVTX row, and then no
/// stream is read. Events whose times cannot be right are left out.
pub(crate) fn projected_by_name_seeing(
    report: &Report,
    names: RangeNames,
    mut also: impl FnMut(&CudaEvent<'_>),
) -> Result<Option<(Vec<ProjectedName>, i128)>, Failure> {
    let Some(last) = report.nvtx_last_time()? else {
        return Ok(None);
    };
    let plausible = report.plausible_times()?;
    // `None`: no range of the group was projected (it launched no GPU work),
    // so the group is no row, as in `nvtx_gpu_proj_sum`.
    let mut totals: Vec<Option<(i128, u64)>> = Vec::new();
    let mut span: Option<(i64, i64)> = None;
    let take = |projector: &mut Projector<RangeInfo>| {
        while let Some(p) = projector.next_ready() {
            let group = p.range.data.group as usize;
            if totals.len() <= group {
                totals.resize(group + 1, None);
            }
            let (total, ranges) = totals[group].get_or_insert((0, 0));
            *total += i128::from(p.last - p.first);
            *ranges += 1;
        }
    };
    let see = |event: &CudaEvent| {
        also(event);
        if let CudaEvent::Kernel(_) | CudaEvent::Memcpy(_) | CudaEvent::Memset(_) = event {
            let (start, end) = event.span();
            if !plausible.allow(start, end) {
                return;
            }
            let (first, last) = span.get_or_insert((start, end));
            *first = (*first).min(start);
            *last = (*last).max(end);
        }
    };
    let keys = project(report, names, last, see, take)?;
    let mut by_name: FxHashMap<String, (i128, u64)> = FxHashMap::default();
    for (group, counted) in totals.into_iter().enumerate() {
        let Some((total, ranges)) = counted else {
            continue;
        };
        let sum = by_name.entry(keys[group].0.clone()).or_default();
        sum.0 += total;
        sum.1 += ranges;
    }
    let span = span.map_or(0, |(first, last)| i128::from(last) - i128::from(first));
    let projected = by_name
        .into_iter()
        .map(|(name, (total, ranges))| (name, total, ranges))
        .collect();
    Ok(Some((projected, span)))
}

pub(super) const KERNEL_COLUMNS: [&str; 13] = [
    "NVTX Range",
    "Style",
    "PID",
    "TID",
    "NVTX Inst",
    "Kern Inst",
    "Total Time (ns)",
    "Avg (ns)",
    "Med (ns)",
    "Min (ns)",
    "Max (ns)",
    "StdDev (ns)",
    "Kernel Name",
];

/// A row of `nvtx_kern_sum`: kernels of one name launched by one thread
/// inside ranges of one name and style (`None`: outside every range).
#[derive(Clone, PartialEq, Eq, Hash)]
struct KernelKey {
    range: Option<u32>,
    thread: Option<(u32, u32)>,
    kernel: String,
}

/// A launch waiting for its operations: the launching thread, the
/// operations still to come, the spans of the call's records.
type KernelLaunch = (u32, u32, Vec<(i64, i64)>);

/// A group's counts; its durations are the set of its number in a
/// [`ValueSets`].
#[derive(Default)]
struct KernelGroup {
    kernels: u64,
    /// The last kernel counted, so that one in two ranges of a name counts once.
    last_kernel: Option<u64>,
    /// The ranges with kernels of the group.
    ranges: u64,
}

/// `nvtx_kern_sum`: kernel durations by the NVTX ranges their launches lie
/// in (each enclosing range, nested ones included) and by launching thread,
/// as nsys 2025.3 sums them. Kernels launched outside every range make rows
/// of their own, with no range.
pub(super) fn nvtx_kern_sum(report: &Report, names: RangeNames) -> Result<Vec<Vec<Cell>>, Failure> {
    // Like nsys, nothing without NVTX data, kernels or CUDA API calls.
    let needs = [nvtx::TABLE, cuda::KERNEL, cuda::RUNTIME];
    if !needs.iter().all(|t| report.has_table(t)) {
        return Ok(Vec::new());
    }
    let last = report.nvtx_last_time()?;
    let open_until = last.and_then(|t| u64::try_from(t).ok());
    // The threads of launches whose operations have not all come, how many
    // are left, and the spans of the launching call's records: nsys joins
    // each kernel with every record of its call (a call recorded again, to
    // carry its stack, is a second row in each range that holds it).
    let mut launches: FxHashMap<(u32, i64), KernelLaunch> = FxHashMap::default();
    // Repeated records of calls not yet seen, with their spans.
    let mut repeats: Vec<((u32, i64), (i64, i64))> = Vec::new();
    let mut records: Vec<(i64, i64)> = Vec::new();
    let mut index: FxHashMap<KernelKey, usize> = FxHashMap::default();
    let mut groups: Vec<(KernelKey, KernelGroup)> = Vec::new();
    let mut durations = ValueSets::default();
    let mut kernel_seq = 0u64;
    // The ranges a kernel's launch lies in: id, group, start, end.
    let mut in_ranges: Vec<(u64, u32, u64, u64)> = Vec::new();
    // The groups with kernels in each range that may still get some, by
    // range id: a range counts once in each, and is forgotten once the
    // projector has handed it out (no later launch can lie in it).
    let mut range_groups: FxHashMap<u64, FxHashSet<usize>> = FxHashMap::default();
    let release = |projector: &mut Projector<RangeInfo>,
                   range_groups: &mut FxHashMap<u64, FxHashSet<usize>>| {
        while let Some(p) = projector.next_ready() {
            range_groups.remove(&p.range.data.id);
        }
    };
    let (keys, ()) = streamed(
        open_until,
        |feed| send_ranges(report, names, last, feed),
        |projector| {
            each_plausible_cuda_event(report, |event| {
                let common = match &event {
                    CudaEvent::Api(call) => {
                        if let Some(corr) = call.correlation_id {
                            let key = (call.pid, corr);
                            // A repeated record encloses its call: one that ended
                            // before this call started has no call to come.
                            repeats.retain(|r| r.1 .1 >= call.start);
                            let span = (call.start, call.end);
                            match (call.repeats_a_call, launches.get_mut(&key)) {
                                (true, Some(launch)) => launch.2.push(span),
                                (true, None) => repeats.push((key, span)),
                                (false, _) if call.gpu_ops > 0 => {
                                    let mut spans = vec![span];
                                    spans
                                        .extend(repeats.iter().filter(|r| r.0 == key).map(|r| r.1));
                                    launches.insert(key, (call.tid, call.gpu_ops, spans));
                                }
                                (false, _) => {}
                            }
                        }
                        projector.cuda_event(&event);
                        release(projector, &mut range_groups);
                        return Ok(());
                    }
                    work => match work.launched_work() {
                        Some(common) => common,
                        None => return Ok(()),
                    },
                };
                let launch = common.place.pid.zip(common.correlation_id);
                records.clear();
                let thread = launch.and_then(|(pid, corr)| {
                    let (tid, left, spans) = launches.get_mut(&(pid, corr))?;
                    let tid = *tid;
                    records.extend_from_slice(spans);
                    *left -= 1;
                    if *left == 0 {
                        launches.remove(&(pid, corr));
                    }
                    Some((pid, tid))
                });
                if let CudaEvent::Kernel(k) = &event {
                    in_ranges.clear();
                    if let Some((pid, corr)) = launch {
                        in_ranges.extend(projector.launch_ranges(pid, corr).map(|(_, r)| {
                            let end = r.end.or(open_until).unwrap_or(u64::MAX);
                            (r.data.id, r.data.group, r.start, end)
                        }));
                    }
                    let kernel = k.demangled_name.unwrap_or(k.short_name);
                    let (kernel_start, kernel_end) = (k.common.start, k.common.end);
                    let seq = kernel_seq;
                    kernel_seq += 1;
                    let mut add = |range: Option<(u64, u32)>| {
                        let key = KernelKey {
                            range: range.map(|r| r.1),
                            thread,
                            kernel: kernel.to_owned(),
                        };
                        let at = *index.entry(key.clone()).or_insert_with(|| {
                            groups.push((key, KernelGroup::default()));
                            groups.len() - 1
                        });
                        durations.add_span(at, kernel_start, kernel_end);
                        let g = &mut groups[at].1;
                        if g.last_kernel != Some(seq) {
                            g.last_kernel = Some(seq);
                            g.kernels += 1;
                        }
                        if let Some((id, _)) = range {
                            if range_groups.entry(id).or_default().insert(at) {
                                g.ranges += 1;
                            }
                        }
                    };
                    if records.is_empty() {
                        // No call launched it: a row without thread or range.
                        add(None);
                    }
                    for &(start, end) in &records {
                        let (Ok(start), Ok(end)) = (u64::try_from(start), u64::try_from(end))
                        else {
                            add(None);
                            continue;
                        };
                        let mut inside = in_ranges
                            .iter()
                            .filter(|r| r.2 <= start && r.3 >= end)
                            .peekable();
                        if inside.peek().is_none() {
                            add(None);
                        }
                        inside.for_each(|r| add(Some((r.0, r.1))));
                    }
                }
                projector.cuda_event(&event);
                release(projector, &mut range_groups);
                Ok(())
            })
        },
    )?;

    let mut durations = durations.finish()?;
    durations.resize(groups.len(), None);
    let mut rows: Vec<(KernelKey, i128, Vec<Cell>)> = Vec::new();
    for ((key, g), s) in groups.into_iter().zip(durations) {
        let Some(s) = s else {
            continue;
        };
        let (range, style) = match key.range {
            Some(r) => {
                let (name, push_pop) = &keys[r as usize];
                (
                    Cell::Text(name.clone()),
                    Cell::Text(style(*push_pop).to_owned()),
                )
            }
            None => (Cell::Empty, Cell::Empty),
        };
        let (pid, tid) = match key.thread {
            Some((pid, tid)) => (Cell::Int(pid.into()), Cell::Int(tid.into())),
            None => (Cell::Empty, Cell::Empty),
        };
        let mut row = vec![
            range,
            style,
            pid,
            tid,
            Cell::Int(i128::from(g.ranges)),
            Cell::Int(i128::from(g.kernels)),
            Cell::Int(s.total),
        ];
        row.extend(spread_cells(&s));
        row.push(Cell::Text(key.kernel.clone()));
        rows.push((key, s.total, row));
    }
    // By range name (no range first), process, thread, total descending.
    rows.sort_by(|a, b| {
        let name = |k: &KernelKey| k.range.map(|r| keys[r as usize].0.as_str());
        name(&a.0)
            .cmp(&name(&b.0))
            .then(a.0.thread.cmp(&b.0.thread))
            .then(b.1.cmp(&a.1))
    });
    Ok(rows.into_iter().map(|(_, _, row)| row).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_bounds_round_outwards_as_sqlite_rtree_stores_them() {
        // Values SQLite's R-tree gave for ranges of a real capture: a start
        // rounded down by more than one float step, an end rounded up.
        assert_eq!(rtree_low(156_071_714_865) as i64, 156_071_690_240);
        assert_eq!(rtree_low(156_071_714_055) as i64, 156_071_706_624);
        assert_eq!(rtree_high(156_071_729_945) as i64, 156_071_755_776);
        // Exact floats stay.
        assert_eq!(rtree_low(1024) as i64, 1024);
        assert_eq!(rtree_high(1024) as i64, 1024);
    }
}
