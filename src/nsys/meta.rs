//! Small per-report tables: names of processes, threads, GPUs, NVTX domains and
//! categories, MPI ranks, enum labels, and the session's wall-clock start.

use std::collections::BTreeSet;

use rusqlite::Connection;
use rustc_hash::FxHashMap;

use super::ids::{pid_of, tid_of};
use super::names::{COPY_KINDS, MEMORY_KINDS};
use super::nvtx::{CATEGORY, DOMAIN_CREATE, NVTX, THREAD_NAME, TIMELINE_TYPES};
use super::schema::Schema;
use super::select::{none_of, Query, Select};
use super::strings::StringTable;
use super::version::Version;

/// Which MPI rank each thread is: `(globalTid, rank)`.
pub(super) const MPI_RANKS: &str = "MPI_RANKS";
/// The CUDA contexts of each process, green contexts included (nsys 2024.5+).
pub(super) const CUDA_CONTEXTS: &str = "TARGET_INFO_CUDA_CONTEXT_INFO";
/// `(name, value)` pairs about the machine the report was captured on.
pub(crate) const SYSTEM_ENV: &str = "TARGET_INFO_SYSTEM_ENV";
/// `(pid, name)` of each process.
const PROCESSES: &str = "PROCESSES";
/// The GPUs, by the `deviceId` of the activity tables.
pub(crate) const GPUS: &str = "TARGET_INFO_GPU";

/// A CUDA context as `TARGET_INFO_CUDA_CONTEXT_INFO` records it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CudaContext {
    /// A green context: a context limited to a share of the GPU's SMs.
    pub green: bool,
    /// The context a green context was made from (`parentContextId`; the
    /// export writes 0 for none).
    pub parent: Option<i64>,
    /// The SMs a green context may use (`numMultiprocessors`, nsys 2026+).
    pub sm_count: Option<i64>,
}

#[derive(Default)]
pub(crate) struct Metadata {
    /// Unix time (ns) of session time 0, from nsys 2021.3 on.
    pub session_start_unix_ns: Option<i64>,
    /// `EXPORT_PRODUCT_VERSION` of the exporter, when the export records it.
    pub exporter_version: Option<String>,
    /// The version of the nsys that captured the report, read from its
    /// install directory (`TargetInstallDir` of `TARGET_INFO_SYSTEM_ENV`).
    pub capture_version: Option<String>,
    pub processes: FxHashMap<u32, String>,
    /// The MPI ranks of each process (by pid), from `MPI_RANKS` (nsys `--trace=mpi`,
    /// in versions that have the table). One rank per process in practice; the
    /// table maps threads, so a process could show several.
    pub mpi_ranks: FxHashMap<u32, BTreeSet<i64>>,
    /// By (pid, tid).
    pub threads: FxHashMap<(u32, u32), String>,
    /// By `deviceId` of the GPU activity tables.
    pub gpus: FxHashMap<i64, String>,
    /// By (pid, contextId).
    pub cuda_contexts: FxHashMap<(u32, i64), CudaContext>,
    /// By (pid, domainId).
    pub nvtx_domains: FxHashMap<(u32, i64), String>,
    /// By (pid, domainId, category).
    pub nvtx_categories: FxHashMap<(u32, i64, i64), String>,
    pub copy_kinds: FxHashMap<i64, String>,
    pub memory_kinds: FxHashMap<i64, String>,
    pub sync_types: FxHashMap<i64, String>,
    pub launch_types: FxHashMap<i64, String>,
    /// The (table, column) pairs of these small tables that every nsys
    /// version writes and the export lacks: the report notes them as read
    /// without (see `Report::note_read_without`).
    pub(crate) lacking: Vec<(&'static str, &'static str)>,
    /// The latest start or end of the rows of `NVTX_EVENTS` that are not on
    /// the timeline (domains, categories, thread names), read with their names
    /// (see [`Report::nvtx_last_time`](super::Report)).
    pub(crate) nvtx_names_last_time: Option<i64>,
}

impl Metadata {
    /// Reads the metadata of the export open on `conn`; `open` opens more
    /// connections to it, for the one scan that is worth sharing among the
    /// cores (see [`Metadata::load_nvtx_names`]).
    pub(crate) fn load(
        conn: &Connection,
        open: &(dyn Fn() -> rusqlite::Result<Connection> + Sync),
        schema: &Schema,
        strings: &StringTable,
    ) -> rusqlite::Result<Self> {
        let mut meta = Metadata::default();
        const START: &str = "TARGET_INFO_SESSION_START_TIME";
        if meta.has_all(schema, START, &["utcEpochNs"]) {
            meta.session_start_unix_ns = conn
                .query_row(&format!("SELECT utcEpochNs FROM {START}"), [], |r| r.get(0))
                .ok();
        }
        for table in ["META_DATA_EXPORT", "EXPORT_META_DATA"] {
            if schema.has_column(table, "name") && schema.has_column(table, "value") {
                let sql =
                    format!("SELECT value FROM {table} WHERE name = 'EXPORT_PRODUCT_VERSION'");
                meta.exporter_version = conn.query_row(&sql, [], |r| r.get(0)).ok();
            }
        }
        const ENV: &str = SYSTEM_ENV;
        if meta.has_all(schema, ENV, &["name", "value"]) {
            each_row(
                conn,
                &format!("SELECT value FROM {ENV} WHERE name = 'TargetInstallDir'"),
                |r| {
                    let dir: Option<String> = r.get(0).ok();
                    if meta.capture_version.is_none() {
                        meta.capture_version = dir
                            .as_deref()
                            .and_then(Version::from_install_dir)
                            .map(|v| v.to_string());
                    }
                    Ok(())
                },
            )?;
        }
        if meta.has_all(schema, PROCESSES, &["pid", "name"]) {
            each_row(
                conn,
                &format!("SELECT pid, name FROM {PROCESSES} WHERE name IS NOT NULL"),
                |r| {
                    meta.processes
                        .insert(r.get::<_, i64>("pid")? as u32, r.get("name")?);
                    Ok(())
                },
            )?;
        }
        const THREAD_NAMES: &str = "ThreadNames";
        if meta.has_all(schema, THREAD_NAMES, &["globalTid", "nameId"]) {
            // Several rows for one thread: the highest priority names it.
            let order = match meta.has_all(schema, THREAD_NAMES, &["priority"]) {
                true => " ORDER BY priority",
                false => "",
            };
            each_row(
                conn,
                &format!("SELECT globalTid, nameId FROM {THREAD_NAMES}{order}"),
                |r| {
                    let gtid: i64 = r.get("globalTid")?;
                    if let Some(name) = strings.get(r.get("nameId")?) {
                        meta.threads
                            .insert((pid_of(gtid), tid_of(gtid)), name.to_owned());
                    }
                    Ok(())
                },
            )?;
        }
        if schema.has_column(MPI_RANKS, "globalTid") && schema.has_column(MPI_RANKS, "rank") {
            each_row(
                conn,
                &format!(
                    "SELECT globalTid, rank FROM {MPI_RANKS} WHERE globalTid IS NOT NULL AND rank IS NOT NULL"
                ),
                |r| {
                    let pid = pid_of(r.get("globalTid")?);
                    meta.mpi_ranks
                        .entry(pid)
                        .or_default()
                        .insert(r.get("rank")?);
                    Ok(())
                },
            )?;
        }
        meta.load_gpus(conn, schema)?;
        meta.load_cuda_contexts(conn, schema)?;
        meta.load_nvtx_names(conn, open, schema, strings)?;
        meta.load_labels(conn, schema)?;
        Ok(meta)
    }

    /// Whether `table` has every one of `columns`; those it lacks, where it
    /// is there, are noted as lacking.
    fn has_all(&mut self, schema: &Schema, table: &'static str, columns: &[&'static str]) -> bool {
        if !schema.has_table(table) {
            return false;
        }
        let lacking = schema.lacking(table, columns);
        let whole = lacking.is_empty();
        self.lacking
            .extend(lacking.into_iter().map(|column| (table, column)));
        whole
    }

    fn load_gpus(&mut self, conn: &Connection, schema: &Schema) -> rusqlite::Result<()> {
        // Every version names its GPUs; the id is `id`, or `deviceId` in 2020.x.
        if schema.has_table(GPUS) {
            if !schema.has_column(GPUS, "id") && !schema.has_column(GPUS, "deviceId") {
                self.lacking.push((GPUS, "id"));
            }
            self.has_all(schema, GPUS, &["name"]);
        }
        // The activity tables' deviceId is TARGET_INFO_GPU.id (`deviceId` in 2020.x),
        // not the in-process CUDA ordinal.
        let sources = [
            (GPUS, "id"),
            (GPUS, "deviceId"),
            ("TARGET_INFO_CUDA_GPU", "deviceId"),
        ];
        for (table, id) in sources {
            if schema.has_column(table, id) && schema.has_column(table, "name") {
                let sql = format!(
                    "SELECT {id} AS id, name FROM {table} WHERE name IS NOT NULL AND {id} IS NOT NULL"
                );
                each_row(conn, &sql, |r| {
                    self.gpus.entry(r.get("id")?).or_insert(r.get("name")?);
                    Ok(())
                })?;
            }
        }
        Ok(())
    }

    fn load_cuda_contexts(&mut self, conn: &Connection, schema: &Schema) -> rusqlite::Result<()> {
        const T: &str = CUDA_CONTEXTS;
        if !(schema.has_column(T, "processId") && schema.has_column(T, "contextId")) {
            return Ok(());
        }
        let mut s = Select::new(schema, T);
        let pid = s.required::<i64>("processId");
        let context = s.required("contextId");
        let green = s.optional::<i64>("isGreenContext");
        let parent = s.optional("parentContextId");
        let sm_count = s.optional("numMultiprocessors");
        let sql = format!(
            "SELECT {} FROM {T} WHERE processId IS NOT NULL AND contextId IS NOT NULL",
            s.sql()
        );
        // Zero stands for "none" in the parent and SM count columns.
        let nonzero = |v: Option<i64>| v.filter(|&v| v != 0);
        each_row(conn, &sql, |r| {
            let recorded = CudaContext {
                green: green.get(r)?.is_some_and(|g| g != 0),
                parent: nonzero(parent.get(r)?),
                sm_count: nonzero(sm_count.get(r)?),
            };
            self.cuda_contexts
                .insert((pid.get(r)? as u32, context.get(r)?), recorded);
            Ok(())
        })
    }

    /// The names NVTX gives domains, categories and threads: rows of
    /// `NVTX_EVENTS` off the timeline, few but anywhere in the table, so
    /// found by a full scan. It runs before anything else can start, so it
    /// is split by rowid among the cores, each part on a connection of its
    /// own; the rows are then taken in rowid order, as one scan would.
    fn load_nvtx_names(
        &mut self,
        conn: &Connection,
        open: &(dyn Fn() -> rusqlite::Result<Connection> + Sync),
        schema: &Schema,
        strings: &StringTable,
    ) -> rusqlite::Result<()> {
        const T: &str = super::nvtx::TABLE;
        let mut s = Select::new(schema, T);
        let event_type = s.take(NVTX.event_type);
        let gtid = s.take(NVTX.global_tid);
        let text = s.take(NVTX.text);
        let text_id = s.take(NVTX.text_id);
        let domain = s.take(NVTX.domain_id);
        let category = s.take(NVTX.category);
        // Every row off the timeline, for its time too: the scan costs the
        // same, and the last NVTX time then needs no scan of its own.
        let start = s.take(NVTX.start);
        let end = s.take(NVTX.end);
        // The NVTX stream finds the table unreadable, and says so.
        if !schema.has_table(T) || s.missing().is_some() {
            return Ok(());
        }
        // One query each: SQLite finds a lone MIN or MAX of the rowid at the
        // end of the table, but scans the table for the two together.
        let rowid = |f: &str| -> rusqlite::Result<Option<i64>> {
            conn.query_row(&format!("SELECT {f}(rowid) FROM {T}"), [], |r| r.get(0))
        };
        let (first, last) = (rowid("MIN")?, rowid("MAX")?);
        let (Some(first), Some(last)) = (first, last) else {
            return Ok(());
        };
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        // Parts of fewer rows are not worth a connection.
        const PART_ROWS: i64 = 100_000;
        let span = last - first + 1;
        let parts = (span / PART_ROWS).clamp(1, cores.min(8) as i64);
        let bounds: Vec<(i64, i64)> = (0..parts)
            .map(|k| (first + span * k / parts, first + span * (k + 1) / parts - 1))
            .collect();
        let sql = format!(
            "SELECT {} FROM {T} WHERE rowid BETWEEN ?1 AND ?2 AND {}",
            s.sql(),
            none_of("eventType", &TIMELINE_TYPES)
        );
        /// A naming row, as read.
        struct Named {
            event_type: i64,
            gtid: i64,
            text: String,
            domain: i64,
            category: Option<i64>,
        }
        /// The naming rows of one part, in rowid order, and its last time.
        type Part = (Vec<Named>, Option<i64>);
        let read = |conn: &Connection, (from, to): (i64, i64)| -> rusqlite::Result<Part> {
            let (mut named, mut last_time) = (Vec::new(), None);
            let mut query = Query::prepare(conn, &sql)?;
            query.run(&[from, to])?;
            while let Some(r) = query.next()? {
                last_time = last_time.max(Some(start.get(&r)?).max(end.get(&r)?));
                let gtid = gtid.get(&r)?;
                let Some(text) = text
                    .get(&r)?
                    .or_else(|| strings.lookup(text_id.get(&r).ok()?).map(str::to_owned))
                else {
                    continue;
                };
                named.push(Named {
                    event_type: event_type.get(&r)?,
                    gtid,
                    text,
                    domain: domain.get(&r)?.unwrap_or(0),
                    category: category.get(&r)?,
                });
            }
            Ok((named, last_time))
        };
        // The first part here, the others each on a thread of its own (or
        // here too, where no thread can be started).
        let parts: Vec<rusqlite::Result<Part>> = std::thread::scope(|scope| {
            let others: Vec<_> = bounds[1..]
                .iter()
                .map(|&part| {
                    let thread = std::thread::Builder::new()
                        .spawn_scoped(scope, move || read(&open()?, part));
                    (part, thread.ok())
                })
                .collect();
            let mut parts = vec![read(conn, bounds[0])];
            for (part, thread) in others {
                parts.push(match thread {
                    Some(thread) => crate::worker::outcome(thread.join()),
                    None => read(conn, part),
                });
            }
            parts
        });
        for part in parts {
            let (named, last_time) = part?;
            self.nvtx_names_last_time = self.nvtx_names_last_time.max(last_time);
            for n in named {
                let (pid, tid) = (pid_of(n.gtid), tid_of(n.gtid));
                match n.event_type {
                    CATEGORY => {
                        if let Some(category) = n.category {
                            self.nvtx_categories
                                .insert((pid, n.domain, category), n.text);
                        }
                    }
                    THREAD_NAME => {
                        // nsys's own thread names win; NVTX names threads it could not.
                        self.threads.entry((pid, tid)).or_insert(n.text);
                    }
                    DOMAIN_CREATE => {
                        self.nvtx_domains.insert((pid, n.domain), n.text);
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn load_labels(&mut self, conn: &Connection, schema: &Schema) -> rusqlite::Result<()> {
        // Older exports have no ENUM_ tables; these are the values they use.
        let copy = COPY_KINDS.map(|kind| kind.short);
        const SYNC: [&str; 5] = [
            "Unknown",
            "Event sync",
            "Stream wait sync",
            "Stream sync",
            "Context sync",
        ];
        const LAUNCH: [&str; 4] = [
            "Unknown",
            "Regular",
            "Coop Single Device",
            "Coop Multi Device",
        ];
        let fill = |map: &mut FxHashMap<i64, String>, defaults: &[&str]| {
            map.extend(
                defaults
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (i as i64, (*s).to_owned())),
            );
        };
        fill(&mut self.copy_kinds, &copy);
        fill(&mut self.memory_kinds, &MEMORY_KINDS);
        fill(&mut self.sync_types, &SYNC);
        fill(&mut self.launch_types, &LAUNCH);
        // Values newer than this list come from the export's own ENUM_ tables.
        let tables: [(&str, &mut FxHashMap<i64, String>); 4] = [
            ("ENUM_CUDA_MEMCPY_OPER", &mut self.copy_kinds),
            ("ENUM_CUDA_MEM_KIND", &mut self.memory_kinds),
            ("ENUM_CUPTI_SYNC_TYPE", &mut self.sync_types),
            ("ENUM_CUDA_KERNEL_LAUNCH_TYPE", &mut self.launch_types),
        ];
        for (table, map) in tables {
            if schema.has_column(table, "id") && schema.has_column(table, "label") {
                each_row(
                    conn,
                    &format!("SELECT id, label FROM {table} WHERE label IS NOT NULL"),
                    |r| {
                        map.entry(r.get("id")?).or_insert(r.get("label")?);
                        Ok(())
                    },
                )?;
            }
        }
        Ok(())
    }
}

pub(super) fn each_row(
    conn: &Connection,
    sql: &str,
    mut f: impl FnMut(&rusqlite::Row) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare(sql)?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        f(row)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread of pid 7.
    fn gtid(tid: i64) -> i64 {
        (7 << 24) | tid
    }

    /// An export whose `NVTX_EVENTS` is long enough to be read in parts,
    /// with names given in several parts: the same names as one scan gives.
    #[test]
    fn nvtx_names_read_in_parts_are_those_of_one_scan() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("names.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            r#"CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
               INSERT INTO StringIds VALUES (1, 'registered domain');
               CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, "end" INTEGER,
                 eventType INTEGER NOT NULL, category INTEGER, text TEXT,
                 globalTid INTEGER, textId INTEGER, domainId INTEGER);"#,
        )
        .unwrap();
        let rows = 450_000;
        {
            let mut insert = conn
                .prepare("INSERT INTO NVTX_EVENTS VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
                .unwrap();
            let tx = conn.unchecked_transaction().unwrap();
            for i in 0..rows {
                let named = |event_type: i64, text: Option<&str>, text_id: Option<i64>| {
                    (event_type, text.map(str::to_owned), text_id)
                };
                // Names at the start, the middle and the end, some given twice.
                let (event_type, text, text_id) = match i {
                    10 => named(THREAD_NAME, Some("first name"), None),
                    20 => named(DOMAIN_CREATE, Some("old domain"), None),
                    30 => named(CATEGORY, Some("old category"), None),
                    300_000 => named(THREAD_NAME, Some("second name"), None),
                    300_010 => named(DOMAIN_CREATE, None, Some(1)),
                    449_990 => named(CATEGORY, Some("new category"), None),
                    _ => (
                        super::super::nvtx::PUSH_POP,
                        Some(format!("range {i}")),
                        None,
                    ),
                };
                let end = match i {
                    // The latest time of all is a naming row's.
                    300_000 => 10 * rows,
                    _ => i + 1,
                };
                insert
                    .execute(rusqlite::params![
                        i,
                        end,
                        event_type,
                        3,
                        text,
                        gtid(8),
                        text_id,
                        5
                    ])
                    .unwrap();
            }
            tx.commit().unwrap();
        }
        let schema = Schema::probe(&conn).unwrap();
        let strings = StringTable::load(&conn, &schema).unwrap();
        let uri = format!("file:{}?mode=ro", path.display());
        let opened = std::sync::atomic::AtomicUsize::new(0);
        let open = || {
            opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Connection::open_with_flags(
                &uri,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
            )
        };
        let meta = Metadata::load(&conn, &open, &schema, &strings).unwrap();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            opened.load(std::sync::atomic::Ordering::Relaxed),
            cores.clamp(1, 4) - 1,
            "one connection for each part after the first"
        );
        // The first name of a thread, the last of a domain and a category.
        assert_eq!(meta.threads[&(7, 8)], "first name");
        assert_eq!(meta.nvtx_domains[&(7, 5)], "registered domain");
        assert_eq!(meta.nvtx_categories[&(7, 5, 3)], "new category");
        assert_eq!(meta.nvtx_names_last_time, Some(10 * rows));
    }
}
