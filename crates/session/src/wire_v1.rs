//! How planned frames and commands become framewire v1 bytes.

use bytes::{BufMut, Bytes, BytesMut};
use framewire_codec::BlockCodec;
use framewire_proto::v1::{self, CommandCode, FrameHeader, Packet, PixelFormat};

use std::sync::Arc;

use framewire_flow::Plan;

use crate::frame::SourceFrame;
use crate::negotiate::Negotiated;
use crate::wire::{compress_work, Outgoing, ViewerCommand, Wire, Work};

pub fn codec_to_wire(c: BlockCodec) -> v1::Codec {
    match c {
        BlockCodec::Raw => v1::Codec::Raw,
        BlockCodec::Lz4 => v1::Codec::Lz4,
        BlockCodec::Zstd(_) => v1::Codec::Zstd,
    }
}

pub fn codec_from_wire(c: v1::Codec) -> BlockCodec {
    match c {
        v1::Codec::Raw => BlockCodec::Raw,
        v1::Codec::Lz4 => BlockCodec::Lz4,
        v1::Codec::Zstd => BlockCodec::Zstd(1),
    }
}

/// One viewer's v1 encoding, as negotiated from its Hello: the codec it declared (the shared
/// payloads when that is the configured one, else full-frame deltas made for it), and whether
/// it takes Unchanged packets.
pub struct V1Wire {
    pub codec: BlockCodec,
    pub unchanged: bool,
}

impl V1Wire {
    pub fn new(n: Negotiated) -> Self {
        V1Wire {
            codec: codec_from_wire(n.codec),
            unchanged: n.unchanged,
        }
    }

    /// The frame's shared payloads are in this viewer's codec.
    fn shares(&self, f: &SourceFrame) -> bool {
        codec_to_wire(f.codec) == codec_to_wire(self.codec)
    }
}

fn frame_packet(
    f: &SourceFrame,
    codec: BlockCodec,
    keyframe: bool,
    rows: bool,
    raw_len: usize,
    payload: &Bytes,
    out: &mut BytesMut,
) -> Outgoing {
    let h = FrameHeader {
        seq: f.seq,
        capture_us: f.capture_us,
        keyframe,
        rows,
        codec: codec_to_wire(codec),
        checksum: f.checksum,
        raw_len: raw_len as u32,
    };
    out.put_slice(&v1::frame_prefix(&h, payload.len()));
    Outgoing {
        ack_id: Some(f.seq),
        payload: Some(payload.clone()),
        keyframe,
    }
}

/// Decoded size of a row delta's row data (rows × width), from the header we wrote.
fn row_data_len(payload: &[u8], f: &SourceFrame) -> usize {
    framewire_codec::rows::parse_header(payload, f.height as usize)
        .map_or(0, |h| h.plan.rows() * f.width as usize)
}

impl Wire for V1Wire {
    fn pending_work(&self, f: &Arc<SourceFrame>, plan: Plan) -> Option<Work> {
        match plan {
            Plan::Keyframe { .. } => compress_work(f, self.codec, true),
            Plan::Delta if !self.shares(f) => compress_work(f, self.codec, false),
            _ => None,
        }
    }

    fn stream_desc(&mut self, f: &SourceFrame, out: &mut BytesMut) {
        Packet::StreamDesc {
            width: f.width,
            height: f.height,
            format: PixelFormat::Grey8,
            codec: codec_to_wire(self.codec),
            name: "screen".into(),
        }
        .encode(out);
    }

    fn keyframe(&mut self, f: &SourceFrame, out: &mut BytesMut) -> (Outgoing, bool) {
        let (p, fresh) = f.keyframe(self.codec);
        let n = f.grey.len();
        (frame_packet(f, self.codec, true, false, n, &p, out), fresh)
    }

    fn delta(&mut self, f: &SourceFrame, out: &mut BytesMut) -> Outgoing {
        if !self.shares(f) {
            let (p, _) = f
                .full_delta(self.codec)
                .expect("a frame with a delta base carries its delta");
            return frame_packet(f, self.codec, false, false, f.grey.len(), &p, out);
        }
        let (p, rows) = f
            .shared_delta()
            .expect("a frame with a delta base carries its delta");
        // A row delta's raw_len is the size of its row data, which its header determines.
        let raw_len = if rows {
            row_data_len(p, f)
        } else {
            f.grey.len()
        };
        frame_packet(f, self.codec, false, rows, raw_len, p, out)
    }

    fn unchanged(&mut self, f: &SourceFrame, out: &mut BytesMut) -> Outgoing {
        if !self.unchanged {
            // Its picture is already right; it has no packet to be told so.
            return Outgoing::NOTHING;
        }
        Packet::Unchanged {
            seq: f.seq,
            capture_us: f.capture_us,
            checksum: f.checksum,
        }
        .encode(out);
        Outgoing {
            ack_id: Some(f.seq),
            payload: None,
            keyframe: false,
        }
    }

    fn command(&mut self, c: ViewerCommand, out: &mut BytesMut) {
        let (code, a, b) = match c {
            ViewerCommand::Brightness(v) => (CommandCode::Brightness, v as u32, 0),
            ViewerCommand::Warmth(v) => (CommandCode::Warmth, v as u32, 0),
            ViewerCommand::Backlight(v) => (CommandCode::Backlight, v as u32, 0),
        };
        Packet::Command { code, a, b }.encode(out);
    }
}
