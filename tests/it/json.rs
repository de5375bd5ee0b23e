//! Chrome trace event JSON (`--format json`): imported by trace_processor,
//! it must give what the protobuf trace of the same report gives.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::fixtures::{self, Need};
use crate::support::program::BIN;
use crate::support::synth::{GpuStream, Thread};
use crate::support::tp;
use nsys2perfetto::{convert_file, Format, Options, Part, Parts};

/// Options for `format`, uncompressed. The protobuf leaves out what JSON
/// cannot carry (CPU samples, context switches), so both hold the same.
fn options(format: Format) -> Options {
    let mut options = Options::default();
    options.format = format;
    options.gzip = None;
    options.parts = Parts::all().without(Part::Samples).without(Part::Sched);
    options
}

/// trace_processor's answer to `sql` on `trace`, as CSV.
fn query(binary: &Path, trace: &Path, sql: &str) -> String {
    let out = Command::new(binary)
        .arg("query")
        .arg(trace)
        .arg(sql)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    assert!(
        out.status.success(),
        "trace_processor failed on {}: {}",
        trace.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 CSV")
}

/// Both ends of every flow: which slice, when, how deep.
const FLOW_ENDS: &str = "
SELECT o.ts, o.dur, o.name, o.depth, i.ts, i.dur, i.name, i.depth
FROM flow f JOIN slice o ON o.id = f.slice_out JOIN slice i ON i.id = f.slice_in
ORDER BY 1, 2, 3, 4, 5, 6, 7, 8";

/// The args of the slices of each category, however the format prefixes
/// their keys (`debug.` in protobuf, `args.` in JSON).
const ARGS: &str = "
SELECT s.category, COUNT(*), SUM(LENGTH(SUBSTR(a.key, INSTR(a.key, '.') + 1))),
       SUM(LENGTH(a.display_value))
FROM slice s JOIN args a USING (arg_set_id)
WHERE a.key GLOB 'debug.*' OR a.key GLOB 'args.*'
GROUP BY 1 ORDER BY 1";

/// Converts `input` into protobuf and into JSON; trace_processor must import
/// the same slices (count, Σts, Σdur per category), flows between the same
/// slices, the same args and counters, and the JSON without an import error.
fn assert_json_imports_as_protobuf(binary: &Path, input: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let (pb, json) = (
        dir.path().join("t.perfetto-trace"),
        dir.path().join("t.json"),
    );
    let what = input.display();
    let pb_summary = convert_file(input, &pb, &options(Format::Perfetto), &mut |_| {})
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let json_summary = convert_file(input, &json, &options(Format::Json), &mut |_| {})
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(json_summary, pb_summary, "{what}");
    let text = std::fs::read(&json).unwrap();
    assert!(
        text.starts_with(b"{\"displayTimeUnit\""),
        "{what}: plain JSON"
    );

    let from_pb = tp::import(binary, &pb);
    let from_json = tp::import(binary, &json);
    assert!(
        from_json.problems.is_empty(),
        "{what}: import problems {:?}",
        from_json.problems
    );
    assert!(!from_json.slices.is_empty() || pb_summary.slices.is_empty());
    assert_eq!(
        from_json.slices, from_pb.slices,
        "{what}: slices per category"
    );
    assert_eq!(from_json.flows, from_pb.flows, "{what}: flows");
    assert_eq!(
        from_json.flows,
        pb_summary.flows + pb_summary.event_flows,
        "{what}: every flow of the summary"
    );
    assert_eq!(
        from_json.counters, from_pb.counters,
        "{what}: counter values"
    );
    for sql in [FLOW_ENDS, ARGS] {
        assert_eq!(
            query(binary, &json, sql),
            query(binary, &pb, sql),
            "{what}: {sql}"
        );
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn json_of_real_reports_imports_as_their_protobuf_does() {
    let Some(binary) = fixtures::require(Need::TraceProcessor) else {
        return;
    };
    for name in [
        // NVTX projected onto the GPU, launch and event flows.
        "dlprof_nsys_profile.sqlite",
        // Graphs, memory pools, counters, OS runtime calls with call stacks,
        // the profiler's overhead and diagnostics.
        "h100_torch_graph_node.sqlite",
        // Two processes on two GPUs, 16.8k NVTX ranges.
        "nsys-ai_h100_2gpu_1s.sqlite",
        // NVTX domains, start/end ranges across threads, marks; samples and
        // context switches, which JSON leaves out.
        "nvtx_c_full.sqlite",
        // Many streams of overlapping work (lanes), 2 processes.
        "abacus_report1.sqlite",
    ] {
        let Some(input) = fixtures::fixture(name) else {
            return;
        };
        assert_json_imports_as_protobuf(&binary, &input);
    }
}

const MAIN: Thread = Thread { pid: 100, tid: 100 };
const COMPUTE: GpuStream = GpuStream {
    pid: 100,
    device: 0,
    context: 1,
    stream: 7,
};

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn flows_leave_their_launch_and_a_launch_that_starts_with_a_nested_call_is_told() {
    let Some(binary) = fixtures::require(Need::TraceProcessor) else {
        return;
    };
    let (_dir, input) = crate::support::convert::synthetic(|s| {
        // Nested calls back to back inside the launch, none at its start.
        s.api(MAIN, 1_000..9_000, "cudaLaunchKernel").corr(1);
        s.api(MAIN, 2_000..3_000, "cuGetProcAddress");
        s.api(MAIN, 3_000..3_500, "cuGetProcAddress");
        s.kernel(COMPUTE, 10_000..11_000, "k").corr(1);
        // A nested call starting with the launch: JSON cannot tell them apart.
        s.api(MAIN, 20_000..29_000, "cudaLaunchKernel").corr(2);
        s.api(MAIN, 20_000..21_000, "cuGetProcAddress");
        s.kernel(COMPUTE, 30_000..31_000, "k2").corr(2);
    });
    let dir = tempfile::tempdir().unwrap();
    let (pb, json) = (
        dir.path().join("t.perfetto-trace"),
        dir.path().join("t.json"),
    );
    let pb_summary = convert_file(&input, &pb, &options(Format::Perfetto), &mut |_| {}).unwrap();
    let summary = convert_file(&input, &json, &options(Format::Json), &mut |_| {}).unwrap();
    assert_eq!(pb_summary.json_flows_on_nested, 0);
    assert_eq!(summary.json_flows_on_nested, 1);
    let warnings = summary.warnings();
    assert!(
        warnings.iter().any(|w| w.starts_with(
            "1 flow leaves or enters a slice at the very time a slice nested in it starts"
        )),
        "{warnings:?}"
    );
    let flows = "SELECT o.name, o.ts, i.name FROM flow f JOIN slice o ON o.id = f.slice_out \
                 JOIN slice i ON i.id = f.slice_in ORDER BY o.ts";
    assert_eq!(
        query(&binary, &pb, flows),
        "\"name\",\"ts\",\"name\"\n\"cudaLaunchKernel\",1000,\"k\"\n\"cudaLaunchKernel\",20000,\"k2\"\n"
    );
    assert_eq!(
        query(&binary, &json, flows),
        "\"name\",\"ts\",\"name\"\n\"cudaLaunchKernel\",1000,\"k\"\n\"cuGetProcAddress\",20000,\"k2\"\n"
    );
    let (from_pb, from_json) = (tp::import(&binary, &pb), tp::import(&binary, &json));
    assert!(from_json.problems.is_empty(), "{:?}", from_json.problems);
    assert_eq!(from_json.slices, from_pb.slices);
    assert_eq!(from_json.flows, 2);
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("gzip");
    out
}

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(BIN).args(args).output().unwrap()
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_output_name_picks_json_and_gzip() {
    let Some(input) = fixtures::fixture("dlprof_nsys_profile.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);
    let s = |p: &PathBuf| p.to_str().unwrap().to_owned();
    let input = s(&input);
    for (out, extra) in [
        ("plain.json", &[][..]),
        ("packed.json.gz", &[][..]),
        ("asked.trace", &["--format", "json"][..]),
    ] {
        let mut args = vec!["convert", "-q", &input, "-o"];
        let target = s(&path(out));
        args.push(&target);
        args.extend(extra);
        let run = cli(&args);
        assert!(run.status.success(), "{out}: {run:?}");
    }
    let plain = std::fs::read(path("plain.json")).unwrap();
    assert!(plain.starts_with(b"{\"displayTimeUnit\""));
    let packed = std::fs::read(path("packed.json.gz")).unwrap();
    assert_eq!(&packed[..2], &[0x1f, 0x8b], "gzip");
    assert_eq!(gunzip(&packed), plain);
    assert_eq!(std::fs::read(path("asked.trace")).unwrap(), plain);
    assert!(packed.len() * 5 < plain.len(), "JSON compresses well");

    // With --format json and no -o: the input's name with .json beside it.
    let copy = path("report.sqlite");
    std::fs::copy(&input, &copy).unwrap();
    let run = cli(&["convert", "-q", &s(&copy), "--format", "json"]);
    assert!(run.status.success(), "{run:?}");
    assert_eq!(std::fs::read(path("report.json")).unwrap(), plain);
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_library_gzips_json_at_the_level_asked() {
    let Some(input) = fixtures::fixture("nvtx_c_full.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (plain, packed) = (dir.path().join("a.json"), dir.path().join("b.json"));
    convert_file(&input, &plain, &options(Format::Json), &mut |_| {}).unwrap();
    let mut gz = options(Format::Json);
    gz.gzip = Some(9);
    convert_file(&input, &packed, &gz, &mut |_| {}).unwrap();
    let plain = std::fs::read(plain).unwrap();
    assert_eq!(gunzip(&std::fs::read(packed).unwrap()), plain);
}

#[test]
fn a_broken_input_gives_one_line_and_no_json_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("broken.sqlite");
    std::fs::write(&input, b"SQLite format 3\0 but nothing after").unwrap();
    let out = dir.path().join("broken.json");
    let run = cli(&[
        "convert",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!out.exists());
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "only the input: {left:?}");
}

/// A writer that takes `left` bytes, then fails as a full disk does.
struct Full {
    left: usize,
}

impl std::io::Write for Full {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "no space left",
            ));
        }
        let n = buf.len().min(self.left);
        self.left -= n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn an_output_that_fails_midway_fails_the_json_conversion_with_its_error() {
    let Some(input) = fixtures::fixture("dlprof_nsys_profile.sqlite") else {
        return;
    };
    let report = nsys2perfetto::Report::open(&input).unwrap();
    for left in [0, 10_000] {
        let failed =
            nsys2perfetto::convert(&report, Full { left }, &options(Format::Json), &mut |_| {});
        match failed {
            Err(nsys2perfetto::Error::Writer { cause }) => {
                assert_eq!(cause.kind(), std::io::ErrorKind::StorageFull, "{cause}")
            }
            Err(e) => panic!("{left} bytes: another error: {e}"),
            Ok(_) => panic!("{left} bytes: no error"),
        }
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn samples_and_context_switches_are_told_as_not_in_json() {
    let Some(input) = fixtures::fixture("nvtx_c_full.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut all = Options::default();
    all.format = Format::Json;
    let summary = convert_file(&input, dir.path().join("t.json"), &all, &mut |_| {}).unwrap();
    let source = crate::support::source::open(&input);
    let rows = |table: &str| -> u64 {
        source
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    };
    let told: Vec<(String, u64)> = summary
        .unconverted
        .iter()
        .map(|u| (u.table.clone(), u.rows))
        .collect();
    for table in ["COMPOSITE_EVENTS", "SCHED_EVENTS"] {
        assert!(rows(table) > 0, "{table} has rows");
        assert!(told.contains(&(table.to_owned(), rows(table))), "{told:?}");
    }
    assert_eq!(summary.cpu_samples, 0);
    assert_eq!(summary.sched_events, 0);
    let warnings = summary.warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("SCHED_EVENTS is not converted")),
        "{warnings:?}"
    );
}

#[test]
fn no_gzip_for_a_name_ending_in_gz_is_refused_before_anything_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json.gz");
    let run = cli(&[
        "convert",
        "missing.sqlite",
        "--no-gzip",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(
        stderr.trim(),
        "nsys2perfetto: error: --no-gzip with an output name ending in .gz: drop one"
    );
    assert!(!out.exists());
}
