//! What a conversion's filters and parts keep nothing of: a `--pid`,
//! `--gpu` or `--nvtx-domain` that no event of the report is of, a
//! `--kernels` or `--nvtx` pattern that no name of the report matches, a time
//! window outside its events, the NVTX projection without the parts it is
//! made of. Each is said with what the report holds instead, so that an
//! empty trace is not taken for an empty report.

use super::{Options, Part, Parts};
use crate::error::Failure;
use crate::filter::duration_text;
use crate::nsys::{Owner, Report};
use crate::TimeWindow;

use super::threads::process_name;
use super::Summary;

/// At most this many processes, kernels or NVTX ranges are named where a
/// `--pid`, `--kernels` or `--nvtx` matches nothing.
const NAMED: usize = 8;

/// A line for each filter, or part, of `options` that keeps nothing of
/// `report`, given what the conversion wrote (`summary`).
pub(super) fn kept_nothing(
    report: &Report,
    options: &Options,
    summary: &Summary,
) -> Result<Vec<String>, Failure> {
    let filter = &options.filter;
    let mut lines = Vec::new();
    lines.extend(pids(report, &filter.pids)?);
    lines.extend(gpus(report, &filter.gpus)?);
    lines.extend(nvtx_domains(report, &filter.nvtx_domains)?);
    if let Some(pattern) = &filter.kernels {
        if kept(summary, super::cuda::KERNEL) == 0 {
            let mut names = Names::default();
            report.each_kernel_row(|k| names.add(k.name))?;
            lines.extend(names.unmatched("--kernels", pattern, "kernel"));
        }
    }
    if let Some(pattern) = &filter.nvtx {
        if kept(summary, super::nvtx::NVTX) == 0 {
            let mut names = Names::default();
            report.each_range_row(|r| names.add(&r.text))?;
            lines.extend(names.unmatched("--nvtx", pattern, "NVTX range"));
        }
    }
    if !filter.is_empty() && summary.holds_nothing() {
        lines.extend(nothing_kept(report, filter.time, lines.is_empty())?);
    }
    lines.extend(projection_without_its_parts(options.parts));
    Ok(lines)
}

/// Kernel names run to thousands of characters: those named are cut to
/// this many.
const LONGEST_NAME: usize = 60;

/// How many slices of `category` the trace holds.
fn kept(summary: &Summary, category: &str) -> u64 {
    summary.slices.get(category).copied().unwrap_or(0)
}

/// The names of a report's kernels or NVTX ranges, with how many events
/// bear each.
#[derive(Default)]
struct Names(rustc_hash::FxHashMap<String, u64>);

impl Names {
    fn add(&mut self, name: &str) {
        match self.0.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                self.0.insert(name.to_owned(), 1);
            }
        }
    }

    /// The line for a `flag` whose `pattern` matches none of the names of
    /// `what` (`kernel`): those there are instead, the most frequent first;
    /// none where some name matches (then other filters left them out).
    fn unmatched(self, flag: &str, pattern: &regex::Regex, what: &str) -> Option<String> {
        if self.0.keys().any(|name| pattern.is_match(name)) {
            return None;
        }
        let mut counts: Vec<(String, u64)> = self.0.into_iter().collect();
        if counts.is_empty() {
            return Some(format!(
                "{flag} '{pattern}' matches nothing: the report has no {what}s"
            ));
        }
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let named = first_named(&counts, |(name, _)| {
            match name.char_indices().nth(LONGEST_NAME) {
                Some((at, _)) => format!("'{}…'", &name[..at]),
                None => format!("'{name}'"),
            }
        });
        Some(format!(
            "{flag} '{pattern}' matches nothing: the report's {what}s are {named}"
        ))
    }
}

/// A line for each of `pids` that no event is of.
fn pids(report: &Report, pids: &[u32]) -> Result<Vec<String>, Failure> {
    let ids: Vec<i64> = pids.iter().map(|p| i64::from(*p)).collect();
    let missing = without_events(report, Owner::Process, &ids)?;
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let there = processes(report)?;
    let line = |pid| format!("--pid {pid} matches no event: {there}");
    Ok(missing.into_iter().map(line).collect())
}

/// A line for each of `gpus` that no event is of.
fn gpus(report: &Report, gpus: &[i64]) -> Result<Vec<String>, Failure> {
    let missing = without_events(report, Owner::Gpu, gpus)?;
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let with_events = report.events_by(Owner::Gpu)?;
    let meta = report.meta();
    let there = match with_events.is_empty() {
        true => "the report has no GPU events".to_owned(),
        false => {
            let named: Vec<String> = with_events
                .keys()
                .map(|g| match meta.gpus.get(g) {
                    Some(name) => format!("{g} ({name})"),
                    None => g.to_string(),
                })
                .collect();
            format!("the GPUs with events are {}", named.join(", "))
        }
    };
    let line = |gpu| format!("--gpu {gpu} matches no event: {there}");
    Ok(missing.into_iter().map(line).collect())
}

/// Those of `ids` (of processes or GPUs) that no event of `report` is of.
fn without_events(report: &Report, owner: Owner, ids: &[i64]) -> Result<Vec<i64>, Failure> {
    let mut missing = Vec::new();
    for &id in ids {
        if !report.has_events_of(owner, id)? {
            missing.push(id);
        }
    }
    Ok(missing)
}

/// A line for each of `domains` that the report has no events in.
fn nvtx_domains(report: &Report, domains: &[String]) -> Result<Vec<String>, Failure> {
    if domains.is_empty() {
        return Ok(Vec::new());
    }
    let there = report.nvtx_domain_names()?;
    let listed = match there.is_empty() {
        true => "the report has no NVTX events".to_owned(),
        false => {
            let names: Vec<&str> = there.iter().map(String::as_str).collect();
            format!("its NVTX domains are {}", names.join(", "))
        }
    };
    Ok(domains
        .iter()
        .filter(|d| !there.contains(*d))
        .map(|d| format!("--nvtx-domain {d} matches no event: {listed}"))
        .collect())
}

/// Why filters kept nothing, where no filter alone was found to match
/// nothing (`unexplained`) or the time window is outside the events.
fn nothing_kept(
    report: &Report,
    window: TimeWindow,
    unexplained: bool,
) -> Result<Option<String>, Failure> {
    let span = report.event_span()?;
    let outside = span.is_some_and(|(first, last)| {
        window.end.is_some_and(|end| end < first) || window.start.is_some_and(|s| s > last)
    });
    let span_text = match span {
        Some((first, last)) => format!(
            "the report's events span {} to {} of the session",
            seconds(first),
            seconds(last)
        ),
        None => "the report has no events".to_owned(),
    };
    Ok(if outside {
        Some(format!(
            "--time {} matches no event: {span_text}",
            window_text(window)
        ))
    } else if unexplained {
        let mut line = "the filters keep no event: the trace is empty".to_owned();
        if !window.is_everything() {
            line.push_str(&format!(" ({span_text})"));
        }
        Some(line)
    } else {
        None
    })
}

/// The line for the NVTX projection chosen without the parts it is made
/// of.
fn projection_without_its_parts(parts: Parts) -> Option<String> {
    if !parts.has(Part::NvtxGpu) {
        return None;
    }
    let missing: Vec<&str> = [Part::Cuda, Part::Nvtx]
        .into_iter()
        .filter(|p| !parts.has(*p))
        .map(Part::name)
        .collect();
    let left_out = match missing.as_slice() {
        [] => return None,
        [one] => format!("{one} is"),
        _ => "both are".to_owned(),
    };
    Some(format!(
        "nvtx_gpu is not in the trace: the NVTX projection is made of the cuda and nvtx \
         parts, and {left_out} left out"
    ))
}

/// "the processes with events are 112 (python3), 111 (python3) and 150
/// more", those with the most events first.
fn processes(report: &Report) -> Result<String, Failure> {
    let mut counts: Vec<(i64, u64)> = report.events_by(Owner::Process)?.into_iter().collect();
    if counts.is_empty() {
        return Ok("no event of the report is of a process".to_owned());
    }
    counts.sort_by_key(|&(pid, n)| (std::cmp::Reverse(n), pid));
    let meta = report.meta();
    let named = first_named(&counts, |&(pid, _)| {
        format!("{pid} ({})", process_name(meta, pid as u32))
    });
    Ok(format!("the processes with events are {named}"))
}

/// The first [`NAMED`] of `counts`, each as `name` writes it, then how many
/// more there are: "'a', 'b' and 3 more".
fn first_named<T>(counts: &[T], name: impl Fn(&T) -> String) -> String {
    let named: Vec<String> = counts.iter().take(NAMED).map(name).collect();
    let more = match counts.len().saturating_sub(NAMED) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!("{}{more}", named.join(", "))
}

/// Session time `ns` in seconds, to the microsecond: `155.360412s`.
fn seconds(ns: i64) -> String {
    format!("{:.6}s", ns as f64 / 1e9)
}

/// A window as `--time` takes it: `200ms:400ms`, `1.5s:`.
fn window_text(window: TimeWindow) -> String {
    let side = |t: Option<i64>| {
        t.map_or(String::new(), |t| {
            duration_text(t.max(0) as u64).replace(' ', "")
        })
    };
    format!("{}:{}", side(window.start), side(window.end))
}
