//! Whether the content outruns the path while large frames cross as datagrams.
//!
//! A large frame as datagrams carries a tenth more bytes (its recovery shards, where the path
//! lost packets lately; one shard where it lost none), and spares it
//! the round trip a lost packet costs on a stream. Where the path has room to spare (an
//! unlimited link with random loss) that trade pays: at 80 ms and 1 % loss a video went from
//! 22 to 58 pictures a second. Where the path's rate, not its loss, limits the frames, it
//! costs: the shards take a tenth of what the path carries, and the frames' bursts fill the
//! bottleneck's queue. At 50 Mbit/s and 80 ms with loss, where the queue under the window
//! bound did not always last long enough to hold large frames on streams, the rate limit
//! dropped 511–919 packets in each 6 s run with them, against none in six of eight runs
//! without, and the p99 rose by 15–20 % (6 % without loss); over 30 s at 1 % loss it dropped 21 135 and 26 322
//! packets, and 6.2 pictures a second were shown (BENCHMARKS.md, "Large datagrams where the
//! content outruns the path").
//!
//! The two are told apart by the frames the host could send while large frames went as
//! datagrams: on a path with room, datagrams deliver what lossy streams could not, and most
//! of the source's frames go (45–60 of 60 a second); on a path slower than the content, only
//! as many go as the rate carries (14 of 60 at 50 Mbit/s). Counted over the frames that go as
//! datagrams, the measure is the path's, not the loss's: streams held up by lost packets
//! pass frames over on any path, so the frames sent on them are not counted. Nor are those
//! of the first [`OUTRUN_SETTLE_US`] after large frames began to go as datagrams: the host's
//! estimate of the path, made on streams held up by lost packets, then still bounds what it
//! sends, and grows a few round trips at a time. Counted from the first, the rule found an
//! unlimited path at 80 ms with 1 % and 5 % loss outrun within six frames, and the video fell
//! to 24.7 and 11.2 pictures a second (one run each).
//!
//! The host counts frames passed over only on a path whose round trip showed a queue lately
//! (`framewire_flow::ViewerFlow::path_queued_lately`), where a bottleneck holds them back.
//! Elsewhere the frame limit (at most 1000 / RTT in ms frames in flight, under 30 a second
//! beyond a 170 ms round trip), a viewer slow to apply, or a budget still growing on a long
//! round trip would look like a slow path: on an unlimited 200 ms path with 1 % loss the rule
//! acted three times in 30 s counting every frame passed over, and 6.2 pictures a second were
//! shown, against 16.7 where it acted once, counting only those the byte budget held back.

use std::collections::VecDeque;

/// The frames sent are counted over this span (µs).
pub const OUTRUN_SPAN_US: u64 = 1_000_000;
/// ... from this long (µs) after large frames began to go as datagrams (with no gap longer
/// than [`OUTRUN_SPAN_US`] since).
pub const OUTRUN_SETTLE_US: u64 = 1_000_000;
/// At least this many frames sent after large ones went as datagrams within the span make
/// a measure.
pub const OUTRUN_FRAMES: usize = 6;
/// The content outruns the path when fewer than this share of the source's frames (sent
/// over spanned) were sent: a path that carries less than half the content.
const OUTRUN_SHARE: (u64, u64) = (1, 2);
/// Large frames go on streams for this long (µs) after the content was seen to outrun the
/// path; then they are tried again. A path's rate changes seldom: at 50 Mbit/s each try costs
/// about 1.5 s of frames as datagrams (the settling time, then six frames).
pub const OUTRUN_HOLD_US: u64 = 10_000_000;

/// The frames sent after a large frame went as datagrams (see the module's text).
#[derive(Debug, Default)]
pub(crate) struct OutrunWatch {
    /// (when, source frames since the frame before: 1 and those skipped), newest last.
    sent: VecDeque<(u64, u64)>,
    /// When frames began to be planned after large ones went as datagrams, and when one
    /// last was.
    flowing_since: Option<u64>,
    flowing_at: u64,
    /// When the content was last seen to outrun the path.
    outrun_at: Option<u64>,
}

impl OutrunWatch {
    /// A frame `spanned` source frames after the one sent before it (1: none skipped) is
    /// planned at `now`; `after_large` when that one went as large datagrams. Returns true
    /// when the content is found to outrun the path now.
    pub(crate) fn planned(&mut self, now: u64, spanned: u64, after_large: bool) -> bool {
        while self
            .sent
            .front()
            .is_some_and(|&(t, _)| now.saturating_sub(t) > OUTRUN_SPAN_US)
        {
            self.sent.pop_front();
        }
        if !after_large {
            return false;
        }
        if now.saturating_sub(self.flowing_at) > OUTRUN_SPAN_US {
            self.flowing_since = None;
        }
        self.flowing_at = now;
        let since = *self.flowing_since.get_or_insert(now);
        if now.saturating_sub(since) < OUTRUN_SETTLE_US {
            return false;
        }
        self.sent.push_back((now, spanned.max(1)));
        let spanned: u64 = self.sent.iter().map(|&(_, n)| n).sum();
        let sent = self.sent.len() as u64;
        if self.sent.len() < OUTRUN_FRAMES || sent * OUTRUN_SHARE.1 >= spanned * OUTRUN_SHARE.0 {
            return false;
        }
        self.sent.clear();
        self.flowing_since = None;
        self.outrun_at = Some(now);
        true
    }

    /// Large frames may go as datagrams at `now`: the content has not outrun the path within
    /// [`OUTRUN_HOLD_US`].
    pub(crate) fn allows(&self, now: u64) -> bool {
        self.outrun_at
            .is_none_or(|t| now.saturating_sub(t) > OUTRUN_HOLD_US)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames every `every` source frames, 16.7 ms apart at the source, from `t` (µs): the
    /// moment each is planned.
    fn plan_every(w: &mut OutrunWatch, t: &mut u64, every: u64, n: usize, large: bool) -> bool {
        let mut found = false;
        for _ in 0..n {
            *t += every * 16_667;
            found |= w.planned(*t, every, large);
        }
        found
    }

    /// Frames every 4 source frames for the settling time: not counted.
    fn settled(w: &mut OutrunWatch, t: &mut u64) {
        let n = OUTRUN_SETTLE_US.div_ceil(4 * 16_667) as usize;
        assert!(!plan_every(w, t, 4, n, true));
    }

    #[test]
    fn a_path_that_carries_a_quarter_of_the_frames_is_outrun() {
        let mut w = OutrunWatch::default();
        let mut t = 0;
        settled(&mut w, &mut t);
        // Five frames are not a measure yet; the sixth is.
        assert!(!plan_every(&mut w, &mut t, 4, OUTRUN_FRAMES - 1, true));
        assert!(w.allows(t));
        assert!(plan_every(&mut w, &mut t, 4, 1, true));
        assert!(!w.allows(t));
        // Held for `OUTRUN_HOLD_US`, then tried again.
        assert!(!w.allows(t + OUTRUN_HOLD_US));
        assert!(w.allows(t + OUTRUN_HOLD_US + 1));
        // Tried again, it settles first.
        t += OUTRUN_HOLD_US;
        settled(&mut w, &mut t);
        assert!(plan_every(&mut w, &mut t, 4, OUTRUN_FRAMES, true));
    }

    #[test]
    fn the_first_second_of_large_datagrams_is_not_counted() {
        let mut w = OutrunWatch::default();
        let mut t = 0;
        settled(&mut w, &mut t);
        // A gap of more than the span: they begin again, and settle again.
        t += OUTRUN_SPAN_US;
        settled(&mut w, &mut t);
        assert!(w.allows(t));
        assert!(plan_every(&mut w, &mut t, 4, OUTRUN_FRAMES, true));
    }

    #[test]
    fn a_path_that_carries_half_the_frames_or_more_is_not() {
        let mut w = OutrunWatch::default();
        let mut t = 0;
        // Every other frame: half, not fewer.
        assert!(!plan_every(&mut w, &mut t, 2, 100, true));
        // Most frames, with a blackout of 12 frames now and then.
        for _ in 0..5 {
            assert!(!plan_every(&mut w, &mut t, 1, 40, true));
            assert!(!plan_every(&mut w, &mut t, 13, 1, true));
        }
        assert!(w.allows(t));
    }

    #[test]
    fn frames_after_ones_on_streams_are_not_counted() {
        let mut w = OutrunWatch::default();
        let mut t = 0;
        // A lossy path's streams pass most frames over: not the path's rate.
        assert!(!plan_every(&mut w, &mut t, 6, 50, false));
        // Five frames counted, then frames a second apart: each begins the flow again.
        settled(&mut w, &mut t);
        assert!(!plan_every(&mut w, &mut t, 4, 5, true));
        for _ in 0..5 {
            assert!(!plan_every(&mut w, &mut t, 60, 1, true));
        }
        assert!(w.allows(t));
    }
}
