//! Whether the path has lost packets lately, from the transport's own counters (QUIC's
//! `lost_packets`, which quinn counts as its loss detection declares them).
//!
//! A viewer whose frames may be lost gets each delta made against the picture it acknowledged,
//! so that a lost frame costs nothing after it: the next one that arrives applies, and a frame
//! stuck behind a lost packet is superseded, never shown late. That delta is made for the
//! viewer alone, and when the round trip is longer than a capture interval it spans two or
//! more frames of change. On a path that loses nothing, the delta every viewer shares (against
//! the frame sent just before, still crossing) is as safe: each stream is delivered whole, in
//! a round trip, and the viewer holds a delta until its base arrives.
//!
//! [`LossWatch::clean`] says which of the two the path is: clean once the transport has
//! reported its counters and not one loss among the last [`CLEAN_PACKETS`] packets sent nor
//! in the last [`CLEAN_US`]. A loss seen makes the path lossy at once, so the frames planned
//! after it name the acknowledged picture again (and, being independent of those in flight,
//! supersede them).
//!
//! Where such deltas are costly to make ([`crate::RebaseCost`]), a lossy path is answered
//! only where a loss holds a frame up: [`LossWatch::settled`] is false from a loss until a
//! frame independent of those in flight is sent, or the viewer applies one sent after the
//! loss ([`LossWatch::answered`]). See `RebaseCost` for why and what it measured.

/// Packets sent since the last loss before the path counts as clean again. At 1 % loss,
/// 1,000 packets in a row arrive with a chance of 0.004 %; on a path that lost one packet in
/// a burst, this is a fraction of a second of a moving picture.
pub const CLEAN_PACKETS: u64 = 1_000;
/// And at least this long since the last loss (µs), for paths that send few packets (typing).
pub const CLEAN_US: u64 = 2_000_000;

/// Packets over which the recent loss rate is measured ([`LossWatch::recent_loss_permille`]).
pub const RATE_WINDOW_PACKETS: u64 = 1_000;

/// The transport's loss counters, watched. Fully deterministic: the caller passes the time.
#[derive(Debug, Clone, Default)]
pub struct LossWatch {
    /// The counters when the window being measured began, and the packets sent and lost in
    /// the last whole window.
    window: Option<(u64, u64)>,
    last_window: Option<(u64, u64)>,
    /// The counters last reported: packets sent and declared lost, both since the start.
    reported: Option<(u64, u64)>,
    /// The last loss: when it was seen, and the packets sent by then.
    last_loss: Option<(u64, u64)>,
    /// A loss was seen that no frame independent of those in flight has answered yet.
    unanswered: bool,
}

impl LossWatch {
    /// The transport's counters at `now`: packets sent and packets declared lost, each since
    /// the connection began (so they only grow). True when they show a new loss.
    pub fn on_counters(&mut self, sent: u64, lost: u64, now: u64) -> bool {
        let lost_before = self.reported.map_or(0, |(_, l)| l);
        let new_loss = lost > lost_before;
        if new_loss {
            self.last_loss = Some((now, sent));
            self.unanswered = true;
        }
        self.reported = Some((sent, lost));
        let (s0, l0) = *self.window.get_or_insert((sent, lost));
        if sent.saturating_sub(s0) >= RATE_WINDOW_PACKETS {
            self.last_window = Some((sent - s0, lost.saturating_sub(l0)));
            self.window = Some((sent, lost));
        }
        new_loss
    }

    /// Packets lost per thousand sent over the last whole window of [`RATE_WINDOW_PACKETS`]
    /// or more (None before one has passed). It lags by up to a window: a path that turns
    /// lossy shows it when the window ends.
    pub fn recent_loss_permille(&self) -> Option<u64> {
        self.last_window.map(|(n, l)| 1000 * l / n.max(1))
    }

    /// Whether the path has lost nothing lately (and the transport has said so at all).
    pub fn clean(&self, now: u64) -> bool {
        let Some((sent, _)) = self.reported else {
            return false;
        };
        match self.last_loss {
            None => true,
            Some((at, sent_then)) => {
                now.saturating_sub(at) >= CLEAN_US
                    && sent.saturating_sub(sent_then) >= CLEAN_PACKETS
            }
        }
    }

    /// Whether every loss seen has been answered (and the transport has reported at all).
    pub fn settled(&self) -> bool {
        self.reported.is_some() && !self.unanswered
    }

    /// The losses seen so far are answered: a frame that depends on nothing in flight was
    /// sent, or the viewer applied a frame sent after them (so the transport repaired them).
    pub fn answered(&mut self) {
        self.unanswered = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000;

    #[test]
    fn the_recent_loss_rate_is_over_whole_windows() {
        let mut w = LossWatch::default();
        w.on_counters(0, 0, 0);
        w.on_counters(999, 30, MS);
        assert_eq!(w.recent_loss_permille(), None, "not a window yet");
        w.on_counters(1_000, 30, 2 * MS);
        assert_eq!(w.recent_loss_permille(), Some(30));
        w.on_counters(1_999, 30, 3 * MS);
        assert_eq!(
            w.recent_loss_permille(),
            Some(30),
            "the window running is not in it"
        );
        w.on_counters(2_500, 35, 4 * MS);
        assert_eq!(w.recent_loss_permille(), Some(3));
    }

    #[test]
    fn a_path_never_reported_is_not_taken_for_clean() {
        assert!(!LossWatch::default().clean(10_000 * MS));
    }

    #[test]
    fn a_path_that_reports_no_loss_is_clean_at_once() {
        let mut w = LossWatch::default();
        w.on_counters(3, 0, 0);
        assert!(w.clean(0));
    }

    #[test]
    fn a_loss_makes_the_path_lossy_until_both_packets_and_time_have_passed() {
        let mut w = LossWatch::default();
        w.on_counters(100, 0, 0);
        w.on_counters(150, 1, 10 * MS);
        assert!(!w.clean(10 * MS));
        // Enough time, too few packets.
        w.on_counters(150 + CLEAN_PACKETS - 1, 1, 10 * MS + CLEAN_US);
        assert!(!w.clean(10 * MS + CLEAN_US));
        // Enough packets, and then enough time.
        w.on_counters(150 + CLEAN_PACKETS, 1, 10 * MS + CLEAN_US);
        assert!(w.clean(10 * MS + CLEAN_US));
        // Another loss starts it again.
        w.on_counters(2_000, 2, 3_000 * MS);
        assert!(!w.clean(3_000 * MS));
        w.on_counters(5_000, 2, 3_000 * MS + CLEAN_US - 1);
        assert!(!w.clean(3_000 * MS + CLEAN_US - 1));
    }

    #[test]
    fn a_loss_is_unsettled_until_a_frame_answers_it() {
        let mut w = LossWatch::default();
        assert!(!w.settled(), "nothing reported yet");
        w.on_counters(100, 0, 0);
        assert!(w.settled());
        w.on_counters(150, 1, 10 * MS);
        assert!(!w.settled());
        // More reports without a new loss do not answer it.
        w.on_counters(160, 1, 11 * MS);
        assert!(!w.settled());
        w.answered();
        assert!(w.settled());
        assert!(!w.clean(11 * MS), "answered, but still lossy lately");
        w.on_counters(170, 1, 12 * MS);
        assert!(w.settled(), "the same count is no new loss");
        w.on_counters(180, 3, 13 * MS);
        assert!(!w.settled());
        w.answered();
        assert!(w.settled());
    }

    #[test]
    fn a_loss_counted_before_the_first_report_counts() {
        let mut w = LossWatch::default();
        w.on_counters(40, 2, 5 * MS);
        assert!(!w.clean(5 * MS));
        w.on_counters(40 + CLEAN_PACKETS, 2, 5 * MS + CLEAN_US);
        assert!(w.clean(5 * MS + CLEAN_US));
    }
}
