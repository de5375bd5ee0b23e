//! The page as one JSON object for programs (CI): `{"runs": [RUN, ...]}`,
//! and `"steps": STEPS` (the shape of `JobSteps::write_json`, compact) with
//! `--step`; times in nanoseconds on the export's clock, shares in percent.
//! The shape of a run is [`RunReport`]'s, field by field (docs/report.md shows it),
//! written by serde derives of the documents below (and of the model's
//! [`GpuTimeline`] and [`RuleFindings`], which have the JSON's shape): a
//! space after each `,` and `:`, shares with three decimals ([`Spaced`]).

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::Formatter;
use serde_json::value::{to_raw_value, RawValue};

use super::super::model::{GpuTimeline, GpuUse, IdleStretch, NamedTime, RuleFindings, RunReport};
use super::super::Page;
use super::percent;

pub(super) fn write(out: &mut dyn Write, page: &Page) -> io::Result<()> {
    // The steps' own document, compact as `--measure-only` writes it.
    let steps = page.steps.as_ref().map(|s| to_raw_value(&s.document()));
    let document = Document {
        runs: page.runs.iter().map(Run::of).collect(),
        steps: steps.transpose().map_err(io::Error::from)?,
    };
    let mut spaced = serde_json::Serializer::with_formatter(&mut *out, Spaced);
    document.serialize(&mut spaced).map_err(io::Error::from)?;
    writeln!(out)
}

/// The page: its runs, and the job's steps where it has them.
#[derive(Serialize)]
struct Document<'a> {
    runs: Vec<Run<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    steps: Option<Box<RawValue>>,
}

/// JSON with a space after each `,` and `:`, and every `f64` (the shares,
/// the only ones) with three decimals.
struct Spaced;

impl Formatter for Spaced {
    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        match first {
            true => Ok(()),
            false => w.write_all(b", "),
        }
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        match first {
            true => Ok(()),
            false => w.write_all(b", "),
        }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        write!(w, "{value:.3}")
    }
}

#[derive(Serialize)]
struct Run<'a> {
    path: &'a str,
    capture: Option<Span>,
    timeline: Timeline,
    gpus: Vec<Gpu<'a>>,
    kinds: Vec<Kind<'a>>,
    launches: Vec<Launches<'a>>,
    top_kernels: Vec<Named<'a>>,
    kernel_time: i128,
    nvtx: Nvtx<'a>,
    findings: &'a [RuleFindings],
    /// Only where some table could not be read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    incomplete: Vec<Incomplete<'a>>,
}

/// A table the run could not read whole: what it lacks, its rows, and
/// whether they were read without it.
#[derive(Serialize)]
struct Incomplete<'a> {
    table: &'a str,
    missing: &'a str,
    rows: u64,
    read_without: bool,
}

#[derive(Serialize)]
struct Span {
    start: i64,
    end: i64,
}

#[derive(Serialize)]
struct Timeline {
    bucket: i64,
    origin: i64,
}

#[derive(Serialize)]
struct Gpu<'a> {
    device: i64,
    name: Option<&'a str>,
    first_start: i64,
    last_end: i64,
    busy: i64,
    busy_share_of_span: f64,
    busy_share_of_capture: Option<f64>,
    host_bound: i64,
    waiting: i64,
    unattributed: i64,
    communication: i64,
    overlapped: i64,
    overlap_share: f64,
    largest_idle: Vec<Stretch<'a>>,
    timeline: &'a GpuTimeline,
}

#[derive(Serialize)]
struct Stretch<'a> {
    start: i64,
    end: i64,
    waiting_from: Option<i64>,
    pid: Option<u32>,
    threads: Vec<Thread<'a>>,
}

#[derive(Serialize)]
struct Thread<'a> {
    tid: u32,
    name: Option<&'a str>,
    call: Option<Overlap<'a>>,
    range: Option<Overlap<'a>>,
}

#[derive(Serialize)]
struct Overlap<'a> {
    name: &'a str,
    overlap: i64,
}

#[derive(Serialize)]
struct Kind<'a> {
    kind: &'a str,
    time: i128,
    count: u64,
    share: f64,
}

#[derive(Serialize)]
struct Launches<'a> {
    kind: &'a str,
    calls: u64,
    call_time: Quantiles,
    launched: u64,
    delay: Quantiles,
}

#[derive(Serialize)]
struct Quantiles {
    p50: i64,
    p90: i64,
    p99: i64,
}

#[derive(Serialize)]
struct Named<'a> {
    name: &'a str,
    time: i128,
    count: Option<u64>,
    share: f64,
}

#[derive(Serialize)]
struct Nvtx<'a> {
    skipped: Option<&'a str>,
    gpu_span: i128,
    top: Vec<Named<'a>>,
}

impl<'a> Run<'a> {
    fn of(r: &'a RunReport) -> Self {
        let capture_len = r.capture.map(|(s, e)| i128::from(e - s));
        let kind_total: i128 = r.kinds.iter().map(|k| k.time).sum();
        Run {
            path: &r.path,
            capture: r.capture.map(|(start, end)| Span { start, end }),
            timeline: Timeline {
                bucket: r.timeline.0,
                origin: r.timeline.1,
            },
            gpus: r.gpus.iter().map(|g| Gpu::of(g, capture_len)).collect(),
            kinds: r
                .kinds
                .iter()
                .map(|k| Kind {
                    kind: &k.kind,
                    time: k.time,
                    count: k.count,
                    share: percent(k.time, kind_total),
                })
                .collect(),
            launches: r
                .launches
                .iter()
                .map(|l| Launches {
                    kind: &l.kind,
                    calls: l.calls,
                    call_time: Quantiles::of(l.call_time),
                    launched: l.launched,
                    delay: Quantiles::of(l.delay),
                })
                .collect(),
            top_kernels: named(&r.top_kernels, r.kernel_time),
            kernel_time: r.kernel_time,
            nvtx: Nvtx {
                skipped: r.nvtx.skipped.as_deref(),
                gpu_span: r.nvtx.gpu_span,
                top: named(&r.nvtx.top, r.nvtx.gpu_span),
            },
            findings: &r.findings,
            incomplete: r
                .incomplete
                .iter()
                .map(|u| Incomplete {
                    table: &u.table,
                    missing: &u.missing,
                    rows: u.rows,
                    read_without: u.read_without,
                })
                .collect(),
        }
    }
}

impl<'a> Gpu<'a> {
    fn of(g: &'a GpuUse, capture_len: Option<i128>) -> Self {
        Gpu {
            device: g.device,
            name: g.name.as_deref(),
            first_start: g.first_start,
            last_end: g.last_end,
            busy: g.busy,
            busy_share_of_span: percent(g.busy.into(), g.span().into()),
            busy_share_of_capture: capture_len.map(|c| percent(g.busy.into(), c)),
            host_bound: g.host_bound,
            waiting: g.waiting,
            unattributed: g.unattributed,
            communication: g.communication,
            overlapped: g.overlapped,
            overlap_share: percent(g.overlapped.into(), g.communication.into()),
            largest_idle: g.largest_idle.iter().map(Stretch::of).collect(),
            timeline: &g.timeline,
        }
    }
}

impl<'a> Stretch<'a> {
    fn of(s: &'a IdleStretch) -> Self {
        let overlap = |p: &'a Option<(String, i64)>| {
            p.as_ref().map(|(name, overlap)| Overlap {
                name,
                overlap: *overlap,
            })
        };
        Stretch {
            start: s.start,
            end: s.end,
            waiting_from: s.waiting_from,
            pid: s.pid,
            threads: s
                .threads
                .iter()
                .map(|t| Thread {
                    tid: t.tid,
                    name: t.name.as_deref(),
                    call: overlap(&t.call),
                    range: overlap(&t.range),
                })
                .collect(),
        }
    }
}

impl Quantiles {
    fn of([p50, p90, p99]: [i64; 3]) -> Self {
        Quantiles { p50, p90, p99 }
    }
}

/// Named times, each with its share of `whole`.
fn named(list: &[NamedTime], whole: i128) -> Vec<Named<'_>> {
    list.iter()
        .map(|n| Named {
            name: &n.name,
            time: n.time,
            count: n.count,
            share: percent(n.time, whole),
        })
        .collect()
}
