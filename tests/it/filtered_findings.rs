//! `convert --findings` with filters: the findings are those `analyze`
//! prints (its JSON), kept as the filters keep events: those that overlap
//! the time window, of the processes and GPUs named (or of none). Those
//! left out are counted as filtered out; those that cross an edge of the
//! window are clipped there, the time they were found with in
//! `clipped_start`/`clipped_end`.

use std::path::Path;

use nsys2perfetto::analyze::Thresholds;
use nsys2perfetto::{Filter, Options, TimeWindow};
use regex::Regex;

use crate::support::checker::Value;
use crate::support::convert::convert;
use crate::support::fixtures::fixture;

/// A finding as `analyze --format json` prints it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Found {
    rule: String,
    start: i64,
    end: i64,
    pid: Option<i64>,
    device: Option<i64>,
}

/// Every finding of every rule in `export`, from the JSON of the CLI's
/// `analyze` (all rows).
fn analyzed(export: &Path) -> Vec<Found> {
    let out = crate::support::program::program()
        .args(["analyze", export.to_str().unwrap(), "--format", "json"])
        .args(["--rows", "0"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let table = Regex::new(r#"^\{"table":"([a-z_]+)""#).unwrap();
    // Rows are flat objects: no brace inside one.
    let row = Regex::new(r#"\{[^{}]*"duration_ns":(\d+),"start_ns":(\d+)[^{}]*\}"#).unwrap();
    let field = |row: &str, name: &str| {
        Regex::new(&format!(r#""{name}":(\d+)"#))
            .unwrap()
            .captures(row)
            .map(|c| c[1].parse::<i64>().unwrap())
    };
    let mut found = Vec::new();
    for line in text.lines() {
        let rule = &table.captures(line).unwrap_or_else(|| panic!("{line}"))[1];
        for c in row.captures_iter(line) {
            let (duration, start): (i64, i64) = (c[1].parse().unwrap(), c[2].parse().unwrap());
            found.push(Found {
                rule: rule.to_owned(),
                start,
                end: start + duration,
                pid: field(&c[0], "pid"),
                device: field(&c[0], "device_id"),
            });
        }
    }
    found.sort();
    found
}

/// A finding of the trace as found, and its slice's (start, end).
type OnTrace = (Found, (u64, u64));

/// Whether a case keeps a finding.
type Keeps<'a> = &'a dyn Fn(&Found) -> bool;

/// The findings in the trace, as they would be found: each slice's recorded
/// start and end (its clip args, or its own), with the clipped times.
fn written(export: &Path, filter: Filter) -> (Vec<OnTrace>, u64) {
    let mut options = Options::default();
    options.filter = filter;
    options.findings = Some(Thresholds::default());
    let (trace, summary) = convert(export, &options);
    trace.assert_valid();
    let int = |v: Option<&Value>| match v {
        Some(Value::Int(v)) => Some(*v),
        Some(Value::Uint(v)) => Some(*v as i64),
        None => None,
        Some(other) => panic!("{other:?}"),
    };
    let mut slices: Vec<_> = trace
        .slices
        .iter()
        .filter(|s| s.category == "finding")
        .map(|s| {
            let Some(Value::Str(rule)) = s.args.get("rule") else {
                panic!("a finding without its rule: {s:?}");
            };
            let end = s.ts + s.dur;
            let found = Found {
                rule: rule.clone(),
                start: int(s.args.get("clipped_start")).unwrap_or(s.ts as i64),
                end: int(s.args.get("clipped_end")).unwrap_or(end as i64),
                pid: int(s.args.get("pid")),
                device: int(s.args.get("device")),
            };
            (found, (s.ts, end))
        })
        .collect();
    slices.sort();
    let left_out = summary.filtered_out.get("finding").copied().unwrap_or(0);
    (slices, left_out)
}

#[test]
fn findings_keep_to_the_time_window_clipped_at_its_edges() {
    let Some(export) = fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let all = analyzed(&export);
    // The third quarter of the time the findings cover: some findings lie
    // before it, some after, and the long ones (a GPU gap, the low use of a
    // whole run) cross its edges.
    let lo = all.iter().map(|f| f.start).min().unwrap();
    let hi = all.iter().map(|f| f.end).max().unwrap();
    let (from, to) = (lo + (hi - lo) / 2, lo + (hi - lo) * 3 / 4);
    let window = TimeWindow {
        start: Some(from),
        end: Some(to),
    };
    let (slices, left_out) = written(&export, Filter::default().time(window));

    let kept: Vec<&Found> = all
        .iter()
        .filter(|f| f.end >= from && f.start <= to)
        .collect();
    let on_trace: Vec<&Found> = slices.iter().map(|(f, _)| f).collect();
    assert_eq!(
        on_trace, kept,
        "the findings in the window, with their times"
    );
    assert_eq!(
        left_out,
        (all.len() - kept.len()) as u64,
        "counted as filtered out"
    );
    for (f, (start, end)) in &slices {
        assert_eq!(*start, f.start.max(from) as u64, "{f:?}");
        assert_eq!(*end, f.end.min(to) as u64, "{f:?}");
    }
    // The test could fail: findings on both sides and across both edges.
    assert!(kept.len() < all.len() && !kept.is_empty());
    assert!(kept.iter().any(|f| f.start < from) && kept.iter().any(|f| f.end > to));
    assert!(all.iter().any(|f| f.end < from) && all.iter().any(|f| f.start > to));
}

#[test]
fn findings_keep_to_the_processes_and_gpus_named() {
    let Some(export) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let all = analyzed(&export);
    let pids: Vec<i64> = all.iter().filter_map(|f| f.pid).collect();
    let pid = *pids.iter().max().unwrap();
    // The GPU of the report with the fewest findings: those of the others go.
    let db = crate::support::source::open(&export);
    let mut stmt = db
        .prepare("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1")
        .unwrap();
    let gpus: Vec<i64> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let on = |d: i64| all.iter().filter(|f| f.device == Some(d)).count();
    let device = *gpus.iter().min_by_key(|d| on(**d)).unwrap();
    let by_pid = Filter::default().pids([pid as u32]);
    let by_gpu = Filter::default().gpus([device]);
    let cases: [(Filter, Keeps); 2] = [
        (by_pid, &|f| f.pid.is_none_or(|p| p == pid)),
        (by_gpu, &|f| f.device.is_none_or(|d| d == device)),
    ];
    for (filter, keeps) in cases {
        let what = format!("{filter:?}");
        let (slices, left_out) = written(&export, filter);
        let kept: Vec<&Found> = all.iter().filter(|f| keeps(f)).collect();
        let on_trace: Vec<&Found> = slices.iter().map(|(f, _)| f).collect();
        assert_eq!(on_trace, kept, "{what}");
        assert_eq!(left_out, (all.len() - kept.len()) as u64, "{what}");
        assert!(
            !kept.is_empty() && kept.len() < all.len(),
            "{what}: {all:?}"
        );
    }
}
