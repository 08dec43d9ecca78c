//! How planned frames and commands become framewire v1 bytes.

use bytes::{Bytes, BytesMut};
use framewire_codec::rects::Codecs;
use framewire_codec::BlockCodec;
use framewire_proto::v1::{self, CommandCode, FrameHeader, Packet, PixelFormat};

use std::sync::Arc;

use framewire_flow::Plan;

use crate::frame::{DeltaForm, Rebased, SourceFrame};
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
    /// The codec of moved-rectangle deltas with predicted rectangles (see [`Codecs`]).
    pub dense: BlockCodec,
    pub unchanged: bool,
    /// It applies moved-rectangle deltas.
    pub rects: bool,
    /// It applies predicted rectangles in them.
    pub predicted: bool,
    /// Its deltas name their base.
    pub named_bases: bool,
}

impl V1Wire {
    pub fn new(n: Negotiated) -> Self {
        V1Wire {
            codec: codec_from_wire(n.codec),
            dense: codec_from_wire(n.dense),
            unchanged: n.unchanged,
            rects: n.rects,
            predicted: n.predicted,
            named_bases: n.named_bases,
        }
    }

    fn body<'a>(
        &self,
        codec: BlockCodec,
        keyframe: bool,
        form: DeltaForm,
        raw_len: usize,
        base: Option<u64>,
        payload: &'a Bytes,
    ) -> Body<'a> {
        Body {
            codec,
            keyframe,
            form,
            raw_len,
            base: base.filter(|_| self.named_bases),
            payload,
        }
    }

    /// The frame's shared payloads are in a codec this viewer reads and a form it reads.
    fn shares(&self, f: &SourceFrame) -> bool {
        let readable = match f.shared_delta() {
            Some((p, DeltaForm::Rects)) => {
                self.rects && (self.predicted || !framewire_codec::rects::has_predicted(p))
            }
            _ => true,
        };
        let codec = codec_to_wire(f.codec);
        (codec == codec_to_wire(self.codec) || codec == codec_to_wire(self.dense)) && readable
    }
}

/// What a frame packet says of its payload.
struct Body<'a> {
    codec: BlockCodec,
    keyframe: bool,
    form: DeltaForm,
    raw_len: usize,
    /// The base's checksum, for a viewer with named bases.
    base: Option<u64>,
    payload: &'a Bytes,
}

fn frame_packet(f: &SourceFrame, b: Body, out: &mut BytesMut) -> Outgoing {
    let Body {
        codec,
        keyframe,
        form,
        raw_len,
        base,
        payload,
    } = b;
    let h = FrameHeader {
        seq: f.seq,
        capture_us: f.capture_us,
        keyframe,
        rows: form == DeltaForm::Rows,
        rects: form == DeltaForm::Rects,
        codec: codec_to_wire(codec),
        checksum: f.checksum,
        raw_len: raw_len as u32,
        base: base.filter(|_| !keyframe),
    };
    v1::put_frame_prefix(out, &h, payload.len());
    Outgoing {
        ack_id: Some(f.seq),
        payload: Some(payload.clone()),
        keyframe,
    }
}

/// Decoded size of a shared delta's data, from the header we wrote: a row delta's rows, a
/// moved-rectangle delta's patches and predicted rectangles' residuals, or the whole picture.
fn data_len(payload: &[u8], form: DeltaForm, f: &SourceFrame) -> usize {
    let (w, h) = (f.width as usize, f.height as usize);
    match form {
        DeltaForm::Full => f.grey.len(),
        DeltaForm::Rows => {
            framewire_codec::rows::parse_header(payload, h).map_or(0, |p| p.plan.rows() * w)
        }
        DeltaForm::Rects => {
            framewire_codec::rects::parse_header(payload, w, h).map_or(0, |p| p.0.block_bytes())
        }
    }
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
            height: f.height / f.planes.max(1),
            format: if f.planes == 3 {
                PixelFormat::PlanarGDiff
            } else {
                PixelFormat::Grey8
            },
            codec: codec_to_wire(self.codec),
            name: "screen".into(),
        }
        .encode(out);
    }

    fn keyframe(&mut self, f: &SourceFrame, out: &mut BytesMut) -> (Outgoing, bool) {
        let (p, fresh) = f.keyframe(self.codec);
        let b = self.body(self.codec, true, DeltaForm::Full, f.grey.len(), None, &p);
        (frame_packet(f, b, out), fresh)
    }

    fn delta(&mut self, f: &SourceFrame, base: u64, out: &mut BytesMut) -> Outgoing {
        if !self.shares(f) {
            let (p, _) = f
                .full_delta(self.codec)
                .expect("a frame with a delta base carries its delta");
            let b = self.body(
                self.codec,
                false,
                DeltaForm::Full,
                f.grey.len(),
                Some(base),
                &p,
            );
            return frame_packet(f, b, out);
        }
        let (p, form) = f
            .shared_delta()
            .expect("a frame with a delta base carries its delta");
        let b = self.body(f.codec, false, form, data_len(p, form, f), Some(base), p);
        frame_packet(f, b, out)
    }

    fn names_bases(&self) -> bool {
        self.named_bases
    }

    fn codecs(&self) -> Codecs {
        Codecs {
            plain: self.codec,
            dense: self.dense,
        }
    }

    fn rects(&self) -> bool {
        self.rects
    }

    fn predicted(&self) -> bool {
        self.predicted
    }

    fn rebased(&mut self, f: &SourceFrame, base: u64, d: Rebased, out: &mut BytesMut) -> Outgoing {
        let b = self.body(d.codec, false, d.form, d.raw_len, Some(base), &d.payload);
        frame_packet(f, b, out)
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
