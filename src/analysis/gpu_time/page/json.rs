//! The page as one JSON object for programs (CI): `{"runs": [RUN, ...]}`,
//! and `"steps": STEPS` (the shape of `JobSteps::write_json`, compact) with `--step`;
//! times in nanoseconds on the export's clock, shares in percent. The shape
//! of a run is [`RunReport`]'s, field by field (README shows it).

use std::io::{self, Write};

use crate::render::escape::json_string;

use super::super::model::{IdleStretch, NamedTime, RunReport};
use super::super::Page;
use super::percent;

pub(super) fn write(out: &mut dyn Write, page: &Page) -> io::Result<()> {
    let runs: Vec<String> = page.runs.iter().map(run).collect();
    write!(out, "{{\"runs\": [{}]", runs.join(", "))?;
    if let Some(steps) = &page.steps {
        write!(out, ", \"steps\": ")?;
        steps.write_json_object(out)?;
    }
    writeln!(out, "}}")
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("null".to_owned(), |v| v.to_string())
}

fn opt_str(v: Option<&str>) -> String {
    v.map_or("null".to_owned(), json_string)
}

fn share(part: i128, whole: i128) -> String {
    format!("{:.3}", percent(part, whole))
}

fn list<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    format!("[{}]", items.iter().map(f).collect::<Vec<_>>().join(", "))
}

fn named(n: &NamedTime, whole: i128) -> String {
    format!(
        "{{\"name\": {}, \"time\": {}, \"count\": {}, \"share\": {}}}",
        json_string(&n.name),
        n.time,
        opt(n.count),
        share(n.time, whole)
    )
}

fn stretch(s: &IdleStretch) -> String {
    let threads = list(&s.threads, |t| {
        let part = |p: &Option<(String, i64)>| match p {
            Some((name, overlap)) => {
                format!(
                    "{{\"name\": {}, \"overlap\": {overlap}}}",
                    json_string(name)
                )
            }
            None => "null".to_owned(),
        };
        format!(
            "{{\"tid\": {}, \"name\": {}, \"call\": {}, \"range\": {}}}",
            t.tid,
            opt_str(t.name.as_deref()),
            part(&t.call),
            part(&t.range)
        )
    });
    format!(
        "{{\"start\": {}, \"end\": {}, \"waiting_from\": {}, \"pid\": {}, \"threads\": {threads}}}",
        s.start,
        s.end,
        opt(s.waiting_from),
        opt(s.pid)
    )
}

fn run(r: &RunReport) -> String {
    let capture = match r.capture {
        Some((start, end)) => format!("{{\"start\": {start}, \"end\": {end}}}"),
        None => "null".to_owned(),
    };
    let capture_len = r.capture.map(|(s, e)| i128::from(e - s));
    let gpus = list(&r.gpus, |g| {
        let span = i128::from(g.span());
        format!(
            concat!(
                "{{\"device\": {}, \"name\": {}, \"first_start\": {}, \"last_end\": {}, ",
                "\"busy\": {}, \"busy_share_of_span\": {}, \"busy_share_of_capture\": {}, ",
                "\"host_bound\": {}, \"waiting\": {}, \"unattributed\": {}, ",
                "\"communication\": {}, \"overlapped\": {}, \"overlap_share\": {}, ",
                "\"largest_idle\": {}, \"timeline\": {{\"busy\": {}, \"waiting\": {}}}}}"
            ),
            g.device,
            opt_str(g.name.as_deref()),
            g.first_start,
            g.last_end,
            g.busy,
            share(g.busy.into(), span),
            opt(capture_len.map(|c| share(g.busy.into(), c))),
            g.host_bound,
            g.waiting,
            g.unattributed,
            g.communication,
            g.overlapped,
            share(g.overlapped.into(), g.communication.into()),
            list(&g.largest_idle, stretch),
            list(&g.busy_over_time, i64::to_string),
            list(&g.waiting_over_time, i64::to_string),
        )
    });
    let kind_total: i128 = r.kinds.iter().map(|k| k.time).sum();
    let kinds = list(&r.kinds, |k| {
        format!(
            "{{\"kind\": {}, \"time\": {}, \"count\": {}, \"share\": {}}}",
            json_string(&k.kind),
            k.time,
            k.count,
            share(k.time, kind_total)
        )
    });
    let quantiles = |q: &[i64; 3]| {
        format!(
            "{{\"p50\": {}, \"p90\": {}, \"p99\": {}}}",
            q[0], q[1], q[2]
        )
    };
    let launches = list(&r.launches, |l| {
        format!(
            "{{\"kind\": {}, \"calls\": {}, \"call_time\": {}, \"launched\": {}, \"delay\": {}}}",
            json_string(&l.kind),
            l.calls,
            quantiles(&l.call_time),
            l.launched,
            quantiles(&l.delay)
        )
    });
    let kernels = list(&r.top_kernels, |k| named(k, r.kernel_time));
    let nvtx = format!(
        "{{\"skipped\": {}, \"gpu_span\": {}, \"top\": {}}}",
        opt_str(r.nvtx.skipped.as_deref()),
        r.nvtx.gpu_span,
        list(&r.nvtx.top, |n| named(n, r.nvtx.gpu_span))
    );
    let findings = list(&r.findings, |f| {
        format!(
            "{{\"rule\": {}, \"title\": {}, \"count\": {}, \"skipped\": {}, \"top\": {}}}",
            json_string(&f.rule),
            json_string(&f.title),
            f.count,
            opt_str(f.skipped.as_deref()),
            list(&f.top, |t| json_string(t))
        )
    });
    format!(
        concat!(
            "{{\"path\": {}, \"capture\": {}, \"timeline\": {{\"bucket\": {}, \"origin\": {}}}, ",
            "\"gpus\": {}, \"kinds\": {}, \"launches\": {}, \"top_kernels\": {}, ",
            "\"kernel_time\": {}, \"nvtx\": {}, \"findings\": {}}}"
        ),
        json_string(&r.path),
        capture,
        r.timeline.0,
        r.timeline.1,
        gpus,
        kinds,
        launches,
        kernels,
        r.kernel_time,
        nvtx,
        findings
    )
}
