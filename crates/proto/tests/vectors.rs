//! The shared byte vectors in `spec/vectors/` (written by an independent Python encoder from
//! the spec) decode to the packets listed in `spec/vectors/README.md`, and our encoders produce
//! exactly those bytes.

use bytes::{Bytes, BytesMut};
use framewire_proto::daylight::{
    self, HostDecoder, HostPacket, Touch, TouchDecoder, TouchEvent, TouchKind, ViewerDecoder,
    ViewerPacket,
};
use framewire_proto::sensor_line::Value;
use framewire_proto::v1::{
    AckStatus, Codec, CommandCode, Decoder, FrameHeader, InputKind, Packet, PixelFormat, Role,
    DEFAULT_MAX_FRAME_BODY,
};

fn vector(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../../spec/vectors/{name}.bin",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// dy = -1, one range (row 3, 1 row), then an LZ4 block of the 16 literal bytes 0..15.
fn rows_payload() -> Vec<u8> {
    let mut p = Vec::new();
    for v in [(-1i32) as u32, 1, 3, 1] {
        p.extend_from_slice(&v.to_le_bytes());
    }
    p.extend_from_slice(&[0xF0, 0x01]);
    p.extend(0u8..16);
    p
}

fn v1_cases() -> Vec<(&'static str, Packet)> {
    let mut payload = vec![0xF0, 0x01];
    payload.extend(0u8..16);
    vec![
        (
            "v1_hello",
            Packet::Hello {
                version: 1,
                role: Role::Viewer,
                caps: 0xF,
                stream: "screen".into(),
                token: "s3cret".into(),
            },
        ),
        (
            "v1_welcome",
            Packet::Welcome {
                version: 1,
                caps: 0xF,
                session: 0x0102_0304_0506_0708,
            },
        ),
        (
            "v1_stream_desc",
            Packet::StreamDesc {
                width: 1600,
                height: 1200,
                format: PixelFormat::Grey8,
                codec: Codec::Lz4,
                name: "screen".into(),
            },
        ),
        (
            "v1_frame",
            Packet::Frame {
                header: FrameHeader {
                    seq: 42,
                    capture_us: 123_456_789,
                    keyframe: true,
                    rows: false,
                    rects: false,
                    codec: Codec::Lz4,
                    checksum: 0xDEAD_BEEF_CAFE_F00D,
                    raw_len: 16,
                    base: None,
                },
                payload: Bytes::from(payload),
            },
        ),
        (
            "v1_frame_rows",
            Packet::Frame {
                header: FrameHeader {
                    seq: 44,
                    capture_us: 123_490_123,
                    keyframe: false,
                    rows: true,
                    rects: false,
                    codec: Codec::Lz4,
                    checksum: 0x0123_4567_89AB_CDEF,
                    raw_len: 16,
                    base: None,
                },
                payload: Bytes::from(rows_payload()),
            },
        ),
        (
            "v1_frame_based",
            Packet::Frame {
                header: FrameHeader {
                    seq: 45,
                    capture_us: 123_506_789,
                    keyframe: false,
                    rows: true,
                    rects: false,
                    codec: Codec::Lz4,
                    checksum: 0x1111_2222_3333_4444,
                    raw_len: 16,
                    base: Some(0x0123_4567_89AB_CDEF),
                },
                payload: Bytes::from(rows_payload()),
            },
        ),
        (
            "v1_unchanged",
            Packet::Unchanged {
                seq: 43,
                capture_us: 123_473_456,
                checksum: 0xDEAD_BEEF_CAFE_F00D,
            },
        ),
        (
            "v1_ack",
            Packet::Ack {
                seq: 42,
                status: AckStatus::Applied,
                recv_us: 1000,
                decoded_us: 1200,
                applied_us: 1300,
            },
        ),
        ("v1_keyframe_request", Packet::KeyframeRequest { reason: 2 }),
        (
            "v1_input",
            Packet::Input {
                kind: InputKind::PointerDown,
                x: 800,
                y: 600,
                code: 1,
            },
        ),
        (
            "v1_ping",
            Packet::Ping {
                id: 7,
                sent_us: 5_000_000,
            },
        ),
        (
            "v1_pong",
            Packet::Pong {
                id: 7,
                ping_sent_us: 5_000_000,
                reply_us: 9_000_000,
            },
        ),
        (
            "v1_command",
            Packet::Command {
                code: CommandCode::Resolution,
                a: 1024,
                b: 768,
            },
        ),
        (
            "v1_goodbye",
            Packet::Goodbye {
                code: 2,
                reason: "wrong or missing token".into(),
            },
        ),
        (
            "v1_hello_subscriber",
            Packet::Hello {
                version: 1,
                role: Role::Subscriber,
                caps: 0,
                stream: "sensor/".into(),
                token: String::new(),
            },
        ),
        (
            "v1_sample",
            Packet::Sample {
                stream: "sensor/room_1".into(),
                device: "SIM409534".into(),
                device_seq: 17,
                accepted_us: 987_654_321,
                readings: vec![
                    ("ADC1".into(), Value::Int(-592)),
                    ("T".into(), Value::Float(21.5)),
                ],
            },
        ),
        (
            "v1_thermal",
            Packet::Thermal {
                stream: "thermal/room_1".into(),
                device: "cam7".into(),
                device_seq: 3,
                accepted_us: 1000,
                width: 3,
                height: 2,
                values: vec![0x0102, 0x0304, 0x0506, 0xFFFF, 0, 300],
            },
        ),
        ("v1_missed", Packet::Missed { samples: 900 }),
    ]
}

#[test]
fn v1_vectors_both_ways() {
    for (name, packet) in v1_cases() {
        let bytes = vector(name);
        assert_eq!(
            packet.to_bytes().as_ref(),
            &bytes[..],
            "{name}: encoding differs from the vector"
        );
        let mut d = Decoder::new(DEFAULT_MAX_FRAME_BODY);
        d.feed(&bytes);
        assert_eq!(
            d.next_packet().unwrap(),
            Some(packet),
            "{name}: decoding differs"
        );
        assert_eq!(d.pending(), 0, "{name}: bytes left over");
    }
}

#[test]
fn frame_vector_payload_is_a_real_lz4_block() {
    // The payload must decode to raw_len bytes, so client libraries can test decompression too.
    let bytes = vector("v1_frame");
    let mut d = Decoder::new(DEFAULT_MAX_FRAME_BODY);
    d.feed(&bytes);
    let Some(Packet::Frame { header, payload }) = d.next_packet().unwrap() else {
        panic!("not a frame")
    };
    assert_eq!(payload.len(), 18);
    assert_eq!(header.raw_len, 16);
    // Decoded by liblz4 itself, not by anything of ours: the 16 literal bytes 0..15.
    let raw = lz4::block::decompress(&payload, Some(header.raw_len as i32))
        .expect("the vector's payload is a valid LZ4 block");
    assert_eq!(raw, (0u8..16).collect::<Vec<_>>());
}

#[test]
fn daylight_vectors_both_ways() {
    let host = [
        (
            "daylight_frame",
            HostPacket::Frame {
                keyframe: true,
                seq: 7,
                payload: Bytes::from_static(&[0x10, 0xAB, 0xCD]),
            },
        ),
        (
            "daylight_command",
            HostPacket::Command {
                cmd: daylight::CMD_BRIGHTNESS,
                value: 200,
            },
        ),
        (
            "daylight_resolution",
            HostPacket::Resolution {
                width: 1600,
                height: 1200,
            },
        ),
    ];
    for (name, p) in host {
        let bytes = vector(name);
        let mut b = BytesMut::new();
        p.encode(&mut b);
        assert_eq!(&b[..], &bytes[..], "{name}");
        let mut d = HostDecoder::new(daylight::DEFAULT_MAX_PAYLOAD);
        d.feed(&bytes);
        assert_eq!(d.next_packet().unwrap(), Some(p), "{name}");
    }
    let bytes = vector("daylight_ack");
    let mut b = BytesMut::new();
    ViewerPacket::Ack { seq: 7 }.encode(&mut b);
    assert_eq!(&b[..], &bytes[..]);
    let mut d = ViewerDecoder::new();
    d.feed(&bytes);
    assert_eq!(d.next_packet().unwrap(), Some(ViewerPacket::Ack { seq: 7 }));

    let t = Touch {
        kind: TouchKind::Move,
        x: 0.5,
        y: 0.25,
        dx: 0.0,
        dy: -0.125,
        pointer: 1,
    };
    let bytes = vector("daylight_touch");
    let mut b = BytesMut::new();
    t.encode(&mut b);
    assert_eq!(&b[..], &bytes[..]);
    let mut d = TouchDecoder::new();
    d.feed(&bytes);
    assert_eq!(d.next_event(), Some(TouchEvent::Touch(t)));
}

#[test]
fn every_vector_file_is_covered() {
    let dir = format!("{}/../../spec/vectors", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".bin"))
        .collect();
    files.sort();
    let mut known: Vec<String> = v1_cases().iter().map(|c| format!("{}.bin", c.0)).collect();
    known.extend(
        [
            "daylight_frame",
            "daylight_command",
            "daylight_resolution",
            "daylight_ack",
            "daylight_touch",
        ]
        .map(|n| format!("{n}.bin")),
    );
    known.sort();
    assert_eq!(files, known);
}
