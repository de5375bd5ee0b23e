//! NVTX: push/pop ranges and marks on a track of their thread, start/end ranges
//! (which overlap freely and may end on another thread) on lanes of their process.
//! Each domain has its own tracks: `NVTX` for the default domain, `NVTX: <name>`.
//! Events without a message (the marks of nsys's Python sampling and
//! backtrace domains) are named by their domain.

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::filter::Filter;
use crate::nsys::nvtx::{NvtxKind, Payload};
use crate::nsys::{Metadata, Report, RowFilter};
use crate::perfetto::{Arg, ArgValue, SequenceWriter, Slice, SliceTrack, Stacking, TrackSpec};

use super::projection::RangeFeed;
use super::summary::Summary;
use super::threads::{process_track, thread_track};
use super::{trace_time, RowTicker};
use crate::error::Failure;

pub(super) const NVTX: &str = "nvtx";

pub(super) fn write<W: Write>(
    report: &Report,
    filter: &RowFilter,
    seq: &mut SequenceWriter<'_, W>,
    mut feed: Option<&mut RangeFeed>,
    summary: &mut Summary,
    rows: &mut RowTicker,
) -> Result<(), Failure> {
    let mut thread_tracks: FxHashMap<(u32, u32, i64), SliceTrack> = FxHashMap::default();
    let mut process_tracks: FxHashMap<(u32, i64), SliceTrack> = FxHashMap::default();
    let meta = report.meta();
    let by_name = filter
        .filter()
        .filter(|f| f.nvtx.is_some() || !f.nvtx_domains.is_empty());
    // Counted here, added to the summary once.
    let mut written = 0u64;
    let last = report.nvtx_events_to_last_time(filter, |e| -> Result<(), Failure> {
        rows.tick();
        if let Some(filter) = by_name {
            let text = e.text.as_ref().map(|t| t.as_str());
            if !keeps_nvtx(filter, meta, e.pid, e.domain, text) {
                summary.filter_out(NVTX);
                // Its projection is left out with it, and counted so.
                let start = trace_time(e.start);
                if let (Some(feed), Some(start)) = (feed.as_deref_mut(), start) {
                    if e.kind != NvtxKind::Mark && e.end_tid.is_none() {
                        let end = e.end.and_then(trace_time).map(|end| end.max(start));
                        feed.send_left_out(start, end, (e.pid, e.tid));
                    }
                }
                return Ok(());
            }
        }
        let Some(start) = trace_time(e.start) else {
            summary.skip_negative(NVTX);
            return Ok(());
        };
        let track_name = || match (e.domain, meta.nvtx_domains.get(&(e.pid, e.domain))) {
            (0, _) => "NVTX".to_owned(),
            (_, Some(name)) => format!("NVTX: {name}"),
            (id, None) => format!("NVTX: domain {id}"),
        };
        let track = match e.kind {
            NvtxKind::StartEnd => *process_tracks.entry((e.pid, e.domain)).or_insert_with(|| {
                let process = seq.with_tracks(|t| process_track(t, meta, e.pid));
                seq.slice_track(TrackSpec::new(Some(process), track_name()), Stacking::Nest)
            }),
            NvtxKind::PushPop | NvtxKind::Mark => *thread_tracks
                .entry((e.pid, e.tid, e.domain))
                .or_insert_with(|| {
                    let thread = seq.with_tracks(|t| thread_track(t, meta, e.pid, e.tid));
                    seq.slice_track(TrackSpec::new(Some(thread), track_name()), Stacking::Nest)
                }),
        };

        let category = e
            .category
            .map(|c| match meta.nvtx_categories.get(&(e.pid, e.domain, c)) {
                Some(name) => ArgValue::Str(name),
                None => ArgValue::Int(c),
            });
        let color = e.color.map(|argb| format!("#{:06x}", argb & 0xFF_FFFF));
        // Most ranges (PyTorch's) have no args: no allocation for them.
        let mut args = Vec::new();
        if let Some(c) = category {
            args.push(Arg::new("category", c));
        }
        if let Some(color) = &color {
            args.push(Arg::new("color", ArgValue::Str(color)));
        }
        match e.payload {
            Some(Payload::Int(v)) => args.push(Arg::new("payload", ArgValue::Int(v))),
            Some(Payload::Uint(v)) => args.push(Arg::new("payload", ArgValue::Uint(v))),
            Some(Payload::Double(v)) => args.push(Arg::new("payload", ArgValue::Double(v))),
            None => {}
        }
        if let Some(json) = &e.json {
            args.push(Arg::new("payload_json", ArgValue::Str(json)));
        }
        if let (NvtxKind::StartEnd, Some(end_tid)) = (e.kind, e.end_tid) {
            args.push(Arg::new("start_tid", ArgValue::Int(i64::from(e.tid))));
            args.push(Arg::new("end_tid", ArgValue::Int(i64::from(end_tid))));
        }
        let end = match (e.kind, e.end) {
            (NvtxKind::Mark, _) => Some(start),
            (_, Some(end)) => Some(summary.checked_end(start, end)),
            (_, None) => {
                summary.unterminated += 1;
                args.push(Arg::new("unterminated", ArgValue::Bool(true)));
                None
            }
        };
        let unnamed;
        let name = match e.text.as_ref().map(|t| t.as_str()) {
            Some(text) if !text.is_empty() => text,
            _ => {
                unnamed = domain_name(meta, e.pid, e.domain);
                &unnamed
            }
        };
        let slice = Slice::new(start, end, name, NVTX, &args);
        seq.slice(track, &slice)?;
        if let Some(feed) = feed.as_deref_mut() {
            feed.saw(start);
            if let Some(end) = end {
                feed.saw(end);
            }
            // NVIDIA projects only ranges that start and end on one thread.
            if e.kind != NvtxKind::Mark && e.end_tid.is_none() {
                feed.send_named(start, end, (e.pid, e.tid), name);
            }
        }
        written += 1;
        Ok(())
    })?;
    summary.count_n(NVTX, written);
    // Ranges still open when the capture stopped are projected up to the
    // last time of any NVTX row (domain and category rows too), as nsys does.
    if let (Some(feed), Some(last)) = (feed, last.and_then(trace_time)) {
        feed.saw(last);
    }
    Ok(())
}

/// What names an event without a message: its domain's name, `NVTX` for the
/// default domain, `NVTX domain <id>` for a domain the report does not name.
pub(super) fn domain_name(meta: &crate::nsys::Metadata, pid: u32, domain: i64) -> String {
    match (domain, meta.nvtx_domains.get(&(pid, domain))) {
        (_, Some(name)) if !name.is_empty() => name.clone(),
        (0, _) => "NVTX".to_owned(),
        (id, _) => format!("NVTX domain {id}"),
    }
}

/// Whether `filter` keeps an NVTX event of process `pid` and domain `domain`
/// (0: the default one) with message `text`; an event without a message is
/// named by its domain.
pub(super) fn keeps_nvtx(
    filter: &Filter,
    meta: &Metadata,
    pid: u32,
    domain: i64,
    text: Option<&str>,
) -> bool {
    let domain_label = match domain {
        0 => None,
        id => Some(meta.nvtx_domains.get(&(pid, id)).map_or("", String::as_str)),
    };
    match text {
        Some(text) if !text.is_empty() => filter.keeps_nvtx(text, domain_label),
        _ => filter.keeps_nvtx(&domain_name(meta, pid, domain), domain_label),
    }
}
