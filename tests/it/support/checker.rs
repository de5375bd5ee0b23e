//! A trace checker for tests: decodes a trace the way trace_processor imports
//! it and fails on anything trace_processor would drop, misplace or flag.
//!
//! The rules (../shared/docs/perfetto-trackevent.md, "Checking a trace"):
//! every event packet has a sequence id; a sequence starts by clearing its
//! incremental state; interned ids are defined before use; delta timestamps
//! never go negative; every track is described once (one per process, one per
//! thread) and its parent exists; after sorting by time, BEGIN/END on each track
//! nest and every slice is closed; every terminated flow was started, and no
//! flow id is reused while active.
//!
//! Each rule lives in the `Decoder` method of the kind of packet it applies
//! to; the rules that need every packet first, in `Decoder::finish`.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use nsys2perfetto::perfetto::proto::{
    debug_annotation, ftrace_event, trace_packet, track_descriptor, track_event, ClockSnapshot,
    FtraceEventBundle, InternedData, PerfSample, TracePacket, TrackDescriptor, TrackEvent,
};

use super::sched::{SchedSlice, Switch, ThreadState};
use super::stacks::{NamedFrame, Sample, StackState};
use prost::Message;

const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
const REALTIME: u32 = 1;
const BOOTTIME: u32 = 6;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Uint(u64),
    Double(f64),
    Bool(bool),
    Str(String),
}

#[derive(Clone, Debug)]
pub struct Slice {
    pub ts: u64,
    pub dur: u64,
    pub track: u64,
    pub name: String,
    pub category: String,
    pub args: BTreeMap<String, Value>,
    pub depth: usize,
    /// The slice's call stack, outermost frame first (empty if none).
    pub callstack: Vec<NamedFrame>,
}

#[derive(Clone, Debug, Default)]
pub struct Track {
    pub name: Option<String>,
    pub parent: Option<u64>,
    pub pid: Option<i32>,
    pub tid: Option<i64>,
    pub thread_name: Option<String>,
    pub process_name: Option<String>,
    pub rank: Option<i32>,
    pub description: Option<String>,
    /// A counter track: its unit (`UNIT_*` number) and unit name.
    pub counter: Option<(Option<i32>, Option<String>)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CounterSample {
    pub track: u64,
    pub ts: u64,
    pub value: f64,
}

#[derive(Debug, Default)]
pub struct Checked {
    pub slices: Vec<Slice>,
    /// (from slice, to slice) indices into `slices`.
    pub flows: Vec<(usize, usize)>,
    pub tracks: HashMap<u64, Track>,
    pub packets: usize,
    /// Packets that clear a sequence's incremental state (its start included).
    pub resets: usize,
    /// Wall-clock (REALTIME) ns at trace time 0, from a clock snapshot.
    pub realtime_at_zero: Option<u64>,
    /// CPU samples, with their stacks resolved.
    pub samples: Vec<Sample>,
    /// Threads running on CPUs, from the context switches.
    pub sched: Vec<SchedSlice>,
    /// What each thread did between its context switches.
    pub thread_states: Vec<ThreadState>,
    /// Values of counter tracks, in time order.
    pub counters: Vec<CounterSample>,
    pub errors: Vec<String>,
}

/// A slice event, kept until every packet is read: trace_processor sorts
/// events by time before it nests them.
struct Event {
    ts: u64,
    order: usize,
    track: u64,
    kind: i32,
    name: String,
    category: String,
    args: BTreeMap<String, Value>,
    flow_ids: Vec<u64>,
    terminating: Vec<u64>,
    callstack: Vec<NamedFrame>,
}

const SLICE_BEGIN: i32 = track_event::Type::SliceBegin as i32;
const SLICE_END: i32 = track_event::Type::SliceEnd as i32;
const INSTANT: i32 = track_event::Type::Instant as i32;
const COUNTER: i32 = track_event::Type::Counter as i32;

/// What one sequence has set up for its later packets.
#[derive(Default)]
struct SequenceState {
    cleared: bool,
    names: HashMap<u64, String>,
    categories: HashMap<u64, String>,
    arg_names: HashMap<u64, String>,
    arg_strings: HashMap<u64, String>,
    default_clock: Option<u32>,
    /// The last value of each incremental clock.
    incremental: HashMap<u32, u64>,
    stacks: StackState,
}

/// The string interned as `iid` in `table`; an error where it was not
/// interned (yet) on the sequence.
fn interned(
    table: &HashMap<u64, String>,
    iid: u64,
    what: &str,
    order: usize,
    errors: &mut Vec<String>,
) -> String {
    table.get(&iid).cloned().unwrap_or_else(|| {
        errors.push(format!(
            "packet {order}: {what} iid {iid} used before it was interned"
        ));
        String::new()
    })
}

/// The (offset, length) of each `Trace.packet` (field 1) in `raw`.
fn framed_packets(raw: &[u8]) -> Result<Vec<(usize, usize)>, String> {
    let mut packets = Vec::new();
    let mut buf = raw;
    while !buf.is_empty() {
        let key = prost::encoding::decode_varint(&mut buf).map_err(|e| e.to_string())?;
        if key != (1 << 3 | 2) {
            return Err(format!("field key {key} where Trace.packet was expected"));
        }
        let len = prost::encoding::decode_varint(&mut buf).map_err(|e| e.to_string())? as usize;
        if len > buf.len() {
            return Err("a packet runs past the end".into());
        }
        packets.push((raw.len() - buf.len(), len));
        buf = &buf[len..];
    }
    Ok(packets)
}

/// Gunzips (all members) if the bytes are gzip.
pub fn decompress(bytes: &[u8]) -> Vec<u8> {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(bytes)
            .read_to_end(&mut out)
            .expect("valid gzip");
        out
    } else {
        bytes.to_vec()
    }
}

pub fn check_file(path: &std::path::Path) -> Checked {
    check(&std::fs::read(path).expect("trace readable"))
}

pub fn check(bytes: &[u8]) -> Checked {
    check_with(bytes, true)
}

/// [`check`] without keeping names and args: for traces of millions of events.
pub fn check_lean(bytes: &[u8]) -> Checked {
    check_with(bytes, false)
}

fn check_with(bytes: &[u8], details: bool) -> Checked {
    let raw = decompress(bytes);
    // Packets are decoded one at a time: a whole decoded trace of tens of
    // millions of packets would not fit in memory.
    let packets = match framed_packets(&raw) {
        Ok(p) => p,
        Err(e) => {
            return Checked {
                errors: vec![format!("not a Trace: {e}")],
                ..Default::default()
            };
        }
    };
    let mut decoder = Decoder::new(details, packets.len());
    for (order, &(at, len)) in packets.iter().enumerate() {
        match TracePacket::decode(&raw[at..at + len]) {
            Ok(p) => decoder.packet(order, &p),
            Err(e) => decoder
                .out
                .errors
                .push(format!("packet {order}: not a TracePacket: {e}")),
        }
    }
    decoder.finish()
}

/// Reads packets in file order, as trace_processor's tokenizer does: one
/// method per kind of packet, each applying the rules of that kind. What
/// needs every packet (sorting, nesting, flows, references between tracks)
/// waits for [`Decoder::finish`].
struct Decoder {
    /// Keep names, args and stacks (off for traces of millions of events).
    details: bool,
    out: Checked,
    sequences: HashMap<u32, SequenceState>,
    events: Vec<Event>,
    /// The track of each thread (pid, tid) and of each process.
    threads: HashMap<(i32, i64), u64>,
    processes: HashMap<i32, u64>,
    /// (packet, track) of every track event.
    used_tracks: Vec<(usize, u64)>,
    /// The last BOOTTIME of each series of clock snapshots.
    snapshot_series: HashMap<Vec<(u32, u32)>, u64>,
    switches: Vec<Switch>,
}

impl Decoder {
    fn new(details: bool, packets: usize) -> Self {
        let mut out = Checked {
            packets,
            ..Default::default()
        };
        if packets == 0 {
            out.errors
                .push("trace has no packets (trace_processor refuses it)".into());
        }
        Decoder {
            details,
            out,
            sequences: HashMap::new(),
            events: Vec::new(),
            threads: HashMap::new(),
            processes: HashMap::new(),
            used_tracks: Vec::new(),
            snapshot_series: HashMap::new(),
            switches: Vec::new(),
        }
    }

    /// One packet: its sequence's state first (flags, defaults, clocks,
    /// interned data, the timestamp), then what it carries.
    fn packet(&mut self, order: usize, p: &TracePacket) {
        use trace_packet::Data;
        if let Some(Data::ClockSnapshot(snap)) = &p.data {
            self.wall_clock(snap);
        }
        if let Some(Data::FtraceEvents(bundle)) = &p.data {
            return self.ftrace_bundle(order, bundle);
        }
        let Some(seq_id) = self.trusted_sequence(order, p) else {
            return;
        };
        self.sequence_flags(order, seq_id, p);
        if let Some(Data::ClockSnapshot(snap)) = &p.data {
            self.clock_snapshot(order, seq_id, snap);
        }
        if let Some(interned) = &p.interned_data {
            self.interned_data(order, seq_id, interned);
        }
        let ts = self.timestamp(order, seq_id, p);
        match &p.data {
            Some(Data::TrackDescriptor(d)) => self.track_descriptor(order, d),
            Some(Data::PerfSample(sample)) => self.perf_sample(order, seq_id, ts, sample),
            Some(Data::TrackEvent(e)) => self.track_event(order, seq_id, ts, e),
            _ => {}
        }
    }

    /// Any clock snapshot with REALTIME and BOOTTIME says what wall-clock
    /// time trace time 0 is.
    fn wall_clock(&mut self, snap: &ClockSnapshot) {
        let at = |id: u32| {
            snap.clocks
                .iter()
                .find(|k| k.clock_id == Some(id))
                .and_then(|k| k.timestamp)
        };
        if let (Some(real), Some(boot)) = (at(REALTIME), at(BOOTTIME)) {
            self.out.realtime_at_zero = Some(real - boot);
        }
    }

    /// Context switches: ftrace events carry absolute times and no
    /// incremental state, so they need no sequence.
    fn ftrace_bundle(&mut self, order: usize, bundle: &FtraceEventBundle) {
        for e in &bundle.event {
            if let Some(ftrace_event::Event::SchedSwitch(s)) = &e.event {
                self.switches.push(Switch {
                    cpu: bundle.cpu.unwrap_or(0),
                    ts: e.timestamp.unwrap_or(0),
                    order,
                    prev_tid: s.prev_pid.unwrap_or(0),
                    next_tid: s.next_pid.unwrap_or(0),
                });
            }
        }
    }

    /// The packet's trusted sequence id: track events, descriptors and
    /// samples without one are dropped.
    fn trusted_sequence(&mut self, order: usize, p: &TracePacket) -> Option<u32> {
        use trace_packet::Data;
        let id = p
            .optional_trusted_packet_sequence_id
            .map(|trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(id)| id);
        let needs_sequence = matches!(
            p.data,
            Some(Data::TrackEvent(_) | Data::TrackDescriptor(_) | Data::PerfSample(_))
        );
        if id.is_none() && needs_sequence {
            self.out.errors.push(format!(
                "packet {order}: event without trusted_packet_sequence_id"
            ));
        }
        id
    }

    /// A sequence starts by clearing its incremental state; clearing drops
    /// interned data and defaults, not the values of incremental clocks.
    fn sequence_flags(&mut self, order: usize, seq_id: u32, p: &TracePacket) {
        let seq = self.sequences.entry(seq_id).or_default();
        if p.sequence_flags.unwrap_or(0) & SEQ_INCREMENTAL_STATE_CLEARED != 0 {
            self.out.resets += 1;
            let incremental = std::mem::take(&mut seq.incremental);
            *seq = SequenceState {
                cleared: true,
                incremental,
                ..Default::default()
            };
        }
        if !seq.cleared {
            self.out.errors.push(format!(
                "packet {order}: sequence {seq_id} used before its state was cleared"
            ));
        }
        if let Some(d) = &p.trace_packet_defaults {
            seq.default_clock = d.timestamp_clock_id;
        }
    }

    /// trace_processor keeps one time series per set of clocks (sequence
    /// clocks keyed by their sequence) and rejects BOOTTIME going back in one;
    /// incremental clocks start at their snapshot value.
    fn clock_snapshot(&mut self, order: usize, seq_id: u32, snap: &ClockSnapshot) {
        let mut set: Vec<(u32, u32)> = snap
            .clocks
            .iter()
            .map(|k| k.clock_id.unwrap_or(0))
            .map(|id| (id, if (64..128).contains(&id) { seq_id } else { 0 }))
            .collect();
        set.sort();
        let boot = snap
            .clocks
            .iter()
            .find(|k| k.clock_id == Some(BOOTTIME))
            .and_then(|k| k.timestamp);
        if let Some(boot) = boot {
            if let Some(&last) = self.snapshot_series.get(&set) {
                if boot < last {
                    self.out.errors.push(format!(
                        "packet {order}: BOOTTIME goes back from {last} to {boot} in a clock snapshot"
                    ));
                }
            }
            self.snapshot_series.insert(set, boot);
        }
        let seq = self.sequences.entry(seq_id).or_default();
        for clock in &snap.clocks {
            if clock.is_incremental == Some(true) {
                seq.incremental
                    .insert(clock.clock_id.unwrap_or(0), clock.timestamp.unwrap_or(0));
            }
        }
    }

    /// Interned entries need an iid (from 1); they serve later packets of
    /// the same sequence until its state is cleared.
    fn interned_data(&mut self, order: usize, seq_id: u32, i: &InternedData) {
        let errors = &mut self.out.errors;
        let seq = self.sequences.entry(seq_id).or_default();
        seq.stacks.intern(i, order, errors);
        let mut take = |table: &mut HashMap<u64, String>, iid, value: Option<String>| match iid {
            Some(iid) if iid > 0 => {
                table.insert(iid, value.unwrap_or_default());
            }
            _ => errors.push(format!("packet {order}: interned entry without iid")),
        };
        for e in &i.event_names {
            take(&mut seq.names, e.iid, e.name.clone());
        }
        for e in &i.event_categories {
            take(&mut seq.categories, e.iid, e.name.clone());
        }
        for e in &i.debug_annotation_names {
            take(&mut seq.arg_names, e.iid, e.name.clone());
        }
        for e in &i.debug_annotation_string_values {
            let text = e
                .str
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned());
            take(&mut seq.arg_strings, e.iid, text);
        }
    }

    /// The packet's time as trace_processor resolves it: a delta on the
    /// sequence's default clock where that clock is incremental, else
    /// absolute on BOOTTIME (the only other clock the converter writes).
    fn timestamp(&mut self, order: usize, seq_id: u32, p: &TracePacket) -> Option<u64> {
        let seq = self.sequences.entry(seq_id).or_default();
        let clock = p
            .timestamp_clock_id
            .or(seq.default_clock)
            .unwrap_or(BOOTTIME);
        match (p.timestamp, seq.incremental.get_mut(&clock)) {
            (Some(delta), Some(last)) if p.timestamp_clock_id.is_none() => {
                *last += delta;
                Some(*last)
            }
            (Some(t), _) if clock == BOOTTIME => Some(t),
            (Some(_), _) => {
                self.out.errors.push(format!(
                    "packet {order}: timestamp on unknown clock {clock}"
                ));
                None
            }
            (None, _) => None,
        }
    }

    /// A track: uuid 0 is reserved, each uuid is described once, and each
    /// process and thread has one track (a second is taken as pid or tid reuse).
    fn track_descriptor(&mut self, order: usize, d: &TrackDescriptor) {
        let errors = &mut self.out.errors;
        let uuid = d.uuid.unwrap_or(0);
        if uuid == 0 {
            errors.push(format!("packet {order}: track descriptor with uuid 0"));
            return;
        }
        let mut t = Track {
            name: d
                .static_or_dynamic_name
                .as_ref()
                .map(|track_descriptor::StaticOrDynamicName::Name(n)| n.clone()),
            parent: d.parent_uuid,
            rank: d.sibling_order_rank,
            description: d.description.clone(),
            counter: d.counter.as_ref().map(|c| (c.unit, c.unit_name.clone())),
            ..Default::default()
        };
        if let Some(p) = &d.process {
            t.pid = p.pid;
            t.process_name = p.process_name.clone();
            if self.processes.insert(p.pid.unwrap_or(0), uuid).is_some() {
                errors.push(format!(
                    "packet {order}: second descriptor for process {:?}",
                    p.pid
                ));
            }
        }
        if let Some(th) = &d.thread {
            t.pid = th.pid;
            t.tid = th.tid;
            t.thread_name = th.thread_name.clone();
            let key = (th.pid.unwrap_or(0), th.tid.unwrap_or(0));
            if self.threads.insert(key, uuid).is_some() {
                errors.push(format!(
                    "packet {order}: second descriptor for thread {:?}/{:?}",
                    th.pid, th.tid
                ));
            }
        }
        if self.out.tracks.insert(uuid, t).is_some() {
            errors.push(format!("packet {order}: track {uuid} described twice"));
        }
    }

    /// A CPU sample: time, thread and an interned call stack.
    fn perf_sample(&mut self, order: usize, seq_id: u32, ts: Option<u64>, sample: &PerfSample) {
        let errors = &mut self.out.errors;
        let (Some(ts), Some(_pid), Some(tid), Some(iid)) =
            (ts, sample.pid, sample.tid, sample.callstack_iid)
        else {
            errors.push(format!(
                "packet {order}: sample without time, pid, tid or callstack"
            ));
            return;
        };
        let stack = self.sequences[&seq_id].stacks.resolve(iid, order, errors);
        self.out.samples.push(Sample {
            ts,
            tid,
            cpu: sample.cpu,
            stack: if self.details { stack } else { Vec::new() },
        });
    }

    /// A track event: a counter value, or a slice event kept for
    /// [`Decoder::finish`]; every interned id it uses must be defined.
    fn track_event(&mut self, order: usize, seq_id: u32, ts: Option<u64>, e: &TrackEvent) {
        let errors = &mut self.out.errors;
        let Some(ts) = ts else {
            errors.push(format!("packet {order}: track event without timestamp"));
            return;
        };
        let seq = &self.sequences[&seq_id];
        let name = match &e.name_field {
            Some(track_event::NameField::NameIid(iid)) => {
                interned(&seq.names, *iid, "event name", order, errors)
            }
            Some(track_event::NameField::Name(n)) => n.clone(),
            None => String::new(),
        };
        let category = e
            .category_iids
            .iter()
            .map(|iid| interned(&seq.categories, *iid, "category", order, errors))
            .collect::<Vec<_>>()
            .join(",");
        let mut args = BTreeMap::new();
        for a in &e.debug_annotations {
            let key = match &a.name_field {
                Some(debug_annotation::NameField::NameIid(iid)) => {
                    interned(&seq.arg_names, *iid, "arg name", order, errors)
                }
                Some(debug_annotation::NameField::Name(n)) => n.clone(),
                None => {
                    errors.push(format!("packet {order}: arg without a name"));
                    continue;
                }
            };
            use debug_annotation::Value as V;
            let value = match &a.value {
                Some(V::IntValue(v)) => Value::Int(*v),
                Some(V::UintValue(v)) => Value::Uint(*v),
                Some(V::DoubleValue(v)) => Value::Double(*v),
                Some(V::BoolValue(v)) => Value::Bool(*v),
                Some(V::StringValue(s)) => Value::Str(s.clone()),
                Some(V::StringValueIid(iid)) => Value::Str(interned(
                    &seq.arg_strings,
                    *iid,
                    "arg string",
                    order,
                    errors,
                )),
                None => {
                    errors.push(format!("packet {order}: arg {key} without a value"));
                    continue;
                }
            };
            args.insert(key, value);
        }
        let callstack = match e.callstack_field {
            Some(track_event::CallstackField::CallstackIid(iid)) if self.details => {
                seq.stacks.resolve(iid, order, errors)
            }
            _ => Vec::new(),
        };
        let track = e.track_uuid.unwrap_or(0);
        self.used_tracks.push((order, track));
        if e.r#type == Some(COUNTER) {
            use track_event::CounterValueField as V;
            let value = match e.counter_value_field {
                Some(V::CounterValue(v)) => v as f64,
                Some(V::DoubleCounterValue(v)) => v,
                None => {
                    errors.push(format!("packet {order}: counter without a value"));
                    return;
                }
            };
            self.out.counters.push(CounterSample { track, ts, value });
            return;
        }
        let (name, args) = if self.details {
            (name, args)
        } else {
            (String::new(), BTreeMap::new())
        };
        self.events.push(Event {
            ts,
            order,
            track,
            kind: e.r#type.unwrap_or(0),
            name,
            category,
            args,
            flow_ids: e.flow_ids.clone(),
            terminating: e.terminating_flow_ids.clone(),
            callstack,
        });
    }

    /// What needs the whole trace: references between tracks, slices nested
    /// and flows linked in time order, and the scheduling of each CPU.
    fn finish(mut self) -> Checked {
        self.track_references();
        self.out.counters.sort_by_key(|s| s.ts);
        let events = std::mem::take(&mut self.events);
        self.slices(events);
        self.out.thread_states = super::sched::thread_states(&self.switches);
        self.out.sched = super::sched::slices(self.switches, &mut self.out.errors);
        self.out
    }

    /// Every event's track and every track's parent is described; counter
    /// values go on counter tracks and slices on the others.
    fn track_references(&mut self) {
        let c = &mut self.out;
        for &(order, track) in &self.used_tracks {
            if !c.tracks.contains_key(&track) {
                c.errors.push(format!(
                    "packet {order}: event on track {track} that has no descriptor"
                ));
            }
        }
        for (uuid, t) in &c.tracks {
            if let Some(parent) = t.parent {
                if !c.tracks.contains_key(&parent) {
                    c.errors
                        .push(format!("track {uuid}: parent {parent} has no descriptor"));
                }
            }
        }
        for sample in &c.counters {
            if c.tracks
                .get(&sample.track)
                .is_some_and(|t| t.counter.is_none())
            {
                c.errors.push(format!(
                    "counter value at {} on a track that is not a counter",
                    sample.ts
                ));
            }
        }
        for e in &self.events {
            if c.tracks.get(&e.track).is_some_and(|t| t.counter.is_some()) {
                c.errors
                    .push(format!("slice event at {} on a counter track", e.ts));
            }
        }
    }

    /// Slices as trace_processor builds them: events sorted by time (file
    /// order at equal times), an END closing the latest open BEGIN of its
    /// track, every BEGIN closed by the end.
    fn slices(&mut self, mut events: Vec<Event>) {
        events.sort_by_key(|e| (e.ts, e.order));
        let c = &mut self.out;
        let mut open: HashMap<u64, Vec<usize>> = HashMap::new();
        let mut active_flows: HashMap<u64, usize> = HashMap::new();
        for e in events {
            let stack = open.entry(e.track).or_default();
            match e.kind {
                SLICE_BEGIN | INSTANT => {
                    let index = c.slices.len();
                    c.slices.push(Slice {
                        ts: e.ts,
                        dur: 0,
                        track: e.track,
                        name: e.name,
                        category: e.category,
                        args: e.args,
                        depth: stack.len(),
                        callstack: e.callstack,
                    });
                    if e.kind == SLICE_BEGIN {
                        stack.push(index);
                    }
                    link_flows(c, &mut active_flows, index, e.ts, e.terminating, e.flow_ids);
                }
                SLICE_END => {
                    match stack.pop() {
                        Some(i) => c.slices[i].dur = e.ts - c.slices[i].ts,
                        None => c.errors.push(format!(
                            "END at {} on track {} with no open slice",
                            e.ts, e.track
                        )),
                    }
                    if !e.flow_ids.is_empty() || !e.terminating.is_empty() {
                        c.errors.push(format!("END at {} carries flows", e.ts));
                    }
                }
                k => c.errors.push(format!("event of type {k} at {}", e.ts)),
            }
        }
        for (track, stack) in open {
            if !stack.is_empty() {
                c.errors.push(format!(
                    "{} slices never closed on track {track}",
                    stack.len()
                ));
            }
        }
    }
}

/// The flows slice `index` ends and starts: a flow ends only where it was
/// started, and an id started again while active would chain.
fn link_flows(
    c: &mut Checked,
    active: &mut HashMap<u64, usize>,
    index: usize,
    ts: u64,
    terminating: Vec<u64>,
    flow_ids: Vec<u64>,
) {
    for id in terminating {
        match active.remove(&id) {
            Some(from) => c.flows.push((from, index)),
            None => c.errors.push(format!(
                "flow {id:#x} terminates at {ts} but was never started"
            )),
        }
    }
    for id in flow_ids {
        if active.insert(id, index).is_some() {
            c.errors
                .push(format!("flow {id:#x} reused while active (would chain)"));
        }
    }
}

impl Checked {
    /// (count, sum of ts, sum of dur) of the slices of `category`.
    pub fn totals(&self, category: &str) -> (u64, u128, u128) {
        self.slices
            .iter()
            .filter(|s| s.category == category)
            .fold((0, 0, 0), |(n, ts, dur), s| {
                (n + 1, ts + u128::from(s.ts), dur + u128::from(s.dur))
            })
    }

    pub fn count(&self, category: &str) -> u64 {
        self.totals(category).0
    }

    /// The thread track a track belongs to (itself or its nearest ancestor).
    pub fn thread_of(&self, mut uuid: u64) -> Option<&Track> {
        loop {
            let t = self.tracks.get(&uuid)?;
            if t.tid.is_some() {
                return Some(t);
            }
            uuid = t.parent?;
        }
    }

    /// The top-level ancestor of a track.
    pub fn root_of(&self, mut uuid: u64) -> &Track {
        loop {
            let t = &self.tracks[&uuid];
            match t.parent {
                Some(p) => uuid = p,
                None => return t,
            }
        }
    }

    /// Where the GPU work on `track` is shown: the GPU of the group it is
    /// under ("GPU 1", "GPU 1: NVIDIA H100"), and the process the stream
    /// track's description names ("... (pid 112) ..."; `None` for an
    /// unknown process). `None` for a track under no GPU group.
    pub fn gpu_place(&self, track: u64) -> Option<(i64, Option<i64>)> {
        let group = self.root_of(track).name.as_deref()?;
        let gpu = group.strip_prefix("GPU ")?;
        let gpu = gpu.split(':').next()?.parse().ok()?;
        let description = self.tracks[&track].description.as_deref().unwrap_or("");
        let pid = description.split_once("(pid ").and_then(|(_, rest)| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        });
        Some((gpu, pid))
    }

    /// The slices of `category` by where they are shown ([`Checked::gpu_place`]):
    /// those under no GPU group at (-1, None).
    pub fn by_gpu_place(&self, category: &str) -> BTreeMap<(i64, Option<i64>), u64> {
        let mut places = BTreeMap::new();
        for s in self.slices.iter().filter(|s| s.category == category) {
            let place = self.gpu_place(s.track).unwrap_or((-1, None));
            *places.entry(place).or_default() += 1;
        }
        places
    }

    pub fn trace_end(&self) -> u64 {
        self.slices.iter().map(|s| s.ts + s.dur).max().unwrap_or(0)
    }

    pub fn assert_valid(&self) {
        assert!(
            self.errors.is_empty(),
            "{} trace errors, first: {:#?}",
            self.errors.len(),
            &self.errors[..self.errors.len().min(10)]
        );
    }
}
