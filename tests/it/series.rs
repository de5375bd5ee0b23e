//! Series: every cell (count, total, mean, median of the matching events of
//! one run) against SQL over that run's export, written here from the
//! definitions: kernels by short or demangled name, CUDA API calls, NVTX
//! ranges, NVTX ranges projected onto the GPU, cuDNN and cuBLAS calls. The
//! CSV and the SVG are read back: the SVG as XML, its structure checked.

use std::path::{Path, PathBuf};
use std::process::Command;

use nsys2perfetto::series::{measure_series, EventKind, EventPattern, Series, SeriesRun};
use nsys2perfetto::stats::RangeNames;
use nsys2perfetto::ReadOptions;
use regex::Regex;
use rusqlite::Connection;

use crate::support::fixtures::{require, shared_dir, Need};
use crate::support::program::BIN;
use crate::support::source::{has_column, has_table, open};
use crate::support::synth::{GpuStream, Synth, Thread};

/// A cell as SQL and the definitions give it.
#[derive(Debug, PartialEq)]
struct Expected {
    count: u64,
    total: i64,
    median: Option<f64>,
}

fn expected(mut durations: Vec<i64>) -> Expected {
    durations.sort_unstable();
    let n = durations.len();
    let median = match n {
        0 => None,
        _ if n % 2 == 1 => Some(durations[n / 2] as f64),
        _ => Some((durations[n / 2 - 1] + durations[n / 2]) as f64 / 2.0),
    };
    Expected {
        count: n as u64,
        total: durations.iter().sum(),
        median,
    }
}

/// (name, other name, duration) rows of `sql`.
fn named_durations(db: &Connection, sql: &str) -> Vec<(String, String, i64)> {
    let mut stmt = db.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// The durations of the events of `db` that `pattern` matches, by SQL.
fn durations_by_sql(db: &Connection, pattern: &EventPattern, regex: &Regex) -> Vec<i64> {
    let rows = match pattern.kind() {
        EventKind::Kernel => {
            if !has_table(db, "CUPTI_ACTIVITY_KIND_KERNEL") {
                return Vec::new();
            }
            named_durations(
                db,
                "SELECT COALESCE(s.value, ''), COALESCE(d.value, ''), k.\"end\" - k.start
                 FROM CUPTI_ACTIVITY_KIND_KERNEL k
                 LEFT JOIN StringIds s ON s.id = k.shortName
                 LEFT JOIN StringIds d ON d.id = k.demangledName",
            )
        }
        EventKind::CudaApi => {
            let mut rows = Vec::new();
            for table in ["CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"] {
                if !has_table(db, table) {
                    continue;
                }
                // eventClass 67 and 68 are backtrace records repeating a call.
                let calls = match has_column(db, table, "eventClass") {
                    true => "WHERE eventClass IS NULL OR eventClass NOT IN (67, 68)",
                    false => "",
                };
                // Matched as recorded and as nsys's reports name it: less
                // the last six characters where they start with `_v`.
                rows.extend(named_durations(
                    db,
                    &format!(
                        "SELECT COALESCE(s.value, ''),
                                CASE WHEN substr(s.value, -6, 2) = '_v'
                                     THEN substr(s.value, 1, length(s.value) - 6)
                                     ELSE COALESCE(s.value, '') END,
                                c.\"end\" - c.start FROM {table} c
                         LEFT JOIN StringIds s ON s.id = c.nameId {calls}"
                    ),
                ));
            }
            rows
        }
        EventKind::Cudnn | EventKind::Cublas => {
            let table = match pattern.kind() {
                EventKind::Cudnn => "CUDNN_EVENTS",
                _ => "CUBLAS_EVENTS",
            };
            if !has_table(db, table) {
                return Vec::new();
            }
            named_durations(
                db,
                &format!(
                    "SELECT COALESCE(s.value, ''), '', c.\"end\" - c.start FROM {table} c
                     LEFT JOIN StringIds s ON s.id = c.nameId"
                ),
            )
        }
        EventKind::Nvtx => {
            if !has_table(db, "NVTX_EVENTS") {
                return Vec::new();
            }
            // Push/pop and start/end ranges (59, 60, 70, 71) that ended.
            named_durations(
                db,
                "SELECT COALESCE(n.text, s.value, ''), '', n.\"end\" - n.start FROM NVTX_EVENTS n
                 LEFT JOIN StringIds s ON s.id = n.textId
                 WHERE n.eventType IN (59, 60, 70, 71) AND n.\"end\" IS NOT NULL",
            )
        }
        EventKind::NvtxGpu => projections_by_sql(db),
        other => panic!("no SQL for {other:?}"),
    };
    rows.into_iter()
        .filter(|(name, other, _)| {
            regex.is_match(name) || (!other.is_empty() && regex.is_match(other))
        })
        .map(|(_, _, d)| d)
        .collect()
}

/// NVIDIA's NVTX GPU projection: for each range that starts and ends on one
/// thread, the kernels, memcpys and memsets launched by API calls of that
/// thread lying wholly inside it; from their first start to their last end.
/// Ranges still open end at the last time of any NVTX row.
fn projections_by_sql(db: &Connection) -> Vec<(String, String, i64)> {
    if !has_table(db, "NVTX_EVENTS") || !has_table(db, "CUPTI_ACTIVITY_KIND_RUNTIME") {
        return Vec::new();
    }
    let ops: Vec<String> = [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ]
    .iter()
    .filter(|t| has_table(db, t))
    .map(|t| {
        format!(
            "SELECT start, \"end\", correlationId, (globalPid >> 24) & 16777215 AS pid FROM {t}"
        )
    })
    .collect();
    if ops.is_empty() {
        return Vec::new();
    }
    let calls: Vec<String> = ["CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"]
        .iter()
        .filter(|t| has_table(db, t))
        .map(|t| format!("SELECT start, \"end\", correlationId, globalTid FROM {t}"))
        .collect();
    // Indexed copies in the connection's own temporary store: the export is read-only.
    db.execute_batch(&format!(
        "DROP TABLE IF EXISTS temp.calls; DROP TABLE IF EXISTS temp.ops;
         CREATE TEMP TABLE calls AS {calls};
         CREATE INDEX temp.calls_by_thread ON calls (globalTid, start);
         CREATE TEMP TABLE ops AS {ops};
         CREATE INDEX temp.ops_by_launch ON ops (pid, correlationId);",
        calls = calls.join(" UNION ALL "),
        ops = ops.join(" UNION ALL "),
    ))
    .unwrap();
    let sql = "WITH last AS (SELECT MAX(MAX(start), COALESCE(MAX(\"end\"), MAX(start))) AS t FROM NVTX_EVENTS),
         ranges AS (
           SELECT n.rowid AS id, n.start, COALESCE(n.\"end\", (SELECT t FROM last)) AS \"end\",
                  n.globalTid, COALESCE(n.text, s.value, '') AS name
           FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
           WHERE n.eventType IN (59, 60, 70, 71) AND n.endGlobalTid IS NULL),
         launched AS (
           SELECT DISTINCT r.id, r.name, o.start, o.\"end\"
           FROM ranges r
           JOIN temp.calls c ON c.globalTid = r.globalTid AND c.start BETWEEN r.start AND r.\"end\"
                AND c.\"end\" <= r.\"end\"
           JOIN temp.ops o ON o.pid = (c.globalTid >> 24) & 16777215 AND o.correlationId = c.correlationId)
         SELECT name, '', MAX(\"end\") - MIN(start) FROM launched GROUP BY id";
    named_durations(db, sql)
}

/// The series of `runs`, measured as the library's defaults say (NVTX ranges by
/// their recorded names, reports exported with `nsys` on PATH).
fn measured(
    parameter: &str,
    runs: &[SeriesRun],
    patterns: &[EventPattern],
) -> nsys2perfetto::Result<Series> {
    measure_series(
        parameter,
        runs,
        patterns,
        RangeNames::Recorded,
        &ReadOptions::default(),
        &mut |_| {},
    )
}

/// Checks every cell of `series` against SQL over the exports, in run order.
fn check_cells(series: &Series, exports: &[PathBuf]) {
    assert_eq!(series.runs.len(), exports.len());
    for (p, pattern) in series.patterns.iter().enumerate() {
        let expression = pattern
            .text()
            .split_once(':')
            .filter(|(prefix, _)| {
                ["kernel", "api", "cudnn", "cublas", "nvtx", "nvtx-gpu"].contains(prefix)
            })
            .map_or(pattern.text(), |(_, rest)| rest);
        let regex = Regex::new(expression).unwrap();
        for (r, export) in exports.iter().enumerate() {
            let db = open(export);
            let want = expected(durations_by_sql(&db, pattern, &regex));
            let cell = &series.cells[p][r];
            let got = Expected {
                count: cell.count,
                total: cell.total_ns,
                median: cell.median_ns,
            };
            assert_eq!(
                got,
                want,
                "{} in {}={} ({})",
                pattern.text(),
                series.parameter,
                series.runs[r].value,
                export.display()
            );
        }
    }
}

fn patterns(texts: &[&str]) -> Vec<EventPattern> {
    texts
        .iter()
        .map(|t| EventPattern::parse(t).unwrap())
        .collect()
}

/// The CSV as rows of fields (no field here holds a comma or a quote).
fn csv(series: &Series) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    series.write_csv(&mut out).unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

/// The CSV holds every cell: count, total, mean and median per run.
fn check_csv(series: &Series) {
    let rows = csv(series);
    assert_eq!(rows.len(), 1 + series.patterns.len());
    assert_eq!(rows[0].len(), 2 + 4 * series.runs.len());
    for (r, run) in series.runs.iter().enumerate() {
        assert_eq!(
            rows[0][2 + 4 * r],
            format!("{}={} count", series.parameter, run.value)
        );
    }
    for (p, pattern) in series.patterns.iter().enumerate() {
        let row = &rows[1 + p];
        assert_eq!(row[0], pattern.text());
        for (r, cell) in series.cells[p].iter().enumerate() {
            let fields = &row[2 + 4 * r..2 + 4 * r + 4];
            assert_eq!(fields[0], cell.count.to_string());
            assert_eq!(fields[1], cell.total_ns.to_string());
            let mean = match cell.count {
                0 => String::new(),
                n => format!("{:.1}", cell.total_ns as f64 / n as f64),
            };
            assert_eq!(fields[2], mean);
            assert_eq!(
                fields[3],
                cell.median_ns.map_or(String::new(), |m| format!("{m:.1}"))
            );
        }
    }
}

/// What the SVG holds, read as XML.
#[derive(Debug, Default)]
struct Svg {
    polylines: Vec<usize>,
    circles: usize,
    texts: Vec<String>,
    titles: Vec<String>,
}

fn read_svg(bytes: &[u8]) -> Svg {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(bytes);
    let mut svg = Svg::default();
    let mut stack: Vec<String> = Vec::new();
    let mut buf = Vec::new();
    let mut root_seen = false;
    loop {
        let event = reader.read_event_into(&mut buf).unwrap_or_else(|e| {
            panic!(
                "the SVG is not well-formed XML at {}: {e}",
                reader.buffer_position()
            )
        });
        match event {
            Event::Start(e) => {
                let name = element(&mut svg, &mut root_seen, &e);
                stack.push(name);
            }
            Event::Empty(e) => {
                element(&mut svg, &mut root_seen, &e);
            }
            Event::End(_) => {
                stack.pop();
            }
            Event::Text(t) => {
                let text = t.decode().unwrap().into_owned();
                match stack.last().map(String::as_str) {
                    Some("text") | Some("tspan") => svg.texts.push(text),
                    Some("title") => svg.titles.push(text),
                    _ => {}
                }
            }
            Event::GeneralRef(r) => {
                // An entity inside text: kept as its character.
                let c = match &r[..] {
                    b"amp" => "&",
                    b"lt" => "<",
                    b"gt" => ">",
                    b"quot" => "\"",
                    b"apos" => "'",
                    other => panic!("unknown entity {}", String::from_utf8_lossy(other)),
                };
                let target = match stack.last().map(String::as_str) {
                    Some("title") => &mut svg.titles,
                    _ => &mut svg.texts,
                };
                match target.last_mut() {
                    Some(last) => last.push_str(c),
                    None => target.push(c.to_owned()),
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    assert!(root_seen, "an <svg> element");
    assert!(stack.is_empty(), "every element closed: {stack:?}");
    svg
}

/// Notes an element of the SVG; returns its name.
fn element(svg: &mut Svg, root_seen: &mut bool, e: &quick_xml::events::BytesStart) -> String {
    let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
    if !*root_seen {
        assert_eq!(name, "svg", "the root element");
        let ns = e
            .try_get_attribute("xmlns")
            .unwrap()
            .expect("an xmlns attribute");
        assert_eq!(ns.value.as_ref(), b"http://www.w3.org/2000/svg");
        *root_seen = true;
    }
    match name.as_str() {
        "polyline" => {
            let points = e.try_get_attribute("points").unwrap().expect("points");
            let text = String::from_utf8(points.value.to_vec()).unwrap();
            svg.polylines.push(text.split_whitespace().count());
        }
        "circle" => svg.circles += 1,
        _ => {}
    }
    name
}

/// The plot: one line per pattern with events, a dot per run on each, every
/// pattern and every run's value written out, axes named.
fn check_svg(series: &Series) -> Svg {
    let mut bytes = Vec::new();
    series.write_svg(&mut bytes).unwrap();
    let svg = read_svg(&bytes);
    let with_events = series
        .cells
        .iter()
        .filter(|cells| cells.iter().any(|c| c.count > 0))
        .count();
    assert_eq!(
        svg.polylines.len(),
        with_events,
        "a line per pattern with events"
    );
    assert!(svg.polylines.iter().all(|&n| n == series.runs.len()));
    // A dot per run on each line, and one in the legend for each.
    assert_eq!(svg.circles, with_events * (series.runs.len() + 1));
    let all_text = svg.texts.join("\n");
    for pattern in &series.patterns {
        assert!(
            svg.titles.iter().any(|t| t == pattern.text())
                || svg.texts.iter().any(|t| t.starts_with(pattern.text())),
            "{} is in the legend: {:?}",
            pattern.text(),
            svg.texts
        );
    }
    assert!(
        all_text.contains("total time ("),
        "the y axis says its unit"
    );
    assert!(
        svg.texts.iter().any(|t| t.starts_with(&series.parameter)),
        "the x axis is named"
    );
    svg
}

/// The Cori job's 8 ranks: each rank's export where the fixtures have it;
/// otherwise exported here with nsys. `None` (having said why) without ../shared or nsys.
fn cori_ranks(dir: &Path) -> Option<(Vec<SeriesRun>, Vec<PathBuf>)> {
    let fixtures = require(Need::Shared)?.join("fixtures");
    let mut runs = Vec::new();
    let mut exports = Vec::new();
    for rank in 0..8 {
        let n = rank + 1;
        let sqlite = fixtures.join(format!("sqlite/cori_run1_report{n}.sqlite"));
        if sqlite.exists() {
            runs.push(SeriesRun::new(rank.to_string(), &sqlite));
            exports.push(sqlite);
            continue;
        }
        require(Need::Nsys)?;
        let report = fixtures.join(format!("reports/cori_run1_report{n}.qdrep"));
        let export = dir.join(format!("rank{rank}.sqlite"));
        let out = Command::new("nsys")
            .args(["export", "--type", "sqlite", "--output"])
            .arg(&export)
            .arg(&report)
            .output()
            .unwrap();
        assert!(out.status.success(), "nsys export {}", report.display());
        // One rank through its report (the series exports it itself); the
        // others through this test's exports, to spare nsys the work twice.
        let input = match rank {
            1 => report,
            _ => export.clone(),
        };
        runs.push(SeriesRun::new(rank.to_string(), input));
        exports.push(export);
    }
    Some((runs, exports))
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_cori_ranks_as_a_series_match_sql_over_each_rank() {
    let dir = tempfile::tempdir().unwrap();
    let Some((runs, exports)) = cori_ranks(dir.path()) else {
        return;
    };
    let patterns = patterns(&[
        "cpush",
        "kernel:^nvkernel_grid1_",
        // Both push kernels in one row.
        "push",
        "api:^cuMemcpy",
        "api:Synchronize$",
        // None in these reports: zero everywhere.
        "nvtx:.*",
        "nvtx-gpu:.*",
        "cudnn:.*",
        "no_such_kernel",
    ]);
    let series = measured("rank", &runs, &patterns).expect("the series is measured");
    check_cells(&series, &exports);
    // The checks can fail: the ranks ran the same kernels for different times.
    let cpush: Vec<i64> = series.cells[0].iter().map(|c| c.total_ns).collect();
    assert!(cpush.iter().all(|&t| t > 0), "{cpush:?}");
    assert!(cpush.windows(2).any(|w| w[0] != w[1]), "{cpush:?}");
    assert_eq!(series.cells[0][0].count, 10);
    check_csv(&series);
    let svg = check_svg(&series);
    for rank in 0..8 {
        assert!(
            svg.texts.contains(&rank.to_string()),
            "rank {rank} on the x axis"
        );
    }
    assert!(
        svg.texts.iter().any(|t| t.contains("no events in any run")),
        "patterns without events say so: {:?}",
        svg.texts
    );
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn nvtx_ranges_and_their_gpu_projections_match_sql() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let sqlite = shared.join("fixtures/sqlite");
    let exports: Vec<PathBuf> = [
        "dlprof_nsys_profile.sqlite",
        "h100_torch_graph_node.sqlite",
        "h100_torch_graph_whole.sqlite",
        "llama3_real_inference_simulation.sqlite",
        "nsys-ai_h100_2gpu_1s.sqlite",
    ]
    .iter()
    .map(|f| sqlite.join(f))
    .collect();
    let runs: Vec<SeriesRun> = exports
        .iter()
        .map(|e| SeriesRun::new(e.file_stem().unwrap().to_string_lossy(), e))
        .collect();
    let patterns = patterns(&[
        "nvtx:.*",
        "nvtx-gpu:.*",
        "nvtx:^(forward|backward)",
        "nvtx-gpu:^(forward|backward)",
        "nvtx-gpu:step",
        "nvtx:NCCL|nccl",
        "kernel:gemm",
        "api:^cudaLaunchKernel",
        // As `stats` prints it, without the `_v7000` of the recorded name.
        "api:^cudaLaunchKernel$",
    ]);
    let series = measured("report", &runs, &patterns).expect("the series is measured");
    check_cells(&series, &exports);
    let projected: u64 = series.cells[1].iter().map(|c| c.count).sum();
    assert!(projected > 100, "projections found: {projected}");
    // The name `stats` prints finds the launches (of cudaLaunchKernel, not
    // of cudaLaunchKernelExC, which the pattern without `$` finds too).
    let (prefix, printed) = (&series.cells[7], &series.cells[8]);
    assert!(printed.iter().any(|c| c.count > 0), "{printed:?}");
    for (all, exact) in prefix.iter().zip(printed) {
        assert!(exact.count <= all.count, "{exact:?} of {all:?}");
    }
    check_csv(&series);
    check_svg(&series);
}

#[test]
fn library_calls_and_demangled_names_of_a_synthetic_series() {
    let dir = tempfile::tempdir().unwrap();
    let main = Thread { pid: 100, tid: 100 };
    let stream = GpuStream {
        pid: 100,
        device: 0,
        context: 1,
        stream: 7,
    };
    let mut runs = Vec::new();
    for batch in [8i64, 16, 32] {
        let path = dir.path().join(format!("b{batch}.sqlite"));
        let mut s = Synth::new(&path);
        s.process(100, "trainer");
        s.thread(main, "trainer");
        for i in 0..batch / 8 {
            let t = 10_000 * i;
            s.cudnn(main, t..t + 100 * batch, "cudnnConvolutionForward");
            s.cublas(main, t + 5_000..t + 5_000 + 10 * batch, "cublasSgemm_v2");
            s.kernel(stream, t + 6_000..t + 6_000 + 30 * batch, "sgemm_128")
                .demangled("void ampere_sgemm_128x64_nn<float>(int)");
        }
        s.finish();
        runs.push(SeriesRun::new(batch.to_string(), path));
    }
    let patterns = patterns(&[
        "cudnn:Convolution",
        "cublas:^cublasSgemm",
        // The demangled name only.
        "ampere_sgemm_128x64",
        "cudnn:cublas",
    ]);
    let series = measured("batch", &runs, &patterns).unwrap();
    let totals: Vec<Vec<(u64, i64)>> = series
        .cells
        .iter()
        .map(|row| row.iter().map(|c| (c.count, c.total_ns)).collect())
        .collect();
    assert_eq!(
        totals,
        [
            vec![(1, 800), (2, 3_200), (4, 12_800)],
            vec![(1, 80), (2, 320), (4, 1_280)],
            vec![(1, 240), (2, 960), (4, 3_840)],
            vec![(0, 0), (0, 0), (0, 0)],
        ]
    );
    let exports: Vec<PathBuf> = runs.iter().map(|r| r.input.clone()).collect();
    check_cells(&series, &exports);
    check_csv(&series);
    check_svg(&series);
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_command_writes_the_table_and_the_plot() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let sqlite = shared.join("fixtures/sqlite");
    let dir = tempfile::tempdir().unwrap();
    // A template names the reports: links to two fixtures.
    for (value, fixture) in [
        ("1", "cori_run1_report1.sqlite"),
        ("2", "dlprof_nsys_profile.sqlite"),
    ] {
        std::os::unix::fs::symlink(
            sqlite.join(fixture),
            dir.path().join(format!("run_{value}.sqlite")),
        )
        .unwrap();
    }
    let table = dir.path().join("table.csv");
    let plot = dir.path().join("plot.svg");
    let out = Command::new(BIN)
        .args(["series", "--pattern"])
        .arg(dir.path().join("run_$p.sqlite"))
        .args([
            "--values", "1,2", "--name", "run", "--events", "cpush", "nvtx:.*", "-o",
        ])
        .arg(&table)
        .arg("--svg")
        .arg(&plot)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&table).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].starts_with("event,kind,run=1 count,run=1 total_ns,"),
        "{text}"
    );
    assert!(lines[1].starts_with("cpush,kernel,10,31311903,"), "{text}");
    let svg = read_svg(&std::fs::read(&plot).unwrap());
    assert_eq!(svg.polylines.len(), 2);

    // The same with --param, the table on standard output.
    let out = Command::new(BIN)
        .args(["series", "--param", "run=1"])
        .arg(sqlite.join("cori_run1_report1.sqlite"))
        .args(["--param", "run=2"])
        .arg(sqlite.join("dlprof_nsys_profile.sqlite"))
        .args(["--events", "cpush", "nvtx:.*", "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), text);
    assert!(
        out.stderr.is_empty(),
        "quiet: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bad_command_lines_fail_in_one_line_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("table.csv");
    let export = shared_dir().join("fixtures/sqlite/cori_run1_report1.sqlite");
    let export = export.to_str().unwrap();
    let missing = dir.path().join("missing.sqlite");
    let missing = missing.to_str().unwrap();
    let svg_in_nodir = dir.path().join("nodir/plot.svg");
    let svg_in_nodir = svg_in_nodir.to_str().unwrap().to_owned();
    let cases: Vec<(Vec<&str>, i32, &str)> =
        vec![
        (
            (vec!["--param", "batch=8", export, "--events", "nvtx:(forward"]),
            2,
            "not a valid regular expression",
        ),
        (
            (vec![
                "--param", "batch=8", export, "--param", "size=16", export, "--events", "x",
            ]),
            2,
            "a series varies one parameter",
        ),
        (
            (vec![
                "--param", "batch=8", export, "--param", "batch=8", export, "--events", "x",
            ]),
            2,
            "batch=8 is given twice",
        ),
        (
            (vec!["--param", "8", export, "--events", "x"]),
            2,
            "write NAME=VALUE",
        ),
        (
            (vec![
                "--pattern",
                "run.sqlite",
                "--values",
                "1,2",
                "--events",
                "x",
            ]),
            2,
            "has no $p",
        ),
        (
            (vec!["--param", "batch=8", missing, "--events", "x"]),
            1,
            "cannot read",
        ),
        (
            (vec!["--param", "batch=8", export, "--events", "kernal:sgemm"]),
            2,
            "unknown kind \"kernal:\" (the kinds: kernel:, api:, cudnn:, cublas:, nvtx:, nvtx-gpu:",
        ),
        (
            (vec!["--param", "batch=8", export, "--events", "NVTX:forward"]),
            2,
            "unknown kind \"NVTX:\"",
        ),
        (
            (vec!["--param", "batch=8", export, "--events", "Api:cudaFree"]),
            2,
            "unknown kind \"Api:\"",
        ),
        (
            (vec!["--param", "batch=8", export, "--events", "x", "--svg", &svg_in_nodir]),
            2,
            "nodir does not exist",
        ),
    ];
    for (case, status, says) in cases {
        let out = Command::new(BIN)
            .arg("series")
            .args(&case)
            .arg("-o")
            .arg(&table)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{case:?}: {stderr}");
        assert!(stderr.contains(says), "{case:?}: {stderr}");
        let errors = stderr
            .lines()
            .filter(|l| l.starts_with("nsys2perfetto: error: "));
        assert_eq!(errors.count(), 1, "one line: {stderr}");
        assert!(!table.exists(), "{case:?} wrote the table");
    }
}

/// What would fail a series at its end, or at its second report, fails it
/// before the first report is read: an output in a directory that does not
/// exist, a report of a later value that is not there.
#[test]
fn outputs_and_reports_are_checked_before_any_report_is_measured() {
    let dir = tempfile::tempdir().unwrap();
    // Any export will do: none is measured. The demo's is in the repository.
    let export = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/demo.sqlite");
    std::os::unix::fs::symlink(&export, dir.path().join("run_1.sqlite")).unwrap();
    let template = dir.path().join("run_$p.sqlite");
    let template = template.to_str().unwrap();
    let nodir = dir.path().join("nodir");
    let in_nodir = nodir.join("t.csv");
    let table = dir.path().join("t.csv");
    let cases: Vec<(Vec<&str>, i32, String)> = vec![
        (
            vec!["--values", "1", "-o", in_nodir.to_str().unwrap()],
            2,
            format!("directory {} does not exist", nodir.display()),
        ),
        (
            vec!["--values", "1,2", "-o", table.to_str().unwrap()],
            1,
            format!("cannot read {}", dir.path().join("run_2.sqlite").display()),
        ),
        (
            vec!["--values", "1,1", "-o", table.to_str().unwrap()],
            2,
            "p=1 is given twice".to_owned(),
        ),
    ];
    for (case, status, says) in cases {
        let out = Command::new(BIN)
            .args(["series", "--pattern", template, "--events", "cpush"])
            .args(&case)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{case:?}: {stderr}");
        assert!(stderr.contains(&says), "{case:?}: {stderr}");
        assert!(!stderr.contains("p=1: "), "nothing measured: {stderr}");
        assert!(!table.exists() && !nodir.exists());
    }
}

/// A pipe (or a device such as /dev/null) named by -o is written into, not
/// replaced by a file.
#[cfg(unix)]
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_pipe_as_output_is_written_into_and_stays_a_pipe() {
    use std::os::unix::fs::FileTypeExt;
    let Some(export) = crate::support::fixtures::fixture("cori_run1_report1.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("table.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = Command::new(BIN)
        .args(["series", "-q", "--param", "rank=0"])
        .arg(&export)
        .args(["--events", "cpush", "-o"])
        .arg(&fifo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Checked first: a reader of a pipe replaced by a file would wait forever.
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let table = reader.join().unwrap();
    assert!(table.starts_with("event,kind,rank=0 count"), "{table}");
}

#[test]
fn a_cancelled_series_stops_with_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.sqlite");
    let mut s = Synth::new(&path);
    let main = Thread { pid: 1, tid: 1 };
    s.process(1, "p");
    s.cudnn(main, 0..10, "cudnnConvolutionForward");
    s.finish();
    let options = ReadOptions::new().with_cancel(std::sync::Arc::new(
        std::sync::atomic::AtomicBool::new(true),
    ));
    let runs = [SeriesRun::new("1", &path)];
    let e = measure_series(
        "n",
        &runs,
        &patterns(&["cudnn:.*"]),
        RangeNames::Recorded,
        &options,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(e, nsys2perfetto::Error::Interrupted { .. }), "{e}");
}

/// `nvtx-gpu:.*` counts and sums the projections `nsys stats --report
/// nvtxgpuproj` lists, run here on each fixture with NVTX ranges and GPU work.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn nvtx_gpu_cells_equal_the_projections_of_nsys_stats() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    if require(Need::Nsys).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    let mut durations = Vec::new();
    for name in [
        "dlprof_nsys_profile",
        "h100_torch_graph_node",
        "llama3_real_inference_simulation",
        "memfusion_report1",
        // nsys-ai_h100_2gpu_1s too, where nsys takes 40 s: the SQL test covers it.
        "pipit_saxpy_mpi_cuda_rank0",
    ] {
        let export = shared.join(format!("fixtures/sqlite/{name}.sqlite"));
        // nsys writes tables of its own into the export: give it a copy.
        let copy = dir.path().join(format!("{name}.sqlite"));
        std::fs::copy(&export, &copy).unwrap();
        let mut permissions = std::fs::metadata(&copy).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        permissions.set_readonly(false);
        std::fs::set_permissions(&copy, permissions).unwrap();
        let out = Command::new("nsys")
            .args([
                "stats",
                "--report",
                "nvtxgpuproj",
                "--format",
                "csv",
                "--output",
                "-",
            ])
            .arg(&copy)
            .output()
            .unwrap();
        assert!(out.status.success(), "nsys stats on {name}");
        let text: String = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.starts_with("Processing"))
            .map(|l| format!("{l}\n"))
            .collect();
        let rows = crate::support::nsys::csv_rows(&text);
        let header = &rows[0];
        let column = header
            .iter()
            .position(|c| c == "Projected Duration (ns)")
            .unwrap_or_else(|| panic!("{name}: {header:?}"));
        let projected: Vec<i64> = rows[1..]
            .iter()
            .filter(|r| r.len() == header.len())
            .map(|r| r[column].parse().unwrap())
            .collect();
        assert!(!projected.is_empty(), "{name}: nsys projects nothing");
        durations.push(projected);
        runs.push(SeriesRun::new(name, export));
    }
    let series = measured("report", &runs, &patterns(&["nvtx-gpu:.*"])).unwrap();
    for ((cell, projected), run) in series.cells[0].iter().zip(durations).zip(&runs) {
        let got = Expected {
            count: cell.count,
            total: cell.total_ns,
            median: cell.median_ns,
        };
        assert_eq!(got, expected(projected), "{}", run.value);
    }
}

/// Issue 27.12: without runs, `series` says that one way of naming them is
/// needed (--param, or --pattern with --values), not that both are.
#[test]
fn a_series_without_runs_says_either_way_of_naming_them_will_do() {
    let out = crate::support::program::program()
        .args(["series", "--events", "kernel:."])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr,
        "nsys2perfetto: error: no runs: give --param NAME=VALUE REPORT for each run, \
         or --pattern TEMPLATE with --values V,...\n"
    );
}
