//! The profiler itself, in a top-level "nsys" group: the time its profiling
//! cost each thread, as slices on an "Overhead: &lt;thread&gt;" track per thread
//! (`PROFILER_OVERHEAD` and `CUPTI_ACTIVITY_KIND_OVERHEAD`), and its
//! diagnostic messages as instants on "Diagnostics", with their severity.

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::nsys::overhead::{Diagnostic, NsysEvent, NsysLabels, Overhead, OverheadSource};
use crate::nsys::Metadata;
use crate::perfetto::{Arg, ArgValue, Slice, SliceTrack, Stacking, TrackId, TrackSpec};

use super::part_writer::{PartWriter, Written};
use super::threads::{process_name, thread_name};

/// `PROFILER_OVERHEAD` rows.
pub(super) const NSYS_OVERHEAD: &str = "nsys_overhead";
/// `CUPTI_ACTIVITY_KIND_OVERHEAD` rows.
pub(super) const CUPTI_OVERHEAD: &str = "cupti_overhead";
/// `DIAGNOSTIC_EVENT` rows.
pub(super) const DIAGNOSTIC: &str = "nsys_diagnostic";

/// The key of the "nsys" group among keyed tracks (GPU groups use bit 40).
const NSYS_GROUP: u64 = 1 << 41;

pub(super) fn write<W: Write>(part: PartWriter<'_, '_, '_, W>) -> Written {
    let (report, filter) = (part.report, part.filter);
    let mut writer = NsysWriter {
        meta: report.meta(),
        labels: report.nsys_labels()?,
        part,
        group: None,
        overheads: FxHashMap::default(),
        diagnostics: None,
    };
    report.for_each_nsys_event(filter, |event| writer.event(event))
}

struct NsysWriter<'a, 's, 'r, W: Write> {
    meta: &'a Metadata,
    part: PartWriter<'a, 's, 'r, W>,
    labels: NsysLabels,
    group: Option<TrackId>,
    /// The overhead track of each thread; `None` for rows of no thread.
    overheads: FxHashMap<Option<(u32, u32)>, SliceTrack>,
    diagnostics: Option<SliceTrack>,
}

impl<W: Write> NsysWriter<'_, '_, '_, W> {
    fn event(&mut self, event: NsysEvent) -> Written {
        let (start, category) = match &event {
            NsysEvent::Overhead(o) => (o.start, overhead_category(o.source)),
            NsysEvent::Diagnostic(d) => (d.ts, DIAGNOSTIC),
        };
        let Some(at) = self.part.row_at(start, category) else {
            return Ok(());
        };
        match event {
            NsysEvent::Overhead(o) => self.overhead(at, &o, category),
            NsysEvent::Diagnostic(d) => self.diagnostic(at, &d),
        }
    }

    fn group(&mut self) -> TrackId {
        *self.group.get_or_insert_with(|| {
            let spec = || {
                let mut spec = TrackSpec::new(None, "nsys");
                spec.description = Some(
                    "What Nsight Systems recorded about itself: the time its profiling cost \
                     each thread, and its diagnostic messages"
                        .to_owned(),
                );
                spec
            };
            self.part.seq.with_tracks(|t| t.group(NSYS_GROUP, spec))
        })
    }

    /// Writes overhead `o`, which starts at `start` and is of `category`.
    fn overhead(&mut self, start: u64, o: &Overhead, category: &'static str) -> Written {
        let track = match self.overheads.get(&o.thread) {
            Some(&track) => track,
            None => {
                let group = self.group();
                let (name, description) = overhead_track(self.meta, o.thread);
                let mut spec = TrackSpec::new(Some(group), name);
                spec.description = Some(description);
                let track = self.part.seq.slice_track(spec, Stacking::Nest);
                self.overheads.insert(o.thread, track);
                track
            }
        };
        let mut args = Vec::with_capacity(4);
        if let Some(kind) = o.overhead_type {
            args.push(match self.labels.overhead_types.get(&kind) {
                Some(label) => Arg::new("overhead_type", ArgValue::Str(label)),
                None => Arg::new("overhead_type", ArgValue::Int(kind)),
            });
        }
        for (name, value) in [
            ("return_value", o.return_value),
            ("correlation_id", o.correlation_id),
        ] {
            if let Some(v) = value {
                args.push(Arg::new(name, ArgValue::Int(v)));
            }
        }
        let name = match o.name {
            "" => "Profiler overhead",
            name => name,
        };
        let end = self.part.summary.checked_end(start, o.end);
        let slice = Slice::new(start, Some(end), name, category, &args);
        self.part.seq.slice(track, &slice)?;
        self.part.summary.count(category);
        Ok(())
    }

    /// Writes diagnostic `d`, given at `ts`.
    fn diagnostic(&mut self, ts: u64, d: &Diagnostic) -> Written {
        let track = match self.diagnostics {
            Some(track) => track,
            None => {
                let group = self.group();
                let mut spec = TrackSpec::new(Some(group), "Diagnostics");
                spec.description = Some(
                    "Messages nsys logged while profiling and analysing (DIAGNOSTIC_EVENT), \
                     at the times it gave them"
                        .to_owned(),
                );
                *self
                    .diagnostics
                    .insert(self.part.seq.slice_track(spec, Stacking::Nest))
            }
        };
        let labels = &self.labels;
        let mut args = Vec::with_capacity(4);
        for (name, value, labels) in [
            ("severity", d.severity, &labels.severities),
            ("source", d.source, &labels.sources),
            ("timestamp_type", d.timestamp_type, &labels.timestamp_types),
        ] {
            if let Some(v) = value {
                args.push(match labels.get(&v) {
                    Some(label) => Arg::new(name, ArgValue::Str(label)),
                    None => Arg::new(name, ArgValue::Int(v)),
                });
            }
        }
        if let Some(pid) = d.pid {
            args.push(Arg::new("pid", ArgValue::Int(i64::from(pid))));
        }
        let name = d.text.as_deref().filter(|t| !t.is_empty());
        let slice = Slice::new(
            ts,
            Some(ts),
            name.unwrap_or("Diagnostic"),
            DIAGNOSTIC,
            &args,
        );
        self.part.seq.slice(track, &slice)?;
        self.part.summary.count(DIAGNOSTIC);
        Ok(())
    }
}

/// The category of an overhead's slices.
fn overhead_category(source: OverheadSource) -> &'static str {
    match source {
        OverheadSource::Profiler => NSYS_OVERHEAD,
        OverheadSource::Cupti => CUPTI_OVERHEAD,
    }
}

/// The name and description of the overhead track of `thread`.
fn overhead_track(meta: &Metadata, thread: Option<(u32, u32)>) -> (String, String) {
    match thread {
        None | Some((0, _)) => (
            "Overhead".to_owned(),
            "Profiler overhead recorded without a thread".to_owned(),
        ),
        Some((pid, 0)) => {
            let process = process_name(meta, pid);
            (
                format!("Overhead: {process} (pid {pid})"),
                format!("Profiler overhead in {process} (pid {pid}), on no thread of it"),
            )
        }
        Some((pid, tid)) => {
            let thread = thread_name(meta, pid, tid);
            let process = process_name(meta, pid);
            (
                format!("Overhead: {thread} (tid {tid})"),
                format!(
                    "Profiler overhead in thread {thread} (tid {tid}) of {process} (pid {pid})"
                ),
            )
        }
    }
}
