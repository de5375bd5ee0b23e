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

/// A summary's rows, walked once to write CSV or JSON and twice for an
/// aligned table (its column widths first): held in memory, or read back
/// from a temporary file where they are many.
pub(crate) trait RowSource {
    /// Whether there is no row.
    fn is_empty(&self) -> bool;
    /// Calls `f` with each row, in order.
    fn each(&self, f: &mut dyn FnMut(&[Cell]) -> io::Result<()>) -> io::Result<()>;
}

/// A summary's rows, as [`RowSource`].
pub(crate) type Rows = Box<dyn RowSource>;

impl RowSource for Vec<Vec<Cell>> {
    fn is_empty(&self) -> bool {
        <[_]>::is_empty(self)
    }

    fn each(&self, f: &mut dyn FnMut(&[Cell]) -> io::Result<()>) -> io::Result<()> {
        self.iter().try_for_each(|row| f(row))
    }
}

impl Table {
    /// Writes the table as `format` says; `files` (the reports it is of,
    /// by path: one, or two compared, A then B) head the aligned table and
    /// the CSV, and go into JSON; `fit` says how long the aligned table's
    /// names may be.
    pub fn write(
        &self,
        out: &mut dyn Write,
        format: TableFormat,
        files: &[String],
        fit: Fit,
    ) -> io::Result<()> {
        self.write_rows(out, format, files, fit, &self.rows)
    }

    /// [`Table::write`] with the rows of `rows` in place of the table's own.
    pub(crate) fn write_rows(
        &self,
        out: &mut dyn Write,
        format: TableFormat,
        files: &[String],
        fit: Fit,
        rows: &dyn RowSource,
    ) -> io::Result<()> {
        match format {
            TableFormat::Csv => {
                out.write_all(csv_marker(&self.title, &self.name, files).as_bytes())?;
                self.write_csv(out, rows)
            }
            TableFormat::Table => self.write_aligned(out, files, fit, rows),
            TableFormat::Json => {
                out.write_all(json_head(&self.name, &self.title, files).as_bytes())?;
                self.write_json(out, rows)
            }
        }
    }

    /// The CSV of `nsys stats --format csv` (after the line that says which
    /// summary of which report it is).
    fn write_csv(&self, out: &mut dyn Write, rows: &dyn RowSource) -> io::Result<()> {
        let mut line = String::new();
        let mut put = |out: &mut dyn Write, cells: &mut dyn Iterator<Item = String>| {
            line.clear();
            for (c, cell) in cells.enumerate() {
                if c > 0 {
                    line.push(',');
                }
                line.push_str(&csv_field(&cell));
            }
            line.push('\n');
            out.write_all(line.as_bytes())
        };
        put(out, &mut self.columns.iter().cloned())?;
        rows.each(&mut |row| put(out, &mut row.iter().map(Cell::text)))
    }

    /// An aligned table: a first walk over the rows sizes the columns, a
    /// second writes them.
    fn write_aligned(
        &self,
        out: &mut dyn Write,
        files: &[String],
        fit: Fit,
        rows: &dyn RowSource,
    ) -> io::Result<()> {
        let of = files_label(files);
        writeln!(out, "\n** {} ({}) of {of}:\n", self.title, self.name)?;
        if rows.is_empty() {
            return match &self.no_data {
                Some(why) => writeln!(out, "   (no data: {why})"),
                None => writeln!(out, "   (no data)"),
            };
        }
        let columns = self.columns.len();
        let last = columns.saturating_sub(1);
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.chars().count()).collect();
        let mut numeric = vec![false; columns];
        let mut longest_last = 0;
        rows.each(&mut |row| {
            for (c, cell) in row.iter().enumerate().take(columns) {
                numeric[c] |= cell.is_number();
                let width = cell.text().chars().count();
                match c == last {
                    true => longest_last = longest_last.max(width),
                    false => widths[c] = widths[c].max(width),
                }
            }
            Ok(())
        })?;
        // A text last column is the names: cut to fit, the other columns as they are.
        let names = !numeric[last];
        let longest = match names {
            true => {
                let others: usize = widths[..last].iter().map(|w| w + 1).sum::<usize>() + 2;
                fit.longest_name(others)
            }
            false => usize::MAX,
        };
        widths[last] = widths[last].max(longest_last.min(longest));
        // Numbers are right-aligned, text left; the last column is not padded.
        let mut line = String::new();
        let mut render = |out: &mut dyn Write, cells: &[String]| {
            line.clear();
            line.push(' ');
            for (c, cell) in cells.iter().enumerate() {
                let w = widths[c];
                let last = c + 1 == cells.len();
                let _ = match (numeric[c], last) {
                    (true, _) => write!(line, " {cell:>w$}"),
                    (false, true) => write!(line, " {cell}"),
                    (false, false) => write!(line, " {cell:<w$}"),
                };
            }
            line.push('\n');
            out.write_all(line.as_bytes())
        };
        render(out, &self.columns)?;
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        render(out, &rule)?;
        rows.each(&mut |row| {
            let mut texts: Vec<String> = row.iter().map(Cell::text).collect();
            if names {
                cut(&mut texts[last], longest);
            }
            render(out, &texts)
        })
    }

    fn write_json(&self, out: &mut dyn Write, rows: &dyn RowSource) -> io::Result<()> {
        let keys: Vec<String> = self
            .columns
            .iter()
            .map(|c| json_string(&json_key(c)))
            .collect();
        let mut s = String::new();
        let mut first = true;
        rows.each(&mut |row| {
            s.clear();
            s.push_str(if first { "{" } else { ",{" });
            first = false;
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
                let _ = write!(s, "{}:{value}", keys[c]);
            }
            s.push('}');
            out.write_all(s.as_bytes())
        })?;
        out.write_all(json_tail(self.no_data.as_deref()).as_bytes())
    }
}

// The one shape of the text answers of `stats`, `compare` and `analyze`:
// each table is a block of CSV after a marker line, or a JSON object on a
// line of its own (JSON Lines) naming the table, its title and the reports
// it is of, its rows as objects keyed by column in snake case, and why it
// was skipped where the export lacks what it needs.

/// The reports a table is of, for people: the path, or for two compared
/// `A = path, B = path`.
pub(crate) fn files_label(files: &[String]) -> String {
    match files {
        [a, b] => format!("A = {a}, B = {b}"),
        files => files.join(", "),
    }
}

/// The line before a CSV table: `# CUDA API Summary (cuda_api_sum) of run.sqlite`.
pub(crate) fn csv_marker(title: &str, name: &str, files: &[String]) -> String {
    let of = files_label(files).replace(['\n', '\r'], " ");
    format!("# {title} ({name}) of {of}\n")
}

/// A column's key in JSON: its header in snake case, `%` as `percent`
/// (`Total Time (ns)`: `total_time_ns`; `Time (%)`: `time_percent`).
pub(crate) fn json_key(column: &str) -> String {
    let mut key = String::with_capacity(column.len() + 8);
    for c in column.replace('%', " percent ").chars() {
        match c.is_ascii_alphanumeric() {
            true => key.push(c.to_ascii_lowercase()),
            false if !key.is_empty() && !key.ends_with('_') => key.push('_'),
            false => {}
        }
    }
    while key.ends_with('_') {
        key.pop();
    }
    key
}

/// A table's JSON object up to its first row.
pub(crate) fn json_head(name: &str, title: &str, files: &[String]) -> String {
    let files: Vec<String> = files.iter().map(|f| json_string(f)).collect();
    format!(
        "{{\"table\":{},\"title\":{},\"files\":[{}],\"rows\":[",
        json_string(name),
        json_string(title),
        files.join(",")
    )
}

/// A table's JSON object after its last row, with why it was skipped.
pub(crate) fn json_tail(skipped: Option<&str>) -> String {
    match skipped {
        Some(why) => format!("],\"skipped\":{}}}\n", json_string(why)),
        None => "]}\n".to_owned(),
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
        t.write(&mut out, format, &["r".to_owned()], fit).unwrap();
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
            "# T (t) of r\nTotal,Avg,Name\n12,8164.9,\"f(a, \"\"b\"\")\"\n"
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
    fn json_escapes_and_keys_by_column_in_snake_case() {
        let text = written(&table(), TableFormat::Json, Fit::NSYS);
        assert_eq!(
            text,
            "{\"table\":\"t\",\"title\":\"T\",\"files\":[\"r\"],\"rows\":[\
             {\"total\":12,\"avg\":8164.9,\"name\":\"f(a, \\\"b\\\")\"}]}\n"
        );
    }

    #[test]
    fn json_keys_are_the_headers_in_snake_case() {
        let keys = [
            ("Time (%)", "time_percent"),
            ("Total Time (ns)", "total_time_ns"),
            ("StdDev (MB)", "stddev_mb"),
            ("GPU Time Change (%)", "gpu_time_change_percent"),
            ("In-Use (%)", "in_use_percent"),
            ("Correlation IDs", "correlation_ids"),
            ("Time(%)", "time_percent"),
        ];
        for (header, key) in keys {
            assert_eq!(json_key(header), key);
        }
    }
}
