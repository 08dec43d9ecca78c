//! What the in-memory session tests share: a small picture that changes frame by frame, and
//! the host's frames of it.

use std::sync::Arc;

use framewire_codec::checksum::picture_checksum;
use framewire_codec::BlockCodec;
use framewire_session::{FrameMeta, Payload, SourceFrame};

pub const W: u32 = 64;
pub const H: u32 = 48;

/// A picture that changes with `n` in a band of rows (like typing).
pub fn picture(n: u64) -> Vec<u8> {
    let mut p: Vec<u8> = (0..W * H).map(|i| (i % 251) as u8).collect();
    let band = (n as usize % 6) * 8;
    for b in &mut p[band * W as usize..(band + 4) * W as usize] {
        *b = b.wrapping_add((n as u8).wrapping_mul(17).wrapping_add(1));
    }
    p
}

/// The host's frames: frame 0 a keyframe, then LZ4 full-frame deltas; `same` repeats the
/// previous picture as an unchanged frame.
pub struct Source {
    pub seq: u64,
    last: Option<(Arc<Vec<u8>>, u64)>,
    /// Pictures repeat with this period (a blinking cursor: the same pixels again, as a new
    /// content with the checksum of an earlier one).
    period: Option<u64>,
}

impl Source {
    pub fn new() -> Self {
        Source {
            seq: 0,
            last: None,
            period: None,
        }
    }

    /// A source whose changed pictures cycle through `period` pictures.
    #[allow(dead_code)]
    pub fn repeating(period: u64) -> Self {
        Source {
            period: Some(period.max(1)),
            ..Source::new()
        }
    }

    pub fn frame(&mut self, now: u64, same: bool) -> Arc<SourceFrame> {
        let seq = self.seq;
        self.seq += 1;
        let codec = BlockCodec::Lz4;
        let grey = match (&self.last, same) {
            (Some((g, _)), true) => g.clone(),
            _ => Arc::new(picture(self.period.map_or(seq, |p| seq % p))),
        };
        let checksum = picture_checksum(&grey, W as usize);
        let compress = |data: &[u8]| {
            let mut out = Vec::new();
            codec.compress(data, &mut out).unwrap();
            bytes::Bytes::from(out)
        };
        let (content_id, payload) = match (&self.last, same) {
            (Some((_, content)), true) => (*content, Payload::Unchanged),
            (Some((base, content)), false) => {
                let mut x = vec![0u8; grey.len()];
                framewire_codec::delta::xor_into(base, &grey, &mut x);
                let delta = Payload::Delta {
                    data: compress(&x),
                    base_id: *content,
                    base: base.clone(),
                };
                (seq, delta)
            }
            (None, _) => (seq, Payload::Key(compress(&grey))),
        };
        let meta = FrameMeta {
            planes: 1,
            seq,
            capture_us: now,
            width: W,
            height: H,
            grey: grey.clone(),
            checksum,
            content_id,
            codec,
        };
        let f = SourceFrame::new(meta, payload);
        let content = if same {
            self.last.as_ref().unwrap().1
        } else {
            seq
        };
        self.last = Some((grey, content));
        Arc::new(f)
    }
}
