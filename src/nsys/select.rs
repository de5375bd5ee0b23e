//! A table's SELECT list, declared once.
//!
//! Each column is declared by name, as required or optional, and comes back
//! as a typed handle ([`Col`]) that reads it from a row. The list and the
//! decoding are one declaration: adding a column is one line, and no other
//! column moves.

use std::ffi::{c_int, CStr};
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

use rusqlite::types::{FromSql, FromSqlError, ValueRef};
use rusqlite::{ffi, Connection};

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
    /// The column at `at` of a query the scan writes itself (past a
    /// [`Select`]'s columns: the rowid, say).
    pub(crate) fn at(at: usize) -> Self {
        Self {
            at,
            value: PhantomData,
        }
    }

    /// The value as SQLite holds it, for columns whose type varies by row.
    pub(crate) fn raw<R: Fields>(self, row: &R) -> rusqlite::Result<ValueRef<'_>> {
        row.value(self.at)
    }
}

impl<T: FromSql> Col<T> {
    /// The value as a `T`; a value of another type (NULL in a required
    /// column, say) is the error rusqlite's `Row::get` gives.
    #[inline(always)]
    pub(crate) fn get<R: Fields>(self, row: &R) -> rusqlite::Result<T> {
        let value = row.value(self.at)?;
        T::column_result(value).map_err(|e| conversion_error(row, self.at, value, e))
    }
}

/// A row whose columns a [`Col`] reads: a [`Row`] of a [`Query`], or a
/// rusqlite row (the small queries of the metadata).
pub(crate) trait Fields {
    fn value(&self, at: usize) -> rusqlite::Result<ValueRef<'_>>;
    fn column_name(&self, at: usize) -> String;
}

impl Fields for rusqlite::Row<'_> {
    fn value(&self, at: usize) -> rusqlite::Result<ValueRef<'_>> {
        self.get_ref(at)
    }

    fn column_name(&self, at: usize) -> String {
        self.as_ref()
            .column_name(at)
            .map_or_else(|_| String::new(), str::to_owned)
    }
}

/// The error of a value that is not a `T`, as rusqlite words it.
#[cold]
#[inline(never)]
fn conversion_error<R: Fields>(
    row: &R,
    at: usize,
    value: ValueRef,
    e: FromSqlError,
) -> rusqlite::Error {
    use rusqlite::Error;
    match e {
        FromSqlError::InvalidType => {
            Error::InvalidColumnType(at, row.column_name(at), value.data_type())
        }
        FromSqlError::OutOfRange(i) => Error::IntegralValueOutOfRange(at, i),
        FromSqlError::Other(err) => Error::FromSqlConversionFailure(at, value.data_type(), err),
        other => Error::FromSqlConversionFailure(at, value.data_type(), Box::new(other)),
    }
}

/// A prepared statement whose rows are read through SQLite's C API: a value
/// costs one call into the statement and two small ones (its type, then the
/// value), where rusqlite's checked `Row::get` costs about three times the
/// instructions. The readers
/// read millions of rows of a dozen columns; this is their one way in.
///
/// Safe to use: a [`Row`] borrows its query, so no value outlives the step
/// that made it, and the statement is finalized on drop, before the
/// connection it borrows can close.
pub(crate) struct Query<'c> {
    stmt: NonNull<ffi::sqlite3_stmt>,
    db: *mut ffi::sqlite3,
    columns: usize,
    conn: PhantomData<&'c Connection>,
}

impl<'c> Query<'c> {
    pub(super) fn prepare(conn: &'c Connection, sql: &str) -> rusqlite::Result<Self> {
        // SAFETY: the handle is used only while `conn` is borrowed.
        let db = unsafe { conn.handle() };
        let len = c_int::try_from(sql.len())
            .map_err(|_| failure(ffi::SQLITE_TOOBIG, Some("SQL too long".to_owned())))?;
        let mut stmt = ptr::null_mut();
        // SAFETY: `sql` is valid for `len` bytes; `stmt` receives the statement.
        let rc = unsafe {
            ffi::sqlite3_prepare_v3(
                db,
                sql.as_ptr().cast(),
                len,
                ffi::SQLITE_PREPARE_PERSISTENT as _,
                &mut stmt,
                ptr::null_mut(),
            )
        };
        if rc != ffi::SQLITE_OK {
            // SAFETY: `db` is open.
            return Err(unsafe { error(db, rc) });
        }
        let stmt = NonNull::new(stmt)
            .ok_or_else(|| failure(ffi::SQLITE_MISUSE, Some(format!("no statement in: {sql}"))))?;
        // SAFETY: `stmt` is a live statement.
        let columns = unsafe { ffi::sqlite3_column_count(stmt.as_ptr()) };
        Ok(Self {
            stmt,
            db,
            columns: usize::try_from(columns).unwrap_or(0),
            conn: PhantomData,
        })
    }

    pub(super) fn column_count(&self) -> usize {
        self.columns
    }

    /// Starts the statement again from its first row, with `params` bound
    /// to `?1`, `?2`, ...
    pub(super) fn run(&mut self, params: &[i64]) -> rusqlite::Result<()> {
        let stmt = self.stmt.as_ptr();
        // SAFETY: `stmt` is live; reset only rewinds it.
        unsafe { ffi::sqlite3_reset(stmt) };
        for (i, &value) in params.iter().enumerate() {
            let at = c_int::try_from(i + 1).unwrap_or(c_int::MAX);
            // SAFETY: binding an integer copies it.
            let rc = unsafe { ffi::sqlite3_bind_int64(stmt, at, value) };
            if rc != ffi::SQLITE_OK {
                // SAFETY: `db` is open.
                return Err(unsafe { error(self.db, rc) });
            }
        }
        Ok(())
    }

    /// The next row, or `None` after the last (then the statement is
    /// rewound, and ready to [`run`](Self::run) again).
    #[inline]
    pub(super) fn next(&mut self) -> rusqlite::Result<Option<Row<'_>>> {
        let stmt = self.stmt.as_ptr();
        // SAFETY: `stmt` is live; no value of the previous row is borrowed
        // (rows borrow `self`).
        match unsafe { ffi::sqlite3_step(stmt) } {
            ffi::SQLITE_ROW => Ok(Some(Row {
                stmt: self.stmt,
                columns: self.columns,
                query: PhantomData,
            })),
            ffi::SQLITE_DONE => {
                // SAFETY: as above.
                unsafe { ffi::sqlite3_reset(stmt) };
                Ok(None)
            }
            // SAFETY: `db` is open.
            rc => Err(unsafe { error(self.db, rc) }),
        }
    }
}

impl Drop for Query<'_> {
    fn drop(&mut self) {
        // SAFETY: the statement is live, and no row borrows it any more.
        unsafe { ffi::sqlite3_finalize(self.stmt.as_ptr()) };
    }
}

/// A row of a [`Query`], valid until its next step.
pub(crate) struct Row<'q> {
    stmt: NonNull<ffi::sqlite3_stmt>,
    columns: usize,
    query: PhantomData<&'q mut ()>,
}

impl Fields for Row<'_> {
    #[inline(always)]
    fn value(&self, at: usize) -> rusqlite::Result<ValueRef<'_>> {
        if at >= self.columns {
            return Err(rusqlite::Error::InvalidColumnIndex(at));
        }
        // SAFETY: `stmt` is on a row (a `Row` exists only then) and `at` is
        // one of its columns. The value is the statement's own, valid until
        // the next step, as are its text and blob; the slices borrow `self`,
        // which borrows the query. SQLite calls such a value unprotected:
        // not to be read while another thread uses the connection, which
        // cannot happen here (the query borrows the connection, which is
        // not `Sync`). Read as a value, a column costs one call into the
        // statement (its locking and error bookkeeping) instead of two.
        unsafe {
            let value = ffi::sqlite3_column_value(self.stmt.as_ptr(), at as c_int);
            Ok(match ffi::sqlite3_value_type(value) {
                ffi::SQLITE_INTEGER => ValueRef::Integer(ffi::sqlite3_value_int64(value)),
                ffi::SQLITE_FLOAT => ValueRef::Real(ffi::sqlite3_value_double(value)),
                ffi::SQLITE_TEXT => ValueRef::Text(bytes(
                    ffi::sqlite3_value_text(value),
                    ffi::sqlite3_value_bytes(value),
                )?),
                ffi::SQLITE_BLOB => ValueRef::Blob(bytes(
                    ffi::sqlite3_value_blob(value).cast(),
                    ffi::sqlite3_value_bytes(value),
                )?),
                _ => ValueRef::Null,
            })
        }
    }

    fn column_name(&self, at: usize) -> String {
        // SAFETY: the name is a C string owned by the statement, copied here.
        unsafe {
            let name = ffi::sqlite3_column_name(self.stmt.as_ptr(), at as c_int);
            match name.is_null() {
                true => String::new(),
                false => CStr::from_ptr(name).to_string_lossy().into_owned(),
            }
        }
    }
}

/// `len` bytes at `data`, which SQLite returns null only for an empty value
/// or when out of memory.
///
/// # Safety
/// `data` must be valid for `len` bytes for the returned lifetime.
#[inline]
unsafe fn bytes<'a>(data: *const u8, len: c_int) -> rusqlite::Result<&'a [u8]> {
    match (data.is_null(), usize::try_from(len)) {
        (_, Ok(0)) => Ok(&[]),
        (false, Ok(len)) => Ok(std::slice::from_raw_parts(data, len)),
        _ => Err(failure(ffi::SQLITE_NOMEM, None)),
    }
}

fn failure(code: c_int, message: Option<String>) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(code), message)
}

/// The error of `code`, with the connection's message where it is about it.
///
/// # Safety
/// `db` must be an open connection.
#[cold]
unsafe fn error(db: *mut ffi::sqlite3, code: c_int) -> rusqlite::Error {
    let message = match ffi::sqlite3_errcode(db) == code {
        true => ffi::sqlite3_errmsg(db),
        false => ffi::sqlite3_errstr(code),
    };
    let message =
        (!message.is_null()).then(|| CStr::from_ptr(message).to_string_lossy().into_owned());
    failure(code, message)
}

/// The SELECT list of one table of one export.
pub(crate) struct Select<'s> {
    schema: &'s Schema,
    table: String,
    exprs: Vec<String>,
    /// Required columns the table lacks.
    missing: Vec<String>,
    /// Expected columns the table lacks (see [`Select::expected`]).
    lacking: Vec<String>,
}

impl<'s> Select<'s> {
    pub(crate) fn new(schema: &'s Schema, table: &str) -> Self {
        Self {
            schema,
            table: table.to_owned(),
            exprs: Vec::new(),
            missing: Vec::new(),
            lacking: Vec::new(),
        }
    }

    pub(crate) fn table(&self) -> &str {
        &self.table
    }

    /// A column every row needs: a table without it cannot be read (see
    /// [`Select::missing`]).
    pub(crate) fn required<T>(&mut self, column: &str) -> Col<T> {
        if !self.has(column) {
            self.missing.push(column.to_owned());
        }
        self.expr(quote(column))
    }

    /// A column that some versions' exports lack: NULL there.
    pub(crate) fn optional<T>(&mut self, column: &str) -> Col<Option<T>> {
        let sql = self.column_or_null(column);
        self.expr(sql)
    }

    /// A column every nsys version writes, though a row can be read without
    /// it: NULL where the table lacks it, which [`Select::lacking`] tells
    /// (what depends on it is then incomplete, not silently smaller).
    pub(crate) fn expected<T>(&mut self, column: &str) -> Col<Option<T>> {
        self.expected_as(column)
    }

    /// [`Select::expected`], read as any `T` (a declared `Option`).
    pub(crate) fn expected_as<T>(&mut self, column: &str) -> Col<T> {
        if !self.has(column) {
            self.lacking.push(column.to_owned());
        }
        let sql = self.column_or_null(column);
        self.expr(sql)
    }

    /// The first of `columns` that the table has (versions and tables name
    /// one thing differently), or NULL.
    pub(crate) fn first_of<T>(&mut self, columns: &[&str]) -> Col<Option<T>> {
        let sql = columns
            .iter()
            .find(|c| self.has(c))
            .map_or_else(|| "NULL".to_owned(), |c| quote(c));
        self.expr(sql)
    }

    /// Any SQL expression over the row. Build it with
    /// [`Select::column_or_null`] so that absent columns read as NULL.
    pub(crate) fn expr<T>(&mut self, sql: String) -> Col<T> {
        self.exprs.push(sql);
        Col {
            at: self.exprs.len() - 1,
            value: PhantomData,
        }
    }

    pub(crate) fn has(&self, column: &str) -> bool {
        self.schema.has_column(&self.table, column)
    }

    /// `column`, quoted, or `NULL` where the table lacks it.
    pub(crate) fn column_or_null(&self, column: &str) -> String {
        match self.has(column) {
            true => quote(column),
            false => "NULL".to_owned(),
        }
    }

    /// The required columns the table lacks, as a phrase (`start, end`).
    pub(crate) fn missing(&self) -> Option<String> {
        (!self.missing.is_empty()).then(|| self.missing.join(", "))
    }

    /// The expected columns the table lacks.
    pub(crate) fn lacking(&self) -> &[String] {
        &self.lacking
    }

    /// The expressions, comma-separated.
    pub(crate) fn sql(&self) -> String {
        self.exprs.join(", ")
    }
}

/// SQL true where `column` is one of `values`, NULL where it is NULL.
///
/// The same rows as `column IN (...)`, but a chain of comparisons: SQLite
/// looks a constant `IN` list up in a temporary index, once per row, which
/// costs a full scan of `NVTX_EVENTS` a third more. The values come first
/// that match most rows.
pub(crate) fn any_of(column: &str, values: &[i64]) -> String {
    let column = quote(column);
    let each: Vec<String> = values.iter().map(|v| format!("{column} = {v}")).collect();
    format!("({})", each.join(" OR "))
}

/// SQL true where `column` is none of `values`, NULL where it is NULL: the
/// rows of `column NOT IN (...)` (see [`any_of`]).
pub(crate) fn none_of(column: &str, values: &[i64]) -> String {
    let column = quote(column);
    let each: Vec<String> = values.iter().map(|v| format!("{column} <> {v}")).collect();
    format!("({})", each.join(" AND "))
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
    fn value_lists_select_the_rows_of_in_and_not_in() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (1), (2), (3), (NULL), (59);",
        )
        .unwrap();
        let rows = |filter: &str| -> Vec<Option<i64>> {
            let sql = format!("SELECT v FROM t WHERE {filter} ORDER BY rowid");
            let mut stmt = conn.prepare(&sql).unwrap();
            let rows = stmt.query_map([], |r| r.get(0)).unwrap();
            rows.map(Result::unwrap).collect()
        };
        let values = [59, 2];
        assert_eq!(any_of("v", &values), r#"("v" = 59 OR "v" = 2)"#);
        assert_eq!(rows(&any_of("v", &values)), rows("v IN (59, 2)"));
        assert_eq!(rows(&none_of("v", &values)), rows("v NOT IN (59, 2)"));
        assert_eq!(rows(&none_of("v", &values)), [Some(1), Some(3)]);
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote("end"), r#""end""#);
        assert_eq!(quote(r#"a"b"#), r#""a""b""#);
    }
}
