//! A trace and its packet sequences.

use std::io::{self, Write};

use super::intern::{Interned, Interner};
use super::lanes::{Lanes, SliceTrack, Stacking, OPEN};
use super::packets::PacketWriter;
use super::proto::{
    clock_snapshot::Clock, debug_annotation, trace_packet, track_event, ClockSnapshot,
    DebugAnnotation, DebugAnnotationName, EventCategory, EventName, InternedData, InternedString,
    TracePacket, TracePacketDefaults, TrackDescriptor, TrackEvent,
};
use super::tracks::{TrackId, TrackSpec, Tracks};
use super::{BOOTTIME, REALTIME};

/// Distinct strings a sequence remembers before it starts its interning afresh:
/// this bounds memory when names never repeat (and costs a few resent names).
const INTERNED_STRINGS_LIMIT: usize = 1 << 16;

/// The sequence-scoped clock whose timestamps are deltas from the previous packet.
const DELTA_CLOCK: u32 = 64;
const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// A whole trace: the packet stream, its tracks, and the sequences written into it.
pub struct Trace<W: Write> {
    out: PacketWriter<W>,
    tracks: Tracks,
    sequences: u32,
    last_timestamp: Option<u64>,
}

impl<W: Write> Trace<W> {
    /// `namespace` keeps this trace's track uuids apart from other traces'.
    pub fn new(out: W, namespace: u64) -> Self {
        Self {
            out: PacketWriter::new(out),
            tracks: Tracks::new(namespace),
            sequences: 0,
            last_timestamp: None,
        }
    }

    pub fn tracks(&mut self) -> &mut Tracks {
        &mut self.tracks
    }

    /// Ties trace time 0 to a wall-clock time (ns since the Unix epoch).
    pub fn set_wall_clock(&mut self, unix_ns_at_zero: u64) -> io::Result<()> {
        let clocks = vec![
            clock(BOOTTIME, 0, false),
            clock(REALTIME, unix_ns_at_zero, false),
        ];
        self.write(&TracePacket {
            timestamp: Some(0),
            timestamp_clock_id: Some(BOOTTIME),
            data: Some(trace_packet::Data::ClockSnapshot(ClockSnapshot { clocks })),
            ..Default::default()
        })
    }

    /// Starts a new packet sequence, with its own interning and delta clock.
    pub fn sequence(&mut self) -> io::Result<SequenceWriter<'_, W>> {
        self.sequences += 1;
        let id = self.sequences;
        self.write(&start_packet(id, 0))?;
        Ok(SequenceWriter {
            trace: self,
            id,
            last_ts: 0,
            names: Interner::default(),
            categories: Interner::default(),
            arg_names: Interner::default(),
            arg_strings: Interner::default(),
            interned: InternedData::default(),
            lanes: Lanes::default(),
            descriptors: Vec::new(),
        })
    }

    /// The latest timestamp written so far, over all sequences.
    pub fn last_timestamp(&self) -> Option<u64> {
        self.last_timestamp
    }
    /// Ends the trace and returns the writer. trace_processor refuses a trace with
    /// no packets, so an empty report still gets one (its clock snapshot).
    pub fn finish(mut self) -> io::Result<W> {
        if self.out.packets() == 0 {
            self.sequence()?;
        }
        Ok(self.out.into_inner())
    }

    fn write(&mut self, packet: &TracePacket) -> io::Result<()> {
        self.out.write(packet)
    }
}

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

fn clock(clock_id: u32, timestamp: u64, is_incremental: bool) -> Clock {
    Clock {
        clock_id: Some(clock_id),
        timestamp: Some(timestamp),
        is_incremental: is_incremental.then_some(true),
    }
}

fn sequence_id(id: u32) -> trace_packet::OptionalTrustedPacketSequenceId {
    trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(id)
}

/// A slice to write: `[start, end)` in trace time.
pub struct Slice<'a> {
    pub start: u64,
    /// `None` when the slice never ended: it is closed when the sequence finishes.
    pub end: Option<u64>,
    pub name: &'a str,
    pub category: &'a str,
    pub args: &'a [Arg<'a>],
    /// Flows that start at this slice.
    pub flows_out: &'a [u64],
    /// Flows that end at this slice.
    pub flows_in: &'a [u64],
}

/// A named value shown in the slice's details (trace_processor's `args`, as `debug.<name>`).
#[derive(Clone, Copy, Debug)]
pub struct Arg<'a> {
    pub name: &'a str,
    pub value: ArgValue<'a>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ArgValue<'a> {
    Int(i64),
    Uint(u64),
    Double(f64),
    Bool(bool),
    Str(&'a str),
}

impl<'a> Arg<'a> {
    pub fn new(name: &'a str, value: ArgValue<'a>) -> Self {
        Self { name, value }
    }
}

/// One packet sequence of a [`Trace`]. Slices must be given in order of start
/// time; the sequence writes every BEGIN, END and INSTANT in timestamp order.
pub struct SequenceWriter<'t, W: Write> {
    trace: &'t mut Trace<W>,
    id: u32,
    last_ts: u64,
    names: Interner,
    categories: Interner,
    arg_names: Interner,
    arg_strings: Interner,
    /// Interned entries not yet sent: they ride on the next packet.
    interned: InternedData,
    lanes: Lanes,
    descriptors: Vec<TrackDescriptor>,
}

impl<W: Write> SequenceWriter<'_, W> {
    pub fn tracks(&mut self) -> &mut Tracks {
        &mut self.trace.tracks
    }

    /// A new slice track (with lanes as needed) described by `spec`.
    pub fn slice_track(&mut self, spec: TrackSpec, stacking: Stacking) -> SliceTrack {
        self.lanes.add(spec, stacking)
    }

    /// Writes `slice` on `track`. Its start must not precede the previous slice's.
    pub fn slice(&mut self, track: SliceTrack, slice: &Slice) -> io::Result<()> {
        debug_assert!(
            slice.start >= self.last_ts,
            "slices are given in start order"
        );
        self.write_ends_until(slice.start)?;
        let remembered = self.names.len() + self.arg_names.len() + self.arg_strings.len();
        if remembered > INTERNED_STRINGS_LIMIT {
            self.restart()?;
        }
        let end = match slice.end {
            Some(end) if end == slice.start => None,
            Some(end) => Some(end),
            None => Some(OPEN),
        };
        let lane = self
            .lanes
            .place(&mut self.trace.tracks, track, slice.start, end);
        self.send_descriptors(lane)?;

        let kind = if end.is_some() {
            track_event::Type::SliceBegin
        } else {
            track_event::Type::Instant
        };
        let event = TrackEvent {
            category_iids: vec![self.category_iid(slice.category)],
            name_field: Some(self.name(slice.name)),
            r#type: Some(kind as i32),
            track_uuid: Some(self.trace.tracks.uuid(lane)),
            debug_annotations: slice.args.iter().map(|a| self.annotation(a)).collect(),
            flow_ids: slice.flows_out.to_vec(),
            terminating_flow_ids: slice.flows_in.to_vec(),
        };
        self.write_event(slice.start, event)
    }

    /// Writes the remaining ENDs. Slices that never ended close at the latest
    /// time written so far in the whole trace: its end, if this is the last sequence.
    pub fn finish(mut self) -> io::Result<()> {
        self.write_ends_until(OPEN - 1)?;
        let close_at = self.trace.last_timestamp.unwrap_or(0).max(self.last_ts);
        while let Some((_, lane)) = self.lanes.pop_due(OPEN) {
            self.write_end(close_at, lane)?;
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
        self.names = Interner::default();
        self.categories = Interner::default();
        self.arg_names = Interner::default();
        self.arg_strings = Interner::default();
        self.trace.write(&restart_packet(self.id))
    }

    fn write_ends_until(&mut self, t: u64) -> io::Result<()> {
        while let Some((end, lane)) = self.lanes.pop_due(t) {
            self.write_end(end, lane)?;
        }
        Ok(())
    }

    fn write_end(&mut self, ts: u64, lane: TrackId) -> io::Result<()> {
        let event = TrackEvent {
            r#type: Some(track_event::Type::SliceEnd as i32),
            track_uuid: Some(self.trace.tracks.uuid(lane)),
            ..Default::default()
        };
        self.write_event(ts, event)
    }

    fn send_descriptors(&mut self, track: TrackId) -> io::Result<()> {
        self.trace.tracks.take_unsent(track, &mut self.descriptors);
        for descriptor in std::mem::take(&mut self.descriptors) {
            let packet = self.packet(
                self.last_ts,
                trace_packet::Data::TrackDescriptor(descriptor),
            );
            self.trace.write(&packet)?;
        }
        Ok(())
    }

    fn write_event(&mut self, ts: u64, event: TrackEvent) -> io::Result<()> {
        let packet = self.packet(ts, trace_packet::Data::TrackEvent(event));
        self.trace.last_timestamp = Some(self.trace.last_timestamp.map_or(ts, |t| t.max(ts)));
        self.trace.write(&packet)
    }

    fn packet(&mut self, ts: u64, data: trace_packet::Data) -> TracePacket {
        let mut packet = TracePacket {
            data: Some(data),
            optional_trusted_packet_sequence_id: Some(sequence_id(self.id)),
            sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
            ..Default::default()
        };
        if ts >= self.last_ts {
            packet.timestamp = Some(ts - self.last_ts);
            self.last_ts = ts;
        } else {
            // Deltas are unsigned: an earlier time is written in absolute terms.
            packet.timestamp = Some(ts);
            packet.timestamp_clock_id = Some(BOOTTIME);
        }
        if self.interned != InternedData::default() {
            packet.interned_data = Some(std::mem::take(&mut self.interned));
        }
        packet
    }

    fn name(&mut self, name: &str) -> track_event::NameField {
        match self.names.intern(name) {
            Interned::Inline => track_event::NameField::Name(name.to_owned()),
            Interned::New(iid) => {
                self.interned.event_names.push(EventName {
                    iid: Some(iid),
                    name: Some(name.to_owned()),
                });
                track_event::NameField::NameIid(iid)
            }
            Interned::Known(iid) => track_event::NameField::NameIid(iid),
        }
    }

    /// Categories are few: always interned, from the first use.
    fn category_iid(&mut self, name: &str) -> u64 {
        let mut interned = self.categories.intern(name);
        if interned == Interned::Inline {
            interned = self.categories.intern(name);
        }
        match interned {
            Interned::New(iid) => {
                self.interned.event_categories.push(EventCategory {
                    iid: Some(iid),
                    name: Some(name.to_owned()),
                });
                iid
            }
            Interned::Known(iid) => iid,
            Interned::Inline => unreachable!("interned on its second use"),
        }
    }

    fn annotation(&mut self, arg: &Arg) -> DebugAnnotation {
        use debug_annotation::{NameField, Value};
        let name_field = match self.arg_names.intern(arg.name) {
            Interned::Inline => NameField::Name(arg.name.to_owned()),
            Interned::New(iid) => {
                self.interned
                    .debug_annotation_names
                    .push(DebugAnnotationName {
                        iid: Some(iid),
                        name: Some(arg.name.to_owned()),
                    });
                NameField::NameIid(iid)
            }
            Interned::Known(iid) => NameField::NameIid(iid),
        };
        let value = match arg.value {
            ArgValue::Int(v) => Value::IntValue(v),
            ArgValue::Uint(v) => Value::UintValue(v),
            ArgValue::Double(v) => Value::DoubleValue(v),
            ArgValue::Bool(v) => Value::BoolValue(v),
            ArgValue::Str(s) => match self.arg_strings.intern(s) {
                Interned::Inline => Value::StringValue(s.to_owned()),
                Interned::New(iid) => {
                    self.interned
                        .debug_annotation_string_values
                        .push(InternedString {
                            iid: Some(iid),
                            str: Some(s.as_bytes().to_vec()),
                        });
                    Value::StringValueIid(iid)
                }
                Interned::Known(iid) => Value::StringValueIid(iid),
            },
        };
        DebugAnnotation {
            name_field: Some(name_field),
            value: Some(value),
        }
    }
}
