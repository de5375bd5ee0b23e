//! Groups past those a summary holds in memory: a report can have a million
//! distinct names (NVTX ranges named per operation). Their values go, with
//! their keys, into a temporary SQLite database, which groups them by key
//! at the end (sorting with its own bounded memory and temporary files) and
//! then holds each group's statistics, read back ranked, once or twice.
//!
//! The database is SQLite's private temporary one: a file in TMPDIR that is
//! deleted when it is closed, whatever happens.

use std::io;

use rusqlite::{params, Connection};

use super::aggregate::{Stats, ValueSets};
use crate::error::Failure;

/// A group's key, written into the database and read back.
pub(crate) trait SpillKey: Sized {
    /// Appends the key's bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// The key at the start of `input`, which it is moved past.
    fn decode(input: &mut &[u8]) -> Option<Self>;
}

impl SpillKey for String {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.len() as u64).to_le_bytes());
        out.extend_from_slice(self.as_bytes());
    }

    fn decode(input: &mut &[u8]) -> Option<Self> {
        let (len, rest) = input.split_first_chunk::<8>()?;
        let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
        let text = rest.get(..len)?;
        *input = &rest[len..];
        String::from_utf8(text.to_vec()).ok()
    }
}

impl SpillKey for bool {
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }

    fn decode(input: &mut &[u8]) -> Option<Self> {
        let (&byte, rest) = input.split_first()?;
        *input = rest;
        Some(byte != 0)
    }
}

impl<A: SpillKey, B: SpillKey> SpillKey for (A, B) {
    fn encode(&self, out: &mut Vec<u8>) {
        self.0.encode(out);
        self.1.encode(out);
    }

    fn decode(input: &mut &[u8]) -> Option<Self> {
        Some((A::decode(input)?, B::decode(input)?))
    }
}

/// The values of the groups past those held, as they come.
pub(super) struct Spill {
    db: Connection,
    key: Vec<u8>,
}

/// A private database in a temporary file (in TMPDIR), deleted when
/// closed, in a 2 MiB cache: what is set aside in it stays out of memory.
pub(super) fn private_database() -> rusqlite::Result<Connection> {
    // An empty name: SQLite's private temporary database.
    let db = Connection::open("")?;
    db.execute_batch(
        "PRAGMA journal_mode = OFF;
         PRAGMA synchronous = OFF;
         PRAGMA temp_store = FILE;
         PRAGMA cache_size = -2048;",
    )?;
    Ok(db)
}

impl Spill {
    pub(super) fn new() -> rusqlite::Result<Spill> {
        let db = private_database()?;
        db.execute_batch(
            "CREATE TABLE value (key BLOB NOT NULL, value INTEGER NOT NULL);
             CREATE TABLE ranked (
                 total BLOB NOT NULL, first INTEGER NOT NULL, key BLOB NOT NULL,
                 count INTEGER NOT NULL, mean REAL NOT NULL, median REAL NOT NULL,
                 min INTEGER NOT NULL, max INTEGER NOT NULL, stddev REAL NOT NULL);
             BEGIN;",
        )?;
        Ok(Spill {
            db,
            key: Vec::new(),
        })
    }

    /// Adds `value` to the group of `key`.
    pub(super) fn add<K: SpillKey>(&mut self, key: &K, value: i64) -> rusqlite::Result<()> {
        self.key.clear();
        key.encode(&mut self.key);
        self.db
            .prepare_cached("INSERT INTO value (key, value) VALUES (?1, ?2)")?
            .execute(params![self.key, value])?;
        Ok(())
    }

    /// Ranks `held` (the groups kept in memory, by first appearance) with
    /// the groups of the spilled values, which came after them; the second
    /// value is the total of every group.
    pub(super) fn rank<K: SpillKey>(
        self,
        held: Vec<(K, Stats)>,
    ) -> Result<(SpilledGroups, i128), Failure> {
        let mut grand = 0i128;
        let first_spilled = held.len() as i64;
        {
            let mut insert = self
                .db
                .prepare(
                    "INSERT INTO ranked (total, first, key, count, mean, median, min, max, stddev)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )
                .map_err(failed)?;
            let mut put = |key: &[u8], first: i64, s: &Stats| -> Result<(), Failure> {
                grand += s.total;
                insert
                    .execute(params![
                        ordered_total(s.total),
                        first,
                        key,
                        s.count as i64,
                        s.mean,
                        s.median,
                        s.min,
                        s.max,
                        s.stddev
                    ])
                    .map_err(failed)?;
                Ok(())
            };
            let mut key = Vec::new();
            for (first, (k, s)) in held.into_iter().enumerate() {
                key.clear();
                k.encode(&mut key);
                put(&key, first as i64, &s)?;
            }
            // Each spilled group's values, together; its first value's row
            // says when it first came.
            let mut values = self
                .db
                .prepare("SELECT key, value, rowid FROM value ORDER BY key, rowid")
                .map_err(failed)?;
            let mut rows = values.query([]).map_err(failed)?;
            let mut group: Option<(Vec<u8>, i64, ValueSets)> = None;
            while let Some(row) = rows.next().map_err(failed)? {
                let (key, value, rowid) = value_row(row).map_err(failed)?;
                if group.as_ref().is_none_or(|(k, ..)| k.as_slice() != key) {
                    if let Some((k, first, sets)) = group.take() {
                        put(&k, first, &only_set(sets)?)?;
                    }
                    group = Some((key.to_vec(), first_spilled + rowid, ValueSets::default()));
                }
                if let Some((_, _, sets)) = &mut group {
                    sets.add(0, value);
                }
            }
            if let Some((k, first, sets)) = group {
                put(&k, first, &only_set(sets)?)?;
            }
        }
        self.db
            .execute_batch("DROP TABLE value; COMMIT;")
            .map_err(failed)?;
        Ok((SpilledGroups { db: self.db }, grand))
    }
}

/// A row of spilled values: key, value, row number (from 1).
fn value_row<'r>(row: &'r rusqlite::Row<'_>) -> rusqlite::Result<(&'r [u8], i64, i64)> {
    Ok((row.get_ref(0)?.as_blob()?, row.get(1)?, row.get(2)?))
}

/// The temporary database failed: no damage to the report.
pub(super) fn failed(e: rusqlite::Error) -> Failure {
    Failure::Write(spill_failed(e))
}

/// The statistics of the one set of `sets`.
fn only_set(sets: ValueSets) -> Result<Stats, Failure> {
    let stats = sets.finish()?;
    Ok(stats[0].expect("a group has a value"))
}

/// `total` as bytes that sort as it does: big-endian, the sign bit flipped.
fn ordered_total(total: i128) -> [u8; 16] {
    (total as u128 ^ (1 << 127)).to_be_bytes()
}

/// Groups ranked in the temporary database.
pub(super) struct SpilledGroups {
    db: Connection,
}

impl SpilledGroups {
    /// Calls `f` with each group, by total descending (ties by first
    /// appearance).
    pub(super) fn each<K: SpillKey>(
        &self,
        f: &mut dyn FnMut(K, &Stats) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut ranked = self
            .db
            .prepare(
                "SELECT key, count, total, mean, median, min, max, stddev
                 FROM ranked ORDER BY total DESC, first",
            )
            .map_err(spill_failed)?;
        let mut rows = ranked.query([]).map_err(spill_failed)?;
        while let Some(row) = rows.next().map_err(spill_failed)? {
            let stats = stats_of(row).map_err(spill_failed)?;
            let mut bytes = row
                .get_ref(0)
                .and_then(|v| Ok(v.as_blob()?))
                .map_err(spill_failed)?;
            let key = K::decode(&mut bytes).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidData, "a key read back damaged")
            });
            f(key.map_err(spill_failed)?, &stats)?;
        }
        Ok(())
    }
}

fn stats_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<Stats> {
    let total = row.get_ref(2)?.as_blob()?;
    let total = <[u8; 16]>::try_from(total).map_err(|_| rusqlite::Error::InvalidQuery)?;
    Ok(Stats {
        count: row.get::<_, i64>(1)? as u64,
        total: (u128::from_be_bytes(total) ^ (1 << 127)) as i128,
        mean: row.get(3)?,
        median: row.get(4)?,
        min: row.get(5)?,
        max: row.get(6)?,
        stddev: row.get(7)?,
    })
}

/// The temporary database failed: the error says what it was.
fn spill_failed(cause: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!(
        "a temporary database of summary groups (TMPDIR says where): {cause}"
    ))
}
