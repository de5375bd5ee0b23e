//! The names of things an export records as numbers or in a recorded form:
//! CUDA API names, memcpy kinds and memory kinds, each named here once.
//!
//! Where the trace and the summaries that follow nsys's own reports name one
//! thing differently, both forms are here, side by side, with why.

/// A CUDA API name as the trace shows it: the recorded name without its
/// version suffix, `_v` and digits (`cudaLaunchKernel_v7000` and
/// `cudaGraphLaunch_v10000` are `cudaLaunchKernel` and `cudaGraphLaunch`).
pub(crate) fn api_trace_name(recorded: &str) -> &str {
    match recorded.rsplit_once('_') {
        Some((name, suffix))
            if !name.is_empty()
                && suffix.len() > 1
                && suffix.starts_with('v')
                && suffix[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            name
        }
        _ => recorded,
    }
}

/// A CUDA API name as nsys's reports print it (and as `stats`, `compare`
/// and `series` match it): nsys drops the last six characters when they
/// start with `_v`, whatever follows, so `cudaLaunchKernel_v7000` is
/// `cudaLaunchKernel` but `cudaGraphLaunch_v10000` stays whole, unlike in
/// the trace ([`api_trace_name`]).
pub(crate) fn api_stats_name(recorded: &str) -> &str {
    let chars: Vec<(usize, char)> = recorded.char_indices().collect();
    match chars.len().checked_sub(6) {
        Some(at) if chars[at].1 == '_' && chars[at + 1].1 == 'v' => &recorded[..chars[at].0],
        _ => recorded,
    }
}

/// A `copyKind` (`CUDA_MEMCPY_KIND_*`) named two ways: as nsys's reports
/// and the `ENUM_CUDA_MEMCPY_OPER` labels of newer exports name it, and in
/// the short form the trace shows for exports without those labels.
pub(crate) struct CopyKind {
    pub label: &'static str,
    pub short: &'static str,
}

/// The `copyKind` values 0 to 13.
pub(crate) const COPY_KINDS: [CopyKind; 14] = {
    const fn kind(label: &'static str, short: &'static str) -> CopyKind {
        CopyKind { label, short }
    }
    [
        kind("Unknown", "Unknown"),
        kind("Host-to-Device", "HtoD"),
        kind("Device-to-Host", "DtoH"),
        kind("Host-to-Array", "HtoA"),
        kind("Array-to-Host", "AtoH"),
        kind("Array-to-Array", "AtoA"),
        kind("Array-to-Device", "AtoD"),
        kind("Device-to-Array", "DtoA"),
        kind("Device-to-Device", "DtoD"),
        kind("Host-to-Host", "HtoH"),
        kind("Peer-to-Peer", "PtoP"),
        kind("Unified Host-to-Device", "Unified HtoD"),
        kind("Unified Device-to-Host", "Unified DtoH"),
        kind("Unified Device-to-Device", "Unified DtoD"),
    ]
};

/// `[CUDA memcpy Host-to-Device]`: a copy named by its `copyKind` as nsys's
/// reports name it (an unknown kind as `Unknown`).
pub(crate) fn memcpy_stats_name(kind: i64) -> String {
    let label = usize::try_from(kind)
        .ok()
        .and_then(|k| COPY_KINDS.get(k))
        .unwrap_or(&COPY_KINDS[0])
        .label;
    format!("[CUDA memcpy {label}]")
}

/// A memset, as nsys's reports name it.
pub(crate) const MEMSET_STATS_NAME: &str = "[CUDA memset]";

/// The names of `CUPTI_ACTIVITY_MEMORY_KIND` values 0 to 7, as nsys prints
/// them; exports without an ENUM_ table of them use these values.
pub(crate) const MEMORY_KINDS: [&str; 8] = [
    "Pageable",
    "Pinned",
    "Device",
    "Array",
    "Managed",
    "Device Static",
    "Managed Static",
    "Unknown",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_drops_any_version_suffix() {
        assert_eq!(api_trace_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(api_trace_name("cudaGraphLaunch_v10000"), "cudaGraphLaunch");
        assert_eq!(api_trace_name("cuLaunchKernel"), "cuLaunchKernel");
        assert_eq!(api_trace_name("cudaMemcpy_v"), "cudaMemcpy_v");
        assert_eq!(api_trace_name("foo_vx12"), "foo_vx12");
        assert_eq!(api_trace_name("_v12"), "_v12");
        assert_eq!(api_trace_name("cuda_v2_v3"), "cuda_v2");
    }

    #[test]
    fn reports_drop_six_characters_as_nsys_does() {
        assert_eq!(api_stats_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(
            api_stats_name("cudaGraphLaunch_v10000"),
            "cudaGraphLaunch_v10000"
        );
        assert_eq!(api_stats_name("cuLibraryLoadData"), "cuLibraryLoadData");
        assert_eq!(api_stats_name("_v1234"), "");
        assert_eq!(api_stats_name("v1234"), "v1234");
    }

    #[test]
    fn copies_are_named_by_kind() {
        assert_eq!(memcpy_stats_name(1), "[CUDA memcpy Host-to-Device]");
        assert_eq!(memcpy_stats_name(99), "[CUDA memcpy Unknown]");
        assert_eq!(COPY_KINDS[11].short, "Unified HtoD");
    }
}
