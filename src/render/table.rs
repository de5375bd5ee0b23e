//! Tables, written one way for every command (`stats`, `analyze`,
//! `compare`, `report`'s summaries): aligned text for people, CSV as
//! `nsys stats --format csv` writes it, and JSON Lines.
//!
//! A table alone in its output (a file, or the one table a command prints)
//! is nothing but itself: CSV starts with its header, so that pandas,
//! polars, Python's `csv` and spreadsheets read it as it is. Only where
//! several tables share one stream (standard output) does a CSV table
//! follow a line that says which it is, `# TITLE (NAME) of FILE`; in JSON
//! Lines every table names itself.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde::ser::{Error as _, SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use super::escape::{csv_field, JsonCompact};

/// A value of a table.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// An integer.
    Int(i128),
    /// A real printed with this many decimals (as nsys rounds it).
    Real(f64, u8),
    /// Text.
    Text(String),
    /// A list of integers (correlation ids): space-separated in text and
    /// CSV, an array in JSON.
    Ints(Vec<i64>),
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
            Cell::Ints(ids) => {
                let texts: Vec<String> = ids.iter().map(i64::to_string).collect();
                texts.join(" ")
            }
            Cell::Empty => String::new(),
        }
    }

    fn is_number(&self) -> bool {
        matches!(self, Cell::Int(_) | Cell::Real(..))
    }
}

/// One table: a summary of a report, a comparison, a rule's findings.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The table's name (`cuda_api_sum`).
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
    /// Why its numbers are incomplete, a line each: tables they depend on
    /// that could not be read (see [`crate::Unreadable::warning`]). Empty
    /// for a table whose every source was read.
    pub incomplete: Vec<String>,
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
    /// A JSON object per table on a line of its own (JSON Lines): its name,
    /// title, the reports it is of and its rows as objects keyed by column.
    Json,
    /// Markdown: a heading and a pipe table per table, for a pull request's
    /// comment (`md`).
    Markdown,
}

impl std::str::FromStr for TableFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "table" => Ok(TableFormat::Table),
            "csv" => Ok(TableFormat::Csv),
            "json" => Ok(TableFormat::Json),
            "md" | "markdown" => Ok(TableFormat::Markdown),
            _ => Err(format!("unknown format {s:?} (table, csv, json or md)")),
        }
    }
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

/// Whether a table has its output to itself or shares it with others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sharing {
    /// The only table of its output: CSV is the header and the rows.
    Alone,
    /// One of several tables in one stream: CSV follows a line naming it.
    Shared,
}

/// As JSON holds a cell: numbers as numbers (a real with its decimals, as
/// the text prints it), text as strings, lists as arrays, no value (and a
/// real that is not finite) as `null`.
impl Serialize for Cell {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Cell::Int(v) => s.serialize_i128(*v),
            Cell::Real(v, _) if v.is_finite() => {
                let number = serde_json::value::RawValue::from_string(self.text());
                number.map_err(S::Error::custom)?.serialize(s)
            }
            Cell::Real(..) | Cell::Empty => s.serialize_none(),
            Cell::Text(t) => s.serialize_str(t),
            Cell::Ints(ids) => ids.serialize(s),
        }
    }
}

/// A table's rows, walked once to write CSV or JSON and twice for an
/// aligned table (its column widths first): held in memory, or read back
/// from a temporary file where they are many.
pub(crate) trait RowSource {
    /// Whether there is no row.
    fn is_empty(&self) -> bool;
    /// Calls `f` with each row, in order.
    fn each(&self, f: &mut dyn FnMut(&[Cell]) -> io::Result<()>) -> io::Result<()>;
    /// How many rows there are beyond those walked (a row limit cut them):
    /// the table says so.
    fn left_out(&self) -> usize {
        0
    }
}

/// A table's rows, as [`RowSource`].
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
    /// Writes the table, alone in `out`, as `format` says; `files` (the
    /// reports it is of, by path: one, or two compared, A then B) head the
    /// aligned table and go into JSON; `fit` says how long the aligned
    /// table's names may be.
    pub fn write(
        &self,
        out: &mut dyn Write,
        format: TableFormat,
        files: &[String],
        fit: Fit,
    ) -> io::Result<()> {
        let layout = Layout {
            format,
            files,
            fit,
            sharing: Sharing::Alone,
        };
        self.write_rows(out, &layout, &self.rows)
    }

    /// [`Table::write`] with the rows of `rows` in place of the table's
    /// own, laid out as `layout` says.
    pub(crate) fn write_rows(
        &self,
        out: &mut dyn Write,
        layout: &Layout<'_>,
        rows: &dyn RowSource,
    ) -> io::Result<()> {
        match layout.format {
            TableFormat::Csv => {
                if layout.sharing == Sharing::Shared {
                    out.write_all(csv_marker(&self.title, &self.name, layout.files).as_bytes())?;
                }
                write_csv_incomplete(out, &self.incomplete)?;
                write_csv(out, &self.columns, rows)
            }
            TableFormat::Table => {
                let of = files_label(layout.files);
                writeln!(out, "\n** {} ({}) of {of}:\n", self.title, self.name)?;
                write_text_incomplete(out, &self.incomplete)?;
                if rows.is_empty() {
                    return match &self.no_data {
                        Some(why) => writeln!(out, "   (no data: {why})"),
                        None => writeln!(out, "   (no data)"),
                    };
                }
                write_aligned(out, &self.columns, rows, layout.fit)
            }
            TableFormat::Markdown => {
                let of = files_label(layout.files);
                writeln!(
                    out,
                    "\n### {} of {}\n",
                    self.title,
                    super::markdown::escaped(&of)
                )?;
                for line in &self.incomplete {
                    writeln!(out, "> **Incomplete:** {line}\n")?;
                }
                if rows.is_empty() {
                    return match &self.no_data {
                        Some(why) => writeln!(out, "_No data: {why}_"),
                        None => writeln!(out, "_No data_"),
                    };
                }
                super::markdown::write_markdown(out, &self.columns, rows)
            }
            TableFormat::Json => {
                let head = JsonHead {
                    name: &self.name,
                    title: &self.title,
                    files: layout.files,
                    incomplete: &self.incomplete,
                };
                write_json(out, &head, &self.columns, rows, self.no_data.as_deref())
            }
        }
    }
}

/// How a table is laid out in its output.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout<'f> {
    /// Aligned text, CSV or JSON Lines.
    pub(crate) format: TableFormat,
    /// The reports the table is of (one, or two compared, A then B).
    pub(crate) files: &'f [String],
    /// How long the names of an aligned table may be.
    pub(crate) fit: Fit,
    /// Whether other tables share its output.
    pub(crate) sharing: Sharing,
}

/// The header and rows of a CSV table.
pub(crate) fn write_csv(
    out: &mut dyn Write,
    columns: &[String],
    rows: &dyn RowSource,
) -> io::Result<()> {
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
    put(out, &mut columns.iter().cloned())?;
    rows.each(&mut |row| put(out, &mut row.iter().map(Cell::text)))
}

/// An aligned table (header, a rule, the rows, and how many more rows there
/// were where a limit cut them): a first walk over the rows sizes the
/// columns, a second writes them. A column of numbers is right-aligned, its
/// header too; text is left-aligned; the last column is the names where it
/// is text, cut to `fit`. Lines end without spaces.
pub(crate) fn write_aligned(
    out: &mut dyn Write,
    columns: &[String],
    rows: &dyn RowSource,
    fit: Fit,
) -> io::Result<()> {
    let shape = Shape::of(columns, rows)?;
    let last = columns.len().saturating_sub(1);
    // A text last column is the names: cut to fit, the other columns as they are.
    let names = !shape.numeric[last];
    let longest = match names {
        true => fit.longest_name(shape.others()),
        false => usize::MAX,
    };
    let mut widths = shape.widths.clone();
    widths[last] = widths[last].max(shape.longest_last.min(longest));
    let mut line = String::new();
    let mut render = |out: &mut dyn Write, cells: &[String]| {
        line.clear();
        line.push(' ');
        for (c, cell) in cells.iter().enumerate() {
            let w = widths[c];
            let _ = match (shape.numeric[c], c == last) {
                (true, _) => write!(line, " {cell:>w$}"),
                (false, true) => write!(line, " {cell}"),
                (false, false) => write!(line, " {cell:<w$}"),
            };
        }
        while line.ends_with(' ') {
            line.pop();
        }
        line.push('\n');
        out.write_all(line.as_bytes())
    };
    render(out, columns)?;
    let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
    render(out, &rule)?;
    rows.each(&mut |row| {
        let mut texts: Vec<String> = row.iter().map(Cell::text).collect();
        if names {
            cut(&mut texts[last], longest);
        }
        render(out, &texts)
    })?;
    match rows.left_out() {
        0 => Ok(()),
        more => writeln!(out, "  ... and {more} more"),
    }
}

/// The widths an aligned table's columns take.
struct Shape {
    /// Each column's width but the last's: its header's or its widest cell's.
    widths: Vec<usize>,
    /// Whether a column holds numbers (right-aligned).
    numeric: Vec<bool>,
    /// The widest cell of the last column.
    longest_last: usize,
}

impl Shape {
    fn of(columns: &[String], rows: &dyn RowSource) -> io::Result<Shape> {
        let count = columns.len();
        let last = count.saturating_sub(1);
        let mut widths: Vec<usize> = columns.iter().map(|c| c.chars().count()).collect();
        let mut numeric = vec![false; count];
        let mut longest_last = 0;
        rows.each(&mut |row| {
            for (c, cell) in row.iter().enumerate().take(count) {
                numeric[c] |= cell.is_number();
                let width = cell.text().chars().count();
                match c == last {
                    true => longest_last = longest_last.max(width),
                    false => widths[c] = widths[c].max(width),
                }
            }
            Ok(())
        })?;
        Ok(Shape {
            widths,
            numeric,
            longest_last,
        })
    }

    /// The characters of a line before the last column's text.
    fn others(&self) -> usize {
        let last = self.widths.len().saturating_sub(1);
        self.widths[..last].iter().map(|w| w + 1).sum::<usize>() + 2
    }
}

/// Leaves out of an aligned `table` the columns named in `order`, first to
/// last, until its lines fit in `line` characters with the names (its last
/// column) at least [`Fit::SHORTEST_NAME`] long, or none is left to leave
/// out. Returns the headers of the columns left out.
pub(crate) fn leave_out_to_fit(table: &mut Table, line: usize, order: &[&str]) -> Vec<String> {
    let mut left_out = Vec::new();
    for header in order {
        let shape = Shape::of(&table.columns, &table.rows).expect("rows in memory");
        let names = shape.longest_last.min(Fit::SHORTEST_NAME);
        if shape.others() + names <= line {
            break;
        }
        if let Some(at) = table.columns.iter().position(|c| c == header) {
            table.columns.remove(at);
            for row in &mut table.rows {
                if at < row.len() {
                    row.remove(at);
                }
            }
            left_out.push((*header).to_owned());
        }
    }
    left_out
}

/// What a table's JSON object says of it before its rows.
pub(crate) struct JsonHead<'t> {
    /// The table's name (a summary, a rule, `compare`).
    pub(crate) name: &'t str,
    /// What it is, for people.
    pub(crate) title: &'t str,
    /// The reports it is of.
    pub(crate) files: &'t [String],
    /// Why its numbers are incomplete ([`Table::incomplete`]).
    pub(crate) incomplete: &'t [String],
}

/// A table as one JSON object on a line of its own: its name, title and
/// files, its rows as objects keyed by column in snake case, how many rows
/// a limit left out (`more_rows`, where it did), why it has none where
/// it could not be made (`skipped`), and why its numbers are incomplete
/// (`incomplete`, a line each, where they are).
pub(crate) fn write_json(
    out: &mut dyn Write,
    head: &JsonHead<'_>,
    columns: &[String],
    rows: &dyn RowSource,
    skipped: Option<&str>,
) -> io::Result<()> {
    let keys: Vec<String> = columns.iter().map(|c| json_key(c)).collect();
    let table = JsonTable {
        head,
        keys: &keys,
        rows,
        skipped,
    };
    let mut json = serde_json::Serializer::with_formatter(&mut *out, JsonCompact);
    table.serialize(&mut json).map_err(io::Error::from)?;
    out.write_all(b"\n")
}

/// A table as one JSON object (see [`write_json`]), its rows streamed from
/// their source as they are written.
struct JsonTable<'a> {
    head: &'a JsonHead<'a>,
    keys: &'a [String],
    rows: &'a dyn RowSource,
    skipped: Option<&'a str>,
}

impl Serialize for JsonTable<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("table", self.head.name)?;
        map.serialize_entry("title", self.head.title)?;
        map.serialize_entry("files", self.head.files)?;
        let rows = JsonRows {
            keys: self.keys,
            rows: self.rows,
        };
        map.serialize_entry("rows", &rows)?;
        // Known once the rows are walked.
        match self.rows.left_out() {
            0 => {}
            more => map.serialize_entry("more_rows", &more)?,
        }
        if let Some(why) = self.skipped {
            map.serialize_entry("skipped", why)?;
        }
        if !self.head.incomplete.is_empty() {
            map.serialize_entry("incomplete", self.head.incomplete)?;
        }
        map.end()
    }
}

/// The rows of a table, each an object keyed by column.
struct JsonRows<'a> {
    keys: &'a [String],
    rows: &'a dyn RowSource,
}

impl Serialize for JsonRows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        let mut failed = None;
        let walked = self.rows.each(&mut |row| {
            let row = JsonRow {
                keys: self.keys,
                row,
            };
            seq.serialize_element(&row).map_err(|e| {
                failed = Some(e);
                io::Error::other("a row could not be written")
            })
        });
        if let Some(e) = failed {
            return Err(e);
        }
        walked.map_err(S::Error::custom)?;
        seq.end()
    }
}

struct JsonRow<'a> {
    keys: &'a [String],
    row: &'a [Cell],
}

impl Serialize for JsonRow<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.row.len()))?;
        for (key, cell) in self.keys.iter().zip(self.row) {
            map.serialize_entry(key, cell)?;
        }
        map.end()
    }
}

/// The reports a table is of, for people: the path, or for two compared
/// `A = path, B = path`.
pub(crate) fn files_label(files: &[String]) -> String {
    match files {
        [a, b] => format!("A = {a}, B = {b}"),
        files => files.join(", "),
    }
}

/// The lines before a CSV table whose numbers are incomplete, saying why:
/// `# incomplete: LINE`. A reader of CSV stops at them rather than take
/// smaller numbers for whole ones; one who knows may skip them (pandas'
/// `skiprows`).
pub(crate) fn write_csv_incomplete(out: &mut dyn Write, incomplete: &[String]) -> io::Result<()> {
    for line in incomplete {
        writeln!(out, "# incomplete: {}", line.replace(['\n', '\r'], " "))?;
    }
    Ok(())
}

/// The lines under an aligned table's heading whose numbers are
/// incomplete, saying why.
pub(crate) fn write_text_incomplete(out: &mut dyn Write, incomplete: &[String]) -> io::Result<()> {
    for line in incomplete {
        writeln!(out, "   INCOMPLETE: {line}")?;
    }
    if !incomplete.is_empty() {
        writeln!(out)?;
    }
    Ok(())
}

/// The line before a CSV table that shares its output with others:
/// `# CUDA API Summary (cuda_api_sum) of run.sqlite`.
fn csv_marker(title: &str, name: &str, files: &[String]) -> String {
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

/// `name`, cut to `longest` characters where longer, the last one "…".
fn cut(name: &mut String, longest: usize) {
    if let Some((at, _)) = name.char_indices().nth(longest) {
        let keep = name[..at].char_indices().last().map_or(0, |(i, _)| i);
        name.truncate(keep);
        name.push('…');
    }
}

/// `v` with `decimals` decimals, rounded as nsys 2025.3 rounds: the exact
/// binary value, half away from zero (8164.95 is 8164.9499... and prints
/// 8164.9; 958200.25 is exact and prints 958200.3).
pub(crate) fn fixed(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    match fixed_by_integers(v, decimals) {
        Some(text) => text,
        None => fixed_by_text(v, decimals),
    }
}

/// [`fixed`] in integer arithmetic, where the scaled value fits: a double
/// is `m * 2^e` exactly, so `v * 10^decimals` is `m * 10^decimals / 2^-e`,
/// whose quotient is the digits and whose remainder says whether the next
/// digit is 5 or more. Printing 80 decimals to find the same digits was a
/// fifth of `stats` on a report of many distinct NVTX names (a row each).
fn fixed_by_integers(v: f64, decimals: usize) -> Option<String> {
    let scale = 10u128.checked_pow(u32::try_from(decimals).ok().filter(|&d| d <= 18)?)?;
    let bits = v.abs().to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = u128::from(bits & ((1 << 52) - 1));
    let (mantissa, exponent) = match exponent {
        0 => (fraction, -1074),
        e => (fraction | (1 << 52), e - 1075),
    };
    let scaled = mantissa * scale;
    let digits = match exponent {
        // An integer: no digit to round at.
        0.. => {
            let shift = exponent.unsigned_abs();
            (scaled.leading_zeros() > shift).then(|| scaled << shift)?
        }
        // Below every digit kept, and below half of the last.
        ..=-128 => 0,
        _ => {
            let shift = exponent.unsigned_abs();
            let (quotient, remainder) = (scaled >> shift, scaled & ((1 << shift) - 1));
            quotient + u128::from(remainder >= 1 << (shift - 1))
        }
    };
    let (int, frac) = (digits / scale, digits % scale);
    let sign = match v < 0.0 && digits != 0 {
        true => "-",
        false => "",
    };
    Some(match decimals {
        0 => format!("{sign}{int}"),
        _ => format!("{sign}{int}.{frac:0decimals$}"),
    })
}

/// [`fixed`] by printing the exact binary value.
fn fixed_by_text(v: f64, decimals: usize) -> String {
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
            incomplete: Vec::new(),
        }
    }

    /// `t` written alone in `format`, names fitted to `fit`.
    fn written(t: &Table, format: TableFormat, fit: Fit) -> String {
        let mut out = Vec::new();
        t.write(&mut out, format, &["r".to_owned()], fit).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// `t` written as one of several tables in CSV.
    fn shared_csv(t: &Table) -> String {
        let layout = Layout {
            format: TableFormat::Csv,
            files: &["r".to_owned()],
            fit: Fit::Whole,
            sharing: Sharing::Shared,
        };
        let mut out = Vec::new();
        t.write_rows(&mut out, &layout, &t.rows).unwrap();
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
    fn a_csv_table_alone_starts_with_its_header_and_shared_after_its_marker() {
        // 8164.95 is 8164.94999... in binary: it rounds down, as nsys 2025.3 prints it.
        let rows = "Total,Avg,Name\n12,8164.9,\"f(a, \"\"b\"\")\"\n";
        assert_eq!(written(&table(), TableFormat::Csv, Fit::NSYS), rows);
        assert_eq!(shared_csv(&table()), format!("# T (t) of r\n{rows}"));
    }

    #[test]
    fn hostile_names_survive_every_format() {
        let hostile = "ProfilerStep#3, \"q\"\r\n<a>&|`b`\u{1}";
        let mut t = table();
        t.rows[0][2] = Cell::Text(hostile.into());
        let csv = written(&t, TableFormat::Csv, Fit::Whole);
        let field = csv.split('\n').nth(1).unwrap();
        assert!(field.starts_with("12,8164.9,\"ProfilerStep#3, \"\"q\"\"\r"));
        assert!(csv.ends_with("<a>&|`b`\u{1}\"\n"), "{csv:?}");
        let json = written(&t, TableFormat::Json, Fit::Whole);
        assert!(json.contains(r#""name":"ProfilerStep#3, \"q\"\r\n<a>&|`b`\u0001""#));
        assert_eq!(json.lines().count(), 1);
    }

    #[test]
    fn integer_arithmetic_prints_what_the_exact_decimal_expansion_does() {
        // Doubles of every magnitude a summary prints and beyond, integral,
        // halves and thirds, from a fixed sequence of bit patterns.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut values = vec![
            0.5,
            1.5,
            2.5,
            0.05,
            0.15,
            1e15 + 0.5,
            2f64.powi(53),
            2f64.powi(70),
        ];
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let v = f64::from_bits(x);
            if v.is_finite() {
                values.push(v);
            }
            let n = (x >> 40) as f64;
            values.extend([n, -n, n / 2.0, n / 3.0, n / 1000.0, n * 1e-9]);
        }
        for v in values {
            for decimals in 0..=4 {
                assert_eq!(
                    fixed(v, decimals),
                    fixed_by_text(v, decimals),
                    "{v:e} {decimals}"
                );
            }
        }
    }

    #[test]
    fn ties_round_away_from_zero() {
        assert_eq!(fixed(958200.25, 1), "958200.3");
        assert_eq!(fixed(-0.0, 1), "0.0");
        assert_eq!(fixed(5e-324, 3), "0.000");
        assert_eq!(fixed(1e300, 1), fixed_by_text(1e300, 1));
        assert_eq!(fixed(8164.95, 1), "8164.9");
        assert_eq!(fixed(-0.25, 1), "-0.3");
        assert_eq!(fixed(-0.01, 1), "0.0");
        assert_eq!(fixed(9.96, 1), "10.0");
        assert_eq!(fixed(99.5, 0), "100");
        assert_eq!(fixed(0.0004, 3), "0.000");
    }

    #[test]
    fn json_escapes_and_keys_by_column_in_snake_case() {
        let mut t = table();
        t.columns.push("Correlation IDs".into());
        t.rows[0].push(Cell::Ints(vec![3, 4]));
        let text = written(&t, TableFormat::Json, Fit::NSYS);
        assert_eq!(
            text,
            "{\"table\":\"t\",\"title\":\"T\",\"files\":[\"r\"],\"rows\":[\
             {\"total\":12,\"avg\":8164.9,\"name\":\"f(a, \\\"b\\\")\",\
             \"correlation_ids\":[3,4]}]}\n"
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

    #[test]
    fn columns_are_left_out_in_order_until_the_table_fits() {
        let mut t = table();
        t.rows[0][2] = Cell::Text("n".repeat(50));
        // "  Total Avg      Name": 2 + 6 + 7 + names.
        let left_out = leave_out_to_fit(&mut t.clone(), 200, &["Avg", "Total"]);
        assert!(left_out.is_empty());
        let left_out = leave_out_to_fit(&mut t, 2 + 6 + Fit::SHORTEST_NAME + 1, &["Avg", "Total"]);
        assert_eq!(left_out, ["Avg"]);
        assert_eq!(t.columns, ["Total", "Name"]);
        assert_eq!(t.rows[0].len(), 2);
    }
}
