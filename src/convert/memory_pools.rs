//! CUDA memory pools (stream-ordered allocation, `cudaMallocAsync`): two counter
//! tracks per pool in its GPU's group, the bytes the pool holds and the bytes in
//! use, sampled at each pool operation and at each allocation or free from the
//! pool; and each create, trim and destroy as an instant, with its details, on
//! the GPU's "CUDA memory pools" track.

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::nsys::metrics::{PoolOperation, PoolState};
use crate::nsys::Metadata;
use crate::perfetto::{
    Arg, ArgValue, CounterUnit, CounterValue, SequenceWriter, Slice, SliceTrack, Stacking, TrackId,
    TrackSpec,
};

use super::gpu::device_group;
use super::summary::Summary;
use super::threads::process_name;
use crate::error::Failure;

/// The category of pool operations.
pub(super) const MEMORY_POOL: &str = "cuda_memory_pool";

/// `ENUM_CUDA_MEMPOOL_OPER` 2: the pool is gone.
const DESTROYED: i64 = 2;

/// The tracks of every pool seen so far.
pub(super) struct MemoryPools {
    /// Where this GPU-group section starts: the operations track, then each
    /// pool's two counters in the order the pools appear.
    rank: i32,
    /// Size and use counters, by (device, pid, pool address).
    counters: FxHashMap<(i64, u32, i64), (TrackId, TrackId)>,
    /// Operations, by device.
    operations: FxHashMap<i64, SliceTrack>,
}

impl MemoryPools {
    pub(super) fn new(rank: i32) -> Self {
        Self {
            rank,
            counters: FxHashMap::default(),
            operations: FxHashMap::default(),
        }
    }

    /// Writes the pool's size and use at `ts`, where recorded.
    pub(super) fn sample<W: Write>(
        &mut self,
        seq: &mut SequenceWriter<'_, W>,
        meta: &Metadata,
        (ts, pid, device): (u64, u32, i64),
        state: PoolState,
        summary: &mut Summary,
    ) -> Result<(), Failure> {
        let (size_track, used_track) = self.counters_of(seq, meta, device, pid, state.address);
        for (track, value) in [(size_track, state.size), (used_track, state.used)] {
            if let Some(v) = value {
                seq.counter(track, ts, CounterValue::Int(v))?;
                summary.counter_values += 1;
            }
        }
        Ok(())
    }

    /// Writes a create, trim or destroy at trace time `ts`: an instant with
    /// the operation's details, and the pool's counters.
    pub(super) fn operation<W: Write>(
        &mut self,
        seq: &mut SequenceWriter<'_, W>,
        meta: &Metadata,
        ts: u64,
        op: &PoolOperation,
        summary: &mut Summary,
    ) -> Result<(), Failure> {
        let track = *self.operations.entry(op.device).or_insert_with(|| {
            let group = seq.with_tracks(|t| device_group(t, meta, op.device));
            let mut spec = TrackSpec::new(Some(group), "CUDA memory pools");
            spec.rank = Some(self.rank);
            seq.slice_track(spec, Stacking::Nest)
        });
        let name = match op.settings.operation.and_then(operation_label) {
            Some(label) => format!("Memory pool {label}"),
            None => format!(
                "Memory pool operation {}",
                op.settings.operation.unwrap_or(-1)
            ),
        };
        let mut args = vec![
            Arg::new("pid", ArgValue::Int(i64::from(op.pid))),
            Arg::new("address", ArgValue::Uint(op.state.address as u64)),
        ];
        if let Some(kind) = op.settings.pool_type {
            args.push(match pool_type_label(kind) {
                Some(label) => Arg::new("pool_type", ArgValue::Str(label)),
                None => Arg::new("pool_type", ArgValue::Int(kind)),
            });
        }
        let details = [
            ("size", op.state.size),
            ("used", op.state.used),
            ("min_bytes_to_keep", op.settings.min_bytes_to_keep),
            ("release_threshold", op.settings.release_threshold),
            ("correlation_id", op.settings.correlation_id),
        ];
        for (arg, value) in details {
            if let Some(v) = value {
                args.push(Arg::new(arg, ArgValue::Int(v)));
            }
        }
        let slice = Slice::new(ts, Some(ts), &name, MEMORY_POOL, &args);
        seq.slice(track, &slice)?;
        summary.count(MEMORY_POOL);
        // A destroyed pool holds nothing from then on, whatever it held
        // before (which the instant's args keep).
        let state = if op.settings.operation == Some(DESTROYED) {
            PoolState {
                size: Some(0),
                used: Some(0),
                ..op.state
            }
        } else {
            op.state
        };
        self.sample(seq, meta, (ts, op.pid, op.device), state, summary)
    }

    fn counters_of<W: Write>(
        &mut self,
        seq: &mut SequenceWriter<'_, W>,
        meta: &Metadata,
        device: i64,
        pid: u32,
        address: i64,
    ) -> (TrackId, TrackId) {
        let first_rank = self.rank + 1 + 2 * self.counters.len() as i32;
        *self
            .counters
            .entry((device, pid, address))
            .or_insert_with(|| {
                let group = seq.with_tracks(|t| device_group(t, meta, device));
                let pool = format!("memory pool {:#x}", address as u64);
                let owner = format!("{} (pid {pid})", process_name(meta, pid));
                let mut counter = |rank: i32, what: &str, description: String| {
                    let mut spec = TrackSpec::new(Some(group), format!("CUDA {pool}: {what}"));
                    spec.rank = Some(rank);
                    spec.description = Some(description);
                    seq.add_counter_track(spec, CounterUnit::Bytes)
                };
                let size = counter(
                    first_rank,
                    "size",
                    format!("Device memory the CUDA {pool} of {owner} holds"),
                );
                let used = counter(
                    first_rank + 1,
                    "used",
                    format!("Bytes of the CUDA {pool} of {owner} that allocations use"),
                );
                (size, used)
            })
    }
}

/// `ENUM_CUDA_MEMPOOL_OPER` (the same in every export that has the table).
fn operation_label(id: i64) -> Option<&'static str> {
    Some(match id {
        1 => "created",
        DESTROYED => "destroyed",
        3 => "trimmed",
        _ => return None,
    })
}

/// `ENUM_CUDA_MEMPOOL_TYPE`.
fn pool_type_label(id: i64) -> Option<&'static str> {
    Some(match id {
        1 => "Local",
        2 => "Imported",
        _ => return None,
    })
}
