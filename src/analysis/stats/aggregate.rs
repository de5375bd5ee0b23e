//! Per-name statistics of a set of values (durations, sizes), computed as
//! `nsys stats` computes them: the median of an even count is the mean of
//! the two middle values; the standard deviation is the sample one (divided
//! by n - 1), 0 for a single value.
//!
//! A set keeps its count, exact total, exact sum of squares, least and
//! greatest value; its median comes from [`Medians`], which keeps the values
//! of small sets only. Memory does not grow with the number of values.

use std::hash::Hash;

use rustc_hash::FxHashMap;

use super::median::Medians;
use super::spill::{Spill, SpillKey, SpilledGroups};
use crate::error::Failure;

/// What a summary says of one group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// How many values.
    pub count: u64,
    /// Exact, whatever the count.
    pub total: i128,
    /// Their mean.
    pub mean: f64,
    /// Their exact median (the mean of the middle two for an even count).
    pub median: f64,
    /// The least value.
    pub min: i64,
    /// The greatest value.
    pub max: i64,
    /// Sample standard deviation; 0 for one value.
    pub stddev: f64,
}

/// Numbered sets of values, each summarized as [`Stats`] at the end.
#[derive(Default)]
pub(crate) struct ValueSets {
    sums: Vec<Sums>,
    medians: Medians,
    /// The first span too long for a duration, which fails [`finish`](Self::finish).
    overlong: Option<(i64, i64)>,
}

/// What a set keeps of its values besides what its median needs.
#[derive(Clone, Copy, Default)]
struct Sums {
    count: u64,
    total: i128,
    squares: U256,
    min: i64,
    max: i64,
}

impl ValueSets {
    /// Adds `value` to the set numbered `set` (numbers from 0; a number not
    /// seen before makes the sets up to it, empty).
    pub(crate) fn add(&mut self, set: usize, value: i64) {
        if set >= self.sums.len() {
            self.sums.resize(set + 1, Sums::default());
        }
        let s = &mut self.sums[set];
        if s.count == 0 {
            (s.min, s.max) = (value, value);
        }
        s.count += 1;
        s.total += i128::from(value);
        s.squares.add(U256::square(value.unsigned_abs().into()));
        s.min = s.min.min(value);
        s.max = s.max.max(value);
        self.medians.add(set, value);
    }

    /// Adds the duration from `start` to `end` to the set numbered `set`. A
    /// duration past i64 (a damaged export's times from near i64::MIN to
    /// near i64::MAX) is no value: [`finish`](Self::finish) says so.
    pub(crate) fn add_span(&mut self, set: usize, start: i64, end: i64) {
        match end.checked_sub(start) {
            Some(duration) => self.add(set, duration),
            None => self.refuse_span(start, end),
        }
    }

    /// Records a span too long for a duration: [`finish`](Self::finish)
    /// fails, naming the first.
    pub(super) fn refuse_span(&mut self, start: i64, end: i64) {
        self.overlong.get_or_insert((start, end));
    }

    /// Each set's statistics, by number; `None` for a set without values.
    pub(crate) fn finish(self) -> Result<Vec<Option<Stats>>, Failure> {
        if let Some((start, end)) = self.overlong {
            return Err(overlong(start, end));
        }
        let medians = self.medians.finish()?;
        Ok(self
            .sums
            .iter()
            .zip(medians)
            .map(|(s, median)| Some(s.stats(median?)))
            .collect())
    }
}

/// The failure of a span longer than any duration: the export is damaged.
pub(super) fn overlong(start: i64, end: i64) -> Failure {
    let why = format!(
        "an event lasts from {start} to {end} ns, longer than a duration can be (2^63 - 1 ns)"
    );
    let code = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_RANGE);
    Failure::Read(rusqlite::Error::SqliteFailure(code, Some(why)))
}

impl Sums {
    fn stats(&self, median: f64) -> Stats {
        let n = self.count;
        let stddev = match n {
            1 => 0.0,
            // The sum of squared deviations from the mean, times n, is
            // n * (sum of squares) - total^2: exact in integers, rounded once.
            _ => {
                let mut scaled = self.squares.times(n);
                scaled.sub(U256::square(self.total.unsigned_abs()));
                let variance = scaled.to_f64() / (u128::from(n) * u128::from(n - 1)) as f64;
                variance.sqrt()
            }
        };
        Stats {
            count: n,
            total: self.total,
            mean: self.total as f64 / n as f64,
            median,
            min: self.min,
            max: self.max,
            stddev,
        }
    }
}

/// An unsigned 256-bit integer, least significant 64 bits first: room for
/// the sum of squares of up to 2^64 values of 64 bits, times their count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct U256([u64; 4]);

impl U256 {
    fn square(x: u128) -> U256 {
        let x256 = U256([x as u64, (x >> 64) as u64, 0, 0]);
        let mut square = x256.times(x as u64);
        square.add(x256.times((x >> 64) as u64).shifted_64());
        square
    }

    fn add(&mut self, other: U256) {
        self.add_carrying(other, false);
    }

    /// `self - other`, `other` being no greater: `self + !other + 1`, modulo
    /// 2^256 (two's complement).
    fn sub(&mut self, other: U256) {
        self.add_carrying(U256(other.0.map(|limb| !limb)), true);
    }

    /// `self + other + carry`, modulo 2^256.
    fn add_carrying(&mut self, other: U256, mut carry: bool) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            let (sum, c1) = a.overflowing_add(b);
            let (sum, c2) = sum.overflowing_add(u64::from(carry));
            *a = sum;
            carry = c1 || c2;
        }
    }

    /// `self * m`, which must fit.
    fn times(self, m: u64) -> U256 {
        let mut out = [0u64; 4];
        let mut carry = 0u128;
        for (o, a) in out.iter_mut().zip(self.0) {
            let product = u128::from(a) * u128::from(m) + carry;
            *o = product as u64;
            carry = product >> 64;
        }
        U256(out)
    }

    fn shifted_64(self) -> U256 {
        U256([0, self.0[0], self.0[1], self.0[2]])
    }

    fn to_f64(self) -> f64 {
        let high = (u128::from(self.0[3]) << 64) | u128::from(self.0[2]);
        let low = (u128::from(self.0[1]) << 64) | u128::from(self.0[0]);
        high as f64 * 2f64.powi(128) + low as f64
    }
}

/// The most groups a summary holds in memory (a few hundred bytes each);
/// the values of groups past them are spilled (see `spill`).
const HELD: usize = 1 << 14;

/// Values grouped by a key, in the order keys were first seen: the first
/// [`HELD`] groups in memory, the values of the others in a temporary
/// database, so that memory does not grow with the number of groups.
pub(super) struct Groups<K> {
    /// The groups held, numbered by first appearance.
    index: FxHashMap<K, usize>,
    values: ValueSets,
    /// The most groups held.
    held: usize,
    spill: Option<Spill>,
    /// The first failure of the spill; nothing more is written to it.
    failed: Option<rusqlite::Error>,
}

impl<K> Default for Groups<K> {
    fn default() -> Self {
        Self::holding(HELD)
    }
}

impl<K> Groups<K> {
    /// Groups holding at most `held` groups in memory.
    fn holding(held: usize) -> Self {
        Self {
            index: FxHashMap::default(),
            values: ValueSets::default(),
            held,
            spill: None,
            failed: None,
        }
    }
}

impl<K: Hash + Eq + Clone + SpillKey> Groups<K> {
    /// Adds `value` to the group of `key`.
    pub(super) fn add(&mut self, key: &K, value: i64) {
        if let Some(&at) = self.index.get(key) {
            return self.values.add(at, value);
        }
        if self.index.len() < self.held {
            let at = self.index.len();
            self.index.insert(key.clone(), at);
            return self.values.add(at, value);
        }
        if self.failed.is_some() {
            return;
        }
        let spilled = match &mut self.spill {
            Some(spill) => spill.add(key, value),
            None => Spill::new().and_then(|spill| self.spill.insert(spill).add(key, value)),
        };
        if let Err(e) = spilled {
            self.failed = Some(e);
        }
    }

    /// Adds the duration from `start` to `end` to the group of `key` (see
    /// [`ValueSets::add_span`]).
    pub(super) fn add_span(&mut self, key: &K, start: i64, end: i64) {
        match end.checked_sub(start) {
            Some(duration) => self.add(key, duration),
            None => self.values.refuse_span(start, end),
        }
    }

    /// The groups ranked: by total descending, ties by first appearance.
    pub(super) fn rank(self) -> Result<Ranked<K>, Failure> {
        let stats = self.values.finish()?;
        let mut keys: Vec<Option<K>> = (0..self.index.len()).map(|_| None).collect();
        for (key, at) in self.index {
            keys[at] = Some(key);
        }
        let mut held: Vec<(K, Stats)> = keys
            .into_iter()
            .zip(stats)
            .filter_map(|(k, s)| Some((k?, s?)))
            .collect();
        if let Some(e) = self.failed {
            return Err(super::spill::failed(e));
        }
        let Some(spill) = self.spill else {
            // Stable: ties stay in order of first appearance.
            held.sort_by_key(|g| std::cmp::Reverse(g.1.total));
            let total = held.iter().map(|g| g.1.total).sum();
            return Ok(Ranked {
                total,
                groups: RankedGroups::Held(held),
            });
        };
        let (groups, total) = spill.rank(held)?;
        Ok(Ranked {
            total,
            groups: RankedGroups::Spilled(groups),
        })
    }

    /// Each group's key and statistics, ranked as [`Groups::rank`] ranks
    /// them, all in memory.
    pub(super) fn finish(self) -> Result<Vec<(K, Stats)>, Failure> {
        let mut out = Vec::new();
        self.rank()?.each(&mut |k, s| {
            out.push((k, *s));
            Ok(())
        })?;
        Ok(out)
    }
}

impl Groups<String> {
    /// [`Groups::add_span`] to the group named `name`, borrowed from a row:
    /// a key is made only for a name not held.
    pub(super) fn add_named_span(&mut self, name: &str, start: i64, end: i64) {
        match self.index.get(name) {
            Some(&at) => self.values.add_span(at, start, end),
            None => self.add_span(&name.to_owned(), start, end),
        }
    }
}

/// Groups ranked by total, in memory or in the spill's database, to be
/// read once or more.
pub(crate) struct Ranked<K> {
    /// The total of every group.
    pub(super) total: i128,
    groups: RankedGroups<K>,
}

enum RankedGroups<K> {
    Held(Vec<(K, Stats)>),
    Spilled(SpilledGroups),
}

impl<K: Clone + SpillKey> Ranked<K> {
    /// Whether there is no group.
    pub(super) fn is_empty(&self) -> bool {
        matches!(&self.groups, RankedGroups::Held(held) if held.is_empty())
    }

    /// Calls `f` with each group in rank order.
    pub(super) fn each(
        &self,
        f: &mut dyn FnMut(K, &Stats) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        match &self.groups {
            RankedGroups::Held(held) => held.iter().try_for_each(|(k, s)| f(k.clone(), s)),
            RankedGroups::Spilled(spilled) => spilled.each(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A xorshift generator: the same numbers from the same seed, run after run.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    fn stats(values: &[i64]) -> Stats {
        let mut v = ValueSets::default();
        values.iter().for_each(|&x| v.add(0, x));
        v.finish().unwrap()[0].unwrap()
    }

    /// The definition, with every value in memory.
    fn sorted_stats(values: &[i64]) -> Stats {
        let mut v = values.to_vec();
        v.sort_unstable();
        let n = v.len();
        let total: i128 = v.iter().map(|&x| i128::from(x)).sum();
        let mean = total as f64 / n as f64;
        let squares: f64 = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum();
        Stats {
            count: n as u64,
            total,
            mean,
            median: match n % 2 {
                1 => v[n / 2] as f64,
                _ => (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0,
            },
            min: v[0],
            max: v[n - 1],
            stddev: match n {
                1 => 0.0,
                _ => (squares / (n - 1) as f64).sqrt(),
            },
        }
    }

    #[test]
    fn median_of_an_even_count_is_the_mean_of_the_middle_two() {
        let s = stats(&[4, 1, 3, 10]);
        assert_eq!(s.median, 3.5);
        assert_eq!((s.min, s.max, s.total, s.count), (1, 10, 18, 4));
        assert_eq!(s.mean, 4.5);
    }

    #[test]
    fn standard_deviation_is_the_sample_one() {
        // Deviations from 5: -3, -1, 1, 3: squares 20, over n - 1 = 3.
        let s = stats(&[2, 4, 6, 8]);
        assert!((s.stddev - (20.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(stats(&[7]).stddev, 0.0);
        assert_eq!(stats(&[i64::MAX, i64::MAX, i64::MAX]).stddev, 0.0);
        assert_eq!(stats(&[-5, -5]).stddev, 0.0);
    }

    #[test]
    fn statistics_equal_the_sorted_definition() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        for n in [1usize, 2, 3, 10, 511, 512, 513, 514, 4000, 20_001] {
            for spread in [1u64, 100, 1 << 20, 1 << 40] {
                let values: Vec<i64> = (0..n)
                    .map(|_| 50_000 + (next() % spread) as i64 - (spread / 3) as i64)
                    .collect();
                let (got, want) = (stats(&values), sorted_stats(&values));
                assert_eq!(
                    (got.count, got.total, got.mean, got.median, got.min, got.max),
                    (
                        want.count,
                        want.total,
                        want.mean,
                        want.median,
                        want.min,
                        want.max
                    ),
                    "n {n}, spread {spread}"
                );
                // The exact deviation against a sum of rounded squares.
                let tolerance = 1e-9 * want.stddev.max(1.0);
                assert!(
                    (got.stddev - want.stddev).abs() <= tolerance,
                    "n {n}, spread {spread}: {} against {}",
                    got.stddev,
                    want.stddev
                );
            }
        }
    }

    #[test]
    fn wide_integers_add_multiply_and_subtract_exactly() {
        let max = U256::square(u128::from(u64::MAX));
        // (2^64 - 1)^2 = 2^128 - 2^65 + 1.
        assert_eq!(max, U256([1, u64::MAX - 1, 0, 0]));
        let big = U256::square(1u128 << 100);
        assert_eq!(big, U256([0, 0, 0, 1 << 8]));
        let mut sum = big;
        sum.add(max);
        sum.sub(max);
        assert_eq!(sum, big);
        assert_eq!(
            U256([3, 0, 0, 0]).times(u64::MAX),
            U256([u64::MAX - 2, 2, 0, 0])
        );
        assert_eq!(U256([0, 0, 0, 1]).to_f64(), 2f64.powi(192));
    }

    #[test]
    fn a_span_past_i64_fails_in_words() {
        let mut v = ValueSets::default();
        v.add_span(0, 5, 7);
        v.add_span(1, i64::MIN, i64::MAX);
        match v.finish() {
            Err(Failure::Read(e)) => assert!(
                e.to_string()
                    .contains(&format!("from {} to {} ns", i64::MIN, i64::MAX)),
                "{e}"
            ),
            other => panic!("{other:?}"),
        }
        let mut v = ValueSets::default();
        v.add_span(0, -3, i64::MAX - 3);
        assert_eq!(v.finish().unwrap()[0].unwrap().total, i128::from(i64::MAX));
    }

    #[test]
    fn groups_come_out_by_total_descending() {
        let mut g = Groups::<String>::default();
        g.add(&"a".to_owned(), 1);
        g.add(&"b".to_owned(), 5);
        g.add(&"a".to_owned(), 2);
        let out = g.finish().unwrap();
        assert_eq!(out[0].0, "b");
        assert_eq!(out[1].1.total, 3);
        assert!(ValueSets::default().finish().unwrap().is_empty());
    }

    #[test]
    fn groups_past_those_held_are_spilled_and_ranked_alike() {
        let mut next = xorshift(0x1234_5678_9abc_def1u64);
        // A few groups of many values (more distinct ones than a set keeps:
        // their medians spill too), many of a few; totals that tie.
        let rows: Vec<((String, bool), i64)> = (0..60_000)
            .map(|_| {
                let r = next();
                let name = match r % 4 {
                    0 => format!("hot {}", (r >> 4) % 7),
                    _ => format!("op {}", (r >> 8) % 5000),
                };
                ((name, r & (1 << 20) != 0), ((r >> 32) % 1000) as i64 - 100)
            })
            .collect();
        let ranked = |held: usize| {
            let mut g = Groups::holding(held);
            for (key, value) in &rows {
                g.add(key, *value);
            }
            assert!(g.index.len() <= held);
            assert_eq!(g.spill.is_some(), held < usize::MAX);
            g.finish().unwrap()
        };
        let all = ranked(usize::MAX);
        for held in [0, 1, 10, 4000] {
            assert_eq!(ranked(held), all, "holding {held}");
        }
    }
}
