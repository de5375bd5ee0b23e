//! Compiles our Perfetto proto subset with prost. protox parses the `.proto`
//! in-process, so no system `protoc` is needed. The descriptor set is also
//! written to OUT_DIR, where the schema test compares it with Perfetto's.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/perfetto_trace.proto";
    println!("cargo:rerun-if-changed={proto}");
    declare_shared_fixtures();
    let descriptors = protox::compile([proto], ["proto"])?;
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("perfetto_subset.fds"),
        prost::Message::encode_to_vec(&descriptors),
    )?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}

/// Sets `cfg(shared_fixtures)` where ../shared/fixtures is beside the checkout (or
/// `$NSYS2PERFETTO_SHARED/fixtures` is): the tests
/// that read it are ignored without it, with the reason, so that a run counts them as
/// ignored rather than passing them empty. Only its presence is watched: a path that does
/// not exist would make cargo run this script again on every build.
fn declare_shared_fixtures() {
    println!("cargo::rustc-check-cfg=cfg(shared_fixtures)");
    println!("cargo:rerun-if-env-changed=NSYS2PERFETTO_SHARED");
    let shared = match std::env::var("NSYS2PERFETTO_SHARED") {
        Ok(dir) if !dir.is_empty() => dir,
        _ => "../shared".to_owned(),
    };
    let fixtures = format!("{shared}/fixtures");
    if std::path::Path::new(&fixtures).is_dir() {
        println!("cargo::rustc-cfg=shared_fixtures");
        println!("cargo:rerun-if-changed={fixtures}");
    }
}
