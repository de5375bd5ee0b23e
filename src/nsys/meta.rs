//! Small per-report tables: names of processes, threads, GPUs, NVTX domains and
//! categories, MPI ranks, enum labels, and the session's wall-clock start.

use std::collections::BTreeSet;

use rusqlite::Connection;
use rustc_hash::FxHashMap;

use super::ids::{pid_of, tid_of};
use super::nvtx::{CATEGORY, DOMAIN_CREATE, THREAD_NAME, TIMELINE_TYPES};
use super::schema::Schema;
use super::select::{none_of, Select};
use super::strings::StringTable;
use super::version::Version;

/// Which MPI rank each thread is: `(globalTid, rank)`.
pub const MPI_RANKS: &str = "MPI_RANKS";
/// The CUDA contexts of each process, green contexts included (nsys 2024.5+).
pub const CUDA_CONTEXTS: &str = "TARGET_INFO_CUDA_CONTEXT_INFO";

/// A CUDA context as `TARGET_INFO_CUDA_CONTEXT_INFO` records it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CudaContext {
    /// A green context: a context limited to a share of the GPU's SMs.
    pub green: bool,
    /// The context a green context was made from (`parentContextId`; the
    /// export writes 0 for none).
    pub parent: Option<i64>,
    /// The SMs a green context may use (`numMultiprocessors`, nsys 2026+).
    pub sm_count: Option<i64>,
}

#[derive(Default)]
pub struct Metadata {
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
    /// The latest start or end of the rows of `NVTX_EVENTS` that are not on
    /// the timeline (domains, categories, thread names), read with their names
    /// (see [`Report::nvtx_last_time`](super::Report)).
    pub(crate) nvtx_names_last_time: Option<i64>,
}

impl Metadata {
    pub fn load(
        conn: &Connection,
        schema: &Schema,
        strings: &StringTable,
    ) -> rusqlite::Result<Self> {
        let mut meta = Metadata::default();
        if schema.has_column("TARGET_INFO_SESSION_START_TIME", "utcEpochNs") {
            meta.session_start_unix_ns = conn
                .query_row(
                    "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME",
                    [],
                    |r| r.get(0),
                )
                .ok();
        }
        for table in ["META_DATA_EXPORT", "EXPORT_META_DATA"] {
            if schema.has_column(table, "name") && schema.has_column(table, "value") {
                let sql =
                    format!("SELECT value FROM {table} WHERE name = 'EXPORT_PRODUCT_VERSION'");
                meta.exporter_version = conn.query_row(&sql, [], |r| r.get(0)).ok();
            }
        }
        const ENV: &str = "TARGET_INFO_SYSTEM_ENV";
        if schema.has_column(ENV, "name") && schema.has_column(ENV, "value") {
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
        if schema.has_column("PROCESSES", "pid") && schema.has_column("PROCESSES", "name") {
            each_row(
                conn,
                "SELECT pid, name FROM PROCESSES WHERE name IS NOT NULL",
                |r| {
                    meta.processes
                        .insert(r.get::<_, i64>("pid")? as u32, r.get("name")?);
                    Ok(())
                },
            )?;
        }
        if schema.has_table("ThreadNames") {
            // Several rows for one thread: the highest priority names it.
            each_row(
                conn,
                "SELECT globalTid, nameId FROM ThreadNames ORDER BY priority",
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
        meta.load_nvtx_names(conn, schema, strings)?;
        meta.load_labels(conn, schema)?;
        Ok(meta)
    }

    fn load_gpus(&mut self, conn: &Connection, schema: &Schema) -> rusqlite::Result<()> {
        // The activity tables' deviceId is TARGET_INFO_GPU.id (`deviceId` in 2020.x),
        // not the in-process CUDA ordinal.
        let sources = [
            ("TARGET_INFO_GPU", "id"),
            ("TARGET_INFO_GPU", "deviceId"),
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

    fn load_nvtx_names(
        &mut self,
        conn: &Connection,
        schema: &Schema,
        strings: &StringTable,
    ) -> rusqlite::Result<()> {
        const T: &str = "NVTX_EVENTS";
        if !schema.has_column(T, "eventType") {
            return Ok(());
        }
        let mut s = Select::new(schema, T);
        let event_type = s.required::<i64>("eventType");
        let gtid = s.optional::<i64>("globalTid");
        let text = s.optional::<String>("text");
        let text_id = s.optional("textId");
        let domain = s.optional::<i64>("domainId");
        let category = s.optional::<i64>("category");
        // Every row off the timeline, for its time too: the scan costs the
        // same, and the last NVTX time then needs no scan of its own.
        let start = s.optional::<i64>("start");
        let end = s.optional::<i64>("end");
        let sql = format!(
            "SELECT {} FROM {T} WHERE {}",
            s.sql(),
            none_of("eventType", &TIMELINE_TYPES)
        );
        each_row(conn, &sql, |r| {
            let last = start.get(r)?.max(end.get(r)?);
            self.nvtx_names_last_time = self.nvtx_names_last_time.max(last);
            let Some(gtid) = gtid.get(r)? else {
                return Ok(());
            };
            let Some(text) = text
                .get(r)?
                .or_else(|| strings.lookup(text_id.get(r).ok()?).map(str::to_owned))
            else {
                return Ok(());
            };
            let (pid, tid) = (pid_of(gtid), tid_of(gtid));
            let domain = domain.get(r)?.unwrap_or(0);
            match event_type.get(r)? {
                CATEGORY => {
                    if let Some(category) = category.get(r)? {
                        self.nvtx_categories.insert((pid, domain, category), text);
                    }
                }
                THREAD_NAME => {
                    // nsys's own thread names win; NVTX names threads it could not.
                    self.threads.entry((pid, tid)).or_insert(text);
                }
                DOMAIN_CREATE => {
                    self.nvtx_domains.insert((pid, domain), text);
                }
                _ => {}
            }
            Ok(())
        })
    }

    fn load_labels(&mut self, conn: &Connection, schema: &Schema) -> rusqlite::Result<()> {
        // Older exports have no ENUM_ tables; these are the values they use.
        const COPY: [&str; 14] = [
            "Unknown",
            "HtoD",
            "DtoH",
            "HtoA",
            "AtoH",
            "AtoA",
            "AtoD",
            "DtoA",
            "DtoD",
            "HtoH",
            "PtoP",
            "Unified HtoD",
            "Unified DtoH",
            "Unified DtoD",
        ];
        const MEMORY: [&str; 8] = [
            "Pageable",
            "Pinned",
            "Device",
            "Array",
            "Managed",
            "Device Static",
            "Managed Static",
            "Unknown",
        ];
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
        fill(&mut self.copy_kinds, &COPY);
        fill(&mut self.memory_kinds, &MEMORY);
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
