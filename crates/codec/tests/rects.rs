//! Moved-rectangle deltas decode exactly: random pictures with random rectangles moved by
//! random amounts and random edits, through the host encoder and the viewer's picture, and
//! hand-made plans through the definition (`apply_moves` then `apply_patches`).

use std::sync::Arc;

use framewire_codec::checksum::{picture_checksum, row_hashes};
use framewire_codec::motion::{Finder, MIN_CHANGED_ROWS};
use framewire_codec::rects::{self, Codecs, Move, Rect, RectPlan};
use framewire_codec::{BlockCodec, EncodedKind, HostEncoder, Picture};
use proptest::prelude::*;

/// Text-like content: runs of dark "glyph" pixels on white, varied by `seed`.
fn page(w: usize, h: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut p = vec![255u8; w * h];
    for y in 0..h {
        let mut x = (next() % 7) as usize;
        while x + 8 < w {
            let len = 1 + (next() % 5) as usize;
            for i in 0..len {
                p[y * w + x + i] = (next() % 180) as u8;
            }
            x += len + 2 + (next() % 9) as usize;
        }
    }
    p
}

/// A rectangle of `p` moved by (dx, dy) (source clipped to the picture), as a window drag or
/// a scroll inside a region does.
fn moved(
    p: &[u8],
    w: usize,
    h: usize,
    r: (usize, usize, usize, usize),
    dx: i32,
    dy: i32,
) -> Vec<u8> {
    let mut out = p.to_vec();
    let (x0, y0, rw, rh) = r;
    for y in y0..(y0 + rh).min(h) {
        for x in x0..(x0 + rw).min(w) {
            let (sx, sy) = (x as i64 + dx as i64, y as i64 + dy as i64);
            if sx >= 0 && sy >= 0 && (sx as usize) < w && (sy as usize) < h {
                out[y * w + x] = p[sy as usize * w + sx as usize];
            }
        }
    }
    out
}

fn decode(pic: &mut Picture, kind: EncodedKind, codec: BlockCodec, out: &[u8]) {
    match kind {
        EncodedKind::Unchanged => {}
        EncodedKind::Keyframe(_) => pic.decode(true, codec, out).unwrap(),
        EncodedKind::RectDelta => pic.decode_rects(codec, out).unwrap(),
        k => panic!("a rect encoder made {k:?}"),
    }
    pic.apply();
}

/// `cur` through the encoder (whose codecs are `codecs`) and into the viewer's picture, in the
/// codec the encoder said: the payload, or what differs. A delta with predicted rectangles must
/// be in the dense codec, anything else in the plain one.
fn round_trip(
    e: &mut HostEncoder,
    pic: &mut Picture,
    cur: &[u8],
    w: usize,
    codecs: Codecs,
) -> Result<Vec<u8>, String> {
    let (mut hashes, mut out) = (Vec::new(), Vec::new());
    row_hashes(cur, w, &mut hashes);
    let (enc, _) = e
        .encode_hashed(Arc::new(cur.to_vec()), w, &hashes, &mut out)
        .unwrap();
    let dense = enc.kind == EncodedKind::RectDelta && rects::has_predicted(&out);
    if enc.codec != codecs.of(dense) {
        return Err(format!(
            "{:?} in {:?} (predicted {dense})",
            enc.kind, enc.codec
        ));
    }
    decode(pic, enc.kind, enc.codec, &out);
    match (pic.equals(cur), pic.checksum() == picture_checksum(cur, w)) {
        (true, true) => Ok(out),
        (same, checksum) => Err(format!("picture equal {same}, checksum equal {checksum}")),
    }
}

type Step = ((usize, usize, usize, usize), i32, i32, Vec<(usize, u8)>);

fn step() -> impl Strategy<Value = Step> {
    (
        (0usize..96, 0usize..80, 8usize..96, 8usize..80),
        -40i32..40,
        -40i32..40,
        proptest::collection::vec((0usize..96 * 80, any::<u8>()), 0..6),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn random_moved_rectangles_decode_exactly(seed in any::<u64>(), steps in proptest::collection::vec(step(), 1..8), lz4 in any::<bool>()) {
        let (w, h) = (96usize, 80usize);
        let codec = if lz4 { BlockCodec::Lz4 } else { BlockCodec::Raw };
        let mut e = HostEncoder::new(codec, 0).with_rects(true);
        let mut pic = Picture::new(w as u32, h as u32);
        let mut cur = page(w, h, seed);
        for (i, (r, dx, dy, edits)) in std::iter::once(((0, 0, 0, 0), 0, 0, vec![])).chain(steps).enumerate() {
            if i > 0 {
                cur = moved(&cur, w, h, r, dx, dy);
                for (at, v) in edits { cur[at] = v; }
            }
            round_trip(&mut e, &mut pic, &cur, w, Codecs::one(codec)).map_err(|m| TestCaseError::fail(format!("picture {i}: {m}")))?;
        }
    }

    /// Any valid plan, applied by the viewer's picture, equals the definition applied to a
    /// plain copy: moves read the picture before the frame, in order; then patches XOR.
    #[test]
    fn the_picture_applies_any_plan_as_defined(
        seed in any::<u64>(),
        shift_first in -20i32..20,
        moves in proptest::collection::vec((0u32..40, 0u32..30, 1u32..40, 1u32..30, -40i32..40, -30i32..30), 0..5),
        whole_rows in proptest::collection::vec((0u32..30, 1u32..30, -30i32..30), 0..3),
        patches in proptest::collection::vec((0u32..40, 0u32..30, 1u32..40, 1u32..30, any::<u8>()), 0..5),
    ) {
        let (w, h) = (40usize, 30usize);
        let key = page(w, h, seed);
        let mut pic = Picture::new(w as u32, h as u32);
        let mut k = Vec::new();
        BlockCodec::Raw.compress(&key, &mut k).unwrap();
        pic.decode(true, BlockCodec::Raw, &k).unwrap();
        pic.apply();
        // First a whole-picture shift (the ring moves), so later frames start from a ring.
        let mut model = key.clone();
        let d = shift_first.unsigned_abs();
        if d > 0 {
            let y = if shift_first < 0 { d } else { 0 };
            let m = Move { to: Rect { x: 0, y, w: w as u32, h: h as u32 - d }, dx: 0, dy: shift_first };
            let plan = RectPlan { moves: vec![m], ..Default::default() };
            apply(&mut pic, &plan, &[]);
            let before = model.clone();
            rects::apply_moves(&mut model, &before, w, &plan.moves, None);
            prop_assert!(pic.equals(&model));
        }
        let clip = |x: u32, y: u32, rw: u32, rh: u32| Rect { x, y, w: rw.min(w as u32 - x), h: rh.min(h as u32 - y) };
        let mut plan = RectPlan::default();
        // Whole rows moved up or down (what a scroll is in each colour plane).
        let moves = whole_rows
            .into_iter()
            .map(|(y, rh, dy)| (0, y, w as u32, rh, 0, dy))
            .chain(moves);
        for (x, y, rw, rh, dx, dy) in moves {
            let to = clip(x, y, rw, rh);
            let sx = (x as i32 + dx).clamp(0, (w as u32 - to.w) as i32);
            let sy = (y as i32 + dy).clamp(0, (h as u32 - to.h) as i32);
            plan.moves.push(Move { to, dx: sx - x as i32, dy: sy - y as i32 });
        }
        let mut data = Vec::new();
        for (x, y, rw, rh, v) in patches {
            let r = clip(x, y, rw, rh);
            if plan.block_bytes() + r.area() > w * h {
                continue; // patches may hold a picture's worth of pixels at most
            }
            data.extend((0..r.area()).map(|i| v.wrapping_add(i as u8)));
            plan.patches.push(r);
        }
        apply(&mut pic, &plan, &data);
        let before = model.clone();
        rects::apply_moves(&mut model, &before, w, &plan.moves, None);
        rects::apply_patches(&mut model, w, &plan.patches, &data);
        prop_assert!(pic.equals(&model));
        prop_assert_eq!(pic.checksum(), picture_checksum(&model, w));
    }

    /// Any moves, handed to the encoder, still give the exact picture where rows repeat whole:
    /// rows proven equal by their hashes (a row, the old rows its moves read, the new row) are
    /// skipped (not compared by the encoder, not copied or hashed by the viewer) only where the
    /// moves read them straight up or down, or fill zeros with zeros. Rows come from three
    /// patterns, one of them zeros, so such rows are common, across every move's source.
    #[test]
    fn given_moves_over_repeating_rows_encode_exactly(
        old_rows in proptest::collection::vec(0usize..3, 30),
        new_rows in proptest::collection::vec(0usize..3, 30),
        moves in proptest::collection::vec((0u32..40, 0u32..30, 1u32..40, 1u32..30, -6i32..6, -30i32..30), 1..5),
    ) {
        let (w, h) = (40usize, 30usize);
        let pattern = |k: usize, x: usize| match k {
            0 => 0u8,
            1 => (x * 37 % 251) as u8,
            _ => (x / 3 * 11 + 5) as u8,
        };
        let paint = |rows: &[usize]| -> Vec<u8> {
            rows.iter().flat_map(|&k| (0..w).map(move |x| pattern(k, x))).collect()
        };
        let (prev, cur) = (paint(&old_rows), paint(&new_rows));
        let plan_moves: Vec<Move> = moves
            .into_iter()
            .map(|(x, y, rw, rh, dx, dy)| {
                let to = Rect { x, y, w: rw.min(w as u32 - x), h: rh.min(h as u32 - y) };
                let sx = (x as i32 + dx).clamp(0, (w as u32 - to.w) as i32);
                let sy = (y as i32 + dy).clamp(0, (h as u32 - to.h) as i32);
                Move { to, dx: sx - x as i32, dy: sy - y as i32 }
            })
            .collect();
        let mut out = Vec::new();
        rects::encode(
            &prev, &cur, w, &hashes_of(&prev, w), &hashes_of(&cur, w), plan_moves, None,
            Codecs::one(BlockCodec::Raw), 0, &mut rects::Scratch::default(), &mut out,
        ).unwrap();
        let mut pic = Picture::new(w as u32, h as u32);
        let mut k = Vec::new();
        BlockCodec::Raw.compress(&prev, &mut k).unwrap();
        pic.decode(true, BlockCodec::Raw, &k).unwrap();
        pic.apply();
        pic.decode_rects(BlockCodec::Raw, &out).unwrap();
        pic.apply();
        prop_assert!(pic.equals(&cur));
        // The viewer's row hashes follow the rows it did not rehash.
        prop_assert_eq!(pic.checksum(), picture_checksum(&cur, w));
    }

    /// What the finder compared, handed to the encoder, changes no byte it writes: the same
    /// delta as comparing everything again, over three planes moved alike (as a colour
    /// picture's are) with edits in the first.
    #[test]
    fn what_the_finder_compared_changes_no_byte(
        seed in any::<u64>(),
        steps in proptest::collection::vec((
            (0usize..200, 0usize..100, 48usize..256, 32usize..160),
            -40i32..40,
            -30i32..30,
            proptest::collection::vec((0usize..256 * 160, any::<u8>()), 0..6),
        ), 1..4),
    ) {
        let (w, ph) = (256usize, 160usize);
        let mut cur: Vec<Vec<u8>> = (0..3).map(|k| page(w, ph, seed.wrapping_add(k))).collect();
        for (r, dx, dy, edits) in steps {
            let prev = cur.clone();
            for (k, plane) in cur.iter_mut().enumerate() {
                *plane = moved(&prev[k], w, ph, r, dx, dy);
            }
            for (at, v) in edits {
                cur[0][at] = v;
            }
            let (p, c) = (prev.concat(), cur.concat());
            let (hp, hc) = (hashes_of(&p, w), hashes_of(&c, w));
            let mut finder = Finder::default();
            let found = finder.find(&p[..w * ph], &c[..w * ph], w, &hp[..ph], &hc[..ph]);
            let moves: Vec<Move> = (0..3u32)
                .flat_map(|k| found.iter().map(move |m| Move { to: Rect { y: m.to.y + k * ph as u32, ..m.to }, ..*m }))
                .collect();
            let encode = |compared: Option<&rects::Compared>| {
                let mut out = Vec::new();
                rects::encode(
                    &p, &c, w, &hp, &hc, moves.clone(), compared,
                    Codecs::one(BlockCodec::Raw), 0, &mut rects::Scratch::default(), &mut out,
                ).unwrap();
                out
            };
            prop_assert_eq!(encode(Some(finder.compared())), encode(None));
        }
    }

    #[test]
    fn garbage_headers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..128), w in 0usize..64, h in 0usize..64) {
        let _ = rects::parse_header(&bytes, w, h);
    }
}

fn apply(pic: &mut Picture, plan: &RectPlan, data: &[u8]) {
    let mut payload = Vec::new();
    rects::write_header(plan, &mut payload);
    let mut block = Vec::new();
    BlockCodec::Raw.compress(data, &mut block).unwrap();
    payload.extend_from_slice(&block);
    pic.decode_rects(BlockCodec::Raw, &payload).unwrap();
    pic.apply();
}

/// A page scrolled inside a column while its sides stay costs a small fraction of the rows it
/// changed: the move is found, and only the new rows are sent.
#[test]
fn a_scrolled_column_costs_little() {
    let (w, h) = (640usize, 480usize);
    let prev = page(w, h, 11);
    let mut cur = moved(&prev, w, h, (200, 0, 300, h), 0, 24);
    // The rows scrolled in at the bottom of the column.
    let fresh = page(w, h, 12);
    for y in h - 24..h {
        cur[y * w + 200..y * w + 500].copy_from_slice(&fresh[y * w + 200..y * w + 500]);
    }
    let mut hashes = Vec::new();
    let mut e = HostEncoder::new(BlockCodec::Lz4, 0).with_rects(true);
    let mut rows_e = HostEncoder::new(BlockCodec::Lz4, 0);
    let mut out = Vec::new();
    row_hashes(&prev, w, &mut hashes);
    e.encode_hashed(Arc::new(prev.clone()), w, &hashes, &mut out)
        .unwrap();
    rows_e
        .encode_hashed(Arc::new(prev.clone()), w, &hashes, &mut out)
        .unwrap();
    row_hashes(&cur, w, &mut hashes);
    let (r, _) = e
        .encode_hashed(Arc::new(cur.clone()), w, &hashes, &mut out)
        .unwrap();
    let (rows, _) = rows_e
        .encode_hashed(Arc::new(cur.clone()), w, &hashes, &mut out)
        .unwrap();
    assert_eq!(r.kind, EncodedKind::RectDelta);
    // No more than the new rows themselves (24 × 300 bytes) and the header.
    assert!(r.payload_len < 24 * 300 + 256, "{} bytes", r.payload_len);
    assert!(
        r.payload_len * 10 < rows.payload_len,
        "{} vs row delta {}",
        r.payload_len,
        rows.payload_len
    );
}

fn hashes_of(p: &[u8], w: usize) -> Vec<u64> {
    let mut v = Vec::new();
    row_hashes(p, w, &mut v);
    v
}

/// A column scrolled up by 13 rows beside fixed sides, `h` rows tall, with new text below and,
/// with `win`, in the picture's last 150 rows (the column scrolls above them), a window of 60
/// rows dragged by (5, 3).
fn scrolled_column(w: usize, h: usize, win: bool) -> (Vec<u8>, Vec<u8>) {
    let prev = page(w, h, 7);
    let mut cur = prev.clone();
    let fresh = page(w, h, 99);
    let rows = if win { h - 150 } else { h };
    for y in 0..rows {
        for x in 100..260 {
            cur[y * w + x] = if y + 13 < rows {
                prev[(y + 13) * w + x]
            } else {
                fresh[y * w + x]
            };
        }
    }
    if win {
        let (x0, y0, ww) = (w - 120, h - 100, 100);
        let pane = page(ww, 60, 5);
        for y in 0..60 {
            let b = (y0 + 3 + y) * w + x0 + 5;
            cur[b..b + ww].copy_from_slice(&pane[y * ww..(y + 1) * ww]);
        }
        let mut p = prev;
        for y in 0..60 {
            let a = (y0 + y) * w + x0;
            p[a..a + ww].copy_from_slice(&pane[y * ww..(y + 1) * ww]);
        }
        return (p, cur);
    }
    (prev, cur)
}

/// Found alike in a short picture, where every other changed row votes, and in a tall one,
/// where fewer do.
#[test]
fn a_scrolled_column_between_fixed_sides_is_one_move() {
    for h in [200, 1200] {
        let w = 320;
        let (prev, cur) = scrolled_column(w, h, false);
        let moves =
            Finder::default().find(&prev, &cur, w, &hashes_of(&prev, w), &hashes_of(&cur, w));
        assert_eq!(moves.len(), 1, "{h} rows: {moves:?}");
        let m = moves[0];
        assert_eq!((m.dx, m.dy), (0, 13));
        assert!(m.to.x <= 100 && m.to.x + m.to.w >= 250, "{m:?}");
        assert!(m.to.h as usize >= h * 3 / 4, "{m:?}");
    }
}

/// A window of 60 rows dragged below a column of 1050 rows that scrolls: both moves are found,
/// though only some of the changed rows vote.
#[test]
fn a_small_window_dragged_beside_a_tall_scroll_is_found() {
    let (w, h) = (480, 1200);
    let (prev, cur) = scrolled_column(w, h, true);
    let moves = Finder::default().find(&prev, &cur, w, &hashes_of(&prev, w), &hashes_of(&cur, w));
    let by = |d: (i32, i32)| moves.iter().find(|m| (m.dx, m.dy) == d);
    assert!(by((0, 13)).is_some(), "{moves:?}");
    let win = by((-5, -3)).unwrap_or_else(|| panic!("no window move in {moves:?}"));
    assert!(win.to.h >= 50 && win.to.w >= 90, "{win:?}");
}

#[test]
fn a_window_moved_diagonally_is_found() {
    let (w, h) = (320, 240);
    let bg = vec![40u8; w * h];
    let win = page(120, 90, 5);
    let put = |x0: usize, y0: usize| {
        let mut p = bg.clone();
        for y in 0..90 {
            p[(y0 + y) * w + x0..(y0 + y) * w + x0 + 120]
                .copy_from_slice(&win[y * 120..(y + 1) * 120]);
        }
        p
    };
    let (prev, cur) = (put(30, 40), put(37, 43));
    let moves = Finder::default().find(&prev, &cur, w, &hashes_of(&prev, w), &hashes_of(&cur, w));
    assert!(!moves.is_empty());
    assert_eq!((moves[0].dx, moves[0].dy), (-7, -3));
    assert!(moves[0].to.area() >= 100 * 80, "{:?}", moves[0]);
}

#[test]
fn a_few_changed_rows_look_for_nothing() {
    let (w, h) = (100, 50);
    let prev = page(w, h, 3);
    let mut cur = prev.clone();
    for y in 10..10 + MIN_CHANGED_ROWS - 1 {
        cur[y * w + 5] ^= 0x55;
    }
    let moves = Finder::default().find(&prev, &cur, w, &hashes_of(&prev, w), &hashes_of(&cur, w));
    assert!(moves.is_empty());
}

/// A rectangle of a picture of `planes` planes stacked, `w` wide and `ph` rows each.
#[derive(Clone, Copy)]
struct Area {
    w: usize,
    ph: usize,
    planes: usize,
    r: (usize, usize, usize, usize),
}

impl Area {
    /// Calls `f` with every pixel of the rectangle in every plane, its plane, x, y and a
    /// pseudo-random number drawn for it (seeded by `seed`).
    fn each(self, p: &mut [u8], seed: u64, mut f: impl FnMut(&mut u8, usize, usize, usize, u64)) {
        let (x0, y0, rw, rh) = self.r;
        let mut s = seed | 1;
        for plane in 0..self.planes {
            for y in y0..(y0 + rh).min(self.ph) {
                for x in x0..(x0 + rw).min(self.w) {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    f(&mut p[(plane * self.ph + y) * self.w + x], plane, x, y, s);
                }
            }
        }
    }

    /// A moving picture: smooth gradients that turn and zoom with `k`, so no move lines two
    /// frames up and an XOR saves nothing, but nearly every pixel follows from its neighbours;
    /// `noise` adds a random byte to some pixels, as a video's grain.
    fn photo(self, p: &mut [u8], k: usize, noise: u64) {
        self.each(p, noise, |px, plane, x, y, s| {
            let grain = match noise != 0 && s.is_multiple_of(5) {
                true => (s >> 8) as usize % 9,
                false => 0,
            };
            *px = (x * (k + 1 + plane) + y * (2 + plane) + x * x / (7 + k) + grain) as u8;
        });
    }

    /// Every 13th pixel (or so) of the rectangle's upper right half flipped: a sparse change
    /// shaped so that tiles side by side see it start on one row and end on others.
    fn sprinkle(self, p: &mut [u8], seed: u64) {
        let (x0, y0, rw, rh) = self.r;
        self.each(p, seed, |px, _, x, y, s| {
            if s.is_multiple_of(13) && (y - y0) * rw <= (x - x0 + 1) * rh {
                *px ^= 0x55;
            }
        });
    }
}

/// Every plane's rectangle `r` moved by (dx, dy), as [`moved`] does to a grey picture.
fn moved_planes(
    p: &[u8],
    w: usize,
    ph: usize,
    planes: usize,
    r: (usize, usize, usize, usize),
    dx: i32,
    dy: i32,
) -> Vec<u8> {
    let n = w * ph;
    (0..planes)
        .flat_map(|k| moved(&p[k * n..(k + 1) * n], w, ph, r, dx, dy))
        .collect()
}

/// Whether an encoded moved-rectangle delta carries predicted rectangles.
fn predicted_in(out: &[u8], w: usize, h: usize) -> usize {
    rects::parse_header(out, w, h).map_or(0, |(p, _)| p.predicted.len())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Pages moved, and moving pictures in random rectangles, with predicted rectangles on, in
    /// grey and in colour: every picture decodes exactly.
    #[test]
    fn moving_pictures_with_predicted_rectangles_decode_exactly(
        seed in any::<u64>(),
        colour in any::<bool>(),
        steps in proptest::collection::vec((step(), proptest::collection::vec((0usize..256, 0usize..160, 8usize..200, 8usize..120), 1..4), any::<u64>()), 1..6),
        codec in 0..3,
    ) {
        // Tiles are 64 pixels: several across, some cut by the picture's edge.
        let (w, ph) = (256usize, 160usize);
        let planes = if colour { 3 } else { 1 };
        // zstd; LZ4; LZ4 with dense deltas in zstd, as served.
        let codecs = match codec {
            0 => Codecs::one(BlockCodec::Zstd(1)),
            1 => Codecs::one(BlockCodec::Lz4),
            _ => Codecs::served(BlockCodec::Lz4),
        };
        let mut e = HostEncoder::new(codecs.plain, 0)
            .with_dense_codec(codecs.dense)
            .with_rects(true)
            .with_predicted(true)
            .with_planes(planes);
        let mut pic = Picture::new(w as u32, (ph * planes) as u32);
        let mut cur: Vec<u8> = (0..planes).flat_map(|k| page(w, ph, seed ^ k as u64)).collect();
        for i in 0..=steps.len() {
            if i > 0 {
                let ((r, dx, dy, edits), films, noise) = &steps[i - 1];
                cur = moved_planes(&cur, w, ph, planes, *r, *dx, *dy);
                for (at, v) in edits { cur[*at] = *v; }
                for (k, film) in films.iter().enumerate() {
                    match k {
                        // A sparse change (a few pixels in a rectangle), cheaper as XOR: the
                        // tiles it crosses stay XOR patches, each as tall as its own change.
                        1 => Area { w, ph, planes, r: *film }.sprinkle(&mut cur, *noise),
                        _ => Area { w, ph, planes, r: *film }.photo(&mut cur, i + k, *noise >> k),
                    }
                }
            }
            round_trip(&mut e, &mut pic, &cur, w, codecs).map_err(|m| TestCaseError::fail(format!("picture {i}: {m}")))?;
        }
    }
}

/// A moving picture over half the screen goes as predicted rectangles, in grey and in colour,
/// and costs under two thirds of its bytes as XOR patches; every picture decodes exactly either
/// way.
#[test]
fn a_moving_picture_goes_predicted_and_costs_less() {
    let (w, ph) = (320usize, 240usize);
    for planes in [1, 3] {
        let (mut bytes, mut predicted) = ([0usize; 2], 0);
        for (n, on) in [false, true].into_iter().enumerate() {
            let codec = BlockCodec::Zstd(1);
            let mut e = HostEncoder::new(codec, 0)
                .with_rects(true)
                .with_predicted(on)
                .with_planes(planes);
            let mut pic = Picture::new(w as u32, (ph * planes) as u32);
            let (mut out, mut hashes) = (Vec::new(), Vec::new());
            let mut cur: Vec<u8> = (0..planes)
                .flat_map(|k| page(w, ph, 7 + k as u64))
                .collect();
            for k in 0..8 {
                let film = Area {
                    w,
                    ph,
                    planes,
                    r: (40, 30, 200, 160),
                };
                film.photo(&mut cur, k, 11 + k as u64);
                row_hashes(&cur, w, &mut hashes);
                let (enc, _) = e
                    .encode_hashed(Arc::new(cur.clone()), w, &hashes, &mut out)
                    .unwrap();
                decode(&mut pic, enc.kind, codec, &out);
                assert!(
                    pic.equals(&cur),
                    "{planes} planes, predicted {on}: picture {k} differs"
                );
                if k > 0 {
                    assert_eq!(enc.kind, EncodedKind::RectDelta);
                    bytes[n] += out.len();
                    predicted += usize::from(on) * predicted_in(&out, w, ph * planes);
                }
            }
        }
        assert!(
            predicted >= 7 * 12,
            "{planes} planes: only {predicted} predicted rectangles in 7 frames"
        );
        assert!(
            3 * bytes[1] < 2 * bytes[0],
            "{planes} planes: {} bytes predicted, {} as XOR",
            bytes[1],
            bytes[0]
        );
    }
}

/// A gear: a flat-coloured star of `teeth` teeth turned by `turn` hundredths of a radian, on
/// black, over the whole of a `w` × `ph` picture of three planes (G, R − G, B − G).
fn gear(w: usize, ph: usize, teeth: f64, turn: usize) -> Vec<u8> {
    let mut p = vec![0u8; 3 * w * ph];
    let (cx, cy) = (w as f64 / 2.0, ph as f64 / 2.0);
    for y in 0..ph {
        for x in 0..w {
            let (dx, dy) = (x as f64 - cx, y as f64 - cy);
            let a = dy.atan2(dx) + turn as f64 / 100.0;
            let r = 0.38 * ph as f64
                + if (teeth * a).sin() > 0.0 {
                    0.08 * ph as f64
                } else {
                    0.0
                };
            let d = (dx * dx + dy * dy).sqrt();
            // Two faces of the gear, lit differently, as glxgears draws them.
            let (r8, g8, b8) = match d {
                d if d < 0.12 * ph as f64 || d > r => (0u8, 0u8, 0u8),
                d if d < 0.3 * ph as f64 => (200, 30, 20),
                _ => (150, 20, 10),
            };
            p[y * w + x] = g8;
            p[(ph + y) * w + x] = r8.wrapping_sub(g8);
            p[(2 * ph + y) * w + x] = b8.wrapping_sub(g8);
        }
    }
    p
}

/// Flat shapes that turn (glxgears' gears): only their edges change, so the XOR is sparse, but
/// it has no pattern the block codec can match, while the new picture predicts almost exactly
/// from its neighbours. They go predicted and cost under half their bytes as XOR patches; every
/// picture decodes exactly either way.
#[test]
fn flat_shapes_that_turn_go_predicted_and_cost_less() {
    let (w, ph) = (320usize, 240usize);
    let codec = BlockCodec::Zstd(1);
    let (mut bytes, mut predicted) = ([0usize; 2], 0);
    for (n, on) in [false, true].into_iter().enumerate() {
        let mut e = HostEncoder::new(codec, 0)
            .with_rects(true)
            .with_predicted(on)
            .with_planes(3);
        let mut pic = Picture::new(w as u32, (ph * 3) as u32);
        let (mut out, mut hashes) = (Vec::new(), Vec::new());
        let mut last: Option<Vec<u8>> = None;
        for k in 0..8 {
            let cur = gear(w, ph, 12.0, 3 * k);
            if let Some(prev) = &last {
                // Sparse: a small share of the pixels changed.
                let changed = prev.iter().zip(&cur).filter(|(a, b)| a != b).count();
                assert!(changed * 6 < w * ph, "{changed} changed bytes");
            }
            row_hashes(&cur, w, &mut hashes);
            let (enc, _) = e
                .encode_hashed(Arc::new(cur.clone()), w, &hashes, &mut out)
                .unwrap();
            decode(&mut pic, enc.kind, codec, &out);
            assert!(pic.equals(&cur), "predicted {on}: picture {k} differs");
            if k > 0 {
                bytes[n] += out.len();
                predicted += usize::from(on) * predicted_in(&out, w, ph * 3);
            }
            last = Some(cur);
        }
    }
    assert!(
        predicted >= 7 * 4,
        "only {predicted} predicted rectangles in 7 frames"
    );
    assert!(
        2 * bytes[1] < bytes[0],
        "{} bytes predicted, {} as XOR",
        bytes[1],
        bytes[0]
    );
}

/// Predicted sections refused before anything is applied: wrong plane counts, too many
/// rectangles, one outside the first plane, areas beyond a plane, unknown modes, the colour
/// cache without colour, a truncated list.
#[test]
fn hostile_predicted_headers_are_refused() {
    let h = |v: &[u16], tail: &[u8]| {
        let mut b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        b.extend_from_slice(tail);
        b
    };
    let pred = |x: u16, y: u16, w: u16, hh: u16, mode: u8| {
        let mut e: Vec<u8> = [x, y, w, hh].iter().flat_map(|v| v.to_le_bytes()).collect();
        e.push(mode);
        e
    };
    let ok = [&[1u8, 0, 3][..], &pred(0, 0, 10, 4, 1)].concat();
    let (plan, at) = rects::parse_header(&h(&[0x8000, 0], &ok), 10, 12).unwrap();
    assert_eq!(
        (plan.planes, plan.predicted.len(), at, plan.block_bytes()),
        (3, 1, 16, 120)
    );
    assert_eq!(
        plan.predicted[0].mode,
        framewire_codec::predict::Mode::Cache
    );
    assert!(rects::has_predicted(&h(&[0x8000, 0], &ok)));
    assert!(!rects::has_predicted(&h(&[1, 0], &[])));
    let one = pred(0, 0, 1, 1, 0);
    for (why, n, planes, entries, height) in [
        ("two planes", 1, 2, one.clone(), 12),
        ("no planes", 1, 0, one.clone(), 12),
        ("planes not dividing the height", 1, 3, one.clone(), 10),
        (
            "more rectangles than a plane's rows",
            5,
            3,
            one.repeat(5),
            12,
        ),
        ("outside the first plane", 1, 3, pred(0, 3, 1, 2, 0), 12),
        ("empty", 1, 3, pred(0, 0, 0, 1, 0), 12),
        (
            "beyond a plane's pixels",
            2,
            3,
            pred(0, 0, 10, 4, 0).repeat(2),
            12,
        ),
        ("an unknown mode", 1, 3, pred(0, 0, 1, 1, 2), 12),
        ("the colour cache in grey", 1, 1, pred(0, 0, 1, 1, 1), 12),
        ("truncated list", 2, 3, one.clone(), 12),
        ("truncated mode", 1, 3, one[..8].to_vec(), 12),
    ] {
        let tail = [&[n, 0, planes][..], &entries].concat();
        let refused = rects::parse_header(&h(&[0x8000, 0], &tail), 10, height).is_err();
        assert!(refused, "{why}");
    }
    let truncated = rects::parse_header(&h(&[0x8000, 0], &[1]), 10, 12);
    assert!(truncated.is_err(), "truncated count");
}

/// A patch wider than 64 tiles (a 4,200-pixel-wide screen, two monitors side by side, with a
/// moving picture across it): every tile of every band is looked at, the tiles past the 64th
/// go predicted too, and the picture decodes exactly.
#[test]
fn a_moving_picture_wider_than_64_tiles_decodes_exactly() {
    let (w, ph) = (4200usize, 70usize);
    let codec = BlockCodec::Lz4;
    let mut e = HostEncoder::new(codec, 0)
        .with_rects(true)
        .with_predicted(true);
    let mut pic = Picture::new(w as u32, ph as u32);
    let mut cur = page(w, ph, 3);
    let mut far = 0;
    for k in 0..4 {
        Area {
            w,
            ph,
            planes: 1,
            r: (0, 2, w, 60),
        }
        .photo(&mut cur, k, 5 + k as u64);
        let out = round_trip(&mut e, &mut pic, &cur, w, Codecs::one(codec))
            .unwrap_or_else(|m| panic!("picture {k}: {m}"));
        if let Ok((plan, _)) = rects::parse_header(&out, w, ph) {
            far += plan
                .predicted
                .iter()
                .filter(|p| p.rect.x >= 64 * 64)
                .count();
        }
    }
    assert!(far >= 3, "{far} predicted rectangles past the 64th tile");
}
