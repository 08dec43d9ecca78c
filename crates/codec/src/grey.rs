//! BGRA/RGBA → 8-bit grey with the BT.601 integer weights (R 77, G 150, B 29, sum >> 8), the
//! same integers as the Daylight host so pictures match its output bit for bit.
//!
//! The fast path is the scalar loop compiled a second time with AVX2 enabled and picked at run
//! time: LLVM vectorises it 16 pixels at a time in u16 lanes (the weighted sum of three bytes is
//! at most 65 280, so u16 never overflows). That keeps one readable loop instead of
//! hand-written intrinsics, and the scalar reference stays the definition the tests compare to.

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
    // Written over fixed 4-byte arrays so the compiler sees no bounds checks and vectorises.
    for (px, out) in src.chunks_exact(4).zip(dst.iter_mut()) {
        let s = wb0 * px[0] as u16 + WG * px[1] as u16 + wb2 * px[2] as u16;
        *out = (s >> 8) as u8;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2(src: &[u8], dst: &mut [u8], wb0: u16, wb2: u16) {
    kernel(src, dst, wb0, wb2)
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
            // SAFETY: the CPU supports AVX2, checked just above.
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
        fn fast_path_equals_reference(px in proptest::collection::vec(any::<u8>(), 0..2000), rgba in any::<bool>()) {
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
