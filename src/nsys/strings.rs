//! `StringIds(id, value)`, loaded once: a lookup in memory beats a join per row.
//!
//! Exports number their strings 0, 1, 2, ... and a vector indexed by id is
//! the fastest lookup. Trimmed exports keep a few strings of large ids (140
//! strings up to id 331,886 in one fixture): a vector that long would be
//! mostly empty, so such tables are kept in a hash map instead.

use rusqlite::types::ValueRef;
use rusqlite::Connection;
use rustc_hash::FxHashMap;

use super::columns::columns;
use super::schema::Schema;
use super::select::{quote, Select};
use super::Report;

/// The strings that other tables' id columns (`nameId`, `textId`, ...) name.
pub(super) const TABLE: &str = "StringIds";

columns! {
    /// The columns of [`TABLE`].
    pub(crate) struct StringColumns = STRINGS {
        id: i64 = required("id"),
        value: Option<()> = required("value"),
    }
}

#[derive(Default)]
pub(crate) struct StringTable {
    storage: Storage,
}

enum Storage {
    /// Indexed by id.
    Dense(Vec<Option<Box<str>>>),
    Sparse(FxHashMap<i64, Box<str>>),
}

impl Default for Storage {
    fn default() -> Self {
        Storage::Dense(Vec::new())
    }
}

/// Ids up to this many times the count of strings (plus a little) are
/// stored densely: an empty slot costs 16 bytes, a map entry about 40.
const DENSE_UP_TO: usize = 2;

impl StringTable {
    pub(crate) fn load(conn: &Connection, schema: &Schema) -> rusqlite::Result<Self> {
        let mut entries: Vec<(usize, Box<str>)> = Vec::new();
        let mut s = Select::new(schema, TABLE);
        let id = s.take(STRINGS.id);
        let value = s.take(STRINGS.value);
        let sql = format!("SELECT {} FROM {}", s.sql(), quote(TABLE));
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let id = id.get(row)?;
            // Text that is not valid UTF-8 is kept, with replacement characters.
            let value = match value.raw(row)? {
                ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
                ValueRef::Null => continue,
                other => format!("{other:?}"),
            };
            let Ok(index) = usize::try_from(id) else {
                continue;
            };
            entries.push((index, value.into_boxed_str()));
        }
        Ok(Self::from_entries(entries))
    }

    fn from_entries(entries: Vec<(usize, Box<str>)>) -> Self {
        let slots = entries.iter().map(|&(id, _)| id + 1).max().unwrap_or(0);
        let storage = if slots <= DENSE_UP_TO * entries.len() + 1024 {
            let mut values: Vec<Option<Box<str>>> = vec![None; slots];
            for (id, value) in entries {
                values[id] = Some(value);
            }
            Storage::Dense(values)
        } else {
            Storage::Sparse(
                entries
                    .into_iter()
                    .map(|(id, value)| (id as i64, value))
                    .collect(),
            )
        };
        Self { storage }
    }

    pub(crate) fn get(&self, id: i64) -> Option<&str> {
        match &self.storage {
            Storage::Dense(values) => usize::try_from(id)
                .ok()
                .and_then(|i| values.get(i))
                .and_then(|v| v.as_deref()),
            Storage::Sparse(values) => values.get(&id).map(|v| &**v),
        }
    }

    /// Every (id, string) there is, by id.
    pub(crate) fn ids(&self) -> Box<dyn Iterator<Item = (i64, &str)> + '_> {
        match &self.storage {
            Storage::Dense(values) => Box::new(
                values
                    .iter()
                    .enumerate()
                    .filter_map(|(id, v)| Some((id as i64, v.as_deref()?))),
            ),
            Storage::Sparse(values) => {
                let mut ids: Vec<(i64, &str)> = values.iter().map(|(&id, v)| (id, &**v)).collect();
                ids.sort_unstable_by_key(|&(id, _)| id);
                Box::new(ids.into_iter())
            }
        }
    }

    /// The string of an id column's value, if both are there.
    pub(crate) fn lookup(&self, id: Option<i64>) -> Option<&str> {
        id.and_then(|id| self.get(id))
    }

    /// The name an id column gives, or "" where it gives none.
    pub(crate) fn name(&self, id: Option<i64>) -> &str {
        self.lookup(id).unwrap_or("")
    }
}

impl Report {
    /// The StringIds ids of the strings matching any of `patterns` (SQL
    /// `LIKE` patterns, which ignore ASCII case).
    pub(crate) fn string_ids_like(&self, patterns: &[&str]) -> rusqlite::Result<Vec<i64>> {
        let Some(mut s) = self.select(TABLE) else {
            return Ok(Vec::new());
        };
        let id = s.take(STRINGS.id);
        let value = quote(STRINGS.value.name());
        if !s.has(STRINGS.value.name()) || patterns.is_empty() {
            return Ok(Vec::new());
        }
        let filter = patterns
            .iter()
            .map(|p| format!("{value} LIKE '{}'", p.replace('\'', "''")))
            .collect::<Vec<_>>()
            .join(" OR ");
        let mut ids = Vec::new();
        self.each_selected(&s, &filter, |r| {
            ids.push(id.get(r)?);
            Ok(())
        })?;
        Ok(ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(ids: &[usize]) -> StringTable {
        StringTable::from_entries(ids.iter().map(|&id| (id, id.to_string().into())).collect())
    }

    #[test]
    fn dense_and_sparse_tables_answer_alike() {
        let dense = table(&[0, 1, 2, 5]);
        let sparse = table(&[3, 331_886, 7]);
        assert!(matches!(dense.storage, Storage::Dense(_)));
        assert!(matches!(sparse.storage, Storage::Sparse(_)));
        for (t, id) in [(&dense, 5), (&sparse, 331_886), (&sparse, 3)] {
            assert_eq!(t.get(id), Some(id.to_string().as_str()));
        }
        for t in [&dense, &sparse] {
            assert_eq!(t.get(4), None);
            assert_eq!(t.get(-1), None);
            assert_eq!(t.name(None), "");
        }
        let ids: Vec<i64> = sparse.ids().map(|(id, _)| id).collect();
        assert_eq!(ids, [3, 7, 331_886]);
        let ids: Vec<i64> = dense.ids().map(|(id, _)| id).collect();
        assert_eq!(ids, [0, 1, 2, 5]);
    }
}
