//! What a report holds that a filter names: the processes and GPUs that have
//! events, its NVTX domains, the span of its events. Asked only where a
//! filter may have matched nothing, to say what there is instead.

use std::collections::{BTreeMap, BTreeSet};

use super::ids::pid_sql;
use super::select::quote;
use super::{metrics, nvtx, EventStream, Report};

/// What events are of, as a filter names it.
#[derive(Clone, Copy)]
pub(crate) enum Owner {
    /// A process, by pid (`--pid`).
    Process,
    /// A GPU, by `deviceId` (`--gpu`).
    Gpu,
}

impl Report {
    /// The event tables that record what their rows are of, and how each
    /// gives it (SQL): the pid of `globalPid` or `globalTid`; the GPU of
    /// GPU work, CUDA memory use and page faults (`deviceId`) and of GPU
    /// metrics (the low byte of `typeId`), as the filters keep them.
    fn owner_columns(&self, owner: Owner) -> Vec<(String, String)> {
        let column = |table: &str| match owner {
            Owner::Process => ["globalPid", "globalTid"]
                .into_iter()
                .find(|c| self.schema.has_column(table, c))
                .map(pid_sql),
            Owner::Gpu if self.schema.has_column(table, "deviceId") => {
                Some("\"deviceId\"".to_owned())
            }
            Owner::Gpu
                if table == metrics::GPU_METRICS && self.schema.has_column(table, "typeId") =>
            {
                Some("(\"typeId\" & 255)".to_owned())
            }
            Owner::Gpu => None,
        };
        EventStream::ALL
            .iter()
            .flat_map(|s| self.tables_of(*s))
            .filter_map(|table| Some((column(&table)?, table)))
            .collect()
    }

    /// Whether some event of the report is of process or GPU `id`.
    pub(crate) fn has_events_of(&self, owner: Owner, id: i64) -> rusqlite::Result<bool> {
        for (column, table) in self.owner_columns(owner) {
            let sql = format!(
                "SELECT EXISTS (SELECT 1 FROM {} WHERE {column} = {id})",
                quote(&table)
            );
            if self.conn().query_row(&sql, [], |r| r.get::<_, bool>(0))? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The processes or GPUs that have events, with how many each has.
    pub(crate) fn events_by(&self, owner: Owner) -> rusqlite::Result<BTreeMap<i64, u64>> {
        let mut counts = BTreeMap::new();
        for (column, table) in self.owner_columns(owner) {
            let sql = format!(
                "SELECT {column}, COUNT(*) FROM {} WHERE {column} IS NOT NULL GROUP BY 1",
                quote(&table)
            );
            let conn = self.conn();
            let mut stmt = conn.prepare(&sql)?;
            let mut rows = stmt.query([])?;
            while let Some(r) = rows.next()? {
                let (id, n) = (r.get::<_, i64>(0)?, r.get::<_, i64>(1)?);
                *counts.entry(id).or_default() += n as u64;
            }
        }
        Ok(counts)
    }

    /// The names of the NVTX domains the report's events are in: `default`
    /// for NVTX's own, where some event is in it, and each named one.
    pub(crate) fn nvtx_domain_names(&self) -> rusqlite::Result<BTreeSet<String>> {
        let mut names: BTreeSet<String> = self.meta.nvtx_domains.values().cloned().collect();
        if self.schema.has_column(nvtx::TABLE, "domainId") {
            let sql = format!(
                "SELECT EXISTS (SELECT 1 FROM {} WHERE \"domainId\" = 0 OR \"domainId\" IS NULL)",
                nvtx::TABLE
            );
            if self.conn().query_row(&sql, [], |r| r.get::<_, bool>(0))? {
                names.insert("default".to_owned());
            }
        } else if self.schema.has_table(nvtx::TABLE) {
            names.insert("default".to_owned());
        }
        Ok(names)
    }

    /// The session times of the first start and the last end (or start) of
    /// the events of every table a conversion reads; `None` for a report
    /// with no events.
    pub(crate) fn event_span(&self) -> rusqlite::Result<Option<(i64, i64)>> {
        let Some(first) = self.first_event_time()? else {
            return Ok(None);
        };
        let mut last = first;
        for table in EventStream::ALL.iter().flat_map(|s| self.tables_of(*s)) {
            let columns: Vec<&str> = ["end", "start", "timestamp"]
                .into_iter()
                .filter(|c| self.schema.has_column(&table, c))
                .collect();
            for column in columns {
                let sql = format!("SELECT MAX({}) FROM {}", quote(column), quote(&table));
                let max: Option<i64> = self.conn().query_row(&sql, [], |r| r.get(0))?;
                last = last.max(max.unwrap_or(first));
            }
        }
        Ok(Some((first, last)))
    }
}
