//! `cuda_memset_sync`: synchronous `cudaMemset*` calls (no `async` in the
//! name) on pinned host memory or managed memory.

use crate::nsys::gpu_work::{GpuOp, OpKind};

use super::{like, Finding, Rule};

pub(super) const CALLS: &[&str] = &["cudaMemset%"];

/// `memKind`s: pinned, managed.
const KINDS: [i64; 2] = [1, 4];

pub(super) fn matches(name: &str) -> bool {
    like(name, "cudaMemset%") && !like(name, "%async%")
}

pub(super) fn check(api: &str, op: &GpuOp) -> Option<Finding> {
    let OpKind::Memset(memset) = op.kind else {
        return None;
    };
    let on_host_or_managed = memset.memory_kind.is_some_and(|k| KINDS.contains(&k));
    (matches(api) && on_host_or_managed).then(|| Finding::of_op(Rule::CudaMemsetSync, op, api))
}
