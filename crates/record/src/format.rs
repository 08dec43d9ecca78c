//! The recording format: a 16-byte header, then one record per picture.
//!
//! ```text
//! header: magic "FWREC\0" (6) | version u16 | width u32 | height u32        (little-endian)
//! record: length u32 (bytes after this field)
//!         capture_us u64 (since the recording began)
//!         ranges u32 (0xFFFF_FFFF: every row) | ranges × (y0 u32, y1 u32)
//!         payload: LZ4 block of the damaged rows (width × 4 bytes each, B G R A), each byte
//!                  XORed with the same byte of the previous picture (zeros before the first)
//! ```
//!
//! Ranges are sorted, disjoint, non-empty and within the height (the writer merges what the
//! source reported). Unchanged bytes XOR to zeros, which LZ4 shrinks to almost nothing, and
//! rows outside the damage cost nothing at all.

use thiserror::Error;

pub const MAGIC: [u8; 6] = *b"FWREC\0";
pub const VERSION: u16 = 1;
pub const HEADER_LEN: usize = 16;
/// The `ranges` value that means every row.
pub const ALL_ROWS: u32 = u32::MAX;
/// The largest picture side a recording may have (as `--resolution` allows).
pub const MAX_SIDE: u32 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub width: u32,
    pub height: u32,
}

impl Header {
    pub fn to_bytes(self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..6].copy_from_slice(&MAGIC);
        b[6..8].copy_from_slice(&VERSION.to_le_bytes());
        b[8..12].copy_from_slice(&self.width.to_le_bytes());
        b[12..16].copy_from_slice(&self.height.to_le_bytes());
        b
    }

    pub fn parse(b: &[u8]) -> Result<Header, RecordError> {
        if b.len() < HEADER_LEN {
            return Err(RecordError::Truncated("header"));
        }
        if b[..6] != MAGIC {
            return Err(RecordError::NotARecording);
        }
        let version = u16::from_le_bytes([b[6], b[7]]);
        if version != VERSION {
            return Err(RecordError::Version(version));
        }
        let h = Header {
            width: u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")),
            height: u32::from_le_bytes(b[12..16].try_into().expect("4 bytes")),
        };
        h.check()?;
        Ok(h)
    }

    pub fn check(self) -> Result<(), RecordError> {
        if !(1..=MAX_SIDE).contains(&self.width) || !(1..=MAX_SIDE).contains(&self.height) {
            return Err(RecordError::Size(self.width, self.height));
        }
        Ok(())
    }

    /// Bytes of one row of pixels.
    pub fn stride(self) -> usize {
        self.width as usize * 4
    }

    /// The longest record a picture of this size can make: its times and ranges, and an LZ4
    /// block of every row that did not compress. Longer is refused before it is read.
    pub fn max_record(self) -> usize {
        let raw = self.stride() * self.height as usize;
        8 + 4 + 8 * self.height as usize + raw + raw / 255 + 16
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum RecordError {
    #[error("not a framewire recording (no FWREC header)")]
    NotARecording,
    #[error("recording format version {0}; this framewire reads version 1")]
    Version(u16),
    #[error("picture size {0}×{1} is outside 1..=4096")]
    Size(u32, u32),
    #[error("the recording ends inside a {0}")]
    Truncated(&'static str),
    #[error("a record says it is {got} bytes, more than a picture of this size can make ({max})")]
    RecordTooLong { got: usize, max: usize },
    #[error("bad damage in a record: {0}")]
    BadDamage(&'static str),
    #[error("a record's pixels are corrupt: {0}")]
    Corrupt(String),
    #[error("the picture is {got:?}, the recording {expected:?}")]
    WrongSize {
        got: (u32, u32),
        expected: (u32, u32),
    },
    #[error("{0}")]
    Io(String),
}
