//! One packet sequence of a trace: interned names, delta timestamps, and
//! the scheduler that writes every BEGIN and END in time order.

use std::io::{self, Write};

use prost::Message;

use super::gpu::{GpuInterning, CORRELATION_SUBMISSION_IDS, TRACK_EVENT_GPU_CORRELATION};
use super::gpu_counters::GpuCounters;
use super::intern::{Interned, Interner, StaticInterner};
use super::lanes::{Lanes, SliceTrack, Stacking, OPEN};
use super::packets::encode_packet;
use super::proto::{
    trace_packet, track_event, ClockSnapshot, DebugAnnotationName, EventCategory, EventName,
    FtraceEventBundle, InternedData, InternedString, PerfSample, TracePacket, TracePacketDefaults,
};
use super::sched::ContextSwitch;
use super::slice::{Arg, ArgValue, CounterValue, Slice};
use super::spill::Spill;
use super::stacks::{StackFrame, StackInterner};
use super::trace::{clock, Shift, Trace, Written};
use super::tracks::{CounterUnit, Maker, TrackId, TrackSpec, Tracks};
use super::wire::{self, field::*};
use super::BOOTTIME;

/// Distinct strings a sequence remembers before it starts its interning afresh:
/// this bounds memory when names never repeat (and costs a few resent names).
const INTERNED_STRINGS_LIMIT: usize = 1 << 16;

/// The sequence-scoped clock whose timestamps are deltas from the previous packet.
const DELTA_CLOCK: u32 = 64;
pub(super) const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// A sequence's buffer goes to its spill when it holds this many bytes. When
/// gzipped, each such chunk is a member of its own: members of 512 KiB make
/// the 50x benchmark trace 0.17% bigger than members of 1 MiB, and save
/// 1.5 MiB per sequence (a chunk filling, one compressing, one spare).
pub(super) const FLUSH_AT: usize = 1 << 19;

/// The packet that starts a sequence: it clears the incremental state, declares
/// the delta clock at `at` and makes it the default, so that later timestamps
/// are deltas from the previous packet's.
fn start_packet(id: u32, at: u64) -> TracePacket {
    TracePacket {
        timestamp: Some(at),
        timestamp_clock_id: Some(BOOTTIME),
        data: Some(trace_packet::Data::ClockSnapshot(ClockSnapshot {
            clocks: vec![clock(DELTA_CLOCK, at, true), clock(BOOTTIME, at, false)],
        })),
        first_packet_on_sequence: Some(true),
        ..restart_packet(id)
    }
}

/// The packet that clears a sequence's interned data. The delta clock is not
/// incremental state: it carries on, so no new clock snapshot is needed (one
/// would also set BOOTTIME back when traces of two reports are concatenated).
/// The defaults are incremental state, and are sent again.
fn restart_packet(id: u32) -> TracePacket {
    TracePacket {
        optional_trusted_packet_sequence_id: Some(sequence_id(id)),
        sequence_flags: Some(SEQ_INCREMENTAL_STATE_CLEARED),
        trace_packet_defaults: Some(TracePacketDefaults {
            timestamp_clock_id: Some(DELTA_CLOCK),
        }),
        ..Default::default()
    }
}

pub(super) fn sequence_id(id: u32) -> trace_packet::OptionalTrustedPacketSequenceId {
    trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(id)
}

/// One packet sequence of a [`Trace`]. Slices must be given in order of start
/// time; the sequence writes every BEGIN, END and INSTANT in timestamp order.
pub struct SequenceWriter<'t, W: Write> {
    pub(super) trace: &'t Trace<W>,
    id: u32,
    /// Who makes this sequence's tracks: its place in its scope.
    maker: Maker,
    /// Its scope's shift, applied to what it writes.
    pub(super) shift: Shift,
    /// Encoded packets not yet handed to the spill.
    buf: Vec<u8>,
    /// Made when the buffer first fills: a short sequence stays in memory.
    spill: Option<Spill>,
    /// Scratch space for the TrackEvent being encoded.
    pub(super) event_buf: Vec<u8>,
    last_ts: u64,
    pub(super) names: Interner,
    /// The categories interned so far, in order: the iid of one is its
    /// place plus one. Every slice has a category and a sequence uses a
    /// handful, so the list is searched by text, without hashing.
    categories: Vec<Box<str>>,
    arg_names: StaticInterner,
    pub(super) arg_strings: Interner,
    stacks: StackInterner,
    /// GPU queues, contexts, kernels and launch argument names.
    pub(super) gpu: GpuInterning,
    pub(super) gpu_counters: GpuCounters,
    /// Interned entries not yet sent: they ride on the next packet.
    pub(super) interned: InternedData,
    lanes: Lanes,
    /// The uuid fields of the tracks this sequence has used, by index
    /// (`None` for others): known to be described, looked up without a lock,
    /// and encoded once.
    uuids: Vec<Option<wire::EncodedField>>,
}

impl<'t, W: Write> SequenceWriter<'t, W> {
    /// Sequence `id` of `trace`, made by `maker`, in a scope shifted by `shift`.
    pub(super) fn new(trace: &'t Trace<W>, id: u32, maker: Maker, shift: Shift) -> Self {
        let mut seq = SequenceWriter {
            trace,
            id,
            maker,
            shift,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            spill: None,
            event_buf: Vec::with_capacity(256),
            last_ts: 0,
            names: Interner::default(),
            categories: Vec::new(),
            arg_names: StaticInterner::default(),
            arg_strings: Interner::default(),
            stacks: StackInterner::default(),
            gpu: GpuInterning::default(),
            gpu_counters: GpuCounters::default(),
            interned: InternedData::default(),
            lanes: Lanes::default(),
            uuids: Vec::new(),
        };
        seq.push(&start_packet(id, shift.time));
        seq
    }

    /// Calls `f` with the trace's tracks, locked for the call: to find or
    /// make the tracks every sequence shares (processes, threads, groups).
    ///
    /// ```
    /// use nsys2perfetto::perfetto::{Trace, TrackSpec};
    ///
    /// let trace = Trace::new(Vec::<u8>::new(), 0, None);
    /// let mut seq = trace.sequence();
    /// let group = seq.with_tracks(|t| t.group(1, || TrackSpec::new(None, "group")));
    /// seq.add_track(TrackSpec::new(Some(group), "child"));
    /// ```
    ///
    /// The sequence is borrowed for the call, so `f` cannot use it (to add a
    /// track, say), which would lock the tracks again (E0499):
    ///
    /// ```compile_fail,E0499
    /// use nsys2perfetto::perfetto::{Trace, TrackSpec};
    ///
    /// let trace = Trace::new(Vec::<u8>::new(), 0, None);
    /// let mut seq = trace.sequence();
    /// seq.with_tracks(|_| seq.add_track(TrackSpec::new(None, "group")));
    /// ```
    ///
    /// Using another sequence of the trace in `f` panics.
    pub fn with_tracks<R>(&mut self, f: impl FnOnce(&mut Tracks) -> R) -> R {
        f(&mut self.trace.lock().tracks)
    }

    /// A new counter track, made by this sequence.
    pub fn add_counter_track(&mut self, spec: TrackSpec, unit: CounterUnit) -> TrackId {
        self.trace.lock().tracks.add_counter(self.maker, spec, unit)
    }

    /// Writes the value of counter `track` from `ts` on. Counter values, like
    /// slices, come in time order.
    pub fn counter(&mut self, track: TrackId, ts: u64, value: CounterValue) -> io::Result<()> {
        self.write_ends_until(ts)?;
        self.use_track(track);
        let kind = track_event::Type::Counter;
        self.write_track_event(ts, kind, track, |event| match value {
            CounterValue::Int(v) => wire::int(event, TRACK_EVENT_COUNTER_VALUE, v),
            CounterValue::Double(v) => wire::double(event, TRACK_EVENT_DOUBLE_COUNTER_VALUE, v),
        })
    }

    /// A new track that holds no slices itself (a group, say), made by this sequence.
    pub fn add_track(&mut self, spec: TrackSpec) -> TrackId {
        self.trace.lock().tracks.add(self.maker, spec)
    }

    /// A new slice track (with lanes as needed) described by `spec`.
    pub fn slice_track(&mut self, spec: TrackSpec, stacking: Stacking) -> SliceTrack {
        self.lanes.add(spec, stacking)
    }

    /// Writes `slice` on `track`. Its start must not precede the previous slice's.
    pub fn slice(&mut self, track: SliceTrack, slice: &Slice) -> io::Result<()> {
        if let Some(&(from, to)) = self.trace.window.get() {
            if slice.start < from || slice.end.is_some_and(|end| end > to) {
                return self.clipped(track, slice, (from, to));
            }
        }
        debug_assert!(
            slice.start >= self.last_ts,
            "slices are given in start order"
        );
        self.write_ends_until(slice.start)?;
        self.restart_if_full()?;
        let end = match slice.end {
            Some(end) if end == slice.start => None,
            Some(end) => Some(end),
            None => Some(OPEN),
        };
        let (trace, maker) = (self.trace, self.maker);
        let lane = self.lanes.place(
            |spec| trace.lock().tracks.add(maker, spec.clone()),
            track,
            slice.start,
            end,
        );
        self.use_track(lane);

        let kind = if end.is_some() {
            track_event::Type::SliceBegin
        } else {
            track_event::Type::Instant
        };
        let callstack = slice
            .callstack
            .map(|frames| self.stacks.callstack(frames, &mut self.interned));
        let category = self.category_iid(slice.category);
        // The event is encoded first, then the packet around it.
        let mut event = std::mem::take(&mut self.event_buf);
        event.clear();
        // Fields in order of their numbers, as prost writes them: it
        // compresses best (the varying timestamp comes late).
        wire::uint(&mut event, TRACK_EVENT_CATEGORY_IIDS, category);
        for arg in slice.args {
            self.encode_annotation(&mut event, arg);
        }
        wire::uint(&mut event, TRACK_EVENT_TYPE, kind as u64);
        match self.names.intern(slice.name) {
            Interned::Inline => wire::bytes(&mut event, TRACK_EVENT_NAME, slice.name.as_bytes()),
            Interned::New(iid) => {
                self.interned.event_names.push(EventName {
                    iid: Some(iid),
                    name: Some(slice.name.to_owned()),
                });
                wire::uint(&mut event, TRACK_EVENT_NAME_IID, iid);
            }
            Interned::Known(iid) => wire::uint(&mut event, TRACK_EVENT_NAME_IID, iid),
        }
        self.uuid_field(lane).write(&mut event);
        for &flow in slice.flows_out {
            wire::fixed64(&mut event, TRACK_EVENT_FLOW_IDS, flow);
        }
        for &flow in slice.flows_in {
            wire::fixed64(&mut event, TRACK_EVENT_TERMINATING_FLOW_IDS, flow);
        }
        if let Some(callstack) = callstack {
            wire::uint(&mut event, TRACK_EVENT_CALLSTACK_IID, callstack);
        }
        if !slice.submits.is_empty() {
            wire::message(&mut event, TRACK_EVENT_GPU_CORRELATION, |b| {
                for &id in slice.submits {
                    wire::uint(b, CORRELATION_SUBMISSION_IDS, id);
                }
            });
        }
        let written = self.write_event(slice.start, &event);
        self.event_buf = event;
        written
    }

    /// Makes sure `track` (a thread, say) and its ancestors are described,
    /// for data that refers to them without events on them (samples, switches).
    pub fn describe(&mut self, track: TrackId) -> io::Result<()> {
        self.use_track(track);
        Ok(())
    }

    /// Writes a CPU sample of thread `tid` of process `pid` with the call stack
    /// `frames`, innermost first. Samples, like slices, come in time order.
    pub fn cpu_sample(
        &mut self,
        ts: u64,
        (pid, tid): (u32, u32),
        cpu: Option<u32>,
        frames: &[StackFrame],
    ) -> io::Result<()> {
        self.write_ends_until(ts)?;
        self.restart_if_full()?;
        let callstack = self.stacks.callstack(frames, &mut self.interned);
        let mut packet = self.packet(
            ts,
            trace_packet::Data::PerfSample(PerfSample {
                cpu: cpu.zip(self.shift.cpu).map(|(c, offset)| c + offset),
                pid: Some(self.shift.id(pid)),
                tid: Some(self.shift.id(tid)),
                callstack_iid: Some(callstack),
            }),
        );
        packet.interned_data = self.take_interned();
        self.push_and_maybe_flush(&packet)
    }

    /// Writes context switches of one CPU (in time order), as one ftrace bundle.
    pub fn context_switches(&mut self, cpu: u32, switches: &[ContextSwitch]) -> io::Result<()> {
        let Some(cpu_offset) = self.shift.cpu else {
            return Err(io::Error::other(
                "context switches in a scope whose CPU numbers are dropped",
            ));
        };
        // Ftrace events carry their own absolute times: the packet needs none.
        let packet = TracePacket {
            data: Some(trace_packet::Data::FtraceEvents(FtraceEventBundle {
                cpu: Some(cpu + cpu_offset),
                event: switches
                    .iter()
                    .map(|s| s.to_ftrace(self.shift.time, self.shift.pid))
                    .collect(),
            })),
            optional_trusted_packet_sequence_id: Some(sequence_id(self.id)),
            ..Default::default()
        };
        self.push_and_maybe_flush(&packet)
    }

    /// Writes every END whose time is known. What is left open are slices
    /// that never ended: [`close`](Self::close) ends them.
    pub fn drain(&mut self) -> io::Result<()> {
        self.write_ends_until(OPEN - 1)?;
        self.trace.lock().saw(self.last_ts);
        Ok(())
    }

    /// Writes `slice` cut to `[from, to]`, saying where it was cut.
    fn clipped(
        &mut self,
        track: SliceTrack,
        slice: &Slice,
        (from, to): (u64, u64),
    ) -> io::Result<()> {
        let start = slice.start.max(from).min(to);
        let end = slice.end.map(|end| end.min(to).max(start));
        let mut args = slice.args.to_vec();
        if slice.start < from {
            args.push(Arg::new("clipped_start", ArgValue::Uint(slice.start)));
        }
        if let Some(end) = slice.end.filter(|&end| end > to) {
            args.push(Arg::new("clipped_end", ArgValue::Uint(end)));
        }
        let cut = Slice {
            start,
            end,
            args: &args,
            ..*slice
        };
        self.slice(track, &cut)
    }

    /// Ends the slices that never ended at `at` (the end of the trace, say:
    /// [`Trace::last_timestamp`] once every sequence is drained), and hands
    /// the sequence to the trace.
    pub fn close(mut self, at: u64) -> io::Result<()> {
        self.write_ends_until(OPEN - 1)?;
        let at = at.max(self.last_ts);
        while let Some((_, lane)) = self.lanes.pop_due(OPEN) {
            self.write_end(at, lane)?;
        }
        let written = match self.spill.take() {
            None => Written::Buffered(std::mem::take(&mut self.buf)),
            Some(mut spill) => {
                spill.write(&mut self.buf)?;
                Written::Spilled(spill.finish()?)
            }
        };
        let mut shared = self.trace.lock();
        shared.saw(self.last_ts);
        shared.sequences.insert(self.id, written);
        Ok(())
    }

    /// Hands the buffered packets to the spill, made on the first call.
    fn flush(&mut self) -> io::Result<()> {
        let spill = match &mut self.spill {
            Some(spill) => spill,
            None => {
                let compressors = match self.trace.gzip {
                    Some(level) => Some(self.trace.lock().compressors.handle(level)?),
                    None => None,
                };
                self.spill.insert(Spill::new(compressors)?)
            }
        };
        spill.write(&mut self.buf)
    }

    fn push(&mut self, packet: &TracePacket) {
        encode_packet(packet, &mut self.buf);
    }

    fn push_and_maybe_flush(&mut self, packet: &TracePacket) -> io::Result<()> {
        self.push(packet);
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    /// The uuid field of a track this sequence has used (and so described).
    fn uuid_field(&self, track: TrackId) -> wire::EncodedField {
        self.uuids[track.index()].expect("a track in use")
    }

    /// Restarts interning when the sequence remembers too much. Call only where
    /// nothing interned is pending (before interning for the next packet).
    pub(super) fn restart_if_full(&mut self) -> io::Result<()> {
        let remembered = self.names.len()
            + self.arg_names.len()
            + self.arg_strings.len()
            + self.stacks.len()
            + self.gpu.len();
        if remembered > INTERNED_STRINGS_LIMIT {
            self.restart()?;
        }
        Ok(())
    }

    /// Forgets the interned strings, here and in trace_processor. Tracks and
    /// open slices are not incremental state: they carry on.
    fn restart(&mut self) -> io::Result<()> {
        debug_assert_eq!(
            self.interned,
            InternedData::default(),
            "nothing pending across a restart"
        );
        // Cleared, not replaced: the tables keep their memory for the next round.
        self.names.clear();
        self.categories.clear();
        self.arg_names.clear();
        self.arg_strings.clear();
        self.stacks = StackInterner::default();
        self.gpu.clear();
        self.gpu_counters.clear();
        self.push_and_maybe_flush(&restart_packet(self.id))
    }

    pub(super) fn write_ends_until(&mut self, t: u64) -> io::Result<()> {
        while let Some((end, lane)) = self.lanes.pop_due(t) {
            self.write_end(end, lane)?;
        }
        Ok(())
    }

    fn write_end(&mut self, ts: u64, lane: TrackId) -> io::Result<()> {
        self.write_track_event(ts, track_event::Type::SliceEnd, lane, |_| {})
    }

    /// Writes at `ts` a TrackEvent of type `kind` on `track`, with the
    /// fields `more` encodes after those two (in the order of their numbers).
    /// It is encoded in place, inside its packet: it interns nothing, and
    /// an END (most of these) is a few bytes.
    fn write_track_event(
        &mut self,
        ts: u64,
        kind: track_event::Type,
        track: TrackId,
        more: impl FnOnce(&mut Vec<u8>),
    ) -> io::Result<()> {
        let uuid = self.uuid_field(track);
        self.write_packet(ts, |b| {
            wire::message(b, PACKET_TRACK_EVENT, |event| {
                wire::uint(event, TRACK_EVENT_TYPE, kind as u64);
                uuid.write(event);
                more(event);
            })
        })
    }

    /// Marks `track` and its ancestors as in use, so that the trace
    /// describes them, and learns its uuid.
    fn use_track(&mut self, track: TrackId) {
        let index = track.index();
        if self.uuids.get(index).is_some_and(Option::is_some) {
            return;
        }
        let mut shared = self.trace.lock();
        shared.tracks.mark_used(track);
        if self.uuids.len() <= index {
            self.uuids.resize(index + 1, None);
        }
        let uuid = shared.tracks.uuid(track);
        self.uuids[index] = Some(wire::EncodedField::uint(TRACK_EVENT_TRACK_UUID, uuid));
    }

    /// Writes a TrackEvent packet around the encoded `event`, with the
    /// interned entries it introduces.
    fn write_event(&mut self, ts: u64, event: &[u8]) -> io::Result<()> {
        self.write_event_as(PACKET_TRACK_EVENT, ts, event)
    }

    /// Writes a packet whose field `data_field` is the encoded `event`,
    /// with the interned entries it introduces.
    pub(super) fn write_event_as(
        &mut self,
        data_field: u32,
        ts: u64,
        event: &[u8],
    ) -> io::Result<()> {
        self.write_packet(ts, |b| wire::bytes(b, data_field, event))
    }

    /// Writes a packet at `ts` whose data field (key and all) `write_data`
    /// writes, with the interned entries pending.
    fn write_packet(&mut self, ts: u64, write_data: impl FnOnce(&mut Vec<u8>)) -> io::Result<()> {
        let (timestamp, clock) = self.timestamp(ts);
        let interned = self.take_interned();
        let extensions = std::mem::take(&mut self.gpu.pending_extensions);
        let id = self.id;
        // The order prost writes (its oneofs first): see `slice`.
        wire::message(&mut self.buf, TRACE_PACKET, |b| {
            write_data(b);
            wire::uint(b, PACKET_TIMESTAMP, timestamp);
            wire::uint(b, PACKET_TRUSTED_SEQUENCE_ID, id.into());
            if interned.is_some() || !extensions.is_empty() {
                wire::message(b, PACKET_INTERNED_DATA, |b| {
                    if let Some(interned) = &interned {
                        interned.encode_raw(b);
                    }
                    b.extend_from_slice(&extensions);
                });
            }
            wire::uint(b, PACKET_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE.into());
            if let Some(clock) = clock {
                wire::uint(b, PACKET_TIMESTAMP_CLOCK_ID, clock.into());
            }
        });
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    /// The timestamp of a packet at `ts` and, for a time before the previous
    /// packet's, the clock it is given in: deltas are unsigned, so an earlier
    /// time is written in absolute terms (shifted: deltas need no shift, as
    /// the delta clock starts at the shift).
    fn timestamp(&mut self, ts: u64) -> (u64, Option<u32>) {
        if ts >= self.last_ts {
            let delta = ts - self.last_ts;
            self.last_ts = ts;
            (delta, None)
        } else {
            (ts + self.shift.time, Some(BOOTTIME))
        }
    }

    fn take_interned(&mut self) -> Option<InternedData> {
        let i = &self.interned;
        let pending = !(i.event_names.is_empty()
            && i.event_categories.is_empty()
            && i.debug_annotation_names.is_empty()
            && i.debug_annotation_string_values.is_empty()
            && i.function_names.is_empty()
            && i.frames.is_empty()
            && i.callstacks.is_empty()
            && i.mapping_paths.is_empty()
            && i.mappings.is_empty()
            && i.graphics_contexts.is_empty()
            && i.gpu_specifications.is_empty()
            && i.gpu_counter_descriptors.is_empty());
        pending.then(|| std::mem::take(&mut self.interned))
    }

    fn packet(&mut self, ts: u64, data: trace_packet::Data) -> TracePacket {
        let (timestamp, clock) = self.timestamp(ts);
        TracePacket {
            data: Some(data),
            timestamp: Some(timestamp),
            timestamp_clock_id: clock,
            optional_trusted_packet_sequence_id: Some(sequence_id(self.id)),
            sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
            ..Default::default()
        }
    }

    /// Categories are few: always interned, from the first use.
    fn category_iid(&mut self, name: &str) -> u64 {
        if let Some(at) = self.categories.iter().position(|known| **known == *name) {
            return at as u64 + 1;
        }
        self.categories.push(name.into());
        // iids start at 1: 0 means "unset" to trace_processor.
        let iid = self.categories.len() as u64;
        self.interned.event_categories.push(EventCategory {
            iid: Some(iid),
            name: Some(name.to_owned()),
        });
        iid
    }

    fn encode_annotation(&mut self, event: &mut Vec<u8>, arg: &Arg) {
        let (arg_names, arg_strings, interned) = (
            &mut self.arg_names,
            &mut self.arg_strings,
            &mut self.interned,
        );
        wire::message(event, TRACK_EVENT_DEBUG_ANNOTATIONS, |b| {
            let (iid, new) = arg_names.intern(arg.name);
            if new {
                interned.debug_annotation_names.push(DebugAnnotationName {
                    iid: Some(iid),
                    name: Some(arg.name.to_owned()),
                });
            }
            wire::uint(b, ANNOTATION_NAME_IID, iid);
            write_value(b, arg.value, &ANNOTATION_VALUE, arg_strings, interned);
        });
    }
}

/// The fields of a message that holds an arg's value: a debug annotation's,
/// or a GPU launch arg's (which has no bool: it is written as a uint).
pub(super) struct ValueFields {
    pub bool: u32,
    pub uint: u32,
    pub int: u32,
    pub double: u32,
    pub string: u32,
    pub string_iid: u32,
}

const ANNOTATION_VALUE: ValueFields = ValueFields {
    bool: ANNOTATION_BOOL,
    uint: ANNOTATION_UINT,
    int: ANNOTATION_INT,
    double: ANNOTATION_DOUBLE,
    string: ANNOTATION_STRING,
    string_iid: ANNOTATION_STRING_IID,
};

/// Writes `value` in its field of `fields`; a string goes by its interned id
/// (sent in `interned` the first time) unless it is written inline.
pub(super) fn write_value(
    b: &mut Vec<u8>,
    value: ArgValue,
    fields: &ValueFields,
    arg_strings: &mut Interner,
    interned: &mut InternedData,
) {
    match value {
        ArgValue::Bool(v) => wire::uint(b, fields.bool, u64::from(v)),
        ArgValue::Uint(v) => wire::uint(b, fields.uint, v),
        ArgValue::Int(v) => wire::int(b, fields.int, v),
        ArgValue::Double(v) => wire::double(b, fields.double, v),
        ArgValue::Str(v) => match arg_strings.intern(v) {
            Interned::Inline => wire::bytes(b, fields.string, v.as_bytes()),
            Interned::New(iid) => {
                interned
                    .debug_annotation_string_values
                    .push(InternedString {
                        iid: Some(iid),
                        str: Some(v.as_bytes().to_vec()),
                    });
                wire::uint(b, fields.string_iid, iid);
            }
            Interned::Known(iid) => wire::uint(b, fields.string_iid, iid),
        },
    }
}
