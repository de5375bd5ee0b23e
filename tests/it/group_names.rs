//! `--group-names` against SQL over real PyTorch exports: `stats`, `compare`
//! and `series` sum NVTX ranges by grouped name as SQL over the source does
//! with the naming rule written again here, as regular expressions
//! ([`by_rule`]), independently of the library's parser. The summaries that
//! project ranges onto the GPU are checked against their own rows by
//! recorded name (checked against nsys elsewhere), added up by that rule.
//!
//! Fixtures: nsys-ai_h100_2gpu_1s (PyTorch `emit_nvtx`, `, op_id = N` on
//! each of 16 582 distinct names), dlprof_nsys_profile (`, seq = N`) and
//! h100_torch_graph_node (`step 0` to `step 5`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use crate::support::fixtures::fixture;
use crate::support::nsys::{csv_rows, unmarked};
use crate::support::program::BIN;
use crate::support::source::open;
use nsys2perfetto::compare::{compare, run_summary_with};
use nsys2perfetto::stats::{summarize_with, Cell, RangeNames, StatsReport, Table};
use nsys2perfetto::Report;
use regex::Regex;

/// The fixtures whose ranges the rule groups, or `None` (having said why).
fn pytorch_fixtures() -> Option<Vec<std::path::PathBuf>> {
    [
        "nsys-ai_h100_2gpu_1s.sqlite",
        "dlprof_nsys_profile.sqlite",
        "h100_torch_graph_node.sqlite",
    ]
    .into_iter()
    .map(fixture)
    .collect()
}

/// The rule of `--group-names`, written as two regular expressions: the
/// `emit_nvtx` decorations ending a name go, then a number ending it after
/// `#` or a space; never the whole name.
fn by_rule(name: &str) -> String {
    static RULES: OnceLock<(Regex, Regex)> = OnceLock::new();
    let (decorations, number) = RULES.get_or_init(|| {
        (
            Regex::new(
                r"^(.+?)(?:, (?:seq|op_id) = \d+|, (?:sizes|input_op_ids) = \[[\[\]\(\)\d, ]*\])+$",
            )
            .unwrap(),
            Regex::new(r"^(.+)[# ]\d+$").unwrap(),
        )
    });
    let name = match decorations.captures(name) {
        Some(c) => c[1].to_owned(),
        None => name.to_owned(),
    };
    match number.captures(&name) {
        Some(c) => c[1].to_owned(),
        None => name,
    }
}

/// (count, total) by key.
type Sums = BTreeMap<(String, String), (i128, i128)>;

/// The NVTX ranges of `path` by (style, `domain:` grouped name): their count
/// and summed duration, a range open at the end lasting until the last time
/// of any NVTX row; with `recorded` the names as recorded.
fn ranges_by_sql(path: &Path, recorded: bool) -> Sums {
    let db = open(path);
    let mut stmt = db
        .prepare(
            "WITH last AS (SELECT max(max(start), max(coalesce(end, start))) AS t FROM NVTX_EVENTS),
                  domains AS (SELECT domainId, (globalTid >> 24) & 16777215 AS pid, text
                              FROM NVTX_EVENTS WHERE eventType = 75)
             SELECT CASE WHEN n.eventType IN (59, 70) THEN 'PushPop' ELSE 'StartEnd' END,
                    coalesce(d.text, ''), coalesce(s.value, n.text, ''),
                    coalesce(n.end, (SELECT t FROM last)) - n.start
             FROM NVTX_EVENTS n
             LEFT JOIN domains d ON d.domainId = n.domainId
                  AND d.pid = (n.globalTid >> 24) & 16777215
             LEFT JOIN StringIds s ON s.id = n.textId
             WHERE n.eventType IN (59, 60, 70, 71)",
        )
        .unwrap();
    let mut sums = Sums::new();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (style, domain, name, duration) = row.unwrap();
        let name = match recorded {
            true => name,
            false => by_rule(&name),
        };
        let sum = sums.entry((style, format!("{domain}:{name}"))).or_default();
        sum.0 += 1;
        sum.1 += i128::from(duration);
    }
    sums
}

/// Runs the program; its standard output.
fn run(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The rows of the one CSV table `stats`/`compare` wrote, header first.
fn table_rows(csv: &str) -> Vec<Vec<String>> {
    csv_rows(&unmarked(csv))
}

fn column(header: &[String], name: &str) -> usize {
    header.iter().position(|c| c == name).unwrap()
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn stats_sums_ranges_by_grouped_name_as_sql_does() {
    let Some(fixtures) = pytorch_fixtures() else {
        return;
    };
    for path in &fixtures {
        let input = path.to_str().unwrap();
        let expected = ranges_by_sql(path, false);
        let recorded = ranges_by_sql(path, true);
        // The rule does group these exports' names.
        assert!(expected.len() < recorded.len(), "{input}: nothing grouped");
        for (report, style) in [
            ("nvtx_sum", None),
            ("nvtx_pushpop_sum", Some("PushPop")),
            ("nvtx_startend_sum", Some("StartEnd")),
        ] {
            let csv = run(&[
                "stats",
                "--group-names",
                "--format",
                "csv",
                "--report",
                report,
                input,
            ]);
            let rows = table_rows(&csv);
            let header = &rows[0];
            let (range, count, total) = (
                column(header, "Range"),
                column(header, "Instances"),
                column(header, "Total Time (ns)"),
            );
            let mut ours = Sums::new();
            for row in &rows[1..] {
                let row_style = match style {
                    Some(s) => s.to_owned(),
                    None => row[column(header, "Style")].clone(),
                };
                let sums = (row[count].parse().unwrap(), row[total].parse().unwrap());
                let before = ours.insert((row_style, row[range].clone()), sums);
                assert!(before.is_none(), "{input} {report}: {row:?} twice");
            }
            let wanted: Sums = expected
                .iter()
                .filter(|((s, _), _)| style.is_none_or(|style| s == style))
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            assert_eq!(ours, wanted, "{input} {report}");
        }
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn without_the_flag_every_recorded_name_is_a_row() {
    let Some(fixtures) = pytorch_fixtures() else {
        return;
    };
    let path = &fixtures[0];
    let csv = run(&[
        "stats",
        "--format",
        "csv",
        "--report",
        "nvtx_sum",
        path.to_str().unwrap(),
    ]);
    let rows = table_rows(&csv);
    assert_eq!(rows.len() - 1, ranges_by_sql(path, true).len());
}

/// (Range, Style) or (Range, Style, PID, TID, Kernel Name): the cells of
/// `table` in `keys`, the range grouped; by them, the sums of the cells in
/// `sums`.
fn summed(
    table: &Table,
    keys: &[&str],
    sums: &[&str],
    group: bool,
) -> BTreeMap<Vec<String>, Vec<i128>> {
    let at = |name: &str| table.columns.iter().position(|c| c == name).unwrap();
    let mut out: BTreeMap<Vec<String>, Vec<i128>> = BTreeMap::new();
    for row in &table.rows {
        let key: Vec<String> = keys
            .iter()
            .map(|k| {
                let text = row[at(k)].text();
                match (*k == "Range" || *k == "NVTX Range") && group {
                    // `domain:name`: the rule applies to the name.
                    true => match text.split_once(':') {
                        Some((domain, name)) => format!("{domain}:{}", by_rule(name)),
                        None => text,
                    },
                    false => text,
                }
            })
            .collect();
        let entry = out.entry(key).or_insert_with(|| vec![0; sums.len()]);
        for (sum, column) in entry.iter_mut().zip(sums) {
            match &row[at(column)] {
                Cell::Int(v) => *sum += v,
                other => panic!("{column}: {other:?}"),
            }
        }
    }
    out
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn projected_summaries_by_grouped_name_add_up_their_recorded_rows() {
    let Some(fixtures) = pytorch_fixtures() else {
        return;
    };
    let checks: [(StatsReport, &[&str], &[&str]); 2] = [
        (
            StatsReport::NvtxGpuProjSum,
            &["Range", "Style"],
            &[
                "Total Proj Time (ns)",
                "Total Range Time (ns)",
                "Range Instances",
                "Total GPU Ops",
            ],
        ),
        (
            StatsReport::NvtxKernSum,
            &["NVTX Range", "Style", "PID", "TID", "Kernel Name"],
            &["NVTX Inst", "Total Time (ns)"],
        ),
    ];
    for path in &fixtures {
        let report = Report::open(path).unwrap();
        for (summary, keys, sums) in checks {
            let recorded = &summarize_with(&report, &[summary], RangeNames::Recorded).unwrap()[0];
            let grouped = &summarize_with(&report, &[summary], RangeNames::Grouped).unwrap()[0];
            assert!(
                !recorded.rows.is_empty(),
                "{}: no {summary}",
                path.display()
            );
            let by_group = summed(recorded, keys, sums, true);
            assert_eq!(
                summed(grouped, keys, sums, false),
                by_group,
                "{} {summary}",
                path.display()
            );
            // One row per group.
            assert_eq!(grouped.rows.len(), by_group.len());
        }
    }
}

/// The NVTX rows of `compare --group-names --kind nvtx a b`: by name, (count
/// and total) of A and of B.
fn compared_nvtx(a: &Path, b: &Path) -> BTreeMap<String, [(i128, i128); 2]> {
    let csv = run(&[
        "compare",
        "--group-names",
        "--kind",
        "nvtx",
        "--format",
        "csv",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    let rows = table_rows(&csv);
    let header = &rows[0];
    let at = |name| column(header, name);
    rows[1..]
        .iter()
        .map(|row| {
            assert_eq!(row[at("Kind")], "nvtx");
            let cell = |name| row[at(name)].parse::<i128>().unwrap();
            (
                row[at("Name")].clone(),
                [
                    (cell("Count A"), cell("Total A (ns)")),
                    (cell("Count B"), cell("Total B (ns)")),
                ],
            )
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn compare_matches_operators_across_runs_by_grouped_name() {
    let Some(fixtures) = pytorch_fixtures() else {
        return;
    };
    // Two PyTorch runs: their op ids and sequence numbers differ, their
    // operators (aten::add_, aten::empty, ...) do not.
    let (a, b) = (&fixtures[0], &fixtures[1]);
    let ours = compared_nvtx(a, b);
    // Both styles of a name are one row in compare.
    let by_name = |sums: Sums| {
        let mut out: BTreeMap<String, (i128, i128)> = BTreeMap::new();
        for ((_, name), (count, total)) in sums {
            let e = out.entry(name).or_default();
            e.0 += count;
            e.1 += total;
        }
        out
    };
    let (ea, eb) = (
        by_name(ranges_by_sql(a, false)),
        by_name(ranges_by_sql(b, false)),
    );
    let names: std::collections::BTreeSet<&String> = ea.keys().chain(eb.keys()).collect();
    assert_eq!(ours.len(), names.len());
    let mut in_both = 0;
    for name in names {
        let sides = [
            ea.get(name).copied().unwrap_or_default(),
            eb.get(name).copied().unwrap_or_default(),
        ];
        assert_eq!(ours[name.as_str()], sides, "{name}");
        in_both += usize::from(ea.contains_key(name) && eb.contains_key(name));
    }
    assert!(in_both > 0, "no operator in both runs");

    // Each grouped name's projected GPU time is the sum of its recorded
    // names' (those are checked against nsys in tests/it/compare.rs).
    for path in [a, b] {
        let report = Report::open(path).unwrap();
        let recorded = run_summary_with(&report, RangeNames::Recorded).unwrap();
        let grouped = run_summary_with(&report, RangeNames::Grouped).unwrap();
        let mut expected: BTreeMap<String, i128> = BTreeMap::new();
        for (name, time) in &recorded.nvtx_projected {
            let (domain, text) = name.split_once(':').unwrap();
            *expected
                .entry(format!("{domain}:{}", by_rule(text)))
                .or_default() += time;
        }
        let ours: BTreeMap<String, i128> = grouped.nvtx_projected.iter().cloned().collect();
        assert_eq!(ours, expected, "{}", path.display());
        // And compare shows it.
        for d in compare(&grouped, &grouped) {
            if d.kind == nsys2perfetto::compare::Kind::Nvtx {
                let time = expected.get(&d.name).copied().unwrap_or(0);
                assert_eq!(d.a.unwrap().gpu_time, Some(time), "{}", d.name);
            }
        }
    }
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn series_patterns_match_grouped_names() {
    let Some(fixtures) = pytorch_fixtures() else {
        return;
    };
    let (a, b) = (&fixtures[0], &fixtures[1]);
    let patterns = ["^aten::add_?$", "^aten::(mm|addmm)$", "^aten::empty$"];
    let mut args = vec!["series", "--group-names", "--quiet"];
    args.extend(["--param", "run=a", a.to_str().unwrap()]);
    args.extend(["--param", "run=b", b.to_str().unwrap()]);
    args.push("--events");
    let events: Vec<String> = patterns.iter().map(|p| format!("nvtx:{p}")).collect();
    args.extend(events.iter().map(String::as_str));
    let rows = csv_rows(&run(&args));
    let header = &rows[0];
    let mut matched = 0;
    for (pattern, row) in patterns.iter().zip(&rows[1..]) {
        let regex = Regex::new(pattern).unwrap();
        for (run, path) in [("a", a), ("b", b)] {
            // Ranges that ended, by their text (inline text first, as
            // series reads it), grouped, then matched.
            let db = open(path);
            let mut stmt = db
                .prepare(
                    "SELECT coalesce(n.text, s.value, ''), n.end - n.start FROM NVTX_EVENTS n
                     LEFT JOIN StringIds s ON s.id = n.textId
                     WHERE n.eventType IN (59, 60, 70, 71) AND n.end IS NOT NULL",
                )
                .unwrap();
            let (mut count, mut total) = (0u64, 0i64);
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                .unwrap();
            for row in rows {
                let (name, duration) = row.unwrap();
                if regex.is_match(&by_rule(&name)) {
                    count += 1;
                    total += duration;
                }
            }
            let cell = |c: &str| &row[column(header, &format!("run={run} {c}"))];
            assert_eq!(cell("count"), &count.to_string(), "{pattern} in {run}");
            assert_eq!(cell("total_ns"), &total.to_string(), "{pattern} in {run}");
            matched += usize::from(count > 0);
        }
    }
    assert!(matched >= 4, "the patterns match in too few runs");
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn series_projections_by_grouped_name_are_those_of_the_recorded_names() {
    let Some(fixtures) = pytorch_fixtures() else {
        return;
    };
    let report = Report::open(&fixtures[0]).unwrap();
    let parse = |p: &str| nsys2perfetto::series::EventPattern::parse(p).unwrap();
    // With the rule, `^aten::mm$` matches what, as recorded, the pattern
    // that allows an op id after it matches.
    let grouped = nsys2perfetto::series::measure_events_with(
        &report,
        &[parse("nvtx-gpu:^aten::mm$"), parse("nvtx:^aten::mm$")],
        RangeNames::Grouped,
    )
    .unwrap();
    let recorded = nsys2perfetto::series::measure_events(
        &report,
        &[
            parse(r"nvtx-gpu:^aten::mm, op_id = \d+$"),
            parse(r"nvtx:^aten::mm, op_id = \d+$"),
            parse("nvtx:^aten::mm$"),
        ],
    )
    .unwrap();
    assert!(grouped[0].count > 0 && grouped[1].count > 0);
    assert_eq!(grouped[0], recorded[0]);
    assert_eq!(grouped[1], recorded[1]);
    // As recorded, no range is named `aten::mm` alone.
    assert_eq!(recorded[2].count, 0);
}

/// More grouped names than `stats` holds in memory (16 384): those past them
/// are grouped in its temporary database, and the rows still equal SQL's.
#[test]
fn grouped_names_past_the_groups_held_in_memory_equal_sql() {
    const NAMES: usize = 20_000;
    let thread = crate::support::synth::Thread { pid: 7, tid: 7 };
    let (_dir, export) = crate::support::convert::synthetic(|s| {
        let mut at = 0i64;
        // Each name twice, with op ids of their own; a third time at the
        // end for every tenth, so that groups past the first 16 384 hold
        // ranges from both sides of the limit.
        for pass in 0..3 {
            for i in (0..NAMES).filter(|i| pass < 2 || i % 10 == 0) {
                let op_id = pass * NAMES + i;
                let duration = 100 + (op_id as i64 * 7_919) % 9_900;
                let name = format!("layer_{i}.forward, seq = {i}, op_id = {op_id}");
                s.nvtx_push_pop(thread, at..at + duration, &name);
                at += 10_000;
            }
        }
    });
    let expected = ranges_by_sql(&export, false);
    assert_eq!(expected.len(), NAMES);
    let csv = run(&[
        "stats",
        "--group-names",
        "--format",
        "csv",
        "--report",
        "nvtx_sum",
        export.to_str().unwrap(),
    ]);
    let rows = table_rows(&csv);
    let header = &rows[0];
    let at = |name| column(header, name);
    let ours: Sums = rows[1..]
        .iter()
        .map(|row| {
            (
                (row[at("Style")].clone(), row[at("Range")].clone()),
                (
                    row[at("Instances")].parse().unwrap(),
                    row[at("Total Time (ns)")].parse().unwrap(),
                ),
            )
        })
        .collect();
    assert_eq!(ours, expected);
    // Largest total first.
    let totals: Vec<i128> = rows[1..]
        .iter()
        .map(|r| r[at("Total Time (ns)")].parse().unwrap())
        .collect();
    assert!(totals.windows(2).all(|w| w[0] >= w[1]));
}
