//! BGRA/RGBA → 8-bit grey with the BT.601 integer weights (R 77, G 150, B 29, sum >> 8), the
//! same integers as the Daylight host so pictures match its output bit for bit.
//!
//! The fast path is hand-written AVX2, picked at run time (the auto-vectorised loop was 3× slower
//! because of the 4-byte de-interleave). The scalar reference stays the definition the tests
//! compare it to, over random inputs of every length.

/// Byte order of a 4-byte source pixel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelOrder {
    Bgra,
    Rgba,
}

const WR: u16 = 77;
const WG: u16 = 150;
const WB: u16 = 29;

/// The reference definition: one pixel at a time, no tricks.
pub fn to_grey_scalar(src: &[u8], order: PixelOrder, dst: &mut [u8]) {
    assert_eq!(
        src.len(),
        dst.len() * 4,
        "source must be 4 bytes per destination pixel"
    );
    for (px, out) in src.chunks_exact(4).zip(dst.iter_mut()) {
        let (r, g, b) = match order {
            PixelOrder::Bgra => (px[2], px[1], px[0]),
            PixelOrder::Rgba => (px[0], px[1], px[2]),
        };
        *out = ((WR * r as u16 + WG * g as u16 + WB * b as u16) >> 8) as u8;
    }
}

#[inline(always)]
fn kernel(src: &[u8], dst: &mut [u8], wb0: u16, wb2: u16) {
    for (px, out) in src.chunks_exact(4).zip(dst.iter_mut()) {
        let s = wb0 * px[0] as u16 + WG * px[1] as u16 + wb2 * px[2] as u16;
        *out = (s >> 8) as u8;
    }
}

/// 32 pixels per iteration. `maddubs` multiplies unsigned pixel bytes by *signed* byte weights,
/// and G's weight 150 does not fit an i8, so G is split as 22 + 128: the 22·G part rides in
/// `maddubs` with B and R, the 128·G part is a shift. The sum is exact, so the output equals
/// the scalar definition bit for bit.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2(src: &[u8], dst: &mut [u8], wb0: u16, wb2: u16) {
    use std::arch::x86_64::*;
    let n = dst.len() / 32 * 32;
    let weights = _mm256_set1_epi32(i32::from_le_bytes([
        wb0 as u8,
        (WG - 128) as u8,
        wb2 as u8,
        0,
    ]));
    let ones = _mm256_set1_epi16(1);
    let low_byte = _mm256_set1_epi32(0xFF);
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let mut i = 0;
    while i < n {
        let p = src.as_ptr().add(i * 4) as *const __m256i;
        // Pull lines in well ahead: the source (7.7 MB at 1600×1200) streams from L3 or DRAM.
        // 4 KB ahead measured ~10 % faster than 1 KB on a cold source and the same when warm.
        _mm_prefetch::<_MM_HINT_T0>(src.as_ptr().wrapping_add(i * 4 + 4096) as *const i8);
        _mm_prefetch::<_MM_HINT_T0>(src.as_ptr().wrapping_add(i * 4 + 4160) as *const i8);
        let mut s = [_mm256_setzero_si256(); 4];
        for (k, sk) in s.iter_mut().enumerate() {
            let px = _mm256_loadu_si256(p.add(k));
            let pairs = _mm256_maddubs_epi16(px, weights);
            let sum = _mm256_madd_epi16(pairs, ones);
            let g = _mm256_and_si256(_mm256_srli_epi32(px, 8), low_byte);
            *sk = _mm256_srli_epi32(_mm256_add_epi32(sum, _mm256_slli_epi32(g, 7)), 8);
        }
        let a = _mm256_packus_epi32(s[0], s[1]);
        let b = _mm256_packus_epi32(s[2], s[3]);
        // packs work per 128-bit lane; the permute puts the 4-pixel groups back in order.
        let out = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(a, b), order);
        _mm256_storeu_si256(dst.as_mut_ptr().add(i) as *mut __m256i, out);
        i += 32;
    }
    kernel(&src[n * 4..], &mut dst[n..], wb0, wb2);
}

/// Converts `src` (4 bytes per pixel) into `dst` (1 byte per pixel), using AVX2 when the CPU
/// has it. Output is identical to [`to_grey_scalar`].
pub fn to_grey(src: &[u8], order: PixelOrder, dst: &mut [u8]) {
    assert_eq!(
        src.len(),
        dst.len() * 4,
        "source must be 4 bytes per destination pixel"
    );
    let (wb0, wb2) = match order {
        PixelOrder::Bgra => (WB, WR),
        PixelOrder::Rgba => (WR, WB),
    };
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above); every load and store stays
            // within `src` and `dst`, whose sizes are asserted to match.
            unsafe { kernel_avx2(src, dst, wb0, wb2) };
            return;
        }
    }
    kernel(src, dst, wb0, wb2)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        let src = [
            0, 0, 255, 255, 0, 255, 0, 255, 255, 0, 0, 255, 255, 255, 255, 255,
        ];
        let mut dst = [0u8; 4];
        to_grey(&src, PixelOrder::Bgra, &mut dst);
        // (77*255)>>8 = 76, (150*255)>>8 = 149, (29*255)>>8 = 28, (256*255)>>8 = 255
        assert_eq!(dst, [76, 149, 28, 255]);
        to_grey(&src, PixelOrder::Rgba, &mut dst);
        assert_eq!(dst, [28, 149, 76, 255]);
    }

    proptest! {
        #[test]
        fn fast_path_equals_reference(px in proptest::collection::vec(any::<u8>(), 0..4000), rgba in any::<bool>()) {
            let n = px.len() / 4;
            let src = &px[..n * 4];
            let order = if rgba { PixelOrder::Rgba } else { PixelOrder::Bgra };
            let (mut a, mut b) = (vec![0u8; n], vec![0u8; n]);
            to_grey(src, order, &mut a);
            to_grey_scalar(src, order, &mut b);
            prop_assert_eq!(a, b);
        }
    }
}
