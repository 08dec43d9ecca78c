"""A framewire v1 viewer in Python, written from spec/PROTOCOL.md alone.

It says Hello, reads StreamDesc and Frames, applies keyframes, full-frame deltas, row deltas
and moved-rectangle deltas to its own picture, checks every checksum, and ACKs. It is the
independent second implementation the Rust and browser viewers are checked against (besides
the spec's vectors), and small enough to read in one sitting.

    v = Viewer.connect("127.0.0.1", 7878, token="...")
    for frame in v.frames(100): assert frame.ok
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass

import lz4.block
import xxhash
import zstandard

MAGIC = b"FW"
HELLO, WELCOME, STREAM_DESC, FRAME, UNCHANGED = 0x01, 0x02, 0x03, 0x10, 0x11
ACK, PING, PONG, COMMAND, GOODBYE = 0x20, 0x30, 0x31, 0x40, 0x7F
CAP_LZ4, CAP_ZSTD, CAP_UNCHANGED, CAP_XXH3, CAP_MOVED_RECTS, CAP_COLOUR = 1, 2, 4, 8, 16, 32
CAP_PREDICTED = 128  # predicted rectangles in moved-rectangle deltas (bit 15 of nmoves)
PREDICTED = 0x8000
FORMAT_GREY, FORMAT_PLANAR_GDIFF = 1, 2
FLAG_KEYFRAME, FLAG_ROWS, FLAG_RECTS = 1, 2, 4
CODEC_RAW, CODEC_LZ4, CODEC_ZSTD = 0, 1, 2
MAX_MOVES = 64
MAX_BODY = 50_529_091  # a 4096x4096 colour frame (3 planes), LZ4 worst case, + fields


class ProtocolError(Exception):
    pass


def row_hash(row: bytes) -> int:
    return xxhash.xxh3_64_intdigest(row)


def checksum_of_hashes(hashes: list[int]) -> int:
    return xxhash.xxh3_64_intdigest(b"".join(struct.pack("<Q", h) for h in hashes))


def parse_rect_plan(payload: bytes, width: int, height: int):
    """(moves, patches, header length, (predicted rectangles, planes)) of a moved-rectangle
    delta, every bound checked; planes is 0 without predicted rectangles."""
    if len(payload) < 4:
        raise ProtocolError("moved-rectangle delta shorter than its header")
    nmoves, npatches = struct.unpack_from("<HH", payload, 0)
    has_predicted = bool(nmoves & PREDICTED)
    nmoves &= ~PREDICTED
    if nmoves > MAX_MOVES:
        raise ProtocolError(f"{nmoves} moves (at most {MAX_MOVES})")
    if npatches > height:
        raise ProtocolError(f"{npatches} patches for {height} rows")
    header = 4 + 12 * nmoves + 8 * npatches
    if len(payload) < header:
        raise ProtocolError("moved-rectangle delta shorter than its rectangles")

    def rect(o, height=height):
        x, y, w, h = struct.unpack_from("<HHHH", payload, o)
        if w == 0 or h == 0 or x + w > width or y + h > height:
            raise ProtocolError("an empty rectangle or one outside the picture")
        return x, y, w, h

    moves = []
    for i in range(nmoves):
        o = 4 + 12 * i
        x, y, w, h = rect(o)
        dx, dy = struct.unpack_from("<hh", payload, o + 8)
        if x + dx < 0 or y + dy < 0 or x + dx + w > width or y + dy + h > height:
            raise ProtocolError("a move from outside the picture")
        moves.append(((x, y, w, h), dx, dy))
    patches, area = [], 0
    for i in range(npatches):
        r = rect(4 + 12 * nmoves + 8 * i)
        area += r[2] * r[3]
        if area > width * height:
            raise ProtocolError("patches larger than the picture")
        patches.append(r)
    predicted, planes = [], 0
    if has_predicted:
        if len(payload) < header + 3:
            raise ProtocolError("moved-rectangle delta shorter than its predicted rectangles")
        npred, planes = struct.unpack_from("<HB", payload, header)
        if planes not in (1, 3) or height % planes:
            raise ProtocolError(f"predicted rectangles in {planes} planes of {height} rows")
        ph = height // planes
        if npred > ph:
            raise ProtocolError(f"{npred} predicted rectangles for {ph} rows")
        header += 3 + 9 * npred
        if len(payload) < header:
            raise ProtocolError("moved-rectangle delta shorter than its predicted rectangles")
        area = 0
        for i in range(npred):
            o = header - 9 * (npred - i)
            r = rect(o, ph)
            mode = payload[o + 8]
            if mode not in (0, 1) or (mode == 1 and planes != 3):
                raise ProtocolError(f"predicted rectangle mode {mode} in {planes} planes")
            area += r[2] * r[3]
            if area > width * ph:
                raise ProtocolError("predicted rectangles larger than a plane")
            predicted.append((*r, mode))
    return moves, patches, header, (predicted, planes)


def med(a: int, b: int, c: int) -> int:
    """JPEG-LS's median edge detector."""
    if c >= max(a, b):
        return min(a, b)
    if c <= min(a, b):
        return max(a, b)
    return a + b - c


def apply_predicted(pixels: bytearray, width: int, ph: int, planes: int, rects, data: bytes) -> None:
    """Predicted rectangles (spec: "Predicted rectangles"), written over `pixels` (planes
    stacked, `ph` rows each); `data` is every rectangle's plane 0 residuals, then plane 1's, …
    Mode 1 predicts the colour planes from the colour cache where it has an entry; the cache
    learns every colour pixel whatever the mode."""
    t1, t2 = {}, {}
    per_plane = sum(w * h for _, _, w, h, _ in rects)
    off = 0
    for x, y, rw, rh, mode in rects:
        for i in range(rh):
            for j in range(rw):
                n = off + i * rw + j
                vals = []
                for k in range(planes):
                    at = (k * ph + y + i) * width + x + j
                    if i == 0 and j == 0:
                        s = 0
                    elif i == 0:
                        s = pixels[at - 1]
                    elif j == 0:
                        s = pixels[at - width]
                    else:
                        s = med(pixels[at - 1], pixels[at - width], pixels[at - width - 1])
                    key = None if k == 0 else (vals[0] if k == 1 else 256 * vals[0] + vals[1])
                    table = t1 if k == 1 else t2
                    pred = table.get(key, s) if k > 0 and mode == 1 else s
                    v = (pred + data[k * per_plane + n]) & 0xFF
                    pixels[at] = v
                    if k > 0:
                        table[key] = v
                    vals.append(v)
        off += rw * rh


class Picture:
    """Grey rows, contiguous; row hashes kept up to date as the spec's checksum needs."""

    def __init__(self, width: int, height: int):
        self.width, self.height = width, height
        self.pixels = bytearray(width * height)
        self.hashes = [0] * height
        self.valid = False

    def row(self, y: int) -> bytearray:
        return self.pixels[y * self.width:(y + 1) * self.width]

    def rehash(self, rows) -> None:
        w = self.width
        for y in rows:
            self.hashes[y] = row_hash(bytes(self.pixels[y * w:(y + 1) * w]))

    def checksum(self) -> int:
        return checksum_of_hashes(self.hashes)

    def xor_rows(self, y: int, x: int, w: int, data: bytes) -> None:
        at = y * self.width + x
        cur = int.from_bytes(self.pixels[at:at + w], "little")
        self.pixels[at:at + w] = (cur ^ int.from_bytes(data, "little")).to_bytes(w, "little")

    def apply(self, flags: int, data: bytes, payload: bytes) -> None:
        """Applies a frame whose decompressed data is `data` (for deltas with a header, the
        data after it)."""
        w, h = self.width, self.height
        if flags & FLAG_KEYFRAME:
            self.pixels[:] = data
            self.valid = True
            self.rehash(range(h))
            return
        if not self.valid:
            raise ProtocolError("a delta before any keyframe")
        if flags & FLAG_ROWS:
            dy, n = struct.unpack_from("<iI", payload, 0)
            ranges = [struct.unpack_from("<II", payload, 8 + 8 * i) for i in range(n)]
            before = bytes(self.pixels)
            for y in range(h):
                if 0 <= y + dy < h:
                    self.pixels[y * w:(y + 1) * w] = before[(y + dy) * w:(y + dy + 1) * w]
            hashes = list(self.hashes)
            self.hashes = [hashes[y + dy] if 0 <= y + dy < h else hashes[y] for y in range(h)]
            off = 0
            for y0, rows in ranges:
                for y in range(y0, y0 + rows):
                    self.xor_rows(y, 0, w, data[off:off + w])
                    off += w
                self.rehash(range(y0, y0 + rows))
            return
        if flags & FLAG_RECTS:
            moves, patches, _, (predicted, planes) = parse_rect_plan(payload, w, h)
            before = bytes(self.pixels)
            touched = set()
            for (x, y0, rw, rh), dx, dy in moves:
                for y in range(y0, y0 + rh):
                    s = (y + dy) * w + x + dx
                    self.pixels[y * w + x:y * w + x + rw] = before[s:s + rw]
                    touched.add(y)
            off = 0
            for x, y0, rw, rh in patches:
                for y in range(y0, y0 + rh):
                    self.xor_rows(y, x, rw, data[off:off + rw])
                    off += rw
                    touched.add(y)
            if predicted:
                ph = h // planes
                apply_predicted(self.pixels, w, ph, planes, predicted, data[off:])
                for _, y0, _, rh, _ in predicted:
                    touched.update(k * ph + y for k in range(planes) for y in range(y0, y0 + rh))
            self.rehash(sorted(touched))
            return
        self.xor_rows(0, 0, w * h, data)
        self.rehash(range(h))


def decompress(codec: int, block: bytes, size: int) -> bytes:
    if codec == CODEC_RAW:
        if len(block) != size:
            raise ProtocolError(f"raw payload of {len(block)} bytes, not {size}")
        return block
    if codec == CODEC_LZ4:
        out = lz4.block.decompress(block, uncompressed_size=size)
        if len(out) != size:
            raise ProtocolError("LZ4 block of the wrong size")
        return out
    if codec == CODEC_ZSTD:
        # One frame that states its size (the spec): checked before anything is decoded.
        try:
            stated = zstandard.frame_content_size(block)
        except zstandard.ZstdError as e:
            raise ProtocolError(f"not a zstd frame: {e}") from e
        if stated != size:
            raise ProtocolError(f"zstd frame of {stated} bytes, not {size}")
        try:
            out = zstandard.ZstdDecompressor().decompress(block, max_output_size=size)
        except zstandard.ZstdError as e:
            raise ProtocolError(f"corrupt zstd frame: {e}") from e
        if len(out) != size:
            raise ProtocolError("zstd frame of the wrong size")
        return out
    raise ProtocolError(f"codec {codec} is not supported here")


def frame_data(flags: int, payload: bytes, codec: int, raw_len: int, width: int, height: int) -> bytes:
    """The decompressed data of a frame's payload (after a delta's header)."""
    if flags not in (0, FLAG_KEYFRAME, FLAG_ROWS, FLAG_RECTS):
        raise ProtocolError(f"bad frame flags {flags}")
    if flags & FLAG_ROWS:
        if len(payload) < 8:
            raise ProtocolError("row delta shorter than its header")
        dy, n = struct.unpack_from("<iI", payload, 0)
        if abs(dy) >= height or n > height or len(payload) < 8 + 8 * n:
            raise ProtocolError("row delta header out of bounds")
        end = 0
        for i in range(n):
            y0, rows = struct.unpack_from("<II", payload, 8 + 8 * i)
            if rows == 0 or y0 < end or y0 + rows > height:
                raise ProtocolError("row ranges out of order or outside the picture")
            end = y0 + rows
        return decompress(codec, payload[8 + 8 * n:], raw_len)
    if flags & FLAG_RECTS:
        _, patches, header, (predicted, planes) = parse_rect_plan(payload, width, height)
        size = sum(r[2] * r[3] for r in patches) + planes * sum(p[2] * p[3] for p in predicted)
        if size != raw_len:
            raise ProtocolError("raw_len is not the patches' and predicted rectangles' size")
        return decompress(codec, payload[header:], raw_len)
    if raw_len != width * height:
        raise ProtocolError("a whole-picture frame of the wrong size")
    return decompress(codec, payload, raw_len)


@dataclass
class Shown:
    seq: int
    flags: int
    ok: bool
    payload_len: int
    codec: int = CODEC_RAW
    predicted: bool = False  # a moved-rectangle delta with predicted rectangles


def packet(ptype: int, body: bytes) -> bytes:
    return MAGIC + bytes([ptype]) + struct.pack("<I", len(body)) + body


def str8(s: str) -> bytes:
    b = s.encode()
    return bytes([len(b)]) + b


class Viewer:
    def __init__(self, sock: socket.socket, caps: int):
        self.sock = sock
        self.buf = bytearray()
        self.picture: Picture | None = None
        self.planes = 1
        self.caps = caps
        self.welcome_caps = 0

    @classmethod
    def connect(cls, host: str, port: int, token: str = "", caps: int = CAP_LZ4 | CAP_ZSTD | CAP_UNCHANGED | CAP_XXH3 | CAP_MOVED_RECTS | CAP_PREDICTED):
        s = socket.create_connection((host, port), timeout=10)
        s.sendall(packet(HELLO, struct.pack("<HBI", 1, 1, caps) + str8("screen") + str8(token)))
        return cls(s, caps)

    def read_packet(self) -> tuple[int, bytes]:
        while len(self.buf) < 7:
            self._fill()
        if self.buf[:2] != MAGIC:
            raise ProtocolError("bad magic")
        ptype = self.buf[2]
        n = struct.unpack_from("<I", self.buf, 3)[0]
        if n > (MAX_BODY if ptype == FRAME else 4096):
            raise ProtocolError(f"a body of {n} bytes")
        while len(self.buf) < 7 + n:
            self._fill()
        body = bytes(self.buf[7:7 + n])
        del self.buf[:7 + n]
        return ptype, body

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ProtocolError("the host closed the connection")
        self.buf += chunk

    def frames(self, count: int, deadline_s: float = 30.0):
        """Yields `count` frames shown (Frame and Unchanged), each applied and checked."""
        end = time.monotonic() + deadline_s
        shown = 0
        while shown < count and time.monotonic() < end:
            ptype, body = self.read_packet()
            if ptype == WELCOME:
                self.welcome_caps = struct.unpack_from("<I", body, 2)[0]
            elif ptype == STREAM_DESC:
                w, h, fmt = struct.unpack_from("<IIB", body, 0)
                # Colour: the planes G, R - G, B - G stacked into one picture 3 x h tall.
                self.planes = 3 if fmt == FORMAT_PLANAR_GDIFF else 1
                self.picture = Picture(w, h * self.planes)
            elif ptype == FRAME:
                seq, _cap, flags, codec, checksum, raw_len = struct.unpack_from("<QQBBQI", body, 0)
                payload = body[30:]
                pic = self.picture
                if pic is None:
                    raise ProtocolError("a frame before StreamDesc")
                data = frame_data(flags, payload, codec, raw_len, pic.width, pic.height)
                pic.apply(flags, data, payload)
                ok = pic.checksum() == checksum
                self.sock.sendall(packet(ACK, struct.pack("<QBQQQ", seq, 0 if ok else 1, 0, 0, 0)))
                shown += 1
                predicted = flags == FLAG_RECTS and bool(struct.unpack_from("<H", payload)[0] & PREDICTED)
                yield Shown(seq, flags, ok, len(payload), codec, predicted)
            elif ptype == UNCHANGED:
                seq, _cap, checksum = struct.unpack_from("<QQQ", body, 0)
                ok = self.picture is not None and self.picture.checksum() == checksum
                self.sock.sendall(packet(ACK, struct.pack("<QBQQQ", seq, 0 if ok else 1, 0, 0, 0)))
                shown += 1
                yield Shown(seq, 0, ok, 0)
            elif ptype == PING:
                pid, sent = struct.unpack_from("<IQ", body, 0)
                self.sock.sendall(packet(PONG, struct.pack("<IQQ", pid, sent, 0)))
            elif ptype == GOODBYE:
                code = struct.unpack_from("<H", body, 0)[0]
                raise ProtocolError(f"goodbye {code}: {body[4:].decode(errors='replace')}")

    def rgb(self) -> bytes:
        """The picture as R G B bytes (colour), or grey repeated (grey)."""
        pic = self.picture
        n = pic.width * (pic.height // self.planes)
        if self.planes == 1:
            return bytes(b for g in pic.pixels for b in (g, g, g))
        g, r, b = pic.pixels[:n], pic.pixels[n:2 * n], pic.pixels[2 * n:]
        return bytes(v for i in range(n) for v in ((r[i] + g[i]) & 255, g[i], (b[i] + g[i]) & 255))

    def close(self) -> None:
        self.sock.close()
