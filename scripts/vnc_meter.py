#!/usr/bin/env python3
"""A VNC viewer that only counts: how many bytes a VNC server sends per framebuffer update.

It is the peer side of framewire's real-content benchmark (`make corpus`): x11vnc watches the
same live X screen that `framewire record` records, and this client asks it for lossless Tight
in colour (no JPEG quality level is sent, so the server may not use JPEG), as a VNC viewer
would, requesting the next incremental update as soon as one ends. It parses every message
just far enough to find where it ends (it decompresses nothing) and counts the bytes.

Written for framewire from RFC 6143 (RFB 3.8) and the Tight encoding's published description;
stdlib only. `python3 scripts/vnc_meter.py --port 5901 --seconds 10` prints a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import threading
import time

ENC_RAW, ENC_COPYRECT, ENC_TIGHT = 0, 1, 7
ENC_LASTRECT = -224
# Tight's pixels are 3 bytes when the pixel format is 32 bpp, depth 24, true colour, max 255.
TPIXEL = 3
TIGHT_MIN_TO_COMPRESS = 12
MAX_RECT_BYTES = 64 << 20


class ProtocolError(Exception):
    pass


class TimeUp(Exception):
    """The metering time ended while waiting for the server."""


class Counted:
    """A socket reader that counts what it reads."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.count = 0
        self.buf = bytearray()
        # After this (monotonic) time, waiting for more raises TimeUp: an unchanged screen
        # sends nothing at all, so the end cannot wait for a message.
        self.deadline: float | None = None

    def read(self, n: int) -> bytes:
        if n > MAX_RECT_BYTES:
            raise ProtocolError(f"a length of {n} bytes is beyond any update of this screen")
        while len(self.buf) < n:
            try:
                chunk = self.sock.recv(max(65536, n - len(self.buf)))
            except socket.timeout:
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    raise TimeUp() from None
                continue
            if not chunk:
                raise ProtocolError("the server closed the connection")
            self.buf += chunk
        out = bytes(self.buf[:n])
        del self.buf[:n]
        self.count += n
        return out

    def u8(self) -> int:
        return self.read(1)[0]

    def compact_len(self) -> int:
        """Tight's compact length: 1 to 3 bytes, 7 bits each, low bits first."""
        n = 0
        for shift in (0, 7, 14):
            b = self.u8()
            n |= (b & (0x7F if shift < 14 else 0xFF)) << shift
            if shift == 14 or not b & 0x80:
                break
        return n


def tight_rect(r: Counted, w: int, h: int) -> str:
    """Reads one Tight rectangle's data; returns its kind."""
    c = r.u8()
    kind = c >> 4
    if kind == 0x8:  # fill: one pixel
        r.read(TPIXEL)
        return "fill"
    if kind == 0x9:  # JPEG: never asked for, but its length says where it ends
        r.read(r.compact_len())
        return "jpeg"
    if kind > 0x9:
        raise ProtocolError(f"unknown Tight compression control 0x{c:02x}")
    filt = r.u8() if c & 0x40 else 0
    if filt == 1:  # palette
        colours = r.u8() + 1
        r.read(colours * TPIXEL)
        size = ((w + 7) // 8) * h if colours == 2 else w * h
        name = "palette"
    elif filt in (0, 2):  # copy, gradient
        size = w * h * TPIXEL
        name = "gradient" if filt == 2 else "basic"
    else:
        raise ProtocolError(f"unknown Tight filter {filt}")
    if size < TIGHT_MIN_TO_COMPRESS:
        r.read(size)
    else:
        r.read(r.compact_len())
    return name


def handshake(sock: socket.socket) -> tuple[Counted, int, int]:
    r = Counted(sock)
    version = r.read(12)
    if not version.startswith(b"RFB "):
        raise ProtocolError(f"not a VNC server: {version!r}")
    sock.sendall(b"RFB 003.008\n")
    types = r.read(r.u8())
    if 1 not in types:
        raise ProtocolError(f"the server wants authentication (types {list(types)}); run it with -nopw")
    sock.sendall(b"\x01")
    if struct.unpack(">I", r.read(4))[0] != 0:
        raise ProtocolError("security handshake failed")
    sock.sendall(b"\x01")  # shared
    w, h = struct.unpack(">HH", r.read(4))
    r.read(16)  # the server's pixel format
    r.read(struct.unpack(">I", r.read(4))[0])  # desktop name
    # 32 bpp, depth 24, little-endian, true colour, 8 bits each: R<<16 | G<<8 | B.
    pf = struct.pack(">BBBBHHHBBB3x", 32, 24, 0, 1, 255, 255, 255, 16, 8, 0)
    sock.sendall(struct.pack(">B3x", 0) + pf)
    encs = [ENC_TIGHT, ENC_COPYRECT, ENC_RAW, ENC_LASTRECT]
    sock.sendall(struct.pack(">BxH", 2, len(encs)) + struct.pack(f">{len(encs)}i", *encs))
    return r, w, h


def request(sock: socket.socket, w: int, h: int, incremental: bool) -> None:
    sock.sendall(struct.pack(">BBHHHH", 3, int(incremental), 0, 0, w, h))


def meter(port: int, seconds: float, host: str = "127.0.0.1", ready: threading.Event | None = None) -> dict:
    """Connects, then counts updates for `seconds` (after the first, whole-screen one)."""
    sock = socket.create_connection((host, port), timeout=10)
    r, w, h = handshake(sock)
    request(sock, w, h, False)
    updates: list[tuple[float, int, int]] = []  # (time, bytes, rectangles)
    kinds: dict[str, int] = {}
    first_bytes = 0
    start = None
    try:
        while True:
            msg = r.u8()
            before = r.count - 1
            if msg == 0:
                r.read(1)
                n = struct.unpack(">H", r.read(2))[0]
                rects = 0
                for _ in range(n):
                    x, y, rw, rh, enc = struct.unpack(">HHHHi", r.read(12))
                    if enc == ENC_LASTRECT:
                        break
                    rects += 1
                    if enc == ENC_TIGHT:
                        k = tight_rect(r, rw, rh)
                    elif enc == ENC_COPYRECT:
                        r.read(4)
                        k = "copyrect"
                    elif enc == ENC_RAW:
                        r.read(rw * rh * 4)
                        k = "raw"
                    else:
                        raise ProtocolError(f"an encoding that was not asked for: {enc}")
                    kinds[k] = kinds.get(k, 0) + 1
                size = r.count - before
                now = time.monotonic()
                if start is None:
                    first_bytes, start = size, now
                    r.deadline = start + seconds
                    sock.settimeout(0.2)
                    if ready is not None:
                        ready.set()
                elif rects:
                    updates.append((now - start, size, rects))
                if now - start >= seconds:
                    break
                request(sock, w, h, True)
            elif msg == 1:
                r.read(3)
                r.read(6 * struct.unpack(">H", r.read(2))[0])
            elif msg == 2:
                pass
            elif msg == 3:
                r.read(3)
                r.read(struct.unpack(">I", r.read(4))[0])
            else:
                raise ProtocolError(f"unknown server message {msg}")
    except TimeUp:
        pass  # the time ended while waiting (a message cut short is not counted)
    sock.close()
    sizes = sorted(b for _, b, _ in updates)
    total = sum(sizes)
    return {
        "width": w,
        "height": h,
        "seconds": seconds,
        "first_update_bytes": first_bytes,
        "updates": len(updates),
        "bytes": total,
        "bytes_per_update_mean": total / len(sizes) if sizes else 0.0,
        "bytes_per_update_p50": sizes[len(sizes) // 2] if sizes else 0,
        "rect_kinds": kinds,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=5900)
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args()
    try:
        print(json.dumps(meter(a.port, a.seconds, a.host), indent=2))
    except (OSError, ProtocolError) as e:
        print(f"vnc_meter: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
