//! Flow links from a launching API call to each GPU operation it launched.
//!
//! A launch and its work share (pid, correlationId); correlation ids repeat
//! across processes, so the pid is part of the key. The launch is written
//! first (events go in time order) with one flow id per GPU operation; each
//! operation then takes the next id of its launch. Only launches whose work
//! has not all started are remembered, so memory stays small.

use rustc_hash::FxHashMap;

pub(super) struct Launches {
    namespace: u64,
    open: FxHashMap<(u32, i64), Open>,
}

struct Open {
    next: u32,
    left: u32,
}

impl Launches {
    pub(super) fn new(namespace: u64) -> Self {
        Self {
            namespace,
            open: FxHashMap::default(),
        }
    }

    /// Records a launch of `ops` GPU operations; fills `ids` with their flow ids.
    /// A second call with the key of a launch still open gets none: ids must
    /// not repeat while active, or trace_processor chains them.
    pub(super) fn launch(&mut self, pid: u32, correlation_id: i64, ops: u32, ids: &mut Vec<u64>) {
        ids.clear();
        if ops == 0 || self.open.contains_key(&(pid, correlation_id)) {
            return;
        }
        ids.extend((0..ops).map(|k| self.flow_id(pid, correlation_id, k)));
        self.open
            .insert((pid, correlation_id), Open { next: 0, left: ops });
    }

    /// The flow id for the next GPU operation of launch (pid, correlationId),
    /// or `None` if that launch is not in the trace.
    pub(super) fn op(&mut self, pid: u32, correlation_id: i64) -> Option<u64> {
        let key = (pid, correlation_id);
        let open = self.open.get_mut(&key)?;
        let k = open.next;
        open.next += 1;
        open.left -= 1;
        if open.left == 0 {
            self.open.remove(&key);
        }
        Some(self.flow_id(pid, correlation_id, k))
    }

    /// Whether launch (pid, correlationId) is in the trace with operations to come.
    pub(super) fn is_open(&self, pid: u32, correlation_id: i64) -> bool {
        self.open.contains_key(&(pid, correlation_id))
    }

    /// GPU operations whose launch was written but which never arrived after it.
    pub(super) fn unmatched(&self) -> u64 {
        self.open.values().map(|o| u64::from(o.left)).sum()
    }

    /// Flow ids are global to a trace: they mix in the report's namespace so
    /// that concatenated traces of several reports never share one. The top
    /// bit is clear: flows of CUDA event waits have it set (see `events`).
    fn flow_id(&self, pid: u32, correlation_id: i64, k: u32) -> u64 {
        let h = mix(self.namespace
            ^ mix((u64::from(pid) << 32) | u64::from(k))
            ^ mix(correlation_id as u64).rotate_left(17));
        (h & !(1 << 63)).max(1)
    }
}

/// splitmix64's finalizer: a cheap bijective scramble of 64 bits.
pub(super) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_op_of_a_launch_gets_its_own_id() {
        let mut l = Launches::new(7);
        let mut ids = Vec::new();
        l.launch(10, 5, 3, &mut ids);
        let got: Vec<u64> = (0..3).map(|_| l.op(10, 5).unwrap()).collect();
        assert_eq!(got, ids);
        assert_eq!(l.op(10, 5), None, "a launch of three ops links three");
        assert_eq!(l.unmatched(), 0);
    }

    #[test]
    fn a_repeated_call_does_not_reuse_open_ids() {
        let mut l = Launches::new(7);
        let (mut first, mut second) = (Vec::new(), Vec::new());
        l.launch(10, 5, 1, &mut first);
        l.launch(10, 5, 1, &mut second);
        assert_eq!(first.len(), 1);
        assert!(second.is_empty());
        assert_eq!(l.op(10, 5), Some(first[0]));
    }

    #[test]
    fn pid_separates_equal_correlation_ids() {
        let mut l = Launches::new(7);
        let mut ids = Vec::new();
        l.launch(10, 5, 1, &mut ids);
        assert_eq!(l.op(11, 5), None);
        assert_eq!(l.op(10, 5), Some(ids[0]));
    }

    #[test]
    fn namespaces_keep_ids_apart() {
        let (mut a, mut b) = (Launches::new(1), Launches::new(2));
        let (mut ia, mut ib) = (Vec::new(), Vec::new());
        a.launch(10, 5, 1, &mut ia);
        b.launch(10, 5, 1, &mut ib);
        assert_ne!(ia, ib);
    }
}
