//! The job's steps as a section of a page, a document of blocks the
//! renderer writes as HTML or Markdown: the headline, the chart, the
//! tables of ranks and steps, and the notes. With one rank, nothing is
//! compared: no skew, no slowest rank.

use std::io::{self, Write};

use super::{chart, plural, JobSteps, StepMatch};
use crate::render::format::ms;
use crate::render::page::{self, Block, Cell, Column, Mark, Table, Text};

impl JobSteps {
    /// The steps as blocks: a second-level heading, then the rest.
    pub(crate) fn blocks(&self) -> Vec<Block> {
        let mut blocks = vec![Block::Heading(
            2,
            Text::plain("Steps across ranks (")
                .code(self.pattern.clone())
                .then(")"),
        )];
        blocks.extend(
            self.headline()
                .into_iter()
                .map(|line| Block::Paragraph(line.into())),
        );
        if !self.incomplete.is_empty() {
            blocks.push(Block::Paragraph(
                "Incomplete: tables of these reports could not be read, so the numbers that depend on them are smaller than they should be:".into(),
            ));
            let lines = self.incomplete.iter().map(|l| Text::from(l.as_str()));
            blocks.push(Block::List(lines.collect()));
        }
        if !self.steps.is_empty() {
            let (charted, all) = chart::charted(self);
            if !all {
                blocks.push(Block::Paragraph(
                    format!(
                        "The chart shows the {} steps of largest skew, of {}.",
                        charted.len(),
                        self.steps.len()
                    )
                    .into(),
                ));
            }
            blocks.push(Block::Chart(chart::chart(self)));
        }
        blocks.push(Block::Table(self.ranks_table()));
        if !self.steps.is_empty() {
            blocks.push(Block::Table(self.steps_table()));
        }
        let notes = self.notes();
        if !notes.is_empty() {
            blocks.push(Block::List(notes.into_iter().map(Text::from).collect()));
        }
        blocks
    }

    /// Whether ranks were compared: two or more ran a step.
    fn compared(&self) -> bool {
        self.ranks.len() > 1 && self.skew.steps_compared > 0
    }

    fn ranks_table(&self) -> Table {
        let mut columns = vec![
            Column::text("Rank"),
            Column::number("Steps"),
            Column::text("GPUs"),
            Column::number("GPU busy, whole capture"),
        ];
        if self.compared() {
            columns.push(Column::number("Slowest in"));
        }
        let rows = self
            .ranks
            .iter()
            .enumerate()
            .map(|(r, rank)| {
                let mut row = vec![
                    rank.label.clone(),
                    rank.steps.to_string(),
                    gpus(&rank.gpu_work.gpus),
                    ms(rank.gpu_work.busy_ns as f64),
                ];
                if self.compared() {
                    row.push(
                        self.skew
                            .slowest_count
                            .get(r)
                            .copied()
                            .unwrap_or(0)
                            .to_string(),
                    );
                }
                row
            })
            .collect();
        Table::new(columns, rows)
    }

    fn steps_table(&self) -> Table {
        let mut columns = vec![Column::text("Step")];
        columns.extend(self.ranks.iter().map(|r| Column::number(&r.label)));
        if self.compared() {
            columns.extend([
                Column::text("Slowest"),
                Column::number("Over median"),
                Column::number("Skew"),
            ]);
        }
        let rows = self
            .steps
            .iter()
            .map(|step| {
                // A tie has no slowest rank.
                let slowest = step.slowest.as_ref().filter(|s| s.skew_ns > 0);
                let mut row = vec![Cell::from(step.name.clone())];
                for (r, time) in step.times.iter().enumerate() {
                    row.push(match time {
                        Some(t) => Cell {
                            text: format!(
                                "{} (GPU {})",
                                ms(t.duration_ns as f64),
                                ms(t.gpu_busy_ns as f64)
                            ),
                            mark: match slowest.is_some_and(|s| s.rank == r) {
                                true => Mark::Strong,
                                false => Mark::None,
                            },
                        },
                        None => Cell {
                            text: "missing".into(),
                            mark: Mark::Faint,
                        },
                    });
                }
                if self.compared() {
                    let texts = match (&step.slowest, slowest) {
                        (_, Some(s)) => [
                            self.ranks[s.rank].label.clone(),
                            ms(s.lead_over_median_ns),
                            ms(s.skew_ns as f64),
                        ],
                        (Some(_), None) => ["tie".into(), ms(0.0), ms(0.0)],
                        (None, None) => Default::default(),
                    };
                    row.extend(texts.map(Cell::from));
                }
                row
            })
            .collect();
        Table { columns, rows }
    }

    /// The summary in a few sentences. One rank: how many steps, no more.
    pub(super) fn headline(&self) -> Vec<String> {
        let ranks = self.ranks.len();
        let steps = self.steps.len();
        if ranks == 1 {
            return vec![format!(
                "{ranks} rank{}, {steps} step{}: nothing to compare them with.",
                plural(ranks),
                plural(steps)
            )];
        }
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
        let ties = self
            .steps
            .iter()
            .filter(|s| s.slowest.as_ref().is_some_and(|s| s.skew_ns == 0))
            .count();
        if ties > 0 {
            lines.push(format!(
                "{ties} step{} took every rank the same time: no rank was slowest there.",
                plural(ties)
            ));
        }
        let most = self.skew.slowest_count.iter().copied().max().unwrap_or(0);
        if most > 0 {
            let leaders: Vec<&str> = (0..ranks)
                .filter(|&r| self.skew.slowest_count[r] == most)
                .map(|r| self.ranks[r].label.as_str())
                .collect();
            let decided = self.skew.steps_compared - ties;
            lines.push(match leaders.as_slice() {
                [one] => format!("Slowest most often: {one}, in {most} of {decided} steps."),
                several => format!(
                    "Slowest most often, equally: {}, in {most} of {decided} steps each.",
                    several.join(", ")
                ),
            });
        }
        lines
    }

    /// Writes the steps as Markdown, headed by a second-level title.
    pub fn write_markdown(&self, out: &mut dyn Write) -> io::Result<()> {
        page::write_markdown(out, &self.blocks())
    }

    /// Writes the steps as an HTML `<section class="job-steps">`, to put in
    /// a page's body (the report's page styles it).
    pub fn write_html(&self, out: &mut dyn Write) -> io::Result<()> {
        page::write_html_blocks(out, &[Block::Section("job-steps", self.blocks())])
    }
}

/// The GPUs of a rank as words: `GPU 0`, `GPUs 0, 1`, `none`.
fn gpus(gpus: &[i64]) -> String {
    let list: Vec<String> = gpus.iter().map(i64::to_string).collect();
    match list.len() {
        0 => "none".into(),
        1 => format!("GPU {}", list[0]),
        _ => format!("GPUs {}", list.join(", ")),
    }
}
