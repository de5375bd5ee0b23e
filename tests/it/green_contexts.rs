//! Green contexts (nsys 2024.5 and later) on synthetic exports: the streams of
//! a green context say which one, and the context it was made from, in their
//! names and descriptions; tracks stay one per (process, context, stream).

use crate::support::checker::{Checked, Value};
use crate::support::synth::{GpuStream, Synth, Thread, KERNEL};

const PID: u32 = 100;
const MAIN: Thread = Thread { pid: PID, tid: 100 };
/// Streams of context 1: one outside green contexts, one in each of two.
const PLAIN: GpuStream = GpuStream {
    pid: PID,
    device: 0,
    context: 1,
    stream: 7,
};
const SMALL: GpuStream = GpuStream {
    stream: 13,
    ..PLAIN
};
const LARGE: GpuStream = GpuStream {
    stream: 14,
    ..PLAIN
};

fn convert(fill: impl FnOnce(&mut Synth)) -> Checked {
    crate::support::convert::convert_synthetic(fill).0
}

/// Two kernels on each stream, each launched by a call of its own.
fn kernels_on_three_streams(s: &mut Synth) {
    s.process(PID, "trainer");
    s.gpu(0, "NVIDIA H100");
    let mut corr = 1;
    for (i, on) in [PLAIN, SMALL, LARGE].into_iter().enumerate() {
        for k in 0..2 {
            let t = 1_000 * (corr + 1);
            s.api(MAIN, t..t + 100, "cudaLaunchKernel_v7000").corr(corr);
            let start = 50_000 + 10_000 * i as i64 + 3_000 * k;
            s.kernel(on, start..start + 2_000 + k, "gemm").corr(corr);
            corr += 1;
        }
    }
}

/// (track name, track description, ts, dur, green_context arg) of each kernel.
fn kernels(trace: &Checked) -> Vec<(String, String, u64, u64, Option<i64>)> {
    let mut out: Vec<_> = trace
        .slices
        .iter()
        .filter(|s| s.category == "cuda_kernel")
        .map(|s| {
            let track = &trace.tracks[&s.track];
            let green = match s.args.get("green_context") {
                Some(Value::Int(g)) => Some(*g),
                Some(other) => panic!("green_context {other:?}"),
                None => None,
            };
            (
                track.name.clone().unwrap_or_default(),
                track.description.clone().unwrap_or_default(),
                s.ts,
                s.dur,
                green,
            )
        })
        .collect();
    out.sort_by_key(|k| k.2);
    out
}

#[test]
fn streams_of_green_contexts_name_them_and_their_parent() {
    let trace = convert(|s| {
        kernels_on_three_streams(s);
        s.green_context(SMALL, 4);
        s.green_context(LARGE, 5);
        s.cuda_context(PID, 1);
        s.cuda_context(PID, 4).green_from(1).sms(16);
        s.cuda_context(PID, 5).green_from(1).sms(116);
    });
    let plain = "CUDA stream 7 of trainer (pid 100), context 1, device 0";
    let small = "CUDA stream 13 of trainer (pid 100), context 1, \
                 green context 4 (created from context 1, 16 SMs), device 0";
    let large = "CUDA stream 14 of trainer (pid 100), context 1, \
                 green context 5 (created from context 1, 116 SMs), device 0";
    let expected = [
        ("Stream 7", plain, 50_000, 2_000, None),
        ("Stream 7", plain, 53_000, 2_001, None),
        ("Stream 13 (green context 4)", small, 60_000, 2_000, Some(4)),
        ("Stream 13 (green context 4)", small, 63_000, 2_001, Some(4)),
        ("Stream 14 (green context 5)", large, 70_000, 2_000, Some(5)),
        ("Stream 14 (green context 5)", large, 73_000, 2_001, Some(5)),
    ]
    .map(|(n, d, ts, dur, g)| (n.to_owned(), d.to_owned(), ts, dur, g));
    assert_eq!(kernels(&trace), expected);
    // One track per stream, as without green contexts; every kernel has its launch.
    let tracks: std::collections::HashSet<u64> = trace
        .slices
        .iter()
        .filter(|s| s.category == "cuda_kernel")
        .map(|s| s.track)
        .collect();
    assert_eq!(tracks.len(), 3);
    assert_eq!(trace.flows.len(), 6);
}

#[test]
fn green_context_ids_alone_still_name_the_stream() {
    // Without TARGET_INFO_CUDA_CONTEXT_INFO, the work's greenContextId is all
    // there is: the name says it, the description has no parent to give.
    let trace = convert(|s| {
        kernels_on_three_streams(s);
        s.green_context(SMALL, 4);
    });
    let names: Vec<(String, Option<i64>)> = kernels(&trace)
        .into_iter()
        .map(|(name, _, _, _, green)| (name, green))
        .collect();
    assert_eq!(
        names[2],
        ("Stream 13 (green context 4)".to_owned(), Some(4))
    );
    assert_eq!(names[4], ("Stream 14".to_owned(), None));
    let small = &kernels(&trace)[2].1;
    assert_eq!(
        small,
        "CUDA stream 13 of trainer (pid 100), context 1, green context 4, device 0"
    );
}

#[test]
fn a_context_recorded_as_green_names_its_streams() {
    // Work whose own context is a green context, with no greenContextId.
    let green_ctx = GpuStream {
        context: 4,
        stream: 20,
        ..PLAIN
    };
    let trace = convert(|s| {
        s.process(PID, "trainer");
        s.api(MAIN, 1_000..1_100, "cuLaunchKernel").corr(1);
        s.kernel(green_ctx, 5_000..6_000, "gemm").corr(1);
        s.cuda_context(PID, 4).green_from(1);
    });
    let k = &kernels(&trace)[0];
    assert_eq!(k.0, "Stream 20 (green context 4)");
    assert_eq!(
        k.1,
        "CUDA stream 20 of trainer (pid 100), context 4, green context 4 (created from context 1), device 0"
    );
    assert_eq!((k.2, k.3, k.4), (5_000, 1_000, None));
}

#[test]
fn exports_without_green_contexts_are_unchanged() {
    // Before nsys 2024.5 there is no greenContextId column at all.
    let trace = convert(|s| {
        kernels_on_three_streams(s);
        s.drop_column(KERNEL, "greenContextId");
    });
    let names: Vec<String> = kernels(&trace).into_iter().map(|k| k.0).collect();
    assert_eq!(
        names,
        [
            "Stream 7",
            "Stream 7",
            "Stream 13",
            "Stream 13",
            "Stream 14",
            "Stream 14"
        ]
    );
    assert!(kernels(&trace).iter().all(|k| k.4.is_none()));
}
