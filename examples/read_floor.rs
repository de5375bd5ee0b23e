//! The floor for benchmarks: a plain read of the tables and columns the
//! converter reads, with no sorting, mapping or encoding.
//!
//! ```sh
//! cargo run --release --example read_floor -- INPUT.sqlite
//! ```

use rusqlite::{Connection, OpenFlags};

/// The columns converted, by table (a missing column is left out).
const READ: &[(&str, &[&str])] = &[
    (
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        &[
            "start",
            "end",
            "globalTid",
            "correlationId",
            "nameId",
            "returnValue",
        ],
    ),
    (
        "CUPTI_ACTIVITY_KIND_DRIVER",
        &[
            "start",
            "end",
            "globalTid",
            "correlationId",
            "nameId",
            "returnValue",
        ],
    ),
    (
        "CUPTI_ACTIVITY_KIND_KERNEL",
        &[
            "start",
            "end",
            "deviceId",
            "globalPid",
            "contextId",
            "streamId",
            "correlationId",
            "greenContextId",
            "graphNodeId",
            "shortName",
            "demangledName",
            "gridX",
            "gridY",
            "gridZ",
            "blockX",
            "blockY",
            "blockZ",
            "registersPerThread",
            "staticSharedMemory",
            "dynamicSharedMemory",
            "localMemoryPerThread",
            "localMemoryTotal",
            "launchType",
            "graphId",
        ],
    ),
    (
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        &[
            "start",
            "end",
            "deviceId",
            "globalPid",
            "contextId",
            "streamId",
            "correlationId",
            "greenContextId",
            "graphNodeId",
            "bytes",
            "copyKind",
            "srcKind",
            "dstKind",
        ],
    ),
    (
        "CUPTI_ACTIVITY_KIND_MEMSET",
        &[
            "start",
            "end",
            "deviceId",
            "globalPid",
            "contextId",
            "streamId",
            "correlationId",
            "greenContextId",
            "graphNodeId",
            "bytes",
            "value",
            "memKind",
        ],
    ),
    (
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
        &[
            "start",
            "end",
            "deviceId",
            "globalPid",
            "contextId",
            "streamId",
            "correlationId",
            "greenContextId",
            "graphNodeId",
            "syncType",
            "eventId",
        ],
    ),
    (
        "NVTX_EVENTS",
        &[
            "eventType",
            "start",
            "end",
            "globalTid",
            "endGlobalTid",
            "domainId",
            "text",
            "textId",
            "category",
            "color",
            "uint64Value",
            "int64Value",
            "doubleValue",
            "uint32Value",
            "int32Value",
            "floatValue",
            "jsonText",
            "jsonTextId",
        ],
    ),
];

fn main() -> rusqlite::Result<()> {
    let input = std::env::args()
        .nth(1)
        .expect("usage: read_floor INPUT.sqlite");
    let db = Connection::open_with_flags(
        format!("file:{input}?mode=ro&immutable=1"),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
    )?;
    let mut rows_read = 0u64;
    let mut checksum = 0i64;
    for (table, wanted) in READ {
        let present: Vec<String> = db
            .prepare("SELECT name FROM pragma_table_info(?1)")?
            .query_map([table], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let columns: Vec<String> = wanted
            .iter()
            .filter(|c| present.iter().any(|p| p == *c))
            .map(|c| format!("\"{c}\""))
            .collect();
        if columns.is_empty() {
            continue;
        }
        let mut stmt = db.prepare(&format!("SELECT {} FROM \"{table}\"", columns.join(", ")))?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            rows_read += 1;
            for i in 0..columns.len() {
                // Touch every value, as a converter must.
                if let rusqlite::types::ValueRef::Integer(v) = row.get_ref(i)? {
                    checksum = checksum.wrapping_add(v);
                }
            }
        }
    }
    println!("{rows_read} rows read (checksum {checksum})");
    Ok(())
}
