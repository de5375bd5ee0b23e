//! `compare --fail-if`: rules a comparison of runs A and B must keep, for
//! CI. A rule is `METRIC>CHANGE%` or `METRIC<CHANGE%`: it breaks where B's
//! value changed from A's by more than CHANGE percent of A's, up (`>`) or
//! down (`<`). The metrics:
//!
//! - `gpu_time`: the summed time of every kernel, memcpy, memset and whole
//!   CUDA graph run;
//! - `busy`: the share of their work's span the GPUs were busy (the union of
//!   that work), each GPU's share averaged, as the hub's list shows it;
//! - `kernel:REGEX`, `api:REGEX`, `nvtx:REGEX`: the summed total time of the
//!   kernels, CUDA API functions or NVTX ranges (`domain:name`, as `compare`
//!   names them) whose whole name REGEX matches.
//!
//! `gpu_time>+5%`: breaks where B's GPU time is more than 5% above A's;
//! `busy<-5%`: where B's busy share is more than 5% (of A's) below A's.

use std::fmt;
use std::str::FromStr;

use regex::Regex;

use super::compare::RunSummary;
use super::gpu_time::RunReport;
use super::stats::{Cell, Stats, Table};

/// What a rule looks like, for the errors that refuse one.
pub const RULE_SYNTAX: &str = "a rule is METRIC>+N% or METRIC<-N%, METRIC one of gpu_time, \
                               busy, kernel:REGEX, api:REGEX, nvtx:REGEX (e.g. gpu_time>+5%, \
                               kernel:gemm.*>+10%, busy<-5%)";

/// A rule `--fail-if` was given that is none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad rule {rule:?}: {reason}; {RULE_SYNTAX}")]
pub struct RuleError {
    /// The rule as given.
    pub rule: String,
    /// What is wrong with it.
    pub reason: String,
}

/// What a rule measures.
#[derive(Clone, Debug)]
pub enum Metric {
    /// The summed GPU time.
    GpuTime,
    /// The GPUs' busy share of their work's span, in percent.
    Busy,
    /// The summed total time of the kernels whose name matches.
    Kernel(Regex),
    /// ... of the CUDA API functions.
    Api(Regex),
    /// ... of the NVTX ranges (`domain:name`).
    Nvtx(Regex),
}

/// Which way a rule's change breaks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// `>`: a change above the threshold.
    Above,
    /// `<`: a change below it.
    Below,
}

/// One rule of `--fail-if`.
#[derive(Clone, Debug)]
pub struct Rule {
    /// As given.
    pub text: String,
    /// What it measures.
    pub metric: Metric,
    /// Which way it breaks.
    pub direction: Direction,
    /// The change, percent of A's value, past which it breaks.
    pub threshold: f64,
}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(text: &str) -> Result<Rule, RuleError> {
        let bad = |reason: &str| RuleError {
            rule: text.to_owned(),
            reason: reason.to_owned(),
        };
        let trimmed = text.trim();
        let body = trimmed
            .strip_suffix('%')
            .ok_or_else(|| bad("it does not end in a change in percent (%)"))?;
        // A regular expression may hold `<` and `>` (`gemm<float>`); the
        // number after the last is the change.
        let at = body
            .rfind(['<', '>'])
            .ok_or_else(|| bad("it has no > or <"))?;
        let direction = match &body[at..at + 1] {
            ">" => Direction::Above,
            _ => Direction::Below,
        };
        let number = body[at + 1..].trim();
        let threshold: f64 = number
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite())
            .ok_or_else(|| bad(&format!("{number:?} is no number")))?;
        let metric = match body[..at].trim() {
            "gpu_time" => Metric::GpuTime,
            "busy" => Metric::Busy,
            named => {
                let (kind, pattern) = named
                    .split_once(':')
                    .ok_or_else(|| bad(&format!("unknown metric {named:?}")))?;
                if pattern.is_empty() {
                    return Err(bad(&format!("{kind}: names no pattern")));
                }
                let regex = Regex::new(&format!("^(?:{pattern})$"))
                    .map_err(|e| bad(&format!("{pattern:?} is no regular expression ({e})")))?;
                match kind {
                    "kernel" => Metric::Kernel(regex),
                    "api" => Metric::Api(regex),
                    "nvtx" => Metric::Nvtx(regex),
                    _ => return Err(bad(&format!("unknown metric {kind:?}"))),
                }
            }
        };
        Ok(Rule {
            text: trimmed.to_owned(),
            metric,
            direction,
            threshold,
        })
    }
}

/// A rule checked against two runs.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Verdict {
    /// The rule, as given.
    pub rule: String,
    /// A's value: ns, or percent for `busy`.
    pub a: f64,
    /// B's value.
    pub b: f64,
    /// B's change, percent of A's (none where A's is 0 and B's is not).
    pub change: Option<f64>,
    /// The rule's threshold, percent.
    pub threshold: f64,
    /// Whether the rule broke.
    pub broken: bool,
    /// Whether the values are percentages (`busy`) rather than times.
    pub share: bool,
}

/// What the rules need of each run beyond its [`RunSummary`]: its busy
/// share in percent, where a `busy` rule asks for it.
pub fn needs_busy(rules: &[Rule]) -> bool {
    rules.iter().any(|r| matches!(r.metric, Metric::Busy))
}

/// `rule` checked against A and B; `busy`, their busy shares (percent),
/// where known. A rule whose pattern names nothing in either run is an
/// error: it would hold whatever happened.
pub fn check(
    rule: &Rule,
    a: &RunSummary,
    b: &RunSummary,
    busy: Option<(f64, f64)>,
) -> Result<Verdict, RuleError> {
    let matched = |groups: &[(String, Stats)], regex: &Regex| -> Option<f64> {
        let totals: Vec<i128> = groups
            .iter()
            .filter(|(name, _)| regex.is_match(name))
            .map(|(_, stats)| stats.total)
            .collect();
        (!totals.is_empty()).then(|| totals.iter().sum::<i128>() as f64)
    };
    let none_matches = |what: &str| RuleError {
        rule: rule.text.clone(),
        reason: format!("no {what} of A or B matches it"),
    };
    let (va, vb) = match &rule.metric {
        Metric::GpuTime => (a.gpu_time as f64, b.gpu_time as f64),
        Metric::Busy => busy.ok_or_else(|| RuleError {
            rule: rule.text.clone(),
            reason: "no GPU work in A or B".into(),
        })?,
        Metric::Kernel(r) => pair(matched(&a.kernels, r), matched(&b.kernels, r))
            .ok_or_else(|| none_matches("kernel"))?,
        Metric::Api(r) => pair(matched(&a.api_calls, r), matched(&b.api_calls, r))
            .ok_or_else(|| none_matches("CUDA API function"))?,
        Metric::Nvtx(r) => pair(matched(&a.nvtx_ranges, r), matched(&b.nvtx_ranges, r))
            .ok_or_else(|| none_matches("NVTX range"))?,
    };
    let change = match (va, vb) {
        (0.0, 0.0) => Some(0.0),
        (0.0, _) => None,
        (a, b) => Some((b - a) * 100.0 / a),
    };
    let broken = match (rule.direction, change) {
        (Direction::Above, Some(c)) => c > rule.threshold,
        (Direction::Below, Some(c)) => c < rule.threshold,
        // From nothing to something: up without bound.
        (Direction::Above, None) => true,
        (Direction::Below, None) => false,
    };
    Ok(Verdict {
        rule: rule.text.clone(),
        a: va,
        b: vb,
        change,
        threshold: rule.threshold,
        broken,
        share: matches!(rule.metric, Metric::Busy),
    })
}

/// Both sides, where either has the name (the other counting 0).
fn pair(a: Option<f64>, b: Option<f64>) -> Option<(f64, f64)> {
    (a.is_some() || b.is_some()).then(|| (a.unwrap_or(0.0), b.unwrap_or(0.0)))
}

impl Verdict {
    /// A's value as shown.
    pub fn shown_a(&self) -> String {
        self.shown(self.a)
    }

    /// B's value as shown.
    pub fn shown_b(&self) -> String {
        self.shown(self.b)
    }

    /// The change as shown: `+9.03%`, or `new` from nothing.
    pub fn shown_change(&self) -> String {
        match self.change {
            Some(c) => format!("{c:+.2}%"),
            None => "new".into(),
        }
    }

    fn shown(&self, value: f64) -> String {
        match self.share {
            true => format!("{value:.2}%"),
            false => crate::render::format::duration(value.round() as i128),
        }
    }
}

/// One line per verdict: `RULE: A 1.234 ms, B 1.456 ms, change +18.00%
/// (limit +10%)`, and whether it broke.
impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.change {
            Some(c) if c > self.threshold => ">",
            Some(c) if c < self.threshold => "<",
            Some(_) => "=",
            None => ">",
        };
        write!(
            f,
            "{}: A {}, B {}, change {} {op} {:+}%",
            self.rule,
            self.shown_a(),
            self.shown_b(),
            self.shown_change(),
            self.threshold
        )
    }
}

/// The busy share of a run's GPUs, percent: [`RunReport::busy_of_span`],
/// the number the hub's list shows (none without GPU work).
pub fn busy_percent(run: &RunReport) -> Option<f64> {
    run.busy_of_span().map(|share| share * 100.0)
}

/// The verdicts as a table (`fail_if`), written as every table is: a row
/// per rule, A's and B's values (ns, or percent for `busy`), the change and
/// the limit in percent, and whether it broke.
pub fn verdict_table(verdicts: &[Verdict]) -> Table {
    let value = |v: &Verdict, x: f64| match v.share {
        true => Cell::Real(x, 2),
        false => Cell::Int(x.round() as i128),
    };
    Table {
        name: "fail_if".into(),
        title: "Rules (--fail-if)".into(),
        columns: ["Verdict", "A", "B", "Change (%)", "Limit (%)", "Rule"]
            .map(str::to_owned)
            .to_vec(),
        rows: verdicts
            .iter()
            .map(|v| {
                vec![
                    Cell::Text(if v.broken { "broken" } else { "holds" }.into()),
                    value(v, v.a),
                    value(v, v.b),
                    v.change.map_or(Cell::Empty, |c| Cell::Real(c, 2)),
                    Cell::Real(v.threshold, 2),
                    Cell::Text(v.rule.clone()),
                ]
            })
            .collect(),
        no_data: None,
        incomplete: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_bad_ones_say_what_a_rule_looks_like() {
        let rule: Rule = "kernel:gemm<float>.*>+10%".parse().unwrap();
        assert_eq!(rule.direction, Direction::Above);
        assert_eq!(rule.threshold, 10.0);
        assert!(matches!(&rule.metric, Metric::Kernel(r) if r.is_match("gemm<float>_x")));
        let rule: Rule = "busy<-5%".parse().unwrap();
        assert_eq!((rule.direction, rule.threshold), (Direction::Below, -5.0));
        for bad in [
            "gpu_time>5",
            "gpu_time=5%",
            "speed>+5%",
            "kernel:>+1%",
            "api:(>+1%",
            "busy>x%",
        ] {
            let e = bad.parse::<Rule>().unwrap_err();
            assert!(e.to_string().contains("a rule is METRIC>+N%"), "{e}");
        }
    }
}
