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

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::io::Read;

use nsys2perfetto::perfetto::proto::{
    debug_annotation, ftrace_event, trace_packet, track_descriptor, track_event, TracePacket,
    TrackDescriptor,
};

use super::sched::{SchedSlice, Switch, ThreadState};
use super::stacks::{NamedFrame, Sample, StackState};
use prost::Message;

const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
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

#[derive(Default)]
struct SequenceState {
    cleared: bool,
    names: HashMap<u64, String>,
    categories: HashMap<u64, String>,
    arg_names: HashMap<u64, String>,
    arg_strings: HashMap<u64, String>,
    default_clock: Option<u32>,
    incremental: HashMap<u32, u64>,
    stacks: StackState,
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
    let mut c = Checked {
        packets: packets.len(),
        ..Default::default()
    };
    if packets.is_empty() {
        c.errors
            .push("trace has no packets (trace_processor refuses it)".into());
    }
    let mut sequences: HashMap<u32, SequenceState> = HashMap::new();
    let mut events = Vec::new();
    let mut threads: HashMap<(i32, i64), u64> = HashMap::new();
    let mut processes: HashMap<i32, u64> = HashMap::new();
    let mut used_tracks = Vec::new();
    let mut snapshot_series: HashMap<Vec<(u32, u32)>, u64> = HashMap::new();
    let mut switches: Vec<Switch> = Vec::new();

    for (order, &(at, len)) in packets.iter().enumerate() {
        let p = &match TracePacket::decode(&raw[at..at + len]) {
            Ok(p) => p,
            Err(e) => {
                c.errors
                    .push(format!("packet {order}: not a TracePacket: {e}"));
                continue;
            }
        };
        if let Some(trace_packet::Data::ClockSnapshot(snap)) = &p.data {
            let at = |id: u32| {
                snap.clocks
                    .iter()
                    .find(|k| k.clock_id == Some(id))
                    .and_then(|k| k.timestamp)
            };
            if let (Some(real), Some(boot)) = (at(1), at(BOOTTIME)) {
                c.realtime_at_zero = Some(real - boot);
            }
        }
        let seq_id = p
            .optional_trusted_packet_sequence_id
            .map(|trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(id)| id);
        if let Some(trace_packet::Data::FtraceEvents(bundle)) = &p.data {
            // Ftrace events carry absolute times and no incremental state.
            for e in &bundle.event {
                if let Some(ftrace_event::Event::SchedSwitch(s)) = &e.event {
                    switches.push(Switch {
                        cpu: bundle.cpu.unwrap_or(0),
                        ts: e.timestamp.unwrap_or(0),
                        order,
                        prev_tid: s.prev_pid.unwrap_or(0),
                        prev_state: s.prev_state,
                        next_tid: s.next_pid.unwrap_or(0),
                        next_comm: s.next_comm.clone().unwrap_or_default(),
                    });
                }
            }
            continue;
        }
        let needs_sequence = matches!(
            p.data,
            Some(trace_packet::Data::TrackEvent(_))
                | Some(trace_packet::Data::TrackDescriptor(_))
                | Some(trace_packet::Data::PerfSample(_))
        );
        let Some(seq_id) = seq_id else {
            if needs_sequence {
                c.errors.push(format!(
                    "packet {order}: event without trusted_packet_sequence_id"
                ));
            }
            continue;
        };
        let seq = sequences.entry(seq_id).or_default();
        let flags = p.sequence_flags.unwrap_or(0);
        if flags & SEQ_INCREMENTAL_STATE_CLEARED != 0 {
            c.resets += 1;
            // Interned data and defaults are incremental state; clocks are not.
            let incremental = std::mem::take(&mut seq.incremental);
            *seq = SequenceState {
                cleared: true,
                incremental,
                ..Default::default()
            };
        }
        if !seq.cleared {
            c.errors.push(format!(
                "packet {order}: sequence {seq_id} used before its state was cleared"
            ));
        }
        if let Some(d) = &p.trace_packet_defaults {
            seq.default_clock = d.timestamp_clock_id;
        }
        if let Some(trace_packet::Data::ClockSnapshot(snap)) = &p.data {
            // trace_processor keeps one time series per set of clocks (sequence
            // clocks keyed by their sequence) and rejects the trace clock going back.
            let mut set: Vec<(u32, u32)> = snap
                .clocks
                .iter()
                .map(|k| k.clock_id.unwrap_or(0))
                .map(|id| (id, if (64..128).contains(&id) { seq_id } else { 0 }))
                .collect();
            set.sort();
            if let Some(boot) = snap
                .clocks
                .iter()
                .find(|k| k.clock_id == Some(BOOTTIME))
                .and_then(|k| k.timestamp)
            {
                if let Some(&last) = snapshot_series.get(&set) {
                    if boot < last {
                        c.errors.push(format!("packet {order}: BOOTTIME goes back from {last} to {boot} in a clock snapshot"));
                    }
                }
                snapshot_series.insert(set, boot);
            }
            for clock in &snap.clocks {
                if clock.is_incremental == Some(true) {
                    seq.incremental
                        .insert(clock.clock_id.unwrap_or(0), clock.timestamp.unwrap_or(0));
                }
            }
        }
        if let Some(i) = &p.interned_data {
            seq.stacks.intern(i, order, &mut c.errors);
            for (map, entries) in [
                (
                    &mut seq.names,
                    i.event_names
                        .iter()
                        .map(|e| (e.iid, e.name.clone()))
                        .collect::<Vec<_>>(),
                ),
                (
                    &mut seq.categories,
                    i.event_categories
                        .iter()
                        .map(|e| (e.iid, e.name.clone()))
                        .collect(),
                ),
                (
                    &mut seq.arg_names,
                    i.debug_annotation_names
                        .iter()
                        .map(|e| (e.iid, e.name.clone()))
                        .collect(),
                ),
                (
                    &mut seq.arg_strings,
                    i.debug_annotation_string_values
                        .iter()
                        .map(|e| {
                            (
                                e.iid,
                                e.str
                                    .as_ref()
                                    .map(|b| String::from_utf8_lossy(b).into_owned()),
                            )
                        })
                        .collect(),
                ),
            ] {
                for (iid, name) in entries {
                    match iid {
                        Some(iid) if iid > 0 => {
                            map.insert(iid, name.unwrap_or_default());
                        }
                        _ => c
                            .errors
                            .push(format!("packet {order}: interned entry without iid")),
                    }
                }
            }
        }
        // Resolve the timestamp as trace_processor does.
        let clock = p
            .timestamp_clock_id
            .or(seq.default_clock)
            .unwrap_or(BOOTTIME);
        let ts = match (p.timestamp, seq.incremental.get_mut(&clock)) {
            (Some(delta), Some(last)) if p.timestamp_clock_id.is_none() => {
                *last += delta;
                Some(*last)
            }
            (Some(t), _) if clock == BOOTTIME => Some(t),
            (Some(_), _) => {
                c.errors.push(format!(
                    "packet {order}: timestamp on unknown clock {clock}"
                ));
                None
            }
            (None, _) => None,
        };
        match &p.data {
            Some(trace_packet::Data::TrackDescriptor(d)) => {
                describe(&mut c, d, order, &mut threads, &mut processes);
            }
            Some(trace_packet::Data::PerfSample(sample)) => {
                let (Some(ts), Some(pid), Some(tid), Some(iid)) =
                    (ts, sample.pid, sample.tid, sample.callstack_iid)
                else {
                    c.errors.push(format!(
                        "packet {order}: sample without time, pid, tid or callstack"
                    ));
                    continue;
                };
                let stack = seq.stacks.resolve(iid, order, &mut c.errors);
                c.samples.push(Sample {
                    ts,
                    pid,
                    tid,
                    cpu: sample.cpu,
                    stack: if details { stack } else { Vec::new() },
                });
            }
            Some(trace_packet::Data::TrackEvent(e)) => {
                let Some(ts) = ts else {
                    c.errors
                        .push(format!("packet {order}: track event without timestamp"));
                    continue;
                };
                let lookup =
                    |map: &HashMap<u64, String>, iid: u64, what: &str, errors: &mut Vec<String>| {
                        map.get(&iid).cloned().unwrap_or_else(|| {
                            errors.push(format!(
                                "packet {order}: {what} iid {iid} used before it was interned"
                            ));
                            String::new()
                        })
                    };
                let name = match &e.name_field {
                    Some(track_event::NameField::NameIid(iid)) => {
                        lookup(&seq.names, *iid, "event name", &mut c.errors)
                    }
                    Some(track_event::NameField::Name(n)) => n.clone(),
                    None => String::new(),
                };
                let category = e
                    .category_iids
                    .iter()
                    .map(|iid| lookup(&seq.categories, *iid, "category", &mut c.errors))
                    .collect::<Vec<_>>()
                    .join(",");
                let mut args = BTreeMap::new();
                for a in &e.debug_annotations {
                    let key = match &a.name_field {
                        Some(debug_annotation::NameField::NameIid(iid)) => {
                            lookup(&seq.arg_names, *iid, "arg name", &mut c.errors)
                        }
                        Some(debug_annotation::NameField::Name(n)) => n.clone(),
                        None => {
                            c.errors.push(format!("packet {order}: arg without a name"));
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
                        Some(V::StringValueIid(iid)) => {
                            Value::Str(lookup(&seq.arg_strings, *iid, "arg string", &mut c.errors))
                        }
                        None => {
                            c.errors
                                .push(format!("packet {order}: arg {key} without a value"));
                            continue;
                        }
                    };
                    args.insert(key, value);
                }
                let callstack = match e.callstack_field {
                    Some(track_event::CallstackField::CallstackIid(iid)) if details => {
                        seq.stacks.resolve(iid, order, &mut c.errors)
                    }
                    _ => Vec::new(),
                };
                let track = e.track_uuid.unwrap_or(0);
                used_tracks.push((order, track));
                if e.r#type == Some(track_event::Type::Counter as i32) {
                    use track_event::CounterValueField as V;
                    let value = match e.counter_value_field {
                        Some(V::CounterValue(v)) => v as f64,
                        Some(V::DoubleCounterValue(v)) => v,
                        None => {
                            c.errors
                                .push(format!("packet {order}: counter without a value"));
                            continue;
                        }
                    };
                    c.counters.push(CounterSample { track, ts, value });
                    continue;
                }
                let (name, args) = if details {
                    (name, args)
                } else {
                    (String::new(), BTreeMap::new())
                };
                events.push(Event {
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
            _ => {}
        }
    }

    for (order, track) in used_tracks {
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
    for e in &events {
        if c.tracks.get(&e.track).is_some_and(|t| t.counter.is_some()) {
            c.errors
                .push(format!("slice event at {} on a counter track", e.ts));
        }
    }
    c.counters.sort_by_key(|s| s.ts);
    build_slices(&mut c, events);
    c.thread_states = super::sched::thread_states(&switches);
    c.sched = super::sched::slices(switches, &mut c.errors);
    c
}

fn describe(
    c: &mut Checked,
    d: &TrackDescriptor,
    order: usize,
    threads: &mut HashMap<(i32, i64), u64>,
    processes: &mut HashMap<i32, u64>,
) {
    let uuid = d.uuid.unwrap_or(0);
    if uuid == 0 {
        c.errors
            .push(format!("packet {order}: track descriptor with uuid 0"));
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
        if processes.insert(p.pid.unwrap_or(0), uuid).is_some() {
            c.errors.push(format!(
                "packet {order}: second descriptor for process {:?}",
                p.pid
            ));
        }
    }
    if let Some(th) = &d.thread {
        t.pid = th.pid;
        t.tid = th.tid;
        t.thread_name = th.thread_name.clone();
        if threads
            .insert((th.pid.unwrap_or(0), th.tid.unwrap_or(0)), uuid)
            .is_some()
        {
            c.errors.push(format!(
                "packet {order}: second descriptor for thread {:?}/{:?}",
                th.pid, th.tid
            ));
        }
    }
    if c.tracks.insert(uuid, t).is_some() {
        c.errors
            .push(format!("packet {order}: track {uuid} described twice"));
    }
}

fn build_slices(c: &mut Checked, mut events: Vec<Event>) {
    // trace_processor sorts by timestamp; at equal times file order stands.
    events.sort_by_key(|e| (e.ts, e.order));
    let mut open: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut active_flows: HashMap<u64, usize> = HashMap::new();
    for e in events {
        let stack = open.entry(e.track).or_default();
        let index = match e.kind {
            1 | 3 => {
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
                if e.kind == 1 {
                    stack.push(index);
                }
                Some(index)
            }
            2 => {
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
                None
            }
            k => {
                c.errors.push(format!("event of type {k} at {}", e.ts));
                None
            }
        };
        let Some(index) = index else { continue };
        for id in e.terminating {
            match active_flows.remove(&id) {
                Some(from) => c.flows.push((from, index)),
                None => c.errors.push(format!(
                    "flow {id:#x} terminates at {} but was never started",
                    e.ts
                )),
            }
        }
        for id in e.flow_ids {
            if active_flows.insert(id, index).is_some() {
                c.errors
                    .push(format!("flow {id:#x} reused while active (would chain)"));
            }
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
