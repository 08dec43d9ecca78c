//! Clock-offset estimation from ping/pong, NTP style: the exchange with the smallest round trip
//! bounds the error best, so of the recent exchanges we keep the one with the least RTT.

#[derive(Debug, Clone, Default)]
pub struct ClockOffset {
    /// (rtt_us, offset_us) of recent exchanges.
    recent: Vec<(u64, i64)>,
}

const KEEP: usize = 16;

impl ClockOffset {
    pub fn new() -> Self {
        Self::default()
    }

    /// A pong came back: we sent at `local_sent`, the peer replied at `remote_reply` (its
    /// clock), and we received at `local_recv`. Returns false for an impossible sample.
    pub fn sample(&mut self, local_sent: u64, remote_reply: u64, local_recv: u64) -> bool {
        if local_recv < local_sent {
            return false;
        }
        let rtt = local_recv - local_sent;
        let mid = local_sent + rtt / 2;
        let offset = remote_reply as i64 - mid as i64;
        if self.recent.len() == KEEP {
            self.recent.remove(0);
        }
        self.recent.push((rtt, offset));
        true
    }

    /// remote clock − local clock, in µs, if any exchange completed.
    pub fn offset_us(&self) -> Option<i64> {
        self.recent.iter().min_by_key(|s| s.0).map(|s| s.1)
    }

    /// The smallest round trip of the recent exchanges (µs), if any completed.
    pub fn min_rtt_us(&self) -> Option<u64> {
        self.recent.iter().map(|s| s.0).min()
    }

    /// Converts a remote timestamp to the local clock.
    pub fn to_local(&self, remote_us: u64) -> Option<u64> {
        self.offset_us()
            .map(|o| (remote_us as i64 - o).max(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_tightest_exchange() {
        let mut c = ClockOffset::new();
        assert_eq!(c.offset_us(), None);
        // Remote clock is 1_000_000 µs ahead. An asymmetric slow exchange first.
        assert!(c.sample(100, 1_000_190, 300)); // rtt 200, estimate 1_000_190 - 200 = 999_990
        assert!(c.sample(1000, 1_001_010, 1020)); // rtt 20, estimate 1_000_000
        assert_eq!(c.offset_us(), Some(1_000_000));
        assert_eq!(c.to_local(1_005_000), Some(5_000));
        assert!(!c.sample(10, 0, 5));
    }
}
