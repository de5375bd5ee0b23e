//! The contract of an export table's columns, declared once by the reader
//! that owns the table: each column's name, whether a row can be read
//! without it, and the type its values read as. Every reader of the table,
//! the owner's own and those that need fewer columns, takes the columns it
//! reads from that one declaration (`Select::take`), so no two readers can
//! disagree on a column.

use std::marker::PhantomData;

use super::select::{Col, Select};

/// A declared column, read as a `T`.
pub(crate) struct Column<T> {
    name: &'static str,
    /// Rows cannot be read without it: a table that lacks it is unreadable.
    required: bool,
    value: PhantomData<fn() -> T>,
}

impl<T> Clone for Column<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Column<T> {}

impl<T> Column<T> {
    /// A column every row needs (`T` says whether its values may be NULL).
    pub const fn required(name: &'static str) -> Self {
        Self {
            name,
            required: true,
            value: PhantomData,
        }
    }

    /// The column's name in the export.
    pub const fn name(self) -> &'static str {
        self.name
    }
}

impl<T> Column<Option<T>> {
    /// A column that some versions' exports lack: NULL there.
    pub const fn optional(name: &'static str) -> Self {
        Self {
            name,
            required: false,
            value: PhantomData,
        }
    }
}

impl Select<'_> {
    /// Reads `column`, as its declaration says.
    pub fn take<T>(&mut self, column: Column<T>) -> Col<T> {
        match column.required {
            true => self.required(column.name),
            false => {
                let sql = self.column_or_null(column.name);
                self.expr(sql)
            }
        }
    }
}

/// Declares the columns of a table (or of several tables of one shape): a
/// struct of [`Column`]s and the constant that holds them.
///
/// ```ignore
/// columns! {
///     /// The columns of an API call table.
///     pub(crate) struct ApiColumns = API {
///         start: i64 = required("start"),
///         name_id: Option<i64> = optional("nameId"),
///     }
/// }
/// ```
macro_rules! columns {
    (
        $(#[$doc:meta])*
        $vis:vis struct $name:ident = $constant:ident {
            $($field:ident: $ty:ty = $how:ident($column:literal),)*
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        $vis struct $name {
            $(pub $field: $crate::nsys::columns::Column<$ty>,)*
        }

        $(#[$doc])*
        $vis const $constant: $name = $name {
            $($field: $crate::nsys::columns::Column::$how($column),)*
        };
    };
}

pub(crate) use columns;
