//! Passing over a frame no viewer took, where deltas are costly to make.
//!
//! The capture makes each frame's shared delta against the frame before. A viewer behind (its
//! path full, or it is still applying) skips frames, and the newest one's shared delta is
//! then against a picture it never got: its session makes that delta again for it alone
//! (`HostSession::plan_frame`), a second encode of the same frame. Where a picture changes
//! everywhere that is as costly as the first (a colour Mandelbrot zoom: 34 ms of the two
//! cores), and on a lossy path the fractal had 73–107 of 152–231 frames made twice over QUIC.
//!
//! So where the shared deltas' moving average is above [`framewire_flow::COSTLY_US`], and no
//! viewer took the last frame by the time the next picture is captured (a capture interval
//! later), that frame is withdrawn ([`SourceFrame::withdraw`]) and the next delta is made
//! against the newest picture a viewer did take: one encode that every viewer behind can use.
//! A viewer whose path opens in between waits for that next frame instead of taking the
//! withdrawn one. Cheap deltas are made again for a viewer rather than a frame held back.

use std::collections::VecDeque;
use std::sync::Arc;

use framewire_session::{Payload, SourceFrame};

/// Frames kept: a viewer holds one of the last few it was sent.
const RECENT: usize = 4;
/// The moving average's weight of a new measurement: 1/WEIGHT.
const WEIGHT: u64 = 8;

/// The frames a capture stage published lately, and what its deltas cost to make.
#[derive(Default)]
pub(crate) struct PassOver {
    /// Newest last.
    recent: VecDeque<Arc<SourceFrame>>,
    /// The newest frame a viewer took among those that left `recent`: a viewer far behind
    /// (a frame stuck behind a lost packet while pictures came and repeated) holds it.
    taken_before: Option<Arc<SourceFrame>>,
    /// The moving average of the CPU time a shared delta took to make (µs).
    encode_avg_us: u64,
}

impl PassOver {
    /// The picture the next delta is made against in place of `last`'s, which is withdrawn:
    /// where deltas are costly, no viewer took `last` (a new picture), and a viewer took an
    /// older one of the same size. `None` when `last` stays the base (or a viewer took it
    /// first).
    pub fn base_past(&self, last: Option<&Arc<SourceFrame>>) -> Option<Arc<SourceFrame>> {
        if self.encode_avg_us <= framewire_flow::COSTLY_US {
            return None;
        }
        let last = last?;
        if last.taken() || matches!(last.payload, Payload::Unchanged) {
            return None;
        }
        let base = self
            .recent
            .iter()
            .rev()
            .chain(&self.taken_before)
            .find(|f| f.taken() && f.content_id != last.content_id)
            .filter(|f| f.width == last.width && f.height == last.height)?;
        last.withdraw().then(|| base.clone())
    }

    /// `frame` was published.
    pub fn published(&mut self, frame: &Arc<SourceFrame>) {
        if self.recent.len() >= RECENT {
            // Frames leave in order, so a taken one is newer than the one kept before.
            if let Some(old) = self.recent.pop_front().filter(|f| f.taken()) {
                self.taken_before = Some(old);
            }
        }
        self.recent.push_back(frame.clone());
    }

    /// A shared delta took `cpu_us` of the capture thread's CPU to make.
    pub fn encoded(&mut self, cpu_us: u64) {
        self.encode_avg_us = self.encode_avg_us - self.encode_avg_us / WEIGHT + cpu_us / WEIGHT;
    }
}

/// The CPU time this thread has used (µs). The standard library has no per-thread CPU clock.
pub(crate) fn thread_cpu_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call only writes it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;
    use framewire_codec::BlockCodec;
    use framewire_session::FrameMeta;

    /// Frame `seq`, a new picture `w` wide.
    fn frame(seq: u64, w: u32) -> Arc<SourceFrame> {
        let meta = FrameMeta {
            seq,
            capture_us: seq,
            width: w,
            height: 3,
            grey: Arc::new(vec![seq as u8; w as usize * 3]),
            checksum: seq,
            content_id: seq,
            codec: BlockCodec::Lz4,
            planes: 1,
        };
        Arc::new(SourceFrame::new(meta, Payload::Fresh))
    }

    /// Deltas that cost `avg_us`, with `frames` published.
    fn seen(avg_us: u64, frames: &[Arc<SourceFrame>]) -> PassOver {
        let mut p = PassOver {
            encode_avg_us: avg_us,
            ..PassOver::default()
        };
        for f in frames {
            p.published(f);
        }
        p
    }

    const COSTLY: u64 = framewire_flow::COSTLY_US + 1;

    #[test]
    fn a_costly_frame_nobody_took_is_passed_over_for_the_newest_one_taken() {
        let f: Vec<_> = (1..=4).map(|i| frame(i, 8)).collect();
        assert!(f[0].claim() && f[1].claim());
        // 3 was not taken either, but only the last one is withdrawn: 2 is the base.
        let base = seen(COSTLY, &f).base_past(f.last()).expect("passed over");
        assert_eq!(base.seq, 2);
        assert!(
            !f[3].claim(),
            "a viewer offered the withdrawn frame does not take it"
        );
        assert!(f[2].claim(), "the frame before it was not withdrawn");
    }

    #[test]
    fn a_frame_is_not_passed_over_when_taken_cheap_or_with_no_base() {
        let f: Vec<_> = (1..=3).map(|i| frame(i, 8)).collect();
        assert!(f[0].claim());
        // Cheap deltas: made again for a viewer rather than a frame held back.
        let cheap = seen(framewire_flow::COSTLY_US, &f);
        assert!(cheap.base_past(f.last()).is_none());
        assert!(f[2].claim(), "not withdrawn");
        // Taken by a viewer: it stays the base.
        assert!(seen(COSTLY, &f).base_past(f.last()).is_none());
        // No viewer took any of them: nothing to make it against.
        let g: Vec<_> = (1..=3).map(|i| frame(i, 8)).collect();
        assert!(seen(COSTLY, &g).base_past(g.last()).is_none());
        assert!(g[2].claim(), "not withdrawn");
        // The picture taken is of another size.
        let h = [frame(1, 8), frame(2, 16)];
        assert!(h[0].claim());
        assert!(seen(COSTLY, &h).base_past(h.last()).is_none());
    }

    #[test]
    fn a_viewer_far_behind_still_has_its_picture_found() {
        let f: Vec<_> = (1..=9).map(|i| frame(i, 8)).collect();
        assert!(f[0].claim() && f[1].claim());
        let p = seen(COSTLY, &f);
        let base = p.base_past(f.last()).expect("passed over");
        assert_eq!(base.seq, 2, "the newest one taken, seven frames back");
    }

    #[test]
    fn the_cost_follows_the_deltas_made() {
        let mut p = PassOver::default();
        let (f, g) = (frame(1, 8), frame(2, 8));
        assert!(f.claim());
        p.published(&f);
        p.published(&g);
        for _ in 0..20 {
            p.encoded(30_000);
        }
        assert!(p.base_past(Some(&g)).is_some(), "{}", p.encode_avg_us);
        let h = frame(3, 8);
        p.published(&h);
        for _ in 0..20 {
            p.encoded(2_000);
        }
        assert!(p.base_past(Some(&h)).is_none(), "{}", p.encode_avg_us);
    }
}
