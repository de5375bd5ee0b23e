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
    /// Synchronizations whose GPU the report does not establish: CUPTI
    /// records none for them, and their CUDA context has no other GPU work
    /// or recorded device in a report of several GPUs. They are on the GPU
    /// their rows name (`deviceId`), which exports write as 0.
    pub syncs_on_unknown_device: u64,
    /// CPU samples written, each with its call stack.
    pub cpu_samples: u64,
    /// Scheduling events (a thread in or out of a CPU) written as context switches.
    pub sched_events: u64,
    /// Values written on counter tracks (GPU metrics, CUDA memory).
    pub counter_values: u64,
    /// Scheduling events on a CPU number a trace cannot hold (below 0 or
    /// from [`MAX_CPUS`](crate::perfetto::MAX_CPUS): a damaged export), not
    /// written: trace_processor refuses a whole trace for one.
    pub sched_on_bad_cpu: u64,
    /// CPU samples naming a CPU number a trace cannot hold: written
    /// without it.
    pub samples_on_bad_cpu: u64,
    /// Event tables left out whole: they lack columns their rows need.
    pub unreadable: Vec<Unreadable>,
    /// The export has no event table at all: nsys recorded nothing to
    /// convert, and the trace is empty.
    pub no_event_tables: bool,
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
    /// Flows of JSON output that leave or enter a slice at the very time a
    /// slice nested in it starts: JSON readers bind them to the nested one.
    pub json_flows_on_nested: u64,
    /// Events the filter left out, by category (by table for tables whose
    /// rows are not slices).
    pub filtered_out: BTreeMap<String, u64>,
    /// Filters that match no event of the report (a process, GPU or NVTX
    /// domain it has no events of, a time window outside its events), and
    /// parts that cannot be made of the parts chosen: a line each, saying
    /// what the report holds instead.
    pub kept_nothing: Vec<String>,
}

impl Summary {
    pub(crate) fn count(&mut self, category: &'static str) {
        *self.slices.entry(category).or_default() += 1;
    }

    /// `n` slices of `category` at once, for loops that count their own
    /// (a lookup by name per slice was 1% of an NVTX-heavy conversion); none
    /// adds no category.
    pub(crate) fn count_n(&mut self, category: &'static str, n: u64) {
        if n > 0 {
            *self.slices.entry(category).or_default() += n;
        }
    }

    /// Adds the counts of `other`, a summary of another part of the report.
    pub(crate) fn merge(&mut self, other: Summary) {
        // Every field named once, under how it merges: the pattern names
        // them all, so a new field cannot be forgotten here.
        macro_rules! merge_fields {
            (
                add: $($count:ident),+;
                add_by_key: $($by_key:ident),+;
                extend: $($list:ident),+;
                or: $($flag:ident),+;
            ) => {
                let Summary { $($count,)+ $($by_key,)+ $($list,)+ $($flag,)+ } = other;
                $(self.$count += $count;)+
                $(add_by_key(&mut self.$by_key, $by_key);)+
                $(self.$list.extend($list);)+
                $(self.$flag |= $flag;)+
            };
        }
        merge_fields! {
            add: flows, inverted, unterminated, gpu_ops_without_launch, gpu_ops_unknown_process,
                launches_unmatched, syncs_on_unknown_device, cpu_samples, sched_events,
                counter_values, sched_on_bad_cpu, samples_on_bad_cpu, event_flows,
                event_waits_unrecorded, event_waits_before_record, event_records_without_call,
                json_flows_on_nested;
            add_by_key: slices, before_time_zero, filtered_out;
            extend: unreadable, unconverted, kept_nothing;
            or: no_event_tables;
        }
    }

    /// Whether the trace holds no event at all: no slice, counter value,
    /// CPU sample or context switch.
    pub(crate) fn holds_nothing(&self) -> bool {
        self.slices.values().all(|n| *n == 0)
            && self.counter_values == 0
            && self.cpu_samples == 0
            && self.sched_events == 0
    }

    /// An event's start as a trace time, or `None` for a start before time
    /// 0 (Perfetto has no negative times): the event is counted here, under
    /// `category`, and left out.
    pub(crate) fn checked_start(&mut self, start: i64, category: &'static str) -> Option<u64> {
        let at = super::trace_time(start);
        if at.is_none() {
            self.skip_negative(category);
        }
        at
    }

    /// An event's end as a trace time. An end before the start is counted
    /// here, and the event becomes an instant at its start.
    pub(crate) fn checked_end(&mut self, start: u64, end: i64) -> u64 {
        match u64::try_from(end) {
            Ok(end) if end >= start => end,
            _ => {
                self.inverted += 1;
                start
            }
        }
    }

    /// Counts an event the filter left out.
    pub(crate) fn filter_out(&mut self, category: &str) {
        match self.filtered_out.get_mut(category) {
            Some(n) => *n += 1,
            None => {
                self.filtered_out.insert(category.to_owned(), 1);
            }
        }
    }

    pub(crate) fn skip_negative(&mut self, category: &'static str) {
        *self.before_time_zero.entry(category).or_default() += 1;
    }

    /// Lines that explain events that are not in the trace exactly as recorded.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.no_event_tables {
            w.push(
                "the export has no event tables (nsys recorded no events): the trace is empty"
                    .to_owned(),
            );
        }
        w.extend(self.kept_nothing.iter().cloned());
        let negative: u64 = self.before_time_zero.values().sum();
        if negative > 0 {
            w.push(format!(
                "{} before time 0 and {} not in the trace (Perfetto has no negative times): {}",
                count(negative, "event starts", "events start"),
                are(negative),
                by_category(&self.before_time_zero)
            ));
        }
        w.extend(of_count(
            self.inverted,
            "1 event ends before it starts; written as an instant at its start",
            |n| format!("{n} events end before they start; written as instants at their start"),
        ));
        w.extend(counted(
            self.unterminated,
            ("NVTX range never", "NVTX ranges never"),
            "ended; closed at the end of the trace (arg unterminated = true)",
        ));
        let cpus = format!(
            "outside 0..{} (a damaged export?)",
            crate::perfetto::MAX_CPUS - 1
        );
        w.extend(counted(
            self.sched_on_bad_cpu,
            (
                "scheduling event names a CPU",
                "scheduling events name a CPU",
            ),
            &format!("{cpus}: not in the trace, which no viewer could load with it"),
        ));
        w.extend(counted(
            self.samples_on_bad_cpu,
            ("CPU sample names a CPU", "CPU samples name a CPU"),
            &format!("{cpus}: written without their CPU"),
        ));
        for u in &self.unreadable {
            w.push(u.warning("not in the trace"));
        }
        for u in &self.unconverted {
            w.push(format!(
                "{} is not converted: its {} not in the trace",
                u.table,
                count(u.rows, "row is", "rows are")
            ));
        }
        w.extend(unrecorded_waits_warning(self.event_waits_unrecorded));
        w.extend(counted(
            self.event_waits_before_record,
            ("synchronization starts", "synchronizations start"),
            "before the call that recorded the CUDA event it waits on; no flow to it",
        ));
        w.extend(counted(
            self.event_records_without_call,
            ("CUDA event record has", "CUDA event records have"),
            "no recording call in the trace (CUPTI_ACTIVITY_KIND_CUDA_EVENT): the event and stream are not shown",
        ));
        w.extend(counted(
            self.gpu_ops_unknown_process,
            ("GPU operation has", "GPU operations have"),
            "no process in this export (no globalPid column); not linked to launches",
        ));
        w.extend(of_count(
            self.launches_unmatched,
            "1 GPU operation starts before the call that launched it; not linked",
            |n| format!("{n} GPU operations start before the call that launched them; not linked"),
        ));
        w.extend(counted(
            self.syncs_on_unknown_device,
            ("synchronization is", "synchronizations are"),
            "of a CUDA context whose GPU the report does not establish (synchronizations record none, and the context has no other GPU work): shown on the GPU the export names (deviceId), which may not be theirs",
        ));
        if self.json_flows_on_nested > 0 {
            w.push(format!(
                "{} at the very time a slice nested in it starts: JSON binds a flow to the innermost slice open then, so {} the nested slice",
                count(self.json_flows_on_nested, "flow leaves or enters a slice", "flows leave or enter slices"),
                if self.json_flows_on_nested == 1 { "it shows on" } else { "they show on" }
            ));
        }
        w
    }
}

/// Adds the counts of `more` to `total`, key by key.
fn add_by_key<K: Ord>(total: &mut BTreeMap<K, u64>, more: BTreeMap<K, u64>) {
    for (key, n) in more {
        *total.entry(key).or_default() += n;
    }
}

/// The line for `n` synchronizations that waited on a CUDA event whose
/// record is not in the report: one line per run, so a merge says it once
/// with the total of its reports rather than once per report.
fn unrecorded_waits_warning(n: u64) -> Option<String> {
    counted(
        n,
        ("synchronization waits", "synchronizations wait"),
        "on a CUDA event recorded before the capture started (start nsys earlier, or with --capture-range, to see them); no flow to them",
    )
}

/// `n` and the words that go with it: "1 flow", "2 flows".
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "`n` `one` `rest`" or "`n` `many` `rest`", of more than none.
fn counted(n: u64, (one, many): (&str, &str), rest: &str) -> Option<String> {
    (n > 0).then(|| format!("{} {rest}", count(n, one, many)))
}

/// Counts by category: "category n, category n".
fn by_category<C: fmt::Display>(counts: &BTreeMap<C, u64>) -> String {
    let each: Vec<String> = counts.iter().map(|(c, n)| format!("{c} {n}")).collect();
    each.join(", ")
}

/// What to say of `n` things: nothing of none, `one` of one, `many(n)` of more.
fn of_count(n: u64, one: &str, many: impl FnOnce(u64) -> String) -> Option<String> {
    match n {
        0 => None,
        1 => Some(one.to_owned()),
        n => Some(many(n)),
    }
}

fn are(n: u64) -> &'static str {
    if n == 1 {
        "is"
    } else {
        "are"
    }
}

impl fmt::Display for Summary {
    /// What the trace holds: slices by category, then flows and the other
    /// kinds of data, each left out when there is none of it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut clauses = Vec::new();
        if !self.slices.is_empty() {
            clauses.push(by_category(&self.slices));
        }
        let others = [
            (self.flows, "flow", "flows"),
            (self.event_flows, "event flow", "event flows"),
            (self.cpu_samples, "CPU sample", "CPU samples"),
            (self.sched_events, "scheduling event", "scheduling events"),
            (self.counter_values, "counter value", "counter values"),
        ];
        for (n, one, many) in others {
            if n > 0 {
                clauses.push(count(n, one, many));
            }
        }
        if clauses.is_empty() {
            write!(f, "no events")?;
        } else {
            write!(f, "{}", clauses.join("; "))?;
        }
        if self.gpu_ops_without_launch > 0 {
            // With filters, a launch may be in the report but left out (a
            // call before the time window): all that is sure is the trace.
            let place = match self.filtered_out.is_empty() {
                true => "report",
                false => "trace",
            };
            write!(
                f,
                " ({} no launch in the {place})",
                count(
                    self.gpu_ops_without_launch,
                    "GPU operation has",
                    "GPU operations have"
                )
            )?;
        }
        if !self.filtered_out.is_empty() {
            write!(f, "; filtered out: {}", by_category(&self.filtered_out))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_with_their_nouns() {
        let mut one = Summary::default();
        one.count("cuda_api");
        one.flows = 1;
        one.cpu_samples = 1;
        one.gpu_ops_without_launch = 1;
        assert_eq!(
            one.to_string(),
            "cuda_api 1; 1 flow; 1 CPU sample (1 GPU operation has no launch in the report)"
        );
        one.inverted = 1;
        one.unterminated = 1;
        one.launches_unmatched = 1;
        one.before_time_zero.insert("nvtx", 1);
        assert_eq!(
            one.warnings(),
            [
                "1 event starts before time 0 and is not in the trace (Perfetto has no negative times): nvtx 1",
                "1 event ends before it starts; written as an instant at its start",
                "1 NVTX range never ended; closed at the end of the trace (arg unterminated = true)",
                "1 GPU operation starts before the call that launched it; not linked",
            ]
        );
        let mut two = one.clone();
        two.merge(one);
        assert_eq!(
            two.to_string(),
            "cuda_api 2; 2 flows; 2 CPU samples (2 GPU operations have no launch in the report)"
        );
        two.filtered_out.insert("cuda_api".into(), 3);
        assert!(two
            .to_string()
            .contains("(2 GPU operations have no launch in the trace)"));
        assert_eq!(
            two.warnings()[1],
            "2 events end before they start; written as instants at their start"
        );
    }

    #[test]
    fn a_trace_without_slices_says_what_it_has() {
        let samples_only = Summary {
            cpu_samples: 5094,
            sched_events: 11166,
            ..Summary::default()
        };
        assert_eq!(
            samples_only.to_string(),
            "5094 CPU samples; 11166 scheduling events"
        );
        assert_eq!(Summary::default().to_string(), "no events");
        let empty = Summary {
            no_event_tables: true,
            ..Summary::default()
        };
        assert!(empty.warnings()[0].contains("no event tables"));
    }
}
