//! A summary as rows of cells, and its three renderings: an aligned table
//! for people, CSV as `nsys stats --format csv` writes it, and JSON.

use std::fmt::Write as _;
use std::io::{self, Write};

/// A value of a summary.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// An integer.
    Int(i128),
    /// A real printed with this many decimals (as nsys rounds it).
    Real(f64, u8),
    /// Text.
    Text(String),
    /// No value (an average over nothing).
    Empty,
}

impl Cell {
    /// As CSV and the aligned table print it.
    pub fn text(&self) -> String {
        match self {
            Cell::Int(v) => v.to_string(),
            Cell::Real(v, decimals) => fixed(*v, usize::from(*decimals)),
            Cell::Text(s) => s.clone(),
            Cell::Empty => String::new(),
        }
    }

    fn is_number(&self) -> bool {
        matches!(self, Cell::Int(_) | Cell::Real(..))
    }
}

/// One summary of one report.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The summary's name (`cuda_api_sum`).
    pub name: String,
    /// What it is, for people (`CUDA API Summary`).
    pub title: String,
    /// The column headers.
    pub columns: Vec<String>,
    /// The rows, a cell per column.
    pub rows: Vec<Vec<Cell>>,
    /// Why there are no rows where the export lacks the tables the summary
    /// reads ("the export has no CUPTI_ACTIVITY_KIND_KERNEL").
    pub no_data: Option<String>,
}

/// How the text answers (summaries, comparisons, findings) are written: the
/// `--format` of `stats`, `compare` and `analyze`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableFormat {
    /// Aligned columns, numbers right-aligned, for a terminal.
    Table,
    /// Comma-separated, quoted where needed, headers first (for summaries,
    /// what `nsys stats --format csv` writes).
    Csv,
    /// For summaries, a JSON object per summary on a line of its own (JSON
    /// Lines): its name, title, the report's path and its rows as objects
    /// keyed by column; for findings, an array of objects, one per finding.
    Json,
}

/// How long the names (the last column) of an aligned table may be: names
/// of kernels and NVTX ranges run to thousands of characters. A cut name
/// ends in "…". CSV and JSON always hold them whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fit {
    /// Every name whole.
    Whole,
    /// Names of at most this many characters (nsys cuts them at 100).
    Names(usize),
    /// Lines of at most this many characters (a terminal's width), though a
    /// name keeps at least [`Fit::SHORTEST_NAME`] characters.
    Line(usize),
}

impl Fit {
    /// The fewest characters of a name kept on a narrow terminal.
    pub const SHORTEST_NAME: usize = 20;
    /// Where nsys cuts names.
    pub const NSYS: Fit = Fit::Names(100);

    /// The longest name in a table whose other columns take `others`
    /// characters of each line.
    fn longest_name(self, others: usize) -> usize {
        match self {
            Fit::Whole => usize::MAX,
            Fit::Names(n) => n.max(1),
            Fit::Line(line) => line.saturating_sub(others).max(Fit::SHORTEST_NAME),
        }
    }
}

/// `name`, cut to `longest` characters where longer, the last one "…".
fn cut(name: &mut String, longest: usize) {
    if let Some((at, _)) = name.char_indices().nth(longest) {
        let keep = name[..at].char_indices().last().map_or(0, |(i, _)| i);
        name.truncate(keep);
        name.push('…');
    }
}

impl std::str::FromStr for TableFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "table" => Ok(TableFormat::Table),
            "csv" => Ok(TableFormat::Csv),
            "json" => Ok(TableFormat::Json),
            _ => Err(format!("unknown format {s:?} (table, csv or json)")),
        }
    }
}

impl Table {
    /// Writes the table as `format` says; `source` (the report's path) heads
    /// the aligned table and goes into JSON; `fit` says how long the aligned
    /// table's names may be.
    pub fn write(
        &self,
        out: &mut dyn Write,
        format: TableFormat,
        source: &str,
        fit: Fit,
    ) -> io::Result<()> {
        match format {
            TableFormat::Csv => self.write_csv(out),
            TableFormat::Table => self.write_aligned(out, source, fit),
            TableFormat::Json => self.write_json(out, source),
        }
    }

    fn write_csv(&self, out: &mut dyn Write) -> io::Result<()> {
        let line = |cells: Vec<String>| {
            cells
                .iter()
                .map(|c| csv_field(c))
                .collect::<Vec<_>>()
                .join(",")
        };
        writeln!(out, "{}", line(self.columns.clone()))?;
        for row in &self.rows {
            writeln!(out, "{}", line(row.iter().map(Cell::text).collect()))?;
        }
        Ok(())
    }

    fn write_aligned(&self, out: &mut dyn Write, source: &str, fit: Fit) -> io::Result<()> {
        writeln!(out, "\n** {} ({}) of {source}:\n", self.title, self.name)?;
        if self.rows.is_empty() {
            return match &self.no_data {
                Some(why) => writeln!(out, "   (no data: {why})"),
                None => writeln!(out, "   (no data)"),
            };
        }
        let mut texts: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| r.iter().map(Cell::text).collect())
            .collect();
        let width = |texts: &[Vec<String>], c: usize| {
            texts
                .iter()
                .map(|r| r[c].chars().count())
                .chain([self.columns[c].chars().count()])
                .max()
                .unwrap_or(0)
        };
        // A text last column is the names: cut to fit, the other columns as they are.
        let last = self.columns.len().saturating_sub(1);
        if !self.rows.iter().any(|r| r[last].is_number()) {
            let others: usize = (0..last).map(|c| width(&texts, c) + 1).sum::<usize>() + 2;
            let longest = fit.longest_name(others);
            for row in &mut texts {
                cut(&mut row[last], longest);
            }
        }
        let widths: Vec<usize> = (0..self.columns.len()).map(|c| width(&texts, c)).collect();
        // Numbers are right-aligned, text left; the last column is not padded.
        let numeric: Vec<bool> = (0..self.columns.len())
            .map(|c| self.rows.iter().any(|r| r[c].is_number()))
            .collect();
        let render = |cells: &[String]| {
            let mut line = String::from(" ");
            for (c, cell) in cells.iter().enumerate() {
                let w = widths[c];
                let last = c + 1 == cells.len();
                let _ = match (numeric[c], last) {
                    (true, _) => write!(line, " {cell:>w$}"),
                    (false, true) => write!(line, " {cell}"),
                    (false, false) => write!(line, " {cell:<w$}"),
                };
            }
            line
        };
        writeln!(out, "{}", render(&self.columns))?;
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        writeln!(out, "{}", render(&rule))?;
        for row in &texts {
            writeln!(out, "{}", render(row))?;
        }
        Ok(())
    }

    fn write_json(&self, out: &mut dyn Write, source: &str) -> io::Result<()> {
        let mut s = String::new();
        let _ = write!(
            s,
            "{{\"report\":{},\"summary\":{},\"title\":{},\"rows\":[",
            json_string(source),
            json_string(&self.name),
            json_string(&self.title)
        );
        for (i, row) in self.rows.iter().enumerate() {
            s.push_str(if i == 0 { "{" } else { ",{" });
            for (c, cell) in row.iter().enumerate() {
                if c > 0 {
                    s.push(',');
                }
                let value = match cell {
                    Cell::Int(v) => v.to_string(),
                    Cell::Real(v, _) if v.is_finite() => cell.text(),
                    Cell::Real(..) | Cell::Empty => "null".to_owned(),
                    Cell::Text(t) => json_string(t),
                };
                let _ = write!(s, "{}:{value}", json_string(&self.columns[c]));
            }
            s.push('}');
        }
        s.push(']');
        if let Some(why) = &self.no_data {
            let _ = write!(s, ",\"no_data\":{}", json_string(why));
        }
        s.push_str("}\n");
        out.write_all(s.as_bytes())
    }
}

/// `v` with `decimals` decimals, rounded as nsys 2025.3 rounds: the exact
/// binary value, half away from zero (8164.95 is 8164.9499... and prints
/// 8164.9; 958200.25 is exact and prints 958200.3).
pub(crate) fn fixed(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    // Far more digits than a double of these magnitudes has: exact.
    let exact = format!("{:.80}", v.abs());
    let (int, frac) = exact.split_once('.').expect("a fixed-point number");
    let mut digits: Vec<u8> = int.bytes().chain(frac[..decimals].bytes()).collect();
    if frac.as_bytes()[decimals] >= b'5' {
        let mut at = digits.len();
        loop {
            if at == 0 {
                digits.insert(0, b'1');
                break;
            }
            at -= 1;
            if digits[at] == b'9' {
                digits[at] = b'0';
            } else {
                digits[at] += 1;
                break;
            }
        }
    }
    let point = digits.len() - decimals;
    let mut out = String::with_capacity(digits.len() + 2);
    if v < 0.0 && digits.iter().any(|&d| d != b'0') {
        out.push('-');
    }
    out.push_str(std::str::from_utf8(&digits[..point]).expect("digits"));
    if decimals > 0 {
        out.push('.');
        out.push_str(std::str::from_utf8(&digits[point..]).expect("digits"));
    }
    out
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    match s.contains([',', '"', '\n', '\r']) {
        true => format!("\"{}\"", s.replace('"', "\"\"")),
        false => s.to_owned(),
    }
}

/// A JSON string literal.
pub(crate) fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The cells that say how a set of values spreads: average, median,
/// minimum, maximum, standard deviation.
pub(super) fn spread_cells(s: &super::Stats) -> [Cell; 5] {
    [
        Cell::Real(s.mean, 1),
        Cell::Real(s.median, 1),
        Cell::Int(i128::from(s.min)),
        Cell::Int(i128::from(s.max)),
        Cell::Real(s.stddev, 1),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            name: "t".into(),
            title: "T".into(),
            columns: vec!["Total".into(), "Avg".into(), "Name".into()],
            rows: vec![vec![
                Cell::Int(12),
                Cell::Real(8164.95, 1),
                Cell::Text("f(a, \"b\")".into()),
            ]],
            no_data: None,
        }
    }

    /// `t` written in `format`, names fitted to `fit`.
    fn written(t: &Table, format: TableFormat, fit: Fit) -> String {
        let mut out = Vec::new();
        t.write(&mut out, format, "r", fit).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn long_names_are_cut_to_fit_in_the_aligned_table_only() {
        let mut t = table();
        t.rows[0][2] = Cell::Text("é".repeat(150));
        let text = |format, fit| written(&t, format, fit);
        let nsys = text(TableFormat::Table, Fit::NSYS);
        let cut = format!("{}…", "é".repeat(99));
        assert!(
            nsys.lines().any(|l| l.ends_with(&format!(" {cut}"))),
            "{nsys}"
        );
        assert!(!nsys.contains(&"é".repeat(100)));
        assert!(text(TableFormat::Table, Fit::Whole).contains(&"é".repeat(150)));
        assert!(text(TableFormat::Csv, Fit::NSYS).contains(&"é".repeat(150)));
        // An 80-column line: the row is exactly 80 characters long.
        let line = text(TableFormat::Table, Fit::Line(80));
        let row = line.lines().find(|l| l.contains('é')).unwrap();
        assert_eq!(row.chars().count(), 80, "{row}");
        assert!(row.ends_with('…'));
        // Too narrow a line still shows some of each name.
        let narrow = text(TableFormat::Table, Fit::Line(10));
        let row = narrow.lines().find(|l| l.contains('é')).unwrap();
        assert!(row.ends_with(&format!(" {}…", "é".repeat(Fit::SHORTEST_NAME - 1))));
    }

    #[test]
    fn csv_quotes_names_with_commas_and_rounds_the_binary_value() {
        // 8164.95 is 8164.94999... in binary: it rounds down, as nsys 2025.3 prints it.
        assert_eq!(
            written(&table(), TableFormat::Csv, Fit::NSYS),
            "Total,Avg,Name\n12,8164.9,\"f(a, \"\"b\"\")\"\n"
        );
    }

    #[test]
    fn ties_round_away_from_zero() {
        assert_eq!(fixed(958200.25, 1), "958200.3");
        assert_eq!(fixed(8164.95, 1), "8164.9");
        assert_eq!(fixed(-0.25, 1), "-0.3");
        assert_eq!(fixed(-0.01, 1), "0.0");
        assert_eq!(fixed(9.96, 1), "10.0");
        assert_eq!(fixed(99.5, 0), "100");
        assert_eq!(fixed(0.0004, 3), "0.000");
    }

    #[test]
    fn json_escapes_and_keys_by_column() {
        let text = written(&table(), TableFormat::Json, Fit::NSYS);
        assert!(text.contains(r#"{"Total":12,"Avg":8164.9,"Name":"f(a, \"b\")"}"#));
    }
}
