//! framewire protocol v1 (spec: `spec/PROTOCOL.md`).
//!
//! Every packet: `"FW"` (0x46 0x57), type:u8, body_len:u32 LE, then `body_len` bytes. Integers are
//! little-endian; timestamps are microseconds on the sender's monotonic clock (peers estimate
//! the offset between clocks with ping/pong).

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::reader::Reader;
use crate::sensor_line::Value;
use crate::ProtoError;

pub const MAGIC: [u8; 2] = *b"FW";
pub const HEADER_LEN: usize = 7;
pub const VERSION: u16 = 1;

/// Bound on every packet body except frames.
pub const MAX_CONTROL_BODY: u32 = 4096;
/// Default bound on a frame body (header fields + payload): a 4096×4096 colour frame (three
/// planes), LZ4 worst case, plus the frame fields.
pub const DEFAULT_MAX_FRAME_BODY: u32 = 3 * 4096 * 4096 + 3 * 4096 * 4096 / 255 + 64;

pub mod caps {
    //! Capability bits exchanged in `Hello` and `Welcome`.
    pub const LZ4: u32 = 1 << 0;
    pub const ZSTD: u32 = 1 << 1;
    pub const UNCHANGED: u32 = 1 << 2;
    pub const CHECKSUM_XXH3: u32 = 1 << 3;
    /// Moved-rectangle deltas (frame flag bit 2).
    pub const MOVED_RECTS: u32 = 1 << 4;
    /// Lossless colour: StreamDesc format 2, planes G, R − G, B − G.
    pub const COLOUR: u32 = 1 << 5;
    /// Deltas name the picture they apply to (frame flag bit 3, `base`), so a viewer that lost
    /// a frame keeps its picture and the host sends the next delta against one it acknowledged
    /// (ACK status 3): for transports that may drop frames (QUIC).
    pub const NAMED_BASES: u32 = 1 << 6;
    /// Moved-rectangle deltas may carry predicted rectangles (bit 15 of `nmoves`): pixels
    /// coded from their neighbours, for a video or a photograph where an XOR saves nothing.
    pub const PREDICTED_RECTS: u32 = 1 << 7;
    /// Over QUIC, the viewer also takes frames as datagrams: each frame split into shards
    /// with Reed-Solomon recovery shards (spec/PROTOCOL.md, "Frames in datagrams"), so a lost
    /// packet is made good from the others instead of retransmitted. The host uses them only
    /// when told to (`serve --quic-frames datagrams`); a viewer that declares this bit must
    /// take frames either way.
    pub const FRAME_DATAGRAMS: u32 = 1 << 8;
    /// With [`FRAME_DATAGRAMS`], the viewer takes frames of up to 2 MiB as datagrams, not
    /// only up to 256 KiB (spec/PROTOCOL.md, "Frames in datagrams"): the host sends large
    /// frames so where the path has not queued lately.
    pub const LARGE_FRAME_DATAGRAMS: u32 = 1 << 9;
    pub const ALL: u32 = LZ4
        | ZSTD
        | UNCHANGED
        | CHECKSUM_XXH3
        | MOVED_RECTS
        | COLOUR
        | NAMED_BASES
        | PREDICTED_RECTS;
}

pub mod kind {
    //! Packet type bytes.
    pub const HELLO: u8 = 0x01;
    pub const WELCOME: u8 = 0x02;
    pub const STREAM_DESC: u8 = 0x03;
    pub const FRAME: u8 = 0x10;
    pub const UNCHANGED: u8 = 0x11;
    pub const ACK: u8 = 0x20;
    pub const KEYFRAME_REQUEST: u8 = 0x21;
    pub const INPUT: u8 = 0x22;
    pub const PING: u8 = 0x30;
    pub const PONG: u8 = 0x31;
    pub const COMMAND: u8 = 0x40;
    pub const SAMPLE: u8 = 0x50;
    pub const THERMAL: u8 = 0x51;
    pub const MISSED: u8 = 0x52;
    pub const GOODBYE: u8 = 0x7F;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Role {
    Viewer = 1,
    Publisher = 2,
    Control = 3,
    /// Receives the named streams the Hello's stream field selects (a name, a prefix ending in
    /// `/` or `*`, or `*` for all): Sample, Thermal and Missed packets.
    Subscriber = 4,
}

/// Readings a Sample packet carries at most (keeps its body under `MAX_CONTROL_BODY`).
pub const MAX_READINGS: usize = 32;
/// Longest reading key.
pub const MAX_KEY: usize = 32;

/// What an Input packet carries. Pointer kinds: `x`, `y` in picture pixels, `code` the button
/// (1 left, 2 middle, 3 right) plus [`INPUT_TOUCH`] when a finger made it. Wheel: `x`, `y` are
/// the scroll in pixels. Keys: `code` is an X11 keysym.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum InputKind {
    PointerMove = 1,
    PointerDown = 2,
    PointerUp = 3,
    Wheel = 4,
    KeyDown = 5,
    KeyUp = 6,
}

/// Set in a pointer Input's `code` when the event came from a touch screen.
pub const INPUT_TOUCH: u32 = 0x100;

impl InputKind {
    fn from_u8(v: u8) -> Result<Self, ProtoError> {
        Ok(match v {
            1 => InputKind::PointerMove,
            2 => InputKind::PointerDown,
            3 => InputKind::PointerUp,
            4 => InputKind::Wheel,
            5 => InputKind::KeyDown,
            6 => InputKind::KeyUp,
            _ => {
                return Err(ProtoError::InvalidField {
                    field: "input.kind",
                    why: "unknown input kind",
                })
            }
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PixelFormat {
    Grey8 = 1,
    /// Lossless colour: three planes of width × height, G, then R − G, then B − G (mod 256),
    /// stacked; frames carry them as one picture of width × 3·height.
    PlanarGDiff = 2,
}

impl PixelFormat {
    /// Planes stacked in a frame's picture.
    pub fn planes(self) -> u32 {
        match self {
            PixelFormat::Grey8 => 1,
            PixelFormat::PlanarGDiff => 3,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Codec {
    /// Payload is the raw bytes (keyframe) or raw XOR delta.
    Raw = 0,
    Lz4 = 1,
    Zstd = 2,
}

impl Codec {
    pub fn from_u8(v: u8) -> Result<Codec, ProtoError> {
        match v {
            0 => Ok(Codec::Raw),
            1 => Ok(Codec::Lz4),
            2 => Ok(Codec::Zstd),
            _ => Err(ProtoError::InvalidField {
                field: "codec",
                why: "unknown codec",
            }),
        }
    }
}

pub const FRAME_FLAG_KEYFRAME: u8 = 0x01;
/// The payload is a row delta (a shift and the rows that differ), not a full-frame delta.
pub const FRAME_FLAG_ROWS: u8 = 0x02;
/// The payload is a moved-rectangle delta (moves, then patches); only to viewers that declared
/// [`caps::MOVED_RECTS`].
pub const FRAME_FLAG_RECTS: u8 = 0x04;
/// A `base:u64` field follows `raw_len`: the checksum of the picture this delta applies to;
/// only to viewers that declared [`caps::NAMED_BASES`], and never on a keyframe.
pub const FRAME_FLAG_BASE: u8 = 0x08;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum AckStatus {
    Applied = 0,
    /// Decoded and applied, but the picture's checksum differs from the host's.
    ChecksumMismatch = 1,
    /// The payload could not be decoded; the picture was left unchanged.
    DecodeError = 2,
    /// The frame names a base picture the viewer does not hold (a frame before it was lost);
    /// the viewer keeps the picture it had, still valid. [`caps::NAMED_BASES`] only.
    BaseMissing = 3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CommandCode {
    Brightness = 1,
    Warmth = 2,
    Backlight = 3,
    Resolution = 4,
}

/// Goodbye reason codes.
pub mod goodbye {
    pub const NORMAL: u16 = 0;
    pub const PROTOCOL_ERROR: u16 = 1;
    pub const UNAUTHORIZED: u16 = 2;
    pub const UNSUPPORTED_VERSION: u16 = 3;
    pub const NO_SUCH_STREAM: u16 = 4;
    pub const SHUTDOWN: u16 = 5;
    /// A subscriber fell so far behind that the server's memory budget for subscribers ran
    /// out; it was cut off (a `Missed` packet before the Goodbye says what it lost).
    pub const TOO_SLOW: u16 = 6;
}

/// Fields of a frame packet other than its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Source frame number: grows with every captured frame, so gaps are frames this viewer
    /// skipped.
    pub seq: u64,
    pub capture_us: u64,
    pub keyframe: bool,
    /// The payload is a row delta; `raw_len` is then the row data's decoded size.
    pub rows: bool,
    /// The payload is a moved-rectangle delta; `raw_len` is then its patches' decoded size.
    pub rects: bool,
    pub codec: Codec,
    /// xxh3-64 of the picture after this frame is applied.
    pub checksum: u64,
    /// Bytes the payload decodes to (width × height for Grey8).
    pub raw_len: u32,
    /// The checksum of the picture this delta applies to (frame flag bit 3).
    pub base: Option<u64>,
}

const FRAME_FIELDS_LEN: usize = 8 + 8 + 1 + 1 + 8 + 4;
/// The longest frame prefix: packet header, fixed fields and a base.
pub const FRAME_PREFIX_MAX: usize = HEADER_LEN + FRAME_FIELDS_LEN + 8;

#[derive(Debug, Clone, PartialEq)]
pub enum Packet {
    Hello {
        version: u16,
        role: Role,
        caps: u32,
        stream: String,
        token: String,
    },
    Welcome {
        version: u16,
        caps: u32,
        session: u64,
    },
    StreamDesc {
        width: u32,
        height: u32,
        format: PixelFormat,
        codec: Codec,
        name: String,
    },
    Frame {
        header: FrameHeader,
        payload: Bytes,
    },
    /// The picture is the same as the previous frame sent to this viewer.
    Unchanged {
        seq: u64,
        capture_us: u64,
        checksum: u64,
    },
    /// Viewer → host, after the frame is applied (drawn, for a viewer with a screen).
    Ack {
        seq: u64,
        status: AckStatus,
        recv_us: u64,
        decoded_us: u64,
        applied_us: u64,
    },
    KeyframeRequest {
        reason: u8,
    },
    /// Pointer, wheel or key input from a viewer (see [`InputKind`]).
    Input {
        kind: InputKind,
        x: i32,
        y: i32,
        code: u32,
    },
    Ping {
        id: u32,
        sent_us: u64,
    },
    Pong {
        id: u32,
        ping_sent_us: u64,
        reply_us: u64,
    },
    Command {
        code: CommandCode,
        a: u32,
        b: u32,
    },
    Goodbye {
        code: u16,
        reason: String,
    },
    /// A timestamped set of readings of a stream (host → subscriber).
    Sample {
        stream: String,
        device: String,
        device_seq: u64,
        accepted_us: u64,
        readings: Vec<(String, Value)>,
    },
    /// A grid of 16-bit values, row-major (a thermal camera frame; host → subscriber).
    Thermal {
        stream: String,
        device: String,
        device_seq: u64,
        accepted_us: u64,
        width: u16,
        height: u16,
        values: Vec<u16>,
    },
    /// This many samples for this subscriber were lost here: its queue was full.
    Missed {
        samples: u64,
    },
}

fn put_header(out: &mut BytesMut, ty: u8, body_len: usize) {
    out.put_slice(&MAGIC);
    out.put_u8(ty);
    out.put_u32_le(body_len as u32);
}

fn put_str8(out: &mut BytesMut, s: &str) {
    // Strings with a u8 prefix are truncated at a char boundary by the constructor helpers;
    // encoding never writes a length that disagrees with the bytes.
    let b = truncate_utf8(s, 255).as_bytes();
    out.put_u8(b.len() as u8);
    out.put_slice(b);
}

fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Where a stream item came from: the fields Sample and Thermal start with.
fn put_origin(out: &mut BytesMut, stream: &str, device: &str, seq: u64, accepted_us: u64) {
    put_str8(out, stream);
    put_str8(out, device);
    out.put_u64_le(seq);
    out.put_u64_le(accepted_us);
}

fn read_origin(r: &mut Reader<'_>) -> Result<(String, String, u64, u64), ProtoError> {
    let n = r.u8()? as usize;
    let stream = r.str(n, "stream")?;
    let n = r.u8()? as usize;
    let device = r.str(n, "device")?;
    Ok((stream, device, r.u64()?, r.u64()?))
}

/// Encodes a Sample packet straight from borrowed fields (no `Packet` to build: the hub's
/// subscribers send thousands a second). At most [`MAX_READINGS`] readings are written.
pub fn encode_sample<'a>(
    out: &mut BytesMut,
    stream: &str,
    device: &str,
    device_seq: u64,
    accepted_us: u64,
    readings: impl ExactSizeIterator<Item = (&'a str, Value)>,
) {
    let n = readings.len().min(MAX_READINGS);
    let start = out.len();
    put_header(out, kind::SAMPLE, 0);
    put_origin(out, stream, device, device_seq, accepted_us);
    out.put_u8(n as u8);
    for (k, v) in readings.take(n) {
        put_str8(out, truncate_utf8(k, MAX_KEY));
        match v {
            Value::Int(i) => {
                out.put_u8(0);
                out.put_i64_le(i);
            }
            Value::Float(f) => {
                out.put_u8(1);
                out.put_f64_le(f);
            }
        }
    }
    let body = (out.len() - start - HEADER_LEN) as u32;
    out[start + 3..start + 7].copy_from_slice(&body.to_le_bytes());
}

/// Appends the frame packet's header and fields to `out`; `payload_len` bytes of payload
/// follow.
pub fn put_frame_prefix(out: &mut BytesMut, h: &FrameHeader, payload_len: usize) {
    let fields = FRAME_FIELDS_LEN + if h.base.is_some() { 8 } else { 0 };
    put_header(out, kind::FRAME, fields + payload_len);
    out.put_u64_le(h.seq);
    out.put_u64_le(h.capture_us);
    out.put_u8(
        if h.keyframe { FRAME_FLAG_KEYFRAME } else { 0 }
            | if h.rows { FRAME_FLAG_ROWS } else { 0 }
            | if h.rects { FRAME_FLAG_RECTS } else { 0 }
            | if h.base.is_some() { FRAME_FLAG_BASE } else { 0 },
    );
    out.put_u8(h.codec as u8);
    out.put_u64_le(h.checksum);
    out.put_u32_le(h.raw_len);
    if let Some(b) = h.base {
        out.put_u64_le(b);
    }
}

impl Packet {
    pub fn type_byte(&self) -> u8 {
        match self {
            Packet::Hello { .. } => kind::HELLO,
            Packet::Welcome { .. } => kind::WELCOME,
            Packet::StreamDesc { .. } => kind::STREAM_DESC,
            Packet::Frame { .. } => kind::FRAME,
            Packet::Unchanged { .. } => kind::UNCHANGED,
            Packet::Ack { .. } => kind::ACK,
            Packet::KeyframeRequest { .. } => kind::KEYFRAME_REQUEST,
            Packet::Input { .. } => kind::INPUT,
            Packet::Ping { .. } => kind::PING,
            Packet::Pong { .. } => kind::PONG,
            Packet::Command { .. } => kind::COMMAND,
            Packet::Sample { .. } => kind::SAMPLE,
            Packet::Thermal { .. } => kind::THERMAL,
            Packet::Missed { .. } => kind::MISSED,
            Packet::Goodbye { .. } => kind::GOODBYE,
        }
    }

    /// Appends the packet's bytes to `out`.
    pub fn encode(&self, out: &mut BytesMut) {
        if let Packet::Frame { header, payload } = self {
            put_frame_prefix(out, header, payload.len());
            out.put_slice(payload);
            return;
        }
        let mut body = BytesMut::with_capacity(64);
        match self {
            Packet::Hello {
                version,
                role,
                caps,
                stream,
                token,
            } => {
                body.put_u16_le(*version);
                body.put_u8(*role as u8);
                body.put_u32_le(*caps);
                put_str8(&mut body, stream);
                put_str8(&mut body, token);
            }
            Packet::Welcome {
                version,
                caps,
                session,
            } => {
                body.put_u16_le(*version);
                body.put_u32_le(*caps);
                body.put_u64_le(*session);
            }
            Packet::StreamDesc {
                width,
                height,
                format,
                codec,
                name,
            } => {
                body.put_u32_le(*width);
                body.put_u32_le(*height);
                body.put_u8(*format as u8);
                body.put_u8(*codec as u8);
                put_str8(&mut body, name);
            }
            Packet::Unchanged {
                seq,
                capture_us,
                checksum,
            } => {
                body.put_u64_le(*seq);
                body.put_u64_le(*capture_us);
                body.put_u64_le(*checksum);
            }
            Packet::Ack {
                seq,
                status,
                recv_us,
                decoded_us,
                applied_us,
            } => {
                body.put_u64_le(*seq);
                body.put_u8(*status as u8);
                body.put_u64_le(*recv_us);
                body.put_u64_le(*decoded_us);
                body.put_u64_le(*applied_us);
            }
            Packet::KeyframeRequest { reason } => body.put_u8(*reason),
            Packet::Input { kind, x, y, code } => {
                body.put_u8(*kind as u8);
                body.put_i32_le(*x);
                body.put_i32_le(*y);
                body.put_u32_le(*code);
            }
            Packet::Ping { id, sent_us } => {
                body.put_u32_le(*id);
                body.put_u64_le(*sent_us);
            }
            Packet::Pong {
                id,
                ping_sent_us,
                reply_us,
            } => {
                body.put_u32_le(*id);
                body.put_u64_le(*ping_sent_us);
                body.put_u64_le(*reply_us);
            }
            Packet::Command { code, a, b } => {
                body.put_u8(*code as u8);
                body.put_u32_le(*a);
                body.put_u32_le(*b);
            }
            Packet::Goodbye { code, reason } => {
                let r = truncate_utf8(reason, 1024).as_bytes();
                body.put_u16_le(*code);
                body.put_u16_le(r.len() as u16);
                body.put_slice(r);
            }
            Packet::Sample {
                stream,
                device,
                device_seq,
                accepted_us,
                readings,
            } => {
                encode_sample(
                    out,
                    stream,
                    device,
                    *device_seq,
                    *accepted_us,
                    readings.iter().map(|(k, v)| (k.as_str(), *v)),
                );
                return;
            }
            Packet::Thermal {
                stream,
                device,
                device_seq,
                accepted_us,
                width,
                height,
                values,
            } => {
                put_origin(&mut body, stream, device, *device_seq, *accepted_us);
                body.put_u16_le(*width);
                body.put_u16_le(*height);
                for v in values {
                    body.put_u16_le(*v);
                }
            }
            Packet::Missed { samples } => body.put_u64_le(*samples),
            Packet::Frame { .. } => unreachable!("handled above"),
        }
        put_header(out, self.type_byte(), body.len());
        out.put_slice(&body);
    }

    pub fn to_bytes(&self) -> Bytes {
        let mut b = BytesMut::new();
        self.encode(&mut b);
        b.freeze()
    }
}

fn fixed(kind: &'static str, body: &[u8], expected: usize) -> Result<(), ProtoError> {
    if body.len() != expected {
        return Err(ProtoError::BadLength {
            kind,
            len: body.len(),
            expected,
        });
    }
    Ok(())
}

fn decode_body(ty: u8, mut body: Bytes) -> Result<Packet, ProtoError> {
    let p = match ty {
        kind::HELLO => {
            let mut r = Reader::new(&body, "hello");
            let version = r.u16()?;
            let role = match r.u8()? {
                1 => Role::Viewer,
                2 => Role::Publisher,
                3 => Role::Control,
                4 => Role::Subscriber,
                _ => {
                    return Err(ProtoError::InvalidField {
                        field: "hello.role",
                        why: "unknown role",
                    })
                }
            };
            let caps = r.u32()?;
            let n = r.u8()? as usize;
            let stream = r.str(n, "hello.stream")?;
            let n = r.u8()? as usize;
            let token = r.str(n, "hello.token")?;
            r.finish()?;
            Packet::Hello {
                version,
                role,
                caps,
                stream,
                token,
            }
        }
        kind::WELCOME => {
            fixed("welcome", &body, 14)?;
            let mut r = Reader::new(&body, "welcome");
            Packet::Welcome {
                version: r.u16()?,
                caps: r.u32()?,
                session: r.u64()?,
            }
        }
        kind::STREAM_DESC => {
            let mut r = Reader::new(&body, "stream_desc");
            let width = r.u32()?;
            let height = r.u32()?;
            let format = match r.u8()? {
                1 => PixelFormat::Grey8,
                2 => PixelFormat::PlanarGDiff,
                _ => {
                    return Err(ProtoError::InvalidField {
                        field: "stream_desc.format",
                        why: "unknown pixel format",
                    })
                }
            };
            let codec = Codec::from_u8(r.u8()?)?;
            let n = r.u8()? as usize;
            let name = r.str(n, "stream_desc.name")?;
            r.finish()?;
            if width == 0 || height == 0 || width > 16384 || height > 16384 {
                return Err(ProtoError::InvalidField {
                    field: "stream_desc.size",
                    why: "side not in 1..=16384",
                });
            }
            Packet::StreamDesc {
                width,
                height,
                format,
                codec,
                name,
            }
        }
        kind::FRAME => {
            if body.len() < FRAME_FIELDS_LEN {
                return Err(ProtoError::Truncated { kind: "frame" });
            }
            let mut r = Reader::new(&body[..FRAME_FIELDS_LEN], "frame");
            let seq = r.u64()?;
            let capture_us = r.u64()?;
            let flags = r.u8()?;
            let codec = Codec::from_u8(r.u8()?)?;
            let checksum = r.u64()?;
            let raw_len = r.u32()?;
            body.advance(FRAME_FIELDS_LEN);
            let kinds = flags & (FRAME_FLAG_KEYFRAME | FRAME_FLAG_ROWS | FRAME_FLAG_RECTS);
            if flags & !(kinds | FRAME_FLAG_BASE) != 0 || kinds.count_ones() > 1 {
                return Err(ProtoError::InvalidField {
                    field: "frame.flags",
                    why: "unknown flag, or more than one of keyframe, rows and rects",
                });
            }
            let base = if flags & FRAME_FLAG_BASE != 0 {
                if flags & FRAME_FLAG_KEYFRAME != 0 {
                    return Err(ProtoError::InvalidField {
                        field: "frame.flags",
                        why: "a keyframe has no base",
                    });
                }
                if body.len() < 8 {
                    return Err(ProtoError::Truncated { kind: "frame" });
                }
                let b = u64::from_le_bytes(body[..8].try_into().expect("8 bytes"));
                body.advance(8);
                Some(b)
            } else {
                None
            };
            let header = FrameHeader {
                seq,
                capture_us,
                keyframe: flags & FRAME_FLAG_KEYFRAME != 0,
                rows: flags & FRAME_FLAG_ROWS != 0,
                rects: flags & FRAME_FLAG_RECTS != 0,
                codec,
                checksum,
                raw_len,
                base,
            };
            Packet::Frame {
                header,
                payload: body,
            }
        }
        kind::UNCHANGED => {
            fixed("unchanged", &body, 24)?;
            let mut r = Reader::new(&body, "unchanged");
            Packet::Unchanged {
                seq: r.u64()?,
                capture_us: r.u64()?,
                checksum: r.u64()?,
            }
        }
        kind::ACK => {
            fixed("ack", &body, 33)?;
            let mut r = Reader::new(&body, "ack");
            let seq = r.u64()?;
            let status = match r.u8()? {
                0 => AckStatus::Applied,
                1 => AckStatus::ChecksumMismatch,
                2 => AckStatus::DecodeError,
                3 => AckStatus::BaseMissing,
                _ => {
                    return Err(ProtoError::InvalidField {
                        field: "ack.status",
                        why: "unknown status",
                    })
                }
            };
            Packet::Ack {
                seq,
                status,
                recv_us: r.u64()?,
                decoded_us: r.u64()?,
                applied_us: r.u64()?,
            }
        }
        kind::KEYFRAME_REQUEST => {
            fixed("keyframe_request", &body, 1)?;
            Packet::KeyframeRequest { reason: body[0] }
        }
        kind::INPUT => {
            fixed("input", &body, 13)?;
            let mut r = Reader::new(&body, "input");
            let kind = InputKind::from_u8(r.u8()?)?;
            Packet::Input {
                kind,
                x: r.i32()?,
                y: r.i32()?,
                code: r.u32()?,
            }
        }
        kind::PING => {
            fixed("ping", &body, 12)?;
            let mut r = Reader::new(&body, "ping");
            Packet::Ping {
                id: r.u32()?,
                sent_us: r.u64()?,
            }
        }
        kind::PONG => {
            fixed("pong", &body, 20)?;
            let mut r = Reader::new(&body, "pong");
            Packet::Pong {
                id: r.u32()?,
                ping_sent_us: r.u64()?,
                reply_us: r.u64()?,
            }
        }
        kind::COMMAND => {
            fixed("command", &body, 9)?;
            let mut r = Reader::new(&body, "command");
            let code = match r.u8()? {
                1 => CommandCode::Brightness,
                2 => CommandCode::Warmth,
                3 => CommandCode::Backlight,
                4 => CommandCode::Resolution,
                _ => {
                    return Err(ProtoError::InvalidField {
                        field: "command.code",
                        why: "unknown command",
                    })
                }
            };
            Packet::Command {
                code,
                a: r.u32()?,
                b: r.u32()?,
            }
        }
        kind::SAMPLE => {
            let mut r = Reader::new(&body, "sample");
            let (stream, device, device_seq, accepted_us) = read_origin(&mut r)?;
            let count = r.u8()? as usize;
            if count > MAX_READINGS {
                return Err(ProtoError::InvalidField {
                    field: "sample.count",
                    why: "more than 32 readings",
                });
            }
            let mut readings = Vec::with_capacity(count);
            for _ in 0..count {
                let n = r.u8()? as usize;
                let key = r.str(n, "sample.key")?;
                let value = match r.u8()? {
                    0 => Value::Int(r.u64()? as i64),
                    1 => Value::Float(f64::from_bits(r.u64()?)),
                    _ => {
                        return Err(ProtoError::InvalidField {
                            field: "sample.tag",
                            why: "unknown value type",
                        })
                    }
                };
                readings.push((key, value));
            }
            r.finish()?;
            Packet::Sample {
                stream,
                device,
                device_seq,
                accepted_us,
                readings,
            }
        }
        kind::THERMAL => {
            let mut r = Reader::new(&body, "thermal");
            let (stream, device, device_seq, accepted_us) = read_origin(&mut r)?;
            let width = r.u16()?;
            let height = r.u16()?;
            let rest = r.rest();
            if rest.len() != width as usize * height as usize * 2 {
                return Err(ProtoError::BadLength {
                    kind: "thermal",
                    len: rest.len(),
                    expected: width as usize * height as usize * 2,
                });
            }
            let values = rest
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            Packet::Thermal {
                stream,
                device,
                device_seq,
                accepted_us,
                width,
                height,
                values,
            }
        }
        kind::MISSED => {
            fixed("missed", &body, 8)?;
            Packet::Missed {
                samples: Reader::new(&body, "missed").u64()?,
            }
        }
        kind::GOODBYE => {
            let mut r = Reader::new(&body, "goodbye");
            let code = r.u16()?;
            let n = r.u16()? as usize;
            if n > 1024 {
                return Err(ProtoError::TooLong {
                    kind: "goodbye.reason",
                    len: n as u64,
                    max: 1024,
                });
            }
            let reason = r.str(n, "goodbye.reason")?;
            let _ = r.rest();
            Packet::Goodbye { code, reason }
        }
        other => return Err(ProtoError::UnknownType(other)),
    };
    Ok(p)
}

/// Incremental decoder for framewire v1, either direction.
#[derive(Debug)]
pub struct Decoder {
    buf: BytesMut,
    max_frame_body: u32,
}

impl Decoder {
    pub fn new(max_frame_body: u32) -> Self {
        Self::with_capacity(max_frame_body, 64 * 1024)
    }

    /// A decoder whose buffer starts at `capacity` bytes (it grows to the packets that come).
    pub fn with_capacity(max_frame_body: u32, capacity: usize) -> Self {
        Decoder {
            buf: BytesMut::with_capacity(capacity),
            max_frame_body,
        }
    }
    /// The receive buffer, for reading from a socket straight into it.
    pub fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }
    /// Bytes received but not yet decoded.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The next whole packet, `Ok(None)` if more bytes are needed. Errors are final: the
    /// stream's framing is lost.
    pub fn next_packet(&mut self) -> Result<Option<Packet>, ProtoError> {
        let b = &self.buf[..];
        for (i, &m) in MAGIC.iter().enumerate() {
            match b.get(i) {
                None => return Ok(None),
                Some(&x) if x != m => {
                    return Err(ProtoError::BadMagic {
                        expected: m,
                        found: x,
                    })
                }
                _ => {}
            }
        }
        if b.len() < HEADER_LEN {
            return Ok(None);
        }
        let ty = b[2];
        let len = u32::from_le_bytes(b[3..7].try_into().expect("4 bytes"));
        let max = if ty == kind::FRAME || ty == kind::THERMAL {
            self.max_frame_body
        } else {
            MAX_CONTROL_BODY
        };
        if len > max {
            return Err(ProtoError::TooLong {
                kind: kind_name(ty),
                len: len as u64,
                max: max as u64,
            });
        }
        if !(kind::HELLO..=kind::GOODBYE).contains(&ty) || kind_name(ty) == "unknown" {
            return Err(ProtoError::UnknownType(ty));
        }
        let total = HEADER_LEN + len as usize;
        if self.buf.len() < total {
            self.buf.reserve(total - self.buf.len());
            return Ok(None);
        }
        self.buf.advance(HEADER_LEN);
        let body = self.buf.split_to(len as usize).freeze();
        decode_body(ty, body).map(Some)
    }
}

/// The packet kind's name, for errors and counters.
pub fn kind_name(ty: u8) -> &'static str {
    match ty {
        kind::HELLO => "hello",
        kind::WELCOME => "welcome",
        kind::STREAM_DESC => "stream_desc",
        kind::FRAME => "frame",
        kind::UNCHANGED => "unchanged",
        kind::ACK => "ack",
        kind::KEYFRAME_REQUEST => "keyframe_request",
        kind::INPUT => "input",
        kind::PING => "ping",
        kind::PONG => "pong",
        kind::COMMAND => "command",
        kind::SAMPLE => "sample",
        kind::THERMAL => "thermal",
        kind::MISSED => "missed",
        kind::GOODBYE => "goodbye",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_packet() -> impl Strategy<Value = Packet> {
        let s = "[a-z/]{0,40}";
        prop_oneof![
            (any::<u16>(), 1u8..=4, any::<u32>(), s, s).prop_map(
                |(version, r, caps, stream, token)| Packet::Hello {
                    version,
                    role: [
                        Role::Viewer,
                        Role::Publisher,
                        Role::Control,
                        Role::Subscriber
                    ][r as usize - 1],
                    caps,
                    stream,
                    token
                }
            ),
            (any::<u16>(), any::<u32>(), any::<u64>()).prop_map(|(version, caps, session)| {
                Packet::Welcome {
                    version,
                    caps,
                    session,
                }
            }),
            (1u32..=16384, 1u32..=16384, 0u8..=2, s).prop_map(|(width, height, c, name)| {
                Packet::StreamDesc {
                    width,
                    height,
                    format: PixelFormat::Grey8,
                    codec: Codec::from_u8(c).unwrap(),
                    name,
                }
            }),
            (
                any::<u64>(),
                any::<u64>(),
                any::<bool>(),
                any::<u64>(),
                any::<u32>(),
                proptest::collection::vec(any::<u8>(), 0..500)
            )
                .prop_map(|(seq, capture_us, keyframe, checksum, raw_len, p)| {
                    Packet::Frame {
                        header: FrameHeader {
                            seq,
                            capture_us,
                            keyframe,
                            rows: !keyframe && checksum & 3 == 1,
                            rects: !keyframe && checksum & 3 == 2,
                            codec: Codec::Lz4,
                            checksum,
                            raw_len,
                            base: (!keyframe && checksum & 4 != 0).then_some(checksum ^ seq),
                        },
                        payload: Bytes::from(p),
                    }
                }),
            (any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(seq, capture_us, checksum)| {
                Packet::Unchanged {
                    seq,
                    capture_us,
                    checksum,
                }
            }),
            (
                any::<u64>(),
                0u8..=3,
                any::<u64>(),
                any::<u64>(),
                any::<u64>()
            )
                .prop_map(|(seq, s, recv_us, decoded_us, applied_us)| Packet::Ack {
                    seq,
                    status: [
                        AckStatus::Applied,
                        AckStatus::ChecksumMismatch,
                        AckStatus::DecodeError,
                        AckStatus::BaseMissing
                    ][s as usize],
                    recv_us,
                    decoded_us,
                    applied_us
                }),
            any::<u8>().prop_map(|reason| Packet::KeyframeRequest { reason }),
            (1u8..=6, any::<i32>(), any::<i32>(), any::<u32>()).prop_map(|(k, x, y, code)| {
                Packet::Input {
                    kind: InputKind::from_u8(k).unwrap(),
                    x,
                    y,
                    code,
                }
            }),
            (any::<u32>(), any::<u64>()).prop_map(|(id, sent_us)| Packet::Ping { id, sent_us }),
            (any::<u32>(), any::<u64>(), any::<u64>()).prop_map(|(id, ping_sent_us, reply_us)| {
                Packet::Pong {
                    id,
                    ping_sent_us,
                    reply_us,
                }
            }),
            (1u8..=4, any::<u32>(), any::<u32>()).prop_map(|(c, a, b)| Packet::Command {
                code: [
                    CommandCode::Brightness,
                    CommandCode::Warmth,
                    CommandCode::Backlight,
                    CommandCode::Resolution
                ][c as usize - 1],
                a,
                b
            }),
            (any::<u16>(), ".{0,100}").prop_map(|(code, reason)| Packet::Goodbye { code, reason }),
            (
                s,
                s,
                any::<u64>(),
                any::<u64>(),
                proptest::collection::vec(
                    (
                        "[A-Za-z0-9_]{1,32}",
                        prop_oneof![
                            any::<i64>().prop_map(Value::Int),
                            (-1e12f64..1e12).prop_map(Value::Float)
                        ]
                    ),
                    0..=MAX_READINGS
                )
            )
                .prop_map(|(stream, device, device_seq, accepted_us, readings)| {
                    Packet::Sample {
                        stream,
                        device,
                        device_seq,
                        accepted_us,
                        readings,
                    }
                }),
            (
                s,
                s,
                any::<u64>(),
                any::<u64>(),
                0u16..40,
                0u16..30,
                any::<u16>()
            )
                .prop_map(
                    |(stream, device, device_seq, accepted_us, width, height, v)| Packet::Thermal {
                        stream,
                        device,
                        device_seq,
                        accepted_us,
                        width,
                        height,
                        values: (0..width as usize * height as usize)
                            .map(|i| v.wrapping_add(i as u16))
                            .collect(),
                    }
                ),
            any::<u64>().prop_map(|samples| Packet::Missed { samples }),
        ]
    }

    proptest! {
        #[test]
        fn roundtrip_with_arbitrary_splits(pkts in proptest::collection::vec(arb_packet(), 1..10), cut in 1usize..64) {
            let mut wire = BytesMut::new();
            for p in &pkts { p.encode(&mut wire); }
            let mut d = Decoder::new(DEFAULT_MAX_FRAME_BODY);
            let mut got = Vec::new();
            for chunk in wire.chunks(cut) {
                d.feed(chunk);
                while let Some(p) = d.next_packet().unwrap() { got.push(p); }
            }
            prop_assert_eq!(got, pkts);
            prop_assert_eq!(d.pending(), 0);
        }

        #[test]
        fn garbage_is_rejected_or_waits_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut d = Decoder::new(1000);
            d.feed(&bytes);
            for _ in 0..100 {
                match d.next_packet() { Ok(Some(_)) => continue, _ => break }
            }
        }

        /// Flipping any single byte of a valid stream either still decodes, waits, or errors:
        /// it never panics and never allocates past the declared bound.
        #[test]
        fn mutated_stream_is_safe(p in arb_packet(), idx in any::<prop::sample::Index>(), val in any::<u8>()) {
            let mut wire = BytesMut::new();
            p.encode(&mut wire);
            let i = idx.index(wire.len());
            wire[i] = val;
            let mut d = Decoder::new(1 << 20);
            d.feed(&wire);
            let _ = d.next_packet();
            prop_assert!(d.buffer_mut().capacity() <= (1 << 20) + 64 * 1024 + HEADER_LEN);
        }
    }

    #[test]
    fn oversized_lengths_rejected_before_allocation() {
        let mut d = Decoder::new(1000);
        d.feed(&[b'F', b'W', kind::FRAME, 0xff, 0xff, 0xff, 0x7f]);
        assert!(matches!(
            d.next_packet(),
            Err(ProtoError::TooLong { kind: "frame", .. })
        ));
        let mut d = Decoder::new(1000);
        d.feed(&[b'F', b'W', kind::PING, 0x00, 0x20, 0x00, 0x00]);
        assert!(matches!(
            d.next_packet(),
            Err(ProtoError::TooLong { kind: "ping", .. })
        ));
    }

    #[test]
    fn wrong_fixed_length_rejected() {
        let mut d = Decoder::new(1000);
        d.feed(&[b'F', b'W', kind::PING, 3, 0, 0, 0, 1, 2, 3]);
        assert!(matches!(
            d.next_packet(),
            Err(ProtoError::BadLength { kind: "ping", .. })
        ));
    }

    #[test]
    fn unknown_type_and_magic_rejected() {
        let mut d = Decoder::new(1000);
        d.feed(&[b'F', b'W', 0x55, 0, 0, 0, 0]);
        assert_eq!(d.next_packet(), Err(ProtoError::UnknownType(0x55)));
        let mut d = Decoder::new(1000);
        d.feed(b"GET / HTTP/1.1\r\n");
        assert!(matches!(d.next_packet(), Err(ProtoError::BadMagic { .. })));
    }

    #[test]
    fn long_strings_truncate_on_char_boundary() {
        let name = "é".repeat(200); // 400 bytes
        let p = Packet::Hello {
            version: 1,
            role: Role::Viewer,
            caps: 0,
            stream: name,
            token: String::new(),
        };
        let mut d = Decoder::new(1000);
        d.feed(&p.to_bytes());
        match d.next_packet().unwrap().unwrap() {
            Packet::Hello { stream, .. } => assert_eq!(stream.len(), 254),
            other => panic!("{other:?}"),
        }
    }
}
