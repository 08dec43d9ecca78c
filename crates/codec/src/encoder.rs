//! Host-side frame encoding decisions: keyframe, delta or unchanged.

use std::sync::Arc;

use crate::block::{BlockCodec, CodecError};
use crate::delta::xor_into;

/// A grey picture shared between the encoder (as its reference) and the frames that carry it.
pub type SharedPicture = Arc<Vec<u8>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyframeReason {
    /// The first frame, or the picture size changed.
    First,
    /// The periodic keyframe (every `interval` changed frames).
    Interval,
    /// Asked for by the caller (a viewer's request, a recovery).
    Requested,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodedKind {
    /// `payload` decodes to the whole picture.
    Keyframe(KeyframeReason),
    /// `payload` decodes to this picture XOR the previous one.
    Delta,
    /// `payload` is a row delta (see [`crate::rows`]): a shift and the rows that differ.
    RowDelta,
    /// `payload` is a moved-rectangle delta (see [`crate::rects`]): moves, then patches.
    RectDelta,
    /// The picture equals the previous one; there is no payload. Never compressed: an all-zero
    /// 2 MB LZ4 block still costs ≈8 KB and a full decode at the viewer.
    Unchanged,
}

/// What [`HostEncoder::encode`] produced. The payload is in the `out` buffer passed to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoded {
    pub kind: EncodedKind,
    pub payload_len: usize,
    /// The codec of the payload: the encoder's, or its dense codec for a moved-rectangle delta
    /// with predicted rectangles ([`HostEncoder::with_dense_codec`]).
    pub codec: BlockCodec,
}

/// Encodes a sequence of grey pictures of one size against each other.
///
/// Keyframes come first, every `keyframe_interval` *changed* frames (0 = never; an idle
/// screen costs no periodic keyframes), and when [`HostEncoder::request_keyframe`] was called.
pub struct HostEncoder {
    codec: BlockCodec,
    /// The codec of moved-rectangle deltas with predicted rectangles.
    dense: BlockCodec,
    keyframe_interval: u32,
    /// The previous picture, shared rather than copied (a copy costs ~0.2 ms at 1600×1200).
    prev: Option<Arc<Vec<u8>>>,
    delta: Vec<u8>,
    prev_rows: Vec<u64>,
    cur_rows: Vec<u64>,
    changed_since_key: u32,
    key_requested: bool,
    /// Deltas with row hashes are moved-rectangle deltas instead of row deltas.
    rects: bool,
    /// Planes stacked in each picture (1 grey, 3 colour): moves are found in the first and
    /// made the same in each.
    planes: usize,
    moved: crate::rect_delta::RectDeltaMaker,
}

impl HostEncoder {
    pub fn new(codec: BlockCodec, keyframe_interval: u32) -> Self {
        HostEncoder {
            codec,
            dense: codec,
            keyframe_interval,
            prev: None,
            delta: Vec::new(),
            prev_rows: Vec::new(),
            cur_rows: Vec::new(),
            changed_since_key: 0,
            key_requested: false,
            rects: false,
            planes: 1,
            moved: Default::default(),
        }
    }

    /// Deltas made with row hashes (`encode_with` a width, `encode_hashed`) become
    /// moved-rectangle deltas ([`EncodedKind::RectDelta`]) instead of row deltas.
    pub fn with_rects(mut self, on: bool) -> Self {
        self.rects = on;
        self
    }

    /// Moved-rectangle deltas may carry predicted rectangles ([`crate::predict`]).
    pub fn with_predicted(mut self, on: bool) -> Self {
        self.moved = std::mem::take(&mut self.moved).with_predicted(on);
        self
    }

    /// Moved-rectangle deltas with predicted rectangles go in `dense` (zstd beside an LZ4
    /// encoder, see [`crate::rects::Codecs`]); every other payload in the encoder's codec.
    pub fn with_dense_codec(mut self, dense: BlockCodec) -> Self {
        self.dense = dense;
        self
    }

    /// Pictures are `planes` planes of equal height stacked (see [`crate::colour`]).
    pub fn with_planes(mut self, planes: usize) -> Self {
        self.planes = planes.max(1);
        self
    }

    pub fn codec(&self) -> BlockCodec {
        self.codec
    }

    pub fn request_keyframe(&mut self) {
        self.key_requested = true;
    }

    /// The previous picture (the reference for the next delta).
    pub fn reference(&self) -> Option<&[u8]> {
        self.prev.as_deref().map(|v| &v[..])
    }

    /// The next delta is made against `picture` (an older picture of the same size, whose row
    /// hashes are `rows`) instead of the last one encoded: a viewer holds it, and none took the
    /// last. Returns the reference it replaces, so its buffer can be reused.
    pub fn set_reference(&mut self, picture: SharedPicture, rows: &[u64]) -> Option<SharedPicture> {
        self.prev_rows.clear();
        self.prev_rows.extend_from_slice(rows);
        self.prev.replace(picture)
    }

    /// Encodes `cur`; the payload (if any) is written to `out`. `cur` becomes the reference
    /// for the next frame; the previous reference is returned so its buffer can be reused.
    pub fn encode(
        &mut self,
        cur: Arc<Vec<u8>>,
        out: &mut Vec<u8>,
    ) -> Result<(Encoded, Option<SharedPicture>), CodecError> {
        self.encode_with(cur, None, out)
    }

    /// As [`HostEncoder::encode`]; with `row_width`, deltas are row deltas of rows that wide.
    pub fn encode_with(
        &mut self,
        cur: Arc<Vec<u8>>,
        row_width: Option<usize>,
        out: &mut Vec<u8>,
    ) -> Result<(Encoded, Option<SharedPicture>), CodecError> {
        let row_width = row_width.filter(|&w| w > 0 && cur.len().is_multiple_of(w));
        if let Some(w) = row_width {
            crate::checksum::row_hashes(&cur, w, &mut self.cur_rows);
        }
        self.encode_planned(cur, row_width, out)
    }

    /// Row-delta encoding of `cur`, whose row hashes (`width` pixels per row) the caller has
    /// already computed, e.g. while converting it ([`crate::ingest`]).
    pub fn encode_hashed(
        &mut self,
        cur: Arc<Vec<u8>>,
        width: usize,
        hashes: &[u64],
        out: &mut Vec<u8>,
    ) -> Result<(Encoded, Option<SharedPicture>), CodecError> {
        assert_eq!(
            hashes.len() * width,
            cur.len(),
            "one hash per row of the picture"
        );
        self.cur_rows.clear();
        self.cur_rows.extend_from_slice(hashes);
        self.encode_planned(cur, (width > 0).then_some(width), out)
    }

    /// Encodes `cur`; with `row_width`, `self.cur_rows` holds its row hashes.
    fn encode_planned(
        &mut self,
        cur: Arc<Vec<u8>>,
        row_width: Option<usize>,
        out: &mut Vec<u8>,
    ) -> Result<(Encoded, Option<SharedPicture>), CodecError> {
        let prev = self.prev.as_deref().filter(|p| p.len() == cur.len());
        let reason = match prev {
            None => Some(KeyframeReason::First),
            Some(_) if self.key_requested => Some(KeyframeReason::Requested),
            Some(_) => None,
        };
        let hashed = row_width.is_some() && reason.is_none() && prev.is_some();
        let hashed = hashed && self.prev_rows.len() == self.cur_rows.len();
        let row_plan =
            (hashed && !self.rects).then(|| crate::rows::plan(&self.prev_rows, &self.cur_rows));
        let rect_hashes = hashed && self.rects;
        if !rect_hashes {
            std::mem::swap(&mut self.prev_rows, &mut self.cur_rows);
        }
        let unchanged = match &row_plan {
            Some(p) => p.is_unchanged(),
            None if rect_hashes => self.prev_rows == self.cur_rows,
            None => reason.is_none() && prev.is_some_and(|p| p[..] == cur[..]),
        };

        if unchanged {
            if rect_hashes {
                std::mem::swap(&mut self.prev_rows, &mut self.cur_rows);
            }
            out.clear();
            // Keep the old buffer as the reference (same content): nothing to swap.
            return Ok((
                Encoded {
                    kind: EncodedKind::Unchanged,
                    payload_len: 0,
                    codec: self.codec,
                },
                Some(cur),
            ));
        }
        let reason = reason.or_else(|| {
            self.changed_since_key += 1;
            (self.keyframe_interval > 0 && self.changed_since_key >= self.keyframe_interval)
                .then_some(KeyframeReason::Interval)
        });
        let mut codec = self.codec;
        let kind = match (reason, prev) {
            (None, Some(prev)) if rect_hashes => {
                let pair = crate::rect_delta::Pair {
                    prev,
                    cur: &cur,
                    width: row_width.expect("planned with a width"),
                    planes: self.planes,
                    prev_rows: &self.prev_rows,
                    cur_rows: &self.cur_rows,
                };
                let codecs = crate::rects::Codecs {
                    plain: self.codec,
                    dense: self.dense,
                };
                codec = self.moved.make(pair, codecs, out)?.1;
                EncodedKind::RectDelta
            }
            (None, Some(prev)) if row_plan.is_some() => {
                let (plan, w) = (
                    row_plan.as_ref().expect("checked"),
                    row_width.expect("planned with a width"),
                );
                crate::rows::encode(prev, &cur, w, plan, self.codec, &mut self.delta, out)?;
                EncodedKind::RowDelta
            }
            (None, Some(prev)) => {
                self.delta.resize(cur.len(), 0);
                xor_into(prev, &cur, &mut self.delta);
                self.codec.compress(&self.delta, out)?;
                EncodedKind::Delta
            }
            (r, _) => {
                self.codec.compress(&cur, out)?;
                self.changed_since_key = 0;
                self.key_requested = false;
                EncodedKind::Keyframe(r.unwrap_or(KeyframeReason::First))
            }
        };
        if rect_hashes {
            std::mem::swap(&mut self.prev_rows, &mut self.cur_rows);
        }
        let old = self.prev.replace(cur);
        Ok((
            Encoded {
                kind,
                payload_len: out.len(),
                codec,
            },
            old,
        ))
    }

    /// Convenience for callers that hold a slice: copies it into a new shared buffer.
    pub fn encode_slice(&mut self, cur: &[u8], out: &mut Vec<u8>) -> Result<Encoded, CodecError> {
        self.encode(Arc::new(cur.to_vec()), out).map(|(e, _)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Picture;
    use proptest::prelude::*;

    #[test]
    fn unchanged_is_not_compressed_and_interval_counts_changes_only() {
        let mut e = HostEncoder::new(BlockCodec::Lz4, 2);
        let mut out = Vec::new();
        let a = vec![1u8; 64];
        let mut b = a.clone();
        b[3] = 9;
        assert_eq!(
            e.encode_slice(&a, &mut out).unwrap().kind,
            EncodedKind::Keyframe(KeyframeReason::First)
        );
        let u = e.encode_slice(&a, &mut out).unwrap();
        assert_eq!((u.kind, u.payload_len), (EncodedKind::Unchanged, 0));
        assert_eq!(
            e.encode_slice(&a, &mut out).unwrap().kind,
            EncodedKind::Unchanged
        );
        assert_eq!(
            e.encode_slice(&b, &mut out).unwrap().kind,
            EncodedKind::Delta
        );
        assert_eq!(
            e.encode_slice(&a, &mut out).unwrap().kind,
            EncodedKind::Keyframe(KeyframeReason::Interval)
        );
        e.request_keyframe();
        assert_eq!(
            e.encode_slice(&a, &mut out).unwrap().kind,
            EncodedKind::Keyframe(KeyframeReason::Requested)
        );
        assert_eq!(
            e.encode_slice(&a, &mut out).unwrap().kind,
            EncodedKind::Unchanged
        );
    }

    proptest! {
        /// Any sequence of pictures, encoded and applied in order, reconstructs every picture
        /// exactly and every checksum matches.
        #[test]
        fn encode_apply_roundtrip(
            frames in proptest::collection::vec(proptest::collection::vec(0u8..4, 48), 1..12),
            interval in 0u32..4,
            zstd in any::<bool>(),
            rows in any::<bool>(),
            hashed in any::<bool>(),
            rects in any::<bool>(),
            shifts in proptest::collection::vec(-3i32..3, 12),
        ) {
            let codec = if zstd { BlockCodec::Zstd(1) } else { BlockCodec::Lz4 };
            let mut e = HostEncoder::new(codec, interval).with_rects(rects);
            let mut pic = Picture::new(8, 6);
            let mut out = Vec::new();
            let mut prev: Option<Vec<u8>> = None;
            for (f, dy) in frames.iter().zip(shifts) {
                // Half the time the next picture is the previous one scrolled, then edited.
                let mut f = f.clone();
                if let (Some(p), true) = (&prev, dy != 0) {
                    let mut s = p.clone();
                    crate::rows::shift_rows(&mut s, 8, dy);
                    s[..8].copy_from_slice(&f[..8]);
                    f = s;
                }
                let (enc, _) = if rows && hashed {
                    let mut hashes = Vec::new();
                    crate::checksum::row_hashes(&f, 8, &mut hashes);
                    e.encode_hashed(Arc::new(f.clone()), 8, &hashes, &mut out).unwrap()
                } else {
                    e.encode_with(Arc::new(f.clone()), rows.then_some(8), &mut out).unwrap()
                };
                match enc.kind {
                    EncodedKind::Unchanged => {}
                    EncodedKind::Keyframe(_) => { pic.decode(true, codec, &out).unwrap(); pic.apply(); }
                    EncodedKind::Delta => { prop_assert!(!rows); pic.decode(false, codec, &out).unwrap(); pic.apply(); }
                    EncodedKind::RowDelta => { prop_assert!(rows && !rects); pic.decode_rows(codec, &out).unwrap(); pic.apply(); }
                    EncodedKind::RectDelta => { prop_assert!(rows && rects); pic.decode_rects(codec, &out).unwrap(); pic.apply(); }
                }
                prop_assert_eq!(pic.to_vec(), f.clone());
                prop_assert_eq!(pic.checksum(), crate::checksum::picture_checksum(&f, 8));
                prev = Some(f);
            }
        }

        /// Pictures a viewer did not take are passed over: the next delta is made against the
        /// newest picture it took (`set_reference`), and the viewer, which applied only those,
        /// reconstructs every picture it takes exactly.
        #[test]
        fn a_delta_against_a_picture_set_back_applies_to_it(
            frames in proptest::collection::vec(proptest::collection::vec(0u8..4, 48), 2..12),
            taken in proptest::collection::vec(any::<bool>(), 12),
            rects in any::<bool>(),
        ) {
            let codec = BlockCodec::Lz4;
            let mut e = HostEncoder::new(codec, 0).with_rects(rects);
            let mut pic = Picture::new(8, 6);
            let mut out = Vec::new();
            // The newest picture the viewer took, and its row hashes.
            let mut held: Option<(Arc<Vec<u8>>, Vec<u64>)> = None;
            let mut last_taken = true;
            for (i, f) in frames.iter().enumerate() {
                // The first picture is taken (the viewer's keyframe).
                let take = i == 0 || taken[i];
                if !last_taken {
                    let (p, h) = held.as_ref().expect("the first picture was taken");
                    e.set_reference(p.clone(), h);
                }
                let mut hashes = Vec::new();
                crate::checksum::row_hashes(f, 8, &mut hashes);
                let cur = Arc::new(f.clone());
                let (enc, _) = e.encode_hashed(cur.clone(), 8, &hashes, &mut out).unwrap();
                last_taken = take;
                if !take {
                    continue;
                }
                match enc.kind {
                    EncodedKind::Unchanged => {}
                    EncodedKind::Keyframe(_) => { pic.decode(true, codec, &out).unwrap(); pic.apply(); }
                    EncodedKind::Delta => { prop_assert!(false, "hashed deltas are row or rect deltas"); }
                    EncodedKind::RowDelta => { pic.decode_rows(codec, &out).unwrap(); pic.apply(); }
                    EncodedKind::RectDelta => { pic.decode_rects(codec, &out).unwrap(); pic.apply(); }
                }
                prop_assert_eq!(pic.to_vec(), f.clone(), "picture {}", i);
                held = Some((cur, hashes));
            }
        }
    }
}
