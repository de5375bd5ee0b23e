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
    /// How busy the GPUs were while they worked: [`RunReport::busy_of_span`]
    /// (each GPU's `busy_share_of_span` of `report --format json`, averaged).
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
        Headline {
            capture_ns: span,
            gpus: run.gpus.len(),
            busy_of_span: run.busy_of_span(),
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
