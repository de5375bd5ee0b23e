//! Perfetto's own GPU model: the GPUs (`GpuInfo`), graphics contexts,
//! hardware queues and the work on them as `GpuRenderStageEvent`s, which
//! trace_processor imports into its `gpu`, `gpu_context`, `gpu_track` and
//! `gpu_slice` tables (and the UI's GPU plugins read).
//!
//! What trace_processor (v58) does with them, and so what this writes:
//! - a GPU's `gpu_id` is its position in `GpuInfo.gpus`: the trace keeps one
//!   list for all its sources, and a GPU two sources share (same UUID) is one;
//! - a queue's track is keyed by (GPU, queue iid, queue name), whatever
//!   sequence or process it comes from: queue iids are unique in the trace;
//! - a context's row in `gpu_context` is keyed by its iid alone: context
//!   iids are unique in the trace too (the context's own id where it is free);
//! - an event without `event_id` makes no slice; a TrackEvent names the
//!   `event_id`s it submitted in its `gpu_correlation` extension, which
//!   trace_processor turns into flows.

use std::io::{self, Write};

use rustc_hash::{FxHashMap, FxHashSet};

use super::intern::{Interned, StaticInterner};
use super::proto::{
    gpu_info, interned_gpu_render_stage_specification::RenderStageCategory,
    interned_graphics_context::Api, EventName, GpuInfo, InternedGpuRenderStageSpecification,
    InternedGraphicsContext,
};
use super::sequence::{write_value, SequenceWriter, ValueFields};
use super::slice::{Arg, ArgValue};
use super::trace::Trace;
use super::wire;

/// A GPU, as `GpuInfo` describes it (empty strings are left out).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuDevice {
    /// Its product name.
    pub name: String,
    /// Its maker.
    pub vendor: String,
    /// Its model (a chip name, say).
    pub model: String,
    /// Its architecture (a compute capability, say).
    pub architecture: String,
    /// Its UUID, 16 bytes; GPUs with one UUID are one GPU of the trace.
    pub uuid: Vec<u8>,
    /// Its PCI address, `domain:bus:device.function`.
    pub pci_bdf: String,
    /// Anything else, as text (trace_processor's args of the `gpu` row).
    pub extra: Vec<(String, String)>,
}

/// A GPU of the trace: its `gpu_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GpuId(pub i32);

/// A hardware queue (a track of GPU work), declared with [`SequenceWriter::gpu_queue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GpuQueue(u64);

/// A graphics context, declared with [`SequenceWriter::gpu_context`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GpuContext(u64);

impl GpuContext {
    /// Its id in the trace (`gpu_context.context_id`, `gpu_slice.context_id`).
    pub fn id(self) -> u64 {
        self.0
    }
}

/// What kind of work a render stage event is: its stage, and the stage's category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GpuStage {
    /// A compute kernel (category COMPUTE).
    Kernel,
    /// A memory copy (category OTHER).
    Memcpy,
    /// A memory set (category OTHER).
    Memset,
    /// A run of a whole graph (category OTHER).
    Graph,
}

impl GpuStage {
    const ALL: [GpuStage; 4] = [
        GpuStage::Kernel,
        GpuStage::Memcpy,
        GpuStage::Memset,
        GpuStage::Graph,
    ];

    /// Its iid: stages are the same few on every sequence. Queues and
    /// stages share one iid space (`gpu_specifications`): queues count up
    /// from 1, stages sit far above them.
    fn iid(self) -> u64 {
        (1 << 40) + self as u64
    }

    /// The stage's name, and its description (the `description` arg of its slices).
    pub fn name_and_description(self) -> (&'static str, &'static str) {
        match self {
            GpuStage::Kernel => ("Kernel", "Compute kernel"),
            GpuStage::Memcpy => ("Memcpy", "Memory copy"),
            GpuStage::Memset => ("Memset", "Memory set"),
            GpuStage::Graph => ("Graph", "Graph run"),
        }
    }

    fn category(self) -> RenderStageCategory {
        match self {
            GpuStage::Kernel => RenderStageCategory::Compute,
            _ => RenderStageCategory::Other,
        }
    }
}

/// A compute kernel's names (interned: its launches refer to it).
#[derive(Clone, Copy, Debug)]
pub struct ComputeKernel<'a> {
    /// Its (short) name.
    pub name: &'a str,
    /// Its demangled name, if known.
    pub demangled_name: Option<&'a str>,
}

/// One piece of GPU work, `[start, end)` in trace time, on a queue.
#[derive(Clone, Copy, Debug)]
pub struct GpuWork<'a> {
    /// Its start.
    pub start: u64,
    /// Its end (an end before the start is the start).
    pub end: u64,
    /// Unique in the trace: what a submitting TrackEvent refers to.
    pub event_id: u64,
    /// The GPU it ran on.
    pub gpu: GpuId,
    /// The queue it ran on.
    pub queue: GpuQueue,
    /// The context it ran in.
    pub context: GpuContext,
    /// What kind of work it is.
    pub stage: GpuStage,
    /// Its name (the slice's).
    pub name: &'a str,
    /// The kernel it ran, for kernels.
    pub kernel: Option<ComputeKernel<'a>>,
    /// The grid and block sizes of a kernel launch.
    pub grid: Option<[u32; 3]>,
    /// See `grid`.
    pub block: Option<[u32; 3]>,
    /// Typed launch arguments (the slice's args, by their names).
    pub args: &'a [Arg<'a>],
}

/// What the trace knows of GPUs, queues and contexts, for all its sequences.
#[derive(Default)]
pub(super) struct GpuRegistry {
    gpus: Vec<gpu_info::Gpu>,
    queues: u64,
    contexts: FxHashSet<u64>,
}

impl GpuRegistry {
    fn gpu(&mut self, device: GpuDevice) -> GpuId {
        let text = |s: String| (!s.is_empty()).then_some(s);
        let uuid = (!device.uuid.is_empty()).then_some(device.uuid);
        if uuid.is_some() {
            if let Some(i) = self.gpus.iter().position(|g| g.uuid == uuid) {
                return GpuId(i as i32);
            }
        }
        self.gpus.push(gpu_info::Gpu {
            name: text(device.name),
            vendor: text(device.vendor),
            model: text(device.model),
            architecture: text(device.architecture),
            uuid,
            pci_bdf: text(device.pci_bdf),
            extra_info: device
                .extra
                .into_iter()
                .map(|(key, value)| gpu_info::gpu::KeyValue {
                    key: Some(key),
                    value: Some(value),
                })
                .collect(),
        });
        GpuId(self.gpus.len() as i32 - 1)
    }

    fn queue(&mut self) -> u64 {
        self.queues += 1;
        self.queues
    }

    /// `wanted` if no context has it yet (and it is not 0), else one past the highest.
    fn context(&mut self, wanted: u64) -> u64 {
        let id = match wanted != 0 && !self.contexts.contains(&wanted) {
            true => wanted,
            false => self.contexts.iter().max().map_or(1, |m| m + 1),
        };
        self.contexts.insert(id);
        id
    }

    /// The `GpuInfo` of every GPU, if there are any.
    pub(super) fn info(&self) -> Option<GpuInfo> {
        (!self.gpus.is_empty()).then(|| GpuInfo {
            gpus: self.gpus.clone(),
        })
    }
}

/// A sequence's GPU interning: what it declared, and what it has sent
/// since its interned state was last cleared.
#[derive(Default)]
pub(super) struct GpuInterning {
    queues: FxHashMap<u64, (String, String)>,
    contexts: FxHashMap<u64, i32>,
    sent_queues: FxHashSet<u64>,
    sent_contexts: FxHashSet<u64>,
    sent_stages: u8,
    kernels: FxHashMap<Box<str>, u64>,
    arg_names: StaticInterner,
    /// InternedData extension fields (compute kernels and argument names)
    /// not yet sent, encoded: prost has no extensions.
    pub(super) pending_extensions: Vec<u8>,
}

/// `InternedData` extensions (protos/perfetto/trace/gpu/gpu_interned_data.proto).
const INTERNED_COMPUTE_KERNELS: u32 = 1000;
const INTERNED_COMPUTE_ARG_NAMES: u32 = 1001;
/// `TrackEvent` extension gpu_correlation (protos/perfetto/trace/gpu/gpu_track_event.proto)
/// and its field render_stage_submission_event_ids.
pub(super) const TRACK_EVENT_GPU_CORRELATION: u32 = 3000;
pub(super) const CORRELATION_SUBMISSION_IDS: u32 = 1;
/// `TracePacket.gpu_render_stage_event`.
pub(super) const PACKET_GPU_RENDER_STAGE_EVENT: u32 = 53;

/// `GpuRenderStageEvent` fields, and those of its nested messages.
mod field {
    pub(super) const EVENT_ID: u32 = 1;
    pub(super) const DURATION: u32 = 2;
    pub(super) const CONTEXT: u32 = 5;
    pub(super) const GPU_ID: u32 = 11;
    pub(super) const HW_QUEUE_IID: u32 = 13;
    pub(super) const STAGE_IID: u32 = 14;
    pub(super) const NAME: u32 = 17;
    pub(super) const KERNEL_IID: u32 = 19;
    pub(super) const NAME_IID: u32 = 20;
    pub(super) const LAUNCH: u32 = 21;
    pub(super) const LAUNCH_GRID: u32 = 1;
    pub(super) const LAUNCH_WORKGROUP: u32 = 2;
    pub(super) const LAUNCH_ARGS: u32 = 3;
    pub(super) const ARG_NAME_IID: u32 = 1;
    pub(super) const ARG_INT: u32 = 3;
    pub(super) const ARG_UINT: u32 = 4;
    pub(super) const ARG_DOUBLE: u32 = 5;
    pub(super) const ARG_STRING: u32 = 6;
    pub(super) const ARG_STRING_IID: u32 = 7;
    /// A launch arg has no bool field: a bool is written as a uint.
    pub(super) const LAUNCH_ARG_VALUE: super::ValueFields = super::ValueFields {
        bool: ARG_UINT,
        uint: ARG_UINT,
        int: ARG_INT,
        double: ARG_DOUBLE,
        string: ARG_STRING,
        string_iid: ARG_STRING_IID,
    };
    pub(super) const INTERNED_IID: u32 = 1;
    pub(super) const INTERNED_NAME: u32 = 2;
    pub(super) const KERNEL_DEMANGLED_NAME: u32 = 3;
}

impl GpuInterning {
    /// Forgets what was sent (the sequence's interned state is cleared).
    pub(super) fn clear(&mut self) {
        self.sent_queues.clear();
        self.sent_contexts.clear();
        self.sent_stages = 0;
        self.kernels.clear();
        self.arg_names.clear();
    }

    /// Interned entries remembered.
    pub(super) fn len(&self) -> usize {
        self.kernels.len()
    }

    fn kernel_iid(&mut self, kernel: ComputeKernel<'_>) -> u64 {
        let key: Box<str> = match kernel.demangled_name {
            Some(d) => format!("{}\0{d}", kernel.name).into(),
            None => kernel.name.into(),
        };
        if let Some(&iid) = self.kernels.get(&key) {
            return iid;
        }
        let iid = self.kernels.len() as u64 + 1;
        self.kernels.insert(key, iid);
        let ext = &mut self.pending_extensions;
        wire::message(ext, INTERNED_COMPUTE_KERNELS, |b| {
            wire::uint(b, field::INTERNED_IID, iid);
            wire::bytes(b, field::INTERNED_NAME, kernel.name.as_bytes());
            if let Some(d) = kernel.demangled_name {
                wire::bytes(b, field::KERNEL_DEMANGLED_NAME, d.as_bytes());
            }
        });
        iid
    }

    fn arg_name_iid(&mut self, name: &'static str) -> u64 {
        let (iid, new) = self.arg_names.intern(name);
        if new {
            wire::message(
                &mut self.pending_extensions,
                INTERNED_COMPUTE_ARG_NAMES,
                |b| {
                    wire::uint(b, field::INTERNED_IID, iid);
                    wire::bytes(b, field::INTERNED_NAME, name.as_bytes());
                },
            );
        }
        iid
    }
}

fn dim3(buf: &mut Vec<u8>, field: u32, [x, y, z]: [u32; 3]) {
    wire::message(buf, field, |b| {
        wire::uint(b, 1, x.into());
        wire::uint(b, 2, y.into());
        wire::uint(b, 3, z.into());
    });
}

impl<W: Write> Trace<W> {
    /// Adds `device` to the trace's GPUs (one with a UUID already there is
    /// that GPU) and returns its id.
    pub fn gpu(&self, device: GpuDevice) -> GpuId {
        self.lock().gpus.gpu(device)
    }
}

impl<W: Write> SequenceWriter<'_, W> {
    /// Adds `device` to the trace's GPUs, as [`Trace::gpu`] does.
    pub fn gpu(&mut self, device: GpuDevice) -> GpuId {
        self.trace.gpu(device)
    }

    /// A new hardware queue named `name`, its track's name in the UI.
    pub fn gpu_queue(&mut self, name: String, description: String) -> GpuQueue {
        let iid = self.trace.lock().gpus.queue();
        self.gpu.queues.insert(iid, (name, description));
        GpuQueue(iid)
    }

    /// A CUDA context of process `pid`, known in the trace by `context`
    /// where no other context has that id, else by a new one.
    pub fn gpu_context(&mut self, context: u64, pid: u32) -> GpuContext {
        let iid = self.trace.lock().gpus.context(context);
        let pid = self.shift.id(pid) as i32;
        self.gpu.contexts.insert(iid, pid);
        GpuContext(iid)
    }

    /// Writes `work` as a render stage event. Its start must not precede
    /// the previous slice's.
    pub fn gpu_work(&mut self, work: &GpuWork<'_>) -> io::Result<()> {
        let mut work = *work;
        let end = work.end.max(work.start);
        let mut clipped_args;
        let mut end = end;
        if let Some(&(from, to)) = self.trace.window.get() {
            if work.start < from || end > to {
                clipped_args = work.args.to_vec();
                if work.start < from {
                    clipped_args.push(Arg::new("clipped_start", ArgValue::Uint(work.start)));
                }
                if end > to {
                    clipped_args.push(Arg::new("clipped_end", ArgValue::Uint(end)));
                }
                work.start = work.start.max(from).min(to);
                end = end.min(to).max(work.start);
                work.args = &clipped_args;
            }
        }
        self.write_ends_until(work.start)?;
        self.restart_if_full()?;
        self.intern_gpu_specs(&work);
        let kernel = work.kernel.map(|k| self.gpu.kernel_iid(k));

        let mut event = std::mem::take(&mut self.event_buf);
        event.clear();
        wire::uint(&mut event, field::EVENT_ID, work.event_id);
        wire::uint(&mut event, field::DURATION, end - work.start);
        wire::uint(&mut event, field::CONTEXT, work.context.0);
        wire::int(&mut event, field::GPU_ID, work.gpu.0.into());
        wire::uint(&mut event, field::HW_QUEUE_IID, work.queue.0);
        wire::uint(&mut event, field::STAGE_IID, work.stage.iid());
        match self.names.intern(work.name) {
            Interned::Inline => wire::bytes(&mut event, field::NAME, work.name.as_bytes()),
            Interned::New(iid) => {
                self.interned.event_names.push(EventName {
                    iid: Some(iid),
                    name: Some(work.name.to_owned()),
                });
                wire::uint(&mut event, field::NAME_IID, iid);
            }
            Interned::Known(iid) => wire::uint(&mut event, field::NAME_IID, iid),
        }
        if let Some(iid) = kernel {
            wire::uint(&mut event, field::KERNEL_IID, iid);
        }
        let (gpu, arg_strings, interned) =
            (&mut self.gpu, &mut self.arg_strings, &mut self.interned);
        wire::message(&mut event, field::LAUNCH, |b| {
            if let Some(grid) = work.grid {
                dim3(b, field::LAUNCH_GRID, grid);
            }
            if let Some(block) = work.block {
                dim3(b, field::LAUNCH_WORKGROUP, block);
            }
            for arg in work.args {
                wire::message(b, field::LAUNCH_ARGS, |b| {
                    wire::uint(b, field::ARG_NAME_IID, gpu.arg_name_iid(arg.name));
                    let fields = &field::LAUNCH_ARG_VALUE;
                    write_value(b, arg.value, fields, arg_strings, interned);
                });
            }
        });
        let written = self.write_event_as(PACKET_GPU_RENDER_STAGE_EVENT, work.start, &event);
        self.event_buf = event;
        written
    }

    /// Sends what `work` refers to that this sequence has not sent.
    fn intern_gpu_specs(&mut self, work: &GpuWork<'_>) {
        let gpu = &mut self.gpu;
        let interned = &mut self.interned;
        if gpu.sent_stages == 0 {
            gpu.sent_stages = 1;
            for stage in GpuStage::ALL {
                let (name, description) = stage.name_and_description();
                interned
                    .gpu_specifications
                    .push(InternedGpuRenderStageSpecification {
                        iid: Some(stage.iid()),
                        name: Some(name.to_owned()),
                        description: Some(description.to_owned()),
                        category: Some(stage.category() as i32),
                    });
            }
        }
        let queue = work.queue.0;
        if gpu.sent_queues.insert(queue) {
            let (name, description) = gpu.queues.get(&queue).cloned().unwrap_or_default();
            interned
                .gpu_specifications
                .push(InternedGpuRenderStageSpecification {
                    iid: Some(queue),
                    name: Some(name),
                    description: (!description.is_empty()).then_some(description),
                    category: None,
                });
        }
        let context = work.context.0;
        if gpu.sent_contexts.insert(context) {
            interned.graphics_contexts.push(InternedGraphicsContext {
                iid: Some(context),
                pid: gpu.contexts.get(&context).copied(),
                api: Some(Api::Cuda as i32),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_with_a_known_uuid_is_that_gpu() {
        let mut r = GpuRegistry::default();
        let a = GpuDevice {
            uuid: vec![1; 16],
            ..Default::default()
        };
        let b = GpuDevice {
            uuid: vec![2; 16],
            ..Default::default()
        };
        assert_eq!(r.gpu(a.clone()), GpuId(0));
        assert_eq!(r.gpu(b), GpuId(1));
        assert_eq!(r.gpu(a), GpuId(0));
        assert_eq!(r.gpu(GpuDevice::default()), GpuId(2));
        assert_eq!(r.gpu(GpuDevice::default()), GpuId(3), "no uuid: no match");
    }

    #[test]
    fn contexts_keep_their_id_where_it_is_free() {
        let mut r = GpuRegistry::default();
        assert_eq!(r.context(5), 5);
        assert_eq!(r.context(1), 1);
        assert_eq!(r.context(5), 6);
        assert_eq!(r.context(0), 7);
    }
}
