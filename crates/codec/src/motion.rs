//! Finding moved rectangles from the pictures alone (for [`crate::rects`]).
//!
//! No search: every step is a hash lookup or a comparison that confirms a guess.
//! 1. Row hashes the host already has say which rows changed. With fewer than
//!    [`MIN_CHANGED_ROWS`], nothing is looked for: typing costs what it cost before.
//! 2. A whole-picture vertical shift is tried first, from the row hashes (as row deltas do):
//!    rows found exactly once in the previous picture vote for their displacement. It is taken
//!    when it leaves at most an eighth of the changed rows still different.
//! 3. Otherwise, in the changed rows of both pictures, **anchors** are found: a pixel that
//!    differs from a flat run of [`LEAD`] pixels before it (the start of a glyph, a window's
//!    edge). An anchor's key is the hash of the [`KEY_LEN`] pixels from it on. Anchors depend
//!    only on content, so content moved by (dx, dy) has the same anchors moved by (dx, dy). Each
//!    anchor of the new picture whose key occurs once among the old picture's anchors votes
//!    for that displacement. Anchors are looked for only where a row changed (its
//!    [`window`]): elsewhere the two pictures have the same anchors at the same places.
//! 4. For each displacement with enough votes, each voting row is extended left and right
//!    while the pixels match; the rectangle is what most of those rows share, grown up and
//!    down while whole rows of it match. Rows inside it that do not match cost a patch; the
//!    result is exact whatever is found.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::rects::{Compared, Move, Rect, MAX_MOVES};

/// Fewer changed rows than this: no moves are looked for.
pub const MIN_CHANGED_ROWS: usize = 16;
/// Pixels of flat run before an anchor.
pub const LEAD: usize = 4;
/// Pixels an anchor's key covers, from the anchor on.
pub const KEY_LEN: usize = 32;
/// Anchors a row contributes at most (bounds the work on noisy content).
const MAX_ANCHORS_PER_ROW: usize = 48;
/// Votes a displacement needs to be tried.
const MIN_VOTES: u32 = 6;
/// Changed rows of the new picture whose anchors vote: every other one, or every
/// `changed / VOTING_ROWS`-th where `3 × VOTING_ROWS` or more changed. On a live colour browser scroll (about 1,100
/// changed rows) voting with every fifth row instead of every other took the finder from a
/// quarter of the server's time to a sixth; bytes per changed picture on the corpus moved by
/// under 1 % either way (browser scroll +0.9 %, glxgears −2.8 %).
const VOTING_ROWS: usize = 200;
/// Displacements tried at most.
const MAX_CANDIDATES: usize = 8;
/// A move smaller than this is not worth its header.
const MIN_AREA: usize = 1024;
const AMBIGUOUS: u32 = u32::MAX;
const NOWHERE: u32 = u32::MAX - 1;

/// A position as one word (sides are at most 16384).
fn pack(x: u32, y: usize) -> u32 {
    (y as u32) << 16 | x
}

fn unpack(p: u32) -> (u32, u32) {
    (p & 0xFFFF, p >> 16)
}

fn key(px: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(px)
}

/// Keys here are already hashes (or small packed pairs): one multiply spreads them, where the
/// standard SipHash cost more than the rest of a lookup.
#[derive(Default)]
struct Mix(u64);

impl Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(29);
    }
}

type MixMap<K, V> = HashMap<K, V, BuildHasherDefault<Mix>>;

/// A displacement as one word, for the votes' map.
fn disp(dx: i32, dy: i32) -> u64 {
    (dx as u32 as u64) << 32 | dy as u32 as u64
}

/// The little-endian word at byte `at`.
pub(crate) fn word(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Bit `i` set when byte `i` of `v` is zero (eight bytes at once, no branches).
fn zero_bytes(v: u64) -> u64 {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let t = !(((v & LO7).wrapping_add(LO7)) | v | LO7);
    (t >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// The anchors of one row at `lo ≤ x < hi`: (x of the anchor, key). Pixel `x` is an anchor when
/// it differs from pixel `x − 1` and pixels `x − 4 … x − 1` are equal. Changes are found 64
/// pixels at a time as a bit mask (`d`, bit i: pixel i differs from the one before it), so flat
/// stretches and glyphs alike cost a few word operations per 8 pixels; only anchors are hashed.
/// Returns whether the row's cap of anchors was reached (the rest of the window is not read).
fn anchors(row: &[u8], (lo, hi): (usize, usize), out: &mut Vec<(u32, u64)>) -> bool {
    let w = row.len();
    let change = |p: usize| p == 0 || row[p] != row[p - 1];
    let mut n = 0;
    let mut base = lo / 64 * 64;
    // The change bits of the three pixels before the current block (pixel 0 counts as a
    // change, so the first run starts there, and so do the pixels before it).
    let mut carry: u64 = if base == 0 {
        0b111
    } else {
        (0..3).fold(0, |m, j| m | (change(base - 3 + j) as u64) << j)
    };
    let hi = hi.min(w);
    while base < hi {
        let mut d: u64 = 0;
        for k in 0..8 {
            let x = base + 8 * k;
            let bits = if x >= 1 && x + 8 <= w {
                !zero_bytes(word(row, x) ^ word(row, x - 1)) & 0xFF
            } else {
                (0..8)
                    .filter(|&i| x + i < w && change(x + i))
                    .fold(0, |m, i| m | 1 << i)
            };
            d |= bits << (8 * k);
        }
        let before = d << 1 | carry >> 2 & 1;
        let before2 = d << 2 | carry >> 1 & 3;
        let before3 = d << 3 | carry & 7;
        let mut a = d & !before & !before2 & !before3;
        carry = d >> 61;
        while a != 0 {
            let x = base + a.trailing_zeros() as usize;
            a &= a - 1;
            if x < lo {
                continue;
            }
            if x >= hi || x + KEY_LEN > w {
                return false;
            }
            out.push((x as u32, key(&row[x..x + KEY_LEN])));
            n += 1;
            if n == MAX_ANCHORS_PER_ROW {
                return true;
            }
        }
        base += 64;
    }
    false
}

/// Where anchors of a changed row are looked for: the columns where the old and new rows
/// differ, widened by a key's length to the left (an anchor there has a key that reaches in)
/// and to whole blocks of 64 pixels (so the window of a row is often the same from frame to
/// frame, and its anchors are found in the cache). Anchors outside it have the same key at the
/// same place in both pictures: they vote for no displacement, and scanning them was most of the
/// finder's time on a browser whose page scrolls beside a fixed sidebar. `span` is where the
/// rows differ ([`crate::compare::diff_span`]), which [`Compared`] hands on to the patches.
fn window(span: Option<(usize, usize)>, width: usize) -> (usize, usize) {
    let Some((x0, x1)) = span else {
        return (0, 0);
    };
    let lo = x0.saturating_sub(KEY_LEN - 1) / 64 * 64;
    (lo, x1.div_ceil(64).saturating_mul(64).min(width))
}

/// How far left of `x` (down to `lo`) and right of it (up to `hi`) `a` and `b` stay equal.
fn matching_run(a: &[u8], b: &[u8], x: usize, lo: usize, hi: usize) -> (usize, usize) {
    let (mut l, mut r) = (x, x);
    while l >= lo + 8 && word(a, l - 8) == word(b, l - 8) {
        l -= 8;
    }
    while l > lo && a[l - 1] == b[l - 1] {
        l -= 1;
    }
    while r + 8 <= hi && word(a, r) == word(b, r) {
        r += 8;
    }
    while r < hi && a[r] == b[r] {
        r += 1;
    }
    (l, r)
}

/// Buffers reused from frame to frame.
#[derive(Default)]
pub struct Finder {
    /// Anchor key → (where in the new picture, where in the old), or AMBIGUOUS / NOWHERE.
    table: MixMap<u64, (u32, u32)>,
    cur_anchors: Vec<(u64, u32)>,
    votes: MixMap<u64, u32>,
    /// Anchors of the new picture that matched: (x, y, dx, dy).
    seeds: Vec<(u32, u32, i32, i32)>,
    row: Vec<(u32, u64)>,
    changed: Vec<usize>,
    /// Where each changed row's anchors are looked for (see [`window`]).
    windows: Vec<(usize, usize)>,
    /// Anchors of rows of the new picture, by row hash: the next frame's old picture is this
    /// one, so its rows are not scanned twice. Anchors depend only on a row's pixels, so a hash
    /// names them whatever the row's place; a stale entry is still right within its window.
    made: AnchorCache,
    /// The previous frame's `made`.
    known: AnchorCache,
    /// What was compared on the way, for the patches.
    compared: Compared,
}

/// Anchors of rows in a window, by the row's hash.
#[derive(Default)]
struct AnchorCache {
    rows: MixMap<u64, Cached>,
    anchors: Vec<(u32, u64)>,
}

/// Where a row's anchors are in [`AnchorCache::anchors`], and what they cover.
#[derive(Clone, Copy)]
struct Cached {
    at: u32,
    n: u32,
    window: (usize, usize),
    /// The row's cap was reached: they are the first anchors of the window, not all of them.
    capped: bool,
}

impl AnchorCache {
    fn clear(&mut self) {
        self.rows.clear();
        self.anchors.clear();
    }

    /// The anchors a scan of `window` would find, when the cached ones include them all.
    fn get(&self, hash: u64, (lo, hi): (usize, usize)) -> Option<&[(u32, u64)]> {
        let c = self.rows.get(&hash)?;
        let (clo, chi) = c.window;
        // A capped list holds the first anchors from its own start: a window that starts
        // elsewhere may have others.
        if lo < clo || hi > chi || (c.capped && lo != clo) {
            return None;
        }
        let all = &self.anchors[c.at as usize..(c.at + c.n) as usize];
        let from = all.partition_point(|a| (a.0 as usize) < lo);
        let to = all.partition_point(|a| (a.0 as usize) < hi);
        Some(&all[from..to])
    }

    fn put(&mut self, hash: u64, window: (usize, usize), capped: bool, anchors: &[(u32, u64)]) {
        let at = self.anchors.len() as u32;
        self.anchors.extend_from_slice(anchors);
        let n = anchors.len() as u32;
        self.rows.insert(
            hash,
            Cached {
                at,
                n,
                window,
                capped,
            },
        );
    }
}

impl Finder {
    /// The moves that bring `prev` closest to `cur` (both `width` wide, with row hashes).
    pub fn find(
        &mut self,
        prev: &[u8],
        cur: &[u8],
        width: usize,
        prev_hashes: &[u64],
        cur_hashes: &[u64],
    ) -> Vec<Move> {
        let h = cur_hashes.len();
        self.compared.clear();
        if width == 0 || h == 0 || prev_hashes.len() != h || width > u16::MAX as usize {
            return Vec::new();
        }
        self.changed.clear();
        self.changed
            .extend((0..h).filter(|&y| prev_hashes[y] != cur_hashes[y]));
        if self.changed.len() < MIN_CHANGED_ROWS {
            return Vec::new();
        }
        let plan = crate::rows::plan(prev_hashes, cur_hashes);
        // The whole picture shifted, with few rows left over (a full-screen scroll): one move.
        // With many left (a page scrolled beside a fixed sidebar), look for rectangles instead.
        if plan.dy != 0 && plan.rows() * 8 <= self.changed.len() {
            let d = plan.dy.unsigned_abs();
            let y = if plan.dy < 0 { d } else { 0 };
            return vec![Move {
                to: Rect {
                    x: 0,
                    y,
                    w: width as u32,
                    h: h as u32 - d,
                },
                dx: 0,
                dy: plan.dy,
            }];
        }
        self.compared.start(width, h);
        for y in (0..h).filter(|&y| prev_hashes[y] == cur_hashes[y]) {
            self.compared.set_span(y, None);
        }
        if !self.vote((prev, cur, width), (prev_hashes, cur_hashes)) {
            return Vec::new();
        }
        let mut cands: Vec<((i32, i32), u32)> = self
            .votes
            .iter()
            .filter(|(_, &n)| n >= MIN_VOTES)
            .map(|(&d, &n)| (((d >> 32) as i32, d as u32 as i32), n))
            .collect();
        cands.sort_unstable_by_key(|&(d, n)| (std::cmp::Reverse(n), d));
        cands.truncate(MAX_CANDIDATES);
        let mut moves: Vec<Move> = Vec::new();
        for (d, _) in cands {
            if moves.len() == MAX_MOVES {
                break;
            }
            if let Some((m, fitted)) = self.grow(prev, cur, width, h, d) {
                moves.push(m);
                self.compared.push_move(m, fitted);
            }
        }
        // Larger moves first: where a smaller one overlaps (a window dragged over a scrolling
        // page), it is applied later and wins, as the spec's order says.
        let mut order: Vec<usize> = (0..moves.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(moves[i].to.area()));
        self.compared.reorder(&order);
        self.compared.moves().to_vec()
    }

    /// What the last [`Finder::find`] compared in its plane: where changed rows differ from
    /// the old ones at their places, and which rows of each move (in the order returned)
    /// matched whole. Valid for the pictures it was given.
    pub fn compared(&self) -> &Compared {
        &self.compared
    }

    /// Anchors of every other changed row of the new picture (fewer where many changed: see
    /// [`VOTING_ROWS`]), looked up among the anchors of every changed row of the old one; votes
    /// and seeds. Returns false when the new picture
    /// has too few anchors to vote (noise, a photograph), before the old one is read.
    fn vote(
        &mut self,
        (prev, cur, width): (&[u8], &[u8], usize),
        hashes: (&[u64], &[u64]),
    ) -> bool {
        let (prev_hashes, cur_hashes) = hashes;
        self.table.clear();
        self.votes.clear();
        self.seeds.clear();
        self.cur_anchors.clear();
        std::mem::swap(&mut self.known, &mut self.made);
        self.made.clear();
        self.windows.clear();
        for &y in &self.changed {
            let row = y * width..(y + 1) * width;
            let span = crate::compare::diff_span(&prev[row.clone()], &cur[row]);
            self.compared.set_span(y, span);
            self.windows.push(window(span, width));
        }
        let step = (self.changed.len() / VOTING_ROWS).max(2);
        for (&y, &win) in self.changed.iter().zip(&self.windows).step_by(step) {
            self.row.clear();
            let capped = anchors(&cur[y * width..(y + 1) * width], win, &mut self.row);
            self.made.put(cur_hashes[y], win, capped, &self.row);
            for &(x, k) in &self.row {
                let at = pack(x, y);
                self.cur_anchors.push((k, at));
                // A key twice in the new picture cannot say where either came from.
                self.table
                    .entry(k)
                    .and_modify(|v| v.0 = AMBIGUOUS)
                    .or_insert((at, NOWHERE));
            }
        }
        if self.cur_anchors.len() < MIN_VOTES as usize {
            return false;
        }
        for (&y, &win) in self.changed.iter().zip(&self.windows) {
            let row = match self.known.get(prev_hashes[y], win) {
                Some(known) => known,
                None => {
                    self.row.clear();
                    anchors(&prev[y * width..(y + 1) * width], win, &mut self.row);
                    &self.row
                }
            };
            for &(x, k) in row {
                if let Some(v) = self.table.get_mut(&k) {
                    v.1 = if v.1 == NOWHERE {
                        pack(x, y)
                    } else {
                        AMBIGUOUS
                    };
                }
            }
        }
        for &(k, at) in &self.cur_anchors {
            let (c, p) = self.table[&k];
            if c == AMBIGUOUS || p == AMBIGUOUS || p == NOWHERE {
                continue;
            }
            let ((x, y), (sx, sy)) = (unpack(at), unpack(p));
            let d = (sx as i32 - x as i32, sy as i32 - y as i32);
            if d != (0, 0) {
                *self.votes.entry(disp(d.0, d.1)).or_default() += 1;
                self.seeds.push((x, y, d.0, d.1));
            }
        }
        true
    }

    /// The rectangle where displacement `d` holds, from its seeds, and which of its rows match
    /// whole.
    fn grow(
        &self,
        prev: &[u8],
        cur: &[u8],
        width: usize,
        h: usize,
        (dx, dy): (i32, i32),
    ) -> Option<(Move, Vec<bool>)> {
        fn row_of(pic: &[u8], y: usize, width: usize) -> &[u8] {
            &pic[y * width..(y + 1) * width]
        }
        // Each seed row's matching run around its seed (one run per row).
        let mut runs: Vec<(usize, usize, usize)> = Vec::new(); // y, x0, x1
        for &(x, y, sdx, sdy) in &self.seeds {
            if (sdx, sdy) != (dx, dy) || runs.last().is_some_and(|r| r.0 == y as usize) {
                continue;
            }
            let (y, x) = (y as usize, x as usize);
            let sy = (y as i64 + dy as i64) as usize;
            let (c, p) = (row_of(cur, y, width), row_of(prev, sy, width));
            // The new row from `lo` against the old row from `lo + dx`, both `hi - lo` long.
            let lo = (-(dx as i64)).max(0) as usize;
            let hi = (width as i64 - (dx as i64).max(0)) as usize;
            let sl = (lo as i64 + dx as i64) as usize;
            let (a, b) = matching_run(&c[lo..hi], &p[sl..sl + (hi - lo)], x - lo, 0, hi - lo);
            let (a, b) = (a + lo, b + lo);
            if b > a {
                runs.push((y, a, b));
            }
        }
        if runs.len() < 4 {
            return None;
        }
        // Most rows start at or left of x0 and end at or right of x1.
        let mut starts: Vec<usize> = runs.iter().map(|r| r.1).collect();
        let mut ends: Vec<usize> = runs.iter().map(|r| r.2).collect();
        starts.sort_unstable();
        ends.sort_unstable();
        let x0 = starts[starts.len() * 4 / 5];
        let x1 = ends[ends.len() / 5];
        if x1 <= x0 + 8 {
            return None;
        }
        let (ylo, yhi) = (
            (-(dy as i64)).max(0) as usize,
            (h as i64 - (dy as i64).max(0)) as usize,
        );
        let fits = |y: usize| {
            let sy = (y as i64 + dy as i64) as usize;
            let sx = (x0 as i64 + dx as i64) as usize;
            cur[y * width + x0..y * width + x1]
                == prev[sy * width + sx..sy * width + sx + (x1 - x0)]
        };
        let (mut y0, mut y1) = (runs[0].0, runs[runs.len() - 1].0 + 1);
        while y0 < y1 && !fits(y0) {
            y0 += 1;
        }
        while y1 > y0 && !fits(y1 - 1) {
            y1 -= 1;
        }
        while y0 > ylo && fits(y0 - 1) {
            y0 -= 1;
        }
        while y1 < yhi && fits(y1) {
            y1 += 1;
        }
        let to = Rect {
            x: x0 as u32,
            y: y0 as u32,
            w: (x1 - x0) as u32,
            h: y1.saturating_sub(y0) as u32,
        };
        // Half its rows at least must match whole: a displacement that only lines up here and
        // there (repeated text) would cost more patches than it saves.
        if to.area() < MIN_AREA {
            return None;
        }
        let fitted: Vec<bool> = (y0..y1).map(fits).collect();
        let fitting = fitted.iter().filter(|&&f| f).count();
        (2 * fitting >= (y1 - y0)).then_some((Move { to, dx, dy }, fitted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, one pixel at a time, in the window `lo ≤ x < hi`.
    fn anchors_by_definition(row: &[u8], (lo, hi): (usize, usize)) -> Vec<u32> {
        (LEAD..row.len())
            .filter(|&x| row[x] != row[x - 1] && (x - LEAD..x).all(|i| row[i] == row[x - 1]))
            .filter(|&x| x + KEY_LEN <= row.len() && (lo..hi).contains(&x))
            .map(|x| x as u32)
            .take(MAX_ANCHORS_PER_ROW)
            .collect()
    }

    /// A page of text-like rows scrolled by `top` beside a fixed sidebar, `w` × `h`.
    fn page(top: usize, w: usize, h: usize) -> Vec<u8> {
        let mut p = vec![0u8; w * h];
        for y in 0..h {
            for x in 0..w {
                let v = if x < 40 {
                    (y * 37 % 251) as u8
                } else {
                    let (py, px) = ((y + top) as u64, x as u64);
                    let line = py / 9;
                    let glyph = (line.wrapping_mul(0x9E37_79B9) ^ (px / 6).wrapping_mul(31)) % 5;
                    if py % 9 < 6 && glyph < 2 && px % 6 < 4 {
                        (glyph as u8 + 1) * 60 + (py % 9) as u8 * 3
                    } else {
                        255
                    }
                };
                p[y * w + x] = v;
            }
        }
        p
    }

    /// A finder that reuses the anchors of the picture before finds the moves a fresh one
    /// finds, frame after frame of a scroll whose step changes.
    #[test]
    fn anchors_kept_from_the_frame_before_change_nothing_found() {
        let (w, h) = (320, 200);
        let mut kept = Finder::default();
        let mut tops = vec![0usize];
        for step in [7, 7, 13, 3, 21, 2, 0, 9] {
            tops.push(tops.last().unwrap() + step);
        }
        let mut found_any = 0;
        for pair in tops.windows(2) {
            let (prev, cur) = (page(pair[0], w, h), page(pair[1], w, h));
            let (mut ph, mut ch) = (Vec::new(), Vec::new());
            crate::checksum::row_hashes(&prev, w, &mut ph);
            crate::checksum::row_hashes(&cur, w, &mut ch);
            let again = kept.find(&prev, &cur, w, &ph, &ch);
            let fresh = Finder::default().find(&prev, &cur, w, &ph, &ch);
            assert_eq!(again, fresh, "tops {pair:?}");
            found_any += again.iter().any(|m| m.dy == (pair[1] - pair[0]) as i32) as usize;
        }
        assert!(found_any >= 7, "the scroll was found in {found_any} frames");
        assert!(!kept.known.rows.is_empty(), "anchors were kept");
    }

    #[test]
    fn the_bit_mask_scan_finds_exactly_the_defined_anchors() {
        let mut s = 0x9E37_79B9u64;
        for len in [0usize, 1, 5, 8, 9, 63, 64, 65, 127, 200, 1600] {
            for density in [2u64, 5, 9, 40] {
                // Runs of random lengths: flat stretches and busy ones.
                let mut row = Vec::with_capacity(len);
                while row.len() < len {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    let run = 1 + (s % density) as usize;
                    row.extend(std::iter::repeat_n((s >> 20) as u8 % 3, run));
                }
                row.truncate(len);
                // The whole row, and windows that start and end anywhere, in a block or not.
                let cuts = [0, 3, 61, 64, 65, 130, len / 3, len / 2, len];
                for (i, &lo) in cuts.iter().enumerate() {
                    for &hi in &cuts[i..] {
                        let win = (lo.min(len), hi.min(len));
                        let mut got = Vec::new();
                        let capped = anchors(&row, win, &mut got);
                        let xs: Vec<u32> = got.iter().map(|a| a.0).collect();
                        let want = anchors_by_definition(&row, win);
                        assert_eq!(xs, want, "len {len}, density {density}, window {win:?}");
                        assert_eq!(capped, want.len() == MAX_ANCHORS_PER_ROW);
                        for &(x, k) in &got {
                            assert_eq!(k, key(&row[x as usize..x as usize + KEY_LEN]));
                        }
                    }
                }
            }
        }
    }
}
