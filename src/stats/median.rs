//! Exact medians of many numbered sets of values, in memory that does not
//! grow with the number of values.
//!
//! A set keeps its values, counted by value, while they are few distinct
//! ones (durations and sizes repeat). Past that, it keeps a histogram of
//! them instead, and every value goes, with its set's number, into one
//! temporary file shared by all sets. The histogram's buckets are exact
//! below 128 and then 64 to each power of two (a bucket spans at most 1/64
//! of its values), mirrored for negative values. At the end the histogram
//! says which bucket holds each middle value and how many values lie below
//! it; one read of the file gathers the values of those buckets, counted by
//! value, so that memory is bounded by the width of a bucket whatever the
//! number of values in it, and walking them in order gives the exact
//! middle values.
//!
//! The file is anonymous (unlinked from the start): nothing is left behind,
//! whatever happens to the process.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

/// The most distinct values a set keeps itself, with their counts (16
/// bytes each): reports can have many thousands of sets.
const KEPT: usize = 32;

/// Sub-buckets to each power of two: 2^SUB_BITS.
const SUB_BITS: u32 = 6;

/// A spilled value: its set's number, then the value, little-endian.
const RECORD: usize = 12;

/// The medians of numbered sets of values.
#[derive(Default)]
pub(crate) struct Medians {
    sets: Vec<Set>,
    spill: Option<BufWriter<File>>,
    /// The first failure to write the spill; the rest is not written.
    failed: Option<io::Error>,
}

enum Set {
    /// Distinct values and how many times each came, in the order they came.
    Kept(Vec<(i64, u64)>),
    Spilled(Histogram),
}

impl Default for Set {
    fn default() -> Self {
        Set::Kept(Vec::new())
    }
}

impl Medians {
    /// Adds `value` to the set numbered `set` (sets are numbered from 0; a
    /// number not seen before makes the sets up to it, empty).
    pub fn add(&mut self, set: usize, value: i64) {
        if set >= self.sets.len() {
            self.sets.resize_with(set + 1, Set::default);
        }
        match &mut self.sets[set] {
            Set::Spilled(histogram) => {
                histogram.add(value, 1);
                spill(&mut self.spill, &mut self.failed, set, value);
            }
            Set::Kept(values) => {
                if let Some(kept) = values.iter_mut().find(|(v, _)| *v == value) {
                    kept.1 += 1;
                } else if values.len() < KEPT {
                    values.push((value, 1));
                } else {
                    let mut histogram = Histogram::default();
                    for (v, count) in values.iter().copied().chain([(value, 1)]) {
                        histogram.add(v, count);
                        for _ in 0..count {
                            spill(&mut self.spill, &mut self.failed, set, v);
                        }
                    }
                    self.sets[set] = Set::Spilled(histogram);
                }
            }
        }
    }

    /// Each set's median, by number: the middle value, or the mean of the
    /// middle two for an even count; `None` for a set without values.
    pub fn finish(self) -> Result<Vec<Option<f64>>, SpillFailed> {
        if let Some(e) = self.failed {
            return Err(SpillFailed(e));
        }
        // Where the spilled sets' middle values lie.
        let mut wanted: Vec<Option<Wanted>> = Vec::with_capacity(self.sets.len());
        let mut medians: Vec<Option<f64>> = Vec::with_capacity(self.sets.len());
        for set in self.sets {
            match set {
                Set::Kept(mut values) => {
                    values.sort_unstable();
                    medians.push(median_of(&values));
                    wanted.push(None);
                }
                Set::Spilled(histogram) => {
                    medians.push(None);
                    wanted.push(Some(histogram.wanted()));
                }
            }
        }
        if let Some(spill) = self.spill {
            let file = spill
                .into_inner()
                .map_err(|e| SpillFailed(e.into_error()))?;
            gather(file, &mut wanted).map_err(SpillFailed)?;
            for (median, wanted) in medians.iter_mut().zip(wanted) {
                if let Some(wanted) = wanted {
                    *median = Some(wanted.median());
                }
            }
        }
        Ok(medians)
    }
}

fn spill(
    spill: &mut Option<BufWriter<File>>,
    failed: &mut Option<io::Error>,
    set: usize,
    value: i64,
) {
    if failed.is_some() {
        return;
    }
    let written = (|| {
        let out = match spill {
            Some(out) => out,
            None => spill.insert(BufWriter::with_capacity(1 << 16, tempfile::tempfile()?)),
        };
        let set = u32::try_from(set).map_err(|_| io::Error::other("too many sets of values"))?;
        let mut record = [0u8; RECORD];
        record[..4].copy_from_slice(&set.to_le_bytes());
        record[4..].copy_from_slice(&value.to_le_bytes());
        out.write_all(&record)
    })();
    if let Err(e) = written {
        *failed = Some(e);
    }
}

/// Reads the spill once, counting the values of the wanted buckets.
fn gather(mut file: File, wanted: &mut [Option<Wanted>]) -> io::Result<()> {
    file.seek(SeekFrom::Start(0))?;
    let mut input = BufReader::with_capacity(1 << 16, file);
    let mut record = [0u8; RECORD];
    loop {
        match input.read_exact(&mut record) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let set = u32::from_le_bytes(record[..4].try_into().expect("4 bytes")) as usize;
        let value = i64::from_le_bytes(record[4..].try_into().expect("8 bytes"));
        if let Some(Some(w)) = wanted.get_mut(set) {
            let key = bucket(value);
            if key >= w.first.key && key <= w.last.key {
                *w.values.entry(value).or_default() += 1;
            }
        }
    }
}

/// The middle value of `values` (distinct values in ascending order, with
/// their counts), or the mean of the middle two.
fn median_of(values: &[(i64, u64)]) -> Option<f64> {
    let n: u64 = values.iter().map(|v| v.1).sum();
    if n == 0 {
        return None;
    }
    let lower = value_at(values.iter().copied(), (n - 1) / 2);
    let upper = value_at(values.iter().copied(), n / 2);
    Some(mean_of_two(lower, upper))
}

/// The value of rank `rank` (from 0) among `values`: distinct values in
/// ascending order, with their counts.
fn value_at(values: impl Iterator<Item = (i64, u64)>, rank: u64) -> i64 {
    let mut below = 0;
    for (value, count) in values {
        below += count;
        if below > rank {
            return value;
        }
    }
    unreachable!("a rank below the count")
}

/// The middle value of an odd count (found twice), or the mean of the two
/// of an even count, as nsys takes it.
fn mean_of_two(lower: i64, upper: i64) -> f64 {
    match lower == upper {
        true => lower as f64,
        false => (lower as f64 + upper as f64) / 2.0,
    }
}

/// The bucket of `value`: buckets of larger values have larger keys.
fn bucket(value: i64) -> i32 {
    let magnitude = bucket_of_magnitude(value.unsigned_abs());
    match value < 0 {
        true => -magnitude,
        false => magnitude,
    }
}

/// Exact below 2^(SUB_BITS + 1); above, the top SUB_BITS + 1 bits of the
/// magnitude and how far they were shifted.
fn bucket_of_magnitude(magnitude: u64) -> i32 {
    if magnitude < 1 << (SUB_BITS + 1) {
        return magnitude as i32;
    }
    let top = 63 - magnitude.leading_zeros();
    let shift = top - SUB_BITS;
    // In [2^SUB_BITS, 2^(SUB_BITS + 1)).
    let leading = (magnitude >> shift) as i32;
    ((shift as i32) << SUB_BITS) + leading
}

/// Counts of values by bucket, over the range of buckets seen.
#[derive(Default)]
struct Histogram {
    /// The key of `counts[0]`.
    first: i32,
    counts: Vec<u64>,
}

impl Histogram {
    fn add(&mut self, value: i64, count: u64) {
        let key = bucket(value);
        if self.counts.is_empty() {
            self.first = key;
        }
        if key < self.first {
            let grow = (self.first - key) as usize;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.first = key;
        }
        let at = (key - self.first) as usize;
        if at >= self.counts.len() {
            self.counts.resize(at + 1, 0);
        }
        self.counts[at] += count;
    }

    /// Which buckets hold the values of ranks (n - 1) / 2 and n / 2 (from
    /// 0, in ascending order), and how many values lie below each.
    fn wanted(&self) -> Wanted {
        let n: u64 = self.counts.iter().sum();
        let at = |rank: u64| -> Place {
            let mut below = 0;
            for (i, &count) in self.counts.iter().enumerate() {
                if below + count > rank {
                    return Place {
                        key: self.first + i as i32,
                        rank: rank - below,
                    };
                }
                below += count;
            }
            unreachable!("a rank below the count")
        };
        Wanted {
            first: at((n - 1) / 2),
            last: at(n / 2),
            values: BTreeMap::new(),
        }
    }
}

/// A middle value: its bucket, and its rank among the values of that bucket.
struct Place {
    key: i32,
    rank: u64,
}

/// A spilled set's two middle values (one, twice, for an odd count), and
/// the values of their buckets (and of any bucket between: none, as the two
/// ranks are adjacent and buckets between them are empty) by value.
struct Wanted {
    first: Place,
    last: Place,
    values: BTreeMap<i64, u64>,
}

impl Wanted {
    fn median(&self) -> f64 {
        let in_bucket = |key: i32| {
            self.values
                .iter()
                .filter(move |(&v, _)| bucket(v) == key)
                .map(|(&v, &count)| (v, count))
        };
        let lower = value_at(in_bucket(self.first.key), self.first.rank);
        let upper = value_at(in_bucket(self.last.key), self.last.rank);
        mean_of_two(lower, upper)
    }
}

/// The temporary file of values could not be written or read back.
#[derive(Debug)]
pub(crate) struct SpillFailed(pub io::Error);

impl fmt::Display for SpillFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a temporary file in {} (TMPDIR): {}",
            std::env::temp_dir().display(),
            crate::error::plain(&self.0)
        )
    }
}

impl std::error::Error for SpillFailed {}

/// Carried through the readers' errors, to be told apart by [`failure`].
impl From<SpillFailed> for rusqlite::Error {
    fn from(e: SpillFailed) -> Self {
        rusqlite::Error::ToSqlConversionFailure(Box::new(e))
    }
}

/// The error of reading `report`: a failed spill is no damage to the report.
pub(crate) fn failure(report: &std::path::Path, e: rusqlite::Error) -> crate::Error {
    match e {
        rusqlite::Error::ToSqlConversionFailure(e) if e.is::<SpillFailed>() => {
            let SpillFailed(cause) = *e.downcast::<SpillFailed>().expect("checked");
            crate::Error::Output {
                path: std::env::temp_dir(),
                cause: io::Error::new(
                    cause.kind(),
                    format!(
                        "a temporary file of values for medians (TMPDIR says where): {}",
                        crate::error::plain(&cause)
                    ),
                ),
            }
        }
        e => crate::Error::Damaged {
            path: report.to_owned(),
            cause: crate::error::DatabaseError(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: sort, take the middle one or two.
    fn sorted_median(values: &[i64]) -> Option<f64> {
        let mut v = values.to_vec();
        v.sort_unstable();
        let n = v.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(v[n / 2] as f64),
            _ => Some((v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0),
        }
    }

    fn medians(sets: &[Vec<i64>]) -> Vec<Option<f64>> {
        let mut m = Medians::default();
        // Interleaved, as rows of several groups come.
        let longest = sets.iter().map(Vec::len).max().unwrap_or(0);
        for i in 0..longest {
            for (s, values) in sets.iter().enumerate() {
                if let Some(&v) = values.get(i) {
                    m.add(s, v);
                }
            }
        }
        // A set never added to is not known: callers that number it say so.
        let mut out = m.finish().unwrap();
        out.resize(sets.len(), None);
        out
    }

    /// A small deterministic generator (xorshift), so failures repeat.
    struct Random(u64);

    impl Random {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    #[test]
    fn buckets_are_ordered_like_their_values() {
        let mut values: Vec<i64> = vec![i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX, i64::MAX - 1];
        for shift in 0..63 {
            for delta in [-1i64, 0, 1] {
                let v = (1i64 << shift).saturating_add(delta);
                values.extend([v, -v, v / 3, -(v / 3) * 2]);
            }
        }
        values.sort_unstable();
        for pair in values.windows(2) {
            assert!(bucket(pair[0]) <= bucket(pair[1]), "{pair:?}");
        }
        // Exact below 128; 64 buckets to each power of two above.
        assert_eq!((bucket(127), bucket(128), bucket(129)), (127, 128, 128));
        assert_eq!(bucket(255), 191);
        assert_eq!(bucket(256), 192);
        assert_eq!(bucket(-127), -127);
        assert_eq!(bucket(0), 0);
    }

    #[test]
    fn medians_equal_the_sorted_definition() {
        let mut random = Random(0x9e37_79b9_7f4a_7c15);
        let mut sets: Vec<Vec<i64>> = Vec::new();
        for n in [1, 2, 3, KEPT - 1, KEPT, KEPT + 1, KEPT + 2, 600, 5000, 5001] {
            // Durations spread over several powers of two.
            sets.push((0..n).map(|_| random.below(1 << 24) as i64).collect());
            // Many duplicates.
            sets.push((0..n).map(|_| 1000 + random.below(5) as i64 * 7).collect());
            // Negative and positive.
            sets.push(
                (0..n)
                    .map(|_| random.below(2_000_000) as i64 - 1_000_000)
                    .collect(),
            );
            // All equal.
            sets.push(vec![123_456_789; n]);
            // Huge values, both signs.
            sets.push(
                (0..n)
                    .map(|_| match random.below(4) {
                        0 => i64::MAX - random.below(3) as i64,
                        1 => i64::MIN + random.below(3) as i64,
                        _ => random.next() as i64,
                    })
                    .collect(),
            );
            // Small values, exact buckets.
            sets.push((0..n).map(|_| random.below(200) as i64 - 60).collect());
        }
        sets.push(Vec::new());
        let expected: Vec<Option<f64>> = sets.iter().map(|s| sorted_median(s)).collect();
        assert_eq!(medians(&sets), expected);
    }

    #[test]
    fn a_single_large_set_spills_and_stays_exact() {
        let mut random = Random(7);
        let values: Vec<i64> = (0..100_000)
            .map(|_| 1_000_000 + random.below(50_000) as i64)
            .collect();
        let mut m = Medians::default();
        values.iter().for_each(|&v| m.add(0, v));
        assert!(m.spill.is_some());
        assert!(matches!(m.sets[0], Set::Spilled(_)));
        assert_eq!(m.finish().unwrap(), vec![sorted_median(&values)]);
    }

    #[test]
    fn sets_of_few_distinct_values_stay_in_memory() {
        let mut m = Medians::default();
        (0..KEPT as i64).for_each(|v| m.add(3, v));
        // A million values, of three sizes.
        for i in 0..1_000_000 {
            m.add(0, [4096, 64, 1 << 20][i % 3]);
        }
        assert!(m.spill.is_none());
        let out = m.finish().unwrap();
        assert_eq!(out.len(), 4);
        assert_eq!(out[..3], [Some(4096.0), None, None]);
        assert_eq!(out[3], Some((KEPT as f64 - 1.0) / 2.0));
    }

    #[test]
    fn a_failed_spill_is_no_damage_to_the_report() {
        let cause = io::Error::new(io::ErrorKind::StorageFull, "No space left on device");
        let e = failure(std::path::Path::new("r.sqlite"), SpillFailed(cause).into());
        let text = e.to_string();
        assert!(matches!(e, crate::Error::Output { .. }), "{text}");
        assert!(
            text.ends_with("(TMPDIR says where): no space left on device"),
            "{text}"
        );
        let e = failure(
            std::path::Path::new("r.sqlite"),
            rusqlite::Error::InvalidQuery,
        );
        assert!(matches!(e, crate::Error::Damaged { .. }));
    }
}
