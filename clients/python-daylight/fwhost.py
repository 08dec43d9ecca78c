"""Starting a framewire host for the Python tests, and reading what it says it sent."""
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY = os.environ.get("FRAMEWIRE_BIN", os.path.join(ROOT, "target", "release", "framewire"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Host:
    def __init__(self, proc, tmp, daylight_port, v1_port):
        self.proc = proc
        self.daylight_port = daylight_port
        self.v1_port = v1_port
        self.trace = os.path.join(tmp, "trace")
        self.ctl = os.path.join(tmp, "ctl.sock")

    def sent_frames(self):
        """(wire seq, checksum) of every frame sent to a Daylight viewer so far."""
        with open(self.trace) as f:
            return {(int(p[2]), int(p[3], 16)) for p in (line.split() for line in f)
                    if p[0] == "daylight"}

    def not_sent(self, pictures, timeout=5):
        """The (seq, checksum) pairs among `pictures` that the host did not send. A frame's
        trace line is written right after its send, so this waits (up to `timeout`) for them."""
        deadline = time.time() + timeout
        while True:
            missing = [p for p in pictures if p not in self.sent_frames()]
            if not missing or time.time() > deadline:
                return missing
            time.sleep(0.01)

    def control(self, line):
        s = socket.socket(socket.AF_UNIX)
        s.connect(self.ctl)
        s.sendall(line.encode() + b"\n")
        out = b""
        while chunk := s.recv(4096):
            out += chunk
        return out.decode()

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.daylight_port), timeout=20)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return s


@contextlib.contextmanager
def host(*args, env=None):
    """`framewire serve` with a Daylight port, a frame trace and a control socket."""
    tmp = tempfile.mkdtemp(prefix="fw-py-")
    dport, vport = free_port(), free_port()
    h = None
    proc = subprocess.Popen(
        [BINARY, "serve", "--port", str(vport), "--daylight-port", str(dport),
         "--no-sensors", "--http-port", str(free_port()), "--touch-port", str(free_port()),
         "--trace-frames", os.path.join(tmp, "trace"),
         "--control-socket", os.path.join(tmp, "ctl.sock"),
         "--status-file", os.path.join(tmp, "status"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    h = Host(proc, tmp, dport, vport)
    deadline = time.time() + 20
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", dport), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.time() < deadline, "server did not start"
                time.sleep(0.05)
        yield h
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
