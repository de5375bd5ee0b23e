//! `cuda_kern_exec_sum`: each kernel with the API call that launched it
//! (same process, same correlation id), grouped by launching thread, device,
//! API name and kernel name. Per launch: the API call's duration, the queue
//! time from the call's end to the kernel's start (none when the kernel
//! started first), the kernel's duration, and the total from the call's
//! start to the later of the two ends.
//!
//! The report's CUDA stream comes in time order, so a launch's calls come
//! before its GPU work: memory holds the calls of the launches whose GPU
//! operations have not all come (the stream's pre-scan counts them), not
//! the report. A kernel that starts before every call of its launch has
//! none (nsys would join it with a later one; no real capture has one), and
//! a record repeating a call (to carry its stack) is dropped once calls that
//! start after it ended come without its own (it encloses its call).
//! Calls of a `CUPTI_ACTIVITY_KIND_DRIVER` table, which the stream reads
//! too, would launch as well; nsys exports have none (driver calls are rows
//! of `CUPTI_ACTIVITY_KIND_RUNTIME`).

use rustc_hash::FxHashMap;

use crate::error::Failure;
use crate::nsys::cuda::{CudaEvent, KERNEL};
use crate::nsys::Report;

use super::aggregate::{Stats, ValueSets};
use super::plausible::each_plausible_cuda_event;
use super::table::{spread_cells, Cell};
use crate::nsys::names::api_stats_name;

/// A record of a launching call.
struct Call {
    tid: u32,
    /// Its API name, by number.
    name: u32,
    start: i64,
    end: i64,
}

/// A launch whose GPU operations have not all come.
#[derive(Default)]
struct Launch {
    /// Its call, and the records that repeat it (to carry its stack): nsys
    /// joins each kernel with each.
    calls: Vec<Call>,
    /// Its GPU operations still to come; `None` until the call itself came.
    left: Option<u32>,
}

/// (pid, tid, device, API name, kernel name), the names by number.
type Key = (u32, u32, Option<i64>, u32, u32);

/// Numbers for names, in the order first seen.
#[derive(Default)]
struct Names {
    index: FxHashMap<String, u32>,
    names: Vec<String>,
}

impl Names {
    fn number(&mut self, name: &str) -> u32 {
        if let Some(&n) = self.index.get(name) {
            return n;
        }
        let n = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.index.insert(name.to_owned(), n);
        n
    }
}

/// The four measures of a group, in the order of their columns: the sets
/// of group `g` are numbered `MEASURES * g` to `MEASURES * g + 3`.
const MEASURES: usize = 4;
const TOTAL: usize = 0;
const API: usize = 1;
const QUEUE: usize = 2;
const KERNEL_TIME: usize = 3;

pub(crate) fn kern_exec_sum(report: &Report) -> Result<Vec<Vec<Cell>>, Failure> {
    // The reader's kernels have a device; exports without the column none.
    let has_device = report.has_column(KERNEL, "deviceId");
    let mut launches: FxHashMap<(u32, i64), Launch> = FxHashMap::default();
    let mut api_names = Names::default();
    let mut kernel_names = Names::default();
    let mut index: FxHashMap<Key, usize> = FxHashMap::default();
    let mut keys: Vec<Key> = Vec::new();
    let mut measures = ValueSets::default();
    // Records repeating a call that has not come yet: their ends and launches.
    let mut unclaimed: Vec<(i64, (u32, i64))> = Vec::new();
    each_plausible_cuda_event(report, |event| {
        let common = match &event {
            CudaEvent::Api(call) => {
                let Some(corr) = call.correlation_id else {
                    return Ok(());
                };
                let key = (call.pid, corr);
                if !call.repeats_a_call {
                    // A repeated record encloses its call: one that ended
                    // before this call started has no call to come.
                    unclaimed.retain(|&(end, key)| {
                        let kept = end >= call.start;
                        if !kept && launches.get(&key).is_some_and(|l| l.left.is_none()) {
                            launches.remove(&key);
                        }
                        kept
                    });
                }
                if !call.repeats_a_call && call.gpu_ops == 0 {
                    // No GPU work: neither the call nor records of it that came before.
                    launches.remove(&key);
                    return Ok(());
                }
                let launch = launches.entry(key).or_insert_with(|| {
                    if call.repeats_a_call {
                        unclaimed.push((call.end, key));
                    }
                    Launch::default()
                });
                if !call.repeats_a_call {
                    launch.left = Some(call.gpu_ops);
                }
                launch.calls.push(Call {
                    tid: call.tid,
                    name: api_names.number(api_stats_name(call.name)),
                    start: call.start,
                    end: call.end,
                });
                return Ok(());
            }
            work => match work.launched_work() {
                Some(common) => common,
                None => return Ok(()),
            },
        };
        let (Some(pid), Some(corr)) = (common.place.pid, common.correlation_id) else {
            return Ok(());
        };
        let Some(launch) = launches.get_mut(&(pid, corr)) else {
            return Ok(());
        };
        if let CudaEvent::Kernel(k) = &event {
            let device = has_device.then_some(k.common.place.device);
            let kernel = kernel_names.number(k.demangled_name.unwrap_or(k.short_name));
            let (start, end) = (k.common.start, k.common.end);
            for call in &launch.calls {
                let key: Key = (pid, call.tid, device, call.name, kernel);
                let at = *index.entry(key).or_insert_with(|| {
                    keys.push(key);
                    keys.len() - 1
                });
                let set = MEASURES * at;
                measures.add_span(set + TOTAL, call.start, call.end.max(end));
                measures.add_span(set + API, call.start, call.end);
                if start >= call.end {
                    measures.add_span(set + QUEUE, call.end, start);
                }
                measures.add_span(set + KERNEL_TIME, start, end);
            }
        }
        if let Some(left) = &mut launch.left {
            *left = left.saturating_sub(1);
            if *left == 0 {
                launches.remove(&(pid, corr));
            }
        }
        Ok(())
    })?;
    // Every group has all four sets, the last maybe empty.
    let mut stats = measures.finish()?;
    stats.resize(MEASURES * keys.len(), None);
    let mut rows: Vec<(f64, Vec<Cell>)> = keys
        .iter()
        .zip(stats.chunks(MEASURES))
        .filter_map(|(&(pid, tid, device, api, kernel), m)| {
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
            row.push(Cell::Text(api_names.names[api as usize].clone()));
            row.push(Cell::Text(kernel_names.names[kernel as usize].clone()));
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
        Some(s) => spread_cells(s).to_vec(),
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
