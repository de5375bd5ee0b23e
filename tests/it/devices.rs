//! Where GPU work is placed when its rows do not say: synchronizations
//! record no device (CUPTI has none for them; exports write deviceId 0), so
//! each goes on the GPU of its CUDA context as the rest of the report shows
//! it, `--gpu` keeps it by that GPU, and where nothing shows it the
//! conversion says so. Synthetic exports, built as the real ones are.

use std::collections::BTreeMap;

use crate::support::checker::Checked;
use crate::support::synth::{GpuStream, Synth, Thread, STREAM_SYNC};
use nsys2perfetto::{Filter, Options, Summary};

/// 0xFFFFFFFF: CUPTI's "no stream", of context synchronizations.
const NO_STREAM: i64 = u32::MAX as i64;

/// Kernels on GPU 1 (process 100, context 1) and GPU 0 (process 200, also
/// context 1); process 300's context 3 has no GPU work, and the export's
/// context info says it is on GPU 2; process 400's context 4 has neither.
const ON_GPU_1: GpuStream = GpuStream {
    pid: 100,
    device: 1,
    context: 1,
    stream: 7,
};
const ON_GPU_0: GpuStream = GpuStream {
    pid: 200,
    device: 0,
    context: 1,
    stream: 7,
};
const RECORDED_ON_GPU_2: GpuStream = GpuStream {
    pid: 300,
    device: 2,
    context: 3,
    stream: 9,
};
const NOWHERE: GpuStream = GpuStream {
    pid: 400,
    device: 0,
    context: 4,
    stream: 11,
};

/// Synchronizations of each stream, all with deviceId 0 as exports write
/// them: two on ON_GPU_1 (one on its stream, one of the whole context),
/// one on each other. `gpus` is what TARGET_INFO_GPU lists.
fn export(s: &mut Synth, gpus: &[i64]) {
    for &gpu in gpus {
        s.gpu(gpu, "NVIDIA H100 80GB HBM3");
    }
    for (pid, name) in [
        (100, "rank0"),
        (200, "rank1"),
        (300, "rank2"),
        (400, "rank3"),
    ] {
        s.process(pid, name);
        s.thread(Thread { pid, tid: pid }, name);
    }
    s.kernel(ON_GPU_1, 1_000..2_000, "gemm");
    s.kernel(ON_GPU_0, 1_000..2_000, "gemm");
    s.cuda_context(RECORDED_ON_GPU_2.pid, RECORDED_ON_GPU_2.context)
        .set("deviceId", RECORDED_ON_GPU_2.device);
    let no_stream = GpuStream {
        stream: NO_STREAM,
        ..ON_GPU_1
    };
    for (k, on) in [ON_GPU_1, no_stream, ON_GPU_0, RECORDED_ON_GPU_2, NOWHERE]
        .into_iter()
        .enumerate()
    {
        let t = 3_000 + 1_000 * k as i64;
        s.sync(on, t..t + 500, STREAM_SYNC).set("deviceId", 0);
    }
}

fn convert(gpus: &[i64], filter: Filter) -> (Checked, Summary) {
    let (_dir, input) = crate::support::convert::synthetic(|s| export(s, gpus));
    let mut options = Options::default();
    options.filter = filter;
    let (trace, summary) = crate::support::convert::convert(&input, &options);
    trace.assert_valid();
    (trace, summary)
}

fn places(entries: &[((i64, Option<i64>), u64)]) -> BTreeMap<(i64, Option<i64>), u64> {
    entries.iter().copied().collect()
}

#[test]
fn synchronizations_go_on_the_gpu_of_their_context() {
    let (trace, summary) = convert(&[0, 1, 2], Filter::default());
    assert_eq!(
        trace.by_gpu_place("cuda_sync"),
        places(&[
            ((0, Some(200)), 1),
            ((0, Some(400)), 1),
            ((1, Some(100)), 2),
            ((2, Some(300)), 1),
        ])
    );
    // On the very track of the kernels of their stream.
    let track_of = |category: &str, pid: i64| {
        trace
            .slices
            .iter()
            .filter(|s| s.category == category)
            .find(|s| {
                trace
                    .gpu_place(s.track)
                    .is_some_and(|(_, p)| p == Some(pid))
            })
            .map(|s| s.track)
    };
    assert_eq!(track_of("cuda_sync", 100), track_of("cuda_kernel", 100));
    assert!(track_of("cuda_sync", 100).is_some());
    // Nothing shows where process 400's context is: said, once per row.
    assert_eq!(summary.syncs_on_unknown_device, 1);
    let warnings = summary.warnings().join("\n");
    assert!(
        warnings.contains(
            "1 synchronization is of a CUDA context whose GPU the report does not establish"
        ),
        "{warnings}"
    );
}

#[test]
fn the_only_gpu_of_a_report_is_that_of_every_context() {
    // One GPU, not numbered 0 (a rank that sees only its own); a context
    // with kernels, and one with synchronizations only.
    const KERNELS: GpuStream = GpuStream {
        pid: 100,
        device: 5,
        context: 1,
        stream: 7,
    };
    const SYNCS_ONLY: GpuStream = GpuStream {
        context: 2,
        stream: 8,
        ..KERNELS
    };
    let (_dir, input) = crate::support::convert::synthetic(|s| {
        s.gpu(5, "Tesla V100-SXM2-16GB");
        s.process(100, "rank5");
        s.kernel(KERNELS, 1_000..2_000, "gemm");
        for (k, on) in [KERNELS, SYNCS_ONLY].into_iter().enumerate() {
            let t = 3_000 + 1_000 * k as i64;
            s.sync(on, t..t + 500, STREAM_SYNC).set("deviceId", 0);
        }
    });
    for filter in [Filter::default(), Filter::default().gpus([5])] {
        let mut options = Options::default();
        options.filter = filter;
        let (trace, summary) = crate::support::convert::convert(&input, &options);
        trace.assert_valid();
        assert_eq!(
            trace.by_gpu_place("cuda_sync"),
            places(&[((5, Some(100)), 2)])
        );
        assert_eq!(summary.syncs_on_unknown_device, 0);
        assert!(summary.filtered_out.is_empty(), "{summary}");
    }
}

#[test]
fn a_gpu_filter_keeps_the_synchronizations_of_its_contexts() {
    for (gpu, kept) in [
        (0, places(&[((0, Some(200)), 1), ((0, Some(400)), 1)])),
        (1, places(&[((1, Some(100)), 2)])),
        (2, places(&[((2, Some(300)), 1)])),
    ] {
        let (trace, summary) = convert(&[0, 1, 2], Filter::default().gpus([gpu]));
        assert_eq!(trace.by_gpu_place("cuda_sync"), kept, "--gpu {gpu}");
        let left: u64 = 5 - kept.values().sum::<u64>();
        assert_eq!(
            summary.filtered_out.get("cuda_sync").copied().unwrap_or(0),
            left,
            "--gpu {gpu}"
        );
    }
}
