//! `compare --fail-if`: rules that hold and rules that break on the H100
//! pair (the same workload traced node by node and as whole graphs) and on
//! two ranks of the Cori job, each number against SQL over the two exports;
//! exit status 3 and a line per broken rule; a bad rule a usage error.

use std::path::Path;
use std::process::Output;

use regex::Regex;

use crate::compare::{expected, Groups};
use crate::support::fixtures::{cori_exports, fixture};
use crate::support::program::program;
use crate::support::source::{has_table, open};

/// The GPUs' busy share of their work's span, percent, from SQL: per
/// device the union of its kernels, memcpys, memsets and whole-graph runs
/// over its first start to last end, averaged over the devices (the hub's
/// headline).
fn busy_percent(path: &Path) -> f64 {
    let db = open(path);
    let mut by_device: std::collections::BTreeMap<i64, Vec<(i64, i64)>> = Default::default();
    for table in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    ] {
        if !has_table(&db, table) {
            continue;
        }
        let mut stmt = db
            .prepare(&format!(
                "SELECT deviceId, start, end FROM {table} WHERE end > start"
            ))
            .unwrap();
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?)))
            .unwrap();
        for row in rows {
            let (device, start, end) = row.unwrap();
            by_device.entry(device).or_default().push((start, end));
        }
    }
    let mut shares = Vec::new();
    for intervals in by_device.values_mut() {
        intervals.sort();
        let first = intervals[0].0;
        let (mut busy, mut last, mut until) = (0i64, i64::MIN, i64::MIN);
        for &(start, end) in intervals.iter() {
            let from = start.max(until);
            if end > from {
                busy += end - from;
            }
            until = until.max(end);
            last = last.max(end);
        }
        shares.push(busy as f64 / (last - first) as f64);
    }
    shares.iter().sum::<f64>() * 100.0 / shares.len() as f64
}

/// The summed total of the names `pattern` matches whole.
fn matched(groups: &Groups, pattern: &str) -> f64 {
    let regex = Regex::new(&format!("^(?:{pattern})$")).unwrap();
    let total: i128 = groups
        .iter()
        .filter(|(name, _)| regex.is_match(name))
        .map(|(_, (_, total))| total)
        .sum();
    total as f64
}

/// A metric of a rule and its value in A and B, from SQL.
struct Measured {
    metric: String,
    a: f64,
    b: f64,
}

impl Measured {
    fn change(&self) -> f64 {
        (self.b - self.a) * 100.0 / self.a
    }

    /// A rule on it that holds, and one that breaks, one point of percent
    /// either side of its change.
    fn rules(&self) -> (String, String) {
        let c = self.change();
        (
            format!("{}>{:+.4}%", self.metric, c + 1.0),
            format!("{}>{:+.4}%", self.metric, c - 1.0),
        )
    }
}

/// The metrics measured on A and B: GPU time, busy share, the kernels of
/// the name longest in A, API functions `cu.*` (runtime and driver), NVTX ranges of the name
/// longest in A.
fn measured(a: &Path, b: &Path) -> Vec<Measured> {
    let (ea, eb) = (expected(a), expected(b));
    let longest = |groups: &Groups| {
        let (name, _) = groups
            .iter()
            .max_by_key(|(n, (_, total))| (*total, (*n).clone()))
            .unwrap();
        regex::escape(name)
    };
    let kernel = longest(&ea.kernels);
    let mut found = vec![
        Measured {
            metric: "gpu_time".into(),
            a: ea.gpu_time as f64,
            b: eb.gpu_time as f64,
        },
        Measured {
            metric: "busy".into(),
            a: busy_percent(a),
            b: busy_percent(b),
        },
        Measured {
            metric: format!("kernel:{kernel}"),
            a: matched(&ea.kernels, &kernel),
            b: matched(&eb.kernels, &kernel),
        },
        Measured {
            metric: "api:cu.*".into(),
            a: matched(&ea.api, "cu.*"),
            b: matched(&eb.api, "cu.*"),
        },
    ];
    if !ea.nvtx.is_empty() {
        let range = longest(&ea.nvtx);
        found.push(Measured {
            metric: format!("nvtx:{range}"),
            a: matched(&ea.nvtx, &range),
            b: matched(&eb.nvtx, &range),
        });
    }
    found
}

fn compare(a: &Path, b: &Path, rules: &[String], format: &str) -> Output {
    program()
        .args(["compare", "--format", format, "--top", "3"])
        .arg(a)
        .arg(b)
        .arg("--fail-if")
        .args(rules)
        .output()
        .unwrap()
}

/// Every rule that holds holds, every rule that breaks breaks, each with
/// SQL's numbers: exit status 3, a line per broken rule.
fn check_rules(a: &Path, b: &Path) {
    let measured = measured(a, b);
    let (holding, breaking): (Vec<String>, Vec<String>) =
        measured.iter().map(Measured::rules).unzip();

    let held = compare(a, b, &holding, "json");
    let stderr = String::from_utf8_lossy(&held.stderr);
    assert_eq!(held.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("rule broken"), "{stderr}");

    let all: Vec<String> = holding.iter().chain(&breaking).cloned().collect();
    let broke = compare(a, b, &all, "json");
    let stderr = String::from_utf8_lossy(&broke.stderr);
    assert_eq!(broke.status.code(), Some(3), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("nsys2perfetto: rule broken: "))
        .collect();
    assert_eq!(lines.len(), breaking.len(), "{stderr}");
    for ((line, rule), m) in lines.iter().zip(&breaking).zip(&measured) {
        assert!(line.starts_with(&format!("{rule}: A ")), "{line}");
        let change = format!("change {:+.2}% > ", m.change());
        assert!(line.contains(&change), "{line} (SQL: {change})");
    }
    // The verdicts' exact numbers, in JSON.
    let stdout = String::from_utf8(broke.stdout).unwrap();
    let table: serde_json::Value = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|t| t["table"] == "fail_if")
        .expect("the table of rules");
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), all.len());
    for (row, (rule, m)) in rows
        .iter()
        .zip(all.iter().zip(measured.iter().chain(&measured)))
    {
        assert_eq!(row["rule"], rule.as_str());
        assert_eq!(
            row["verdict"],
            if breaking.contains(rule) {
                "broken"
            } else {
                "holds"
            }
        );
        let (a, b) = (row["a"].as_f64().unwrap(), row["b"].as_f64().unwrap());
        match m.metric.as_str() {
            "busy" => {
                assert!(
                    (a - m.a).abs() < 0.006 && (b - m.b).abs() < 0.006,
                    "{row}: {} {}",
                    m.a,
                    m.b
                )
            }
            _ => assert_eq!((a, b), (m.a, m.b), "{row}"),
        }
    }

    // For a pull request's comment: the rules first, as Markdown.
    let md = compare(a, b, &all, "md");
    assert_eq!(md.status.code(), Some(3));
    let text = String::from_utf8(md.stdout).unwrap();
    let rules_at = text.find("### Rules (--fail-if)").expect(&text);
    assert!(rules_at < text.find("| Kind |").expect(&text), "{text}");
    assert!(
        text.contains("| Verdict | A | B | Change (%) | Limit (%) | Rule |"),
        "{text}"
    );
    assert_eq!(text.matches("| broken |").count(), breaking.len(), "{text}");
}

#[test]
fn fail_if_on_the_h100_pair() {
    let (Some(a), Some(b)) = (
        fixture("h100_torch_graph_node.sqlite"),
        fixture("h100_torch_graph_whole.sqlite"),
    ) else {
        return;
    };
    check_rules(&a, &b);
}

#[test]
fn fail_if_on_two_cori_ranks() {
    let Some(ranks) = cori_exports(2) else {
        return;
    };
    check_rules(&ranks[0], &ranks[1]);
}

#[test]
fn a_bad_rule_is_a_usage_error_saying_what_a_rule_looks_like() {
    let demo = crate::support::program::demo();
    for bad in ["gpu_time>5", "speed>+5%", "kernel:(>+1%", "busy=+1%"] {
        let out = program()
            .arg("compare")
            .arg(&demo)
            .arg(&demo)
            .args(["--fail-if", bad])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("a rule is METRIC>+N% or METRIC<-N%"),
            "{stderr}"
        );
        assert!(out.stdout.is_empty());
    }
}
