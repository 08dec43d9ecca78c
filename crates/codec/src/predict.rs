//! Predicted rectangles: a rectangle's new pixels coded from their neighbours in the new
//! picture instead of XORed with the old ones (spec/PROTOCOL.md, "Predicted rectangles").
//!
//! An XOR delta cancels what stayed; a video, a photograph or noise leaves nothing to cancel,
//! and its XOR is as costly as the pixels themselves. There each plane is predicted as JPEG-LS
//! does, by the median edge detector over the left, upper and upper-left pixels of the same
//! rectangle (never outside it, so rectangles decode independently of what is around them),
//! and in mode 1 the two colour planes (R − G and B − G, see [`crate::colour`]) from a colour
//! cache first: the value they had the last time the same G (and R − G) was seen in this frame.
//! On testsrc2's noise one random value blends all three channels over a flat bar, so given G
//! the rest mostly repeats; in smooth gradients it does not, and mode 0 wins. Each tile takes
//! the mode with fewer estimated bits.
//!
//! Measured on a recording of ffmpeg's testsrc2 shown by ffplay (`corpus/video.fwrec`, zstd 1,
//! bytes per changed picture; the XOR of moved-rectangle deltas gives about 279,000), in a
//! study before this was built, on an earlier recording of the clip: 32×32 tiles by MED alone 228,202; with R − G from the cache 211,311;
//! with B − G keyed by G and R − G as well 191,620; R and B fitted to G per tile (chroma from
//! luma) 236,232. As built (64×64 tiles shrunk to where they changed, the mode per tile,
//! dense tiles only): 193,496; with 32×32 tiles, before shrinking, 196,182. Sparse tiles are
//! tried too since glxgears showed flat shapes that turn (see [`SPARSE_SHARE`]): 191,880.
//! Tried with no gain: plane 0 against the tile's median instead of its neighbours (77,570
//! against 77,825 bytes for plane 0), zstd levels 2, 3 and 5 (194,809, 196,501 and 195,034
//! against 192,888 at level 1), and residual
//! streams split by the neighbours' activity (4 % smaller, not worth a fifth layout in four
//! decoders). A third mode that predicts planes 1 and 2 from their neighbours as R and B
//! (plus G), tried on 2026-11-28: on whole pictures of the Mandelbrot zoom, with no cache, 18 %
//! fewer bytes than mode 0, but beside the cache, per tile as served, 1,648,783 against
//! 1,678,576 B a changed picture (−1.8 %), the video −0.8 %, glxgears none: not worth a mode
//! in four decoders.
//!
//! Residuals are laid out plane by plane (every rectangle's plane 0, then plane 1, …), so each
//! plane's statistics stay together for the block codec.

use crate::rects::{Predicted, Rect, Reference};

/// Patches smaller than this stay XORed: a typed glyph keeps today's cost.
pub const MIN_AREA: usize = 1024;
/// A tile whose XOR costs at least this many estimated bits per pixel and plane is dense.
const DENSE_BITS: u64 = 2;
/// A dense tile goes predicted when its estimated bits are at least 1/MARGIN below its XOR's:
/// on noise the two are about even, and a predicted tile costs the viewer more to decode.
const MARGIN: u64 = 8;
/// A sparser tile goes predicted only when its estimated bits are at most 1/SPARSE_SHARE of
/// its XOR's. Sparse changes of text (new text over old in a terminal) compress better as XOR
/// than the estimate shows, through the block codec's matches: tried with the dense margin,
/// predicted rectangles made the terminal recording 34 % larger. But flat shapes that turn or
/// change shape (glxgears' gears, a page of a PDF turned, an editor's new lines) XOR into
/// values with no pattern and predict almost exactly. Before sparse tiles were tried at all,
/// glxgears cost 46,760 B a changed picture as served (x11vnc: 38,133 an update): 38 kB of it
/// was XOR patches, 7 kB the residuals of 143,000 predicted pixels. Measured on eleven
/// recordings (`bench codec --input`, B per changed picture as served, before → 1/4): glxgears
/// 46,760 → 26,526, a PDF in mupdf 31,426 → 27,136, the browser scroll 7,062 → 6,367, the
/// terminal 3,609 → 2,922, the drag 2,390 → 2,199, none larger. 1/2 gave the gears 24,672 but
/// the terminal 3,326, and more tiles to predict: glxgears took 12.7 ms to encode and 6.4 to
/// decode, against 8.9 and 5.3 with 1/4 and 9.2 and 4.9 before (medians of three in turn).
const SPARSE_SHARE: u64 = 4;
/// Large patches are tried in tiles of this size.
pub const TILE: u32 = 64;

/// `r` cut into tiles of at most [`TILE`] × [`TILE`], row by row.
pub fn tiles(r: &Rect) -> impl Iterator<Item = Rect> + '_ {
    (r.y..r.y + r.h).step_by(TILE as usize).flat_map(move |y| {
        (r.x..r.x + r.w).step_by(TILE as usize).map(move |x| Rect {
            x,
            y,
            w: TILE.min(r.x + r.w - x),
            h: TILE.min(r.y + r.h - y),
        })
    })
}

const EMPTY: i16 = -1;

/// The colour cache, empty at the start of each frame.
pub struct Tables {
    t1: Vec<i16>,
    t2: Vec<i16>,
    /// Entries set since [`Tables::mark`]: (table 2?, index, value before).
    undo: Vec<(bool, u32, i16)>,
    /// Entries may have been set since the last reset (the encoder empties the tables for
    /// every delta, most of which predict nothing: 128 KB not written each time).
    touched: bool,
}

impl Default for Tables {
    fn default() -> Self {
        Tables {
            t1: vec![EMPTY; 256],
            t2: vec![EMPTY; 65536],
            undo: Vec::new(),
            touched: false,
        }
    }
}

impl Tables {
    /// Empties both tables (a new frame).
    pub fn reset(&mut self) {
        if self.touched {
            self.t1.fill(EMPTY);
            self.t2.fill(EMPTY);
            self.touched = false;
        }
        self.undo.clear();
    }

    /// Starts recording changes, to be undone by [`Tables::rollback`].
    fn mark(&mut self) {
        self.undo.clear();
        self.touched = true;
    }

    /// For each pixel of a row in order (planes G, 1 and 2; their spatial residuals): the
    /// residuals of planes 1 and 2 against table 1 (keyed by G) and table 2 (by G and plane 1),
    /// or their spatial residuals where the entry is empty; then the entries learn the pixel,
    /// logged to be undone. Every write is logged, changed or not: on noise whether it changes
    /// is a coin toss, and a mispredicted branch cost more than the log entry.
    fn learn_row(
        &mut self,
        (g, p1, p2): (&[u8], &[u8], &[u8]),
        (s1, s2): (&[u8], &[u8]),
        (c1, c2): (&mut [u8], &mut [u8]),
    ) {
        // As arrays, indexed by a byte or two, the tables need no bounds checks.
        let t1: &mut [i16; 256] = self.t1.as_mut_slice().try_into().expect("256 entries");
        let t2: &mut [i16; 65536] = self.t2.as_mut_slice().try_into().expect("65536 entries");
        let undo = &mut self.undo;
        let pixels = g.iter().zip(p1).zip(p2).zip(s1.iter().zip(s2));
        for ((((&g, &v1), &v2), (&s1, &s2)), (c1, c2)) in pixels.zip(c1.iter_mut().zip(c2)) {
            let k1 = g as usize;
            let k2 = (k1 << 8) | v1 as usize;
            let (o1, o2) = (t1[k1], t2[k2]);
            *c1 = if o1 == EMPTY {
                s1
            } else {
                v1.wrapping_sub(o1 as u8)
            };
            *c2 = if o2 == EMPTY {
                s2
            } else {
                v2.wrapping_sub(o2 as u8)
            };
            undo.push((false, k1 as u32, o1));
            t1[k1] = v1 as i16;
            undo.push((true, k2 as u32, o2));
            t2[k2] = v2 as i16;
        }
    }

    fn rollback(&mut self) {
        for &(second, i, v) in self.undo.iter().rev() {
            let t = if second { &mut self.t2 } else { &mut self.t1 };
            t[i as usize] = v;
        }
        self.undo.clear();
    }
}

/// The median edge detector (JPEG-LS) over the left, upper and upper-left neighbours. At a
/// rectangle's edges the spec predicts 0 at the corner, the left neighbour in the first row and
/// the upper one in the first column (`spatial_residuals`, `unpredict`).
///
/// Written as a clamp of a + b − c between a and b (the same value): no branch. The decoder's
/// chain through the left neighbour is serial, and on noise or a photograph the three-way
/// branch went wrong about every other pixel.
#[inline(always)]
fn med(a: u8, b: u8, c: u8) -> u8 {
    let (a, b, c) = (a as i16, b as i16, c as i16);
    (a + b - c).max(a.min(b)).min(a.max(b)) as u8
}

/// Where the rectangle's plane `k` lives in a stacked picture `width` wide, `ph` rows a plane.
#[inline(always)]
fn origin(r: &Rect, width: usize, ph: usize, k: usize) -> usize {
    (k * ph + r.y as usize) * width + r.x as usize
}

/// How a predicted rectangle's colour planes are predicted (the first plane, and every plane of
/// a grey picture, always from its neighbours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every plane from its neighbours (smooth colour: a photograph).
    Neighbours = 0,
    /// Planes 1 and 2 from the colour cache where it has an entry (noise or a video blended
    /// over flat colour, text of one colour).
    Cache = 1,
}

/// Writes the predicted rectangles into `pic` (contiguous rows, `width` wide, `planes` planes of
/// `ph` rows stacked) from `data`: every rectangle's plane 0 residuals, then plane 1's, then
/// plane 2's. The caller has checked the rectangles against the picture and `data`'s length.
pub fn apply(
    pic: &mut [u8],
    width: usize,
    ph: usize,
    planes: usize,
    rects: &[Predicted],
    data: &[u8],
    t: &mut Tables,
) {
    t.reset();
    t.touched = true;
    let per_plane: usize = rects.iter().map(|p| p.rect.area()).sum();
    let mut off = 0;
    for p in rects {
        let r = &p.rect;
        let n = r.area();
        let res = |k: usize| &data[k * per_plane + off..k * per_plane + off + n];
        // Plane by plane: T1 is only read and written by plane 1, T2 by plane 2, each in the
        // pixels' order, so this gives what decoding pixel by pixel gives.
        let o = [0, 1, 2].map(|k| origin(r, width, ph, k.min(planes - 1)));
        unpredict(pic, width, o[0], r, res(0), None);
        if planes == 3 {
            let cache = p.mode == Mode::Cache;
            let keys = Keys { g: o[0], v1: o[1] };
            unpredict(
                pic,
                width,
                o[1],
                r,
                res(1),
                cache.then_some((&mut t.t1, keys, false)),
            );
            unpredict(
                pic,
                width,
                o[2],
                r,
                res(2),
                cache.then_some((&mut t.t2, keys, true)),
            );
            if !cache {
                keys.learn(pic, width, r, t);
            }
        }
        off += n;
    }
}

/// Where a colour pixel's cache keys are read: its plane-0 value (G) and plane-1 value.
#[derive(Clone, Copy)]
struct Keys {
    g: usize,
    v1: usize,
}

impl Keys {
    /// The key of the pixel `at` past the rectangle's origin, in table 1 or 2 (`second`).
    #[inline(always)]
    fn key(self, pic: &[u8], at: usize, second: bool) -> usize {
        match second {
            false => pic[self.g + at] as usize,
            true => (pic[self.g + at] as usize) << 8 | pic[self.v1 + at] as usize,
        }
    }

    /// Both tables learn every pixel of a rectangle decoded without them, in order.
    fn learn(self, pic: &[u8], width: usize, r: &Rect, t: &mut Tables) {
        let v2 = self.v1 + (self.v1 - self.g);
        for i in 0..r.h as usize {
            for j in 0..r.w as usize {
                let at = i * width + j;
                t.t1[self.key(pic, at, false)] = pic[self.v1 + at] as i16;
                t.t2[self.key(pic, at, true)] = pic[v2 + at] as i16;
            }
        }
    }
}

/// Decodes one plane of rectangle `r`, at `o` in `pic`, from its residuals. With a cache (a
/// table, where its keys are, and whether it is table 2), a pixel whose entry is set is
/// predicted from it, and its entry then learns the pixel.
fn unpredict(
    pic: &mut [u8],
    width: usize,
    o: usize,
    r: &Rect,
    res: &[u8],
    cache: Option<(&mut Vec<i16>, Keys, bool)>,
) {
    let (rw, rh) = (r.w as usize, r.h as usize);
    match cache {
        None => {
            let mut a = 0u8;
            for (v, &e) in pic[o..o + rw].iter_mut().zip(&res[..rw]) {
                a = a.wrapping_add(e);
                *v = a;
            }
            for i in 1..rh {
                let (head, tail) = pic.split_at_mut(o + i * width);
                let (up, row) = (&head[o + (i - 1) * width..][..rw], &mut tail[..rw]);
                let res = &res[i * rw..(i + 1) * rw];
                let mut a = up[0].wrapping_add(res[0]);
                row[0] = a;
                for j in 1..rw {
                    a = med(a, up[j], up[j - 1]).wrapping_add(res[j]);
                    row[j] = a;
                }
            }
        }
        Some((t, keys, second)) => {
            for i in 0..rh {
                // The keys' planes and the row above come before this row in the picture.
                let (head, tail) = pic.split_at_mut(o + i * width);
                let row = &mut tail[..rw];
                let g = &head[keys.g + i * width..][..rw];
                // Plane 1's values key table 2 only (decoding plane 1, they are this row).
                let v1 = match second {
                    true => &head[keys.v1 + i * width..][..rw],
                    false => g,
                };
                let up = (i > 0).then(|| &head[o + (i - 1) * width..][..rw]);
                let res = &res[i * rw..(i + 1) * rw];
                let mut a = 0u8;
                for j in 0..rw {
                    let k = match second {
                        false => g[j] as usize,
                        true => (g[j] as usize) << 8 | v1[j] as usize,
                    };
                    let pred = match (t[k], up) {
                        (EMPTY, None) => a,
                        (EMPTY, Some(up)) if j == 0 => up[0],
                        (EMPTY, Some(up)) => med(a, up[j], up[j - 1]),
                        (v, _) => v as u8,
                    };
                    a = pred.wrapping_add(res[j]);
                    row[j] = a;
                    t[k] = a as i16;
                }
            }
        }
    }
}

/// Estimated bits of one residual or XOR byte: nothing for a zero (runs of them compress to
/// almost nothing), else its magnitude's bits (as a signed byte) and two more. Written as a
/// sum of comparisons, not a table, so that sums over a row run 32 bytes at a time.
#[inline(always)]
fn bits(b: u8) -> u8 {
    let a = (b as i8).unsigned_abs();
    3 * (a > 0) as u8
        + (a > 1) as u8
        + (a > 3) as u8
        + (a > 7) as u8
        + (a > 15) as u8
        + (a > 31) as u8
        + (a > 63) as u8
        + (a > 127) as u8
}

/// Estimated bits of XOR bytes.
pub fn xor_bits(a: &[u8], b: &[u8]) -> u64 {
    let chunks = a.chunks(LANE_SUM).zip(b.chunks(LANE_SUM));
    chunks
        .map(|(x, y)| {
            x.iter()
                .zip(y)
                .map(|(p, q)| bits(p ^ q) as u16)
                .sum::<u16>() as u64
        })
        .sum()
}

/// Estimated bits of residual bytes.
fn residual_bits(r: &[u8]) -> u64 {
    r.chunks(LANE_SUM)
        .map(|c| c.iter().map(|&b| bits(b) as u16).sum::<u16>() as u64)
        .sum()
}

/// Bytes summed in u16 lanes before they are added up: at most 10 bits each, no overflow.
const LANE_SUM: usize = 2048;

/// The encoder's side: residuals of the rectangles chosen so far, plane by plane.
#[derive(Default)]
pub struct Residuals {
    pub tables: Tables,
    planes: [Vec<u8>; 3],
    /// Scratch: the rectangle being tried, each plane's rows packed, and its residuals.
    tile: [Vec<u8>; 3],
    spatial: [Vec<u8>; 3],
    /// The colour planes' residuals against the colour cache (index 0 unused).
    cached: [Vec<u8>; 3],
}

impl Residuals {
    /// A new frame: no rectangle, empty tables.
    pub fn clear(&mut self) {
        self.tables.reset();
        for p in &mut self.planes {
            p.clear();
        }
    }

    /// The residual bytes of every rectangle kept, plane 0 first (the spec's layout).
    pub fn bytes(&self, planes: usize) -> impl Iterator<Item = &[u8]> {
        self.planes[..planes].iter().map(Vec::as_slice)
    }

    /// Codes rectangle `r` of `cur` (stacked planes, `width` wide, `ph` rows a plane) in the
    /// mode with fewer estimated bits and keeps it when those are below `xor_bits`; returns the
    /// mode kept. A rectangle not kept leaves the residuals and the tables as they were.
    pub fn try_rect(
        &mut self,
        cur: &[u8],
        width: usize,
        ph: usize,
        planes: usize,
        r: &Rect,
        xor_bits: u64,
    ) -> Option<Mode> {
        let (rw, rh) = (r.w as usize, r.h as usize);
        // Spatial residuals depend only on the tile's own pixels (no table): the first plane
        // first, which alone may already cost more than the XOR (most sparse tiles stop here,
        // before the other planes are read).
        let n = rw * rh;
        let mut est0 = 0;
        for k in 0..planes {
            let o = origin(r, width, ph, k);
            let t = &mut self.tile[k];
            t.clear();
            for i in 0..rh {
                t.extend_from_slice(&cur[o + i * width..o + i * width + rw]);
            }
            self.spatial[k].resize(n, 0);
            spatial_residuals(&self.tile[k], rw, rh, &mut self.spatial[k]);
            if k == 0 {
                est0 = residual_bits(&self.spatial[0]);
                if est0 >= xor_bits {
                    return None;
                }
            }
        }
        if planes == 1 {
            self.planes[0].extend_from_slice(&self.spatial[0]);
            return Some(Mode::Neighbours);
        }
        // The colour planes both ways; the tables change the same either way.
        let t = &mut self.tables;
        t.mark();
        t.undo.reserve(2 * n);
        let (mut by_neighbours, mut by_cache) = (0u64, 0u64);
        let [g, p1, p2] = &self.tile;
        let [_, s1, s2] = &self.spatial;
        let [_, c1, c2] = &mut self.cached;
        c1.resize(n, 0);
        c2.resize(n, 0);
        for row in (0..rh).map(|i| i * rw..(i + 1) * rw) {
            // Already over either way: the rest would not bring it back under.
            if est0 + by_neighbours.min(by_cache) >= xor_bits {
                t.rollback();
                return None;
            }
            t.learn_row(
                (&g[row.clone()], &p1[row.clone()], &p2[row.clone()]),
                (&s1[row.clone()], &s2[row.clone()]),
                (&mut c1[row.clone()], &mut c2[row.clone()]),
            );
            // The bits a row at a time, 16 or 32 bytes an instruction.
            by_neighbours += residual_bits(&s1[row.clone()]) + residual_bits(&s2[row.clone()]);
            by_cache += residual_bits(&c1[row.clone()]) + residual_bits(&c2[row]);
        }
        if est0 + by_neighbours.min(by_cache) >= xor_bits {
            t.rollback();
            return None;
        }
        let (mode, from) = match by_cache < by_neighbours {
            true => (Mode::Cache, &self.cached),
            false => (Mode::Neighbours, &self.spatial),
        };
        self.planes[0].extend_from_slice(&self.spatial[0]);
        self.planes[1].extend_from_slice(&from[1]);
        self.planes[2].extend_from_slice(&from[2]);
        Some(mode)
    }
}

/// Each pixel of a tile (`rw` wide, rows packed) minus its spatial prediction (the spec's).
fn spatial_residuals(tile: &[u8], rw: usize, rh: usize, out: &mut [u8]) {
    out[0] = tile[0];
    for j in 1..rw {
        out[j] = tile[j].wrapping_sub(tile[j - 1]);
    }
    for i in 1..rh {
        let (up, row) = (&tile[(i - 1) * rw..i * rw], &tile[i * rw..(i + 1) * rw]);
        let o = &mut out[i * rw..(i + 1) * rw];
        o[0] = row[0].wrapping_sub(up[0]);
        // The median is a clamp ([`med`]), which the compiler can do 16 pixels at a time here:
        // every input is the source's, none a residual.
        let ins = row[1..]
            .iter()
            .zip(&row[..rw - 1])
            .zip(up[1..].iter().zip(&up[..rw - 1]));
        for (o, ((&v, &a), (&b, &c))) in o[1..].iter_mut().zip(ins) {
            *o = v.wrapping_sub(med(a, b, c));
        }
    }
}

/// Cuts the large patches of the first plane into tiles and codes as predicted rectangles
/// the changed tiles whose estimated residual bits (every plane) are at least an eighth below
/// their XOR bits when the XOR is dense, and at most a quarter of them when it is not
/// ([`DENSE_BITS`], [`MARGIN`], [`SPARSE_SHARE`]); the
/// changed tiles left go back into `patches` as XOR patches (neighbours in a row of tiles
/// merged), tiles that did not change are dropped. `cur` is `planes` planes stacked, `width`
/// wide; `reference` the previous picture after the moves. Returns the predicted rectangles;
/// their residuals are in `res`.
pub fn choose(
    reference: &mut Reference<'_>,
    cur: &[u8],
    width: usize,
    planes: usize,
    patches: &mut Vec<Rect>,
    res: &mut Residuals,
) -> Vec<Predicted> {
    let ph = cur.len() / width / planes;
    let mut predicted = Vec::new();
    let mut out = Vec::with_capacity(patches.len());
    let (mut bits, mut changed, mut left) = (Vec::new(), Vec::new(), Vec::<Rect>::new());
    for mut r in patches.drain(..) {
        let end = (r.y + r.h) as usize;
        if (r.y as usize) < ph && end > ph {
            // A patch running on into the next plane (every row changed): its first plane's
            // part is a candidate, the rest stays XOR.
            out.push(Rect {
                y: ph as u32,
                h: (end - ph) as u32,
                ..r
            });
            r.h = ph as u32 - r.y;
        }
        if (r.y + r.h) as usize > ph || r.area() < MIN_AREA {
            out.push(r);
            continue;
        }
        let mut tiles: Vec<Rect> = tiles(&r).collect();
        xor_bits_of_tiles(
            reference,
            cur,
            width,
            ph,
            planes,
            &r,
            &mut tiles,
            &mut bits,
            &mut changed,
        );
        left.clear();
        let before = predicted.len();
        for ((t, &b), _) in tiles.iter().zip(&bits).zip(&changed).filter(|(_, c)| **c) {
            // The spec allows a plane's rows' worth of predicted rectangles; the rest stay XOR.
            let dense = b >= (t.area() * planes) as u64 * DENSE_BITS;
            let limit = match dense {
                true => b - b / MARGIN,
                false => b / SPARSE_SHARE,
            };
            let mode = match predicted.len() < ph {
                true => res.try_rect(cur, width, ph, planes, t, limit),
                false => None,
            };
            match mode {
                Some(mode) => predicted.push(Predicted { rect: *t, mode }),
                None => match left.last_mut() {
                    Some(l) if (l.y, l.h, l.x + l.w) == (t.y, t.h, t.x) => l.w += t.w,
                    _ => left.push(*t),
                },
            }
        }
        match predicted.len() > before {
            true => out.append(&mut left),
            false => out.push(r),
        }
    }
    *patches = out;
    predicted
}

/// For each tile of `r` (cut by [`tiles`], a band of tiles at a time): whether its first plane
/// differs from the reference, the tile then shrunk to where it does (a thin diagonal line
/// crossing a tile changes a fraction of it), and its XOR bits there over every plane.
#[allow(clippy::too_many_arguments)]
fn xor_bits_of_tiles(
    reference: &mut Reference<'_>,
    cur: &[u8],
    width: usize,
    ph: usize,
    planes: usize,
    r: &Rect,
    tiles: &mut [Rect],
    bits: &mut Vec<u64>,
    changed: &mut Vec<bool>,
) {
    bits.clear();
    bits.resize(tiles.len(), 0);
    changed.clear();
    changed.resize(tiles.len(), false);
    let across = (r.w as usize).div_ceil(TILE as usize);
    let end = (r.y + r.h) as usize;
    for (band, y0) in (r.y as usize..end).step_by(TILE as usize).enumerate() {
        let ts = band * across..((band + 1) * across).min(tiles.len());
        let rows = y0..(y0 + TILE as usize).min(end);
        // Per tile: the columns and rows where the first plane differs.
        let mut spans = vec![(usize::MAX, 0usize, usize::MAX, 0usize); ts.len()];
        for y in rows.clone() {
            let (c, old) = (&cur[y * width..(y + 1) * width], reference.row(y));
            for (t, sp) in tiles[ts.clone()].iter().zip(spans.iter_mut()) {
                let (a, e) = (t.x as usize, (t.x + t.w) as usize);
                if let Some((x0, x1)) = crate::compare::diff_span(&old[a..e], &c[a..e]) {
                    *sp = (sp.0.min(a + x0), sp.1.max(a + x1), sp.2.min(y), y + 1);
                }
            }
        }
        let band_tiles = tiles[ts.clone()].iter_mut().zip(&mut changed[ts.clone()]);
        for ((t, ch), &(x0, x1, y0, y1)) in band_tiles.zip(spans.iter()) {
            if x0 < x1 {
                *t = Rect {
                    x: x0 as u32,
                    y: y0 as u32,
                    w: (x1 - x0) as u32,
                    h: (y1 - y0) as u32,
                };
                *ch = true;
            }
        }
        for k in 0..planes {
            for y in rows.clone() {
                let yk = k * ph + y;
                let (c, old) = (&cur[yk * width..(yk + 1) * width], reference.row(yk));
                let band = tiles[ts.clone()].iter().zip(&mut bits[ts.clone()]);
                for ((t, b), _) in band.zip(&changed[ts.clone()]).filter(|(_, ch)| **ch) {
                    if (t.y as usize..(t.y + t.h) as usize).contains(&y) {
                        let (a, e) = (t.x as usize, (t.x + t.w) as usize);
                        *b += xor_bits(&old[a..e], &c[a..e]);
                    }
                }
            }
        }
    }
}

/// Where predicted rectangles lie in each row of a plane, to leave XOR patches zero there.
pub struct Footprints {
    rows: Vec<Vec<(usize, usize)>>,
}

impl Footprints {
    pub fn new(predicted: &[Predicted], ph: usize) -> Footprints {
        let mut rows = vec![Vec::new(); if predicted.is_empty() { 0 } else { ph }];
        for r in predicted.iter().map(|p| p.rect) {
            for row in &mut rows[r.y as usize..(r.y + r.h) as usize] {
                row.push((r.x as usize, (r.x + r.w) as usize));
            }
        }
        Footprints { rows }
    }

    /// Zeros the part of `xor` (row `y` of the stacked picture from column `x`) that a
    /// predicted rectangle covers.
    pub fn clear(&self, y: usize, x: usize, xor: &mut [u8]) {
        if self.rows.is_empty() {
            return;
        }
        for &(a, b) in &self.rows[y % self.rows.len()] {
            let (a, b) = (a.max(x), b.min(x + xor.len()));
            if a < b {
                xor[a - x..b - x].fill(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_median_edge_detector_picks_as_jpeg_ls() {
        assert_eq!(med(10, 20, 25), 10, "c above both: the smaller");
        assert_eq!(med(10, 20, 5), 20, "c below both: the larger");
        assert_eq!(med(10, 20, 15), 15, "between: a + b - c");
        assert_eq!(med(200, 100, 150), 150);
    }

    /// The estimate by comparisons is its definition: zero for zero, else the bit length of the
    /// byte's magnitude as a signed byte, plus two.
    #[test]
    fn bits_are_the_magnitude_s_length_and_two() {
        for b in 0..=255u8 {
            let a = (b as i8).unsigned_abs();
            let want = if b == 0 {
                0
            } else {
                2 + 8 - a.leading_zeros() as u8
            };
            assert_eq!(bits(b), want, "byte {b}");
        }
        let row: Vec<u8> = (0..5000u32).map(|i| (i * 37) as u8).collect();
        let by_byte: u64 = row.iter().map(|&b| bits(b) as u64).sum();
        assert_eq!(
            residual_bits(&row),
            by_byte,
            "sums across the u16 lanes' flushes"
        );
    }

    /// The branchless clamp is JPEG-LS's three-way choice for every a, b and c.
    #[test]
    fn the_clamp_is_the_median_everywhere() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                let (lo, hi) = (a.min(b), a.max(b));
                for c in 0..=255u8 {
                    let want = if c >= hi {
                        lo
                    } else if c <= lo {
                        hi
                    } else {
                        a.wrapping_add(b).wrapping_sub(c)
                    };
                    assert_eq!(med(a, b, c), want, "a {a} b {b} c {c}");
                }
            }
        }
    }

    proptest! {
        /// Whatever rectangles are kept decode back to the source's pixels, in grey and colour.
        #[test]
        fn kept_rectangles_decode_exactly(
            planes in prop::sample::select(vec![1usize, 3]),
            w in 1usize..40, ph in 1usize..30,
            seed in any::<u64>(),
            flat in any::<bool>(),
            rects in prop::collection::vec((0usize..40, 0usize..30, 1usize..20, 1usize..20, prop::sample::select(vec![0u64, 1, 64, u64::MAX])), 1..6),
        ) {
            let mut s = seed | 1;
            let mut next = || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s };
            // Few distinct values when flat, so the colour cache hits.
            let cur: Vec<u8> = (0..w * ph * planes)
                .map(|_| if flat { (next() % 3) as u8 * 40 } else { next() as u8 })
                .collect();
            let mut e = Residuals::default();
            e.clear();
            let mut kept = Vec::new();
            let mut tried: Vec<Rect> = Vec::new();
            for (x, y, rw, rh, budget) in rects {
                let r = Rect { x: (x % w) as u32, y: (y % ph) as u32, w: rw.min(w - x % w) as u32, h: rh.min(ph - y % ph) as u32 };
                if tried.iter().any(|t| t.intersects(&r)) { continue; }
                tried.push(r);
                // Small budgets refuse some rectangles part way, after the tables changed:
                // what was refused must leave no trace the decoder would not see.
                match e.try_rect(&cur, w, ph, planes, &r, budget) {
                    Some(mode) => {
                        prop_assert!(planes == 3 || mode == Mode::Neighbours);
                        kept.push(Predicted { rect: r, mode });
                    }
                    None => prop_assert!(budget != u64::MAX),
                }
            }
            let data: Vec<u8> = e.bytes(planes).flatten().copied().collect();
            prop_assert_eq!(data.len(), planes * kept.iter().map(|p| p.rect.area()).sum::<usize>());
            let mut pic = vec![0x5Au8; cur.len()];
            apply(&mut pic, w, ph, planes, &kept, &data, &mut Tables::default());
            for r in kept.iter().map(|p| &p.rect) {
                for k in 0..planes {
                    for i in 0..r.h as usize {
                        let o = origin(r, w, ph, k) + i * w;
                        prop_assert_eq!(&pic[o..o + r.w as usize], &cur[o..o + r.w as usize]);
                    }
                }
            }
        }
    }
}
