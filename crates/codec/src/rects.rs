//! Moved-rectangle deltas: rectangles of the previous picture moved by (dx, dy), then patches
//! XORed over whatever still differs.
//!
//! A real screen seldom scrolls as a whole: a browser scrolls its page under a fixed toolbar,
//! sidebar and scrollbar; a terminal scrolls inside its window; a dragged window moves over a
//! still desktop; typing changes a glyph in a row. A row delta (see [`crate::rows`]) can only
//! shift the whole picture and send whole rows, so all of these cost every changed row in
//! full. Here the host says "this rectangle came from there" (found by [`crate::motion`]) and
//! sends only the pixels that still differ, as rectangles as narrow as the change.
//!
//! Payload layout (spec/PROTOCOL.md, "Moved-rectangle deltas"), all little-endian:
//! `nmoves:u16, npatches:u16`, `nmoves × (x:u16, y:u16, w:u16, h:u16, dx:i16, dy:i16)`,
//! `npatches × (x:u16, y:u16, w:u16, h:u16)`, then one compressed block of `Σ w × h` bytes:
//! each patch's rows, top to bottom, XORed with the picture after the moves.
//! Every move reads the picture as it was before this frame, in order (a later move's
//! destination wins where two overlap); then each patch is XORed, in order. With bit 15 of
//! `nmoves`, predicted rectangles follow the patches (`npred:u16, planes:u8`, then their
//! rectangles in the first plane) and replace their pixels last ([`crate::predict`]).

use crate::block::{BlockCodec, CodecError};
use crate::compare::{diff_span, first_diff};

/// At most this many moves in one delta.
pub const MAX_MOVES: usize = 64;
/// Bit 15 of `nmoves`: predicted rectangles follow the patches.
const PREDICTED: u16 = 0x8000;
const MOVE_LEN: usize = 12;
const PATCH_LEN: usize = 8;
const PREDICTED_LEN: usize = 9;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rect {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
}

impl Rect {
    pub fn area(&self) -> usize {
        self.w as usize * self.h as usize
    }
    pub fn intersects(&self, o: &Rect) -> bool {
        self.x < o.x + o.w && o.x < self.x + self.w && self.y < o.y + o.h && o.y < self.y + self.h
    }
}

/// The destination `to` takes the pixels of the previous picture at `to` + (dx, dy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    pub to: Rect,
    pub dx: i32,
    pub dy: i32,
}

/// A predicted rectangle ([`crate::predict`]): where it lies in the first plane, and how its
/// colour planes are predicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predicted {
    pub rect: Rect,
    pub mode: crate::predict::Mode,
}

/// What a moved-rectangle delta carries, before its pixels.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RectPlan {
    pub moves: Vec<Move>,
    pub patches: Vec<Rect>,
    /// Predicted rectangles, in the first of `planes` stacked planes.
    pub predicted: Vec<Predicted>,
    /// 0 when the delta has no predicted section (bit 15 of `nmoves` clear), else 1 or 3.
    pub planes: usize,
}

impl RectPlan {
    /// Decoded size of the pixel block: the patches' XOR bytes, then every plane's residuals.
    pub fn block_bytes(&self) -> usize {
        self.patches.iter().map(Rect::area).sum::<usize>()
            + self.planes * self.predicted.iter().map(|p| p.rect.area()).sum::<usize>()
    }
    pub fn is_unchanged(&self) -> bool {
        self.moves.is_empty() && self.patches.is_empty() && self.predicted.is_empty()
    }
    fn header_len(&self) -> usize {
        let predicted = match self.planes {
            0 => 0,
            _ => 3 + PREDICTED_LEN * self.predicted.len(),
        };
        4 + MOVE_LEN * self.moves.len() + PATCH_LEN * self.patches.len() + predicted
    }
}

/// Whether a moved-rectangle delta's payload has predicted rectangles (bit 15 of `nmoves`):
/// only viewers that declared them may be sent it.
pub fn has_predicted(payload: &[u8]) -> bool {
    payload.len() >= 2 && u16::from_le_bytes([payload[0], payload[1]]) & PREDICTED != 0
}

/// Writes the plan's header (the pixel block follows).
pub fn write_header(plan: &RectPlan, out: &mut Vec<u8>) {
    let u16s = |out: &mut Vec<u8>, v: &[u32]| {
        for &x in v {
            out.extend_from_slice(&(x as u16).to_le_bytes());
        }
    };
    let flag = if plan.planes > 0 { PREDICTED } else { 0 };
    out.extend_from_slice(&(plan.moves.len() as u16 | flag).to_le_bytes());
    out.extend_from_slice(&(plan.patches.len() as u16).to_le_bytes());
    for m in &plan.moves {
        let r = m.to;
        u16s(out, &[r.x, r.y, r.w, r.h]);
        out.extend_from_slice(&(m.dx as i16).to_le_bytes());
        out.extend_from_slice(&(m.dy as i16).to_le_bytes());
    }
    for r in &plan.patches {
        u16s(out, &[r.x, r.y, r.w, r.h]);
    }
    if plan.planes > 0 {
        out.extend_from_slice(&(plan.predicted.len() as u16).to_le_bytes());
        out.push(plan.planes as u8);
        for p in &plan.predicted {
            let r = p.rect;
            u16s(out, &[r.x, r.y, r.w, r.h]);
            out.push(p.mode as u8);
        }
    }
}

/// Parses and bounds-checks a header for a `width` × `height` picture: every rectangle and
/// every move's source inside the picture, at most [`MAX_MOVES`] moves and `height` patches,
/// and patches of at most a picture's worth of pixels together; predicted rectangles (if bit 15
/// of `nmoves` is set) in 1 or 3 planes that divide the height, at most a plane's rows of them,
/// inside the first plane and at most a plane's pixels together. Returns the plan and where
/// the pixel block starts.
pub fn parse_header(
    payload: &[u8],
    width: usize,
    height: usize,
) -> Result<(RectPlan, usize), CodecError> {
    let bad = |why: &str| CodecError::Corrupt(format!("moved-rectangle delta: {why}"));
    let u16_at = |o: usize| {
        payload
            .get(o..o + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .ok_or_else(|| bad("truncated header"))
    };
    let (first, npatches) = (u16_at(0)?, u16_at(2)? as usize);
    let nmoves = (first & !PREDICTED) as usize;
    if nmoves > MAX_MOVES {
        return Err(bad("too many moves"));
    }
    if npatches > height {
        return Err(bad("more patches than rows"));
    }
    let rect_in = |o: usize, height: usize| -> Result<Rect, CodecError> {
        let r = Rect {
            x: u16_at(o)? as u32,
            y: u16_at(o + 2)? as u32,
            w: u16_at(o + 4)? as u32,
            h: u16_at(o + 6)? as u32,
        };
        let inside =
            r.w > 0 && r.h > 0 && (r.x + r.w) as usize <= width && (r.y + r.h) as usize <= height;
        inside
            .then_some(r)
            .ok_or_else(|| bad("an empty rectangle or one outside the picture"))
    };
    let rect = |o: usize| rect_in(o, height);
    let mut plan = RectPlan::default();
    let mut at = 4;
    for _ in 0..nmoves {
        let to = rect(at)?;
        let dx = u16_at(at + 8)? as i16 as i32;
        let dy = u16_at(at + 10)? as i16 as i32;
        let (sx, sy) = (to.x as i64 + dx as i64, to.y as i64 + dy as i64);
        if sx < 0 || sy < 0 || sx + to.w as i64 > width as i64 || sy + to.h as i64 > height as i64 {
            return Err(bad("a move from outside the picture"));
        }
        plan.moves.push(Move { to, dx, dy });
        at += MOVE_LEN;
    }
    let mut area = 0usize;
    for _ in 0..npatches {
        let r = rect(at)?;
        area += r.area();
        if area > width * height {
            return Err(bad("patches larger than the picture"));
        }
        plan.patches.push(r);
        at += PATCH_LEN;
    }
    if first & PREDICTED != 0 {
        let npred = u16_at(at)? as usize;
        let planes = *payload.get(at + 2).ok_or_else(|| bad("truncated header"))? as usize;
        if !(planes == 1 || planes == 3) || !height.is_multiple_of(planes) {
            return Err(bad(
                "predicted rectangles in other than 1 or 3 planes of the picture",
            ));
        }
        let ph = height / planes;
        if npred > ph {
            return Err(bad("more predicted rectangles than rows"));
        }
        at += 3;
        let mut area = 0usize;
        for _ in 0..npred {
            let rect = rect_in(at, ph)?;
            area += rect.area();
            if area > width * ph {
                return Err(bad("predicted rectangles larger than the picture"));
            }
            let mode = match (payload.get(at + 8), planes) {
                (Some(0), _) => crate::predict::Mode::Neighbours,
                (Some(1), 3) => crate::predict::Mode::Cache,
                (None, _) => return Err(bad("truncated header")),
                _ => {
                    return Err(bad(
                        "a predicted rectangle's mode unknown or without colour",
                    ))
                }
            };
            plan.predicted.push(Predicted { rect, mode });
            at += PREDICTED_LEN;
        }
        plan.planes = planes;
    }
    Ok((plan, at))
}

/// Applies the moves to `pic` (rows packed, `width` wide), reading from `before`, a copy of
/// `pic` as it was before the first move. Rows `idle` marks ([`moves_that_change`]) are not
/// copied.
pub fn apply_moves(
    pic: &mut [u8],
    before: &[u8],
    width: usize,
    moves: &[Move],
    idle: Option<&[bool]>,
) {
    let mut at = 0;
    for m in moves {
        let r = m.to;
        let (x, w) = (r.x as usize, r.w as usize);
        let sx = (r.x as i64 + m.dx as i64) as usize;
        let skip = idle.and_then(|i| i.get(at..at + r.h as usize));
        at += r.h as usize;
        for y in r.y as usize..(r.y + r.h) as usize {
            if skip.is_some_and(|s| s[y - r.y as usize]) {
                continue;
            }
            let sy = (y as i64 + m.dy as i64) as usize;
            pic[y * width + x..y * width + x + w]
                .copy_from_slice(&before[sy * width + sx..sy * width + sx + w]);
        }
    }
}

/// Whether no move's source overlaps another move's destination, so the moves can be applied
/// one by one in place ([`apply_moves_in_place`]) with the same result as reading a copy.
pub fn independent(moves: &[Move]) -> bool {
    moves.iter().enumerate().all(|(i, a)| {
        let src = Rect {
            x: (a.to.x as i64 + a.dx as i64) as u32,
            y: (a.to.y as i64 + a.dy as i64) as u32,
            ..a.to
        };
        moves
            .iter()
            .enumerate()
            .all(|(j, b)| i == j || !src.intersects(&b.to))
    })
}

/// Applies moves that are [`independent`] in place: each row is copied in the order that never
/// overwrites a row it still has to read (its own source and destination may overlap). Rows
/// `idle` marks are not copied: such a row already holds what it would read.
pub fn apply_moves_in_place(pic: &mut [u8], width: usize, moves: &[Move], idle: Option<&[bool]>) {
    let mut at = 0;
    for m in moves {
        let r = m.to;
        let (x, w) = (r.x as usize, r.w as usize);
        let sx = (r.x as i64 + m.dx as i64) as usize;
        let skip = idle.and_then(|i| i.get(at..at + r.h as usize));
        at += r.h as usize;
        // Moving up (reading below): top row first; moving down: bottom row first.
        for k in 0..r.h as usize {
            let y = match m.dy >= 0 {
                true => r.y as usize + k,
                false => (r.y + r.h) as usize - 1 - k,
            };
            if skip.is_some_and(|s| s[y - r.y as usize]) {
                continue;
            }
            let sy = (y as i64 + m.dy as i64) as usize;
            pic.copy_within(sy * width + sx..sy * width + sx + w, y * width + x);
        }
    }
}

/// XORs the patch data (each patch's rows in order) into `pic`.
pub fn apply_patches(pic: &mut [u8], width: usize, patches: &[Rect], data: &[u8]) {
    let mut off = 0;
    for r in patches {
        let (x, w) = (r.x as usize, r.w as usize);
        for y in r.y as usize..(r.y + r.h) as usize {
            let row = &mut pic[y * width + x..y * width + x + w];
            crate::delta::xor_in_place(row, &data[off..off + w]);
            off += w;
        }
    }
}

/// Columns closer than this merge into one patch: a patch costs 8 bytes of header, and a run
/// of unchanged (zero after XOR) pixels costs LZ4 about one byte per 255.
const MERGE_GAP: usize = 64;

/// A run of a row after the moves: (x0, x1, where pixel x0 comes from in the old picture,
/// the move it comes from or [`STILL`]).
type Piece = (usize, usize, usize, usize);

/// A piece no move wrote: the old row at its place.
const STILL: usize = usize::MAX;

/// A span no one compared (see [`Compared`]).
const UNKNOWN: (u32, u32) = (u32::MAX, 0);

/// What finding the moves already compared in the first plane (see [`crate::motion`]), so that
/// cutting patches need not compare it again: on a colour browser page scrolling beside a
/// sidebar, comparing each moved row piece by piece was most of what patches cost.
///
/// It holds the pictures' width and the first plane's moves it was made with; a [`Reference`]
/// whose width or first moves differ ignores it.
#[derive(Debug, Default, Clone)]
pub struct Compared {
    width: usize,
    /// Per row of the first plane: the span where it differs from the old row at its place
    /// (empty when equal; rows whose hashes are equal are recorded equal without comparing, as
    /// everywhere hashes are trusted), or [`UNKNOWN`].
    spans: Vec<(u32, u32)>,
    /// The first plane's moves, in their order.
    moves: Vec<Move>,
    /// Per move, in the same order: for each row of its rectangle from the top, whether the
    /// whole row matched its source.
    fitted: Vec<Vec<bool>>,
}

impl Compared {
    /// Nothing known.
    pub fn clear(&mut self) {
        self.spans.clear();
        self.moves.clear();
        self.fitted.clear();
    }

    /// `rows` rows of the first plane, `width` wide, none compared yet.
    pub fn start(&mut self, width: usize, rows: usize) {
        self.clear();
        self.width = width;
        self.spans.resize(rows, UNKNOWN);
    }

    /// Row `y` differs from the old row at its place over `span` (`None`: not at all).
    pub fn set_span(&mut self, y: usize, span: Option<(usize, usize)>) {
        self.spans[y] = span.map_or((0, 0), |(a, b)| (a as u32, b as u32));
    }

    /// The next move, and its rows that matched whole, from its top.
    pub fn push_move(&mut self, m: Move, rows: Vec<bool>) {
        self.moves.push(m);
        self.fitted.push(rows);
    }

    /// Puts the moves in the order `order` gives (indexes into the order they were pushed).
    pub fn reorder(&mut self, order: &[usize]) {
        let mut old = std::mem::take(&mut self.fitted);
        self.fitted = order.iter().map(|&i| std::mem::take(&mut old[i])).collect();
        self.moves = order.iter().map(|&i| self.moves[i]).collect();
    }

    /// The first plane's moves, in the order found.
    pub fn moves(&self) -> &[Move] {
        &self.moves
    }

    /// Whether this describes pictures `width` wide whose moves begin with its own (nothing
    /// known describes anything).
    fn fits(&self, width: usize, moves: &[Move]) -> bool {
        self.spans.is_empty() || (self.width == width && moves.starts_with(&self.moves))
    }

    /// Where row `y` differs from the old row at its place, if compared.
    fn span(&self, y: usize) -> Option<Option<(usize, usize)>> {
        let &(a, b) = self.spans.get(y)?;
        match (a, b) {
            UNKNOWN => None,
            (a, b) if a >= b => Some(None),
            (a, b) => Some(Some((a as usize, b as usize))),
        }
    }

    /// Whether row `y` (of the picture) of move `m` matched its source whole.
    fn fitted(&self, m: usize, top: usize, y: usize) -> bool {
        self.fitted
            .get(m)
            .and_then(|rows| rows.get(y.checked_sub(top)?))
            .copied()
            .unwrap_or(false)
    }
}

/// The picture patches apply to: the previous one with the moves applied, made a row at a
/// time when asked (copying whole pictures cost more than finding the moves).
pub struct Reference<'a> {
    prev: &'a [u8],
    width: usize,
    moves: &'a [Move],
    moved: Vec<bool>,
    buf: Vec<u8>,
    compared: Option<&'a Compared>,
}

impl<'a> Reference<'a> {
    pub fn new(prev: &'a [u8], width: usize, moves: &'a [Move]) -> Reference<'a> {
        let h = prev.len().checked_div(width).unwrap_or(0);
        let mut moved = vec![false; h];
        for m in moves {
            moved[m.to.y as usize..(m.to.y + m.to.h) as usize].fill(true);
        }
        Reference {
            prev,
            width,
            moves,
            moved,
            buf: vec![0; width],
            compared: None,
        }
    }

    /// What was compared already (the first plane's rows and moves come first in the
    /// picture and in the moves). Ignored when it was made for another width or other moves
    /// (a debug build asserts: that is a caller's mistake).
    pub fn with_compared(mut self, compared: Option<&'a Compared>) -> Self {
        let fits = compared.is_some_and(|c| c.fits(self.width, self.moves));
        debug_assert!(
            compared.is_none() || fits,
            "what was compared is of other moves"
        );
        self.compared = compared.filter(|_| fits);
        self
    }

    /// The part of piece `p` of row `y` that may differ from `cur`: all of it, a part of it
    /// (an unmoved piece of a row compared at its place), or none (such a piece outside the
    /// span compared, or a piece of a move whose row matched whole).
    fn narrowed(&self, y: usize, p: Piece) -> Option<Piece> {
        let Some(c) = self.compared else {
            return Some(p);
        };
        let (x0, x1, s, from) = p;
        if from != STILL {
            let top = self.moves[from].to.y as usize;
            return (!c.fitted(from, top, y)).then_some(p);
        }
        match c.span(y) {
            None => Some(p),
            Some(None) => None,
            Some(Some((a, b))) => {
                let (lo, hi) = (x0.max(a), x1.min(b));
                (lo < hi).then_some((lo, hi, s + (lo - x0), STILL))
            }
        }
    }

    /// Whether a move writes into row `y`.
    pub fn moved(&self, y: usize) -> bool {
        self.moved[y]
    }

    /// Row `y` after the moves as pieces of the previous picture, left to right (see
    /// [`Piece`]). `out` holds them; `spare` is scratch.
    fn pieces(&self, y: usize, out: &mut Vec<Piece>, spare: &mut Vec<Piece>) {
        let w = self.width;
        out.clear();
        out.push((0, w, y * w, STILL));
        for (i, m) in self.moves.iter().enumerate() {
            let r = m.to;
            if !(r.y..r.y + r.h).contains(&(y as u32)) {
                continue;
            }
            let (a, b) = (r.x as usize, (r.x + r.w) as usize);
            let src = (y as i64 + m.dy as i64) as usize * w + (a as i64 + m.dx as i64) as usize;
            // Cut what the move covers out of the pieces and put it in, keeping the order.
            spare.clear();
            let mut placed = false;
            for &(x0, x1, s, m) in out.iter() {
                if x0 < a {
                    spare.push((x0, x1.min(a), s, m));
                }
                if !placed && x1 > a {
                    spare.push((a, b, src, i));
                    placed = true;
                }
                if x1 > b {
                    let from = x0.max(b);
                    spare.push((from, x1, s + (from - x0), m));
                }
            }
            std::mem::swap(out, spare);
        }
    }

    /// The first and one-past-the-last pixel where row `y` after the moves and `cur` differ,
    /// compared piece by piece without making the row.
    pub fn diff_span(
        &self,
        y: usize,
        cur: &[u8],
        pieces: &mut (Vec<Piece>, Vec<Piece>),
    ) -> Option<(usize, usize)> {
        if !self.moved[y] {
            if let Some(span) = self.compared.and_then(|c| c.span(y)) {
                return span;
            }
            let w = self.width;
            return diff_span(&self.prev[y * w..(y + 1) * w], cur);
        }
        self.pieces(y, &mut pieces.0, &mut pieces.1);
        let pieces = &pieces.0;
        let first = pieces.iter().find_map(|&p| {
            let (x0, x1, s, _) = self.narrowed(y, p)?;
            first_diff(&self.prev[s..s + (x1 - x0)], &cur[x0..x1]).map(|i| x0 + i)
        })?;
        let last = pieces.iter().rev().find_map(|&p| {
            let (x0, x1, s, _) = self.narrowed(y, p)?;
            diff_span(&self.prev[s..s + (x1 - x0)], &cur[x0..x1]).map(|(_, e)| x0 + e)
        })?;
        Some((first, last))
    }

    /// Row `y` of the previous picture after the moves.
    pub fn row(&mut self, y: usize) -> &[u8] {
        let w = self.width;
        if !self.moved[y] {
            return &self.prev[y * w..(y + 1) * w];
        }
        self.buf.copy_from_slice(&self.prev[y * w..(y + 1) * w]);
        for m in self.moves {
            let r = m.to;
            if (r.y..r.y + r.h).contains(&(y as u32)) {
                let (x, n) = (r.x as usize, r.w as usize);
                let s = (y as i64 + m.dy as i64) as usize * w + (x as i64 + m.dx as i64) as usize;
                self.buf[x..x + n].copy_from_slice(&self.prev[s..s + n]);
            }
        }
        &self.buf
    }
}

/// The hash of each row after `moves` (pictures `width` wide, in order, each reading the
/// picture before them), where the old rows' hashes `old` alone tell it; `None` where the row
/// must be compared or hashed:
/// - a row no move writes keeps its hash;
/// - a whole old row moved straight up or down brings its hash;
/// - a move straight up or down that fills part of a row from an old row whose hash the row
///   has so far leaves it as it was: the R − G and B − G rows of grey content (rows of zeros)
///   under a page scrolled beside a sidebar, which were most of a colour delta's comparing
///   and of a viewer's hashing;
/// - so does any move that fills part of a row of zeros from an old row of zeros.
///
/// The encoder sends no patch for a row whose hash this gives and the new row has, and the
/// viewer does not hash such a row again: one rule on both sides.
pub fn hashes_after_moves(old: &[u64], width: usize, moves: &[Move], out: &mut Vec<Option<u64>>) {
    follow_moves(old, width, moves, out, None);
}

/// As [`hashes_after_moves`], and `idle` gets, for each move in order, one entry per row of its
/// rectangle, top to bottom: whether copying that row leaves the picture as it is (by the rule
/// above, the row already holds what the move brings). A viewer skips those copies: in colour,
/// the R − G and B − G planes of grey content are zeros moved over zeros (on the recorded window
/// drag, skipping them took the Rust viewer's decode from 0.46 and 0.41 to 0.36 and 0.34 ms a
/// picture in two rounds of `bench codec --input`).
pub fn moves_that_change(
    old: &[u64],
    width: usize,
    moves: &[Move],
    out: &mut Vec<Option<u64>>,
    idle: &mut Vec<bool>,
) {
    follow_moves(old, width, moves, out, Some(idle));
}

fn follow_moves(
    old: &[u64],
    width: usize,
    moves: &[Move],
    out: &mut Vec<Option<u64>>,
    mut idle: Option<&mut Vec<bool>>,
) {
    out.clear();
    out.extend(old.iter().map(|&h| Some(h)));
    if let Some(i) = idle.as_deref_mut() {
        i.clear();
    }
    let zero = Some(crate::checksum::zero_row_hash(width));
    for m in moves {
        let whole = m.dx == 0 && m.to.x == 0 && m.to.w as usize == width;
        let (y0, y1) = (m.to.y as usize, (m.to.y + m.to.h) as usize);
        for y in y0..y1 {
            let from = old.get((y as i64 + m.dy as i64) as usize).copied();
            let now = out.get(y).copied().flatten();
            let same = from.is_some() && now == from;
            let (after, unchanged) = match whole {
                true => (from, same),
                false if m.dx == 0 && same => (from, true),
                false if same && from == zero => (zero, true),
                false => (None, false),
            };
            if let Some(r) = out.get_mut(y) {
                *r = after;
            }
            if let Some(i) = idle.as_deref_mut() {
                i.push(unchanged);
            }
        }
    }
}

/// The patches that turn `reference` into `cur`: for each row that differs, the span from its
/// first to its last differing pixel; consecutive rows with overlapping or nearby spans merge
/// into one rectangle. With `hashes` (the old and new pictures' row hashes), rows the hashes
/// prove equal are not compared.
pub fn plan_patches(
    reference: &mut Reference<'_>,
    cur: &[u8],
    width: usize,
    hashes: Option<(&[u64], &[u64])>,
) -> Vec<Rect> {
    let h = cur.len().checked_div(width).unwrap_or(0);
    let mut out: Vec<Rect> = Vec::new();
    let mut open: Option<(usize, usize, usize, usize)> = None; // y0, rows, x0, x1
    let mut pieces = (Vec::new(), Vec::new());
    // What the hashes alone say each row becomes (see [`hashes_after_moves`]).
    let mut known = Vec::new();
    if let Some((prev_hashes, _)) = hashes {
        hashes_after_moves(prev_hashes, width, reference.moves, &mut known);
    }
    for y in 0..h {
        let same = match (known.get(y), hashes) {
            (Some(&Some(k)), Some((_, cur_hashes))) => cur_hashes.get(y) == Some(&k),
            _ => false,
        };
        let span = if same {
            None
        } else {
            reference.diff_span(y, &cur[y * width..(y + 1) * width], &mut pieces)
        };
        open = match (open, span) {
            (Some((y0, n, x0, x1)), Some((a, b)))
                if y0 + n == y && a < x1 + MERGE_GAP && x0 < b + MERGE_GAP =>
            {
                Some((y0, n + 1, x0.min(a), x1.max(b)))
            }
            (prev, span) => {
                if let Some(p) = prev {
                    out.push(patch(p));
                }
                span.map(|(a, b)| (y, 1, a, b))
            }
        };
    }
    if let Some(p) = open {
        out.push(patch(p));
    }
    out
}

fn patch((y0, n, x0, x1): (usize, usize, usize, usize)) -> Rect {
    Rect {
        x: x0 as u32,
        y: y0 as u32,
        w: (x1 - x0) as u32,
        h: n as u32,
    }
}

/// The block codecs of a moved-rectangle delta: `plain`, or `dense` when it carries predicted
/// rectangles. Their residuals are what an entropy coder is for (a video's or a photograph's
/// pixels): zstd made those deltas 28–36 % smaller than LZ4 on the recorded video and fractal
/// zoom, for about a tenth more encode time (predicting them costs more than either codec).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Codecs {
    pub plain: BlockCodec,
    pub dense: BlockCodec,
}

impl Codecs {
    /// One codec for every delta.
    pub fn one(c: BlockCodec) -> Self {
        Codecs { plain: c, dense: c }
    }

    /// What a host configured for `plain` sends by default: LZ4 with zstd for dense deltas;
    /// zstd or raw for everything when configured so.
    pub fn served(plain: BlockCodec) -> Self {
        let dense = match plain {
            BlockCodec::Lz4 => BlockCodec::Zstd(1),
            c => c,
        };
        Codecs { plain, dense }
    }

    /// The codec of a delta with (`true`) or without predicted rectangles.
    pub fn of(&self, predicted: bool) -> BlockCodec {
        if predicted {
            self.dense
        } else {
            self.plain
        }
    }
}

/// Buffers an encoder reuses from frame to frame.
#[derive(Default)]
pub struct Scratch {
    xor: Vec<u8>,
    block: Vec<u8>,
    residuals: crate::predict::Residuals,
}

/// Encodes `cur` against `prev` (both `width` wide, with their row hashes) with `moves` into
/// `out`; returns the plan and the codec its block is in (`codecs.dense` when it has predicted
/// rectangles). Rows are compared by hash first (a moved row too, when every row it is made
/// from has its hash); with `compared` (from the finder that found `moves`), what it compared
/// is not compared again. With `predict` (the pictures'
/// plane count; 0 for none), large patches of the first plane whose pixels predict from their
/// neighbours in fewer bits than their XOR go as predicted rectangles.
#[allow(clippy::too_many_arguments)]
pub fn encode(
    prev: &[u8],
    cur: &[u8],
    width: usize,
    prev_hashes: &[u64],
    cur_hashes: &[u64],
    moves: Vec<Move>,
    compared: Option<&Compared>,
    codecs: Codecs,
    predict: usize,
    s: &mut Scratch,
    out: &mut Vec<u8>,
) -> Result<(RectPlan, BlockCodec), CodecError> {
    let mut reference = Reference::new(prev, width, &moves).with_compared(compared);
    let mut patches = plan_patches(&mut reference, cur, width, Some((prev_hashes, cur_hashes)));
    let h = cur.len().checked_div(width).unwrap_or(0);
    let mut predicted = Vec::new();
    s.residuals.clear();
    if predict > 0 && h.is_multiple_of(predict) {
        let mut with = patches.clone();
        predicted = crate::predict::choose(
            &mut reference,
            cur,
            width,
            predict,
            &mut with,
            &mut s.residuals,
        );
        // Tiles left as XOR patches stay far below the bound; should they not, no prediction.
        if with.len() <= h {
            patches = with;
        } else {
            predicted.clear();
            s.residuals.clear();
        }
    }
    let footprints =
        crate::predict::Footprints::new(&predicted, h.checked_div(predict).unwrap_or(0));
    s.xor.resize(patches.iter().map(Rect::area).sum(), 0);
    let mut off = 0;
    for r in &patches {
        let (x, w) = (r.x as usize, r.w as usize);
        for y in r.y as usize..(r.y + r.h) as usize {
            let c = &cur[y * width + x..y * width + x + w];
            let xor = &mut s.xor[off..off + w];
            crate::delta::xor_into(&reference.row(y)[x..x + w], c, xor);
            // What a predicted rectangle replaces afterwards needs no XOR: zeros cost nothing.
            footprints.clear(y, x, xor);
            off += w;
        }
    }
    let planes = if predicted.is_empty() { 0 } else { predict };
    for bytes in s.residuals.bytes(planes) {
        s.xor.extend_from_slice(bytes);
    }
    let plan = RectPlan {
        moves,
        patches,
        predicted,
        planes,
    };
    out.clear();
    out.reserve(plan.header_len());
    write_header(&plan, out);
    let codec = codecs.of(plan.planes > 0);
    codec.compress(&s.xor, &mut s.block)?;
    out.extend_from_slice(&s.block);
    Ok((plan, codec))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which copies change nothing: a row of zeros filled from a row of zeros, whatever the
    /// move's dx; a row filled straight down from an equal row; never a row filled sideways
    /// from an equal row that is not zeros, nor one an earlier move left unknown.
    #[test]
    fn copies_that_change_nothing_are_told() {
        let w = 8;
        let zero = crate::checksum::row_hash(&[0; 8]);
        // Rows 0-1 zeros, 2-3 the same text, 4 other text, 5 zeros.
        let old = [zero, zero, 7, 7, 9, zero];
        let mv = |y, h, dx, dy| Move {
            to: Rect { x: 2, y, w: 4, h },
            dx,
            dy,
        };
        let (mut after, mut idle) = (Vec::new(), Vec::new());
        // Row 0 from row 1 moved sideways (zeros over zeros), row 2 from row 3 sideways.
        moves_that_change(
            &old,
            w,
            &[mv(0, 1, 1, 1), mv(2, 1, 1, 1)],
            &mut after,
            &mut idle,
        );
        assert_eq!(idle, [true, false]);
        assert_eq!(after[0], Some(zero));
        assert_eq!(after[2], None);
        // Straight down from an equal row; then row 4 written from row 5 (zeros), and again
        // from row 0: it no longer holds text 9, but the rule has lost what it holds.
        moves_that_change(
            &old,
            w,
            &[mv(3, 1, 0, -1), mv(4, 1, -2, 1), mv(4, 1, 0, -4)],
            &mut after,
            &mut idle,
        );
        assert_eq!(idle, [true, false, false]);
        assert_eq!((after[3], after[4]), (Some(7), None));
        let mut known = Vec::new();
        hashes_after_moves(&old, w, &[mv(0, 1, 1, 1)], &mut known);
        assert_eq!(known, after_of(&old, &[(0, Some(zero))]));
    }

    fn after_of(old: &[u64], set: &[(usize, Option<u64>)]) -> Vec<Option<u64>> {
        let mut v: Vec<Option<u64>> = old.iter().map(|&h| Some(h)).collect();
        for &(y, h) in set {
            v[y] = h;
        }
        v
    }

    #[test]
    fn nearby_rows_merge_and_distant_ones_do_not() {
        let w = 400;
        let a = vec![0u8; w * 6];
        let mut b = a.clone();
        b[10] = 1; // row 0, x 10
        b[w + 40] = 1; // row 1, x 40: merges
        b[3 * w + 300] = 1; // row 3, x 300: a gap row, a new patch
        let p = plan_patches(&mut Reference::new(&a, w, &[]), &b, w, None);
        assert_eq!(
            p,
            vec![
                Rect {
                    x: 10,
                    y: 0,
                    w: 31,
                    h: 2
                },
                Rect {
                    x: 300,
                    y: 3,
                    w: 1,
                    h: 1
                }
            ]
        );
    }

    #[test]
    fn hostile_headers_are_refused() {
        let h = |v: &[u16]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let (w, ht) = (10, 10);
        assert!(parse_header(&h(&[0, 0]), w, ht).is_ok());
        assert!(parse_header(&h(&[1, 0]), w, ht).is_err(), "truncated");
        assert!(parse_header(&h(&[65, 0]), w, ht).is_err(), "too many moves");
        assert!(
            parse_header(&h(&[0, 11]), w, ht).is_err(),
            "more patches than rows"
        );
        // A move to (0,0) 5×5 from (+6, 0): its source leaves the picture.
        assert!(parse_header(&h(&[1, 0, 0, 0, 5, 5, 6, 0]), w, ht).is_err());
        assert!(parse_header(&h(&[1, 0, 0, 0, 5, 5, 5, 0]), w, ht).is_ok());
        assert!(parse_header(&h(&[1, 0, 1, 1, 5, 5, (-2i16) as u16, 0]), w, ht).is_err());
        assert!(
            parse_header(&h(&[0, 1, 0, 0, 0, 1]), w, ht).is_err(),
            "empty patch"
        );
        assert!(
            parse_header(&h(&[0, 1, 9, 0, 2, 1]), w, ht).is_err(),
            "patch outside"
        );
        assert!(
            parse_header(&h(&[0, 2, 0, 0, 10, 10, 0, 0, 1, 1]), w, ht).is_err(),
            "patches larger than the picture"
        );
    }
}
