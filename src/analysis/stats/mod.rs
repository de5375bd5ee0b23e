//! Summaries of a report, as `nsys stats` prints them, and comparisons of
//! two reports.
//!
//! Each summary reads the rows of its tables once, in table order, keeping
//! per group (an API name, a kernel name, a memory operation, an NVTX range
//! name) sums of the values it measures and what their exact median needs:
//! the values of small groups, a histogram of large ones, whose values wait
//! in a temporary file for one more read (see `median`). Past 16384
//! groups, the values of new ones go to a temporary database that groups
//! and ranks them (see `spill`), and rows are written as they are read back.
//! Memory does not grow with the number of rows, nor with the number of
//! groups.

mod aggregate;
mod launches;
mod median;
mod nvtx_gpu;
mod nvtx_gpu_trace;
mod nvtx_pushpop_trace;
mod plausible;
mod reports;
mod set_aside;
mod spill;
mod table;
mod traces;

pub use super::compare::{
    compare, comparison_table, fit_to_width, top_by_kind, Difference, Kind, RunSummary, Side,
    NARROWING,
};
pub use crate::render::table::{Cell, Fit, Table, TableFormat};
pub use aggregate::Stats;
pub(crate) use aggregate::ValueSets;
pub(crate) use nvtx_gpu::{projected_by_name, projected_by_name_seeing, ProjectedName};
pub(crate) use reports::ApiRecords;
pub use reports::StatsReport;
pub(crate) use reports::{
    api_groups, graph_groups, kernel_groups, memory_table, nvtx_groups, top_kernel_groups,
};
pub(crate) use table::RowSource;

use crate::error::Result;
use crate::nsys::names::RangeNames;
use crate::nsys::Report;

/// Computes `which` summaries of `report`, in that order.
///
/// ```
/// use nsys2perfetto::stats::{summarize, Cell, StatsReport};
/// use nsys2perfetto::Report;
///
/// let uri = "file:stats-doc-example?mode=memory&cache=shared";
/// let db = rusqlite::Connection::open(uri).unwrap();
/// db.execute_batch(
///     "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
///      INSERT INTO StringIds VALUES (1, 'cudaMalloc_v3020');
///      CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
///          start INTEGER, end INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
///      INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
///          (1000, 5000, 281479271677994, 7, 1), (6000, 7000, 281479271677994, 8, 1);",
/// )
/// .unwrap();
///
/// let report = Report::open_uri(uri)?;
/// let tables = summarize(&report, &["cudaapisum".parse::<StatsReport>().unwrap()])?;
/// let row = &tables[0].rows[0];
/// // Total, count, average and name; the version suffix is dropped.
/// assert_eq!(row[1], Cell::Int(5000));
/// assert_eq!(row[2], Cell::Int(2));
/// assert_eq!(row[3].text(), "2500.0");
/// assert_eq!(row[8], Cell::Text("cudaMalloc".into()));
/// # Ok::<(), nsys2perfetto::Error>(())
/// ```
pub fn summarize(report: &Report, which: &[StatsReport]) -> Result<Vec<Table>> {
    summarize_with(report, which, RangeNames::Recorded)
}

/// [`summarize`], NVTX ranges named as `names` says: with
/// [`RangeNames::Grouped`], the ranges of one operator are one row however
/// their instances are decorated (see [`group_name`](crate::stats::group_name)).
pub fn summarize_with(
    report: &Report,
    which: &[StatsReport],
    names: RangeNames,
) -> Result<Vec<Table>> {
    which
        .iter()
        .map(|r| r.compute_with(report, names))
        .collect()
}

/// What [`compare`] compares of `report`.
pub fn run_summary(report: &Report) -> Result<RunSummary> {
    RunSummary::of(report)
}

/// [`run_summary`], NVTX ranges named as `names` says.
pub fn run_summary_with(report: &Report, names: RangeNames) -> Result<RunSummary> {
    RunSummary::of_with(report, names)
}
