//! The Daylight Mirror wire format (see `shared/reference/daylight-protocol.md` and
//! `spec/PROTOCOL.md` §Daylight): little-endian, every packet starts with `0xDA`.
//!
//! Host → viewer: frame (`DA 7E flags seq len payload`, 11-byte header), command (`DA 7F cmd val`),
//! resolution (`DA 7F 04 w h`). Viewer → host: ACK (`DA 7A seq`). Input port: touch (`DA 70 …`,
//! 23 bytes).

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::reader::Reader;
use crate::ProtoError;

pub const MAGIC: u8 = 0xDA;
pub const TYPE_FRAME: u8 = 0x7E;
pub const TYPE_COMMAND: u8 = 0x7F;
pub const TYPE_ACK: u8 = 0x7A;
pub const TYPE_TOUCH: u8 = 0x70;
pub const FRAME_HEADER_LEN: usize = 11;
pub const ACK_LEN: usize = 6;
pub const TOUCH_LEN: usize = 23;
pub const FLAG_KEYFRAME: u8 = 0x01;

pub const CMD_BRIGHTNESS: u8 = 0x01;
pub const CMD_WARMTH: u8 = 0x02;
pub const CMD_BACKLIGHT: u8 = 0x03;
pub const CMD_RESOLUTION: u8 = 0x04;

/// The Android app accepts up to 4096 pixels per side.
pub const MAX_SIDE: u16 = 4096;
/// Default bound on a frame payload: the LZ4 worst case for a 4096×4096 grey frame.
pub const DEFAULT_MAX_PAYLOAD: u32 = 4096 * 4096 + 4096 * 4096 / 255 + 16;

/// A packet the host sends to a viewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPacket {
    /// `payload` is an LZ4 block that decompresses to width×height grey bytes: the whole frame
    /// when `keyframe`, else the XOR of this frame and the previous one.
    Frame {
        keyframe: bool,
        seq: u32,
        payload: Bytes,
    },
    /// Brightness, warmth or backlight, with a one-byte value.
    Command {
        cmd: u8,
        value: u8,
    },
    Resolution {
        width: u16,
        height: u16,
    },
}

/// A packet a viewer sends to the host on the frame connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewerPacket {
    Ack { seq: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum TouchKind {
    Down = 1,
    Move = 2,
    Up = 3,
    Scroll = 4,
}

/// A touch packet from the input port (8892). x, y are normalised 0–1; dx, dy are normalised
/// scroll deltas.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Touch {
    pub kind: TouchKind,
    pub x: f32,
    pub y: f32,
    pub dx: f32,
    pub dy: f32,
    pub pointer: i32,
}

/// Writes the 11-byte frame header; the caller writes `payload_len` bytes of LZ4 block after it.
/// Kept separate so a payload shared by many viewers is never copied to prefix it.
pub fn frame_header(keyframe: bool, seq: u32, payload_len: u32) -> [u8; FRAME_HEADER_LEN] {
    let mut h = [0u8; FRAME_HEADER_LEN];
    h[0] = MAGIC;
    h[1] = TYPE_FRAME;
    h[2] = if keyframe { FLAG_KEYFRAME } else { 0 };
    h[3..7].copy_from_slice(&seq.to_le_bytes());
    h[7..11].copy_from_slice(&payload_len.to_le_bytes());
    h
}

impl HostPacket {
    pub fn encode(&self, out: &mut BytesMut) {
        match self {
            HostPacket::Frame {
                keyframe,
                seq,
                payload,
            } => {
                out.put_slice(&frame_header(*keyframe, *seq, payload.len() as u32));
                out.put_slice(payload);
            }
            HostPacket::Command { cmd, value } => {
                out.put_slice(&[MAGIC, TYPE_COMMAND, *cmd, *value])
            }
            HostPacket::Resolution { width, height } => {
                out.put_slice(&[MAGIC, TYPE_COMMAND, CMD_RESOLUTION]);
                out.put_u16_le(*width);
                out.put_u16_le(*height);
            }
        }
    }
}

impl ViewerPacket {
    pub fn encode(&self, out: &mut BytesMut) {
        let ViewerPacket::Ack { seq } = self;
        out.put_slice(&[MAGIC, TYPE_ACK]);
        out.put_u32_le(*seq);
    }
}

impl Touch {
    pub fn encode(&self, out: &mut BytesMut) {
        out.put_slice(&[MAGIC, TYPE_TOUCH, self.kind as u8]);
        for v in [self.x, self.y, self.dx, self.dy] {
            out.put_f32_le(v);
        }
        out.put_i32_le(self.pointer);
    }

    fn decode(b: &[u8]) -> Result<Touch, ProtoError> {
        let mut r = Reader::new(&b[2..], "touch");
        let kind = match r.u8()? {
            1 => TouchKind::Down,
            2 => TouchKind::Move,
            3 => TouchKind::Up,
            4 => TouchKind::Scroll,
            _ => {
                return Err(ProtoError::InvalidField {
                    field: "touch.type",
                    why: "not 1-4",
                })
            }
        };
        let (x, y, dx, dy) = (r.f32()?, r.f32()?, r.f32()?, r.f32()?);
        let pointer = r.i32()?;
        if ![x, y, dx, dy].iter().all(|v| v.is_finite()) {
            return Err(ProtoError::InvalidField {
                field: "touch.coords",
                why: "not finite",
            });
        }
        Ok(Touch {
            kind,
            x,
            y,
            dx,
            dy,
            pointer,
        })
    }
}

fn check_magic(b: u8) -> Result<(), ProtoError> {
    if b == MAGIC {
        Ok(())
    } else {
        Err(ProtoError::BadMagic {
            expected: MAGIC,
            found: b,
        })
    }
}

/// Incremental decoder for the host → viewer direction (what a Daylight viewer reads).
#[derive(Debug)]
pub struct HostDecoder {
    buf: BytesMut,
    max_payload: u32,
}

impl HostDecoder {
    pub fn new(max_payload: u32) -> Self {
        HostDecoder {
            buf: BytesMut::with_capacity(64 * 1024),
            max_payload,
        }
    }
    /// The receive buffer, for `read_buf` straight into it.
    pub fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole packet, `Ok(None)` if more bytes are needed. Errors are final.
    pub fn next_packet(&mut self) -> Result<Option<HostPacket>, ProtoError> {
        let b = &self.buf[..];
        if b.is_empty() {
            return Ok(None);
        }
        check_magic(b[0])?;
        if b.len() < 2 {
            return Ok(None);
        }
        match b[1] {
            TYPE_FRAME => {
                if b.len() < FRAME_HEADER_LEN {
                    return Ok(None);
                }
                let mut r = Reader::new(&b[2..FRAME_HEADER_LEN], "frame");
                let flags = r.u8()?;
                let seq = r.u32()?;
                let len = r.u32()?;
                if len > self.max_payload {
                    return Err(ProtoError::TooLong {
                        kind: "frame",
                        len: len as u64,
                        max: self.max_payload as u64,
                    });
                }
                let total = FRAME_HEADER_LEN + len as usize;
                if self.buf.len() < total {
                    self.buf.reserve(total - self.buf.len());
                    return Ok(None);
                }
                self.buf.advance(FRAME_HEADER_LEN);
                let payload = self.buf.split_to(len as usize).freeze();
                Ok(Some(HostPacket::Frame {
                    keyframe: flags & FLAG_KEYFRAME != 0,
                    seq,
                    payload,
                }))
            }
            TYPE_COMMAND => {
                if b.len() < 4 {
                    return Ok(None);
                }
                if b[2] == CMD_RESOLUTION {
                    if b.len() < 7 {
                        return Ok(None);
                    }
                    let mut r = Reader::new(&b[3..7], "resolution");
                    let (width, height) = (r.u16()?, r.u16()?);
                    self.buf.advance(7);
                    if width == 0 || height == 0 || width > MAX_SIDE || height > MAX_SIDE {
                        return Err(ProtoError::InvalidField {
                            field: "resolution",
                            why: "side not in 1..=4096",
                        });
                    }
                    return Ok(Some(HostPacket::Resolution { width, height }));
                }
                let (cmd, value) = (b[2], b[3]);
                self.buf.advance(4);
                Ok(Some(HostPacket::Command { cmd, value }))
            }
            other => Err(ProtoError::UnknownType(other)),
        }
    }
}

/// Incremental decoder for the viewer → host direction of the frame port (ACKs).
#[derive(Debug, Default)]
pub struct ViewerDecoder {
    buf: BytesMut,
}

impl ViewerDecoder {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }
    pub fn next_packet(&mut self) -> Result<Option<ViewerPacket>, ProtoError> {
        let b = &self.buf[..];
        if b.is_empty() {
            return Ok(None);
        }
        check_magic(b[0])?;
        if b.len() < 2 {
            return Ok(None);
        }
        if b[1] != TYPE_ACK {
            return Err(ProtoError::UnknownType(b[1]));
        }
        if b.len() < ACK_LEN {
            return Ok(None);
        }
        let seq = u32::from_le_bytes(b[2..6].try_into().expect("4 bytes"));
        self.buf.advance(ACK_LEN);
        Ok(Some(ViewerPacket::Ack { seq }))
    }
}

/// Outcome of one step of the touch decoder.
#[derive(Debug, Clone, PartialEq)]
pub enum TouchEvent {
    Touch(Touch),
    /// Bytes that could not start or form a packet were skipped to find the next `DA 70`.
    /// The original reads fixed 23-byte chunks and loses alignment forever; we resynchronise.
    Skipped {
        bytes: usize,
        reason: &'static str,
    },
}

/// Stream decoder for the touch port: packets may arrive split across reads or glued together.
#[derive(Debug, Default)]
pub struct TouchDecoder {
    buf: BytesMut,
}

impl TouchDecoder {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }
    pub fn next_event(&mut self) -> Option<TouchEvent> {
        let b = &self.buf[..];
        if b.is_empty() {
            return None;
        }
        if b[0] != MAGIC || (b.len() >= 2 && b[1] != TYPE_TOUCH) {
            // Skip to the next possible start so one stray byte costs one byte, not a packet.
            let skip = b[1..]
                .iter()
                .position(|&x| x == MAGIC)
                .map_or(b.len(), |p| p + 1);
            self.buf.advance(skip);
            return Some(TouchEvent::Skipped {
                bytes: skip,
                reason: "bad_magic",
            });
        }
        if b.len() < TOUCH_LEN {
            return None;
        }
        let res = Touch::decode(&b[..TOUCH_LEN]);
        match res {
            Ok(t) => {
                self.buf.advance(TOUCH_LEN);
                Some(TouchEvent::Touch(t))
            }
            Err(e) => {
                // A well-framed packet with bad contents: drop exactly that packet.
                self.buf.advance(TOUCH_LEN);
                Some(TouchEvent::Skipped {
                    bytes: TOUCH_LEN,
                    reason: e.reason(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn frame_header_layout_matches_reference() {
        let h = frame_header(true, 0x0403_0201, 0x0807_0605);
        assert_eq!(
            h,
            [0xDA, 0x7E, 0x01, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08]
        );
    }

    #[test]
    fn oversized_frame_rejected_before_body_arrives() {
        let mut d = HostDecoder::new(1000);
        d.feed(&frame_header(false, 1, 1001));
        assert!(matches!(
            d.next_packet(),
            Err(ProtoError::TooLong { len: 1001, .. })
        ));
    }

    #[test]
    fn resolution_out_of_range_rejected() {
        let mut d = HostDecoder::new(1000);
        let mut b = BytesMut::new();
        HostPacket::Resolution {
            width: 5000,
            height: 10,
        }
        .encode(&mut b);
        d.feed(&b);
        assert!(d.next_packet().is_err());
    }

    #[test]
    fn ack_garbage_rejected() {
        let mut d = ViewerDecoder::new();
        d.feed(&[0xDA, 0x7E, 0, 0, 0, 0]);
        assert_eq!(d.next_packet(), Err(ProtoError::UnknownType(0x7E)));
        let mut d = ViewerDecoder::new();
        d.feed(&[0x00]);
        assert!(matches!(d.next_packet(), Err(ProtoError::BadMagic { .. })));
    }

    #[test]
    fn touch_resyncs_after_garbage() {
        let t = Touch {
            kind: TouchKind::Move,
            x: 0.5,
            y: 0.25,
            dx: 0.0,
            dy: 0.0,
            pointer: 0,
        };
        let mut b = BytesMut::new();
        b.put_slice(&[1, 2, 3]);
        t.encode(&mut b);
        let mut d = TouchDecoder::new();
        d.feed(&b);
        assert_eq!(
            d.next_event(),
            Some(TouchEvent::Skipped {
                bytes: 3,
                reason: "bad_magic"
            })
        );
        assert_eq!(d.next_event(), Some(TouchEvent::Touch(t)));
        assert_eq!(d.next_event(), None);
    }

    fn arb_touch() -> impl Strategy<Value = Touch> {
        (
            1u8..=4,
            0f32..1.0,
            0f32..1.0,
            -1f32..1.0,
            -1f32..1.0,
            any::<i32>(),
        )
            .prop_map(|(k, x, y, dx, dy, pointer)| Touch {
                kind: [
                    TouchKind::Down,
                    TouchKind::Move,
                    TouchKind::Up,
                    TouchKind::Scroll,
                ][k as usize - 1],
                x,
                y,
                dx,
                dy,
                pointer,
            })
    }

    proptest! {
        /// Touch packets split at arbitrary points across reads are all recovered, in order.
        #[test]
        fn touch_split_anywhere(touches in proptest::collection::vec(arb_touch(), 1..20), cuts in proptest::collection::vec(1usize..40, 1..30)) {
            let mut wire = BytesMut::new();
            for t in &touches { t.encode(&mut wire); }
            let mut d = TouchDecoder::new();
            let mut got = Vec::new();
            let mut pos = 0;
            for c in cuts.iter().cycle() {
                if pos >= wire.len() { break; }
                let end = (pos + c).min(wire.len());
                d.feed(&wire[pos..end]);
                pos = end;
                while let Some(ev) = d.next_event() {
                    match ev { TouchEvent::Touch(t) => got.push(t), other => prop_assert!(false, "unexpected {:?}", other) }
                }
            }
            prop_assert_eq!(got, touches);
        }

        /// Arbitrary bytes never panic any decoder, and each call consumes or waits.
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut h = HostDecoder::new(64);
            h.feed(&bytes);
            for _ in 0..50 { if !matches!(h.next_packet(), Ok(Some(_))) { break; } }
            let mut v = ViewerDecoder::new();
            v.feed(&bytes);
            for _ in 0..50 { if !matches!(v.next_packet(), Ok(Some(_))) { break; } }
            let mut t = TouchDecoder::new();
            t.feed(&bytes);
            let mut n = 0;
            while t.next_event().is_some() { n += 1; prop_assert!(n <= bytes.len()); }
        }

        #[test]
        fn host_packets_roundtrip_split(seq in any::<u32>(), kf in any::<bool>(), payload in proptest::collection::vec(any::<u8>(), 0..300), w in 1u16..=4096, h in 1u16..=4096, split in 0usize..400) {
            let pkts = vec![
                HostPacket::Resolution { width: w, height: h },
                HostPacket::Command { cmd: CMD_BRIGHTNESS, value: (seq & 0xff) as u8 },
                HostPacket::Frame { keyframe: kf, seq, payload: Bytes::from(payload) },
            ];
            let mut wire = BytesMut::new();
            for p in &pkts { p.encode(&mut wire); }
            let split = split.min(wire.len());
            let mut d = HostDecoder::new(DEFAULT_MAX_PAYLOAD);
            let mut got = Vec::new();
            d.feed(&wire[..split]);
            while let Some(p) = d.next_packet().unwrap() { got.push(p); }
            d.feed(&wire[split..]);
            while let Some(p) = d.next_packet().unwrap() { got.push(p); }
            prop_assert_eq!(got, pkts);
        }
    }
}
