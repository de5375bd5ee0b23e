//! Reading Nsight Systems exports: schema probing and typed rows.
//!
//! [`Report::open`] opens an SQLite export read-only and loads the small tables
//! (strings, names, labels). The event tables are then streamed in time order,
//! each group on a reader thread of its own: [`Report::for_each_cuda_event`]
//! (API calls and GPU work, merged), [`Report::for_each_nvtx_event`],
//! [`Report::for_each_osrt_call`], [`Report::for_each_library_call`],
//! [`Report::for_each_cpu_sample`], [`Report::for_each_sched_event`],
//! [`Report::for_each_device_event`] (metrics, memory, page faults) and
//! [`Report::for_each_nsys_event`] (the profiler's overhead and diagnostics).
//! The CUDA stream includes the creation of CUDA graphs and their nodes; CUDA
//! event records, which have no times, are read whole first
//! ([`Report::event_records`]).
//!
//! Each table's columns are declared once, by the reader that owns the
//! table (`columns!`); every reader of it takes the columns it reads from
//! that declaration into a `Select`, which both writes the SELECT list and
//! reads the row. What a filter keeps is a parameter of the readers
//! ([`RowFilter`]), which count into it the rows they left out.

mod api_trace;
mod columns;
pub(crate) mod cpu;
pub(crate) mod cuda;
#[cfg(unix)]
mod descriptor;
pub(crate) mod devices;
mod durations;
pub(crate) mod events;
pub(crate) mod file_access;
pub(crate) mod gpu_devices;
pub(crate) mod gpu_trace;
pub(crate) mod gpu_work;
pub(crate) mod graphs;
pub(crate) mod ids;
pub(crate) mod libraries;
mod meta;
pub(crate) mod metrics;
pub(crate) mod names;
pub(crate) mod nvtx;
pub(crate) mod overhead;
mod plausible;
mod present;
mod read_options;
mod row_filter;
mod scan;
mod schema;
mod select;
mod sorted_trace;
mod span;
mod strings;
pub(crate) mod tables;
mod version;
pub(crate) mod windows;

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

pub(crate) use api_trace::ApiTrace;
pub(crate) use gpu_trace::GpuTrace;
pub(crate) use meta::{CudaContext, Metadata};
pub(crate) use names::MEMORY_KINDS;
pub use plausible::impossible_times_warning;
pub(crate) use plausible::{PlausibleTimes, TimeCheck};
pub(crate) use present::Owner;
pub use read_options::{
    HearImpossibleTimes, HearUnreadable, OnImpossibleTimes, OnUnreadable, ReadOptions,
};
pub(crate) use row_filter::RowFilter;
pub(crate) use scan::Streamed;
pub(crate) use schema::Schema;
use select::Select;
pub(crate) use strings::StringTable;
pub(crate) use tables::EventStream;
pub use tables::{table_role, TableRole};
pub(crate) use version::Version;

use crate::error::{DatabaseError, Error, Result};

/// An open Nsight Systems SQLite export.
pub struct Report {
    /// The file it was opened from (or its URI), for messages.
    path: PathBuf,
    /// The `file:` URI of the export, for the reader thread's own connection.
    uri: String,
    /// For the small queries; locked so that a report can be shared by the
    /// threads that convert its parts.
    conn: Mutex<Connection>,
    schema: Schema,
    strings: StringTable,
    meta: Metadata,
    /// The only process with CUDA API calls, if exactly one has any.
    sole_cuda_pid: Option<u32>,
    /// Event tables that exist without columns their rows need, by name:
    /// what is missing. Found by the readers as they start.
    unreadable: Mutex<BTreeMap<String, String>>,
    /// Tables read without some of their expected columns, with those
    /// columns (see [`Select::expected`]).
    read_without: Mutex<BTreeMap<String, BTreeSet<String>>>,
    /// Once set, every query of the report stops with `SQLITE_INTERRUPT`.
    cancel: Option<Arc<AtomicBool>>,
    /// Every table a reader has declared its columns for (see [`Report::readable`]).
    declared: Mutex<BTreeSet<String>>,
    /// CUDA events left out for their times, by table: the most any pass
    /// over it left out (see [`TimeCheck`]).
    /// Shared with the passes that outlive a borrow of the report (the
    /// trace reports' rows, walked as they are written).
    impossible: Arc<Mutex<BTreeMap<&'static str, u64>>>,
}

/// A table the work could not read whole: it lacks columns that its rows
/// need (they are not read), or columns that every nsys version writes
/// (its rows are read without them, and what depends on them is
/// incomplete).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unreadable {
    /// The table's name.
    pub table: String,
    /// The columns missing, as a phrase (`start`, `nameId or textId`).
    pub missing: String,
    /// How many rows it has.
    pub rows: u64,
    /// Whether its rows were read, without the columns missing.
    pub read_without: bool,
}

impl Unreadable {
    /// The one line that says so, every command alike: what the table
    /// lacks and its rows, which are `then` ("not in the trace").
    pub fn warning(&self, then: &str) -> String {
        let rows = match self.rows {
            1 => "1 row is".to_owned(),
            n => format!("{n} rows are"),
        };
        if self.read_without {
            let (columns, them) = match self.missing.contains(", ") {
                true => ("columns", "them"),
                false => ("column", "it"),
            };
            return format!(
                "{} has no {} {columns}, which every nsys version writes: its {rows} read \
                 without {them}, so what depends on {them} is incomplete",
                self.table, self.missing
            );
        }
        format!(
            "{} has no {} column: its {rows} {then}",
            self.table, self.missing
        )
    }
}

/// What an analysis says of the rows of an unreadable table
/// ([`Unreadable::warning`]): its numbers are marked incomplete.
pub const NOT_READ: &str = "not read, so the numbers that depend on them are incomplete";

/// A table with rows that no reader of the conversion read, and that is not
/// known to hold no timed events ([`TableRole::Untimed`]), with its rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unconverted {
    /// The table's name.
    pub table: String,
    /// How many rows it has.
    pub rows: u64,
}

impl Report {
    /// Opens `path` read-only. Fails on files that are not SQLite, not an nsys
    /// export, or too damaged to read their small tables.
    pub fn open(path: &Path) -> Result<Report> {
        Self::open_cancellable(path, None)
    }

    /// [`Report::open`], with every query of the report (its opening
    /// included) stopped once `cancel` is set: it then fails with
    /// `SQLITE_INTERRUPT` within a few thousand SQLite steps.
    pub(crate) fn open_cancellable(path: &Path, cancel: Option<Arc<AtomicBool>>) -> Result<Report> {
        Self::open_at(sqlite_uri(path), path, cancel)
    }

    /// Opens the database at `uri`, an SQLite URI (`file:...`), for one that
    /// is not a plain file: a named in-memory database shared between
    /// connections (`file:NAME?mode=memory&cache=shared`, kept alive by a
    /// connection of the caller's), say. Every reader opens a connection of
    /// its own to it, read-only.
    pub fn open_uri(uri: &str) -> Result<Report> {
        Self::open_at(uri.to_owned(), Path::new(uri), None)
    }

    /// Opens `uri`; errors name `path`.
    fn open_at(uri: String, path: &Path, cancel: Option<Arc<AtomicBool>>) -> Result<Report> {
        let damaged = |source| Error::Damaged {
            path: path.to_owned(),
            cause: DatabaseError(source),
        };
        let conn = scan::open_read_only(&uri).map_err(damaged)?;
        watch(&conn, cancel.as_ref());
        let schema = match Schema::probe(&conn) {
            Ok(schema) => schema,
            Err(e) if is_not_a_database(&e) => {
                return Err(Error::UnknownFormat {
                    path: path.to_owned(),
                })
            }
            Err(e) => return Err(damaged(e)),
        };
        if !schema.has_table(strings::TABLE) {
            return Err(Error::NotAnExport {
                path: path.to_owned(),
            });
        }
        // Every name of the export is a string of it: none can be read without.
        for column in [strings::STRINGS.id.name(), strings::STRINGS.value.name()] {
            if !schema.has_column(strings::TABLE, column) {
                return Err(Error::MissingColumn {
                    path: path.to_owned(),
                    table: strings::TABLE,
                    column,
                });
            }
        }
        let strings = StringTable::load(&conn, &schema).map_err(damaged)?;
        let open = || {
            let conn = scan::open_read_only(&uri)?;
            watch(&conn, cancel.as_ref());
            Ok(conn)
        };
        let meta = Metadata::load(&conn, &open, &schema, &strings).map_err(damaged)?;
        let mut report = Report {
            path: path.to_owned(),
            uri,
            conn: Mutex::new(conn),
            schema,
            strings,
            meta,
            sole_cuda_pid: None,
            unreadable: Mutex::default(),
            read_without: Mutex::default(),
            cancel,
            declared: Mutex::default(),
            impossible: Arc::default(),
        };
        for (table, column) in std::mem::take(&mut report.meta.lacking) {
            report.note_read_without(table, [column]);
        }
        report.sole_cuda_pid = report.find_sole_cuda_pid().map_err(damaged)?;
        Ok(report)
    }

    /// The file (or URI) the report was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the export has any table of timed events: one with none (nsys
    /// recorded nothing) converts to an empty trace.
    pub(crate) fn has_event_tables(&self) -> bool {
        self.schema
            .tables()
            .any(|t| self.schema.has_column(t, "start") || self.schema.has_column(t, "timestamp"))
    }

    /// Whether the export has `table`.
    pub(crate) fn has_table(&self, table: &str) -> bool {
        self.schema.has_table(table)
    }

    /// Whether the export has `table`, with a row.
    pub(crate) fn has_rows(&self, table: &str) -> rusqlite::Result<bool> {
        if !self.has_table(table) {
            return Ok(false);
        }
        let sql = format!("SELECT EXISTS (SELECT 1 FROM {})", select::quote(table));
        self.conn().query_row(&sql, [], |r| r.get(0))
    }

    /// Whether the export's `table` has `column`.
    pub(crate) fn has_column(&self, table: &str, column: &str) -> bool {
        self.schema.has_column(table, column)
    }

    pub(crate) fn meta(&self) -> &Metadata {
        &self.meta
    }

    /// The version of the nsys that captured the report (`2025.3.1`), where
    /// the export records its install directory.
    pub fn capture_version(&self) -> Option<&str> {
        self.meta.capture_version.as_deref()
    }

    /// The string with this StringIds id, or "" if it has none.
    pub(crate) fn string(&self, id: Option<i64>) -> &str {
        id.and_then(|id| self.strings.get(id)).unwrap_or("")
    }

    /// Rows in `table` (an upper bound: nsys tables are append-only), 0 if absent.
    pub(crate) fn approximate_rows(&self, table: &str) -> u64 {
        if !self.schema.has_table(table) {
            return 0;
        }
        self.conn()
            .query_row(
                &format!("SELECT MAX(rowid) FROM {}", select::quote(table)),
                [],
                |r| r.get::<_, Option<i64>>(0),
            )
            .ok()
            .flatten()
            .unwrap_or(0) as u64
    }

    /// A hash of what identifies a capture: its start time, processes and
    /// threads, and the first row of each of its event tables (which carries pids).
    pub(crate) fn fingerprint(&self) -> rusqlite::Result<u64> {
        let tables: Vec<String> = EventStream::ALL
            .iter()
            .flat_map(|s| self.tables_of(*s))
            .collect();
        let mut h = rustc_hash::FxHasher::default();
        self.meta.session_start_unix_ns.hash(&mut h);
        let mut processes: Vec<_> = self.meta.processes.iter().collect();
        processes.sort();
        processes.hash(&mut h);
        let mut threads: Vec<_> = self.meta.threads.iter().collect();
        threads.sort();
        threads.hash(&mut h);
        for table in &tables {
            let conn = self.conn();
            let mut stmt =
                conn.prepare(&format!("SELECT * FROM {} LIMIT 1", select::quote(table)))?;
            let columns = stmt.column_count();
            let mut rows = stmt.query([])?;
            if let Some(row) = rows.next()? {
                for i in 0..columns {
                    format!("{:?}", row.get_ref(i)?).hash(&mut h);
                }
            }
        }
        Ok(h.finish())
    }

    /// A SELECT list to declare for `table`, or `None` if the export has no
    /// such table.
    pub(crate) fn select(&self, table: &str) -> Option<Select<'_>> {
        self.schema
            .has_table(table)
            .then(|| Select::new(&self.schema, table))
    }

    /// Whether the rows of `select`'s table can be read: it has every
    /// required column. One that lacks some is noted as unreadable. Every
    /// reader asks, so this also notes which tables the conversion reads.
    pub(crate) fn readable(&self, select: &Select) -> bool {
        self.declared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(select.table().to_owned());
        match select.missing() {
            None => {
                self.note_read_without(select.table(), select.lacking());
                true
            }
            Some(missing) => {
                self.note_unreadable(select.table(), missing);
                false
            }
        }
    }

    /// Notes that `table`'s rows are read without `columns`, which every
    /// nsys version writes (none: nothing to note).
    pub(crate) fn note_read_without<C: AsRef<str>>(
        &self,
        table: &str,
        columns: impl IntoIterator<Item = C>,
    ) {
        let mut columns = columns.into_iter().peekable();
        if columns.peek().is_none() {
            return;
        }
        self.read_without
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(table.to_owned())
            .or_default()
            .extend(columns.map(|c| c.as_ref().to_owned()));
    }

    /// Notes that `table` lacks `missing`, so its rows are not converted.
    pub(crate) fn note_unreadable(&self, table: &str, missing: String) {
        self.unreadable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(table.to_owned(), missing);
    }

    /// The tables found unreadable so far, then those read without some
    /// expected columns, with their rows (empty ones left out).
    pub(crate) fn unreadable(&self) -> Vec<Unreadable> {
        let unread = self
            .unreadable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let read_without = self
            .read_without
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let read_without: Vec<_> = read_without
            .into_iter()
            .filter(|(table, _)| !unread.contains_key(table))
            .map(|(table, columns)| {
                let columns: Vec<String> = columns.into_iter().collect();
                (table, columns.join(", "), true)
            })
            .collect();
        unread
            .into_iter()
            .map(|(table, missing)| (table, missing, false))
            .chain(read_without)
            .map(|(table, missing, read_without)| Unreadable {
                rows: self.rows(&table),
                table,
                missing,
                read_without,
            })
            .filter(|u| u.rows > 0)
            .collect()
    }

    /// [`Report::unreadable`], of the tables `among` names only.
    pub(crate) fn unreadable_among(&self, among: impl Fn(&str) -> bool) -> Vec<Unreadable> {
        let mut noted = self.unreadable_names();
        noted.retain(|t| among(t));
        match noted.is_empty() {
            true => Vec::new(),
            false => self
                .unreadable()
                .into_iter()
                .filter(|u| noted.contains(&u.table))
                .collect(),
        }
    }

    /// The names of the tables found unreadable, or read without some
    /// expected columns, so far (with rows or not).
    pub(crate) fn unreadable_names(&self) -> Vec<String> {
        let unread = self.unreadable.lock().unwrap_or_else(|e| e.into_inner());
        let read_without = self.read_without.lock().unwrap_or_else(|e| e.into_inner());
        let mut names: Vec<String> = unread.keys().chain(read_without.keys()).cloned().collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The tables with rows that no reader has declared (so far) and that
    /// may hold timed events, less those `elsewhere` says are left to
    /// readers not run (excluded parts).
    pub(crate) fn unconverted(&self, elsewhere: impl Fn(&str) -> bool) -> Vec<Unconverted> {
        let declared = self
            .declared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut tables: Vec<&str> = self
            .schema
            .tables()
            // Every table but those known to hold no timed events: one of
            // a newer nsys, unknown here, is named too.
            .filter(|t| table_role(t) != Some(TableRole::Untimed))
            .filter(|t| !declared.contains(*t) && !elsewhere(t))
            .collect();
        tables.sort_unstable();
        tables
            .into_iter()
            .map(|table| Unconverted {
                table: table.to_owned(),
                rows: self.rows(table),
            })
            .filter(|u| u.rows > 0)
            .collect()
    }

    /// Calls `f` with each row of `select`'s table that matches `filter`
    /// (SQL; empty for all), for the small tables read whole.
    pub(crate) fn each_selected(
        &self,
        select: &Select,
        filter: &str,
        mut f: impl FnMut(&select::Row) -> rusqlite::Result<()>,
    ) -> rusqlite::Result<()> {
        let where_ = match filter.is_empty() {
            true => String::new(),
            false => format!(" WHERE {filter}"),
        };
        let sql = format!(
            "SELECT {} FROM {}{where_}",
            select.sql(),
            select::quote(select.table())
        );
        let conn = self.conn();
        let mut query = select::Query::prepare(&conn, &sql)?;
        query.run(&[])?;
        while let Some(row) = query.next()? {
            f(&row)?;
        }
        Ok(())
    }

    pub(crate) fn rows(&self, table: &str) -> u64 {
        self.conn()
            .query_row(
                &format!("SELECT COUNT(*) FROM {}", select::quote(table)),
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_or(0, |n| n as u64)
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // Queries leave nothing half-done in a connection: carry on after a panic.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn find_sole_cuda_pid(&self) -> rusqlite::Result<Option<u32>> {
        let needed = cuda::GPU_OP_TABLES
            .iter()
            .chain([&cuda::SYNC])
            .any(|t| self.schema.has_table(t) && !self.schema.has_column(t, "globalPid"));
        let gtid = cuda::API.global_tid.name();
        if !needed || !self.schema.has_column(cuda::RUNTIME, gtid) {
            return Ok(None);
        }
        let sql = format!(
            "SELECT DISTINCT {} FROM {} LIMIT 2",
            ids::pid_sql(gtid),
            cuda::RUNTIME
        );
        let conn = self.conn();
        let mut stmt = conn.prepare(&sql)?;
        let pids: Vec<i64> = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(match pids[..] {
            [pid] => Some(pid as u32),
            _ => None,
        })
    }
}

impl Report {
    /// Runs `sql` on a read-only connection of its own (so a stream open on
    /// the report's connection is not disturbed), stopped once the report's
    /// cancel flag is set, and calls `f` with each row.
    pub(crate) fn each_row_apart<E: From<rusqlite::Error>>(
        &self,
        sql: &str,
        mut f: impl FnMut(&rusqlite::Row<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let conn = scan::open_read_only(&self.uri)?;
        watch(&conn, self.cancel.as_ref());
        let mut stmt = conn.prepare(sql)?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            f(row)?;
        }
        Ok(())
    }
}

/// Stops `conn`'s queries once `cancel` is set.
fn watch(conn: &Connection, cancel: Option<&Arc<AtomicBool>>) {
    if let Some(cancel) = cancel {
        let cancel = Arc::clone(cancel);
        // Checked every 4096 virtual-machine steps: cheap, and prompt.
        conn.progress_handler(4096, Some(move || cancel.load(Ordering::Relaxed)));
    }
}

/// A `file:` URI that opens `path` read-only and immutable: SQLite takes no
/// locks and creates no journal beside the input. A path naming a
/// descriptor open in this process is read through that descriptor
/// ([`descriptor`]).
fn sqlite_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for &byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'?' | b'#' | b'%' | 0x80.. => uri.push_str(&format!("%{byte:02X}")),
            _ => uri.push(char::from(byte)),
        }
    }
    uri.push_str("?mode=ro&immutable=1");
    #[cfg(unix)]
    if descriptor::descriptor_of(path).is_some() && descriptor::registered() {
        uri.push_str("&vfs=");
        uri.push_str(descriptor::VFS);
    }
    uri
}

fn is_not_a_database(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase)
}
