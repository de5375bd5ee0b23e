//! How NVTX ranges travel from the NVTX thread to the projector on the CUDA
//! thread: in batches, in start order. Most ranges never contain a launch, so
//! a range costs little on the way: its name is a slice of its batch's one
//! buffer of names, and the buffer is freed once the batch's last range is done.

use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;

use crate::projection::Range;

/// A range's name, in the buffer of names of the batch it came in.
pub(super) struct Name {
    names: Arc<String>,
    at: std::ops::Range<usize>,
}

impl Name {
    pub fn as_str(&self) -> &str {
        &self.names[self.at.clone()]
    }
}

/// A range as it is sent: its name is `names[name]` of its batch.
struct Sent {
    start: u64,
    end: Option<u64>,
    pid: u32,
    tid: u32,
    name: std::ops::Range<usize>,
}

enum Message {
    Ranges(Vec<Sent>, Arc<String>),
    /// No more ranges; open ones end at this time (the last NVTX time).
    End(u64),
}

/// Ranges sent per message.
const BATCH: usize = 1024;

/// A connected feed and source.
pub fn channel() -> (RangeFeed, RangeSource) {
    let (tx, rx) = mpsc::sync_channel(4);
    (
        RangeFeed {
            tx: Some(tx),
            batch: Vec::with_capacity(BATCH),
            names: String::new(),
            last: 0,
        },
        RangeSource {
            rx: Some(rx),
            queue: VecDeque::new(),
            names: Arc::default(),
            end: None,
        },
    )
}

/// The NVTX thread's end.
pub struct RangeFeed {
    tx: Option<SyncSender<Message>>,
    batch: Vec<Sent>,
    names: String,
    last: u64,
}

impl RangeFeed {
    /// Notes the time of any NVTX event: open ranges end at the last.
    pub fn saw(&mut self, t: u64) {
        self.last = self.last.max(t);
    }

    /// A range of thread (pid, tid) from `start` to `end` (`None`: never ended).
    /// Ranges come in start order.
    pub fn push(&mut self, start: u64, end: Option<u64>, (pid, tid): (u32, u32), name: &str) {
        let at = self.names.len();
        self.names.push_str(name);
        self.batch.push(Sent {
            start,
            end,
            pid,
            tid,
            name: at..self.names.len(),
        });
        if self.batch.len() == BATCH {
            self.send_batch();
        }
    }

    pub fn finish(mut self) {
        self.send_batch();
        self.send(Message::End(self.last));
    }

    fn send_batch(&mut self) {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        let names = std::mem::take(&mut self.names);
        self.send(Message::Ranges(batch, Arc::new(names)));
    }

    fn send(&mut self, message: Message) {
        // A closed receiver means the CUDA side needs no more: stop sending.
        if let Some(tx) = &self.tx {
            if tx.send(message).is_err() {
                self.tx = None;
            }
        }
    }
}

/// The CUDA thread's end of the feed.
pub struct RangeSource {
    rx: Option<Receiver<Message>>,
    queue: VecDeque<Sent>,
    /// The names of the ranges in `queue`.
    names: Arc<String>,
    /// Set once the feed has ended: the time open ranges end at.
    end: Option<u64>,
}

impl RangeSource {
    /// The next range if it starts at or before `t`.
    pub(super) fn next_until(&mut self, t: u64) -> Option<Range<Name>> {
        while self.queue.is_empty() && self.end.is_none() {
            match self.rx.as_ref().map(Receiver::recv) {
                Some(Ok(Message::Ranges(batch, names))) => {
                    self.queue.extend(batch);
                    self.names = names;
                }
                Some(Ok(Message::End(last))) => self.end = Some(last),
                // The NVTX side stopped early (it failed, and says why itself).
                Some(Err(_)) | None => self.end = Some(u64::MAX),
            }
        }
        if self.queue.front()?.start > t {
            return None;
        }
        let sent = self.queue.pop_front()?;
        Some(Range {
            start: sent.start,
            end: sent.end,
            pid: sent.pid,
            tid: sent.tid,
            data: Name {
                names: Arc::clone(&self.names),
                at: sent.name,
            },
        })
    }

    /// Set once the feed has ended: the time open ranges end at.
    pub(super) fn end(&self) -> Option<u64> {
        self.end
    }

    /// Stops listening: the NVTX side's sends fail, and it stops sending.
    pub(super) fn close(&mut self) {
        self.rx = None;
    }
}
