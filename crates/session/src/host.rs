//! One viewer as the host sees it, once its Hello is accepted: what to send it for each new
//! frame (keyframe, shared delta, unchanged or nothing, from its in-flight window and the
//! picture it holds), the pings for its clock offset, its ACKs (RTT, end-to-end latency,
//! keyframe requests after a checksum mismatch), its input, and its goodbye.
//!
//! A deterministic state machine in the shape of `quinn-proto`'s `Connection`: the runtime
//! feeds it bytes ([`HostSession::handle_bytes`]), new frames ([`HostSession::plan_frame`],
//! [`HostSession::send_frame`]), commands and the time, and takes out what to write
//! ([`HostSession::poll_transmit`]), what happened ([`HostSession::poll_event`]) and when to
//! wake it next ([`HostSession::poll_timeout`]). No sockets, threads, async runtime or clock here: a
//! test drives a whole conversation in memory with a fake clock.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use framewire_flow::{
    AckOutcome, Bases, ClockOffset, FrameInfo, InflightLimit, LossWatch, PingSchedule, Plan,
    RebaseCost, ViewerFlow, ViewerFlowStats,
};
use framewire_proto::daylight::{ViewerDecoder, ViewerPacket};
use framewire_proto::v1::{self, goodbye, AckStatus, InputKind, Packet};
use framewire_proto::ProtoError;
use framewire_telemetry::SampleWindow;

use crate::frame::{Rebased, SourceFrame};
use crate::outrun::OutrunWatch;
use crate::wire::{ViewerCommand, Wire, Work};
use framewire_codec::rect_delta::RectDeltaMaker;

/// Frames remembered for end-to-end figures (ACK id → capture time); older ones are dropped.
const SENT_LOG: usize = 256;
/// Control packets (pongs, commands) that may wait to be written; beyond, pongs are dropped
/// and counted (a viewer that pings faster than it reads).
const CONTROL_QUEUE: usize = 64;
/// Frames sent to a viewer with named bases and not yet acknowledged, kept so the one it
/// acknowledges can be the base of a later delta. The in-flight limit keeps it below this; a
/// viewer that never ACKs costs at most this many pictures.
const RETAINED: usize = 16;
/// A viewer that missed a frame catches up with it when it crosses the path within this long
/// (µs; half a capture interval at 60 fps), else it gets the next frame made for it alone.
pub const CATCH_UP_WITHIN_US: u64 = 8_000;

/// After a frame lost whole on a path whose lost packets are made good
/// ([`HostConfig::datagrams_up_to`]), deltas go against the acknowledged picture for this
/// long (µs), as after a lost packet on a path that does not make them good
/// (`framewire_flow`'s `CLEAN_US`).
pub const FRAMES_CLEAN_US: u64 = 2_000_000;
/// Up to this loss rate (‰ of the packets QUIC sent, [`framewire_flow::LossWatch::recent_loss_permille`])
/// lost packets made good leave deltas chained. Beyond, the path is taken as lossy as any
/// other: at 5 % loss and an 80 ms round trip, with chained deltas the p99 rose to 140–270 ms
/// in one or two runs of three, against about 65 ms before (BENCHMARKS.md, "Chained deltas
/// where lost packets are made good"); once the viewer answered at once frames named against
/// a picture it had given up, still to 92–110 ms in two of three ("Frames named against a
/// picture given up are reported at once").
pub const MADE_GOOD_LOSS_PERMILLE: u64 = 20;

/// After the path's round trip showed a queue that lasted, frames carry [`Repair::Share`] of
/// recovery shards for this long (µs), not the full share. Not the two seconds a queue counts
/// as seen lately: on a link the frames fit with one recovery shard and not with the full
/// share (the synthetic scroll at 2 Mbit/s), the full share is what made the queue, so by that
/// reasoning (a two-second window was not measured) it would make it again every two seconds.
pub const SHARE_AFTER_QUEUE_US: u64 = 10_000_000;

/// How the host treats this viewer.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub limit: InflightLimit,
    pub ack_timeout_us: u64,
    /// A keyframe after this many deltas in a row (0 = never): for viewers that cannot verify
    /// what they hold (Daylight).
    pub refresh_every: u32,
    /// The viewer presented the control token: its input is passed on.
    pub control: bool,
    /// Commands sent right after the first stream description (the Daylight connect order).
    pub initial: Vec<ViewerCommand>,
    /// The transport gives up on frames in flight when one that depends on none of them is
    /// sent (QUIC resets their streams): a viewer with named bases then gets stall probes
    /// (see `framewire_flow::STALL_AFTER_US`). False for one ordered byte stream.
    pub drops_superseded: bool,
    /// A frame on a transport stream of its own may never arrive (QUIC). Deltas for a viewer
    /// with named bases are then made against the picture it acknowledged, unless the path
    /// has lost nothing lately, such deltas are costly, or the frames are too large for
    /// datagrams and lost packets are few ([`HostSession::on_path_counters`]).
    /// On one ordered,
    /// reliable byte stream (TCP, a WebSocket) every frame arrives in order, so deltas go against
    /// the picture sent before: the delta every such viewer shares, and smaller.
    pub frames_may_be_lost: bool,
    /// Frames other than keyframes of up to this many bytes (head and payload) cross as
    /// datagrams with recovery shards (QUIC, `serve --quic-frames datagrams`): a lost packet
    /// loses no such frame as long as its other datagrams make it good. Deltas chained on such
    /// a frame count the path as clean while no frame was lost whole lately (the viewer
    /// reported a missing base) and no more than [`MADE_GOOD_LOSS_PERMILLE`] of the packets
    /// were lost; the viewer reports a frame after a lost one at once. A larger delta, which
    /// goes on a stream, is chained on after a loss as long as no more than that share of
    /// packets was lost and either the loss was answered or no ACK is overdue; a keyframe by
    /// the rule for lost packets.
    pub datagrams_up_to: Option<u64>,
    /// Larger frames, up to this many bytes, cross as datagrams too where the host has
    /// watched the transport's round trip for [`LARGE_DATAGRAMS_WATCH_US`] and no queue lasted
    /// within [`LARGE_DATAGRAMS_QUIET_US`] (`framewire_flow::ViewerFlow::unqueued_for`): a
    /// path that does not queue has no bottleneck for the burst of a large frame's datagrams
    /// to overflow, and there a frame of hundreds of packets no longer waits a round trip for
    /// the one it lost. Elsewhere they go on streams, whose lost packets QUIC sends again
    /// (BENCHMARKS.md, "Large frames as datagrams where the path does not queue"), and so do
    /// frames larger than twice the path's bandwidth-delay product, four times where the path
    /// did not queue lately (`HostSession::within_the_window`), and all for [`crate::outrun::OUTRUN_HOLD_US`] after
    /// the content outran the path while they went as datagrams ([`crate::outrun`]).
    pub large_datagrams_up_to: Option<u64>,
}

/// Frames over [`HostConfig::datagrams_up_to`] go as datagrams only where no queue lasted
/// (`framewire_flow::DeliveryRate::unqueued_for`) for this long (µs): as long as the
/// window bound is kept after any queue seen (`framewire_flow::RATE_WINDOW_US`), but counted
/// from the last queue that lasted.
pub const LARGE_DATAGRAMS_QUIET_US: u64 = framewire_flow::RATE_WINDOW_US;
/// ... and only once the transport's round trip has been watched for this long (µs): before
/// its queue is first seen, a large frame's datagrams burst into a slow path's queue (at
/// 10 Mbit/s, 0–4 frames a cell at the start, without this).
pub const LARGE_DATAGRAMS_WATCH_US: u64 = 500_000;

/// What the viewer sends, in its protocol.
pub enum ViewerReader {
    /// framewire v1, with the bytes already read after its Hello.
    V1(v1::Decoder),
    Daylight(ViewerDecoder),
}

/// Bytes to write, in order: `head` then `payload` (kept apart so a large payload shared by
/// every viewer is never copied).
#[derive(Debug, Clone)]
pub struct Transmit {
    pub head: Bytes,
    pub payload: Option<Bytes>,
    /// It carries a frame (for the send-time figures).
    pub frame: bool,
    /// The frame does not depend on any frame sent before it that is still in flight (a
    /// keyframe, or a delta against a picture the viewer acknowledged): a transport that can
    /// drop frames may give up on those.
    pub independent: bool,
    /// The viewer takes this frame on a transport stream of its own, in any order (it names
    /// bases: it holds a frame until its base arrives). Otherwise frames must keep their order.
    pub own_stream: bool,
    /// The frame is a keyframe. A transport that may lose a frame whole (datagrams) sends it
    /// reliably: a viewer that lost one may have no picture to apply anything else to.
    pub keyframe: bool,
    /// The session asks for the frame to go as datagrams ([`HostConfig::datagrams_up_to`],
    /// [`HostConfig::large_datagrams_up_to`]); a transport without them sends it as any other.
    pub datagrams: bool,
    /// How many recovery shards a transport that makes lost packets good sends with it
    /// ([`HostSession::repair`]).
    pub repair: Repair,
}

/// How many recovery shards a frame that goes as datagrams carries, where the transport makes
/// lost packets good with them (QUIC's `shards::Repair` has the counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Repair {
    /// The path lost nothing lately ([`LossWatch::clean`]): one a frame.
    #[default]
    One,
    /// It lost packets lately (or the transport reported no counters yet) and its round trip
    /// showed a queue that lasted within [`SHARE_AFTER_QUEUE_US`]: a tenth of the originals,
    /// without the one more the full share adds, which is as many bytes again as a frame of
    /// one original and half as many again as one of two.
    Share,
    /// It lost packets lately (or the transport reported no counters yet), and no queue
    /// lasted within [`SHARE_AFTER_QUEUE_US`]: a tenth and one.
    Full,
}

impl Transmit {
    /// Bytes of the control stream (no frame).
    pub fn control(head: Bytes) -> Self {
        Transmit {
            head,
            payload: None,
            frame: false,
            independent: false,
            own_stream: false,
            keyframe: false,
            datagrams: false,
            repair: Repair::One,
        }
    }
}

/// Something the runtime should know or count.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// An ACK measured this round trip (µs).
    Rtt(u64),
    /// Capture → applied at the viewer (µs, on the host's clock).
    EndToEnd(u64),
    /// A frame went out (for the frame trace): the id the viewer will ACK and the checksum of
    /// the picture it will hold.
    FrameSent { ack_id: u64, checksum: u64 },
    /// Input from the viewer; `control` says whether it presented the control token.
    Input {
        kind: InputKind,
        x: i32,
        y: i32,
        code: u32,
        control: bool,
    },
    /// Something the runtime counts.
    Count(HostCount),
    /// A packet that breaks the protocol: the session says goodbye (v1) and ends.
    Rejected(ProtoError),
    /// The viewer said goodbye.
    ViewerLeft { code: u16, reason: String },
}

/// What a host session reports for the runtime's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostCount {
    /// A Daylight delta too small for the app to apply, sent as a keyframe instead.
    DeltaSentAsKeyframe,
    /// The viewer's ACK said its picture's checksum did not match.
    ViewerChecksumMismatch,
    /// The viewer's ACK said it could not decode the frame.
    ViewerDecodeError,
    /// A pong that answered no ping in flight.
    PongDropped,
    /// The viewer could not apply a frame because it lost one before it (named bases); the
    /// next frame is made against the picture it acknowledged.
    BaseMissing,
    /// Large frames went as datagrams while the content outran the path: they go on streams
    /// for [`crate::outrun::OUTRUN_HOLD_US`].
    LargeDatagramsOutrun,
}

pub struct HostSession<W: Wire> {
    wire: W,
    reader: ViewerReader,
    flow: ViewerFlow,
    offset: ClockOffset,
    /// v1 only: pings for the clock offset.
    pings: Option<PingSchedule>,
    sent: VecDeque<(u64, u64)>,
    last_size: Option<(u32, u32)>,
    initial: Vec<ViewerCommand>,
    control: bool,
    /// Bytes to go ahead of the next frame (a stream description and its commands).
    head: BytesMut,
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
    done: bool,
    bases: Retained,
}

/// How the last frame sent to a viewer went (for the rules that look back at it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum LastSent {
    /// None yet, a keyframe, or a frame to a viewer that takes no datagrams.
    #[default]
    Other,
    /// As datagrams; `large`: over `datagrams_up_to`.
    Datagrams { large: bool },
    /// A delta on a stream though the viewer takes datagrams (too large for them, or large
    /// where the path queued lately): it crossed on a stream of its own, where QUIC sends its
    /// lost packets again. `fits`: it could have gone as datagrams were large ones allowed
    /// (up to `large_datagrams_up_to` and within the size limit,
    /// `HostSession::within_the_window`).
    DeltaOnStream { fits: bool },
}

/// What a host keeps for a viewer whose deltas name their base: the frame whose picture the
/// viewer will hold once everything sent arrives, the frames in flight, and the newest one it
/// acknowledged applying.
#[derive(Default)]
struct Retained {
    last: Option<Arc<SourceFrame>>,
    inflight: VecDeque<Arc<SourceFrame>>,
    acknowledged: Option<Arc<SourceFrame>>,
    /// The frame a planned rebased delta is made against, and the delta once made.
    rebase: Option<Arc<SourceFrame>>,
    made: Arc<Mutex<Option<Rebased>>>,
    /// Finds the moves in this viewer's rebased deltas (its anchors kept from one to the
    /// next), when the viewer applies moved-rectangle deltas.
    moved: Arc<Mutex<RectDeltaMaker>>,
    /// The checksum of the picture planned before the frame being sent.
    delta_base: u64,
    /// The seq of the last frame sent that depends on nothing in flight: a viewer reporting a
    /// missing base for an earlier frame is already being repaired.
    repaired_at: u64,
    /// When that frame was sent, until the viewer answers it. Until then, a later frame that
    /// comes back with a missing base may just have overtaken it (a keyframe crossing a slow
    /// link behind the small deltas made against it): the repair still covers it, for
    /// `repair_patience_us`. Another repair would reset the one crossing, and its own deltas
    /// would overtake it in turn.
    repair_unanswered_since: Option<u64>,
    /// How long the repair may take to cross ([`ViewerFlow::crossing_time_us`]).
    repair_patience_us: u64,
    /// Deltas go against the acknowledged picture ([`HostConfig::frames_may_be_lost`])
    /// unless `path_clean`: the path has lost nothing lately and keeps up, or deltas made for
    /// this viewer are costly (`rebase_cost`), or the last frame was too large for datagrams
    /// and at most [`MADE_GOOD_LOSS_PERMILLE`] of the packets were lost, and no unanswered loss
    /// holds a frame up past its
    /// ACK's due time. Then they chain on the frame sent before.
    prefer_acknowledged: bool,
    path: LossWatch,
    /// Frames cross as datagrams made good by recovery shards up to this size
    /// ([`HostConfig::datagrams_up_to`]); whether the last frame sent did; when a frame was
    /// last lost whole.
    datagrams_up_to: Option<u64>,
    large_datagrams_up_to: Option<u64>,
    /// The picture the next shared delta applies to may need a frame still crossing on a
    /// stream: set when a frame goes on a stream (a keyframe too), cleared when one that
    /// needs nothing in flight goes as datagrams, or when the viewer applied that stream's
    /// frame or a later one (`stream_seq`). A large frame goes as datagrams only when
    /// this is clear or it needs nothing in flight itself: QUIC sends datagrams ahead of
    /// stream data, so it would overtake its base (directly, or through the frames chained
    /// between), which may take far longer than the viewer waits for a base (a keyframe of
    /// 400 kB at 10 Mbit/s: 320 ms).
    chain_on_stream: bool,
    /// The seq of the last frame sent on a stream.
    stream_seq: Option<u64>,
    /// How the last frame sent went.
    last_sent: LastSent,
    /// When a frame was last made against the acknowledged picture to bring large frames
    /// back to datagrams: at most once every [`LARGE_DATAGRAMS_QUIET_US`], since that frame
    /// may itself go on a stream (over 2 MiB) and hold them off again.
    forced_at: Option<u64>,
    /// The frames sent after large ones went as datagrams: whether the path carries the
    /// content ([`OutrunWatch`]).
    outrun: OutrunWatch,
    frame_lost_at: Option<u64>,
    /// The seq of the last frame planned when the transport last counted a loss.
    loss_before: u64,
    rebase_cost: RebaseCost,
    path_clean: bool,
}

/// `f` as a delta against `base` for one viewer: with `moved`, moved rectangles.
fn rebased_delta(
    f: &SourceFrame,
    base: &SourceFrame,
    codecs: framewire_codec::rects::Codecs,
    moved: Option<&Mutex<RectDeltaMaker>>,
) -> Rebased {
    let mut maker = moved.map(|m| m.lock().unwrap_or_else(|e| e.into_inner()));
    f.delta_from(base, codecs, maker.as_deref_mut())
}

impl Retained {
    fn bases(&self, f: &SourceFrame) -> Bases {
        let fits = |x: &&Arc<SourceFrame>| {
            x.width == f.width && x.height == f.height && x.planes == f.planes
        };
        Bases {
            reference: self.last.as_ref().filter(fits).map(|x| x.content_id),
            acknowledged: self
                .acknowledged
                .as_ref()
                .filter(fits)
                .map(|x| x.content_id),
            prefer_acknowledged: self.prefer_acknowledged && !self.path_clean,
        }
    }

    fn frame_with(&self, content: u64) -> Option<&Arc<SourceFrame>> {
        [&self.last, &self.acknowledged]
            .into_iter()
            .flatten()
            .find(|x| x.content_id == content)
    }

    /// The viewer ACKed `seq`. An applied frame becomes the acknowledged picture and settles
    /// the frames before it (the viewer applies frames in seq order, so it drops them now). A
    /// frame it could not apply settles only itself: an older one, overtaken, may still come
    /// and apply.
    fn on_ack(&mut self, seq: u64, applied: bool) {
        if seq == self.repaired_at || (applied && seq > self.repaired_at) {
            self.repair_unanswered_since = None;
        }
        if applied && seq > self.loss_before {
            // Sent after the last loss seen, and applied: what was lost has been repaired.
            self.path.answered();
        }
        if !applied {
            self.inflight.retain(|x| x.seq != seq);
            return;
        }
        if self.stream_seq.is_some_and(|s| seq >= s) {
            // The frame on a stream arrived, or was passed over: nothing it holds up is left.
            self.chain_on_stream = false;
        }
        while let Some(x) = self.inflight.front() {
            if x.seq > seq {
                break;
            }
            let x = self.inflight.pop_front().expect("front exists");
            if x.seq == seq {
                self.acknowledged = Some(x);
            }
        }
    }

    /// Frame `seq`, sent at `now`, depends on nothing in flight: it is the repair of any
    /// frame before it, and may take `patience_us` to cross.
    fn repair_sent(&mut self, seq: u64, now: u64, patience_us: u64) {
        self.repaired_at = seq;
        self.repair_unanswered_since = Some(now);
        self.repair_patience_us = patience_us;
    }

    /// Whether a missing base reported for frame `seq` at `now` is covered by the repair
    /// still crossing: within its patience (see [`Retained::repair_unanswered_since`]), or
    /// for as long as it is in flight on a stream of its own (`on_stream`), which only the
    /// viewer's ACK or the ACK timeout settles (each report covered starts that timeout
    /// again, four at most). A keyframe of 2.7 MB was acknowledged 2.3–2.5 s after it was
    /// sent on a 10 Mbit/s path, longer than the patience before any estimate (the ACK
    /// timeout, 2 s): a frame reported behind it after that would have asked for another, to
    /// cross behind the first.
    fn repair_covers(&self, seq: u64, now: u64, on_stream: bool) -> bool {
        seq > self.repaired_at
            && (on_stream
                || self
                    .repair_unanswered_since
                    .is_some_and(|t| now.saturating_sub(t) < self.repair_patience_us))
    }
}

/// How long the newest frame takes to make for a viewer before it can go (µs), when
/// `skipped` frames since the last one planned will have been passed over: a delta made for
/// it alone (the moving average `cost`) where those are costly, unless the one skipped frame
/// is caught up with (`catch_up`, its shared delta, already made); else 0.
fn make_lead(cost: RebaseCost, skipped: u64, catch_up: impl FnOnce() -> bool) -> u64 {
    let made = cost.costly() && (skipped >= 2 || (skipped == 1 && !catch_up()));
    if made {
        cost.avg_us()
    } else {
        0
    }
}

impl<W: Wire> HostSession<W> {
    /// A session for a viewer whose Hello was accepted. Bytes already in `reader` (sent right
    /// behind the Hello) are read at the first [`HostSession::handle_bytes`]; call it with an
    /// empty slice to read them at once.
    pub fn new(wire: W, reader: ViewerReader, cfg: HostConfig) -> Self {
        let pings = matches!(reader, ViewerReader::V1(_)).then(PingSchedule::new);
        let mut flow =
            ViewerFlow::new(cfg.limit, cfg.ack_timeout_us).with_refresh(cfg.refresh_every);
        if wire.names_bases() {
            // A viewer that survives lost frames is one that may be across a real network:
            // its bytes in flight follow the path's delivery rate.
            flow = flow.with_byte_budget();
            if cfg.drops_superseded {
                flow = flow.with_stall_probes();
            }
        }
        let moved = RectDeltaMaker::default().with_predicted(wire.predicted());
        HostSession {
            wire,
            reader,
            flow,
            offset: ClockOffset::new(),
            pings,
            sent: VecDeque::with_capacity(SENT_LOG),
            last_size: None,
            initial: cfg.initial,
            control: cfg.control,
            head: BytesMut::new(),
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            done: false,
            bases: Retained {
                prefer_acknowledged: cfg.frames_may_be_lost,
                datagrams_up_to: cfg.datagrams_up_to,
                large_datagrams_up_to: cfg.large_datagrams_up_to,
                moved: Arc::new(Mutex::new(moved)),
                ..Retained::default()
            },
        }
    }

    /// The session has ended (goodbye, protocol error): write what is queued, then close.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The viewer's flow figures (frames planned, skipped, keyframes, ACK timeouts, …).
    pub fn flow_stats(&self) -> ViewerFlowStats {
        self.flow.stats()
    }

    /// The transport's loss counters at `now` (packets sent and declared lost, each since the
    /// connection began), for a transport that has them (QUIC); call it often (before each
    /// frame is planned). While they show no loss lately ([`LossWatch`]) and the path keeps up
    /// with what was sent ([`ViewerFlow::keeping_up`]: no ACK overdue, no large frame queued),
    /// a viewer whose frames may be lost gets the delta every viewer shares, as on an ordered
    /// stream, not one made for it against the picture it acknowledged. A loss seen, or an
    /// ACK overdue, brings the acknowledged picture back for the next frame. Where deltas made
    /// for this viewer are costly ([`HostSession::on_rebased_made`]), or the last frame was a
    /// delta too large for datagrams (with lost packets few), frames keep chaining
    /// after a loss, and only a frame it holds up past its ACK's due time brings the
    /// acknowledged picture back, once: until the viewer applies a frame planned after the
    /// loss, or a frame that needs nothing in flight is sent.
    pub fn on_path_counters(&mut self, sent_packets: u64, lost_packets: u64, now: u64) {
        let b = &mut self.bases;
        if b.path.on_counters(sent_packets, lost_packets, now) {
            b.loss_before = b.last.as_ref().map_or(0, |x| x.seq);
        }
        self.refresh_path(now);
    }

    /// The delta made for this viewer alone (planned as [`Plan::Rebased`], made by the work
    /// [`HostSession::plan_frame`] returned) took `us` of CPU time to make.
    pub fn on_rebased_made(&mut self, us: u64) {
        self.bases.rebase_cost.on_made(us);
    }

    /// The newest frame captured is `newest`. Where deltas made for this viewer alone are
    /// costly and the newest will be one (the frames since the last one planned were
    /// skipped, and the one before it will not be caught up with), the flow may let it start
    /// being made that long before the path has room for it
    /// ([`ViewerFlow::set_make_lead`]). A frame whose shared delta is made against the
    /// picture planned last (the capture passed over the ones between) needs nothing made.
    pub fn note_newest(&mut self, newest: &FrameInfo) {
        let cost = self.bases.rebase_cost;
        let Some(last) = self.flow.last_planned() else {
            return;
        };
        let planned = self.bases.last.as_ref().map(|x| x.content_id);
        // Made against that picture, or that picture again: nothing to make.
        let skipped = match newest.delta_base {
            Some(b) if Some(b) == planned => 0,
            _ if Some(newest.content_id) == planned => 0,
            _ => newest.seq.saturating_sub(last + 1),
        };
        // Whether the one skipped frame will be caught up with: the last frame planned stands
        // for its size.
        let catch_up = || {
            self.bases
                .last
                .as_ref()
                .is_some_and(|f| self.catches_up_quickly(f))
        };
        self.flow.set_make_lead(make_lead(cost, skipped, catch_up));
    }

    fn refresh_path(&mut self, now: u64) {
        let b = &mut self.bases;
        let few_lost = b.path.recent_loss_permille().unwrap_or(0) <= MADE_GOOD_LOSS_PERMILLE;
        // Where deltas made for this viewer are costly, only a frame stuck behind a lost
        // packet for longer than QUIC's repair takes calls for one; a large frame still
        // crossing, or an ACK late because the viewer is busy applying, does not.
        // A frame too large for datagrams is hundreds of packets, and at 1 % loss nearly
        // every one loses a packet, which QUIC sends again: counted lossy after each, the
        // path made every frame a delta against the acknowledged picture, spanning every frame
        // in flight (the synthetic video in grey, 410 kB frames: 81–96 % of its frames, and 49
        // pictures a second against 57 chained; BENCHMARKS.md). After a loss (up to the bound
        // for made-good packets) such frames chain as costly ones do; with no loss lately, a
        // large frame queued or an ACK late still brings the acknowledged picture back (the
        // rule below), as on a slow link.
        let chain_as_costly = b.rebase_cost.costly()
            || (matches!(b.last_sent, LastSent::DeltaOnStream { .. })
                && !b.path.clean(now)
                && few_lost);
        b.path_clean = if chain_as_costly {
            b.path.settled() || !self.flow.ack_overdue(now)
        } else if matches!(b.last_sent, LastSent::Datagrams { .. }) && few_lost {
            // Lost packets cost no frame here: only a frame lost whole (or an ACK overdue,
            // which is what a lost frame looks like first) makes the path lossy.
            let whole = b
                .frame_lost_at
                .is_none_or(|t| now.saturating_sub(t) >= FRAMES_CLEAN_US);
            whole && self.flow.keeping_up(now)
        } else {
            b.path.clean(now) && self.flow.keeping_up(now)
        };
    }

    /// Whether to offer `previous` before `newest` (see [`ViewerFlow::catches_up_with`]): where
    /// frames chain on the one sent before (one ordered stream, or QUIC while the path is
    /// clean), when `previous`'s payload crosses it within
    /// [`CATCH_UP_WITHIN_US`] at the measured delivery rate. A viewer that fell one frame
    /// behind (an ACK late while other programs had the cores) then gets the two shared
    /// deltas, already made, instead of a delta made again for it alone: on a live video with
    /// predicted rectangles those second encodes were what kept it behind.
    ///
    /// A newest frame that only repeats `previous`'s picture (a 30 fps video captured at 60)
    /// is caught up with however long `previous` takes to cross: a delta made for the viewer
    /// alone against the same base would be `previous`'s shared delta again, as many bytes,
    /// made a second time. (On a colour Mandelbrot zoom across a lossy path, most of the frames
    /// still made for the viewer alone once costly frames were passed over were these.)
    pub fn catches_up_with(&self, newest: &SourceFrame, previous: &SourceFrame) -> bool {
        let repeats = newest.content_id == previous.content_id;
        (!self.bases.prefer_acknowledged || self.bases.path_clean)
            && (repeats || self.catches_up_quickly(previous))
            && self.flow.catches_up_with(&newest.info(), &previous.info())
    }

    /// Whether `previous`'s shared delta crosses the path (at the measured delivery rate; any,
    /// before one is measured) within [`CATCH_UP_WITHIN_US`], or within what a delta made for
    /// this viewer alone costs to make when that is longer: that is the other way, and where
    /// those take longer to make than `previous` takes to cross, the path is the cheaper place
    /// to spend the time.
    fn catches_up_quickly(&self, previous: &SourceFrame) -> bool {
        let bytes = previous.shared_delta().map_or(0, |(p, _)| p.len() as u64);
        let within = CATCH_UP_WITHIN_US.max(self.bases.rebase_cost.avg_us());
        self.flow
            .link_estimate()
            .filter(|e| e.rate_bytes_per_s > 0)
            .is_none_or(|e| e.time_us(bytes) <= within)
    }

    /// What the delivery-rate estimator believes of the path (viewers with named bases).
    pub fn link_estimate(&self) -> Option<framewire_flow::LinkEstimate> {
        self.flow.link_estimate()
    }

    /// The most the transport's congestion window should allow in flight, given the
    /// transport's round trip, at `now`, where the path queued lately (and, for large
    /// frames, a large frame's ACK measured it), with room for the stall probes since the
    /// last ACK (`None`: no bound). See
    /// `framewire_flow::ViewerFlow::window_bound`.
    pub fn window_bound(&mut self, rtt: framewire_flow::TransportRtt, now: u64) -> Option<u64> {
        self.flow.window_bound(rtt, now)
    }

    /// The least the transport's congestion window should allow in flight: the byte budget,
    /// with room for the stall probes since the last ACK where they go on past one budget
    /// (`None`: no least). See
    /// `framewire_flow::ViewerFlow::window_least`.
    pub fn window_least(&self) -> Option<u64> {
        self.flow.window_least()
    }

    /// Its recent round-trip times (µs).
    pub fn rtt_window(&self) -> &SampleWindow {
        self.flow.rtt_window()
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When to call [`HostSession::handle_timeout`] next (µs): the next ping, or the moment
    /// the oldest frame in flight runs out of time for its ACK.
    pub fn poll_timeout(&self) -> Option<u64> {
        let ping = self.pings.as_ref().map(PingSchedule::next_at);
        match (ping, self.flow.next_expiry()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Time passes: pings fall due, ACKs time out.
    pub fn handle_timeout(&mut self, now: u64) {
        if let Some(id) = self.pings.as_mut().and_then(|p| p.poll(now)) {
            self.control_packet(Packet::Ping { id, sent_us: now });
        }
        self.flow.can_send(now);
    }

    /// Whether a new frame may be sent now (the in-flight window has room).
    pub fn can_send(&mut self, now: u64) -> bool {
        !self.done && self.flow.can_send(now)
    }

    /// Decides what `f` becomes for this viewer, and returns compression to do (off the
    /// async workers) before [`HostSession::send_frame`] sends it.
    pub fn plan_frame(&mut self, f: &Arc<SourceFrame>) -> (Plan, Option<Work>) {
        if self.last_size != Some((f.width, f.height)) {
            self.wire.stream_desc(f, &mut self.head);
            self.last_size = Some((f.width, f.height));
            for c in std::mem::take(&mut self.initial) {
                self.wire.command(c, &mut self.head);
            }
            // A new size resets the viewer's picture (the Daylight app zeroes it).
            self.flow.reset_reference();
        }
        if !self.wire.names_bases() {
            let plan = self.flow.plan(&f.info());
            self.flush_head_if(plan);
            return (plan, self.wire.pending_work(f, plan));
        }
        let mut bases = self.bases.bases(f);
        let now = self.flow.clock_us().max(f.capture_us);
        if let Some(last) = self.flow.last_planned().filter(|&l| l < f.seq) {
            // The frames passed over since the last one count only on a path that queued
            // lately: there a bottleneck holds them back, elsewhere the frame limit (at most
            // 1000 / RTT in ms frames in flight), a viewer slow to apply, or a budget still
            // growing on a long round trip (at 200 ms and 1 %, counting every frame passed
            // over, the rule acted three times in 30 s).
            let spanned = match self.flow.path_queued_lately() {
                true => f.seq - last,
                false => 1,
            };
            let b = &mut self.bases;
            let large = b.last_sent == LastSent::Datagrams { large: true };
            if b.outrun.planned(now, spanned, large) {
                self.events
                    .push_back(Event::Count(HostCount::LargeDatagramsOutrun));
            }
        }
        // Large frames may go as datagrams again, but the last went on a stream: this one is
        // made against the acknowledged picture, so it needs nothing in flight and may go so
        // (`forced_at`: not again for a while, if it went on a stream too).
        let force = self.bases.last_sent == (LastSent::DeltaOnStream { fits: true })
            && self.large_datagrams_allowed(now)
            && self
                .bases
                .forced_at
                .is_none_or(|t| now.saturating_sub(t) > LARGE_DATAGRAMS_QUIET_US);
        if force && self.bases.acknowledged.is_some() {
            self.bases.forced_at = Some(now);
        }
        bases.prefer_acknowledged |= force;
        let mut plan = self.flow.plan_with_bases(&f.info(), bases);
        // The picture a rebased delta is made against (the flow chose it from `bases`).
        let from = match plan {
            Plan::Rebased { base } => self.bases.frame_with(base).cloned(),
            _ => None,
        };
        if matches!(plan, Plan::Rebased { .. }) && from.is_none() {
            // Not reachable while the flow only picks from `bases`; a keyframe is always right.
            plan = Plan::Keyframe { forced: true };
        }
        if matches!(plan, Plan::Keyframe { .. }) && self.head.is_empty() {
            // Frames may be lost: each keyframe carries the stream description it needs.
            self.wire.stream_desc(f, &mut self.head);
        }
        self.flush_head_if(plan);
        let b = &mut self.bases;
        if plan == Plan::Nothing {
            return (plan, None);
        }
        // A shared delta applies to the picture planned before this frame.
        b.delta_base = b.last.as_ref().map_or(0, |x| x.checksum);
        b.last = Some(f.clone());
        if b.inflight.len() >= RETAINED {
            b.inflight.pop_front();
        }
        b.inflight.push_back(f.clone());
        let Some(base) = from else {
            return (plan, self.wire.pending_work(f, plan));
        };
        b.rebase = Some(base.clone());
        let (made, f, codecs) = (b.made.clone(), f.clone(), self.wire.codecs());
        let moved = self.wire.rects().then(|| b.moved.clone());
        let work: Work = Box::new(move || {
            let d = rebased_delta(&f, &base, codecs, moved.as_deref());
            *made.lock().unwrap_or_else(|e| e.into_inner()) = Some(d);
        });
        (plan, Some(work))
    }

    /// A stream description waiting for a frame goes out alone when no frame follows.
    fn flush_head_if(&mut self, plan: Plan) {
        if plan == Plan::Nothing && !self.head.is_empty() {
            let head = self.head.split().freeze();
            self.transmits.push_back(Transmit::control(head));
        }
    }

    /// Sends `f` as planned.
    pub fn send_frame(&mut self, now: u64, f: &SourceFrame, plan: Plan) {
        let mut independent = matches!(plan, Plan::Keyframe { .. });
        let out = match plan {
            Plan::Nothing => return,
            Plan::Unchanged => {
                // Naming the picture the viewer acknowledged, it needs nothing in flight.
                independent = self
                    .bases
                    .acknowledged
                    .as_ref()
                    .is_some_and(|a| a.checksum == f.checksum);
                self.wire.unchanged(f, &mut self.head)
            }
            Plan::Rebased { .. } => {
                let base = self.bases.rebase.take().expect("planned with its base");
                let made = self.bases.made.lock().map(|mut m| m.take()).ok().flatten();
                // Made by the planned work, off the async workers; made here only if that
                // work was not run.
                let delta = made.unwrap_or_else(|| {
                    let moved = self.wire.rects().then_some(&*self.bases.moved);
                    rebased_delta(f, &base, self.wire.codecs(), moved)
                });
                independent = self
                    .bases
                    .acknowledged
                    .as_ref()
                    .is_some_and(|a| a.content_id == base.content_id);
                self.wire.rebased(f, base.checksum, delta, &mut self.head)
            }
            Plan::Delta => {
                let out = self.wire.delta(f, self.bases.delta_base, &mut self.head);
                if out.keyframe {
                    self.events
                        .push_back(Event::Count(HostCount::DeltaSentAsKeyframe));
                }
                out
            }
            Plan::Keyframe { .. } => self.wire.keyframe(f, &mut self.head).0,
        };
        let bytes = (self.head.len() + out.payload.as_ref().map_or(0, |p| p.len())) as u64;
        // The next delta may chain on this one whatever packets are lost only if it crosses
        // as datagrams (see `HostConfig::datagrams_up_to`).
        // A shared delta against the picture the viewer acknowledged needs nothing in flight
        // either (the viewer keeps up).
        let on_acknowledged = plan == Plan::Delta
            && self
                .bases
                .acknowledged
                .as_ref()
                .is_some_and(|a| a.checksum == self.bases.delta_base);
        let free = independent || on_acknowledged;
        let datagrams = !out.keyframe && self.as_datagrams(bytes, free, now);
        if !datagrams {
            self.bases.chain_on_stream = true;
            self.bases.stream_seq = Some(f.seq);
        } else if free {
            self.bases.chain_on_stream = false;
        }
        let small = self.bases.datagrams_up_to;
        self.bases.last_sent = if datagrams {
            LastSent::Datagrams {
                large: small.is_some_and(|max| bytes > max),
            }
        } else if !out.keyframe && small.is_some() {
            // Not as datagrams, so over `datagrams_up_to`.
            LastSent::DeltaOnStream {
                fits: self.large_fits(bytes),
            }
        } else {
            LastSent::Other
        };
        if independent {
            // The transport gives up on the frames before it (QUIC resets their streams).
            self.flow.on_superseded();
            let patience = self.flow.crossing_time_us(bytes);
            self.bases.repair_sent(f.seq, now, patience);
            // It needs nothing in flight, so no frame waiting for a lost packet.
            self.bases.path.answered();
            self.refresh_path(now);
        }
        if let Some(id) = out.ack_id {
            // A keyframe, never in datagrams, to a viewer that names bases, is delivered however
            // many frames overtake it: a QUIC stream of its own, or TCP (where none does).
            // Only keyframes: with every frame on a stream so marked, the colour browser page
            // at 80 ms and 1 % showed a p99 of 171–322 ms in 5 of 14 runs, against 60–83 in
            // 10 of 10 (BENCHMARKS.md, "An overtaken keyframe stays in flight").
            if out.keyframe && self.wire.names_bases() {
                self.flow.on_sent_on_own_stream(id, bytes, now);
            } else {
                self.flow.on_sent(id, bytes, now);
            }
            if self.sent.len() >= SENT_LOG {
                self.sent.pop_front();
            }
            self.sent.push_back((id, f.capture_us));
            self.events.push_back(Event::FrameSent {
                ack_id: id,
                checksum: f.checksum,
            });
        }
        if self.head.is_empty() && out.payload.is_none() {
            return;
        }
        self.transmits.push_back(Transmit {
            head: self.head.split().freeze(),
            payload: out.payload,
            frame: true,
            independent,
            own_stream: self.wire.names_bases(),
            keyframe: out.keyframe,
            datagrams,
            repair: self.repair(now),
        });
    }

    /// How many recovery shards a frame sent at `now` carries ([`Repair`]). Full where the
    /// path lost packets lately, unless its round trip showed a queue that lasted within
    /// [`SHARE_AFTER_QUEUE_US`]: there the losses may be the queue's own drops (a
    /// bottleneck's queue overflowing as QUIC's window grows), and the shards' bytes wait in
    /// front of every frame behind them.
    pub fn repair(&self, now: u64) -> Repair {
        if self.bases.path.clean(now) {
            Repair::One
        } else if self.flow.queue_held_within(SHARE_AFTER_QUEUE_US, now) {
            Repair::Share
        } else {
            Repair::Full
        }
    }

    /// Whether a frame of `bytes` (not a keyframe) goes as datagrams at `now`: up to
    /// [`HostConfig::datagrams_up_to`] always, up to [`HostConfig::large_datagrams_up_to`]
    /// where they are allowed ([`HostSession::large_datagrams_allowed`]), the frame is within
    /// twice the path's bandwidth-delay product, or four times where the path did not queue
    /// lately ([`HostSession::within_the_window`]), and
    /// nothing the frame applies to may still be crossing on a stream, or the frame is `free`
    /// (it needs nothing in flight).
    fn as_datagrams(&self, bytes: u64, free: bool, now: u64) -> bool {
        let b = &self.bases;
        if b.datagrams_up_to.is_some_and(|max| bytes <= max) {
            return true;
        }
        (free || !b.chain_on_stream) && self.large_datagrams_allowed(now) && self.large_fits(bytes)
    }

    /// A frame over `datagrams_up_to` of `bytes` is small enough to go as datagrams: up to
    /// [`HostConfig::large_datagrams_up_to`] and within the size limit
    /// ([`HostSession::within_the_window`]).
    fn large_fits(&self, bytes: u64) -> bool {
        self.bases
            .large_datagrams_up_to
            .is_some_and(|max| bytes <= max)
            && self.within_the_window(bytes)
    }

    /// A large frame goes as datagrams only if it is no larger than twice the path's
    /// bandwidth-delay product, as estimated, over the minimum RTT and 5 ms
    /// (`framewire_flow::LinkEstimate::burst_bytes`): about the window the host bounds
    /// QUIC's to where the path queues. Its datagrams go at once, where a larger frame's
    /// overflow a bottleneck's queue before its first ACK can slow them. A colour Mandelbrot zoom of 1.5 MB a frame
    /// at 50 Mbit/s (2 × BDP: 250 kB at 20 ms), whose large frames went as datagrams now and
    /// then where the queue under the bound did not last, lost 634–2078 packets to the rate
    /// limit a run and showed 1.0–2.2 pictures a second against TCP's 3.3–3.8 (BENCHMARKS.md,
    /// "Large datagrams where the content outruns the path"). On a lossy unlimited path the
    /// product stays above the video's 450 kB even where streams held the estimate down (37
    /// Mbit/s at 80 ms and 5 %: 790 kB), and at 1 ms the 5 ms keep it there (without them, 220
    /// kB). Before the first estimate, no large frame goes as datagrams.
    ///
    /// Where the path did not queue lately (`framewire_flow::ViewerFlow::path_queued_lately`),
    /// the limit is twice as large. There the estimate may be held down: on a lossy path,
    /// frames on streams wait a round trip for each lost packet and their samples fall well
    /// below the path, and the limit kept the frames that would have avoided that wait on
    /// streams. A colour Mandelbrot zoom on an unlimited 80 ms path with 5 % loss, whose round
    /// trip never showed a queue, had the limit at 0.5–1.5 MB for frames of 1.4–1.7 MB, and
    /// sent 1 of its 32 frames as datagrams (a trace of 94b89a1, not kept). Not lifted
    /// altogether: a path can show no queue yet (a calm start, a pause of 2 s) and still have
    /// a bottleneck behind it.
    fn within_the_window(&self, bytes: u64) -> bool {
        self.flow.link_estimate().is_some_and(|e| {
            let limit = match self.flow.path_queued_lately() {
                true => e.burst_bytes(),
                false => 2 * e.burst_bytes(),
            };
            e.rate_bytes_per_s > 0 && bytes <= limit
        })
    }

    /// Frames over [`HostConfig::datagrams_up_to`] may go as datagrams at `now`: the
    /// transport takes them, the path has been watched for [`LARGE_DATAGRAMS_WATCH_US`], no
    /// queue lasted within [`LARGE_DATAGRAMS_QUIET_US`], and the content did not outrun the
    /// path while they went so lately ([`OutrunWatch`]).
    fn large_datagrams_allowed(&self, now: u64) -> bool {
        self.bases.large_datagrams_up_to.is_some()
            && self.bases.outrun.allows(now)
            && self
                .flow
                .unqueued_for(LARGE_DATAGRAMS_WATCH_US, LARGE_DATAGRAMS_QUIET_US, now)
    }

    /// A display command for the viewer.
    pub fn command(&mut self, c: ViewerCommand) {
        let mut b = BytesMut::new();
        self.wire.command(c, &mut b);
        if !b.is_empty() {
            self.transmits.push_back(Transmit::control(b.freeze()));
        }
    }

    /// Bytes from the viewer.
    pub fn handle_bytes(&mut self, now: u64, data: &[u8]) {
        if self.done {
            return;
        }
        match &mut self.reader {
            ViewerReader::V1(d) => d.feed(data),
            ViewerReader::Daylight(d) => d.feed(data),
        }
        while !self.done {
            match &mut self.reader {
                ViewerReader::V1(d) => match d.next_packet() {
                    Ok(Some(p)) => self.on_v1_packet(now, p),
                    Ok(None) => return,
                    Err(e) => self.reject(e, None),
                },
                ViewerReader::Daylight(d) => match d.next_packet() {
                    Ok(Some(ViewerPacket::Ack { seq })) => self.on_daylight_ack(now, seq),
                    Ok(None) => return,
                    Err(e) => self.reject(e, None),
                },
            }
        }
    }

    fn on_v1_packet(&mut self, now: u64, p: Packet) {
        match p {
            Packet::Ack {
                seq,
                status,
                recv_us,
                applied_us,
                ..
            } => {
                // How long the viewer held the frame (its own clock, no offset needed): the
                // delivery rate is timed from the frame's arrival. 0 from a viewer that did
                // not say.
                let held = match recv_us {
                    0 => 0,
                    r => applied_us.saturating_sub(r),
                };
                self.bases.on_ack(seq, status == AckStatus::Applied);
                if status == AckStatus::BaseMissing {
                    // Frames sent before the last repair fail too, and so may frames after
                    // it while it is crossing: that repair covers them.
                    let repaired_at = self.bases.repaired_at;
                    if seq >= repaired_at
                        && !self.bases.repair_covers(
                            seq,
                            now,
                            self.flow.crossing_on_own_stream(repaired_at),
                        )
                    {
                        self.events.push_back(Event::Count(HostCount::BaseMissing));
                        self.bases.frame_lost_at = Some(now);
                        self.refresh_path(now);
                        if seq == self.bases.repaired_at && self.bases.acknowledged.is_some() {
                            // The repair itself, made against the picture the viewer
                            // acknowledged, found no base: the viewer no longer holds that
                            // picture (a newer keyframe replaced it), so frames made against
                            // it would all fail.
                            self.bases.acknowledged = None;
                            self.flow.acknowledged_lost();
                        } else {
                            self.flow.base_missing();
                        }
                    }
                    self.ack(now, seq, held, true);
                    return;
                }
                if self.ack(now, seq, held, false).is_some() {
                    let local = self.offset.to_local(applied_us);
                    if let (Some(cap), Some(applied)) = (self.capture_time(seq), local) {
                        self.events
                            .push_back(Event::EndToEnd(applied.saturating_sub(cap)));
                    }
                }
                if status != AckStatus::Applied {
                    self.events.push_back(Event::Count(match status {
                        AckStatus::ChecksumMismatch => HostCount::ViewerChecksumMismatch,
                        _ => HostCount::ViewerDecodeError,
                    }));
                    self.flow.request_keyframe();
                }
            }
            Packet::KeyframeRequest { .. } => self.flow.request_keyframe(),
            Packet::Input { kind, x, y, code } => self.events.push_back(Event::Input {
                kind,
                x,
                y,
                code,
                control: self.control,
            }),
            Packet::Ping { id, sent_us } => {
                if self.transmits.len() >= CONTROL_QUEUE {
                    self.events.push_back(Event::Count(HostCount::PongDropped));
                } else {
                    self.control_packet(Packet::Pong {
                        id,
                        ping_sent_us: sent_us,
                        reply_us: now,
                    });
                }
            }
            Packet::Pong {
                ping_sent_us,
                reply_us,
                ..
            } => {
                self.offset.sample(ping_sent_us, reply_us, now);
                self.flow.on_path_rtt(now.saturating_sub(ping_sent_us), now);
            }
            Packet::Goodbye { code, reason } => {
                self.events.push_back(Event::ViewerLeft { code, reason });
                self.done = true;
            }
            other => {
                let reason = format!(
                    "unexpected {} packet from a viewer",
                    v1::kind_name(other.type_byte())
                );
                let e = ProtoError::InvalidField {
                    field: "packet",
                    why: "not expected from a viewer",
                };
                self.reject(e, Some(reason));
            }
        }
    }

    fn on_daylight_ack(&mut self, now: u64, seq: u32) {
        if let Some(rtt) = self.ack(now, seq as u64, 0, false) {
            // The Daylight ACK has no timestamps: the best estimate of capture → applied is the
            // time to send plus half the round trip.
            if let Some(cap) = self.capture_time(seq as u64) {
                let sent_at = now - rtt;
                self.events
                    .push_back(Event::EndToEnd(sent_at.saturating_sub(cap) + rtt / 2));
            }
        }
    }

    /// Settles an ACK the viewer sent `held` µs after frame `id` arrived, in the flow; its
    /// RTT if it was in flight or among the last frames given up on (a late ACK).
    /// `overtaking`: the frame arrived before its base, and a keyframe before it on a stream of
    /// its own is still crossing ([`ViewerFlow::on_ack_overtaking`]).
    fn ack(&mut self, now: u64, id: u64, held: u64, overtaking: bool) -> Option<u64> {
        let outcome = if overtaking {
            self.flow.on_ack_overtaking(id, now, held)
        } else {
            self.flow.on_ack_held(id, now, held)
        };
        match outcome {
            AckOutcome::Rtt(rtt) => {
                self.events.push_back(Event::Rtt(rtt));
                Some(rtt)
            }
            // Counted in the flow figures (`unknown_acks`).
            AckOutcome::Unknown => None,
        }
    }

    /// The capture time of frame `id`. Earlier entries are settled; an ACK older than every
    /// entry (a frame that overtaken frames were ACKed before) settles none.
    fn capture_time(&mut self, id: u64) -> Option<u64> {
        while let Some(&(i, c)) = self.sent.front() {
            if i > id {
                return None;
            }
            self.sent.pop_front();
            if i == id {
                return Some(c);
            }
        }
        None
    }

    fn control_packet(&mut self, p: Packet) {
        self.transmits.push_back(Transmit::control(p.to_bytes()));
    }

    /// Ends the session on a protocol error: v1 viewers are told why in a Goodbye.
    fn reject(&mut self, e: ProtoError, reason: Option<String>) {
        if let ViewerReader::V1(_) = self.reader {
            let reason = reason.unwrap_or_else(|| e.to_string());
            self.control_packet(Packet::Goodbye {
                code: goodbye::PROTOCOL_ERROR,
                reason,
            });
        }
        self.events.push_back(Event::Rejected(e));
        self.done = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_frame_made_for_the_viewer_alone_starts_early() {
        let mut costly = RebaseCost::default();
        for _ in 0..40 {
            costly.on_made(54_000);
        }
        let avg = costly.avg_us();
        assert!(costly.costly() && avg > 50_000, "{avg}");
        // Nothing skipped: the next frame is the shared delta, already made.
        assert_eq!(make_lead(costly, 0, || false), 0);
        // One skipped: made for the viewer unless it is caught up with.
        assert_eq!(make_lead(costly, 1, || false), avg);
        assert_eq!(make_lead(costly, 1, || true), 0);
        // Two or more: always made for it.
        assert_eq!(make_lead(costly, 2, || true), avg);
        // Cheap deltas start when the path has room, as before.
        let mut cheap = RebaseCost::default();
        cheap.on_made(3_000);
        assert_eq!(make_lead(cheap, 5, || false), 0);
    }
}
