//! Writes the synthetic demo report shipped as `demo/demo.sqlite`:
//! `cargo run --example demo_report -- OUT.sqlite`
//!
//! A data-parallel training loop, `train.py`, on two H100s: each step copies a
//! batch to both GPUs, runs forward and backward kernels, all-reduces the
//! gradients with NCCL on a second stream, zeroes and updates the weights and
//! waits for the GPUs. A data-loader thread prepares the next batch meanwhile.
//! Timing is deterministic: the host issues calls back to back, each GPU
//! stream runs its work in order, as soon as both the launch and the previous
//! work on the stream allow.

// The tests' builder of synthetic exports, of which this example uses a part.
#[allow(dead_code)]
#[path = "../tests/it/support/synth.rs"]
mod synth;

use std::collections::HashMap;
use std::path::PathBuf;

use synth::{GpuStream, Synth, Thread, HTOD, STREAM_SYNC};

const PID: u32 = 4242;
const MAIN: Thread = Thread {
    pid: PID,
    tid: 4242,
};
const LOADER: Thread = Thread {
    pid: PID,
    tid: 4251,
};
const STEPS: i64 = 10;
const US: i64 = 1_000;
const DEFAULT_DOMAIN: i64 = 0;
const NCCL_DOMAIN: i64 = 1;

/// Both GPUs, each with its compute stream and its NCCL stream (nsys
/// numbers streams across contexts).
const GPUS: [(GpuStream, GpuStream); 2] = [
    (stream(0, 1, 7), stream(0, 1, 14)),
    (stream(1, 2, 15), stream(1, 2, 22)),
];

const fn stream(device: i64, context: i64, stream: i64) -> GpuStream {
    GpuStream {
        pid: PID,
        device,
        context,
        stream,
    }
}

struct Kernel {
    short: &'static str,
    demangled: &'static str,
    /// Nanoseconds.
    duration: i64,
}

const SGEMM_FWD: Kernel = Kernel {
    short: "ampere_sgemm_128x64_tn",
    demangled: "ampere_sgemm_128x64_tn",
    duration: 118 * US,
};
const RELU: Kernel = Kernel {
    short: "vectorized_elementwise_kernel",
    demangled: "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
    duration: 14 * US,
};
const SOFTMAX_FWD: Kernel = Kernel {
    short: "cunn_SoftMaxForward",
    demangled: "void (anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, (anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
    duration: 22 * US,
};
const SOFTMAX_BWD: Kernel = Kernel {
    short: "cunn_SoftMaxBackward",
    demangled: "void (anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, (anonymous namespace)::SoftMaxBackwardEpilogue>(float*, float const*, float const*, int)",
    duration: 25 * US,
};
const SGEMM_BWD: Kernel = Kernel {
    short: "ampere_sgemm_64x32_sliced1x4_nn",
    demangled: "ampere_sgemm_64x32_sliced1x4_nn",
    duration: 131 * US,
};
const REDUCE: Kernel = Kernel {
    short: "reduce_kernel",
    demangled: "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>)",
    duration: 31 * US,
};
const ALL_REDUCE: Kernel = Kernel {
    short: "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    demangled: "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
    duration: 187 * US,
};
const ADAM: Kernel = Kernel {
    short: "multi_tensor_apply_kernel",
    demangled: "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)0, false>, double*, double, double, double, double, double, bool, float*, float*>(at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)0, false>, double*, double, double, double, double, double, bool, float*, float*)",
    duration: 48 * US,
};

/// The main thread issuing CUDA calls, and when each GPU stream is next free.
struct Demo {
    synth: Synth,
    /// When the main thread makes its next call.
    now: i64,
    next_correlation_id: i64,
    stream_free: HashMap<i64, i64>,
}

impl Demo {
    /// A call on the main thread taking `duration`; returns its (start, end, correlationId).
    fn call(&mut self, name: &str, duration: i64) -> (i64, i64, i64) {
        let (start, end) = (self.now, self.now + duration);
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        self.synth.api(MAIN, start..end, name).corr(correlation_id);
        self.now = end + 2 * US;
        (start, end, correlation_id)
    }

    /// When work launched by a call ending at `call_end` starts on `on`, and
    /// marks `on` busy for `duration` after that.
    fn schedule(&mut self, on: GpuStream, call_end: i64, duration: i64) -> (i64, i64) {
        let free = self.stream_free.entry(on.stream).or_default();
        let start = (call_end + 3 * US).max(*free);
        *free = start + duration;
        (start, start + duration)
    }

    /// `on` waits for everything queued on `other` (a cudaStreamWaitEvent).
    fn wait_for(&mut self, on: GpuStream, other: GpuStream) {
        let other_free = self.stream_free.get(&other.stream).copied().unwrap_or(0);
        let free = self.stream_free.entry(on.stream).or_default();
        *free = (*free).max(other_free);
    }

    /// `kernel`, a little slower or faster each step.
    fn launch(&mut self, on: GpuStream, kernel: &Kernel, step: i64) {
        let (_, call_end, correlation_id) = self.call("cudaLaunchKernel_v7000", 5 * US);
        let duration = kernel.duration + (step * 37 + on.stream * 11) % 9 * US;
        let (start, end) = self.schedule(on, call_end, duration);
        self.synth
            .kernel(on, start..end, kernel.short)
            .demangled(kernel.demangled)
            .corr(correlation_id);
    }

    fn copy_to_device(&mut self, on: GpuStream, bytes: i64) {
        let (_, call_end, correlation_id) = self.call("cudaMemcpyAsync_v3020", 7 * US);
        // Pinned host memory over PCIe 5: about 40 GB/s.
        let (start, end) = self.schedule(on, call_end, bytes / 40);
        self.synth
            .memcpy(on, start..end, HTOD)
            .bytes(bytes)
            .corr(correlation_id);
    }

    fn zero(&mut self, on: GpuStream, bytes: i64) {
        let (_, call_end, correlation_id) = self.call("cudaMemsetAsync_v3020", 4 * US);
        let (start, end) = self.schedule(on, call_end, 3 * US);
        self.synth
            .memset(on, start..end)
            .bytes(bytes)
            .corr(correlation_id);
    }

    /// A cudaStreamSynchronize: the main thread blocks until `on` is idle.
    fn synchronize(&mut self, on: GpuStream) {
        let start = self.now;
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let idle = self.stream_free.get(&on.stream).copied().unwrap_or(0);
        let end = idle.max(start + 2 * US) + 2 * US;
        self.synth
            .api(MAIN, start..end, "cudaStreamSynchronize_v3020")
            .corr(correlation_id);
        self.synth
            .sync(on, start + US..end - US, STREAM_SYNC)
            .corr(correlation_id);
        self.now = end + 2 * US;
    }

    /// A push/pop range on the main thread around what `body` does.
    fn range(&mut self, name: &str, domain: i64, body: impl FnOnce(&mut Demo)) {
        let start = self.now;
        self.now += US;
        body(self);
        self.synth
            .nvtx_push_pop(MAIN, start..self.now, name)
            .domain(domain);
        self.now += US;
    }

    fn train_step(&mut self, step: i64) {
        let name = format!("step {step}");
        self.range(&name, DEFAULT_DOMAIN, |d| {
            for (compute, _) in GPUS {
                d.copy_to_device(compute, 8 << 20);
            }
            d.range("forward", DEFAULT_DOMAIN, |d| {
                for (compute, _) in GPUS {
                    for kernel in [&SGEMM_FWD, &RELU, &SOFTMAX_FWD] {
                        d.launch(compute, kernel, step);
                    }
                }
            });
            d.range("backward", DEFAULT_DOMAIN, |d| {
                for (compute, _) in GPUS {
                    for kernel in [&SOFTMAX_BWD, &SGEMM_BWD, &REDUCE] {
                        d.launch(compute, kernel, step);
                    }
                }
                d.range("ncclAllReduce", NCCL_DOMAIN, |d| {
                    for (compute, nccl) in GPUS {
                        d.wait_for(nccl, compute);
                        d.launch(nccl, &ALL_REDUCE, step);
                    }
                });
            });
            d.range("optimizer", DEFAULT_DOMAIN, |d| {
                for (compute, nccl) in GPUS {
                    d.wait_for(compute, nccl);
                    d.zero(compute, 4 << 20);
                    d.launch(compute, &ADAM, step);
                }
                for (compute, _) in GPUS {
                    d.synchronize(compute);
                }
            });
        });
    }

    /// A whole model step captured as a CUDA graph: one cudaGraphLaunch, and
    /// kernels that all carry its correlation id.
    fn graph_replay(&mut self, on: GpuStream) {
        self.range("eval (CUDA graph)", DEFAULT_DOMAIN, |d| {
            let (_, call_end, correlation_id) = d.call("cudaGraphLaunch_v10000", 9 * US);
            for kernel in [&SGEMM_FWD, &RELU, &SOFTMAX_FWD] {
                let (start, end) = d.schedule(on, call_end, kernel.duration);
                d.synth
                    .kernel(on, start..end, kernel.short)
                    .demangled(kernel.demangled)
                    .corr(correlation_id);
            }
            d.synchronize(on);
        });
    }
}

fn main() {
    let out: PathBuf = match std::env::args_os().nth(1) {
        Some(path) => path.into(),
        None => {
            eprintln!("usage: demo_report OUT.sqlite");
            std::process::exit(2);
        }
    };
    let mut synth = Synth::new(&out);
    synth.session_start(1_767_225_600_000_000_000); // 2026-01-01T00:00:00Z
    synth.process(PID, "train.py");
    synth.thread(MAIN, "train.py");
    synth.thread(LOADER, "data_loader");
    for (compute, _) in GPUS {
        synth.gpu(compute.device, "NVIDIA H100 80GB HBM3");
    }

    let mut demo = Demo {
        synth,
        now: 1_000_000,
        next_correlation_id: 101,
        stream_free: HashMap::new(),
    };
    demo.synth
        .nvtx_domain(MAIN, NCCL_DOMAIN, "NCCL")
        .at(demo.now);
    demo.synth.nvtx_mark(MAIN, demo.now + US, "epoch 0");
    demo.now += 5 * US;

    // The loader prepares batch N + 1 while step N runs; step 3 asks it for
    // batch 5 ahead of time, and the loader ends that range when done.
    let mut prefetch_start = None;
    for step in 1..=STEPS {
        let step_start = demo.now;
        let load_start = step_start + 40 * US;
        let load_end = load_start + 610 * US + step % 3 * 25 * US;
        let batch = format!("load batch {}", step + 1);
        demo.synth
            .nvtx_push_pop(LOADER, load_start..load_end, &batch);
        demo.synth
            .nvtx_push_pop(LOADER, load_end - 120 * US..load_end - 5 * US, "collate");
        if step == 3 {
            prefetch_start = Some(step_start);
        }
        if step == 4 {
            let start = prefetch_start.expect("step 3 came first");
            demo.synth
                .nvtx_start_end(MAIN, start..load_end, "prefetch batch 5")
                .ended_on(LOADER);
        }
        demo.train_step(step);
    }
    demo.synth.nvtx_mark(MAIN, demo.now, "checkpoint saved");
    demo.now += 20 * US;
    demo.graph_replay(GPUS[0].0);
    demo.synth.finish();
}
