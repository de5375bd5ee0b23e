//! Expected numbers, computed with SQL over a source export, independently of
//! the converter's own reading.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

/// The categories of CUDA slices and the tables they come from.
pub const CUDA_TABLES: [(&str, &str); 5] = [
    ("cuda_api", "CUPTI_ACTIVITY_KIND_RUNTIME"),
    ("cuda_kernel", "CUPTI_ACTIVITY_KIND_KERNEL"),
    ("cuda_memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
    ("cuda_memset", "CUPTI_ACTIVITY_KIND_MEMSET"),
    ("cuda_sync", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"),
];

pub fn open(path: &Path) -> Connection {
    let uri = format!("file:{}?immutable=1", path.display());
    Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )
    .unwrap()
}

pub fn has_table(db: &Connection, table: &str) -> bool {
    db.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |r| r.get::<_, i64>(0),
    )
    .unwrap()
        > 0
}

pub fn has_column(db: &Connection, table: &str, column: &str) -> bool {
    db.query_row(
        "SELECT COUNT(*) FROM pragma_table_info(?1) WHERE name = ?2",
        [table, column],
        |r| r.get::<_, i64>(0),
    )
    .unwrap()
        > 0
}

/// (count, sum of start, sum of end - start) over rows that start at or after 0.
pub fn source_totals(db: &Connection, table: &str) -> (u64, u128, u128) {
    if !has_table(db, table) {
        return (0, 0, 0);
    }
    totals(db, table, "start", "MAX(\"end\" - start, 0)", "start >= 0")
}

/// (count, Σts, Σdur) of the rows of `table` matching `filter`. Each sum is
/// taken in two 32-bit halves: a scaled report's Σts overflows SQLite's i64.
fn totals(db: &Connection, table: &str, ts: &str, dur: &str, filter: &str) -> (u64, u128, u128) {
    let sql = format!(
        "SELECT COUNT(*),
                COALESCE(SUM(({ts}) >> 32), 0), COALESCE(SUM(({ts}) & 4294967295), 0),
                COALESCE(SUM(({dur}) >> 32), 0), COALESCE(SUM(({dur}) & 4294967295), 0)
         FROM {table} WHERE {filter}"
    );
    db.query_row(&sql, [], |r| {
        let half = |i| r.get::<_, i64>(i).map(|v| v as u128);
        Ok((
            r.get::<_, i64>(0)? as u64,
            (half(1)? << 32) + half(2)?,
            (half(3)? << 32) + half(4)?,
        ))
    })
    .unwrap()
}

/// NVTX: ranges and marks; marks last 0, open ranges last until the trace ends.
pub fn nvtx_totals(db: &Connection, trace_end: u64) -> (u64, u128, u128) {
    if !has_table(db, "NVTX_EVENTS") {
        return (0, 0, 0);
    }
    let dur = format!(
        "CASE WHEN eventType IN (34, 65) THEN 0
              WHEN \"end\" IS NULL THEN {trace_end} - start
              ELSE \"end\" - start END"
    );
    totals(
        db,
        "NVTX_EVENTS",
        "start",
        &dur,
        "eventType IN (34, 59, 60, 65, 70, 71) AND start >= 0",
    )
}

/// The temporary table `calls(pid, corr, start)`: the API calls at or after
/// time 0, by process and correlationId, with the first one's start.
fn create_calls(db: &Connection) {
    db.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS calls AS
           SELECT (globalTid >> 24) & 16777215 AS pid, correlationId AS corr, MIN(start) AS start
           FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE start >= 0 GROUP BY 1, 2;
         CREATE INDEX IF NOT EXISTS temp.calls_key ON calls(pid, corr);",
    )
    .unwrap();
}

/// GPU operations whose launching call, same pid and correlationId, is in the report.
pub fn launched_ops(db: &Connection) -> u64 {
    if !has_table(db, "CUPTI_ACTIVITY_KIND_RUNTIME") {
        return 0;
    }
    create_calls(db);
    let mut total = 0;
    for table in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    ] {
        if !has_table(db, table) || !has_column(db, table, "correlationId") {
            continue;
        }
        // Exports without globalPid: the single process with CUDA calls owns the work.
        let pid = if has_column(db, table, "globalPid") {
            "((o.globalPid >> 24) & 16777215)".to_owned()
        } else {
            let pids: Vec<i64> = db
                .prepare(
                    "SELECT DISTINCT (globalTid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_RUNTIME",
                )
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            if pids.len() != 1 {
                continue;
            }
            pids[0].to_string()
        };
        let sql = format!(
            "SELECT COUNT(*) FROM {table} o JOIN calls c ON c.pid = {pid} AND c.corr = o.correlationId
             WHERE o.start >= 0 AND c.start <= o.start"
        );
        total += db.query_row(&sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64;
    }
    total
}

/// The process of a `globalPid`/`globalTid` column, as SQL.
fn pid_of(column: &str) -> String {
    format!("(({column} >> 24) & 16777215)")
}

/// SQL for the correlationId of the `cudaEventRecord` call whose record
/// synchronization `s` waited on: by `eventSyncId` where the records carry
/// it, else the event's latest record before the waiting call.
fn waited_record_sql(db: &Connection) -> String {
    let ev = "CUPTI_ACTIVITY_KIND_CUDA_EVENT";
    if has_column(db, ev, "eventSyncId") {
        format!(
            "(SELECT e.correlationId FROM {ev} e
              WHERE {} = {} AND e.eventSyncId = s.eventSyncId
                AND s.eventSyncId NOT IN (0, 4294967295))",
            pid_of("e.globalPid"),
            pid_of("s.globalPid")
        )
    } else {
        format!(
            "(SELECT MAX(e.correlationId) FROM {ev} e
              WHERE {} = {} AND e.eventId = s.eventId AND e.correlationId < s.correlationId
                AND s.eventId != 4294967295)",
            pid_of("e.globalPid"),
            pid_of("s.globalPid")
        )
    }
}

/// Synchronizations (at or after time 0) that name a CUDA event, in `eventId`
/// or `eventSyncId`.
pub fn event_waits(db: &Connection) -> u64 {
    let sync = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
    if !has_table(db, sync) || !has_column(db, sync, "eventId") {
        return 0;
    }
    let sync_id = match has_column(db, sync, "eventSyncId") {
        true => "OR eventSyncId NOT IN (0, 4294967295)",
        false => "",
    };
    let sql = format!(
        "SELECT COUNT(*) FROM {sync} WHERE start >= 0 AND (eventId != 4294967295 {sync_id})"
    );
    db.query_row(&sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

/// Synchronizations linked to the call that recorded the event they waited
/// on: the record is in `CUPTI_ACTIVITY_KIND_CUDA_EVENT`, and its call starts
/// at or after time 0 and no later than the synchronization.
pub fn linked_event_waits(db: &Connection) -> u64 {
    let (ev, sync, api) = (
        "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
    );
    if ![ev, sync, api].iter().all(|t| has_table(db, t)) {
        return 0;
    }
    create_calls(db);
    let sql = format!(
        "SELECT COUNT(*) FROM (
           SELECT s.start AS start, {} AS pid, {} AS record FROM {sync} s WHERE s.start >= 0
         ) w JOIN calls c ON c.pid = w.pid AND c.corr = w.record
         WHERE c.start <= w.start",
        pid_of("s.globalPid"),
        waited_record_sql(db)
    );
    db.query_row(&sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

/// Rows of `CUPTI_ACTIVITY_KIND_CUDA_EVENT` whose recording call is not in
/// the trace (none in the report, or before time 0).
pub fn event_records_without_call(db: &Connection) -> u64 {
    let (ev, api) = (
        "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
    );
    if !has_table(db, ev) {
        return 0;
    }
    let call = match has_table(db, api) {
        true => {
            create_calls(db);
            format!(
                "EXISTS (SELECT 1 FROM calls c WHERE c.pid = {} AND c.corr = e.correlationId)",
                pid_of("e.globalPid")
            )
        }
        false => "0".to_owned(),
    };
    let sql = format!("SELECT COUNT(*) FROM {ev} e WHERE NOT {call}");
    db.query_row(&sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

/// (count, Σts, 0) of the rows of `table` at or after time 0, each an
/// instant at `column`.
pub fn instant_totals(db: &Connection, table: &str, column: &str) -> (u64, u128, u128) {
    if !has_table(db, table) {
        return (0, 0, 0);
    }
    totals(db, table, column, "0", &format!("{column} >= 0"))
}

/// The categories of GPU work slices and the tables they come from.
pub const GPU_WORK_TABLES: [(&str, &str); 5] = [
    ("cuda_kernel", "CUPTI_ACTIVITY_KIND_KERNEL"),
    ("cuda_memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
    ("cuda_memset", "CUPTI_ACTIVITY_KIND_MEMSET"),
    ("cuda_sync", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"),
    ("cuda_graph", "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"),
];

/// SQL for the GPU a row `o` of `table` ran on: that of the kernels of its
/// CUDA context (same globalPid and contextId), which record where they
/// ran. A row of a context without kernels: its own deviceId; but a
/// synchronization, whose deviceId CUPTI does not record, goes on the
/// export's only GPU where it lists one.
pub fn gpu_of_row_sql(db: &Connection, table: &str) -> String {
    let kernel = "CUPTI_ACTIVITY_KIND_KERNEL";
    let sole_gpu = || -> Option<i64> {
        let ids: Vec<i64> = db
            .prepare("SELECT DISTINCT id FROM TARGET_INFO_GPU")
            .ok()?
            .query_map([], |r| r.get(0))
            .ok()?
            .collect::<Result<_, _>>()
            .ok()?;
        (ids.len() == 1).then(|| ids[0])
    };
    let own = match (table, sole_gpu()) {
        ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", Some(gpu)) => gpu.to_string(),
        _ => "o.deviceId".to_owned(),
    };
    let keyed = ["globalPid", "contextId", "deviceId"];
    if !keyed
        .iter()
        .all(|c| has_column(db, kernel, c) && has_column(db, table, c))
    {
        return own;
    }
    format!(
        "COALESCE((SELECT k.deviceId FROM {kernel} k
                   WHERE k.globalPid = o.globalPid AND k.contextId = o.contextId LIMIT 1), {own})"
    )
}

/// The GPU work rows of `table` (at or after time 0) that `condition` on a
/// row `o` keeps, counted by where they ran: (GPU, pid), by
/// [`gpu_of_row_sql`]; the pid is `None` where the table has no globalPid.
/// Each context's kernels must all be on one GPU.
pub fn gpu_rows_by_place(
    db: &Connection,
    table: &str,
    condition: &str,
) -> std::collections::BTreeMap<(i64, Option<i64>), u64> {
    let kernel = "CUPTI_ACTIVITY_KIND_KERNEL";
    if has_column(db, kernel, "contextId") && has_column(db, kernel, "globalPid") {
        let split = db
            .query_row(
                &format!(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM {kernel}
                     GROUP BY globalPid, contextId HAVING COUNT(DISTINCT deviceId) > 1)"
                ),
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap();
        assert_eq!(split, 0, "contexts with kernels on several GPUs");
    }
    let pid = match has_column(db, table, "globalPid") {
        true => pid_of("o.globalPid"),
        false => "NULL".to_owned(),
    };
    let sql = format!(
        "SELECT {} AS gpu, {pid} AS pid, COUNT(*) FROM {table} o
         WHERE o.start >= 0 AND ({condition}) GROUP BY 1, 2",
        gpu_of_row_sql(db, table)
    );
    let mut stmt = db.prepare(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let rows = stmt
        .query_map([], |r| {
            Ok(((r.get(0)?, r.get(1)?), r.get::<_, i64>(2)? as u64))
        })
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}
