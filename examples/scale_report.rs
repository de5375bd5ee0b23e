//! Makes a large Nsight Systems export from a real one, for benchmarks.
//!
//! ```sh
//! cargo run --release --example scale_report -- INPUT.sqlite OUTPUT.sqlite 50
//! ```
//!
//! Every event table (a table with a `start` column) is repeated N times in
//! all. Copy k is shifted in time past copy k-1, and its correlation ids are
//! shifted past all ids of the report, so every launch still links to its own
//! GPU work and the copies never overlap. Rows stay in time order.

#[path = "common/input_output_count.rs"]
mod input_output_count;

use std::path::Path;

use rusqlite::Connection;

fn main() {
    let (input, output, copies) = input_output_count::parse("scale_report", "COPIES");
    input_output_count::finish("scale_report", scale(&input, &output, copies));
}

fn scale(input: &Path, output: &Path, copies: i64) -> rusqlite::Result<()> {
    // VACUUM INTO writes a fresh, writable copy and leaves the input alone.
    if output.exists() {
        std::fs::remove_file(output).expect("remove the old output");
    }
    let source = Connection::open_with_flags(
        format!("file:{}?mode=ro&immutable=1", input.display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )?;
    source.execute("VACUUM INTO ?1", [output.to_string_lossy()])?;
    drop(source);

    let db = Connection::open(output)?;
    db.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")?;
    let tables = event_tables(&db)?;

    // One shift for all tables, so a launch and its work move together.
    let mut first = i64::MAX;
    let mut last = i64::MIN;
    let mut max_correlation = 0;
    for (table, columns) in &tables {
        let end = if columns.iter().any(|c| c == "end") {
            "COALESCE(MAX(\"end\"), MAX(start))"
        } else {
            "MAX(start)"
        };
        let (lo, hi): (Option<i64>, Option<i64>) = db.query_row(
            &format!("SELECT MIN(start), {end} FROM \"{table}\""),
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        first = first.min(lo.unwrap_or(i64::MAX));
        last = last.max(hi.unwrap_or(i64::MIN));
        if columns.iter().any(|c| c == "correlationId") {
            let max: Option<i64> = db.query_row(
                &format!("SELECT MAX(correlationId) FROM \"{table}\""),
                [],
                |r| r.get(0),
            )?;
            max_correlation = max_correlation.max(max.unwrap_or(0));
        }
    }
    if first > last {
        eprintln!("scale_report: no events to repeat");
        return Ok(());
    }
    // A millisecond between copies.
    let time_shift = last - first.min(0) + 1_000_000;
    let correlation_shift = max_correlation + 1;

    for (table, columns) in &tables {
        let rows: i64 = db.query_row(
            &format!("SELECT COALESCE(MAX(rowid), 0) FROM \"{table}\""),
            [],
            |r| r.get(0),
        )?;
        let names: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
        db.execute_batch("BEGIN")?;
        for k in 1..copies {
            let values: Vec<String> = columns
                .iter()
                .map(|c| match c.as_str() {
                    "start" | "end" => format!("\"{c}\" + {}", k * time_shift),
                    "correlationId" => format!("correlationId + {}", k * correlation_shift),
                    _ => format!("\"{c}\""),
                })
                .collect();
            db.execute(
                &format!(
                    "INSERT INTO \"{table}\" ({}) SELECT {} FROM \"{table}\" WHERE rowid <= {rows} ORDER BY rowid",
                    names.join(", "),
                    values.join(", ")
                ),
                [],
            )?;
        }
        db.execute_batch("COMMIT")?;
        let total: i64 = db.query_row(&format!("SELECT COUNT(*) FROM \"{table}\""), [], |r| {
            r.get(0)
        })?;
        eprintln!("{table}: {rows} rows x {copies} = {total}");
    }
    Ok(())
}

/// Tables with a `start` column, and their columns.
fn event_tables(db: &Connection) -> rusqlite::Result<Vec<(String, Vec<String>)>> {
    let mut tables = Vec::new();
    let names: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for table in names {
        let columns: Vec<String> = db
            .prepare("SELECT name FROM pragma_table_info(?1)")?
            .query_map([&table], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        if columns.iter().any(|c| c == "start") {
            tables.push((table, columns));
        }
    }
    Ok(tables)
}
