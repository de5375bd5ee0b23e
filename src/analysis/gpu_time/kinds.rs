//! Kinds of GPU work, told apart by name.
//!
//! A kernel's kind is the first whose pattern matches its name (the
//! demangled name where the export has one, else the short name): the
//! user's kinds first, in the order given, then the built-in ones below, in
//! this order, then `other`. The order matters where names fit several:
//! cuDNN's implicit-GEMM convolutions are convolutions, not GEMMs; a
//! reduction inside an NCCL kernel is communication. The patterns are
//! case-insensitive regular expressions (Rust's `regex` syntax).
//!
//! Work that is not a kernel has a kind by what it is: `memcpy` and its
//! direction (`memcpy Host-to-Device`), `memset`, and `CUDA graph` for
//! graphs traced as a whole (`--cuda-graph-trace=graph`: their kernels are
//! not recorded one by one).
//!
//! The kind named [`COMMUNICATION`] is communication; every other kernel
//! kind is computation (for the overlap of the two).

use regex::RegexSet;
use rustc_hash::FxHashMap;

use crate::error::{Error, Result};

/// The kind whose kernels are communication.
pub(super) const COMMUNICATION: &str = "communication";
/// The kind of kernels no pattern matches.
pub(super) const OTHER: &str = "other";

/// The built-in kernel kinds and their patterns, in matching order.
pub(super) const BUILT_IN: [(&str, &str); 7] = [
    (
        COMMUNICATION,
        r"nccl|rccl|nvshmem|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|sendrecv|broadcast_kernel",
    ),
    ("attention", r"flash|fmha|attention|attn|sdpa|mha_"),
    (
        "convolution",
        r"conv|fprop|dgrad|wgrad|implicit_?gemm|winograd",
    ),
    (
        "GEMM",
        r"gemm|matmul|cutlass|cublas|xmma|nvjet|wgmma|triton_tem",
    ),
    (
        "normalization",
        r"(layer|batch|group|rms|instance|weight)_?norm|_norm_|norm_kernel|bn_fw|bn_bw|softmax",
    ),
    (
        "reduction",
        r"reduce|reduction|argmax|argmin|topk|sort|scan|triton_red|triton_per",
    ),
    (
        "elementwise",
        r"elementwise|pointwise|triton_poi|vectorized|unrolled|fill|copy|cast|index|gather|scatter|cat_?array|multi_tensor_apply|relu|gelu|silu|sigmoid|tanh|dropout",
    ),
];

/// A kind of kernel the user adds: its name and pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindPattern {
    /// What the kind is called in the report.
    pub name: String,
    /// A regular expression, matched case-insensitively anywhere in a
    /// kernel's name.
    pub pattern: String,
}

impl std::str::FromStr for KindPattern {
    type Err = Error;

    /// `NAME=REGEX`.
    fn from_str(spec: &str) -> Result<KindPattern> {
        let Some((name, pattern)) = spec.split_once('=') else {
            return Err(Error::InvalidOption(format!(
                "kind {spec:?}: expected NAME=REGEX"
            )));
        };
        let (name, pattern) = (name.trim(), pattern.trim());
        if name.is_empty() || pattern.is_empty() {
            return Err(Error::InvalidOption(format!(
                "kind {spec:?}: expected NAME=REGEX, both non-empty"
            )));
        }
        let what = format!("kind {name}: {pattern:?} is no regular expression");
        crate::pattern::compile(&what, &format!("(?i){pattern}"))?;
        Ok(KindPattern {
            name: name.to_owned(),
            pattern: pattern.to_owned(),
        })
    }
}

/// Names of kernels are cached with their kind up to this many; then the
/// cache starts over (memory does not grow with distinct names).
const CACHED: usize = 1 << 16;

/// The kinds of a report: kernel kinds by pattern, then the others as met.
pub(super) struct Kinds {
    patterns: RegexSet,
    /// Every kind's name, by number: first the kernel kinds in matching
    /// order, then `other`, then the kinds of other work as met.
    names: Vec<String>,
    pattern_kinds: Vec<usize>,
    other: usize,
    cache: FxHashMap<String, usize>,
}

impl Kinds {
    /// The user's kinds first, then the built-in ones.
    pub(super) fn new(user: &[KindPattern]) -> Result<Kinds> {
        let mut names: Vec<String> = Vec::new();
        let mut patterns = Vec::new();
        let mut pattern_kinds = Vec::new();
        let all = user
            .iter()
            .map(|k| (k.name.as_str(), k.pattern.as_str()))
            .chain(BUILT_IN);
        for (name, pattern) in all {
            let kind = match names.iter().position(|n| n == name) {
                Some(kind) => kind,
                None => {
                    names.push(name.to_owned());
                    names.len() - 1
                }
            };
            patterns.push(format!("(?i){pattern}"));
            pattern_kinds.push(kind);
        }
        let patterns = RegexSet::new(&patterns)
            .map_err(|e| Error::InvalidOption(format!("kind patterns: {e}")))?;
        let other = match names.iter().position(|n| n == OTHER) {
            Some(other) => other,
            None => {
                names.push(OTHER.to_owned());
                names.len() - 1
            }
        };
        Ok(Kinds {
            patterns,
            names,
            pattern_kinds,
            other,
            cache: FxHashMap::default(),
        })
    }

    /// The kind of a kernel of this name.
    pub(super) fn of_kernel(&mut self, name: &str) -> usize {
        if let Some(&kind) = self.cache.get(name) {
            return kind;
        }
        let kind = self
            .patterns
            .matches(name)
            .iter()
            .next()
            .map_or(self.other, |p| self.pattern_kinds[p]);
        if self.cache.len() >= CACHED {
            self.cache.clear();
        }
        self.cache.insert(name.to_owned(), kind);
        kind
    }

    /// The kind named `name` (a kind of work other than kernels), made if new.
    pub(super) fn named(&mut self, name: &str) -> usize {
        match self.names.iter().position(|n| n == name) {
            Some(kind) => kind,
            None => {
                self.names.push(name.to_owned());
                self.names.len() - 1
            }
        }
    }

    pub(super) fn is_communication(&self, kind: usize) -> bool {
        self.names[kind] == COMMUNICATION
    }

    pub(super) fn into_names(self) -> Vec<String> {
        self.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_kernel_names_fall_in_their_kinds() {
        let mut kinds = Kinds::new(&[]).unwrap();
        let cases = [
            (
                "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)",
                "GEMM",
            ),
            (
                "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3",
                "GEMM",
            ),
            (
                "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw",
                "convolution",
            ),
            (
                "void cudnn::engines_precompiled::wgrad_alg0_engine<float, 512, 6>",
                "convolution",
            ),
            (
                "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512>",
                "normalization",
            ),
            (
                "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
                "elementwise",
            ),
            (
                "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>",
                "reduction",
            ),
            (
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                "communication",
            ),
            (
                "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>>",
                "attention",
            ),
            (
                "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10>",
                "normalization",
            ),
            ("my_own_kernel", "other"),
        ];
        for (name, kind) in cases {
            let k = kinds.of_kernel(name);
            assert_eq!(kinds.names[k], kind, "{name}");
        }
    }

    #[test]
    fn user_kinds_come_first() {
        let user: KindPattern = "moe=expert|moe_".parse().unwrap();
        let gemm: KindPattern = "GEMM=grouped_gemm".parse().unwrap();
        let mut kinds = Kinds::new(&[user, gemm]).unwrap();
        let k = kinds.of_kernel("moe_align_block_size_kernel");
        assert_eq!(kinds.names[k], "moe");
        // A built-in name given again is one kind, its patterns together.
        let k = kinds.of_kernel("grouped_gemm_expert_kernel");
        assert_eq!(kinds.names[k], "moe");
        assert_eq!(kinds.names.iter().filter(|n| *n == "GEMM").count(), 1);
        assert!("moe".parse::<KindPattern>().is_err());
        assert!("moe=(".parse::<KindPattern>().is_err());
    }
}
