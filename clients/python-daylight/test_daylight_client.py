"""A Daylight client written from the reference alone decodes a framewire host pixel-exactly."""
import os
import socket
import subprocess
import tempfile
import time

import pytest

from daylight_client import DaylightViewer

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("FRAMEWIRE_BIN", os.path.join(ROOT, "target", "release", "framewire"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server():
    tmp = tempfile.mkdtemp(prefix="fw-py-")
    trace = os.path.join(tmp, "trace")
    ctl = os.path.join(tmp, "ctl.sock")
    port, dport = free_port(), free_port()
    proc = subprocess.Popen(
        [BINARY, "serve", "--scene", "mixed", "--resolution", "320x240", "--port", str(port),
         "--daylight-port", str(dport), "--trace-frames", trace, "--control-socket", ctl,
         "--status-file", os.path.join(tmp, "status")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", dport), timeout=1).close()
            break
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.time() < deadline, "server did not start"
            time.sleep(0.05)
    yield dport, trace, ctl
    proc.terminate()
    proc.wait(timeout=10)


def sent_frames(trace):
    with open(trace) as f:
        return {(int(p[2]), int(p[3], 16)) for p in (line.split() for line in f) if p[0] == "daylight"}


def control(ctl, line):
    s = socket.socket(socket.AF_UNIX)
    s.connect(ctl)
    s.sendall(line.encode() + b"\n")
    out = b""
    while chunk := s.recv(4096):
        out += chunk
    return out.decode()


def test_independent_client_reproduces_every_frame(server):
    dport, trace, ctl = server
    s = socket.create_connection(("127.0.0.1", dport), timeout=20)
    v = DaylightViewer(s)
    got = []
    for _ in range(90):
        seq, key = v.next_frame()
        got.append((seq, key, v.checksum()))
    assert (v.width, v.height) == (320, 240)
    assert v.brightness == 128, "the host sends brightness on connect"
    assert got[0][1], "the first frame must be a keyframe"
    assert [g[0] for g in got] == list(range(got[0][0], got[0][0] + 90)), "seq grows by one per frame"
    reply = control(ctl, "BRIGHTNESS 200")
    assert reply == "OK brightness=200\n"
    for _ in range(30):
        seq, key = v.next_frame()
        got.append((seq, key, v.checksum()))
    assert v.brightness == 200
    s.close()
    time.sleep(0.2)
    sent = sent_frames(trace)
    missing = [(seq, cs) for seq, _, cs in got if (seq, cs) not in sent]
    assert not missing, f"pictures that differ from what the host sent: {missing[:5]}"


def test_a_second_client_starts_from_the_current_picture(server):
    dport, trace, _ = server
    a = DaylightViewer(socket.create_connection(("127.0.0.1", dport), timeout=20))
    a.next_frame()
    a_first = a.checksum()
    for _ in range(30):
        a.next_frame()
    b = DaylightViewer(socket.create_connection(("127.0.0.1", dport), timeout=20))
    seq, key = b.next_frame()
    assert key and seq == 0
    first = b.checksum()
    a.next_frame()
    time.sleep(0.2)
    # The new client's first picture is one the host sent, and not the old first keyframe
    # (the mixed scene changes every frame, so a cached keyframe would be half a second old).
    assert (0, first) in sent_frames(trace)
    assert first != a_first
