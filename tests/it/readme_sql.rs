//! The documents' SQL, run as written: each block marked
//! `<!-- tested: NAME ... -->` is taken from README.md or the guide (docs/), run by Perfetto's
//! trace_processor on a converted fixture, and its rows checked against SQL
//! over the source export.

use std::path::Path;
use std::process::Command;

use crate::support::fixtures::{fixture, require, Need};

/// The SQL of the documents' block marked `tested: name`.
fn readme_sql(name: &str) -> String {
    let readme: String = crate::readme::documents()
        .iter()
        .map(|d| std::fs::read_to_string(d).unwrap())
        .collect();
    let marker = format!("<!-- tested: {name} ");
    let start = readme
        .find(&marker)
        .unwrap_or_else(|| panic!("no document has a block marked {marker:?}"));
    let block = &readme[start..];
    let end = block
        .find("<!-- /tested -->")
        .expect("the block's end marker");
    let block = &block[..end];
    let sql = block
        .split_once("```sql\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(sql, _)| sql)
        .expect("an ```sql block between the markers");
    sql.to_owned()
}

/// The rows trace_processor answers `sql` with on `trace`, header first.
fn query(tp: &Path, trace: &Path, sql: &str) -> Vec<Vec<String>> {
    let out = Command::new(tp)
        .arg("query")
        .arg(trace)
        .arg(sql)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{sql}: {stderr}");
    crate::support::nsys::csv_rows(&String::from_utf8(out.stdout).unwrap())
}

/// "Launch latency": on a capture with CUDA event records (whose flows go
/// to the synchronizations that waited on them), the rows are the 20
/// longest launch-to-start delays of GPU work the source holds: each GPU
/// operation's start less its launching call's start, joined by
/// correlation id within a process.
#[test]
fn launch_latency_is_that_of_the_gpu_work() {
    let (Some(export), Some(tp)) = (
        fixture("h100_torch_graph_node.sqlite"),
        require(Need::TraceProcessor),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.perfetto-trace");
    nsys2perfetto::convert_file(&export, &trace, &Default::default(), &mut |_| {}).unwrap();
    let rows = query(&tp, &trace, &readme_sql("launch-latency"));
    assert_eq!(rows[0], ["call", "work", "latency_ns"]);
    let latencies: Vec<i64> = rows[1..].iter().map(|r| r[2].parse().unwrap()).collect();

    let db = crate::support::source::open(&export);
    let pid = |column: &str| format!("(({column} >> 24) & 16777215)");
    let expected: Vec<i64> = db
        .prepare(&format!(
            "WITH gpu AS (
                 SELECT start, correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL
                 UNION ALL SELECT start, correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMCPY
                 UNION ALL SELECT start, correlationId, globalPid FROM CUPTI_ACTIVITY_KIND_MEMSET)
             SELECT g.start - r.start AS latency FROM gpu g
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
               ON r.correlationId = g.correlationId AND {} = {}
             ORDER BY latency DESC LIMIT 20",
            pid("r.globalTid"),
            pid("g.globalPid")
        ))
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(expected.len(), 20);
    assert_eq!(latencies, expected, "{rows:?}");
    // The capture does hold event waits, which the query must leave out.
    let waits = query(
        &tp,
        &trace,
        "SELECT COUNT(*) FROM flow f JOIN slice k ON k.id = f.slice_in \
         WHERE k.category = 'cuda_sync'",
    );
    assert!(waits[1][0].parse::<u64>().unwrap() > 0, "{waits:?}");
}
