//! Where a series goes (`series`, `profile --series`): its CSV table and its
//! SVG plot, checked before the first run is measured.

use std::io::Write;
use std::path::Path;

use nsys2perfetto::series::{Series, SeriesRun};
use nsys2perfetto::{check_named_as, is_standard_output, Error, OutputFile};

use crate::paths::Writing;
use crate::Usage;

/// The files a series is written to: its table (none for standard output)
/// and its plot.
pub struct Outputs {
    table: Option<OutputFile>,
    plot: Option<OutputFile>,
}

impl Outputs {
    /// The table's file (`-` for standard output) and the plot's, refused
    /// before the first report is measured (or profiled) where they cannot
    /// be written: one of the `runs`' reports, a report without `--force`,
    /// one file for both.
    pub fn checked(
        table: Option<&Path>,
        plot: Option<&Path>,
        runs: &[SeriesRun],
        writing: Writing,
    ) -> Result<Outputs, Usage> {
        let inputs: Vec<&Path> = runs.iter().map(|r| r.input.as_path()).collect();
        let table = table.filter(|p| !is_standard_output(p));
        // The format follows the name, or the name is refused.
        let named = |path: Option<&Path>, what, extensions: &[&str]| match path {
            Some(path) => check_named_as(path, what, extensions).map_err(|e| Usage(e.to_string())),
            None => Ok(()),
        };
        let checked_table = table.map(|p| writing.output(p, &inputs)).transpose()?;
        let checked_plot = plot.map(|p| writing.output(p, &inputs)).transpose()?;
        named(table, "a CSV table", &["csv", "txt"])?;
        named(plot, "an SVG plot", &["svg"])?;
        let (table, plot) = (checked_table, checked_plot);
        match (&table, &plot) {
            (Some(table), Some(plot)) => crate::paths::distinct(("-o", table), ("--svg", plot))?,
            (None, Some(plot)) if plot.is_standard_output() => {
                return Err(crate::paths::both_to_standard_output(
                    "the table",
                    "--svg -",
                ))
            }
            _ => {}
        }
        Ok(Outputs { table, plot })
    }

    /// Writes the table (to standard output without a file) and the plot.
    pub fn write(&self, series: &Series) -> nsys2perfetto::Result<()> {
        if let Some(plot) = &self.plot {
            series.save_svg(plot)?;
        }
        match &self.table {
            Some(table) => series.save_csv(table),
            None => {
                let mut out = std::io::stdout().lock();
                let written = series.write_csv(&mut out).and_then(|()| out.flush());
                match written {
                    // A reader that stopped early (`| head`) wanted no more: the
                    // run goes on to its own end (`profile --series` ends with
                    // the command's status).
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                    Err(cause) => Err(Error::Output {
                        path: nsys2perfetto::STANDARD_OUTPUT.into(),
                        cause,
                    }),
                    Ok(()) => Ok(()),
                }
            }
        }
    }
}
