//! How planned frames and commands become Daylight bytes. The Daylight app has no "unchanged"
//! packet, so an unchanged frame sends nothing: its picture is already right. Frame sequence
//! numbers are per connection, one per frame sent, as the app expects.

use bytes::{BufMut, Bytes, BytesMut};
use framewire_proto::daylight::{self, HostPacket};

use crate::frame::SourceFrame;
use crate::session::{Outgoing, Wire};
use crate::state::ViewerCommand;

#[derive(Default)]
pub struct DaylightWire {
    next_seq: u32,
}

impl Wire for DaylightWire {
    fn stream_desc(&mut self, f: &SourceFrame, out: &mut BytesMut) {
        let clamp = |v: u32| v.min(daylight::MAX_SIDE as u32) as u16;
        HostPacket::Resolution {
            width: clamp(f.width),
            height: clamp(f.height),
        }
        .encode(out);
    }

    fn frame(
        &mut self,
        _f: &SourceFrame,
        keyframe: bool,
        payload: &Bytes,
        out: &mut BytesMut,
    ) -> Outgoing {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        out.put_slice(&daylight::frame_header(keyframe, seq, payload.len() as u32));
        Outgoing {
            ack_id: Some(seq as u64),
            payload: Some(payload.clone()),
        }
    }

    fn delta(&mut self, f: &SourceFrame, out: &mut BytesMut) -> Outgoing {
        let (p, _) = f
            .full_delta_payload()
            .expect("a frame with a delta base carries its delta");
        self.frame(f, false, &p, out)
    }

    fn unchanged(&mut self, _f: &SourceFrame, _out: &mut BytesMut) -> Outgoing {
        Outgoing {
            ack_id: None,
            payload: None,
        }
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
            ViewerCommand::Backlight(v) => HostPacket::Command {
                cmd: daylight::CMD_BACKLIGHT,
                value: v,
            },
        };
        p.encode(out);
    }
}
