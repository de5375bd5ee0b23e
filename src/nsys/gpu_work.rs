//! What the findings of [`crate::analyze`] are made of: GPU work (kernels,
//! memcpy, memset) with only the columns the rules need, and the CUDA runtime
//! calls of chosen names, merged in time order.
//!
//! Calls are chosen by name in SQL (`nameId IN (...)`, the ids found with the
//! `LIKE` patterns the rules are defined by), so a report of millions of
//! launches sends only its few synchronizing and copying calls. The
//! pre-scan of the memcpy and memset tables notes which (process,
//! correlationId) launched a copy or memset, in a Bloom filter of fixed
//! size: a call says whether its operation may be in the export, and one
//! whose operation surely is not (cropped exports) need not be kept waiting
//! for it.

use super::columns::ReadRow;
use super::columns::TakeAll;
use super::cuda::{ApiCall, CopyDevices, GpuCommonCols, GpuPlace, MemcpyValues, MemsetValues};
use super::cuda::{
    API, GPU, KERNEL, MEMCPY, MEMCPY_COLUMNS, MEMCPY_DEVICES, MEMSET, MEMSET_COLUMNS, RUNTIME,
};
use super::row_filter::RowFilter;
use super::scan::{order_key, OrderKey, Prescan, Streamed, TableScan};
use super::select::{Col, Row, Select};
use super::Report;

/// What a GPU operation is, with what the rules look at.
#[derive(Clone, Copy, Debug)]
pub(crate) enum OpKind {
    Kernel,
    Memcpy(MemcpyValues, CopyDevices),
    Memset(MemsetValues),
}

/// A kernel, memcpy or memset as the GPU ran it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GpuOp {
    pub start: i64,
    pub end: i64,
    /// Where it ran.
    pub place: GpuPlace,
    pub correlation_id: Option<i64>,
    pub kind: OpKind,
}

/// Reads what kind of operation a row is, and its own columns.
type DecodeKind = Box<dyn Fn(&Row) -> rusqlite::Result<OpKind> + Send>;

pub(crate) enum Work<'r> {
    Call {
        call: ApiCall<'r>,
        /// Whether the export may have a memcpy or memset of this call (its
        /// process and correlationId), to come after it: surely not if
        /// false, and rarely true where it has none.
        copies: bool,
    },
    Op(GpuOp),
}

fn key(work: &Work) -> OrderKey {
    match work {
        Work::Call { call, .. } => order_key(call.start, call.end),
        Work::Op(o) => order_key(o.start, o.end),
    }
}

impl Report {
    /// Calls `f` in time order with the runtime calls whose `nameId` is one
    /// of `call_names` (records that only repeat a call for its backtrace
    /// left out) and, if `ops`, with every kernel, memcpy and memset, of
    /// those `filter` keeps.
    pub(crate) fn for_each_gpu_work<'r, E: From<rusqlite::Error>>(
        &'r self,
        filter: &RowFilter,
        call_names: &[i64],
        ops: bool,
        mut f: impl FnMut(Work<'r>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut scans = Vec::new();
        let mut prescan = CopyLaunches::default();
        if !call_names.is_empty() {
            if let Some(scan) = self.call_scan(call_names) {
                scans.push(scan);
                prescan.columns.push(None);
            }
        }
        // Only calls need to know their copies.
        let calls = !scans.is_empty();
        if ops {
            for table in [KERNEL, MEMCPY, MEMSET] {
                let Some(scan) = self.op_scan(table) else {
                    continue;
                };
                if !calls || table == KERNEL {
                    prescan.columns.push(None);
                    scans.push(scan);
                    continue;
                }
                let mut launch = Select::new(&self.schema, table);
                prescan.columns.push(Some(LaunchColumns {
                    pid: launch.expr(self.pid_column(table)),
                    correlation: launch.take(GPU.correlation_id),
                }));
                scans.push(scan.prescan(&launch));
            }
        }
        if scans.is_empty() {
            return Ok(());
        }
        self.stream(scans, prescan, filter, |item| match item {
            Streamed::Prescanned(()) => Ok(()),
            Streamed::Event(work) => f(work),
        })
    }

    fn call_scan(&self, names: &[i64]) -> Option<TableScan<'_, Work<'_>>> {
        let (s, c) = self.readable_select(RUNTIME, |s| API.take_all(s))?;
        // Calls are chosen by name: none can be where names are not recorded.
        if !s.has(API.name_id.name()) {
            return None;
        }
        let ids = names
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let mut filter = format!("\"nameId\" IN ({ids})");
        // "CUDA backtrace" records repeat a call to carry its stack.
        if s.has(API.event_class.name()) {
            filter.push_str(" AND ");
            filter.push_str(&super::cuda::calls_themselves_sql());
        }
        let strings = &self.strings;
        let decode = move |r: &Row| {
            Ok(Work::Call {
                call: c.read(r, strings)?,
                copies: false,
            })
        };
        Some(TableScan::new(&s, decode, key).filter(filter))
    }

    fn op_scan(&self, table: &str) -> Option<TableScan<'_, Work<'_>>> {
        let declare = |s: &mut Select| {
            let common = GpuCommonCols::declare(s, &self.pid_column(table));
            let kind: DecodeKind = match table {
                MEMCPY => {
                    let copy = MEMCPY_COLUMNS.take_all(s);
                    let devices = MEMCPY_DEVICES.take_all(s);
                    Box::new(move |r| Ok(OpKind::Memcpy(copy.read(r)?, devices.read(r)?)))
                }
                MEMSET => {
                    let memset = MEMSET_COLUMNS.take_all(s);
                    Box::new(move |r| memset.read(r).map(OpKind::Memset))
                }
                _ => Box::new(|_| Ok(OpKind::Kernel)),
            };
            move |r: &Row| {
                let c = common.decode(r)?;
                Ok(Work::Op(GpuOp {
                    start: c.start,
                    end: c.end,
                    place: c.place,
                    correlation_id: c.correlation_id,
                    kind: kind(r)?,
                }))
            }
        };
        self.scan(table, declare, key)
    }
}

/// What the pre-scan of a memcpy or memset table reads.
#[derive(Clone, Copy)]
struct LaunchColumns {
    pid: Col<Option<i64>>,
    correlation: Col<Option<i64>>,
}

/// The (process, correlationId) pairs of the memcpy and memset operations,
/// in a Bloom filter: [`BLOOM_BITS`] bits, made on the first copy, of which
/// each pair sets [`BLOOM_HASHES`]. A pair that was not set may still find
/// its bits set (by others) and pass for a copy's; with half a million
/// copies that happens to about one in a thousand. The pid is `None` for
/// operations of no known process.
#[derive(Default)]
struct CopyLaunches {
    /// By scan: the columns of a memcpy or memset table's pre-scan.
    columns: Vec<Option<LaunchColumns>>,
    bits: Vec<u64>,
}

/// The size of the filter: 1 MiB, however large the export.
const BLOOM_BITS: u64 = 1 << 23;
const BLOOM_HASHES: u64 = 4;

impl CopyLaunches {
    /// The bits of a pair.
    fn positions(pid: Option<u32>, corr: i64) -> impl Iterator<Item = u64> {
        let pid = pid.map_or(u64::MAX, u64::from);
        let h = mix(mix(corr as u64) ^ pid);
        let (first, step) = (h & 0xffff_ffff, (h >> 32) | 1);
        (0..BLOOM_HASHES).map(move |i| first.wrapping_add(i.wrapping_mul(step)) % BLOOM_BITS)
    }

    fn add(&mut self, pid: Option<u32>, corr: i64) {
        if self.bits.is_empty() {
            self.bits = vec![0; (BLOOM_BITS / 64) as usize];
        }
        for bit in Self::positions(pid, corr) {
            self.bits[(bit / 64) as usize] |= 1 << (bit % 64);
        }
    }

    /// Whether the pair may be one of a copy (surely not if false).
    fn has(&self, pid: Option<u32>, corr: i64) -> bool {
        !self.bits.is_empty()
            && Self::positions(pid, corr)
                .all(|bit| self.bits[(bit / 64) as usize] & (1 << (bit % 64)) != 0)
    }
}

/// A 64-bit finalizer (splitmix64's): every input bit moves every output bit.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Prescan<Work<'_>> for CopyLaunches {
    type Summary = ();

    fn row(&mut self, scan: usize, row: &Row) -> rusqlite::Result<()> {
        let Some(Some(c)) = self.columns.get(scan) else {
            return Ok(());
        };
        if let Some(corr) = c.correlation.get(row)? {
            let pid = c.pid.get(row)?.map(|p| p as u32);
            self.add(pid, corr);
        }
        Ok(())
    }

    fn summary(&mut self) {}

    fn complete(&self, work: &mut Work<'_>) {
        if let Work::Call { call, copies } = work {
            *copies = call
                .correlation_id
                .is_some_and(|corr| self.has(Some(call.pid), corr) || self.has(None, corr));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_filter_knows_every_copy_and_few_others() {
        let mut launches = CopyLaunches::default();
        assert!(!launches.has(Some(1), 5));
        let copies = 500_000i64;
        for corr in 0..copies {
            launches.add(Some(1), corr * 3);
        }
        launches.add(None, -2);
        assert!((0..copies).all(|corr| launches.has(Some(1), corr * 3)));
        assert!(launches.has(None, -2));
        // Others: the ids in between, and the same ids of another process.
        let others = (0..copies)
            .map(|c| (Some(1), c * 3 + 1))
            .chain((0..copies).map(|c| (Some(2), c * 3)));
        let passing = others
            .filter(|&(pid, corr)| launches.has(pid, corr))
            .count();
        assert!(
            passing < 2 * copies as usize / 200,
            "{passing} pass for copies"
        );
    }
}
