//! What a delta made for one viewer alone costs to make, and whether that is too much to make
//! one for every frame while the path loses packets.
//!
//! After a loss, a viewer whose frames may be lost gets its deltas made against the picture it
//! acknowledged ([`crate::LossWatch`]). Each spans every frame still in flight (two or three of
//! them at 20 ms), is made for that viewer alone, and makes the viewer restore an older picture
//! before applying it. Where little changes between pictures that is cheap, and it keeps the
//! p99 low, because a frame stuck behind a lost packet is superseded instead of shown late:
//! the synthetic scroll at 20 ms and 1 % loss had a p99 of 16–18 ms that way against 40–50 ms
//! with frames chained on the one before.
//!
//! Where every picture changes a lot, the per-viewer deltas doubled the viewer's apply time and
//! took the cores the frames needed; the latency grew, the acknowledged picture fell further
//! behind, and the deltas grew with it: glxgears at 20 ms and 1 %, QUIC p50 54–60 ms against
//! TCP's 40–44, 38–41 pictures shown a second (`bench net`, seeds 631–633).
//!
//! What such a delta cost the host's CPU to make, at 20 ms and 5 % loss in colour (medians, then
//! the 90th percentile, ms): the terminal 2.0 (3.6), the synthetic scroll 2.4 (3.3), typing 2.7
//! (3.7), a dragged window 4.4 (5.7), the browser scroll 4.6 (7.6), Firefox 6.0 (10.3), MuPDF
//! turning pages 16.6 (33.9: its page turns), glxgears 16.9 (19.0), the full-frame video 54.2
//! (56.4). Measured as wall time they were up to twice that on these two busy cores, and a
//! scroll was once taken for costly content.
//!
//! So where their moving average is above [`COSTLY_US`], frames chain on the one sent before
//! even on a lossy path (see `HostSession` for when a delta for the viewer alone is still made),
//! and below it a loss keeps the path lossy for a while.

/// Half a capture interval at 60 fps (µs of CPU): a delta for one viewer that takes longer to
/// make than this leaves too little of the frame's time for the frames themselves.
pub const COSTLY_US: u64 = 8_000;
/// The moving average's weight of a new measurement: 1/WEIGHT.
const WEIGHT: u64 = 8;

/// The moving average of the CPU time a delta made for one viewer took to make. It moves only
/// when such a delta is made; while content stays costly those are few (a frame held up by a
/// loss), so a viewer whose content turns cheap keeps chaining until the next ones show it.
#[derive(Debug, Clone, Copy, Default)]
pub struct RebaseCost {
    avg_us: u64,
}

impl RebaseCost {
    /// A delta made for this viewer alone took `us` of CPU time to make. The average starts
    /// at zero, so one slow first delta (caches cold, a page turned) does not make a viewer
    /// costly: on a lossy path every frame is such a delta until it is, so content that is
    /// costly shows it within a few frames (five at 17 ms).
    pub fn on_made(&mut self, us: u64) {
        self.avg_us = self.avg_us - self.avg_us / WEIGHT + us / WEIGHT;
    }

    /// Whether such deltas cost too much to make one for every frame (false before any was
    /// measured).
    pub fn costly(&self) -> bool {
        self.avg_us > COSTLY_US
    }

    /// The moving average (µs; 0 before any was measured).
    pub fn avg_us(&self) -> u64 {
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
        // One slow delta first (caches cold), or among cheap ones (a page turned), does not
        // make the content costly.
        c.on_made(40_000);
        assert!(!c.costly(), "{}", c.avg_us());
        c.on_made(2_000);
        c.on_made(30_000);
        assert!(!c.costly(), "{}", c.avg_us());
        let (mut c, mut frames) = (RebaseCost::default(), 0);
        while !c.costly() {
            c.on_made(17_000);
            frames += 1;
        }
        assert!(frames <= 5, "glxgears' deltas took {frames} frames to show");
        // Content that turns cheap again (the program closed) is cheap after a few deltas.
        for _ in 0..4 {
            c.on_made(1_000);
        }
        assert!(!c.costly(), "{}", c.avg_us());
    }
}
