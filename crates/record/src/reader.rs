//! Records in, pictures out. Every length is checked against what a picture of the header's
//! size can need before anything is allocated or read.

use std::io::Read;

use framewire_capture::Damage;
use framewire_codec::block::BlockCodec;

use crate::format::{Header, RecordError, ALL_ROWS, HEADER_LEN};
use crate::writer::io;

/// One picture read back.
pub struct Frame<'a> {
    pub capture_us: u64,
    pub damage: Damage,
    /// B G R A, rows packed: the whole picture as it was captured.
    pub bgra: &'a [u8],
}

pub struct Reader<R: Read> {
    input: R,
    header: Header,
    picture: Vec<u8>,
    record: Vec<u8>,
    xor: Vec<u8>,
    /// The damage of the last picture read.
    damage: Damage,
}

impl<R: Read> Reader<R> {
    /// Reads and checks the header.
    pub fn new(mut input: R) -> Result<Self, RecordError> {
        let mut h = [0u8; HEADER_LEN];
        read_full(&mut input, &mut h, "header")?;
        let header = Header::parse(&h)?;
        Ok(Reader {
            input,
            header,
            picture: vec![0; header.stride() * header.height as usize],
            record: Vec::new(),
            xor: Vec::new(),
            damage: Damage::All,
        })
    }

    pub fn header(&self) -> Header {
        self.header
    }

    /// The last picture read (zeros before the first).
    pub fn picture(&self) -> &[u8] {
        &self.picture
    }

    /// The damage of the last picture read.
    pub fn damage(&self) -> &Damage {
        &self.damage
    }

    /// The next picture, or `None` at the end of the recording.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, RecordError> {
        let mut len = [0u8; 4];
        match self.input.read(&mut len[..1]).map_err(io)? {
            0 => return Ok(None),
            _ => read_full(&mut self.input, &mut len[1..], "record length")?,
        }
        let len = u32::from_le_bytes(len) as usize;
        let max = self.header.max_record();
        if len > max {
            return Err(RecordError::RecordTooLong { got: len, max });
        }
        if len < 12 {
            return Err(RecordError::Truncated("record"));
        }
        self.record.resize(len, 0);
        read_full(&mut self.input, &mut self.record, "record")?;
        let capture_us = u64::from_le_bytes(self.record[..8].try_into().expect("8 bytes"));
        let n = u32::from_le_bytes(self.record[8..12].try_into().expect("4 bytes"));
        let (h, stride) = (self.header.height, self.header.stride());
        let (damage, rows, payload) = if n == ALL_ROWS {
            (Damage::All, vec![(0, h)], &self.record[12..])
        } else {
            let rows = ranges(&self.record[12..], n, h)?;
            let payload = &self.record[12 + 8 * rows.len()..];
            (Damage::Rows(rows.clone()), rows, payload)
        };
        let raw: usize = rows.iter().map(|(a, b)| (b - a) as usize * stride).sum();
        self.xor.resize(raw, 0);
        if raw == 0 {
            if !payload.is_empty() {
                return Err(RecordError::Corrupt("pixels for no damaged row".into()));
            }
        } else {
            BlockCodec::Lz4
                .decompress(payload, &mut self.xor)
                .map_err(|e| RecordError::Corrupt(e.to_string()))?;
        }
        let mut at = 0;
        for (y0, y1) in rows {
            let (a, b) = (y0 as usize * stride, y1 as usize * stride);
            for (p, x) in self.picture[a..b]
                .iter_mut()
                .zip(&self.xor[at..at + (b - a)])
            {
                *p ^= x;
            }
            at += b - a;
        }
        self.damage = damage.clone();
        Ok(Some(Frame {
            capture_us,
            damage,
            bgra: &self.picture,
        }))
    }
}

/// `n` row ranges from `b`: sorted, disjoint, non-empty, within `height`.
fn ranges(b: &[u8], n: u32, height: u32) -> Result<Vec<(u32, u32)>, RecordError> {
    if n > height {
        return Err(RecordError::BadDamage("more ranges than rows"));
    }
    let n = n as usize;
    if b.len() < 8 * n {
        return Err(RecordError::Truncated("damage"));
    }
    let mut out = Vec::with_capacity(n);
    let mut end = 0;
    for c in b[..8 * n].chunks_exact(8) {
        let y0 = u32::from_le_bytes(c[..4].try_into().expect("4 bytes"));
        let y1 = u32::from_le_bytes(c[4..].try_into().expect("4 bytes"));
        if y0 >= y1 || y1 > height {
            return Err(RecordError::BadDamage(
                "an empty range or one beyond the picture",
            ));
        }
        if y0 < end {
            return Err(RecordError::BadDamage("ranges out of order or overlapping"));
        }
        end = y1;
        out.push((y0, y1));
    }
    Ok(out)
}

fn read_full<R: Read>(r: &mut R, buf: &mut [u8], what: &'static str) -> Result<(), RecordError> {
    r.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => RecordError::Truncated(what),
        _ => io(e),
    })
}
