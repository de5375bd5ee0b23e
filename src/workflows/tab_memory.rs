//! Whether a trace fits a browser tab: the memory the UI's trace_processor
//! would need for it.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::serve::TraceKind;
use crate::error::{Error, Result};

/// The memory a tab's trace_processor needs beyond which the UI cannot
/// load a trace: its trace_processor is 32-bit WebAssembly, with at most
/// 2 GiB of heap, kept a quarter clear for the UI's own queries.
pub const BROWSER_TAB_LIMIT: u64 = 1536 << 20;

/// Memory trace_processor takes for the trace at `path`, estimated from
/// its uncompressed size: measured with trace_processor_shell v58 on
/// traces of this converter, 4.4 bytes per byte of protobuf (102 MB of
/// protobuf, 1.5 M slices: 455 MB resident).
pub fn estimated_tab_memory(path: &Path, kind: TraceKind) -> Result<u64> {
    let unreadable = |cause| Error::Unreadable {
        path: path.to_owned(),
        cause,
    };
    let mut file = File::open(path).map_err(unreadable)?;
    let size = file.metadata().map_err(unreadable)?.len();
    let raw = match kind {
        // gzip's last 4 bytes are the uncompressed size of its last member
        // modulo 4 GiB: the whole only for a single member under 4 GiB.
        // Traces of this converter are several members (a part each) and
        // compress about 5 times: that bounds the size from below.
        TraceKind::GzipTrace if size >= 4 => {
            use std::io::{Seek, SeekFrom};
            let mut tail = [0u8; 4];
            file.seek(SeekFrom::End(-4))
                .and_then(|_| file.read_exact(&mut tail))
                .map_err(unreadable)?;
            u64::from(u32::from_le_bytes(tail)).max(size.saturating_mul(5))
        }
        _ => size,
    };
    Ok(raw.saturating_mul(44) / 10)
}
