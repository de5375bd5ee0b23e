//! The events a summary counts: those whose times can be right.

use std::hash::Hash;

use crate::error::Failure;
use crate::nsys::cuda::CudaEvent;
use crate::nsys::{Report, RowFilter, Streamed, TimeCheck};

use super::aggregate::Groups;
use super::spill::SpillKey;

/// Calls `f` with each CUDA event of `report` whose times can be right;
/// the others are left out, counted into the report (see [`TimeCheck`]).
pub(super) fn each_plausible_cuda_event(
    report: &Report,
    mut f: impl FnMut(CudaEvent<'_>) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut check = TimeCheck::new(report)?;
    report.for_each_cuda_event(&RowFilter::none(), |streamed| match streamed {
        Streamed::Event(event) if check.allow_event(&event) => f(event),
        _ => Ok(()),
    })
}

/// Groups of the events whose times can be right; the others are left
/// out, counted into the report (see [`TimeCheck`]).
pub(super) struct PlausibleGroups<K> {
    pub(super) groups: Groups<K>,
    check: TimeCheck,
}

impl<K: Hash + Eq + Clone + SpillKey> PlausibleGroups<K> {
    pub(super) fn new(report: &Report) -> Result<Self, Failure> {
        Ok(PlausibleGroups {
            groups: Groups::default(),
            check: TimeCheck::new(report)?,
        })
    }

    /// Adds `value` to the group of `key`, for an event of `table` from
    /// `start` to `end`.
    pub(super) fn add(
        &mut self,
        table: &'static str,
        (start, end): (i64, i64),
        key: &K,
        value: i64,
    ) {
        if self.check.allow(table, start, end) {
            self.groups.add(key, value);
        }
    }

    /// Adds the duration of an event of `table` to the group of `key`.
    pub(super) fn add_span(&mut self, table: &'static str, key: &K, start: i64, end: i64) {
        if self.check.allow(table, start, end) {
            self.groups.add_span(key, start, end);
        }
    }
}

impl PlausibleGroups<String> {
    /// [`PlausibleGroups::add_span`] to the group named `name`, borrowed
    /// from a row (see [`Groups::add_named_span`]).
    pub(super) fn add_named_span(&mut self, table: &'static str, name: &str, start: i64, end: i64) {
        if self.check.allow(table, start, end) {
            self.groups.add_named_span(name, start, end);
        }
    }
}
