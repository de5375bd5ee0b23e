//! Putting slices on lanes so that every track nests properly.
//!
//! Perfetto has no duration field: a slice is a BEGIN and an END on one track,
//! and an END closes the most recent open slice of that track. Slices that
//! overlap without nesting therefore go on extra lanes: sibling tracks with the
//! same name, which the UI shows as one row. Ends wait in a heap until the
//! sequence reaches their time, so packets leave in timestamp order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::tracks::{TrackId, TrackSpec};

/// A logical slice track, made of one or more lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SliceTrack(u32);

/// How slices of one [`SliceTrack`] may share a lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stacking {
    /// A slice may sit inside another (call stacks, push/pop ranges).
    Nest,
    /// At most one slice open per lane (GPU work: containment is not a call).
    Exclusive,
}

/// A time at which a slice is still open when its sequence ends.
pub(super) const OPEN: u64 = u64::MAX;

struct Lane {
    track: TrackId,
    /// Ends of the open slices, outermost first; [`OPEN`] for slices with no end.
    open_ends: Vec<u64>,
}

struct Group {
    spec: TrackSpec,
    stacking: Stacking,
    lanes: Vec<Lane>,
}

/// An END waiting to be written. Ordered by time; at equal times the slice
/// that began later (the inner one) ends first.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct PendingEnd {
    end: u64,
    begun: Reverse<u64>,
    group: u32,
    lane: u32,
}

#[derive(Default)]
pub(super) struct Lanes {
    groups: Vec<Group>,
    pending: BinaryHeap<Reverse<PendingEnd>>,
    begun: u64,
}

impl Lanes {
    pub(super) fn add(&mut self, spec: TrackSpec, stacking: Stacking) -> SliceTrack {
        let id = SliceTrack(self.groups.len() as u32);
        self.groups.push(Group {
            spec,
            stacking,
            lanes: Vec::new(),
        });
        id
    }

    /// The next END due at or before `t`, removed from its lane.
    pub(super) fn pop_due(&mut self, t: u64) -> Option<(u64, TrackId)> {
        let due = self.pending.peek().is_some_and(|Reverse(p)| p.end <= t);
        if !due {
            return None;
        }
        let Reverse(p) = self.pending.pop()?;
        let lane = &mut self.groups[p.group as usize].lanes[p.lane as usize];
        let closed = lane.open_ends.pop();
        debug_assert_eq!(closed, Some(p.end), "ends leave a lane innermost first");
        Some((p.end, lane.track))
    }

    /// Chooses the lane for a slice `[start, end)` (`end` = [`OPEN`] if it has
    /// none, `None` for an instant), creating one if none fits. Due ends must
    /// have been popped first. `new_track` makes a lane's track.
    pub(super) fn place(
        &mut self,
        new_track: impl FnOnce(&TrackSpec) -> TrackId,
        track: SliceTrack,
        start: u64,
        end: Option<u64>,
    ) -> TrackId {
        let group = &mut self.groups[track.0 as usize];
        let fits = |lane: &Lane| match (group.stacking, end) {
            (_, _) if lane.open_ends.is_empty() => true,
            (Stacking::Nest, None) => true,
            (Stacking::Nest, Some(end)) => lane.open_ends.last().is_some_and(|&outer| end <= outer),
            (Stacking::Exclusive, _) => false,
        };
        let index = match group.lanes.iter().position(fits) {
            Some(i) => i,
            None => {
                let lane_track = new_track(&group.spec);
                group.lanes.push(Lane {
                    track: lane_track,
                    open_ends: Vec::new(),
                });
                group.lanes.len() - 1
            }
        };
        let lane = &mut group.lanes[index];
        if let Some(end) = end {
            debug_assert!(end > start);
            lane.open_ends.push(end);
            self.begun += 1;
            self.pending.push(Reverse(PendingEnd {
                end,
                begun: Reverse(self.begun),
                group: track.0,
                lane: index as u32,
            }));
        }
        lane.track
    }
}
