//! GPU tracks: a top-level group per device, one track per (process, context,
//! stream) inside it, in numeric order. A stream of a green context says so
//! in its name and description, as nsys shows green contexts apart.

use rustc_hash::FxHashMap;

use std::collections::BTreeMap;

use crate::nsys::cuda::{GpuPlace, PlaceWork};
use crate::nsys::devices::ContextDevices;
use crate::nsys::{CudaContext, Metadata};
use crate::perfetto::{SliceTrack, Stacking, TrackId, TrackSpec, Tracks};

use super::threads::process_name;

#[derive(Default)]
pub(super) struct GpuTracks {
    streams: FxHashMap<GpuPlace, SliceTrack>,
    devices: FxHashMap<i64, TrackId>,
}

/// The top-level group of GPU `device`, shared by every part of the trace
/// that has something on that GPU.
pub(super) fn device_group(tracks: &mut Tracks, meta: &Metadata, device: i64) -> TrackId {
    // Keys of GPU groups: the device id, apart from other keyed tracks.
    const GPU_GROUP: u64 = 1 << 40;
    tracks.group(GPU_GROUP | device as u64 & 0xFF_FFFF_FFFF, || {
        let name = match meta.gpus.get(&device) {
            Some(gpu) => format!("GPU {device}: {gpu}"),
            None => format!("GPU {device}"),
        };
        let mut spec = TrackSpec::new(None, name);
        spec.ordered_children = true;
        spec.rank = i32::try_from(device).ok();
        spec
    })
}

impl GpuTracks {
    /// Declares the tracks of every place; descriptors go out on first use.
    pub(super) fn new<W: std::io::Write>(
        seq: &mut crate::perfetto::SequenceWriter<'_, W>,
        meta: &Metadata,
        places: &[PlaceWork],
    ) -> Self {
        let mut devices = FxHashMap::default();
        let mut streams = FxHashMap::default();
        for (rank, (work, (name, description))) in
            places.iter().zip(stream_names(meta, places)).enumerate()
        {
            let place = &work.place;
            let device = *devices
                .entry(place.device)
                .or_insert_with(|| seq.with_tracks(|t| device_group(t, meta, place.device)));
            let mut spec = TrackSpec::new(Some(device), name);
            spec.rank = i32::try_from(rank).ok();
            spec.description = Some(description);
            streams.insert(*place, seq.slice_track(spec, Stacking::Exclusive));
        }
        Self { streams, devices }
    }

    /// The group of device `device`, if it has GPU work.
    pub(super) fn device_group(&self, device: i64) -> Option<TrackId> {
        self.devices.get(&device).copied()
    }

    pub(super) fn track(&self, place: &GpuPlace) -> SliceTrack {
        self.streams[place]
    }
}

/// `places`, and each place whose context is established on another device
/// than the one its rows name (synchronizations record none) also on that
/// device, in order: the places rows are put in. A place that only ever
/// held rows put elsewhere gets a track that is never used, so never written.
pub(super) fn with_context_devices(
    places: Vec<PlaceWork>,
    devices: &ContextDevices,
) -> Vec<PlaceWork> {
    let mut all: BTreeMap<GpuPlace, Vec<i64>> = BTreeMap::new();
    for work in places {
        let place = work.place;
        let established = devices.device(place.pid, place.context);
        if let Some(device) = established.filter(|&d| d != place.device) {
            let green = all.entry(GpuPlace { device, ..place }).or_default();
            green.extend(&work.green_contexts);
        }
        all.entry(place).or_default().extend(work.green_contexts);
    }
    all.into_iter()
        .map(|(place, mut green_contexts)| {
            green_contexts.sort_unstable();
            green_contexts.dedup();
            PlaceWork {
                place,
                green_contexts,
            }
        })
        .collect()
}

/// The name and description of each place's stream track.
pub(super) fn stream_names(meta: &Metadata, places: &[PlaceWork]) -> Vec<(String, String)> {
    let naming = Naming::of(places);
    places
        .iter()
        .map(|work| {
            let green = green_contexts(work, meta);
            (
                naming.stream_name(&work.place, &green),
                describe(&work.place, meta, &green),
            )
        })
        .collect()
}

/// A green context a stream's work ran in, as the export records it.
struct Green {
    id: i64,
    context: CudaContext,
}

/// The green contexts of a place: those its work names (`greenContextId`),
/// or else its own context where the export records that as green.
fn green_contexts(work: &PlaceWork, meta: &Metadata) -> Vec<Green> {
    let recorded = |id: i64| {
        work.place
            .pid
            .and_then(|pid| meta.cuda_contexts.get(&(pid, id)))
            .copied()
    };
    let ids = match (work.green_contexts.is_empty(), work.place.context) {
        (false, _) => work.green_contexts.clone(),
        (true, Some(ctx)) if recorded(ctx).is_some_and(|c| c.green) => vec![ctx],
        _ => Vec::new(),
    };
    ids.into_iter()
        .map(|id| Green {
            id,
            context: recorded(id).unwrap_or_default(),
        })
        .collect()
}

/// CUPTI's stream id for "no stream": synchronizations that wait on an
/// event or a whole context rather than a stream.
const NO_STREAM: i64 = u32::MAX as i64;

/// What stream names say besides the stream, decided once for the whole
/// trace so that every GPU's streams are named alike. Streams of one GPU
/// group must have distinct names (the UI merges same-named siblings), so
/// names carry the process when several processes use GPUs, and the context
/// when a process has several.
struct Naming {
    pid: bool,
    context: bool,
}

impl Naming {
    fn of(places: &[PlaceWork]) -> Self {
        let mut contexts: FxHashMap<Option<u32>, Option<i64>> = FxHashMap::default();
        let mut several_contexts = false;
        for p in places {
            let first = *contexts.entry(p.place.pid).or_insert(p.place.context);
            several_contexts |= first != p.place.context;
        }
        Self {
            pid: contexts.len() > 1,
            context: several_contexts,
        }
    }

    fn stream_name(&self, place: &GpuPlace, green: &[Green]) -> String {
        let mut parts = Vec::new();
        if self.pid {
            parts.push(
                place
                    .pid
                    .map_or("unknown process".to_owned(), |pid| format!("pid {pid}")),
            );
        }
        if self.context {
            parts.extend(place.context.map(|ctx| format!("context {ctx}")));
        }
        if !green.is_empty() {
            let ids: Vec<String> = green.iter().map(|g| g.id.to_string()).collect();
            let noun = if ids.len() == 1 {
                "green context"
            } else {
                "green contexts"
            };
            parts.push(format!("{noun} {}", ids.join(", ")));
        }
        let stream = match place.stream {
            NO_STREAM => "No stream".to_owned(),
            n => format!("Stream {n}"),
        };
        match parts.is_empty() {
            true => stream,
            false => format!("{stream} ({})", parts.join(", ")),
        }
    }
}

fn describe(place: &GpuPlace, meta: &Metadata, green: &[Green]) -> String {
    let process = match place.pid {
        Some(pid) => format!("{} (pid {pid})", process_name(meta, pid)),
        None => "unknown process".to_owned(),
    };
    let context = place
        .context
        .map_or("unknown".to_owned(), |c| c.to_string());
    let mut text = match place.stream {
        NO_STREAM => format!(
            "Work of {process}, context {context}, on no stream (CUPTI's stream id {NO_STREAM}): \
             synchronization on events and contexts"
        ),
        n => format!("CUDA stream {n} of {process}, context {context}"),
    };
    for g in green {
        text.push_str(&format!(", green context {}", g.id));
        let details: Vec<String> = [
            g.context
                .parent
                .map(|p| format!("created from context {p}")),
            g.context.sm_count.map(|n| format!("{n} SMs")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !details.is_empty() {
            text.push_str(&format!(" ({})", details.join(", ")));
        }
    }
    text.push_str(&format!(", device {}", place.device));
    text
}
