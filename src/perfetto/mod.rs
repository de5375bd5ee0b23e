//! Writing Perfetto traces: packets, sequences, interning, tracks, slices and flows.
//!
//! This module knows nothing about Nsight Systems. It turns "a slice named X on
//! track T from t0 to t1, with these args and flows" into TracePackets that
//! trace_processor imports without errors:
//!
//! - [`Trace`] puts the trace together, the same bytes however its sequences'
//!   threads interleave: the descriptors of the tracks in use, then each
//!   sequence whole (a gzip member of its own when gzipped).
//! - [`Tracks`] hands out small [`TrackId`] handles with uuids that depend only
//!   on what the track is.
//! - [`SequenceWriter`] is one packet sequence: interned names, delta timestamps,
//!   and a scheduler that puts overlapping slices on sibling lanes and writes every
//!   BEGIN/END in time order; CPU samples with interned call stacks; context
//!   switches as ftrace `sched_switch` events; GPU work in Perfetto's own GPU
//!   model (`gpu` module), as render stage events on hardware queues, and
//!   GPU counters (`gpu_counters`).
//! - `json` transcodes the trace, as it is written, into Chrome's trace
//!   event JSON.

mod gpu;
mod gpu_counters;
mod intern;
pub(crate) mod json;
mod lanes;
mod packets;
mod sched;
mod sequence;
mod slice;
mod spill;
mod stacks;
mod trace;
mod tracks;
mod wire;

#[allow(missing_docs)]
pub mod proto {
    //! Types generated from `proto/perfetto_trace.proto`, our subset of Perfetto's schema.
    include!(concat!(env!("OUT_DIR"), "/perfetto.protos.rs"));

    /// The serialized `FileDescriptorSet` of our subset, for checking it
    /// against the official schema.
    pub const SUBSET_DESCRIPTOR: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/perfetto_subset.fds"));
}

pub use gpu::{ComputeKernel, GpuContext, GpuDevice, GpuId, GpuQueue, GpuStage, GpuWork};
pub use gpu_counters::{GpuCounter, GpuCounterGroup, GpuCounterSpec, GpuCounterUnit};
pub use lanes::{SliceTrack, Stacking};
pub use sched::{ContextSwitch, EndState, Task};
pub use sequence::SequenceWriter;
pub use slice::{Arg, ArgValue, CounterValue, Slice};
pub use stacks::StackFrame;
pub use trace::Trace;
pub use tracks::{CounterUnit, Scope, TrackId, TrackSpec, Tracks};

/// The clock the report's timestamps are written in (trace_processor's default trace clock).
pub const BOOTTIME: u32 = 6;
/// The wall clock, tied to [`BOOTTIME`] by one snapshot when the start time is known.
pub const REALTIME: u32 = 1;
/// CPU numbers trace_processor accepts: below 1024. One CPU number at or
/// above it makes it refuse the whole trace ("CPU … greater than maximum
/// allowed"), and it aborts on a CPU sample's.
pub const MAX_CPUS: u32 = 1024;
