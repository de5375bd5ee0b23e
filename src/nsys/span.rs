//! Facts about a whole report that placing it among others needs: when its
//! events begin, how many CPUs its scheduling data names, which host it is.

use super::{cpu, cuda, select, EventStream, Report};

/// The tables of work done on a GPU.
const GPU_TABLES: [&str; 4] = [cuda::KERNEL, cuda::MEMCPY, cuda::MEMSET, cuda::GRAPH_TRACE];

impl Report {
    /// The session time of the earliest event of any table a conversion
    /// reads, or `None` for a report with no events.
    pub(crate) fn first_event_time(&self) -> rusqlite::Result<Option<i64>> {
        let tables: Vec<String> = EventStream::ALL
            .iter()
            .flat_map(|s| self.tables_of(*s))
            .collect();
        self.earliest(tables.iter().map(String::as_str))
    }

    /// The session time of the earliest GPU work (kernel, copy, set, graph),
    /// or `None` for a report with none.
    pub(crate) fn first_gpu_time(&self) -> rusqlite::Result<Option<i64>> {
        self.earliest(GPU_TABLES.into_iter())
    }

    fn earliest<'a>(&self, tables: impl Iterator<Item = &'a str>) -> rusqlite::Result<Option<i64>> {
        let mut first: Option<i64> = None;
        for table in tables {
            let Some(column) = ["start", "timestamp"]
                .into_iter()
                .find(|c| self.schema.has_column(table, c))
            else {
                continue;
            };
            let sql = format!("SELECT MIN({column}) FROM {}", select::quote(table));
            let min: Option<i64> = self.conn().query_row(&sql, [], |r| r.get(0))?;
            first = first.into_iter().chain(min).min();
        }
        Ok(first)
    }

    /// One more than the highest CPU number below `limit` that the
    /// scheduling data and the CPU samples name: 0 for a report with neither.
    /// The writer gives the limit: numbers its trace cannot hold (damage) are
    /// not counted, as their rows are not written.
    pub(crate) fn cpu_count(&self, limit: u32) -> rusqlite::Result<u32> {
        let mut count = 0;
        for table in [cpu::SCHED, cpu::SAMPLES] {
            if !self.schema.has_column(table, "cpu") {
                continue;
            }
            let sql = format!(
                "SELECT MAX(cpu) FROM {} WHERE cpu >= 0 AND cpu < {}",
                select::quote(table),
                limit
            );
            let max: Option<i64> = self.conn().query_row(&sql, [], |r| r.get(0))?;
            if let Some(max) = max.and_then(|m| u32::try_from(m).ok()) {
                count = count.max(max.saturating_add(1));
            }
        }
        Ok(count)
    }

    /// The name of the machine the report was captured on, where the export
    /// records it (`Hostname` in `TARGET_INFO_SYSTEM_ENV`).
    pub(crate) fn hostname(&self) -> rusqlite::Result<Option<String>> {
        const ENV: &str = super::meta::SYSTEM_ENV;
        if !(self.schema.has_column(ENV, "name") && self.schema.has_column(ENV, "value")) {
            return Ok(None);
        }
        let sql = format!("SELECT value FROM {ENV} WHERE name = 'Hostname' LIMIT 1");
        let conn = self.conn();
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query([])?;
        Ok(match rows.next()? {
            Some(row) => row
                .get::<_, Option<String>>(0)?
                .filter(|h| !h.trim().is_empty()),
            None => None,
        })
    }
}
