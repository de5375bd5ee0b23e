//! CUDA API calls on their threads, GPU work on its streams, flows between them.

use std::io::Write;

use rustc_hash::FxHashMap;

use super::GpuModel;
use crate::nsys::cuda::{ApiCall, CudaEvent, GpuCommon, GraphRun, Kernel, Memcpy, Memset, Sync};
use crate::nsys::devices::ContextDevices;
use crate::nsys::{Report, RowFilter, Streamed};
use crate::perfetto::{
    Arg, ArgValue, GpuStage, SequenceWriter, Slice, SliceTrack, Stacking, TrackSpec,
};

use super::events::EventWaits;
use super::flows::Launches;
use super::gpu::{with_context_devices, GpuTracks};
use super::gpu_in_nvtx::NvtxSpans;
use super::graphs::GraphCreations;
use super::projection::{Projector, RangeSource};
use super::stacks::Frames;
use super::summary::Summary;
use super::threads::thread_track;
use super::typed_gpu::{Gpus, TypedGpu, Work};
use super::{trace_time, RowTicker};
use crate::error::Failure;
use crate::nsys::cpu::ChainFrame;
use crate::nsys::names::api_trace_name;

pub(super) const API: &str = "cuda_api";
pub(super) const KERNEL: &str = "cuda_kernel";
pub(super) const MEMCPY: &str = "cuda_memcpy";
pub(super) const MEMSET: &str = "cuda_memset";
pub(super) const SYNC: &str = "cuda_sync";
pub(super) const GRAPH: &str = "cuda_graph";

/// How CUDA activity is written.
#[derive(Clone, Debug)]
pub(super) struct CudaModel {
    /// What makes this report's flow ids (and GPU event ids) its own.
    pub(super) namespace: u64,
    /// The report's GPUs in the trace, and where GPU work goes: TrackEvent
    /// slices, or Perfetto's GPU model.
    pub(super) gpus: Gpus,
}

/// Writes the CUDA activity on `seq` and, given a sequence and the NVTX
/// ranges, the NVTX GPU projection.
pub(super) fn write<'s, W: Write>(
    report: &Report,
    filter: &RowFilter,
    seq: &mut SequenceWriter<'s, W>,
    projection: Option<(&mut SequenceWriter<'s, W>, RangeSource)>,
    model: CudaModel,
    summary: &mut Summary,
    rows: &mut RowTicker,
) -> Result<(), Failure> {
    let CudaModel {
        namespace,
        mut gpus,
    } = model;
    let gpu_model = gpus.model;
    let in_nvtx = match filter.filter() {
        Some(f) if f.gpu_in_nvtx => Some(NvtxSpans::read(report, filter)?),
        _ => None,
    };
    let mut mapper = Mapper {
        report,
        in_nvtx,
        seq,
        summary,
        gpu: GpuTracks::default(),
        devices: report.context_devices()?,
        typed: None,
        api_tracks: FxHashMap::default(),
        launches: Launches::new(namespace),
        events: EventWaits::new(namespace, report.event_records(filter)?),
        graph_creations: GraphCreations::default(),
        flow_ids: Vec::new(),
        projector: projection.map(|(seq, source)| Projector::new(seq, source)),
        chain: Vec::new(),
        frames: Frames::default(),
    };
    report.for_each_cuda_event(filter, |item| match item {
        Streamed::Prescanned(places) => {
            let places = with_context_devices(places, &mapper.devices);
            mapper.gpu = GpuTracks::new(mapper.seq, report.meta(), &places);
            if gpu_model == GpuModel::Typed {
                let typed = TypedGpu::new(mapper.seq, report, &mut gpus, &places, namespace);
                mapper.typed = Some(typed);
            }
            Ok(())
        }
        Streamed::Event(event) => {
            rows.tick();
            mapper.event(event)
        }
    })?;
    mapper.summary.launches_unmatched += mapper.launches.unmatched();
    mapper.events.finish(mapper.summary);
    if let Some(projector) = mapper.projector.take() {
        projector.finish(&mapper.gpu, report.meta(), mapper.summary)?;
    }
    Ok(())
}

struct Mapper<'a, 's, W: Write> {
    report: &'a Report,
    /// Where calls are kept, when only those inside NVTX ranges are.
    in_nvtx: Option<NvtxSpans>,
    seq: &'a mut SequenceWriter<'s, W>,
    projector: Option<Projector<'a, 's, W>>,
    /// Reused space for the backtraces of API calls.
    chain: Vec<ChainFrame>,
    frames: Frames<'a>,
    summary: &'a mut Summary,
    gpu: GpuTracks,
    /// The devices of the contexts of synchronizations, which record none.
    devices: ContextDevices,
    /// Where kernels, memcpys, memsets and graph runs go in Perfetto's own
    /// GPU model; `None` in the TrackEvent model.
    typed: Option<TypedGpu>,
    /// The "CUDA API" track of each (pid, tid).
    api_tracks: FxHashMap<(u32, u32), SliceTrack>,
    launches: Launches,
    /// CUDA event records, and the synchronizations that waited on them.
    events: EventWaits,
    graph_creations: GraphCreations,
    /// The flows that start at the API call being written: to its GPU work,
    /// then to the synchronizations that waited on the event it recorded.
    flow_ids: Vec<u64>,
}

impl<W: Write> Mapper<'_, '_, W> {
    fn event(&mut self, event: CudaEvent<'_>) -> Result<(), Failure> {
        if let Some(projector) = &mut self.projector {
            projector.cuda_event(&event, &self.gpu, self.report.meta(), self.summary)?;
        }
        match event {
            CudaEvent::Api(call) => self.api_call(&call),
            CudaEvent::Kernel(k) => self.kernel(&k),
            CudaEvent::Memcpy(m) => self.memcpy(&m),
            CudaEvent::Memset(m) => self.memset(&m),
            CudaEvent::Sync(s) => self.sync(&s),
            CudaEvent::Graph(g) => self.graph(&g),
            CudaEvent::GraphCreation(g) => {
                let meta = self.report.meta();
                self.graph_creations.write(self.seq, meta, &g, self.summary)
            }
        }
    }

    fn api_call(&mut self, call: &ApiCall) -> Result<(), Failure> {
        let Some(start) = trace_time(call.start) else {
            self.summary.skip_negative(API);
            return Ok(());
        };
        if let Some(spans) = &self.in_nvtx {
            if !spans.covers(call.pid, call.tid, call.start) {
                self.summary.filter_out(API);
                return Ok(());
            }
        }
        let key = (call.pid, call.tid);
        let track = match self.api_tracks.get(&key) {
            Some(&t) => t,
            None => {
                let meta = self.report.meta();
                let thread = self
                    .seq
                    .with_tracks(|t| thread_track(t, meta, call.pid, call.tid));
                let t = self
                    .seq
                    .slice_track(TrackSpec::new(Some(thread), "CUDA API"), Stacking::Nest);
                self.api_tracks.insert(key, t);
                t
            }
        };
        match call.correlation_id {
            Some(corr) => self
                .launches
                .launch(call.pid, corr, call.gpu_ops, &mut self.flow_ids),
            None => self.flow_ids.clear(),
        }
        // In the typed GPU model launches name their work's event ids instead.
        let submitted = match self.typed {
            Some(_) => self.flow_ids.len(),
            None => 0,
        };

        let end = self.end_of(start, call.end);
        let mut args = Vec::with_capacity(5);
        if let Some(corr) = call.correlation_id {
            args.push(Arg::new("correlation_id", ArgValue::Int(corr)));
        }
        // 0 is success (cudaSuccess, CUDA_SUCCESS), the value of almost
        // every call: only failures carry one. Written on every call, it
        // cost trace_processor an argument per call when loading.
        if let Some(ret) = call.return_value.filter(|&ret| ret != 0) {
            args.push(Arg::new("return_value", ArgValue::Int(ret)));
        }
        let recorded = call.correlation_id.and_then(|corr| {
            let key = (call.pid, corr);
            // Synchronizations are not kept with the calls inside NVTX ranges.
            let flows = !call.repeats_a_call && self.in_nvtx.is_none();
            self.events
                .record_call(key, flows, &mut self.flow_ids, self.summary)
        });
        if let Some(record) = recorded {
            push_int(&mut args, "event_id", record.event_id);
            push_int(&mut args, "event_stream", record.stream);
            push_int(&mut args, "event_completed", record.completed);
        }
        let callstack = match call.callchain {
            Some(id) => {
                self.report
                    .callchain(crate::nsys::cuda::CALLCHAINS, id, &mut self.chain)?;
                Some(self.frames.of(self.report, &self.chain))
            }
            None => None,
        };
        let slice = Slice::new(start, Some(end), api_trace_name(call.name), API, &args)
            .flows_out(&self.flow_ids[submitted..])
            .submits(&self.flow_ids[..submitted])
            .callstack(callstack.filter(|f| !f.is_empty()));
        self.seq.slice(track, &slice)?;
        self.summary.count(API);
        Ok(())
    }

    fn kernel(&mut self, k: &Kernel) -> Result<(), Failure> {
        let name = if k.short_name.is_empty() {
            k.demangled_name.unwrap_or("kernel")
        } else {
            k.short_name
        };
        if self.typed.is_some() {
            // Its launch args are the typed model's own (see `typed_gpu`).
            return self.gpu_op(&k.common, name, KERNEL, Vec::new(), None, Some(k));
        }
        let meta = self.report.meta();
        let l = &k.launch;
        // On the stack: `format!` was a tenth of this function's work.
        let (mut grid_text, mut block_text) = (Dims::default(), Dims::default());
        let grid = grid_text.write(l.grid());
        let block = block_text.write(l.block());
        let launch_type = label(&meta.launch_types, l.launch_type);
        let mut args = Vec::with_capacity(16);
        if let Some(name) = k.demangled_name {
            args.push(Arg::new("demangled_name", ArgValue::Str(name)));
        }
        push_str(&mut args, "grid", grid);
        push_str(&mut args, "block", block);
        push_int(&mut args, "registers_per_thread", l.registers_per_thread);
        push_int(&mut args, "static_shared_memory", l.static_shared_memory);
        push_int(&mut args, "dynamic_shared_memory", l.dynamic_shared_memory);
        push_int(
            &mut args,
            "local_memory_per_thread",
            l.local_memory_per_thread,
        );
        push_int(&mut args, "local_memory_total", l.local_memory_total);
        push_str(&mut args, "launch_type", launch_type);
        push_int(&mut args, "graph_id", l.graph_id);
        self.gpu_op(&k.common, name, KERNEL, args, None, None)
    }

    fn memcpy(&mut self, m: &Memcpy) -> Result<(), Failure> {
        let meta = self.report.meta();
        let kind = label(&meta.copy_kinds, m.own.copy_kind);
        let name = format!("Memcpy {}", kind.unwrap_or("(unknown kind)"));
        let mut args = Vec::with_capacity(12);
        push_int(&mut args, "bytes", m.own.bytes);
        push_str(&mut args, "copy_kind", kind);
        push_str(
            &mut args,
            "src_kind",
            label(&meta.memory_kinds, m.own.src_kind),
        );
        push_str(
            &mut args,
            "dst_kind",
            label(&meta.memory_kinds, m.own.dst_kind),
        );
        let dur = m.common.end - m.common.start;
        if let (Some(bytes), true) = (m.own.bytes, dur > 0) {
            // bytes per ns is GB/s.
            args.push(Arg::new(
                "throughput_gbps",
                ArgValue::Double(bytes as f64 / dur as f64),
            ));
        }
        self.gpu_op(&m.common, &name, MEMCPY, args, None, None)
    }

    fn memset(&mut self, m: &Memset) -> Result<(), Failure> {
        let meta = self.report.meta();
        let mut args = Vec::with_capacity(10);
        push_int(&mut args, "bytes", m.own.bytes);
        push_int(&mut args, "value", m.own.value);
        push_str(
            &mut args,
            "memory_kind",
            label(&meta.memory_kinds, m.own.memory_kind),
        );
        self.gpu_op(&m.common, "Memset", MEMSET, args, None, None)
    }

    fn graph(&mut self, g: &GraphRun) -> Result<(), Failure> {
        let mut args = Vec::with_capacity(8);
        push_int(&mut args, "graph_id", g.own.graph_id);
        push_int(&mut args, "graph_exec_id", g.own.graph_exec_id);
        let name = crate::nsys::cuda::graph_name(g.own.graph_id);
        self.gpu_op(&g.common, &name, GRAPH, args, None, None)
    }

    fn sync(&mut self, s: &Sync) -> Result<(), Failure> {
        if self.in_nvtx.is_some() {
            self.summary.filter_out(SYNC);
            return Ok(());
        }
        let meta = self.report.meta();
        let sync_type = label(&meta.sync_types, s.own.sync_type);
        let mut args = Vec::with_capacity(10);
        push_str(&mut args, "sync_type", sync_type);
        push_int(&mut args, "event_id", s.own.event_id);
        // Synchronizations before time 0 are not written: they wait on nothing.
        let (waited, record) = match trace_time(s.common.start) {
            Some(_) => self.events.wait(s, self.summary),
            None => (None, None),
        };
        if let Some((_, record_call)) = record {
            args.push(Arg::new(
                "event_record_correlation_id",
                ArgValue::Int(record_call),
            ));
        }
        // A synchronization goes on the device of its context: the row
        // records none (exports write 0).
        let mut common = s.common;
        match self.devices.device(common.place.pid, common.place.context) {
            Some(device) => common.place.device = device,
            None if trace_time(s.common.start).is_some() => {
                self.summary.syncs_on_unknown_device += 1;
            }
            None => {}
        }
        self.gpu_op(
            &common,
            sync_type.unwrap_or("Synchronization"),
            SYNC,
            args,
            waited,
            None,
        )
    }

    /// Writes GPU work on the track of its place; kernels, memcpys and
    /// memsets also end the flow from their launch. Synchronization is not
    /// launched work: its flow, `waited`, comes from the call that recorded
    /// the event it waited on.
    fn gpu_op(
        &mut self,
        op: &GpuCommon,
        name: &str,
        category: &'static str,
        mut args: Vec<Arg>,
        waited: Option<u64>,
        kernel: Option<&Kernel>,
    ) -> Result<(), Failure> {
        let Some(start) = trace_time(op.start) else {
            self.summary.skip_negative(category);
            return Ok(());
        };
        if let Some(spans) = &self.in_nvtx {
            let launched = match (op.place.pid, op.correlation_id) {
                (Some(pid), Some(corr)) => {
                    self.launches.is_open(pid, corr) || spans.launched_outside_window(pid, corr)
                }
                _ => false,
            };
            if !launched {
                // Not launched inside a kept range.
                self.summary.filter_out(category);
                return Ok(());
            }
        }
        let mut flow = None;
        if category != SYNC {
            match (op.place.pid, op.correlation_id) {
                (Some(pid), Some(corr)) => {
                    flow = self.launches.op(pid, corr);
                    // Work launched inside a kept range before the time
                    // window has its launch in the report, not in the trace.
                    let launched_outside_window = || {
                        self.in_nvtx
                            .as_ref()
                            .is_some_and(|s| s.launched_outside_window(pid, corr))
                    };
                    match flow {
                        Some(_) => self.summary.flows += 1,
                        None if launched_outside_window() => {}
                        None => self.summary.gpu_ops_without_launch += 1,
                    }
                }
                (None, _) => self.summary.gpu_ops_unknown_process += 1,
                (Some(_), None) => self.summary.gpu_ops_without_launch += 1,
            }
        }
        // Device, process, context and stream are the track's: its name,
        // description and GPU group say them once for all its slices. A
        // stream may run work of several green contexts, so that stays.
        // Work linked to its launch leaves the correlation id to the launch,
        // at the other end of the flow: the id is different on every slice,
        // so that every slice had an argument set of its own to load, where
        // kernels of one configuration now share one.
        if flow.is_none() {
            push_int(&mut args, "correlation_id", op.correlation_id);
        }
        push_int(&mut args, "green_context", op.green_context);
        push_int(&mut args, "graph_node_id", op.graph_node);
        let end = self.end_of(start, op.end);
        if let (Some(typed), Some(stage)) = (&mut self.typed, typed_stage(category)) {
            let work = Work {
                op,
                start,
                end,
                name,
                stage,
                kernel,
                args: &args,
                launch: flow,
            };
            typed.write(self.seq, self.report, &work)?;
            self.summary.count(category);
            return Ok(());
        }
        let flows_in = match flow {
            Some(_) => flow.as_slice(),
            None => waited.as_slice(),
        };
        let slice = Slice::new(start, Some(end), name, category, &args).flows_in(flows_in);
        let track = self.gpu.track(&op.place);
        self.seq.slice(track, &slice)?;
        self.summary.count(category);
        Ok(())
    }

    /// The end as a trace time; an end before the start makes an instant.
    fn end_of(&mut self, start: u64, end: i64) -> u64 {
        self.summary.checked_end(start, end)
    }
}

/// The render stage of work of `category` in the typed GPU model, if it is
/// written there (synchronizations are not GPU work: they stay slices).
fn typed_stage(category: &str) -> Option<GpuStage> {
    match category {
        KERNEL => Some(GpuStage::Kernel),
        MEMCPY => Some(GpuStage::Memcpy),
        MEMSET => Some(GpuStage::Memset),
        GRAPH => Some(GpuStage::Graph),
        _ => None,
    }
}

fn push_int(args: &mut Vec<Arg<'_>>, name: &'static str, value: Option<i64>) {
    if let Some(v) = value {
        args.push(Arg::new(name, ArgValue::Int(v)));
    }
}

fn push_str<'a>(args: &mut Vec<Arg<'a>>, name: &'static str, value: Option<&'a str>) {
    if let Some(v) = value {
        args.push(Arg::new(name, ArgValue::Str(v)));
    }
}

/// A kernel's grid or block dimensions as text, `XxYxZ`, written on the
/// stack: three `i64`s of at most 20 characters each and two `x`s.
struct Dims {
    text: [u8; 64],
}

impl Default for Dims {
    fn default() -> Self {
        Self { text: [0; 64] }
    }
}

impl Dims {
    /// `XxYxZ` as `format!("{x}x{y}x{z}")` writes it; `None` if any is unknown.
    fn write(&mut self, [x, y, z]: [Option<i64>; 3]) -> Option<&str> {
        let (x, y, z) = (x?, y?, z?);
        let mut at = 0;
        for (i, v) in [x, y, z].into_iter().enumerate() {
            if i > 0 {
                self.text[at] = b'x';
                at += 1;
            }
            at += decimal(v, &mut self.text[at..]);
        }
        Some(std::str::from_utf8(&self.text[..at]).expect("ASCII digits"))
    }
}

/// Writes `v` in decimal at the start of `out` (room for 20 bytes); its length.
fn decimal(v: i64, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 20];
    let mut n = v.unsigned_abs();
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut at = 0;
    if v < 0 {
        out[0] = b'-';
        at = 1;
    }
    for d in digits[..len].iter().rev() {
        out[at] = *d;
        at += 1;
    }
    at
}

fn label(labels: &FxHashMap<i64, String>, value: Option<i64>) -> Option<&str> {
    value.and_then(|v| labels.get(&v)).map(String::as_str)
}

#[cfg(test)]
mod dims_tests {
    use super::Dims;

    #[test]
    fn dims_read_as_format_writes_them() {
        let cases = [
            [Some(1), Some(2), Some(3)],
            [Some(0), Some(-7), Some(1024)],
            [Some(i64::MIN), Some(i64::MAX), Some(-1)],
            [Some(65_535), Some(10), Some(100)],
        ];
        for d in cases {
            let [x, y, z] = d.map(Option::unwrap);
            assert_eq!(
                Dims::default().write(d),
                Some(format!("{x}x{y}x{z}").as_str())
            );
        }
        assert_eq!(Dims::default().write([Some(1), None, Some(1)]), None);
    }
}
