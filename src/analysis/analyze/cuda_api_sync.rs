//! `cuda_api_sync`: calls that block the host until the GPU work issued
//! before them is done (`cudaDeviceSynchronize`, `cudaStreamSynchronize`).

use crate::nsys::cuda::ApiCall;

use super::{like, Finding, Place, Rule};

/// The calls, as `LIKE` patterns.
pub(super) const CALLS: &[&str] = &["cudaDeviceSynchronize%", "cudaStreamSynchronize%"];

pub(super) fn matches(name: &str) -> bool {
    CALLS.iter().any(|p| like(name, p))
}

pub(super) fn finding(call: &ApiCall) -> Finding {
    let place = Place::Thread {
        pid: call.pid,
        tid: call.tid,
    };
    let mut f = Finding::new(Rule::CudaApiSync, call.start, call.end, place);
    f.api = Some(call.name.to_owned());
    f.correlation_ids.extend(call.correlation_id);
    f
}
