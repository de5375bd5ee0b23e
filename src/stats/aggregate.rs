//! Per-name statistics of a set of values (durations, sizes), computed as
//! `nsys stats` computes them: the median of an even count is the mean of
//! the two middle values; the standard deviation is the sample one (divided
//! by n - 1), 0 for a single value.
//!
//! The median needs every value, so a group keeps them all: 8 bytes per row
//! of the group, until its statistics are taken.

use std::hash::Hash;

use rustc_hash::FxHashMap;

/// The values of one group.
#[derive(Clone, Debug, Default)]
pub struct Values {
    values: Vec<i64>,
}

impl Values {
    pub fn push(&mut self, value: i64) {
        self.values.push(value);
    }

    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// The statistics of the values (which are sorted in place for the
    /// median); `None` for a group without values.
    pub fn stats(&mut self) -> Option<Stats> {
        if self.values.is_empty() {
            return None;
        }
        self.values.sort_unstable();
        let v = &self.values;
        let n = v.len();
        let total: i128 = v.iter().map(|&x| i128::from(x)).sum();
        let mean = total as f64 / n as f64;
        let median = match n % 2 {
            1 => v[n / 2] as f64,
            _ => (v[n / 2 - 1] as f64 + v[n / 2] as f64) / 2.0,
        };
        let stddev = match n {
            1 => 0.0,
            _ => {
                let squares: f64 = v
                    .iter()
                    .map(|&x| {
                        let d = x as f64 - mean;
                        d * d
                    })
                    .sum();
                (squares / (n - 1) as f64).sqrt()
            }
        };
        Some(Stats {
            count: n as u64,
            total,
            mean,
            median,
            min: v[0],
            max: v[n - 1],
            stddev,
        })
    }
}

/// What a summary says of one group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    pub count: u64,
    /// Exact, whatever the count.
    pub total: i128,
    pub mean: f64,
    pub median: f64,
    pub min: i64,
    pub max: i64,
    /// Sample standard deviation; 0 for one value.
    pub stddev: f64,
}

/// Values grouped by a key, in the order keys were first seen.
#[derive(Debug)]
pub struct Groups<K> {
    index: FxHashMap<K, usize>,
    groups: Vec<(K, Values)>,
}

impl<K> Default for Groups<K> {
    fn default() -> Self {
        Self {
            index: FxHashMap::default(),
            groups: Vec::new(),
        }
    }
}

impl<K: Hash + Eq + Clone> Groups<K> {
    /// Adds `value` to the group of `key`.
    pub fn add(&mut self, key: &K, value: i64) {
        let at = match self.index.get(key) {
            Some(&at) => at,
            None => {
                self.groups.push((key.clone(), Values::default()));
                self.index.insert(key.clone(), self.groups.len() - 1);
                self.groups.len() - 1
            }
        };
        self.groups[at].1.push(value);
    }

    /// Each group's key and statistics, by total descending (ties by key's
    /// first appearance).
    pub fn finish(self) -> Vec<(K, Stats)> {
        let mut out: Vec<(K, Stats)> = self
            .groups
            .into_iter()
            .filter_map(|(k, mut v)| v.stats().map(|s| (k, s)))
            .collect();
        out.sort_by_key(|g| std::cmp::Reverse(g.1.total));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(values: &[i64]) -> Stats {
        let mut v = Values::default();
        values.iter().for_each(|&x| v.push(x));
        v.stats().unwrap()
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
    }

    #[test]
    fn groups_come_out_by_total_descending() {
        let mut g = Groups::default();
        g.add(&"a", 1);
        g.add(&"b", 5);
        g.add(&"a", 2);
        let out = g.finish();
        assert_eq!(out[0].0, "b");
        assert_eq!(out[1].1.total, 3);
        assert!(Values::default().stats().is_none());
    }
}
