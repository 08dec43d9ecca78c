//! Deterministic synthetic screens: `idle`, `typing`, `scroll`, `video` and `mixed`.
//!
//! Frame `i` of a scene is a pure function of (scene, size, i): [`SyntheticSource::render`] can
//! produce any frame directly, and consecutive frames are produced incrementally (only what
//! changed is redrawn, as on a real screen) with the same result. Tests rely on that to check a
//! viewer's picture against the frame the host captured.

use std::str::FromStr;

use crate::source::{CaptureError, Captured, Damage, FrameSource};
use crate::text::{char_at, draw_document, glyph_row, hash, CELL_H, CELL_W};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scene {
    /// A static document with a blinking cursor: almost every frame is unchanged.
    Idle,
    /// Characters appear one by one at about 20 per second.
    Typing,
    /// A text document scrolling at 240 pixels per second.
    Scroll,
    /// Full-frame changing content with noise (the worst case for a delta codec).
    Video,
    /// A desktop with a scrolling document, a typing window and a small video at once.
    Mixed,
}

impl Scene {
    pub const ALL: [Scene; 5] = [
        Scene::Idle,
        Scene::Typing,
        Scene::Scroll,
        Scene::Video,
        Scene::Mixed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scene::Idle => "idle",
            Scene::Typing => "typing",
            Scene::Scroll => "scroll",
            Scene::Video => "video",
            Scene::Mixed => "mixed",
        }
    }
}

impl FromStr for Scene {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scene::ALL
            .iter()
            .copied()
            .find(|sc| sc.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!("unknown scene {s:?}; choose one of idle, typing, scroll, video, mixed")
            })
    }
}

const DESKTOP: u32 = 0xFF3A_6EA5;
const TITLE: u32 = 0xFF2B_2B30;
const PAPER: u32 = 0xFFFA_FAF7;
const INK: u32 = 0xFF20_2020;
const CURSOR_BLINK_FRAMES: u64 = 30;
const TITLE_H: u32 = 24;

#[derive(Debug, Clone, Copy)]
struct Rect {
    x0: u32,
    y0: u32,
    x1: u32,
    y1: u32,
}

#[derive(Debug, Clone, Copy)]
enum Panel {
    /// A document scrolled by `speed` pixel rows per frame.
    Document {
        rect: Rect,
        doc: u64,
        speed: u32,
    },
    /// Text typed into a page: `start` characters at frame 0, then one every `every` frames
    /// (`every` = 0: none), with a blinking cursor after the last one.
    Typing {
        rect: Rect,
        doc: u64,
        start: u64,
        every: u64,
    },
    Video {
        rect: Rect,
    },
}

/// A synthetic screen of one scene at one size.
pub struct SyntheticSource {
    scene: Scene,
    width: u32,
    height: u32,
    /// Width the scene is drawn at: screens smaller than 16×16 are drawn at 16 per side and
    /// cropped to their middle (where the scene's windows are), so every size down to 1×1 has
    /// a picture that moves.
    draw_width: u32,
    /// Top-left corner of the crop in the drawn picture.
    crop_at: (usize, usize),
    panels: Vec<Panel>,
    pixels: Vec<u32>,
    /// The top-left `width`×`height` of `pixels`, when the screen is smaller than it is drawn.
    crop: Option<Vec<u32>>,
    /// The frame currently in `pixels`, if any.
    rendered: Option<u64>,
    /// Rows the last `render` redrew relative to the picture before it.
    damage: Damage,
    next: u64,
}

fn window(x0: u32, y0: u32, x1: u32, y1: u32) -> (Rect, Rect) {
    let frame = Rect { x0, y0, x1, y1 };
    let content = Rect {
        x0: x0 + 2,
        y0: y0 + TITLE_H,
        x1: x1 - 2,
        y1: y1 - 2,
    };
    (frame, content)
}

impl SyntheticSource {
    pub fn new(scene: Scene, width: u32, height: u32) -> Self {
        assert!(width >= 1 && height >= 1, "a screen has at least one pixel");
        let (w, h) = (width.max(16), height.max(16));
        let m = (w.min(h) / 40).max(2);
        let mut panels = Vec::new();
        let mut windows = Vec::new();
        match scene {
            Scene::Idle | Scene::Typing | Scene::Scroll => {
                let (f, c) = window(m, m, w - m, h - m);
                windows.push(f);
                panels.push(match scene {
                    Scene::Idle => Panel::Typing {
                        rect: c,
                        doc: 7,
                        start: 600,
                        every: 0,
                    },
                    Scene::Typing => Panel::Typing {
                        rect: c,
                        doc: 11,
                        start: 300,
                        every: 3,
                    },
                    _ => Panel::Document {
                        rect: c,
                        doc: 3,
                        speed: 4,
                    },
                });
            }
            Scene::Video => panels.push(Panel::Video {
                rect: Rect {
                    x0: 0,
                    y0: 0,
                    x1: w,
                    y1: h,
                },
            }),
            Scene::Mixed => {
                let split = w * 3 / 5;
                let (f1, c1) = window(m, m, split - m / 2, h - m);
                let (f2, c2) = window(split + m / 2, m, w - m, h / 2 - m / 2);
                let (f3, c3) = window(split + m / 2, h / 2 + m / 2, w - m, h - m);
                windows.extend([f1, f2, f3]);
                panels.push(Panel::Document {
                    rect: c1,
                    doc: 5,
                    speed: 2,
                });
                panels.push(Panel::Typing {
                    rect: c2,
                    doc: 13,
                    start: 120,
                    every: 3,
                });
                panels.push(Panel::Video { rect: c3 });
            }
        }
        let mut pixels = crate::huge_pages::huge_vec((w * h) as usize, DESKTOP);
        for f in windows {
            fill(&mut pixels, w, f, TITLE);
        }
        let crop = (w, h) != (width, height);
        SyntheticSource {
            scene,
            width,
            height,
            draw_width: w,
            crop_at: (((w - width) / 2) as usize, ((h - height) / 2) as usize),
            panels,
            pixels,
            crop: crop.then(|| vec![0; (width * height) as usize]),
            rendered: None,
            damage: Damage::All,
            next: 0,
        }
    }

    /// Makes the next capture produce frame `index` (frames stay a function of the host's frame
    /// number when a source is reopened, e.g. after a resolution change).
    pub fn starting_at(mut self, index: u64) -> Self {
        self.next = index;
        self
    }

    pub fn scene(&self) -> Scene {
        self.scene
    }

    /// What the last [`SyntheticSource::render`] changed relative to the picture before it
    /// (`All` after a non-consecutive frame).
    pub fn damage(&self) -> &Damage {
        &self.damage
    }

    /// Renders frame `index` and returns its BGRA bytes.
    pub fn render(&mut self, index: u64) -> &[u8] {
        let incremental = self.rendered.is_some_and(|r| r + 1 == index);
        if self.rendered != Some(index) {
            let mut rows = Vec::new();
            for p in self.panels.clone() {
                rows.extend(draw_panel(
                    &mut self.pixels,
                    self.draw_width,
                    p,
                    index,
                    incremental,
                ));
            }
            self.damage = if incremental {
                Damage::Rows(rows)
            } else {
                Damage::All
            };
            self.rendered = Some(index);
            if let Some(c) = &mut self.crop {
                let (w, dw) = (self.width as usize, self.draw_width as usize);
                let (x0, y0) = self.crop_at;
                for (y, row) in c.chunks_exact_mut(w).enumerate() {
                    let at = (y0 + y) * dw + x0;
                    row.copy_from_slice(&self.pixels[at..at + w]);
                }
            }
        }
        as_bytes(self.crop.as_deref().unwrap_or(&self.pixels))
    }
}

fn as_bytes(px: &[u32]) -> &[u8] {
    // SAFETY: u8 has no alignment requirement and every bit pattern is valid; the length is
    // the same memory measured in bytes. BGRA is the little-endian byte order of 0xAARRGGBB.
    unsafe { std::slice::from_raw_parts(px.as_ptr().cast::<u8>(), std::mem::size_of_val(px)) }
}

fn fill(buf: &mut [u32], stride: u32, r: Rect, c: u32) {
    for y in r.y0..r.y1 {
        buf[(y * stride + r.x0) as usize..(y * stride + r.x1) as usize].fill(c);
    }
}

/// Draws one panel for frame `i`; returns the rows it changed, if any.
fn draw_panel(
    buf: &mut [u32],
    stride: u32,
    p: Panel,
    i: u64,
    incremental: bool,
) -> Option<(u32, u32)> {
    match p {
        Panel::Document {
            rect: r,
            doc,
            speed,
        } => draw_scrolling(buf, stride, r, doc, speed, i, incremental),
        Panel::Typing {
            rect: r,
            doc,
            start,
            every,
        } => draw_typing(buf, stride, r, (doc, start, every), i, incremental),
        Panel::Video { rect: r } => draw_video(buf, stride, r, i),
    }
}

/// A document scrolling by `speed` rows a frame; the rows it changed.
fn draw_scrolling(
    buf: &mut [u32],
    stride: u32,
    r: Rect,
    doc: u64,
    speed: u32,
    i: u64,
    incremental: bool,
) -> Option<(u32, u32)> {
    let h = r.y1 - r.y0;
    let off = i * speed as u64;
    if incremental && speed < h {
        if speed == 0 {
            return None;
        }
        // Scrolling moves pixels; only the newly exposed rows are drawn.
        for y in r.y0..r.y1 - speed {
            let src = ((y + speed) * stride + r.x0) as usize;
            buf.copy_within(
                src..src + (r.x1 - r.x0) as usize,
                (y * stride + r.x0) as usize,
            );
        }
        draw_document(
            buf,
            stride,
            r.x0,
            r.x1,
            r.y1 - speed,
            r.y1,
            doc,
            off.wrapping_sub(r.y0 as u64),
            INK,
            PAPER,
        );
    } else {
        draw_document(
            buf,
            stride,
            r.x0,
            r.x1,
            r.y0,
            r.y1,
            doc,
            off.wrapping_sub(r.y0 as u64),
            INK,
            PAPER,
        );
    }
    Some((r.y0, r.y1))
}

/// Text typed at one character every `every` frames, with a blinking cursor; the rows it
/// changed.
fn draw_typing(
    buf: &mut [u32],
    stride: u32,
    r: Rect,
    (doc, start, every): (u64, u64, u64),
    i: u64,
    incremental: bool,
) -> Option<(u32, u32)> {
    let cols = ((r.x1 - r.x0) / CELL_W).max(1) as u64;
    let rows = ((r.y1 - r.y0) / CELL_H).max(1) as u64;
    let page = cols * rows;
    let typed = |i: u64| start + i.checked_div(every).unwrap_or(0);
    let cursor_on = |i: u64| (i / CURSOR_BLINK_FRAMES).is_multiple_of(2);
    let (t, prev) = (typed(i), typed(i.saturating_sub(1)));
    let cell = |buf: &mut [u32], k: u64| {
        draw_cell(
            buf,
            stride,
            r,
            cols,
            doc + t / page,
            k,
            t % page,
            cursor_on(i),
        )
    };
    if incremental && t / page == prev / page {
        if t == prev && cursor_on(i) == cursor_on(i - 1) {
            return None;
        }
        let (first, last) = (prev % page, (t % page).min(page - 1));
        for k in first..=last {
            cell(buf, k);
        }
        let line = |k: u64| (k / cols) as u32;
        return Some((
            r.y0 + line(first) * CELL_H,
            (r.y0 + (line(last) + 1) * CELL_H).min(r.y1),
        ));
    } else {
        fill(buf, stride, r, PAPER);
        for k in 0..=(t % page).min(page - 1) {
            cell(buf, k);
        }
    }
    Some((r.y0, r.y1))
}

/// Moving colour noise over the whole panel (video-like); every row changes.
fn draw_video(buf: &mut [u32], stride: u32, r: Rect, i: u64) -> Option<(u32, u32)> {
    let t = i as u32;
    for y in r.y0..r.y1 {
        let row = &mut buf[(y * stride + r.x0) as usize..(y * stride + r.x1) as usize];
        let ny = hash(((y as u64) << 32) ^ i) as u32;
        for (x, px) in (r.x0..r.x1).zip(row.iter_mut()) {
            let rr = x.wrapping_add(t * 3) & 0xFF;
            let gg = y.wrapping_add(t * 2) & 0xFF;
            // Cheap per-pixel noise keeps the content from compressing like a gradient.
            let noise = (ny ^ x.wrapping_mul(0x9E37_79B9)) >> 27;
            let bb = ((x ^ y).wrapping_add(t) & 0xE0) | noise;
            *px = 0xFF00_0000 | (rr << 16) | (gg << 8) | bb;
        }
    }
    Some((r.y0, r.y1))
}

/// Draws typing cell `k` (row-major) of a page: its character if typed (k < typed), and the
/// cursor bar if the cursor is at k and on.
#[allow(clippy::too_many_arguments)]
fn draw_cell(
    buf: &mut [u32],
    stride: u32,
    r: Rect,
    cols: u64,
    doc: u64,
    k: u64,
    typed: u64,
    cursor: bool,
) {
    let (line, col) = (k / cols, (k % cols) as u32);
    let x0 = r.x0 + col * CELL_W;
    let y0 = r.y0 + line as u32 * CELL_H;
    if x0 + CELL_W > r.x1 || y0 + CELL_H > r.y1 {
        return;
    }
    let c = if k < typed {
        char_at(doc, line, col, cols as u32)
    } else {
        0
    };
    for row in 0..CELL_H {
        let o = ((y0 + row) * stride + x0) as usize;
        let out = &mut buf[o..o + CELL_W as usize];
        out.fill(PAPER);
        let bits = glyph_row(c, row);
        for (b, px) in out.iter_mut().enumerate().take(7) {
            if bits & (1 << b) != 0 {
                *px = INK;
            }
        }
        if cursor && k == typed {
            out[0] = INK;
            out[1] = INK;
        }
    }
}

impl FrameSource for SyntheticSource {
    fn name(&self) -> String {
        format!("synthetic:{}", self.scene.name())
    }
    fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }
    fn capture(&mut self) -> Result<Captured<'_>, CaptureError> {
        let i = self.next;
        self.next += 1;
        let (width, height) = (self.width, self.height);
        self.render(i);
        let damage = self.damage.clone();
        let bgra = as_bytes(self.crop.as_deref().unwrap_or(&self.pixels));
        Ok(Captured {
            width,
            height,
            bgra,
            damage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Incremental rendering (what the pipeline uses) equals rendering each frame from scratch.
    #[test]
    fn incremental_equals_direct_for_every_scene() {
        for scene in Scene::ALL {
            let mut inc = SyntheticSource::new(scene, 203, 157);
            for i in 0..130u64 {
                let a = inc.render(i).to_vec();
                let mut direct = SyntheticSource::new(scene, 203, 157);
                assert_eq!(a, direct.render(i), "scene {} frame {i}", scene.name());
            }
        }
    }

    /// Screens smaller than the scene's layout are its middle, down to 1×1.
    #[test]
    fn tiny_screens_are_the_middle_of_the_smallest_layout() {
        for scene in Scene::ALL {
            for (w, h) in [(1u32, 1u32), (3, 2), (15, 16), (16, 5)] {
                let mut full = SyntheticSource::new(scene, 16, 16);
                let mut s = SyntheticSource::new(scene, w, h);
                for i in 0..8u64 {
                    let big = full.render(i).to_vec();
                    let small = s.render(i);
                    assert_eq!(small.len(), (w * h * 4) as usize);
                    let (x0, y0) = ((16 - w as usize) / 2, (16 - h as usize) / 2);
                    for y in 0..h as usize {
                        let at = ((y0 + y) * 16 + x0) * 4;
                        let want = &big[at..at + w as usize * 4];
                        let got = &small[y * w as usize * 4..(y + 1) * w as usize * 4];
                        assert_eq!(got, want, "{} {w}x{h} frame {i} row {y}", scene.name());
                    }
                }
                assert_eq!(s.capture().unwrap().bgra.len(), (w * h * 4) as usize);
            }
        }
    }

    /// Every row outside the reported damage is identical to the previous frame's.
    #[test]
    fn damage_covers_every_changed_row() {
        for scene in Scene::ALL {
            let (w, h) = (211, 163);
            let mut s = SyntheticSource::new(scene, w, h);
            let mut prev = s.render(0).to_vec();
            assert_eq!(s.damage(), &Damage::All);
            for i in 1..150u64 {
                let cur = s.render(i).to_vec();
                let damaged = s
                    .damage()
                    .merged(h)
                    .expect("consecutive frames report rows");
                let row =
                    |b: &[u8], y: u32| b[(y * w * 4) as usize..((y + 1) * w * 4) as usize].to_vec();
                for y in 0..h {
                    if !damaged.iter().any(|&(a, b)| (a..b).contains(&y)) {
                        assert_eq!(
                            row(&cur, y),
                            row(&prev, y),
                            "{} frame {i} row {y} changed outside the damage",
                            scene.name()
                        );
                    }
                }
                prev = cur;
            }
        }
        // An idle screen reports no damage on most frames.
        let mut s = SyntheticSource::new(Scene::Idle, 320, 240);
        s.render(0);
        let quiet = (1..60).filter(|&i| {
            s.render(i);
            s.damage() == &Damage::Rows(vec![])
        });
        assert!(quiet.count() >= 55);
    }

    #[test]
    fn scenes_change_as_described() {
        let changed = |scene, n: u64| {
            let mut s = SyntheticSource::new(scene, 320, 240);
            let mut prev = s.render(0).to_vec();
            let mut count = 0;
            for i in 1..=n {
                let cur = s.render(i).to_vec();
                count += (cur != prev) as u32;
                prev = cur;
            }
            count
        };
        assert!(
            changed(Scene::Idle, 120) <= 4,
            "idle changes only when the cursor blinks"
        );
        assert_eq!(changed(Scene::Scroll, 60), 60);
        assert_eq!(changed(Scene::Video, 60), 60);
        let typing = changed(Scene::Typing, 120);
        assert!(
            (34..=44).contains(&typing),
            "typing changed {typing} of 120 frames"
        );
        assert_eq!(changed(Scene::Mixed, 60), 60);
    }

    #[test]
    fn scene_names_parse() {
        for s in Scene::ALL {
            assert_eq!(s.name().parse::<Scene>().unwrap(), s);
        }
        assert!("nope".parse::<Scene>().is_err());
    }
}
