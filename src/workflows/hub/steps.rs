//! The steps of several runs across their ranks, as the CLI's `report
//! --step PATTERN RUN... -o page.html` writes them (under the hub's
//! header): the job's steps first, then a section per run. Made once, as
//! a job, and kept in the cache under the keys of its runs (in their order)
//! and the pattern.

use super::bound::Pinned;
use super::cache::{Cache, CacheKey};
use super::catalog::Entry;
use super::pages::write_report;
use crate::analysis::gpu_time::ReportOptions;
use crate::analysis::steps::{StepOptions, StepPattern};
use crate::error::Result;
use crate::ranks::Labels;
use crate::workflows::analyses::report_files;
use crate::workflows::output::OutputFile;
use crate::{Options, Progress};

impl Cache {
    /// The key of the steps page of `entries` (in their order) by `pattern`.
    pub fn steps_key(entries: &[Entry], pattern: &StepPattern) -> String {
        let keys: Vec<String> = entries
            .iter()
            .map(|e| CacheKey::of(e).as_str().to_owned())
            .collect();
        let text = format!("{}\0step\0{}", keys.join("+"), pattern.text());
        format!("{}.steps", CacheKey::of_text(&text).as_str())
    }

    /// The name of the cache's file of the steps page of `entries` by
    /// `pattern`.
    fn steps_name(entries: &[Entry], pattern: &StepPattern) -> String {
        format!("{}.html", Cache::steps_key(entries, pattern))
    }

    /// The page [`Cache::steps_page`] gives, where it is made already (held
    /// in use); none where it is not, and nothing is made.
    pub fn kept_steps_page(&self, entries: &[Entry], pattern: &StepPattern) -> Option<Pinned> {
        self.kept(&self.dir().join(Cache::steps_name(entries, pattern)))
    }

    /// The page `report --step PATTERN` writes of `entries` (HTML, under
    /// the hub's header; each run named by its path in the list, as the
    /// hub's report page names it), made once (stopped by `options`'
    /// cancellation flag, leaving nothing), held in use until dropped.
    /// `progress` hears of each run as its reading starts.
    pub fn steps_page(
        &self,
        entries: &[Entry],
        pattern: &StepPattern,
        options: &Options,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Pinned> {
        let name = Cache::steps_name(entries, pattern);
        self.made_of_runs(&name, entries, options, |inputs, path| {
            let mut steps = StepOptions::new(pattern.clone());
            // As the command's default: MPI_RANKS, else the run's place.
            steps.labels = Labels::Ranks { from_name: None };
            let report_options = ReportOptions {
                steps: Some(steps),
                ..ReportOptions::default()
            };
            let total = entries.len() as u64;
            let mut started = 0;
            let mut heard = |_: &std::path::Path| {
                progress(Progress {
                    rows_read: started,
                    rows_total: total,
                });
                started += 1;
            };
            let mut made = report_files(inputs, &report_options, &options.read, &mut heard)?;
            // Named as the list names them, not by where the server found them.
            for (run, entry) in made.runs.iter_mut().zip(entries) {
                run.path = entry.relative().to_owned();
            }
            OutputFile::new(path).write_with(|out| write_report(out, &made, None))
        })
    }
}
