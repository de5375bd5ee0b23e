//! The page as one self-contained HTML file: styles inline, charts as
//! inline SVG, no script and nothing fetched.

use crate::render::escape::html as escape;
use std::io::{self, Write};

use super::super::Page;
use super::blocks::{run_blocks, Block};

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1100px;color:#222;line-height:1.4}\
h1{font-size:1.4em;border-bottom:2px solid #4e79a7;padding-bottom:4px;word-break:break-all}\
h2{font-size:1.15em;margin-top:1.6em;color:#4e79a7}h3{font-size:1em;margin-bottom:4px}\
table{border-collapse:collapse;margin:6px 0 14px}td,th{border:1px solid #ddd;padding:3px 8px;vertical-align:top;font-size:0.92em}\
th{background:#f3f5f8;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
li{margin:3px 0}svg{display:block;margin:8px 0;max-width:100%;height:auto}td{overflow-wrap:anywhere}p{margin:6px 0}";

pub(super) fn write(out: &mut dyn Write, page: &Page) -> io::Result<()> {
    let runs = &page.runs;
    let title = match runs.as_slice() {
        [one] => format!("GPU time report: {}", one.path),
        _ => format!("GPU time report: {} runs", runs.len()),
    };
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style></head><body>\n",
        escape(&title)
    )?;
    if let Some(steps) = &page.steps {
        steps.write_html(out)?;
    }
    for run in runs {
        writeln!(out, "<section>")?;
        for block in run_blocks(run) {
            render(out, &block)?;
        }
        writeln!(out, "</section>")?;
    }
    writeln!(out, "</body></html>")
}

fn render(out: &mut dyn Write, block: &Block) -> io::Result<()> {
    match block {
        Block::Heading(level, text) => writeln!(out, "<h{level}>{}</h{level}>", escape(text)),
        Block::Paragraph(text) => writeln!(out, "<p>{}</p>", escape(text)),
        Block::Chart(svg) => writeln!(out, "{svg}"),
        Block::List(items) => {
            writeln!(out, "<ul>")?;
            for item in items {
                writeln!(out, "<li>{}</li>", escape(item))?;
            }
            writeln!(out, "</ul>")
        }
        Block::Table(headers, rows) => {
            write!(out, "<table>")?;
            if headers.iter().any(|h| !h.trim().is_empty()) {
                write!(out, "<tr>")?;
                for h in headers {
                    write!(out, "<th>{}</th>", escape(h.trim_end()))?;
                }
                write!(out, "</tr>")?;
            }
            for row in rows {
                write!(out, "<tr>")?;
                for (i, c) in row.iter().enumerate() {
                    let numeric = headers.get(i).is_some_and(|h| h.ends_with(' '));
                    let class = if numeric { " class=\"n\"" } else { "" };
                    write!(out, "<td{class}>{}</td>", escape(c))?;
                }
                write!(out, "</tr>")?;
            }
            writeln!(out, "</table>")
        }
    }
}
