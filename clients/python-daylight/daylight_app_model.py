"""A model of the Daylight DC-1 app's decode loop, written from the rules its real decoder
follows (framewire issue "Real devices"), not from framewire's code:

1. It skips any delta whose LZ4 payload is under 256 bytes (counting it as skipped), but still
   ACKs it: the picture it shows then stays as it was.
2. It decodes LZ4 blocks only. A keyframe that fails to decode disconnects it.
3. It disconnects on a first byte other than 0xDA or an unknown packet kind, and when a frame's
   payload_len > n + n/255 + 1024 (n = width x height). A resolution packet [DA 7F 04][w][h]
   (each side <= 4096) reallocates and zeroes its picture. A delta that fails to decode is
   skipped without an ACK. It reads command 0x03 (backlight) and ignores it.

Every frame it shows is recorded with the framewire checksum of the picture on screen, so a test
can compare what the tablet would show with what the host sent (--trace-frames).
"""
import struct

import lz4.block

from daylight_client import DaylightViewer, picture_checksum

MIN_DELTA = 256


class AppDisconnect(Exception):
    """The app would drop the connection (and reconnect a second later)."""


class DaylightAppModel(DaylightViewer):
    error = AppDisconnect

    def __init__(self, sock):
        super().__init__(sock)
        self.skipped = 0          # small deltas thrown away (and ACKed)
        self.undecodable = 0      # deltas that failed to decode (not ACKed)
        self.keyframes = 0
        self.deltas = 0
        self.shown = []           # (seq, checksum of the picture on screen) per ACK

    def _ack(self, seq):
        self.sock.sendall(b"\xDA\x7A" + struct.pack("<I", seq))
        self.shown.append((seq, picture_checksum(self.picture, self.width, self.height)))

    def _new_picture(self, w, h):
        return bytes(w * h)  # reallocated and zeroed; 0x03 (backlight) is read and ignored

    def _frame(self):
        flags, seq, length = struct.unpack("<BII", self._take(9))
        n = self.width * self.height
        if n == 0:
            raise AppDisconnect("frame before any resolution")
        if length > n + n // 255 + 1024:
            raise AppDisconnect(f"payload of {length} bytes for {n} pixels")
        payload = self._take(length)
        keyframe = bool(flags & 1)
        if not keyframe and length < MIN_DELTA:
            self.skipped += 1
            self._ack(seq)
            return
        try:
            data = lz4.block.decompress(payload, uncompressed_size=n)
            if len(data) != n:
                raise ValueError(f"decodes to {len(data)} bytes, not {n}")
        except Exception as e:  # noqa: BLE001 - any decode failure is the app's failure
            if keyframe:
                raise AppDisconnect(f"keyframe {seq} does not decode as LZ4: {e}") from e
            self.undecodable += 1
            return
        if keyframe:
            self.keyframes += 1
            self.picture = data
        else:
            self.deltas += 1
            x = int.from_bytes(self.picture, "little") ^ int.from_bytes(data, "little")
            self.picture = x.to_bytes(n, "little")
        self._ack(seq)

    def step(self):
        """Handles one packet."""
        magic, kind = self._take(2)
        if magic != 0xDA:
            raise AppDisconnect(f"first byte {magic:#x}, not 0xDA")
        if kind == 0x7F:
            self._command()
        elif kind == 0x7E:
            self._frame()
        else:
            raise AppDisconnect(f"unknown packet kind {kind:#x}")

    def run(self, frames):
        """Runs until `frames` frames have been ACKed (skipped ones included)."""
        while len(self.shown) < frames:
            self.step()
