//! GPU metrics, CUDA memory use and memory pools as counter tracks in each
//! GPU's group; unified-memory page faults as slices (GPU faults, in the GPU's
//! group) and instants (CPU faults, on the process). In Perfetto's own GPU
//! model, GPU metrics and CUDA memory use are GPU counters of their GPU.

use std::io::Write;

use rustc_hash::FxHashMap;

use super::GpuModel;
use crate::nsys::metrics::{DeviceEvent, MetricValue};
use crate::nsys::Metadata;
use crate::perfetto::{
    Arg, ArgValue, CounterUnit, CounterValue, GpuCounter, GpuCounterGroup, GpuCounterSpec,
    GpuCounterUnit, SequenceWriter, Slice, SliceTrack, Stacking, TrackId, TrackSpec,
};

use super::gpu::device_group;
use super::memory_pools::{MemoryPools, MEMORY_POOL};
use super::metric_units::{metric_group, MetricUnit};
use super::part_writer::{PartWriter, Written};
use super::summary::Summary;
use super::threads::process_track;
use super::typed_gpu::Gpus;
use super::{trace_time, Failure};

pub(super) const GPU_METRICS: &str = "gpu_metrics";
pub(super) const CUDA_MEMORY: &str = "cuda_memory";
pub(super) const UNIFIED_MEMORY: &str = "unified_memory";

/// Places in a GPU's group after its streams: metrics, memory, pools, faults.
const METRICS_RANK: i32 = 1 << 24;
const MEMORY_RANK: i32 = 2 << 24;
const POOLS_RANK: i32 = 3 << 24;
const FAULTS_RANK: i32 = 4 << 24;

pub(super) fn write<W: Write>(part: PartWriter<'_, '_, '_, W>) -> Written {
    let report = part.report;
    let mut mapper = Mapper {
        seq: part.seq,
        summary: part.summary,
        gpus: part.gpus,
        meta: report.meta(),
        names: report.gpu_metric_names()?,
        metrics: FxHashMap::default(),
        memory: FxHashMap::default(),
        gpu_faults: FxHashMap::default(),
        cpu_faults: FxHashMap::default(),
        pools: MemoryPools::new(POOLS_RANK),
        window_start: part
            .filter
            .filter()
            .and_then(|f| f.time.start)
            .and_then(trace_time)
            .unwrap_or(0),
    };
    report.for_each_device_event(part.filter, |event| -> Written {
        part.rows.tick();
        mapper.event(event)
    })
}

/// The tracks of the device events met so far, and where they go.
struct Mapper<'a, 's, W: Write> {
    meta: &'a Metadata,
    names: FxHashMap<(i64, i64), String>,
    seq: &'a mut SequenceWriter<'s, W>,
    summary: &'a mut Summary,
    /// The GPUs, and whether metrics and memory use are GPU counters.
    gpus: &'a mut Gpus,
    /// A counter per (metric set, metric), and the metric's unit.
    metrics: FxHashMap<(i64, i64), (Counter, MetricUnit)>,
    /// Per (device, pid), its counter and the bytes in use.
    memory: FxHashMap<(i64, u32), (Counter, i64)>,
    gpu_faults: FxHashMap<i64, SliceTrack>,
    cpu_faults: FxHashMap<u32, SliceTrack>,
    pools: MemoryPools,
    /// The start of the filter's time window (0 without one): memory use
    /// before it is added up but not written.
    window_start: u64,
}

impl<W: Write> Mapper<'_, '_, W> {
    fn event(&mut self, event: DeviceEvent) -> Result<(), Failure> {
        let (start, category) = match event {
            DeviceEvent::Metric { ts, .. } => (ts, GPU_METRICS),
            DeviceEvent::Memory { ts, .. } => (ts, CUDA_MEMORY),
            DeviceEvent::Pool(ref op) => (op.ts, MEMORY_POOL),
            DeviceEvent::GpuFaults { start, .. } | DeviceEvent::CpuFault { ts: start, .. } => {
                (start, UNIFIED_MEMORY)
            }
        };
        let Some(ts) = self.summary.checked_start(start, category) else {
            return Ok(());
        };
        match event {
            DeviceEvent::Metric {
                type_id,
                metric_id,
                value,
                ..
            } => self.metric(ts, (type_id, metric_id), value),
            DeviceEvent::Memory {
                pid,
                device,
                bytes,
                freed,
                pool,
                ..
            } => {
                if ts < self.window_start {
                    let change = if freed { -bytes } else { bytes };
                    *self.memory_in_use(device, pid) += change;
                    self.summary.filter_out(CUDA_MEMORY);
                    return Ok(());
                }
                if let Some(state) = pool {
                    self.pools.sample(
                        self.seq,
                        self.meta,
                        (ts, pid, device),
                        state,
                        self.summary,
                    )?;
                }
                self.memory(ts, device, pid, if freed { -bytes } else { bytes })
            }
            DeviceEvent::Pool(op) => {
                self.pools
                    .operation(self.seq, self.meta, ts, &op, self.summary)
            }
            DeviceEvent::GpuFaults {
                end,
                pid,
                device,
                address,
                faults,
                access,
                ..
            } => {
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
                self.gpu_faults(ts, end, device, &args)
            }
            DeviceEvent::CpuFault { pid, address, .. } => {
                let args: Vec<Arg> = address
                    .map(|a| Arg::new("address", ArgValue::Uint(a as u64)))
                    .into_iter()
                    .collect();
                self.cpu_fault(ts, pid, &args)
            }
        }
    }

    fn metric(
        &mut self,
        ts: u64,
        (type_id, metric_id): (i64, i64),
        value: MetricValue,
    ) -> Result<(), Failure> {
        let n = self.metrics.len() as i32;
        let (counter, unit) = match self.metrics.get(&(type_id, metric_id)) {
            Some(known) => known,
            None => {
                // The metric set's low byte is the GPU.
                let device = type_id & 0xFF;
                let name = self
                    .names
                    .get(&(type_id, metric_id))
                    .cloned()
                    .unwrap_or_else(|| format!("GPU metric {metric_id}"));
                let unit = MetricUnit::of(&name);
                let counter = match self.gpus.model {
                    GpuModel::Typed => {
                        let spec = GpuCounterSpec {
                            group: metric_group(&name),
                            unit: unit.gpu_unit(),
                            name,
                            description: None,
                        };
                        self.gpu_counter(device, spec)
                    }
                    GpuModel::TrackEvent => {
                        let group = self.seq.with_tracks(|t| device_group(t, self.meta, device));
                        let mut spec = TrackSpec::new(Some(group), name);
                        spec.rank = Some(METRICS_RANK + n);
                        Counter::Track(self.seq.add_counter_track(spec, unit.unit.clone()))
                    }
                };
                self.metrics
                    .entry((type_id, metric_id))
                    .or_insert((counter, unit))
            }
        };
        let value = unit.value(value);
        counter.write(self.seq, ts, value)?;
        self.summary.counter_values += 1;
        Ok(())
    }

    /// `change` bytes allocated (or freed, when negative) by `pid` on `device`.
    fn memory(&mut self, ts: u64, device: i64, pid: u32, change: i64) -> Result<(), Failure> {
        *self.memory_in_use(device, pid) += change;
        let (counter, total) = self.memory[&(device, pid)];
        counter.write(self.seq, ts, CounterValue::Int(total))?;
        self.summary.counter_values += 1;
        Ok(())
    }

    /// The bytes `pid` has in use on `device`, on a counter track made at
    /// the first change.
    fn memory_in_use(&mut self, device: i64, pid: u32) -> &mut i64 {
        if !self.memory.contains_key(&(device, pid)) {
            let name = format!(
                "CUDA memory: {} (pid {pid})",
                super::threads::process_name(self.meta, pid)
            );
            let description =
                "Device memory the process allocated during the capture, less what it freed";
            let counter = match self.gpus.model {
                GpuModel::Typed => {
                    let spec = GpuCounterSpec {
                        name,
                        description: Some(description.to_owned()),
                        unit: GpuCounterUnit::Bytes,
                        group: Some(GpuCounterGroup::Memory),
                    };
                    self.gpu_counter(device, spec)
                }
                GpuModel::TrackEvent => {
                    let group = self.seq.with_tracks(|t| device_group(t, self.meta, device));
                    let mut spec = TrackSpec::new(Some(group), name);
                    spec.rank = Some(MEMORY_RANK);
                    spec.description = Some(description.to_owned());
                    Counter::Track(self.seq.add_counter_track(spec, CounterUnit::Bytes))
                }
            };
            self.memory.insert((device, pid), (counter, 0));
        }
        let (_, total) = self.memory.get_mut(&(device, pid)).expect("made above");
        total
    }

    /// A GPU counter of `device`.
    fn gpu_counter(&mut self, device: i64, spec: GpuCounterSpec) -> Counter {
        let gpu = self.gpus.id(self.seq, self.meta, device);
        Counter::Gpu(self.seq.gpu_counter(gpu, spec))
    }

    fn gpu_faults(
        &mut self,
        start: u64,
        end: i64,
        device: i64,
        args: &[Arg],
    ) -> Result<(), Failure> {
        let track = match self.gpu_faults.get(&device) {
            Some(&t) => t,
            None => {
                let group = self.seq.with_tracks(|t| device_group(t, self.meta, device));
                let mut spec = TrackSpec::new(Some(group), "Unified memory page faults");
                spec.rank = Some(FAULTS_RANK);
                let t = self.seq.slice_track(spec, Stacking::Exclusive);
                self.gpu_faults.insert(device, t);
                t
            }
        };
        let end = self.summary.checked_end(start, end);
        let slice = Slice::new(start, Some(end), "GPU page faults", UNIFIED_MEMORY, args);
        self.seq.slice(track, &slice)?;
        self.summary.count(UNIFIED_MEMORY);
        Ok(())
    }

    fn cpu_fault(&mut self, ts: u64, pid: u32, args: &[Arg]) -> Result<(), Failure> {
        let track = match self.cpu_faults.get(&pid) {
            Some(&t) => t,
            None => {
                let process = self.seq.with_tracks(|t| process_track(t, self.meta, pid));
                let spec = TrackSpec::new(Some(process), "Unified memory CPU page faults");
                let t = self.seq.slice_track(spec, Stacking::Nest);
                self.cpu_faults.insert(pid, t);
                t
            }
        };
        let slice = Slice::new(ts, Some(ts), "CPU page fault", UNIFIED_MEMORY, args);
        self.seq.slice(track, &slice)?;
        self.summary.count(UNIFIED_MEMORY);
        Ok(())
    }
}

/// Where a counter's values go: a counter track, or a GPU counter.
#[derive(Clone, Copy)]
enum Counter {
    Track(TrackId),
    Gpu(GpuCounter),
}

impl Counter {
    fn write<W: Write>(
        self,
        seq: &mut SequenceWriter<'_, W>,
        ts: u64,
        value: CounterValue,
    ) -> std::io::Result<()> {
        match self {
            Counter::Track(track) => seq.counter(track, ts, value),
            Counter::Gpu(counter) => seq.gpu_counter_value(counter, ts, value),
        }
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
