"""The independent Python v1 viewer (fwv1.py) against the spec's moved-rectangle vectors, and
against a live host replaying a recording of moved windows and a scrolled column."""

import json
import os
import struct

import lz4.block
import pytest

import fwv1
from fwhost import ROOT, host

VECTORS = os.path.join(ROOT, "spec", "vectors", "moves")


def test_moved_rectangle_vectors_apply_exactly():
    cases = json.load(open(os.path.join(VECTORS, "cases.json")))
    assert len(cases) == 9
    assert sum(c["name"].startswith("predicted-") for c in cases) == 4
    for c in cases:
        pkt = open(os.path.join(VECTORS, c["name"] + ".bin"), "rb").read()
        body = pkt[7:]
        seq, _cap, flags, codec, checksum, raw_len = struct.unpack_from("<QQBBQI", body, 0)
        assert (flags, codec) == (fwv1.FLAG_RECTS, fwv1.CODEC_RAW)
        pic = fwv1.Picture(c["width"], c["height"])
        before = bytes.fromhex(c["before"])
        pic.apply(fwv1.FLAG_KEYFRAME, before, before)
        payload = body[30:]
        data = fwv1.frame_data(flags, payload, codec, raw_len, pic.width, pic.height)
        pic.apply(flags, data, payload)
        assert bytes(pic.pixels).hex() == c["after"], c["name"]
        assert f"{pic.checksum():016x}" == c["checksum"] == f"{checksum:016x}", c["name"]


@pytest.mark.parametrize("payload", [
    struct.pack("<HH", 65, 0),
    struct.pack("<HH", 0, 11),
    struct.pack("<HHHHHHhh", 1, 0, 0, 0, 5, 5, 6, 0),
    struct.pack("<HHHHHH", 0, 1, 9, 0, 2, 1),
    b"\x01",
    # Predicted rectangles: two planes, an unknown mode, the colour cache in grey, one
    # outside the picture, a truncated entry (the first plane's bound: the next test).
    struct.pack("<HHHBHHHHB", 0x8000, 0, 1, 2, 0, 0, 1, 1, 0),
    struct.pack("<HHHBHHHHB", 0x8000, 0, 1, 1, 0, 0, 1, 1, 2),
    struct.pack("<HHHBHHHHB", 0x8000, 0, 1, 1, 0, 0, 1, 1, 1),
    struct.pack("<HHHBHHHHB", 0x8000, 0, 1, 1, 0, 9, 1, 2, 0),
    struct.pack("<HHHBHHHH", 0x8000, 0, 1, 1, 0, 0, 1, 1),
])
def test_bad_moved_rectangle_headers_are_refused(payload):
    with pytest.raises(fwv1.ProtocolError):
        fwv1.parse_rect_plan(payload, 10, 10)


def test_predicted_rectangles_stay_in_the_first_plane():
    # Colour, 12 rows stacked: planes of 4 rows. Rows 2..4 fit the first plane; 3..5 do not.
    inside = struct.pack("<HHHBHHHHB", 0x8000, 0, 1, 3, 0, 2, 1, 2, 1)
    outside = struct.pack("<HHHBHHHHB", 0x8000, 0, 1, 3, 0, 3, 1, 2, 1)
    _, _, _, (predicted, planes) = fwv1.parse_rect_plan(inside, 10, 12)
    assert (predicted, planes) == ([(0, 2, 1, 2, 1)], 3)
    with pytest.raises(fwv1.ProtocolError):
        fwv1.parse_rect_plan(outside, 10, 12)


def scene(w, h, k):
    """Frame k of a desktop: a page of text lines scrolling up 3 rows a frame in a column
    (x 60..220) between a fixed sidebar and margin, and a 70x50 window moving 4 right and 2
    down a frame over it. Pixels are B G R A; the grey the host makes of them is what counts."""
    grey = bytearray(b"\xf0" * (w * h))
    for y in range(h):
        for x in range(4, 50, 6):  # the sidebar: fixed
            if (y // 9) % 3 != 2:
                grey[y * w + x] = 40 + (x * y) % 90
        line = y + 3 * k  # the column's content, moved up 3 rows per frame
        if line % 12 < 8:
            for x in range(62, 218):
                if ((x * 7 + (line // 12) * 13) % 11) < 4:
                    grey[y * w + x] = (line * 5 + x * 3) % 120
    wx, wy = 20 + 4 * k, 30 + 2 * k
    for y in range(wy, min(h, wy + 50)):
        for x in range(wx, min(w, wx + 70)):
            grey[y * w + x] = 200 if y < wy + 8 else ((x - wx) * 3 + (y - wy) * 5) % 60 + 100
    return bytes(b for g in grey for b in (g, g, g, 255))


def gradients(w, h, k):
    """Frame k of a moving picture: smooth colour gradients that turn and zoom every frame (no
    move lines them up), as in a video: an XOR of two frames is all noise, and nearly every
    pixel follows from its neighbours. B G R A."""
    return bytes(
        c
        for y in range(h)
        for x in range(w)
        for c in ((x * (k + 1) + y * 2) & 255, ((x * x + y * y) // (20 + k)) & 255, (x * 3 + y * k) & 255, 255)
    )


def write_recording(path, w, h, frames, scene_of=None):
    """A recording as spec/PROTOCOL.md ("Recordings") defines it, written here from the spec."""
    scene_of = scene_of or scene
    prev = bytes(w * h * 4)
    with open(path, "wb") as f:
        f.write(b"FWREC\0" + struct.pack("<HII", 1, w, h))
        for k in range(frames):
            pic = scene_of(w, h, k)
            xor = bytes(a ^ b for a, b in zip(pic, prev))
            block = lz4.block.compress(xor, store_size=False)
            rec = struct.pack("<QI", k * 16_667, 0xFFFFFFFF) + block
            f.write(struct.pack("<I", len(rec)) + rec)
            prev = pic


def test_a_live_host_sends_moved_rectangles_that_apply_exactly(tmp_path):
    w, h = 256, 160
    rec = str(tmp_path / "moves.fwrec")
    write_recording(rec, w, h, 24)
    with host("--source", f"file:{rec}", "--replay", "fast", "--fps", "30") as srv:
        v = fwv1.Viewer.connect("127.0.0.1", srv.v1_port)
        shown = list(v.frames(60))
        v.close()
    assert v.welcome_caps & fwv1.CAP_MOVED_RECTS, "the host offers moved rectangles"
    assert all(s.ok for s in shown), [s for s in shown if not s.ok][:3]
    rects = [s for s in shown if s.flags == fwv1.FLAG_RECTS]
    assert len(rects) >= 20, f"only {len(rects)} moved-rectangle deltas among {len(shown)}"
    # A moved window and a scrolled column cost a fraction of the rows they change.
    assert sorted(s.payload_len for s in rects)[len(rects) // 2] < 3000


@pytest.mark.parametrize("colour", [False, True])
def test_a_moving_picture_comes_as_predicted_rectangles_that_apply_exactly(tmp_path, colour):
    w, h = 160, 96
    rec = str(tmp_path / "gradients.fwrec")
    write_recording(rec, w, h, 10, gradients)
    caps = fwv1.CAP_LZ4 | fwv1.CAP_UNCHANGED | fwv1.CAP_XXH3 | fwv1.CAP_MOVED_RECTS
    caps |= fwv1.CAP_COLOUR if colour else 0
    with host("--source", f"file:{rec}", "--replay", "fast", "--fps", "20") as srv:
        v = fwv1.Viewer.connect("127.0.0.1", srv.v1_port, caps=caps | fwv1.CAP_PREDICTED | fwv1.CAP_ZSTD)
        shown = list(v.frames(12))
        v.close()
        # The same stream to a viewer that does not declare them: full-frame deltas instead.
        old = fwv1.Viewer.connect("127.0.0.1", srv.v1_port, caps=caps)
        old_shown = list(old.frames(12))
        old.close()
        # Dense deltas are zstd: a viewer with predicted rectangles but without zstd gets
        # full-frame deltas for those frames, in LZ4.
        no_zstd = fwv1.Viewer.connect("127.0.0.1", srv.v1_port, caps=caps | fwv1.CAP_PREDICTED)
        no_zstd_shown = list(no_zstd.frames(12))
        no_zstd.close()
    assert v.welcome_caps & fwv1.CAP_PREDICTED
    assert v.planes == (3 if colour else 1)
    assert all(s.ok for s in shown), [s for s in shown if not s.ok][:3]
    assert sum(s.predicted for s in shown) >= 5, shown
    assert {s.codec for s in shown if s.predicted} == {fwv1.CODEC_ZSTD}, shown
    # Every other frame (Unchanged packets aside) stays LZ4.
    assert {s.codec for s in shown if not s.predicted and s.payload_len} <= {fwv1.CODEC_LZ4}, shown
    for other in (old_shown, no_zstd_shown):
        assert all(s.ok for s in other) and not any(s.predicted for s in other), other
        assert {s.codec for s in other if s.payload_len} <= {fwv1.CODEC_LZ4}, other
    assert not old.welcome_caps & fwv1.CAP_PREDICTED
    assert {s.flags for s in old_shown} <= {0, fwv1.FLAG_KEYFRAME, fwv1.FLAG_RECTS}, old_shown


def test_a_viewer_without_moved_rectangles_gets_full_deltas(tmp_path):
    w, h = 256, 160
    rec = str(tmp_path / "moves.fwrec")
    write_recording(rec, w, h, 12)
    caps = fwv1.CAP_LZ4 | fwv1.CAP_UNCHANGED | fwv1.CAP_XXH3
    with host("--source", f"file:{rec}", "--replay", "fast", "--fps", "30") as srv:
        v = fwv1.Viewer.connect("127.0.0.1", srv.v1_port, caps=caps)
        shown = list(v.frames(30))
        v.close()
    assert all(s.ok for s in shown)
    assert not v.welcome_caps & fwv1.CAP_MOVED_RECTS
    assert all(s.flags in (0, fwv1.FLAG_KEYFRAME) for s in shown), {s.flags for s in shown}


def test_colour_arrives_exact_and_in_colour():
    caps = fwv1.CAP_LZ4 | fwv1.CAP_UNCHANGED | fwv1.CAP_XXH3 | fwv1.CAP_MOVED_RECTS | fwv1.CAP_COLOUR
    with host("--scene", "mixed", "--resolution", "160x120") as srv:
        v = fwv1.Viewer.connect("127.0.0.1", srv.v1_port, caps=caps)
        shown = list(v.frames(40))
        v.close()
    assert v.welcome_caps & fwv1.CAP_COLOUR
    assert v.planes == 3 and (v.picture.width, v.picture.height) == (160, 360)
    assert all(s.ok for s in shown), [s for s in shown if not s.ok][:3]
    rgb = v.rgb()
    assert len(rgb) == 160 * 120 * 3
    assert sum(1 for i in range(0, len(rgb), 3) if rgb[i] != rgb[i + 1]) > 100, "the picture has colour"


def test_zstd_frames_apply_exactly_when_the_host_encodes_zstd():
    caps = fwv1.CAP_LZ4 | fwv1.CAP_ZSTD | fwv1.CAP_UNCHANGED | fwv1.CAP_XXH3 | fwv1.CAP_MOVED_RECTS
    with host("--scene", "scroll", "--resolution", "320x240", "--codec", "zstd") as srv:
        v = fwv1.Viewer.connect("127.0.0.1", srv.v1_port, caps=caps)
        shown = list(v.frames(40))
        v.close()
    assert all(s.ok for s in shown), [s for s in shown if not s.ok][:3]
    framed = [s for s in shown if s.payload_len > 0]
    assert framed and all(s.codec == fwv1.CODEC_ZSTD for s in framed), {s.codec for s in framed}


def test_a_zstd_frame_is_refused_unless_it_states_the_promised_size():
    import zstandard
    raw = bytes(range(256)) * 20
    block = zstandard.ZstdCompressor(level=1, write_content_size=True).compress(raw)
    assert fwv1.decompress(fwv1.CODEC_ZSTD, block, len(raw)) == raw
    for size in (len(raw) - 1, len(raw) + 1):
        with pytest.raises(fwv1.ProtocolError):
            fwv1.decompress(fwv1.CODEC_ZSTD, block, size)
    unstated = zstandard.ZstdCompressor(level=1, write_content_size=False).compress(raw)
    with pytest.raises(fwv1.ProtocolError):
        fwv1.decompress(fwv1.CODEC_ZSTD, unstated, len(raw))
    with pytest.raises(fwv1.ProtocolError):
        fwv1.decompress(fwv1.CODEC_ZSTD, b"junk" * 10, len(raw))
