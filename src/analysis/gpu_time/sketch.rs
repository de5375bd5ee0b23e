//! Quantiles of a stream of non-negative durations in bounded memory: a
//! histogram whose buckets are exact below 128 ns and then 64 to each power
//! of two, so that a bucket spans at most 1/64 of its values. A quantile is
//! the nearest-rank value's bucket, told as the middle of that bucket:
//! within 1/128 (0.8%) of the exact value. At most 3,776 buckets (30 KiB),
//! however many values come.

const EXACT: u64 = 128;
const SUB_BITS: u32 = 6;

/// The quantiles of a set of durations.
#[derive(Clone, Debug, Default)]
pub(super) struct Sketch {
    buckets: Vec<u64>,
    count: u64,
}

fn bucket(value: u64) -> usize {
    if value < EXACT {
        return value as usize;
    }
    let exponent = 63 - value.leading_zeros();
    let sub = (value >> (exponent - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    (EXACT + u64::from(exponent - 7) * (1 << SUB_BITS) + sub) as usize
}

/// The middle of bucket `b`'s values, rounded down.
fn middle(b: usize) -> i64 {
    let b = b as u64;
    if b < EXACT {
        return b as i64;
    }
    let exponent = (b - EXACT) / (1 << SUB_BITS) + 7;
    let sub = (b - EXACT) % (1 << SUB_BITS);
    let width = 1u64 << (exponent - u64::from(SUB_BITS));
    let low = (1u64 << exponent) + sub * width;
    (low + (width - 1) / 2) as i64
}

impl Sketch {
    /// Adds a duration; negative ones count as 0.
    pub(super) fn add(&mut self, value: i64) {
        let b = bucket(value.max(0) as u64);
        if b >= self.buckets.len() {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += 1;
        self.count += 1;
    }

    pub(super) fn count(&self) -> u64 {
        self.count
    }

    /// The `q` quantile (0 < q ≤ 1) by nearest rank: the value of rank
    /// ⌈q·n⌉ in ascending order, within 1/128; `None` when empty.
    pub(super) fn quantile(&self, q: f64) -> Option<i64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (b, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(middle(b));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_within_a_128th_of_the_exact_ones() {
        let mut values: Vec<i64> = (0..20_000i64)
            .map(|i| (i * 7919) % 1_000_003 + i % 97)
            .collect();
        let mut sketch = Sketch::default();
        for &v in &values {
            sketch.add(v);
        }
        values.sort_unstable();
        for q in [0.5, 0.9, 0.99, 1.0] {
            let rank = ((q * values.len() as f64).ceil() as usize).max(1);
            let exact = values[rank - 1] as f64;
            let got = sketch.quantile(q).unwrap() as f64;
            assert!(
                (got - exact).abs() <= exact / 128.0 + 0.5,
                "q {q}: {got} vs {exact}"
            );
        }
        assert_eq!(sketch.count(), 20_000);
    }

    #[test]
    fn small_values_are_exact_and_buckets_are_few() {
        let mut sketch = Sketch::default();
        for v in [3, 1, 2, 127, -5] {
            sketch.add(v);
        }
        assert_eq!(sketch.quantile(0.5), Some(2));
        assert_eq!(sketch.quantile(1.0), Some(127));
        assert_eq!(sketch.quantile(0.2), Some(0));
        assert!(bucket(u64::MAX) < 3776);
        assert_eq!(Sketch::default().quantile(0.5), None);
    }
}
