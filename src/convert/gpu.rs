//! GPU tracks: a top-level group per device, one track per (process, context,
//! stream) inside it, in numeric order.

use rustc_hash::FxHashMap;

use crate::nsys::cuda::GpuPlace;
use crate::nsys::Metadata;
use crate::perfetto::{SliceTrack, Stacking, TrackId, TrackSpec};

use super::threads::process_name;

#[derive(Default)]
pub struct GpuTracks {
    streams: FxHashMap<GpuPlace, SliceTrack>,
    devices: FxHashMap<i64, TrackId>,
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
            let device = *devices.entry(place.device).or_insert_with(|| {
                let name = match meta.gpus.get(&place.device) {
                    Some(gpu) => format!("GPU {}: {gpu}", place.device),
                    None => format!("GPU {}", place.device),
                };
                let mut spec = TrackSpec::new(None, name);
                spec.ordered_children = true;
                spec.rank = i32::try_from(place.device).ok();
                seq.add_track(spec)
            });
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
