//! The checksum carried by every framewire v1 frame, and the per-row hashes it is made of.
//!
//! A picture's checksum is xxh3-64 over its row hashes (each row's xxh3-64, as 8 little-endian
//! bytes, top row first). Defined this way, both ends get it almost for free: the host already
//! hashes every row to plan row deltas, and a viewer that moves and patches rows only rehashes
//! the rows it patched, instead of walking 1.9 MB per frame at each end. Any change to any
//! pixel still changes the checksum with xxh3's probability.

/// xxh3-64 of one row of pixels.
#[inline]
pub fn row_hash(row: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(row)
}

/// The hash of a row of `width` zeros: the R − G and B − G rows of grey content, which the
/// colour split and the rule for moved rows ([`crate::rects::hashes_after_moves`]) both name
/// without hashing them.
pub fn zero_row_hash(width: usize) -> u64 {
    row_hash(&vec![0; width])
}

/// Row hashes of a whole picture `width` pixels wide (none for an empty picture).
pub fn row_hashes(pic: &[u8], width: usize, out: &mut Vec<u64>) {
    out.clear();
    if width > 0 {
        out.extend(pic.chunks_exact(width).map(row_hash));
    }
}

/// The picture checksum from its row hashes.
pub fn checksum_of_rows(hashes: &[u64]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for r in hashes {
        h.update(&r.to_le_bytes());
    }
    h.digest()
}

/// The picture checksum of a grey picture `width` pixels wide (the definition; both ends
/// usually compute it from row hashes they already have).
pub fn picture_checksum(grey: &[u8], width: usize) -> u64 {
    let mut rows = Vec::new();
    row_hashes(grey, width, &mut rows);
    checksum_of_rows(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_is_xxh3_of_little_endian_row_hashes() {
        // The definition, spelled out independently of checksum_of_rows.
        let pic: Vec<u8> = (0..12u8).collect();
        let mut bytes = Vec::new();
        for row in pic.chunks(4) {
            bytes.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(row).to_le_bytes());
        }
        assert_eq!(
            picture_checksum(&pic, 4),
            xxhash_rust::xxh3::xxh3_64(&bytes)
        );
        assert_eq!(picture_checksum(&[], 0), xxhash_rust::xxh3::xxh3_64(&[]));
    }

    #[test]
    fn any_changed_pixel_or_moved_row_changes_it() {
        let pic: Vec<u8> = (0..64u8).collect();
        let base = picture_checksum(&pic, 8);
        for i in 0..pic.len() {
            let mut p = pic.clone();
            p[i] ^= 1;
            assert_ne!(picture_checksum(&p, 8), base, "pixel {i}");
        }
        let mut swapped = pic.clone();
        swapped[..16].rotate_left(8);
        assert_ne!(picture_checksum(&swapped, 8), base);
    }
}
