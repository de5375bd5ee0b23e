//! The hub's pages, as documents of blocks written by the one renderer
//! (`crate::render::page`): every string from a report or a file name goes
//! through its escaping. The report page is the very page `report -o
//! page.html` writes; the others are made here.

use std::io::{self, Write};
use std::path::Path;

use super::catalog::{utc_minute, Entry};
use super::headline::Headline;
use super::readable::Readable;
use crate::analysis::analyze::{rule_tables, Rule, Thresholds};
use crate::analysis::gpu_time::{summary_table, write_html_under, Page, ReportOptions};
use crate::analysis::stats::{
    compare, comparison_table, top_by_kind, Kind, StatsReport, Table as StatsTable,
};
use crate::error::Result;
use crate::nsys::names::RangeNames;
use crate::render::data_table::DataTable;
use crate::render::format::duration;
use crate::render::page::{write_html_styled, write_html_with, Block, Column, Text};
use crate::render::table::{json_key, Cell};
use crate::server::url;
use crate::workflows::analyses::{analyze_file, compare_files, report_file, summarize_file};
use crate::Options;

/// The script every page of the hub loads (served at [`SCRIPT_PATH`]): its
/// parts in one file, each a concept of its own (what every page needs,
/// the hand-off to the Perfetto UI, the home page's list, its uploads, and
/// the renderer's for data tables: filter, sort, show all).
pub const SCRIPT: &str = concat!(
    include_str!("hub.js"),
    include_str!("perfetto.js"),
    include_str!("list.js"),
    include_str!("drop.js"),
    "\n",
    include_str!("../../render/data_table.js"),
);
/// Where the hub serves [`SCRIPT`].
pub const SCRIPT_PATH: &str = "/assets/hub.js";

/// The URL of `what` (`report`, `trace`, ...) of `entry`: its id's parts
/// percent-encoded.
pub fn url(what: &str, entry: &Entry) -> String {
    let parts: Vec<String> = entry.id.split('/').map(url::encode).collect();
    format!("/{what}/{}", parts.join("/"))
}

pub use crate::render::format::human_bytes;

/// What the home page shows: the reports with their headlines (`None`:
/// not yet computed), where uploads go, and the directories that could not
/// be read.
pub struct Home<'a> {
    /// The reports, newest first, each with its headline where known.
    pub reports: &'a [(Entry, Option<Headline>)],
    /// Where an upload goes.
    pub upload_dir: &'a Path,
    /// The directories listed.
    pub dirs: &'a [std::path::PathBuf],
    /// Directories that could not be read, and why.
    pub unreadable: &'a [String],
}

/// Writes the home page.
pub fn write_home(out: &mut dyn Write, home: &Home) -> io::Result<()> {
    let pending = home.reports.iter().filter(|(_, h)| h.is_none()).count();
    let dirs: Vec<String> = home.dirs.iter().map(|d| d.display().to_string()).collect();
    let mut blocks = vec![
        Block::Heading(1, Text::plain("Runs")),
        Block::Paragraph(Text::plain(format!(
            "{} report(s) under {}{}.",
            home.reports.len(),
            dirs.join(", "),
            match pending {
                0 => String::new(),
                n => format!("; {n} headline(s) being computed"),
            }
        ))),
        Block::Section(
            "upload",
            vec![Block::Paragraph(
                Text::plain(
                    "Drop .sqlite, .nsys-rep or .qdrep files here (or choose them) to add them to ",
                )
                .code(home.upload_dir.display().to_string())
                .then("."),
            )],
        ),
    ];
    for why in home.unreadable {
        blocks.push(Block::Paragraph(Text::plain(why.clone())));
    }
    let columns = vec![
        Column::text("Report"),
        Column::text("Modified (UTC)"),
        Column::number("Size"),
        Column::number("Capture"),
        Column::number("GPUs"),
        Column::number(BUSY_COLUMN),
        Column::text("Top kernel"),
        Column::text("Open"),
    ];
    let rows = home
        .reports
        .iter()
        .map(|(entry, headline)| report_row(entry, headline.as_ref()))
        .collect();
    blocks.push(Block::Section(
        "reports",
        vec![Block::TextTable(columns, rows)],
    ));
    write_html_styled(
        out,
        "nsys2perfetto: runs",
        &blocks,
        &[SCRIPT_PATH],
        HOME_STYLE,
    )
}

/// The header of the home list's busy column: the share of the GPUs' work
/// span ([`Headline::busy_of_span`]), not of the capture.
pub const BUSY_COLUMN: &str = "GPU busy (of GPU span)";

/// The home page's own rules: its list one line a run, whatever the window
/// (long names cut short, whole on hover), its headers buttons that sort,
/// and what its script adds (status rows, the filter, the menu of links).
const HOME_STYLE: &str = include_str!("home.css");

fn report_row(entry: &Entry, headline: Option<&Headline>) -> Vec<Text> {
    // A run that cannot be read has no page, trace or stats: no links to
    // them, nor a box to choose it by.
    if let Some(error) = headline.and_then(|h| h.error.as_ref()) {
        let mut row = vec![
            Text::plain(entry.relative()),
            Text::plain(utc_minute(entry.modified_ns)),
            Text::plain(human_bytes(entry.size)),
        ];
        row.extend((0..3).map(|_| Text::default()));
        row.push(Text::plain(format!("cannot be read: {error}")));
        row.push(Text::default());
        return row;
    }
    let mut row = vec![
        Text::default().link(entry.relative(), url("report", entry)),
        Text::plain(utc_minute(entry.modified_ns)),
        Text::plain(human_bytes(entry.size)),
    ];
    match headline {
        None => row.extend((0..4).map(|_| Text::plain("…"))),
        Some(h) => {
            row.push(Text::plain(
                h.capture_ns.map_or("–".into(), |ns| duration(ns.into())),
            ));
            row.push(Text::plain(h.gpus.to_string()));
            row.push(Text::plain(h.busy_of_span.map_or("–".into(), percent)));
            row.push(match &h.top_kernel {
                Some((name, time)) => Text::default()
                    .code(name.clone())
                    .then(format!(" ({})", duration(*time))),
                None => Text::plain("–"),
            });
        }
    }
    row.push(
        Text::default()
            .link("Perfetto", url("open", entry))
            .then(" · ")
            .link("download", url("trace", entry))
            .then(" · ")
            .link("JSON", format!("{}?format=json", url("trace", entry)))
            .then(" · ")
            .link("stats", url("stats", entry))
            .then(" · ")
            .link("findings", url("findings", entry)),
    );
    row
}

/// A share (0 to 1) as a percentage, small ones with the digits that
/// tell them apart from nothing.
fn percent(share: f64) -> String {
    match share * 100.0 {
        p if p == 0.0 || p >= 1.0 => format!("{p:.1}%"),
        p if p >= 0.001 => format!("{p:.3}%"),
        _ => "< 0.001%".to_owned(),
    }
}

/// Writes `page` (as `report -o page.html` writes it; with `--step` for
/// the steps of several runs) under the hub's header, as every page of the
/// hub is: `entry`, the one run it is the report of, whose other pages the
/// header links; none for the steps page.
pub(crate) fn write_report(
    out: &mut dyn Write,
    page: &Page,
    entry: Option<&Entry>,
) -> io::Result<()> {
    write_html_under(out, page, nav(entry), &[SCRIPT_PATH])
}

/// The way back to the home page, atop every other page.
fn nav(entry: Option<&Entry>) -> Block {
    let text = Text::default().link("← all runs", "/");
    Block::Paragraph(match entry {
        Some(entry) => text
            .then(" · ")
            .link("report", url("report", entry))
            .then(" · ")
            .link("stats", url("stats", entry))
            .then(" · ")
            .link("findings", url("findings", entry))
            .then(" · ")
            .link("Open in Perfetto", url("open", entry)),
        None => text,
    })
}

/// The blocks of a table of `stats`, `compare` or `analyze`: its title and
/// name, why its numbers are incomplete where they are, then its rows, or
/// why it has none; `rows_at`: where its script fetches all its rows
/// (`None`: the page carries them).
pub(crate) fn table_blocks(table: &StatsTable, rows_at: Option<String>) -> Vec<Block> {
    let mut blocks = vec![Block::Heading(
        2,
        Text::plain(format!("{} ", table.title)).code(table.name.clone()),
    )];
    for why in &table.incomplete {
        blocks.push(Block::Paragraph(Text::plain(format!("INCOMPLETE: {why}."))));
    }
    if let Some(why) = &table.no_data {
        blocks.push(Block::Paragraph(Text::plain(format!("No data: {why}."))));
        return blocks;
    }
    if table.rows.is_empty() {
        blocks.push(Block::Paragraph(Text::plain("No rows.")));
        return blocks;
    }
    // Wide: scrolled sideways rather than its names squeezed.
    blocks.push(Block::Section(
        "wide",
        vec![Block::DataTable(data_table(table, rows_at))],
    ));
    blocks
}

/// The rows of `table` as a page's table of data.
fn data_table(table: &StatsTable, rows_at: Option<String>) -> DataTable {
    let numeric = |c: usize| {
        table
            .rows
            .iter()
            .all(|r| matches!(r.get(c), Some(Cell::Int(_) | Cell::Real(..) | Cell::Empty)))
    };
    let columns = table
        .columns
        .iter()
        .enumerate()
        .map(|(i, name)| match numeric(i) {
            true => Column::number(name),
            false => Column::text(name),
        })
        .collect();
    let rows = table
        .rows
        .iter()
        .map(|r| r.iter().map(Cell::text).collect())
        .collect();
    // Names (of kernels, calls, ranges) are shown shortened where long.
    let names = table
        .columns
        .iter()
        .position(|c| c == "Name" || c == "Range");
    DataTable {
        columns,
        rows,
        names,
        rows_at,
    }
}

/// The order of the stats page: what runs on the GPUs first, then the
/// calls and the ranges (an NVTX summary can run to 16,582 rows).
const STATS_PAGE_ORDER: [&str; 5] = [
    "cuda_gpu_kern_sum",
    "cuda_gpu_mem_time_sum",
    "cuda_gpu_mem_size_sum",
    "cuda_api_sum",
    "nvtx_sum",
];

/// `table` with its column of names first (a page is read from the left;
/// `compare` prints names last, where they can run long).
fn name_first(mut table: StatsTable) -> StatsTable {
    if let Some(at) = table.columns.iter().position(|c| c == "Name") {
        table.columns[..=at].rotate_right(1);
        for row in &mut table.rows {
            if at < row.len() {
                row[..=at].rotate_right(1);
            }
        }
    }
    table
}

/// Writes the stats page of `run`: the tables `stats` prints by default.
pub fn write_stats(out: &mut dyn Write, run: &Readable, options: &Options) -> Result<()> {
    let entry = run.entry();
    let tables = summarize_file(
        run.path(),
        &StatsReport::DEFAULT,
        RangeNames::Recorded,
        &options.read,
    )
    .map_err(|e| run.told(e))?;
    let mut blocks = vec![
        nav(Some(entry)),
        Block::Heading(
            1,
            Text::plain(format!("Statistics of {}", entry.relative())),
        ),
    ];
    let mut tables: Vec<&StatsTable> = tables.iter().collect();
    tables.sort_by_key(|t| {
        STATS_PAGE_ORDER
            .iter()
            .position(|name| *name == t.name)
            .unwrap_or(STATS_PAGE_ORDER.len())
    });
    for table in tables {
        let rows_at = format!("{}?summary={}", url("api/rows", entry), table.name);
        blocks.extend(table_blocks(table, Some(rows_at)));
    }
    let title = format!("stats: {}", entry.relative());
    write_html_with(out, &title, &blocks, &[SCRIPT_PATH])
        .map_err(|cause| crate::Error::Writer { cause })
}

/// How many findings of each rule the findings page lists.
const FINDINGS_SHOWN: usize = 50;

/// Writes the findings page of `run`: what `analyze` finds, rule by rule,
/// its columns named as `analyze --format json` names them.
pub fn write_findings_page(out: &mut dyn Write, run: &Readable, options: &Options) -> Result<()> {
    let entry = run.entry();
    let findings = analyze_file(
        run.path(),
        &Rule::ALL,
        &Thresholds::default(),
        &options.read,
    )
    .map_err(|e| run.told(e))?;
    let tables = rule_tables(&findings, Some(FINDINGS_SHOWN))
        .map_err(|cause| crate::Error::Writer { cause })?;
    let mut blocks = vec![
        nav(Some(entry)),
        Block::Heading(1, Text::plain(format!("Findings of {}", entry.relative()))),
    ];
    for table in tables {
        let rule = table.rule;
        blocks.push(Block::Heading(
            2,
            Text::plain(format!("{} ", rule.title())).code(rule.name()),
        ));
        for why in &table.incomplete {
            blocks.push(Block::Paragraph(Text::plain(format!("INCOMPLETE: {why}."))));
        }
        if let Some(why) = table.skipped {
            blocks.push(Block::Paragraph(Text::plain(format!("Skipped: {why}"))));
            continue;
        }
        let Some(first) = table.rows.first() else {
            blocks.push(Block::Paragraph(Text::plain("Nothing found.")));
            continue;
        };
        let columns = (table.columns.iter().zip(first))
            .map(|(name, cell)| match cell {
                Cell::Int(_) => Column::number(&json_key(name)),
                Cell::Real(v, _) if v.is_finite() => Column::number(&json_key(name)),
                _ => Column::text(&json_key(name)),
            })
            .collect();
        let rows = (table.rows.iter())
            .map(|row| row.iter().map(|cell| Text::plain(cell.text())).collect())
            .collect();
        blocks.push(Block::Section(
            "wide",
            vec![Block::TextTable(columns, rows)],
        ));
    }
    let title = format!("findings: {}", entry.relative());
    write_html_with(out, &title, &blocks, &[SCRIPT_PATH])
        .map_err(|cause| crate::Error::Writer { cause })
}

/// Writes the page that hands `entry`'s trace to the Perfetto UI at `ui`:
/// its script converts the report (once), opens the UI, waits for its
/// PONG, and posts it the trace.
pub fn write_open(out: &mut dyn Write, entry: &Entry) -> io::Result<()> {
    let blocks = vec![
        nav(Some(entry)),
        Block::Heading(1, Text::plain(format!("Open {} in Perfetto", entry.relative()))),
        Block::Section(
            "handoff",
            vec![Block::Paragraph(
                Text::default()
                    .link("Open in Perfetto", url("open", entry))
                    .then(": converts the report (once), opens the Perfetto UI in a new tab, and hands it the trace."),
            )],
        ),
    ];
    write_html_with(
        out,
        &format!("open: {}", entry.relative()),
        &blocks,
        &[SCRIPT_PATH],
    )
}

/// Writes a page that says `message` (an error, on one line), with the way
/// home.
pub fn write_message(out: &mut dyn Write, title: &str, message: &str) -> io::Result<()> {
    let blocks = vec![
        nav(None),
        Block::Heading(1, Text::plain(title)),
        Block::Paragraph(Text::plain(message)),
    ];
    write_html_with(out, title, &blocks, &[SCRIPT_PATH])
}

/// The form field, and the header a script sends, that carries the hub's
/// token against cross-site requests: every POST must carry it.
pub const CSRF_FIELD: &str = "csrf";

/// Writes the page a GET of a job's URL gets where what the job makes is
/// not made yet (a GET never starts work): `what` it would make, and a
/// button that asks for it, a form sent by POST to `action` carrying
/// `csrf`.
pub fn write_ask(
    out: &mut dyn Write,
    title: &str,
    what: &str,
    action: &str,
    csrf: &str,
    button: &str,
) -> io::Result<()> {
    let blocks = vec![
        nav(None),
        Block::Heading(1, Text::plain(title)),
        Block::Paragraph(Text::plain(what)),
        Block::Form {
            action: action.to_owned(),
            fields: vec![(CSRF_FIELD.to_owned(), csrf.to_owned())],
            button: button.to_owned(),
        },
    ];
    write_html_with(out, title, &blocks, &[SCRIPT_PATH])
}

/// Writes every row of the summary `report` of `run` as JSON, as the
/// stats page's script reads them (`/api/rows/RUN?summary=NAME`): the
/// page holds only the first rows of its tables.
pub fn write_stats_rows(
    out: &mut dyn Write,
    run: &Readable,
    report: StatsReport,
    options: &Options,
) -> Result<()> {
    let tables = summarize_file(run.path(), &[report], RangeNames::Recorded, &options.read)
        .map_err(|e| run.told(e))?;
    let rows = match tables.first() {
        Some(table) => data_table(table, None),
        None => DataTable {
            columns: Vec::new(),
            rows: Vec::new(),
            names: None,
            rows_at: None,
        },
    };
    rows.write_json(out)
        .map_err(|cause| crate::Error::Writer { cause })
}

/// How many differences of each kind the comparison page lists.
const COMPARE_TOP: usize = 10;

/// Writes the page that compares the runs `a` and `b`: the headline
/// numbers side by side (`compare --summary`), then the largest changes
/// of each kind (`compare --top 10`).
pub fn write_compare(
    out: &mut dyn Write,
    read_a: &Readable,
    read_b: &Readable,
    options: &Options,
) -> Result<()> {
    let (a, b) = (read_a.entry(), read_b.entry());
    let told = |e| read_b.told(read_a.told(e));
    let report_options = ReportOptions::default();
    let run_a = report_file(read_a.path(), &report_options, &options.read).map_err(told)?;
    let run_b = report_file(read_b.path(), &report_options, &options.read).map_err(told)?;
    let (summary_a, summary_b) = compare_files(
        read_a.path(),
        read_b.path(),
        RangeNames::Recorded,
        &options.read,
    )
    .map_err(told)?;
    let differences = top_by_kind(
        compare(&summary_a, &summary_b),
        &Kind::ALL,
        Some(COMPARE_TOP),
    );
    let mut blocks = vec![
        nav(None),
        Block::Heading(
            1,
            Text::plain(format!("{} vs {}", a.relative(), b.relative())),
        ),
        Block::List(vec![
            Text::plain("A: ").link(a.relative(), url("report", a)),
            Text::plain("B: ").link(b.relative(), url("report", b)),
        ]),
    ];
    blocks.extend(table_blocks(&summary_table(&run_a, &run_b), None));
    let mut differences = comparison_table(&differences);
    differences.incomplete =
        crate::analysis::compare::incomplete_sides(&summary_a.incomplete, &summary_b.incomplete);
    blocks.extend(table_blocks(&name_first(differences), None));
    let title = format!("compare: {} vs {}", a.relative(), b.relative());
    write_html_with(out, &title, &blocks, &[SCRIPT_PATH])
        .map_err(|cause| crate::Error::Writer { cause })
}
