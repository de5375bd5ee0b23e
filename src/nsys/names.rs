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

/// How summaries name NVTX ranges: as recorded (nsys's definition, the
/// default), or by [`group_name`], so that the ranges of one operator,
/// each named with per-instance decorations, sum together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RangeNames {
    /// Each range by its name as recorded, as `nsys stats` groups them.
    #[default]
    Recorded,
    /// Each range by [`group_name`] of its name.
    Grouped,
}

impl RangeNames {
    /// The name a range named `recorded` is summed under.
    pub fn of(self, recorded: &str) -> &str {
        match self {
            RangeNames::Recorded => recorded,
            RangeNames::Grouped => group_name(recorded),
        }
    }
}

/// The name of an NVTX range without what differs from one instance to the
/// next, so that the ranges of one operator group together. Two suffixes go,
/// in this order:
///
/// - the decorations PyTorch's `emit_nvtx` appends to an operator's name,
///   each `, KEY = VALUE` with KEY one of `seq` and `op_id` (VALUE digits),
///   `sizes` and `input_op_ids` (VALUE a bracketed list):
///   `aten::mm, seq = 12, op_id = 317126, sizes = [[8, 4], [4, 2]]` is
///   `aten::mm`. The whole tail must be such decorations, or nothing goes;
/// - then a number ending the name after `#` or a space, which counts
///   instances (`ProfilerStep#12`, `step 4`): `ProfilerStep`, `step`.
///
/// A number after `_` stays (`Identity_15`, `onnx::Conv_194_clone_2`,
/// `cublasCreate_v2`): joined by underscores, numbers name distinct layers
/// and versions. So do numbers inside a name (`encoder.block.3.layer.1`).
/// A name is never cut to nothing. Every rule cuts a suffix: the group name
/// is a prefix of the name.
pub fn group_name(name: &str) -> &str {
    let name = without_decorations(name);
    without_instance_number(name)
}

/// `name` without the `emit_nvtx` decorations that end it, if its tail is
/// made of nothing else.
fn without_decorations(name: &str) -> &str {
    const KEYS: [&str; 4] = [", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "];
    let mut from = 0;
    while let Some(at) = name[from..].find(", ").map(|i| from + i) {
        let tail = &name[at..];
        if at > 0 && KEYS.iter().any(|k| tail.starts_with(k)) && are_decorations(tail) {
            return &name[..at];
        }
        from = at + 2;
    }
    name
}

/// Whether `tail` is one or more `, KEY = VALUE` decorations and nothing more.
fn are_decorations(mut tail: &str) -> bool {
    while !tail.is_empty() {
        let Some(rest) = tail.strip_prefix(", ") else {
            return false;
        };
        let Some((key, value)) = rest.split_once(" = ") else {
            return false;
        };
        let length = match key {
            "seq" | "op_id" => value.bytes().take_while(u8::is_ascii_digit).count(),
            "sizes" | "input_op_ids" => bracketed_length(value),
            _ => 0,
        };
        if length == 0 {
            return false;
        }
        tail = &value[length..];
    }
    true
}

/// The length of the balanced `[...]` that starts `text` (brackets and
/// parentheses nest inside), or 0.
fn bracketed_length(text: &str) -> usize {
    if !text.starts_with('[') {
        return 0;
    }
    let mut open: Vec<u8> = Vec::new();
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'[' | b'(' => open.push(b),
            b']' | b')' => {
                let opener = if b == b']' { b'[' } else { b'(' };
                if open.pop() != Some(opener) {
                    return 0;
                }
                if open.is_empty() {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    0
}

/// `name` without a number that ends it after `#` or a space.
fn without_instance_number(name: &str) -> &str {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    let before = &name[..name.len() - digits];
    match before.strip_suffix(['#', ' ']) {
        Some(kept) if digits > 0 && !kept.is_empty() => kept,
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_drops_any_version_suffix() {
        for (recorded, printed) in [
            ("cudaLaunchKernel_v7000", "cudaLaunchKernel"),
            ("cudaGraphLaunch_v10000", "cudaGraphLaunch"),
            ("cuLaunchKernel", "cuLaunchKernel"),
            ("cudaMemcpy_v", "cudaMemcpy_v"),
            ("foo_vx12", "foo_vx12"),
            ("_v12", "_v12"),
            ("cuda_v2_v3", "cuda_v2"),
        ] {
            assert_eq!(api_trace_name(recorded), printed, "{recorded}");
        }
    }

    #[test]
    fn reports_drop_six_characters_as_nsys_does() {
        for (recorded, printed) in [
            ("cudaLaunchKernel_v7000", "cudaLaunchKernel"),
            ("cudaGraphLaunch_v10000", "cudaGraphLaunch_v10000"),
            ("cuLibraryLoadData", "cuLibraryLoadData"),
            ("_v1234", ""),
            ("v1234", "v1234"),
        ] {
            assert_eq!(api_stats_name(recorded), printed, "{recorded}");
        }
    }

    #[test]
    fn copies_are_named_by_kind() {
        assert_eq!(memcpy_stats_name(1), "[CUDA memcpy Host-to-Device]");
        assert_eq!(memcpy_stats_name(99), "[CUDA memcpy Unknown]");
        assert_eq!(COPY_KINDS[11].short, "Unified HtoD");
    }

    /// Names recorded in the fixtures (../shared/fixtures/sqlite), each with
    /// the export it comes from.
    #[test]
    fn pytorch_decorations_go() {
        // nsys-ai_h100_2gpu_1s: emit_nvtx with op ids.
        assert_eq!(group_name("aten::mm, op_id = 314357"), "aten::mm");
        assert_eq!(
            group_name("FSDP::pre_forward (encoder.block.14.layer.1), op_id = 314311"),
            "FSDP::pre_forward (encoder.block.14.layer.1)"
        );
        // dlprof_nsys_profile: emit_nvtx with sequence numbers.
        assert_eq!(
            group_name("aten::cudnn_convolution, seq = 0"),
            "aten::cudnn_convolution"
        );
        assert_eq!(group_name("aten::as_strided"), "aten::as_strided");
        // The other decorations, as PyTorch writes them with
        // record_shapes=True (no fixture recorded shapes).
        assert_eq!(
            group_name(
                "aten::addmm, seq = 8, op_id = 41, sizes = [[84], [1, 120], [120, 84], [], []], \
                 input_op_ids = [(39,0), (40,0), (0,0)]"
            ),
            "aten::addmm"
        );
        assert_eq!(group_name("aten::t, sizes = [[84, 120]]"), "aten::t");
    }

    #[test]
    fn instance_numbers_go() {
        // h100_torch_graph_node: `nvtx.range(f"step {step}")`.
        assert_eq!(group_name("step 4"), "step");
        // PyTorch profiler steps, decorated or not.
        assert_eq!(group_name("ProfilerStep#12"), "ProfilerStep");
        assert_eq!(group_name("ProfilerStep#3, op_id = 17"), "ProfilerStep");
    }

    #[test]
    fn names_of_distinct_things_stay() {
        // h100_torch_graph_node.
        for name in ["graph replay", "ncclAllReduce", "cublasCreate_v2"] {
            assert_eq!(group_name(name), name);
        }
        // memfusion_report1: TensorRT layers.
        for name in [
            "Identity_15",
            "onnx::Conv_194_clone_2",
            "/layer4/layer4.0/downsample/downsample.0/Conv + /layer4/layer4.0/Add + \
             /layer4/layer4.0/relu_1/Relu",
        ] {
            assert_eq!(group_name(name), name);
        }
        // llama3_real_inference_simulation.
        for name in ["layer_6_token_45", "token_9_processing"] {
            assert_eq!(group_name(name), name);
        }
        // dlprof_nsys_profile: a pyprof marker, commas and all.
        let marker = "{'mod': 'Tensor', 'op': 'cuda', 'args': [{'name': '', 'type': \
                      'tensor', 'shape': (120, 400), 'dtype': 'float32'}]}";
        assert_eq!(group_name(marker), marker);
    }

    #[test]
    fn only_whole_decorations_go_and_never_all() {
        for name in [
            "f, seq = x",
            "f, seq = 1, shape = [1]",
            "f, sizes = [[1, 2]",
            "f, sizes = [1)",
            "f, seq = ",
            "#12",
            "12",
            "step",
        ] {
            assert_eq!(group_name(name), name, "{name}");
        }
        assert_eq!(group_name("a, seq = 1, b, seq = 2"), "a, seq = 1, b");
        assert_eq!(group_name("epoch 2 step 40"), "epoch 2 step");
        assert_eq!(RangeNames::Recorded.of("step 4"), "step 4");
        assert_eq!(RangeNames::Grouped.of("step 4"), "step");
    }
}
