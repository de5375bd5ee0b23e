//! Steps across the ranks of a job: each rank's step durations and GPU busy
//! time, checked against the NVTX ranges and GPU work the exports hold (SQL,
//! and a plain interval union here); the slowest rank, its lead and the
//! skew recomputed from those; the renderings read back.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nsys2perfetto::merge::{Labels, RankPattern};
use nsys2perfetto::steps::{measure_steps, JobSteps, StepMatch, StepOptions, StepPattern};
use nsys2perfetto::ReadOptions;

use crate::support::fixtures::{cori_exports, fixture};
use crate::support::synth::{GpuStream, Synth, Thread, HTOD};

/// A step as the export holds it: (pid, name, start, end).
type SqlStep = (u32, String, i64, i64);

/// The NVTX ranges whose names SQLite's GLOB matches, in start order.
fn sql_steps(export: &Path, glob: &str) -> Vec<SqlStep> {
    let db = crate::support::source::open(export);
    if !crate::support::source::has_table(&db, "NVTX_EVENTS") {
        return Vec::new();
    }
    let text = match crate::support::source::has_column(&db, "NVTX_EVENTS", "textId") {
        true => "COALESCE(n.text, (SELECT value FROM StringIds WHERE id = n.textId))",
        false => "n.text",
    };
    let sql = format!(
        "SELECT (n.globalTid >> 24) & 16777215, {text} AS t, n.start, n.end FROM NVTX_EVENTS n \
         WHERE n.eventType IN (59, 60) AND n.end IS NOT NULL AND t GLOB ?1 ORDER BY n.start, n.end"
    );
    let mut stmt = db.prepare(&sql).unwrap();
    stmt.query_map([glob], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The union of the GPU work of `pid` (all processes for `None`): kernels,
/// memcpys, memsets and graphs traced whole, as disjoint sorted intervals.
fn busy_union(export: &Path, pid: Option<u32>) -> Vec<(i64, i64)> {
    let db = crate::support::source::open(export);
    let mut work: Vec<(i64, i64)> = Vec::new();
    for table in [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    ] {
        if !crate::support::source::has_table(&db, table) {
            continue;
        }
        let sql = format!(
            "SELECT start, end FROM {table} WHERE ?1 IS NULL OR (globalPid >> 24) & 16777215 = ?1"
        );
        let mut stmt = db.prepare(&sql).unwrap();
        let rows = stmt
            .query_map([pid], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        work.extend(rows.map(Result::unwrap));
    }
    work.sort_unstable();
    let mut union: Vec<(i64, i64)> = Vec::new();
    for (start, end) in work {
        match union.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ if end > start => union.push((start, end)),
            _ => {}
        }
    }
    union
}

/// The time of `union` within `[start, end)`.
fn within(union: &[(i64, i64)], start: i64, end: i64) -> u64 {
    union
        .iter()
        .map(|&(s, e)| (e.min(end) - s.max(start)).max(0) as u64)
        .sum()
}

fn total(union: &[(i64, i64)]) -> u64 {
    union.iter().map(|(s, e)| (e - s) as u64).sum()
}

fn measure(inputs: &[PathBuf], pattern: &str, labels: Labels) -> JobSteps {
    let mut options = StepOptions::new(StepPattern::new(pattern).unwrap());
    options.labels = labels;
    measure_steps(inputs, &options, &ReadOptions::default(), &mut |_| {}).unwrap()
}

/// Checks every rank's steps and the comparison of ranks against `ranks`:
/// per rank, its export, its process and its steps as SQL finds them.
fn check_against_source(job: &JobSteps, ranks: &[(&Path, u32, Vec<SqlStep>)]) {
    assert_eq!(job.ranks.len(), ranks.len());
    for (r, (export, pid, steps)) in ranks.iter().enumerate() {
        let rank = &job.ranks[r];
        assert_eq!(rank.pid, Some(*pid), "{}", rank.label);
        assert_eq!(rank.steps, steps.len(), "{}", rank.label);
        let union = busy_union(export, Some(*pid));
        assert_eq!(rank.gpu_work.busy_ns, total(&union), "{}", rank.label);
        // The rank's steps, in the job's order, are its ranges in start order.
        let mine: Vec<_> = job
            .steps
            .iter()
            .filter_map(|s| s.times[r].as_ref())
            .collect();
        assert_eq!(mine.len(), steps.len());
        for (time, (_, name, start, end)) in mine.iter().zip(steps) {
            assert_eq!(
                (&time.name, time.start_ns, time.duration_ns),
                (name, *start, (end - start) as u64)
            );
            assert_eq!(time.gpu_busy_ns, within(&union, *start, *end), "{name}");
        }
    }
    // The slowest of each step, its lead and the skew, from the durations.
    let mut skews = Vec::new();
    for step in &job.steps {
        let present: Vec<(usize, u64)> = step
            .times
            .iter()
            .enumerate()
            .filter_map(|(r, t)| t.as_ref().map(|t| (r, t.duration_ns)))
            .collect();
        if present.len() < 2 {
            assert!(step.slowest.is_none());
            continue;
        }
        let longest = present.iter().map(|p| p.1).max().unwrap();
        let shortest = present.iter().map(|p| p.1).min().unwrap();
        let first_longest = present.iter().find(|p| p.1 == longest).unwrap().0;
        let mut sorted: Vec<u64> = present.iter().map(|p| p.1).collect();
        sorted.sort_unstable();
        let n = sorted.len();
        let median = (sorted[(n - 1) / 2] + sorted[n / 2]) as f64 / 2.0;
        let s = step.slowest.as_ref().unwrap();
        assert_eq!(s.rank, first_longest, "{}", step.name);
        assert_eq!(
            step.times[s.fastest_rank].as_ref().unwrap().duration_ns,
            shortest
        );
        assert_eq!(s.skew_ns, longest - shortest);
        assert_eq!(s.median_ns, median);
        assert_eq!(s.lead_over_median_ns, longest as f64 - median);
        skews.push(longest - shortest);
    }
    assert_eq!(job.skew.steps_compared, skews.len());
    assert_eq!(job.skew.max_skew.map(|m| m.1), skews.iter().copied().max());
    if !skews.is_empty() {
        let mean = skews.iter().sum::<u64>() as f64 / skews.len() as f64;
        assert!((job.skew.mean_skew_ns.unwrap() - mean).abs() < 1e-6);
    }
}

/// The host an export records, as merge labels ranks.
fn host(export: &Path) -> Option<String> {
    let db = crate::support::source::open(export);
    db.query_row(
        "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'",
        [],
        |r| r.get(0),
    )
    .ok()
}

/// The Cori job's ranks record no NVTX range: each rank is there, named as
/// merge names it, with its GPU work's union over the capture, and the
/// renderings say that no range matched and that the reports have none.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_cori_ranks_without_nvtx_are_each_said_with_their_gpu_busy_time() {
    let Some(exports) = cori_exports(8) else {
        return;
    };
    let labels = Labels::Ranks {
        from_name: Some(RankPattern::new(r"report(\d+)").unwrap()),
    };
    let job = measure(&exports, "ProfilerStep*", labels);
    assert_eq!(job.ranks.len(), 8);
    assert!(job.steps.is_empty());
    assert_eq!(job.skew.steps_compared, 0);
    for (i, (rank, export)) in job.ranks.iter().zip(&exports).enumerate() {
        assert!(
            sql_steps(export, "*").is_empty(),
            "no NVTX in Cori's exports"
        );
        let expected = match host(export) {
            Some(host) => format!("rank {} ({host})", i + 1),
            None => format!("rank {}", i + 1),
        };
        assert_eq!(rank.label, expected);
        assert_eq!((rank.pid, rank.steps, rank.nvtx.count), (None, 0, 0));
        let union = busy_union(export, None);
        assert!(!union.is_empty());
        assert_eq!(rank.gpu_work.busy_ns, total(&union), "{}", rank.label);
        let db = crate::support::source::open(export);
        let gpus: Vec<i64> = db
            .prepare(
                "SELECT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL UNION \
                 SELECT deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION \
                 SELECT deviceId FROM CUPTI_ACTIVITY_KIND_MEMSET ORDER BY 1",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(rank.gpu_work.gpus, gpus);
    }
    let notes = job.notes();
    assert_eq!(notes.len(), 8, "{notes:?}");
    assert!(notes
        .iter()
        .all(|n| n.contains("no NVTX range matching \"ProfilerStep*\"")
            && n.contains("its report has no NVTX range")));
    let markdown = rendered(&job, JobSteps::write_markdown);
    assert!(markdown.contains("0 steps"), "{markdown}");
    // The note as CommonMark writes it: the glob's star escaped.
    assert!(
        markdown.contains(&notes[7].replace('*', "\\*")),
        "{markdown}"
    );
    check_json(&job);
}

/// The two H100 captures of one workload (CUDA graphs traced whole and by
/// node) as two ranks: steps `step 0`..`step 5` match by name, and every
/// number equals the source's.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn steps_of_the_h100_captures_match_by_name_and_equal_the_source() {
    let (Some(whole), Some(node)) = (
        fixture("h100_torch_graph_whole.sqlite"),
        fixture("h100_torch_graph_node.sqlite"),
    ) else {
        return;
    };
    let inputs = vec![whole.clone(), node.clone()];
    let labels = Labels::Given(vec!["whole".into(), "node".into()]);
    let job = measure(&inputs, "step *", labels);
    assert_eq!(job.matched_by, StepMatch::Name);
    let ranks: Vec<(&Path, u32, Vec<SqlStep>)> = [&whole, &node]
        .iter()
        .map(|export| {
            let steps = sql_steps(export, "step *");
            assert!(steps.len() >= 5, "{}", export.display());
            (export.as_path(), steps[0].0, steps)
        })
        .collect();
    check_against_source(&job, &ranks);
    // Matched by name: each step's times are all that step's.
    for step in &job.steps {
        assert!(step.times.iter().flatten().all(|t| t.name == step.name));
    }
    assert_eq!(job.ranks[0].label, "whole");
    // The whole graphs' kernels are graph runs: without them, no busy time.
    assert!(job.steps[1].times[0].as_ref().unwrap().gpu_busy_ns > 0);
    check_json(&job);
}

/// One report of two processes, a GPU each: two ranks. Their `aten::linear`
/// ranges carry per-process op ids, so they match by order.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn two_processes_of_one_report_are_two_ranks_matched_by_order() {
    let Some(export) = fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let job = measure(
        std::slice::from_ref(&export),
        "aten::linear*",
        Labels::default(),
    );
    let all = sql_steps(&export, "aten::linear*");
    let mut pids: Vec<u32> = all.iter().map(|s| s.0).collect();
    pids.dedup();
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(pids.len(), 2);
    let ranks: Vec<(&Path, u32, Vec<SqlStep>)> = pids
        .iter()
        .map(|&pid| {
            let steps = all.iter().filter(|s| s.0 == pid).cloned().collect();
            (export.as_path(), pid, steps)
        })
        .collect();
    // Fewer than half of one process's names are the other's.
    let shared = ranks[0]
        .2
        .iter()
        .filter(|a| ranks[1].2.iter().any(|b| b.1 == a.1))
        .count();
    assert!(2 * shared <= ranks[0].2.len());
    assert_eq!(job.matched_by, StepMatch::Order);
    check_against_source(&job, &ranks);
    let host = host(&export).unwrap();
    assert_eq!(
        job.ranks[0].label,
        format!("rank 0 ({host}) pid {}", pids[0])
    );
    assert_eq!(job.ranks[1].gpu_work.gpus.len(), 1);
    assert_ne!(
        job.ranks[0].gpu_work.gpus, job.ranks[1].gpu_work.gpus,
        "a GPU each"
    );
}

const STEP_NS: i64 = 1_000_000;

/// A rank of a synthetic job: `steps` ProfilerStep ranges of `STEP_NS`
/// (`slow` times longer), on its own clock offset by `clock`, each with
/// work on two overlapping streams, a copy, and a kernel across its end;
/// `skip` is a step it lacks.
fn synthetic_rank(path: &Path, pid: u32, steps: i64, slow: f64, clock: i64, skip: Option<i64>) {
    let mut s = Synth::new(path);
    s.process(pid, "python");
    let main = Thread { pid, tid: pid };
    s.thread(main, "python");
    s.gpu(0, "H100");
    let on = |stream| GpuStream {
        pid,
        device: 0,
        context: 1,
        stream,
    };
    let length = (STEP_NS as f64 * slow) as i64;
    let mut at = clock;
    for i in 0..steps {
        if skip != Some(i) {
            s.nvtx_push_pop(main, at..at + length, &format!("ProfilerStep#{i}"));
        }
        s.nvtx_push_pop(main, at + 10..at + 20, "forward");
        s.kernel(on(7), at + 100_000..at + 400_000, "gemm");
        s.kernel(on(8), at + 300_000..at + 500_000, "attention");
        s.memcpy(on(7), at + 600_000..at + 650_000, HTOD);
        s.memset(on(8), at + 640_000..at + 660_000);
        s.kernel(
            on(7),
            at + length - 50_000..at + length + 50_000,
            "allreduce",
        );
        at += length + 100_000;
    }
    // Another process's work, on the same GPU, counts for no step.
    let other = GpuStream {
        pid: pid + 1,
        device: 0,
        context: 2,
        stream: 9,
    };
    s.kernel(other, clock..at, "other");
    s.finish();
}

/// Four ranks with ProfilerStep#N ranges, one slow on purpose and one that
/// lacks a step: the slow rank is the slowest of every step, by what its
/// durations say, and the missing step is said in every rendering.
#[test]
fn a_slow_rank_and_a_missing_step_in_a_synthetic_job() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = Vec::new();
    for (rank, (slow, skip)) in [(1.0, None), (1.02, None), (1.25, None), (1.01, Some(3))]
        .into_iter()
        .enumerate()
    {
        let path = dir.path().join(format!("job_rank{rank}.sqlite"));
        let pid = 100 + 10 * rank as u32;
        synthetic_rank(&path, pid, 6, slow, 1_000_000_000 * rank as i64, skip);
        inputs.push(path);
    }
    let job = measure(&inputs, "ProfilerStep*", Labels::default());
    assert_eq!(job.matched_by, StepMatch::Name);
    let ranks: Vec<(&Path, u32, Vec<SqlStep>)> = inputs
        .iter()
        .enumerate()
        .map(|(r, p)| {
            (
                p.as_path(),
                100 + 10 * r as u32,
                sql_steps(p, "ProfilerStep*"),
            )
        })
        .collect();
    check_against_source(&job, &ranks);
    let names: Vec<&str> = job.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        (0..6)
            .map(|i| format!("ProfilerStep#{i}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(job.steps[3].missing(), [3]);
    assert_eq!(job.skew.slowest_most_often, Some(2));
    assert_eq!(job.skew.slowest_count, [0, 0, 6, 0]);
    assert_eq!(job.ranks[0].label, "rank 0");
    // The other process's kernel is in the report, not in the rank.
    assert!(job.ranks[0].gpu_work.busy_ns < total(&busy_union(&inputs[0], None)));
    let note = "Step \"ProfilerStep#3\" is missing on rank 3.";
    assert!(job.notes().iter().any(|n| n == note), "{:?}", job.notes());
    let markdown = rendered(&job, JobSteps::write_markdown);
    assert!(markdown.contains(note), "{markdown}");
    assert!(markdown.contains("| ProfilerStep#3 | "), "{markdown}");
    assert!(
        markdown.contains("Slowest most often: rank 2, in 6 of 6 steps."),
        "{markdown}"
    );
    let html = rendered(&job, JobSteps::write_html);
    assert_eq!(html.matches("class=\"bar slowest\"").count(), 6);
    assert_eq!(
        html.matches("class=\"missing\"").count(),
        2,
        "chart and table"
    );
    check_json(&job);
    check_in_chromium(&job, dir.path());
}

/// Markdown and JSON say nothing matched where nothing did, and the ranges
/// that exist.
#[test]
fn a_pattern_that_matches_nothing_names_what_exists() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank.sqlite");
    synthetic_rank(&path, 5, 2, 1.0, 0, None);
    let job = measure(&[path], "Step*", Labels::default());
    assert!(job.steps.is_empty());
    let notes = job.notes();
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].contains("no NVTX range matching \"Step*\""),
        "{notes:?}"
    );
    assert!(notes[0].contains("\"ProfilerStep#0\""), "{notes:?}");
    assert!(notes[0].contains("\"forward\""), "{notes:?}");
}

#[test]
fn bad_options_are_refused_before_reading() {
    let options = StepOptions::new(StepPattern::new("x*").unwrap());
    let e = measure_steps(&[], &options, &ReadOptions::default(), &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("no report"), "{e}");
    let mut options = options;
    options.labels = Labels::Given(vec!["a".into()]);
    let inputs = [
        PathBuf::from("/nonexistent/a"),
        PathBuf::from("/nonexistent/b"),
    ];
    let e = measure_steps(&inputs, &options, &ReadOptions::default(), &mut |_| {}).unwrap_err();
    assert_eq!(e.to_string(), "1 labels for 2 reports");
    assert!(StepPattern::new("").is_err());
}

fn rendered(
    job: &JobSteps,
    write: fn(&JobSteps, &mut dyn std::io::Write) -> std::io::Result<()>,
) -> String {
    let mut out = Vec::new();
    write(job, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Reads the JSON back with Python's parser and checks its numbers against
/// the steps' own.
fn check_json(job: &JobSteps) {
    let json = rendered(job, JobSteps::write_json);
    let script = "import json,sys\n\
        j=json.load(sys.stdin)\n\
        print(j['pattern'], j['matched_by'], len(j['ranks']), len(j['steps']))\n\
        for r in j['ranks']: print(r['label'], r['gpu_busy_ns'], r['steps'], r['slowest_in'])\n\
        for s in j['steps']:\n\
        \x20print(s['name'], [t and (t['duration_ns'], t['gpu_busy_ns']) for t in s['times']], s['missing'], s['slowest'] and (s['slowest']['rank'], s['slowest']['skew_ns']))\n\
        print(j['skew']['max_skew_ns'], j['skew']['slowest_most_often'], len(j['notes']))\n";
    let Ok(mut python) = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    else {
        crate::support::fixtures::skip("no python3 to read the JSON back");
        return;
    };
    use std::io::Write;
    python
        .stdin
        .take()
        .unwrap()
        .write_all(json.as_bytes())
        .unwrap();
    let out = python.wait_with_output().unwrap();
    assert!(out.status.success(), "not JSON: {json}");
    let by = match job.matched_by {
        StepMatch::Name => "name",
        StepMatch::Order => "order",
    };
    let mut expected = format!(
        "{} {by} {} {}\n",
        job.pattern,
        job.ranks.len(),
        job.steps.len()
    );
    for (r, rank) in job.ranks.iter().enumerate() {
        expected += &format!(
            "{} {} {} {}\n",
            rank.label, rank.gpu_work.busy_ns, rank.steps, job.skew.slowest_count[r]
        );
    }
    let py_none = |v: Option<String>| v.unwrap_or_else(|| "None".into());
    for step in &job.steps {
        let times: Vec<String> = step
            .times
            .iter()
            .map(|t| {
                py_none(
                    t.as_ref()
                        .map(|t| format!("({}, {})", t.duration_ns, t.gpu_busy_ns)),
                )
            })
            .collect();
        expected += &format!(
            "{} [{}] {:?} {}\n",
            step.name,
            times.join(", "),
            step.missing(),
            py_none(
                step.slowest
                    .as_ref()
                    .map(|s| format!("({}, {})", s.rank, s.skew_ns))
            )
        );
    }
    expected += &format!(
        "{} {} {}\n",
        py_none(job.skew.max_skew.map(|m| m.1.to_string())),
        py_none(job.skew.slowest_most_often.map(|r| r.to_string())),
        job.notes().len()
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}

/// Puts the HTML fragment in a page, has headless Chromium load it with a
/// script that reports errors and the chart's parts, and takes a screenshot
/// (kept in target/steps-chart.png, to look at).
fn check_in_chromium(job: &JobSteps, dir: &Path) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let Some(chromium) = ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    }) else {
        crate::support::fixtures::skip("no chromium on PATH (apt-get install chromium)");
        return;
    };
    let fragment = rendered(job, JobSteps::write_html);
    let page = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>steps</title>\
         <script>window.errors=[];window.addEventListener('error',e=>errors.push(String(e.message)));\
         const ce=console.error;console.error=(...a)=>{{errors.push(a.join(' '));ce(...a)}};</script></head>\
         <body>{fragment}<script>document.body.setAttribute('data-check',\
         'errors='+errors.length+' svg='+document.querySelectorAll('svg.job-steps-chart').length+\
         ' slowest='+document.querySelectorAll('g.slowest').length+\
         ' width='+Math.round(document.querySelector('svg.job-steps-chart').getBBox().width));</script></body></html>"
    );
    let html = dir.join("steps.html");
    std::fs::write(&html, page).unwrap();
    let run = |args: &[String]| {
        let out = Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--enable-logging=stderr",
                "--v=0",
            ])
            .arg(format!(
                "--user-data-dir={}",
                dir.join("chromium").display()
            ))
            .args(args)
            .arg(format!("file://{}", html.display()))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let dom = run(&["--dump-dom".into()]);
    let stderr = String::from_utf8_lossy(&dom.stderr);
    assert!(
        !stderr.lines().any(|l| l.contains(":CONSOLE(")),
        "console messages: {stderr}"
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    let slowest = job.steps.iter().filter(|s| s.slowest.is_some()).count();
    assert!(
        dom.contains(&format!(
            "data-check=\"errors=0 svg=1 slowest={slowest} width="
        )),
        "{dom}"
    );
    let png = Path::new(env!("CARGO_TARGET_TMPDIR")).join("steps-chart.png");
    run(&[
        format!("--screenshot={}", png.display()),
        "--window-size=1100,900".into(),
    ]);
    assert!(std::fs::metadata(&png).unwrap().len() > 1000);
}

/// A rank of `ProfilerStep#N` ranges of the given lengths (ns), one after
/// the other, each with a kernel on each of `gpus`.
fn rank_of_steps(path: &Path, pid: u32, lengths: &[i64], gpus: &[i64]) {
    let mut s = Synth::new(path);
    s.process(pid, "python");
    let main = Thread { pid, tid: pid };
    s.thread(main, "python");
    for &gpu in gpus {
        s.gpu(gpu, "H100");
    }
    let mut at = 1_000_000;
    for (i, &length) in lengths.iter().enumerate() {
        s.nvtx_push_pop(main, at..at + length, &format!("ProfilerStep#{i}"));
        for &device in gpus {
            let on = GpuStream {
                pid,
                device,
                context: 1 + device,
                stream: 7,
            };
            s.kernel(on, at + 1_000..at + 2_000, "gemm");
        }
        at += length + 1_000;
    }
    s.finish();
}

/// Issue 27 item 6: one rank has nothing to be compared with: its page
/// speaks of no skew and no slowest rank, and names its GPUs in words.
#[test]
fn one_rank_s_page_compares_nothing_and_names_its_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank.sqlite");
    rank_of_steps(&path, 7, &[1_000_000; 6], &[0]);
    let job = measure(
        std::slice::from_ref(&path),
        "ProfilerStep*",
        Labels::default(),
    );
    assert_eq!((job.ranks.len(), job.steps.len()), (1, 6));
    let markdown = rendered(&job, JobSteps::write_markdown);
    let html = rendered(&job, JobSteps::write_html);
    for page in [&markdown, &html] {
        for word in ["skew", "Skew", "slowest", "Slowest", "two ranks"] {
            assert!(!page.contains(word), "{word}: {page}");
        }
    }
    assert!(markdown.contains("| rank 0 | 6 | GPU 0 |"), "{markdown}");
    let two = dir.path().join("two.sqlite");
    rank_of_steps(&two, 7, &[1_000_000; 2], &[0, 1]);
    let job = measure(&[two], "ProfilerStep*", Labels::default());
    let markdown = rendered(&job, JobSteps::write_markdown);
    assert!(
        markdown.contains("| rank 0 | 2 | GPUs 0, 1 |"),
        "{markdown}"
    );
}

/// Issue 27 item 6: two ranks whose steps take the same time: no rank is
/// the slowest of a tie, in the numbers, the chart or the words.
#[test]
fn ties_have_no_slowest_rank() {
    let dir = tempfile::tempdir().unwrap();
    let inputs: Vec<PathBuf> = (0..2)
        .map(|r| {
            let path = dir.path().join(format!("rank{r}.sqlite"));
            rank_of_steps(&path, 7 + r, &[1_000_000; 6], &[0]);
            path
        })
        .collect();
    let job = measure(&inputs, "ProfilerStep*", Labels::default());
    assert!(job
        .steps
        .iter()
        .all(|s| s.slowest.as_ref().unwrap().skew_ns == 0));
    assert_eq!(job.skew.slowest_count, [0, 0]);
    assert_eq!(job.skew.slowest_most_often, None);
    let markdown = rendered(&job, JobSteps::write_markdown);
    assert!(!markdown.contains("of 6 steps"), "{markdown}");
    assert!(
        markdown.contains("6 steps took every rank the same time"),
        "{markdown}"
    );
    assert_eq!(markdown.matches("| tie |").count(), 6, "{markdown}");
    let html = rendered(&job, JobSteps::write_html);
    assert!(!html.contains("slowest\""), "{html}");
    check_json(&job);
}

/// The heights of a chart's bars of step `name` (px), rank by rank.
fn bar_heights(html: &str, name: &str) -> Vec<f64> {
    html.split(&format!("<title>{name}: "))
        .skip(1)
        .map(|bar| {
            let height = bar.split("height=\"").nth(1).unwrap();
            height.split('"').next().unwrap().parse().unwrap()
        })
        .collect()
}

/// Issue 27 item 6: a warm-up 100 times longer than the other steps cuts
/// the time axis, said on the chart, so that the other steps' bars stay
/// tall enough to compare; the axis's ticks are round.
#[test]
fn a_long_warm_up_cuts_the_axis_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank.sqlite");
    let mut lengths = vec![2_000_000; 8];
    lengths[0] = 200_000_000;
    lengths[5] = 2_500_000;
    rank_of_steps(&path, 7, &lengths, &[0]);
    let job = measure(&[path], "ProfilerStep*", Labels::default());
    let html = rendered(&job, JobSteps::write_html);
    assert!(
        html.contains("The time axis is cut at 2.5 ms: 1 longer bar breaks at the top"),
        "{html}"
    );
    // The plot is 260 px tall: the longest step after the warm-up fills
    // most of it, and a step 20% shorter is seen to be shorter.
    let tallest = bar_heights(&html, "ProfilerStep#5")[0];
    let other = bar_heights(&html, "ProfilerStep#6")[0];
    assert!(tallest > 150.0, "{tallest}");
    assert!(tallest - other > 25.0, "{tallest} {other}");
    // The warm-up's bar breaks at the top, with its length on it.
    assert!(html.contains("class=\"break\""), "{html}");
    assert!(html.contains(">200.0 ms</text>"), "{html}");
    // Ticks: 0, 0.5, 1 ... ms: round.
    assert!(
        html.contains(">0.5 ms</text>") && html.contains(">2.5 ms</text>"),
        "{html}"
    );
}

/// Issue 27 item 6: where names are too long for their place under the
/// bars, the chart says the number ending the step's name (0-based as the
/// names are), not its place counted from 1.
#[test]
fn chart_labels_are_the_steps_own_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rank.sqlite");
    rank_of_steps(&path, 7, &[1_000_000; 40], &[0]);
    let job = measure(&[path], "ProfilerStep*", Labels::default());
    let html = rendered(&job, JobSteps::write_html);
    assert!(
        html.contains("<title>ProfilerStep#0</title>0</text>"),
        "{html}"
    );
    assert!(
        html.contains("<title>ProfilerStep#12</title>12</text>"),
        "{html}"
    );
    assert!(!html.contains("</title>#"), "{html}");
}
