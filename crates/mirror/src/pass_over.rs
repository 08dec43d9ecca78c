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
//! viewer took the last picture (its frame or a repeat) by the time the next picture has been
//! captured and converted, those frames are withdrawn ([`SourceFrame::withdraw`]) and the next
//! delta is made against the newest picture a viewer did take: one encode that every viewer
//! behind can use. That is a capture interval after the last frame was published, or, where
//! encoding takes longer than the interval (the capture does not wait then), a few
//! milliseconds: the capture and the conversion. A viewer whose path opens while the next
//! frame is made waits for it instead of taking the withdrawn one, up to one encode. Cheap
//! deltas are made again for a viewer rather than a frame held back.

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
    /// The moving average of the CPU time a shared delta took to make (µs; keyframes and
    /// unchanged pictures are not counted).
    encode_avg_us: u64,
}

impl PassOver {
    /// The picture the next delta (of a picture `width` × `height`, as [`SourceFrame`]s count
    /// them) is made against in place of `last`'s: where deltas are costly, no viewer took
    /// `last`'s picture (the encoded frame that made it, among the recent ones, or a repeat of
    /// it), and a viewer took an older one of that size. Those frames are withdrawn. `None`
    /// when `last`'s picture stays the base (or a viewer took one of them first).
    pub fn base_past(
        &self,
        last: Option<&Arc<SourceFrame>>,
        width: u32,
        height: u32,
    ) -> Option<Arc<SourceFrame>> {
        if self.encode_avg_us <= framewire_flow::COSTLY_US {
            return None;
        }
        let last = last?;
        if (last.width, last.height) != (width, height) {
            return None;
        }
        // The frames of `last`'s picture: the one that made it and its repeats (a 30 fps video
        // captured at 60 repeats every picture once).
        let picture: Vec<_> = self
            .recent
            .iter()
            .filter(|f| f.content_id == last.content_id)
            .collect();
        let made = picture
            .iter()
            .any(|f| !matches!(f.payload, Payload::Unchanged | Payload::Fresh));
        if !made || picture.iter().any(|f| f.taken()) {
            return None;
        }
        let base = self
            .recent
            .iter()
            .rev()
            .chain(&self.taken_before)
            .find(|f| f.taken() && f.content_id != last.content_id)
            .filter(|f| (f.width, f.height) == (width, height))?;
        // Newest first: once a repeat is withdrawn, no viewer takes the picture through it.
        picture
            .iter()
            .rev()
            .all(|f| f.withdraw())
            .then(|| base.clone())
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

    /// Nothing published is kept (no viewer takes this stream now; the next picture starts it
    /// again from a keyframe).
    pub fn forget(&mut self) {
        *self = PassOver::default();
    }

    /// A shared delta took `cpu_us` of the capture thread's CPU to make.
    pub fn delta_made(&mut self, cpu_us: u64) {
        self.encode_avg_us = self.encode_avg_us - self.encode_avg_us / WEIGHT + cpu_us / WEIGHT;
    }
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
        let delta = Payload::Rows {
            data: bytes::Bytes::new(),
            base_id: seq - 1,
            base: Arc::new(Vec::new()),
        };
        Arc::new(SourceFrame::new(meta, delta))
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
        let base = seen(COSTLY, &f)
            .base_past(f.last(), 8, 3)
            .expect("passed over");
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
        assert!(cheap.base_past(f.last(), 8, 3).is_none());
        assert!(f[2].claim(), "not withdrawn");
        // Taken by a viewer: it stays the base.
        assert!(seen(COSTLY, &f).base_past(f.last(), 8, 3).is_none());
        // No viewer took any of them: nothing to make it against.
        let g: Vec<_> = (1..=3).map(|i| frame(i, 8)).collect();
        assert!(seen(COSTLY, &g).base_past(g.last(), 8, 3).is_none());
        assert!(g[2].claim(), "not withdrawn");
        // The picture taken is of another size.
        let h = [frame(1, 8), frame(2, 16)];
        assert!(h[0].claim());
        assert!(seen(COSTLY, &h).base_past(h.last(), 16, 3).is_none());
        // The new picture is of another size (a keyframe either way).
        let k: Vec<_> = (1..=3).map(|i| frame(i, 8)).collect();
        assert!(k[0].claim());
        assert!(seen(COSTLY, &k).base_past(k.last(), 16, 3).is_none());
        assert!(k[2].claim(), "not withdrawn");
        // The last frame was never encoded (no viewer of this stream when it was made).
        let m = [frame(1, 8), frame(2, 8)];
        assert!(m[0].claim());
        let fresh = Arc::new(SourceFrame::new(frame(3, 8).again(3, 3), Payload::Fresh));
        let p = seen(COSTLY, &[m[0].clone(), m[1].clone(), fresh.clone()]);
        assert!(p.base_past(Some(&fresh), 8, 3).is_none());
        assert!(fresh.claim(), "not withdrawn");
    }

    /// A 30 fps video captured at 60: each new picture is repeated once (Unchanged). When no
    /// viewer took the picture or its repeat, both are withdrawn; when one took either, the
    /// picture stays the base.
    #[test]
    fn a_picture_and_its_repeat_are_passed_over_together() {
        let repeat = |f: &Arc<SourceFrame>| {
            Arc::new(SourceFrame::new(f.again(f.seq + 1, 0), Payload::Unchanged))
        };
        let (a, b) = (frame(1, 8), frame(2, 8));
        let r = repeat(&b);
        assert!(a.claim());
        let p = seen(COSTLY, &[a.clone(), b.clone(), r.clone()]);
        assert_eq!(p.base_past(Some(&r), 8, 3).map(|f| f.seq), Some(1));
        assert!(!b.claim() && !r.claim(), "both withdrawn");
        for taken in [0, 1] {
            let (a, b) = (frame(1, 8), frame(2, 8));
            let r = repeat(&b);
            assert!(a.claim() && [&b, &r][taken].claim());
            let p = seen(COSTLY, &[a.clone(), b.clone(), r.clone()]);
            assert!(p.base_past(Some(&r), 8, 3).is_none(), "{taken}");
            assert!([&b, &r][1 - taken].claim(), "{taken}: not withdrawn");
        }
    }

    #[test]
    fn a_viewer_far_behind_still_has_its_picture_found() {
        let f: Vec<_> = (1..=9).map(|i| frame(i, 8)).collect();
        assert!(f[0].claim() && f[1].claim());
        let p = seen(COSTLY, &f);
        let base = p.base_past(f.last(), 8, 3).expect("passed over");
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
            p.delta_made(30_000);
        }
        assert!(p.base_past(Some(&g), 8, 3).is_some(), "{}", p.encode_avg_us);
        let h = frame(3, 8);
        p.published(&h);
        for _ in 0..20 {
            p.delta_made(2_000);
        }
        assert!(p.base_past(Some(&h), 8, 3).is_none(), "{}", p.encode_avg_us);
    }
}
