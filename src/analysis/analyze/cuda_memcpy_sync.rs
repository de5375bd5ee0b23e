//! `cuda_memcpy_sync`: copies made by synchronous `cudaMemcpy*` calls (no
//! `Async` in the name), which block the host while they run. Left out, as
//! by nsys: host-to-device copies of 64 000 bytes or less (the call returns
//! once the data is staged) and copies within one device.

use crate::nsys::gpu_work::{GpuOp, OpKind};

use super::{like, Finding, Rule};

pub(super) const CALLS: &[&str] = &["cudaMemcpy%"];

/// `copyKind` of a host-to-device copy.
const HOST_TO_DEVICE: i64 = 1;
/// The largest host-to-device copy that does not block.
const STAGED_BYTES: i64 = 64_000;

pub(super) fn matches(name: &str) -> bool {
    like(name, "cudaMemcpy%") && !like(name, "%Async%")
}

pub(super) fn check(api: &str, op: &GpuOp) -> Option<Finding> {
    let OpKind::Memcpy(copy, devices) = op.kind else {
        return None;
    };
    if !matches(api) {
        return None;
    }
    // The definition is SQL: a comparison with NULL is neither true nor false,
    // and a row whose test is not true is left out.
    let staged = match (copy.bytes, copy.copy_kind) {
        (Some(b), Some(k)) => Some(b <= STAGED_BYTES && k == HOST_TO_DEVICE),
        (Some(b), None) if b > STAGED_BYTES => Some(false),
        (None, Some(k)) if k != HOST_TO_DEVICE => Some(false),
        _ => None,
    };
    let between_devices = match (devices.src_device_id, devices.dst_device_id) {
        (None, _) => true,
        (Some(s), Some(d)) => s != d,
        (Some(_), None) => false,
    };
    (staged == Some(false) && between_devices)
        .then(|| Finding::of_op(Rule::CudaMemcpySync, op, api))
}
