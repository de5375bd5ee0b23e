//! GPU tracks: a top-level group per device, one track per (process, context,
//! stream) inside it, in numeric order.

use rustc_hash::FxHashMap;

use crate::nsys::cuda::GpuPlace;
use crate::nsys::Metadata;
use crate::perfetto::{SliceTrack, Stacking, TrackId, TrackSpec, Tracks};

use super::threads::process_name;

#[derive(Default)]
pub struct GpuTracks {
    streams: FxHashMap<GpuPlace, SliceTrack>,
    devices: FxHashMap<i64, TrackId>,
}

/// The top-level group of GPU `device`, shared by every part of the trace
/// that has something on that GPU.
pub fn device_group(tracks: &mut Tracks, meta: &Metadata, device: i64) -> TrackId {
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
    pub fn new<W: std::io::Write>(
        seq: &mut crate::perfetto::SequenceWriter<'_, W>,
        meta: &Metadata,
        places: &[GpuPlace],
    ) -> Self {
        let mut devices = FxHashMap::default();
        let mut streams = FxHashMap::default();
        for (rank, place) in places.iter().enumerate() {
            let device = *devices
                .entry(place.device)
                .or_insert_with(|| device_group(&mut seq.tracks(), meta, place.device));
            // Name the process and context only where the device has several.
            let shared = places.iter().any(|p| {
                p.device == place.device && (p.pid, p.context) != (place.pid, place.context)
            });
            let mut spec = TrackSpec::new(Some(device), stream_name(place, shared));
            spec.rank = i32::try_from(rank).ok();
            spec.description = Some(describe(place, meta));
            streams.insert(*place, seq.slice_track(spec, Stacking::Exclusive));
        }
        Self { streams, devices }
    }

    /// The group of device `device`, if it has GPU work.
    pub fn device_group(&self, device: i64) -> Option<TrackId> {
        self.devices.get(&device).copied()
    }

    pub fn track(&self, place: &GpuPlace) -> SliceTrack {
        self.streams[place]
    }
}

fn stream_name(place: &GpuPlace, shared: bool) -> String {
    if !shared {
        return format!("Stream {}", place.stream);
    }
    match (place.pid, place.context) {
        (Some(pid), Some(ctx)) => format!("Stream {} (pid {pid}, context {ctx})", place.stream),
        (Some(pid), None) => format!("Stream {} (pid {pid})", place.stream),
        (None, Some(ctx)) => format!("Stream {} (context {ctx})", place.stream),
        (None, None) => format!("Stream {}", place.stream),
    }
}

fn describe(place: &GpuPlace, meta: &Metadata) -> String {
    let process = match place.pid {
        Some(pid) => format!("{} (pid {pid})", process_name(meta, pid)),
        None => "unknown process".to_owned(),
    };
    let context = place
        .context
        .map_or("unknown".to_owned(), |c| c.to_string());
    format!(
        "CUDA stream {} of {process}, context {context}, device {}",
        place.stream, place.device
    )
}
