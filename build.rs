//! Compiles our Perfetto proto subset with prost. protox parses the `.proto`
//! in-process, so no system `protoc` is needed. The descriptor set is also
//! written to OUT_DIR, where the schema test compares it with Perfetto's.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/perfetto_trace.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("perfetto_subset.fds"),
        prost::Message::encode_to_vec(&descriptors),
    )?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
