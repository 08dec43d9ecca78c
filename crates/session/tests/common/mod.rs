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
    /// Pages of text scrolled beside a fixed sidebar ([`page`]) instead of [`picture`].
    scrolling: bool,
}

/// The size of a [`page`].
pub const PAGE_W: u32 = 256;
pub const PAGE_H: u32 = 160;

/// Picture `n` of a page of text-like lines scrolled 3 rows a picture beside a fixed sidebar,
/// as a browser scrolls: no whole row lines up with the picture before, but the text column
/// moved as one rectangle.
pub fn page(n: u64) -> Vec<u8> {
    let (w, h) = (PAGE_W as u64, PAGE_H as u64);
    let top = 3 * n;
    let mut p = vec![0u8; (w * h) as usize];
    for y in 0..h {
        for x in 0..w {
            let v = if x < 40 {
                (y * 37 % 251) as u8
            } else {
                let py = y + top;
                let line = py / 9;
                let glyph = (line.wrapping_mul(0x9E37_79B9) ^ (x / 6).wrapping_mul(31)) % 5;
                if py % 9 < 6 && glyph < 2 && x % 6 < 4 {
                    (glyph as u8 + 1) * 60 + (py % 9) as u8 * 3
                } else {
                    255
                }
            };
            p[(y * w + x) as usize] = v;
        }
    }
    p
}

impl Source {
    pub fn new() -> Self {
        Source {
            seq: 0,
            last: None,
            period: None,
            scrolling: false,
        }
    }

    /// A source of [`page`]s.
    #[allow(dead_code)]
    pub fn scrolling() -> Self {
        Source {
            scrolling: true,
            ..Source::new()
        }
    }

    /// The size of its pictures.
    pub fn size(&self) -> (u32, u32) {
        if self.scrolling {
            (PAGE_W, PAGE_H)
        } else {
            (W, H)
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

    /// A new picture that the capture passes over (no viewer took it): the next frame's delta
    /// is made against the picture before it, as the mirror's `pass_over.rs` does.
    #[allow(dead_code)]
    pub fn passed_over(&mut self, now: u64) -> Arc<SourceFrame> {
        let before = self.last.clone();
        let f = self.frame(now, false);
        self.last = before;
        f
    }

    pub fn frame(&mut self, now: u64, same: bool) -> Arc<SourceFrame> {
        let seq = self.seq;
        self.seq += 1;
        let codec = BlockCodec::Lz4;
        let grey = match (&self.last, same) {
            (Some((g, _)), true) => g.clone(),
            _ if self.scrolling => Arc::new(page(seq)),
            _ => Arc::new(picture(self.period.map_or(seq, |p| seq % p))),
        };
        let (width, height) = self.size();
        let checksum = picture_checksum(&grey, width as usize);
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
            width,
            height,
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
