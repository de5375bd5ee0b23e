//! `nvtx_gpu_proj_trace`: each NVTX range projected onto the GPU, a row
//! each, as nsys 2025.3 lists them: by projected start, the longer first.
//!
//! The ranges are projected as for `nvtx_gpu_proj_sum` (see `nvtx_gpu`),
//! and the projector hands them out in that order. A range's row counts
//! its projected children, which are handed out after it: so each row
//! goes, as it comes, to a table in a private temporary database (on
//! disk, in a small cache), and the rows are read back from there with
//! their children counted. Memory stays flat however many ranges there
//! are.

use rusqlite::Row;

use crate::analysis::projection::Projector;
use crate::error::Failure;
use crate::nsys::names::RangeNames;
use crate::nsys::Report;

use super::nvtx_gpu::{project, style, RangeInfo};
use super::set_aside::{self, SetAsideRows};
use super::table::Cell;

/// The columns of `nvtx_gpu_proj_trace`, as nsys 2025.3 names them.
pub(super) const COLUMNS: [&str; 14] = [
    "Name",
    "Projected Start (ns)",
    "Projected Duration (ns)",
    "Orig Start (ns)",
    "Orig Duration (ns)",
    "Style",
    "PID",
    "TID",
    "NumGPUOps",
    "Lvl",
    "NumChild",
    "RangeId",
    "ParentId",
    "RangeStack",
];

/// The tables the projected ranges are set aside in: a row per range, and
/// the name and style of each group.
const TABLES: &str = "CREATE TABLE projected (
         seq INTEGER PRIMARY KEY, grp INTEGER NOT NULL, first INTEGER NOT NULL,
         duration INTEGER NOT NULL, start INTEGER NOT NULL, range_duration INTEGER NOT NULL,
         pid INTEGER NOT NULL, tid INTEGER NOT NULL, ops INTEGER NOT NULL,
         level INTEGER NOT NULL, rowid_in_export INTEGER NOT NULL, parent INTEGER,
         stack TEXT NOT NULL);
     CREATE TABLE name (grp INTEGER PRIMARY KEY, name TEXT NOT NULL, push_pop INTEGER NOT NULL);";

/// Projects the NVTX ranges of `report` (named as `names` says) and sets
/// their rows aside.
pub(super) fn nvtx_gpu_proj_trace(
    report: &Report,
    names: RangeNames,
) -> Result<SetAsideRows<14>, Failure> {
    let db = set_aside::begin(TABLES)?;
    // No NVTX row, no range.
    let Some(last) = report.nvtx_last_time()? else {
        return Ok(set_aside(db)?);
    };
    let mut failed: Option<rusqlite::Error> = None;
    {
        let mut insert = db.prepare(
            "INSERT INTO projected (grp, first, duration, start, range_duration, pid, tid, ops,
                 level, rowid_in_export, parent, stack)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?;
        let take = |projector: &mut Projector<RangeInfo>| {
            while let Some(p) = projector.next_ready() {
                if failed.is_some() {
                    continue;
                }
                let info = &p.range.data;
                let done = insert.execute(rusqlite::params![
                    info.group,
                    clamp(i128::from(p.first)),
                    clamp(i128::from(p.last) - i128::from(p.first)),
                    clamp(i128::from(p.range.start)),
                    clamp(i128::from(p.range_end) - i128::from(p.range.start)),
                    p.range.pid,
                    p.range.tid,
                    p.launches,
                    info.level,
                    info.rowid,
                    info.parent_rowid,
                    info.stack,
                ]);
                if let Err(e) = done {
                    failed = Some(e);
                }
            }
        };
        let keys = project(report, names, last, |_| {}, take)?;
        if let Some(e) = failed {
            return Err(e.into());
        }
        let mut name = db.prepare("INSERT INTO name (grp, name, push_pop) VALUES (?1, ?2, ?3)")?;
        for (group, (text, push_pop)) in keys.iter().enumerate() {
            name.execute(rusqlite::params![group as i64, text, push_pop])?;
        }
    }
    Ok(set_aside(db)?)
}

/// The rows in `db`, complete.
fn set_aside(db: rusqlite::Connection) -> rusqlite::Result<SetAsideRows<14>> {
    SetAsideRows::commit(
        db,
        "projected",
        "CREATE INDEX projected_parent ON projected (parent)",
        "SELECT n.name, p.first, p.duration, p.start, p.range_duration, n.push_pop,
             p.pid, p.tid, p.ops, p.level,
             (SELECT COUNT(*) FROM projected AS c WHERE c.parent == p.rowid_in_export),
             p.rowid_in_export, p.parent, p.stack
         FROM projected AS p JOIN name AS n ON n.grp == p.grp
         ORDER BY p.seq",
        cells,
    )
}

/// A time as SQLite holds it.
fn clamp(t: i128) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

/// A row read back as the table's cells.
fn cells(r: &Row<'_>) -> rusqlite::Result<[Cell; 14]> {
    let int =
        |at: usize| -> rusqlite::Result<Cell> { Ok(Cell::Int(i128::from(r.get::<_, i64>(at)?))) };
    Ok([
        Cell::Text(r.get(0)?),
        int(1)?,
        int(2)?,
        int(3)?,
        int(4)?,
        Cell::Text(style(r.get(5)?).to_owned()),
        int(6)?,
        int(7)?,
        int(8)?,
        int(9)?,
        int(10)?,
        int(11)?,
        r.get::<_, Option<i64>>(12)?
            .map_or(Cell::Empty, |p| Cell::Int(i128::from(p))),
        Cell::Text(r.get(13)?),
    ])
}
