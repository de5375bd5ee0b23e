//! Reading event tables in time order without asking SQLite to sort them.
//!
//! nsys writes an event table in time order, or as a few runs in time order
//! (one per process, say). One pre-scan of `start` finds those runs; each run
//! is then read by rowid in batches and the runs are merged on a heap. Memory
//! holds one batch per run in progress, and no sort spills to disk. A table
//! with very many runs is first copied, sorted, into SQLite's temporary store.
//!
//! All this runs on a thread of its own, with a connection of its own, so
//! SQLite's work overlaps with the conversion's.

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

use std::sync::mpsc;

use rusqlite::Connection;

use super::row_filter::RowFilter;
use super::select::{quote, Col, Query, Row, Select};
use super::Report;

/// The order events are written in: by start; at equal starts zero-length first,
/// then the longer (outer) before the shorter (inner).
pub(super) type OrderKey = (i64, bool, Reverse<i64>);

pub(super) fn order_key(start: i64, end: i64) -> OrderKey {
    (start, end > start, Reverse(end))
}

/// Rows decoded per query of a run.
const BATCH: usize = 512;
/// More runs than this and the table is sorted by SQLite instead.
const MAX_RUNS: usize = 4096;

/// Decodes a row of a [`TableScan`] into an event.
type Decode<'r, T> = Box<dyn Fn(&Row) -> rusqlite::Result<T> + Send + 'r>;

/// How to read one table: the columns its events are decoded from (a
/// [`Select`]) and the order they go in.
pub(crate) struct TableScan<'r, T> {
    /// The table's name.
    table: String,
    /// The table, as SQL (quoted).
    from: String,
    /// The column of the rows' times (`start`, or `timestamp` in GPU_METRICS).
    time: &'static str,
    columns: String,
    /// Extra condition on rows (`eventType IN (...)`), or empty.
    filter: String,
    decode: Decode<'r, T>,
    key: fn(&T) -> OrderKey,
    /// What the pre-scan reads (a [`Select`] of its own), or empty.
    prescan: String,
}

impl<'r, T> TableScan<'r, T> {
    /// Reads `select`'s columns of its table, by `start`, decoding each row
    /// with `decode` and ordering events by `key`.
    pub(crate) fn new(
        select: &Select,
        decode: impl Fn(&Row) -> rusqlite::Result<T> + Send + 'r,
        key: fn(&T) -> OrderKey,
    ) -> Self {
        Self {
            table: select.table().to_owned(),
            from: quote(select.table()),
            time: "start",
            columns: select.sql(),
            filter: String::new(),
            decode: Box::new(decode),
            key,
            prescan: String::new(),
        }
    }

    /// Only the rows matching `sql`.
    pub(crate) fn filter(mut self, sql: String) -> Self {
        self.filter = sql;
        self
    }

    /// Times are in `column` instead of `start`.
    pub(crate) fn time(mut self, column: &'static str) -> Self {
        self.time = column;
        self
    }

    /// The pre-scan reads `select` (see [`Prescan::row`]).
    pub(crate) fn prescan(mut self, select: &Select) -> Self {
        self.prescan = select.sql();
        self
    }

    /// The query of a batch of a run: its rows from `?1` to `?2` by rowid,
    /// the rowid last.
    fn batch_sql(&self) -> String {
        let filter = match self.filter.is_empty() {
            true => String::new(),
            false => format!("AND {}", self.filter),
        };
        format!(
            "SELECT {}, _rowid_ FROM {} WHERE _rowid_ BETWEEN ?1 AND ?2 {filter} ORDER BY _rowid_",
            self.columns, self.from
        )
    }
}

impl Report {
    /// `table`'s `Select`, with the columns `declare` takes into it, and
    /// what `declare` makes of them; `None` where the export lacks the
    /// table or a column its rows need (noted, see [`Report::readable`]).
    /// Every reader of a table starts so.
    pub(crate) fn readable_select<T>(
        &self,
        table: &str,
        declare: impl FnOnce(&mut Select) -> T,
    ) -> Option<(Select<'_>, T)> {
        let mut s = self.select(table)?;
        let declared = declare(&mut s);
        self.readable(&s).then_some((s, declared))
    }

    /// The scan of `table`, its rows decoded by the decoder `declare`
    /// makes (taking the columns it reads into the table's `Select`) and
    /// ordered by `key`; `None` where the export lacks the table or a
    /// column its rows need.
    pub(crate) fn scan<'r, T, D>(
        &'r self,
        table: &str,
        declare: impl FnOnce(&mut Select) -> D,
        key: fn(&T) -> OrderKey,
    ) -> Option<TableScan<'r, T>>
    where
        D: Fn(&Row) -> rusqlite::Result<T> + Send + 'r,
    {
        let (s, decode) = self.readable_select(table, declare)?;
        Some(TableScan::new(&s, decode, key))
    }

    /// Calls the handler `declare` makes (taking the columns it reads into
    /// the table's `Select`) with each row of `table` that matches `filter`
    /// (SQL; empty for all), in table order; nothing where the export lacks
    /// the table or a column its rows need.
    pub(crate) fn each_row<F>(
        &self,
        table: &str,
        filter: &str,
        declare: impl FnOnce(&mut Select) -> F,
    ) -> rusqlite::Result<()>
    where
        F: FnMut(&Row) -> rusqlite::Result<()>,
    {
        match self.readable_select(table, declare) {
            Some((s, each)) => self.each_selected(&s, filter, each),
            None => Ok(()),
        }
    }
}

/// Rows `from..=to` by rowid, in which `start` never decreases.
#[derive(Clone, Copy, Debug)]
struct Run {
    from: i64,
    to: i64,
    first_start: i64,
}

/// A connection of its own.
pub(crate) struct Reader {
    conn: Connection,
}

impl Reader {
    /// Finds the sorted runs of a table, calling `visit` with each row of
    /// `SELECT rowid, start <prescan>`: one pass serves other counts too.
    fn runs<T>(
        &self,
        scan: &TableScan<'_, T>,
        visit: &mut dyn FnMut(&Row) -> rusqlite::Result<()>,
    ) -> rusqlite::Result<Vec<Run>> {
        // The pre-scan's own columns come first, where its `Col`s point.
        let prescan = match scan.prescan.is_empty() {
            true => String::new(),
            false => format!("{}, ", scan.prescan),
        };
        let sql = format!(
            "SELECT {prescan}_rowid_, {} FROM {} {} ORDER BY _rowid_",
            quote(scan.time),
            scan.from,
            where_clause(&scan.filter)
        );
        let mut query = Query::prepare(&self.conn, &sql)?;
        let rowid: Col<i64> = Col::at(query.column_count() - 2);
        let start: Col<i64> = Col::at(query.column_count() - 1);
        query.run(&[])?;
        let mut runs: Vec<Run> = Vec::new();
        let mut previous = i64::MIN;
        while let Some(row) = query.next()? {
            let (rowid, start) = (rowid.get(&row)?, start.get(&row)?);
            match runs.last_mut() {
                Some(run) if start >= previous => run.to = rowid,
                _ => runs.push(Run {
                    from: rowid,
                    to: rowid,
                    first_start: start,
                }),
            }
            previous = start;
            visit(&row)?;
        }
        Ok(runs)
    }

    /// Calls `f` with every row of `scans`, decoded, in [`OrderKey`] order.
    /// First each table is pre-scanned in the order given, and `visit` sees
    /// each row of its pre-scan (with the index of its scan); then `prescanned`
    /// is called, then `f` with each row. Returns the rows read of each scan.
    pub(crate) fn merge_in_time_order<T, E: From<rusqlite::Error>>(
        &self,
        mut scans: Vec<TableScan<'_, T>>,
        visit: &mut dyn FnMut(usize, &Row) -> rusqlite::Result<()>,
        prescanned: impl FnOnce() -> Result<(), E>,
        mut f: impl FnMut(T) -> Result<(), E>,
    ) -> Result<Vec<u64>, E> {
        let mut read = vec![0u64; scans.len()];
        let mut runs: Vec<(usize, Run)> = Vec::new();
        for (i, scan) in scans.iter_mut().enumerate() {
            let mut found = self.runs(scan, &mut |row| visit(i, row))?;
            if found.len() > MAX_RUNS {
                scan.from = self.sorted_copy(&scan.from, scan.time, &scan.filter, i)?;
                scan.filter.clear();
                scan.prescan.clear();
                found = self.runs(scan, &mut |_| Ok(()))?;
            }
            runs.extend(found.into_iter().map(|run| (i, run)));
        }
        prescanned()?;
        let mut queries = scans
            .iter()
            .map(|scan| Query::prepare(&self.conn, &scan.batch_sql()))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        // Runs open when the merge reaches their first start.
        runs.sort_by_key(|(_, run)| Reverse(run.first_start));
        let mut sources: Vec<Source<T>> = Vec::new();
        let mut heads: BinaryHeap<Reverse<(OrderKey, usize)>> = BinaryHeap::new();
        loop {
            while let Some(&(table, run)) = runs.last() {
                let due = heads
                    .peek()
                    .is_none_or(|Reverse((key, _))| run.first_start <= key.0);
                if !due {
                    break;
                }
                runs.pop();
                let mut source = Source {
                    table,
                    next: run.from,
                    to: run.to,
                    rows: VecDeque::new(),
                };
                source.refill(&mut queries[table], &scans[table])?;
                if let Some((key, _)) = source.rows.front() {
                    heads.push(Reverse((*key, sources.len())));
                }
                sources.push(source);
            }
            // The head is replaced in place by its source's next row: one
            // sift down instead of a pop and a push.
            let Some(mut head) = heads.peek_mut() else {
                return Ok(read);
            };
            let Reverse((_, i)) = *head;
            let source = &mut sources[i];
            read[source.table] += 1;
            let (_, event) = source.rows.pop_front().expect("a head has a row");
            if source.rows.is_empty() {
                source.refill(&mut queries[source.table], &scans[source.table])?;
            }
            match source.rows.front() {
                Some((key, _)) => *head = Reverse((*key, i)),
                None => {
                    PeekMut::pop(head);
                    // Done: let its batch buffer go.
                    source.rows = VecDeque::new();
                }
            }
            f(event)?;
        }
    }

    /// The rows of `from` (a quoted table) that match `filter`.
    fn count(&self, from: &str, filter: &str) -> rusqlite::Result<u64> {
        let sql = format!("SELECT COUNT(*) FROM {from} {}", where_clause(filter));
        self.conn
            .query_row(&sql, [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
    }

    /// Copies the rows of `from` (a quoted table), sorted by time, into a
    /// temporary table. A reader's `rowid` there is still the source's (a
    /// column of that name, which SQLite reads before the copy's own): the
    /// runs walk the copy by `_rowid_`, its sorted order.
    fn sorted_copy(
        &self,
        from: &str,
        time: &str,
        filter: &str,
        n: usize,
    ) -> rusqlite::Result<String> {
        let copy = format!("temp.sorted_{n}");
        let where_ = where_clause(filter);
        let time = quote(time);
        self.conn.execute_batch(&format!(
            "DROP TABLE IF EXISTS {copy}; \
             CREATE TABLE {copy} AS SELECT rowid AS rowid, * FROM {from} {where_} ORDER BY {time};"
        ))?;
        Ok(copy)
    }
}

fn where_clause(filter: &str) -> String {
    if filter.is_empty() {
        String::new()
    } else {
        format!("WHERE {filter}")
    }
}

/// A run being read: the rows of its current batch, in order.
struct Source<T> {
    table: usize,
    next: i64,
    to: i64,
    rows: VecDeque<(OrderKey, T)>,
}

impl<T> Source<T> {
    /// Reads the next batch. A batch ends between two starts, so rows that
    /// share a start are sorted together.
    fn refill(&mut self, query: &mut Query, scan: &TableScan<'_, T>) -> rusqlite::Result<()> {
        if self.next > self.to {
            return Ok(());
        }
        query.run(&[self.next, self.to])?;
        let rowid: Col<i64> = Col::at(query.column_count() - 1);
        let mut last_start = None;
        self.next = self.to + 1;
        while let Some(row) = query.next()? {
            let event = (scan.decode)(&row)?;
            let key = (scan.key)(&event);
            if self.rows.len() >= BATCH && last_start != Some(key.0) {
                // This row starts the next batch (and is read again then).
                self.next = rowid.get(&row)?;
                break;
            }
            last_start = Some(key.0);
            self.rows.push_back((key, event));
        }
        self.rows.make_contiguous().sort_by_key(|(key, _)| *key);
        Ok(())
    }
}

/// What a stream's reader does besides decoding: it sees each pre-scan row,
/// then may complete each event before sending it (with what it saw).
pub(crate) trait Prescan<T>: Send {
    /// What the pre-scan learnt, for the converting thread before any event.
    type Summary: Send;
    fn row(&mut self, scan: usize, row: &Row) -> rusqlite::Result<()>;
    fn summary(&mut self) -> Self::Summary;
    fn complete(&self, event: &mut T);
}

/// What a stream delivers: first the pre-scan's summary, then every event.
pub(crate) enum Streamed<T, S> {
    Prescanned(S),
    Event(T),
}

enum Message<T, S> {
    Prescanned(S),
    Events(Vec<T>),
}

/// No pre-scan work.
pub(crate) struct NoPrescan;

impl<T> Prescan<T> for NoPrescan {
    type Summary = ();

    fn row(&mut self, _: usize, _: &Row) -> rusqlite::Result<()> {
        Ok(())
    }

    fn summary(&mut self) {}

    fn complete(&self, _: &mut T) {}
}

/// Events sent to the converting thread at a time.
const SEND: usize = 256;

/// Why the reader stopped early.
enum Stop {
    Read(rusqlite::Error),
    /// The receiving side is gone (it failed, and says why itself).
    Receiver,
}

impl From<rusqlite::Error> for Stop {
    fn from(e: rusqlite::Error) -> Self {
        Stop::Read(e)
    }
}

impl Report {
    /// Reads the rows of `scans` that `filter` keeps in time order on a
    /// reader thread, and calls `f` here with each event; counts the rows
    /// the filter left out into it.
    pub(crate) fn stream<'r, T, P, E>(
        &'r self,
        scans: Vec<TableScan<'r, T>>,
        prescan: P,
        filter: &RowFilter,
        mut f: impl FnMut(Streamed<T, P::Summary>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        T: Send,
        P: Prescan<T>,
        E: From<rusqlite::Error>,
    {
        let uri = &self.uri;
        let cancel = self.cancel.as_ref();
        let mut scans = scans;
        let filtered = self.apply_filter(filter, &mut scans);
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::sync_channel::<Message<T, P::Summary>>(8);
            let reader = scope.spawn(move || -> Result<(), Stop> {
                let reader = Reader {
                    conn: open_read_only(uri)?,
                };
                super::watch(&reader.conn, cancel);
                let prescan = std::cell::RefCell::new(prescan);
                let mut batch = Vec::with_capacity(SEND);
                let read = reader.merge_in_time_order(
                    scans,
                    &mut |scan, row| prescan.borrow_mut().row(scan, row),
                    || {
                        let summary = prescan.borrow_mut().summary();
                        tx.send(Message::Prescanned(summary))
                            .map_err(|_| Stop::Receiver)
                    },
                    |mut event| {
                        prescan.borrow().complete(&mut event);
                        batch.push(event);
                        if batch.len() == SEND {
                            let full = std::mem::replace(&mut batch, Vec::with_capacity(SEND));
                            tx.send(Message::Events(full)).map_err(|_| Stop::Receiver)?;
                        }
                        Ok::<(), Stop>(())
                    },
                )?;
                if !batch.is_empty() {
                    tx.send(Message::Events(batch))
                        .map_err(|_| Stop::Receiver)?;
                }
                for (f, read) in filtered.iter().zip(read) {
                    if let Some(f) = f {
                        let rows = reader.count(&f.from, &f.unfiltered)?;
                        filter.note_left_out(&f.table, rows.saturating_sub(read));
                    }
                }
                Ok(())
            });
            let mut converted = Ok(());
            'messages: for message in rx {
                match message {
                    Message::Prescanned(summary) => {
                        if let Err(e) = f(Streamed::Prescanned(summary)) {
                            converted = Err(e);
                            break 'messages;
                        }
                    }
                    Message::Events(events) => {
                        for event in events {
                            if let Err(e) = f(Streamed::Event(event)) {
                                converted = Err(e);
                                break 'messages;
                            }
                        }
                    }
                }
            }
            let read = crate::worker::outcome(reader.join());
            converted?;
            match read {
                Ok(()) | Err(Stop::Receiver) => Ok(()),
                Err(Stop::Read(e)) => Err(E::from(e)),
            }
        })
    }
}

/// A scan that the conversion's filter narrowed: what it read before.
struct Narrowed {
    table: String,
    from: String,
    /// The scan's own condition, without the filter's.
    unfiltered: String,
}

impl Report {
    /// Adds the filter's conditions to `scans`; says, by scan, what each
    /// narrowed scan would read without them.
    fn apply_filter<T>(
        &self,
        filter: &RowFilter,
        scans: &mut [TableScan<'_, T>],
    ) -> Vec<Option<Narrowed>> {
        scans
            .iter_mut()
            .map(|scan| {
                let sql = filter.sql(self, &scan.table, scan.time);
                if sql.is_empty() {
                    return None;
                }
                let unfiltered = std::mem::take(&mut scan.filter);
                scan.filter = match unfiltered.is_empty() {
                    true => sql,
                    false => format!("({unfiltered}) AND {sql}"),
                };
                Some(Narrowed {
                    table: scan.table.clone(),
                    from: scan.from.clone(),
                    unfiltered,
                })
            })
            .collect()
    }

    /// Reads the rows of `scans` that `filter` keeps in time order on a
    /// reader thread and calls `f` here with each event: [`Report::stream`]
    /// without a pre-scan.
    pub(crate) fn stream_events<'r, T: Send, E: From<rusqlite::Error>>(
        &'r self,
        scans: Vec<TableScan<'r, T>>,
        filter: &RowFilter,
        mut f: impl FnMut(T) -> Result<(), E>,
    ) -> Result<(), E> {
        if scans.is_empty() {
            return Ok(());
        }
        self.stream(scans, NoPrescan, filter, |item| match item {
            Streamed::Prescanned(()) => Ok(()),
            Streamed::Event(event) => f(event),
        })
    }
}

/// A read-only connection to the export at `uri` (see `sqlite_uri`).
pub(crate) fn open_read_only(uri: &str) -> rusqlite::Result<Connection> {
    use rusqlite::OpenFlags;
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // Scans read each page once, in order: a page cache of SQLite's default
    // 2 MiB per connection holds pages never read again. 512 KiB keeps the
    // B-trees' upper levels, which every step goes through.
    conn.pragma_update(None, "cache_size", -512)?;
    Ok(conn)
}
