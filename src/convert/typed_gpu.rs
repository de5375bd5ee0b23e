//! GPU work in Perfetto's own GPU model (`--gpu-model typed`): kernels,
//! memcpys, memsets and graph runs as render stage events, one hardware
//! queue per (process, context, stream) named as the stream tracks are, one
//! graphics context per (process, context), the GPUs of `TARGET_INFO_GPU`
//! in `GpuInfo`. A launch names its work's event ids (trace_processor makes
//! the flows); work without its launch in the trace gets an event id of its
//! own and keeps its correlation id as an arg.
//!
//! Kernels carry their launch the way Perfetto's GPU compute views read it:
//! grid and block as `launch.grid_size.*` and `launch.workgroup_size.*`,
//! and `registers_per_thread`, `shared_mem_static`, `shared_mem_dynamic`,
//! `grid_size`, `workgroup_size`, `thread_count`; every slice has `device`
//! and `stream`, by which the GPU-by-process view nests streams.
//!
//! The report's GPUs (`Gpus`) are in the trace in both models: the
//! TrackEvent trace has them in trace_processor's `gpu` table too.

use std::io::Write;

use rustc_hash::FxHashMap;

use super::GpuModel;
use crate::error::Failure;
use crate::nsys::cuda::{GpuCommon, GpuPlace, Kernel, PlaceWork};
use crate::nsys::gpu_devices::GpuDevice as ReportedGpu;
use crate::nsys::{Metadata, Report};
use crate::perfetto::{
    Arg, ArgValue, ComputeKernel, GpuContext, GpuDevice, GpuId, GpuQueue, GpuStage, GpuWork,
    SequenceWriter, Trace,
};

use super::flows::mix;
use super::gpu::stream_names;
use super::threads::process_name;

/// The GPUs of a report in the trace (`GpuInfo`, trace_processor's `gpu`
/// table), by the report's device id, in both GPU models; and the model.
#[derive(Clone, Debug)]
pub(super) struct Gpus {
    pub(super) model: GpuModel,
    ids: FxHashMap<i64, GpuId>,
}

impl Gpus {
    /// Adds the GPUs of `TARGET_INFO_GPU` to `trace`.
    pub(super) fn declare<W: Write>(
        trace: &Trace<W>,
        report: &Report,
        model: GpuModel,
    ) -> Result<Self, Failure> {
        let mut ids = FxHashMap::default();
        for reported in report.gpu_devices()? {
            let id = reported.id;
            ids.insert(id, trace.gpu(describe(reported)));
        }
        let mut gpus = Self { model, ids };
        if model == GpuModel::Typed {
            // The GPUs the report knows only by name, here, once: GPU work
            // and counters, written on two threads, find them declared.
            let mut named: Vec<i64> = report.meta().gpus.keys().copied().collect();
            named.sort_unstable();
            for device in named {
                gpus.ids
                    .entry(device)
                    .or_insert_with(|| trace.gpu(unlisted(report.meta(), device)));
            }
        }
        Ok(gpus)
    }

    /// The id of GPU `device`; a GPU `TARGET_INFO_GPU` does not list is
    /// added with what the report says of it elsewhere.
    pub(super) fn id<W: Write>(
        &mut self,
        seq: &mut SequenceWriter<'_, W>,
        meta: &Metadata,
        device: i64,
    ) -> GpuId {
        *self
            .ids
            .entry(device)
            .or_insert_with(|| seq.gpu(unlisted(meta, device)))
    }
}

/// A GPU `TARGET_INFO_GPU` does not list, with the name the report gives it
/// elsewhere, if any.
fn unlisted(meta: &Metadata, device: i64) -> GpuDevice {
    let name = meta
        .gpus
        .get(&device)
        .cloned()
        .unwrap_or_else(|| format!("GPU {device}"));
    GpuDevice {
        name,
        vendor: "NVIDIA".to_owned(),
        extra: vec![("nsys_device_id".to_owned(), device.to_string())],
        ..Default::default()
    }
}

/// Where each place's work goes.
pub(super) struct TypedGpu {
    places: FxHashMap<GpuPlace, Place>,
    /// The names of the processes with GPU work (kernels carry theirs).
    process_names: FxHashMap<u32, String>,
    namespace: u64,
    /// Event ids handed to work without a launch so far.
    unlinked: u64,
}

#[derive(Clone, Copy)]
struct Place {
    gpu: GpuId,
    queue: GpuQueue,
    context: GpuContext,
}

/// A piece of work to write: what `gpu_op` knows of it.
pub(super) struct Work<'a, 'k> {
    pub(super) op: &'a GpuCommon,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) name: &'a str,
    pub(super) stage: GpuStage,
    pub(super) kernel: Option<&'a Kernel<'k>>,
    /// Its args, as the TrackEvent model writes them (kernels' are made here).
    pub(super) args: &'a [Arg<'a>],
    /// The flow id of its launch, if that is in the trace: its event id.
    pub(super) launch: Option<u64>,
}

impl TypedGpu {
    /// Declares the contexts and queues of `places` on `seq`, on the GPUs of `gpus`.
    pub(super) fn new<W: Write>(
        seq: &mut SequenceWriter<'_, W>,
        report: &Report,
        gpus: &mut Gpus,
        places: &[PlaceWork],
        namespace: u64,
    ) -> Self {
        let meta = report.meta();
        let mut contexts = FxHashMap::default();
        let mut typed = FxHashMap::default();
        let mut process_names = FxHashMap::default();
        for (work, (name, description)) in places.iter().zip(stream_names(meta, places)) {
            let place = work.place;
            let gpu = gpus.id(seq, meta, place.device);
            let context = *contexts
                .entry((place.pid, place.context))
                .or_insert_with(|| {
                    let id = place.context.and_then(|c| u64::try_from(c).ok());
                    seq.gpu_context(id.unwrap_or(0), place.pid.unwrap_or(0))
                });
            if let Some(pid) = place.pid {
                process_names
                    .entry(pid)
                    .or_insert_with(|| process_name(meta, pid));
            }
            let queue = seq.gpu_queue(name, description);
            typed.insert(
                place,
                Place {
                    gpu,
                    queue,
                    context,
                },
            );
        }
        Self {
            places: typed,
            process_names,
            namespace,
            unlinked: 0,
        }
    }

    /// Writes `work` on its place's queue.
    pub(super) fn write<W: Write>(
        &mut self,
        seq: &mut SequenceWriter<'_, W>,
        report: &Report,
        work: &Work<'_, '_>,
    ) -> std::io::Result<()> {
        let place = work.op.place;
        let Some(&typed) = self.places.get(&place) else {
            return Err(std::io::Error::other(format!(
                "GPU work on a stream the prescan did not find: {place:?}"
            )));
        };
        let event_id = work.launch.unwrap_or_else(|| {
            self.unlinked += 1;
            // Apart from flow ids, which have the top bit clear.
            mix(mix(self.namespace) ^ self.unlinked) | 1 << 63
        });
        let mut args = Vec::with_capacity(work.args.len() + 16);
        let (mut grid, mut block, mut kernel) = (None, None, None);
        if let Some(k) = work.kernel {
            grid = dim3(k.launch.grid());
            block = dim3(k.launch.block());
            kernel = Some(ComputeKernel {
                name: work.name,
                demangled_name: k.demangled_name,
            });
            kernel_args(report, k, &mut args);
        }
        args.extend_from_slice(work.args);
        args.push(Arg::new("device", ArgValue::Int(place.device)));
        args.push(Arg::new("stream", ArgValue::Int(place.stream)));
        if work.kernel.is_some() {
            if let Some(pid) = place.pid {
                args.push(Arg::new("process_id", ArgValue::Int(pid.into())));
                if let Some(name) = self.process_names.get(&pid) {
                    args.push(Arg::new("process_name", ArgValue::Str(name)));
                }
            }
        }
        seq.gpu_work(&GpuWork {
            start: work.start,
            end: work.end,
            event_id,
            gpu: typed.gpu,
            queue: typed.queue,
            context: typed.context,
            stage: work.stage,
            name: work.name,
            kernel,
            grid,
            block,
            args: &args,
        })
    }
}

/// A kernel's launch args, under the names Perfetto's GPU compute views read
/// (and ours for the rest).
fn kernel_args<'a>(report: &'a Report, k: &Kernel<'a>, args: &mut Vec<Arg<'a>>) {
    let int = |args: &mut Vec<Arg<'a>>, name, value: Option<i64>| {
        if let Some(v) = value {
            args.push(Arg::new(name, ArgValue::Int(v)));
        }
    };
    let product = |d: [Option<i64>; 3]| -> Option<i64> { Some(d[0]? * d[1]? * d[2]?) };
    let (grid, block) = (product(k.launch.grid()), product(k.launch.block()));
    int(args, "grid_size", grid);
    int(args, "workgroup_size", block);
    int(args, "thread_count", grid.zip(block).map(|(g, b)| g * b));
    int(args, "registers_per_thread", k.launch.registers_per_thread);
    int(args, "shared_mem_static", k.launch.static_shared_memory);
    int(args, "shared_mem_dynamic", k.launch.dynamic_shared_memory);
    int(
        args,
        "local_memory_per_thread",
        k.launch.local_memory_per_thread,
    );
    int(args, "local_memory_total", k.launch.local_memory_total);
    let launch_type = k
        .launch
        .launch_type
        .and_then(|t| report.meta().launch_types.get(&t));
    if let Some(t) = launch_type {
        args.push(Arg::new("launch_type", ArgValue::Str(t)));
    }
    int(args, "graph_id", k.launch.graph_id);
}

fn dim3(d: [Option<i64>; 3]) -> Option<[u32; 3]> {
    let one = |v: Option<i64>| v.and_then(|v| u32::try_from(v).ok());
    Some([one(d[0])?, one(d[1])?, one(d[2])?])
}

/// A GPU of `TARGET_INFO_GPU` as `GpuInfo` shows it.
fn describe(gpu: ReportedGpu) -> GpuDevice {
    let info = gpu.info;
    let capability = info.compute_capability();
    let mut extra = vec![("nsys_device_id".to_owned(), gpu.id.to_string())];
    let mut add = |key: &str, value: Option<String>| {
        if let Some(v) = value {
            extra.push((key.to_owned(), v));
        }
    };
    let number = |v: Option<i64>| v.map(|v| v.to_string());
    add("cuda_device", number(info.cu_device));
    add("sm_count", number(info.sm_count));
    add("memory_bytes", number(info.total_memory));
    add(
        "memory_bandwidth_bytes_per_s",
        number(info.memory_bandwidth),
    );
    add("clock_hz", number(info.clock_rate));
    add("l2_cache_bytes", number(info.l2_cache_size));
    add(
        "compute_capability",
        capability.map(|(a, b)| format!("{a}.{b}")),
    );
    GpuDevice {
        name: info.name.unwrap_or_else(|| format!("GPU {}", gpu.id)),
        vendor: "NVIDIA".to_owned(),
        model: info.chip_name.unwrap_or_default(),
        architecture: capability
            .map(|(a, b)| format!("sm_{a}{b}"))
            .unwrap_or_default(),
        uuid: info
            .uuid
            .as_deref()
            .and_then(uuid_bytes)
            .unwrap_or_default(),
        pci_bdf: info.bus_location.unwrap_or_default(),
        extra,
    }
}

/// The 16 bytes of a UUID written as hex digits (dashes and a `GPU-`
/// prefix aside), or `None` if it is not one.
fn uuid_bytes(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text
        .trim_start_matches("GPU-")
        .bytes()
        .filter(|&b| b != b'-')
        .collect();
    if digits.len() != 32 {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_read_as_their_bytes() {
        let bytes = uuid_bytes("42588b38-60a5-e756-6c8a-27285ef89d7b").unwrap();
        assert_eq!(bytes.len(), 16);
        assert_eq!(&bytes[..3], &[0x42, 0x58, 0x8b]);
        assert_eq!(bytes[15], 0x7b);
        assert_eq!(
            uuid_bytes("GPU-42588b38-60a5-e756-6c8a-27285ef89d7b"),
            Some(bytes)
        );
        assert_eq!(uuid_bytes("not a uuid"), None);
    }
}
