//! What every part writer of the CPU worker is handed, and the start each
//! gives its rows.

use std::io::Write;

use crate::nsys::{Report, RowFilter};
use crate::perfetto::SequenceWriter;

use super::typed_gpu::Gpus;
use super::{RowTicker, Summary};
use crate::error::Failure;

/// A part being written: the report it reads and the rows of it the filter
/// keeps, the sequence it writes, the counts of what it wrote and the rows
/// it read.
pub(super) struct PartWriter<'a, 's, 'r, W: Write> {
    pub report: &'a Report,
    pub filter: &'a RowFilter,
    pub seq: &'a mut SequenceWriter<'s, W>,
    pub summary: &'a mut Summary,
    /// The report's GPUs in the trace, and the GPU model.
    pub gpus: &'a mut Gpus,
    pub rows: &'a mut RowTicker<'r>,
}

/// What a part writer returns.
pub(super) type Written = Result<(), Failure>;

impl<W: Write> PartWriter<'_, '_, '_, W> {
    /// Counts a row read, and gives the trace time of its `start`: `None`
    /// for a row before time 0, counted as skipped in `category`.
    pub(super) fn row_at(&mut self, start: i64, category: &'static str) -> Option<u64> {
        self.rows.tick();
        self.summary.checked_start(start, category)
    }
}
