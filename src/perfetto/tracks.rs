//! Track descriptors: small copyable handles, stable uuids, each descriptor sent once.

use rustc_hash::FxHashMap;

use super::proto::{track_descriptor, ProcessDescriptor, ThreadDescriptor, TrackDescriptor};

/// A handle to a track of this trace. Cheap to copy and compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrackId(u32);

/// A track that is neither a process nor a thread: a group, or a slice track
/// under a process, thread or group.
#[derive(Clone, Debug, PartialEq)]
pub struct TrackSpec {
    pub parent: Option<TrackId>,
    pub name: String,
    pub description: Option<String>,
    /// Position among its siblings when the parent orders children explicitly.
    pub rank: Option<i32>,
    /// Show children in `rank` order rather than sorted by name.
    pub ordered_children: bool,
}

impl TrackSpec {
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
}

/// The tracks of one trace.
///
/// Uuids are `namespace << 24 | index`: unique within the trace, and (with a
/// namespace derived from the report) unlikely to collide with the tracks of
/// another report when trace files are concatenated.
pub struct Tracks {
    namespace: u64,
    kinds: Vec<Kind>,
    emitted: Vec<bool>,
    processes: FxHashMap<i32, TrackId>,
    threads: FxHashMap<(i32, i64), TrackId>,
}

impl Tracks {
    pub fn new(namespace: u64) -> Self {
        Self {
            namespace: namespace & 0xFF_FFFF,
            kinds: Vec::new(),
            emitted: Vec::new(),
            processes: FxHashMap::default(),
            threads: FxHashMap::default(),
        }
    }

    fn push(&mut self, kind: Kind) -> TrackId {
        let id = TrackId(u32::try_from(self.kinds.len()).expect("fewer than 2^24 tracks"));
        assert!(id.0 < 0xFF_FFFF, "fewer than 2^24 tracks");
        self.kinds.push(kind);
        self.emitted.push(false);
        id
    }

    /// The track of process `pid`; `name` is asked for only the first time.
    pub fn process(&mut self, pid: i32, name: impl FnOnce() -> String) -> TrackId {
        if let Some(&id) = self.processes.get(&pid) {
            return id;
        }
        let id = self.push(Kind::Process { pid, name: name() });
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
        let id = self.push(Kind::Thread {
            process,
            pid,
            tid,
            name: name(),
        });
        self.threads.insert((pid, tid), id);
        id
    }

    /// A new named track (never deduplicated: lanes are tracks with equal specs).
    pub fn add(&mut self, spec: TrackSpec) -> TrackId {
        self.push(Kind::Named(spec))
    }

    pub fn uuid(&self, id: TrackId) -> u64 {
        (self.namespace << 24) | (u64::from(id.0) + 1)
    }
    /// Appends the descriptors not yet sent for `id` and its ancestors, parents first.
    pub(super) fn take_unsent(&mut self, id: TrackId, out: &mut Vec<TrackDescriptor>) {
        if self.emitted[id.0 as usize] {
            return;
        }
        let parent = match &self.kinds[id.0 as usize] {
            Kind::Process { .. } => None,
            Kind::Thread { process, .. } => Some(*process),
            Kind::Named(spec) => spec.parent,
        };
        if let Some(parent) = parent {
            self.take_unsent(parent, out);
        }
        self.emitted[id.0 as usize] = true;
        out.push(self.descriptor(id));
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
