//! Findings as text ([`TableFormat`]), written by the one table writer
//! ([`crate::render::table`]): aligned tables for people (a table per rule,
//! with the columns `nsys analyze` prints), one CSV table of every finding
//! (alone in its output: its header first), or in JSON an object per rule,
//! as `stats` writes its summaries.
//! A rule skipped for want of data says so and why: in the tables under its
//! heading, in CSV as a row of its own (before the findings) with only the
//! rule and the reason ("Skipped"), in JSON as its object's `skipped`.
//! A rule whose findings are incomplete (a table it depends on could not be
//! read) says so and why: under its heading, in CSV on `# incomplete:`
//! lines before the header, in JSON as its object's `incomplete`.

use std::io::{self, Write};

use super::{Finding, Findings, Rule};
use crate::render::markdown::write_markdown;
use crate::render::table::{write_aligned, write_csv, write_csv_incomplete, write_json};
use crate::render::table::{Cell, JsonHead, RowSource};
use crate::render::table::{Fit, TableFormat};

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

fn opt(v: Option<i64>) -> Cell {
    v.map_or(Cell::Empty, |v| Cell::Int(i128::from(v)))
}

fn opt_text(v: Option<&str>) -> Cell {
    v.map_or(Cell::Empty, |t| Cell::Text(t.to_owned()))
}

/// The finding's cells, in [`COLUMNS`] order.
fn cells(f: &Finding) -> [Cell; 16] {
    let [pid, tid, device, context, stream] = f.place.ids().map(|(_, id)| id);
    [
        Cell::Text(f.rule.name().to_owned()),
        Cell::Int(i128::from(f.start)),
        Cell::Int(i128::from(f.duration)),
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
        f.in_use_percent.map_or(Cell::Empty, |p| Cell::Real(p, 1)),
        Cell::Ints(f.correlation_ids.clone()),
        Cell::Empty,
    ]
}

/// The row of a rule skipped for the reason `why`, in [`COLUMNS`] order.
fn skipped_cells(rule: Rule, why: &str) -> Vec<Cell> {
    let mut cells = vec![Cell::Empty; COLUMNS.len()];
    cells[0] = Cell::Text(rule.name().to_owned());
    cells[14] = Cell::Ints(Vec::new());
    cells[15] = Cell::Text(why.to_owned());
    cells
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

/// How many findings of a rule are written: all, or at most `rows`.
fn shown(findings: &Findings, rule: Rule, rows: Option<usize>) -> usize {
    let all = findings.count(rule);
    rows.map_or(all, |n| n.min(all))
}

/// The findings of one rule shown in its table, read from `findings` each
/// time they are walked, as cells of its table's columns.
struct RuleRows<'f> {
    findings: &'f Findings,
    rule: Rule,
    shown: usize,
}

impl RowSource for RuleRows<'_> {
    fn is_empty(&self) -> bool {
        self.shown == 0
    }

    fn each(&self, f: &mut dyn FnMut(&[Cell]) -> io::Result<()>) -> io::Result<()> {
        let columns = table_columns(self.rule);
        let mut written = 0;
        for found in self.findings.iter()? {
            if written == self.shown {
                break;
            }
            let found = found?;
            if found.rule != self.rule {
                continue;
            }
            written += 1;
            let mut all = cells(&found).map(Some);
            let row: Vec<Cell> = columns
                .iter()
                .map(|&c| all[c].take().expect("once"))
                .collect();
            f(&row)?;
        }
        Ok(())
    }

    fn left_out(&self) -> usize {
        self.findings.count(self.rule) - self.shown
    }
}

/// Every finding shown, of every rule, after a row per rule skipped: the
/// one CSV table.
struct AllRows<'f> {
    findings: &'f Findings,
    rows: Option<usize>,
}

impl RowSource for AllRows<'_> {
    fn is_empty(&self) -> bool {
        false
    }

    fn each(&self, f: &mut dyn FnMut(&[Cell]) -> io::Result<()>) -> io::Result<()> {
        let rules = self.findings.rules();
        for (rule, why) in skipped(self.findings) {
            f(&skipped_cells(rule, why))?;
        }
        let mut written = vec![0; rules.len()];
        for found in self.findings.iter()? {
            let found = found?;
            let Some(i) = rules.iter().position(|&r| r == found.rule) else {
                continue;
            };
            if written[i] < shown(self.findings, rules[i], self.rows) {
                written[i] += 1;
                f(&cells(&found))?;
            }
        }
        Ok(())
    }
}

/// Writes `findings` (as [`super::analyze`] returns them: rule by rule, in
/// the order of the rules it ran) of the report `file` in `format`, at most
/// `rows` per rule when given (the tables and JSON say how many more there
/// are). Findings are read from `findings` as they are written, twice for
/// the tables (once to size their columns): memory holds a few at a time.
pub fn write_findings(
    out: &mut dyn Write,
    findings: &Findings,
    file: &str,
    format: TableFormat,
    rows: Option<usize>,
) -> io::Result<()> {
    let rules = findings.rules();
    let rule_rows = |rule: Rule| RuleRows {
        findings,
        rule,
        shown: shown(findings, rule, rows),
    };
    match format {
        TableFormat::Table => {
            for (i, &rule) in rules.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                writeln!(out, "{} ({})", rule.title(), rule.name())?;
                for line in findings.incomplete(rule) {
                    writeln!(out, "  INCOMPLETE: {line}")?;
                }
                if let Some(why) = findings.skipped(rule) {
                    writeln!(out, "  SKIPPED: {why}")?;
                } else if findings.count(rule) == 0 {
                    writeln!(out, "  nothing found")?;
                } else {
                    write_aligned(out, &headers(rule), &rule_rows(rule), Fit::Whole)?;
                }
            }
        }
        TableFormat::Markdown => {
            for &rule in rules {
                writeln!(out, "\n### {} ({})\n", rule.title(), rule.name())?;
                for line in findings.incomplete(rule) {
                    writeln!(out, "> **Incomplete:** {line}\n")?;
                }
                if let Some(why) = findings.skipped(rule) {
                    writeln!(out, "_Skipped: {why}_")?;
                } else if findings.count(rule) == 0 {
                    writeln!(out, "_Nothing found_")?;
                } else {
                    write_markdown(out, &headers(rule), &rule_rows(rule))?;
                }
            }
        }
        TableFormat::Csv => {
            let columns: Vec<String> = COLUMNS.iter().map(|c| (*c).to_owned()).collect();
            let incomplete: Vec<String> = rules
                .iter()
                .flat_map(|&rule| {
                    let lines = findings.incomplete(rule).iter();
                    lines.map(move |line| format!("{}: {line}", rule.name()))
                })
                .collect();
            write_csv_incomplete(out, &incomplete)?;
            write_csv(out, &columns, &AllRows { findings, rows })?;
        }
        TableFormat::Json => {
            let files = [file.to_owned()];
            for &rule in rules {
                let head = JsonHead {
                    name: rule.name(),
                    title: rule.title(),
                    files: &files,
                    incomplete: findings.incomplete(rule),
                };
                let skipped = findings.skipped(rule);
                write_json(out, &head, &headers(rule), &rule_rows(rule), skipped)?;
            }
        }
    }
    Ok(())
}

/// The columns of a rule's table (and its JSON object's rows).
fn headers(rule: Rule) -> Vec<String> {
    table_columns(rule)
        .iter()
        .map(|&c| COLUMNS[c].to_owned())
        .collect()
}

/// One rule's findings as a table of cells, as the tables and JSON show
/// them: for pages that lay them out themselves.
pub(crate) struct RuleTable {
    pub(crate) rule: Rule,
    /// Its columns' headers.
    pub(crate) columns: Vec<String>,
    /// The findings shown, as cells of those columns.
    pub(crate) rows: Vec<Vec<Cell>>,
    /// Why the rule was skipped, where it was.
    pub(crate) skipped: Option<String>,
    /// Why its findings are incomplete, a line each.
    pub(crate) incomplete: Vec<String>,
}

/// The table of each rule of `findings`, in the order the rules ran, at
/// most `rows` findings each.
pub(crate) fn rule_tables(findings: &Findings, rows: Option<usize>) -> io::Result<Vec<RuleTable>> {
    let tables = findings.rules().iter().map(|&rule| {
        let mut cells = Vec::new();
        let source = RuleRows {
            findings,
            rule,
            shown: shown(findings, rule, rows),
        };
        source.each(&mut |row| {
            cells.push(row.to_vec());
            Ok(())
        })?;
        Ok(RuleTable {
            rule,
            columns: headers(rule),
            rows: cells,
            skipped: findings.skipped(rule).map(str::to_owned),
            incomplete: findings.incomplete(rule).to_vec(),
        })
    });
    tables.collect()
}

/// The rules skipped, in the order they were asked for, with the reason.
fn skipped(findings: &Findings) -> impl Iterator<Item = (Rule, &str)> {
    findings
        .rules()
        .iter()
        .filter_map(|&r| findings.skipped(r).map(|why| (r, why)))
}
