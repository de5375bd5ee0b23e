//! NVTX events (`NVTX_EVENTS`), in time order.

use rusqlite::types::ValueRef;

use super::columns::{columns, TakeAll, Taken};
use super::ids::{pid_of, tid_of};
use super::row_filter::RowFilter;
use super::scan::{order_key, OrderKey, Prescan, Streamed, TableScan};
use super::select::{any_of, quote, Col, Row, Select};
use super::Report;

pub(crate) const TABLE: &str = "NVTX_EVENTS";

columns! {
    /// The columns of [`TABLE`]: every row is of a thread, and of a type
    /// that says what else it has.
    pub(crate) struct NvtxColumns = NVTX {
        event_type: i64 = required("eventType"),
        start: i64 = required("start"),
        end: Option<i64> = expected("end"),
        global_tid: i64 = required("globalTid"),
        end_global_tid: Option<i64> = optional("endGlobalTid"),
        domain_id: Option<i64> = expected("domainId"),
        text: Option<String> = expected("text"),
        text_id: Option<i64> = expected("textId"),
        category: Option<i64> = optional("category"),
        color: Option<i64> = optional("color"),
        uint64_value: Option<()> = optional("uint64Value"),
        int64_value: Option<()> = optional("int64Value"),
        double_value: Option<()> = optional("doubleValue"),
        uint32_value: Option<()> = optional("uint32Value"),
        int32_value: Option<()> = optional("int32Value"),
        float_value: Option<()> = optional("floatValue"),
        json_text: Option<String> = optional("jsonText"),
        json_text_id: Option<i64> = optional("jsonTextId"),
    }
}

// eventType values (ENUM_NSYS_EVENT_TYPE).
pub(crate) const CATEGORY: i64 = 33;
pub(crate) const MARK: i64 = 34;
pub(crate) const THREAD_NAME: i64 = 39;
pub(crate) const PUSH_POP: i64 = 59;
pub(crate) const START_END: i64 = 60;
pub(crate) const NVTXT_MARK: i64 = 65;
pub(crate) const NVTXT_PUSH_POP: i64 = 70;
pub(crate) const NVTXT_START_END: i64 = 71;
pub(crate) const DOMAIN_CREATE: i64 = 75;

/// The event types that are events on the timeline (the others name
/// things); the commonest first, as SQL tests them in this order.
pub(crate) const TIMELINE_TYPES: [i64; 6] = [
    PUSH_POP,
    START_END,
    MARK,
    NVTXT_PUSH_POP,
    NVTXT_START_END,
    NVTXT_MARK,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NvtxKind {
    Mark,
    /// Nests per thread.
    PushPop,
    /// May overlap other ranges and end on another thread.
    StartEnd,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Payload {
    Int(i64),
    Uint(u64),
    Double(f64),
}

pub(crate) struct NvtxEvent<'r> {
    /// Its row's id in the export: nsys's reports name ranges by it.
    pub rowid: i64,
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

pub(crate) enum TextRef<'r> {
    /// Inline in the row, and short: copied into the event.
    Short(ShortText),
    Inline(String),
    Registered(&'r str),
}

impl TextRef<'_> {
    /// A message inline in the row: copied into the event where it is
    /// short, allocated otherwise.
    fn copied(text: &str) -> Self {
        match ShortText::new(text) {
            Some(short) => TextRef::Short(short),
            None => TextRef::Inline(text.to_owned()),
        }
    }

    pub(crate) fn as_str(&self) -> &str {
        match self {
            TextRef::Short(s) => s.as_str(),
            TextRef::Inline(s) => s,
            TextRef::Registered(s) => s,
        }
    }
}

/// The longest message a [`ShortText`] holds.
const SHORT: usize = 62;

/// A message of at most [`SHORT`] bytes, held in the event itself. PyTorch
/// names each range inline (`aten::mm, seq = 1234, op_id = 56789`), nearly
/// every name distinct: a `String` each was an allocation on the reader's
/// thread and a free on the converter's, per range.
#[derive(Clone, Copy)]
pub(crate) struct ShortText {
    len: u8,
    bytes: [u8; SHORT],
}

impl ShortText {
    fn new(text: &str) -> Option<Self> {
        let mut bytes = [0; SHORT];
        bytes
            .get_mut(..text.len())?
            .copy_from_slice(text.as_bytes());
        Some(Self {
            len: text.len() as u8,
            bytes,
        })
    }

    fn as_str(&self) -> &str {
        let bytes = &self.bytes[..usize::from(self.len)];
        // SAFETY: the bytes are a copy of a `&str`'s, whole (see `new`).
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }
}

/// How a payload column's value reads.
type ReadPayload = fn(ValueRef) -> Option<Payload>;

/// The payload columns of `c`, of which at most one is set, each with how
/// its value reads.
fn payload_columns(c: &NvtxColumns<Taken>) -> [(Col<Option<()>>, ReadPayload); 6] {
    [
        (c.uint64_value, |v| int(v).map(|v| Payload::Uint(v as u64))),
        (c.int64_value, |v| int(v).map(Payload::Int)),
        (c.double_value, real),
        (c.uint32_value, |v| {
            int(v).map(|v| Payload::Uint(u64::from(v as u32)))
        }),
        (c.int32_value, |v| {
            int(v).map(|v| Payload::Int(i64::from(v as i32)))
        }),
        (c.float_value, real),
    ]
}

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
        filter: &RowFilter,
        f: impl FnMut(NvtxEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<rusqlite::Error>,
    {
        self.nvtx_events_to_last_time(filter, f).map(drop)
    }

    /// [`for_each_nvtx_event`](Self::for_each_nvtx_event), then returns
    /// [`nvtx_last_time`](Self::nvtx_last_time): from the rows the stream's
    /// pre-scan reads anyway and the metadata's, where those are all the
    /// rows (no filter narrows the read), instead of a scan of its own.
    pub(crate) fn nvtx_events_to_last_time<E>(
        &self,
        filter: &RowFilter,
        mut f: impl FnMut(NvtxEvent<'_>) -> Result<(), E>,
    ) -> Result<Option<i64>, E>
    where
        E: From<rusqlite::Error>,
    {
        let Some(mut s) = self.select(TABLE) else {
            return Ok(self.nvtx_last_time()?);
        };
        let c = NVTX.take_all(&mut s);
        let rowid = s.expr::<i64>("rowid".to_owned());
        // At most one payload column is set; the first that is, is read.
        // (Read as they are, the six cost less than SQLite choosing one:
        // that reads each twice, for a CASE and a COALESCE.)
        let payloads = payload_columns(&c);
        if !self.readable(&s) {
            return Ok(self.nvtx_last_time()?);
        }
        let strings = &self.strings;
        let decode = move |r: &Row| {
            let kind = match c.event_type.get(r)? {
                MARK | NVTXT_MARK => NvtxKind::Mark,
                PUSH_POP | NVTXT_PUSH_POP => NvtxKind::PushPop,
                _ => NvtxKind::StartEnd,
            };
            let gtid = c.global_tid.get(r)?;
            let mut payload = None;
            for (column, read) in payloads {
                let value = column.raw(r)?;
                if value != ValueRef::Null {
                    payload = read(value);
                    break;
                }
            }
            let text = match c.text.raw(r)? {
                ValueRef::Null => strings.lookup(c.text_id.get(r)?).map(TextRef::Registered),
                ValueRef::Text(t) => match std::str::from_utf8(t) {
                    Ok(t) => Some(TextRef::copied(t)),
                    // The error reading it as a `String` gives.
                    Err(_) => c.text.get(r)?.map(TextRef::Inline),
                },
                _ => c.text.get(r)?.map(TextRef::Inline),
            };
            Ok(NvtxEvent {
                rowid: rowid.get(r)?,
                kind,
                start: c.start.get(r)?,
                end: match kind {
                    NvtxKind::Mark => None,
                    _ => c.end.get(r)?,
                },
                pid: pid_of(gtid),
                tid: tid_of(gtid),
                end_tid: c.end_global_tid.get(r)?.map(tid_of),
                domain: c.domain_id.get(r)?.unwrap_or(0),
                text,
                category: c.category.get(r)?,
                color: c.color.get(r)?.map(|color| color as u32),
                payload,
                json: match c.json_text.get(r)? {
                    Some(json) => Some(json),
                    None => strings.lookup(c.json_text_id.get(r)?).map(str::to_owned),
                },
            })
        };
        let mut times = Select::new(&self.schema, TABLE);
        let last = LastTime {
            start: times.take(NVTX.start),
            end: times.take(NVTX.end),
            last: None,
        };
        let scan = TableScan::new(&s, decode, key)
            .filter(any_of("eventType", &TIMELINE_TYPES))
            .prescan(&times);
        let mut timeline_last = None;
        self.stream(vec![scan], last, filter, |item| match item {
            Streamed::Prescanned(last) => {
                timeline_last = last;
                Ok(())
            }
            Streamed::Event(event) => f(event),
        })?;
        match filter.filter() {
            // The pre-scan saw only the rows the filter keeps.
            Some(_) => Ok(self.nvtx_last_time()?),
            None => Ok(timeline_last.max(self.meta.nvtx_names_last_time)),
        }
    }

    /// Calls `f` with each NVTX range (push/pop or start/end) begun and
    /// ended on one thread that may enclose a CUDA API call `filter` keeps:
    /// of its processes, begun before the end of its time window. Ranges
    /// that end before the window begins are read too, since a call begun
    /// in one may last into it. Not counted as left out: the NVTX stream
    /// reads (and counts) the NVTX events.
    pub(crate) fn for_each_thread_range<E: From<rusqlite::Error>>(
        &self,
        filter: &RowFilter,
        mut f: impl FnMut(ThreadRange<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(mut s) = self.select(TABLE) else {
            return Ok(());
        };
        let c = RangeCols::take(&mut s);
        if !self.readable(&s) {
            return Ok(());
        }
        let ranges = [PUSH_POP, START_END, NVTXT_PUSH_POP, NVTXT_START_END];
        let mut all = vec![any_of("eventType", &ranges)];
        if s.has(NVTX.end_global_tid.name()) {
            // Ranges that end on another thread enclose no call of one thread.
            all.push("(\"endGlobalTid\" IS NULL OR \"endGlobalTid\" = \"globalTid\")".into());
        }
        all.extend(filter.thread_range_sql());
        let sql = format!(
            "SELECT {} FROM {} WHERE {}",
            s.sql(),
            quote(TABLE),
            all.join(" AND ")
        );
        self.each_row_apart(&sql, |r| {
            let gtid = c.global_tid.get(r)?;
            let text = match c.text.raw(r)? {
                ValueRef::Text(t) => std::str::from_utf8(t).ok(),
                _ => self.strings.lookup(c.text_id.get(r)?),
            };
            f(ThreadRange {
                pid: pid_of(gtid),
                tid: tid_of(gtid),
                start: c.start.get(r)?,
                end: c.end.get(r)?,
                domain: c.domain_id.get(r)?.unwrap_or(0),
                text,
            })
        })
    }
}

/// What the readers of NVTX ranges (as ranges, not as timeline events) read
/// of each: their type, times, thread, domain and message.
#[derive(Clone, Copy)]
pub(crate) struct RangeCols {
    pub event_type: Col<i64>,
    pub start: Col<i64>,
    pub end: Col<Option<i64>>,
    pub global_tid: Col<i64>,
    pub domain_id: Col<Option<i64>>,
    pub text: Col<Option<String>>,
    pub text_id: Col<Option<i64>>,
}

impl RangeCols {
    pub(crate) fn take(s: &mut Select) -> Self {
        Self {
            event_type: s.take(NVTX.event_type),
            start: s.take(NVTX.start),
            end: s.take(NVTX.end),
            global_tid: s.take(NVTX.global_tid),
            domain_id: s.take(NVTX.domain_id),
            text: s.take(NVTX.text),
            text_id: s.take(NVTX.text_id),
        }
    }
}

/// An NVTX range begun and ended on one thread, as
/// `Report::for_each_thread_range` reads it.
pub(crate) struct ThreadRange<'a> {
    pub pid: u32,
    pub tid: u32,
    pub start: i64,
    /// `None` for a range that never ended.
    pub end: Option<i64>,
    /// 0 for NVTX's default domain.
    pub domain: i64,
    /// The message, inline or registered.
    pub text: Option<&'a str>,
}

/// The pre-scan of the timeline rows: their latest start or end.
struct LastTime {
    start: Col<i64>,
    end: Col<Option<i64>>,
    last: Option<i64>,
}

impl<T> Prescan<T> for LastTime {
    type Summary = Option<i64>;

    fn row(&mut self, _: usize, row: &Row) -> rusqlite::Result<()> {
        let last = Some(self.start.get(row)?).max(self.end.get(row)?);
        self.last = self.last.max(last);
        Ok(())
    }

    fn summary(&mut self) -> Option<i64> {
        self.last
    }

    fn complete(&self, _: &mut T) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table too far from time order to merge is read from a sorted
    /// temporary copy: each event still has its row's id in the export,
    /// by which nsys's reports name ranges.
    #[test]
    fn events_keep_their_export_rowid_when_read_from_a_sorted_copy() {
        let uri = "file:nvtx-rowids-of-a-sorted-copy?mode=memory&cache=shared";
        let db = rusqlite::Connection::open(uri).unwrap();
        db.execute_batch(
            "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
             CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER,
                 globalTid INTEGER, text TEXT);",
        )
        .unwrap();
        // Starts falling row by row: every row a run of its own, far more
        // than the merge takes.
        let rows = 10_000i64;
        let mut insert = db
            .prepare("INSERT INTO NVTX_EVENTS VALUES (?1, ?2, 59, 281479271677994, 'r')")
            .unwrap();
        for i in 0..rows {
            let start = (rows - i) * 10;
            insert.execute([start, start + 5]).unwrap();
        }
        drop(insert);
        let report = Report::open_uri(uri).unwrap();
        let mut seen = 0;
        let mut previous = i64::MIN;
        report
            .for_each_nvtx_event(&RowFilter::none(), |e| -> rusqlite::Result<()> {
                assert!(e.start >= previous, "time order");
                previous = e.start;
                assert_eq!(e.start, (rows - (e.rowid - 1)) * 10, "row {}", e.rowid);
                seen += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, rows);
    }
}
