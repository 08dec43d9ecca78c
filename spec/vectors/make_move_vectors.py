#!/usr/bin/env python3
"""Writes spec/vectors/moves/: moved-rectangle delta frames with the pictures before and after.

Independent of every framewire implementation: the frames are packed with `struct` from
spec/PROTOCOL.md ("Moved-rectangle deltas"), and the picture after each frame is worked out
pixel by pixel from the definition below, not by any decoder. Needs the `xxhash` package
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


def after(before: bytes, w: int, h: int, moves, patches, data: bytes) -> bytes:
    """The definition: every move copies from `before`, in order; then every patch XORs."""
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
    return bytes(pic)


def frame(seq: int, w: int, before: bytes, moves, patches, data: bytes, h: int) -> tuple[bytes, bytes]:
    payload = struct.pack("<HH", len(moves), len(patches))
    for (x, y, rw, rh), dx, dy in moves:
        payload += struct.pack("<HHHHhh", x, y, rw, rh, dx, dy)
    for r in patches:
        payload += struct.pack("<HHHH", *r)
    payload += data  # codec 0 (raw): the patch data as it is
    pic = after(before, w, h, moves, patches, data)
    body = struct.pack("<QQBBQI", seq, 1_000_000 + seq, 4, 0, checksum(pic, w), len(data)) + payload
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


def main() -> None:
    OUT.mkdir(exist_ok=True)
    table = []
    for seq, (name, what, w, h, before, moves, patches, data) in enumerate(cases(), start=100):
        pkt, pic = frame(seq, w, before, moves, patches, data, h)
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
