//! Frames in shared memory: what the server exports (`framewire serve --shm-export`, grey, read
//! in place by local consumers) and what a local publisher hands the server as its screen
//! (`framewire publish --shm`, BGRA, `serve --source shm:NAME`). One message per frame.
//!
//! ```text
//! 0   magic "FWSF"
//! 4   version u8 (1), format u8 (0 grey, 1 BGRA), flags u16 (bit 0: unchanged — no pixels)
//! 8   seq u64          source frame number
//! 16  capture_us u64   CLOCK_MONOTONIC µs when the source handed the picture over
//! 24  width u32, 28 height u32
//! 32  checksum u64     the v1 picture checksum (spec/PROTOCOL.md)
//! 40  width × height × (1 or 4) pixel bytes (absent when unchanged)
//! ```

use crate::ProtoError;

pub const MAGIC: [u8; 4] = *b"FWSF";
pub const VERSION: u8 = 1;
pub const HEADER: usize = 40;
pub const FLAG_UNCHANGED: u16 = 1;
/// The largest picture side accepted.
pub const MAX_SIDE: u32 = 16_384;
/// The shared-memory topic of exported (grey) frame routes.
pub const TOPIC: &str = "framewire.frames.v1";
/// The shared-memory topic of routes that feed the server a screen (BGRA).
pub const CAPTURE_TOPIC: &str = "framewire.capture.v1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelFormat {
    Grey = 0,
    Bgra = 1,
    /// Lossless colour: the planes G, R − G, B − G (mod 256), each width × height, one after
    /// the other (as framewire v1's StreamDesc format 2).
    PlanarGDiff = 2,
}

impl PixelFormat {
    pub fn bytes_per_pixel(self) -> usize {
        match self {
            PixelFormat::Grey => 1,
            PixelFormat::Bgra => 4,
            PixelFormat::PlanarGDiff => 3,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub seq: u64,
    pub capture_us: u64,
    pub width: u32,
    pub height: u32,
    pub checksum: u64,
    pub unchanged: bool,
    pub format: PixelFormat,
}

impl FrameHeader {
    /// Bytes of the whole message.
    pub fn message_len(&self) -> usize {
        HEADER
            + if self.unchanged {
                0
            } else {
                self.width as usize * self.height as usize * self.format.bytes_per_pixel()
            }
    }

    pub fn write(&self, out: &mut [u8]) {
        out[..4].copy_from_slice(&MAGIC);
        out[4] = VERSION;
        out[5] = self.format as u8;
        let flags = if self.unchanged { FLAG_UNCHANGED } else { 0 };
        out[6..8].copy_from_slice(&flags.to_le_bytes());
        out[8..16].copy_from_slice(&self.seq.to_le_bytes());
        out[16..24].copy_from_slice(&self.capture_us.to_le_bytes());
        out[24..28].copy_from_slice(&self.width.to_le_bytes());
        out[28..32].copy_from_slice(&self.height.to_le_bytes());
        out[32..40].copy_from_slice(&self.checksum.to_le_bytes());
    }
}

const KIND: &str = "shm frame";

/// Parses a message; returns the header and the pixels (empty when unchanged).
pub fn parse(msg: &[u8]) -> Result<(FrameHeader, &[u8]), ProtoError> {
    if msg.len() < HEADER {
        return Err(ProtoError::Truncated { kind: KIND });
    }
    if msg[..4] != MAGIC {
        return Err(ProtoError::InvalidField {
            field: "magic",
            why: "not FWSF",
        });
    }
    let u16_at = |o: usize| u16::from_le_bytes([msg[o], msg[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes(msg[o..o + 4].try_into().expect("4 bytes"));
    let u64_at = |o: usize| u64::from_le_bytes(msg[o..o + 8].try_into().expect("8 bytes"));
    if msg[4] != VERSION {
        return Err(ProtoError::InvalidField {
            field: "version",
            why: "unsupported",
        });
    }
    let format = match msg[5] {
        0 => PixelFormat::Grey,
        1 => PixelFormat::Bgra,
        2 => PixelFormat::PlanarGDiff,
        _ => {
            return Err(ProtoError::InvalidField {
                field: "format",
                why: "unknown pixel format",
            })
        }
    };
    let flags = u16_at(6);
    if flags & !FLAG_UNCHANGED != 0 {
        return Err(ProtoError::InvalidField {
            field: "flags",
            why: "unknown bits",
        });
    }
    let h = FrameHeader {
        seq: u64_at(8),
        capture_us: u64_at(16),
        width: u32_at(24),
        height: u32_at(28),
        checksum: u64_at(32),
        unchanged: flags & FLAG_UNCHANGED != 0,
        format,
    };
    if h.width > MAX_SIDE || h.height > MAX_SIDE {
        return Err(ProtoError::InvalidField {
            field: "size",
            why: "larger than 16384",
        });
    }
    if msg.len() != h.message_len() {
        return Err(ProtoError::BadLength {
            kind: KIND,
            len: msg.len(),
            expected: h.message_len(),
        });
    }
    Ok((h, &msg[HEADER..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn layout_is_as_documented() {
        let h = FrameHeader {
            seq: 0x0102030405060708,
            capture_us: 9,
            width: 3,
            height: 2,
            checksum: 0xAABB,
            unchanged: false,
            format: PixelFormat::Grey,
        };
        let mut m = vec![0u8; h.message_len()];
        h.write(&mut m);
        assert_eq!(&m[..8], b"FWSF\x01\x00\x00\x00");
        assert_eq!(&m[8..16], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(&m[24..32], &[3, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(m.len(), 46);
        assert_eq!(parse(&m).unwrap(), (h, &[0u8; 6][..]));
    }

    proptest! {
        #[test]
        fn roundtrip(seq in any::<u64>(), t in any::<u64>(), w in 0u32..40, h in 0u32..40, sum in any::<u64>(), unchanged in any::<bool>(), bgra in any::<bool>()) {
            let format = if bgra { PixelFormat::Bgra } else { PixelFormat::Grey };
            let fh = FrameHeader { seq, capture_us: t, width: w, height: h, checksum: sum, unchanged, format };
            let mut m = vec![7u8; fh.message_len()];
            fh.write(&mut m);
            let (got, px) = parse(&m).unwrap();
            prop_assert_eq!(got, fh);
            prop_assert_eq!(px.len(), if unchanged { 0 } else { (w * h) as usize * format.bytes_per_pixel() });
        }

        #[test]
        fn garbage_is_an_error_not_a_panic(m in proptest::collection::vec(any::<u8>(), 0..200), keep in any::<bool>()) {
            let mut m = m;
            if keep && m.len() >= 8 { m[..8].copy_from_slice(b"FWSF\x01\x00\x00\x00"); }
            if let Ok((h, px)) = parse(&m) {
                prop_assert_eq!(m.len(), h.message_len());
                prop_assert_eq!(px.len(), m.len() - HEADER);
            }
        }
    }
}
