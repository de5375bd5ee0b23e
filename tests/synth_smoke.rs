//! The synthetic-export builder writes files the converter accepts.

mod support;

use support::synth::{GpuStream, Synth, Thread};

#[test]
fn one_launch_converts_to_one_call_one_kernel_one_flow() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("tiny.sqlite");
    let output = dir.path().join("tiny.perfetto-trace");

    let main = Thread { pid: 7, tid: 7 };
    let stream = GpuStream {
        pid: 7,
        device: 0,
        context: 1,
        stream: 7,
    };
    let mut synth = Synth::new(&input);
    synth.process(7, "tiny");
    synth.thread(main, "tiny");
    synth.gpu(0, "NVIDIA H100 80GB HBM3");
    synth.api(main, 1_000, 5_000, "cudaLaunchKernel_v7000", 1);
    synth.kernel(
        stream,
        8_000,
        20_000,
        1,
        "add",
        "void add<float>(float*, int)",
    );
    synth.finish();

    let summary = nsys2perfetto::convert_file(
        &input,
        &output,
        &nsys2perfetto::Options::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(summary.slices["cuda_api"], 1, "{summary}");
    assert_eq!(summary.slices["cuda_kernel"], 1, "{summary}");
    assert_eq!(summary.flows, 1, "{summary}");
}
