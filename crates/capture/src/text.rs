//! A deterministic pseudo-text renderer for the synthetic scenes: glyph shapes and words come
//! from a hash, so documents look and compress like text without shipping a font.

pub const CELL_W: u32 = 9;
pub const CELL_H: u32 = 18;
const GLYPH_W: u32 = 7;
const GLYPH_TOP: u32 = 3;
const GLYPH_H: u32 = 12;

pub fn hash(mut x: u64) -> u64 {
    // splitmix64 finaliser: cheap and well mixed.
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The character at column `col` of document line `line` (0 = space), for lines of `cols`.
pub fn char_at(doc: u64, line: u64, col: u32, cols: u32) -> u8 {
    let h = hash(doc ^ line.wrapping_mul(0x1000_0000_01B3));
    let len = (cols as u64 / 3 + h % (cols as u64 * 2 / 3 + 1)) as u32; // ragged right edge
    if col >= len || line % 7 == 6 {
        return 0; // paragraph break every 7th line
    }
    let w = hash(h ^ (col / 6) as u64);
    if (col % 6) as u64 == w % 6 {
        0 // word gaps
    } else {
        b'a' + (hash(w ^ col as u64) % 26) as u8
    }
}

/// Row `row` (0..CELL_H) of glyph `c` as a bit mask over GLYPH_W columns.
pub fn glyph_row(c: u8, row: u32) -> u8 {
    if c == 0 || !(GLYPH_TOP..GLYPH_TOP + GLYPH_H).contains(&row) {
        return 0;
    }
    (hash(c as u64 * 31 + (row - GLYPH_TOP) as u64) as u8) & ((1 << GLYPH_W) - 1)
}

/// Draws document rows into `buf` (u32 BGRA pixels with `stride`), region x in `x0..x1`, for
/// destination rows `y0..y1`, where destination row y shows document pixel row `y + doc_y`.
#[allow(clippy::too_many_arguments)]
pub fn draw_document(
    buf: &mut [u32],
    stride: u32,
    x0: u32,
    x1: u32,
    y0: u32,
    y1: u32,
    doc: u64,
    doc_y: u64,
    fg: u32,
    bg: u32,
) {
    let cols = (x1 - x0) / CELL_W;
    for y in y0..y1 {
        let py = (y as u64).wrapping_add(doc_y);
        let line = py / CELL_H as u64;
        let row = (py % CELL_H as u64) as u32;
        let out = &mut buf[(y * stride + x0) as usize..(y * stride + x1) as usize];
        out.fill(bg);
        if !(GLYPH_TOP..GLYPH_TOP + GLYPH_H).contains(&row) {
            continue;
        }
        for col in 0..cols {
            let bits = glyph_row(char_at(doc, line, col, cols), row);
            if bits == 0 {
                continue;
            }
            let base = (col * CELL_W) as usize;
            for b in 0..GLYPH_W {
                if bits & (1 << b) != 0 {
                    out[base + b as usize] = fg;
                }
            }
        }
    }
}
