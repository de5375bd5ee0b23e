//! Several reports in one trace: the 8 ranks of the Cori job merged, each
//! rank's events as its own conversion has them, shifted by the difference
//! of the session starts the reports record; traces converted one by one
//! and concatenated.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use nsys2perfetto::merge::{merge_files, AlignedOn, Labels, MergeOptions, RankFrom, RankPattern};
use nsys2perfetto::Options;

use crate::support::checker::Checked;
use crate::support::fixtures::cori_exports;

/// A slice as a rank's own conversion has it: (category, name, ts, dur).
type Event = (String, String, u64, u64);

/// The slices of `trace` under top-level tracks whose names start with
/// `prefix` (all of them for ""), by category, name, time and duration.
fn events(trace: &Checked, prefix: &str) -> Vec<Event> {
    let mut events: Vec<Event> = trace
        .slices
        .iter()
        .filter(|s| root_name(trace, s.track).starts_with(prefix))
        .map(|s| (s.category.clone(), s.name.clone(), s.ts, s.dur))
        .collect();
    events.sort();
    events
}

/// The name of the top-level track `track` is under: for a thread's, its
/// process's (thread descriptors name their process by pid).
fn root_name(trace: &Checked, track: u64) -> &str {
    let root = trace.root_of(track);
    if let (Some(pid), Some(_)) = (root.pid, root.tid) {
        let process = trace
            .tracks
            .values()
            .find(|t| t.pid == Some(pid) && t.tid.is_none());
        return process
            .and_then(|p| p.process_name.as_deref())
            .unwrap_or("");
    }
    root.name
        .as_deref()
        .or(root.process_name.as_deref())
        .unwrap_or("")
}

fn session_start(export: &Path) -> i64 {
    let db = crate::support::source::open(export);
    db.query_row(
        "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_ranks_of_a_job_merge_into_one_trace_with_every_event_exact() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exports) = cori_exports(8) else {
        return;
    };
    let merged_path = dir.path().join("job.perfetto-trace");
    let mut merge = MergeOptions::default();
    merge.labels = Labels::Ranks {
        from_name: Some(RankPattern::new(r"report(\d+)").unwrap()),
    };
    let reports = merge_files(
        &exports,
        &merged_path,
        &Options::default(),
        &merge,
        &mut |_| {},
    )
    .unwrap();
    let merged = crate::support::convert::check_trace(&merged_path);
    merged.assert_valid();

    // 8 distinct ranks, from the file names, each on one labelled process.
    let ranks: BTreeSet<i64> = reports.iter().map(|r| r.rank.unwrap().0).collect();
    assert_eq!(ranks, (1..=8).collect());
    assert!(reports
        .iter()
        .all(|r| r.rank.unwrap().1 == RankFrom::FileName));
    let processes: BTreeSet<String> = merged
        .tracks
        .values()
        .filter(|t| t.pid.is_some() && t.tid.is_none())
        .filter_map(|t| t.process_name.clone())
        .collect();
    for rank in &ranks {
        assert!(
            processes
                .iter()
                .any(|p| p.starts_with(&format!("rank {rank}: "))),
            "no process of rank {rank} in {processes:?}"
        );
    }

    // The session starts differ by what the reports record; the earliest
    // report is not shifted, and trace time 0 is its wall-clock start.
    let starts: Vec<i64> = exports.iter().map(|e| session_start(e)).collect();
    let earliest = *starts.iter().min().unwrap();
    for (report, start) in reports.iter().zip(&starts) {
        assert_eq!(report.aligned_on, AlignedOn::SessionStart);
        assert_eq!(
            report.offset_ns as i64,
            start - earliest,
            "{}",
            report.label
        );
    }
    assert_eq!(merged.realtime_at_zero, Some(earliest as u64));
    assert!(
        starts.iter().collect::<BTreeSet<_>>().len() > 1,
        "the ranks started at different times"
    );

    // Each rank's slices are its own conversion's, shifted by its offset:
    // the same count per category and the exact same durations.
    let mut total = 0;
    for (report, export) in reports.iter().zip(&exports) {
        let (single, summary) = crate::support::convert::convert(export, &Options::default());
        single.assert_valid();
        let expected: Vec<Event> = events(&single, "")
            .into_iter()
            .map(|(c, n, ts, dur)| (c, n, ts + report.offset_ns, dur))
            .collect();
        let got = events(&merged, &format!("{}: ", report.label));
        assert_eq!(got.len(), expected.len(), "{}", report.label);
        let first_difference = got.iter().zip(&expected).find(|(g, e)| g != e);
        assert!(
            first_difference.is_none(),
            "{}: slices differ, first: {first_difference:?}",
            report.label
        );
        let per_category = |e: &[Event]| {
            e.iter().fold(BTreeMap::new(), |mut m, (c, ..)| {
                *m.entry(c.clone()).or_insert(0u64) += 1;
                m
            })
        };
        assert_eq!(per_category(&got), per_category(&expected));
        assert_eq!(report.summary.slices, summary.slices, "{}", report.label);
        assert_eq!(single.samples.len(), report.summary.cpu_samples as usize);
        total += got.len();
    }
    assert_eq!(total, merged.slices.len(), "every slice belongs to a rank");
    let flows: u64 = reports
        .iter()
        .map(|r| r.summary.flows + r.summary.event_flows)
        .sum();
    assert_eq!(merged.flows.len() as u64, flows, "no flow id collides");
    let samples: u64 = reports.iter().map(|r| r.summary.cpu_samples).sum();
    assert_eq!(merged.samples.len() as u64, samples);
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn a_report_merged_with_itself_collides_with_nothing() {
    let Some(input) = crate::support::fixtures::fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("twice.perfetto-trace");
    let mut merge = MergeOptions::default();
    merge.alignment = nsys2perfetto::merge::Alignment::FirstGpuWork;
    merge.labels = Labels::Given(vec!["A".into(), "B".into()]);
    let inputs = [input.clone(), input.clone()];
    let reports = merge_files(&inputs, &output, &Options::default(), &merge, &mut |_| {}).unwrap();
    let merged = crate::support::convert::check_trace(&output);
    merged.assert_valid();
    let (single, _) = crate::support::convert::convert(&input, &Options::default());
    assert!(reports.iter().all(|r| r.offset_ns == 0));
    assert_eq!(reports[0].aligned_on, AlignedOn::FirstGpuWork);
    let expected = events(&single, "");
    assert!(events(&merged, "A: ") == expected, "A differs");
    assert!(events(&merged, "B: ") == expected, "B differs");
    assert_eq!(merged.slices.len(), 2 * single.slices.len());
    assert_eq!(merged.flows.len(), 2 * single.flows.len());
    // The GPUs of the two are two groups each, not shared.
    let gpus: BTreeSet<&str> = merged
        .tracks
        .values()
        .filter(|t| t.parent.is_none())
        .filter_map(|t| t.name.as_deref())
        .filter(|n| n.contains("GPU"))
        .collect();
    let single_gpus = single
        .tracks
        .values()
        .filter(|t| t.parent.is_none() && t.name.as_deref().is_some_and(|n| n.contains("GPU")))
        .count();
    assert_eq!(gpus.len(), 2 * single_gpus, "{gpus:?}");
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn an_export_without_a_session_start_is_aligned_on_its_first_event() {
    // openacc_report12 has no TARGET_INFO_SESSION_START_TIME; cori's has.
    let (Some(without), Some(with)) = (
        crate::support::fixtures::fixture("openacc_report12.sqlite"),
        crate::support::fixtures::fixture("dlprof_nsys_profile.sqlite"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("two.perfetto-trace");
    let inputs = [with.clone(), without.clone()];
    let reports = merge_files(
        &inputs,
        &output,
        &Options::default(),
        &MergeOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let merged = crate::support::convert::check_trace(&output);
    merged.assert_valid();
    assert_eq!(reports[0].aligned_on, AlignedOn::SessionStart);
    assert_eq!(reports[1].aligned_on, AlignedOn::FirstEvent);
    assert_eq!(reports[1].rank, Some((1, RankFrom::Order)));
    // Both first events fall at one time.
    let first = |label: &str| events(&merged, label).iter().map(|e| e.2).min().unwrap();
    assert_eq!(first("rank 0"), first("rank 1"));
}

/// The pids trace_processor shows, each with its number of slices.
fn pids(trace: &Path) -> Option<BTreeMap<i64, u64>> {
    let binary = crate::support::convert::trace_processor()?;
    let out = std::process::Command::new(binary)
        .arg("query")
        .arg(trace)
        .arg(
            "SELECT p.pid, COUNT(s.id) FROM slice s JOIN thread_track tt ON s.track_id = tt.id \
             JOIN thread USING (utid) JOIN process p USING (upid) GROUP BY p.upid",
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = crate::support::nsys::csv_rows(&String::from_utf8_lossy(&out.stdout));
    Some(
        rows.iter()
            .skip(1)
            .map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap()))
            .collect(),
    )
}

/// Two ranks on two nodes, each with its program's main thread `pids[i]`:
/// calls on it, different in each.
fn two_ranks(pids: [u32; 2]) -> Vec<(tempfile::TempDir, PathBuf)> {
    (0..2)
        .map(|rank| {
            crate::support::convert::synthetic(|s| {
                let main = crate::support::synth::Thread {
                    pid: pids[rank],
                    tid: pids[rank],
                };
                s.session_start(1_700_000_000_000_000_000 + rank as i64 * 1_000);
                for i in 0..=rank as i64 {
                    s.api(main, 1_000 + 100 * i..1_050 + 100 * i, "cudaFree_v3020");
                }
            })
        })
        .collect()
}

/// The traces of `ranks` converted one by one, as `cat` joins them.
fn concatenated(ranks: &[(tempfile::TempDir, PathBuf)], gzip: Option<u32>) -> Vec<u8> {
    let mut options = Options::default();
    options.gzip = gzip;
    let mut joined = Vec::new();
    for (dir, input) in ranks {
        let output = dir.path().join("rank.perfetto-trace");
        crate::support::convert::convert_into(input, &output, &options)
            .0
            .assert_valid();
        joined.extend(std::fs::read(&output).unwrap());
    }
    joined
}

#[test]
fn traces_of_ranks_with_distinct_pids_concatenate_raw_and_gzipped() {
    let ranks = two_ranks([100, 200]);
    for gzip in [None, Some(3)] {
        let what = format!("two traces joined, gzip {gzip:?}");
        let trace = crate::support::convert::check_bytes(&concatenated(&ranks, gzip), &what);
        trace.assert_valid();
        assert_eq!(trace.count("cuda_api"), 3, "{what}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("joined.perfetto-trace");
        std::fs::write(&path, concatenated(&ranks, gzip)).unwrap();
        if let Some(pids) = pids(&path) {
            assert_eq!(pids, BTreeMap::from([(100, 1), (200, 2)]), "{what}");
        }
    }
}

#[test]
fn traces_of_ranks_with_one_pid_collide_when_concatenated_and_not_when_merged() {
    let ranks = two_ranks([100, 100]);
    let joined = crate::support::checker::check(&concatenated(&ranks, None));
    assert!(
        joined
            .errors
            .iter()
            .any(|e| e.contains("second descriptor for process Some(100)")),
        "{:?}",
        joined.errors
    );
    let inputs: Vec<PathBuf> = ranks.iter().map(|(_, input)| input.clone()).collect();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("merged.perfetto-trace");
    let reports = merge_files(
        &inputs,
        &output,
        &Options::default(),
        &MergeOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    crate::support::convert::check_trace(&output).assert_valid();
    assert_eq!(reports[1].offset_ns, 1_000);
    if let Some(pids) = pids(&output) {
        let second = 100 + i64::from(reports[1].pid_offset);
        assert_eq!(pids, BTreeMap::from([(100, 1), (second, 2)]));
    }
}

/// The `stats` rows of `trace` that are import errors, by name.
fn import_errors(trace: &Path) -> Option<BTreeMap<String, u64>> {
    let binary = crate::support::convert::trace_processor()?;
    let out = std::process::Command::new(binary)
        .arg("query")
        .arg(trace)
        .arg(
            "SELECT name, SUM(value) FROM stats WHERE value > 0 \
             AND severity IN ('error', 'data_loss') GROUP BY name",
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = crate::support::nsys::csv_rows(&String::from_utf8_lossy(&out.stdout));
    Some(
        rows.iter()
            .skip(1)
            .map(|r| (r[0].clone(), r[1].parse().unwrap()))
            .collect(),
    )
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn concatenated_ranks_of_one_node_mix_their_cpus_unless_sched_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exports) = cori_exports(2) else {
        return;
    };
    if crate::support::convert::trace_processor().is_none() {
        return;
    }
    let join = |options: &Options, name: &str| {
        let mut joined = Vec::new();
        for (i, export) in exports.iter().enumerate() {
            let output = dir.path().join(format!("{name}{i}.perfetto-trace"));
            nsys2perfetto::convert_file(export, &output, options, &mut |_| {}).unwrap();
            joined.extend(std::fs::read(&output).unwrap());
        }
        let path = dir.path().join(format!("{name}.perfetto-trace"));
        std::fs::write(&path, joined).unwrap();
        import_errors(&path).unwrap()
    };
    let with_sched = join(&Options::default(), "all");
    assert!(
        with_sched.get("mismatched_sched_switch_tids") > Some(&0),
        "{with_sched:?}"
    );
    let mut options = Options::default();
    options.parts = nsys2perfetto::Parts::all().without(nsys2perfetto::Part::Sched);
    assert_eq!(join(&options, "nosched"), BTreeMap::new());
    // Merged, their CPUs are apart.
    let merged = dir.path().join("merged.perfetto-trace");
    merge_files(
        &exports,
        &merged,
        &Options::default(),
        &MergeOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(import_errors(&merged).unwrap(), BTreeMap::new());
}

#[test]
fn a_scope_shifts_every_timestamp_and_names_its_top_level_tracks() {
    use nsys2perfetto::perfetto::{
        CounterUnit, CounterValue, Scope, Slice, Stacking, Trace, TrackSpec,
    };
    let trace = Trace::new(Vec::new(), 0, None);
    for (i, offset) in [(0u64, 0u64), (1, 1_000)] {
        trace.begin_scope(Scope {
            namespace: i + 1,
            time_offset: offset,
            label: Some(format!("run {i}")),
            ..Scope::default()
        });
        let mut seq = trace.sequence();
        let group = seq.add_track(TrackSpec::new(None, "GPU 0"));
        let track = seq.slice_track(TrackSpec::new(Some(group), "stream"), Stacking::Nest);
        seq.slice(track, &Slice::new(10, Some(20), "k", "cuda_kernel", &[]))
            .unwrap();
        let counter =
            seq.add_counter_track(TrackSpec::new(Some(group), "memory"), CounterUnit::Bytes);
        // Earlier than the slice: written with an absolute timestamp.
        seq.counter(counter, 5, CounterValue::Int(7)).unwrap();
        seq.close(0).unwrap();
        trace.settle().unwrap();
    }
    let checked = crate::support::checker::check(&trace.finish().unwrap());
    checked.assert_valid();
    let mut slices: Vec<(String, u64, u64)> = checked
        .slices
        .iter()
        .map(|s| (root_name(&checked, s.track).to_owned(), s.ts, s.dur))
        .collect();
    slices.sort();
    assert_eq!(
        slices,
        [
            ("run 0: GPU 0".to_owned(), 10, 10),
            ("run 1: GPU 0".to_owned(), 1_010, 10)
        ]
    );
    let mut counters: Vec<u64> = checked.counters.iter().map(|c| c.ts).collect();
    counters.sort();
    assert_eq!(counters, [5, 1_005]);
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn the_merge_command_prints_each_rank_and_refuses_bad_input_in_one_line() {
    let (Some(a), Some(b)) = (
        crate::support::fixtures::fixture("nsys-ai_mock.sqlite"),
        crate::support::fixtures::fixture("openacc_report12.sqlite"),
    ) else {
        return;
    };
    let bin = crate::support::program::BIN;
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("job.perfetto-trace");
    let run = std::process::Command::new(bin)
        .arg("merge")
        .args([&a, &b])
        .arg("-o")
        .arg(&output)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("rank 0 (DESKTOP-KBEMEQS): "), "{stderr}");
    assert!(stderr.contains("rank 1: "), "{stderr}");
    assert!(
        stderr.contains("records no session start"),
        "openacc_report12 has none: {stderr}"
    );
    assert!(stderr.contains("2 reports -> "), "{stderr}");
    crate::support::convert::check_trace(&output).assert_valid();

    let broken = dir.path().join("broken.sqlite");
    std::fs::write(&broken, b"not a database").unwrap();
    let refused = dir.path().join("refused.perfetto-trace");
    let run = std::process::Command::new(bin)
        .arg("merge")
        .args([&a, &broken])
        .arg("-o")
        .arg(&refused)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("nsys2perfetto: error: "), "{stderr}");
    assert!(!refused.exists());
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn reports_whose_cpus_do_not_fit_leave_their_context_switches_out_and_say_so() {
    // 119 CPUs each: the 9th report's would end above CPU 1023, the most
    // trace_processor takes.
    let Some(input) = crate::support::fixtures::fixture("pipit_saxpy_mpi_cuda_rank0.sqlite") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("nine.perfetto-trace");
    let inputs = vec![input.clone(); 9];
    let reports = merge_files(
        &inputs,
        &output,
        &Options::default(),
        &MergeOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let merged = crate::support::convert::check_trace(&output);
    merged.assert_valid();
    let left_out: Vec<bool> = reports.iter().map(|r| r.sched_left_out).collect();
    assert_eq!(
        left_out,
        [false, false, false, false, false, false, false, false, true]
    );
    assert_eq!(reports[8].summary.sched_events, 0);
    assert!(reports[0].summary.sched_events > 0);
    let sched: u64 = reports.iter().map(|r| r.summary.sched_events).sum();
    assert_eq!(sched, 8 * reports[0].summary.sched_events);
    assert_eq!(reports[7].cpu_offset, 7 * 119);
    let samples: u64 = reports.iter().map(|r| r.summary.cpu_samples).sum();
    assert_eq!(
        merged.samples.len() as u64,
        samples,
        "every sample, the 9th's too"
    );
}

#[test]
fn waits_on_events_recorded_before_the_capture_are_said_once_with_the_total() {
    use crate::support::synth::{GpuStream, Thread, STREAM_WAIT_EVENT};
    // Two ranks, each with a wait on an event whose record is not in its
    // report: one warning for the merge, not one per rank.
    let ranks: Vec<(tempfile::TempDir, PathBuf)> = (0..2)
        .map(|rank| {
            crate::support::convert::synthetic(|s| {
                let pid = 100 + rank;
                let main = Thread { pid, tid: pid };
                let stream = GpuStream {
                    pid,
                    device: 0,
                    context: 1,
                    stream: 7,
                };
                s.session_start(1_700_000_000_000_000_000 + i64::from(rank) * 1_000);
                // The GPU, as every export lists it: that of the synchronization.
                s.gpu(0, "NVIDIA H100 80GB HBM3");
                s.api(main, 1_000..1_100, "cudaStreamWaitEvent_v3020")
                    .corr(20);
                s.sync(stream, 1_010..1_090, STREAM_WAIT_EVENT)
                    .corr(20)
                    .event(9)
                    .sync_id(99);
            })
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("job.perfetto-trace");
    let run = crate::support::program::program()
        .arg("merge")
        .args(ranks.iter().map(|(_, path)| path))
        .arg("-o")
        .arg(&output)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("synchronization"))
        .collect();
    assert_eq!(
        said,
        [
            "nsys2perfetto: warning: 2 reports: 2 synchronizations wait on a CUDA event \
          recorded before the capture started (start nsys earlier, or with --capture-range, \
          to see them); no flow to them"
        ],
        "{stderr}"
    );
}

/// Issue 27.7: reports whose sessions started years apart merge with a
/// warning that says how far apart, naming the first and the last.
#[test]
fn sessions_that_started_years_apart_are_warned_about() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("demo/demo.sqlite");
    let dir = tempfile::tempdir().unwrap();
    let later = dir.path().join("later.sqlite");
    std::fs::copy(&demo, &later).unwrap();
    let db = rusqlite::Connection::open(&later).unwrap();
    // Three years (of 365.25 days) after the demo's session.
    let years = 3 * 36_525 * 864 * 1_000_000_000i64;
    let changed = db
        .execute(
            "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = utcEpochNs + ?1",
            [years],
        )
        .unwrap();
    assert_eq!(changed, 1);
    drop(db);
    let merge = |inputs: &[&Path]| {
        let out = crate::support::program::program()
            .arg("merge")
            .args(inputs)
            .arg("-o")
            .arg(dir.path().join("m.perfetto-trace"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let stderr = merge(&[&demo, &later]);
    assert!(
        stderr.contains(&format!(
            "warning: the sessions started 3.0 years apart ({} first, {} last)",
            demo.display(),
            later.display()
        )),
        "{stderr}"
    );
    assert!(!merge(&[&demo, &demo]).contains("apart"));
}
