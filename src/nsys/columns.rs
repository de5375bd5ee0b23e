//! The contract of an export table's columns, declared once by the reader
//! that owns the table: each column's name, whether a row can be read
//! without it, and the type its values read as. Every reader of the table,
//! the owner's own and those that need fewer columns, takes the columns it
//! reads from that one declaration (`Select::take`), so no two readers can
//! disagree on a column.

use std::marker::PhantomData;

use super::select::{Col, Row, Select};

/// A declared column, read as a `T`.
pub(crate) struct Column<T> {
    name: &'static str,
    kind: Kind,
    value: PhantomData<fn() -> T>,
}

/// What a table that lacks a column is worth.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Rows cannot be read without it: a table that lacks it is unreadable.
    Required,
    /// Every nsys version writes it: rows are read without it (NULL), and
    /// what depends on it is incomplete, which the report notes.
    Expected,
    /// Some versions' exports lack it: NULL there, as those versions mean.
    Optional,
    /// Expected in these tables of a shared declaration, optional in the
    /// others (which never have it).
    ExpectedIn(&'static [&'static str]),
}

impl<T> Clone for Column<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Column<T> {}

impl<T> Column<T> {
    /// A column every row needs (`T` says whether its values may be NULL).
    pub(crate) const fn required(name: &'static str) -> Self {
        Self {
            name,
            kind: Kind::Required,
            value: PhantomData,
        }
    }

    /// The column's name in the export.
    pub(crate) const fn name(self) -> &'static str {
        self.name
    }
}

impl<T> Column<Option<T>> {
    /// A column that some versions' exports lack: NULL there.
    pub(crate) const fn optional(name: &'static str) -> Self {
        Self {
            name,
            kind: Kind::Optional,
            value: PhantomData,
        }
    }

    /// A column that every nsys version writes in `tables` and no version
    /// in the other tables of the declaration.
    pub(crate) const fn expected_in(name: &'static str, tables: &'static [&'static str]) -> Self {
        Self {
            name,
            kind: Kind::ExpectedIn(tables),
            value: PhantomData,
        }
    }

    /// A column every nsys version writes, though a row can be read
    /// without it: an export that lacks it is noted (see
    /// [`Select::expected`]).
    pub(crate) const fn expected(name: &'static str) -> Self {
        Self {
            name,
            kind: Kind::Expected,
            value: PhantomData,
        }
    }
}

impl Select<'_> {
    /// Reads `column`, as its declaration says.
    pub(crate) fn take<T>(&mut self, column: Column<T>) -> Col<T> {
        match column.kind {
            Kind::Required => self.required(column.name),
            Kind::Expected => self.expected_as(column.name),
            Kind::ExpectedIn(tables) if tables.contains(&self.table()) => {
                self.expected_as(column.name)
            }
            Kind::Optional | Kind::ExpectedIn(_) => {
                let sql = self.column_or_null(column.name);
                self.expr(sql)
            }
        }
    }
}

/// What a field of a [`columns!`] struct holds: the column's declaration
/// ([`Declared`]), or the handle of a `Select` that reads it ([`Taken`]).
pub(crate) trait Holds: Clone + Copy {
    type Of<T>: Copy;
}

/// The columns as declared.
#[derive(Clone, Copy)]
pub(crate) enum Declared {}

impl Holds for Declared {
    type Of<T> = Column<T>;
}

/// The columns as taken into a `Select`, to read rows with.
#[derive(Clone, Copy)]
pub(crate) enum Taken {}

impl Holds for Taken {
    type Of<T> = Col<T>;
}

/// Every column of a declaration, taken into a `Select` at once.
pub(crate) trait TakeAll {
    /// The declaration's struct, of handles.
    type Taken;
    fn take_all(self, s: &mut Select) -> Self::Taken;
}

/// Reads a row's values at once: the struct of values that a [`columns!`]
/// declaration with a row struct generates, from its taken columns.
pub(crate) trait ReadRow {
    /// The struct of a row's values, one field a column.
    type Values;
    fn read(&self, r: &Row) -> rusqlite::Result<Self::Values>;
}

/// Declares the columns of a table (or of several tables of one shape): a
/// struct of [`Column`]s and the constant that holds them. The reader that
/// owns the table takes them all (`take_all`: the same struct, of handles);
/// others take the few they read (`Select::take`).
///
/// Where the reader hands the values on as they are, a second struct
/// follows: the struct of a row's values, with a field of each column's
/// type by the same name, which [`ReadRow::read`] fills from the taken
/// columns (one direct read a column, as by hand).
///
/// ```ignore
/// columns! {
///     /// The columns of an API call table.
///     pub(crate) struct ApiColumns = API {
///         start: i64 = required("start"),
///         name_id: Option<i64> = optional("nameId"),
///     }
///     /// A call's values.
///     #[derive(Clone, Copy)]
///     pub(crate) struct ApiValues;
/// }
/// ```
macro_rules! columns {
    (
        $(#[$doc:meta])*
        $vis:vis struct $name:ident = $constant:ident {
            $($(#[$field_doc:meta])* $field:ident: $ty:ty = $how:ident($column:literal $(, $among:expr)?),)*
        }
        $(#[$values_attr:meta])*
        $values_vis:vis struct $values:ident;
    ) => {
        $crate::nsys::columns::columns! {
            $(#[$doc])*
            $vis struct $name = $constant {
                $($field: $ty = $how($column $(, $among)?),)*
            }
        }

        $(#[$values_attr])*
        $values_vis struct $values {
            $($(#[$field_doc])* pub $field: $ty,)*
        }

        impl $crate::nsys::columns::ReadRow for $name<$crate::nsys::columns::Taken> {
            type Values = $values;

            #[inline(always)]
            fn read(&self, r: &$crate::nsys::select::Row) -> rusqlite::Result<$values> {
                Ok($values {
                    $($field: self.$field.get(r)?,)*
                })
            }
        }
    };
    (
        $(#[$doc:meta])*
        $vis:vis struct $name:ident = $constant:ident {
            $($(#[$field_doc:meta])* $field:ident: $ty:ty = $how:ident($column:literal $(, $among:expr)?),)*
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        $vis struct $name<H: $crate::nsys::columns::Holds = $crate::nsys::columns::Declared> {
            $(pub $field: H::Of<$ty>,)*
        }

        $(#[$doc])*
        $vis const $constant: $name = $name {
            $($field: $crate::nsys::columns::Column::$how($column $(, $among)?),)*
        };

        impl $crate::nsys::columns::TakeAll for $name {
            type Taken = $name<$crate::nsys::columns::Taken>;

            fn take_all(self, s: &mut $crate::nsys::select::Select) -> Self::Taken {
                $name {
                    $($field: s.take(self.$field),)*
                }
            }
        }
    };
}

pub(crate) use columns;
