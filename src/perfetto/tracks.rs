//! Track descriptors: small copyable handles, stable uuids, one descriptor for
//! each track in use.

use rustc_hash::FxHashMap;

use super::proto::{
    counter_descriptor, track_descriptor, CounterDescriptor, ProcessDescriptor, ThreadDescriptor,
    TrackDescriptor,
};

/// A handle to a track of this trace. Cheap to copy and compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrackId(u32);

impl TrackId {
    pub(super) fn index(self) -> usize {
        self.0 as usize
    }
}

/// A track that is neither a process nor a thread: a group, or a slice track
/// under a process, thread or group.
#[derive(Clone, Debug, PartialEq)]
pub struct TrackSpec {
    /// The track it is under; none for a top-level group.
    pub parent: Option<TrackId>,
    /// Its name.
    pub name: String,
    /// What it shows, for people.
    pub description: Option<String>,
    /// Position among its siblings when the parent orders children explicitly.
    pub rank: Option<i32>,
    /// Show children in `rank` order rather than sorted by name.
    pub ordered_children: bool,
}

impl TrackSpec {
    /// A track named `name` under `parent`, in no particular order.
    pub fn new(parent: Option<TrackId>, name: impl Into<String>) -> Self {
        Self {
            parent,
            name: name.into(),
            description: None,
            rank: None,
            ordered_children: false,
        }
    }
}

/// One source of a trace that holds several (see
/// [`Trace::begin_scope`](super::Trace::begin_scope)): what sets its events
/// apart from the other sources'.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    /// Keeps the uuids of the scope's tracks apart from other scopes': its
    /// low 24 bits tell named tracks apart, all of it the others.
    pub namespace: u64,
    /// Added to every timestamp.
    pub time_offset: u64,
    /// Added to every pid and tid but 0 (the idle task).
    pub pid_offset: u32,
    /// Added to every CPU number.
    pub cpu_offset: u32,
    /// The scope's CPU numbers do not fit in the trace: its CPU samples go
    /// without theirs, and it has no context switches to write.
    pub drop_cpus: bool,
    /// Put before the names of the scope's top-level tracks (its processes,
    /// its GPUs), as `label: name`; a process's name then ends with its
    /// pid before `pid_offset` is added, as `label: name (pid N)`.
    pub label: Option<String>,
}

/// What a counter counts, for the UI's axis.
#[derive(Clone, Debug, PartialEq)]
pub enum CounterUnit {
    /// A count.
    Count,
    /// Bytes.
    Bytes,
    /// Any other unit, by name ("%", "MHz").
    Named(String),
    /// No unit.
    Unspecified,
}

enum Kind {
    Process {
        pid: i32,
        name: String,
    },
    Thread {
        process: TrackId,
        pid: i32,
        tid: i64,
        name: String,
    },
    Named(TrackSpec),
    Counter(TrackSpec, CounterUnit),
}

/// Who made a named track: sequences make theirs in a fixed order, so a
/// track's uuid does not depend on which thread got to the tracks first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Maker(pub(super) u32);

/// The tracks of one trace.
///
/// Uuids depend only on what a track is, never on the order threads create
/// tracks in, and include a namespace derived from the report, so that they
/// are unlikely to collide with another report's when trace files are
/// concatenated:
/// - a process's is a hash of its pid, a thread's of (pid, tid), with the top
///   bit set. These appear only in descriptors.
/// - a named track's, which every event on it repeats, is short:
///   `namespace << 24 | maker << 20 | n` for the maker's n-th track.
pub struct Tracks {
    namespace: u64,
    pid_offset: u32,
    label: Option<String>,
    kinds: Vec<Kind>,
    uuids: Vec<u64>,
    /// Whether something refers to the track, directly or through a child.
    used: Vec<bool>,
    made: FxHashMap<Maker, u64>,
    processes: FxHashMap<i32, TrackId>,
    threads: FxHashMap<(i32, i64), TrackId>,
    groups: FxHashMap<u64, TrackId>,
}

impl Tracks {
    /// The tracks of a trace whose uuids are made from `namespace` (one per report of a merged trace).
    pub fn new(namespace: u64) -> Self {
        Self {
            namespace,
            pid_offset: 0,
            label: None,
            kinds: Vec::new(),
            uuids: Vec::new(),
            used: Vec::new(),
            made: FxHashMap::default(),
            processes: FxHashMap::default(),
            threads: FxHashMap::default(),
            groups: FxHashMap::default(),
        }
    }

    /// Makes the tracks of a new scope from now on: the keys of earlier
    /// scopes' processes, threads, groups and makers no longer apply.
    pub(super) fn begin_scope(&mut self, scope: Scope) {
        self.namespace = scope.namespace;
        self.pid_offset = scope.pid_offset;
        self.label = scope.label;
        self.made.clear();
        self.processes.clear();
        self.threads.clear();
        self.groups.clear();
    }

    /// A pid or tid as the trace knows it (0, the idle task, as it is).
    fn shifted(&self, id: i64) -> i64 {
        match id {
            0 => 0,
            id => id + i64::from(self.pid_offset),
        }
    }

    /// `name` with the scope's label in front, for a top-level track.
    fn labelled(&self, name: String) -> String {
        match &self.label {
            Some(label) => format!("{label}: {name}"),
            None => name,
        }
    }

    fn push(&mut self, mut kind: Kind, uuid: u64) -> TrackId {
        let id = TrackId(u32::try_from(self.kinds.len()).expect("fewer than 2^32 tracks"));
        if self.label.is_some() {
            match &mut kind {
                Kind::Process { name, .. } => *name = self.labelled(std::mem::take(name)),
                Kind::Named(spec) | Kind::Counter(spec, _) if spec.parent.is_none() => {
                    spec.name = self.labelled(std::mem::take(&mut spec.name));
                }
                _ => {}
            }
        }
        self.kinds.push(kind);
        self.uuids.push(uuid);
        self.used.push(false);
        id
    }

    /// A uuid with the top bit set from `key` and the namespace.
    fn mix(&self, key: [u64; 2]) -> u64 {
        let mut h = self.namespace ^ 0x9E37_79B9_7F4A_7C15;
        for k in key {
            // splitmix64 steps: every input bit reaches every output bit.
            h = (h ^ k).wrapping_add(0x9E37_79B9_7F4A_7C15);
            h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            h ^= h >> 31;
        }
        h | 1 << 63
    }

    /// The track of process `pid`; `name` is asked for only the first time.
    pub fn process(&mut self, pid: i32, name: impl FnOnce() -> String) -> TrackId {
        if let Some(&id) = self.processes.get(&pid) {
            return id;
        }
        let shifted = self.shifted(pid.into()) as i32;
        // A labelled scope's pids may be moved apart from another scope's:
        // its process names keep the pid the source knows.
        let name = match self.label {
            Some(_) => format!("{} (pid {pid})", name()),
            None => name(),
        };
        let id = self.push(
            Kind::Process { pid: shifted, name },
            self.mix([pid as u64, u64::MAX]),
        );
        self.processes.insert(pid, id);
        id
    }

    /// The track of thread `tid` of process `pid`. Perfetto keys threads by
    /// (pid, tid): a second descriptor would read as a reused tid, so there is one.
    pub fn thread(
        &mut self,
        pid: i32,
        tid: i64,
        process_name: impl FnOnce() -> String,
        name: impl FnOnce() -> String,
    ) -> TrackId {
        if let Some(&id) = self.threads.get(&(pid, tid)) {
            return id;
        }
        let process = self.process(pid, process_name);
        let id = self.push(
            Kind::Thread {
                process,
                pid: self.shifted(pid.into()) as i32,
                tid: self.shifted(tid),
                name: name(),
            },
            self.mix([pid as u64, tid as u64]),
        );
        self.threads.insert((pid, tid), id);
        id
    }

    /// A new named track made by `maker` (never deduplicated: lanes are
    /// tracks with equal specs).
    pub fn add(&mut self, maker: Maker, spec: TrackSpec) -> TrackId {
        self.add_made(maker, Kind::Named(spec))
    }

    /// A new counter track made by `maker`.
    pub fn add_counter(&mut self, maker: Maker, spec: TrackSpec, unit: CounterUnit) -> TrackId {
        self.add_made(maker, Kind::Counter(spec, unit))
    }

    fn add_made(&mut self, maker: Maker, kind: Kind) -> TrackId {
        let made = self.made.entry(maker).or_default();
        *made += 1;
        assert!(
            *made < 1 << 20 && maker.0 < 16,
            "fewer than 2^20 tracks per maker"
        );
        let uuid = (self.namespace & 0xFF_FFFF) << 24 | u64::from(maker.0) << 20 | *made;
        self.push(kind, uuid)
    }

    /// The track known by `key` (a GPU's group, say), made from `spec` the
    /// first time: any sequence may ask for it and gets the same track.
    pub fn group(&mut self, key: u64, spec: impl FnOnce() -> TrackSpec) -> TrackId {
        if let Some(&id) = self.groups.get(&key) {
            return id;
        }
        let uuid = self.mix([key, u64::MAX - 1]);
        let id = self.push(Kind::Named(spec()), uuid);
        self.groups.insert(key, id);
        id
    }

    /// The uuid of track `id`.
    pub fn uuid(&self, id: TrackId) -> u64 {
        self.uuids[id.index()]
    }

    /// Marks `id` and its ancestors as in use: they are described in the trace.
    pub(super) fn mark_used(&mut self, id: TrackId) {
        let mut next = Some(id);
        while let Some(id) = next.filter(|id| !self.used[id.index()]) {
            self.used[id.index()] = true;
            next = self.parent(id);
        }
    }

    /// The descriptors of the tracks in use, in an order that depends only on
    /// the tracks, not on the order they were made or used in: by depth
    /// (parents first), then by uuid.
    pub(super) fn used_descriptors(&self) -> Vec<TrackDescriptor> {
        let mut used: Vec<(u32, u64, TrackId)> = (0..self.kinds.len())
            .filter(|&i| self.used[i])
            .map(|i| {
                let id = TrackId(i as u32);
                (self.depth(id), self.uuid(id), id)
            })
            .collect();
        used.sort_unstable();
        used.into_iter()
            .map(|(.., id)| self.descriptor(id))
            .collect()
    }

    fn parent(&self, id: TrackId) -> Option<TrackId> {
        match &self.kinds[id.index()] {
            Kind::Process { .. } => None,
            Kind::Thread { process, .. } => Some(*process),
            Kind::Named(spec) | Kind::Counter(spec, _) => spec.parent,
        }
    }

    fn depth(&self, id: TrackId) -> u32 {
        std::iter::successors(self.parent(id), |&p| self.parent(p)).count() as u32
    }

    fn descriptor(&self, id: TrackId) -> TrackDescriptor {
        let mut d = TrackDescriptor {
            uuid: Some(self.uuid(id)),
            ..Default::default()
        };
        match &self.kinds[id.0 as usize] {
            Kind::Process { pid, name } => {
                d.process = Some(ProcessDescriptor {
                    pid: Some(*pid),
                    process_name: Some(name.clone()),
                });
            }
            Kind::Thread { pid, tid, name, .. } => {
                d.thread = Some(ThreadDescriptor {
                    pid: Some(*pid),
                    tid: Some(*tid),
                    thread_name: Some(name.clone()),
                });
            }
            Kind::Counter(spec, unit) => {
                d.parent_uuid = spec.parent.map(|p| self.uuid(p));
                d.static_or_dynamic_name = Some(track_descriptor::StaticOrDynamicName::Name(
                    spec.name.clone(),
                ));
                d.description = spec.description.clone();
                d.sibling_order_rank = spec.rank;
                use counter_descriptor::Unit;
                let (unit, unit_name) = match unit {
                    CounterUnit::Count => (Some(Unit::Count), None),
                    CounterUnit::Bytes => (Some(Unit::SizeBytes), None),
                    CounterUnit::Named(name) => (None, Some(name.clone())),
                    CounterUnit::Unspecified => (None, None),
                };
                d.counter = Some(CounterDescriptor {
                    unit: unit.map(|u| u as i32),
                    unit_name,
                });
            }
            Kind::Named(spec) => {
                d.parent_uuid = spec.parent.map(|p| self.uuid(p));
                d.static_or_dynamic_name = Some(track_descriptor::StaticOrDynamicName::Name(
                    spec.name.clone(),
                ));
                d.description = spec.description.clone();
                d.sibling_order_rank = spec.rank;
                if spec.ordered_children {
                    d.child_ordering = Some(track_descriptor::ChildTracksOrdering::Explicit as i32);
                }
            }
        }
        d
    }
}
