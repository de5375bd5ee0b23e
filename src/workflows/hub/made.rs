//! What the hub makes of several runs, as the CLI makes it: both runs of a
//! comparison in one trace (`compare A B --trace`) and a merge of a job's
//! reports into one trace (`merge`). Each is made once, as a job, and kept
//! in the cache under the keys of its runs (in their order).

use super::bound::Pinned;
use super::cache::{Cache, CacheKey};
use super::catalog::Entry;
use crate::error::Result;
use crate::merge::{merge_files, Alignment, Labels, MergeOptions, MergeProgress};
use crate::workflows::output::OutputFile;
use crate::{Options, Progress};

/// A trace made of several runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Made {
    /// Two runs, labelled A and B, aligned on their first GPU work: `compare
    /// A B --trace`.
    Compared,
    /// The reports of one job, labelled by rank, aligned on their session
    /// starts: `merge`.
    Merged,
}

impl Made {
    /// Its name in URLs and in the cache.
    pub fn name(self) -> &'static str {
        match self {
            Made::Compared => "compare",
            Made::Merged => "merge",
        }
    }

    /// The options of `merge_files` that make it, as the CLI's command does.
    fn merge_options(self) -> MergeOptions {
        let mut merge = MergeOptions::default();
        match self {
            Made::Compared => {
                merge.alignment = Alignment::FirstGpuWork;
                merge.labels = Labels::Given(vec!["A".into(), "B".into()]);
            }
            Made::Merged => {
                merge.labels = Labels::Ranks { from_name: None };
            }
        }
        merge
    }

    /// The name of its download, after its runs: `A-vs-B` compared;
    /// merged, the runs joined by `+` (past [`LONGEST_NAME`] bytes, the
    /// first and how many more).
    pub fn download_name(self, entries: &[Entry]) -> String {
        let stems: Vec<&str> = entries.iter().map(Entry::stem).collect();
        let named = match self {
            Made::Compared => stems.join("-vs-"),
            Made::Merged if stems.join("+").len() > LONGEST_NAME && stems.len() > 1 => {
                format!("{}+{}-more", stems[0], stems.len() - 1)
            }
            Made::Merged => stems.join("+"),
        };
        format!("{named}.perfetto-trace")
    }

    /// How many runs it takes: exactly (compare), or at least (merge).
    pub fn runs_needed(self) -> (usize, bool) {
        match self {
            Made::Compared => (2, true),
            Made::Merged => (1, false),
        }
    }
}

/// The longest name of a merge's download made of all its runs' names.
const LONGEST_NAME: usize = 120;

/// The progress of a merge as one fraction of rows: each report one
/// thousandth-slice of the whole, its rows a share of it.
fn overall(progress: MergeProgress) -> Progress {
    let share = progress
        .conversion
        .map_or(0.0, |c| c.rows_read as f64 / c.rows_total.max(1) as f64);
    Progress {
        rows_read: 1000 * progress.report as u64 + (1000.0 * share) as u64,
        rows_total: 1000 * progress.reports as u64,
    }
}

impl Cache {
    /// The key of what `made` makes of `entries`, in their order.
    pub fn made_key(made: Made, entries: &[Entry]) -> String {
        let keys: Vec<String> = entries
            .iter()
            .map(|e| CacheKey::of(e).as_str().to_owned())
            .collect();
        format!(
            "{}.{}",
            CacheKey::of_text(&keys.join("+")).as_str(),
            made.name()
        )
    }

    /// The name of the cache's file of what `made` makes of `entries`.
    fn made_name(made: Made, entries: &[Entry]) -> String {
        format!("{}.perfetto-trace", Cache::made_key(made, entries))
    }

    /// The trace [`Cache::made`] gives, where it is made already (held in
    /// use); none where it is not, and nothing is made.
    pub fn kept_made(&self, made: Made, entries: &[Entry]) -> Option<Pinned> {
        self.kept(&self.dir().join(Cache::made_name(made, entries)))
    }

    /// The trace `made` makes of `entries`, once (stopped by `options`'
    /// cancellation flag, leaving nothing), held in use until dropped.
    pub fn made(
        &self,
        made: Made,
        entries: &[Entry],
        options: &Options,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Pinned> {
        let name = Cache::made_name(made, entries);
        self.made_of_runs(&name, entries, options, |inputs, path| {
            let mut heard = |p: MergeProgress| progress(overall(p));
            merge_files(
                inputs,
                OutputFile::new(path),
                options,
                &made.merge_options(),
                &mut heard,
            )
            .map(drop)
        })
    }
}
