//! What joins a session to a protocol: a [`Wire`] turns the session's decisions (a keyframe, a
//! delta, an unchanged frame, a display command) into that protocol's bytes.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use framewire_codec::rects::Codecs;
use framewire_codec::BlockCodec;
use framewire_flow::Plan;

use crate::frame::{Rebased, SourceFrame};

/// A display command sent to every viewer. A size change is not one: it reaches each viewer
/// in order with its frames (stream description / Daylight resolution packet, then a
/// keyframe), because a resolution packet overtaking a frame resets the viewer's picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewerCommand {
    Brightness(u8),
    Warmth(u8),
    /// 0 off, 1 on, 2 toggle.
    Backlight(u8),
}

/// What the session must remember about a packet a wire produced.
pub struct Outgoing {
    /// The id the viewer will ACK (v1: source seq; Daylight: connection seq), if any.
    pub ack_id: Option<u64>,
    pub payload: Option<Bytes>,
    /// The packet is a keyframe (also when a wire sends a delta as one).
    pub keyframe: bool,
}

impl Outgoing {
    /// Nothing to send (an unchanged picture to a viewer without an "unchanged" packet).
    pub const NOTHING: Outgoing = Outgoing {
        ack_id: None,
        payload: None,
        keyframe: false,
    };
}

/// Compression to do before a send, on a blocking thread (the runtime times it).
pub type Work = Box<dyn FnOnce() + Send>;

/// A protocol's encoding of a session's decisions.
pub trait Wire: Send + 'static {
    /// CPU work (compression) that sending `plan` for `f` would do on the spot, if any: the
    /// runtime runs it on a blocking thread first, so async workers only move bytes.
    fn pending_work(&self, f: &Arc<SourceFrame>, plan: Plan) -> Option<Work>;
    /// Describes the stream (size); the viewer's picture starts again from a keyframe.
    fn stream_desc(&mut self, f: &SourceFrame, out: &mut BytesMut);
    /// The whole picture of `f`, and whether this call compressed it (rather than reusing a
    /// payload another viewer's request had made).
    fn keyframe(&mut self, f: &SourceFrame, out: &mut BytesMut) -> (Outgoing, bool);
    /// The frame as a delta against its base (whose checksum is `base`, for a wire that names
    /// bases), in the form this protocol carries. A wire may send it as a keyframe instead
    /// (the viewer ends up holding `f` either way).
    fn delta(&mut self, f: &SourceFrame, base: u64, out: &mut BytesMut) -> Outgoing;
    /// Whether this viewer's deltas name their base, so the host may send it a delta against
    /// any picture it holds ([`framewire_flow::Plan::Rebased`]).
    fn names_bases(&self) -> bool {
        false
    }
    /// The codecs of payloads made for this viewer (see [`Codecs`]).
    fn codecs(&self) -> Codecs;
    /// Whether this viewer applies moved-rectangle deltas, so a delta made for it alone
    /// ([`Wire::rebased`]) may be one.
    fn rects(&self) -> bool {
        false
    }
    /// Whether those deltas may carry predicted rectangles.
    fn predicted(&self) -> bool {
        false
    }
    /// `delta`, made for this viewer against the picture whose checksum is `base` (only when
    /// [`Wire::names_bases`]).
    fn rebased(
        &mut self,
        f: &SourceFrame,
        base: u64,
        delta: Rebased,
        out: &mut BytesMut,
    ) -> Outgoing;
    fn unchanged(&mut self, f: &SourceFrame, out: &mut BytesMut) -> Outgoing;
    fn command(&mut self, c: ViewerCommand, out: &mut BytesMut);
}

/// The work of compressing `f` as a keyframe or a full-frame delta in `codec`, when that is
/// not made yet.
pub fn compress_work(f: &Arc<SourceFrame>, codec: BlockCodec, keyframe: bool) -> Option<Work> {
    let pending = if keyframe {
        f.keyframe_pending(codec)
    } else {
        f.full_delta_pending(codec)
    };
    let f = f.clone();
    pending.then(|| -> Work {
        Box::new(move || {
            if keyframe {
                f.keyframe(codec);
            } else {
                f.full_delta(codec);
            }
        })
    })
}
