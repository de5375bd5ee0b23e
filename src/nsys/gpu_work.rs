//! What the findings of [`crate::analyze`] are made of: GPU work (kernels,
//! memcpy, memset) with only the columns the rules need, and the CUDA runtime
//! calls of chosen names, merged in time order.
//!
//! Calls are chosen by name in SQL (`nameId IN (...)`, the ids found with the
//! `LIKE` patterns the rules are defined by), so a report of millions of
//! launches sends only its few synchronizing and copying calls.

use rusqlite::Row;

use super::cuda::{KERNEL, MEMCPY, MEMSET, RUNTIME};
use super::ids::{pid_of, tid_of};
use super::scan::{order_key, OrderKey, TableScan};
use super::select::Col;
use super::Report;

/// A CUDA runtime call.
pub struct Call<'r> {
    pub start: i64,
    pub end: i64,
    pub pid: u32,
    pub tid: u32,
    pub correlation_id: Option<i64>,
    /// As recorded (`cudaMemcpyAsync_v3020`).
    pub name: &'r str,
}

/// What a GPU operation is, with what the rules look at.
#[derive(Clone, Copy, Debug)]
pub enum OpKind {
    Kernel,
    Memcpy {
        bytes: Option<i64>,
        copy_kind: Option<i64>,
        src_kind: Option<i64>,
        dst_kind: Option<i64>,
        src_device: Option<i64>,
        dst_device: Option<i64>,
    },
    Memset {
        bytes: Option<i64>,
        memory_kind: Option<i64>,
    },
}

/// A kernel, memcpy or memset as the GPU ran it.
#[derive(Clone, Copy, Debug)]
pub struct GpuOp {
    pub start: i64,
    pub end: i64,
    /// `None` where the export names no process (see `Report::pid_column`).
    pub pid: Option<u32>,
    pub device: i64,
    pub context: Option<i64>,
    pub stream: Option<i64>,
    pub correlation_id: Option<i64>,
    pub kind: OpKind,
}

/// Reads what kind of operation a row is, and its own columns.
type DecodeKind = Box<dyn Fn(&Row) -> rusqlite::Result<OpKind> + Send>;

pub enum Work<'r> {
    Call(Call<'r>),
    Op(GpuOp),
}

fn key(work: &Work) -> OrderKey {
    match work {
        Work::Call(c) => order_key(c.start, c.end),
        Work::Op(o) => order_key(o.start, o.end),
    }
}

impl Report {
    /// The StringIds ids of the strings matching any of `patterns` (SQL
    /// `LIKE` patterns, which ignore ASCII case).
    pub(crate) fn string_ids_like(&self, patterns: &[&str]) -> rusqlite::Result<Vec<i64>> {
        let Some(mut s) = self.select("StringIds") else {
            return Ok(Vec::new());
        };
        let id = s.required::<i64>("id");
        if !s.has("value") || patterns.is_empty() {
            return Ok(Vec::new());
        }
        let filter = patterns
            .iter()
            .map(|p| format!("value LIKE '{}'", p.replace('\'', "''")))
            .collect::<Vec<_>>()
            .join(" OR ");
        let mut ids = Vec::new();
        self.each_selected(&s, &filter, |r| {
            ids.push(id.get(r)?);
            Ok(())
        })?;
        Ok(ids)
    }

    /// Calls `f` in time order with the runtime calls whose `nameId` is one
    /// of `call_names` (records that only repeat a call for its backtrace
    /// left out) and, if `ops`, with every kernel, memcpy and memset.
    pub(crate) fn for_each_gpu_work<'r, E: From<rusqlite::Error>>(
        &'r self,
        call_names: &[i64],
        ops: bool,
        f: impl FnMut(Work<'r>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut scans = Vec::new();
        if !call_names.is_empty() {
            scans.extend(self.call_scan(call_names));
        }
        if ops {
            for table in [KERNEL, MEMCPY, MEMSET] {
                scans.extend(self.op_scan(table));
            }
        }
        self.stream_events(scans, f)
    }

    fn call_scan(&self, names: &[i64]) -> Option<TableScan<'_, Work<'_>>> {
        let mut s = self.select(RUNTIME)?;
        let start = s.required("start");
        let end = s.required("end");
        let gtid = s.required::<i64>("globalTid");
        let correlation = s.optional("correlationId");
        let name = s.required::<i64>("nameId");
        if !self.readable(&s) {
            return None;
        }
        let ids = names
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let mut filter = format!("\"nameId\" IN ({ids})");
        // "CUDA backtrace" records (eventClass 67, 68) repeat a call to carry its stack.
        if s.has("eventClass") {
            filter.push_str(" AND (\"eventClass\" IS NULL OR \"eventClass\" NOT IN (67, 68))");
        }
        let strings = &self.strings;
        let decode = move |r: &Row| {
            let gtid = gtid.get(r)?;
            Ok(Work::Call(Call {
                start: start.get(r)?,
                end: end.get(r)?,
                pid: pid_of(gtid),
                tid: tid_of(gtid),
                correlation_id: correlation.get(r)?,
                name: strings.name(Some(name.get(r)?)),
            }))
        };
        Some(TableScan::new(&s, decode, key).filter(filter))
    }

    fn op_scan(&self, table: &str) -> Option<TableScan<'_, Work<'_>>> {
        let mut s = self.select(table)?;
        let start = s.required::<i64>("start");
        let end = s.required::<i64>("end");
        let pid: Col<Option<i64>> = s.expr(self.pid_column(table));
        let device = s.optional("deviceId");
        let context = s.optional("contextId");
        let stream = s.optional("streamId");
        let correlation = s.optional("correlationId");
        let kind: DecodeKind = match table {
            MEMCPY => {
                let bytes = s.optional("bytes");
                let copy_kind = s.optional("copyKind");
                let src_kind = s.optional("srcKind");
                let dst_kind = s.optional("dstKind");
                let src_device = s.optional("srcDeviceId");
                let dst_device = s.optional("dstDeviceId");
                Box::new(move |r| {
                    Ok(OpKind::Memcpy {
                        bytes: bytes.get(r)?,
                        copy_kind: copy_kind.get(r)?,
                        src_kind: src_kind.get(r)?,
                        dst_kind: dst_kind.get(r)?,
                        src_device: src_device.get(r)?,
                        dst_device: dst_device.get(r)?,
                    })
                })
            }
            MEMSET => {
                let bytes = s.optional("bytes");
                let memory_kind = s.optional("memKind");
                Box::new(move |r| {
                    Ok(OpKind::Memset {
                        bytes: bytes.get(r)?,
                        memory_kind: memory_kind.get(r)?,
                    })
                })
            }
            _ => Box::new(|_| Ok(OpKind::Kernel)),
        };
        if !self.readable(&s) {
            return None;
        }
        let decode = move |r: &Row| {
            Ok(Work::Op(GpuOp {
                start: start.get(r)?,
                end: end.get(r)?,
                pid: pid.get(r)?.map(|p| p as u32),
                device: device.get(r)?.unwrap_or(0),
                context: context.get(r)?,
                stream: stream.get(r)?,
                correlation_id: correlation.get(r)?,
                kind: kind(r)?,
            }))
        };
        Some(TableScan::new(&s, decode, key))
    }
}
