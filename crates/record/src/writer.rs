//! Pictures in, records out.

use std::io::Write;

use framewire_capture::Damage;
use framewire_codec::block::BlockCodec;

use crate::format::{Header, RecordError, ALL_ROWS};

/// Writes a recording: the header at once, then a record per picture.
pub struct Writer<W: Write> {
    out: W,
    header: Header,
    /// The previous picture (zeros before the first).
    prev: Vec<u8>,
    xor: Vec<u8>,
    packed: Vec<u8>,
    record: Vec<u8>,
    frames: u64,
    bytes: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(mut out: W, header: Header) -> Result<Self, RecordError> {
        header.check()?;
        out.write_all(&header.to_bytes()).map_err(io)?;
        Ok(Writer {
            out,
            header,
            prev: vec![0; header.stride() * header.height as usize],
            xor: Vec::new(),
            packed: Vec::new(),
            record: Vec::new(),
            frames: 0,
            bytes: crate::format::HEADER_LEN as u64,
        })
    }

    /// Records one picture (B G R A, rows packed) captured `capture_us` after the recording
    /// began. Rows outside `damage` must be as in the previous picture: the damage is what the
    /// source reported, and the pipeline trusts it the same way.
    pub fn write(
        &mut self,
        capture_us: u64,
        bgra: &[u8],
        damage: &Damage,
    ) -> Result<(), RecordError> {
        let (w, h) = (self.header.width, self.header.height);
        let stride = self.header.stride();
        if bgra.len() != stride * h as usize {
            let rows = (bgra.len() / stride.max(1)) as u32;
            return Err(RecordError::WrongSize {
                got: (w, rows),
                expected: (w, h),
            });
        }
        let ranges = damage.merged(h);
        let rows: Vec<(u32, u32)> = ranges.clone().unwrap_or_else(|| vec![(0, h)]);
        self.xor.clear();
        for &(y0, y1) in &rows {
            let (a, b) = (y0 as usize * stride, y1 as usize * stride);
            self.xor
                .extend(bgra[a..b].iter().zip(&self.prev[a..b]).map(|(x, p)| x ^ p));
            self.prev[a..b].copy_from_slice(&bgra[a..b]);
        }
        self.packed.clear();
        if !self.xor.is_empty() {
            BlockCodec::Lz4
                .compress(&self.xor, &mut self.packed)
                .map_err(|e| RecordError::Corrupt(e.to_string()))?;
        }
        let r = &mut self.record;
        r.clear();
        let n = ranges.as_ref().map_or(0, Vec::len);
        let len = 8 + 4 + 8 * n + self.packed.len();
        r.extend_from_slice(&(len as u32).to_le_bytes());
        r.extend_from_slice(&capture_us.to_le_bytes());
        match &ranges {
            None => r.extend_from_slice(&ALL_ROWS.to_le_bytes()),
            Some(v) => {
                r.extend_from_slice(&(v.len() as u32).to_le_bytes());
                for &(y0, y1) in v {
                    r.extend_from_slice(&y0.to_le_bytes());
                    r.extend_from_slice(&y1.to_le_bytes());
                }
            }
        }
        r.extend_from_slice(&self.packed);
        self.out.write_all(r).map_err(io)?;
        self.frames += 1;
        self.bytes += r.len() as u64;
        Ok(())
    }

    /// Pictures written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Bytes written so far, header included.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Flushes, and gives the output back.
    pub fn finish(mut self) -> Result<W, RecordError> {
        self.out.flush().map_err(io)?;
        Ok(self.out)
    }
}

pub(crate) fn io(e: std::io::Error) -> RecordError {
    RecordError::Io(e.to_string())
}
