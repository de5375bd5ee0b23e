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
//! it. A read of the file then gathers the values of those buckets, counted
//! by value, and walking them in order gives the exact middle values; where
//! a bucket holds too many distinct values for that, reads first count its
//! values by slices of its range, each read narrowing the range 4096-fold.
//! Memory is bounded per set, whatever the number of values.
//!
//! The file is anonymous (unlinked from the start): nothing is left behind,
//! whatever happens to the process.

use std::collections::BTreeMap;
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
    pub(super) fn add(&mut self, set: usize, value: i64) {
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
    pub(super) fn finish(self) -> io::Result<Vec<Option<f64>>> {
        if let Some(e) = self.failed {
            return Err(spill_failed(e));
        }
        // Where the spilled sets' middle values lie.
        let mut wanted: Vec<Vec<Target>> = Vec::with_capacity(self.sets.len());
        let mut medians: Vec<Option<f64>> = Vec::with_capacity(self.sets.len());
        for set in self.sets {
            match set {
                Set::Kept(mut values) => {
                    values.sort_unstable();
                    medians.push(median_of(&values));
                    wanted.push(Vec::new());
                }
                Set::Spilled(histogram) => {
                    medians.push(None);
                    wanted.push(histogram.targets());
                }
            }
        }
        if let Some(spill) = self.spill {
            let mut file = spill
                .into_inner()
                .map_err(|e| spill_failed(e.into_error()))?;
            // Each read narrows every middle value still sought: to one
            // value where few values are left to tell apart, otherwise to
            // one of SLICES slices of its range.
            while wanted.iter().flatten().any(|t| t.found.is_none()) {
                for target in wanted.iter_mut().flatten() {
                    target.prepare();
                }
                read_spill(&mut file, &mut wanted).map_err(spill_failed)?;
                for target in wanted.iter_mut().flatten() {
                    target.narrow();
                }
            }
            for (median, targets) in medians.iter_mut().zip(wanted) {
                let found: Vec<i64> = targets.iter().filter_map(|t| t.found).collect();
                match found[..] {
                    [lower, upper] => *median = Some(mean_of_two(lower, upper)),
                    [] => {}
                    _ => unreachable!("two middle values to each spilled set"),
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

/// Reads the spill once, each value counted by the targets whose range holds it.
fn read_spill(file: &mut File, wanted: &mut [Vec<Target>]) -> io::Result<()> {
    file.seek(SeekFrom::Start(0))?;
    let mut input = BufReader::with_capacity(1 << 16, &mut *file);
    let mut record = [0u8; RECORD];
    loop {
        match input.read_exact(&mut record) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let set = u32::from_le_bytes(record[..4].try_into().expect("4 bytes")) as usize;
        let value = i64::from_le_bytes(record[4..].try_into().expect("8 bytes"));
        if let Some(targets) = wanted.get_mut(set) {
            for target in targets {
                target.count_in(value);
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

    /// The values of ranks (n - 1) / 2 and n / 2 (from 0, in ascending
    /// order) as targets: the range of the bucket that holds each, and its
    /// rank among the values there.
    fn targets(&self) -> Vec<Target> {
        let n: u64 = self.counts.iter().sum();
        let at = |rank: u64| -> Target {
            let mut below = 0;
            for (i, &count) in self.counts.iter().enumerate() {
                if below + count > rank {
                    let (low, high) = bucket_range(self.first + i as i32);
                    return Target::new(low, high, count, rank - below);
                }
                below += count;
            }
            unreachable!("a rank below the count")
        };
        vec![at((n - 1) / 2), at(n / 2)]
    }
}

/// The least and greatest value of the bucket `key`.
fn bucket_range(key: i32) -> (i64, i64) {
    let magnitude = key.unsigned_abs();
    let (low, high): (u128, u128) = match magnitude < 1 << (SUB_BITS + 1) {
        true => (magnitude.into(), magnitude.into()),
        false => {
            let shift = (magnitude >> SUB_BITS) - 1;
            let leading = u128::from(magnitude - (shift << SUB_BITS));
            (leading << shift, ((leading + 1) << shift) - 1)
        }
    };
    // The top buckets reach past the magnitudes of i64 (2^63 for i64::MIN).
    let signed = |m: u128, negative: bool| match negative {
        true => i64::try_from(-(m.min(1 << 63) as i128)).expect("down to i64::MIN"),
        false => i64::try_from(m).unwrap_or(i64::MAX),
    };
    match key < 0 {
        true => (signed(high, true), signed(low, true)),
        false => (signed(low, false), signed(high, false)),
    }
}

/// The most distinct values gathered to find one middle value (about 40
/// bytes each); more are first told apart by slices of their range.
const GATHERED: u64 = 1 << 12;

/// The slices a range is cut into when its values are too many to gather.
const SLICES: u64 = 1 << 12;

/// One middle value of a spilled set, sought among the values in
/// `low..=high`: `count` of them, the one sought being of rank `rank`.
struct Target {
    low: i64,
    high: i64,
    count: u64,
    rank: u64,
    found: Option<i64>,
    reading: Reading,
}

/// What the next read of the spill keeps of the target's values.
enum Reading {
    Nothing,
    /// Each value, counted.
    Values(BTreeMap<i64, u64>),
    /// Counts by slice of the range, each slice `width` values wide.
    Slices {
        width: u64,
        counts: Vec<u64>,
    },
}

impl Target {
    fn new(low: i64, high: i64, count: u64, rank: u64) -> Target {
        Target {
            low,
            high,
            count,
            rank,
            found: None,
            reading: Reading::Nothing,
        }
    }

    /// How many values the range spans, less one (up to 2^64 - 1).
    fn span(&self) -> u64 {
        self.high.abs_diff(self.low)
    }

    fn prepare(&mut self) {
        self.reading = match self.found {
            Some(_) => Reading::Nothing,
            None if self.count.min(self.span()) < GATHERED => Reading::Values(BTreeMap::new()),
            None => {
                let width = self.span() / SLICES + 1;
                Reading::Slices {
                    width,
                    counts: vec![0; (self.span() / width + 1) as usize],
                }
            }
        };
    }

    fn count_in(&mut self, value: i64) {
        if value < self.low || value > self.high {
            return;
        }
        match &mut self.reading {
            Reading::Nothing => {}
            Reading::Values(values) => *values.entry(value).or_default() += 1,
            Reading::Slices { width, counts } => {
                counts[(value.abs_diff(self.low) / *width) as usize] += 1;
            }
        }
    }

    /// After a read: the value found, or the slice that holds it.
    fn narrow(&mut self) {
        match std::mem::replace(&mut self.reading, Reading::Nothing) {
            Reading::Nothing => {}
            Reading::Values(values) => {
                let values = values.into_iter();
                self.found = Some(value_at(values, self.rank));
            }
            Reading::Slices { width, counts } => {
                let mut below = 0;
                for (i, &count) in counts.iter().enumerate() {
                    if below + count > self.rank {
                        let low = self.low.saturating_add_unsigned(i as u64 * width);
                        self.high = self.high.min(low.saturating_add_unsigned(width - 1));
                        self.low = low;
                        self.count = count;
                        self.rank -= below;
                        return;
                    }
                    below += count;
                }
                unreachable!("the spill holds every value the histogram counted")
            }
        }
    }
}

/// The temporary file of values could not be written or read back: the
/// error says so.
fn spill_failed(cause: io::Error) -> io::Error {
    let message = format!(
        "a temporary file of values for medians in {} (TMPDIR): {}",
        std::env::temp_dir().display(),
        crate::error::plain(&cause)
    );
    io::Error::new(cause.kind(), crate::error::Worded(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The temporary file of medians is named once, with its directory,
    /// when the analysis says it failed.
    #[cfg(unix)]
    #[test]
    fn a_failed_spill_names_its_file_once() {
        let too_large = io::Error::from_raw_os_error(libc::EFBIG);
        let e = crate::error::Error::temporary(spill_failed(too_large));
        let said = e.to_string();
        assert_eq!(said.matches("temporary").count(), 1, "{said}");
        assert!(said.contains("values for medians"), "{said}");
    }

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
    fn bucket_ranges_hold_their_values_and_no_others() {
        let mut random = Random(11);
        let mut values: Vec<i64> = vec![i64::MIN, i64::MAX, 0, 1, -1, 127, 128, -128, 255, 256];
        values.extend((0..10_000).map(|i| (random.next() >> (i % 64)) as i64));
        for v in values {
            let key = bucket(v);
            let (low, high) = bucket_range(key);
            assert!(low <= v && v <= high, "{v} in {key}: {low}..={high}");
            assert_eq!(bucket(low), key, "{v}");
            assert_eq!(bucket(high), key, "{v}");
            if low > i64::MIN {
                assert!(bucket(low - 1) < key, "{v}");
            }
            if high < i64::MAX {
                assert!(bucket(high + 1) > key, "{v}");
            }
        }
    }

    #[test]
    fn many_distinct_values_in_one_bucket_are_narrowed_by_slices() {
        let mut random = Random(3);
        // One bucket 2^34 wide (64 to the power of two from 2^40), its
        // values all distinct and too many to gather at once; even and odd
        // counts.
        for n in [100_000, 100_001] {
            let values: Vec<i64> = (0..n)
                .map(|_| (1i64 << 40) + random.below(1 << 33) as i64)
                .collect();
            let mut m = Medians::default();
            values.iter().for_each(|&v| m.add(0, v));
            assert_eq!(m.finish().unwrap(), vec![sorted_median(&values)]);
        }
        // Near the ends of i64, both signs.
        let values: Vec<i64> = (0..50_000)
            .map(|i| match i % 2 {
                0 => i64::MAX - random.below(1 << 50) as i64,
                _ => i64::MIN + random.below(1 << 50) as i64,
            })
            .collect();
        let mut m = Medians::default();
        values.iter().for_each(|&v| m.add(0, v));
        assert_eq!(m.finish().unwrap(), vec![sorted_median(&values)]);
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
}
