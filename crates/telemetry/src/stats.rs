//! Percentiles, in one place: nearest-rank over a slice for benchmarks' one-off tables, and
//! hdrhistogram for summaries that are read while samples keep arriving (no sort, O(n) once).

use hdrhistogram::Histogram;

/// Nearest-rank percentile of `v` (sorted in place), `p` in 0..=100; 0 for no samples.
pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// The median (nearest rank) of `v`, sorted in place; 0 for no samples.
pub fn median(v: &mut [f64]) -> f64 {
    percentile(v, 50.0)
}

/// Quantiles of samples (non-negative, e.g. µs) through an hdrhistogram with 3 significant
/// digits: each value is within 0.1 % of the exact nearest-rank one.
pub struct Quantiles(Option<Histogram<u64>>);

impl Quantiles {
    pub fn of(samples: impl IntoIterator<Item = f64>) -> Self {
        let mut h = Histogram::<u64>::new(3).ok();
        let mut any = false;
        if let Some(h) = &mut h {
            for s in samples {
                // Auto-resizing histograms only fail on u64 overflow of the count.
                let _ = h.record(s.max(0.0).round() as u64);
                any = true;
            }
        }
        Quantiles(h.filter(|_| any))
    }

    /// The value at percentile `p` (0..=100), or `None` without samples.
    pub fn at(&self, p: f64) -> Option<f64> {
        self.0
            .as_ref()
            .map(|h| h.value_at_quantile(p / 100.0) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_and_histogram_agree() {
        let mut v: Vec<f64> = (1..=1000).rev().map(|x| x as f64).collect();
        assert_eq!(percentile(&mut v, 99.0), 990.0);
        assert_eq!(median(&mut v), 500.0);
        assert_eq!(percentile(&mut [], 50.0), 0.0);
        let q = Quantiles::of((1..=1000).map(|x| x as f64 * 10.0));
        for (p, exact) in [(50.0, 5000.0), (95.0, 9500.0), (99.0, 9900.0)] {
            let got = q.at(p).unwrap();
            assert!(
                (got - exact).abs() <= exact * 0.001,
                "p{p}: {got} vs {exact}"
            );
        }
        assert_eq!(Quantiles::of([]).at(50.0), None);
    }
}
