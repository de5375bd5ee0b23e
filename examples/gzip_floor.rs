//! The compression floor for benchmarks: gzip a raw trace (`--no-gzip` output)
//! in memory-sized chunks with the converter's compressor and level.
//!
//! ```sh
//! cargo run --release --example gzip_floor -- TRACE.pb
//! ```

use std::io::{Read, Write};

fn main() -> std::io::Result<()> {
    let input = std::env::args().nth(1).expect("usage: gzip_floor TRACE.pb");
    let mut file = std::fs::File::open(input)?;
    let mut gz = flate2::write::GzEncoder::new(
        std::io::sink(),
        flate2::Compression::new(nsys2perfetto::DEFAULT_GZIP_LEVEL),
    );
    let mut buf = vec![0; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        gz.write_all(&buf[..n])?;
    }
    gz.finish()?;
    Ok(())
}
