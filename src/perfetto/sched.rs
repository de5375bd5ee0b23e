//! CPU scheduling as the kernel's ftrace reports it: context switches per
//! CPU, from which trace_processor builds its `sched` and `thread_state`
//! tables and the UI its CPU tracks.

use super::proto::{ftrace_event, FtraceEvent, SchedSwitchFtraceEvent};

/// A task on a CPU. Tid 0 is the idle task: the CPU runs nothing we know of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task<'a> {
    /// Its thread id.
    pub tid: i32,
    /// Its name.
    pub name: &'a str,
}

impl Task<'_> {
    /// The idle task.
    pub const IDLE: Task<'static> = Task {
        tid: 0,
        name: "swapper",
    };
}

/// The state a task leaves the CPU in, until it runs again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndState {
    /// Preempted: ready to run.
    Runnable,
    /// Waiting for something, interruptibly.
    Sleeping,
    /// Waiting for something (I/O, say), uninterruptibly.
    Uninterruptible,
    /// Stopped (by a signal or a debugger).
    Stopped,
    /// Ended.
    Dead,
}

impl EndState {
    /// The kernel's task state bits, as `sched_switch` reports them.
    fn bits(self) -> i64 {
        match self {
            EndState::Runnable => 0,
            EndState::Sleeping => 1,
            EndState::Uninterruptible => 2,
            EndState::Stopped => 4,
            EndState::Dead => 16,
        }
    }
}

/// `prev` leaves a CPU at `ts` and `next` starts running on it.
#[derive(Clone, Copy, Debug)]
pub struct ContextSwitch<'a> {
    /// When (trace time).
    pub ts: u64,
    /// The task that leaves the CPU.
    pub prev: Task<'a>,
    /// `None` when the report does not say.
    pub prev_state: Option<EndState>,
    /// The task that runs next.
    pub next: Task<'a>,
}

impl ContextSwitch<'_> {
    /// The ftrace event, `time_offset` later, with tids other than the idle
    /// task's `tid_offset` higher.
    pub(super) fn to_ftrace(self, time_offset: u64, tid_offset: u32) -> FtraceEvent {
        let tid = |task: Task| match task.tid {
            0 => 0,
            tid => tid + tid_offset as i32,
        };
        FtraceEvent {
            timestamp: Some(self.ts + time_offset),
            pid: Some(tid(self.prev) as u32),
            event: Some(ftrace_event::Event::SchedSwitch(SchedSwitchFtraceEvent {
                prev_comm: Some(self.prev.name.to_owned()),
                prev_pid: Some(tid(self.prev)),
                prev_prio: None,
                prev_state: self.prev_state.map(EndState::bits),
                next_comm: Some(self.next.name.to_owned()),
                next_pid: Some(tid(self.next)),
                next_prio: None,
            })),
        }
    }
}
