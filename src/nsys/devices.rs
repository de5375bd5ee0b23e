//! Which GPU each CUDA context is on, as the report establishes it.
//!
//! Kernels, copies, memsets and whole graphs record the device they ran on
//! (`deviceId`, which is `TARGET_INFO_GPU.id`). Synchronizations do not:
//! CUPTI's synchronization record has no device field, and exports write 0
//! in its place whatever the context's device. A synchronization belongs to
//! a context (the one its stream or event was made in), and a context to one
//! device, so it is placed on the device of its context: that of the
//! context's other GPU work, or else the one `TARGET_INFO_CUDA_CONTEXT_INFO`
//! records for it, or else the report's only GPU. Where none of these says,
//! its device is not established, and the row's own `deviceId` is all there is.

use std::collections::BTreeMap;

use super::cuda::{GPU_OP_TABLES, SYNC};
use super::meta::CUDA_CONTEXTS;
use super::select::quote;
use super::Report;

/// The tables whose `deviceId` is not recorded by CUPTI (exports write 0):
/// their rows go on the device of their context.
pub(crate) const DEVICE_NOT_RECORDED: [&str; 1] = [SYNC];

/// The device of each CUDA context (by pid and `contextId`) that rows of
/// the [`DEVICE_NOT_RECORDED`] tables belong to, where the report
/// establishes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ContextDevices {
    /// By (pid, contextId); ordered, so that the SQL made of it is the
    /// same on every run.
    by_context: BTreeMap<(u32, i64), i64>,
    /// The report's GPU, when it has exactly one.
    sole_gpu: Option<i64>,
}

impl ContextDevices {
    /// The device of the work of context `context` of process `pid`, where
    /// the report establishes it.
    pub(crate) fn device(&self, pid: Option<u32>, context: Option<i64>) -> Option<i64> {
        let established = match (pid, context) {
            (Some(pid), Some(context)) => self.by_context.get(&(pid, context)).copied(),
            _ => None,
        };
        established.or(self.sole_gpu)
    }

    /// SQL for the device of a row of a [`DEVICE_NOT_RECORDED`] table, as
    /// [`ContextDevices::device`] gives it, or else the row's `deviceId`;
    /// `pid` is the SQL of the row's pid (see `Report::pid_column`).
    pub(crate) fn device_sql(&self, pid: &str) -> String {
        let otherwise = match self.sole_gpu {
            Some(gpu) => gpu.to_string(),
            None => quote("deviceId"),
        };
        if self.by_context.is_empty() {
            return otherwise;
        }
        let context = quote("contextId");
        let cases: Vec<String> = self
            .by_context
            .iter()
            .map(|((p, c), device)| format!("WHEN {pid} = {p} AND {context} = {c} THEN {device}"))
            .collect();
        format!("CASE {} ELSE {otherwise} END", cases.join(" "))
    }
}

impl Report {
    /// The devices of the contexts of the [`DEVICE_NOT_RECORDED`] tables'
    /// rows. The other GPU work of a context is looked up by the first row
    /// of it in each table: a context runs on one device.
    pub(crate) fn context_devices(&self) -> rusqlite::Result<ContextDevices> {
        let gpus = &self.meta.gpus;
        let mut devices = ContextDevices {
            by_context: BTreeMap::new(),
            sole_gpu: match gpus.len() {
                1 => gpus.keys().next().copied(),
                _ => None,
            },
        };
        let context = quote("contextId");
        let mut contexts = Vec::new();
        for table in DEVICE_NOT_RECORDED {
            let pid = self.pid_column(table);
            if !self.schema.has_column(table, "contextId") || pid == "NULL" {
                continue;
            }
            let sql = format!(
                "SELECT DISTINCT {pid}, {context} FROM {} WHERE {context} IS NOT NULL",
                quote(table)
            );
            let conn = self.conn();
            let mut stmt = conn.prepare(&sql)?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                if let Some(pid) = r.get::<_, Option<i64>>(0)? {
                    contexts.push((pid, r.get::<_, i64>(1)?));
                }
            }
        }
        contexts.sort_unstable();
        contexts.dedup();
        // The tables that say where a context's rows ran, and SQL for the
        // device of the first row of a (pid, context) in each.
        let mut sources: Vec<String> = GPU_OP_TABLES
            .into_iter()
            .filter(|t| {
                ["deviceId", "contextId"]
                    .iter()
                    .all(|c| self.schema.has_column(t, c))
                    && self.pid_column(t) != "NULL"
            })
            .map(|t| {
                format!(
                    "SELECT deviceId FROM {} WHERE {} = ?1 AND {context} = ?2 \
                     AND deviceId IS NOT NULL LIMIT 1",
                    quote(t),
                    self.pid_column(t)
                )
            })
            .collect();
        let recorded = ["processId", "contextId", "deviceId"]
            .iter()
            .all(|c| self.schema.has_column(CUDA_CONTEXTS, c));
        if recorded {
            sources.push(format!(
                "SELECT deviceId FROM {CUDA_CONTEXTS} WHERE processId = ?1 AND contextId = ?2 \
                 AND deviceId IS NOT NULL LIMIT 1"
            ));
        }
        let conn = self.conn();
        for (pid, ctx) in contexts {
            for sql in &sources {
                let mut stmt = conn.prepare(sql)?;
                let mut rows = stmt.query([pid, ctx])?;
                if let Some(r) = rows.next()? {
                    devices.by_context.insert((pid as u32, ctx), r.get(0)?);
                    break;
                }
            }
        }
        Ok(devices)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devices(sole_gpu: Option<i64>) -> ContextDevices {
        ContextDevices {
            by_context: BTreeMap::from([((7, 1), 0), ((8, 2), 3)]),
            sole_gpu,
        }
    }

    #[test]
    fn a_context_s_device_then_the_only_gpu() {
        let d = devices(None);
        assert_eq!(d.device(Some(8), Some(2)), Some(3));
        assert_eq!(
            d.device(Some(7), Some(2)),
            None,
            "another process's context"
        );
        assert_eq!(d.device(None, Some(2)), None);
        let d = devices(Some(5));
        assert_eq!(d.device(Some(8), Some(2)), Some(3));
        assert_eq!(d.device(Some(7), Some(2)), Some(5));
        assert_eq!(d.device(None, None), Some(5));
    }

    #[test]
    fn sql_gives_the_same_devices() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (pid INTEGER, contextId INTEGER, deviceId INTEGER);
             INSERT INTO t VALUES (7, 1, 9), (8, 2, 0), (7, 2, 4), (NULL, 2, 6), (8, NULL, 1);",
        )
        .unwrap();
        for sole_gpu in [None, Some(5)] {
            let d = devices(sole_gpu);
            let sql = format!(
                "SELECT pid, contextId, deviceId, {} FROM t",
                d.device_sql("pid")
            );
            let mut stmt = conn.prepare(&sql).unwrap();
            let rows = stmt
                .query_map([], |r| {
                    Ok((
                        r.get::<_, Option<u32>>(0)?,
                        r.get::<_, Option<i64>>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                    ))
                })
                .unwrap();
            for row in rows {
                let (pid, context, recorded, placed) = row.unwrap();
                let expected = d.device(pid, context).unwrap_or(recorded);
                assert_eq!(placed, expected, "{pid:?} {context:?} {sole_gpu:?}");
            }
        }
    }
}
