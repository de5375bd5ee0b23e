//! The job's steps as Markdown: a headline, a table of ranks, a table of
//! steps (a column per rank), and the notes.

use std::io::{self, Write};

use super::{ms, plural, JobSteps, StepMatch};

impl JobSteps {
    /// Writes the steps as Markdown, headed by a third-level title.
    pub fn write_markdown(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "### Steps across ranks (`{}`)", self.pattern)?;
        writeln!(out)?;
        for line in self.headline() {
            writeln!(out, "{line}")?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "| Rank | Steps | GPUs | GPU busy, whole capture | Slowest in |"
        )?;
        writeln!(out, "|---|---:|---|---:|---:|")?;
        for (r, rank) in self.ranks.iter().enumerate() {
            let gpus: Vec<String> = rank.gpus.iter().map(|g| g.to_string()).collect();
            writeln!(
                out,
                "| {} | {} | {} | {} | {} |",
                cell(&rank.label),
                rank.steps,
                gpus.join(", "),
                ms(rank.gpu_busy_ns as f64),
                self.skew.slowest_count.get(r).copied().unwrap_or(0)
            )?;
        }
        if !self.steps.is_empty() {
            writeln!(out)?;
            write!(out, "| Step |")?;
            for rank in &self.ranks {
                write!(out, " {} |", cell(&rank.label))?;
            }
            writeln!(out, " Slowest | Over median | Skew |")?;
            write!(out, "|---|")?;
            for _ in &self.ranks {
                write!(out, "---:|")?;
            }
            writeln!(out, "---|---:|---:|")?;
            for step in &self.steps {
                write!(out, "| {} |", cell(&step.name))?;
                for time in &step.times {
                    match time {
                        Some(t) => write!(
                            out,
                            " {} (GPU {}) |",
                            ms(t.duration_ns as f64),
                            ms(t.gpu_busy_ns as f64)
                        )?,
                        None => write!(out, " missing |")?,
                    }
                }
                match &step.slowest {
                    Some(s) => writeln!(
                        out,
                        " {} | {} | {} |",
                        cell(&self.ranks[s.rank].label),
                        ms(s.lead_over_median_ns),
                        ms(s.skew_ns as f64)
                    )?,
                    None => writeln!(out, " | | |")?,
                }
            }
        }
        let notes = self.notes();
        if !notes.is_empty() {
            writeln!(out)?;
            for note in notes {
                writeln!(out, "- {}", note.replace('\n', " "))?;
            }
        }
        Ok(())
    }

    /// The summary in a few sentences, as Markdown and HTML both say it.
    pub(super) fn headline(&self) -> Vec<String> {
        let ranks = self.ranks.len();
        let steps = self.steps.len();
        let by = match self.matched_by {
            StepMatch::Name => "matched by name",
            StepMatch::Order => "matched by order",
        };
        let mut lines = vec![format!(
            "{ranks} rank{}, {steps} step{} ({by}); {} ran on two ranks or more.",
            plural(ranks),
            plural(steps),
            self.skew.steps_compared
        )];
        if let (Some(mean), Some((step, max))) = (self.skew.mean_skew_ns, self.skew.max_skew) {
            lines.push(format!(
                "Skew (slowest less fastest rank) per step: mean {}, max {} in \"{}\".",
                ms(mean),
                ms(max as f64),
                self.steps[step].name
            ));
        }
        if let Some(r) = self.skew.slowest_most_often {
            lines.push(format!(
                "Slowest most often: {}, in {} of {} steps.",
                self.ranks[r].label, self.skew.slowest_count[r], self.skew.steps_compared
            ));
        }
        lines
    }
}

/// Text in a Markdown table cell: pipes escaped, on one line.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}
