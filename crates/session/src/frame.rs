//! A captured frame as every viewer shares it: the grey picture, and its payloads encoded once.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use framewire_codec::BlockCodec;
use framewire_flow::FrameInfo;

#[derive(Debug)]
pub struct SourceFrame {
    pub seq: u64,
    pub capture_us: u64,
    pub width: u32,
    pub height: u32,
    pub grey: Arc<Vec<u8>>,
    /// The v1 checksum of `grey` (over its row hashes; see `framewire_codec::checksum`).
    pub checksum: u64,
    pub content_id: u64,
    pub codec: BlockCodec,
    /// The shared payload: a delta against `delta_base`, or a keyframe when `keyframe`; `None`
    /// for an unchanged frame.
    pub payload: Option<Bytes>,
    pub delta_base: Option<u64>,
    pub keyframe: bool,
    /// The shared payload is a row delta (framewire v1 only).
    pub rows: bool,
    /// The picture `delta_base` names, kept while the frame lives so a full-frame delta can be
    /// made for viewers that take another form than the shared payload: Daylight viewers (LZ4
    /// only, no row deltas) and viewers that did not declare the configured codec.
    pub base: Option<Arc<Vec<u8>>>,
    /// Full-frame XOR deltas made on demand, one per codec (see [`codec_slot`]).
    full_deltas: [OnceLock<Bytes>; 3],
    /// Keyframes of this frame made on demand (new or recovering viewers), at most once per
    /// codec.
    keyframes: [OnceLock<Bytes>; 3],
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
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        seq: u64,
        capture_us: u64,
        width: u32,
        height: u32,
        grey: Arc<Vec<u8>>,
        checksum: u64,
        content_id: u64,
        codec: BlockCodec,
        payload: Option<Bytes>,
        delta_base: Option<u64>,
        keyframe: bool,
        rows: bool,
        base: Option<Arc<Vec<u8>>>,
    ) -> Self {
        SourceFrame {
            seq,
            capture_us,
            width,
            height,
            grey,
            checksum,
            content_id,
            codec,
            payload,
            delta_base,
            keyframe,
            rows,
            base,
            full_deltas: Default::default(),
            keyframes: Default::default(),
        }
    }

    pub fn info(&self) -> FrameInfo {
        FrameInfo {
            seq: self.seq,
            content_id: self.content_id,
            delta_base: self.delta_base,
            keyframe: self.keyframe,
        }
    }

    /// Whether [`SourceFrame::keyframe`] in `codec` would have to compress (it is not the
    /// shared payload and not made yet).
    pub fn keyframe_pending(&self, codec: BlockCodec) -> bool {
        !(self.keyframe && self.codec == codec && self.payload.is_some())
            && self.keyframes[codec_slot(codec)].get().is_none()
    }

    /// Whether [`SourceFrame::full_delta`] in `codec` would have to make it.
    pub fn full_delta_pending(&self, codec: BlockCodec) -> bool {
        self.payload.is_some()
            && (self.rows || self.codec != codec)
            && self.base.is_some()
            && self.full_deltas[codec_slot(codec)].get().is_none()
    }

    /// The full-frame XOR delta against `delta_base` in `codec`: the shared payload itself
    /// when it is exactly that, else made on first use (only when a viewer needs it; Daylight
    /// viewers take LZ4 only). Returns the payload and whether this call made it.
    pub fn full_delta(&self, codec: BlockCodec) -> Option<(Bytes, bool)> {
        let p = self.payload.as_ref()?;
        if !self.rows && self.codec == codec {
            return Some((p.clone(), false));
        }
        let base = self.base.as_ref()?;
        let mut fresh = false;
        let d = self.full_deltas[codec_slot(codec)].get_or_init(|| {
            fresh = true;
            let mut x = vec![0u8; self.grey.len()];
            framewire_codec::delta::xor_into(base, &self.grey, &mut x);
            compress(codec, &x)
        });
        Some((d.clone(), fresh))
    }

    /// This frame as a keyframe in `codec`: the shared payload when it is one, else compressed
    /// on first use and shared afterwards. Returns the payload and whether this call did the
    /// compression.
    pub fn keyframe(&self, codec: BlockCodec) -> (Bytes, bool) {
        if self.keyframe && self.codec == codec {
            if let Some(p) = &self.payload {
                return (p.clone(), false);
            }
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
