//! `cuda_kern_exec_sum`: each kernel with the API call that launched it
//! (same process, same correlation id), grouped by launching thread, device,
//! API name and kernel name. Per launch: the API call's duration, the queue
//! time from the call's end to the kernel's start (none when the kernel
//! started first), the kernel's duration, and the total from the call's
//! start to the later of the two ends.
//!
//! Kernels are read first and kept by (process, correlation id), then the
//! API calls stream past them: memory holds the kernels (about 40 bytes
//! each) besides what each group keeps of its four measures.

use rustc_hash::FxHashMap;

use crate::nsys::Report;

use super::aggregate::{Stats, ValueSets};
use super::reports::api_name;
use super::table::Cell;

/// A kernel waiting for the call that launched it.
struct Launched<'r> {
    device: Option<i64>,
    start: i64,
    end: i64,
    name: &'r str,
}

/// (pid, tid, device, API name, kernel name).
type Key<'r> = (u32, u32, Option<i64>, String, &'r str);

/// The four measures of a group, in the order of their columns: the sets
/// of group `g` are numbered `MEASURES * g` to `MEASURES * g + 3`.
const MEASURES: usize = 4;
const TOTAL: usize = 0;
const API: usize = 1;
const QUEUE: usize = 2;
const KERNEL: usize = 3;

pub(crate) fn kern_exec_sum(report: &Report) -> rusqlite::Result<Vec<Vec<Cell>>> {
    let mut kernels: FxHashMap<(u32, i64), Vec<Launched<'_>>> = FxHashMap::default();
    report.each_kernel_row(|k| {
        // A kernel without process or correlation id cannot be matched.
        if let (Some(pid), Some(correlation)) = (k.pid, k.correlation_id) {
            kernels
                .entry((pid, correlation))
                .or_default()
                .push(Launched {
                    device: k.device,
                    start: k.start,
                    end: k.end,
                    name: k.name,
                });
        }
    })?;
    let mut index: FxHashMap<Key<'_>, usize> = FxHashMap::default();
    let mut keys: Vec<Key<'_>> = Vec::new();
    let mut measures = ValueSets::default();
    report.each_api_row(|call| {
        let Some(correlation) = call.correlation_id else {
            return;
        };
        let Some(launched) = kernels.get(&(call.pid, correlation)) else {
            return;
        };
        for k in launched {
            let key: Key = (
                call.pid,
                call.tid,
                k.device,
                api_name(call.name).to_owned(),
                k.name,
            );
            let at = *index.entry(key.clone()).or_insert_with(|| {
                keys.push(key);
                keys.len() - 1
            });
            let set = MEASURES * at;
            measures.add(set + TOTAL, call.end.max(k.end) - call.start);
            measures.add(set + API, call.end - call.start);
            if k.start >= call.end {
                measures.add(set + QUEUE, k.start - call.end);
            }
            measures.add(set + KERNEL, k.end - k.start);
        }
    })?;
    // Every group has all four sets, the last maybe empty.
    let mut stats = measures.finish()?;
    stats.resize(MEASURES * keys.len(), None);
    let mut rows: Vec<(f64, Vec<Cell>)> = keys
        .into_iter()
        .zip(stats.chunks(MEASURES))
        .filter_map(|((pid, tid, device, api, kernel), m)| {
            let total = m[TOTAL]?;
            let queued = m[QUEUE].map_or(0, |s| s.count);
            let mut row = vec![
                Cell::Int(i128::from(pid)),
                Cell::Int(i128::from(tid)),
                device.map_or(Cell::Empty, |d| Cell::Int(i128::from(d))),
                Cell::Int(i128::from(total.count)),
                Cell::Int(i128::from(queued)),
            ];
            for measure in m {
                row.extend(measure_cells(measure));
            }
            row.push(Cell::Text(api));
            row.push(Cell::Text(kernel.to_owned()));
            Some((total.mean, row))
        })
        .collect();
    // By average total time, longest first.
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    Ok(rows.into_iter().map(|(_, row)| row).collect())
}

/// Average, median, min, max, standard deviation; an empty measure (no
/// queue time) has none but a deviation of 0, as nsys prints it.
fn measure_cells(stats: &Option<Stats>) -> Vec<Cell> {
    match stats {
        Some(s) => vec![
            Cell::Real(s.mean, 1),
            Cell::Real(s.median, 1),
            Cell::Int(i128::from(s.min)),
            Cell::Int(i128::from(s.max)),
            Cell::Real(s.stddev, 1),
        ],
        None => vec![
            Cell::Empty,
            Cell::Empty,
            Cell::Empty,
            Cell::Empty,
            Cell::Real(0.0, 1),
        ],
    }
}

/// The columns, as nsys names them.
pub(crate) const COLUMNS: [&str; 27] = [
    "PID",
    "TID",
    "DevId",
    "Count",
    "QCount",
    "TAvg (ns)",
    "TMed (ns)",
    "TMin (ns)",
    "TMax (ns)",
    "TStdDev (ns)",
    "AAvg (ns)",
    "AMed (ns)",
    "AMin (ns)",
    "AMax (ns)",
    "AStdDev (ns)",
    "QAvg (ns)",
    "QMed (ns)",
    "QMin (ns)",
    "QMax (ns)",
    "QStdDev (ns)",
    "KAvg (ns)",
    "KMed (ns)",
    "KMin (ns)",
    "KMax (ns)",
    "KStdDev (ns)",
    "API Name",
    "Kernel Name",
];
