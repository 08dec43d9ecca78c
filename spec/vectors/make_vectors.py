#!/usr/bin/env python3
"""Writes the binary test vectors of spec/PROTOCOL.md with Python's struct module.

This is deliberately an independent implementation of the byte layouts, written from the spec
and not from the Rust code, so the Rust tests (and every later client library) check their
encoders and decoders against bytes that no framewire encoder produced. The values used are
listed in spec/vectors/README.md.

Run: python3 spec/vectors/make_vectors.py   (rewrites spec/vectors/*.bin and
spec/vectors/negotiation/*.bin)
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def v1(ptype, body):
    return b"FW" + struct.pack("<BI", ptype, len(body)) + body


def s8(s):
    b = s.encode("utf-8")
    return struct.pack("<B", len(b)) + b


VECTORS = {
    # framewire v1
    "v1_hello": v1(0x01, struct.pack("<HBI", 1, 1, 0x0000000F) + s8("screen") + s8("s3cret")),
    "v1_welcome": v1(0x02, struct.pack("<HIQ", 1, 0x0000000F, 0x0102030405060708)),
    "v1_stream_desc": v1(0x03, struct.pack("<IIBB", 1600, 1200, 1, 1) + s8("screen")),
    # payload: an LZ4 block of 16 literal bytes 0..15 (token 0xF0, extra length 1)
    "v1_frame": v1(0x10, struct.pack("<QQBBQI", 42, 123456789, 1, 1, 0xDEADBEEFCAFEF00D, 16) + bytes([0xF0, 0x01]) + bytes(range(16))),
    # a row delta: dy -1, one range (row 3, 1 row), then the same 16-literal LZ4 block
    # Flags 2 + 8: a row delta naming its base (the checksum of the picture it applies to).
    "v1_frame_based": v1(0x10, struct.pack("<QQBBQIQ", 45, 123506789, 2 | 8, 1, 0x1111222233334444, 16, 0x0123456789ABCDEF) + struct.pack("<iIII", -1, 1, 3, 1) + bytes([0xF0, 0x01]) + bytes(range(16))),
    "v1_frame_rows": v1(0x10, struct.pack("<QQBBQI", 44, 123490123, 2, 1, 0x0123456789ABCDEF, 16) + struct.pack("<iIII", -1, 1, 3, 1) + bytes([0xF0, 0x01]) + bytes(range(16))),
    "v1_unchanged": v1(0x11, struct.pack("<QQQ", 43, 123473456, 0xDEADBEEFCAFEF00D)),
    "v1_ack": v1(0x20, struct.pack("<QBQQQ", 42, 0, 1000, 1200, 1300)),
    "v1_keyframe_request": v1(0x21, struct.pack("<B", 2)),
    "v1_input": v1(0x22, struct.pack("<BiiI", 2, 800, 600, 1)),
    "v1_ping": v1(0x30, struct.pack("<IQ", 7, 5000000)),
    "v1_pong": v1(0x31, struct.pack("<IQQ", 7, 5000000, 9000000)),
    "v1_command": v1(0x40, struct.pack("<BII", 4, 1024, 768)),
    "v1_goodbye": v1(0x7F, struct.pack("<HH", 2, len(b"wrong or missing token")) + b"wrong or missing token"),
    "v1_hello_subscriber": v1(0x01, struct.pack("<HBI", 1, 4, 0) + s8("sensor/") + s8("")),
    # capability negotiation (spec "Capability negotiation"): a viewer that declares only lz4
    # (caps 0x00000001, no token) and the Welcome a framewire host (caps 0x0000000F) answers:
    # caps 0x0000000F AND 0x00000001 = 0x00000001, i.e. lz4 frames and no Unchanged packets
    "negotiation/v1_hello_lz4_only": v1(0x01, struct.pack("<HBI", 1, 1, 0x00000001) + s8("screen") + s8("")),
    "negotiation/v1_welcome_lz4_only": v1(0x02, struct.pack("<HIQ", 1, 0x0F & 0x01, 0x1122334455667788)),
    "v1_sample": v1(0x50, s8("sensor/room_1") + s8("SIM409534") + struct.pack("<QQB", 17, 987654321, 2)
                    + s8("ADC1") + struct.pack("<Bq", 0, -592) + s8("T") + struct.pack("<Bd", 1, 21.5)),
    "v1_thermal": v1(0x51, s8("thermal/room_1") + s8("cam7") + struct.pack("<QQHH", 3, 1000, 3, 2)
                     + struct.pack("<6H", 0x0102, 0x0304, 0x0506, 0xFFFF, 0, 300)),
    "v1_missed": v1(0x52, struct.pack("<Q", 900)),
    # Daylight-compatible
    "daylight_frame": bytes([0xDA, 0x7E]) + struct.pack("<BII", 1, 7, 3) + bytes([0x10, 0xAB, 0xCD]),
    "daylight_command": bytes([0xDA, 0x7F]) + struct.pack("<BB", 0x01, 200),
    "daylight_resolution": bytes([0xDA, 0x7F, 0x04]) + struct.pack("<HH", 1600, 1200),
    "daylight_ack": bytes([0xDA, 0x7A]) + struct.pack("<I", 7),
    "daylight_touch": bytes([0xDA, 0x70]) + struct.pack("<Bffffi", 2, 0.5, 0.25, 0.0, -0.125, 1),
}

if __name__ == "__main__":
    for name, data in VECTORS.items():
        path = os.path.join(HERE, name + ".bin")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    print(f"wrote {len(VECTORS)} vectors to {HERE}")
