//! A viewer of the Daylight app's protocol, as the app behaves: no handshake, a resolution
//! packet sizes (and clears) the picture, each frame is an LZ4 keyframe or full-frame XOR delta
//! applied to the picture, and every frame is ACKed after it is applied, whatever happened (the
//! protocol has no error report, and a wrong picture recovers at the next keyframe).
//!
//! The same shape as [`crate::ViewerSession`]: bytes and the time in, ACK bytes and events
//! out; the clock is passed in to time the decode and the apply.

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use framewire_codec::{BlockCodec, Picture};
use framewire_proto::daylight::{self, HostDecoder, HostPacket, ViewerPacket};
use framewire_proto::ProtoError;

/// One frame the viewer decoded, applied and ACKed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaylightShown {
    pub seq: u32,
    pub keyframe: bool,
    /// The payload decoded and applied (a Daylight viewer cannot verify the picture).
    pub decoded: bool,
    pub bytes: usize,
    /// When the read that completed it arrived (µs, the viewer's clock).
    pub received_us: u64,
    pub decompress_us: u64,
    pub apply_us: u64,
    /// When it was applied (µs, the viewer's clock).
    pub applied_us: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DaylightViewerEvent {
    /// A resolution packet: the picture is now this size, and blank.
    Size {
        width: u32,
        height: u32,
    },
    /// Brightness (`daylight::CMD_BRIGHTNESS`), warmth or backlight, with its value.
    Command {
        cmd: u8,
        value: u8,
    },
    Shown(DaylightShown),
    /// The host broke the protocol (the app would disconnect).
    Error(ProtoError),
}

pub struct DaylightViewerSession {
    dec: HostDecoder,
    picture: Picture,
    recv_us: u64,
    clock: fn() -> u64,
    transmits: VecDeque<Bytes>,
    done: bool,
}

impl DaylightViewerSession {
    /// A viewer that takes payloads up to the protocol's bound; `clock` gives µs.
    pub fn new(clock: fn() -> u64) -> Self {
        DaylightViewerSession {
            dec: HostDecoder::new(daylight::DEFAULT_MAX_PAYLOAD),
            picture: Picture::new(0, 0),
            recv_us: 0,
            clock,
            transmits: VecDeque::new(),
            done: false,
        }
    }

    /// The picture as last applied.
    pub fn picture(&self) -> &Picture {
        &self.picture
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Bytes from the host, which arrived at `recv_us`. They are handled as events are polled.
    pub fn handle_bytes(&mut self, recv_us: u64, data: &[u8]) {
        self.dec.feed(data);
        self.recv_us = recv_us;
    }

    /// ACKs to send, in order.
    pub fn poll_transmit(&mut self) -> Option<Bytes> {
        self.transmits.pop_front()
    }

    /// The next thing that happened, one packet at a time, so [`Self::picture`] is the picture
    /// as of the event just returned.
    pub fn poll_event(&mut self) -> Option<DaylightViewerEvent> {
        if self.done {
            return None;
        }
        let p = match self.dec.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => return None,
            Err(e) => {
                self.done = true;
                return Some(DaylightViewerEvent::Error(e));
            }
        };
        Some(match p {
            HostPacket::Resolution { width, height } => {
                let (width, height) = (width as u32, height as u32);
                self.picture = Picture::new(width, height);
                DaylightViewerEvent::Size { width, height }
            }
            HostPacket::Command { cmd, value } => DaylightViewerEvent::Command { cmd, value },
            HostPacket::Frame {
                keyframe,
                seq,
                payload,
            } => DaylightViewerEvent::Shown(self.on_frame(keyframe, seq, &payload)),
        })
    }

    fn on_frame(&mut self, keyframe: bool, seq: u32, payload: &[u8]) -> DaylightShown {
        let t0 = (self.clock)();
        let decoded = self
            .picture
            .decode(keyframe, BlockCodec::Lz4, payload)
            .is_ok();
        let t1 = (self.clock)();
        if decoded {
            self.picture.apply();
        }
        let t2 = (self.clock)();
        let mut out = BytesMut::with_capacity(8);
        ViewerPacket::Ack { seq }.encode(&mut out);
        self.transmits.push_back(out.freeze());
        DaylightShown {
            seq,
            keyframe,
            decoded,
            bytes: payload.len(),
            received_us: self.recv_us,
            decompress_us: t1 - t0,
            apply_us: t2 - t1,
            applied_us: t2,
        }
    }
}
