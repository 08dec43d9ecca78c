//! The viewer's picture: applies keyframes and deltas and verifies checksums.
//!
//! Rows are kept as a ring: logical row `y` is stored at row `(top + y) % height`. A row delta
//! that scrolls the picture by `dy` rows then moves `top` and copies `|dy|` rows instead of
//! moving the whole picture (1.9 MB at 1600×1200, the largest cost of applying a scroll).
//! A display can draw the ring as it is (a texture with a wrapped vertical offset) or read it
//! row by row; [`Picture::to_vec`] gives the contiguous picture.
//!
//! The picture also keeps the hash of each of its rows, updated by every apply: a keyframe or a
//! full-frame delta rehashes every row; a row delta moves the hashes with its rows and
//! rehashes only the rows it XORs. So [`Picture::checksum`] describes the pixels actually held,
//! at the cost of the rows that changed (see [`crate::checksum`]).

use thiserror::Error;

use crate::block::{BlockCodec, CodecError};
use crate::checksum::{checksum_of_rows, row_hash, row_hashes};
use crate::delta::xor_in_place;
use crate::rects::RectPlan;
use crate::rows::RowPlan;

#[derive(Debug, Error)]
pub enum ApplyError {
    #[error("delta received before any keyframe")]
    NoReference,
    #[error(transparent)]
    Codec(#[from] CodecError),
}

/// A grey picture plus the scratch space to decode a delta into. Decoding and applying are two
/// calls so a caller can time each stage.
pub struct Picture {
    width: u32,
    height: u32,
    /// The rows, as a ring starting at row `top`.
    store: Vec<u8>,
    top: usize,
    /// `hashes[y]` is the hash of logical row `y`, once the picture is valid.
    hashes: Vec<u64>,
    scratch: Vec<u8>,
    /// The picture before a moved-rectangle delta's moves (they all read from it).
    before: Vec<u8>,
    /// The colour cache of predicted rectangles.
    tables: Option<Box<crate::predict::Tables>>,
    valid: bool,
    pending: Pending,
}

/// A copy of a picture ([`Picture::save`]).
#[derive(Debug, Default, Clone)]
pub struct Saved {
    store: Vec<u8>,
    hashes: Vec<u64>,
    top: usize,
    size: (u32, u32),
}

enum Pending {
    Nothing,
    Keyframe,
    Delta,
    Rows(RowPlan, usize),
    Rects(RectPlan),
}

impl Picture {
    pub fn new(width: u32, height: u32) -> Self {
        let n = width as usize * height as usize;
        Picture {
            width,
            height,
            store: vec![0; n],
            top: 0,
            hashes: Vec::new(),
            scratch: vec![0; n],
            before: Vec::new(),
            tables: None,
            valid: false,
            pending: Pending::Nothing,
        }
    }

    pub fn width(&self) -> u32 {
        self.width
    }
    pub fn height(&self) -> u32 {
        self.height
    }
    pub fn len(&self) -> usize {
        self.store.len()
    }
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }
    /// True once a keyframe has been applied and nothing has failed since.
    pub fn is_valid(&self) -> bool {
        self.valid
    }

    /// The storage as it is: row `top_row()` holds the picture's first row, and rows wrap.
    pub fn ring(&self) -> (&[u8], usize) {
        (&self.store, self.top)
    }

    /// Logical row `y`.
    pub fn row(&self, y: usize) -> &[u8] {
        let (w, h) = (self.width as usize, self.height as usize);
        let p = (self.top + y) % h;
        &self.store[p * w..(p + 1) * w]
    }

    /// The picture's rows, top to bottom.
    pub fn rows(&self) -> impl Iterator<Item = &[u8]> {
        let w = (self.width as usize).max(1);
        let (tail, head) = self.store.split_at(self.top * self.width as usize);
        head.chunks_exact(w).chain(tail.chunks_exact(w))
    }

    /// The picture as one contiguous buffer (a copy).
    pub fn to_vec(&self) -> Vec<u8> {
        let (tail, head) = self.store.split_at(self.top * self.width as usize);
        [head, tail].concat()
    }

    /// Whether the picture equals `pixels` (contiguous, row after row).
    pub fn equals(&self, pixels: &[u8]) -> bool {
        let (tail, head) = self.store.split_at(self.top * self.width as usize);
        pixels.len() == self.store.len()
            && &pixels[..head.len()] == head
            && &pixels[head.len()..] == tail
    }

    /// Copies the valid picture into `into` (its buffers reused), to be restored later: a
    /// viewer keeps the pictures a host may still make deltas against.
    ///
    /// Only the storage rows that differ are copied, told apart by the row hashes both sides
    /// already keep: a viewer saves after every frame, and a whole colour picture is 5.8 MB
    /// at 1600×1200, where a frame changes a few rows. A scroll moves the ring's `top`, not
    /// the rows, so after one the storage rows still match but for the exposed ones.
    pub fn save(&self, into: &mut Saved) {
        if self.hashes_hold() && into.size == (self.width, self.height) && same_shape(into, self) {
            copy_changed_slots(
                (&self.store, &self.hashes, self.top),
                (&mut into.store, &into.hashes, into.top),
                self.width as usize,
            );
        } else {
            into.store.clear();
            into.store.extend_from_slice(&self.store);
        }
        into.hashes.clear();
        into.hashes.extend_from_slice(&self.hashes);
        into.top = self.top;
        into.size = (self.width, self.height);
    }

    /// Whether the row hashes describe the rows held (a valid picture with nothing pending).
    fn hashes_hold(&self) -> bool {
        self.valid && matches!(self.pending, Pending::Nothing)
    }

    /// Makes the picture the one saved (of the same size), valid. As [`Picture::save`], only
    /// the storage rows that differ are copied when this picture's hashes describe it.
    pub fn restore(&mut self, from: &Saved) -> bool {
        if from.size != (self.width, self.height) || from.store.len() != self.store.len() {
            return false;
        }
        if self.hashes_hold() && same_shape(from, self) {
            copy_changed_slots(
                (&from.store, &from.hashes, from.top),
                (&mut self.store, &self.hashes, self.top),
                self.width as usize,
            );
        } else {
            self.store.copy_from_slice(&from.store);
        }
        self.hashes.clear();
        self.hashes.extend_from_slice(&from.hashes);
        self.top = from.top;
        self.valid = true;
        self.pending = Pending::Nothing;
        true
    }

    /// Reallocates for a new size; the picture is invalid until the next keyframe.
    pub fn resize(&mut self, width: u32, height: u32) {
        *self = Picture::new(width, height);
    }

    /// Decompresses a payload. A keyframe lands straight in the picture (no extra copy); a delta
    /// lands in scratch until [`Picture::apply`]. On error the picture is marked invalid, so
    /// no later delta is applied to a wrong base.
    pub fn decode(
        &mut self,
        keyframe: bool,
        codec: BlockCodec,
        payload: &[u8],
    ) -> Result<(), ApplyError> {
        self.pending = Pending::Nothing;
        if keyframe {
            self.top = 0;
            let r = codec.decompress(payload, &mut self.store);
            self.valid = r.is_ok();
            r?;
            self.pending = Pending::Keyframe;
        } else {
            if !self.valid {
                return Err(ApplyError::NoReference);
            }
            let n = self.store.len();
            if let Err(e) = codec.decompress(payload, &mut self.scratch[..n]) {
                // The picture itself is untouched, but the stream now lacks this delta.
                self.valid = false;
                return Err(e.into());
            }
            self.pending = Pending::Delta;
        }
        Ok(())
    }

    /// Decompresses a row delta (see [`crate::rows`]); [`Picture::apply`] shifts and XORs.
    pub fn decode_rows(&mut self, codec: BlockCodec, payload: &[u8]) -> Result<(), ApplyError> {
        self.pending = Pending::Nothing;
        if !self.valid {
            return Err(ApplyError::NoReference);
        }
        let w = self.width as usize;
        let r = crate::rows::parse_header(payload, self.height as usize).and_then(|h| {
            let n = h.plan.rows() * w;
            codec
                .decompress(&payload[h.data_offset..], &mut self.scratch[..n])
                .map(|()| (h.plan, n))
        });
        match r {
            Ok((plan, n)) => {
                self.pending = Pending::Rows(plan, n);
                Ok(())
            }
            Err(e) => {
                self.valid = false;
                Err(e.into())
            }
        }
    }

    /// Decompresses a moved-rectangle delta (see [`crate::rects`]); [`Picture::apply`] moves
    /// and patches.
    pub fn decode_rects(&mut self, codec: BlockCodec, payload: &[u8]) -> Result<(), ApplyError> {
        self.pending = Pending::Nothing;
        if !self.valid {
            return Err(ApplyError::NoReference);
        }
        let (w, h) = (self.width as usize, self.height as usize);
        let r = crate::rects::parse_header(payload, w, h).and_then(|(plan, at)| {
            let n = plan.block_bytes();
            if self.scratch.len() < n {
                // Predicted rectangles may take up to two pictures' worth (bounded by the parse).
                self.scratch.resize(n, 0);
            }
            codec
                .decompress(&payload[at..], &mut self.scratch[..n])
                .map(|()| plan)
        });
        match r {
            Ok(plan) => {
                self.pending = Pending::Rects(plan);
                Ok(())
            }
            Err(e) => {
                self.valid = false;
                Err(e.into())
            }
        }
    }

    /// Applies what the last decode produced: hashes a keyframe's rows, XORs a delta, or
    /// shifts and patches rows.
    pub fn apply(&mut self) {
        let w = self.width as usize;
        match std::mem::replace(&mut self.pending, Pending::Nothing) {
            Pending::Nothing => {}
            Pending::Keyframe => row_hashes(&self.store, w, &mut self.hashes),
            Pending::Delta => {
                self.make_contiguous();
                let n = self.store.len();
                xor_in_place(&mut self.store, &self.scratch[..n]);
                row_hashes(&self.store, w, &mut self.hashes);
            }
            Pending::Rows(plan, n) => {
                if self.hashes.len() != self.height as usize {
                    // The keyframe was decoded but never applied: hash what is there.
                    self.make_contiguous();
                    row_hashes(&self.store, w, &mut self.hashes);
                }
                self.shift(plan.dy);
                crate::rows::shift_rows(&mut self.hashes, 1, plan.dy);
                let mut off = 0;
                for &(y0, rows) in &plan.ranges {
                    for y in y0 as usize..(y0 + rows) as usize {
                        let p = (self.top + y) % self.height as usize;
                        let row = &mut self.store[p * w..(p + 1) * w];
                        for (d, x) in row.iter_mut().zip(&self.scratch[off..off + w]) {
                            *d ^= x;
                        }
                        self.hashes[y] = row_hash(row);
                        off += w;
                    }
                }
                debug_assert_eq!(off, n);
            }
            Pending::Rects(plan) => self.apply_rects(plan),
        }
    }

    /// Moves, then patches. A single move that is the whole picture shifted vertically (what a
    /// full-page scroll is) moves the ring's top instead of copying, as a row delta does.
    fn apply_rects(&mut self, plan: RectPlan) {
        let (w, h) = (self.width as usize, self.height as usize);
        if self.hashes.len() != h {
            self.make_contiguous();
            row_hashes(&self.store, w, &mut self.hashes);
        }
        let mut touched = vec![false; h];
        match plan.moves.as_slice() {
            [] => {}
            [m] if is_whole_shift(m, w, h) => {
                self.shift(m.dy);
                crate::rows::shift_rows(&mut self.hashes, 1, m.dy);
            }
            moves => {
                // Rows whose hashes the moves tell keep them, as the host's encoder assumes
                // where it sends no patch; the others are hashed again (on a browser page
                // scrolling beside a sidebar in colour, hashing was half the viewer's time).
                // Rows a copy would leave as they are are not copied.
                let (mut after, mut idle) = (Vec::new(), Vec::new());
                crate::rects::moves_that_change(&self.hashes, w, moves, &mut after, &mut idle);
                self.make_contiguous();
                if crate::rects::independent(moves) {
                    // No move reads where another writes: each one in place, overlap-safe,
                    // without a copy of the whole picture first.
                    crate::rects::apply_moves_in_place(&mut self.store, w, moves, Some(&idle));
                } else {
                    self.before.clear();
                    self.before.extend_from_slice(&self.store);
                    crate::rects::apply_moves(&mut self.store, &self.before, w, moves, Some(&idle));
                }
                for (y, known) in after.into_iter().enumerate() {
                    match known {
                        Some(k) => self.hashes[y] = k,
                        None => touched[y] = true,
                    }
                }
            }
        }
        let mut off = 0;
        for r in &plan.patches {
            let (x, pw) = (r.x as usize, r.w as usize);
            let rows = r.y as usize..(r.y + r.h) as usize;
            for (y, t) in touched[rows.clone()].iter_mut().enumerate() {
                let p = (self.top + rows.start + y) % h;
                let row = &mut self.store[p * w + x..p * w + x + pw];
                xor_in_place(row, &self.scratch[off..off + pw]);
                off += pw;
                *t = true;
            }
        }
        if plan.planes > 0 && !plan.predicted.is_empty() {
            // Rare and large (a video's frame): in rows order first, then written in place.
            self.make_contiguous();
            let ph = h / plan.planes;
            let tables = self.tables.get_or_insert_with(Default::default);
            crate::predict::apply(
                &mut self.store,
                w,
                ph,
                plan.planes,
                &plan.predicted,
                &self.scratch[off..plan.block_bytes()],
                tables,
            );
            for r in plan.predicted.iter().map(|p| p.rect) {
                for k in 0..plan.planes {
                    let y0 = k * ph + r.y as usize;
                    touched[y0..y0 + r.h as usize].fill(true);
                }
            }
        }
        for (y, _) in touched.iter().enumerate().filter(|(_, t)| **t) {
            let p = (self.top + y) % h;
            self.hashes[y] = row_hash(&self.store[p * w..(p + 1) * w]);
        }
    }

    /// Shifts the picture as [`crate::rows::shift_rows`] defines: row `y` becomes old row
    /// `y + dy` where that exists, and keeps its content where it does not. Moving `top` does
    /// the first part; the `|dy|` rows that keep their content are copied into place.
    fn shift(&mut self, dy: i32) {
        let (w, h) = (self.width as usize, self.height as usize);
        let d = dy.unsigned_abs() as usize;
        if d == 0 || d >= h {
            return;
        }
        if 2 * d > h {
            // The rows kept would overlap the rows they move to: do it the plain way.
            self.make_contiguous();
            crate::rows::shift_rows(&mut self.store, w, dy);
            return;
        }
        let old_top = self.top;
        let (kept, new_top) = if dy > 0 {
            (h - d..h, (old_top + d) % h)
        } else {
            (0..d, (old_top + h - d) % h)
        };
        for y in kept {
            let (from, to) = ((old_top + y) % h, (new_top + y) % h);
            self.store.copy_within(from * w..(from + 1) * w, to * w);
        }
        self.top = new_top;
    }

    /// Stores the rows in order again (`top` = 0).
    fn make_contiguous(&mut self) {
        if self.top != 0 {
            self.store.rotate_left(self.top * self.width as usize);
            self.top = 0;
        }
    }

    /// The checksum of the picture held (from its row hashes; see [`crate::checksum`]).
    pub fn checksum(&self) -> u64 {
        checksum_of_rows(&self.hashes)
    }

    /// Forgets the picture, e.g. after a checksum mismatch: only a keyframe is accepted next.
    pub fn invalidate(&mut self) {
        self.valid = false;
    }
}

/// The move is the whole picture shifted by `dy` rows: every row that has a source takes it.
fn is_whole_shift(m: &crate::rects::Move, w: usize, h: usize) -> bool {
    let d = m.dy.unsigned_abs() as usize;
    let y = if m.dy < 0 { d } else { 0 };
    m.dx == 0
        && m.dy != 0
        && m.to.x == 0
        && m.to.w as usize == w
        && m.to.y as usize == y
        && m.to.h as usize + d == h
}

/// Whether a saved picture and a picture have the same storage and one hash per row.
fn same_shape(s: &Saved, p: &Picture) -> bool {
    let h = p.height as usize;
    s.store.len() == p.store.len() && s.hashes.len() == h && p.hashes.len() == h && h > 0
}

/// Copies storage row `p` of `from` into `to` where their contents differ: storage row `p`
/// holds logical row `(p - top) mod h`, whose hash each side keeps.
fn copy_changed_slots(
    (from, from_hashes, from_top): (&[u8], &[u64], usize),
    (to, to_hashes, to_top): (&mut [u8], &[u64], usize),
    w: usize,
) {
    let h = from_hashes.len();
    for p in 0..h {
        let a = from_hashes[(p + h - from_top % h) % h];
        let b = to_hashes[(p + h - to_top % h) % h];
        if a != b {
            to[p * w..(p + 1) * w].copy_from_slice(&from[p * w..(p + 1) * w]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::picture_checksum;
    use proptest::prelude::*;

    fn row_delta(plan: &RowPlan, rows: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&plan.dy.to_le_bytes());
        out.extend_from_slice(&(plan.ranges.len() as u32).to_le_bytes());
        for &(y0, n) in &plan.ranges {
            out.extend_from_slice(&y0.to_le_bytes());
            out.extend_from_slice(&n.to_le_bytes());
        }
        let mut block = Vec::new();
        BlockCodec::Raw.compress(rows, &mut block).unwrap();
        out.extend_from_slice(&block);
        out
    }

    /// A `w`×`h` picture from a keyframe, and its contiguous model.
    fn keyed(w: u32, h: u32) -> (Picture, Vec<u8>) {
        let key: Vec<u8> = (0..(w * h) as usize)
            .map(|i| (i * 37 % 251) as u8)
            .collect();
        let mut pic = Picture::new(w, h);
        let mut b = Vec::new();
        BlockCodec::Raw.compress(&key, &mut b).unwrap();
        pic.decode(true, BlockCodec::Raw, &b).unwrap();
        pic.apply();
        (pic, key)
    }

    /// Applies a row delta (shift `dy`, then the rows `patch` marks get values from `v`) to
    /// the picture and, by the definition in `rows`, to its model.
    fn scroll_and_patch(pic: &mut Picture, model: &mut [u8], dy: i32, patch: &[bool], v: u8) {
        let (w, h) = (pic.width(), pic.height());
        let ranges = (0..h)
            .filter(|&y| patch[y as usize])
            .map(|y| (y, 1))
            .collect();
        let plan = RowPlan {
            dy: dy % h as i32,
            ranges,
        };
        let rows: Vec<u8> = (0..plan.rows() * w as usize)
            .map(|i| v.wrapping_add(i as u8) | 1)
            .collect();
        pic.decode_rows(BlockCodec::Raw, &row_delta(&plan, &rows))
            .unwrap();
        pic.apply();
        crate::rows::apply(model, w as usize, &plan, &rows);
    }

    proptest! {
        /// Saving into buffers that held other pictures, and restoring from them, gives back
        /// exactly the picture saved, however the ring moved in between (only the storage
        /// rows that differ are copied).
        #[test]
        fn saved_pictures_come_back_exactly(
            w in 1u32..6,
            h in 1u32..12,
            steps in proptest::collection::vec((-12i32..12, proptest::collection::vec(any::<bool>(), 12), any::<u8>(), 0usize..4, any::<bool>()), 1..24),
        ) {
            let wu = w as usize;
            let (mut pic, mut model) = keyed(w, h);
            let mut slots: Vec<(Saved, Vec<u8>)> = (0..4).map(|_| (Saved::default(), Vec::new())).collect();
            for (i, (dy, patch, v, slot, back)) in steps.into_iter().enumerate() {
                scroll_and_patch(&mut pic, &mut model, dy, &patch, v);
                let (saved, snapshot) = &mut slots[i % 4];
                pic.save(saved);
                *snapshot = model.clone();
                let (saved, snapshot) = &slots[slot];
                if back && !snapshot.is_empty() {
                    prop_assert!(pic.restore(saved));
                    model = snapshot.clone();
                    prop_assert_eq!(pic.to_vec(), model.clone());
                    prop_assert_eq!(pic.checksum(), picture_checksum(&model, wu));
                }
            }
        }

        /// The ring gives the same picture and checksum as shifting and XORing a contiguous
        /// copy by the definition in `rows`, for any sequence of shifts and patched rows.
        #[test]
        fn ring_matches_the_definition(
            w in 1u32..6,
            h in 1u32..12,
            steps in proptest::collection::vec((-12i32..12, proptest::collection::vec(any::<bool>(), 12), any::<u8>()), 1..16),
        ) {
            let (wu, hu) = (w as usize, h as usize);
            let (mut pic, mut model) = keyed(w, h);
            for (dy, patch, v) in steps {
                scroll_and_patch(&mut pic, &mut model, dy, &patch, v);
                prop_assert!(pic.equals(&model));
                prop_assert_eq!(pic.to_vec(), model.clone());
                prop_assert_eq!(pic.rows().collect::<Vec<_>>().concat(), model.clone());
                prop_assert_eq!(pic.checksum(), picture_checksum(&model, wu));
            }
            // A full-frame delta after the ring has moved still lands on the right rows.
            let delta: Vec<u8> = (0..wu * hu).map(|i| i as u8).collect();
            let mut b = Vec::new();
            BlockCodec::Raw.compress(&delta, &mut b).unwrap();
            pic.decode(false, BlockCodec::Raw, &b).unwrap();
            pic.apply();
            crate::delta::xor_in_place(&mut model, &delta);
            prop_assert_eq!(pic.to_vec(), model.clone());
            prop_assert_eq!(pic.checksum(), picture_checksum(&model, wu));
        }
    }
}
