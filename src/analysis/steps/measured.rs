//! One report's steps as data: what a worker measures of its report and
//! returns (`report --step P --measure-only`), for the cross-rank part of
//! `report --step` to combine with the others' (see [`super::Job`]).
//!
//! It holds what the report says, not what the job calls it: the rank's
//! name is made when the job is combined, by `merge`'s rule, from the
//! report's path, host and MPI rank kept here, and its place among the
//! job's reports. Written as JSON, one document per report (JSON Lines for
//! several), its shape versioned by `kind` and `version` (see docs/report.md, "Steps
//! across ranks").

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::nsys::Report;

use super::measure;
use super::pattern::StepPattern;
use super::{GpuWork, NvtxRanges, StepTime};

/// What a measured-steps document says it is.
pub const KIND: &str = "nsys2perfetto.rank-steps";

/// The version of its shape this program writes and reads.
pub const VERSION: u32 = 1;

/// One report's steps, measured on its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReportSteps {
    /// Always [`KIND`].
    pub kind: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// The step pattern it was measured with, as written.
    pub pattern: String,
    /// The report, as the measuring command was given it.
    pub input: String,
    /// The host it ran on, where the export records it.
    pub host: Option<String>,
    /// The rank its `MPI_RANKS` table gives, where it names one only.
    pub mpi_rank: Option<i64>,
    /// All of the report's GPU work.
    #[serde(flatten)]
    pub gpu_work: GpuWork,
    /// The NVTX ranges of the report.
    #[serde(flatten)]
    pub nvtx: NvtxRanges,
    /// Its GPU work of no known process, while several processes have
    /// steps: counted in no step.
    pub unattributed_gpu_ops: u64,
    /// Each process that recorded steps, by pid: a rank each.
    pub processes: Vec<ProcessSteps>,
    /// Why its numbers are incomplete: a line per table of the report that
    /// could not be read. Left out of the JSON where empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete: Vec<String>,
}

/// The steps of one process of a report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProcessSteps {
    /// Its pid.
    pub pid: u32,
    /// Of its steps, those still open when the capture stopped (ended at
    /// the report's last NVTX time, as nsys ends them).
    pub open_steps: usize,
    /// Its GPU work.
    #[serde(flatten)]
    pub gpu_work: GpuWork,
    /// Its steps, in start order.
    pub steps: Vec<StepTime>,
}

impl ReportSteps {
    /// Measures the steps `pattern` matches in `report`, read from `input`.
    pub(crate) fn measure(report: &Report, input: &Path, pattern: &StepPattern) -> Result<Self> {
        let host = report.hostname().map_err(|cause| Error::Damaged {
            path: input.to_owned(),
            cause: crate::error::DatabaseError(cause),
        })?;
        let measured = measure::measure(report, pattern).map_err(|e| e.of(report.path()))?;
        Ok(ReportSteps {
            kind: KIND.to_owned(),
            version: VERSION,
            pattern: pattern.text().to_owned(),
            input: input.to_string_lossy().into_owned(),
            host,
            mpi_rank: crate::ranks::mpi_rank(report),
            gpu_work: measured.gpu_work,
            nvtx: measured.nvtx,
            unattributed_gpu_ops: measured.unattributed_ops,
            processes: measured.processes,
            incomplete: report
                .unreadable()
                .iter()
                .map(|u| u.warning(crate::nsys::NOT_READ))
                .collect(),
        })
    }

    /// The report it was measured in.
    pub fn input_path(&self) -> PathBuf {
        PathBuf::from(&self.input)
    }

    /// Writes it as one line of JSON.
    pub fn write_json(&self, out: &mut dyn Write) -> std::io::Result<()> {
        serde_json::to_writer(&mut *out, self)?;
        writeln!(out)
    }

    /// The documents of a measured-steps file (one, or several as JSON
    /// Lines), in order; `None` where the file at `path` does not start as
    /// JSON does (it is some other input). A file that starts so but is not
    /// such documents, or of another version, is refused saying why.
    pub fn read_file(path: &Path) -> Result<Option<Vec<ReportSteps>>> {
        let unreadable = |cause| Error::Unreadable {
            path: path.to_owned(),
            cause,
        };
        let mut head = [0u8; 64];
        let n = {
            use std::io::Read;
            let mut file = std::fs::File::open(path).map_err(unreadable)?;
            let mut n = 0;
            while n < head.len() {
                match file.read(&mut head[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(unreadable(e)),
                }
            }
            n
        };
        if head[..n].iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Ok(None);
        }
        let text = std::fs::read_to_string(path).map_err(unreadable)?;
        let refused = |reason: String| Error::StepsFile {
            path: path.to_owned(),
            reason,
        };
        let mut documents = Vec::new();
        for (i, value) in serde_json::Deserializer::from_str(&text)
            .into_iter::<serde_json::Value>()
            .enumerate()
        {
            let value = value.map_err(|e| refused(format!("not JSON ({e})")))?;
            let at = match i {
                0 => String::new(),
                i => format!("document {}: ", i + 1),
            };
            let kind = value.get("kind").and_then(|k| k.as_str());
            if kind != Some(KIND) {
                return Err(refused(format!(
                    "{at}not measured steps (its \"kind\" is not \"{KIND}\"; \
                     `report --step PATTERN --measure-only` writes them)"
                )));
            }
            let version = value.get("version").and_then(|v| v.as_u64());
            if version != Some(u64::from(VERSION)) {
                return Err(refused(format!(
                    "{at}measured steps of version {}, while this nsys2perfetto reads version \
                     {VERSION}: measure the report again with this one",
                    version.map_or("(none)".to_owned(), |v| v.to_string())
                )));
            }
            let document: ReportSteps = serde_json::from_value(value)
                .map_err(|e| refused(format!("{at}damaged measured steps ({e})")))?;
            documents.push(document);
        }
        if documents.is_empty() {
            return Err(refused("no measured steps in it".into()));
        }
        Ok(Some(documents))
    }
}
