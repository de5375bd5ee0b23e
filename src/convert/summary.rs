//! What a conversion wrote, and what it could not.

use std::collections::BTreeMap;
use std::fmt;

use crate::nsys::{Unconverted, Unreadable};

/// Counts of one conversion, by category (`cuda_api`, `cuda_kernel`, `nvtx`, ...).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Slices written, by category.
    pub slices: BTreeMap<&'static str, u64>,
    /// Flows from a launching API call to the GPU operation it launched.
    pub flows: u64,
    /// Events not written because they start before time 0 (Perfetto cannot
    /// represent negative timestamps), by category.
    pub before_time_zero: BTreeMap<&'static str, u64>,
    /// Events whose end precedes their start, written as instants at their start.
    pub inverted: u64,
    /// NVTX ranges still open when the capture stopped, closed at the end of the trace.
    pub unterminated: u64,
    /// GPU operations whose launching call is not in the report (cropped captures).
    pub gpu_ops_without_launch: u64,
    /// GPU operations of an unknown process (exports without globalPid): not linked.
    pub gpu_ops_unknown_process: u64,
    /// Launches whose GPU operations start before the call itself: not linked.
    pub launches_unmatched: u64,
    /// CPU samples written, each with its call stack.
    pub cpu_samples: u64,
    /// Scheduling events (a thread in or out of a CPU) written as context switches.
    pub sched_events: u64,
    /// Values written on counter tracks (GPU metrics, CUDA memory).
    pub counter_values: u64,
    /// Event tables left out whole: they lack columns their rows need.
    pub unreadable: Vec<Unreadable>,
    /// Event tables with rows that the converter does not read.
    pub unconverted: Vec<Unconverted>,
    /// Flows from a `cudaEventRecord` call to a synchronization that waited
    /// on that record.
    pub event_flows: u64,
    /// Synchronizations that waited on a CUDA event whose record, or its
    /// call, is not in the trace: no flow.
    pub event_waits_unrecorded: u64,
    /// Synchronizations that start before the call that recorded the event
    /// they waited on: no flow.
    pub event_waits_before_record: u64,
    /// CUDA event records whose recording call is not in the trace.
    pub event_records_without_call: u64,
}

impl Summary {
    pub(crate) fn count(&mut self, category: &'static str) {
        *self.slices.entry(category).or_default() += 1;
    }

    /// Adds the counts of `other`, a summary of another part of the report.
    pub(crate) fn merge(&mut self, other: Summary) {
        // Every field by name: a new field cannot be forgotten here.
        let Summary {
            slices,
            flows,
            before_time_zero,
            inverted,
            unterminated,
            gpu_ops_without_launch,
            gpu_ops_unknown_process,
            launches_unmatched,
            cpu_samples,
            sched_events,
            counter_values,
            unreadable,
            unconverted,
            event_flows,
            event_waits_unrecorded,
            event_waits_before_record,
            event_records_without_call,
        } = other;
        for (category, n) in slices {
            *self.slices.entry(category).or_default() += n;
        }
        for (category, n) in before_time_zero {
            *self.before_time_zero.entry(category).or_default() += n;
        }
        self.flows += flows;
        self.inverted += inverted;
        self.unterminated += unterminated;
        self.gpu_ops_without_launch += gpu_ops_without_launch;
        self.gpu_ops_unknown_process += gpu_ops_unknown_process;
        self.launches_unmatched += launches_unmatched;
        self.cpu_samples += cpu_samples;
        self.sched_events += sched_events;
        self.counter_values += counter_values;
        self.unreadable.extend(unreadable);
        self.unconverted.extend(unconverted);
        self.event_flows += event_flows;
        self.event_waits_unrecorded += event_waits_unrecorded;
        self.event_waits_before_record += event_waits_before_record;
        self.event_records_without_call += event_records_without_call;
    }

    /// An event's end as a trace time. An end before the start is counted
    /// here, and the event becomes an instant at its start.
    pub(crate) fn end_time(&mut self, start: u64, end: i64) -> u64 {
        match u64::try_from(end) {
            Ok(end) if end >= start => end,
            _ => {
                self.inverted += 1;
                start
            }
        }
    }

    pub(crate) fn skip_negative(&mut self, category: &'static str) {
        *self.before_time_zero.entry(category).or_default() += 1;
    }

    /// Lines that explain events that are not in the trace exactly as recorded.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        let negative: u64 = self.before_time_zero.values().sum();
        if negative > 0 {
            let by: Vec<String> = self
                .before_time_zero
                .iter()
                .map(|(c, n)| format!("{c} {n}"))
                .collect();
            w.push(format!(
                "{negative} events start before time 0 and are not in the trace (Perfetto has no negative times): {}",
                by.join(", ")
            ));
        }
        if self.inverted > 0 {
            w.push(format!(
                "{} events end before they start; written as instants at their start",
                self.inverted
            ));
        }
        if self.unterminated > 0 {
            w.push(format!(
                "{} NVTX ranges never ended; closed at the end of the trace (arg unterminated = true)",
                self.unterminated
            ));
        }
        for u in &self.unreadable {
            w.push(format!(
                "{} has no {} column: its {} rows are not in the trace",
                u.table, u.missing, u.rows
            ));
        }
        for u in &self.unconverted {
            w.push(format!(
                "{} is not converted: its {} rows are not in the trace",
                u.table, u.rows
            ));
        }
        if self.event_waits_unrecorded > 0 {
            w.push(format!(
                "{} synchronizations wait on a CUDA event whose record or recording call is not in the report (CUPTI_ACTIVITY_KIND_CUDA_EVENT, CUDA API calls); no flow to them",
                self.event_waits_unrecorded
            ));
        }
        if self.event_waits_before_record > 0 {
            w.push(format!(
                "{} synchronizations start before the call that recorded the CUDA event they wait on; no flow to them",
                self.event_waits_before_record
            ));
        }
        if self.event_records_without_call > 0 {
            w.push(format!(
                "{} CUDA event records (CUPTI_ACTIVITY_KIND_CUDA_EVENT) have no recording call in the trace: their event and stream are not shown",
                self.event_records_without_call
            ));
        }
        if self.gpu_ops_unknown_process > 0 {
            w.push(format!(
                "{} GPU operations have no process in this export (no globalPid column); not linked to launches",
                self.gpu_ops_unknown_process
            ));
        }
        if self.launches_unmatched > 0 {
            w.push(format!(
                "{} GPU operations start before the call that launched them; not linked",
                self.launches_unmatched
            ));
        }
        w
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .slices
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        if parts.is_empty() {
            write!(f, "no events")?;
        } else {
            write!(f, "{}", parts.join(", "))?;
        }
        write!(f, "; {} flows", self.flows)?;
        if self.event_flows > 0 {
            write!(f, " and {} event flows", self.event_flows)?;
        }
        if self.cpu_samples > 0 {
            write!(f, "; {} CPU samples", self.cpu_samples)?;
        }
        if self.sched_events > 0 {
            write!(f, "; {} scheduling events", self.sched_events)?;
        }
        if self.counter_values > 0 {
            write!(f, "; {} counter values", self.counter_values)?;
        }
        if self.gpu_ops_without_launch > 0 {
            write!(
                f,
                " ({} GPU ops have no launch in the report)",
                self.gpu_ops_without_launch
            )?;
        }
        Ok(())
    }
}
