//! Damaged exports: copies of real exports, damaged the ways exports get
//! damaged (flipped bytes, a cut-off file, NULLs and values of the wrong type
//! in event columns, negative or huge times, ends before starts, string ids
//! that point nowhere, dropped columns and tables, duplicated rows), each run
//! through `convert`, `stats` and `analyze`.
//!
//! Every run must end, within [`TIME_LIMIT`], in one of two ways: success, or
//! a one-line `nsys2perfetto: error:` (after any warnings), never a panic; it
//! leaves nothing in the output directory but the finished trace, and a trace
//! it writes loads in trace_processor without an error.
//!
//! The damage is drawn from a fixed seed, so every run tries the same cases;
//! the copies live in temporary directories. demo/demo.sqlite is always here;
//! the other exports come from ../shared (skipped without it, failing in CI).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::support::fixtures;
use crate::support::program::BIN;
use rusqlite::Connection;

/// A run that takes longer hangs.
const TIME_LIMIT: Duration = Duration::from_secs(60);

/// The exports damaged: small ones with many kinds of events between them
/// (CUDA and NVTX; graphs, CUDA events, memsets and diagnostics; OS runtime
/// calls, CPU samples, context switches and composite events).
const IN_REPO: &str = "demo/demo.sqlite";
const FIXTURES: [&str; 2] = ["h100_torch_graph_whole.sqlite", "nvtx_c_full.sqlite"];

/// Cases with a test of their own, by name: the main test leaves them out.
const OWN_TESTS: &[&str] = &[
    "demo/OverflowingSpans",
    "h100_torch_graph_whole/OverflowingSpans",
];

/// A small PRNG (SplitMix64): the damage is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The ways an export is damaged, one case each per export.
#[derive(Clone, Copy, Debug)]
enum Damage {
    /// Bytes flipped at random places past the first page.
    FlippedBytes,
    /// Bytes flipped in the first page: the header and the schema.
    FlippedFirstPage,
    /// The file cut off part way.
    CutOff,
    /// NULLs in event columns.
    Nulls,
    /// Text where numbers belong.
    Text,
    /// Blobs where numbers belong.
    Blobs,
    /// Reals where integers belong.
    Reals,
    /// Starts (and ends) far below zero.
    NegativeTimes,
    /// Times near the top of i64.
    HugeTimes,
    /// Ends before starts.
    EndBeforeStart,
    /// String ids that are not in StringIds.
    DanglingStringIds,
    /// A column of an event table gone.
    DroppedColumn,
    /// Tables gone.
    DroppedTables,
    /// Every row of the event tables twice.
    DuplicatedRows,
    /// Starts near the bottom of i64 and ends near the top: durations
    /// that overflow i64.
    OverflowingSpans,
}

const DAMAGES: [Damage; 15] = [
    Damage::FlippedBytes,
    Damage::FlippedFirstPage,
    Damage::CutOff,
    Damage::Nulls,
    Damage::Text,
    Damage::Blobs,
    Damage::Reals,
    Damage::NegativeTimes,
    Damage::HugeTimes,
    Damage::EndBeforeStart,
    Damage::DanglingStringIds,
    Damage::DroppedColumn,
    Damage::DroppedTables,
    Damage::DuplicatedRows,
    Damage::OverflowingSpans,
];

/// Columns that hold ids of StringIds rows.
const STRING_ID_COLUMNS: &[&str] = &[
    "nameId",
    "shortName",
    "demangledName",
    "mangledName",
    "textId",
    "jsonTextId",
    "symbol",
    "module",
];

/// What an export holds: its tables with rows, and their columns.
struct Schema {
    tables: Vec<(String, Vec<String>)>,
}

impl Schema {
    fn of(conn: &Connection) -> Schema {
        let names: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut tables = Vec::new();
        for name in names {
            let rows: i64 = conn
                .query_row(&format!("SELECT COUNT(*) FROM \"{name}\""), [], |r| {
                    r.get(0)
                })
                .unwrap();
            if rows == 0 {
                continue;
            }
            let columns: Vec<String> = conn
                .prepare(&format!("SELECT name FROM pragma_table_info('{name}')"))
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            tables.push((name, columns));
        }
        Schema { tables }
    }

    /// Tables of events: those with a start time.
    fn event_tables(&self) -> Vec<&(String, Vec<String>)> {
        self.tables
            .iter()
            .filter(|(_, columns)| columns.iter().any(|c| c == "start"))
            .collect()
    }

    /// (table, column) of every column of an event table.
    fn event_columns(&self) -> Vec<(String, String)> {
        self.event_tables()
            .into_iter()
            .flat_map(|(t, columns)| columns.iter().map(move |c| (t.clone(), c.clone())))
            .collect()
    }

    /// (table, column) of every column that holds string ids.
    fn string_id_columns(&self) -> Vec<(String, String)> {
        self.tables
            .iter()
            .flat_map(|(t, columns)| columns.iter().map(move |c| (t.clone(), c.clone())))
            .filter(|(_, c)| STRING_ID_COLUMNS.contains(&c.as_str()))
            .collect()
    }
}

/// One damaged copy: what was done to which export.
struct Case {
    name: String,
    description: String,
    _dir: tempfile::TempDir,
    input: PathBuf,
}

/// Rows of a table chosen by the seed: about one in `every`.
fn some_rows(rng: &mut Rng, every: usize) -> String {
    format!("rowid % {every} = {}", rng.below(every))
}

/// Re-creates `table` without its constraints (NOT NULL, PRIMARY KEY), so that
/// any value fits in it, as in an export written by a careless tool.
fn loosen(conn: &Connection, table: &str) {
    conn.execute_batch(&format!(
        "CREATE TABLE damaged_copy AS SELECT * FROM \"{table}\";
         DROP TABLE \"{table}\";
         ALTER TABLE damaged_copy RENAME TO \"{table}\";"
    ))
    .unwrap_or_else(|e| panic!("loosening {table}: {e}"));
}

/// Sets `value` (SQL) in `column` of some rows of `table`.
fn set_some(conn: &Connection, rng: &mut Rng, table: &str, column: &str, value: &str) -> String {
    loosen(conn, table);
    let rows = some_rows(rng, 5);
    conn.execute(
        &format!("UPDATE \"{table}\" SET \"{column}\" = {value} WHERE {rows}"),
        [],
    )
    .unwrap_or_else(|e| panic!("{table}.{column}: {e}"));
    format!("{table}.{column} = {value} where {rows}")
}

/// Damages the file at `path` (a copy) in the way `damage` says, with the
/// details drawn from `rng`; says what it did.
fn damage_file(path: &Path, damage: Damage, rng: &mut Rng) -> String {
    match damage {
        Damage::FlippedBytes | Damage::FlippedFirstPage | Damage::CutOff => {
            let mut bytes = std::fs::read(path).unwrap();
            let page = 4096.min(bytes.len());
            let what = match damage {
                Damage::CutOff => {
                    let keep = page + rng.below(bytes.len() - page);
                    bytes.truncate(keep);
                    format!("cut off after {keep} bytes")
                }
                _ => {
                    let (from, count) = match damage {
                        Damage::FlippedFirstPage => (0, 4),
                        _ => (page, 32),
                    };
                    let mut at = Vec::new();
                    for _ in 0..count {
                        let i = from + rng.below(bytes.len() - from);
                        bytes[i] ^= 1 << rng.below(8);
                        at.push(i);
                    }
                    format!("bits flipped at bytes {at:?}")
                }
            };
            std::fs::write(path, bytes).unwrap();
            what
        }
        _ => {
            let conn = Connection::open(path).unwrap();
            let schema = Schema::of(&conn);
            let what = damage_rows(&conn, &schema, damage, rng);
            conn.close().map_err(|(_, e)| e).unwrap();
            what
        }
    }
}

/// [`damage_file`] for the damage done with SQL.
fn damage_rows(conn: &Connection, schema: &Schema, damage: Damage, rng: &mut Rng) -> String {
    let event_columns = schema.event_columns();
    let event_tables: Vec<String> = schema
        .event_tables()
        .iter()
        .map(|(t, _)| t.clone())
        .collect();
    // Three columns of event tables, for the damage to values.
    let three_columns = |rng: &mut Rng| -> Vec<(String, String)> {
        (0..3).map(|_| rng.pick(&event_columns).clone()).collect()
    };
    let mut done = Vec::new();
    match damage {
        Damage::Nulls | Damage::Text | Damage::Blobs | Damage::Reals => {
            let value = match damage {
                Damage::Nulls => "NULL",
                Damage::Text => "'damaged'",
                Damage::Blobs => "X'00ff7f80'",
                _ => "1.5e3",
            };
            for (table, column) in three_columns(rng) {
                done.push(set_some(conn, rng, &table, &column, value));
            }
        }
        Damage::NegativeTimes
        | Damage::HugeTimes
        | Damage::EndBeforeStart
        | Damage::OverflowingSpans => {
            let with_end: Vec<String> = schema
                .event_tables()
                .iter()
                .filter(|(_, c)| c.iter().any(|c| c == "end"))
                .map(|(t, _)| t.clone())
                .collect();
            for _ in 0..2 {
                let table = match damage {
                    Damage::EndBeforeStart | Damage::OverflowingSpans => {
                        rng.pick(&with_end).clone()
                    }
                    _ => rng.pick(&event_tables).clone(),
                };
                let has_end = with_end.contains(&table);
                let set = match (damage, has_end) {
                    (Damage::NegativeTimes, true) => "start = -start - 1000, \"end\" = -\"end\"",
                    (Damage::NegativeTimes, false) => "start = -start - 1000",
                    (Damage::HugeTimes, true) => {
                        "start = 9223372036854775000 + rowid % 100, \"end\" = 9223372036854775807"
                    }
                    (Damage::HugeTimes, false) => "start = 9223372036854775000 + rowid % 100",
                    (Damage::OverflowingSpans, _) => {
                        "start = -9223372036854775000 - rowid % 100, \"end\" = 9223372036854775807"
                    }
                    _ => "start = \"end\", \"end\" = start",
                };
                let rows = some_rows(rng, 4);
                conn.execute(&format!("UPDATE \"{table}\" SET {set} WHERE {rows}"), [])
                    .unwrap_or_else(|e| panic!("{table}: {e}"));
                done.push(format!("{table}: {set} where {rows}"));
            }
        }
        Damage::DanglingStringIds => {
            let columns = schema.string_id_columns();
            for _ in 0..3 {
                let (table, column) = rng.pick(&columns).clone();
                let value = *rng.pick(&["2000000000 + rowid", "-1 - rowid"]);
                done.push(set_some(conn, rng, &table, &column, value));
            }
        }
        Damage::DroppedColumn => {
            let (table, column) = rng.pick(&event_columns).clone();
            if conn
                .execute(
                    &format!("ALTER TABLE \"{table}\" DROP COLUMN \"{column}\""),
                    [],
                )
                .is_err()
            {
                loosen(conn, table.as_str());
                conn.execute(
                    &format!("ALTER TABLE \"{table}\" DROP COLUMN \"{column}\""),
                    [],
                )
                .unwrap_or_else(|e| panic!("{table}.{column}: {e}"));
            }
            done.push(format!("{table}.{column} dropped"));
        }
        Damage::DroppedTables => {
            let mut tables: Vec<String> = ["StringIds", "ThreadNames", "PROCESSES"]
                .iter()
                .map(|t| t.to_string())
                .chain(
                    schema
                        .tables
                        .iter()
                        .map(|(t, _)| t.clone())
                        .filter(|t| t.starts_with("TARGET_INFO_")),
                )
                .chain(event_tables.iter().cloned())
                .filter(|t| schema.tables.iter().any(|(s, _)| s == t))
                .collect();
            for _ in 0..2 {
                let table = tables.remove(rng.below(tables.len()));
                conn.execute(&format!("DROP TABLE \"{table}\""), [])
                    .unwrap_or_else(|e| panic!("{table}: {e}"));
                done.push(format!("{table} dropped"));
            }
        }
        Damage::DuplicatedRows => {
            for table in event_tables.iter().chain(&["StringIds".to_string()]) {
                loosen(conn, table);
                conn.execute(
                    &format!("INSERT INTO \"{table}\" SELECT * FROM \"{table}\""),
                    [],
                )
                .unwrap_or_else(|e| panic!("{table}: {e}"));
            }
            done.push(format!(
                "every row twice in StringIds and {}",
                event_tables.join(", ")
            ));
        }
        Damage::FlippedBytes | Damage::FlippedFirstPage | Damage::CutOff => unreachable!(),
    }
    done.join("; ")
}

/// The exports to damage: demo/demo.sqlite, and the fixtures where ../shared is.
fn sources() -> Vec<PathBuf> {
    let mut sources = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join(IN_REPO)];
    if fixtures::require(fixtures::Need::Shared).is_some() {
        for name in FIXTURES {
            sources.extend(fixtures::fixture(name));
        }
    }
    sources
}

/// A damaged copy to make: which export, which damage, from which seed.
struct Spec {
    name: String,
    source: PathBuf,
    damage: Damage,
    seed: u64,
}

impl Spec {
    /// Copies the export into a temporary directory and damages the copy.
    fn make(&self) -> Case {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in").join("damaged.sqlite");
        std::fs::create_dir(input.parent().unwrap()).unwrap();
        std::fs::copy(&self.source, &input).unwrap();
        let mut permissions = std::fs::metadata(&input).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        permissions.set_readonly(false);
        std::fs::set_permissions(&input, permissions).unwrap();
        let description = damage_file(&input, self.damage, &mut Rng(self.seed));
        Case {
            name: self.name.clone(),
            description,
            _dir: dir,
            input,
        }
    }
}

/// Every damaged copy of every export, each with its own seed.
fn cases(sources: &[PathBuf]) -> Vec<Spec> {
    let mut all = Vec::new();
    for (s, source) in sources.iter().enumerate() {
        let stem = source.file_stem().unwrap().to_string_lossy().into_owned();
        for (d, &damage) in DAMAGES.iter().enumerate() {
            all.push(Spec {
                name: format!("{stem}/{damage:?}"),
                source: source.clone(),
                damage,
                seed: 0x6461_6d61_6765_6400 ^ ((s as u64) << 8 | d as u64),
            });
        }
    }
    all
}

/// How a run ended.
struct Ran {
    status: Option<ExitStatus>,
    stderr: String,
}

/// Runs the binary with `args`, killing it after [`TIME_LIMIT`] (then `status` is `None`).
fn run(args: &[&std::ffi::OsStr], logs: &Path) -> Ran {
    let stdout = std::fs::File::create(logs.join("stdout")).unwrap();
    let stderr = std::fs::File::create(logs.join("stderr")).unwrap();
    let mut child = Command::new(BIN)
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + TIME_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        status,
        stderr: std::fs::read_to_string(logs.join("stderr")).unwrap_or_default(),
    }
}

/// What is wrong with how a run ended: a hang, a panic, or an error that is
/// not one line (after any warning lines).
fn judge_exit(ran: &Ran) -> Option<String> {
    let Some(status) = ran.status else {
        return Some(format!("hung: still running after {TIME_LIMIT:?}"));
    };
    let stderr = ran.stderr.trim_end();
    if status.code() == Some(101) || stderr.contains("panicked") {
        return Some(format!("panicked ({status}): {stderr}"));
    }
    if status.code().is_none() {
        return Some(format!("killed by a signal ({status}): {stderr}"));
    }
    if status.success() {
        return None;
    }
    let lines: Vec<&str> = stderr.lines().collect();
    let one_error = lines
        .last()
        .is_some_and(|l| l.starts_with("nsys2perfetto: error:"))
        && lines[..lines.len() - 1]
            .iter()
            .all(|l| l.starts_with("nsys2perfetto: warning:"));
    if one_error {
        None
    } else {
        Some(format!(
            "failed ({status}) without a one-line error:\n{stderr}"
        ))
    }
}

/// Runs `convert`, `stats` and `analyze` on the damaged copy; what went wrong, one line each.
fn try_case(case: &Case) -> Vec<String> {
    let mut problems = Vec::new();
    let work = case.input.parent().unwrap().parent().unwrap();
    let out_dir = work.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let trace = out_dir.join("damaged.perfetto-trace");
    let input = case.input.as_os_str();
    let runs: [(&str, Vec<&std::ffi::OsStr>); 3] = [
        (
            "convert",
            vec!["convert".as_ref(), input, "-o".as_ref(), trace.as_os_str()],
        ),
        ("stats", vec!["stats".as_ref(), input]),
        ("analyze", vec!["analyze".as_ref(), input]),
    ];
    let mut converted = false;
    for (command, args) in runs {
        let ran = run(&args, work);
        converted |= command == "convert" && succeeded(&ran);
        if let Some(problem) = judge_exit(&ran) {
            problems.push(format!("{command}: {problem}"));
        }
        // Nothing left behind: the finished trace, or nothing; the input alone beside the input.
        let mut left: Vec<String> = std::fs::read_dir(&out_dir)
            .unwrap()
            .chain(std::fs::read_dir(case.input.parent().unwrap()).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| *p != case.input && !(converted && *p == trace))
            .map(|p| p.display().to_string())
            .collect();
        left.sort();
        if !left.is_empty() {
            problems.push(format!("{command}: left behind {left:?}"));
        }
        if command == "convert" && succeeded(&ran) {
            if let Some(problem) = judge_trace(&trace) {
                problems.push(format!("convert: {problem}"));
            }
        }
    }
    problems
}

fn succeeded(ran: &Ran) -> bool {
    ran.status.is_some_and(|s| s.success())
}

/// What trace_processor finds wrong in the trace: error-severity stats, or a
/// failure to load it (`None` also when trace_processor is absent).
fn judge_trace(trace: &Path) -> Option<String> {
    let binary = crate::support::convert::trace_processor()?;
    let imported = std::panic::catch_unwind(|| crate::support::tp::import(&binary, trace));
    match imported {
        Err(e) => Some(format!(
            "trace_processor could not load the trace: {}",
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
        Ok(imported) => {
            let errors: Vec<String> = imported
                .problems
                .iter()
                .filter(|(stat, _)| stat.contains("(error,"))
                .map(|(stat, n)| format!("{stat} = {n}"))
                .collect();
            (!errors.is_empty()).then(|| format!("trace_processor errors: {}", errors.join(", ")))
        }
    }
}

/// The cases `wanted` picks, two at a time; the failure lists every problem
/// of every case.
fn check(wanted: impl Fn(&str) -> bool) {
    let cases: Vec<Spec> = cases(&sources())
        .into_iter()
        .filter(|spec| wanted(&spec.name))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(spec) = cases.get(i) else {
                    break;
                };
                let case = spec.make();
                let problems = try_case(&case);
                if !problems.is_empty() {
                    failures.lock().unwrap().push(format!(
                        "{} ({}):\n    {}",
                        case.name,
                        case.description,
                        problems.join("\n    ")
                    ));
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} of {} damaged exports were not handled:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn damaged_exports_end_in_a_trace_or_a_one_line_error() {
    check(|name| !OWN_TESTS.contains(&name));
}

// Spans from near i64::MIN to near i64::MAX: durations past i64, which
// `stats` refuses in one line instead of overflowing.

#[test]
fn demo_overflowing_spans() {
    check(|name| name == "demo/OverflowingSpans");
}

#[test]
fn h100_torch_graph_whole_overflowing_spans() {
    if fixtures::require(fixtures::Need::Shared).is_some() {
        check(|name| name == "h100_torch_graph_whole/OverflowingSpans");
    }
}
