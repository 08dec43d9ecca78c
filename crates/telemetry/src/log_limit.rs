//! At most one log line per interval for repeated bad input: a flood of garbage is counted by
//! its counters, and the log says it is happening without growing with it.

use std::time::{Duration, Instant};

/// Lets one line through per `every`; remembers how many it held back since the last one.
#[derive(Debug)]
pub struct LogLimit {
    every: Duration,
    last: Option<Instant>,
    held: u64,
}

impl LogLimit {
    /// One line per `every`.
    pub fn new(every: Duration) -> Self {
        LogLimit {
            every,
            last: None,
            held: 0,
        }
    }

    /// One line a second.
    pub fn per_second() -> Self {
        Self::new(Duration::from_secs(1))
    }

    /// `Some(n)` when a line may be written now, `n` being the lines held back before it;
    /// `None` when this one is held back.
    pub fn allow(&mut self, now: Instant) -> Option<u64> {
        match self.last {
            Some(t) if now.duration_since(t) < self.every => {
                self.held += 1;
                None
            }
            _ => {
                self.last = Some(now);
                Some(std::mem::take(&mut self.held))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_and_the_count_of_those_held_back() {
        let t0 = Instant::now();
        let mut l = LogLimit::new(Duration::from_millis(100));
        assert_eq!(l.allow(t0), Some(0));
        for ms in [1, 50, 99] {
            assert_eq!(l.allow(t0 + Duration::from_millis(ms)), None);
        }
        assert_eq!(l.allow(t0 + Duration::from_millis(100)), Some(3));
        assert_eq!(l.allow(t0 + Duration::from_millis(150)), None);
        assert_eq!(l.allow(t0 + Duration::from_millis(250)), Some(1));
    }
}

/// A [`LogLimit`] shared by every connection of a listener (a flood of bad connections is one
/// line a second, not a line each).
#[derive(Debug)]
pub struct SharedLogLimit(std::sync::Mutex<LogLimit>);

impl Default for SharedLogLimit {
    fn default() -> Self {
        SharedLogLimit(std::sync::Mutex::new(LogLimit::per_second()))
    }
}

impl SharedLogLimit {
    /// `Some(lines held back)` when a line may be written now.
    pub fn allow(&self) -> Option<u64> {
        crate::lock(&self.0).allow(Instant::now())
    }
}
