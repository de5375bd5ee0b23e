//! `cuda_memcpy_async`: copies made by `cudaMemcpy*Async` calls from or to
//! pageable memory. CUDA stages such a copy through a pinned buffer, and the
//! call returns only when it is done: it is synchronous in fact.

use crate::nsys::gpu_work::{GpuOp, OpKind};

use super::{like, Finding, Rule};

pub(super) const CALLS: &[&str] = &["cudaMemcpy%Async%"];

/// `srcKind`/`dstKind` of pageable memory.
const PAGEABLE: i64 = 0;

pub(super) fn matches(name: &str) -> bool {
    like(name, "cudaMemcpy%Async%")
}

pub(super) fn check(api: &str, op: &GpuOp) -> Option<Finding> {
    let OpKind::Memcpy(copy, _) = op.kind else {
        return None;
    };
    let pageable = copy.src_kind == Some(PAGEABLE) || copy.dst_kind == Some(PAGEABLE);
    (matches(api) && pageable).then(|| Finding::of_op(Rule::CudaMemcpyAsync, op, api))
}
