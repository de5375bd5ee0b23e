//! Makes a synthetic Nsight Systems export with many distinct NVTX range
//! names, for measuring `stats` where names do not repeat (PyTorch names its
//! per-operation ranges with an op id).
//!
//! ```sh
//! cargo run --release --example distinct_names -- OUTPUT.sqlite 1000000
//! ```

// The tests' builder of synthetic exports, of which this example uses a part.
#[path = "../tests/it/support/distinct_names.rs"]
mod distinct_names;
#[allow(dead_code)]
#[path = "../tests/it/support/synth.rs"]
mod synth;

use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [output, names] = args.as_slice() else {
        eprintln!("usage: distinct_names OUTPUT.sqlite NAMES");
        std::process::exit(2);
    };
    let Ok(names) = names.parse::<usize>() else {
        eprintln!("distinct_names: NAMES must be a whole number");
        std::process::exit(2);
    };
    distinct_names::distinct_nvtx_names(Path::new(output), names);
}
