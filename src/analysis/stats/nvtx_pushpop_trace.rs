//! `nvtx_pushpop_trace`: every NVTX push/pop range, a row each, in the
//! export's row order, with its place in its thread's tree of push/pop
//! ranges (level, parent, the ids of its stack) and the time of its
//! children, as nsys's `nvtxpptrace` lists them.
//!
//! A range's parent is the tightest push/pop range of its thread that
//! encloses it (see `nvtx_gpu::tightest_enclosing`), found as the ranges
//! come in start order among those still open. A row needs the count and
//! time of its children, which come after it: each range goes, as it
//! comes, to a table in a private temporary database (on disk, in a small
//! cache), and the rows are read back from there in row order, their
//! children summed. Memory holds the ranges open on each thread.

use rusqlite::Row;
use rustc_hash::FxHashMap;

use crate::error::Failure;
use crate::nsys::names::RangeNames;
use crate::nsys::nvtx::{self, NvtxKind};
use crate::nsys::{Report, RowFilter, TimeCheck};

use super::nvtx_gpu::tightest_enclosing;
use super::set_aside::{self, SetAsideRows};
use super::table::Cell;

/// The columns of `nvtx_pushpop_trace`, as nsys names them.
pub(super) const COLUMNS: [&str; 14] = [
    "Start (ns)",
    "End (ns)",
    "Duration (ns)",
    "DurChild (ns)",
    "DurNonChild (ns)",
    "Name",
    "PID",
    "TID",
    "Lvl",
    "NumChild",
    "RangeId",
    "ParentId",
    "RangeStack",
    "NameTree",
];

/// A push/pop range open on its thread: a candidate parent.
struct Open {
    start: i64,
    end: i64,
    level: u32,
    rowid: i64,
    stack: String,
}

/// The table the ranges are set aside in.
const TABLES: &str = "CREATE TABLE range (
         rowid_in_export INTEGER PRIMARY KEY, start INTEGER NOT NULL,
         duration INTEGER NOT NULL, name TEXT NOT NULL, pid INTEGER NOT NULL,
         tid INTEGER NOT NULL, level INTEGER NOT NULL, parent INTEGER, stack TEXT NOT NULL);";

/// Reads the push/pop ranges of `report` (named as `names` says, as the
/// summaries name them) and sets their rows aside. Ranges whose times
/// cannot be right are left out, counted (see [`TimeCheck`]).
pub(super) fn nvtx_pushpop_trace(
    report: &Report,
    names: RangeNames,
) -> Result<SetAsideRows<14>, Failure> {
    let db = set_aside::begin(TABLES)?;
    let last = report.nvtx_last_time()?;
    let domains = &report.meta().nvtx_domains;
    let mut check = TimeCheck::new(report)?;
    let mut open: FxHashMap<(u32, u32), Vec<Open>> = FxHashMap::default();
    {
        let mut insert = db.prepare(
            "INSERT INTO range (rowid_in_export, start, duration, name, pid, tid, level, parent,
                 stack) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        report.for_each_nvtx_event(&RowFilter::none(), |e| -> Result<(), Failure> {
            if e.kind != NvtxKind::PushPop {
                return Ok(());
            }
            let end = e.end.or(last).unwrap_or(e.start);
            if !check.allow(nvtx::TABLE, e.start, end) {
                return Ok(());
            }
            let stack = open.entry((e.pid, e.tid)).or_default();
            stack.retain(|r| r.end >= e.start);
            let parent = tightest_enclosing(stack.iter(), |r| (r.start, r.end), e.start, end);
            let level = parent.map_or(0, |p| p.level + 1);
            let parent_rowid = parent.map(|p| p.rowid);
            let range_stack = format!("{}:{}", parent.map_or("", |p| &p.stack), e.rowid);
            let domain = domains.get(&(e.pid, e.domain)).map_or("", String::as_str);
            let text = e.text.as_ref().map_or("", |t| t.as_str());
            let name = format!("{domain}:{}", names.of(text));
            insert.execute(rusqlite::params![
                e.rowid,
                e.start,
                end - e.start,
                name,
                e.pid,
                e.tid,
                level,
                parent_rowid,
                range_stack,
            ])?;
            stack.push(Open {
                start: e.start,
                end,
                level,
                rowid: e.rowid,
                stack: range_stack,
            });
            Ok(())
        })?;
    }
    Ok(SetAsideRows::commit(
        db,
        "range",
        "CREATE INDEX range_parent ON range (parent)",
        "SELECT r.start, r.duration,
             (SELECT TOTAL(c.duration) FROM range AS c WHERE c.parent == r.rowid_in_export),
             (SELECT COUNT(*) FROM range AS c WHERE c.parent == r.rowid_in_export),
             r.name, r.pid, r.tid, r.level, r.rowid_in_export, r.parent, r.stack
         FROM range AS r ORDER BY r.rowid_in_export",
        cells,
    )?)
}

/// A row read back as the table's cells.
fn cells(r: &Row<'_>) -> rusqlite::Result<[Cell; 14]> {
    let (start, duration): (i64, i64) = (r.get(0)?, r.get(1)?);
    let children = r.get::<_, f64>(2)? as i128;
    let level: u32 = r.get(7)?;
    let name: String = r.get(4)?;
    let int = |v: i64| Cell::Int(i128::from(v));
    Ok([
        int(start),
        Cell::Int(i128::from(start) + i128::from(duration)),
        int(duration),
        Cell::Int(children),
        Cell::Int(i128::from(duration) - children),
        Cell::Text(name.clone()),
        int(r.get(5)?),
        int(r.get(6)?),
        Cell::Int(i128::from(level)),
        int(r.get(3)?),
        int(r.get(8)?),
        r.get::<_, Option<i64>>(9)?.map_or(Cell::Empty, int),
        Cell::Text(r.get(10)?),
        Cell::Text(format!("{}{name}", "--".repeat(level as usize))),
    ])
}
