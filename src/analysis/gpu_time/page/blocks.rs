//! A run's page as a document of blocks (headings, paragraphs, tables,
//! charts), built once: the renderer writes the same blocks as HTML and
//! Markdown, so the two hold the same numbers. One function per section, in
//! [`SECTIONS`] order; a new section is one more function and one more line
//! in [`run_blocks`].

use super::super::model::{GpuUse, NamedTime, RunReport};
use super::{charts, gpu_headlines, gpu_title, percent, SECTIONS};
use crate::render::format::{duration, seconds};
use crate::render::page::{Block, Column, Table};

/// Every block of one run.
pub(super) fn run_blocks(run: &RunReport) -> Vec<Block> {
    let mut blocks = vec![Block::Heading(1, run.path.clone().into())];
    let capture = match run.capture {
        Some((start, end)) => format!(
            "Capture: {} to {} ({}); {} GPU(s).",
            seconds(start.into()),
            seconds(end.into()),
            duration((end - start).into()),
            run.gpus.len()
        ),
        None => format!("No capture time recorded; {} GPU(s).", run.gpus.len()),
    };
    blocks.push(Block::Paragraph(capture.into()));
    incomplete(run, &mut blocks);
    let sections: [fn(&RunReport, &mut Vec<Block>); 6] =
        [gpus, kinds, launches, top_kernels, nvtx, findings];
    for (title, section) in SECTIONS.iter().zip(sections) {
        blocks.push(Block::Heading(2, (*title).into()));
        section(run, &mut blocks);
    }
    blocks
}

/// The tables the run's numbers could not read, where there are any: before
/// the numbers, so that none is taken for whole.
fn incomplete(run: &RunReport, blocks: &mut Vec<Block>) {
    if run.incomplete.is_empty() {
        return;
    }
    blocks.push(Block::Heading(2, "Incomplete".into()));
    blocks.push(Block::Paragraph(
        "Tables of this export could not be read: the numbers below that depend on them are smaller than they should be.".into(),
    ));
    let lines = run.incomplete.iter();
    let lines = lines.map(|u| u.warning(crate::nsys::NOT_READ).into());
    blocks.push(Block::List(lines.collect()));
}

fn gpus(run: &RunReport, blocks: &mut Vec<Block>) {
    if run.gpus.is_empty() {
        blocks.push(Block::Paragraph(
            "No GPU work: the export has no kernel, memcpy, memset or CUDA graph run.".into(),
        ));
        return;
    }
    blocks.push(Block::Paragraph(
        "Busy: the union of kernels, memcpys, memsets and CUDA graph runs. Idle time between a GPU's first and last work is host-bound until the start of the CUDA call that launched the work ending it (nothing was queued), and waiting from then on (the work was launched and waited: behind a synchronization, a copy, other work, or the launch latency).".into(),
    ));
    blocks.push(Block::Chart(charts::busy_over_time(run)));
    for gpu in &run.gpus {
        blocks.push(Block::Heading(3, gpu_title(gpu).into()));
        let rows = gpu_headlines(run, gpu)
            .into_iter()
            .map(|(label, value)| vec![label.to_owned(), value])
            .collect();
        blocks.push(Block::Table(Table::new(
            vec![Column::text(""), Column::text("")],
            rows,
        )));
        idle_stretches(gpu, blocks);
    }
}

fn idle_stretches(gpu: &GpuUse, blocks: &mut Vec<Block>) {
    if gpu.largest_idle.is_empty() {
        return;
    }
    let mut columns = Vec::from(["Idle from", "For", "Waiting"].map(Column::number));
    columns.push(Column::text("What the CPU threads did"));
    let rows = gpu
        .largest_idle
        .iter()
        .map(|s| {
            let waiting = s.waiting_from.map_or("unattributed".to_owned(), |from| {
                duration((s.end - from).into())
            });
            let threads: Vec<String> = s
                .threads
                .iter()
                .map(|t| {
                    let who = match &t.name {
                        Some(name) => format!("{name} ({})", t.tid),
                        None => format!("thread {}", t.tid),
                    };
                    let mut what = Vec::new();
                    if let Some((call, overlap)) = &t.call {
                        what.push(format!("{call} for {}", duration((*overlap).into())));
                    }
                    if let Some((range, overlap)) = &t.range {
                        what.push(format!(
                            "in NVTX \"{range}\" for {}",
                            duration((*overlap).into())
                        ));
                    }
                    format!("{who}: {}", what.join(", "))
                })
                .collect();
            let threads = match threads.is_empty() {
                true => "no CUDA call or NVTX range of its process".to_owned(),
                false => threads.join("; "),
            };
            vec![
                seconds(s.start.into()),
                duration((s.end - s.start).into()),
                waiting,
                threads,
            ]
        })
        .collect();
    blocks.push(Block::Paragraph(
        format!("Longest idle stretches of GPU {}:", gpu.device).into(),
    ));
    blocks.push(Block::Table(Table::new(columns, rows)));
}

fn kinds(run: &RunReport, blocks: &mut Vec<Block>) {
    if run.kinds.is_empty() {
        blocks.push(Block::Paragraph("No GPU work.".into()));
        return;
    }
    let total: i128 = run.kinds.iter().map(|k| k.time).sum();
    blocks.push(Block::Paragraph(format!(
        "Summed durations of GPU work ({} in all; concurrent work adds up), by kind of kernel name and by kind of memory operation.",
        duration(total)
    ).into()));
    blocks.push(Block::Chart(charts::kinds_bar(run)));
    let rows = run
        .kinds
        .iter()
        .map(|k| {
            vec![
                k.kind.clone(),
                duration(k.time),
                format!("{:.1}%", percent(k.time, total)),
                k.count.to_string(),
            ]
        })
        .collect();
    let mut columns = vec![Column::text("Kind")];
    columns.extend(["Time", "Share", "Count"].map(Column::number));
    blocks.push(Block::Table(Table::new(columns, rows)));
}

fn launches(run: &RunReport, blocks: &mut Vec<Block>) {
    if run.launches.is_empty() {
        blocks.push(Block::Paragraph(
            "No GPU work with its launch call in the export.".into(),
        ));
        return;
    }
    blocks.push(Block::Paragraph(
        "Launch call: the CUDA API call's duration, each call once (under the kind of its first work). Delay: from the call's end to the work's start (0 where the work started first). Quantiles by nearest rank, within 0.8%.".into(),
    ));
    let rows = run
        .launches
        .iter()
        .map(|l| {
            let mut row = vec![l.kind.clone(), l.calls.to_string()];
            row.extend(l.call_time.iter().map(|&v| duration(v.into())));
            row.push(l.launched.to_string());
            row.extend(l.delay.iter().map(|&v| duration(v.into())));
            row
        })
        .collect();
    let mut columns = vec![Column::text("Kind")];
    columns.extend(
        [
            "Calls",
            "Call p50",
            "Call p90",
            "Call p99",
            "Launched",
            "Delay p50",
            "Delay p90",
            "Delay p99",
        ]
        .map(Column::number),
    );
    blocks.push(Block::Table(Table::new(columns, rows)));
}

fn top_kernels(run: &RunReport, blocks: &mut Vec<Block>) {
    if run.top_kernels.is_empty() {
        blocks.push(Block::Paragraph("No kernels.".into()));
        return;
    }
    let numbers = ["Time", "Share", "Count"];
    blocks.push(named_times(
        &run.top_kernels,
        run.kernel_time,
        numbers,
        "Kernel",
    ));
}

fn nvtx(run: &RunReport, blocks: &mut Vec<Block>) {
    if let Some(why) = &run.nvtx.skipped {
        blocks.push(Block::Paragraph(format!("Skipped: {why}.").into()));
        return;
    }
    blocks.push(Block::Paragraph(format!(
        "Projected GPU time: from the first start to the last end of the GPU work launched within each range; share of the span of the run's GPU work ({}). Names grouped as --group-names groups them: per-instance decorations such as \", op_id = N\" and a number ending the name (\"step 4\", \"ProfilerStep#12\") are cut.",
        duration(run.nvtx.gpu_span)
    ).into()));
    let numbers = ["Projected", "Share", "Ranges"];
    blocks.push(named_times(
        &run.nvtx.top,
        run.nvtx.gpu_span,
        numbers,
        "Range",
    ));
}

/// A table of named times: each time, its share of `whole` and its count
/// (under `numbers`), and its name (under `name`).
fn named_times(times: &[NamedTime], whole: i128, numbers: [&str; 3], name: &str) -> Block {
    let rows = times
        .iter()
        .map(|n| {
            vec![
                duration(n.time),
                format!("{:.1}%", percent(n.time, whole)),
                n.count.map_or(String::new(), |c| c.to_string()),
                n.name.clone(),
            ]
        })
        .collect();
    let mut columns = Vec::from(numbers.map(Column::number));
    columns.push(Column::text(name));
    Block::Table(Table::new(columns, rows))
}

fn findings(run: &RunReport, blocks: &mut Vec<Block>) {
    let items = run
        .findings
        .iter()
        .map(|f| match &f.skipped {
            Some(why) => format!("{} ({}): skipped: {why}", f.title, f.rule),
            None if f.count == 0 => format!("{} ({}): none", f.title, f.rule),
            None => format!(
                "{} ({}): {}; first: {}",
                f.title,
                f.rule,
                f.count,
                f.top.join("; ")
            ),
        })
        .map(String::into)
        .collect();
    blocks.push(Block::List(items));
}
