//! CUDA events: the event and stream a `cudaEventRecord` call recorded, as
//! args of the call, and a flow from the call to each synchronization that
//! waited on that record (`cudaEventSynchronize`, `cudaStreamWaitEvent`, ...),
//! so that waits across streams and threads show as arrows.
//!
//! The calls and the synchronizations come in one time-ordered stream. A call
//! is written first, with one flow id per synchronization that waited on its
//! record and comes after it; each of those synchronizations then ends the
//! next id. A synchronization that comes before the call (its record was made
//! later, as far as the timestamps tell), or whose record or call is not in
//! the trace, gets no flow: such flows would run backwards or from nowhere.
//! Both are counted.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::nsys::cuda::Sync;
use crate::nsys::events::{EventRecord, EventRecords, EventWait, RecordKey, Waited};

use super::flows::mix;
use super::summary::Summary;

pub(super) struct EventWaits {
    namespace: u64,
    records: EventRecords,
    /// Records whose call is not written yet, with the synchronizations that
    /// waited on them so far.
    early: FxHashMap<RecordKey, u32>,
    /// Records whose call is written: the next flow index, and the flows
    /// still to end. Removed once all have ended.
    open: FxHashMap<RecordKey, Open>,
    /// Records whose call is written with its flows.
    linked: FxHashSet<RecordKey>,
    /// Records with a call in the trace (a repeat of the call included).
    shown: FxHashSet<RecordKey>,
}

struct Open {
    next: u32,
    left: u32,
}

impl EventWaits {
    pub(super) fn new(namespace: u64, records: EventRecords) -> Self {
        Self {
            namespace,
            records,
            early: FxHashMap::default(),
            open: FxHashMap::default(),
            linked: FxHashSet::default(),
            shown: FxHashSet::default(),
        }
    }

    /// The record a call with this (pid, correlationId) made, if it is a
    /// record call. The first such call written (`flows`: not a record that
    /// repeats a call) gets the flow ids to the synchronizations still to
    /// come, in `ids` (which keeps what it holds).
    pub(super) fn record_call(
        &mut self,
        key: RecordKey,
        flows: bool,
        ids: &mut Vec<u64>,
        summary: &mut Summary,
    ) -> Option<EventRecord> {
        let record = *self.records.get(key)?;
        self.shown.insert(key);
        if flows && self.linked.insert(key) {
            let early = self.early.remove(&key).unwrap_or(0);
            summary.event_waits_before_record += u64::from(early);
            let left = self.records.waits(key).saturating_sub(early);
            ids.extend((0..left).map(|k| self.flow_id(key, k)));
            if left > 0 {
                self.open.insert(key, Open { next: 0, left });
            }
        }
        Some(record)
    }

    /// The flow into synchronization `s` (at or after time 0), and the record
    /// it waited on, if that is in the report.
    pub(super) fn wait(
        &mut self,
        s: &Sync,
        summary: &mut Summary,
    ) -> (Option<u64>, Option<RecordKey>) {
        let waited = self.records.waited(&EventWait {
            pid: s.common.place.pid,
            correlation_id: s.common.correlation_id,
            event_id: s.own.event_id,
            event_sync_id: s.own.event_sync_id,
        });
        let key = match waited {
            Waited::Nothing => return (None, None),
            Waited::Unrecorded => {
                summary.event_waits_unrecorded += 1;
                return (None, None);
            }
            Waited::Record(key) => key,
        };
        let Some(open) = self.open.get_mut(&key) else {
            if self.linked.contains(&key) {
                // Counted with the call, so not expected: no id is left.
                summary.event_waits_unrecorded += 1;
            } else {
                *self.early.entry(key).or_default() += 1;
            }
            return (None, Some(key));
        };
        let k = open.next;
        open.next += 1;
        open.left -= 1;
        if open.left == 0 {
            self.open.remove(&key);
        }
        summary.event_flows += 1;
        (Some(self.flow_id(key, k)), Some(key))
    }

    /// Counts what never met: synchronizations whose record's call never
    /// came, and records whose call is not in the trace.
    pub(super) fn finish(&mut self, summary: &mut Summary) {
        let early = std::mem::take(&mut self.early);
        summary.event_waits_unrecorded += early.values().map(|&n| u64::from(n)).sum::<u64>();
        summary.event_records_without_call += (self.records.len() - self.shown.len()) as u64;
    }

    /// Flow ids of event waits have the top bit set, those of launches clear
    /// (see `flows`): the two never share an id.
    fn flow_id(&self, (pid, correlation_id): RecordKey, k: u32) -> u64 {
        const EVENT_WAITS: u64 = 0xE7E2_7A17;
        let h = mix(self.namespace
            ^ mix((u64::from(pid) << 32) | u64::from(k))
            ^ mix(correlation_id as u64 ^ EVENT_WAITS).rotate_left(29));
        h | 1 << 63
    }
}
