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
    /// The picture `delta_base` names, kept while the frame lives so a full-frame LZ4 delta
    /// can be made for viewers that only understand those (Daylight) when the shared payload
    /// is not one (a row delta, or another codec).
    pub base: Option<Arc<Vec<u8>>>,
    full_delta_cache: OnceLock<Bytes>,
    /// A keyframe of this frame made on demand (new or recovering viewers), at most once.
    keyframe_cache: OnceLock<Bytes>,
    /// The same in LZ4, for Daylight viewers when the configured codec is another.
    lz4_keyframe_cache: OnceLock<Bytes>,
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
            full_delta_cache: OnceLock::new(),
            keyframe_cache: OnceLock::new(),
            lz4_keyframe_cache: OnceLock::new(),
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

    /// The full-frame XOR delta against `delta_base` as one LZ4 block, the only form the
    /// Daylight app decodes: the shared payload itself when it is exactly that, else made on
    /// first use (only when a Daylight viewer needs it). Returns the payload and whether this
    /// call made it.
    pub fn lz4_full_delta(&self) -> Option<(Bytes, bool)> {
        let p = self.payload.as_ref()?;
        if !self.rows && self.codec == BlockCodec::Lz4 {
            return Some((p.clone(), false));
        }
        let base = self.base.as_ref()?;
        let mut fresh = false;
        let d = self.full_delta_cache.get_or_init(|| {
            fresh = true;
            let mut x = vec![0u8; self.grey.len()];
            framewire_codec::delta::xor_into(base, &self.grey, &mut x);
            compress(BlockCodec::Lz4, &x)
        });
        Some((d.clone(), fresh))
    }

    /// This frame as an LZ4 keyframe (Daylight), shared with the v1 keyframe when the
    /// configured codec is LZ4. Returns the payload and whether this call compressed it.
    pub fn lz4_keyframe(&self) -> (Bytes, bool) {
        if self.codec == BlockCodec::Lz4 {
            return self.keyframe_payload();
        }
        let mut fresh = false;
        let p = self.lz4_keyframe_cache.get_or_init(|| {
            fresh = true;
            compress(BlockCodec::Lz4, &self.grey)
        });
        (p.clone(), fresh)
    }

    /// This frame as a keyframe payload, compressed on first use and shared afterwards.
    /// Returns the payload and whether this call did the compression.
    pub fn keyframe_payload(&self) -> (Bytes, bool) {
        if self.keyframe {
            if let Some(p) = &self.payload {
                return (p.clone(), false);
            }
        }
        let mut fresh = false;
        let p = self.keyframe_cache.get_or_init(|| {
            fresh = true;
            compress(self.codec, &self.grey)
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
