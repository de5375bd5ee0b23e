//! Findings (see [`crate::analyze`]) in the trace: a top-level "Analysis"
//! group with a track per rule that found something, whose slices cover the
//! offending time (the call, the copy, the gap, the stretch of low use) and
//! name the events behind it in their args (`correlation_id`, or
//! `correlation_id_before`/`_after` around a gap), with the process and
//! thread or device and stream, so that the UI shows each in place.

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::analysis::analyze::{self, Finding, Findings, Order, Rule, Thresholds};
use crate::filter::Filter;
use crate::nsys::Report;
use crate::perfetto::{Arg, ArgValue, SequenceWriter, Slice, SliceTrack, Stacking, TrackSpec};

use super::summary::Summary;
use crate::error::Failure;

/// The category of finding slices.
pub(super) const FINDING: &str = "finding";

/// The key of the "Analysis" group among keyed tracks (GPU groups use bit
/// 40, the "nsys" group bit 41).
const ANALYSIS_GROUP: u64 = 1 << 42;

/// Runs every rule over `report` and writes what they find that `filter`
/// keeps on `seq`; those it leaves out are counted as filtered out.
pub(super) fn write<W: Write>(
    report: &Report,
    filter: Option<&Filter>,
    seq: &mut SequenceWriter<'_, W>,
    thresholds: &Thresholds,
    summary: &mut Summary,
) -> Result<(), Failure> {
    // A sequence takes slices in start order.
    let mut findings = Findings::new(Order::Time);
    analyze::run::<Failure>(report, &Rule::ALL, thresholds, &mut |f| match filter
        .is_none_or(|filter| keeps(filter, &f))
    {
        true => findings.push(f),
        false => {
            summary.filter_out(FINDING);
            Ok(())
        }
    })?;
    findings.finish();
    if findings.is_empty() {
        return Ok(());
    }
    let group = seq.with_tracks(|t| {
        t.group(ANALYSIS_GROUP, || {
            let mut spec = TrackSpec::new(None, "Analysis");
            spec.description = Some(format!(
                "What the rules of nsys analyze find (gaps over {}, chunks of {} \
                 below {}% GPU use): a track per rule",
                crate::filter::duration_text(thresholds.gap_ns),
                thresholds.util_chunks,
                thresholds.util_percent
            ));
            spec
        })
    });
    // A rule whose findings are of several processes has a track per process,
    // named with it: two "GPU gaps" tracks would not say whose each is.
    let mut processes: FxHashMap<Rule, Vec<Option<u32>>> = FxHashMap::default();
    for f in findings.iter()? {
        let f = f?;
        let seen = processes.entry(f.rule).or_default();
        if !seen.contains(&pid_of(&f)) {
            seen.push(pid_of(&f));
        }
    }
    let mut tracks: FxHashMap<(Rule, Option<u32>), SliceTrack> = FxHashMap::default();
    for f in findings.iter()? {
        let f = &f?;
        let Some(start) = summary.checked_start(f.start, FINDING) else {
            continue;
        };
        let by_process = processes[&f.rule].len() > 1;
        let key = (f.rule, pid_of(f).filter(|_| by_process));
        let track = *tracks.entry(key).or_insert_with(|| {
            let name = match key.1 {
                Some(pid) => match report.meta().processes.get(&pid) {
                    Some(process) => format!("{}: {process} ({pid})", f.rule.title()),
                    None => format!("{}: pid {pid}", f.rule.title()),
                },
                None => f.rule.title().to_owned(),
            };
            let mut spec = TrackSpec::new(Some(group), &name);
            spec.description = Some(format!("nsys analyze rule {}", f.rule.name()));
            // Findings of several threads or devices may overlap: each in a lane.
            seq.slice_track(spec, Stacking::Exclusive)
        });
        let end = summary.checked_end(start, f.start.saturating_add(f.duration));
        let name = slice_name(f);
        let args = args(f);
        seq.slice(track, &Slice::new(start, Some(end), &name, FINDING, &args))?;
        summary.count(FINDING);
    }
    Ok(())
}

/// Whether `filter` keeps finding `f`, as it keeps events: one that
/// overlaps its time window (the trace clips it to the window, its recorded
/// start or end in `clipped_start` or `clipped_end`), of its processes and
/// GPUs (or of none).
fn keeps(filter: &Filter, f: &Finding) -> bool {
    let end = f.start.saturating_add(f.duration);
    let window = filter.time;
    let in_time =
        window.start.is_none_or(|from| end >= from) && window.end.is_none_or(|to| f.start <= to);
    let [(_, pid), _, (_, device), ..] = f.place.ids();
    let of = |wanted: &[i64], id: Option<i64>| {
        wanted.is_empty() || id.is_none_or(|id| wanted.contains(&id))
    };
    let pids: Vec<i64> = filter.pids.iter().map(|&p| i64::from(p)).collect();
    in_time && of(&pids, pid) && of(&filter.gpus, device)
}

/// The process a finding is of, where known.
fn pid_of(f: &Finding) -> Option<u32> {
    let [(_, pid), ..] = f.place.ids();
    pid.and_then(|pid| u32::try_from(pid).ok())
}

/// The API call behind it, or what the finding is.
fn slice_name(f: &Finding) -> String {
    match (f.rule, &f.api, f.in_use_percent) {
        (Rule::GpuTimeUtil, _, Some(percent)) => format!("GPU in use {percent:.1}%"),
        (Rule::GpuGaps, _, _) => "GPU idle".to_owned(),
        (_, Some(api), _) => api.clone(),
        _ => f.rule.title().to_owned(),
    }
}

fn args(f: &Finding) -> Vec<Arg<'_>> {
    let mut args = vec![Arg::new("rule", ArgValue::Str(f.rule.name()))];
    let int = |name, v: Option<i64>| v.map(|v| Arg::new(name, ArgValue::Int(v)));
    let text = |name, v: Option<&'static str>| v.map(|v| Arg::new(name, ArgValue::Str(v)));
    for (name, id) in f.place.ids() {
        args.extend(int(name, id));
    }
    if let Some(api) = &f.api {
        args.push(Arg::new("api", ArgValue::Str(api)));
    }
    match f.gap_between {
        Some([before, after]) => {
            args.extend(int("correlation_id_before", before));
            args.extend(int("correlation_id_after", after));
        }
        None => args.extend(int("correlation_id", f.correlation_ids.first().copied())),
    }
    args.extend(int("bytes", f.bytes));
    args.extend(text("src_kind", f.src_kind));
    args.extend(text("dst_kind", f.dst_kind));
    args.extend(text("memory_kind", f.memory_kind));
    if let Some(percent) = f.in_use_percent {
        args.push(Arg::new("in_use_percent", ArgValue::Double(percent)));
    }
    args
}
