//! How many frames a viewer may have sent but not acknowledged.

/// `max(min, min(max, floor(budget_ms / max(rtt_avg_ms, 1))))`; Daylight's 60 fps defaults are
/// min 2, max 6, budget 120 ms. Before any ACK the RTT is taken as `initial_rtt_ms` (15).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InflightLimit {
    pub min: u32,
    pub max: u32,
    pub budget_ms: f64,
    pub initial_rtt_ms: f64,
}

impl Default for InflightLimit {
    fn default() -> Self {
        InflightLimit {
            min: 2,
            max: 6,
            budget_ms: 120.0,
            initial_rtt_ms: 15.0,
        }
    }
}

impl InflightLimit {
    pub fn limit(&self, rtt_avg_ms: Option<f64>) -> u32 {
        let rtt = rtt_avg_ms.unwrap_or(self.initial_rtt_ms).max(1.0);
        let n = (self.budget_ms / rtt).floor() as u32;
        n.min(self.max).max(self.min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daylight_formula() {
        let l = InflightLimit::default();
        assert_eq!(l.limit(None), 6); // 120 / 15 = 8 → capped at 6
        assert_eq!(l.limit(Some(0.2)), 6);
        assert_eq!(l.limit(Some(24.0)), 5);
        assert_eq!(l.limit(Some(40.0)), 3);
        assert_eq!(l.limit(Some(100.0)), 2);
    }
}
