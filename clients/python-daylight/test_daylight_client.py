"""A Daylight client written from the reference alone decodes a framewire host pixel-exactly."""

import pytest

from daylight_client import DaylightViewer
from fwhost import host


@pytest.fixture
def server():
    with host("--scene", "mixed", "--resolution", "320x240") as h:
        yield h


def test_independent_client_reproduces_every_frame(server):
    s = server.connect()
    v = DaylightViewer(s)
    got = []
    for _ in range(90):
        seq, key = v.next_frame()
        got.append((seq, key, v.checksum()))
    assert (v.width, v.height) == (320, 240)
    assert v.brightness == 128, "the host sends brightness on connect"
    assert got[0][1], "the first frame must be a keyframe"
    assert [g[0] for g in got] == list(range(got[0][0], got[0][0] + 90)), "seq grows by one per frame"
    reply = server.control("BRIGHTNESS 200")
    assert reply == "OK 200\n"
    for _ in range(30):
        seq, key = v.next_frame()
        got.append((seq, key, v.checksum()))
    assert v.brightness == 200
    s.close()
    missing = server.not_sent([(seq, cs) for seq, _, cs in got])
    assert not missing, f"pictures that differ from what the host sent: {missing[:5]}"


def test_a_second_client_starts_from_the_current_picture(server):
    a = DaylightViewer(server.connect())
    a.next_frame()
    a_first = a.checksum()
    for _ in range(30):
        a.next_frame()
    b = DaylightViewer(server.connect())
    seq, key = b.next_frame()
    assert key and seq == 0
    first = b.checksum()
    a.next_frame()
    # The new client's first picture is one the host sent, and not the old first keyframe
    # (the mixed scene changes every frame, so a cached keyframe would be half a second old).
    assert not server.not_sent([(0, first)])
    assert first != a_first
