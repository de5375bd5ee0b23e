//! What the reports of a job are called: a label each (its rank and host,
//! or one given), the one rule of every command over several reports
//! (`merge`, `steps`, `report --step`).

use std::path::Path;

use regex::Regex;

use crate::error::{Error, Failure, Result};
use crate::nsys::Report;

/// How the reports' processes and GPUs are labelled.
#[derive(Clone, Debug)]
pub enum Labels {
    /// `rank N (host)`: the rank from the report's `MPI_RANKS`, else from
    /// the file name by this regex (its first group, or the whole match, as
    /// a number), else the report's place among the inputs (from 0); the host
    /// where the export records it.
    Ranks {
        /// Where a rank is read from a file name.
        from_name: Option<RankPattern>,
    },
    /// These labels, one for each input, in order.
    Given(Vec<String>),
}

impl Default for Labels {
    fn default() -> Self {
        Labels::Ranks { from_name: None }
    }
}

/// A regular expression that finds a rank in a file name: its first group,
/// or the whole match, read as a number (`report(\d+)`).
#[derive(Clone, Debug)]
pub struct RankPattern(Regex);

impl RankPattern {
    /// The pattern `text`, or [`Error::InvalidOption`] saying in one line
    /// why it is not a regular expression.
    pub fn new(text: &str) -> Result<RankPattern> {
        crate::pattern::compile("not a regular expression", text).map(RankPattern)
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The rank in `name`, if the pattern finds a number there.
    fn rank(&self, name: &str) -> Option<i64> {
        let found = self.0.captures(name)?;
        let text = found.get(1).or_else(|| found.get(0))?.as_str();
        text.parse::<i64>().ok()
    }
}

/// Where a report's rank came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankFrom {
    /// The report's `MPI_RANKS` table names one rank.
    MpiRanks,
    /// The file name, by the regex given.
    FileName,
    /// The report's place among the inputs.
    Order,
}

/// What a report of several is called: its label, its rank (with
/// [`Labels::Ranks`]) and its host.
pub(crate) struct Named {
    pub label: String,
    pub rank: Option<(i64, RankFrom)>,
    pub host: Option<String>,
}

/// Refuses given labels that are not one for each of `reports`.
pub(crate) fn check_labels(labels: &Labels, reports: usize) -> Result<()> {
    match labels {
        Labels::Given(labels) if labels.len() != reports => Err(Error::InvalidOption(format!(
            "{} labels for {reports} reports",
            labels.len()
        ))),
        _ => Ok(()),
    }
}

/// Names the report at `input`, the `place`-th of the inputs, as `labels`
/// say: the one rule of every command over the reports of a job.
pub(crate) fn named(report: &Report, input: &Path, place: usize, labels: &Labels) -> Result<Named> {
    let host = report.hostname().map_err(|e| Failure::Read(e).of(input))?;
    Ok(named_from(input, host, mpi_rank(report), place, labels))
}

/// The rank a report's `MPI_RANKS` table gives, where it names one only.
pub(crate) fn mpi_rank(report: &Report) -> Option<i64> {
    let mut ranks = report.meta().mpi_ranks.values().flatten();
    let first = *ranks.next()?;
    ranks.all(|&r| r == first).then_some(first)
}

/// [`named`] from what it reads of a report: its host and [`mpi_rank`],
/// for a report measured elsewhere.
pub(crate) fn named_from(
    input: &Path,
    host: Option<String>,
    mpi_rank: Option<i64>,
    place: usize,
    labels: &Labels,
) -> Named {
    let (label, rank) = match labels {
        Labels::Given(labels) => (labels[place].clone(), None),
        Labels::Ranks { from_name } => {
            let (rank, from) = rank_of(mpi_rank, input, from_name.as_ref(), place);
            let label = match &host {
                Some(host) => format!("rank {rank} ({host})"),
                None => format!("rank {rank}"),
            };
            (label, Some((rank, from)))
        }
    };
    Named { label, rank, host }
}

fn rank_of(
    mpi_rank: Option<i64>,
    input: &Path,
    from_name: Option<&RankPattern>,
    place: usize,
) -> (i64, RankFrom) {
    if let Some(rank) = mpi_rank {
        return (rank, RankFrom::MpiRanks);
    }
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let named = from_name.and_then(|pattern| pattern.rank(&name));
    match named {
        Some(rank) => (rank, RankFrom::FileName),
        None => (place as i64, RankFrom::Order),
    }
}
