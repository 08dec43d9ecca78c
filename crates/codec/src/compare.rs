//! Where two byte runs of one length differ: the first byte, the last, or both.
//!
//! Rows are compared everywhere a delta is made: each changed row against the old one to find
//! where anchors are looked for ([`crate::motion`]), each row after the moves against the new
//! one to cut patches ([`crate::rects`]), each tile before it is predicted ([`crate::predict`]).
//! On a browser page scrolling beside a fixed sidebar in colour, almost every row is equal over
//! most of its 1600 bytes, and comparing them was a quarter of the live server's time.
//!
//! Two kernels give the same answers: 64 bytes a step with AVX2 (one test of two 32-byte XORs
//! OR-ed), and, without AVX2, four 8-byte words a step. (LLVM turns the word version into a
//! compare and a branch per word; it ran at about 8 bytes a cycle.)

use crate::motion::word;

/// The first and one-past-the-last byte where `a` and `b` (of one length) differ, if they do.
pub fn diff_span(a: &[u8], b: &[u8]) -> Option<(usize, usize)> {
    let first = first_diff(a, b)?;
    Some((first, first + 1 + last_diff(&a[first..], &b[first..])))
}

/// The first byte where `a` and `b` differ (within the shorter).
pub fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
    let n = a.len().min(b.len());
    #[cfg(target_arch = "x86_64")]
    {
        if n >= 64 && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present; the kernel reads within the first `n` bytes of each.
            return unsafe { avx2::first_diff(&a[..n], &b[..n]) };
        }
    }
    words::first_diff(&a[..n], &b[..n])
}

/// The last byte where `a` and `b` differ, when byte 0 does (the search stops there).
fn last_diff(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    #[cfg(target_arch = "x86_64")]
    {
        if n >= 64 && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 is present; the kernel reads within the first `n` bytes of each.
            return unsafe { avx2::last_diff(&a[..n], &b[..n]) };
        }
    }
    words::last_diff(&a[..n], &b[..n])
}

/// Without AVX2: four words OR-ed together, one test per 32 bytes, then word by word.
mod words {
    use super::word;

    const STRIDE: usize = 32;

    fn differs(a: &[u8], b: &[u8], at: usize) -> bool {
        (word(a, at) ^ word(b, at))
            | (word(a, at + 8) ^ word(b, at + 8))
            | (word(a, at + 16) ^ word(b, at + 16))
            | (word(a, at + 24) ^ word(b, at + 24))
            != 0
    }

    /// `a` and `b` are of one length.
    pub(super) fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
        let n = a.len();
        let mut i = 0;
        while i + STRIDE <= n && !differs(a, b, i) {
            i += STRIDE;
        }
        from(a, b, i)
    }

    /// The first difference at or after `i`, a word at a time.
    pub(super) fn from(a: &[u8], b: &[u8], mut i: usize) -> Option<usize> {
        let n = a.len();
        while i + 8 <= n {
            let x = word(a, i) ^ word(b, i);
            if x != 0 {
                return Some(i + x.trailing_zeros() as usize / 8);
            }
            i += 8;
        }
        (i..n).find(|&k| a[k] != b[k])
    }

    /// `a` and `b` are of one length.
    pub(super) fn last_diff(a: &[u8], b: &[u8]) -> usize {
        let mut end = a.len();
        while end >= STRIDE && !differs(a, b, end - STRIDE) {
            end -= STRIDE;
        }
        before(a, b, end)
    }

    /// The last difference before `end`, a word at a time (0 when none).
    pub(super) fn before(a: &[u8], b: &[u8], mut end: usize) -> usize {
        while end >= 8 {
            let x = word(a, end - 8) ^ word(b, end - 8);
            if x != 0 {
                return end - 1 - x.leading_zeros() as usize / 8;
            }
            end -= 8;
        }
        (0..end).rev().find(|&k| a[k] != b[k]).unwrap_or(0)
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Whether the 64 bytes at `at` differ.
    #[target_feature(enable = "avx2")]
    unsafe fn differs64(a: &[u8], b: &[u8], at: usize) -> bool {
        let (pa, pb) = (a.as_ptr().add(at), b.as_ptr().add(at));
        let x0 = _mm256_xor_si256(
            _mm256_loadu_si256(pa as *const __m256i),
            _mm256_loadu_si256(pb as *const __m256i),
        );
        let x1 = _mm256_xor_si256(
            _mm256_loadu_si256(pa.add(32) as *const __m256i),
            _mm256_loadu_si256(pb.add(32) as *const __m256i),
        );
        let x = _mm256_or_si256(x0, x1);
        _mm256_testz_si256(x, x) == 0
    }

    /// `a` and `b` are of one length.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn first_diff(a: &[u8], b: &[u8]) -> Option<usize> {
        let n = a.len();
        let mut i = 0;
        while i + 64 <= n && !differs64(a, b, i) {
            i += 64;
        }
        // The difference is in the next 64 bytes (or the tail): words find it.
        super::words::from(a, b, i)
    }

    /// `a` and `b` are of one length.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn last_diff(a: &[u8], b: &[u8]) -> usize {
        let mut end = a.len();
        while end >= 64 && !differs64(a, b, end - 64) {
            end -= 64;
        }
        super::words::before(a, b, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_exact() {
        let a = vec![0u8; 100];
        let mut b = a.clone();
        assert_eq!(diff_span(&a, &b), None);
        b[17] = 1;
        b[70] = 2;
        assert_eq!(diff_span(&a, &b), Some((17, 71)));
        b[99] = 3;
        assert_eq!(diff_span(&a, &b), Some((17, 100)));
    }

    proptest::proptest! {
        /// Spans found by either kernel are the spans by definition, at every length and every
        /// place of the first and last difference.
        #[test]
        fn spans_match_their_definition(
            len in 0usize..400,
            marks in proptest::collection::vec((0usize..400, 1u8..=255), 0..4),
        ) {
            let a: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let mut b = a.clone();
            for (at, v) in marks {
                if at < len {
                    b[at] ^= v;
                }
            }
            let first = (0..len).find(|&i| a[i] != b[i]);
            let last = (0..len).rev().find(|&i| a[i] != b[i]);
            proptest::prop_assert_eq!(diff_span(&a, &b), first.zip(last).map(|(f, l)| (f, l + 1)));
            proptest::prop_assert_eq!(first_diff(&a, &b), first);
            proptest::prop_assert_eq!(words::first_diff(&a, &b), first);
            if let Some(f) = first {
                proptest::prop_assert_eq!(f + words::last_diff(&a[f..], &b[f..]), last.unwrap());
            }
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 is present.
                unsafe {
                    proptest::prop_assert_eq!(avx2::first_diff(&a, &b), first);
                    if let Some(f) = first {
                        proptest::prop_assert_eq!(f + avx2::last_diff(&a[f..], &b[f..]), last.unwrap());
                    }
                }
            }
        }
    }
}
