#!/usr/bin/env python3
"""Writes spec/vectors/moves/: moved-rectangle delta frames with the pictures before and after.

Independent of every framewire implementation: the frames are packed with `struct` from
spec/PROTOCOL.md ("Moved-rectangle deltas", "Predicted rectangles"), and the picture after each
frame is worked out pixel by pixel from the definition below, not by any decoder. The residuals
of predicted rectangles come from the straightforward encoder below (the same predictor run
over the wanted picture); the picture after is then decoded from them by the definition. Needs the `xxhash` package
(the checksum); run it with the repository's .venv: `.venv/bin/python spec/vectors/make_move_vectors.py`.
"""

import json
import struct
from pathlib import Path

import xxhash

OUT = Path(__file__).resolve().parent / "moves"


def checksum(pic: bytes, w: int) -> int:
    rows = b"".join(struct.pack("<Q", xxhash.xxh3_64_intdigest(pic[y * w:(y + 1) * w])) for y in range(len(pic) // w))
    return xxhash.xxh3_64_intdigest(rows)


def after(before: bytes, w: int, h: int, moves, patches, data: bytes, pred=None) -> bytes:
    """The definition: every move copies from `before`, in order; then every patch XORs; then
    every predicted rectangle (pred = (planes, rects, residuals)) replaces its pixels."""
    for (x, y, rw, rh), dx, dy in moves:
        assert 0 <= x + dx and x + dx + rw <= w and 0 <= y + dy and y + dy + rh <= h and x + rw <= w and y + rh <= h
    assert all(x + rw <= w and y + rh <= h for x, y, rw, rh in patches)
    assert sum(rw * rh for _, _, rw, rh in patches) == len(data)
    pic = bytearray(before)
    for (x, y, rw, rh), dx, dy in moves:
        for yy in range(y, y + rh):
            for xx in range(x, x + rw):
                pic[yy * w + xx] = before[(yy + dy) * w + xx + dx]
    off = 0
    for x, y, rw, rh in patches:
        for yy in range(y, y + rh):
            for xx in range(x, x + rw):
                pic[yy * w + xx] ^= data[off]
                off += 1
    if pred is not None:
        predict(pic, w, h, *pred)
    return bytes(pic)


def med(a: int, b: int, c: int) -> int:
    """JPEG-LS's median edge detector."""
    if c >= max(a, b):
        return min(a, b)
    if c <= min(a, b):
        return max(a, b)
    return a + b - c


def spatial(get, i: int, j: int) -> int:
    """s for row i, column j of a rectangle; get(i, j) is a value already decoded in it."""
    if i == 0 and j == 0:
        return 0
    if i == 0:
        return get(i, j - 1)
    if j == 0:
        return get(i - 1, j)
    return med(get(i, j - 1), get(i - 1, j), get(i - 1, j - 1))


def check_pred(w: int, h: int, planes: int, rects) -> int:
    """The bounds; returns the plane height. A rectangle is (x, y, w, h, mode)."""
    assert planes in (1, 3) and h % planes == 0
    ph = h // planes
    assert len(rects) <= ph
    assert all(rw > 0 and rh > 0 and x + rw <= w and y + rh <= ph for x, y, rw, rh, _ in rects)
    assert all(mode == 0 or (mode == 1 and planes == 3) for *_, mode in rects)
    assert sum(rw * rh for _, _, rw, rh, _ in rects) <= w * ph
    return ph


def predict(pic: bytearray, w: int, h: int, planes: int, rects, res: bytes) -> None:
    """The definition: each rectangle in order, its pixels row by row, left to right, each
    pixel's planes 0, 1, 2; a, b, c only from the same plane and rectangle. Mode 0: every plane
    from s; mode 1: planes 1 and 2 from T1 and T2 where set. T1 and T2 (None = empty) start
    empty for the frame, are updated after every colour pixel whatever its rectangle's mode,
    and carry over from one rectangle to the next."""
    ph = check_pred(w, h, planes, rects)
    total = sum(rw * rh for _, _, rw, rh, _ in rects)
    assert len(res) == planes * total
    t1 = [None] * 256
    t2 = [None] * 65536
    start = 0
    for x, y, rw, rh, mode in rects:
        for i in range(rh):
            for j in range(rw):
                vals = []
                for k in range(planes):
                    def get(ii, jj, k=k):
                        return pic[(k * ph + y + ii) * w + x + jj]
                    s = spatial(get, i, j)
                    r = res[k * total + start + i * rw + j]
                    if k == 0 or mode == 0:
                        v = (s + r) % 256
                    elif k == 1:
                        g = vals[0]
                        v = ((t1[g] if t1[g] is not None else s) + r) % 256
                    else:
                        key = 256 * vals[0] + vals[1]
                        v = ((t2[key] if t2[key] is not None else s) + r) % 256
                    if k == 1:
                        t1[vals[0]] = v
                    elif k == 2:
                        t2[256 * vals[0] + vals[1]] = v
                    pic[(k * ph + y + i) * w + x + j] = v
                    vals.append(v)
        start += rw * rh


def residuals(want: bytes, w: int, h: int, planes: int, rects, stats=None) -> bytes:
    """The straightforward encoder: the same predictor over the wanted picture; residual =
    (value - prediction) mod 256, plane by plane, rectangle by rectangle, row by row. `stats`
    counts how the predictions were made, so the cases can say they exercise each rule:
    "t1"/"t2" a mode-1 prediction from the cache, "..._from_mode0" one from an entry a mode-0
    rectangle set ("..._not_s": and differing from s, so a decoder that did not update the
    tables in mode 0 would go wrong), "..._ignored" a mode-0 pixel that predicted from s though its entry was set
    and differed from s."""
    ph = check_pred(w, h, planes, rects)
    out = [bytearray() for _ in range(planes)]
    t1 = [None] * 256
    t2 = [None] * 65536
    # The mode of the rectangle that last set each entry.
    src1 = [None] * 256
    src2 = [None] * 65536
    st = stats if stats is not None else {}

    def count(n):
        st[n] = st.get(n, 0) + 1

    for x, y, rw, rh, mode in rects:
        for i in range(rh):
            for j in range(rw):
                g = v1 = None
                for k in range(planes):
                    def get(ii, jj, k=k):
                        return want[(k * ph + y + ii) * w + x + jj]
                    s = spatial(get, i, j)
                    if i > 0 and j > 0:
                        a, b, c = get(i, j - 1), get(i - 1, j), get(i - 1, j - 1)
                        branch = "min" if c >= max(a, b) else "max" if c <= min(a, b) else "grad"
                        st[branch] = st.get(branch, 0) + 1
                    value = get(i, j)
                    p = s
                    if k > 0:
                        tab, src, key, n = (t1, src1, g, "t1") if k == 1 else (t2, src2, 256 * g + v1, "t2")
                        if tab[key] is not None and mode == 1:
                            p = tab[key]
                            count(n)
                            if src[key] == 0:
                                count(n + "_from_mode0")
                                if p != s:
                                    count(n + "_from_mode0_not_s")
                            if p != s:
                                count(n + "_not_s")
                            if p != value:
                                count(n + "_miss")
                        elif tab[key] is not None and tab[key] != s:
                            count(n + "_ignored")
                        tab[key] = value
                        src[key] = mode
                    out[k].append((value - p) % 256)
                    if k == 0:
                        g = value
                    elif k == 1:
                        v1 = value
    return b"".join(bytes(o) for o in out)


def frame(seq: int, w: int, before: bytes, moves, patches, data: bytes, h: int, pred=None) -> tuple[bytes, bytes]:
    nmoves = len(moves) | (0x8000 if pred is not None else 0)
    payload = struct.pack("<HH", nmoves, len(patches))
    for (x, y, rw, rh), dx, dy in moves:
        payload += struct.pack("<HHHHhh", x, y, rw, rh, dx, dy)
    for r in patches:
        payload += struct.pack("<HHHH", *r)
    block = data
    if pred is not None:
        planes, rects, res = pred
        payload += struct.pack("<HB", len(rects), planes)
        for r in rects:
            payload += struct.pack("<HHHHB", *r)
        block = data + res
        assert len(block) == sum(rw * rh for _, _, rw, rh in patches) + planes * sum(rw * rh for _, _, rw, rh, _ in rects)
    payload += block  # codec 0 (raw): the patch data, then the residuals, as they are
    pic = after(before, w, h, moves, patches, data, pred)
    body = struct.pack("<QQBBQI", seq, 1_000_000 + seq, 4, 0, checksum(pic, w), len(block)) + payload
    return b"FW" + bytes([0x10]) + struct.pack("<I", len(body)) + body, pic


def picture(w: int, h: int, k: int) -> bytes:
    return bytes((x * 7 + y * 13 + k * 31 + (x * y) % 5) % 251 for y in range(h) for x in range(w))


def cases():
    w, h = 16, 8
    base = picture(w, h, 1)
    yield "one_move", "a 5x3 rectangle at (2,1) takes the pixels at (5,3): a window moved", w, h, base, [((2, 1, 5, 3), 3, 2)], [], b""
    # Two moves whose destinations overlap (the later wins) and whose sources overlap the other's
    # destination (both read the picture before the frame), then two patches, one over a move.
    patches = [(0, 0, 4, 2), (6, 2, 3, 1)]
    data = bytes((i * 37 + 5) % 256 for i in range(4 * 2 + 3))
    yield ("moves_overlap_then_patches", "two overlapping moves reading the old picture, then two patches",
           w, h, base, [((0, 0, 8, 4), 4, 4), ((4, 2, 8, 4), -4, -2)], patches, data)
    # The whole picture scrolled up 2 rows (a viewer may move its ring's top), and the 2 new rows.
    data = bytes((i * 11 + 1) % 256 for i in range(w * 2))
    yield ("whole_shift", "the whole picture up 2 rows, then the 2 rows that came in",
           w, h, base, [((0, 0, w, h - 2), 0, 2)], [(0, h - 2, w, 2)], data)
    yield ("whole_shift_down", "the whole picture down 3 rows, nothing patched",
           w, h, base, [((0, 3, w, h - 3), 0, -3)], [], b"")
    data = bytes([0x5A, 0xA5, 0x01, 0x80, 0x33, 0xCC])
    yield "patches_only", "two glyph-sized patches, no move: typing", w, h, base, [], [(3, 4, 3, 1), (10, 5, 1, 3)], data
    yield from predicted_cases()


def colour_picture(w: int, ph: int, rgb) -> bytes:
    """Planes G, R - G, B - G (mod 256) of rgb(x, y), stacked: w x 3·ph."""
    px = [rgb(x, y) for y in range(ph) for x in range(w)]
    return bytes(g for _, g, _ in px) + bytes((r - g) % 256 for r, g, _ in px) + bytes((b - g) % 256 for _, g, b in px)


def noise(x: int, y: int, k: int) -> int:
    return (x * x * 29 + y * y * 53 + x * y * 17 + k * 101 + (x ^ y) * 7) % 256


def with_rects(pic: bytes, w: int, planes: int, rects, value) -> bytes:
    """pic with value(k, x, y) written over each rectangle in every plane: the wanted picture."""
    out = bytearray(pic)
    ph = len(pic) // w // planes
    for x0, y0, rw, rh, _ in rects:
        for k in range(planes):
            for y in range(y0, y0 + rh):
                for x in range(x0, x0 + rw):
                    out[(k * ph + y) * w + x] = value(k, x, y)
    return bytes(out)


def predicted_case(name, what, w, h, before, moves, patches, data, planes, rects, want_fn, needs):
    """A case whose predicted rectangles' residuals encode want_fn over them; `needs` names the
    predictor rules the residuals must exercise."""
    stats = {}
    want = with_rects(before, w, planes, rects, want_fn)
    res = residuals(want, w, h, planes, rects, stats)
    for n in needs:
        assert stats.get(n, 0) > 0, (name, n, stats)
    pic = after(before, w, h, moves, patches, data, (planes, rects, res))
    ph = h // planes
    for x0, y0, rw, rh, _ in rects:  # the definition gives back what the encoder wanted
        for k in range(planes):
            for y in range(y0, y0 + rh):
                a = (k * ph + y) * w
                assert pic[a + x0:a + x0 + rw] == want[a + x0:a + x0 + rw], name
    return name, what, w, h, before, moves, patches, data, (planes, rects, res)


def predicted_cases():
    # (a) Grey: a move, a patch, then two predicted rectangles of noise (mode 0, the only mode
    # of grey), the first on the picture's right and bottom edges, the second over part of the
    # move's destination.
    w, h = 16, 8
    base = picture(w, h, 2)
    patch_data = bytes((i * 53 + 9) % 256 for i in range(4 * 2))
    yield predicted_case(
        "predicted-grey", "a move, a patch, then two predicted rectangles of noise (one on the right and bottom edges)",
        w, h, base, [((1, 1, 6, 3), 2, 3)], [(8, 1, 4, 2)], patch_data, 1,
        [(10, 4, 6, 4, 0), (4, 2, 5, 3, 0)], lambda k, x, y: noise(x, y, k), ["min", "max", "grad"])

    # (b) Colour, 16 x 8 pixels (a 16 x 24 stacked picture): the same move in each plane, a
    # patch in plane 1 that a predicted rectangle then overwrites, two predicted rectangles of
    # "text" in a few colours sharing G values: the first in mode 0 (spatial only, though the
    # cache it fills disagrees with s), the second in mode 1, finding T1 and T2 entries the
    # mode-0 one set (so the tables are updated in mode 0 too), some right, some not; then a
    # 1 x 1 one in mode 1 whose G the others have seen.
    w, ph = 16, 8
    before = colour_picture(w, ph, lambda x, y: ((x * 19 + y * 7) % 256, (x * 5 + y * 23) % 256, (x * 11 + y * 3 + 40) % 256))
    palette = [(200, 90, 10), (60, 90, 10), (60, 90, 250), (250, 240, 230), (30, 40, 200), (31, 40, 200)]
    colour = {}
    for x in range(w):
        for y in range(ph):
            colour[x, y] = palette[(x * 3 + y * 5 + (x * y) % 3) % len(palette)]
    colour[15, 7] = (61, 90, 12)  # the 1 x 1: G 90 seen, R - G and B - G a step off the cache

    def want(k, x, y):
        r, g, b = colour[x, y]
        return [g, (r - g) % 256, (b - g) % 256][k]

    moves = [((2, k * ph + 0, 4, 2), 1, 2) for k in range(3)]
    patches = [(0, ph + 4, 5, 2)]  # plane 1, rows 4..5: inside the first predicted rectangle's footprint at x 1..4
    patch_data = bytes((i * 71 + 3) % 256 | 1 for i in range(5 * 2))
    yield predicted_case(
        "predicted-colour", "colour: moves in each plane, a plane-1 patch overwritten by a predicted rectangle, "
        "two predicted rectangles sharing the colour cache (mode 0 filling it, mode 1 using it), and a 1x1 one in mode 1",
        w, 3 * ph, before, moves, patches, patch_data, 3,
        [(1, 3, 6, 4, 0), (8, 0, 5, 5, 1), (15, 7, 1, 1, 1)], want,
        ["t1", "t1_not_s", "t1_miss", "t2", "t2_not_s", "t2_miss", "t1_from_mode0_not_s", "t2_from_mode0_not_s",
         "t1_ignored", "t2_ignored"])

    # (c) Bit 15 of nmoves set with no moves at all: a patch, then one predicted rectangle.
    w, h = 16, 8
    base = picture(w, h, 3)
    yield predicted_case(
        "predicted-no-moves", "bit 15 of nmoves with no moves: a patch, then one predicted rectangle on the left edge",
        w, h, base, [], [(9, 6, 3, 1)], bytes([0x11, 0x22, 0x33]), 1,
        [(0, 0, 5, 8, 0)], lambda k, x, y: noise(x, y, 5), [])

    # A colour video frame: no moves, no patches, the whole picture one predicted rectangle (mode
    # 1) of noise blended over a flat background (one random value moves all three channels).
    w, ph = 12, 4
    before = colour_picture(w, ph, lambda x, y: (128, 128, 128))
    video = {(x, y): (70 + noise(x, y, 1) % 40, 90 + noise(x, y, 1) % 40, 20 + noise(x, y, 1) % 40) for x in range(w) for y in range(ph)}

    def want_video(k, x, y):
        r, g, b = video[x, y]
        return [g, (r - g) % 256, (b - g) % 256][k]

    yield predicted_case(
        "predicted-colour-whole", "colour: no moves, no patches, the whole picture one predicted rectangle (mode 1) of blended noise",
        w, 3 * ph, before, [], [], b"", 3, [(0, 0, w, ph, 1)], want_video, ["t1", "t2"])


def main() -> None:
    OUT.mkdir(exist_ok=True)
    table = []
    for seq, (name, what, w, h, before, moves, patches, data, *pred) in enumerate(cases(), start=100):
        pkt, pic = frame(seq, w, before, moves, patches, data, h, *pred)
        (OUT / f"{name}.bin").write_bytes(pkt)
        table.append({
            "name": name,
            "what": what,
            "width": w,
            "height": h,
            "before": before.hex(),
            "after": pic.hex(),
            "checksum": f"{checksum(pic, w):016x}",
        })
    (OUT / "cases.json").write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {len(table)} cases to {OUT}")


if __name__ == "__main__":
    main()
