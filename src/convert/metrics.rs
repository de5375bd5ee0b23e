//! GPU metrics, CUDA memory use and memory pools as counter tracks in each
//! GPU's group; unified-memory page faults as slices (GPU faults, in the GPU's
//! group) and instants (CPU faults, on the process).

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::nsys::metrics::{DeviceEvent, MetricValue};
use crate::nsys::Report;
use crate::perfetto::{
    Arg, ArgValue, CounterUnit, CounterValue, SequenceWriter, Slice, SliceTrack, Stacking, TrackId,
    TrackSpec,
};

use super::gpu::device_group;
use super::memory_pools::{MemoryPools, MEMORY_POOL};
use super::summary::Summary;
use super::threads::process_track;
use super::{trace_time, Failure, Rows};

pub const GPU_METRICS: &str = "gpu_metrics";
pub const CUDA_MEMORY: &str = "cuda_memory";
pub const UNIFIED_MEMORY: &str = "unified_memory";

/// Places in a GPU's group after its streams: metrics, memory, pools, faults.
const METRICS_RANK: i32 = 1 << 24;
const MEMORY_RANK: i32 = 2 << 24;
const POOLS_RANK: i32 = 3 << 24;
const FAULTS_RANK: i32 = 4 << 24;

pub fn write<W: Write>(
    report: &Report,
    seq: &mut SequenceWriter<'_, W>,
    summary: &mut Summary,
    rows: &mut Rows,
) -> Result<(), Failure> {
    let meta = report.meta();
    let names = report.gpu_metric_names()?;
    let mut metrics: FxHashMap<(i64, i64), TrackId> = FxHashMap::default();
    let mut memory: FxHashMap<(i64, u32), (TrackId, i64)> = FxHashMap::default();
    let mut gpu_faults: FxHashMap<i64, SliceTrack> = FxHashMap::default();
    let mut cpu_faults: FxHashMap<u32, SliceTrack> = FxHashMap::default();
    let mut pools = MemoryPools::new(POOLS_RANK);
    report.for_each_device_event(|event| -> Result<(), Failure> {
        rows.tick();
        match event {
            DeviceEvent::Metric {
                ts,
                type_id,
                metric_id,
                value,
            } => {
                let Some(ts) = trace_time(ts) else {
                    summary.skip_negative(GPU_METRICS);
                    return Ok(());
                };
                let n = metrics.len() as i32;
                let track = *metrics.entry((type_id, metric_id)).or_insert_with(|| {
                    // The metric set's low byte is the GPU.
                    let device = type_id & 0xFF;
                    let group = device_group(&mut seq.tracks(), meta, device);
                    let name = names
                        .get(&(type_id, metric_id))
                        .cloned()
                        .unwrap_or_else(|| format!("GPU metric {metric_id}"));
                    let unit = unit_of(&name);
                    let mut spec = TrackSpec::new(Some(group), name);
                    spec.rank = Some(METRICS_RANK + n);
                    seq.add_counter_track(spec, unit)
                });
                let value = match value {
                    MetricValue::Int(v) => CounterValue::Int(v),
                    MetricValue::Real(v) => CounterValue::Double(v),
                };
                seq.counter(track, ts, value)?;
                summary.counter_values += 1;
            }
            DeviceEvent::Memory {
                ts,
                pid,
                device,
                bytes,
                freed,
                pool,
            } => {
                let Some(ts) = trace_time(ts) else {
                    summary.skip_negative(CUDA_MEMORY);
                    return Ok(());
                };
                if let Some(state) = pool {
                    pools.sample(seq, meta, (ts, pid, device), state, summary)?;
                }
                let (track, total) = memory.entry((device, pid)).or_insert_with(|| {
                    let group = device_group(&mut seq.tracks(), meta, device);
                    let name = format!(
                        "CUDA memory: {} (pid {pid})",
                        super::threads::process_name(meta, pid)
                    );
                    let mut spec = TrackSpec::new(Some(group), name);
                    spec.rank = Some(MEMORY_RANK);
                    spec.description = Some(
                        "Device memory the process allocated during the capture, less what it freed"
                            .to_owned(),
                    );
                    (seq.add_counter_track(spec, CounterUnit::Bytes), 0)
                });
                *total += if freed { -bytes } else { bytes };
                let (track, total) = (*track, *total);
                seq.counter(track, ts, CounterValue::Int(total))?;
                summary.counter_values += 1;
            }
            DeviceEvent::Pool(op) => {
                let Some(ts) = trace_time(op.ts) else {
                    summary.skip_negative(MEMORY_POOL);
                    return Ok(());
                };
                pools.operation(seq, meta, ts, &op, summary)?;
            }
            DeviceEvent::GpuFaults {
                start,
                end,
                pid,
                device,
                address,
                faults,
                access,
            } => {
                let Some(start) = trace_time(start) else {
                    summary.skip_negative(UNIFIED_MEMORY);
                    return Ok(());
                };
                let track = *gpu_faults.entry(device).or_insert_with(|| {
                    let group = device_group(&mut seq.tracks(), meta, device);
                    let mut spec = TrackSpec::new(Some(group), "Unified memory page faults");
                    spec.rank = Some(FAULTS_RANK);
                    seq.slice_track(spec, Stacking::Exclusive)
                });
                let end = summary.end_time(start, end);
                let mut args = vec![Arg::new("pid", ArgValue::Int(i64::from(pid)))];
                if let Some(n) = faults {
                    args.push(Arg::new("faults", ArgValue::Int(n)));
                }
                if let Some(a) = address {
                    args.push(Arg::new("address", ArgValue::Uint(a as u64)));
                }
                if let Some(kind) = access.and_then(access_type) {
                    args.push(Arg::new("access", ArgValue::Str(kind)));
                }
                let slice = Slice {
                    start,
                    end: Some(end),
                    name: "GPU page faults",
                    category: UNIFIED_MEMORY,
                    args: &args,
                    flows_out: &[],
                    flows_in: &[],
                    callstack: None,
                };
                seq.slice(track, &slice)?;
                summary.count(UNIFIED_MEMORY);
            }
            DeviceEvent::CpuFault { ts, pid, address } => {
                let Some(ts) = trace_time(ts) else {
                    summary.skip_negative(UNIFIED_MEMORY);
                    return Ok(());
                };
                let track = *cpu_faults.entry(pid).or_insert_with(|| {
                    let process = process_track(&mut seq.tracks(), meta, pid);
                    let spec = TrackSpec::new(Some(process), "Unified memory CPU page faults");
                    seq.slice_track(spec, Stacking::Nest)
                });
                let args: Vec<Arg> = address
                    .map(|a| Arg::new("address", ArgValue::Uint(a as u64)))
                    .into_iter()
                    .collect();
                let slice = Slice {
                    start: ts,
                    end: Some(ts),
                    name: "CPU page fault",
                    category: UNIFIED_MEMORY,
                    args: &args,
                    flows_out: &[],
                    flows_in: &[],
                    callstack: None,
                };
                seq.slice(track, &slice)?;
                summary.count(UNIFIED_MEMORY);
            }
        }
        Ok(())
    })
}

/// The unit a metric's name gives in brackets: "SMs Active [Throughput %]" is in %.
fn unit_of(name: &str) -> CounterUnit {
    let Some(inner) = name
        .rsplit_once('[')
        .and_then(|(_, rest)| rest.strip_suffix(']'))
    else {
        return CounterUnit::Unspecified;
    };
    if inner.ends_with('%') {
        CounterUnit::Named("%".to_owned())
    } else {
        CounterUnit::Named(inner.to_owned())
    }
}

/// `ENUM_CUDA_UNIF_MEM_ACCESS_TYPE`.
fn access_type(id: i64) -> Option<&'static str> {
    Some(match id {
        0 => "Unknown",
        1 => "Read",
        2 => "Write",
        3 => "Atomic",
        4 => "Prefetch",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_come_from_the_bracket() {
        assert_eq!(
            unit_of("SMs Active [Throughput %]"),
            CounterUnit::Named("%".into())
        );
        assert_eq!(
            unit_of("GPC Clock Frequency [MHz]"),
            CounterUnit::Named("MHz".into())
        );
        assert_eq!(unit_of("Unallocated Warps"), CounterUnit::Unspecified);
    }
}
