//! The public API: what an embedding program can do without the CLI.

mod support;

use std::path::{Path, PathBuf};

use nsys2perfetto::{convert, convert_file, convert_to_writer, Error, Options, Report};

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/demo.sqlite")
}

#[test]
fn an_open_report_converts_into_any_writer_as_a_file_does() {
    let options = Options::default();
    let report = Report::open(&demo()).unwrap();
    let (bytes, summary) = convert(&report, Vec::new(), &options, &mut |_| {}).unwrap();
    let (via_path, _) = convert_to_writer(&demo(), Vec::new(), &options, &mut |_| {}).unwrap();
    assert_eq!(bytes, via_path, "the same trace, byte for byte");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("demo.perfetto-trace");
    let from_file = convert_file(&demo(), &file, &options, &mut |_| {}).unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert_eq!(from_file, summary);
    let trace = support::convert::check_bytes(&bytes, "the demo converted in memory");
    trace.assert_valid();
    assert_eq!(
        trace.slices.len() as u64,
        summary.slices.values().sum::<u64>()
    );
}

#[test]
fn an_export_in_memory_converts_like_its_file() {
    // Copy the demo export into a named in-memory database.
    let uri = "file:library-test?mode=memory&cache=shared";
    let memory = rusqlite::Connection::open(uri).unwrap();
    memory
        .execute("ATTACH DATABASE ?1 AS demo", [demo().to_str().unwrap()])
        .unwrap();
    let tables: Vec<String> = memory
        .prepare("SELECT name FROM demo.sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for table in &tables {
        let sql = memory
            .query_row(
                "SELECT sql FROM demo.sqlite_master WHERE name = ?1",
                [table],
                |r| r.get::<_, String>(0),
            )
            .unwrap();
        memory.execute_batch(&sql).unwrap();
        memory
            .execute_batch(&format!(
                "INSERT INTO main.\"{table}\" SELECT * FROM demo.\"{table}\""
            ))
            .unwrap();
    }
    memory.execute_batch("DETACH DATABASE demo").unwrap();

    let options = Options::default();
    let in_memory = Report::open_uri(uri).unwrap();
    let (bytes, _) = convert(&in_memory, Vec::new(), &options, &mut |_| {}).unwrap();
    let from_file = Report::open(&demo()).unwrap();
    let (expected, _) = convert(&from_file, Vec::new(), &options, &mut |_| {}).unwrap();
    assert_eq!(bytes, expected);
}

#[test]
fn a_gzip_level_out_of_range_is_refused_by_the_library() {
    let report = Report::open(&demo()).unwrap();
    for level in [0, 10] {
        let mut options = Options::default();
        options.gzip = Some(level);
        let err = convert(&report, Vec::new(), &options, &mut |_| {}).unwrap_err();
        assert!(matches!(err, Error::InvalidOption(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!("gzip level {level} is not between 1 and 9")
        );
    }
}
