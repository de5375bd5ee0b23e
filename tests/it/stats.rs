//! `stats` gives NVIDIA's numbers: every cell of every summary equals what
//! `nsys stats --format csv` prints, on every fixture. nsys 2022.4 is run
//! here on each export; the numbers of nsys 2025.3 for the two H100 fixtures
//! are the CSV files it wrote (../shared/fixtures/nsys-2025.3-stats), which
//! must match character for character: the summaries follow 2025.3's
//! definitions. Where 2022.4 defines a summary differently (see README.md),
//! its rows are mapped onto 2025.3's before they are compared, and each
//! mapping is named below.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::support::convert::synthetic;
use crate::support::fixtures::{all, require, Need};
use crate::support::program::{demo, BIN};
use crate::support::synth::Thread;
use nsys2perfetto::stats::{summarize, Cell, StatsReport, Table};
use nsys2perfetto::Report;

/// The summaries and their names in nsys 2022.4.
const OLD_NAMES: [(StatsReport, &str); 15] = [
    (StatsReport::CudaApiSum, "cudaapisum"),
    (StatsReport::GpuKernSum, "gpukernsum"),
    (StatsReport::GpuMemTimeSum, "gpumemtimesum"),
    (StatsReport::GpuMemSizeSum, "gpumemsizesum"),
    (StatsReport::GpuSum, "gpusum"),
    (StatsReport::NvtxSum, "nvtxsum"),
    (StatsReport::NvtxPushPopSum, "nvtxppsum"),
    (StatsReport::NvtxStartEndSum, "nvtxsesum"),
    (StatsReport::OsrtSum, "osrtsum"),
    (StatsReport::KernExecSum, "kernexecsum"),
    (StatsReport::OpenAccSum, "openaccsum"),
    (StatsReport::UmCpuPageFaultsSum, "umcpupagefaults"),
    (StatsReport::OpenMpEventSum, "openmpevtsum"),
    (StatsReport::NvtxGpuProjSum, "nvtxgpuproj"),
    (StatsReport::NvtxKernSum, "nvtxkernsum"),
];

/// Summaries of data no fixture has: checked on a synthetic export instead.
const NOT_IN_FIXTURES: [StatsReport; 3] = [
    StatsReport::OpenAccSum,
    StatsReport::UmCpuPageFaultsSum,
    StatsReport::OpenMpEventSum,
];

/// The columns that name a row (the others are numbers).
const KEY_COLUMNS: [&str; 11] = [
    "CPU Instruction Address",
    "Name",
    "Operation",
    "Range",
    "Style",
    "PID",
    "TID",
    "DevId",
    "API Name",
    "Kernel Name",
    "NVTX Range",
];

/// nsys 2022.4's tables of `input`, by summary: the CSV rows, or `None`
/// where nsys wrote nothing (its table is absent from the export).
fn nsys_2022_tables(input: &Path) -> BTreeMap<StatsReport, Option<Vec<Vec<String>>>> {
    // nsys may write into the export it reads: give it a copy.
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("report.sqlite");
    std::fs::copy(input, &copy).unwrap();
    let names: Vec<&str> = OLD_NAMES.iter().map(|(_, n)| *n).collect();
    let out = Command::new("nsys")
        .args(["stats", "--format", "csv", "--report", &names.join(",")])
        .arg("--output")
        .arg(dir.path().join("out"))
        .arg(&copy)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nsys stats {}: {}",
        input.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    OLD_NAMES
        .iter()
        .map(|(report, name)| {
            let file = dir.path().join(format!("out_{name}.csv"));
            let rows = std::fs::read_to_string(&file)
                .ok()
                .filter(|t| !t.is_empty())
                .map(|t| csv_rows(&t));
            // 2022.4 lists the projected ranges; 2025.3 sums them.
            let rows = match report {
                StatsReport::NvtxGpuProjSum => rows.map(|r| projection_sum_2022(&r)),
                _ => rows,
            };
            (*report, rows)
        })
        .collect()
}

/// nsys 2022.4's `nvtxgpuproj` (one row per projected range) summed as
/// 2025.3's `nvtx_gpu_proj_sum` sums it: by range name and style, the
/// statistics of the projected durations, the range durations and GPU
/// operations added up, the levels and child counts averaged.
fn projection_sum_2022(rows: &[Vec<String>]) -> Vec<Vec<String>> {
    let mut groups: BTreeMap<(String, String), Vec<Row>> = BTreeMap::new();
    for row in by_column(rows) {
        let key = (row["Name"].clone(), row["Style"].clone());
        groups.entry(key).or_default().push(row);
    }
    let header = [
        "Range",
        "Style",
        "Total Proj Time (ns)",
        "Total Range Time (ns)",
        "Range Instances",
        "Proj Avg (ns)",
        "Proj Med (ns)",
        "Proj Min (ns)",
        "Proj Max (ns)",
        "Proj StdDev (ns)",
        "Total GPU Ops",
        "Avg GPU Ops",
        "Avg Range Lvl",
        "Avg Num Child",
    ];
    let mut out = vec![header.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>()];
    for ((name, style), rows) in groups {
        let int = |r: &Row, c: &str| -> i128 {
            r[c].parse()
                .unwrap_or_else(|_| panic!("nvtxgpuproj {name}: {c} is {:?}", r[c]))
        };
        let sum = |c: &str| rows.iter().map(|r| int(r, c)).sum::<i128>();
        let mut proj: Vec<i128> = rows
            .iter()
            .map(|r| int(r, "Projected Duration (ns)"))
            .collect();
        proj.sort_unstable();
        let n = proj.len();
        let total: i128 = proj.iter().sum();
        let mean = total as f64 / n as f64;
        let median = match n % 2 {
            1 => proj[n / 2] as f64,
            _ => (proj[n / 2 - 1] + proj[n / 2]) as f64 / 2.0,
        };
        let stddev = match n {
            1 => 0.0,
            _ => {
                let squares: f64 = proj.iter().map(|&x| (x as f64 - mean).powi(2)).sum();
                (squares / (n - 1) as f64).sqrt()
            }
        };
        let average = |c: &str| (sum(c) as f64 / n as f64).to_string();
        out.push(vec![
            name.clone(),
            style,
            total.to_string(),
            sum("Orig Duration (ns)").to_string(),
            n.to_string(),
            mean.to_string(),
            median.to_string(),
            proj[0].to_string(),
            proj[n - 1].to_string(),
            stddev.to_string(),
            sum("NumGPUOps").to_string(),
            average("NumGPUOps"),
            average("Lvl"),
            average("NumChild"),
        ]);
    }
    out
}

/// 2022.4's names of memory copies (`[CUDA memcpy HtoD]`) as 2025.3 names them.
pub(crate) fn memcpy_2025_name(name: &str) -> String {
    const KINDS: [(&str, &str); 14] = [
        ("Unknown", "Unknown"),
        ("HtoD", "Host-to-Device"),
        ("DtoH", "Device-to-Host"),
        ("HtoA", "Host-to-Array"),
        ("AtoH", "Array-to-Host"),
        ("AtoA", "Array-to-Array"),
        ("AtoD", "Array-to-Device"),
        ("DtoA", "Device-to-Array"),
        ("DtoD", "Device-to-Device"),
        ("HtoH", "Host-to-Host"),
        ("PtoP", "Peer-to-Peer"),
        (
            "Unified Memory memcpy HtoD",
            "memcpy Unified Host-to-Device",
        ),
        (
            "Unified Memory memcpy DtoH",
            "memcpy Unified Device-to-Host",
        ),
        (
            "Unified Memory memcpy DtoD",
            "memcpy Unified Device-to-Device",
        ),
    ];
    for (old, new) in KINDS {
        if name == format!("[CUDA memcpy {old}]") {
            return format!("[CUDA memcpy {new}]");
        }
        if name == format!("[CUDA {old}]") {
            return format!("[CUDA {new}]");
        }
    }
    name.to_owned()
}

/// The rows of nsys's CSV. nsys quotes fields with commas but not all those
/// with quotes (`{"a": 1}` is written bare), so a quote opens a quoted field
/// only at the start of a field.
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut at_start = true;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if at_start => quoted = true,
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' if quoted => quoted = false,
            ',' if !quoted => {
                row.push(std::mem::take(&mut field));
                at_start = true;
                continue;
            }
            '\n' if !quoted => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                at_start = true;
                continue;
            }
            '\r' if !quoted => {}
            c => field.push(c),
        }
        at_start = false;
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// One row of nsys's, as text by column.
type Row = BTreeMap<String, String>;

fn by_column(rows: &[Vec<String>]) -> Vec<Row> {
    let (header, rows) = rows.split_first().expect("a header");
    rows.iter()
        .map(|r| header.iter().cloned().zip(r.iter().cloned()).collect())
        .collect()
}

fn key(table_columns: &[String], cells: impl Fn(usize) -> String) -> Vec<String> {
    table_columns
        .iter()
        .enumerate()
        .filter(|(_, c)| KEY_COLUMNS.contains(&c.as_str()))
        .map(|(i, _)| cells(i))
        .collect()
}

/// Whether `ours` is `theirs` to `theirs`'s printed precision, where nsys
/// 2022.4's rounding of a value exactly halfway in decimal may differ from
/// the exact binary value's by floating-point noise.
fn close(ours: f64, decimals: u8, theirs: &str) -> bool {
    let Ok(theirs) = theirs.parse::<f64>() else {
        return false;
    };
    let half_unit = 0.5 * 10f64.powi(-i32::from(decimals));
    (ours - theirs).abs() <= half_unit + 1e-9 * ours.abs().max(1.0)
}

/// Compares our table with nsys 2022.4's rows, cell by cell; returns how
/// many cells were compared.
fn compare_with_2022(fixture: &str, ours: &Table, theirs: &[Vec<String>]) -> usize {
    let what = format!("{fixture} {}", ours.name);
    let mut theirs: Vec<Row> = by_column(theirs);
    for row in &mut theirs {
        if let Some(op) = row.get_mut("Operation") {
            *op = memcpy_2025_name(op);
        }
        // nvtxkernsum's kernels outside every range: no range, no style.
        for column in ["NVTX Range", "Style", "PID", "TID"] {
            if let Some(v) = row.get_mut(column).filter(|v| *v == "None") {
                v.clear();
            }
        }
    }
    // 2022.4 writes the default NVTX domain's ranges without the `:` that
    // 2025.3 puts before them.
    // Two API names that differ only in their version suffix are two rows
    // of one name (in nsys and here): their totals tell them apart.
    let by_total = ours.name == "cuda_api_sum";
    let our_key = |row: &[Cell]| {
        let mut k = key(&ours.columns, |i| {
            let text = row[i].text();
            match ours.columns[i] == "Range" || ours.columns[i] == "NVTX Range" {
                true => text.strip_prefix(':').unwrap_or(&text).to_owned(),
                false => text,
            }
        });
        if by_total {
            k.push(row[1].text());
        }
        k
    };
    // 2022.4's gpukernsum has a row per (name, grid, block), 2025.3's per
    // name: the rows of one name are added up (count, total, min, max), and
    // only a name with one row is compared in full.
    let mut merged: BTreeMap<Vec<String>, (Row, usize)> = BTreeMap::new();
    for row in theirs {
        let mut k: Vec<String> = ours
            .columns
            .iter()
            .filter(|c| KEY_COLUMNS.contains(&c.as_str()))
            .map(|c| row.get(c).cloned().unwrap_or_default())
            .collect();
        if by_total {
            k.push(row["Total Time (ns)"].clone());
        }
        match merged.get_mut(&k) {
            None => {
                merged.insert(k, (row, 1));
            }
            Some((acc, n)) => {
                assert_eq!(ours.name, "cuda_gpu_kern_sum", "{what}: two rows of {k:?}");
                *n += 1;
                let int = |r: &Row, c: &str| r[c].parse::<i128>().unwrap();
                let combine = |c: &str, f: fn(i128, i128) -> i128| f(int(acc, c), int(&row, c));
                let updates = [
                    ("Total Time (ns)", combine("Total Time (ns)", |a, b| a + b)),
                    ("Instances", combine("Instances", |a, b| a + b)),
                    ("Min (ns)", combine("Min (ns)", i128::min)),
                    ("Max (ns)", combine("Max (ns)", i128::max)),
                ];
                for (c, v) in updates {
                    acc.insert(c.to_owned(), v.to_string());
                }
            }
        }
    }
    assert_eq!(
        merged.len(),
        ours.rows.len(),
        "{what}: nsys has rows {:?}, we have {:?}",
        merged.keys().collect::<Vec<_>>(),
        ours.rows.iter().map(|r| our_key(r)).collect::<Vec<_>>()
    );
    let mut cells = 0;
    for row in &ours.rows {
        let k = our_key(row);
        let (theirs, parts) = merged
            .get(&k)
            .unwrap_or_else(|| panic!("{what}: nsys has no row {k:?}"));
        for (i, column) in ours.columns.iter().enumerate() {
            if KEY_COLUMNS.contains(&column.as_str()) {
                continue;
            }
            let merged_only = ["Total Time (ns)", "Instances", "Min (ns)", "Max (ns)"];
            if *parts > 1 && !merged_only.contains(&column.as_str()) {
                continue;
            }
            // 2022.4's openaccsum writes `Time(%)`.
            let t = theirs
                .get(column)
                .or_else(|| theirs.get(&column.replace(" (%)", "(%)")))
                .unwrap_or_else(|| panic!("{what}: nsys has no column {column}"));
            let same = match &row[i] {
                Cell::Int(v) => *t == v.to_string(),
                Cell::Real(v, d) => close(*v, *d, t),
                Cell::Text(s) => t == s,
                Cell::Empty => t.is_empty() || t == "None",
                ids @ Cell::Ints(_) => *t == ids.text(),
            };
            assert!(
                same,
                "{what} {k:?} {column}: nsys says {t}, we say {:?}",
                row[i]
            );
            cells += 1;
        }
    }
    cells
}

fn kernel_has_pid(fixture: &Path) -> bool {
    let db = crate::support::source::open(fixture);
    !crate::support::source::has_table(&db, "CUPTI_ACTIVITY_KIND_KERNEL")
        || crate::support::source::has_column(&db, "CUPTI_ACTIVITY_KIND_KERNEL", "globalPid")
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn every_summary_equals_nsys_2022_on_every_fixture() {
    let (Some(fixtures), Some(_)) = (all(), require(Need::Nsys)) else {
        return;
    };
    let which: Vec<StatsReport> = OLD_NAMES.iter().map(|(r, _)| *r).collect();
    let mut compared = BTreeMap::new();
    for fixture in &fixtures {
        let name = fixture.file_stem().unwrap().to_string_lossy().into_owned();
        let report = Report::open(fixture).unwrap();
        let ours = summarize(&report, &which).unwrap();
        let theirs = nsys_2022_tables(fixture);
        for table in &ours {
            let report: StatsReport = table.name.parse().unwrap();
            let cells = match &theirs[&report] {
                // nsys's query needs KERNEL.globalPid; where a trimmed export
                // lacks it, we match launches within the one process that
                // made CUDA calls, and nsys prints nothing to compare with.
                None if report == StatsReport::KernExecSum && !kernel_has_pid(fixture) => 0,
                None => {
                    assert!(
                        table.rows.is_empty(),
                        "{name} {}: nsys found no data, we have {} rows",
                        table.name,
                        table.rows.len()
                    );
                    0
                }
                Some(rows) => compare_with_2022(&name, table, rows),
            };
            *compared.entry(table.name.clone()).or_insert(0) += cells;
        }
    }
    eprintln!("cells compared with nsys 2022.4, by summary: {compared:?}");
    // Each summary met real data somewhere.
    for (report, _) in OLD_NAMES {
        if !NOT_IN_FIXTURES.contains(&report) {
            assert!(compared[report.name()] > 0, "{report}: nothing compared");
        }
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn every_summary_equals_nsys_2025_on_the_h100_fixtures_character_for_character() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let stored = shared.join("fixtures/nsys-2025.3-stats");
    let mut compared = 0;
    for fixture in ["h100_torch_graph_node", "h100_torch_graph_whole"] {
        let report =
            Report::open(&shared.join(format!("fixtures/sqlite/{fixture}.sqlite"))).unwrap();
        let which: Vec<StatsReport> = StatsReport::ALL
            .into_iter()
            .filter(|r| stored.join(format!("{fixture}_{}.csv", r.name())).exists())
            .collect();
        assert!(which.len() >= 8, "{fixture}: stored summaries {which:?}");
        for table in summarize(&report, &which).unwrap() {
            let text =
                std::fs::read_to_string(stored.join(format!("{fixture}_{}.csv", table.name)))
                    .unwrap();
            let what = format!("{fixture} {}", table.name);
            if text.is_empty() {
                // nsys wrote nothing: the export has no such table.
                assert!(table.rows.is_empty(), "{what}: nsys found no data");
                continue;
            }
            let theirs = csv_rows(&text);
            assert_eq!(theirs[0], table.columns, "{what}: columns");
            assert_eq!(theirs.len() - 1, table.rows.len(), "{what}: rows");
            for (row, their_row) in table.rows.iter().zip(&theirs[1..]) {
                let ours: Vec<String> = row.iter().map(Cell::text).collect();
                assert_eq!(&ours, their_row, "{what}");
                compared += ours.len();
            }
            // And the CSV we print is the file nsys printed, byte for byte:
            // a table alone starts with its header.
            let mut csv = Vec::new();
            let file = format!("{fixture}.sqlite");
            table
                .write(
                    &mut csv,
                    nsys2perfetto::stats::TableFormat::Csv,
                    std::slice::from_ref(&file),
                    nsys2perfetto::stats::Fit::Whole,
                )
                .unwrap();
            let csv = String::from_utf8(csv).unwrap();
            assert_eq!(csv, text, "{what}: CSV text");
        }
    }
    assert!(compared > 1000, "only {compared} cells compared");
}

/// Issue 27 D: tables that tools read as they are. Several CSV tables
/// written to a file go to a file each, named as `nsys stats -o` names
/// them, each starting with its header; a table alone starts with its
/// header on standard output and in a file; only several tables sharing
/// standard output follow marker lines.
#[test]
fn csv_tables_start_with_their_header_and_several_go_to_a_file_each() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stats.csv");
    let stats = |extra: &[&std::ffi::OsStr]| {
        let out = Command::new(BIN)
            .args(["stats", "--format", "csv", "--report"])
            .args(extra)
            .arg(demo())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (stdout, stderr) = stats(&[
        "cudaapisum,cuda_gpu_kern_sum".as_ref(),
        "-o".as_ref(),
        out.as_ref(),
    ]);
    assert!(stdout.is_empty());
    let report = Report::open(&demo()).unwrap();
    let tables = summarize(&report, &[StatsReport::CudaApiSum, StatsReport::GpuKernSum]).unwrap();
    assert!(tables.iter().all(|t| !t.rows.is_empty()));
    let alone = |t: &nsys2perfetto::stats::Table| {
        let mut text = Vec::new();
        t.write(
            &mut text,
            nsys2perfetto::stats::TableFormat::Csv,
            &[demo().display().to_string()],
            nsys2perfetto::stats::Fit::Whole,
        )
        .unwrap();
        String::from_utf8(text).unwrap()
    };
    assert!(!out.exists(), "the tables went to files of their own");
    for t in &tables {
        let file = dir.path().join(format!("stats_{}.csv", t.name));
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text, alone(t));
        // The header first: what a CSV reader takes for the columns.
        let header = crate::support::nsys::csv_rows(&text).remove(0);
        assert_eq!(header, t.columns);
        assert!(stderr.contains(&file.display().to_string()), "{stderr}");
    }
    // One table: the file named, and standard output, start with its header.
    let one = dir.path().join("one.csv");
    stats(&["cuda_gpu_kern_sum".as_ref(), "-o".as_ref(), one.as_ref()]);
    assert_eq!(std::fs::read_to_string(&one).unwrap(), alone(&tables[1]));
    let (stdout, _) = stats(&["cuda_gpu_kern_sum".as_ref()]);
    assert_eq!(stdout, alone(&tables[1]));
    // Several on standard output: each after the line naming it.
    let (stdout, _) = stats(&["cudaapisum,cuda_gpu_kern_sum".as_ref()]);
    let of = demo().display().to_string();
    assert_eq!(
        stdout,
        format!(
            "# CUDA API Summary (cuda_api_sum) of {of}\n{}\n\
             # CUDA GPU Kernel Summary (cuda_gpu_kern_sum) of {of}\n{}",
            alone(&tables[0]),
            alone(&tables[1])
        )
    );
}

/// The files several reports' tables go to name the report too, and two
/// reports of one file name are refused before anything is written.
#[test]
fn tables_of_several_reports_go_to_files_named_by_report_and_table() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.sqlite");
    std::fs::copy(demo(), &other).unwrap();
    let prefix = dir.path().join("s");
    let status = Command::new(BIN)
        .args(["stats", "--format", "csv", "--report", "cuda_api_sum"])
        .arg(demo())
        .arg(&other)
        .arg("-o")
        .arg(&prefix)
        .status()
        .unwrap();
    assert!(status.success());
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".csv"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["s_demo_cuda_api_sum.csv", "s_other_cuda_api_sum.csv"]
    );
    let twin = dir.path().join("twin");
    std::fs::create_dir(&twin).unwrap();
    std::fs::copy(demo(), twin.join("demo.sqlite")).unwrap();
    let out = Command::new(BIN)
        .args(["stats", "--format", "csv"])
        .arg(demo())
        .arg(twin.join("demo.sqlite"))
        .arg("-o")
        .arg(dir.path().join("t.csv"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("would both write"), "{stderr}");
    assert!(!std::fs::read_dir(dir.path()).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("t_")));
}

#[test]
fn the_command_writes_a_json_object_per_summary_and_report() {
    let out = Command::new(BIN)
        .args(["stats", "--format", "json"])
        .arg(demo())
        .arg(demo())
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // JSON Lines: each line one object, naming the summary and the report.
    let files = format!("\"files\":[\"{}\"]", demo().display());
    assert!(text
        .lines()
        .all(|l| l.starts_with("{\"table\":") && l.contains(&files) && l.ends_with("]}")));
    assert_eq!(text.lines().count(), 2 * StatsReport::DEFAULT.len());
    assert!(text.starts_with(&format!(
        "{{\"table\":\"nvtx_sum\",\"title\":\"NVTX Range Summary\",{files},\"rows\":[{{\"time_percent\":"
    )));
    assert!(text.contains("{\"table\":\"cuda_api_sum\","));
}

/// A summary named twice, by its old and new names or the same one, is
/// computed and printed once.
#[test]
fn a_summary_named_twice_is_printed_once() {
    let stats = |reports: &str| {
        let out = Command::new(BIN)
            .args(["stats", "--format", "csv", "--report", reports])
            .arg(demo())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let once = stats("cuda_api_sum,nvtx_sum");
    assert_eq!(stats("cuda_api_sum,cudaapisum,nvtx_sum"), once);
    assert_eq!(stats("cuda_api_sum,nvtx_sum,cuda_api_sum,nvtxsum"), once);
}

#[test]
fn bad_input_is_one_line_and_a_failing_status() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("stats.txt");
    let missing = Command::new(BIN)
        .args(["stats", "/nonexistent/report.sqlite", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    let stderr = String::from_utf8(missing.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("nsys2perfetto: error: "), "{stderr}");
    assert!(!out.exists());

    let unknown = Command::new(BIN)
        .args(["stats", "--report", "cudaapisum,nope"])
        .arg(demo())
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains(
        "invalid value 'nope' for '--report <NAME,...>' [possible values: cuda_api_sum,"
    ));

    // Not an export at all.
    let text = dir.path().join("notes.sqlite");
    std::fs::write(&text, "not a database").unwrap();
    let not_export = Command::new(BIN).arg("stats").arg(&text).output().unwrap();
    assert_eq!(not_export.status.code(), Some(1));
    assert!(not_export.stdout.is_empty());
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_report_is_exported_with_nsys_first() {
    let (Some(shared), Some(_)) = (require(Need::Shared), require(Need::Nsys)) else {
        return;
    };
    let out = Command::new(BIN)
        .args(["stats", "--format", "csv", "--report", "nvtx_sum"])
        .arg(shared.join("fixtures/reports/dlprof_nsys_profile.nsys-rep"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = csv_rows(&crate::support::nsys::unmarked(
        &String::from_utf8(out.stdout).unwrap(),
    ));
    assert_eq!(rows[0].last().map(String::as_str), Some("Range"));
    // The report's 82 NVTX ranges, all in the summary.
    let instances: u64 = rows[1..].iter().map(|r| r[2].parse::<u64>().unwrap()).sum();
    assert_eq!(instances, 82);
}

#[test]
fn openacc_openmp_and_cpu_page_fault_summaries_equal_nsys_2022_on_a_synthetic_export() {
    if require(Need::Nsys).is_none() {
        return;
    }
    const MAIN: Thread = Thread { pid: 100, tid: 100 };
    let (_dir, input) = synthetic(|s| {
        // Two launches of one region (an even count: the median is a mean),
        // one of another line, and one without a source file.
        s.openacc(MAIN, 1_000..1_500, "acc_compute_construct")
            .file("saxpy.c");
        s.openacc(MAIN, 2_000..2_801, "acc_compute_construct")
            .file("saxpy.c");
        s.openacc(MAIN, 3_000..3_100, "acc_enter_data")
            .file("saxpy.c")
            .set("lineNo", 12);
        s.openacc(MAIN, 4_000..4_033, "acc_wait");
        s.openmp(MAIN, 6_000..6_900, "omp_parallel");
        s.openmp(MAIN, 7_000..7_250, "omp_parallel");
        s.openmp(MAIN, 8_000..8_011, "omp_parallel@main");
        for (k, instruction) in ["0x4005d0", "0x4005d0", "0x4005d0", "0x400610"]
            .iter()
            .enumerate()
        {
            let id = s.string(instruction);
            s.row(
                "CUDA_UM_CPU_PAGE_FAULT_EVENTS",
                vec![
                    ("start", (5_000 + k as i64).into()),
                    ("globalPid", (MAIN.global_tid() & !0xFF_FFFF).into()),
                    ("address", (0x7000 + k as i64).into()),
                    ("CpuInstruction", id.into()),
                ],
            );
        }
    });
    let report = Report::open(&input).unwrap();
    let ours = summarize(&report, &NOT_IN_FIXTURES).unwrap();
    let theirs = nsys_2022_tables(&input);
    for table in &ours {
        let report: StatsReport = table.name.parse().unwrap();
        let rows = theirs[&report]
            .as_ref()
            .unwrap_or_else(|| panic!("nsys printed no {}", table.name));
        let cells = compare_with_2022("synthetic", table, rows);
        assert!(cells >= table.rows.len(), "{}: {cells} cells", table.name);
    }
    assert_eq!(ours[0].rows.len(), 3);
    assert_eq!(ours[1].rows[0][0], Cell::Int(3));
    assert_eq!(ours[2].rows.len(), 2);
}

/// Names in the table format are cut at 100 characters, ending in "…", as
/// nsys cuts them (output not to a terminal); `--wide` keeps them whole, as
/// CSV does; `compare` likewise.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn long_names_are_cut_in_tables_unless_wide() {
    let Some(file) = crate::support::fixtures::fixture("h100_torch_graph_node.sqlite") else {
        return;
    };
    let run = |args: &[&str]| -> String {
        let out = std::process::Command::new(BIN)
            .args(args)
            .arg(&file)
            .args(if args[0] == "compare" {
                vec![&file]
            } else {
                vec![]
            })
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let csv = run(&["stats", "--report", "cuda_gpu_kern_sum", "--format", "csv"]);
    let rows = crate::support::nsys::csv_rows(&crate::support::nsys::unmarked(&csv));
    let longest = rows[1..]
        .iter()
        .map(|r| r.last().unwrap().clone())
        .max_by_key(|n| n.chars().count())
        .unwrap();
    assert!(longest.chars().count() > 200, "{longest}");
    let cut = format!("{}…", longest.chars().take(99).collect::<String>());
    for command in ["stats", "compare"] {
        let args: &[&str] = match command {
            "stats" => &["stats", "--report", "cuda_gpu_kern_sum"],
            _ => &["compare", "--kind", "kernel"],
        };
        let table = run(args);
        assert!(
            table.lines().any(|l| l.ends_with(&format!(" {cut}"))),
            "{table}"
        );
        assert!(!table.contains(&longest), "{command}: a name whole");
        let widest = table.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest < 400, "{command}: {widest} characters");
        let wide = run(&[args, &["--wide"]].concat());
        assert!(wide.contains(&longest), "{command} --wide");
    }
}

/// The files of `stats -o` are those nsys 2025.3 writes with `nsys stats
/// -o`: a summary without rows is an empty file (no header), one with rows
/// its header and rows; checked on every summary NVIDIA wrote for the two
/// H100 fixtures, the empty ones among them.
#[test]
fn the_files_of_o_are_nvidias_empty_ones_included() {
    let Some(shared) = require(Need::Shared) else {
        return;
    };
    let stored = shared.join("fixtures/nsys-2025.3-stats");
    let dir = tempfile::tempdir().unwrap();
    for fixture in ["h100_torch_graph_node", "h100_torch_graph_whole"] {
        let input = shared.join(format!("fixtures/sqlite/{fixture}.sqlite"));
        // The summaries of `stats` that NVIDIA wrote a file of.
        let summaries: Vec<&str> = OLD_NAMES
            .iter()
            .map(|(s, _)| s.name())
            .filter(|name| stored.join(format!("{fixture}_{name}.csv")).is_file())
            .collect();
        assert!(summaries.len() >= 9, "{summaries:?}");
        let prefix = dir.path().join(fixture);
        let out = Command::new(BIN)
            .args(["stats", "--format", "csv", "-q", "--report"])
            .arg(summaries.join(","))
            .arg("-o")
            .arg(&prefix)
            .arg(&input)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let mut empty = 0;
        for name in &summaries {
            let theirs = std::fs::read(stored.join(format!("{fixture}_{name}.csv"))).unwrap();
            let ours = std::fs::read(dir.path().join(format!("{fixture}_{name}.csv"))).unwrap();
            assert_eq!(ours.is_empty(), theirs.is_empty(), "{fixture} {name}");
            empty += usize::from(theirs.is_empty());
        }
        assert!(
            empty > 0,
            "{fixture}: NVIDIA wrote no empty file to compare with"
        );
    }
}
