//! The host's first stage: a captured BGRA/RGBA picture becomes a grey picture plus its row
//! hashes, in one pass over the source, band by band, so each band of grey rows is hashed while
//! it is still in L1 instead of being read back from L3 by a second pass. With a damage hint
//! only the damaged rows are converted and hashed; the rest are the last picture's.
//!
//! With display tuning on ([`crate::tune`]), the untuned grey is kept too ([`Tuned`]): a
//! damaged row is converted into it, and then that row and its two neighbours (sharpen reads
//! them) are tuned and hashed.

use crate::checksum::row_hash;
use crate::grey::{to_grey, PixelOrder};
use crate::tune::Tuner;

/// Rows converted before they are hashed: 8 rows of 1600 pixels are 51 KB of source and
/// 12.8 KB of grey, so the grey is hashed from L1/L2.
const BAND_ROWS: usize = 8;

/// The previous picture and its row hashes, which undamaged rows are copied from.
pub struct Previous<'a> {
    pub grey: &'a [u8],
    pub hashes: &'a [u64],
}

/// A captured picture: 4 bytes per pixel in `order`, `width` pixels per row.
#[derive(Clone, Copy)]
pub struct Source<'a> {
    pub bytes: &'a [u8],
    pub order: PixelOrder,
    pub width: usize,
}

impl<'a> Source<'a> {
    pub fn new(bytes: &'a [u8], order: PixelOrder, width: usize) -> Source<'a> {
        Source {
            bytes,
            order,
            width,
        }
    }
}

/// Display tuning's state between pictures: the tuner and the untuned grey picture (which the
/// sharpen of a damaged row's neighbours reads).
pub struct Tuned {
    tuner: Tuner,
    raw: Vec<u8>,
    /// `raw` holds the whole last picture of this width (false until a full conversion).
    raw_width: Option<usize>,
}

impl Tuned {
    pub fn new(tuner: Tuner) -> Tuned {
        Tuned {
            tuner,
            raw: Vec::new(),
            raw_width: None,
        }
    }

    pub fn tuner(&self) -> &Tuner {
        &self.tuner
    }
}

/// Converts `src` into `dst` and writes every row's hash into `hashes`. With `prev` and
/// `damage` (half-open row ranges that may differ from `prev`, sorted, as
/// `Damage::merged` gives them), only damaged rows are converted; the caller guarantees the others did not change. `prev` must have been made with
/// the same tuning; after a tuning change pass `damage: None`.
pub fn ingest(
    src: Source<'_>,
    prev: Option<Previous<'_>>,
    damage: Option<&[(u32, u32)]>,
    tune: Option<&mut Tuned>,
    dst: &mut [u8],
    hashes: &mut Vec<u64>,
) {
    let Source {
        bytes: src,
        order,
        width,
    } = src;
    assert_eq!(src.len(), dst.len() * 4, "4 source bytes per grey pixel");
    if width == 0 {
        hashes.clear();
        return;
    }
    let h = dst.len() / width;
    let usable = prev.filter(|p| p.grey.len() == dst.len() && p.hashes.len() == h);
    if let Some(t) = tune.filter(|t| !t.tuner.is_identity()) {
        return ingest_tuned(src, order, width, usable.zip(damage), t, dst, hashes);
    }
    match (usable, damage) {
        (Some(p), Some(damage)) => {
            copy_undamaged(p.grey, dst, width, damage);
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

/// The tuned path: damaged rows go into the untuned picture, then the damaged rows and their
/// neighbours are tuned into `dst` and hashed.
/// Copies the rows of `prev` outside `damage` (sorted half-open ranges) into `dst`: the rows a
/// damaged conversion does not write. A scroll damages every row, and then nothing is copied.
pub(crate) fn copy_undamaged(prev: &[u8], dst: &mut [u8], width: usize, damage: &[(u32, u32)]) {
    let h = dst.len() / width.max(1);
    let mut y = 0;
    for &(y0, y1) in damage {
        let (y0, y1) = ((y0 as usize).min(h), (y1 as usize).min(h));
        if y0 > y {
            dst[y * width..y0 * width].copy_from_slice(&prev[y * width..y0 * width]);
        }
        y = y.max(y1);
    }
    if y < h {
        dst[y * width..].copy_from_slice(&prev[y * width..]);
    }
}

fn ingest_tuned(
    src: &[u8],
    order: PixelOrder,
    w: usize,
    incremental: Option<(Previous<'_>, &[(u32, u32)])>,
    t: &mut Tuned,
    dst: &mut [u8],
    hashes: &mut Vec<u64>,
) {
    let h = dst.len() / w;
    let raw_ok = t.raw_width == Some(w) && t.raw.len() == dst.len();
    match incremental.filter(|_| raw_ok) {
        Some((p, damage)) => {
            dst.copy_from_slice(p.grey);
            hashes.clear();
            hashes.extend_from_slice(p.hashes);
            // First every damaged row into the untuned picture, then the tuning, whose rows
            // read their neighbours there.
            let clip = |&(y0, y1): &(u32, u32)| ((y0 as usize).min(h), (y1 as usize).min(h));
            for (y0, y1) in damage.iter().map(clip).filter(|(a, b)| a < b) {
                to_grey(
                    &src[y0 * w * 4..y1 * w * 4],
                    order,
                    &mut t.raw[y0 * w..y1 * w],
                );
            }
            let mut tuned_to = 0; // rows below this are already tuned by this call
            for (y0, y1) in damage.iter().map(clip).filter(|(a, b)| a < b) {
                // Ranges are sorted, so only the part past the last tuned row is new.
                let (a, b) = (y0.saturating_sub(1).max(tuned_to), (y1 + 1).min(h));
                tune_rows(&t.tuner, &t.raw, w, a, b, dst, hashes);
                tuned_to = tuned_to.max(b);
            }
        }
        None => {
            t.raw.resize(dst.len(), 0);
            to_grey(src, order, &mut t.raw);
            t.raw_width = Some(w);
            hashes.clear();
            hashes.resize(h, 0);
            tune_rows(&t.tuner, &t.raw, w, 0, h, dst, hashes);
        }
    }
}

fn tune_rows(
    tuner: &Tuner,
    raw: &[u8],
    w: usize,
    y0: usize,
    y1: usize,
    dst: &mut [u8],
    hashes: &mut [u64],
) {
    if y0 >= y1 {
        return;
    }
    tuner.rows(raw, w, y0, y1, dst);
    for (hash, row) in hashes[y0..y1]
        .iter_mut()
        .zip(dst[y0 * w..y1 * w].chunks_exact(w))
    {
        *hash = row_hash(row);
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
    use crate::tune::Tuning;
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
            ingest(Source::new(&src, PixelOrder::Bgra, w), None, None, None, &mut prev, &mut prev_hashes);
            let mut damaged = vec![false; h];
            for &(x, y, v) in &edits {
                let (x, y) = (x % w, y % h);
                src[(y * w + x) * 4 + 1] = v;
                damaged[y] = true;
            }
            let damage: Vec<(u32, u32)> = (0..h as u32).filter(|&y| damaged[y as usize]).map(|y| (y, y + 1)).collect();
            let (mut grey, mut hashes) = (vec![0u8; w * h], Vec::new());
            let p = Previous { grey: &prev, hashes: &prev_hashes };
            ingest(Source::new(&src, PixelOrder::Bgra, w), Some(p), Some(&damage), None, &mut grey, &mut hashes);
            let mut expect = vec![0u8; w * h];
            to_grey_scalar(&src, PixelOrder::Bgra, &mut expect);
            prop_assert_eq!(&grey, &expect);
            let mut expect_hashes = Vec::new();
            row_hashes(&expect, w, &mut expect_hashes);
            prop_assert_eq!(&hashes, &expect_hashes);
        }
        /// With tuning on, a damaged picture after a sequence of edits equals tuning the whole
        /// reference grey picture: neighbours of damaged rows are re-tuned, nothing else moves.
        #[test]
        fn tuned_equals_whole_tuning(
            w in 1usize..30,
            h in 1usize..30,
            seed in any::<u64>(),
            sharpen in 0u16..=200,
            contrast in 25u16..=400,
            rounds in proptest::collection::vec(
                proptest::collection::vec((0usize..30, 0usize..30, any::<u8>()), 0..8), 1..4),
        ) {
            let tuner = Tuner::new(Tuning { sharpen, contrast, gamma: 100 });
            let mut tuned = Tuned::new(tuner.clone());
            let mut src: Vec<u8> = (0..w * h * 4).map(|i| (seed.wrapping_mul(i as u64 + 1) >> 17) as u8).collect();
            let (mut grey, mut hashes) = (vec![0u8; w * h], Vec::new());
            ingest(Source::new(&src, PixelOrder::Rgba, w), None, None, Some(&mut tuned), &mut grey, &mut hashes);
            for edits in rounds {
                let mut damaged = vec![false; h];
                for &(x, y, v) in &edits {
                    let (x, y) = (x % w, y % h);
                    src[(y * w + x) * 4] = v;
                    damaged[y] = true;
                }
                let damage: Vec<(u32, u32)> = (0..h as u32).filter(|&y| damaged[y as usize]).map(|y| (y, y + 1)).collect();
                let (prev, prev_hashes) = (grey.clone(), hashes.clone());
                let p = Previous { grey: &prev, hashes: &prev_hashes };
                ingest(Source::new(&src, PixelOrder::Rgba, w), Some(p), Some(&damage), Some(&mut tuned), &mut grey, &mut hashes);
                let mut raw = vec![0u8; w * h];
                to_grey_scalar(&src, PixelOrder::Rgba, &mut raw);
                let mut expect = vec![0u8; w * h];
                tuner.rows(&raw, w, 0, h, &mut expect);
                prop_assert_eq!(&grey, &expect);
                let mut expect_hashes = Vec::new();
                row_hashes(&expect, w, &mut expect_hashes);
                prop_assert_eq!(&hashes, &expect_hashes);
            }
        }
    }
}
