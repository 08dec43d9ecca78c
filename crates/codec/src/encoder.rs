//! Host-side frame encoding decisions: keyframe, delta or unchanged.

use crate::block::{BlockCodec, CodecError};
use crate::checksum::picture_checksum;
use crate::delta::xor_into;

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
    /// The picture equals the previous one; there is no payload. Never compressed: an all-zero
    /// 2 MB LZ4 block still costs ≈8 KB and a full decode at the viewer.
    Unchanged,
}

/// What [`HostEncoder::encode`] produced. The payload is in the `out` buffer passed to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoded {
    pub kind: EncodedKind,
    /// xxh3-64 of the picture (what the viewer must hold after applying this).
    pub checksum: u64,
    pub payload_len: usize,
}

/// Encodes a sequence of grey pictures of one size against each other.
///
/// Keyframes come first, every `keyframe_interval` *changed* frames (0 = never; an idle
/// screen costs no periodic keyframes), and when [`HostEncoder::request_keyframe`] was called.
pub struct HostEncoder {
    codec: BlockCodec,
    keyframe_interval: u32,
    prev: Vec<u8>,
    delta: Vec<u8>,
    have_prev: bool,
    changed_since_key: u32,
    key_requested: bool,
}

impl HostEncoder {
    pub fn new(codec: BlockCodec, keyframe_interval: u32) -> Self {
        HostEncoder {
            codec,
            keyframe_interval,
            prev: Vec::new(),
            delta: Vec::new(),
            have_prev: false,
            changed_since_key: 0,
            key_requested: false,
        }
    }

    pub fn codec(&self) -> BlockCodec {
        self.codec
    }

    pub fn request_keyframe(&mut self) {
        self.key_requested = true;
    }

    /// The previous picture (the reference for the next delta).
    pub fn reference(&self) -> Option<&[u8]> {
        self.have_prev.then_some(&self.prev[..])
    }

    /// Encodes `cur`; the payload (if any) is written to `out`.
    pub fn encode(&mut self, cur: &[u8], out: &mut Vec<u8>) -> Result<Encoded, CodecError> {
        let checksum = picture_checksum(cur);
        let size_changed = self.prev.len() != cur.len();
        let reason = if !self.have_prev || size_changed {
            Some(KeyframeReason::First)
        } else if self.key_requested {
            Some(KeyframeReason::Requested)
        } else {
            None
        };
        if reason.is_none() && self.prev[..] == cur[..] {
            out.clear();
            return Ok(Encoded {
                kind: EncodedKind::Unchanged,
                checksum,
                payload_len: 0,
            });
        }
        let reason = reason.or_else(|| {
            self.changed_since_key += 1;
            (self.keyframe_interval > 0 && self.changed_since_key >= self.keyframe_interval)
                .then_some(KeyframeReason::Interval)
        });
        let kind = match reason {
            Some(r) => {
                self.codec.compress(cur, out)?;
                self.changed_since_key = 0;
                self.key_requested = false;
                EncodedKind::Keyframe(r)
            }
            None => {
                self.delta.resize(cur.len(), 0);
                xor_into(&self.prev, cur, &mut self.delta);
                self.codec.compress(&self.delta, out)?;
                EncodedKind::Delta
            }
        };
        self.prev.clear();
        self.prev.extend_from_slice(cur);
        self.have_prev = true;
        Ok(Encoded {
            kind,
            checksum,
            payload_len: out.len(),
        })
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
            e.encode(&a, &mut out).unwrap().kind,
            EncodedKind::Keyframe(KeyframeReason::First)
        );
        let u = e.encode(&a, &mut out).unwrap();
        assert_eq!((u.kind, u.payload_len), (EncodedKind::Unchanged, 0));
        assert_eq!(e.encode(&a, &mut out).unwrap().kind, EncodedKind::Unchanged);
        assert_eq!(e.encode(&b, &mut out).unwrap().kind, EncodedKind::Delta);
        assert_eq!(
            e.encode(&a, &mut out).unwrap().kind,
            EncodedKind::Keyframe(KeyframeReason::Interval)
        );
        e.request_keyframe();
        assert_eq!(
            e.encode(&a, &mut out).unwrap().kind,
            EncodedKind::Keyframe(KeyframeReason::Requested)
        );
        assert_eq!(e.encode(&a, &mut out).unwrap().kind, EncodedKind::Unchanged);
    }

    proptest! {
        /// Any sequence of pictures, encoded and applied in order, reconstructs every picture
        /// exactly and every checksum matches.
        #[test]
        fn encode_apply_roundtrip(frames in proptest::collection::vec(proptest::collection::vec(0u8..4, 48), 1..12), interval in 0u32..4, zstd in any::<bool>()) {
            let codec = if zstd { BlockCodec::Zstd(1) } else { BlockCodec::Lz4 };
            let mut e = HostEncoder::new(codec, interval);
            let mut pic = Picture::new(8, 6);
            let mut out = Vec::new();
            for f in &frames {
                let enc = e.encode(f, &mut out).unwrap();
                match enc.kind {
                    EncodedKind::Unchanged => {}
                    EncodedKind::Keyframe(_) => { pic.decode(true, codec, &out).unwrap(); pic.apply(); }
                    EncodedKind::Delta => { pic.decode(false, codec, &out).unwrap(); pic.apply(); }
                }
                prop_assert_eq!(pic.pixels(), &f[..]);
                prop_assert_eq!(pic.checksum(), enc.checksum);
            }
        }
    }
}
