//! Scheduling: the report's "thread scheduled in/out of CPU n" events as the
//! context switches of each CPU. nsys records only the profiled threads, so a
//! CPU runs "nothing we know of" (the idle task) between one of them leaving
//! and the next arriving.

use std::collections::BTreeMap;
use std::io::Write;

use rustc_hash::FxHashMap;

use crate::nsys::cpu::SchedEvent;
use crate::nsys::Report;
use crate::perfetto::{ContextSwitch, EndState, SequenceWriter, Task};

use super::part_writer::{PartWriter, Written};
use super::threads::{thread_name, thread_track};
use crate::error::Failure;

pub(super) const SCHED: &str = "sched";

/// Switches written per ftrace bundle.
const BUNDLE: usize = 1024;

/// A thread, as (pid, tid); `None` for the idle task.
type Thread = Option<(u32, u32)>;

#[derive(Clone, Copy)]
struct Switch {
    ts: u64,
    prev: Thread,
    prev_state: Option<EndState>,
    next: Thread,
}

#[derive(Default)]
struct Cpu {
    /// The thread that left last, waiting to see who comes next.
    leaving: Option<(u64, (u32, u32), Option<EndState>)>,
    running: Thread,
    /// The thread the last switch written went to.
    shown: Option<Thread>,
    switches: Vec<Switch>,
}

pub(super) fn write<W: Write>(mut part: PartWriter<'_, '_, '_, W>) -> Written {
    let report = part.report;
    let mut cpus: BTreeMap<u32, Cpu> = BTreeMap::new();
    let mut names = Names::default();
    report.for_each_sched_event(part.filter, |e: SchedEvent| -> Written {
        let Some(ts) = part.row_at(e.start, SCHED) else {
            return Ok(());
        };
        let Some(n) = super::trace_cpu(e.cpu) else {
            part.summary.sched_on_bad_cpu += 1;
            return Ok(());
        };
        names.learn(report, part.seq, (e.pid, e.tid))?;
        let cpu = cpus.entry(n).or_default();
        let thread = Some((e.pid, e.tid));
        if e.sched_in {
            match cpu.leaving.take() {
                Some((left, prev, state)) if left == ts => cpu.push(ts, Some(prev), state, thread),
                Some((left, prev, state)) => {
                    cpu.push(left, Some(prev), state, None);
                    cpu.push(ts, None, None, thread);
                }
                None => cpu.push(ts, cpu.running, None, thread),
            }
            cpu.running = thread;
        } else {
            if let Some((left, prev, state)) = cpu.leaving.take() {
                cpu.push(left, Some(prev), state, None);
            }
            cpu.leaving = Some((ts, (e.pid, e.tid), end_state(e.thread_state)));
            cpu.running = None;
        }
        part.summary.sched_events += 1;
        if cpu.switches.len() >= BUNDLE {
            flush(part.seq, n, cpu, &names)?;
        }
        Ok(())
    })?;
    for (&n, cpu) in cpus.iter_mut() {
        if let Some((left, prev, state)) = cpu.leaving.take() {
            cpu.push(left, Some(prev), state, None);
        }
        flush(part.seq, n, cpu, &names)?;
    }
    Ok(())
}

impl Cpu {
    fn push(&mut self, ts: u64, prev: Thread, prev_state: Option<EndState>, next: Thread) {
        // trace_processor counts a switch from a thread other than the one
        // the last switch went to as an error: in a damaged report (rows
        // twice, or lost), the thread shown running first gives way.
        let tid = |t: Thread| t.map_or(0, |(_, tid)| tid);
        if let Some(shown) = self.shown.filter(|&shown| tid(shown) != tid(prev)) {
            self.switches.push(Switch {
                ts,
                prev: shown,
                prev_state: None,
                next: prev,
            });
        }
        self.shown = Some(next);
        self.switches.push(Switch {
            ts,
            prev,
            prev_state,
            next,
        });
    }
}

fn flush<W: Write>(
    seq: &mut SequenceWriter<'_, W>,
    n: u32,
    cpu: &mut Cpu,
    names: &Names,
) -> Result<(), Failure> {
    if cpu.switches.is_empty() {
        return Ok(());
    }
    let switches: Vec<ContextSwitch> = cpu
        .switches
        .iter()
        .map(|s| ContextSwitch {
            ts: s.ts,
            prev: names.task(s.prev),
            prev_state: s.prev_state,
            next: names.task(s.next),
        })
        .collect();
    seq.context_switches(n, &switches)?;
    cpu.switches.clear();
    Ok(())
}

/// Thread names, and their descriptors sent so that trace_processor files
/// each thread under its process.
#[derive(Default)]
struct Names {
    names: FxHashMap<(u32, u32), String>,
}

impl Names {
    fn learn<W: Write>(
        &mut self,
        report: &Report,
        seq: &mut SequenceWriter<'_, W>,
        (pid, tid): (u32, u32),
    ) -> Result<(), Failure> {
        if let std::collections::hash_map::Entry::Vacant(entry) = self.names.entry((pid, tid)) {
            let meta = report.meta();
            let thread = seq.with_tracks(|t| thread_track(t, meta, pid, tid));
            seq.describe(thread)?;
            entry.insert(thread_name(meta, pid, tid));
        }
        Ok(())
    }

    fn task(&self, thread: Thread) -> Task<'_> {
        match thread {
            Some((pid, tid)) => Task {
                tid: tid as i32,
                name: self.names.get(&(pid, tid)).map_or("", String::as_str),
            },
            None => Task::IDLE,
        }
    }
}

/// `ENUM_SAMPLING_THREAD_STATE` of a thread leaving a CPU; `None` where the
/// report does not say (Unknown, or exports before nsys 2024.5).
fn end_state(state: Option<i64>) -> Option<EndState> {
    match state? {
        1 => Some(EndState::Runnable),
        2 | 7 => Some(EndState::Sleeping),
        3 => Some(EndState::Uninterruptible),
        4 => Some(EndState::Stopped),
        5 => Some(EndState::Dead),
        _ => None,
    }
}
