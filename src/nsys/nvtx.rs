//! NVTX events (`NVTX_EVENTS`), in time order.

use rusqlite::types::ValueRef;

use super::ids::{pid_of, tid_of};
use super::scan::{order_key, OrderKey, Prescan, Streamed, TableScan};
use super::select::{any_of, Col, Row, Select};
use super::Report;

pub const TABLE: &str = "NVTX_EVENTS";

// eventType values (ENUM_NSYS_EVENT_TYPE).
pub const CATEGORY: i64 = 33;
pub const MARK: i64 = 34;
pub const THREAD_NAME: i64 = 39;
pub const PUSH_POP: i64 = 59;
pub const START_END: i64 = 60;
pub const NVTXT_MARK: i64 = 65;
pub const NVTXT_PUSH_POP: i64 = 70;
pub const NVTXT_START_END: i64 = 71;
pub const DOMAIN_CREATE: i64 = 75;

/// The event types that are events on the timeline (the others name
/// things); the commonest first, as SQL tests them in this order.
pub const TIMELINE_TYPES: [i64; 6] = [
    PUSH_POP,
    START_END,
    MARK,
    NVTXT_PUSH_POP,
    NVTXT_START_END,
    NVTXT_MARK,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NvtxKind {
    Mark,
    /// Nests per thread.
    PushPop,
    /// May overlap other ranges and end on another thread.
    StartEnd,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Payload {
    Int(i64),
    Uint(u64),
    Double(f64),
}

pub struct NvtxEvent<'r> {
    pub kind: NvtxKind,
    pub start: i64,
    /// `None` for marks and for ranges still open when the capture stopped.
    pub end: Option<i64>,
    pub pid: u32,
    pub tid: u32,
    pub end_tid: Option<u32>,
    pub domain: i64,
    /// From `text`, or `textId` through StringIds.
    pub text: Option<TextRef<'r>>,
    pub category: Option<i64>,
    /// ARGB.
    pub color: Option<u32>,
    pub payload: Option<Payload>,
    pub json: Option<String>,
}

pub enum TextRef<'r> {
    Inline(String),
    Registered(&'r str),
}

impl TextRef<'_> {
    pub fn as_str(&self) -> &str {
        match self {
            TextRef::Inline(s) => s,
            TextRef::Registered(s) => s,
        }
    }
}

/// How a payload column's value reads.
type ReadPayload = fn(ValueRef) -> Option<Payload>;

/// The payload columns, of which at most one is set, each with how its value
/// reads.
const PAYLOAD_COLUMNS: [(&str, ReadPayload); 6] = [
    ("uint64Value", |v| int(v).map(|v| Payload::Uint(v as u64))),
    ("int64Value", |v| int(v).map(Payload::Int)),
    ("doubleValue", real),
    ("uint32Value", |v| {
        int(v).map(|v| Payload::Uint(u64::from(v as u32)))
    }),
    ("int32Value", |v| {
        int(v).map(|v| Payload::Int(i64::from(v as i32)))
    }),
    ("floatValue", real),
];

fn int(v: ValueRef) -> Option<i64> {
    v.as_i64().ok()
}

/// A real, also where SQLite stored a whole number as an integer.
fn real(v: ValueRef) -> Option<Payload> {
    match v {
        ValueRef::Real(f) => Some(Payload::Double(f)),
        ValueRef::Integer(i) => Some(Payload::Double(i as f64)),
        _ => None,
    }
}

/// Marks are zero-length; ranges still open sort as the longest.
fn key(event: &NvtxEvent) -> OrderKey {
    match (event.kind, event.end) {
        (NvtxKind::Mark, _) => order_key(event.start, event.start),
        (_, Some(end)) => order_key(event.start, end),
        (_, None) => order_key(event.start, i64::MAX),
    }
}

impl Report {
    /// The latest start or end of any row of `NVTX_EVENTS`, of whatever
    /// type: where nsys ends the ranges still open when the capture stopped.
    pub(crate) fn nvtx_last_time(&self) -> rusqlite::Result<Option<i64>> {
        if !self.schema.has_column(TABLE, "start") {
            return Ok(None);
        }
        let end = match self.schema.has_column(TABLE, "end") {
            true => "MAX(\"end\")",
            false => "NULL",
        };
        self.conn().query_row(
            &format!("SELECT MAX(MAX(start), COALESCE({end}, MAX(start))) FROM {TABLE}"),
            [],
            |r| r.get(0),
        )
    }

    /// Calls `f` with every timeline NVTX event (ranges and marks), in time order.
    pub(crate) fn for_each_nvtx_event<E>(
        &self,
        f: impl FnMut(NvtxEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<rusqlite::Error>,
    {
        self.nvtx_events_to_last_time(f).map(drop)
    }

    /// [`for_each_nvtx_event`](Self::for_each_nvtx_event), then returns
    /// [`nvtx_last_time`](Self::nvtx_last_time): from the rows the stream's
    /// pre-scan reads anyway and the metadata's, where those are all the
    /// rows (no filter narrows the read), instead of a scan of its own.
    pub(crate) fn nvtx_events_to_last_time<E>(
        &self,
        mut f: impl FnMut(NvtxEvent<'_>) -> Result<(), E>,
    ) -> Result<Option<i64>, E>
    where
        E: From<rusqlite::Error>,
    {
        let Some(mut s) = self.select(TABLE) else {
            return Ok(self.nvtx_last_time()?);
        };
        let event_type = s.required::<i64>("eventType");
        let start = s.required("start");
        let end = s.optional("end");
        let gtid = s.required::<i64>("globalTid");
        let end_gtid = s.optional::<i64>("endGlobalTid");
        let domain = s.optional::<i64>("domainId");
        let text = s.optional::<String>("text");
        let text_id = s.optional("textId");
        let category = s.optional("category");
        let color = s.optional::<i64>("color");
        // At most one payload column is set; the first that is, is read.
        // (Read as they are, the six cost less than SQLite choosing one:
        // that reads each twice, for a CASE and a COALESCE.)
        let payloads = PAYLOAD_COLUMNS.map(|(column, read)| (s.optional::<()>(column), read));
        let json_text = s.optional::<String>("jsonText");
        let json_text_id = s.optional("jsonTextId");
        if !self.readable(&s) {
            return Ok(self.nvtx_last_time()?);
        }
        let strings = &self.strings;
        let decode = move |r: &Row| {
            let kind = match event_type.get(r)? {
                MARK | NVTXT_MARK => NvtxKind::Mark,
                PUSH_POP | NVTXT_PUSH_POP => NvtxKind::PushPop,
                _ => NvtxKind::StartEnd,
            };
            let gtid = gtid.get(r)?;
            let mut payload = None;
            for (column, read) in payloads {
                let value = column.raw(r)?;
                if value != ValueRef::Null {
                    payload = read(value);
                    break;
                }
            }
            let text = match text.get(r)? {
                Some(t) => Some(TextRef::Inline(t)),
                None => strings.lookup(text_id.get(r)?).map(TextRef::Registered),
            };
            Ok(NvtxEvent {
                kind,
                start: start.get(r)?,
                end: match kind {
                    NvtxKind::Mark => None,
                    _ => end.get(r)?,
                },
                pid: pid_of(gtid),
                tid: tid_of(gtid),
                end_tid: end_gtid.get(r)?.map(tid_of),
                domain: domain.get(r)?.unwrap_or(0),
                text,
                category: category.get(r)?,
                color: color.get(r)?.map(|c| c as u32),
                payload,
                json: match json_text.get(r)? {
                    Some(json) => Some(json),
                    None => strings.lookup(json_text_id.get(r)?).map(str::to_owned),
                },
            })
        };
        let mut times = Select::new(&self.schema, TABLE);
        let last = LastTime {
            start: times.optional("start"),
            end: times.optional("end"),
            last: None,
        };
        let scan = TableScan::new(&s, decode, key)
            .filter(any_of("eventType", &TIMELINE_TYPES))
            .prescan(&times);
        let mut timeline_last = None;
        self.stream(vec![scan], last, |item| match item {
            Streamed::Prescanned(last) => {
                timeline_last = last;
                Ok(())
            }
            Streamed::Event(event) => f(event),
        })?;
        match self.filter() {
            // The pre-scan saw only the rows the filter keeps.
            Some(_) => Ok(self.nvtx_last_time()?),
            None => Ok(timeline_last.max(self.meta.nvtx_names_last_time)),
        }
    }
}

/// The pre-scan of the timeline rows: their latest start or end.
struct LastTime {
    start: Col<Option<i64>>,
    end: Col<Option<i64>>,
    last: Option<i64>,
}

impl<T> Prescan<T> for LastTime {
    type Summary = Option<i64>;

    fn row(&mut self, _: usize, row: &Row) -> rusqlite::Result<()> {
        let last = self.start.get(row)?.max(self.end.get(row)?);
        self.last = self.last.max(last);
        Ok(())
    }

    fn summary(&mut self) -> Option<i64> {
        self.last
    }

    fn complete(&self, _: &mut T) {}
}
