//! The file accesses of OS runtime calls (`OSRT_FILE_ACCESS_EVENTS`, nsys
//! 2025+): each a span of a thread's time in which it read, wrote, opened or
//! closed a file, timed by `startedAt`/`endedAt` rather than `start`/`end`,
//! with the file's path from the descriptor it went through
//! (`OSRT_FILE_ACCESS_DESCRIPTORS`). Small tables: read whole, in time order.

use rustc_hash::FxHashMap;

use super::columns::{columns, TakeAll};
use super::ids::{pid_of, tid_of};
use super::select::Row;
use super::Report;

pub(crate) const FILE_ACCESS: &str = "OSRT_FILE_ACCESS_EVENTS";
pub(crate) const FILE_DESCRIPTORS: &str = "OSRT_FILE_ACCESS_DESCRIPTORS";
/// The names of `eventType`.
const EVENT_TYPES: &str = "ENUM_OSRT_FILE_ACCESS_EVENT_TYPE";

columns! {
    /// The columns of [`FILE_ACCESS`].
    pub(crate) struct FileAccessColumns = FILE_ACCESS_COLUMNS {
        started_at: i64 = required("startedAt"),
        ended_at: Option<i64> = required("endedAt"),
        thread_id: i64 = required("threadId"),
        file_access_id: Option<i64> = optional("fileAccessId"),
        event_type: Option<i64> = optional("eventType"),
        api_call_id: Option<i64> = optional("apiCallId"),
        bytes: Option<i64> = optional("bytesProcessed"),
        context: Option<String> = optional("context"),
    }
}

columns! {
    /// The columns of [`FILE_DESCRIPTORS`].
    pub(crate) struct DescriptorColumns = DESCRIPTOR_COLUMNS {
        file_access_id: i64 = required("fileAccessId"),
        process_id: Option<i64> = optional("processId"),
        file_path: Option<String> = optional("filePath"),
    }
}

/// Each descriptor's process (as recorded) and file path, by `fileAccessId`.
type Descriptors = FxHashMap<i64, (Option<i64>, Option<String>)>;

/// A file access of a thread.
pub(crate) struct FileAccess {
    pub start: i64,
    /// `None` for one still under way when the capture stopped.
    pub end: Option<i64>,
    pub pid: u32,
    pub tid: u32,
    /// What it did (`read`, `write`, ...): the label of its `eventType`, or
    /// the number where the export has no labels.
    pub what: String,
    pub path: Option<String>,
    pub bytes: Option<i64>,
    /// The OS runtime call it belongs to, as the export numbers it.
    pub api_call_id: Option<i64>,
    pub context: Option<String>,
}

impl Report {
    /// Every file access of the export, in time order; none where it has
    /// no such table, or one that lacks columns its rows need (noted).
    pub(crate) fn file_accesses(&self) -> rusqlite::Result<Vec<FileAccess>> {
        let Some(mut s) = self.select(FILE_ACCESS) else {
            return Ok(Vec::new());
        };
        let c = FILE_ACCESS_COLUMNS.take_all(&mut s);
        if !self.readable(&s) {
            return Ok(Vec::new());
        }
        let labels = self.file_access_labels()?;
        let descriptors = self.file_descriptors()?;
        let mut out = Vec::new();
        self.each_selected(&s, "", |r| {
            let thread = c.thread_id.get(r)?;
            let descriptor = c.file_access_id.get(r)?.and_then(|id| descriptors.get(&id));
            // A thread id with its process (as globalTid packs them), or a
            // plain tid of the descriptor's process.
            let pid = match (pid_of(thread), descriptor.and_then(|d| d.0)) {
                (0, Some(process)) if process >= 1 << 24 => pid_of(process),
                (0, Some(process)) => process as u32,
                (pid, _) => pid,
            };
            let what = c.event_type.get(r)?.map_or_else(
                || "file access".to_owned(),
                |t| {
                    labels
                        .get(&t)
                        .cloned()
                        .unwrap_or_else(|| format!("file access {t}"))
                },
            );
            out.push(FileAccess {
                start: c.started_at.get(r)?,
                end: c.ended_at.get(r)?,
                pid,
                tid: tid_of(thread),
                what,
                path: descriptor.and_then(|d| d.1.clone()),
                bytes: c.bytes.get(r)?,
                api_call_id: c.api_call_id.get(r)?,
                context: c.context.get(r)?,
            });
            Ok(())
        })?;
        out.sort_by_key(|a| (a.start, a.end));
        Ok(out)
    }

    /// The process and path of each file access descriptor, by id.
    fn file_descriptors(&self) -> rusqlite::Result<Descriptors> {
        let mut out = FxHashMap::default();
        self.each_row(FILE_DESCRIPTORS, "", |s| {
            let c = DESCRIPTOR_COLUMNS.take_all(s);
            let out = &mut out;
            move |r: &Row| {
                let id = c.file_access_id.get(r)?;
                out.insert(id, (c.process_id.get(r)?, c.file_path.get(r)?));
                Ok(())
            }
        })?;
        Ok(out)
    }

    /// The labels of `eventType`, by value.
    fn file_access_labels(&self) -> rusqlite::Result<FxHashMap<i64, String>> {
        let mut out = FxHashMap::default();
        let Some(mut s) = self.select(EVENT_TYPES) else {
            return Ok(out);
        };
        let id = s.required::<i64>("id");
        let label = s.first_of::<String>(&["label", "name"]);
        if s.missing().is_some() {
            return Ok(out);
        }
        self.each_selected(&s, "", |r| {
            if let Some(label) = label.get(r)? {
                out.insert(id.get(r)?, label);
            }
            Ok(())
        })?;
        Ok(out)
    }
}
