//! A page as a document of blocks (headings, paragraphs, tables, charts,
//! lists), the model every page of the commands is made as, and its two
//! renderings: one self-contained HTML file (its chrome and its ONE
//! stylesheet here; charts as inline SVG; no script, nothing fetched; the
//! hub's pages add their scripts, and their data tables show their first
//! rows, see [`super::data_table`]) and
//! Markdown (CommonMark with GitHub's tables; charts left out, their
//! numbers being in the tables beside them). Text is plain text: each
//! rendering escapes it, so a name is shown as it is, whatever it holds.

use std::fmt::Write as _;
use std::io::{self, Write};

use crate::render::chart::Chart;
use crate::render::data_table::{DataTable, Shown, FIRST_ROWS};
use crate::render::escape::{code_span, commonmark, commonmark_line, html as escape};

/// A run of text, plain or code.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Span {
    Plain(String),
    /// Shown in a code font, as is.
    Code(String),
    /// A link: its text, and where it goes (a URL the program made, never
    /// text from a report).
    Link(String, String),
}

/// Text: spans one after the other.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Text(pub(crate) Vec<Span>);

impl Text {
    /// `text` plain.
    pub(crate) fn plain(text: impl Into<String>) -> Text {
        Text(vec![Span::Plain(text.into())])
    }

    /// This text, then `code` as code.
    pub(crate) fn code(mut self, code: impl Into<String>) -> Text {
        self.0.push(Span::Code(code.into()));
        self
    }

    /// This text, then `text` plain.
    pub(crate) fn then(mut self, text: impl Into<String>) -> Text {
        self.0.push(Span::Plain(text.into()));
        self
    }

    /// This text, then a link of text `text` to `href`.
    pub(crate) fn link(mut self, text: impl Into<String>, href: impl Into<String>) -> Text {
        self.0.push(Span::Link(text.into(), href.into()));
        self
    }
}

impl From<String> for Text {
    fn from(text: String) -> Text {
        Text::plain(text)
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Text {
        Text::plain(text)
    }
}

/// A column of a table.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Column {
    /// Its header; a table whose headers are all empty has no header row in HTML.
    pub(crate) name: String,
    /// Numbers: right-aligned.
    pub(crate) numeric: bool,
}

impl Column {
    pub(crate) fn text(name: &str) -> Column {
        Column {
            name: name.to_owned(),
            numeric: false,
        }
    }

    pub(crate) fn number(name: &str) -> Column {
        Column {
            name: name.to_owned(),
            numeric: true,
        }
    }
}

/// How a cell stands out from the others of its column (HTML only: the
/// table's other columns say the same in words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Mark {
    #[default]
    None,
    /// The one that matters most in its row (the slowest).
    Strong,
    /// Nothing there (a value missing).
    Faint,
}

/// A cell: its text and its mark.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Cell {
    pub(crate) text: String,
    pub(crate) mark: Mark,
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell {
            text,
            mark: Mark::None,
        }
    }
}

/// A table: columns and rows of cells.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Table {
    pub(crate) columns: Vec<Column>,
    pub(crate) rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A table of unmarked cells.
    pub(crate) fn new(columns: Vec<Column>, rows: Vec<Vec<String>>) -> Table {
        let rows = rows
            .into_iter()
            .map(|r| r.into_iter().map(Cell::from).collect())
            .collect();
        Table { columns, rows }
    }
}

/// A piece of a page.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Block {
    /// A heading of level 1 to 3.
    Heading(u8, Text),
    Paragraph(Text),
    Table(Table),
    /// A chart, drawn as SVG (HTML only).
    Chart(Chart),
    List(Vec<Text>),
    /// A table of data, which may be long: whole in a file, its first
    /// rows (and the rest as data for its script) on the hub's pages.
    DataTable(DataTable),
    /// A table whose cells are text (links among it): the columns, and
    /// rows of a cell per column.
    TextTable(Vec<Column>, Vec<Vec<Text>>),
    /// Blocks that belong together (a run, the job's steps): an HTML
    /// `<section>` of this class (none where empty); in Markdown, a blank
    /// line more from the section before.
    Section(&'static str, Vec<Block>),
    /// A button that sends a form by POST to `action` (a URL the program
    /// made), with hidden `fields` (name, value): the way a page asks for
    /// work without a script (HTML only).
    Form {
        action: String,
        fields: Vec<(String, String)>,
        button: String,
    },
}

/// The page's one stylesheet.
const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1100px;color:#222;line-height:1.4}\
h1{font-size:1.4em;border-bottom:2px solid #4e79a7;padding-bottom:4px;word-break:break-all}\
h2{font-size:1.15em;margin-top:1.6em;color:#4e79a7}h3{font-size:1em;margin-bottom:4px}\
table{border-collapse:collapse;margin:6px 0 14px}td,th{border:1px solid #ddd;padding:3px 8px;vertical-align:top;font-size:0.92em}\
th{background:#f3f5f8;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
td.slowest{color:#c0392b;font-weight:bold}td.missing{color:#888}\
li{margin:3px 0}svg{display:block;margin:8px 0;max-width:100%;height:auto}td{overflow-wrap:anywhere}p{margin:6px 0}\
section.upload{border:2px dashed #9aa7b8;border-radius:6px;padding:6px 14px;margin:12px 0}section.upload.over{background:#eef3fb}section.reports td:first-child{min-width:12em}\
section.wide{overflow-x:auto}section.wide td:last-child{min-width:24em}section.wide td:not(:last-child){overflow-wrap:normal}";

/// What the pages of `serve` (which have scripts) style besides: the
/// controls of their data tables.
const INTERACTIVE_STYLE: &str = "th.n{text-align:right}div.data-table th{cursor:pointer;user-select:none}\
div.data-table th[aria-sort=ascending]::after{content:' \\25B2'}div.data-table th[aria-sort=descending]::after{content:' \\25BC'}\
div.table-controls{display:flex;gap:10px;align-items:center;margin:6px 0}div.table-controls input{min-width:18em}\
p.shown,span.shown{color:#555;font-size:0.92em}td.name summary{cursor:pointer;white-space:nowrap}td.name details[open] summary{color:#555}\
section.wide td.name details{max-width:40em;overflow-wrap:anywhere}";

/// Writes `blocks` as one HTML page titled `title`: a file, whole without
/// a script.
pub(crate) fn write_html(out: &mut dyn Write, title: &str, blocks: &[Block]) -> io::Result<()> {
    write_html_styled(out, title, blocks, &[], "")
}

/// [`write_html`], the page also loading each of `scripts` (URLs the
/// program made), after the page is read: the pages of `serve`. Their
/// data tables show their first rows, and the script that filters, sorts
/// and shows all of them (`src/render/data_table.js`) must be among
/// `scripts`.
pub(crate) fn write_html_with(
    out: &mut dyn Write,
    title: &str,
    blocks: &[Block],
    scripts: &[&str],
) -> io::Result<()> {
    write_html_styled(out, title, blocks, scripts, "")
}

/// [`write_html_with`], the page also styled by `style` (rules the
/// program wrote, after the one stylesheet's): a page of the hub's that
/// its script makes more of (its home list).
pub(crate) fn write_html_styled(
    out: &mut dyn Write,
    title: &str,
    blocks: &[Block],
    scripts: &[&str],
    style: &str,
) -> io::Result<()> {
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}{}{style}</style>",
        escape(title),
        if scripts.is_empty() { "" } else { INTERACTIVE_STYLE }
    )?;
    let shown = match scripts.is_empty() {
        true => Shown::All,
        false => Shown::First(FIRST_ROWS),
    };
    for script in scripts {
        write!(out, "<script src=\"{}\" defer></script>", escape(script))?;
    }
    writeln!(out, "</head><body>")?;
    html_blocks(out, blocks, shown)?;
    writeln!(out, "</body></html>")
}

/// Writes `blocks` as HTML, to go in a page's body (a file's: whole).
pub(crate) fn write_html_blocks(out: &mut dyn Write, blocks: &[Block]) -> io::Result<()> {
    html_blocks(out, blocks, Shown::All)
}

fn html_blocks(out: &mut dyn Write, blocks: &[Block], shown: Shown) -> io::Result<()> {
    for block in blocks {
        html_block(out, block, shown)?;
    }
    Ok(())
}

fn html_text(text: &Text) -> String {
    text.0
        .iter()
        .map(|span| match span {
            Span::Plain(s) => escape(s),
            Span::Code(s) => format!("<code>{}</code>", escape(s)),
            Span::Link(s, href) => format!("<a href=\"{}\">{}</a>", escape(href), escape(s)),
        })
        .collect()
}

fn html_block(out: &mut dyn Write, block: &Block, shown: Shown) -> io::Result<()> {
    match block {
        Block::Heading(level, text) => {
            writeln!(out, "<h{level}>{}</h{level}>", html_text(text))
        }
        Block::Paragraph(text) => writeln!(out, "<p>{}</p>", html_text(text)),
        Block::Chart(chart) => writeln!(out, "{}", chart.svg().trim_end()),
        Block::List(items) => {
            writeln!(out, "<ul>")?;
            for item in items {
                writeln!(out, "<li>{}</li>", html_text(item))?;
            }
            writeln!(out, "</ul>")
        }
        Block::Section(class, blocks) => {
            match *class {
                "" => writeln!(out, "<section>")?,
                class => writeln!(out, "<section class=\"{class}\">")?,
            }
            html_blocks(out, blocks, shown)?;
            writeln!(out, "</section>")
        }
        Block::DataTable(table) => table.write_html(out, shown),
        Block::TextTable(columns, rows) => {
            write!(out, "<table>")?;
            write!(out, "<tr>")?;
            for c in columns {
                write!(out, "<th>{}</th>", escape(&c.name))?;
            }
            write!(out, "</tr>")?;
            for row in rows {
                write!(out, "<tr>")?;
                for (i, cell) in row.iter().enumerate() {
                    let class = match columns.get(i).is_some_and(|c| c.numeric) {
                        true => " class=\"n\"",
                        false => "",
                    };
                    write!(out, "<td{class}>{}</td>", html_text(cell))?;
                }
                write!(out, "</tr>")?;
            }
            writeln!(out, "</table>")
        }
        Block::Table(table) => {
            write!(out, "<table>")?;
            if table.columns.iter().any(|c| !c.name.is_empty()) {
                write!(out, "<tr>")?;
                for c in &table.columns {
                    write!(out, "<th>{}</th>", escape(&c.name))?;
                }
                write!(out, "</tr>")?;
            }
            for row in &table.rows {
                write!(out, "<tr>")?;
                for (i, cell) in row.iter().enumerate() {
                    let numeric = table.columns.get(i).is_some_and(|c| c.numeric);
                    let class = match (cell.mark, numeric) {
                        (Mark::Faint, _) => " class=\"missing\"",
                        (Mark::Strong, true) => " class=\"n slowest\"",
                        (Mark::Strong, false) => " class=\"slowest\"",
                        (Mark::None, true) => " class=\"n\"",
                        (Mark::None, false) => "",
                    };
                    write!(out, "<td{class}>{}</td>", escape(&cell.text))?;
                }
                write!(out, "</tr>")?;
            }
            writeln!(out, "</table>")
        }
        Block::Form {
            action,
            fields,
            button,
        } => {
            write!(out, "<form method=\"post\" action=\"{}\">", escape(action))?;
            for (name, value) in fields {
                write!(
                    out,
                    "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
                    escape(name),
                    escape(value)
                )?;
            }
            writeln!(
                out,
                "<button type=\"submit\">{}</button></form>",
                escape(button)
            )
        }
    }
}

/// Writes `blocks` as Markdown; a section is its blocks, and one more
/// blank line parts it from the section before.
pub(crate) fn write_markdown(out: &mut dyn Write, blocks: &[Block]) -> io::Result<()> {
    for (i, block) in blocks.iter().enumerate() {
        let section = |b: &Block| matches!(b, Block::Section(..));
        if i > 0 && section(block) && section(&blocks[i - 1]) {
            writeln!(out)?;
        }
        markdown_block(out, block)?;
    }
    Ok(())
}

fn markdown_text(text: &Text) -> String {
    let mut s = String::new();
    for (i, span) in text.0.iter().enumerate() {
        match span {
            Span::Plain(p) if i == 0 => s.push_str(&commonmark_line(p)),
            Span::Plain(p) => s.push_str(&commonmark(p)),
            Span::Code(c) => s.push_str(&code_span(c)),
            Span::Link(t, href) => {
                let _ = write!(s, "[{}](<{}>)", commonmark(t), href.replace(['<', '>'], ""));
            }
        }
    }
    s
}

/// `text` in a table cell: as [`markdown_text`], but starting no line.
fn markdown_cell(text: &Text) -> String {
    let mut s = String::new();
    for span in &text.0 {
        match span {
            Span::Plain(p) => s.push_str(&commonmark(p)),
            span => s.push_str(&markdown_text(&Text(vec![span.clone()]))),
        }
    }
    s
}

fn markdown_block(out: &mut dyn Write, block: &Block) -> io::Result<()> {
    match block {
        Block::Heading(level, text) => writeln!(
            out,
            "{} {}\n",
            "#".repeat(usize::from(*level)),
            markdown_text(text)
        ),
        Block::Paragraph(text) => writeln!(out, "{}\n", markdown_text(text)),
        Block::Chart(_) | Block::Form { .. } => Ok(()),
        Block::List(items) => {
            for item in items {
                writeln!(out, "- {}", markdown_text(item))?;
            }
            writeln!(out)
        }
        Block::Section(_, blocks) => write_markdown(out, blocks),
        Block::TextTable(columns, rows) => {
            let names: Vec<String> = columns.iter().map(|c| commonmark(&c.name)).collect();
            writeln!(out, "| {} |", names.join(" | "))?;
            let aligns: Vec<&str> = columns
                .iter()
                .map(|c| if c.numeric { "---:" } else { "---" })
                .collect();
            writeln!(out, "| {} |", aligns.join(" | "))?;
            for row in rows {
                let cells: Vec<String> = row.iter().map(markdown_cell).collect();
                writeln!(out, "| {} |", cells.join(" | "))?;
            }
            writeln!(out)
        }
        Block::DataTable(DataTable { columns, rows, .. }) => {
            let table = Table::new(columns.clone(), rows.clone());
            markdown_block(out, &Block::Table(table))
        }
        Block::Table(table) => {
            let names: Vec<String> = table.columns.iter().map(|c| commonmark(&c.name)).collect();
            writeln!(out, "| {} |", names.join(" | "))?;
            let aligns: Vec<&str> = table
                .columns
                .iter()
                .map(|c| if c.numeric { "---:" } else { "---" })
                .collect();
            writeln!(out, "| {} |", aligns.join(" | "))?;
            for row in &table.rows {
                let cells: Vec<String> = row.iter().map(|c| commonmark(&c.text)).collect();
                writeln!(out, "| {} |", cells.join(" | "))?;
            }
            writeln!(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_holds_a_long_table_whole_and_a_hub_page_its_first_rows() {
        let table = DataTable {
            columns: vec![Column::number("Count")],
            rows: (0..120).map(|i| vec![i.to_string()]).collect(),
            names: None,
            rows_at: None,
        };
        let blocks = [Block::DataTable(table)];
        let mut file = Vec::new();
        write_html(&mut file, "t", &blocks).unwrap();
        let file = String::from_utf8(file).unwrap();
        assert_eq!(file.matches("<tr>").count(), 121);
        assert!(!file.contains("<script") && !file.contains(INTERACTIVE_STYLE));
        let mut hub = Vec::new();
        write_html_with(&mut hub, "t", &blocks, &["/assets/hub.js"]).unwrap();
        let hub = String::from_utf8(hub).unwrap();
        assert_eq!(hub.matches("<tr>").count(), FIRST_ROWS + 1);
        assert!(hub.contains(INTERACTIVE_STYLE));
    }

    #[test]
    fn html_escapes_every_text_and_marks_cells() {
        let blocks = [Block::Section(
            "run",
            vec![
                Block::Heading(2, Text::plain("<script>").code("a<b")),
                Block::Table(Table {
                    columns: vec![Column::text("Name"), Column::number("Time")],
                    rows: vec![vec![
                        Cell::from("x|y".to_owned()),
                        Cell {
                            text: "1 ms".into(),
                            mark: Mark::Strong,
                        },
                    ]],
                }),
            ],
        )];
        let mut out = Vec::new();
        write_html_blocks(&mut out, &blocks).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert_eq!(
            html,
            "<section class=\"run\">\n<h2>&lt;script&gt;<code>a&lt;b</code></h2>\n\
             <table><tr><th>Name</th><th>Time</th></tr><tr><td>x|y</td><td class=\"n slowest\">1 ms</td></tr></table>\n</section>\n"
        );
        let mut out = Vec::new();
        write_markdown(&mut out, &blocks).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "## \\<script\\>`a<b`\n\n| Name | Time |\n| --- | ---: |\n| x\\|y | 1 ms |\n\n"
        );
    }
}
