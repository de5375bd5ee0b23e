//! How NVTX ranges travel to the projector: from the thread that reads them
//! to the thread that reads the CUDA stream, in batches, in start order. Only
//! a few batches wait between the two, so memory holds the ranges open at the
//! CUDA stream's time, not all of them. Most ranges never contain a launch,
//! so a range costs little on the way: a named range's name is a slice of its
//! batch's one buffer of names, freed once the batch's last range is done.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::{Arc, OnceLock};

use super::Range;

/// Ranges sent per message.
pub(super) const BATCH: usize = 1024;

/// Messages waiting between the two threads, at most.
const WAITING: usize = 4;

/// A range's name, in the buffer of names of the batch it came in.
pub(crate) struct Name {
    /// Set when the batch is sent, before the receiving side sees the range.
    names: Arc<OnceLock<String>>,
    at: std::ops::Range<usize>,
    /// A range a filter left out, projected only to be counted.
    left_out: bool,
}

impl Name {
    pub(crate) fn as_str(&self) -> &str {
        let names = self.names.get().expect("a batch's names go with it");
        &names[self.at.clone()]
    }

    /// Whether the range was sent by [`RangeFeed::send_left_out`].
    pub(crate) fn is_left_out(&self) -> bool {
        self.left_out
    }
}

enum Message<T> {
    Ranges(Vec<Range<T>>),
    /// No more ranges; open ones end at this time (the last NVTX time), if
    /// the feed saw one.
    End(Option<u64>),
}

/// A connected feed and source.
pub(crate) fn channel<T>() -> (RangeFeed<T>, RangeSource<T>) {
    let (tx, rx) = mpsc::sync_channel(WAITING);
    (
        RangeFeed {
            tx: Some(tx),
            batch: Vec::with_capacity(BATCH),
            names: String::new(),
            batch_names: Arc::default(),
            last: None,
        },
        RangeSource {
            rx: Some(rx),
            queue: VecDeque::new(),
            ended: false,
            last: None,
        },
    )
}

/// The sending end: the thread that reads the NVTX ranges.
pub(crate) struct RangeFeed<T> {
    tx: Option<SyncSender<Message<T>>>,
    batch: Vec<Range<T>>,
    /// The names of the batch's named ranges, one after the other.
    names: String,
    /// Where the names of the batch's named ranges will be, once it is sent.
    batch_names: Arc<OnceLock<String>>,
    last: Option<u64>,
}

impl<T> RangeFeed<T> {
    /// Notes the time of an NVTX event: open ranges end at the last.
    pub(crate) fn saw(&mut self, t: u64) {
        self.last = Some(self.last.map_or(t, |last| last.max(t)));
    }

    /// The next range; ranges come in start order.
    pub(crate) fn send(&mut self, range: Range<T>) {
        self.batch.push(range);
        if self.batch.len() == BATCH {
            self.send_batch();
        }
    }

    /// No more ranges: the receiving side learns where open ranges end.
    pub(crate) fn finish(mut self) {
        self.send_batch();
        let last = self.last;
        self.deliver(Message::End(last));
    }

    fn send_batch(&mut self) {
        let names = std::mem::take(&mut self.names);
        let batch_names = std::mem::take(&mut self.batch_names);
        batch_names
            .set(names)
            .expect("each batch's names are set once");
        if self.batch.is_empty() {
            return;
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        self.deliver(Message::Ranges(batch));
    }

    fn deliver(&mut self, message: Message<T>) {
        // A closed receiver means the projecting side needs no more: send no more.
        if let Some(tx) = &self.tx {
            if tx.send(message).is_err() {
                self.tx = None;
            }
        }
    }
}

impl RangeFeed<Name> {
    /// A range of thread (pid, tid) from `start` to `end` (`None`: never
    /// ended), named `name`. Ranges come in start order.
    pub(crate) fn send_named(
        &mut self,
        start: u64,
        end: Option<u64>,
        (pid, tid): (u32, u32),
        name: &str,
    ) {
        let at = self.names.len();
        self.names.push_str(name);
        let at = at..self.names.len();
        self.send_range(start, end, (pid, tid), at, false);
    }

    /// A range of thread (pid, tid) that a filter left out: it is projected
    /// as the others are, so that its projection can be counted as left out
    /// too, and has no name.
    pub(crate) fn send_left_out(&mut self, start: u64, end: Option<u64>, (pid, tid): (u32, u32)) {
        self.send_range(start, end, (pid, tid), 0..0, true);
    }

    /// A range whose name is at `at` in the batch's names.
    fn send_range(
        &mut self,
        start: u64,
        end: Option<u64>,
        (pid, tid): (u32, u32),
        at: std::ops::Range<usize>,
        left_out: bool,
    ) {
        let data = Name {
            names: Arc::clone(&self.batch_names),
            at,
            left_out,
        };
        self.send(Range {
            start,
            end,
            pid,
            tid,
            data,
        });
    }
}

/// The receiving end: the thread that reads the CUDA stream.
pub(crate) struct RangeSource<T> {
    rx: Option<Receiver<Message<T>>>,
    queue: VecDeque<Range<T>>,
    /// The feed has ended (or stopped early: it says why itself).
    ended: bool,
    /// Where open ranges end, once the feed has ended saying so.
    last: Option<u64>,
}

impl<T> RangeSource<T> {
    /// The next range if it starts at or before `t`, waiting for the feed
    /// while none is at hand.
    pub(crate) fn next_until(&mut self, t: u64) -> Option<Range<T>> {
        while self.queue.is_empty() && !self.ended {
            match self.rx.as_ref().map(Receiver::recv) {
                Some(Ok(Message::Ranges(batch))) => self.queue.extend(batch),
                Some(Ok(Message::End(last))) => {
                    self.ended = true;
                    self.last = last;
                }
                Some(Err(_)) | None => self.ended = true,
            }
        }
        if self.queue.front()?.start > t {
            return None;
        }
        self.queue.pop_front()
    }

    /// Where open ranges end, once the feed has ended saying so.
    pub(crate) fn last(&self) -> Option<u64> {
        self.last
    }

    /// Stops listening: the feed's sends fail, and it stops sending.
    pub(crate) fn close(&mut self) {
        self.rx = None;
        self.queue.clear();
        self.ended = true;
    }
}
