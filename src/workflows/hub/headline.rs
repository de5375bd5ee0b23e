//! A report's headline on the hub's home page: how long its capture is,
//! how many GPUs it used and how busy they were, its top kernel; or why
//! it could not be read.

use serde::{Deserialize, Serialize};

use crate::analysis::gpu_time::RunReport;

/// What the home page says of one report. Kept in the hub's cache as
/// JSON: a headline of other fields (an older hub's) does not read, and
/// is made again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Headline {
    /// The capture's length (ns), where the export records it; else from
    /// the first to the last GPU work.
    pub capture_ns: Option<i64>,
    /// How many GPUs did work.
    pub gpus: usize,
    /// How busy the GPUs were while they worked: each GPU's busy time over
    /// its own work's span, from its first work to its last (the report
    /// page's "Busy" figure, `busy_share_of_span` of `report --format
    /// json`), averaged over the GPUs (0 to 1); none without GPU work. Not
    /// a share of the capture, which an export cropped around a second of
    /// work in minutes of capture would show as nearly idle.
    pub busy_of_span: Option<f64>,
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
        // A GPU whose work has no length was busy for none of it, as the
        // report page counts it.
        let busy_of_span = (!run.gpus.is_empty()).then(|| {
            run.gpus
                .iter()
                .map(|g| match g.span() {
                    0 => 0.0,
                    span => g.busy as f64 / span as f64,
                })
                .sum::<f64>()
                / run.gpus.len() as f64
        });
        Headline {
            capture_ns: span,
            gpus: run.gpus.len(),
            busy_of_span,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_headline_of_an_older_hub_does_not_read() {
        // What the hub kept before the busy share was of the GPUs' span.
        let older = r#"{"capture_ns":295658072752,"gpus":2,"busy_share":0.00326,"top_kernel":null,"error":null}"#;
        assert!(serde_json::from_str::<Headline>(older).is_err());
        let now = serde_json::to_string(&Headline::failed("x")).unwrap();
        assert_eq!(
            serde_json::from_str::<Headline>(&now).unwrap(),
            Headline::failed("x")
        );
    }
}
