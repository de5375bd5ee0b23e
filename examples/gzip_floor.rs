//! The compression floor for benchmarks: gzip a raw trace (`--no-gzip` output)
//! with the converter's compressor and level, 512 KiB at a time, each chunk a
//! gzip member of its own as in the converter's traces, on one thread.
//!
//! ```sh
//! cargo run --release --example gzip_floor -- TRACE.pb
//! ```

use std::io::Read;

use libdeflater::{CompressionLvl, Compressor};

fn main() -> std::io::Result<()> {
    let input = std::env::args().nth(1).expect("usage: gzip_floor TRACE.pb");
    let mut file = std::fs::File::open(input)?;
    let level = CompressionLvl::new(nsys2perfetto::DEFAULT_GZIP_LEVEL as i32)
        .expect("a level libdeflate has");
    let mut compressor = Compressor::new(level);
    let mut buf = vec![0; 1 << 19];
    let mut out = vec![0; compressor.gzip_compress_bound(buf.len())];
    let mut total = 0;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += compressor
            .gzip_compress(&buf[..n], &mut out)
            .map_err(std::io::Error::other)?;
    }
    println!("{total} bytes gzipped");
    Ok(())
}
