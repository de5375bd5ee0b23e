//! Call stacks on synthetic exports: the backtraces of CUDA API calls
//! (`CUDA_CALLCHAINS`) and CPU samples (`COMPOSITE_EVENTS` with
//! `SAMPLING_CALLCHAINS`) land whole, in order, on their call or sample.
//!
//! NVIDIA's schema reference has no table or column of its own for Python
//! call stacks (`--python-backtrace=cuda`, `--python-sampling=true`): the
//! frames nsys resolves, Python ones included, are rows of these call chain
//! tables. Some frames here are named as Python code is, so that a chain
//! mixing native and Python frames is what is checked.

use crate::support::convert::convert_synthetic as convert;
use crate::support::stacks::NamedFrame;
use crate::support::synth::{Thread, CUDA_CALLCHAINS, SAMPLING_CALLCHAINS};

const MAIN: Thread = Thread { pid: 100, tid: 100 };
const LOADER: Thread = Thread { pid: 100, tid: 101 };

/// (function, module) frames, innermost first, as the call chain tables hold them.
const LAUNCH_CHAIN: [(&str, &str); 4] = [
    ("cudaLaunchKernel", "libcudart.so.12"),
    ("at::native::gemm", "libtorch_cuda.so"),
    ("forward", "/app/model.py"),
    ("<module>", "/app/train.py"),
];
const COPY_CHAIN: [(&str, &str); 3] = [
    ("cuMemcpyHtoDAsync_v2", "libcuda.so.1"),
    ("to_device", "/app/data.py"),
    ("<module>", "/app/train.py"),
];

/// `chain` outermost first, as the trace holds stacks.
fn outermost_first(chain: &[(&str, &str)]) -> Vec<NamedFrame> {
    chain
        .iter()
        .rev()
        .map(|(function, module)| NamedFrame {
            function: (*function).to_owned(),
            module: (*module).to_owned(),
        })
        .collect()
}

#[test]
fn cuda_api_backtraces_land_whole_on_their_calls() {
    let (trace, _) = convert(|s| {
        s.process(100, "python3");
        s.callchain(CUDA_CALLCHAINS, 1, &LAUNCH_CHAIN);
        s.callchain(CUDA_CALLCHAINS, 2, &COPY_CHAIN);
        s.api(MAIN, 1_000..1_500, "cudaLaunchKernel_v7000")
            .corr(1)
            .callchain(1);
        s.api(LOADER, 2_000..2_500, "cuMemcpyHtoDAsync_v2")
            .corr(2)
            .callchain(2);
        // A call without a backtrace keeps none.
        s.api(MAIN, 3_000..3_100, "cudaStreamSynchronize_v3020")
            .corr(3);
    });
    let mut calls: Vec<(u64, u64, &str, Vec<NamedFrame>)> = trace
        .slices
        .iter()
        .filter(|s| s.category == "cuda_api")
        .map(|s| (s.ts, s.dur, s.name.as_str(), s.callstack.clone()))
        .collect();
    calls.sort_by_key(|c| c.0);
    assert_eq!(
        calls,
        [
            (
                1_000,
                500,
                "cudaLaunchKernel",
                outermost_first(&LAUNCH_CHAIN)
            ),
            (
                2_000,
                500,
                "cuMemcpyHtoDAsync",
                outermost_first(&COPY_CHAIN)
            ),
            (3_000, 100, "cudaStreamSynchronize", Vec::new()),
        ]
    );
}

#[test]
fn cpu_samples_land_with_their_stacks() {
    let (trace, summary) = convert(|s| {
        s.process(100, "python3");
        s.callchain(SAMPLING_CALLCHAINS, 10, &LAUNCH_CHAIN);
        s.callchain(SAMPLING_CALLCHAINS, 11, &COPY_CHAIN);
        // A frame nsys could not name keeps a name that says so.
        s.callchain(SAMPLING_CALLCHAINS, 12, &[("", ""), ("main", "python3")]);
        s.cpu_sample(MAIN, 5_000).callchain(10).cpu(2);
        s.cpu_sample(LOADER, 5_000).callchain(11).cpu(3);
        s.cpu_sample(MAIN, 6_000).callchain(12).cpu(2);
    });
    let mut samples: Vec<(u64, u32, Option<u32>, Vec<NamedFrame>)> = trace
        .samples
        .iter()
        .map(|s| (s.ts, s.tid, s.cpu, s.stack.clone()))
        .collect();
    samples.sort();
    let unknown = [("[unknown]", "[unknown]"), ("main", "python3")];
    assert_eq!(
        samples,
        [
            (5_000, 100, Some(2), outermost_first(&LAUNCH_CHAIN)),
            (5_000, 101, Some(3), outermost_first(&COPY_CHAIN)),
            (6_000, 100, Some(2), outermost_first(&unknown)),
        ]
    );
    assert_eq!(summary.cpu_samples, 3);
}
