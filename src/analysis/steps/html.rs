//! The job's steps as an HTML fragment for a page: a section with the
//! headline, the chart (inline SVG), the tables of ranks and steps, and the
//! notes. It carries its own few styles, scoped to its class, and no script.

use std::io::{self, Write};

use super::chart;
use super::{ms, JobSteps};
use crate::render::escape::html as escape;

impl JobSteps {
    /// Writes the steps as an HTML `<section class="job-steps">`, to put in
    /// a page's body.
    pub fn write_html(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, r#"<section class="job-steps">"#)?;
        writeln!(
            out,
            "<style>.job-steps table{{border-collapse:collapse;margin:8px 0}}\
             .job-steps th,.job-steps td{{border:1px solid #ccc;padding:2px 6px}}\
             .job-steps td.num{{text-align:right;white-space:nowrap}}.job-steps td.slowest{{color:#c0392b;font-weight:bold}}\
             .job-steps td.missing{{color:#888}}</style>"
        )?;
        writeln!(
            out,
            "<h2>Steps across ranks (<code>{}</code>)</h2>",
            escape(&self.pattern)
        )?;
        for line in self.headline() {
            writeln!(out, "<p>{}</p>", escape(&line))?;
        }
        if !self.steps.is_empty() {
            let (charted, all) = chart::charted(self);
            if !all {
                writeln!(
                    out,
                    "<p>The chart shows the {} steps of largest skew, of {}.</p>",
                    charted.len(),
                    self.steps.len()
                )?;
            }
            out.write_all(chart::svg(self).as_bytes())?;
        }
        writeln!(
            out,
            "<table class=\"ranks\"><tr><th>Rank</th><th>Steps</th><th>GPUs</th>\
             <th>GPU busy, whole capture</th><th>Slowest in</th></tr>"
        )?;
        for (r, rank) in self.ranks.iter().enumerate() {
            let gpus: Vec<String> = rank.gpus.iter().map(|g| g.to_string()).collect();
            writeln!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td></tr>",
                escape(&rank.label),
                rank.steps,
                gpus.join(", "),
                ms(rank.gpu_busy_ns as f64),
                self.skew.slowest_count.get(r).copied().unwrap_or(0)
            )?;
        }
        writeln!(out, "</table>")?;
        if !self.steps.is_empty() {
            write!(out, "<table class=\"steps\"><tr><th>Step</th>")?;
            for rank in &self.ranks {
                write!(out, "<th>{}</th>", escape(&rank.label))?;
            }
            writeln!(
                out,
                "<th>Slowest</th><th>Over median</th><th>Skew</th></tr>"
            )?;
            for step in &self.steps {
                write!(out, "<tr><td>{}</td>", escape(&step.name))?;
                let slowest = step.slowest.as_ref().map(|s| s.rank);
                for (r, time) in step.times.iter().enumerate() {
                    match time {
                        Some(t) => write!(
                            out,
                            "<td class=\"{}\">{} (GPU {})</td>",
                            match slowest == Some(r) {
                                true => "num slowest",
                                false => "num",
                            },
                            ms(t.duration_ns as f64),
                            ms(t.gpu_busy_ns as f64)
                        )?,
                        None => write!(out, "<td class=\"missing\">missing</td>")?,
                    }
                }
                match &step.slowest {
                    Some(s) => writeln!(
                        out,
                        "<td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                        escape(&self.ranks[s.rank].label),
                        ms(s.lead_over_median_ns),
                        ms(s.skew_ns as f64)
                    )?,
                    None => writeln!(out, "<td></td><td></td><td></td></tr>")?,
                }
            }
            writeln!(out, "</table>")?;
        }
        let notes = self.notes();
        if !notes.is_empty() {
            writeln!(out, "<ul class=\"notes\">")?;
            for note in notes {
                writeln!(out, "<li>{}</li>", escape(&note))?;
            }
            writeln!(out, "</ul>")?;
        }
        writeln!(out, "</section>")
    }
}
