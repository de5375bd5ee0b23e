//! A table of data on a page (a summary's rows, a comparison's), which can
//! run to tens of thousands of rows (an NVTX summary). A file (`report -o
//! page.html`) holds it whole: it has no script. A page of the hub shows
//! its first rows only; its table script (`data_table.js`, which the hub
//! serves with its own) filters, sorts and shows all the rows, which it
//! fetches from where the table says (the hub answers with
//! [`DataTable::write_json`]) or, where none is said, reads from the page
//! (a JSON block, which no Content-Security-Policy counts as a script). A
//! page of 16,582 rows paints as fast as one of 50. Long names are shown shortened
//! ([`super::names`]), the whole name a click away (a `<details>`) and in
//! the short one's tooltip.

use std::io::{self, Write};

use super::escape::{html as escape, json_in_html};
use super::names::{shortened, LONGEST_SHOWN};
use super::page::Column;

/// A table of data: its columns, its rows of text, and which column holds
/// names (shortened where long).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DataTable {
    pub(crate) columns: Vec<Column>,
    pub(crate) rows: Vec<Vec<String>>,
    /// The column of names, if any.
    pub(crate) names: Option<usize>,
    /// Where a hub page's script fetches all the rows (a URL the program
    /// made) when the page holds only the first; `None`: the page carries
    /// them.
    pub(crate) rows_at: Option<String>,
}

/// Which rows a page holds as HTML.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shown {
    /// Every row, and no data for a script: a file read offline.
    All,
    /// The first rows, and every row as data for the table script.
    First(usize),
}

/// How many rows a hub page shows of a table before "Show all".
pub(crate) const FIRST_ROWS: usize = 50;

/// A count as people read it: 16,582.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl DataTable {
    /// The table in HTML, its rows as `shown` says.
    pub(crate) fn write_html(&self, out: &mut dyn Write, shown: Shown) -> io::Result<()> {
        let first = match shown {
            Shown::All => self.rows.len(),
            Shown::First(n) => n.min(self.rows.len()),
        };
        // Where the rows are, for the script: fetched, or in the page.
        let fetched = match (shown, &self.rows_at) {
            (Shown::First(_), Some(at)) if first < self.rows.len() => Some(at),
            _ => None,
        };
        if let Shown::First(n) = shown {
            write!(
                out,
                "<div class=\"data-table\" data-first=\"{n}\" data-rows=\"{}\"",
                self.rows.len()
            )?;
            match fetched {
                Some(at) => write!(out, " data-src=\"{}\">", escape(at))?,
                None => write!(out, ">")?,
            }
        }
        write!(out, "<table class=\"data\"><thead><tr>")?;
        for c in &self.columns {
            match c.numeric {
                true => write!(out, "<th class=\"n\">{}</th>", escape(&c.name))?,
                false => write!(out, "<th>{}</th>", escape(&c.name))?,
            }
        }
        write!(out, "</tr></thead><tbody>")?;
        for row in &self.rows[..first] {
            write!(out, "<tr>")?;
            for (i, text) in row.iter().enumerate() {
                self.write_cell(out, i, text)?;
            }
            write!(out, "</tr>")?;
        }
        write!(out, "</tbody></table>")?;
        if let Shown::First(_) = shown {
            if first < self.rows.len() {
                write!(
                    out,
                    "<p class=\"shown\">The first {} of {} rows.</p>",
                    thousands(first),
                    thousands(self.rows.len())
                )?;
            }
            if fetched.is_none() {
                write!(out, "<script type=\"application/json\" class=\"rows\">")?;
                self.write_json(out)?;
                write!(out, "</script>")?;
            }
            write!(out, "</div>")?;
        }
        writeln!(out)
    }

    fn write_cell(&self, out: &mut dyn Write, column: usize, text: &str) -> io::Result<()> {
        if self.columns.get(column).is_some_and(|c| c.numeric) {
            return write!(out, "<td class=\"n\">{}</td>", escape(text));
        }
        match self.short_name(column, text) {
            Some(short) => write!(
                out,
                "<td class=\"name\"><details><summary title=\"{full}\">{}</summary>{full}</details></td>",
                escape(&short),
                full = escape(text)
            ),
            None => write!(out, "<td>{}</td>", escape(text)),
        }
    }

    /// The name in `column` shortened, where it is the column of names
    /// and the name is long.
    fn short_name(&self, column: usize, text: &str) -> Option<String> {
        (self.names == Some(column))
            .then(|| shortened(text, LONGEST_SHOWN))
            .flatten()
    }

    /// Every row as a JSON array of rows, a row an array of cells: the
    /// cell's text, or `[short, whole]` for a name shown shortened (safe
    /// inside a page: no `<`).
    pub(crate) fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        write!(out, "[")?;
        for (r, row) in self.rows.iter().enumerate() {
            write!(out, "{}[", if r == 0 { "" } else { "," })?;
            for (i, text) in row.iter().enumerate() {
                let comma = if i == 0 { "" } else { "," };
                match self.short_name(i, text) {
                    Some(short) => write!(
                        out,
                        "{comma}[{},{}]",
                        json_in_html(&short),
                        json_in_html(text)
                    )?,
                    None => write!(out, "{comma}{}", json_in_html(text))?,
                }
            }
            write!(out, "]")?;
        }
        write!(out, "]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: usize) -> DataTable {
        let long = format!("void ns::kernel<{}>(int)", "x".repeat(80));
        DataTable {
            columns: vec![Column::number("Time"), Column::text("Name")],
            rows: (0..rows)
                .map(|i| {
                    let name = if i == 0 {
                        long.clone()
                    } else {
                        format!("</script><b>{i}")
                    };
                    vec![i.to_string(), name]
                })
                .collect(),
            names: Some(1),
            rows_at: None,
        }
    }

    #[test]
    fn a_file_holds_every_row_and_no_data() {
        let mut out = Vec::new();
        table(120).write_html(&mut out, Shown::All).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert_eq!(html.matches("<tr>").count(), 121);
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains("&lt;/script&gt;&lt;b&gt;119"));
    }

    #[test]
    fn a_hub_page_shows_the_first_rows_and_carries_all_as_data() {
        let mut out = Vec::new();
        let t = table(120);
        t.write_html(&mut out, Shown::First(50)).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert_eq!(html.matches("<tr>").count(), 51);
        assert!(html.contains("The first 50 of 120 rows."));
        // The data cannot end its block: no `</script` but the block's own.
        assert_eq!(html.matches("</script").count(), 1);
        let data = html
            .split("<script type=\"application/json\" class=\"rows\">")
            .nth(1)
            .and_then(|rest| rest.split("</script>").next())
            .unwrap();
        let rows: serde_json::Value = serde_json::from_str(data).unwrap();
        let rows = rows.as_array().unwrap();
        assert_eq!(rows.len(), 120);
        assert_eq!(rows[119][1], "</script><b>119");
        // The long name: shortened, with the whole name beside it.
        let name = &t.rows[0][1];
        assert_eq!(rows[0][1][1], name.as_str());
        assert_eq!(rows[0][1][0], "kernel<…>(…)");
        assert!(html.contains(&format!(
            "<summary title=\"{}\">kernel&lt;…&gt;(…)</summary>",
            escape(name)
        )));
    }

    #[test]
    fn a_hub_page_whose_rows_are_fetched_holds_the_first_only() {
        let mut t = table(120);
        t.rows_at = Some("/api/rows/0/a%20b?summary=nvtx_sum&x=\"".into());
        let mut out = Vec::new();
        t.write_html(&mut out, Shown::First(50)).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert_eq!(html.matches("<tr>").count(), 51);
        assert!(!html.contains("<script"), "{html}");
        assert!(html.contains(" data-src=\"/api/rows/0/a%20b?summary=nvtx_sum&amp;x=&quot;\""));
        // A table all shown carries its rows (to sort them): no fetch.
        let mut out = Vec::new();
        t.write_html(&mut out, Shown::First(500)).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert!(!html.contains("data-src") && html.contains("class=\"rows\""));
    }

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(thousands(16582), "16,582");
        assert_eq!(thousands(582), "582");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
