//! Row deltas: only the rows that changed, after an optional vertical shift of the picture.
//!
//! A full-frame XOR delta walks every byte of both pictures and LZ4 walks every byte of the
//! delta, even when one line of text changed; and a scrolled page XORs into dense noise. A
//! row delta hashes each row once, finds the shift that makes most rows line up (a scroll),
//! and carries only the rows that still differ. The viewer moves its rows and XORs those few.
//!
//! Payload layout (before the block codec is applied to the row data):
//! `dy:i32, nranges:u32, nranges × (y0:u32, rows:u32)`, then one compressed block holding the
//! XOR of each listed row with the shifted reference, rows in order. After the shift, row `y`
//! of the reference is old row `y + dy` when that exists, else old row `y`.

use std::collections::HashMap;

use crate::block::{BlockCodec, CodecError};

pub use crate::checksum::row_hashes;

/// What a row delta will carry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RowPlan {
    pub dy: i32,
    /// (first row, row count), ascending and disjoint.
    pub ranges: Vec<(u32, u32)>,
}

impl RowPlan {
    pub fn rows(&self) -> usize {
        self.ranges.iter().map(|r| r.1 as usize).sum()
    }
    pub fn is_unchanged(&self) -> bool {
        self.dy == 0 && self.ranges.is_empty()
    }
}

fn source_row(y: usize, dy: i32, h: usize) -> usize {
    let s = y as i64 + dy as i64;
    if s >= 0 && (s as usize) < h {
        s as usize
    } else {
        y
    }
}

fn matches(prev: &[u64], cur: &[u64], dy: i32) -> usize {
    (0..cur.len())
        .filter(|&y| cur[y] == prev[source_row(y, dy, cur.len())])
        .count()
}

/// Chooses the shift and the rows to send. Shift candidates come from rows whose content
/// appears exactly once in the previous picture (blank rows would vote for anything).
pub fn plan(prev: &[u64], cur: &[u64]) -> RowPlan {
    assert_eq!(
        prev.len(),
        cur.len(),
        "row hashes of pictures of different heights"
    );
    let h = cur.len();
    let mut once: HashMap<u64, Option<usize>> = HashMap::with_capacity(h);
    for (y, &k) in prev.iter().enumerate() {
        once.entry(k).and_modify(|v| *v = None).or_insert(Some(y));
    }
    let mut votes: HashMap<i32, usize> = HashMap::new();
    for (y, k) in cur.iter().enumerate() {
        if let Some(Some(src)) = once.get(k) {
            if *src != y {
                *votes.entry(*src as i32 - y as i32).or_default() += 1;
            }
        }
    }
    let mut dy = 0;
    if let Some((&cand, &n)) = votes.iter().max_by_key(|(d, n)| (**n, -d.abs())) {
        if n >= 4 && matches(prev, cur, cand) > matches(prev, cur, 0) {
            dy = cand;
        }
    }
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for y in 0..h {
        if cur[y] != prev[source_row(y, dy, h)] {
            match ranges.last_mut() {
                Some((y0, n)) if (*y0 + *n) as usize == y => *n += 1,
                _ => ranges.push((y as u32, 1)),
            }
        }
    }
    RowPlan { dy, ranges }
}

/// Shifts `pic` in place as the plan's `dy` says. Works on pixels and, with `width` 1, on a
/// picture's row hashes.
pub fn shift_rows<T: Copy>(pic: &mut [T], width: usize, dy: i32) {
    if width == 0 {
        return;
    }
    let h = pic.len() / width;
    let d = dy.unsigned_abs() as usize;
    if d == 0 || d >= h {
        return;
    }
    if dy > 0 {
        pic.copy_within(d * width.., 0);
    } else {
        pic.copy_within(..(h - d) * width, d * width);
    }
}

/// Encodes the row delta of `cur` against `prev` into `out`. `scratch` is reused.
pub fn encode(
    prev: &[u8],
    cur: &[u8],
    width: usize,
    plan: &RowPlan,
    codec: BlockCodec,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<(), CodecError> {
    let h = cur.len() / width;
    scratch.clear();
    for &(y0, n) in &plan.ranges {
        for y in y0 as usize..(y0 + n) as usize {
            let s = source_row(y, plan.dy, h);
            let (c, p) = (
                &cur[y * width..(y + 1) * width],
                &prev[s * width..(s + 1) * width],
            );
            scratch.extend(c.iter().zip(p).map(|(a, b)| a ^ b));
        }
    }
    let mut block = Vec::new();
    codec.compress(scratch, &mut block)?;
    out.clear();
    out.extend_from_slice(&plan.dy.to_le_bytes());
    out.extend_from_slice(&(plan.ranges.len() as u32).to_le_bytes());
    for &(y0, n) in &plan.ranges {
        out.extend_from_slice(&y0.to_le_bytes());
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(&block);
    Ok(())
}

/// A parsed row-delta header; the row data follows at `data_offset`.
#[derive(Debug, PartialEq, Eq)]
pub struct RowHeader {
    pub plan: RowPlan,
    pub data_offset: usize,
}

/// Parses and bounds-checks a row-delta header for a picture of `height` rows: the ranges must
/// be ascending, disjoint and inside the picture, and the shift smaller than the picture.
pub fn parse_header(payload: &[u8], height: usize) -> Result<RowHeader, CodecError> {
    let bad = |why: &str| CodecError::Corrupt(format!("row delta: {why}"));
    let u32_at = |o: usize| {
        payload
            .get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
            .ok_or_else(|| bad("truncated header"))
    };
    let dy = u32_at(0)? as i32;
    if dy.unsigned_abs() as usize >= height.max(1) {
        return Err(bad("shift larger than the picture"));
    }
    let n = u32_at(4)? as usize;
    if n > height {
        return Err(bad("more ranges than rows"));
    }
    let mut ranges = Vec::with_capacity(n);
    let mut next = 0usize;
    for i in 0..n {
        let (y0, rows) = (u32_at(8 + i * 8)? as usize, u32_at(12 + i * 8)? as usize);
        if rows == 0 || y0 < next || y0 + rows > height {
            return Err(bad("ranges out of order or outside the picture"));
        }
        next = y0 + rows;
        ranges.push((y0 as u32, rows as u32));
    }
    Ok(RowHeader {
        plan: RowPlan { dy, ranges },
        data_offset: 8 + n * 8,
    })
}

/// Applies decoded row data (`data`, the XOR rows in order) to `pic` after shifting it.
pub fn apply(pic: &mut [u8], width: usize, plan: &RowPlan, data: &[u8]) {
    shift_rows(pic, width, plan.dy);
    let mut off = 0;
    for &(y0, n) in &plan.ranges {
        let len = n as usize * width;
        let dst = &mut pic[y0 as usize * width..y0 as usize * width + len];
        for (d, x) in dst.iter_mut().zip(&data[off..off + len]) {
            *d ^= x;
        }
        off += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn roundtrip(prev: &[u8], cur: &[u8], w: usize) -> RowPlan {
        let (mut ph, mut ch) = (Vec::new(), Vec::new());
        row_hashes(prev, w, &mut ph);
        row_hashes(cur, w, &mut ch);
        let p = plan(&ph, &ch);
        let (mut scratch, mut out) = (Vec::new(), Vec::new());
        encode(prev, cur, w, &p, BlockCodec::Lz4, &mut scratch, &mut out).unwrap();
        let hdr = parse_header(&out, cur.len() / w).unwrap();
        assert_eq!(hdr.plan, p);
        let mut data = vec![0u8; p.rows() * w];
        BlockCodec::Lz4
            .decompress(&out[hdr.data_offset..], &mut data)
            .unwrap();
        let mut pic = prev.to_vec();
        apply(&mut pic, w, &hdr.plan, &data);
        assert_eq!(pic, cur);
        p
    }

    fn page(w: usize, h: usize, seed: u64) -> Vec<u8> {
        (0..w * h)
            .map(|i| (crate::checksum::row_hash(&((i as u64 / 3) ^ seed).to_le_bytes()) % 7) as u8)
            .collect()
    }

    #[test]
    fn a_scroll_is_a_shift_plus_the_exposed_rows() {
        let (w, h) = (32, 40);
        let prev = page(w, h, 1);
        let mut cur = vec![9u8; w * h];
        cur[..w * (h - 3)].copy_from_slice(&prev[w * 3..]);
        let p = roundtrip(&prev, &cur, w);
        assert_eq!(p.dy, 3);
        assert_eq!(p.ranges, vec![(37, 3)]);
    }

    #[test]
    fn one_changed_row_is_one_range() {
        let (w, h) = (16, 20);
        let prev = page(w, h, 2);
        let mut cur = prev.clone();
        cur[5 * w + 3] ^= 1;
        let p = roundtrip(&prev, &cur, w);
        assert_eq!((p.dy, p.ranges), (0, vec![(5, 1)]));
        assert!(roundtrip(&prev, &prev, w).is_unchanged());
    }

    #[test]
    fn hostile_headers_are_rejected() {
        let mk = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        assert!(parse_header(&mk(&[50, 0]), 10).is_err());
        assert!(parse_header(&mk(&[0, 11]), 10).is_err());
        assert!(parse_header(&mk(&[0, 2, 5, 2, 4, 1]), 10).is_err()); // overlapping
        assert!(parse_header(&mk(&[0, 1, 8, 3]), 10).is_err()); // past the bottom
        assert!(parse_header(&mk(&[0, 1, 3]), 10).is_err()); // truncated
        assert!(parse_header(&mk(&[(-2i32) as u32, 1, 3, 2]), 10).is_ok());
    }

    proptest! {
        #[test]
        fn any_pair_of_pictures_roundtrips(seed in any::<u64>(), shift in -6i32..6, edits in proptest::collection::vec((0usize..24, 0usize..8, any::<u8>()), 0..10)) {
            let (w, h) = (8, 24);
            let prev = page(w, h, seed);
            let mut cur = prev.clone();
            shift_rows(&mut cur, w, shift);
            for (y, x, v) in edits { cur[y * w + x] = v; }
            roundtrip(&prev, &cur, w);
        }

        #[test]
        fn garbage_headers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), h in 0usize..50) {
            let _ = parse_header(&bytes, h);
        }
    }
}
