//! A captured frame as every viewer shares it: the grey picture, and its payloads encoded once.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use framewire_codec::rect_delta::{Pair, RectDeltaMaker};
use framewire_codec::rects::Codecs;
use framewire_codec::BlockCodec;
use framewire_flow::FrameInfo;

/// What the capture loop encoded once for every viewer that holds the right picture.
#[derive(Debug, Clone)]
pub enum Payload {
    /// The picture is the previous frame's: nothing to send.
    Unchanged,
    /// The whole picture (the first frame, or after a size change).
    Key(Bytes),
    /// The picture XOR the one of content `base_id` (kept as `base`), the whole frame.
    Delta {
        data: Bytes,
        base_id: u64,
        base: Arc<Vec<u8>>,
    },
    /// A row delta (a shift and the rows that still differ; `framewire_codec::rows`) against
    /// the same. Framewire v1 only: others get a full-frame delta made from `base`.
    Rows {
        data: Bytes,
        base_id: u64,
        base: Arc<Vec<u8>>,
    },
    /// A new picture that was not encoded (no viewer wanted this stream when it was made):
    /// any viewer that takes it gets a keyframe, made on demand.
    Fresh,
    /// A moved-rectangle delta (moves, then patches, then perhaps predicted rectangles;
    /// `framewire_codec::rects`) against the same. Framewire v1 viewers that declared it
    /// (and predicted rectangles, when it has some) only: others get a full-frame delta.
    Rects {
        data: Bytes,
        base_id: u64,
        base: Arc<Vec<u8>>,
    },
}

/// A delta made for one viewer against a picture it holds ([`SourceFrame::delta_from`]).
#[derive(Debug, Clone)]
pub struct Rebased {
    pub payload: Bytes,
    /// What its data decodes to: a row delta's rows, a moved-rectangle delta's patches and
    /// predicted rectangles' residuals.
    pub raw_len: usize,
    /// [`DeltaForm::Rows`] or [`DeltaForm::Rects`].
    pub form: DeltaForm,
    /// The codec of its payload.
    pub codec: BlockCodec,
}

/// The form of a frame's shared delta.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaForm {
    Full,
    Rows,
    Rects,
}

/// A frame's identity and picture.
#[derive(Debug)]
pub struct FrameMeta {
    pub seq: u64,
    pub capture_us: u64,
    pub width: u32,
    pub height: u32,
    pub grey: Arc<Vec<u8>>,
    /// The v1 checksum of `grey` (over its row hashes; see `framewire_codec::checksum`).
    pub checksum: u64,
    /// The seq of the frame where this exact picture first appeared.
    pub content_id: u64,
    /// The codec of the shared payload.
    pub codec: BlockCodec,
    /// Planes stacked in `grey`: 1 for grey, 3 for colour (G, R − G, B − G; see
    /// `framewire_codec::colour`), when `height` is three times the picture's.
    pub planes: u32,
}

impl FrameMeta {
    /// The same picture captured again as frame `seq` (nothing was drawn since).
    pub fn again(&self, seq: u64, capture_us: u64) -> FrameMeta {
        FrameMeta {
            seq,
            capture_us,
            grey: self.grey.clone(),
            ..*self
        }
    }
}

/// A captured frame as every viewer shares it: its picture ([`FrameMeta`], which it derefs
/// to: `f.seq`, `f.grey`, …) and its payloads.
#[derive(Debug)]
pub struct SourceFrame {
    meta: FrameMeta,
    pub payload: Payload,
    /// Full-frame XOR deltas made on demand, one per codec (see [`codec_slot`]), for viewers
    /// that take another form than the shared payload: Daylight viewers (LZ4 only, no row
    /// deltas) and viewers that did not declare the configured codec.
    full_deltas: [OnceLock<Bytes>; 3],
    /// Keyframes of this frame made on demand (new or recovering viewers), at most once per
    /// codec.
    keyframes: [OnceLock<Bytes>; 3],
    hashes: OnceLock<Vec<u64>>,
    /// The frame published before this one, while this one is the newest ([`SourceFrame::follow`]):
    /// a viewer that missed it can still take it and then this one as shared deltas.
    previous: Mutex<Option<Arc<SourceFrame>>>,
    /// Whether a viewer took this frame, or the capture passed over it first
    /// ([`SourceFrame::claim`], [`SourceFrame::withdraw`]).
    claim: AtomicU8,
}

/// [`SourceFrame::claim`]'s states: no viewer has taken the frame yet; one has; the capture
/// passed over it before any did, and made the next frame's delta against an older picture.
const OPEN: u8 = 0;
const TAKEN: u8 = 1;
const WITHDRAWN: u8 = 2;

impl std::ops::Deref for SourceFrame {
    type Target = FrameMeta;
    fn deref(&self) -> &FrameMeta {
        &self.meta
    }
}

/// Where a codec's payloads are cached.
fn codec_slot(c: BlockCodec) -> usize {
    match c {
        BlockCodec::Raw => 0,
        BlockCodec::Lz4 => 1,
        BlockCodec::Zstd(_) => 2,
    }
}

impl SourceFrame {
    pub fn new(meta: FrameMeta, payload: Payload) -> Self {
        SourceFrame {
            meta,
            payload,
            full_deltas: Default::default(),
            keyframes: Default::default(),
            hashes: OnceLock::new(),
            previous: Mutex::new(None),
            claim: AtomicU8::new(OPEN),
        }
    }

    /// The frame with its row hashes (`framewire_codec::checksum::row_hashes` of its picture),
    /// made while converting it: a delta against it made later need not hash it again.
    pub fn with_row_hashes(self, hashes: Vec<u64>) -> Self {
        assert_eq!(hashes.len(), self.height as usize, "one hash per row");
        let _ = self.hashes.set(hashes);
        self
    }

    /// A viewer takes this frame: true unless the capture passed over it first
    /// ([`SourceFrame::withdraw`]). Taken once, it cannot be withdrawn.
    pub fn claim(&self) -> bool {
        self.settle(TAKEN)
    }

    /// Moves the frame from open to `to`: true if it is (now or already) `to`.
    fn settle(&self, to: u8) -> bool {
        match self
            .claim
            .compare_exchange(OPEN, to, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(now) => now == to,
        }
    }

    /// Whether a viewer has taken this frame.
    pub fn taken(&self) -> bool {
        self.claim.load(Ordering::Acquire) == TAKEN
    }

    /// The capture passes over this frame, which no viewer has taken, to make the next one's
    /// delta against a picture a viewer holds: true unless a viewer took it first. A viewer
    /// offered it afterwards waits for the next one.
    pub fn withdraw(&self) -> bool {
        self.settle(WITHDRAWN)
    }

    /// This frame is published after `prev`: it keeps `prev` as its previous frame, or, when
    /// `prev` only repeats the picture before it (Unchanged), the frame that made that picture:
    /// this frame's delta applies to it. `prev` lets go of its own, so no more than two frames
    /// hang together.
    pub fn follow(&self, prev: &Arc<SourceFrame>) {
        let before = prev
            .previous
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let keep = match (&prev.payload, before) {
            (Payload::Unchanged, Some(b)) if b.content_id == prev.content_id => b,
            _ => prev.clone(),
        };
        *self.previous.lock().unwrap_or_else(|e| e.into_inner()) = Some(keep);
    }

    /// This frame is published after `passed` ([`SourceFrame::withdraw`]), its delta made
    /// against `base`'s picture: it keeps `base` as its previous frame, and `passed` lets go of
    /// its own.
    pub fn follow_past(&self, passed: &SourceFrame, base: &Arc<SourceFrame>) {
        passed
            .previous
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        *self.previous.lock().unwrap_or_else(|e| e.into_inner()) = Some(base.clone());
    }

    /// The frame published before this one, while this one is the newest.
    pub fn previous(&self) -> Option<Arc<SourceFrame>> {
        self.previous
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn info(&self) -> FrameInfo {
        let delta_base = match &self.payload {
            Payload::Delta { base_id, .. }
            | Payload::Rows { base_id, .. }
            | Payload::Rects { base_id, .. } => Some(*base_id),
            _ => None,
        };
        FrameInfo {
            seq: self.seq,
            content_id: self.content_id,
            delta_base,
            keyframe: matches!(self.payload, Payload::Key(_)),
        }
    }

    /// The shared delta and its form, if the frame has one.
    pub fn shared_delta(&self) -> Option<(&Bytes, DeltaForm)> {
        match &self.payload {
            Payload::Delta { data, .. } => Some((data, DeltaForm::Full)),
            Payload::Rows { data, .. } => Some((data, DeltaForm::Rows)),
            Payload::Rects { data, .. } => Some((data, DeltaForm::Rects)),
            _ => None,
        }
    }

    fn base(&self) -> Option<&Arc<Vec<u8>>> {
        match &self.payload {
            Payload::Delta { base, .. }
            | Payload::Rows { base, .. }
            | Payload::Rects { base, .. } => Some(base),
            _ => None,
        }
    }

    /// The shared payload is exactly the full-frame delta in `codec`.
    fn shared_full_delta(&self, codec: BlockCodec) -> Option<&Bytes> {
        match &self.payload {
            Payload::Delta { data, .. } if self.codec == codec => Some(data),
            _ => None,
        }
    }

    /// The shared payload is exactly the keyframe in `codec`.
    fn shared_keyframe(&self, codec: BlockCodec) -> Option<&Bytes> {
        match &self.payload {
            Payload::Key(data) if self.codec == codec => Some(data),
            _ => None,
        }
    }

    /// Whether [`SourceFrame::keyframe`] in `codec` would have to compress (it is not the
    /// shared payload and not made yet).
    pub fn keyframe_pending(&self, codec: BlockCodec) -> bool {
        self.shared_keyframe(codec).is_none() && self.keyframes[codec_slot(codec)].get().is_none()
    }

    /// Whether [`SourceFrame::full_delta`] in `codec` would have to make it.
    pub fn full_delta_pending(&self, codec: BlockCodec) -> bool {
        self.base().is_some()
            && self.shared_full_delta(codec).is_none()
            && self.full_deltas[codec_slot(codec)].get().is_none()
    }

    /// The full-frame XOR delta against the base in `codec`: the shared payload itself when it
    /// is exactly that, else made on first use (only when a viewer needs it; Daylight viewers
    /// take LZ4 only). Returns the payload and whether this call made it; `None` for a frame
    /// without a delta.
    pub fn full_delta(&self, codec: BlockCodec) -> Option<(Bytes, bool)> {
        if let Some(d) = self.shared_full_delta(codec) {
            return Some((d.clone(), false));
        }
        let base = self.base()?;
        let mut fresh = false;
        let d = self.full_deltas[codec_slot(codec)].get_or_init(|| {
            fresh = true;
            let mut x = vec![0u8; self.grey.len()];
            framewire_codec::delta::xor_into(base, &self.grey, &mut x);
            compress(codec, &x)
        });
        Some((d.clone(), fresh))
    }

    /// This frame as a delta made for one viewer, which holds `base` (named bases), against
    /// `base`'s picture (of the same size), in `codecs` (see [`Codecs`]). With `moved` (the
    /// viewer applies moved-rectangle deltas) it is one of those: a page scrolled beside a fixed
    /// sidebar or a dragged window costs its patches, not every row it crossed. Otherwise a row
    /// delta (a shift and the rows that differ; `framewire_codec::rows`).
    pub fn delta_from(
        &self,
        base: &SourceFrame,
        codecs: Codecs,
        moved: Option<&mut RectDeltaMaker>,
    ) -> Rebased {
        let w = self.width as usize;
        let mut out = Vec::new();
        // Only inputs over 2 GiB make LZ4/zstd fail; frames are bounded far below that.
        const BOUNDED: &str = "compressing a bounded in-memory frame";
        if let Some(m) = moved {
            let pair = Pair {
                prev: &base.grey,
                cur: &self.grey,
                width: w,
                planes: self.planes as usize,
                prev_rows: base.row_hashes(),
                cur_rows: self.row_hashes(),
            };
            let (plan, codec) = m.make(pair, codecs, &mut out).expect(BOUNDED);
            return Rebased {
                payload: Bytes::from(out),
                raw_len: plan.block_bytes(),
                form: DeltaForm::Rects,
                codec,
            };
        }
        let plan = framewire_codec::rows::plan(base.row_hashes(), self.row_hashes());
        let mut scratch = Vec::new();
        framewire_codec::rows::encode(
            &base.grey,
            &self.grey,
            w,
            &plan,
            codecs.plain,
            &mut scratch,
            &mut out,
        )
        .expect(BOUNDED);
        Rebased {
            payload: Bytes::from(out),
            raw_len: plan.rows() * w,
            form: DeltaForm::Rows,
            codec: codecs.plain,
        }
    }

    /// The hash of each row of the picture, made on first use (for deltas against pictures
    /// other than the one before).
    pub fn row_hashes(&self) -> &[u64] {
        self.hashes.get_or_init(|| {
            let mut h = Vec::new();
            framewire_codec::checksum::row_hashes(&self.grey, self.width as usize, &mut h);
            h
        })
    }

    /// This frame as a keyframe in `codec`: the shared payload when it is one, else compressed
    /// on first use and shared afterwards. Returns the payload and whether this call did the
    /// compression.
    pub fn keyframe(&self, codec: BlockCodec) -> (Bytes, bool) {
        if let Some(k) = self.shared_keyframe(codec) {
            return (k.clone(), false);
        }
        let mut fresh = false;
        let p = self.keyframes[codec_slot(codec)].get_or_init(|| {
            fresh = true;
            compress(codec, &self.grey)
        });
        (p.clone(), fresh)
    }
}

fn compress(codec: BlockCodec, data: &[u8]) -> Bytes {
    let mut out = Vec::new();
    // Only inputs over 2 GiB make LZ4/zstd fail; frames are bounded far below that.
    codec
        .compress(data, &mut out)
        .expect("compressing a bounded in-memory frame");
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame() -> SourceFrame {
        let meta = FrameMeta {
            seq: 1,
            capture_us: 0,
            width: 4,
            height: 2,
            grey: Arc::new(vec![0; 8]),
            checksum: 0,
            content_id: 1,
            codec: BlockCodec::Lz4,
            planes: 1,
        };
        SourceFrame::new(meta, Payload::Fresh)
    }

    #[test]
    fn a_frame_is_either_taken_or_withdrawn_whoever_comes_first() {
        let f = frame();
        assert!(!f.taken());
        assert!(
            f.claim() && f.claim(),
            "viewers take it as often as they like"
        );
        assert!(f.taken());
        assert!(!f.withdraw(), "taken, it stays the base");
        let g = frame();
        assert!(g.withdraw() && g.withdraw());
        assert!(!g.claim(), "withdrawn, no viewer takes it");
        assert!(!g.taken());
    }
}
