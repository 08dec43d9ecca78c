//! Drawing the pointer into a captured picture. The X server keeps the cursor out of captured
//! images (it is a sprite), so a mirror that wants it visible draws it itself, from XFixes'
//! cursor image: premultiplied ARGB, one u32 per pixel, with a hotspot.

/// The cursor as XFixes reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cursor {
    /// Pointer position (the hotspot), in root window coordinates.
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    pub xhot: u32,
    pub yhot: u32,
    pub serial: u32,
    /// Premultiplied ARGB, row-major.
    pub pixels: Vec<u32>,
}

impl Cursor {
    /// The rows `[y0, y1)` the cursor covers in a picture whose origin is at `(ox, oy)` of the
    /// root window and `height` rows tall; `None` when it is off the picture.
    pub fn rows(&self, oy: i32, height: u32) -> Option<(u32, u32)> {
        let top = self.y - self.yhot as i32 - oy;
        let y0 = top.max(0);
        let y1 = (top + self.height as i32).min(height as i32);
        (y0 < y1).then_some((y0 as u32, y1 as u32))
    }

    /// Blends the cursor over `bgra` (`width` × `height`, stride `width × 4`) whose origin is
    /// at `(ox, oy)` of the root window.
    pub fn draw(&self, bgra: &mut [u8], width: u32, height: u32, ox: i32, oy: i32) {
        let left = self.x - self.xhot as i32 - ox;
        let top = self.y - self.yhot as i32 - oy;
        for cy in 0..self.height as i32 {
            let y = top + cy;
            if y < 0 || y >= height as i32 {
                continue;
            }
            for cx in 0..self.width as i32 {
                let x = left + cx;
                if x < 0 || x >= width as i32 {
                    continue;
                }
                let Some(&p) = self
                    .pixels
                    .get((cy as u32 * self.width + cx as u32) as usize)
                else {
                    return;
                };
                let a = p >> 24;
                if a == 0 {
                    continue;
                }
                let o = ((y as u32 * width + x as u32) * 4) as usize;
                let inv = 255 - a;
                for (k, shift) in [(0, 0), (1, 8), (2, 16)] {
                    let s = (p >> shift) & 0xff;
                    let d = bgra[o + k] as u32;
                    bgra[o + k] = (s + (d * inv + 127) / 255).min(255) as u8;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_opaque_pixel_replaces_a_clear_one_keeps_and_rows_clip() {
        let c = Cursor {
            x: 2,
            y: 1,
            width: 2,
            height: 2,
            xhot: 1,
            yhot: 1,
            serial: 1,
            // opaque red, transparent, half-transparent white (premultiplied), opaque blue
            pixels: vec![0xffff0000, 0x00000000, 0x80808080, 0xff0000ff],
        };
        let (w, h) = (4u32, 3u32);
        let mut img = vec![100u8; (w * h * 4) as usize];
        c.draw(&mut img, w, h, 0, 0);
        let px = |x: u32, y: u32| &img[((y * w + x) * 4) as usize..((y * w + x) * 4 + 3) as usize];
        assert_eq!(px(1, 0), [0, 0, 255]); // red, in B G R order
        assert_eq!(px(2, 0), [100, 100, 100]); // transparent: untouched
        assert_eq!(px(1, 1), [128 + 50, 128 + 50, 128 + 50]); // 0x80 + 100 × 127/255
        assert_eq!(px(2, 1), [255, 0, 0]); // blue
        assert_eq!(px(0, 0), [100, 100, 100]);
        assert_eq!(c.rows(0, h), Some((0, 2)));
        assert_eq!(c.rows(5, h), None);
        assert_eq!(c.rows(1, h), Some((0, 1)));
    }
}
