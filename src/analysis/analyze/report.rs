//! Findings as text ([`TableFormat`]): aligned tables for people (a table per
//! rule, with the columns `nsys analyze` prints), one CSV table of every
//! finding, or in JSON an object per rule, as `stats` writes its summaries.
//! A rule skipped for want of data says so and why: in the tables under its
//! heading, in CSV as a row of its own (before the findings) with only the
//! rule and the reason ("Skipped"), in JSON as its object's `skipped`.

use std::io::{self, Write};

use super::{Finding, Findings, Rule};
use crate::analysis::stats::TableFormat;
use crate::analysis::stats::{csv_marker, json_head, json_key, json_tail};

/// The columns of the CSV output; the tables and JSON take each rule's own.
const COLUMNS: [&str; 16] = [
    "Rule",
    "Start (ns)",
    "Duration (ns)",
    "PID",
    "TID",
    "Device ID",
    "Context ID",
    "Stream ID",
    "API Name",
    "Src Kind",
    "Dst Kind",
    "Memory Kind",
    "Bytes",
    "In-Use (%)",
    "Correlation IDs",
    "Skipped",
];

/// A value of a finding, for the output.
enum Value {
    None,
    Int(i64),
    Text(String),
    Percent(f64),
    Ids(Vec<i64>),
}

impl Value {
    fn text(&self) -> String {
        match self {
            Value::None => String::new(),
            Value::Int(v) => v.to_string(),
            Value::Text(t) => t.clone(),
            Value::Percent(p) => format!("{p:.1}"),
            Value::Ids(ids) => ids.iter().map(i64::to_string).collect::<Vec<_>>().join(" "),
        }
    }

    fn json(&self) -> String {
        match self {
            Value::None => "null".to_owned(),
            Value::Int(v) => v.to_string(),
            Value::Text(t) => json_string(t),
            Value::Percent(p) => format!("{p:.1}"),
            Value::Ids(ids) => format!(
                "[{}]",
                ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
            ),
        }
    }
}

fn opt(v: Option<i64>) -> Value {
    v.map_or(Value::None, Value::Int)
}

fn opt_text(v: Option<&str>) -> Value {
    v.map_or(Value::None, |t| Value::Text(t.to_owned()))
}

/// The finding's values, in [`COLUMNS`] order.
fn values(f: &Finding) -> [Value; 16] {
    let [pid, tid, device, context, stream] = f.place.ids().map(|(_, id)| id);
    [
        Value::Text(f.rule.name().to_owned()),
        Value::Int(f.start),
        Value::Int(f.duration),
        opt(pid),
        opt(tid),
        opt(device),
        opt(context),
        opt(stream),
        opt_text(f.api.as_deref()),
        opt_text(f.src_kind),
        opt_text(f.dst_kind),
        opt_text(f.memory_kind),
        opt(f.bytes),
        f.in_use_percent.map_or(Value::None, Value::Percent),
        Value::Ids(f.correlation_ids.clone()),
        Value::None,
    ]
}

/// The row of a rule skipped for the reason `why`, in [`COLUMNS`] order.
fn skipped_values(rule: Rule, why: &str) -> [Value; 16] {
    let mut values: [Value; 16] = std::array::from_fn(|_| Value::None);
    values[0] = Value::Text(rule.name().to_owned());
    values[14] = Value::Ids(Vec::new());
    values[15] = Value::Text(why.to_owned());
    values
}

/// The columns a rule's table shows, by index into [`COLUMNS`].
fn table_columns(rule: Rule) -> &'static [usize] {
    match rule {
        Rule::CudaApiSync => &[2, 1, 3, 4, 8, 14],
        Rule::CudaMemcpySync | Rule::CudaMemcpyAsync => &[2, 1, 9, 10, 12, 3, 5, 6, 7, 8, 14],
        Rule::CudaMemsetSync => &[2, 1, 11, 12, 3, 5, 6, 7, 8, 14],
        Rule::GpuGaps => &[2, 1, 3, 5, 6, 14],
        Rule::GpuTimeUtil => &[13, 2, 1, 3, 5, 6],
    }
}

/// Writes `findings` (as [`super::analyze`] returns them: rule by rule, in
/// the order of the rules it ran) of the report `file` in `format`, at most
/// `rows` per rule when given (the tables say how many more there are).
/// Findings are read from `findings` as they are written, twice for the
/// tables (once to size their columns): memory holds a few at a time.
pub fn write_findings(
    out: &mut dyn Write,
    findings: &Findings,
    file: &str,
    format: TableFormat,
    rows: Option<usize>,
) -> io::Result<()> {
    let rules = findings.rules();
    let index = |rule: Rule| rules.iter().position(|&r| r == rule);
    let shown = |rule: Rule| {
        let all = findings.count(rule);
        rows.map_or(all, |n| n.min(all))
    };
    // The findings shown, in order, with the index of their rule.
    let each_shown = |f: &mut dyn FnMut(usize, &Finding) -> io::Result<()>| {
        let mut written = vec![0; rules.len()];
        for found in findings.iter()? {
            let found = found?;
            let Some(i) = index(found.rule) else { continue };
            if written[i] < shown(rules[i]) {
                written[i] += 1;
                f(i, &found)?;
            }
        }
        Ok::<(), io::Error>(())
    };
    match format {
        TableFormat::Table => {
            let columns: Vec<&[usize]> = rules.iter().map(|&r| table_columns(r)).collect();
            let mut widths: Vec<Vec<usize>> = columns
                .iter()
                .map(|cs| cs.iter().map(|&c| COLUMNS[c].chars().count()).collect())
                .collect();
            each_shown(&mut |i, f| {
                let values = values(f);
                for (w, &c) in widths[i].iter_mut().zip(columns[i]) {
                    *w = (*w).max(values[c].text().chars().count());
                }
                Ok(())
            })?;
            // Rules in order, each heading before its first row; rules with
            // no rows shown (none found) have their heading written when the
            // next rule's comes, or at the end.
            let mut next_heading = 0;
            let mut headings_until = |out: &mut dyn Write, until: usize| -> io::Result<()> {
                while next_heading < until {
                    let rule = rules[next_heading];
                    if next_heading > 0 {
                        let before = rules[next_heading - 1];
                        let more = findings.count(before) - shown(before);
                        if more > 0 {
                            writeln!(out, "  ... and {more} more")?;
                        }
                        writeln!(out)?;
                    }
                    writeln!(out, "{} ({})", rule.title(), rule.name())?;
                    if let Some(why) = findings.skipped(rule) {
                        writeln!(out, "  SKIPPED: {why}")?;
                    } else if findings.count(rule) == 0 {
                        writeln!(out, "  nothing found")?;
                    } else {
                        let header: Vec<String> = columns[next_heading]
                            .iter()
                            .map(|&c| COLUMNS[c].to_owned())
                            .collect();
                        write_aligned_row(out, &header, &widths[next_heading])?;
                    }
                    next_heading += 1;
                }
                Ok(())
            };
            each_shown(&mut |i, f| {
                headings_until(&mut *out, i + 1)?;
                let values = values(f);
                let cells: Vec<String> = columns[i].iter().map(|&c| values[c].text()).collect();
                write_aligned_row(&mut *out, &cells, &widths[i])
            })?;
            headings_until(&mut *out, rules.len())?;
            if let Some(&last) = rules.last() {
                let more = findings.count(last) - shown(last);
                if more > 0 {
                    writeln!(out, "  ... and {more} more")?;
                }
            }
        }
        TableFormat::Csv => {
            write!(
                out,
                "{}",
                csv_marker("Findings", "analyze", &[file.to_owned()])
            )?;
            writeln!(out, "{}", COLUMNS.join(","))?;
            for (rule, why) in skipped(findings) {
                let row: Vec<String> = skipped_values(rule, why)
                    .iter()
                    .map(|v| csv_field(&v.text()))
                    .collect();
                writeln!(out, "{}", row.join(","))?;
            }
            each_shown(&mut |_, f| {
                let row: Vec<String> = values(f).iter().map(|v| csv_field(&v.text())).collect();
                writeln!(out, "{}", row.join(","))
            })?;
        }
        TableFormat::Json => {
            // An object per rule, in order, opened before its first row.
            let files = [file.to_owned()];
            let keys: Vec<Vec<String>> = rules
                .iter()
                .map(|&r| {
                    table_columns(r)
                        .iter()
                        .map(|&c| json_key(COLUMNS[c]))
                        .collect()
                })
                .collect();
            let mut opened = 0;
            let first_row = std::cell::Cell::new(true);
            let mut open_until = |out: &mut dyn Write, until: usize| -> io::Result<()> {
                while opened < until {
                    if opened > 0 {
                        let before = rules[opened - 1];
                        write!(out, "{}", json_tail(findings.skipped(before)))?;
                    }
                    let rule = rules[opened];
                    write!(out, "{}", json_head(rule.name(), rule.title(), &files))?;
                    opened += 1;
                    first_row.set(true);
                }
                Ok(())
            };
            let mut row = String::new();
            each_shown(&mut |i, f| {
                open_until(&mut *out, i + 1)?;
                let values = values(f);
                row.clear();
                row.push_str(if first_row.replace(false) { "{" } else { ",{" });
                for (k, &c) in table_columns(rules[i]).iter().enumerate() {
                    if k > 0 {
                        row.push(',');
                    }
                    row.push_str(&json_string(&keys[i][k]));
                    row.push(':');
                    row.push_str(&values[c].json());
                }
                row.push('}');
                out.write_all(row.as_bytes())
            })?;
            open_until(&mut *out, rules.len())?;
            if let Some(&last) = rules.last() {
                write!(out, "{}", json_tail(findings.skipped(last)))?;
            }
        }
    }
    Ok(())
}

/// The rules skipped, in the order they were asked for, with the reason.
fn skipped(findings: &Findings) -> impl Iterator<Item = (Rule, &str)> {
    findings
        .rules()
        .iter()
        .filter_map(|&r| findings.skipped(r).map(|why| (r, why)))
}

/// A row of cells in columns of `widths`; numbers to the right.
fn write_aligned_row(out: &mut dyn Write, row: &[String], widths: &[usize]) -> io::Result<()> {
    let mut line = String::from(" ");
    for (cell, &width) in row.iter().zip(widths) {
        let numeric = cell.chars().all(|ch| ch.is_ascii_digit() || ch == '.');
        let pad = width - cell.chars().count();
        line.push(' ');
        if numeric {
            line.push_str(&" ".repeat(pad));
            line.push_str(cell);
        } else {
            line.push_str(cell);
            line.push_str(&" ".repeat(pad));
        }
    }
    writeln!(out, "{}", line.trim_end())
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
