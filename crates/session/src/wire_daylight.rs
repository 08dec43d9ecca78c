//! How planned frames and commands become Daylight bytes. The Daylight app has no "unchanged"
//! packet, so an unchanged frame sends nothing: its picture is already right. Frame sequence
//! numbers are per connection, one per frame sent, as the app expects.
//!
//! What the app's decoder does with these bytes decides the rest:
//! - it decodes LZ4 blocks only, whatever `--codec` framewire viewers get;
//! - it skips (but ACKs) any delta whose payload is under [`MIN_DELTA_PAYLOAD`] bytes, so such
//!   a delta is sent as a keyframe instead: the viewer then holds exactly this frame, as the
//!   flow assumes after a delta;
//! - it disconnects on a payload over `n + n/255 + 1024` bytes (n = width × height), which an
//!   LZ4 block of n bytes never exceeds;
//! - a resolution packet zeroes its picture, so a keyframe follows (the session resets the
//!   viewer's reference).

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use framewire_codec::BlockCodec;
use framewire_flow::Plan;
use framewire_proto::daylight::{self, HostPacket};

use crate::frame::{Rebased, SourceFrame};
use crate::wire::{compress_work, Outgoing, ViewerCommand, Wire, Work};

/// The app skips deltas with a smaller payload (it takes them for noise).
pub const MIN_DELTA_PAYLOAD: usize = 256;

#[derive(Default)]
pub struct DaylightWire {
    next_seq: u32,
}

impl DaylightWire {
    fn frame(&mut self, keyframe: bool, payload: Bytes, out: &mut BytesMut) -> Outgoing {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        out.put_slice(&daylight::frame_header(keyframe, seq, payload.len() as u32));
        Outgoing {
            ack_id: Some(seq as u64),
            payload: Some(payload),
            keyframe,
        }
    }
}

impl Wire for DaylightWire {
    fn pending_work(&self, f: &Arc<SourceFrame>, plan: Plan) -> Option<Work> {
        match plan {
            Plan::Keyframe { .. } => compress_work(f, BlockCodec::Lz4, true),
            Plan::Delta => compress_work(f, BlockCodec::Lz4, false),
            _ => None,
        }
    }

    fn stream_desc(&mut self, f: &SourceFrame, out: &mut BytesMut) {
        let clamp = |v: u32| v.min(daylight::MAX_SIDE as u32) as u16;
        HostPacket::Resolution {
            width: clamp(f.width),
            height: clamp(f.height),
        }
        .encode(out);
    }

    fn keyframe(&mut self, f: &SourceFrame, out: &mut BytesMut) -> (Outgoing, bool) {
        let (p, fresh) = f.keyframe(BlockCodec::Lz4);
        (self.frame(true, p, out), fresh)
    }

    fn delta(&mut self, f: &SourceFrame, _base: u64, out: &mut BytesMut) -> Outgoing {
        let (p, _) = f
            .full_delta(BlockCodec::Lz4)
            .expect("a frame with a delta base carries its delta");
        if p.len() < MIN_DELTA_PAYLOAD {
            return self.keyframe(f, out).0;
        }
        self.frame(false, p, out)
    }

    fn unchanged(&mut self, _f: &SourceFrame, _out: &mut BytesMut) -> Outgoing {
        Outgoing::NOTHING
    }

    fn codecs(&self) -> framewire_codec::rects::Codecs {
        framewire_codec::rects::Codecs::one(BlockCodec::Lz4)
    }

    /// Never planned: the app's deltas name no base.
    fn rebased(&mut self, f: &SourceFrame, _: u64, _: Rebased, out: &mut BytesMut) -> Outgoing {
        self.keyframe(f, out).0
    }

    fn command(&mut self, c: ViewerCommand, out: &mut BytesMut) {
        let p = match c {
            ViewerCommand::Brightness(v) => HostPacket::Command {
                cmd: daylight::CMD_BRIGHTNESS,
                value: v,
            },
            ViewerCommand::Warmth(v) => HostPacket::Command {
                cmd: daylight::CMD_WARMTH,
                value: v,
            },
            // The app reads the backlight command and ignores it: the control socket's
            // BACKLIGHT sends brightness commands instead.
            ViewerCommand::Backlight(_) => return,
        };
        p.encode(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{FrameMeta, Payload};

    /// A frame whose shared payload is `codec`'s full-frame delta from `base` to `grey`.
    fn delta_frame(codec: BlockCodec, base: Vec<u8>, grey: Vec<u8>, w: u32) -> SourceFrame {
        let mut x = vec![0u8; grey.len()];
        framewire_codec::delta::xor_into(&base, &grey, &mut x);
        let mut payload = Vec::new();
        codec.compress(&x, &mut payload).unwrap();
        let meta = FrameMeta {
            planes: 1,
            seq: 1,
            capture_us: 0,
            width: w,
            height: grey.len() as u32 / w,
            grey: Arc::new(grey),
            checksum: 0,
            content_id: 1,
            codec,
        };
        let delta = Payload::Delta {
            data: payload.into(),
            base_id: 0,
            base: Arc::new(base),
        };
        SourceFrame::new(meta, delta)
    }

    /// What the Daylight app would show after applying `out` (LZ4 only) to `picture`.
    fn apply(out: &Outgoing, picture: &[u8]) -> Vec<u8> {
        let mut d = vec![0u8; picture.len()];
        let p = out.payload.as_ref().unwrap();
        BlockCodec::Lz4.decompress(p, &mut d).expect("an LZ4 block");
        if !out.keyframe {
            assert!(
                p.len() >= MIN_DELTA_PAYLOAD,
                "the app would skip this delta"
            );
            framewire_codec::delta::xor_in_place(&mut d, picture);
        }
        d
    }

    #[test]
    fn deltas_are_lz4_and_never_small_enough_to_be_skipped() {
        for codec in [BlockCodec::Lz4, BlockCodec::Zstd(1), BlockCodec::Raw] {
            for (w, h) in [(1u32, 1u32), (160, 120), (1024, 768)] {
                let n = (w * h) as usize;
                let base: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
                let mut grey = base.clone();
                grey[n / 2] ^= 0x5a;
                let f = delta_frame(codec, base.clone(), grey.clone(), w);
                let mut buf = BytesMut::new();
                let out = DaylightWire::default().delta(&f, 0, &mut buf);
                assert_eq!(apply(&out, &base), grey, "{codec:?} {w}x{h}");
                let len = out.payload.as_ref().unwrap().len();
                assert!(len <= n + n / 255 + 1024, "over the app's bound");
                // Small pictures get keyframes; a large one's delta is big enough to be kept.
                assert_eq!(out.keyframe, n < 100_000, "{codec:?} {w}x{h}: {len} bytes");
                assert_eq!(buf[2] & daylight::FLAG_KEYFRAME != 0, out.keyframe);
                let (key, _) = DaylightWire::default().keyframe(&f, &mut BytesMut::new());
                assert_eq!(apply(&key, &vec![0; n]), grey);
            }
        }
    }
}
