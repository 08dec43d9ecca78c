//! XOR delta between two grey pictures. Plain zipped loops: LLVM vectorises them fully, and
//! they are memory-bound either way.

/// `out = a ^ b`.
pub fn xor_into(a: &[u8], b: &[u8], out: &mut [u8]) {
    assert!(
        a.len() == b.len() && b.len() == out.len(),
        "delta operands differ in size"
    );
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = x ^ y;
    }
}

/// `dst ^= delta`: applies a delta to a picture in place.
pub fn xor_in_place(dst: &mut [u8], delta: &[u8]) {
    assert_eq!(
        dst.len(),
        delta.len(),
        "delta size differs from picture size"
    );
    for (d, x) in dst.iter_mut().zip(delta) {
        *d ^= x;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn apply_of_delta_reconstructs(a in proptest::collection::vec(any::<u8>(), 0..500), seed in any::<u8>()) {
            let b: Vec<u8> = a.iter().enumerate().map(|(i, x)| x.wrapping_add((i as u8).wrapping_mul(seed))).collect();
            let mut d = vec![0; a.len()];
            xor_into(&a, &b, &mut d);
            let mut pic = a.clone();
            xor_in_place(&mut pic, &d);
            prop_assert_eq!(pic, b);
        }
    }
}
