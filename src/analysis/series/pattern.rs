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
/// `cublas`, `nvtx`, `nvtx-gpu`; without a known prefix, a pattern is over
/// kernel names (which may themselves hold colons: a prefix followed by a
/// second colon, as in `cudnn::detail::.*`, is part of the name). The regular
/// expression matches anywhere in a name unless anchored (`^...$`).
#[derive(Clone, Debug)]
pub struct EventPattern {
    text: String,
    kind: EventKind,
    regex: Regex,
}

impl EventPattern {
    /// Parses `kind:regex` (see [`EventPattern`]); a regex that does not compile is an [`Error::InvalidOption`](crate::Error::InvalidOption).
    pub fn parse(text: &str) -> Result<EventPattern> {
        let (kind, expression) = EventKind::PREFIXES
            .iter()
            .find_map(|&(kind, prefix)| {
                text.strip_prefix(prefix)
                    // `cudnn::` opens a C++ name, not a pattern of cuDNN calls.
                    .filter(|rest| !rest.starts_with(':'))
                    .map(|rest| (kind, rest))
            })
            .unwrap_or((EventKind::Kernel, text));
        let regex = Regex::new(expression).map_err(|e| {
            // The regex crate's message spans lines, pointing at the error.
            let why = e.to_string().lines().last().unwrap_or_default().to_owned();
            Error::InvalidOption(format!(
                "event pattern {text:?} is not a valid regular expression: {}",
                why.trim_start_matches("error: ")
            ))
        })?;
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
    fn a_bad_expression_is_a_one_line_error() {
        let e = EventPattern::parse("nvtx:(forward")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"nvtx:(forward\""), "{e}");
        assert!(e.contains("unclosed group"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}
