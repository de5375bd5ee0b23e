//! A report's headline on the hub's home page: how long its capture is,
//! how many GPUs it used and how busy they were, its top kernel; or why
//! it could not be read.

use serde::{Deserialize, Serialize};

use crate::analysis::gpu_time::RunReport;

/// What the home page says of one report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Headline {
    /// The capture's length (ns), where the export records it; else from
    /// the first to the last GPU work.
    pub capture_ns: Option<i64>,
    /// How many GPUs did work.
    pub gpus: usize,
    /// The GPUs' busy time over the capture, each GPU's share averaged
    /// (0 to 1); none without GPU work or capture.
    pub busy_share: Option<f64>,
    /// The kernel with most GPU time, and that time (ns).
    pub top_kernel: Option<(String, i128)>,
    /// Why there is no headline: the error the CLI prints for the file.
    pub error: Option<String>,
}

impl Headline {
    /// The headline of a run's report.
    pub fn of_run(run: &RunReport) -> Headline {
        let span = run.capture.map(|(start, end)| end - start).or_else(|| {
            let first = run.gpus.iter().map(|g| g.first_start).min()?;
            let last = run.gpus.iter().map(|g| g.last_end).max()?;
            Some(last - first)
        });
        let busy_share = match span {
            Some(span) if span > 0 && !run.gpus.is_empty() => Some(
                run.gpus
                    .iter()
                    .map(|g| g.busy as f64 / span as f64)
                    .sum::<f64>()
                    / run.gpus.len() as f64,
            ),
            _ => None,
        };
        Headline {
            capture_ns: span,
            gpus: run.gpus.len(),
            busy_share,
            top_kernel: run.top_kernels.first().map(|k| (k.name.clone(), k.time)),
            error: None,
        }
    }

    /// The headline of a file that could not be read: `error`, on one line.
    pub fn failed(error: &str) -> Headline {
        Headline {
            error: Some(error.replace(['\n', '\r'], " ")),
            ..Headline::default()
        }
    }
}
