//! The public API: what an embedding program can do without the CLI.

use std::path::Path;

use crate::support::program::demo;
use nsys2perfetto::{convert, convert_file, convert_to_writer, Error, Options, Report};

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
    let trace = crate::support::convert::check_bytes(&bytes, "the demo converted in memory");
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

/// Every command reads its input the same way: what is not a report is
/// refused with the user's file named, and once cancelled every one fails
/// as interrupted, naming its input.
#[test]
fn every_command_opens_its_input_the_same_way() {
    use nsys2perfetto::analyze::analyze_file;
    use nsys2perfetto::compare::compare_files;
    use nsys2perfetto::merge::{merge_files, MergeOptions};
    use nsys2perfetto::series::{measure_series, EventPattern, SeriesRun};
    use nsys2perfetto::stats::{summarize_file, RangeNames, StatsReport};

    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.sqlite");
    std::fs::write(&text, b"not a report").unwrap();
    let out = dir.path().join("out.perfetto-trace");
    let every = |input: &Path, options: &Options| -> Vec<(&str, Error)> {
        let pattern = [EventPattern::parse("kernel:.").unwrap()];
        let runs = [SeriesRun::new("1", input)];
        let which = ["cudaapisum".parse::<StatsReport>().unwrap()];
        let inputs = [input.to_owned()];
        let thresholds = Default::default();
        let rules = nsys2perfetto::analyze::Rule::ALL;
        let merge = MergeOptions::default();
        vec![
            (
                "convert_file",
                convert_file(input, &out, options, &mut |_| {}).err(),
            ),
            (
                "convert_to_writer",
                convert_to_writer(input, Vec::new(), options, &mut |_| {}).err(),
            ),
            (
                "summarize_file",
                summarize_file(input, &which, RangeNames::Recorded, &options.read).err(),
            ),
            (
                "compare_files",
                compare_files(input, &demo(), RangeNames::Recorded, &options.read).err(),
            ),
            (
                "analyze_file",
                analyze_file(input, &rules, &thresholds, &options.read).err(),
            ),
            (
                "measure_series",
                measure_series(
                    "n",
                    &runs,
                    &pattern,
                    RangeNames::Recorded,
                    &options.read,
                    &mut |_| {},
                )
                .err(),
            ),
            (
                "merge_files",
                merge_files(&inputs, &out, options, &merge, &mut |_| {}).err(),
            ),
        ]
        .into_iter()
        .map(|(name, e)| (name, e.unwrap_or_else(|| panic!("{name} succeeded"))))
        .collect()
    };
    for (name, e) in every(&text, &Options::default()) {
        assert!(
            matches!(&e, Error::UnknownFormat { path } if path == &text),
            "{name}: {e}"
        );
    }
    let mut cancelled = Options::default();
    cancelled.read.cancel = Some(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(
        true,
    )));
    for (name, e) in every(&demo(), &cancelled) {
        assert!(
            matches!(&e, Error::Interrupted { path } if path == &demo()),
            "{name}: {e}"
        );
    }
    assert!(!out.exists());
}
