//! Tables as Markdown (GitHub's pipe tables), for a pull request's comment:
//! `--format md`. Numbers are right-aligned; a cell's `|` is escaped and
//! its line breaks are spaces, so that each row stays one line.

use std::io::{self, Write};

use super::table::{Cell, RowSource};

/// The header, the alignment row and the rows of a Markdown table, and how
/// many more rows there were where a limit cut them.
pub(crate) fn write_markdown(
    out: &mut dyn Write,
    columns: &[String],
    rows: &dyn RowSource,
) -> io::Result<()> {
    let mut numeric = vec![false; columns.len()];
    rows.each(&mut |row| {
        for (c, cell) in row.iter().enumerate().take(numeric.len()) {
            numeric[c] |= matches!(cell, Cell::Int(_) | Cell::Real(..));
        }
        Ok(())
    })?;
    let line = |cells: &mut dyn Iterator<Item = String>| {
        let cells: Vec<String> = cells.map(|c| escaped(&c)).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    out.write_all(line(&mut columns.iter().cloned()).as_bytes())?;
    let aligns = numeric
        .iter()
        .map(|&n| if n { "---:" } else { "---" }.to_owned());
    out.write_all(format!("|{}|\n", aligns.collect::<Vec<_>>().join("|")).as_bytes())?;
    rows.each(&mut |row| out.write_all(line(&mut row.iter().map(Cell::text)).as_bytes()))?;
    match rows.left_out() {
        0 => Ok(()),
        more => writeln!(out, "\n… and {more} more"),
    }
}

/// Text as a cell: `|` escaped, line breaks as spaces, and an empty cell
/// as a space (a Markdown row needs something between its pipes).
pub(crate) fn escaped(text: &str) -> String {
    let one_line = text.replace(['\n', '\r'], " ").replace('|', "\\|");
    match one_line.is_empty() {
        true => " ".into(),
        false => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_a_pipe_table_with_numbers_right_aligned() {
        let rows = vec![
            vec![Cell::Text("a|b".into()), Cell::Int(3)],
            vec![Cell::Text("x\ny".into()), Cell::Empty],
        ];
        let mut out = Vec::new();
        write_markdown(&mut out, &["Name".into(), "N".into()], &rows).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "| Name | N |\n|---|---:|\n| a\\|b | 3 |\n| x y |   |\n"
        );
    }
}
