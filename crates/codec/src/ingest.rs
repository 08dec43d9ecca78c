//! The host's first stage: a captured BGRA/RGBA picture becomes a grey picture plus its row
//! hashes, in one pass over the source, band by band, so each band of grey rows is hashed while
//! it is still in L1 instead of being read back from L3 by a second pass. With a damage hint
//! only the damaged rows are converted and hashed; the rest are the last picture's.

use crate::checksum::row_hash;
use crate::grey::{to_grey, PixelOrder};

/// Rows converted before they are hashed: 8 rows of 1600 pixels are 51 KB of source and
/// 12.8 KB of grey, so the grey is hashed from L1/L2.
const BAND_ROWS: usize = 8;

/// The previous picture and its row hashes, which undamaged rows are copied from.
pub struct Previous<'a> {
    pub grey: &'a [u8],
    pub hashes: &'a [u64],
}

/// Converts `src` (4 bytes per pixel, `width` pixels per row) into `dst` and writes every row's
/// hash into `hashes`. With `prev` and `damage` (half-open row ranges that may differ from
/// `prev`), only damaged rows are converted; the caller guarantees the others did not change.
pub fn ingest(
    src: &[u8],
    order: PixelOrder,
    width: usize,
    prev: Option<Previous<'_>>,
    damage: Option<&[(u32, u32)]>,
    dst: &mut [u8],
    hashes: &mut Vec<u64>,
) {
    assert_eq!(src.len(), dst.len() * 4, "4 source bytes per grey pixel");
    if width == 0 {
        hashes.clear();
        return;
    }
    let h = dst.len() / width;
    let usable = prev.filter(|p| p.grey.len() == dst.len() && p.hashes.len() == h);
    match (usable, damage) {
        (Some(p), Some(damage)) => {
            dst.copy_from_slice(p.grey);
            hashes.clear();
            hashes.extend_from_slice(p.hashes);
            for &(y0, y1) in damage {
                let (y0, y1) = ((y0 as usize).min(h), (y1 as usize).min(h));
                convert_rows(src, order, width, y0, y1, dst, hashes);
            }
        }
        _ => {
            hashes.clear();
            hashes.resize(h, 0);
            convert_rows(src, order, width, 0, h, dst, hashes);
        }
    }
}

fn convert_rows(
    src: &[u8],
    order: PixelOrder,
    w: usize,
    y0: usize,
    y1: usize,
    dst: &mut [u8],
    hashes: &mut [u64],
) {
    let mut y = y0;
    while y < y1 {
        let end = (y + BAND_ROWS).min(y1);
        let band = &mut dst[y * w..end * w];
        to_grey(&src[y * w * 4..end * w * 4], order, band);
        for (h, row) in hashes[y..end].iter_mut().zip(band.chunks_exact(w)) {
            *h = row_hash(row);
        }
        y = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::row_hashes;
    use crate::grey::to_grey_scalar;
    use proptest::prelude::*;

    proptest! {
        /// With or without a (correct) damage hint, the grey picture is the reference
        /// conversion and the hashes are the rows' hashes.
        #[test]
        fn equals_whole_conversion(
            w in 1usize..40,
            h in 1usize..40,
            seed in any::<u64>(),
            edits in proptest::collection::vec((0usize..40, 0usize..40, any::<u8>()), 0..20),
        ) {
            let mut src: Vec<u8> = (0..w * h * 4).map(|i| (seed.wrapping_mul(i as u64 + 1) >> 13) as u8).collect();
            let mut prev = vec![0u8; w * h];
            let mut prev_hashes = Vec::new();
            ingest(&src, PixelOrder::Bgra, w, None, None, &mut prev, &mut prev_hashes);
            let mut damaged = vec![false; h];
            for &(x, y, v) in &edits {
                let (x, y) = (x % w, y % h);
                src[(y * w + x) * 4 + 1] = v;
                damaged[y] = true;
            }
            let damage: Vec<(u32, u32)> = (0..h as u32).filter(|&y| damaged[y as usize]).map(|y| (y, y + 1)).collect();
            let (mut grey, mut hashes) = (vec![0u8; w * h], Vec::new());
            let p = Previous { grey: &prev, hashes: &prev_hashes };
            ingest(&src, PixelOrder::Bgra, w, Some(p), Some(&damage), &mut grey, &mut hashes);
            let mut expect = vec![0u8; w * h];
            to_grey_scalar(&src, PixelOrder::Bgra, &mut expect);
            prop_assert_eq!(&grey, &expect);
            let mut expect_hashes = Vec::new();
            row_hashes(&expect, w, &mut expect_hashes);
            prop_assert_eq!(&hashes, &expect_hashes);
        }
    }
}
