//! Event patterns: which events of a report a row of a series measures.

use std::fmt;
use std::str::FromStr;

use regex::Regex;

use crate::error::{Error, Result};

/// What kind of event a pattern matches, and by which name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// GPU kernels, by short or demangled name; their GPU time.
    Kernel,
    /// CUDA runtime and driver API calls, by name as recorded
    /// (`cudaLaunchKernel_v7000`) or as `stats` prints it
    /// (`cudaLaunchKernel`); their CPU time.
    CudaApi,
    /// cuDNN calls (`CUDNN_EVENTS`); their CPU time.
    Cudnn,
    /// cuBLAS calls (`CUBLAS_EVENTS`); their CPU time.
    Cublas,
    /// NVTX ranges (push/pop and start/end), by message; their CPU time.
    Nvtx,
    /// NVTX ranges by their projection onto the GPU: from the first start to
    /// the last end of the GPU work launched inside each range.
    NvtxGpu,
}

impl EventKind {
    /// Every kind, each with the prefix that selects it.
    pub const PREFIXES: [(EventKind, &'static str); 6] = [
        (EventKind::Kernel, "kernel:"),
        (EventKind::CudaApi, "api:"),
        (EventKind::Cudnn, "cudnn:"),
        (EventKind::Cublas, "cublas:"),
        (EventKind::Nvtx, "nvtx:"),
        (EventKind::NvtxGpu, "nvtx-gpu:"),
    ];

    /// Whether the time measured is the GPU's (else the CPU's).
    pub fn is_gpu_time(self) -> bool {
        matches!(self, EventKind::Kernel | EventKind::NvtxGpu)
    }
}

/// A regular expression over the names of one kind of event.
///
/// Written `KIND:REGEX`, with `KIND` one of `kernel`, `api`, `cudnn`,
/// `cublas`, `nvtx`, `nvtx-gpu`; without a prefix, a pattern is over kernel
/// names (which may themselves hold colons: a word followed by a second
/// colon, as in `cudnn::detail::.*`, is part of the name). Any other word
/// followed by one colon (`kernal:`, `NVTX:`) is refused as a misspelt
/// prefix: `kernel:` takes a kernel name that starts so. The regular
/// expression matches anywhere in a name unless anchored (`^...$`).
#[derive(Clone, Debug)]
pub struct EventPattern {
    text: String,
    kind: EventKind,
    regex: Regex,
}

impl EventPattern {
    /// Parses `kind:regex` (see [`EventPattern`]); an unknown prefix, or a
    /// regex that does not compile, is an
    /// [`Error::InvalidOption`](crate::Error::InvalidOption).
    pub fn parse(text: &str) -> Result<EventPattern> {
        let prefixed = EventKind::PREFIXES.iter().find_map(|&(kind, prefix)| {
            text.strip_prefix(prefix)
                // `cudnn::` opens a C++ name, not a pattern of cuDNN calls.
                .filter(|rest| !rest.starts_with(':'))
                .map(|rest| (kind, rest))
        });
        let (kind, expression) = match (prefixed, unknown_prefix(text)) {
            (Some(known), _) => known,
            (None, Some(prefix)) => {
                let known: Vec<&str> = EventKind::PREFIXES.iter().map(|(_, p)| *p).collect();
                return Err(Error::InvalidOption(format!(
                    "event pattern {text:?}: unknown kind {prefix:?} (the kinds: {}; \
                     kernel:{text} for a kernel name that starts so)",
                    known.join(", ")
                )));
            }
            (None, None) => (EventKind::Kernel, text),
        };
        let what = format!("event pattern {text:?} is not a valid regular expression");
        let regex = crate::pattern::compile(&what, expression)?;
        Ok(EventPattern {
            text: text.to_owned(),
            kind,
            regex,
        })
    }

    /// The pattern as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The kind of events it is over.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// Whether `name` (of an event of its kind) matches.
    pub fn matches(&self, name: &str) -> bool {
        self.regex.is_match(name)
    }
}

/// The prefix `text` starts with when it is none of the known ones: a word
/// (a letter, then letters, digits, `-` or `_`) and one colon, as a
/// misspelt `kernal:` or `NVTX:`. A word and two colons opens a C++ name.
fn unknown_prefix(text: &str) -> Option<&str> {
    let word = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(text.len());
    let starts_with_letter = text.starts_with(|c: char| c.is_ascii_alphabetic());
    let rest = &text[word..];
    (starts_with_letter && rest.starts_with(':') && !rest.starts_with("::")).then(|| &text[..=word])
}

impl FromStr for EventPattern {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        EventPattern::parse(text)
    }
}

impl fmt::Display for EventPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_select_the_kind_and_the_rest_is_the_expression() {
        let p = EventPattern::parse("nvtx-gpu:^forward$").unwrap();
        assert_eq!(p.kind(), EventKind::NvtxGpu);
        assert!(p.matches("forward"));
        assert!(!p.matches("forward pass"));
        let p = EventPattern::parse("nvtx:forward").unwrap();
        assert_eq!(p.kind(), EventKind::Nvtx);
        assert!(p.matches("the forward pass"));
        assert_eq!(p.text(), "nvtx:forward");
        let p = EventPattern::parse("cudnn::detail::.*").unwrap();
        assert_eq!(
            p.kind(),
            EventKind::Kernel,
            "an unknown prefix is part of a kernel name"
        );
        assert!(p.matches("void cudnn::detail::implicit_convolve_sgemm"));
        assert_eq!(
            EventPattern::parse("api:cudaMemcpy").unwrap().kind(),
            EventKind::CudaApi
        );
    }

    #[test]
    fn an_unknown_prefix_is_refused_naming_the_kinds() {
        for text in [
            "kernal:sgemm",
            "NVTX:forward",
            "Api:cudaFree",
            "nvtx_gpu:step",
        ] {
            let e = EventPattern::parse(text).unwrap_err().to_string();
            assert!(e.contains("unknown kind"), "{text}: {e}");
            for (_, prefix) in EventKind::PREFIXES {
                assert!(e.contains(prefix), "{text}: {e}");
            }
        }
        // Colons that are no prefix: C++ names, regex syntax.
        for text in ["at::native::vectorized", "(?i:gemm)", "sgemm", "a|b:c"] {
            let p = EventPattern::parse(text).unwrap();
            assert_eq!(p.kind(), EventKind::Kernel, "{text}");
        }
        let p = EventPattern::parse("kernel:kernal:sgemm").unwrap();
        assert!(p.matches("kernal:sgemm_128"));
    }

    #[test]
    fn a_bad_expression_is_a_one_line_error() {
        let e = EventPattern::parse("nvtx:(forward")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"nvtx:(forward\""), "{e}");
        assert!(e.contains("unclosed group"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
