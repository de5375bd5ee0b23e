//! Exports whose NVTX ranges nearly all have names of their own, as PyTorch's per-op
//! ranges do: for the memory test (tests/memory.rs) and the example that writes one
//! (examples/distinct_names.rs), which include this file beside `synth`. Not a module of
//! `tests/it`, which has no use for it.

use std::path::Path;

use crate::synth::{Synth, Thread};

/// The name of the `i`th range of [`distinct_nvtx_names`].
pub fn distinct_nvtx_name(i: usize) -> String {
    const OPS: [&str; 5] = [
        "aten::linear",
        "aten::addmm",
        "aten::relu",
        "aten::t",
        "aten::view",
    ];
    format!("{}, seq = {i}, op_id = {i}", OPS[i % OPS.len()])
}

/// An export whose NVTX push/pop ranges on one thread, `names` of them, each
/// have a name of their own, as PyTorch names its per-operation ranges (an
/// op id in each), interleaved with ranges of two repeated names: `forward`
/// from the start, and `backward` from half way, every eighth range. The
/// `i`th distinct range ([`distinct_nvtx_name`]) lasts 100 to 99,999 ns.
pub fn distinct_nvtx_names(path: &Path, names: usize) {
    let thread = Thread { pid: 100, tid: 100 };
    let mut s = Synth::new(path);
    let mut at = 0i64;
    for i in 0..names {
        let duration = 100 + (i as i64 * 7_919) % 99_900;
        s.nvtx_push_pop(thread, at..at + duration, &distinct_nvtx_name(i));
        at += 100_000;
        if i % 8 == 0 {
            let repeated = if i >= names / 2 {
                "backward"
            } else {
                "forward"
            };
            s.nvtx_push_pop(thread, at..at + 50 + (i as i64 % 1_000), repeated);
            at += 100_000;
        }
    }
    s.finish();
}
