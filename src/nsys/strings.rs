//! `StringIds(id, value)`, loaded once: a lookup in memory beats a join per row.

use rusqlite::Connection;

#[derive(Default)]
pub struct StringTable {
    values: Vec<Option<Box<str>>>,
}

impl StringTable {
    pub fn load(conn: &Connection) -> rusqlite::Result<Self> {
        let mut values: Vec<Option<Box<str>>> = Vec::new();
        let mut stmt = conn.prepare("SELECT id, value FROM StringIds")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            // Text that is not valid UTF-8 is kept, with replacement characters.
            let value = match row.get_ref(1)? {
                rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                    String::from_utf8_lossy(t).into_owned()
                }
                rusqlite::types::ValueRef::Null => continue,
                other => format!("{other:?}"),
            };
            let Ok(index) = usize::try_from(id) else {
                continue;
            };
            if index >= values.len() {
                values.resize(index + 1, None);
            }
            values[index] = Some(value.into_boxed_str());
        }
        Ok(Self { values })
    }

    pub fn get(&self, id: i64) -> Option<&str> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.values.get(i))
            .and_then(|v| v.as_deref())
    }

    /// Every (id, string) there is.
    pub fn ids(&self) -> impl Iterator<Item = (i64, &str)> {
        self.values
            .iter()
            .enumerate()
            .filter_map(|(id, v)| Some((id as i64, v.as_deref()?)))
    }

    /// The string of an id column's value, if both are there.
    pub fn lookup(&self, id: Option<i64>) -> Option<&str> {
        id.and_then(|id| self.get(id))
    }

    /// The name an id column gives, or "" where it gives none.
    pub fn name(&self, id: Option<i64>) -> &str {
        self.lookup(id).unwrap_or("")
    }
}
