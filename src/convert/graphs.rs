//! The creation of CUDA graphs, execs and nodes: instants (slices where they
//! last) on a "CUDA graphs" track of the calling thread, with the graph and
//! node ids as args. A kernel, memcpy or memset run as a graph node has the
//! same `graph_node_id` arg: searching for it finds where its node was made,
//! and `original_graph_node_id` leads on to the node it was instantiated from.

use std::io::Write;

use rustc_hash::FxHashMap;

use crate::nsys::graphs::GraphCreation;
use crate::nsys::Metadata;
use crate::perfetto::{Arg, ArgValue, SequenceWriter, Slice, SliceTrack, Stacking, TrackSpec};

use super::summary::Summary;
use super::threads::thread_track;
use crate::error::Failure;

pub(super) const GRAPH_CREATION: &str = "cuda_graph_creation";

#[derive(Default)]
pub(super) struct GraphCreations {
    /// The "CUDA graphs" track of each (pid, tid).
    tracks: FxHashMap<(u32, u32), SliceTrack>,
}

impl GraphCreations {
    pub(super) fn write<W: Write>(
        &mut self,
        seq: &mut SequenceWriter<'_, W>,
        meta: &Metadata,
        e: &GraphCreation,
        summary: &mut Summary,
    ) -> Result<(), Failure> {
        let Some(start) = summary.checked_start(e.start, GRAPH_CREATION) else {
            return Ok(());
        };
        let track = *self.tracks.entry((e.pid, e.tid)).or_insert_with(|| {
            let thread = seq.with_tracks(|t| thread_track(t, meta, e.pid, e.tid));
            seq.slice_track(TrackSpec::new(Some(thread), "CUDA graphs"), Stacking::Nest)
        });
        let ids = [
            ("graph_id", e.ids.graph_id),
            ("original_graph_id", e.ids.original_graph_id),
            ("graph_exec_id", e.ids.graph_exec_id),
            ("graph_node_id", e.ids.graph_node_id),
            ("original_graph_node_id", e.ids.original_graph_node_id),
        ];
        let args: Vec<Arg> = ids
            .into_iter()
            .filter_map(|(name, id)| Some(Arg::new(name, ArgValue::Int(id?))))
            .collect();
        let name = match (e.name, e.ids.event_class) {
            ("", class) => class_name(class),
            (name, _) => name,
        };
        let end = summary.checked_end(start, e.end);
        seq.slice(
            track,
            &Slice::new(start, Some(end), name, GRAPH_CREATION, &args),
        )?;
        summary.count(GRAPH_CREATION);
        Ok(())
    }
}

/// What a row of `ENUM_NSYS_EVENT_CLASS` records, for rows without a name.
fn class_name(class: Option<i64>) -> &'static str {
    match class {
        Some(77) => "CUDA graph node creation",
        Some(94) => "CUDA graph exec creation",
        Some(95) => "CUDA graph creation",
        Some(96) => "CUDA graph clone",
        _ => "CUDA graph event",
    }
}
