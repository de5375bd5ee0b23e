//! Findings kept in an order in bounded memory: an external sort.
//!
//! Findings wait in memory up to a bound; past it, each batch is sorted and
//! written as a run to an anonymous temporary file (unlinked from the start),
//! in a compact encoding of its own (see `codec`). Reading merges the runs. When the runs
//! grow too many, they are merged into one run of a new file, so that reading
//! holds a buffer for a bounded number of runs. The sort is stable: findings
//! that compare equal come in the order they were found in (each batch is
//! sorted stably, and at equal heads the earlier run goes first).

use std::cmp::Ordering;
use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};

use super::codec::{decode, encode};
use super::{Finding, Rule};

/// Findings held in memory before a run is written.
const BATCH: usize = 1024;
/// Runs in a file before they are merged into one.
const MAX_RUNS: usize = 64;
/// Bytes read at a time from each run while merging.
const READ_CHUNK: usize = 16 * 1024;

/// An order of findings.
#[derive(Clone, Debug)]
pub(crate) enum Order {
    /// By rule, in the order of `rules` (others last), then each rule's
    /// findings as nsys lists them: the longest first (lowest utilization
    /// first for [`Rule::GpuTimeUtil`]), at equal lengths the earliest.
    Report { rules: Vec<Rule> },
    /// By start, the longer first at equal starts, then by rule: the order
    /// slices go into a trace.
    Time,
}

impl Order {
    fn cmp(&self, a: &Finding, b: &Finding) -> Ordering {
        match self {
            Order::Report { rules } => {
                let position = |r: Rule| rules.iter().position(|&x| x == r).unwrap_or(usize::MAX);
                position(a.rule)
                    .cmp(&position(b.rule))
                    .then_with(|| match a.rule {
                        Rule::GpuTimeUtil => a
                            .in_use_percent
                            .partial_cmp(&b.in_use_percent)
                            .unwrap_or(Ordering::Equal)
                            .then(a.duration.cmp(&b.duration))
                            .then(a.start.cmp(&b.start)),
                        _ => b.duration.cmp(&a.duration).then(a.start.cmp(&b.start)),
                    })
            }
            Order::Time => a
                .start
                .cmp(&b.start)
                .then(b.duration.cmp(&a.duration))
                .then(a.rule.cmp(&b.rule)),
        }
    }
}

/// The findings of a run of [`super::analyze`], in order, however many.
///
/// Read them with [`Findings::iter`] (as often as needed), count them by rule
/// with [`Findings::count`].
pub struct Findings {
    order: Order,
    batch_size: usize,
    /// The latest batch: unsorted while findings come, sorted once all came.
    batch: Vec<Finding>,
    runs: Option<Runs>,
    counts: [usize; Rule::ALL.len()],
    /// Why a rule did not run, by rule (the tables the export lacks).
    skipped: [Option<String>; Rule::ALL.len()],
    /// Why a rule's findings are incomplete, by rule: a line per table it
    /// depends on that could not be read.
    incomplete: [Vec<String>; Rule::ALL.len()],
    /// Calls and GPU work left out for times that cannot be right.
    impossible_times: u64,
}

/// Sorted runs in a temporary file: where each starts and ends.
struct Runs {
    file: File,
    bounds: Vec<(u64, u64)>,
    end: u64,
}

impl Findings {
    pub(crate) fn new(order: Order) -> Self {
        Self::with_batch(order, BATCH)
    }

    fn with_batch(order: Order, batch_size: usize) -> Self {
        Self {
            order,
            batch_size: batch_size.max(1),
            batch: Vec::new(),
            runs: None,
            counts: [0; Rule::ALL.len()],
            skipped: Default::default(),
            incomplete: Default::default(),
            impossible_times: 0,
        }
    }

    pub(crate) fn push(&mut self, finding: Finding) -> io::Result<()> {
        self.counts[finding.rule.index()] += 1;
        self.batch.push(finding);
        if self.batch.len() >= self.batch_size {
            self.spill()?;
        }
        Ok(())
    }

    /// Ends the adding: the findings are ready to read.
    pub(crate) fn finish(&mut self) {
        let order = &self.order;
        self.batch.sort_by(|a, b| order.cmp(a, b));
    }

    /// Writes the batch, sorted, as a run.
    fn spill(&mut self) -> io::Result<()> {
        let order = &self.order;
        self.batch.sort_by(|a, b| order.cmp(a, b));
        let runs = match &mut self.runs {
            Some(runs) => runs,
            None => self.runs.insert(Runs::new()?),
        };
        let mut batch = self.batch.drain(..);
        runs.append(|| Ok(batch.next()))?;
        drop(batch);
        if runs.bounds.len() >= MAX_RUNS {
            self.merge_runs()?;
        }
        Ok(())
    }

    /// Merges every run into one, in a new file.
    fn merge_runs(&mut self) -> io::Result<()> {
        let Some(old) = self.runs.take() else {
            return Ok(());
        };
        let mut merged = Runs::new()?;
        let mut merge = Merge::new(&self.order, Some(&old), &[])?;
        merged.append(|| merge.next_finding())?;
        self.runs = Some(merged);
        Ok(())
    }

    /// The rules that ran, in the order their findings come (for findings in
    /// time order, every rule).
    pub fn rules(&self) -> &[Rule] {
        match &self.order {
            Order::Report { rules } => rules,
            Order::Time => &Rule::ALL,
        }
    }

    /// Marks `rule` as not run, for the reason `why`.
    pub(crate) fn skip(&mut self, rule: Rule, why: String) {
        self.skipped[rule.index()] = Some(why);
    }

    pub(crate) fn left_out_for_times(&mut self, events: u64) {
        self.impossible_times += events;
    }

    /// Lines that explain events left out of the findings: CUDA calls and
    /// GPU work whose times cannot be right, in `report`'s words.
    pub fn warnings(&self) -> Vec<String> {
        crate::nsys::impossible_times_warning(self.impossible_times)
            .into_iter()
            .collect()
    }

    /// Why `rule` did not run (the export lacks the data it needs), if it did not.
    pub fn skipped(&self, rule: Rule) -> Option<&str> {
        self.skipped[rule.index()].as_deref()
    }

    /// Marks the findings of `rule` as incomplete, for the reasons `why`.
    pub(crate) fn mark_incomplete(&mut self, rule: Rule, why: Vec<String>) {
        self.incomplete[rule.index()] = why;
    }

    /// Why the findings of `rule` are incomplete (tables it depends on
    /// that could not be read), a line each; empty where they are whole.
    pub fn incomplete(&self, rule: Rule) -> &[String] {
        &self.incomplete[rule.index()]
    }

    /// How many findings of `rule` there are.
    pub fn count(&self, rule: Rule) -> usize {
        self.counts[rule.index()]
    }

    /// How many findings there are.
    pub fn len(&self) -> usize {
        self.counts.iter().sum()
    }

    /// Whether no rule found anything.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The findings, in order. An error is a failure to read them back from
    /// their temporary file.
    pub fn iter(&self) -> io::Result<impl Iterator<Item = io::Result<Finding>> + '_> {
        let mut merge = Merge::new(&self.order, self.runs.as_ref(), &self.batch)?;
        let mut failed = false;
        Ok(std::iter::from_fn(move || {
            if failed {
                return None;
            }
            let next = merge.next_finding().transpose();
            failed = matches!(next, Some(Err(_)));
            next
        }))
    }

    /// Every finding, in order, in memory.
    pub fn to_vec(&self) -> io::Result<Vec<Finding>> {
        self.iter()?.collect()
    }
}

impl Runs {
    fn new() -> io::Result<Self> {
        let file = tempfile::tempfile().map_err(crate::error::in_temp_dir)?;
        Ok(Self {
            file,
            bounds: Vec::new(),
            end: 0,
        })
    }

    /// Writes a run of the findings `next` gives, in the order they come,
    /// after the others.
    fn append(&mut self, mut next: impl FnMut() -> io::Result<Option<Finding>>) -> io::Result<()> {
        let from = self.end;
        let mut out = BufWriter::new(&self.file);
        out.seek(SeekFrom::Start(from))?;
        let mut buf = Vec::new();
        while let Some(f) = next()? {
            buf.clear();
            encode(&f, &mut buf);
            out.write_all(&buf)?;
            self.end += buf.len() as u64;
        }
        out.flush()?;
        drop(out);
        self.bounds.push((from, self.end));
        Ok(())
    }
}

/// The runs being merged: each run's next finding, read ahead.
struct Merge<'a> {
    order: &'a Order,
    file: Option<&'a File>,
    /// The runs of the file, then the batch in memory (the latest).
    sources: Vec<Source>,
    batch: &'a [Finding],
}

struct Source {
    head: Option<Finding>,
    from: Option<RunReader>,
    /// For the batch in memory: the index of the next finding.
    next: usize,
}

/// A run of the file being read, a chunk at a time.
struct RunReader {
    at: u64,
    end: u64,
    chunk: Vec<u8>,
    used: usize,
}

impl<'a> Merge<'a> {
    fn new(order: &'a Order, runs: Option<&'a Runs>, batch: &'a [Finding]) -> io::Result<Self> {
        let mut merge = Merge {
            order,
            file: runs.map(|r| &r.file),
            sources: Vec::new(),
            batch,
        };
        for &(from, end) in runs.map_or(&[][..], |r| &r.bounds) {
            let mut source = Source {
                head: None,
                from: Some(RunReader {
                    at: from,
                    end,
                    chunk: Vec::new(),
                    used: 0,
                }),
                next: 0,
            };
            source.head = merge.read(&mut source)?;
            merge.sources.push(source);
        }
        if !batch.is_empty() {
            let mut source = Source {
                head: None,
                from: None,
                next: 0,
            };
            source.head = merge.read(&mut source)?;
            merge.sources.push(source);
        }
        Ok(merge)
    }

    /// The next finding of `source`.
    fn read(&self, source: &mut Source) -> io::Result<Option<Finding>> {
        let Some(run) = &mut source.from else {
            let f = self.batch.get(source.next).cloned();
            source.next += 1;
            return Ok(f);
        };
        if run.used == run.chunk.len() && run.at == run.end {
            return Ok(None);
        }
        loop {
            let mut input = &run.chunk[run.used..];
            match decode(&mut input) {
                Ok(f) => {
                    run.used = run.chunk.len() - input.len();
                    return Ok(Some(f));
                }
                // Part of the finding is still in the file.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && run.at < run.end => {
                    let file = self.file.expect("a run has a file");
                    let mut chunk = run.chunk.split_off(run.used);
                    let want = READ_CHUNK.min((run.end - run.at) as usize);
                    let have = chunk.len();
                    chunk.resize(have + want, 0);
                    let mut reader = file;
                    reader.seek(SeekFrom::Start(run.at))?;
                    reader.read_exact(&mut chunk[have..])?;
                    run.at += want as u64;
                    run.chunk = chunk;
                    run.used = 0;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The least head (the earliest run's among equals), replaced by the
    /// next of its run.
    fn next_finding(&mut self) -> io::Result<Option<Finding>> {
        let mut least: Option<usize> = None;
        for (i, s) in self.sources.iter().enumerate() {
            let Some(head) = &s.head else { continue };
            let better = match least {
                None => true,
                Some(l) => {
                    let other = self.sources[l].head.as_ref().expect("a head");
                    self.order.cmp(head, other) == Ordering::Less
                }
            };
            if better {
                least = Some(i);
            }
        }
        let Some(i) = least else { return Ok(None) };
        let mut source = std::mem::replace(
            &mut self.sources[i],
            Source {
                head: None,
                from: None,
                next: 0,
            },
        );
        let found = source.head.take();
        source.head = self.read(&mut source)?;
        self.sources[i] = source;
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::super::codec::tests::examples;
    use super::*;

    fn sorted(order: &Order, batch: usize) -> Vec<Finding> {
        let mut findings = Findings::with_batch(order.clone(), batch);
        for f in examples() {
            findings.push(f).unwrap();
        }
        findings.finish();
        let all = findings.to_vec().unwrap();
        // Reading again gives the same.
        assert_eq!(findings.to_vec().unwrap(), all);
        assert_eq!(findings.len(), all.len());
        for rule in Rule::ALL {
            let n = all.iter().filter(|f| f.rule == rule).count();
            assert_eq!(findings.count(rule), n);
        }
        all
    }

    #[test]
    fn runs_merge_into_the_order_of_a_stable_sort() {
        let orders = [
            Order::Report {
                rules: vec![Rule::GpuTimeUtil, Rule::CudaApiSync, Rule::GpuGaps],
            },
            Order::Report {
                rules: Rule::ALL.to_vec(),
            },
            Order::Time,
        ];
        for order in &orders {
            let mut expected = examples();
            expected.sort_by(|a, b| order.cmp(a, b));
            // All in memory; runs in one file; runs merged into one (and
            // then more runs beside it).
            for batch in [1000, 7, 3, 1] {
                assert_eq!(sorted(order, batch), expected, "{order:?}, batch {batch}");
            }
        }
    }
}
