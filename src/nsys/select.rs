//! A table's SELECT list, declared once.
//!
//! Each column is declared by name, as required or optional, and comes back
//! as a typed handle ([`Col`]) that reads it from a row. The list and the
//! decoding are one declaration: adding a column is one line, and no other
//! column moves.

use std::marker::PhantomData;

use rusqlite::types::{FromSql, ValueRef};
use rusqlite::Row;

use super::schema::Schema;

/// A column of a [`Select`], read as a `T`. Cheap to copy.
pub(crate) struct Col<T> {
    at: usize,
    value: PhantomData<fn() -> T>,
}

impl<T> Clone for Col<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Col<T> {}

impl<T> Col<T> {
    /// The value as SQLite holds it, for columns whose type varies by row.
    pub fn raw<'a>(self, row: &'a Row) -> rusqlite::Result<ValueRef<'a>> {
        row.get_ref(self.at)
    }
}

impl<T: FromSql> Col<T> {
    pub fn get(self, row: &Row) -> rusqlite::Result<T> {
        row.get(self.at)
    }
}

/// The SELECT list of one table of one export.
pub(crate) struct Select<'s> {
    schema: &'s Schema,
    table: String,
    exprs: Vec<String>,
    /// Required columns the table lacks.
    missing: Vec<String>,
}

impl<'s> Select<'s> {
    pub fn new(schema: &'s Schema, table: &str) -> Self {
        Self {
            schema,
            table: table.to_owned(),
            exprs: Vec::new(),
            missing: Vec::new(),
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// A column every row needs: a table without it cannot be read (see
    /// [`Select::missing`]).
    pub fn required<T>(&mut self, column: &str) -> Col<T> {
        if !self.has(column) {
            self.missing.push(column.to_owned());
        }
        self.expr(quote(column))
    }

    /// A column that some versions' exports lack: NULL there.
    pub fn optional<T>(&mut self, column: &str) -> Col<Option<T>> {
        let sql = self.column_or_null(column);
        self.expr(sql)
    }

    /// The first of `columns` that the table has (versions and tables name
    /// one thing differently), or NULL.
    pub fn first_of<T>(&mut self, columns: &[&str]) -> Col<Option<T>> {
        let sql = columns
            .iter()
            .find(|c| self.has(c))
            .map_or_else(|| "NULL".to_owned(), |c| quote(c));
        self.expr(sql)
    }

    /// Any SQL expression over the row. Build it with
    /// [`Select::column_or_null`] so that absent columns read as NULL.
    pub fn expr<T>(&mut self, sql: String) -> Col<T> {
        self.exprs.push(sql);
        Col {
            at: self.exprs.len() - 1,
            value: PhantomData,
        }
    }

    pub fn has(&self, column: &str) -> bool {
        self.schema.has_column(&self.table, column)
    }

    /// `column`, quoted, or `NULL` where the table lacks it.
    pub fn column_or_null(&self, column: &str) -> String {
        match self.has(column) {
            true => quote(column),
            false => "NULL".to_owned(),
        }
    }

    /// The required columns the table lacks, as a phrase (`start, end`).
    pub fn missing(&self) -> Option<String> {
        (!self.missing.is_empty()).then(|| self.missing.join(", "))
    }

    /// The expressions, comma-separated.
    pub fn sql(&self) -> String {
        self.exprs.join(", ")
    }
}

/// An SQL identifier, quoted: table names come from the input file too
/// (OpenMP has a table per event kind).
pub(crate) fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(r#"CREATE TABLE t (start INTEGER, "end" INTEGER, a INTEGER);"#)
            .unwrap();
        Schema::probe(&conn).unwrap()
    }

    #[test]
    fn columns_read_where_they_were_declared() {
        let schema = schema();
        let mut select = Select::new(&schema, "t");
        let start = select.required::<i64>("start");
        let b = select.optional::<i64>("b");
        let a = select.first_of::<i64>(&["b", "a"]);
        let end = select.required::<i64>("end");
        assert_eq!(select.sql(), r#""start", NULL, "a", "end""#);
        assert_eq!(select.missing(), None);
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.query_row(&format!("SELECT {}", "1, NULL, 3, 4"), [], |row| {
            assert_eq!(start.get(row)?, 1);
            assert_eq!(b.get(row)?, None);
            assert_eq!(a.get(row)?, Some(3));
            assert_eq!(end.get(row)?, 4);
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn a_missing_required_column_is_named() {
        let schema = schema();
        let mut select = Select::new(&schema, "t");
        let _: Col<i64> = select.required("globalTid");
        let _: Col<i64> = select.required("start");
        let _: Col<i64> = select.required("nameId");
        assert_eq!(select.missing().as_deref(), Some("globalTid, nameId"));
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote("end"), r#""end""#);
        assert_eq!(quote(r#"a"b"#), r#""a""b""#);
    }
}
