//! What tables and columns this export has. nsys exports lazily and its schema
//! grows with each version, so every table and non-key column is optional.

use rusqlite::Connection;
use rustc_hash::{FxHashMap, FxHashSet};

pub(crate) struct Schema {
    tables: FxHashMap<String, FxHashSet<String>>,
}

impl Schema {
    pub(crate) fn probe(conn: &Connection) -> rusqlite::Result<Self> {
        let mut tables = FxHashMap::default();
        let mut stmt = conn.prepare(
            "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table'",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let table: String = row.get(0)?;
            let column: String = row.get(1)?;
            tables
                .entry(table)
                .or_insert_with(FxHashSet::default)
                .insert(column);
        }
        Ok(Self { tables })
    }

    pub(crate) fn has_table(&self, table: &str) -> bool {
        self.tables.contains_key(table)
    }

    /// The names of the tables.
    pub(crate) fn tables(&self) -> impl Iterator<Item = &str> {
        self.tables.keys().map(String::as_str)
    }

    pub(crate) fn has_column(&self, table: &str, column: &str) -> bool {
        self.tables.get(table).is_some_and(|c| c.contains(column))
    }

    /// Those of `columns` that `table` lacks.
    pub(crate) fn lacking<'c>(&self, table: &str, columns: &[&'c str]) -> Vec<&'c str> {
        (columns.iter().copied())
            .filter(|c| !self.has_column(table, c))
            .collect()
    }
}
