//! A trace report's rows set aside in a private temporary database (see
//! [`private_database`]) as they are found, because a row needs what comes
//! after it (its children); once all are in, one query reads them back,
//! complete, each time the table is walked.

use std::io;

use rusqlite::{Connection, Row};

use super::spill::private_database;
use super::table::{Cell, RowSource};

/// A private database holding `tables`, new, in a transaction open until
/// [`SetAsideRows::commit`].
pub(super) fn begin(tables: &str) -> rusqlite::Result<Connection> {
    let db = private_database()?;
    db.execute_batch(tables)?;
    db.execute_batch("BEGIN")?;
    Ok(db)
}

/// Rows held in a private database, read back by one query.
pub(super) struct SetAsideRows<const N: usize> {
    db: Connection,
    empty: bool,
    /// The query that reads the rows back, in the table's order.
    select: &'static str,
    /// A row of `select` as the table's cells.
    cells: fn(&Row<'_>) -> rusqlite::Result<[Cell; N]>,
}

impl<const N: usize> SetAsideRows<N> {
    /// The rows of `table` in `db`: `index` (what `select` finds children
    /// by) is made and the transaction open in `db` is committed.
    pub(super) fn commit(
        db: Connection,
        table: &str,
        index: &str,
        select: &'static str,
        cells: fn(&Row<'_>) -> rusqlite::Result<[Cell; N]>,
    ) -> rusqlite::Result<Self> {
        db.execute(index, [])?;
        db.execute_batch("COMMIT")?;
        let empty = !db.query_row(&format!("SELECT EXISTS (SELECT 1 FROM {table})"), [], |r| {
            r.get::<_, bool>(0)
        })?;
        Ok(SetAsideRows {
            db,
            empty,
            select,
            cells,
        })
    }
}

impl<const N: usize> RowSource for SetAsideRows<N> {
    fn is_empty(&self) -> bool {
        self.empty
    }

    fn each(&self, f: &mut dyn FnMut(&[Cell]) -> io::Result<()>) -> io::Result<()> {
        // The database's failure and the writer's are told apart: the
        // writer's stops the walk as it is.
        let mut read = || -> rusqlite::Result<io::Result<()>> {
            let mut stmt = self.db.prepare(self.select)?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                if let Err(e) = f(&(self.cells)(r)?) {
                    return Ok(Err(e));
                }
            }
            Ok(Ok(()))
        };
        read().map_err(io::Error::other)?
    }
}
