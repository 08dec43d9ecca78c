//! How planned frames and commands become framewire v1 bytes.

use bytes::{BufMut, Bytes, BytesMut};
use framewire_codec::BlockCodec;
use framewire_proto::v1::{self, CommandCode, FrameHeader, Packet, PixelFormat};

use crate::frame::SourceFrame;
use crate::session::{Outgoing, Wire};
use crate::state::ViewerCommand;

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

pub struct V1Wire;

impl Wire for V1Wire {
    fn stream_desc(&mut self, f: &SourceFrame, out: &mut BytesMut) {
        Packet::StreamDesc {
            width: f.width,
            height: f.height,
            format: PixelFormat::Grey8,
            codec: codec_to_wire(f.codec),
            name: "screen".into(),
        }
        .encode(out);
    }

    fn frame(
        &mut self,
        f: &SourceFrame,
        keyframe: bool,
        payload: &Bytes,
        out: &mut BytesMut,
    ) -> Outgoing {
        let h = FrameHeader {
            seq: f.seq,
            capture_us: f.capture_us,
            keyframe,
            codec: codec_to_wire(f.codec),
            checksum: f.checksum,
            raw_len: f.grey.len() as u32,
        };
        out.put_slice(&v1::frame_prefix(&h, payload.len()));
        Outgoing {
            ack_id: Some(f.seq),
            payload: Some(payload.clone()),
        }
    }

    fn unchanged(&mut self, f: &SourceFrame, out: &mut BytesMut) -> Outgoing {
        Packet::Unchanged {
            seq: f.seq,
            capture_us: f.capture_us,
            checksum: f.checksum,
        }
        .encode(out);
        Outgoing {
            ack_id: Some(f.seq),
            payload: None,
        }
    }

    fn command(&mut self, c: ViewerCommand, out: &mut BytesMut) {
        let (code, a, b) = match c {
            ViewerCommand::Brightness(v) => (CommandCode::Brightness, v as u32, 0),
            ViewerCommand::Warmth(v) => (CommandCode::Warmth, v as u32, 0),
            ViewerCommand::Backlight(v) => (CommandCode::Backlight, v as u32, 0),
            ViewerCommand::Resolution(w, h) => (CommandCode::Resolution, w, h),
        };
        Packet::Command { code, a, b }.encode(out);
    }
}
