//! A fixed-size window of the most recent samples (150 by default, as the Daylight host), with
//! average and percentiles. Sorting 150 values on demand is cheaper than maintaining order on
//! every insert, and reports are read far less often than samples arrive.

#[derive(Debug, Clone)]
pub struct SampleWindow {
    buf: Vec<f64>,
    cap: usize,
    next: usize,
    total: u64,
}

impl Default for SampleWindow {
    fn default() -> Self {
        SampleWindow::new(150)
    }
}

impl SampleWindow {
    pub fn new(cap: usize) -> Self {
        assert!(cap > 0);
        SampleWindow {
            buf: Vec::with_capacity(cap),
            cap,
            next: 0,
            total: 0,
        }
    }

    pub fn push(&mut self, v: f64) {
        if self.buf.len() < self.cap {
            self.buf.push(v);
        } else {
            self.buf[self.next] = v;
        }
        self.next = (self.next + 1) % self.cap;
        self.total += 1;
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// Samples pushed since creation, including those that left the window.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn avg(&self) -> Option<f64> {
        (!self.buf.is_empty()).then(|| self.buf.iter().sum::<f64>() / self.buf.len() as f64)
    }

    /// Nearest-rank percentile, `p` in 0..=100 (sorts a copy: for one value; several come
    /// cheaper from [`crate::stats::Quantiles`] over [`SampleWindow::values`]).
    pub fn percentile(&self, p: f64) -> Option<f64> {
        (!self.buf.is_empty()).then(|| crate::stats::percentile(&mut self.buf.clone(), p))
    }

    /// The samples in the window, in no particular order.
    pub fn values(&self) -> &[f64] {
        &self.buf
    }

    /// Empties the window (its size and [`SampleWindow::total`] stay): what is measured
    /// starts afresh.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.next = 0;
    }

    pub fn max(&self) -> Option<f64> {
        self.buf.iter().copied().reduce(f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_over_the_recent_window_only() {
        let mut w = SampleWindow::new(100);
        for i in 1..=100 {
            w.push(i as f64);
        }
        assert_eq!(w.avg(), Some(50.5));
        assert_eq!(w.percentile(50.0), Some(50.0));
        assert_eq!(w.percentile(95.0), Some(95.0));
        assert_eq!(w.percentile(99.0), Some(99.0));
        for _ in 0..100 {
            w.push(1000.0);
        }
        assert_eq!(w.percentile(50.0), Some(1000.0));
        assert_eq!(w.total(), 200);
        assert!(SampleWindow::new(3).avg().is_none());
    }

    /// Cleared, a window holds only what comes after, up to its size, and still counts all.
    #[test]
    fn a_cleared_window_holds_only_what_follows() {
        let mut w = SampleWindow::new(3);
        for v in [50.0, 60.0, 70.0, 80.0] {
            w.push(v);
        }
        w.clear();
        assert!(w.is_empty() && w.max().is_none());
        for v in [1.0, 2.0, 3.0, 4.0] {
            w.push(v);
        }
        assert_eq!(w.len(), 3);
        assert_eq!(w.max(), Some(4.0));
        assert_eq!(w.percentile(0.0), Some(2.0));
        assert_eq!(w.total(), 8);
    }
}
