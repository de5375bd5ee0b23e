//! Findings as text: aligned tables for people (a table per rule, with the
//! columns `nsys analyze` prints), or one CSV or JSON table for programs.

use std::io::{self, Write};
use std::str::FromStr;

use super::{Finding, Place, Rule};

/// How [`write_findings`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A table per rule, columns aligned, with a heading.
    Table,
    /// One table, a row per finding, a column for every rule's fields.
    Csv,
    /// An array of objects, one per finding.
    Json,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "table" => Ok(Format::Table),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            _ => Err(format!("unknown format {s:?} (formats: table, csv, json)")),
        }
    }
}

/// The columns of the CSV and JSON output (JSON in snake case).
const COLUMNS: [(&str, &str); 15] = [
    ("Rule", "rule"),
    ("Start (ns)", "start_ns"),
    ("Duration (ns)", "duration_ns"),
    ("PID", "pid"),
    ("TID", "tid"),
    ("Device ID", "device"),
    ("Context ID", "context"),
    ("Stream ID", "stream"),
    ("API Name", "api"),
    ("Src Kind", "src_kind"),
    ("Dst Kind", "dst_kind"),
    ("Memory Kind", "memory_kind"),
    ("Bytes", "bytes"),
    ("In-Use (%)", "in_use_percent"),
    ("Correlation IDs", "correlation_ids"),
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
fn values(f: &Finding) -> [Value; 15] {
    let (pid, tid, device, context, stream) = match f.place {
        Place::Thread { pid, tid } => (Some(pid), Some(tid), None, None, None),
        Place::Gpu {
            pid,
            device,
            context,
            stream,
        } => (pid, None, Some(device), context, stream),
    };
    [
        Value::Text(f.rule.name().to_owned()),
        Value::Int(f.start),
        Value::Int(f.duration),
        opt(pid.map(i64::from)),
        opt(tid.map(i64::from)),
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
    ]
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

/// Writes `findings` (as [`super::analyze`] returns them) of `rules` in
/// `format`, at most `rows` per rule when given (the tables say how many
/// more there are).
pub fn write_findings(
    out: &mut dyn Write,
    findings: &[Finding],
    rules: &[Rule],
    format: Format,
    rows: Option<usize>,
) -> io::Result<()> {
    let of = |rule: Rule| {
        let all: Vec<&Finding> = findings.iter().filter(|f| f.rule == rule).collect();
        let shown = rows.map_or(all.len(), |n| n.min(all.len()));
        (all, shown)
    };
    match format {
        Format::Table => {
            for (i, &rule) in rules.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                let (all, shown) = of(rule);
                writeln!(out, "{} ({})", rule.title(), rule.name())?;
                if all.is_empty() {
                    writeln!(out, "  nothing found")?;
                    continue;
                }
                let columns = table_columns(rule);
                let mut cells: Vec<Vec<String>> =
                    vec![columns.iter().map(|&c| COLUMNS[c].0.to_owned()).collect()];
                for f in &all[..shown] {
                    let values = values(f);
                    cells.push(columns.iter().map(|&c| values[c].text()).collect());
                }
                write_aligned(out, &cells)?;
                if shown < all.len() {
                    writeln!(out, "  ... and {} more", all.len() - shown)?;
                }
            }
        }
        Format::Csv => {
            let header: Vec<&str> = COLUMNS.iter().map(|c| c.0).collect();
            writeln!(out, "{}", header.join(","))?;
            for &rule in rules {
                let (all, shown) = of(rule);
                for f in &all[..shown] {
                    let row: Vec<String> = values(f).iter().map(|v| csv_field(&v.text())).collect();
                    writeln!(out, "{}", row.join(","))?;
                }
            }
        }
        Format::Json => {
            writeln!(out, "[")?;
            let mut first = true;
            for &rule in rules {
                let (all, shown) = of(rule);
                for f in &all[..shown] {
                    let fields: Vec<String> = values(f)
                        .iter()
                        .zip(COLUMNS)
                        .map(|(v, (_, key))| format!("\"{key}\": {}", v.json()))
                        .collect();
                    let comma = if first { "" } else { ",\n" };
                    write!(out, "{comma}  {{{}}}", fields.join(", "))?;
                    first = false;
                }
            }
            if !first {
                writeln!(out)?;
            }
            writeln!(out, "]")?;
        }
    }
    Ok(())
}

/// Rows of cells, each column as wide as its widest cell; numbers to the right.
fn write_aligned(out: &mut dyn Write, cells: &[Vec<String>]) -> io::Result<()> {
    let columns = cells.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            cells
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in cells {
        let mut line = String::from(" ");
        for (c, cell) in row.iter().enumerate() {
            let numeric = cell.chars().all(|ch| ch.is_ascii_digit() || ch == '.');
            let pad = widths[c] - cell.chars().count();
            line.push(' ');
            if numeric {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
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
