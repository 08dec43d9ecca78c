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

/// Which of a row's R − G and B − G plane rows came out all zeros (grey pixels throughout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Flat {
    r: bool,
    b: bool,
}

/// One row of pixels into its three plane rows (`ri`, `bi`: where R and B sit in a pixel).
fn split_row(s: &[u8], ri: usize, bi: usize, g: &mut [u8], r: &mut [u8], b: &mut [u8]) -> Flat {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present; the kernel reads and writes within the slices given.
            let (done, vec) = unsafe { split_avx2(s, ri == 0, g, r, b) };
            let tail = split_scalar(
                &s[done * 4..],
                ri,
                bi,
                &mut g[done..],
                &mut r[done..],
                &mut b[done..],
            );
            return Flat {
                r: vec.r && tail.r,
                b: vec.b && tail.b,
            };
        }
    }
    split_scalar(s, ri, bi, g, r, b)
}

fn split_scalar(s: &[u8], ri: usize, bi: usize, g: &mut [u8], r: &mut [u8], b: &mut [u8]) -> Flat {
    let (mut any_r, mut any_b) = (0u8, 0u8);
    for (i, px) in s.chunks_exact(4).enumerate() {
        g[i] = px[1];
        r[i] = px[ri].wrapping_sub(px[1]);
        b[i] = px[bi].wrapping_sub(px[1]);
        any_r |= r[i];
        any_b |= b[i];
    }
    Flat {
        r: any_r == 0,
        b: any_b == 0,
    }
}

/// Bytes ahead of the pixel being split that are asked for in advance.
#[cfg(target_arch = "x86_64")]
const PREFETCH: usize = 2048;

/// 8 pixels at a time: a byte shuffle groups each 128-bit lane's four pixels by channel, a
/// 32-bit permute puts the eight B, G and R bytes in 64-bit groups, one byte subtraction
/// against G repeated makes B − G and R − G, and three 64-bit stores write the planes. (The
/// compiler kept the plain loop scalar, at about 2 ns a pixel.) Returns the pixels done and
/// which of their R − G and B − G were all zeros.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn split_avx2(
    s: &[u8],
    rgba: bool,
    g: &mut [u8],
    r: &mut [u8],
    b: &mut [u8],
) -> (usize, Flat) {
    use std::arch::x86_64::*;
    let n = (s.len() / 4).min(g.len()).min(r.len()).min(b.len()) / 8 * 8;
    // Per lane: bytes 0-3 the four first channels (B, or R for RGBA), 4-7 G, 8-11 the third.
    let group = _mm256_setr_epi8(
        0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10,
        14, 3, 7, 11, 15,
    );
    let by_channel = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let greens = _mm256_setr_epi32(1, 5, 1, 5, 1, 5, 1, 5);
    let (mut any_r, mut any_b) = (0i64, 0i64);
    let mut i = 0;
    while i < n {
        // The X server has just written these pixels from the other core, and the hardware's
        // prefetcher stops at every 4 KiB page (a row is 6.4 kB at 1600 pixels): ask for the
        // bytes PREFETCH ahead, past the row's end too (the next damaged row is usually the
        // next in memory; a prefetch never faults).
        if i % 16 == 0 {
            let ahead = s.as_ptr().wrapping_add(i * 4 + PREFETCH);
            _mm_prefetch::<_MM_HINT_T0>(ahead as *const i8);
        }
        // The planes written are as cold (a picture buffer two captures old): each store
        // would first wait for its line.
        if i % 64 == 0 {
            for p in [g.as_ptr(), r.as_ptr(), b.as_ptr()] {
                _mm_prefetch::<_MM_HINT_ET0>(p.wrapping_add(i + PREFETCH / 4) as *const i8);
            }
        }
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
        any_r |= to_r;
        any_b |= to_b;
        i += 8;
    }
    let flat = Flat {
        r: any_r == 0,
        b: any_b == 0,
    };
    (n, flat)
}

/// Converts source rows `y0..y1` (4 bytes per pixel, `order`) into the three planes of `dst`
/// (`width` × `3 × height`), and hashes the rows it wrote. `zero` is the hash of a row of
/// zeros: the R − G and B − G rows of grey pixels (most of a screen: text, UI chrome), whose
/// hashing was a tenth of a colour server's time on a browser page.
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
    zero: u64,
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
        let flat = split_row(s, ri, bi, g, r, b);
        hashes[y] = row_hash(g);
        hashes[height + y] = if flat.r { zero } else { row_hash(r) };
        hashes[2 * height + y] = if flat.b { zero } else { row_hash(b) };
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
    let zero = crate::checksum::zero_row_hash(width);
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
                convert_rows(src, order, width, h, y0, y1, dst, hashes, zero);
            }
        }
        _ => {
            hashes.clear();
            hashes.resize(PLANES * h, 0);
            convert_rows(src, order, width, h, 0, h, dst, hashes, zero);
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
                let want_flat = split_scalar(&src, ri, bi, g, r, b);
                let mut got = [vec![1u8; width], vec![1u8; width], vec![1u8; width]];
                let [g, r, b] = &mut got;
                let flat = split_row(&src, ri, bi, g, r, b);
                assert_eq!(got, want, "width {width}, R at {ri}");
                assert_eq!(flat, want_flat, "width {width}, R at {ri}");
            }
        }
    }

    /// The hashes ingest gives are the hashes of the rows it wrote, where rows of grey pixels
    /// take the hash of zeros without hashing: rows of grey, rows where one pixel anywhere
    /// (in the vector part or the tail) has R or B apart from G, at widths around the kernel's
    /// 8 pixels.
    #[test]
    fn hashes_are_those_of_the_planes_written() {
        for w in [5usize, 8, 17, 40] {
            let h = 2 * w + 2;
            let mut src = vec![0u8; w * h * 4];
            for (i, px) in src.chunks_exact_mut(4).enumerate() {
                let v = (i * 37 % 253) as u8;
                px.copy_from_slice(&[v, v, v, 255]);
            }
            // Row 2x: pixel x gets a little red; row 2x + 1: a little blue.
            for x in 0..w {
                src[((2 * x) * w + x) * 4 + 2] ^= 1;
                src[((2 * x + 1) * w + x) * 4] ^= 0x80;
            }
            for order in [PixelOrder::Bgra, PixelOrder::Rgba] {
                let (mut planes, mut hashes) = (vec![0u8; w * h * 3], Vec::new());
                ingest_planes(
                    Source::new(&src, order, w),
                    None,
                    None,
                    &mut planes,
                    &mut hashes,
                );
                let mut want = Vec::new();
                crate::checksum::row_hashes(&planes, w, &mut want);
                assert_eq!(hashes, want, "width {w}, {order:?}");
                let zero = row_hash(&vec![0; w]);
                assert_eq!(hashes.iter().filter(|&&x| x == zero).count(), 2 * h - 2 * w);
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
