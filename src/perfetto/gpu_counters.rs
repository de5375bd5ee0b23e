//! GPU counters in Perfetto's own GPU model: `GpuCounterEvent`s, which
//! trace_processor imports into counter tracks of a GPU (`gpu_counter_track`,
//! grouped in `gpu_counter_group`) and the UI shows under that GPU.
//!
//! What trace_processor (v58) does with them, and so what this writes:
//! - a counter's track is keyed by (GPU, name), whatever sequence it comes
//!   from; its unit is the spec's units as text ("%", "MHz", "B");
//! - each counter is described by an interned `InternedGpuCounterDescriptor`
//!   of its own (one spec, with its GPU), so that counters can be added as
//!   they are met and two GPUs never share a counter id;
//! - samples are forwards looking (`VALUE_DIRECTION_FORWARDS_LOOKING`): a
//!   value holds from its time on, as a TrackEvent counter's does. Without
//!   it trace_processor moves each value back to the sample before.

use std::io::{self, Write};

use rustc_hash::FxHashSet;

use super::gpu::GpuId;
use super::proto::{
    gpu_counter_descriptor::{
        gpu_counter_spec::ValueDirection, GpuCounterGroup as Group, GpuCounterSpec as SpecMessage,
        MeasureUnit,
    },
    GpuCounterDescriptor, InternedGpuCounterDescriptor,
};
use super::sequence::SequenceWriter;
use super::slice::CounterValue;
use super::wire;

/// `TracePacket.gpu_counter_event`.
const PACKET_GPU_COUNTER_EVENT: u32 = 52;

/// `GpuCounterEvent` fields, and those of its `GpuCounter`.
mod field {
    pub(super) const COUNTERS: u32 = 2;
    pub(super) const DESCRIPTOR_IID: u32 = 4;
    pub(super) const COUNTER_ID: u32 = 1;
    pub(super) const INT_VALUE: u32 = 2;
    pub(super) const DOUBLE_VALUE: u32 = 3;
}

/// The one counter id of each descriptor.
const COUNTER_ID: u32 = 1;

/// The unit of a GPU counter's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuCounterUnit {
    /// None (a count, or a unit Perfetto has no name for).
    None,
    /// Bytes.
    Bytes,
    /// Hertz.
    Hertz,
    /// Kilohertz.
    Kilohertz,
    /// Megahertz.
    Megahertz,
    /// Gigahertz.
    Gigahertz,
    /// Percent, out of 100.
    Percent,
}

/// The group a GPU counter is shown with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuCounterGroup {
    /// The GPU as a whole (clocks, say).
    System,
    /// Memory: use, caching and bandwidth.
    Memory,
    /// Compute: the SMs, their warps and pipes.
    Compute,
}

/// A GPU counter, as its track shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuCounterSpec {
    /// Its name (the track's), unique on its GPU.
    pub name: String,
    /// What it counts.
    pub description: Option<String>,
    /// The unit of its values.
    pub unit: GpuCounterUnit,
    /// Its group, if it has one (else unclassified).
    pub group: Option<GpuCounterGroup>,
}

/// A GPU counter of a sequence, declared with [`SequenceWriter::gpu_counter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GpuCounter(u64);

/// A sequence's GPU counters: each one's descriptor, and those sent since
/// its interned state was last cleared.
#[derive(Default)]
pub(super) struct GpuCounters {
    descriptors: Vec<InternedGpuCounterDescriptor>,
    sent: FxHashSet<u64>,
}

impl GpuCounters {
    /// Forgets what was sent (the sequence's interned state is cleared).
    pub(super) fn clear(&mut self) {
        self.sent.clear();
    }
}

impl<W: Write> SequenceWriter<'_, W> {
    /// A new counter of GPU `gpu`; its samples go with [`gpu_counter_value`](Self::gpu_counter_value).
    pub fn gpu_counter(&mut self, gpu: GpuId, spec: GpuCounterSpec) -> GpuCounter {
        let counters = &mut self.gpu_counters.descriptors;
        let iid = counters.len() as u64 + 1;
        let unit = match spec.unit {
            GpuCounterUnit::None => None,
            GpuCounterUnit::Bytes => Some(MeasureUnit::Byte),
            GpuCounterUnit::Hertz => Some(MeasureUnit::Hertz),
            GpuCounterUnit::Kilohertz => Some(MeasureUnit::Kilohertz),
            GpuCounterUnit::Megahertz => Some(MeasureUnit::Megahertz),
            GpuCounterUnit::Gigahertz => Some(MeasureUnit::Gigahertz),
            GpuCounterUnit::Percent => Some(MeasureUnit::Percent),
        };
        let group = match spec.group {
            None => Group::Unclassified,
            Some(GpuCounterGroup::System) => Group::System,
            Some(GpuCounterGroup::Memory) => Group::Memory,
            Some(GpuCounterGroup::Compute) => Group::Compute,
        };
        counters.push(InternedGpuCounterDescriptor {
            iid: Some(iid),
            gpu_id: Some(gpu.0),
            counter_descriptor: Some(GpuCounterDescriptor {
                specs: vec![SpecMessage {
                    counter_id: Some(COUNTER_ID),
                    name: Some(spec.name),
                    description: spec.description,
                    numerator_units: unit.map(|u| u as i32).into_iter().collect(),
                    groups: vec![group as i32],
                    value_direction: Some(ValueDirection::ForwardsLooking as i32),
                }],
            }),
        });
        GpuCounter(iid)
    }

    /// Writes the value of `counter` from `ts` on. Values, like slices,
    /// come in time order.
    pub fn gpu_counter_value(
        &mut self,
        counter: GpuCounter,
        ts: u64,
        value: CounterValue,
    ) -> io::Result<()> {
        self.write_ends_until(ts)?;
        self.restart_if_full()?;
        let iid = counter.0;
        if self.gpu_counters.sent.insert(iid) {
            let descriptor = self.gpu_counters.descriptors[iid as usize - 1].clone();
            self.interned.gpu_counter_descriptors.push(descriptor);
        }
        let mut event = std::mem::take(&mut self.event_buf);
        event.clear();
        wire::message(&mut event, field::COUNTERS, |b| {
            wire::uint(b, field::COUNTER_ID, COUNTER_ID.into());
            match value {
                CounterValue::Int(v) => wire::int(b, field::INT_VALUE, v),
                CounterValue::Double(v) => wire::double(b, field::DOUBLE_VALUE, v),
            }
        });
        wire::uint(&mut event, field::DESCRIPTOR_IID, iid);
        let written = self.write_event_as(PACKET_GPU_COUNTER_EVENT, ts, &event);
        self.event_buf = event;
        written
    }
}
