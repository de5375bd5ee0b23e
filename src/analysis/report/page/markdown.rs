//! The page as Markdown: the blocks of each run, charts left out (their
//! numbers are in the tables beside them).

use std::io::{self, Write};

use super::super::Page;
use super::blocks::{run_blocks, Block};

pub(super) fn write(out: &mut dyn Write, page: &Page) -> io::Result<()> {
    if let Some(steps) = &page.steps {
        steps.write_markdown(out)?;
        writeln!(out)?;
    }
    for (i, run) in page.runs.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        for block in run_blocks(run) {
            render(out, &block)?;
        }
    }
    Ok(())
}

/// Text in a table cell: pipes escaped, on one line.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn render(out: &mut dyn Write, block: &Block) -> io::Result<()> {
    match block {
        Block::Heading(level, text) => {
            writeln!(out, "{} {}\n", "#".repeat(usize::from(*level)), text)
        }
        Block::Paragraph(text) => writeln!(out, "{text}\n"),
        Block::Chart(_) => Ok(()),
        Block::List(items) => {
            for item in items {
                writeln!(out, "- {item}")?;
            }
            writeln!(out)
        }
        Block::Table(headers, rows) => {
            let names: Vec<String> = headers.iter().map(|h| cell(h.trim_end())).collect();
            writeln!(out, "| {} |", names.join(" | "))?;
            let aligns: Vec<&str> = headers
                .iter()
                .map(|h| if h.ends_with(' ') { "---:" } else { "---" })
                .collect();
            writeln!(out, "| {} |", aligns.join(" | "))?;
            for row in rows {
                let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
                writeln!(out, "| {} |", cells.join(" | "))?;
            }
            writeln!(out)
        }
    }
}
