//! When to ping the peer, for the clock offset: several quick pings first, so the offset is
//! known within the first frames, then one a second. Both ends of a v1 session use it.

/// Pings sent 20 ms apart before settling to one a second.
const QUICK: u32 = 5;
const QUICK_US: u64 = 20_000;
const STEADY_US: u64 = 1_000_000;

#[derive(Debug, Clone, Default)]
pub struct PingSchedule {
    next_id: u32,
    next_at: u64,
}

impl PingSchedule {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of a ping to send now, if one is due.
    pub fn poll(&mut self, now_us: u64) -> Option<u32> {
        if now_us < self.next_at {
            return None;
        }
        let id = self.next_id;
        self.next_at = now_us + if id < QUICK { QUICK_US } else { STEADY_US };
        self.next_id = id.wrapping_add(1);
        Some(id)
    }

    /// When the next ping is due (µs).
    pub fn next_at(&self) -> u64 {
        self.next_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_pings_then_one_a_second() {
        let mut p = PingSchedule::new();
        let mut sent = Vec::new();
        for now in (0..3_000_000u64).step_by(1_000) {
            if let Some(id) = p.poll(now) {
                sent.push((id, now));
            }
        }
        let times: Vec<u64> = sent.iter().map(|&(_, t)| t).collect();
        assert_eq!(
            times,
            [0, 20_000, 40_000, 60_000, 80_000, 100_000, 1_100_000, 2_100_000]
        );
        assert!(sent.iter().enumerate().all(|(i, &(id, _))| id == i as u32));
        assert_eq!(p.next_at(), 3_100_000);
    }
}
