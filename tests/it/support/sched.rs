//! The checker's view of context switches: the `sched` slices trace_processor
//! builds from ftrace `sched_switch` events, per CPU in time order, and the
//! `thread_state` rows it builds from them per thread.

use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Debug)]
pub struct Switch {
    pub cpu: u32,
    pub ts: u64,
    pub order: usize,
    pub prev_tid: i32,
    pub next_tid: i32,
}

/// A thread running on a CPU from `ts`, for `dur` (`None`: until the trace ends).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SchedSlice {
    pub cpu: u32,
    pub ts: u64,
    pub dur: Option<u64>,
    pub tid: i32,
}

/// The slices of non-idle threads; an error where a switch's outgoing thread
/// is not the one the previous switch brought in.
pub fn slices(mut switches: Vec<Switch>, errors: &mut Vec<String>) -> Vec<SchedSlice> {
    let mut per_cpu: BTreeMap<u32, Vec<Switch>> = BTreeMap::new();
    switches.sort_by_key(|s| (s.ts, s.order));
    for s in switches {
        per_cpu.entry(s.cpu).or_default().push(s);
    }
    let mut out = Vec::new();
    for (cpu, list) in per_cpu {
        for (i, s) in list.iter().enumerate() {
            let next = list.get(i + 1);
            if let Some(n) = next {
                if n.prev_tid != s.next_tid {
                    errors.push(format!(
                        "cpu {cpu} at {}: switch out of tid {} but tid {} was running",
                        n.ts, n.prev_tid, s.next_tid
                    ));
                }
            }
            if s.next_tid != 0 {
                out.push(SchedSlice {
                    cpu,
                    ts: s.ts,
                    dur: next.map(|n| n.ts - s.ts),
                    tid: s.next_tid,
                });
            }
        }
    }
    out
}

/// A `thread_state` row: a thread running from `ts`, or in the state it left
/// a CPU in, until its next switch (`dur`: `None` when no end was seen).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ThreadState {
    pub tid: i32,
    pub ts: u64,
    pub dur: Option<u64>,
    pub running: bool,
}

/// The rows trace_processor makes of the switches, in time order: each
/// switch ends the outgoing thread's running row and opens one for the state
/// it leaves in, and ends the incoming thread's row and opens a running one.
/// The idle thread (tid 0) has none. A thread switched out while its last row
/// is not a running one (a switch in was lost) leaves that row without an end.
pub fn thread_states(switches: &[Switch]) -> Vec<ThreadState> {
    let mut in_order: Vec<&Switch> = switches.iter().collect();
    in_order.sort_by_key(|s| (s.ts, s.order));
    let mut rows: Vec<ThreadState> = Vec::new();
    let mut last: HashMap<i32, usize> = HashMap::new();
    for s in in_order {
        for (tid, running) in [(s.prev_tid, false), (s.next_tid, true)] {
            if tid == 0 {
                continue;
            }
            if let Some(&i) = last.get(&tid) {
                let lost_switch_in = !running && !rows[i].running;
                if !lost_switch_in {
                    rows[i].dur = Some(s.ts - rows[i].ts);
                }
            }
            last.insert(tid, rows.len());
            rows.push(ThreadState {
                tid,
                ts: s.ts,
                dur: None,
                running,
            });
        }
    }
    rows
}
