//! Which events a conversion keeps: a time window, processes, GPUs, kernel
//! and NVTX names.
//!
//! Conditions on columns (time, process, GPU, kernel name) go into the SQL
//! of the table scans, so rows left out are never decoded; NVTX names and
//! domains are matched as the NVTX events stream past. Flows are linked
//! only between events that are both kept: GPU work counts its launches
//! over the kept rows alone.

use std::fmt;
use std::str::FromStr;

use regex::Regex;

use crate::error::Result;

/// What a conversion keeps; by default everything. Build one with its
/// methods, each of which narrows what is kept:
///
/// ```
/// use nsys2perfetto::{Filter, Options, TimeWindow};
///
/// let filter = Filter::default()
///     .time("1.5s:2s".parse::<TimeWindow>().unwrap())
///     .pids([4242])
///     .kernels("gemm|conv")?;
/// let mut options = Options::default();
/// options.filter = filter;
/// # Ok::<(), nsys2perfetto::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub(crate) time: TimeWindow,
    pub(crate) pids: Vec<u32>,
    pub(crate) gpus: Vec<i64>,
    pub(crate) kernels: Option<Regex>,
    pub(crate) nvtx: Option<Regex>,
    pub(crate) nvtx_domains: Vec<String>,
    pub(crate) gpu_in_nvtx: bool,
}

impl Filter {
    /// Keeps the events that overlap `window`; slices that reach beyond it
    /// are clipped to it, with their recorded times in the args
    /// `clipped_start` and `clipped_end`.
    pub fn time(mut self, window: TimeWindow) -> Self {
        self.time = window;
        self
    }

    /// Keeps the events of these processes (and those of no process, such
    /// as GPU metrics).
    pub fn pids(mut self, pids: impl IntoIterator<Item = u32>) -> Self {
        self.pids.extend(pids);
        self
    }

    /// Keeps the GPU work, CUDA memory use and page faults of these devices
    /// (`deviceId`; synchronizations, which record no device, by the device
    /// of their CUDA context); events of no device stay.
    pub fn gpus(mut self, ids: impl IntoIterator<Item = i64>) -> Self {
        self.gpus.extend(ids);
        self
    }

    /// Keeps the kernels whose short or demangled name matches `pattern`
    /// (a regular expression, matched anywhere in the name); other GPU work
    /// stays.
    pub fn kernels(mut self, pattern: &str) -> Result<Self> {
        self.kernels = Some(regex("--kernels", pattern)?);
        Ok(self)
    }

    /// Keeps the NVTX ranges and marks whose name (its message, or its
    /// domain's name for one without) matches `pattern`.
    pub fn nvtx(mut self, pattern: &str) -> Result<Self> {
        self.nvtx = Some(regex("--nvtx", pattern)?);
        Ok(self)
    }

    /// Keeps the NVTX events of the domain named `name` (`default` for
    /// NVTX's default domain); several calls keep several domains.
    pub fn nvtx_domain(mut self, name: &str) -> Self {
        self.nvtx_domains.push(name.to_owned());
        self
    }

    /// Keeps only the CUDA API calls made inside the NVTX ranges kept (on
    /// the same thread), and the GPU work they launched: the kernels, copies
    /// and memsets of an NVTX range, each with its launch. Synchronizations,
    /// launched by no call, are left out. With a time window each event is
    /// kept by its own time: GPU work in the window launched inside a kept
    /// range before the window stays, without its launch.
    pub fn gpu_in_nvtx(mut self) -> Self {
        self.gpu_in_nvtx = true;
        self
    }

    /// Whether it keeps everything.
    pub fn is_empty(&self) -> bool {
        self.time.is_everything()
            && self.pids.is_empty()
            && self.gpus.is_empty()
            && self.kernels.is_none()
            && self.nvtx.is_none()
            && self.nvtx_domains.is_empty()
            && !self.gpu_in_nvtx
    }

    /// Whether an NVTX event with this name, of the domain with this name
    /// (`None` for the default domain), is kept.
    pub(crate) fn keeps_nvtx(&self, name: &str, domain: Option<&str>) -> bool {
        let domain_ok = self.nvtx_domains.is_empty()
            || self
                .nvtx_domains
                .iter()
                .any(|d| Some(d.as_str()) == domain || (domain.is_none() && d == "default"));
        domain_ok && self.nvtx.as_ref().is_none_or(|r| r.is_match(name))
    }
}

fn regex(flag: &str, pattern: &str) -> Result<Regex> {
    let what = format!("{flag} '{pattern}' is not a regular expression");
    crate::pattern::compile(&what, pattern)
}

/// A span of session time, in nanoseconds from the session start; either
/// side may be open. Parsed from `START:END`, each side a number with an
/// optional unit (`ns`, `us`, `ms`, `s`; ns without): `1.5s:2s`, `500ms:`,
/// `:100us`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeWindow {
    /// The start (ns), or open.
    pub start: Option<i64>,
    /// The end (ns), or open.
    pub end: Option<i64>,
}

impl TimeWindow {
    /// Whether both sides are open.
    pub fn is_everything(&self) -> bool {
        self.start.is_none() && self.end.is_none()
    }
}

impl FromStr for TimeWindow {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let Some((start, end)) = s.split_once(':') else {
            return Err(format!(
                "'{s}' is not a time window: expected START:END (e.g. 1.5s:2s, 500ms:, :100us)"
            ));
        };
        let side = |t: &str| match t.trim() {
            "" => Ok(None),
            t => duration_ns(t).map(Some),
        };
        let window = TimeWindow {
            start: side(start)?,
            end: side(end)?,
        };
        if let (Some(a), Some(b)) = (window.start, window.end) {
            if b < a {
                return Err(format!("time window '{s}' ends before it starts"));
            }
        }
        Ok(window)
    }
}

impl fmt::Display for TimeWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |t: Option<i64>| t.map_or(String::new(), |t| format!("{t}ns"));
        write!(f, "{}:{}", side(self.start), side(self.end))
    }
}

/// A time of the session, as each side of a [`TimeWindow`] is written:
/// `1.5s`, `200ms`, `30us`, `1000ns` (a unit is needed but for 0).
fn duration_ns(text: &str) -> std::result::Result<i64, String> {
    match nanoseconds(text)? {
        ns if ns < 0.0 => Err(format!(
            "'{text}' is not a time from the session start (0 or later)"
        )),
        ns => Ok(ns as i64),
    }
}

/// A duration written as the sides of `--time` are (`1.5s`, `200ms`,
/// `30us`, `1000ns`), in nanoseconds: the thresholds of the analysis rules
/// take it. A number without a unit is refused (but 0): `nsys analyze`'s
/// `gap=` is in milliseconds where the times of a trace are in
/// nanoseconds, and a bare number could be read as either.
pub fn parse_duration(text: &str) -> std::result::Result<u64, String> {
    match nanoseconds(text.trim())? {
        ns if ns < 0.0 => Err(format!("'{text}' is not a duration (0 or more)")),
        ns => Ok(ns as u64),
    }
}

/// `text`, a number and its unit, in whole nanoseconds (rounded), or why it
/// is no time: an unknown unit, no number, more than an i64 holds.
fn nanoseconds(text: &str) -> std::result::Result<f64, String> {
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit {
        "" if number.trim().parse::<f64>().is_ok_and(|v| v != 0.0) => {
            return Err(format!(
                "'{text}' has no unit: write {number}ns, {number}us, {number}ms or {number}s"
            ))
        }
        "" | "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => {
            return Err(format!(
                "'{text}': unknown unit '{unit}' (expected ns, us, ms or s)"
            ))
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a time (expected e.g. 1.5s, 200ms, 30us, 1000ns)"))?;
    let ns = (value * scale).round();
    if !ns.is_finite() {
        return Err(format!(
            "'{text}' is not a time (expected e.g. 1.5s, 200ms, 30us, 1000ns)"
        ));
    }
    if ns.abs() > i64::MAX as f64 {
        return Err(format!(
            "'{text}' is too large a time (at most {}s)",
            i64::MAX / 1_000_000_000
        ));
    }
    Ok(ns)
}

/// A duration in nanoseconds as people read it, in the largest unit that
/// leaves a whole or decimal number: `500 ms`, `1.5 ms`, `250 us`, `40 ns`.
pub(crate) fn duration_text(ns: u64) -> String {
    let (scale, unit) = match ns {
        n if n >= 1_000_000_000 => (1e9, "s"),
        n if n >= 1_000_000 => (1e6, "ms"),
        n if n >= 1_000 => (1e3, "us"),
        _ => (1.0, "ns"),
    };
    format!("{} {unit}", ns as f64 / scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_parse_with_units_and_open_sides() {
        let w = |s: &str| s.parse::<TimeWindow>();
        assert_eq!(
            w("1.5s:2s"),
            Ok(TimeWindow {
                start: Some(1_500_000_000),
                end: Some(2_000_000_000)
            })
        );
        assert_eq!(
            w("500ms:"),
            Ok(TimeWindow {
                start: Some(500_000_000),
                end: None
            })
        );
        assert_eq!(
            w(":100us"),
            Ok(TimeWindow {
                start: None,
                end: Some(100_000)
            })
        );
        assert_eq!(
            w("10ns:20ns"),
            Ok(TimeWindow {
                start: Some(10),
                end: Some(20)
            })
        );
        // A side without its unit is refused, but 0.
        assert!(w("10:20ns").unwrap_err().contains("'10' has no unit"));
        assert_eq!(w("0:20ns").unwrap().start, Some(0));
        assert!(w(":").unwrap().is_everything());
        assert!(w("2s:1s").unwrap_err().contains("ends before"));
        assert!(w("1m:").unwrap_err().contains("unknown unit"));
        assert!(w("abc").unwrap_err().contains("START:END"));
        assert!(w("-1s:").is_err());
    }

    #[test]
    fn durations_parse_with_units_and_read_back() {
        assert_eq!(parse_duration("500ms"), Ok(500_000_000));
        assert_eq!(parse_duration("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration("250us"), Ok(250_000));
        assert_eq!(parse_duration("0"), Ok(0));
        assert!(parse_duration("40")
            .unwrap_err()
            .contains("no unit: write 40ns, 40us"));
        assert!(":1000"
            .parse::<TimeWindow>()
            .unwrap_err()
            .contains("no unit"));
        assert!(parse_duration("-1ms").unwrap_err().contains("0 or more"));
        assert!(parse_duration("5 min").is_err());
        assert!(parse_duration("99999999999s")
            .unwrap_err()
            .contains("too large"));
        for (ns, text) in [
            (500_000_000, "500ms"),
            (1_500_000, "1.5ms"),
            (250_000, "250us"),
            (40, "40ns"),
            (2_000_000_000, "2s"),
        ] {
            assert_eq!(duration_text(ns).replace(' ', ""), text);
            assert_eq!(parse_duration(text), Ok(ns));
        }
    }

    #[test]
    fn nvtx_names_and_domains() {
        let f = Filter::default().nvtx("^step").unwrap();
        assert!(f.keeps_nvtx("step 3", None));
        assert!(!f.keeps_nvtx("a step", None));
        let f = Filter::default().nvtx_domain("NCCL");
        assert!(f.keeps_nvtx("x", Some("NCCL")));
        assert!(!f.keeps_nvtx("x", None));
        assert!(Filter::default()
            .nvtx_domain("default")
            .keeps_nvtx("x", None));
        assert!(Filter::default().nvtx("(").is_err());
    }
}
