//! What a delta made for one viewer alone costs to make, and whether that is too much to make
//! one for every frame while the path loses packets.
//!
//! After a loss, a viewer whose frames may be lost gets its deltas made against the picture it
//! acknowledged ([`crate::LossWatch`]). Each spans every frame still in flight (two or three of
//! them at 20 ms), is made for that viewer alone, and makes the viewer restore an older picture
//! before applying it. Where little changes between pictures (typing, a scroll, a dragged
//! window: such a delta took 2–5.5 ms to make, as measured by the host beside the relay and the
//! viewer on two cores) that is cheap, and it keeps the p99 low, because a frame stuck behind a
//! lost packet is superseded instead of shown late: the synthetic scroll at 20 ms and 1 % loss
//! had a p99 of 16–18 ms that way against 40–50 ms with frames chained on the one before.
//!
//! Where every picture changes a lot (glxgears, 26 kB a picture in colour: 17 ms to make; the
//! full-frame video: 63 ms), the per-viewer deltas doubled the viewer's apply time and took
//! the cores the frames needed; the latency grew, the acknowledged picture fell further
//! behind, and the deltas grew with it. Answering each loss once and chaining the frames after
//! it, as on TCP, changed glxgears at 20 ms and 1 % loss (`bench net`, seeds 631–633, medians)
//! from a QUIC p50 of 57.0 ms to 36.9 (TCP: 35–47 in the same runs), p99 88.4 → 78.8 ms, 39.8 → 52.9
//! pictures shown a second; the video's p50 219.7 → 204.8 ms. The synthetic scroll, whose
//! deltas stay below the bound, kept its p99 (17.6 and 16.6 ms).
//!
//! So when making these deltas costs more than [`COSTLY_US`] (a moving average), a loss is
//! answered once and frames chain again after it; below, the path stays lossy for a while.

/// Half a capture interval at 60 fps (µs): a delta for one viewer that takes longer to make
/// than this leaves too little of the frame's time for the frames themselves.
pub const COSTLY_US: u64 = 8_000;
/// The moving average's weight of a new measurement: 1/WEIGHT.
const WEIGHT: u64 = 8;

/// The moving average of how long a delta made for one viewer took to make.
#[derive(Debug, Clone, Copy, Default)]
pub struct RebaseCost {
    avg_us: Option<u64>,
}

impl RebaseCost {
    /// A delta made for this viewer alone took `us` to make.
    pub fn on_made(&mut self, us: u64) {
        self.avg_us = Some(match self.avg_us {
            None => us,
            Some(a) => a - a / WEIGHT + us / WEIGHT,
        });
    }

    /// Whether such deltas cost too much to make one for every frame (false before any was
    /// measured).
    pub fn costly(&self) -> bool {
        self.avg_us.is_some_and(|a| a > COSTLY_US)
    }

    /// The moving average (µs), once measured.
    pub fn avg_us(&self) -> Option<u64> {
        self.avg_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_measured_is_not_costly() {
        assert!(!RebaseCost::default().costly());
    }

    #[test]
    fn the_average_follows_what_is_measured_both_ways() {
        let mut c = RebaseCost::default();
        c.on_made(2_000);
        assert!(!c.costly());
        // One slow delta (a page turned) does not make the content costly.
        c.on_made(30_000);
        assert!(c.avg_us().unwrap() < 9_000, "{:?}", c.avg_us());
        assert!(!c.costly());
        for _ in 0..4 {
            c.on_made(17_000);
        }
        assert!(c.costly(), "{:?}", c.avg_us());
        // Content that turns cheap again (the program closed) is cheap after a few deltas.
        for _ in 0..8 {
            c.on_made(1_000);
        }
        assert!(!c.costly(), "{:?}", c.avg_us());
    }
}
