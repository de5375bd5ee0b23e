//! How to convert: what the trace carries and is written as, and how its
//! input is read ([`ReadOptions`]).

use std::path::Path;

use super::Parts;
use crate::analysis::analyze::Thresholds;
use crate::filter::Filter;
use crate::nsys::ReadOptions;

/// The default gzip level of traces. Measured on a 1.4 M-event trace (see
/// BENCHMARKS.md): level 3 is within 7% of level 6's size at half its cost;
/// level 1 saves a third of level 3's time for 6% more bytes.
pub const DEFAULT_GZIP_LEVEL: u32 = 3;

/// How to convert. Start from [`Options::default`] and set what differs.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// The gzip level of the trace, 1 (fastest) to 9 (smallest), or `None`
    /// for raw protobuf or plain JSON (Perfetto reads both).
    pub gzip: Option<u32>,
    /// What the trace carries (everything by default).
    pub parts: Parts,
    /// Which events of those parts it keeps (all by default).
    pub filter: Filter,
    /// What the trace is written as.
    pub format: Format,
    /// With thresholds, the trace also holds what the rules of `nsys
    /// analyze` find (see [`analyze`](crate::analyze)), in an "Analysis" track group.
    pub findings: Option<Thresholds>,
    /// How GPU work is written (Perfetto's format only: JSON has slices).
    pub gpu_model: GpuModel,
    /// How its input is read: the `nsys` CLI that exports a report (for
    /// [`convert_file`](crate::convert_file) and the other entry points that
    /// open a path), and the flag that stops the conversion: once set, it
    /// fails with [`Error::Interrupted`](crate::Error::Interrupted) soon
    /// after, having stopped nsys and removed the temporary trace and export.
    pub read: ReadOptions,
}

/// How a Perfetto trace holds kernels, memcpys, memsets and graph runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum GpuModel {
    /// As TrackEvent slices on a track per stream, under a group per GPU,
    /// linked to their launches by flows: every arg, the least
    /// trace_processor memory.
    #[default]
    TrackEvent,
    /// In Perfetto's own GPU model: render stage events on a hardware queue
    /// per stream, with the GPUs, contexts and kernel launch statistics
    /// that trace_processor's `gpu*` tables and the UI's GPU views read.
    Typed,
}

/// What a trace is written as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Perfetto's protobuf trace format.
    #[default]
    Perfetto,
    /// Chrome's trace event JSON (a `{"traceEvents": [...]}` object), for
    /// tools that read only JSON: the same slices, names, args, processes,
    /// threads, counters and flows. Chrome's format has no place for CPU
    /// samples, context switches or the call stacks of slices: those parts
    /// are left out.
    Json,
}

impl Format {
    /// The format a file name asks for: [`Format::named`], else Perfetto.
    pub fn of_name(path: &Path) -> Format {
        Format::named(path).unwrap_or(Format::Perfetto)
    }

    /// The format a file name names: JSON for names ending `.json` or
    /// `.json.gz`, Perfetto for `.perfetto-trace` and `.pftrace`; none for
    /// any other name.
    pub fn named(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_string_lossy().to_lowercase();
        if name.ends_with(".json") || name.ends_with(".json.gz") {
            Some(Format::Json)
        } else if name.ends_with(".perfetto-trace") || name.ends_with(".pftrace") {
            Some(Format::Perfetto)
        } else {
            None
        }
    }

    /// The extension of a trace file of this format, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Perfetto => "perfetto-trace",
            Format::Json => "json",
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Self {
            gzip: Some(DEFAULT_GZIP_LEVEL),
            parts: Parts::all(),
            filter: Filter::default(),
            format: Format::Perfetto,
            findings: None,
            gpu_model: GpuModel::TrackEvent,
            read: ReadOptions::default(),
        }
    }
}

impl Options {
    /// These options, reading as `read` says.
    pub fn with_read(mut self, read: ReadOptions) -> Self {
        self.read = read;
        self
    }

    pub(crate) fn cancelled(&self) -> bool {
        self.read.cancelled()
    }
}
