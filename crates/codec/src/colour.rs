//! Lossless colour as three 8-bit planes stacked in one picture: G, then R − G, then B − G
//! (mod 256), each `width` × `height`, so the picture is `width` × `3 × height` bytes.
//!
//! Why these planes: the transform is exact and its inverse is two additions, which a shader
//! does per pixel from three texels. Screen content is mostly grey (text, UI chrome), where
//! R − G and B − G are all zeros and compress to almost nothing; coloured areas keep their
//! structure in G. Measured on the real-content corpus (`bench codec --input`, the colour
//! table) against planar R, G, B with the same encoder: bytes per changed picture 10.4 kB
//! against 13.9 kB on the browser scroll, 5.8 against 8.8 kB on the window drag, 90 against
//! 112 B typing, 3.6 against 3.9 kB on the terminal; only ffmpeg's saturated colour bars were
//! smaller as R, G, B (314 against 343 kB). YCoCg-R would decorrelate a little better but
//! needs 9-bit chroma, which no longer fits a byte plane.
//!
//! Stacking the planes makes a colour picture a taller grey picture: row hashes, the checksum,
//! row deltas, moved-rectangle deltas and both block codecs apply unchanged, and a picture's
//! checksum covers its colour exactly (the transform is a bijection).

use crate::checksum::row_hash;
use crate::grey::PixelOrder;
use crate::ingest::{Previous, Source};

pub const PLANES: usize = 3;

/// One row of pixels into its three plane rows (`ri`, `bi`: where R and B sit in a pixel).
fn split_row(s: &[u8], ri: usize, bi: usize, g: &mut [u8], r: &mut [u8], b: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present; the kernel reads and writes within the slices given.
            let done = unsafe { split_avx2(s, ri == 0, g, r, b) };
            return split_scalar(
                &s[done * 4..],
                ri,
                bi,
                &mut g[done..],
                &mut r[done..],
                &mut b[done..],
            );
        }
    }
    split_scalar(s, ri, bi, g, r, b)
}

fn split_scalar(s: &[u8], ri: usize, bi: usize, g: &mut [u8], r: &mut [u8], b: &mut [u8]) {
    for (i, px) in s.chunks_exact(4).enumerate() {
        g[i] = px[1];
        r[i] = px[ri].wrapping_sub(px[1]);
        b[i] = px[bi].wrapping_sub(px[1]);
    }
}

/// 8 pixels at a time: a byte shuffle groups each 128-bit lane's four pixels by channel, a
/// 32-bit permute puts the eight B, G and R bytes in 64-bit groups, one byte subtraction
/// against G repeated makes B − G and R − G, and three 64-bit stores write the planes. (The
/// compiler kept the plain loop scalar, at about 2 ns a pixel.) Returns the pixels done.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn split_avx2(s: &[u8], rgba: bool, g: &mut [u8], r: &mut [u8], b: &mut [u8]) -> usize {
    use std::arch::x86_64::*;
    let n = (s.len() / 4).min(g.len()).min(r.len()).min(b.len()) / 8 * 8;
    // Per lane: bytes 0-3 the four first channels (B, or R for RGBA), 4-7 G, 8-11 the third.
    let group = _mm256_setr_epi8(
        0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10,
        14, 3, 7, 11, 15,
    );
    let by_channel = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let greens = _mm256_setr_epi32(1, 5, 1, 5, 1, 5, 1, 5);
    let mut i = 0;
    while i < n {
        let px = _mm256_loadu_si256(s.as_ptr().add(i * 4) as *const __m256i);
        let grouped = _mm256_shuffle_epi8(px, group);
        let planes = _mm256_permutevar8x32_epi32(grouped, by_channel);
        let g8 = _mm256_permutevar8x32_epi32(grouped, greens);
        let diff = _mm256_sub_epi8(planes, g8);
        let lo = _mm256_castsi256_si128(diff);
        let hi = _mm256_extracti128_si256::<1>(diff);
        let gq = _mm256_extract_epi64::<1>(planes);
        let (first, third) = (_mm_cvtsi128_si64(lo), _mm_cvtsi128_si64(hi));
        let (to_r, to_b) = if rgba { (first, third) } else { (third, first) };
        std::ptr::write_unaligned(g.as_mut_ptr().add(i) as *mut i64, gq);
        std::ptr::write_unaligned(r.as_mut_ptr().add(i) as *mut i64, to_r);
        std::ptr::write_unaligned(b.as_mut_ptr().add(i) as *mut i64, to_b);
        i += 8;
    }
    n
}

/// Converts source rows `y0..y1` (4 bytes per pixel, `order`) into the three planes of `dst`
/// (`width` × `3 × height`), and hashes the rows it wrote.
#[allow(clippy::too_many_arguments)]
fn convert_rows(
    src: &[u8],
    order: PixelOrder,
    width: usize,
    height: usize,
    y0: usize,
    y1: usize,
    dst: &mut [u8],
    hashes: &mut [u64],
) {
    let (ri, bi) = match order {
        PixelOrder::Bgra => (2, 0),
        PixelOrder::Rgba => (0, 2),
    };
    let plane = width * height;
    let (gp, rest) = dst.split_at_mut(plane);
    let (rp, bp) = rest.split_at_mut(plane);
    for y in y0..y1 {
        let s = &src[y * width * 4..(y + 1) * width * 4];
        let row = y * width..(y + 1) * width;
        let (g, r, b) = (&mut gp[row.clone()], &mut rp[row.clone()], &mut bp[row]);
        split_row(s, ri, bi, g, r, b);
        for (k, p) in [&*g, &*r, &*b].into_iter().enumerate() {
            hashes[k * height + y] = row_hash(p);
        }
    }
}

/// As [`crate::ingest::ingest`] for colour: `dst` gets the planes of `src` and `hashes` the
/// hash of each of its `3 × height` rows. With `prev` (the last planes and hashes) and `damage`
/// (sorted half-open row ranges of the source), only damaged rows are converted.
pub fn ingest_planes(
    src: Source<'_>,
    prev: Option<Previous<'_>>,
    damage: Option<&[(u32, u32)]>,
    dst: &mut [u8],
    hashes: &mut Vec<u64>,
) {
    let (order, width) = (src.order, src.width);
    let src = src.bytes;
    assert_eq!(
        src.len() * PLANES,
        dst.len() * 4,
        "three plane bytes per pixel"
    );
    if width == 0 {
        hashes.clear();
        return;
    }
    let h = src.len() / 4 / width;
    let usable = prev.filter(|p| p.grey.len() == dst.len() && p.hashes.len() == PLANES * h);
    match (usable, damage) {
        (Some(p), Some(damage)) => {
            // Undamaged rows are the last picture's; damaged ones are written below.
            for k in 0..PLANES {
                let base = k * h * width;
                crate::ingest::copy_undamaged(
                    &p.grey[base..base + h * width],
                    &mut dst[base..base + h * width],
                    width,
                    damage,
                );
            }
            hashes.clear();
            hashes.extend_from_slice(p.hashes);
            for &(y0, y1) in damage {
                let (y0, y1) = ((y0 as usize).min(h), (y1 as usize).min(h));
                convert_rows(src, order, width, h, y0, y1, dst, hashes);
            }
        }
        _ => {
            hashes.clear();
            hashes.resize(PLANES * h, 0);
            convert_rows(src, order, width, h, 0, h, dst, hashes);
        }
    }
}

/// The planes of a whole picture (tests and benchmarks).
pub fn to_planes(src: &[u8], order: PixelOrder, width: usize, dst: &mut Vec<u8>) {
    dst.resize(src.len() / 4 * PLANES, 0);
    let mut hashes = Vec::new();
    ingest_planes(Source::new(src, order, width), None, None, dst, &mut hashes);
}

/// Back to B G R A (alpha 255): what a viewer draws. `rows(k)` gives row `k` of the stacked
/// picture (a viewer's ring keeps rows out of order).
pub fn planes_to_bgra<'a>(
    rows: impl Fn(usize) -> &'a [u8],
    width: usize,
    height: usize,
    out: &mut Vec<u8>,
) {
    out.resize(width * height * 4, 0);
    planes_into_bgra(rows, width, height, out)
}

/// As [`planes_to_bgra`], into a buffer of exactly `width × height × 4` bytes.
pub fn planes_into_bgra<'a>(
    rows: impl Fn(usize) -> &'a [u8],
    width: usize,
    height: usize,
    out: &mut [u8],
) {
    for y in 0..height {
        let (g, r, b) = (rows(y), rows(height + y), rows(2 * height + y));
        let o = &mut out[y * width * 4..(y + 1) * width * 4];
        for ((((px, &g), &r), &b), _) in o.chunks_exact_mut(4).zip(g).zip(r).zip(b).zip(0..width) {
            px[0] = b.wrapping_add(g);
            px[1] = g;
            px[2] = r.wrapping_add(g);
            px[3] = 255;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transform_is_exact_both_ways() {
        let (w, h) = (7usize, 5usize);
        let src: Vec<u8> = (0..w * h * 4)
            .map(|i| {
                if i % 4 == 3 {
                    255
                } else {
                    (i * 97 % 256) as u8
                }
            })
            .collect();
        let mut planes = Vec::new();
        to_planes(&src, PixelOrder::Bgra, w, &mut planes);
        assert_eq!(planes.len(), w * h * 3);
        // Pixel 0: B G R = src[0], src[1], src[2].
        assert_eq!(planes[0], src[1]);
        assert_eq!(planes[w * h], src[2].wrapping_sub(src[1]));
        assert_eq!(planes[2 * w * h], src[0].wrapping_sub(src[1]));
        let mut back = Vec::new();
        planes_to_bgra(|k| &planes[k * w..(k + 1) * w], w, h, &mut back);
        assert_eq!(back, src);
    }

    #[test]
    fn the_vector_kernel_equals_the_scalar_one_in_both_orders() {
        for width in 0..41usize {
            let src: Vec<u8> = (0..width * 4).map(|i| (i * 89 + width * 7) as u8).collect();
            for (ri, bi) in [(2, 0), (0, 2)] {
                let mut want = [vec![0u8; width], vec![0u8; width], vec![0u8; width]];
                let [g, r, b] = &mut want;
                split_scalar(&src, ri, bi, g, r, b);
                let mut got = [vec![1u8; width], vec![1u8; width], vec![1u8; width]];
                let [g, r, b] = &mut got;
                split_row(&src, ri, bi, g, r, b);
                assert_eq!(got, want, "width {width}, R at {ri}");
            }
        }
    }

    #[test]
    fn damaged_rows_only_equal_a_whole_conversion() {
        let (w, h) = (9usize, 8usize);
        let a: Vec<u8> = (0..w * h * 4).map(|i| (i * 31 % 251) as u8).collect();
        let mut b = a.clone();
        for x in &mut b[3 * w * 4..5 * w * 4] {
            *x = x.wrapping_add(77);
        }
        let (mut pa, mut ha) = (vec![0u8; w * h * 3], Vec::new());
        ingest_planes(
            Source::new(&a, PixelOrder::Bgra, w),
            None,
            None,
            &mut pa,
            &mut ha,
        );
        let (mut pb, mut hb) = (vec![0u8; w * h * 3], Vec::new());
        let prev = Previous {
            grey: &pa,
            hashes: &ha,
        };
        ingest_planes(
            Source::new(&b, PixelOrder::Bgra, w),
            Some(prev),
            Some(&[(3, 5)]),
            &mut pb,
            &mut hb,
        );
        let (mut whole, mut hw) = (vec![0u8; w * h * 3], Vec::new());
        ingest_planes(
            Source::new(&b, PixelOrder::Bgra, w),
            None,
            None,
            &mut whole,
            &mut hw,
        );
        assert_eq!(pb, whole);
        assert_eq!(hb, hw);
    }
}
