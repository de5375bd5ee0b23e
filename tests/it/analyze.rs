//! The findings of `analyze` against NVIDIA's: `nsys analyze` (2022.4, run
//! here on a copy of each fixture) and the stored outputs of nsys 2025.3
//! for the two H100 fixtures.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use nsys2perfetto::analyze::Place;
use nsys2perfetto::analyze::{analyze, Finding, Rule, Thresholds};
use nsys2perfetto::Report;

use crate::support::fixtures::{self, Need};
use crate::support::nsys::csv_rows;

/// A finding as both sides print it: start, duration, pid, and the thread
/// (API calls) or device (GPU work).
type Key = (i64, i64, u32, i64);

/// What [`analyze`] finds, all of it, in its order.
fn found_in(report: &Report, rules: &[Rule], thresholds: &Thresholds) -> Vec<Finding> {
    let findings = analyze(report, rules, thresholds).unwrap();
    let all = findings.to_vec().unwrap();
    assert_eq!(findings.len(), all.len());
    all
}

/// A row of NVIDIA's output, by column name.
struct Row(BTreeMap<String, String>);

impl Row {
    fn int(&self, column: &str) -> i64 {
        let v = self
            .0
            .get(column)
            .unwrap_or_else(|| panic!("no column {column:?} in {:?}", self.0));
        v.parse()
            .unwrap_or_else(|_| panic!("{column} = {v:?} is not an integer"))
    }

    fn key(&self, rule: Rule) -> Key {
        let place = match rule {
            Rule::CudaApiSync => self.int("TID"),
            _ => self.int("Device ID"),
        };
        (
            self.int("Start (ns)"),
            self.int("Duration (ns)"),
            self.int("PID") as u32,
            place,
        )
    }
}

/// The rows of a CSV that NVIDIA's tools wrote (lines before the header,
/// such as "Processing [...]", skipped).
fn nvidia_rows(text: &str) -> Vec<Row> {
    let rows = csv_rows(text);
    let Some(at) = rows
        .iter()
        .position(|r| r.iter().any(|c| c == "Duration (ns)"))
    else {
        return Vec::new();
    };
    let header = &rows[at];
    rows[at + 1..]
        .iter()
        .filter(|r| r.len() == header.len())
        .map(|r| Row(header.iter().cloned().zip(r.iter().cloned()).collect()))
        .collect()
}

fn key(f: &Finding) -> Key {
    let (pid, place) = match f.place {
        Place::Thread { pid, tid } => (pid, i64::from(tid)),
        Place::Gpu { pid, device, .. } => (pid.expect("GPU findings name a process"), device),
    };
    (f.start, f.duration, pid, place)
}

/// Runs `nsys analyze` (2022.4 names its rules differently) on `export`,
/// every finding (no row limit), with the rule's `options` (`gap=10`).
fn nsys_analyze(export: &Path, rule: Rule, options: &str) -> Vec<Row> {
    let out = Command::new("nsys")
        .args(["analyze", "--format", "csv", "-o", "-", "--rule"])
        .arg(format!("{}:rows=-1{options}", rule.legacy_name()))
        .arg(export)
        .output()
        .expect("nsys runs");
    assert!(
        out.status.success(),
        "nsys analyze {} {}: {}",
        rule.legacy_name(),
        export.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    nvidia_rows(&String::from_utf8_lossy(&out.stdout))
}

/// Compares our findings of `rule` with NVIDIA's `rows`: the same findings
/// (start, duration, process, thread or device), and for utilization the
/// same percentage. Returns how many there were.
fn compare(what: &str, rule: Rule, ours: &[Finding], rows: &[Row]) -> usize {
    let mut theirs: Vec<Key> = rows.iter().map(|r| r.key(rule)).collect();
    if matches!(
        rule,
        Rule::CudaMemcpySync | Rule::CudaMemsetSync | Rule::CudaMemcpyAsync
    ) {
        // nsys 2022.4 lists an operation once per runtime row of its
        // correlationId, backtrace records included: one operation, one finding.
        theirs.sort_unstable();
        theirs.dedup();
    }
    let mut mine: Vec<Key> = ours.iter().filter(|f| f.rule == rule).map(key).collect();
    theirs.sort_unstable();
    mine.sort_unstable();
    assert_eq!(
        mine, theirs,
        "{what}: {rule}: ours (left) and NVIDIA's (right) differ"
    );
    if rule == Rule::GpuTimeUtil {
        for row in rows {
            let k = row.key(rule);
            let f = ours
                .iter()
                .find(|f| f.rule == rule && key(f) == k)
                .expect("matched above");
            let theirs: f64 = row.0["In-Use (%)"].parse().expect("a percentage");
            let mine = f.in_use_percent.expect("utilization findings have one");
            assert!(
                (mine - theirs).abs() < 0.051,
                "{what}: chunk at {}: {mine}% in use, nsys says {theirs}%",
                k.0
            );
        }
    }
    mine.len()
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn findings_equal_those_of_nsys_2022_4() {
    let Some(files) = fixtures::all() else { return };
    if fixtures::require(Need::Nsys).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut found: BTreeMap<Rule, usize> = BTreeMap::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        // nsys may write beside its input; the fixtures stay untouched.
        let copy = dir.path().join(&name);
        std::fs::copy(file, &copy).unwrap();
        let report = Report::open(file).unwrap();
        let ours = found_in(&report, &Rule::ALL, &Thresholds::default());
        for rule in Rule::ALL {
            let rows = nsys_analyze(&copy, rule, "");
            *found.entry(rule).or_default() += compare(&name, rule, &ours, &rows);
        }
    }
    eprintln!("findings per rule: {found:?}");
    // Every rule but the synchronous memset finds something in the fixtures:
    // the comparison compared findings, not only empty lists.
    for rule in Rule::ALL {
        if rule != Rule::CudaMemsetSync {
            assert!(found[&rule] > 0, "{rule}: nothing found in any fixture");
        }
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn gaps_and_utilization_equal_those_of_nsys_with_other_thresholds() {
    let Some(files) = fixtures::all() else { return };
    if fixtures::require(Need::Nsys).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut thresholds = Thresholds::default();
    thresholds.gap_ns = 1_000_000;
    thresholds.util_percent = 80;
    thresholds.util_chunks = 97;
    let rules = [Rule::GpuGaps, Rule::GpuTimeUtil];
    let mut found = [0; 2];
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let copy = dir.path().join(&name);
        std::fs::copy(file, &copy).unwrap();
        let ours = found_in(&Report::open(file).unwrap(), &rules, &thresholds);
        let rows = nsys_analyze(&copy, Rule::GpuGaps, ":gap=1");
        found[0] += compare(&name, Rule::GpuGaps, &ours, &rows);
        let rows = nsys_analyze(&copy, Rule::GpuTimeUtil, ":threshold=80:chunks=97");
        found[1] += compare(&name, Rule::GpuTimeUtil, &ours, &rows);
    }
    eprintln!("gaps over 1 ms, chunks below 80% of 97: {found:?}");
    assert!(found[0] > 100 && found[1] > 10, "{found:?}");
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn findings_equal_those_of_nsys_2025_3_on_the_h100_fixtures() {
    let Some(shared) = fixtures::require(Need::Shared) else {
        return;
    };
    let stored = shared.join("fixtures/nsys-2025.3-stats");
    for name in ["h100_torch_graph_node", "h100_torch_graph_whole"] {
        let file = shared.join(format!("fixtures/sqlite/{name}.sqlite"));
        let report = Report::open(&file).unwrap();
        let ours = found_in(&report, &Rule::ALL, &Thresholds::default());
        for rule in Rule::ALL {
            let csv = stored.join(format!("{name}_{}.csv", rule.name()));
            let text =
                std::fs::read_to_string(&csv).unwrap_or_else(|e| panic!("{}: {e}", csv.display()));
            let rows = nvidia_rows(&text);
            // The stored outputs hold nsys's default 50 rows at most: the
            // 50 longest (for utilization, the lowest) of ours are those.
            let mut mine: Vec<Finding> = ours.iter().filter(|f| f.rule == rule).cloned().collect();
            let all = mine.len();
            mine.truncate(50);
            if rows.len() == 50 {
                assert!(all >= 50, "{name}: {rule}: nsys lists 50, we find {all}");
                // Findings of equal duration at the cut may be either side's.
                let cut = mine[49].duration;
                let keep = |k: &Key| k.1 > cut;
                let theirs: Vec<Key> = rows.iter().map(|r| r.key(rule)).filter(keep).collect();
                let mine: Vec<Key> = mine.iter().map(key).filter(keep).collect();
                let (mut theirs, mut mine) = (theirs, mine);
                theirs.sort_unstable();
                mine.sort_unstable();
                assert_eq!(mine, theirs, "{name}: {rule}");
            } else {
                compare(name, rule, &mine, &rows);
            }
        }
    }
}

/// A finding slice as the trace holds it: rule, start, duration, and the
/// correlation ids in its args.
type Written = (String, u64, u64, Vec<i64>);

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn convert_with_findings_writes_each_finding_in_an_analysis_group() {
    use crate::support::checker::Value;
    // Findings of every rule that finds something in the fixtures: pageable
    // copies, synchronizations, gaps and low use; synchronous copies; two
    // processes, with findings of both.
    for name in [
        "h100_torch_graph_node.sqlite",
        "pipit_saxpy_mpi_cuda_rank0.sqlite",
        "abacus_report1.sqlite",
        "nsys-ai_h100_2gpu_1s.sqlite",
    ] {
        let Some(file) = fixtures::fixture(name) else {
            return;
        };
        let mut options = nsys2perfetto::Options::default();
        options.findings = Some(Thresholds::default());
        let (with, summary) = crate::support::convert::convert(&file, &options);
        assert!(with.errors.is_empty(), "{name}: {:?}", with.errors);
        let converted = crate::support::converted::converted(&file);
        let (without, _) = (&converted.trace, &converted.summary);

        let report = Report::open(&file).unwrap();
        let found = found_in(&report, &Rule::ALL, &Thresholds::default());
        let mut expected: Vec<Written> = found
            .iter()
            .map(|f| {
                let ids = match f.gap_between {
                    Some([before, after]) => before.into_iter().chain(after).collect(),
                    None => f.correlation_ids.clone(),
                };
                let rule = f.rule.name().to_owned();
                (rule, f.start as u64, f.duration as u64, ids)
            })
            .collect();
        // A rule with findings of several processes has a track per process,
        // named with it; otherwise a track named after the rule.
        let mut pids: BTreeMap<&str, std::collections::BTreeSet<u32>> = BTreeMap::new();
        for f in &found {
            let pid = match f.place {
                Place::Thread { pid, .. } => Some(pid),
                Place::Gpu { pid, .. } => pid,
            };
            pids.entry(f.rule.name()).or_default().extend(pid);
        }
        let mut named_by_process = 0;
        let mut written: Vec<Written> = Vec::new();
        for s in with.slices.iter().filter(|s| s.category == "finding") {
            let (Some(Value::Str(rule)), Some(Value::Int(pid))) =
                (s.args.get("rule"), s.args.get("pid"))
            else {
                panic!("{name}: a finding without its rule or pid: {s:?}");
            };
            let title = Rule::ALL.iter().find(|r| r.name() == rule).unwrap().title();
            let track = with.tracks[&s.track].name.clone().unwrap_or_default();
            match pids[rule.as_str()].len() > 1 {
                true => {
                    assert!(
                        track.starts_with(&format!("{title}: "))
                            && track.ends_with(&format!("({pid})")),
                        "{name}: {track:?}"
                    );
                    named_by_process += 1;
                }
                false => assert_eq!(track, title, "{name}"),
            }
            let Some(Value::Str(rule)) = s.args.get("rule") else {
                panic!("{name}: a finding without its rule: {s:?}");
            };
            let ids = [
                "correlation_id",
                "correlation_id_before",
                "correlation_id_after",
            ]
            .iter()
            .filter_map(|k| match s.args.get(*k) {
                Some(Value::Int(id)) => Some(*id),
                Some(other) => panic!("{name}: {k} = {other:?}"),
                None => None,
            })
            .collect();
            written.push((rule.clone(), s.ts, s.dur, ids));
            // Under the top-level "Analysis" group.
            let mut track = &with.tracks[&s.track];
            while let Some(parent) = track.parent {
                track = &with.tracks[&parent];
            }
            assert_eq!(track.name.as_deref(), Some("Analysis"), "{name}: {s:?}");
        }
        expected.sort();
        written.sort();
        assert!(expected.len() > 2, "{name}: {} findings", expected.len());
        assert_eq!(written, expected, "{name}: the trace's findings");
        assert_eq!(summary.slices["finding"], expected.len() as u64);

        // The rest of the trace is the trace without findings.
        let rest = |c: &crate::support::checker::Checked| {
            let mut v: Vec<(u64, u64, String, String)> = c
                .slices
                .iter()
                .filter(|s| s.category != "finding")
                .map(|s| (s.ts, s.dur, s.name.clone(), s.category.clone()))
                .collect();
            v.sort();
            v
        };
        assert_eq!(rest(&with), rest(without), "{name}");
        assert!(without.slices.iter().all(|s| s.category != "finding"));
        if name.starts_with("nsys-ai_h100_2gpu") {
            assert!(
                named_by_process > 0,
                "{name}: no track named with its process"
            );
        }
    }
}

/// Runs the command line with `args`: (status, stdout, stderr).
fn cli(args: &[&str]) -> (Option<i32>, String, String) {
    let out = crate::support::program::program()
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_analyze_command_prints_every_finding_and_refuses_bad_input_in_one_line() {
    let Some(file) = fixtures::fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let path = file.to_str().unwrap();
    let found = found_in(
        &Report::open(&file).unwrap(),
        &Rule::ALL,
        &Thresholds::default(),
    );

    let (status, stdout, _) = cli(&["analyze", path, "--format", "csv", "--rows", "0"]);
    assert_eq!(status, Some(0));
    // One table, alone: its header first.
    assert!(stdout.starts_with("Rule,Start (ns),"), "{stdout}");
    let rows = csv_rows(&stdout);
    assert_eq!(rows[0][..3], ["Rule", "Start (ns)", "Duration (ns)"]);
    assert_eq!(rows.len() - 1, found.len());
    for (row, f) in rows[1..].iter().zip(&found) {
        assert_eq!(row[0], f.rule.name());
        assert_eq!(row[1], f.start.to_string());
        assert_eq!(row[2], f.duration.to_string());
    }
    // The same into a file.
    let dir = tempfile::tempdir().unwrap();
    let written = dir.path().join("findings.csv");
    let to_file = [
        "--format",
        "csv",
        "--rows",
        "0",
        "-o",
        written.to_str().unwrap(),
    ];
    let (status, nothing, stderr) = cli(&[&["analyze", path][..], &to_file].concat());
    assert_eq!(status, Some(0), "{stderr}");
    assert!(nothing.is_empty());
    assert_eq!(std::fs::read_to_string(&written).unwrap(), stdout);

    // The default: a table per rule, nsys's 50 rows at most.
    let (status, stdout, _) = cli(&["analyze", path, "--rule", "cuda-sync-api,gpu_gaps"]);
    assert_eq!(status, Some(0));
    let syncs = found.iter().filter(|f| f.rule == Rule::CudaApiSync).count();
    assert!(syncs > 50);
    assert!(
        stdout.contains(&format!("... and {} more", syncs - 50)),
        "{stdout}"
    );
    assert!(
        stdout.contains("GPU gaps (gpu_gaps)\n  Duration (ns)"),
        "{stdout}"
    );
    assert!(!stdout.contains("gpu_time_util"));

    let (status, stdout, _) = cli(&["analyze", path, "--rule", "gpu_gaps", "--format", "json"]);
    assert_eq!(status, Some(0));
    let gap = found.iter().find(|f| f.rule == Rule::GpuGaps).unwrap();
    // As stats writes its summaries: an object per rule on a line of its own.
    assert!(
        stdout.starts_with(&format!(
            "{{\"table\":\"gpu_gaps\",\"title\":\"GPU gaps\",\"files\":[\"{path}\"],\"rows\":[{{"
        )),
        "{stdout}"
    );
    assert_eq!(stdout.lines().count(), 1);
    assert!(
        stdout.contains(&format!(
            "{{\"duration_ns\":{},\"start_ns\":{},\"pid\":",
            gap.duration, gap.start
        )),
        "{stdout}"
    );

    let (status, _, stderr) = cli(&["analyze", path, "--rule", "gpu_idle"]);
    assert_eq!(status, Some(2), "{stderr}");
    let (status, _, stderr) = cli(&["analyze", path, "--chunks", "0"]);
    assert_eq!(status, Some(2), "{stderr}");
    let not_an_export = dir.path().join("notes.sqlite");
    std::fs::write(&not_an_export, "not a database").unwrap();
    for input in [not_an_export, dir.path().join("absent.sqlite")] {
        let (status, stdout, stderr) = cli(&["analyze", input.to_str().unwrap()]);
        assert_eq!(status, Some(1), "{stderr}");
        assert!(stdout.is_empty());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("nsys2perfetto: error: "), "{stderr}");
    }
}

/// `--rows -1` is nsys's "all rows", as `--rows 0` is ours; a threshold
/// beyond 100 percent is refused in one line before anything is read.
#[test]
fn rows_minus_one_means_all_and_the_threshold_is_a_percentage() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/demo.sqlite");
    let demo = demo.to_str().unwrap();
    let (status, all, stderr) = cli(&["analyze", demo, "--format", "csv", "--rows", "0"]);
    assert_eq!(status, Some(0), "{stderr}");
    assert!(all.lines().count() > 2, "the demo has findings: {all}");
    let (status, minus_one, stderr) = cli(&["analyze", demo, "--format", "csv", "--rows", "-1"]);
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(minus_one, all);
    let (status, _, stderr) = cli(&["analyze", demo, "--rows", "-2"]);
    assert_eq!(status, Some(2), "{stderr}");
    for threshold in ["101", "150"] {
        let (status, stdout, stderr) = cli(&["analyze", demo, "--util-threshold", threshold]);
        assert_eq!(status, Some(2), "{stderr}");
        assert!(stdout.is_empty());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("nsys2perfetto: error: "), "{stderr}");
        assert!(stderr.contains("0..=100"), "{stderr}");
    }
    let (status, _, stderr) = cli(&["analyze", demo, "--util-threshold", "100"]);
    assert_eq!(status, Some(0), "{stderr}");
}

/// An export with kernels of process 42 (`(start, end, device, stream,
/// correlationId)`) and profiler overhead on one of its threads (`(start,
/// end, name)`): nsys analyze reads no more than these tables.
fn export_with_overhead(
    path: &Path,
    kernels: &[(i64, i64, i64, i64, i64)],
    overhead: &[(i64, i64, &str)],
) {
    let db = rusqlite::Connection::open(path).unwrap();
    db.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER,
             contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
             shortName INTEGER, graphNodeId INTEGER);
         CREATE TABLE PROFILER_OVERHEAD (start INTEGER, end INTEGER, globalTid INTEGER, nameId INTEGER);
         INSERT INTO StringIds VALUES (1, 'kernel');",
    )
    .unwrap();
    let pid = (1i64 << 48) | (42 << 24);
    for &(start, end, device, stream, corr) in kernels {
        db.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, 1, NULL)",
            [start, end, device, stream, corr, pid],
        )
        .unwrap();
    }
    for (i, &(start, end, name)) in overhead.iter().enumerate() {
        let id = 10 + i as i64;
        db.execute(
            "INSERT INTO StringIds VALUES (?1, ?2)",
            rusqlite::params![id, name],
        )
        .unwrap();
        db.execute(
            "INSERT INTO PROFILER_OVERHEAD VALUES (?1, ?2, ?3, ?4)",
            [start, end, pid | 43, id],
        )
        .unwrap();
    }
}

#[test]
fn profiler_overhead_counts_as_gpu_work_as_in_nsys() {
    if fixtures::require(Need::Nsys).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ms = 1_000_000;
    let flush = "CUDA profiling data flush overhead";
    // One device. Overhead within the work's range fills part of the gaps
    // and counts in utilization; a zero-length one splits a gap; others
    // (another name, or starting before the range) do not count.
    let one = dir.path().join("one_device.sqlite");
    export_with_overhead(
        &one,
        &[
            (1000 * ms, 1100 * ms, 0, 7, 1),
            (3000 * ms, 3100 * ms, 0, 7, 2),
            (3050 * ms, 3900 * ms, 0, 8, 3),
            (6000 * ms, 6000 * ms + 1, 0, 7, 4),
        ],
        &[
            (2000 * ms, 2400 * ms, flush),
            (4500 * ms, 4500 * ms, "CUDA profiling stop overhead"),
            (5000 * ms, 5400 * ms, "Other overhead"),
            (900 * ms, 1050 * ms, flush),
        ],
    );
    let mut thresholds = Thresholds::default();
    thresholds.util_chunks = 11;
    thresholds.util_percent = 60;
    let rules = [Rule::GpuGaps, Rule::GpuTimeUtil];
    let ours = found_in(&Report::open(&one).unwrap(), &rules, &thresholds);
    let gaps = compare(
        "one device",
        Rule::GpuGaps,
        &ours,
        &nsys_analyze(&one, Rule::GpuGaps, ""),
    );
    let rows = nsys_analyze(&one, Rule::GpuTimeUtil, ":chunks=11:threshold=60");
    let low = compare("one device", Rule::GpuTimeUtil, &ours, &rows);
    assert_eq!((gaps, low), (4, 3));

    // Two devices: overhead counts on each device of its process.
    let two = dir.path().join("two_devices.sqlite");
    export_with_overhead(
        &two,
        &[
            (1000 * ms, 1100 * ms, 0, 7, 1),
            (3000 * ms, 3100 * ms, 0, 7, 2),
            (3200 * ms, 3300 * ms, 1, 7, 3),
            (5000 * ms, 5100 * ms, 1, 7, 4),
        ],
        &[(2000 * ms, 2100 * ms, flush), (4000 * ms, 4000 * ms, flush)],
    );
    let ours = found_in(&Report::open(&two).unwrap(), &[Rule::GpuGaps], &thresholds);
    let rows = nsys_analyze(&two, Rule::GpuGaps, "");
    assert_eq!(compare("two devices", Rule::GpuGaps, &ours, &rows), 4);
}

/// A rule whose tables the export lacks says it was skipped and why, as
/// nsys does ("SKIPPED: ... does not contain the required CUDA data"), in
/// every format; so does a summary of `stats` with no rows for that reason.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn rules_without_their_data_are_skipped_with_the_reason_in_every_format() {
    let (Some(node), Some(empty)) = (
        fixtures::fixture("h100_torch_graph_node.sqlite"),
        fixtures::fixture("kmeans_report1.sqlite"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("no_runtime.sqlite");
    std::fs::copy(&node, &copy).unwrap();
    rusqlite::Connection::open(&copy)
        .unwrap()
        .execute_batch("DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME")
        .unwrap();
    let path = copy.to_str().unwrap();
    let no_calls = "the export has no CUPTI_ACTIVITY_KIND_RUNTIME";
    let call_rules = [
        "cuda_memcpy_sync",
        "cuda_memset_sync",
        "cuda_memcpy_async",
        "cuda_api_sync",
    ];
    let (status, table, _) = cli(&["analyze", path]);
    assert_eq!(status, Some(0));
    // Each rule's lines: its heading to the next blank line.
    let section = |text: &str, rule: &str| -> String {
        let heading = format!("({rule})");
        let at = text
            .find(&heading)
            .unwrap_or_else(|| panic!("{rule}: {text}"));
        text[at..].split("\n\n").next().unwrap().to_owned()
    };
    for rule in call_rules {
        let lines = section(&table, rule);
        assert!(lines.contains(&format!("SKIPPED: {no_calls}")), "{lines}");
    }
    assert!(!section(&table, "gpu_gaps").contains("SKIPPED"), "{table}");

    let (_, csv, _) = cli(&["analyze", path, "--format", "csv"]);
    let rows = csv_rows(&crate::support::nsys::unmarked(&csv));
    let skipped = rows[0].iter().position(|c| c == "Skipped").unwrap();
    let skipped_rules: Vec<&str> = rows[1..]
        .iter()
        .filter(|r| !r[skipped].is_empty())
        .map(|r| r[0].as_str())
        .collect();
    assert_eq!(skipped_rules, call_rules, "{csv}");
    assert!(rows[1..5].iter().all(|r| r[skipped].starts_with(no_calls)));

    let (_, json, _) = cli(&[
        "analyze",
        path,
        "--format",
        "json",
        "--rule",
        "cuda_api_sync",
    ]);
    assert!(
        json.starts_with("{\"table\":\"cuda_api_sync\",")
            && json.ends_with(&format!("\"rows\":[],\"skipped\":\"{no_calls}\"}}\n")),
        "{json}"
    );

    let (_, stats, _) = cli(&["stats", path, "--report", "cuda_api_sum"]);
    assert!(stats.contains(&format!("(no data: {no_calls})")), "{stats}");
    let (_, stats, _) = cli(&[
        "stats",
        path,
        "--report",
        "cuda_api_sum",
        "--format",
        "json",
    ]);
    assert!(
        stats.ends_with(&format!("\"rows\":[],\"skipped\":\"{no_calls}\"}}\n")),
        "{stats}"
    );

    // No CUDA table at all: every rule skipped, none "found nothing".
    let (status, table, _) = cli(&["analyze", empty.to_str().unwrap()]);
    assert_eq!(status, Some(0));
    assert_eq!(
        table.matches("SKIPPED: the export has no").count(),
        6,
        "{table}"
    );
    assert!(!table.contains("nothing found"), "{table}");
    assert!(table.contains(
        "SKIPPED: the export has none of CUPTI_ACTIVITY_KIND_KERNEL, \
         CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET"
    ));
}

/// `--gap` takes a time with its unit, as `--time` does (a bare number is
/// milliseconds, as for nsys): on kernels whose gaps are known, each
/// threshold finds exactly the gaps longer than it.
#[test]
fn the_gap_threshold_takes_units() {
    let dir = tempfile::tempdir().unwrap();
    let us = 1_000;
    // Gaps of 400 us, 1.2 ms, 1.6 ms and 3 ms between five kernels.
    let gaps = [400 * us, 1_200 * us, 1_600 * us, 3_000 * us];
    let mut kernels = Vec::new();
    let mut at = 1_000_000_000;
    for (i, gap) in gaps.iter().chain([&0]).enumerate() {
        kernels.push((at, at + 100 * us, 0, 7, i as i64 + 1));
        at += 100 * us + gap;
    }
    let export = dir.path().join("gaps.sqlite");
    export_with_overhead(&export, &kernels, &[]);
    let export = export.to_str().unwrap();
    for (gap, threshold_ns) in [
        ("1.5ms", 1_500_000),
        ("1ms", 1_000_000),
        ("1000us", 1_000_000),
        ("300us", 300_000),
        ("0.002s", 2_000_000),
        ("0", 0),
    ] {
        let args = [
            "analyze", export, "--rule", "gpu_gaps", "--format", "csv", "--gap", gap,
        ];
        let (status, stdout, stderr) = cli(&args);
        assert_eq!(status, Some(0), "--gap {gap}: {stderr}");
        let found = stdout.lines().skip(1).filter(|l| !l.is_empty()).count();
        let expected = gaps.iter().filter(|g| **g > threshold_ns).count();
        assert_eq!(found, expected, "--gap {gap}: {stdout}");
    }
    for bad in ["1.5 min", "x", "-1ms", "1", "500"] {
        let (status, _, stderr) = cli(&["analyze", export, "--gap", bad]);
        assert_eq!(status, Some(2), "--gap {bad}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    // Issue 27.12: a bare number is refused (nsys's gap= is in ms, --time's
    // sides were in ns), the error saying how to write it.
    let (_, _, stderr) = cli(&["analyze", export, "--gap", "500"]);
    assert!(
        stderr.contains("'500' has no unit: write 500ns, 500us, 500ms or 500s"),
        "{stderr}"
    );
}

/// Issue 27.7: JSON and CSV cut to `--rows` findings per rule say how many
/// more each rule found (JSON in the rule's `more_rows`, CSV on standard
/// error), as the tables do under each rule.
#[test]
fn findings_left_out_by_the_row_limit_are_counted() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/demo.sqlite");
    let demo = demo.to_str().unwrap();
    let (status, all, _) = cli(&["analyze", demo, "--format", "csv", "--rows", "0"]);
    assert_eq!(status, Some(0));
    let mut found: BTreeMap<String, usize> = BTreeMap::new();
    for row in &csv_rows(&all)[1..] {
        if row[15].is_empty() {
            *found.entry(row[0].clone()).or_default() += 1;
        }
    }
    let limit = 2;
    assert!(found.values().any(|&n| n > limit), "{found:?}");
    let (status, json, _) = cli(&["analyze", demo, "--format", "json", "--rows", "2"]);
    assert_eq!(status, Some(0));
    for line in json.lines() {
        let rule = line
            .strip_prefix("{\"table\":\"")
            .and_then(|l| l.split('"').next())
            .unwrap();
        let more = found.get(rule).map_or(0, |&n| n.saturating_sub(limit));
        match more {
            0 => assert!(!line.contains("more_rows"), "{line}"),
            n => assert!(line.contains(&format!("],\"more_rows\":{n}")), "{line}"),
        }
    }
    let (status, _, stderr) = cli(&["analyze", demo, "--format", "csv", "--rows", "2"]);
    assert_eq!(status, Some(0));
    for (rule, &n) in &found {
        if n > limit {
            assert!(
                stderr.contains(&format!("{} more of {rule}", n - limit)),
                "{stderr}"
            );
        }
    }
}

/// Issue 27.12: `analyze --help` states each default once (clap's
/// `[default: ...]`, not again in the text).
#[test]
fn the_help_states_each_default_once() {
    let (status, help, _) = cli(&["analyze", "--help"]);
    assert_eq!(status, Some(0));
    assert_eq!(help.matches("500ms]").count(), 1, "{help}");
    assert!(!help.contains("(default: 500ms)"), "{help}");
    // No default said in the text is said again by clap.
    for (at, _) in help.match_indices("(default: ") {
        let said = help[at + 10..].split(')').next().unwrap();
        assert!(!help.contains(&format!("[default: {said}]")), "{help}");
    }
}
