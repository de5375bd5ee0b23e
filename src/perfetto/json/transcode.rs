//! Perfetto protobuf in, Chrome trace event JSON out, one packet at a time.
//!
//! The trace our writer makes describes every track before any event (see
//! [`crate::perfetto::Trace`]), interns names per sequence and gives times as
//! deltas on a sequence clock. This undoes all of that as it reads:
//!
//! - a process or thread track keeps its pid and tid; any other track that
//!   holds events (a CUDA API row under a thread, a GPU stream, a lane of
//!   either) becomes a thread of its own with an id of its own and the
//!   track's name, in the process of its nearest process or thread
//!   ancestor, or, for tracks under a top-level group (a GPU, say), in a
//!   process of that group's own, named after it;
//! - a slice is written as one complete ("X") event when its END arrives,
//!   so nothing needs to match BEGIN and END again, whatever order a reader
//!   sorts equal times in; only the slices open on a track are held;
//! - each flow becomes a pair of flow events ("s", and "f" bound to the
//!   enclosing slice) at the start of the slices it links: trace_processor
//!   binds one to the slice begun last on its track at or before its time,
//!   which is the flow's own slice unless a nested one starts with it (the
//!   flows of such slices are counted);
//! - counters become "C" events of their track's process.
//!
//! Times are microseconds with the nanoseconds as three decimals: exact.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Read, Write};

use prost::Message;
use rustc_hash::FxHashMap;

use super::encode;
use crate::perfetto::proto::{
    debug_annotation, trace_packet, track_event, DebugAnnotation, InternedData, TracePacket,
    TrackDescriptor, TrackEvent,
};
use crate::perfetto::wire::PACKET_KEY;
use crate::perfetto::BOOTTIME;

/// What the transcoder left out, for the caller to say so.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Transcoded {
    /// JSON events written (metadata included).
    pub events: u64,
    /// Packets with no JSON equivalent (CPU samples, context switches).
    pub skipped_packets: u64,
    /// Flows of slices in which a nested slice starts at their start: JSON
    /// readers bind a flow event to the innermost slice open at its time,
    /// and so to the nested one.
    pub flows_on_nested: u64,
}

/// Reads the protobuf trace in `input` and writes it to `out` as JSON.
pub(super) fn transcode<R: Read, W: Write>(input: R, out: W) -> io::Result<(W, Transcoded)> {
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut t = Transcoder {
        sequences: FxHashMap::default(),
        json: Json {
            out,
            line: String::with_capacity(512),
            tracks: FxHashMap::default(),
            open: FxHashMap::default(),
            next_id: SYNTHETIC_IDS,
            stats: Transcoded::default(),
        },
    };
    t.json
        .out
        .write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
    let mut bytes = Vec::new();
    while let Some(len) = packet_length(&mut input)? {
        bytes.resize(len, 0);
        input.read_exact(&mut bytes)?;
        let packet = TracePacket::decode(bytes.as_slice()).map_err(invalid)?;
        t.packet(packet)?;
    }
    t.json.finish()
}

/// Ids given to tracks that are neither processes nor threads: far above
/// any pid or tid Linux hands out (at most 2^22).
const SYNTHETIC_IDS: i64 = 1 << 30;

/// The length of the next packet, or `None` at the end of the trace.
fn packet_length(input: &mut impl BufRead) -> io::Result<Option<usize>> {
    if input.fill_buf()?.is_empty() {
        return Ok(None);
    }
    let tag = varint(input)?;
    if tag != u64::from(PACKET_KEY) {
        return Err(invalid(format!(
            "field tag {tag:#x} where a TracePacket belongs"
        )));
    }
    let len = varint(input)?;
    usize::try_from(len)
        .ok()
        .filter(|&l| l <= 1 << 30)
        .map(Some)
        .ok_or_else(|| invalid(format!("a packet of {len} bytes")))
}

fn varint(input: &mut impl BufRead) -> io::Result<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let mut byte = [0u8];
        input.read_exact(&mut byte)?;
        v |= u64::from(byte[0] & 0x7F) << shift;
        if byte[0] < 0x80 {
            return Ok(v);
        }
    }
    Err(invalid("a varint longer than 10 bytes"))
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the Perfetto trace cannot be read back as JSON: {e}"),
    )
}

const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;

struct Transcoder<W> {
    sequences: FxHashMap<u32, Sequence>,
    json: Json<W>,
}

/// A packet sequence's incremental state.
#[derive(Default)]
struct Sequence {
    /// The value of each incremental clock, by clock id.
    clocks: FxHashMap<u32, u64>,
    default_clock: Option<u32>,
    names: FxHashMap<u64, String>,
    categories: FxHashMap<u64, String>,
    arg_names: FxHashMap<u64, String>,
    arg_strings: FxHashMap<u64, String>,
}

impl Sequence {
    fn intern(&mut self, data: InternedData) {
        for n in data.event_names {
            self.names.insert(n.iid(), n.name.unwrap_or_default());
        }
        for c in data.event_categories {
            self.categories.insert(c.iid(), c.name.unwrap_or_default());
        }
        for n in data.debug_annotation_names {
            self.arg_names.insert(n.iid(), n.name.unwrap_or_default());
        }
        for s in data.debug_annotation_string_values {
            let value = String::from_utf8_lossy(s.str()).into_owned();
            self.arg_strings.insert(s.iid(), value);
        }
    }

    /// Interned data is incremental state; clocks carry on (as in
    /// trace_processor).
    fn clear_interned(&mut self) {
        self.names.clear();
        self.categories.clear();
        self.arg_names.clear();
        self.arg_strings.clear();
    }

    /// The absolute time of a packet's timestamp, moving the sequence's
    /// incremental clock on if it is given in one.
    fn time(&mut self, packet: &TracePacket) -> io::Result<u64> {
        let ts = packet.timestamp();
        let clock = packet
            .timestamp_clock_id
            .or(self.default_clock)
            .unwrap_or(BOOTTIME);
        if clock == BOOTTIME {
            return Ok(ts);
        }
        let value = self
            .clocks
            .get_mut(&clock)
            .ok_or_else(|| invalid(format!("a time on clock {clock}, which no snapshot set")))?;
        *value += ts;
        Ok(*value)
    }

    fn lookup<'a>(table: &'a FxHashMap<u64, String>, iid: u64, what: &str) -> io::Result<&'a str> {
        table
            .get(&iid)
            .map(String::as_str)
            .ok_or_else(|| invalid(format!("{what} iid {iid} was never interned")))
    }
}

impl<W: Write> Transcoder<W> {
    fn packet(&mut self, packet: TracePacket) -> io::Result<()> {
        use trace_packet::{Data, OptionalTrustedPacketSequenceId as SequenceId};
        let id = match packet.optional_trusted_packet_sequence_id {
            Some(SequenceId::TrustedPacketSequenceId(id)) => id,
            None => 0,
        };
        let seq = self.sequences.entry(id).or_default();
        if packet.sequence_flags() & SEQ_INCREMENTAL_STATE_CLEARED != 0 {
            seq.clear_interned();
        }
        if let Some(defaults) = &packet.trace_packet_defaults {
            seq.default_clock = defaults.timestamp_clock_id;
        }
        let ts = match packet.timestamp {
            Some(_) => Some(seq.time(&packet)?),
            None => None,
        };
        if let Some(data) = packet.interned_data {
            seq.intern(data);
        }
        match packet.data {
            Some(Data::ClockSnapshot(snapshot)) => {
                for clock in snapshot.clocks {
                    if clock.is_incremental() {
                        seq.clocks.insert(clock.clock_id(), clock.timestamp());
                    }
                }
                Ok(())
            }
            Some(Data::TrackDescriptor(d)) => self.json.describe(d),
            Some(Data::TrackEvent(e)) => {
                let ts = ts.ok_or_else(|| invalid("a track event without a timestamp"))?;
                self.json.event(ts, e, seq)
            }
            Some(
                Data::PerfSample(_)
                | Data::FtraceEvents(_)
                | Data::GpuRenderStageEvent(_)
                | Data::GpuCounterEvent(_)
                | Data::GpuInfo(_),
            ) => {
                self.json.stats.skipped_packets += 1;
                Ok(())
            }
            None => Ok(()),
        }
    }
}

/// The JSON side: where each track's events go, and the slices open on them.
struct Json<W> {
    out: W,
    /// The event being written.
    line: String,
    tracks: FxHashMap<u64, Track>,
    /// Open slices by track uuid, outermost first.
    open: FxHashMap<u64, Vec<Open>>,
    next_id: i64,
    stats: Transcoded,
}

/// A described track, as JSON places it.
struct Track {
    pid: i64,
    /// Set for threads, and once events land on another track.
    tid: Option<i64>,
    /// The name of the JSON thread its events go to.
    label: String,
    /// How its children's labels start.
    prefix: String,
    rank: Option<i32>,
}

/// A slice whose END has not come yet.
struct Open {
    start: u64,
    /// `"name":…,"cat":…,"args":{…}`
    body: String,
    flows_out: Vec<u64>,
    flows_in: Vec<u64>,
    /// Whether a nested slice starts at `start`.
    crowded: bool,
}

impl<W: Write> Json<W> {
    fn describe(&mut self, d: TrackDescriptor) -> io::Result<()> {
        let uuid = d.uuid();
        let rank = d.sibling_order_rank;
        let parent =
            match d.parent_uuid {
                Some(p) => Some(self.tracks.get(&p).ok_or_else(|| {
                    invalid(format!("track {uuid} described before its parent {p}"))
                })?),
                None => None,
            };
        let track = if let Some(thread) = &d.thread {
            let (pid, tid) = (i64::from(thread.pid()), thread.tid());
            let name = thread.thread_name().to_owned();
            self.metadata(pid, Some(tid), "thread_name", |l| {
                l.push_str("\"name\":");
                encode::string(l, &name);
            })?;
            Track {
                pid,
                tid: Some(tid),
                prefix: format!("{name} {tid}: "),
                label: name,
                rank,
            }
        } else if let Some(process) = &d.process {
            let pid = i64::from(process.pid());
            self.process(pid, process.process_name().to_owned(), rank)?
        } else {
            let name = match &d.static_or_dynamic_name {
                Some(crate::perfetto::proto::track_descriptor::StaticOrDynamicName::Name(n)) => {
                    n.clone()
                }
                None => String::new(),
            };
            match parent {
                Some(parent) => {
                    let label = format!("{}{name}", parent.prefix);
                    Track {
                        pid: parent.pid,
                        tid: None,
                        prefix: format!("{label}: "),
                        label,
                        rank,
                    }
                }
                // A top-level group: a process of its own.
                None => {
                    let pid = self.new_id();
                    self.process(pid, name, rank)?
                }
            }
        };
        self.tracks.insert(uuid, track);
        Ok(())
    }

    fn new_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    /// Describes process `pid`, named `name` and placed at `rank`, and
    /// gives its track.
    fn process(&mut self, pid: i64, name: String, rank: Option<i32>) -> io::Result<Track> {
        self.metadata(pid, None, "process_name", |l| {
            l.push_str("\"name\":");
            encode::string(l, &name);
        })?;
        if let Some(rank) = rank {
            self.metadata(pid, None, "process_sort_index", |l| {
                let _ = write!(l, "\"sort_index\":{rank}");
            })?;
        }
        Ok(Track {
            pid,
            tid: None,
            label: name,
            prefix: String::new(),
            rank: None,
        })
    }

    /// Writes a metadata event whose args `args` writes.
    fn metadata(
        &mut self,
        pid: i64,
        tid: Option<i64>,
        name: &str,
        args: impl FnOnce(&mut String),
    ) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        let _ = write!(l, "{{\"ph\":\"M\",\"pid\":{pid},");
        if let Some(tid) = tid {
            let _ = write!(l, "\"tid\":{tid},");
        }
        let _ = write!(l, "\"name\":\"{name}\",\"args\":{{");
        args(l);
        l.push_str("}}");
        self.emit()
    }

    /// The JSON (pid, tid) of the events on track `uuid`: a track that is
    /// not a thread gets a thread of its own on its first event.
    fn place(&mut self, uuid: u64) -> io::Result<(i64, i64)> {
        let track = self
            .tracks
            .get(&uuid)
            .ok_or_else(|| invalid(format!("an event on track {uuid}, which is not described")))?;
        if let Some(tid) = track.tid {
            return Ok((track.pid, tid));
        }
        let (pid, label, rank) = (track.pid, track.label.clone(), track.rank);
        let tid = self.new_id();
        self.tracks.get_mut(&uuid).expect("looked up above").tid = Some(tid);
        self.metadata(pid, Some(tid), "thread_name", |l| {
            l.push_str("\"name\":");
            encode::string(l, &label);
        })?;
        if let Some(rank) = rank {
            self.metadata(pid, Some(tid), "thread_sort_index", |l| {
                let _ = write!(l, "\"sort_index\":{rank}");
            })?;
        }
        Ok((pid, tid))
    }

    fn event(&mut self, ts: u64, e: TrackEvent, seq: &Sequence) -> io::Result<()> {
        use track_event::Type;
        let uuid = e
            .track_uuid
            .ok_or_else(|| invalid("a track event without a track"))?;
        match e.r#type() {
            Type::SliceBegin => {
                let body = body(&e, seq)?;
                let open = self.open.entry(uuid).or_default();
                open.push(Open {
                    start: ts,
                    body,
                    flows_out: e.flow_ids,
                    flows_in: e.terminating_flow_ids,
                    crowded: false,
                });
                Ok(())
            }
            Type::SliceEnd => {
                let open = self.open.get_mut(&uuid);
                let Some(slice) = open.and_then(Vec::pop) else {
                    return Err(invalid(format!(
                        "an END on track {uuid} with no slice open"
                    )));
                };
                if ts < slice.start {
                    return Err(invalid(format!(
                        "a slice on track {uuid} ends at {ts}, before its start {}",
                        slice.start
                    )));
                }
                self.nested(uuid, slice.start);
                let (pid, tid) = self.place(uuid)?;
                let dur = Some(ts - slice.start);
                self.emit_event("\"X\"", (pid, tid), slice.start, dur, &slice.body)?;
                if slice.crowded {
                    let flows = slice.flows_out.len() + slice.flows_in.len();
                    self.stats.flows_on_nested += flows as u64;
                }
                self.flows(pid, tid, slice.start, &slice.flows_out, &slice.flows_in)
            }
            Type::Instant => {
                let body = body(&e, seq)?;
                self.nested(uuid, ts);
                let (pid, tid) = self.place(uuid)?;
                self.emit_event("\"i\",\"s\":\"t\"", (pid, tid), ts, None, &body)?;
                self.flows(pid, tid, ts, &e.flow_ids, &e.terminating_flow_ids)
            }
            Type::Counter => {
                let (pid, name) = {
                    let track = self.tracks.get(&uuid).ok_or_else(|| {
                        invalid(format!("a counter on track {uuid}, which is not described"))
                    })?;
                    (track.pid, track.label.clone())
                };
                let l = &mut self.line;
                l.clear();
                let _ = write!(l, "{{\"ph\":\"C\",\"pid\":{pid},\"name\":");
                encode::string(l, &name);
                l.push_str(",\"ts\":");
                encode::micros(l, ts);
                l.push_str(",\"args\":{\"value\":");
                match e.counter_value_field {
                    Some(track_event::CounterValueField::CounterValue(v)) => {
                        l.push_str(&v.to_string())
                    }
                    Some(track_event::CounterValueField::DoubleCounterValue(v)) => {
                        encode::double(l, v)
                    }
                    None => return Err(invalid("a counter event without a value")),
                }
                l.push_str("}}");
                self.emit()
            }
            Type::Unspecified => Err(invalid("a track event of no type")),
        }
    }

    /// Tells the slice open around a nested one on track `uuid`, which
    /// starts at `start`, whether it starts with it.
    fn nested(&mut self, uuid: u64, start: u64) {
        if let Some(parent) = self.open.get_mut(&uuid).and_then(|o| o.last_mut()) {
            parent.crowded |= start == parent.start;
        }
    }

    /// Writes the flow events of a slice that starts at `at` on (pid, tid).
    fn flows(&mut self, pid: i64, tid: i64, at: u64, out: &[u64], into: &[u64]) -> io::Result<()> {
        for (flows, phase) in [(out, "\"s\""), (into, "\"f\",\"bp\":\"e\"")] {
            for &id in flows {
                let l = &mut self.line;
                l.clear();
                let _ = write!(
                    l,
                    "{{\"ph\":{phase},\"id\":\"{id:#x}\",\"pid\":{pid},\"tid\":{tid},\"ts\":"
                );
                encode::micros(l, at);
                l.push_str(",\"name\":\"flow\",\"cat\":\"flow\"}");
                self.emit()?;
            }
        }
        Ok(())
    }

    /// Writes an event of phase `ph` (what follows `"ph":`) on thread
    /// (pid, tid) at `ts`, lasting `dur` if given, with `body`: its name,
    /// category and args.
    fn emit_event(
        &mut self,
        ph: &str,
        (pid, tid): (i64, i64),
        ts: u64,
        dur: Option<u64>,
        body: &str,
    ) -> io::Result<()> {
        let l = &mut self.line;
        l.clear();
        let _ = write!(l, "{{\"ph\":{ph},\"pid\":{pid},\"tid\":{tid},\"ts\":");
        encode::micros(l, ts);
        if let Some(dur) = dur {
            l.push_str(",\"dur\":");
            encode::micros(l, dur);
        }
        l.push(',');
        l.push_str(body);
        l.push('}');
        self.emit()
    }

    fn emit(&mut self) -> io::Result<()> {
        if self.stats.events > 0 {
            self.out.write_all(b",\n")?;
        }
        self.stats.events += 1;
        self.out.write_all(self.line.as_bytes())
    }

    /// Ends the JSON. Slices still open (a trace cut short) are written as
    /// BEGIN events, which JSON readers show as running to the end.
    fn finish(mut self) -> io::Result<(W, Transcoded)> {
        let mut left: Vec<(u64, Vec<Open>)> = std::mem::take(&mut self.open).into_iter().collect();
        left.sort_unstable_by_key(|(uuid, _)| *uuid);
        for (uuid, slices) in left {
            for slice in slices {
                let place = self.place(uuid)?;
                self.emit_event("\"B\"", place, slice.start, None, &slice.body)?;
            }
        }
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()?;
        Ok((self.out, self.stats))
    }
}

/// `"name":…,"cat":…,"args":{…}` of a slice or instant.
fn body(e: &TrackEvent, seq: &Sequence) -> io::Result<String> {
    let mut b = String::with_capacity(128);
    b.push_str("\"name\":");
    match &e.name_field {
        Some(track_event::NameField::Name(name)) => encode::string(&mut b, name),
        Some(track_event::NameField::NameIid(iid)) => {
            encode::string(&mut b, Sequence::lookup(&seq.names, *iid, "event name")?)
        }
        None => encode::string(&mut b, ""),
    }
    b.push_str(",\"cat\":");
    let mut categories = String::new();
    for (i, &iid) in e.category_iids.iter().enumerate() {
        if i > 0 {
            categories.push(',');
        }
        categories.push_str(Sequence::lookup(&seq.categories, iid, "category")?);
    }
    encode::string(&mut b, &categories);
    b.push_str(",\"args\":{");
    for (i, arg) in e.debug_annotations.iter().enumerate() {
        if i > 0 {
            b.push(',');
        }
        annotation(&mut b, arg, seq)?;
    }
    b.push('}');
    Ok(b)
}

fn annotation(b: &mut String, arg: &DebugAnnotation, seq: &Sequence) -> io::Result<()> {
    use debug_annotation::{NameField, Value};
    let name = match &arg.name_field {
        Some(NameField::Name(name)) => name.as_str(),
        Some(NameField::NameIid(iid)) => Sequence::lookup(&seq.arg_names, *iid, "arg name")?,
        None => return Err(invalid("an arg without a name")),
    };
    encode::string(b, name);
    b.push(':');
    match &arg.value {
        Some(Value::BoolValue(v)) => b.push_str(if *v { "true" } else { "false" }),
        Some(Value::UintValue(v)) => b.push_str(&v.to_string()),
        Some(Value::IntValue(v)) => b.push_str(&v.to_string()),
        Some(Value::DoubleValue(v)) => encode::double(b, *v),
        Some(Value::StringValue(v)) => encode::string(b, v),
        Some(Value::StringValueIid(iid)) => {
            encode::string(b, Sequence::lookup(&seq.arg_strings, *iid, "arg string")?)
        }
        None => b.push_str("null"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perfetto::{
        Arg, ArgValue, CounterUnit, CounterValue, Slice, Stacking, Trace, TrackSpec,
    };

    fn json_of(trace: Trace<Vec<u8>>) -> String {
        let bytes = trace.finish().unwrap();
        let (out, transcoded) = transcode(bytes.as_slice(), Vec::new()).unwrap();
        assert_eq!(transcoded.skipped_packets, 0);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn names_and_args_survive_the_restarts_of_interning() {
        let trace = Trace::new(Vec::new(), 7, None);
        let mut seq = trace.sequence();
        let thread = seq.with_tracks(|t| t.thread(10, 11, || "p".into(), || "main".into()));
        let track = seq.slice_track(TrackSpec::new(Some(thread), "calls"), Stacking::Nest);
        // More distinct strings than a sequence remembers: interning starts
        // afresh, more than once.
        let n: u64 = 150_000;
        for i in 0..n {
            let (name, value) = (format!("call {i}"), format!("value {i}"));
            let args = [Arg {
                name: "what",
                value: ArgValue::Str(&value),
            }];
            let slice = Slice::new(1_000 + 10 * i, Some(1_005 + 10 * i), &name, "cat", &args);
            seq.slice(track, &slice).unwrap();
        }
        seq.close(0).unwrap();
        let json = json_of(trace);
        let mut from = 0;
        for i in (0..n).step_by(997).chain([n - 1]) {
            let ts = 1_000 + 10 * i;
            let event = format!(
                "{{\"ph\":\"X\",\"pid\":10,\"tid\":{},\"ts\":{}.{:03},\"dur\":0.005,\"name\":\"call {i}\",\"cat\":\"cat\",\"args\":{{\"what\":\"value {i}\"}}}}",
                SYNTHETIC_IDS + 1,
                ts / 1000,
                ts % 1000
            );
            let at = json[from..]
                .find(&event)
                .unwrap_or_else(|| panic!("{event}"));
            from += at;
        }
        assert!(json.contains(
            "{\"ph\":\"M\",\"pid\":10,\"tid\":1073741825,\"name\":\"thread_name\",\"args\":{\"name\":\"main 11: calls\"}}"
        ));
        assert!(json.ends_with("}}\n]}\n"));
    }

    #[test]
    fn an_earlier_time_on_the_absolute_clock_leaves_the_deltas_alone() {
        let trace = Trace::new(Vec::new(), 7, None);
        let mut seq = trace.sequence();
        let group = seq.with_tracks(|t| t.group(1, || TrackSpec::new(None, "GPU 0")));
        let track = seq.slice_track(TrackSpec::new(Some(group), "Stream 7"), Stacking::Exclusive);
        let counter =
            seq.add_counter_track(TrackSpec::new(Some(group), "memory"), CounterUnit::Bytes);
        seq.slice(track, &Slice::new(5_000, Some(6_000), "k1", "kernel", &[]))
            .unwrap();
        // Before the packet written last: given in absolute time.
        seq.counter(counter, 4_000, CounterValue::Int(64)).unwrap();
        seq.slice(track, &Slice::new(7_000, Some(7_001), "k2", "kernel", &[]))
            .unwrap();
        seq.counter(counter, 8_000, CounterValue::Double(0.5))
            .unwrap();
        seq.close(0).unwrap();
        let json = json_of(trace);
        let (gpu, stream) = (SYNTHETIC_IDS + 1, SYNTHETIC_IDS + 2);
        for event in [
            format!("{{\"ph\":\"M\",\"pid\":{gpu},\"name\":\"process_name\",\"args\":{{\"name\":\"GPU 0\"}}}}"),
            format!("{{\"ph\":\"C\",\"pid\":{gpu},\"name\":\"memory\",\"ts\":4.000,\"args\":{{\"value\":64}}}}"),
            format!("{{\"ph\":\"X\",\"pid\":{gpu},\"tid\":{stream},\"ts\":5.000,\"dur\":1.000,\"name\":\"k1\""),
            format!("{{\"ph\":\"X\",\"pid\":{gpu},\"tid\":{stream},\"ts\":7.000,\"dur\":0.001,\"name\":\"k2\""),
            format!("{{\"ph\":\"C\",\"pid\":{gpu},\"name\":\"memory\",\"ts\":8.000,\"args\":{{\"value\":0.5}}}}"),
        ] {
            assert!(json.contains(&event), "{event} in {json}");
        }
    }
}
