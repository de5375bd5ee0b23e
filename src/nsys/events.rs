//! CUDA events (`CUPTI_ACTIVITY_KIND_CUDA_EVENT`): which `cudaEventRecord`
//! call recorded which event on which stream, and which synchronizations
//! waited on each record.
//!
//! The table has no times of its own: a row names its recording call by
//! (process, correlationId). A synchronization names the record it waited on
//! by `eventSyncId` where the export has that column (nsys 2025.1 and later),
//! one id per record. Older exports give only the `eventId`, which every
//! record of one event shares; there the record waited on is, as CUDA defines
//! it, the event's latest record made before the waiting call, in the order
//! the process made its CUDA calls: that of their correlation ids.
//!
//! All of it is small (one row per record, and the synchronizations that
//! name an event), and is read into memory before the CUDA stream starts.

use rustc_hash::FxHashMap;

use super::columns::{columns, ReadRow, TakeAll};
use super::cuda::{GPU, SYNC, SYNC_COLUMNS};
use super::row_filter::RowFilter;
use super::select::{Col, Row, Select};
use super::Report;

pub(crate) const TABLE: &str = "CUPTI_ACTIVITY_KIND_CUDA_EVENT";

/// What CUPTI writes in `eventId` and `eventSyncId` when no event is involved
/// (nsys 2026 writes 0 in `eventSyncId` too, and so does 2025.3 for waits it
/// could not tie to a record).
const NO_EVENT: i64 = 4_294_967_295;

/// A record: the (pid, correlationId) of its `cudaEventRecord` call.
pub(crate) type RecordKey = (u32, i64);

columns! {
    /// The columns of [`TABLE`] besides the correlationId of the
    /// recording call.
    pub(crate) struct RecordColumns = RECORD {
        event_id: Option<i64> = expected("eventId"),
        /// The stream the event was recorded on, with its device and context.
        stream: Option<i64> = expected("streamId"),
        device: Option<i64> = optional("deviceId"),
        context: Option<i64> = optional("contextId"),
        event_sync_id: Option<i64> = optional("eventSyncId"),
        /// When the device completed the event (`timestamp`, nsys 2026.1 and
        /// later, where collected).
        completed: Option<i64> = optional("timestamp"),
    }
    /// One `cudaEventRecord`, as the table describes it.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct EventRecord;
}

/// What a synchronization waited on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waited {
    /// No CUDA event (a stream or context synchronization).
    Nothing,
    /// This record.
    Record(RecordKey),
    /// An event none of whose records in the table fits.
    Unrecorded,
}

/// The synchronization columns that name an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EventWait {
    pub pid: Option<u32>,
    /// The waiting call's correlationId.
    pub correlation_id: Option<i64>,
    pub event_id: Option<i64>,
    pub event_sync_id: Option<i64>,
}

/// The records of a report, and how many synchronizations waited on each.
#[derive(Default)]
pub(crate) struct EventRecords {
    /// Whether records carry `eventSyncId`: then synchronizations are tied
    /// to records by that alone.
    exact: bool,
    records: FxHashMap<RecordKey, EventRecord>,
    /// By (pid, eventSyncId), where the table has that column.
    by_sync_id: FxHashMap<(u32, i64), RecordKey>,
    /// The correlation ids of each event's records, ascending, by (pid, eventId).
    by_event: FxHashMap<(u32, i64), Vec<i64>>,
    /// Synchronizations at or after time 0 that waited on each record.
    waits: FxHashMap<RecordKey, u32>,
}

impl EventRecords {
    pub(crate) fn get(&self, key: RecordKey) -> Option<&EventRecord> {
        self.records.get(&key)
    }

    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// How many synchronizations (of those at or after time 0) waited on `key`.
    pub(crate) fn waits(&self, key: RecordKey) -> u32 {
        self.waits.get(&key).copied().unwrap_or(0)
    }

    /// The record a synchronization waited on.
    pub(crate) fn waited(&self, wait: &EventWait) -> Waited {
        let event_id = wait.event_id.filter(|&id| id != NO_EVENT);
        let sync_id = wait.event_sync_id.filter(|&id| id != NO_EVENT && id != 0);
        if event_id.is_none() && sync_id.is_none() {
            return Waited::Nothing;
        }
        let Some(pid) = wait.pid else {
            return Waited::Unrecorded;
        };
        let found = match self.exact {
            // The export names the record itself: that record, or none.
            true => sync_id.and_then(|id| self.by_sync_id.get(&(pid, id)).copied()),
            false => event_id.zip(wait.correlation_id).and_then(|(event, corr)| {
                let records = self.by_event.get(&(pid, event))?;
                // The latest record made before the waiting call.
                let before = records.partition_point(|&r| r < corr);
                before.checked_sub(1).map(|i| (pid, records[i]))
            }),
        };
        found.map_or(Waited::Unrecorded, Waited::Record)
    }
}

impl Report {
    /// The CUDA event records of the report, and the synchronizations that
    /// `filter` keeps that waited on each; empty where the export has no
    /// such table.
    pub(crate) fn event_records(&self, filter: &RowFilter) -> rusqlite::Result<EventRecords> {
        let mut records = EventRecords::default();
        let Some(mut s) = self.select(TABLE) else {
            return Ok(records);
        };
        let pid = s.expr::<Option<i64>>(self.pid_column(TABLE));
        let correlation = s.required::<Option<i64>>("correlationId");
        let record = RECORD.take_all(&mut s);
        if !self.readable(&s) {
            return Ok(records);
        }
        let exact = s.has(RECORD.event_sync_id.name());
        records.exact = exact;
        self.each_selected(&s, "", |r| {
            let (Some(pid), Some(corr)) = (pid.get(r)?, correlation.get(r)?) else {
                return Ok(());
            };
            let key = (pid as u32, corr);
            let mut record = record.read(r)?;
            // 0 where not collected.
            record.completed = record.completed.filter(|&t| t != 0);
            if let (true, Some(sync_id)) = (exact, record.event_sync_id) {
                records.by_sync_id.insert((key.0, sync_id), key);
            }
            if let Some(event) = record.event_id {
                records
                    .by_event
                    .entry((key.0, event))
                    .or_default()
                    .push(corr);
            }
            records.records.insert(key, record);
            Ok(())
        })?;
        for correlation_ids in records.by_event.values_mut() {
            correlation_ids.sort_unstable();
            correlation_ids.dedup();
        }
        records.waits = self.count_event_waits(&records, filter)?;
        Ok(records)
    }

    /// How many synchronizations waited on each record: those the CUDA
    /// stream will deliver (its reader needs `start`, `end` and `streamId`)
    /// and write (at or after time 0).
    fn count_event_waits(
        &self,
        records: &EventRecords,
        filter: &RowFilter,
    ) -> rusqlite::Result<FxHashMap<RecordKey, u32>> {
        let mut waits = FxHashMap::default();
        if records.is_empty() {
            return Ok(waits);
        }
        let Some(mut s) = self.select(SYNC) else {
            return Ok(waits);
        };
        let columns = WaitColumns::declare(&mut s, &self.pid_column(SYNC));
        if s.missing().is_some() {
            return Ok(waits);
        }
        // The synchronizations the filter keeps, where there is one.
        let kept = match filter.sql(self, SYNC, "start") {
            f if f.is_empty() => String::new(),
            f => format!(" AND {f}"),
        };
        self.each_selected(&s, &format!("\"start\" >= 0{kept}"), |r| {
            if let Waited::Record(key) = records.waited(&columns.decode(r)?) {
                *waits.entry(key).or_default() += 1;
            }
            Ok(())
        })?;
        Ok(waits)
    }
}

/// The columns of a synchronization that name the event it waited on.
#[derive(Clone, Copy)]
struct WaitColumns {
    pid: Col<Option<i64>>,
    correlation: Col<Option<i64>>,
    event_id: Col<Option<i64>>,
    event_sync_id: Col<Option<i64>>,
}

impl WaitColumns {
    /// `pid` is the SQL of the row's pid (see [`Report::pid_column`]).
    /// Declares too the columns without which the CUDA stream cannot read
    /// a synchronization (and so writes no wait).
    fn declare(s: &mut Select, pid: &str) -> Self {
        s.take(GPU.start);
        s.take(GPU.end);
        s.take(GPU.stream_id);
        Self {
            pid: s.expr(pid.to_owned()),
            correlation: s.take(GPU.correlation_id),
            event_id: s.take(SYNC_COLUMNS.event_id),
            event_sync_id: s.take(SYNC_COLUMNS.event_sync_id),
        }
    }

    fn decode(&self, r: &Row) -> rusqlite::Result<EventWait> {
        Ok(EventWait {
            pid: self.pid.get(r)?.map(|p| p as u32),
            correlation_id: self.correlation.get(r)?,
            event_id: self.event_id.get(r)?,
            event_sync_id: self.event_sync_id.get(r)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(exact: bool) -> EventRecords {
        let mut r = EventRecords {
            exact,
            ..EventRecords::default()
        };
        // Event 5 of pid 10 recorded by calls 100 and 200; event 6 by 150.
        for (corr, event, sync_id) in [(100, 5, 1), (200, 5, 2), (150, 6, 3)] {
            let key = (10, corr);
            r.records.insert(
                key,
                EventRecord {
                    event_id: Some(event),
                    stream: Some(7),
                    device: Some(0),
                    context: Some(1),
                    event_sync_id: exact.then_some(sync_id),
                    completed: None,
                },
            );
            if exact {
                r.by_sync_id.insert((10, sync_id), key);
            }
            r.by_event.entry((10, event)).or_default().push(corr);
        }
        for v in r.by_event.values_mut() {
            v.sort_unstable();
        }
        r
    }

    fn wait(corr: i64, event: i64, sync_id: Option<i64>) -> EventWait {
        EventWait {
            pid: Some(10),
            correlation_id: Some(corr),
            event_id: Some(event),
            event_sync_id: sync_id,
        }
    }

    #[test]
    fn without_sync_ids_the_latest_earlier_record_is_waited_on() {
        let r = records(false);
        assert_eq!(r.waited(&wait(150, 5, None)), Waited::Record((10, 100)));
        assert_eq!(r.waited(&wait(250, 5, None)), Waited::Record((10, 200)));
        assert_eq!(r.waited(&wait(90, 5, None)), Waited::Unrecorded);
        assert_eq!(r.waited(&wait(250, 9, None)), Waited::Unrecorded);
        assert_eq!(
            r.waited(&EventWait {
                pid: Some(11),
                ..wait(250, 5, None)
            }),
            Waited::Unrecorded,
            "records of another process"
        );
        assert_eq!(r.waited(&wait(250, NO_EVENT, None)), Waited::Nothing);
    }

    #[test]
    fn sync_ids_name_the_record_exactly() {
        let r = records(true);
        // Call order would say record 200; the export says record 100.
        assert_eq!(r.waited(&wait(250, 5, Some(1))), Waited::Record((10, 100)));
        // 0 is no record: the call order is not asked.
        assert_eq!(r.waited(&wait(250, 5, Some(0))), Waited::Unrecorded);
        assert_eq!(r.waited(&wait(250, 5, None)), Waited::Unrecorded);
        assert_eq!(r.waited(&wait(250, NO_EVENT, Some(0))), Waited::Nothing);
        assert_eq!(
            r.waited(&wait(250, NO_EVENT, Some(NO_EVENT))),
            Waited::Nothing
        );
    }
}
