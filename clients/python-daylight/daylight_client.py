"""A minimal Daylight Mirror viewer, written only from shared/reference/daylight-protocol.md.

It shares no code with framewire: it exists to prove that a client built from the Daylight
protocol description alone decodes a framewire host's stream pixel-exactly.

    python3 daylight_client.py HOST PORT FRAMES
prints one line per frame: "<seq> <keyframe 0/1> <xxh3-64 hex of the picture>".
"""
import socket
import struct
import sys

import lz4.block
import xxhash

MAX_SIDE = 4096


class ProtocolError(Exception):
    pass


class SocketReader:
    """Exactly `n` bytes at a time from a socket, however the host's writes were split."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()

    def _take(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError("host closed the connection")
            self.buf += chunk
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out


class DaylightViewer(SocketReader):
    # What a protocol violation raises, and the picture a resolution packet leaves (this client
    # waits for a keyframe; the app model zeroes its picture, as the app does).
    error = ProtocolError

    def __init__(self, sock):
        super().__init__(sock)
        self.width = self.height = 0
        self.picture = None
        self.brightness = None
        self.warmth = None

    def _new_picture(self, w, h):
        return None

    def _command(self):
        """The rest of a `DA 7F` command packet: resolution, brightness, warmth (others ignored)."""
        cmd = self._take(1)[0]
        if cmd == 0x04:
            w, h = struct.unpack("<HH", self._take(4))
            if not (0 < w <= MAX_SIDE and 0 < h <= MAX_SIDE):
                raise self.error(f"bad resolution {w}x{h}")
            self.width, self.height = w, h
            self.picture = self._new_picture(w, h)
            return
        value = self._take(1)[0]
        if cmd == 0x01:
            self.brightness = value
        elif cmd == 0x02:
            self.warmth = value

    def next_frame(self):
        """Reads packets until a frame is applied and ACKed; returns (seq, keyframe)."""
        while True:
            magic, kind = self._take(2)
            if magic != 0xDA:
                raise ProtocolError(f"bad magic {magic:#x}")
            if kind == 0x7F:
                self._command()
                continue
            if kind != 0x7E:
                raise ProtocolError(f"unknown packet {kind:#x}")
            flags, seq, length = struct.unpack("<BII", self._take(9))
            payload = self._take(length)
            size = self.width * self.height
            if size == 0:
                raise ProtocolError("frame before resolution")
            data = lz4.block.decompress(payload, uncompressed_size=size)
            if len(data) != size:
                raise ProtocolError("payload decodes to the wrong size")
            keyframe = bool(flags & 1)
            if keyframe:
                self.picture = data
            else:
                if self.picture is None:
                    raise ProtocolError("delta before any keyframe")
                x = int.from_bytes(self.picture, "little") ^ int.from_bytes(data, "little")
                self.picture = x.to_bytes(size, "little")
            # ACK after applying, as the reference says.
            self.sock.sendall(b"\xDA\x7A" + struct.pack("<I", seq))
            return seq, keyframe

    def checksum(self):
        return picture_checksum(self.picture, self.width, self.height)


def picture_checksum(picture, width, height):
    """The framewire v1 picture checksum (spec/PROTOCOL.md), to compare with --trace-frames:
    xxh3-64 over the little-endian xxh3-64 of each row."""
    rows = b"".join(
        struct.pack("<Q", xxhash.xxh3_64_intdigest(picture[y * width:(y + 1) * width]))
        for y in range(height)
    )
    return xxhash.xxh3_64_intdigest(rows)


def main():
    host, port, frames = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    s = socket.create_connection((host, port), timeout=20)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    v = DaylightViewer(s)
    for _ in range(frames):
        seq, key = v.next_frame()
        print(f"{seq} {int(key)} {v.checksum():016x}", flush=True)


if __name__ == "__main__":
    main()
