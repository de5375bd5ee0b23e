//! Progress: reported on the calling thread only, never going back, and
//! ending at the exact number of rows read, whichever threads read them.

use std::path::Path;

use crate::support::convert::synthetic;
use crate::support::synth::{Thread, INFO};
use nsys2perfetto::{convert_file, Options, Progress};

const MAIN: Thread = Thread { pid: 100, tid: 100 };

/// Rows of each kind: none a multiple of the rows between two reports.
const API_CALLS: i64 = 20_001;
const NVTX_RANGES: i64 = 9_003;
const DIAGNOSTICS: i64 = 5_005;

#[test]
fn progress_is_reported_on_the_calling_thread_up_to_every_row_read() {
    // Read by the three converting threads: CUDA, NVTX and the CPU side.
    let (dir, input) = synthetic(|s| {
        s.process(100, "python3");
        s.thread(MAIN, "python3");
        for i in 0..API_CALLS {
            let start = 1_000 + i * 10;
            s.api(MAIN, start..start + 5, "cudaStreamQuery_v3020")
                .corr(i + 1);
        }
        for i in 0..NVTX_RANGES {
            let start = 1_000 + i * 20;
            s.nvtx_push_pop(MAIN, start..start + 10, "step");
        }
        for i in 0..DIAGNOSTICS {
            s.diagnostic(INFO, "a message").at(1_000 + i * 30).pid(100);
        }
    });
    let caller = std::thread::current().id();
    let mut reports: Vec<Progress> = Vec::new();
    let mut elsewhere = 0;
    let output = dir.path().join("out.perfetto-trace");
    let summary = convert_file(&input, &output, &Options::default(), &mut |p| {
        if std::thread::current().id() != caller {
            elsewhere += 1;
        }
        reports.push(p);
    })
    .unwrap();
    assert!(Path::new(&output).exists());
    let rows = (API_CALLS + NVTX_RANGES + DIAGNOSTICS) as u64;
    let slices: u64 = summary.slices.values().sum();
    assert_eq!(slices, rows, "every row read is a slice: {summary:?}");

    assert_eq!(elsewhere, 0, "progress reported on another thread");
    assert!(
        reports.len() > 1,
        "progress reported {} times",
        reports.len()
    );
    for pair in reports.windows(2) {
        assert!(
            pair[1].rows_read >= pair[0].rows_read,
            "progress went back: {:?}",
            pair
        );
    }
    for p in &reports {
        assert!(p.rows_read <= p.rows_total, "{p:?}");
    }
    let last = reports.last().unwrap();
    assert_eq!(
        last.rows_read, rows,
        "the last report counts every row read"
    );
    assert_eq!(last.rows_total, rows, "every row is in the estimate");
}
