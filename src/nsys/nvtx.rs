//! NVTX events (`NVTX_EVENTS`), in time order.

use rusqlite::types::ValueRef;
use rusqlite::Row;

use super::ids::{pid_of, tid_of};
use super::scan::{order_key, NoPrescan, OrderKey, Streamed, TableScan};
use super::strings::StringTable;
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

/// The event types that are events on the timeline (the others name things).
pub const TIMELINE_TYPES: [i64; 6] = [
    MARK,
    PUSH_POP,
    START_END,
    NVTXT_MARK,
    NVTXT_PUSH_POP,
    NVTXT_START_END,
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
    /// Calls `f` with every timeline NVTX event (ranges and marks), in time order.
    pub fn for_each_nvtx_event<E>(
        &self,
        mut f: impl FnMut(NvtxEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<rusqlite::Error>,
    {
        let s = &self.schema;
        if !self.readable(TABLE, &["start", "eventType", "globalTid"]) {
            return Ok(());
        }
        let c = |col| s.column_or_null(TABLE, col);
        // At most one payload column is set: SQLite picks it, so that the
        // common row without a payload costs two columns instead of six.
        let payloads = PAYLOAD_COLUMNS.map(|(column, _)| c(column));
        let payload_kind = payloads
            .iter()
            .enumerate()
            .map(|(kind, col)| format!("WHEN {col} IS NOT NULL THEN {kind}"))
            .collect::<Vec<_>>()
            .join(" ");
        let columns = [
            c("eventType"),
            c("start"),
            c("end"),
            c("globalTid"),
            c("endGlobalTid"),
            c("domainId"),
            c("text"),
            c("textId"),
            c("category"),
            c("color"),
            format!("CASE {payload_kind} END"),
            format!("COALESCE({})", payloads.join(", ")),
            c("jsonText"),
            c("jsonTextId"),
        ];
        let types: Vec<String> = TIMELINE_TYPES.iter().map(i64::to_string).collect();
        let scan = TableScan {
            table: TABLE.to_owned(),
            time: "start",
            columns: columns.join(", "),
            filter: format!("eventType IN ({})", types.join(", ")),
            decode,
            key,
            prescan: String::new(),
        };
        self.stream(vec![scan], NoPrescan, |item| match item {
            Streamed::Prescanned(()) => Ok(()),
            Streamed::Event(event) => f(event),
        })
    }
}

fn decode<'r>(strings: &'r StringTable, r: &Row<'_>) -> rusqlite::Result<NvtxEvent<'r>> {
    let kind = match r.get::<_, i64>(0)? {
        MARK | NVTXT_MARK => NvtxKind::Mark,
        PUSH_POP | NVTXT_PUSH_POP => NvtxKind::PushPop,
        _ => NvtxKind::StartEnd,
    };
    let gtid: i64 = r.get(3)?;
    let end_gtid: Option<i64> = r.get(4)?;
    let i = |n: usize| r.get::<_, Option<i64>>(n);
    // Column 10 says which payload column is set (an index into
    // PAYLOAD_COLUMNS), column 11 holds its value.
    let payload = match i(10)?.and_then(|kind| PAYLOAD_COLUMNS.get(kind as usize)) {
        Some((_, read)) => read(r.get_ref(11)?),
        None => None,
    };
    let text = match r.get::<_, Option<String>>(6)? {
        Some(t) => Some(TextRef::Inline(t)),
        None => i(7)?
            .and_then(|id| strings.get(id))
            .map(TextRef::Registered),
    };
    Ok(NvtxEvent {
        kind,
        start: r.get(1)?,
        end: if kind == NvtxKind::Mark {
            None
        } else {
            r.get(2)?
        },
        pid: pid_of(gtid),
        tid: tid_of(gtid),
        end_tid: end_gtid.map(tid_of),
        domain: i(5)?.unwrap_or(0),
        text,
        category: i(8)?,
        color: i(9)?.map(|c| c as u32),
        payload,
        json: match r.get::<_, Option<String>>(12)? {
            Some(json) => Some(json),
            None => i(13)?.and_then(|id| strings.get(id)).map(str::to_owned),
        },
    })
}
