//! One viewer's flow state: what it holds, what is in flight, how fast it acknowledges, and
//! what the next frame offered to it becomes.
//!
//! The fixes to the Daylight host's defects live here:
//! - every viewer has its own reference (the content it will hold once everything sent is
//!   applied); it only advances when a payload that produces it is actually planned, so a
//!   skipped frame never desynchronises a viewer (defect 2);
//! - a new viewer gets a keyframe of the *current* frame, never a cached one (defect 1);
//! - in-flight counts and RTT windows are per viewer and never reset by others (defect 4);
//! - an unchanged frame is never compressed (defect 5): the plan says `Unchanged`.

use std::collections::VecDeque;

use framewire_telemetry::SampleWindow;

use crate::rate::{make_room, GIVEN_UP, SMALL_FRAMES_FLOOR};
use crate::{DeliveryRate, InflightLimit, LinkEstimate, TransportRtt};

/// The frame-count limit of a viewer whose bytes in flight are budgeted from its delivery rate
/// (the byte budget is the real limit). At most 8: such a viewer keeps its last 10 pictures,
/// and deltas are made against the newest it acknowledged, which is at most this many frames
/// behind. A base it is sent a frame against again counts as its newest kept picture, so the
/// pictures applied before that restore outlast one picture fewer after it: a margin of one
/// over this limit, not two.
const BUDGETED_LIMIT: InflightLimit = InflightLimit {
    min: 2,
    max: 8,
    budget_ms: 1000.0,
    initial_rtt_ms: 15.0,
};

/// What the host knows about a frame it offers to viewers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameInfo {
    /// Source frame number (grows by one per capture).
    pub seq: u64,
    /// Identifies the picture's content: the seq of the frame where this exact picture first
    /// appeared. Unchanged frames keep their predecessor's content id.
    pub content_id: u64,
    /// The content the frame's shared delta payload applies to, if it has one.
    pub delta_base: Option<u64>,
    /// The frame's shared payload is a keyframe (the first, or a periodic one).
    pub keyframe: bool,
}

/// What to send a viewer for one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// The whole picture. `forced` when the viewer's reference was behind (it skipped frames
    /// or asked), as opposed to a new viewer's first frame.
    Keyframe { forced: bool },
    /// The delta shared by every viewer that holds `delta_base`.
    Delta,
    /// The viewer already holds this picture.
    Unchanged,
    /// A delta made for this viewer alone against `base` (a content id), a picture it holds
    /// or will hold once what was sent arrives: instead of a keyframe, for a viewer whose
    /// deltas name their base.
    Rebased { base: u64 },
    /// This frame (or a newer one) was already planned.
    Nothing,
}

/// Pictures a host still has for a viewer whose deltas name their base (content ids).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bases {
    /// The picture the viewer will hold once everything sent to it arrives (the last planned).
    pub reference: Option<u64>,
    /// The newest picture the viewer acknowledged applying.
    pub acknowledged: Option<u64>,
    /// Make every delta against the acknowledged picture, when the picture planned before is
    /// not acknowledged yet (the viewer keeps the pictures it applied): a frame then never
    /// waits for one before it that was lost or is late.
    pub prefer_acknowledged: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ViewerFlowStats {
    pub frames_planned: u64,
    pub keyframes: u64,
    pub forced_keyframes: u64,
    pub deltas: u64,
    pub unchanged: u64,
    /// Frames captured while this viewer was at its in-flight limit (superseded by newer ones).
    pub skipped: u64,
    pub acks: u64,
    /// ACKs for frames that were neither in flight nor among the last frames given up on:
    /// already settled by the ACK of a frame that overtook them (rebuilt from datagrams, or on
    /// a stream, after a later one arrived), or a confused or hostile viewer.
    pub unknown_acks: u64,
    /// In-flight frames given up on after `ack_timeout_us` without an ACK.
    pub ack_timeouts: u64,
    /// ACKs that came for frames given up on ([`ViewerFlow::on_ack_held`]): late, not lost.
    pub late_acks: u64,
    pub keyframe_requests: u64,
    /// Keyframes sent only because `refresh_every` deltas had gone by.
    pub refresh_keyframes: u64,
    /// Deltas made for this viewer against a picture it holds, where a viewer without named
    /// bases gets a keyframe (it skipped frames, or lost one).
    pub rebased: u64,
    /// Of those, deltas against the picture it acknowledged: a frame reported missing, or a
    /// path not counted clean (a loss lately, a large frame queued, an ACK overdue). The
    /// others followed a skip or were stall probes (`stall_probes` also counts a probe that
    /// went as Unchanged).
    pub rebased_acknowledged: u64,
    /// Frames the viewer could not apply because a frame before them was lost (ACK status 3).
    pub bases_missing: u64,
    /// Frames sent beyond the byte budget while the viewer's ACKs had stopped, made against
    /// the picture it acknowledged (see [`STALL_AFTER_US`]).
    pub stall_probes: u64,
    /// Keyframes sent because the viewer could not apply a frame made against the picture it
    /// acknowledged: it no longer holds that picture.
    pub acknowledged_lost: u64,
    /// Frames in flight that an ACK for a later frame passed before their own came: lost,
    /// superseded, or overtaken by a frame that did not need them.
    pub unacked_passed: u64,
}

// Both functions take the struct apart with a pattern that has no `..`: a field added to the
// struct and not here fails to compile, so neither `/metrics` nor the totals can miss it.
impl ViewerFlowStats {
    /// Each figure by name (the names `/metrics` uses), in declaration order.
    pub fn fields(&self) -> [(&'static str, u64); 18] {
        let ViewerFlowStats {
            frames_planned,
            keyframes,
            forced_keyframes,
            deltas,
            unchanged,
            skipped,
            acks,
            unknown_acks,
            ack_timeouts,
            late_acks,
            keyframe_requests,
            refresh_keyframes,
            rebased,
            rebased_acknowledged,
            bases_missing,
            stall_probes,
            acknowledged_lost,
            unacked_passed,
        } = *self;
        [
            ("frames_planned", frames_planned),
            ("keyframes", keyframes),
            ("forced_keyframes", forced_keyframes),
            ("deltas", deltas),
            ("unchanged", unchanged),
            ("skipped", skipped),
            ("acks", acks),
            ("unknown_acks", unknown_acks),
            ("ack_timeouts", ack_timeouts),
            ("late_acks", late_acks),
            ("keyframe_requests", keyframe_requests),
            ("refresh_keyframes", refresh_keyframes),
            ("rebased", rebased),
            ("rebased_acknowledged", rebased_acknowledged),
            ("bases_missing", bases_missing),
            ("stall_probes", stall_probes),
            ("acknowledged_lost", acknowledged_lost),
            ("unacked_passed", unacked_passed),
        ]
    }

    /// Adds another viewer's figures to these (totals that survive viewers leaving).
    pub fn add(&mut self, o: &ViewerFlowStats) {
        let ViewerFlowStats {
            frames_planned,
            keyframes,
            forced_keyframes,
            deltas,
            unchanged,
            skipped,
            acks,
            unknown_acks,
            ack_timeouts,
            late_acks,
            keyframe_requests,
            refresh_keyframes,
            rebased,
            rebased_acknowledged,
            bases_missing,
            stall_probes,
            acknowledged_lost,
            unacked_passed,
        } = *o;
        self.frames_planned += frames_planned;
        self.keyframes += keyframes;
        self.forced_keyframes += forced_keyframes;
        self.deltas += deltas;
        self.unchanged += unchanged;
        self.skipped += skipped;
        self.acks += acks;
        self.unknown_acks += unknown_acks;
        self.ack_timeouts += ack_timeouts;
        self.late_acks += late_acks;
        self.keyframe_requests += keyframe_requests;
        self.refresh_keyframes += refresh_keyframes;
        self.rebased += rebased;
        self.rebased_acknowledged += rebased_acknowledged;
        self.bases_missing += bases_missing;
        self.stall_probes += stall_probes;
        self.acknowledged_lost += acknowledged_lost;
        self.unacked_passed += unacked_passed;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckOutcome {
    /// RTT of the acknowledged frame, µs.
    Rtt(u64),
    Unknown,
}

/// A frame sent and not yet acknowledged.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    seq: u64,
    sent_us: u64,
    /// On a transport stream of its own: it arrives unless the host gives up on it, however
    /// many frames overtake it ([`ViewerFlow::on_sent_on_own_stream`]).
    own_stream: bool,
    /// Its ACK timeout counts from here: when it was sent, or when a frame that overtook it
    /// was acknowledged (the viewer answers: the frame is slow, not lost), but for no longer
    /// than [`OWN_STREAM_TIMEOUTS`] ACK timeouts in all.
    alive_us: u64,
}

#[derive(Debug, Clone)]
pub struct ViewerFlow {
    limit: InflightLimit,
    ack_timeout_us: u64,
    inflight: VecDeque<InFlight>,
    /// The last [`GIVEN_UP`] frames given up on after the ACK timeout, (seq, sent), oldest
    /// first: an ACK that comes for one later is a sample all the same
    /// ([`ViewerFlow::settle_late`]).
    given_up: VecDeque<(u64, u64)>,
    rtt_us: SampleWindow,
    reference: Option<u64>,
    keyframe_requested: bool,
    /// The viewer lost a frame: the next is made against the picture it acknowledged.
    rebase_requested: bool,
    last_seq: Option<u64>,
    /// A keyframe after this many deltas in a row (0 = never): for viewers that cannot
    /// verify what they hold (Daylight). Viewers that verify checksums ask when they need one.
    refresh_every: u32,
    deltas_since_key: u32,
    stats: ViewerFlowStats,
    /// Bytes in flight budgeted from the delivery rate, for viewers that have it.
    bytes: Option<DeliveryRate>,
    /// A stall probe may go at or after this moment (µs).
    next_probe_us: u64,
    /// When [`ViewerFlow::can_send`] allowed a frame only as a stall probe: the next plan is
    /// made against the acknowledged picture.
    probe_allowed: Option<u64>,
    /// Stall probes are on (see [`ViewerFlow::with_stall_probes`]).
    probes_on: bool,
    /// The frame being planned is a stall probe (set by the plan, read by `on_sent`).
    probing: bool,
    /// Bytes sent as stall probes since the last ACK.
    probe_bytes: u64,
    /// When the first of those was sent (µs), and the largest of them (bytes).
    probes_since_us: Option<u64>,
    probe_largest: u64,
    /// The seq of the last stall probe sent ([`ViewerFlow::stall_probe_at`]); what it weighs
    /// and when it was to be across are the delivery-rate estimator's while it is in flight.
    probe_seq: Option<u64>,
    /// When the byte budget's queue-ahead rule will let the frame it refused go
    /// ([`DeliveryRate::room_at`]), for [`ViewerFlow::next_expiry`].
    room_wake_us: Option<u64>,
    /// When the next stall probe may go, if that is still to come (a moment already past
    /// would wake the host again at once, with no frame to send).
    probe_wake_us: Option<u64>,
}

/// A viewer with a byte budget whose ACKs stopped (a blackout, a Wi-Fi hiccup) while frames
/// are in flight is *stalled* once its oldest frame in flight is older than its minimum RTT,
/// plus the time that frame takes to cross at the measured delivery rate (after the frames
/// that were still crossing ahead of it when it was sent), plus [`STALL_AFTER_US`], and, when
/// large frames queue on the path ([`DeliveryRate::path_busy_until_us`]), the path has had
/// that long after it was estimated to have carried every frame in flight: a large frame
/// queued behind others, probes among them, is not stalled (the onset only; once probing,
/// probes are paced as follows). From then on, one frame every [`PROBE_EVERY_US`] goes beyond
/// the budget, made against the picture the viewer acknowledged. The probes since the last ACK
/// may cost one byte budget at once, and beyond it (unless they stop, below) no more than the
/// measured delivery rate over the time since the first of them: a long
/// blackout gets probes at about the rate the path carried, so one crosses soon after the
/// path comes back (had they stopped, the next frame would wait for the transport's probe
/// timeout). Where a probe takes longer to cross than [`PROBE_EVERY_US`] (and, if it is at
/// most [`SMALL_PROBE_BYTES`], a round trip at a rate that is surely the path's), and is larger than half the budget (a video on a
/// slow path, whose frames take a round trip or more to cross)
/// or crosses a path that limits what is sent ([`DeliveryRate::path_limits`]), a
/// stall is more likely a frame still crossing than a blackout, and a newer probe would only
/// supersede one about to arrive: one budget of probes is all it gets, and each such probe
/// waits until the one before it is overdue itself ([`ViewerFlow::stall_probe_at`]).
/// A probe needs none of the frames lost in the blackout, and
/// the transport gives up on those (see [`ViewerFlow::with_stall_probes`]). The first probe to
/// cross when the path comes back makes the picture exact. Without probes, the viewer waits
/// for the transport's own probes (whose timeout doubles with each one lost) and the repair of
/// every frame behind them.
pub const STALL_AFTER_US: u64 = 60_000;
/// A frame's ACK is overdue this long (µs) after its bytes at the delivery rate and a minimum
/// RTT would bring it: one capture interval at 60 fps ([`ViewerFlow::keeping_up`]).
pub const OVERDUE_AFTER_US: u64 = 17_000;
pub const PROBE_EVERY_US: u64 = 25_000;
/// A stall probe of at most this many bytes (64 KiB, the small frames' floor of `rate.rs`) is
/// taken for one that crosses slower than the time between probes
/// ([`ViewerFlow::stall_probe_at`]) only where it also takes longer than a minimum round trip
/// to cross. Such a frame goes as datagrams (up to 128 KiB), so a newer probe never makes the transport give up on it. And where the
/// delivery rate is the content's, a small frame "takes" longer than that at the rate only
/// because the content sends little. In a traced run (the trace not kept), a scroll's probe
/// of 7.7 kB at an estimated 286 kB/s (an unlimited 80 ms path, 5 % loss) took 27 ms by it,
/// the next probe waited 172 ms for it to be overdue, and the picture was exact again 150 ms
/// after the blackout, over target 4's 113 (BENCHMARKS.md, "Small stall probes go on"). As
/// much as this crosses a 10 Mbit/s link in 52 ms; on a path of 1–2 Mbit/s it takes a
/// quarter to half a second, longer than most round trips, and the rules for slow probes
/// hold (not measured there). Nor is a small probe slow where the estimate is not surely
/// the path's ([`DeliveryRate::rate_is_paths`]): there it may be the content's, and at
/// typing's 3.7 kB/s a probe of 335 bytes "took" 91 ms, longer than an 80 ms round trip
/// (BENCHMARKS.md, "Typing's rate is not the path's").
pub const SMALL_PROBE_BYTES: u64 = SMALL_FRAMES_FLOOR;

/// A probe of `bytes` takes longer to cross at the estimate `e` than the time between probes
/// (and, at most [`SMALL_PROBE_BYTES`], than a round trip, where the estimate is surely the
/// path's rate, [`DeliveryRate::rate_is_paths`]): see [`STALL_AFTER_US`] and
/// [`SMALL_PROBE_BYTES`].
fn slow_probe(e: &LinkEstimate, b: &DeliveryRate, bytes: u64) -> bool {
    let t = e.time_us(bytes);
    t > PROBE_EVERY_US && (bytes > SMALL_PROBE_BYTES || (t > e.min_rtt_us && b.rate_is_paths()))
}

/// Stall probes whose largest is `largest` get one byte budget of them and no more: they are
/// slow ([`slow_probe`]) and either over half the budget or on a path that limits what is
/// sent ([`DeliveryRate::path_limits`]). Others go on past one budget, paced by the delivery
/// rate ([`STALL_AFTER_US`]).
fn stop_at_one_budget(e: &LinkEstimate, b: &DeliveryRate, largest: u64) -> bool {
    slow_probe(e, b, largest) && (2 * largest > e.budget_bytes || b.path_limits())
}

/// ACK timeouts after which a frame on a stream of its own is given up on whatever the
/// viewer answers, and after which, given up on, it no longer counts in the bytes in flight
/// ([`DeliveryRate::forget`]). Such a frame is not lost (the transport delivers it unless the
/// host gives up on it); given up on after one timeout (which lets the host send again: a
/// viewer at fault, or a frame the tests' harness drops), its bytes are still on the path.
/// Before the first estimate the Mandelbrot zoom at 10 Mbit/s sent a keyframe of 2.7 MB and a
/// frame of 1.5 MB behind it (the first frames allowed), acknowledged 2.5 and 3.4 s later.
/// Given up on at 2 s, their bytes left the budget: two more frames went, queued behind them
/// and were given up on in turn, and frames took 2.8 s to be shown instead of 1.4 for the
/// whole run (BENCHMARKS.md, "An overtaken keyframe stays in flight"). The host marks only
/// keyframes so: the delta behind it still leaves the budget, and one frame goes in its place.
const OWN_STREAM_TIMEOUTS: u64 = 4;

impl ViewerFlow {
    pub fn new(limit: InflightLimit, ack_timeout_us: u64) -> Self {
        ViewerFlow {
            limit,
            ack_timeout_us,
            inflight: VecDeque::new(),
            given_up: VecDeque::new(),
            rtt_us: SampleWindow::new(150),
            reference: None,
            keyframe_requested: false,
            rebase_requested: false,
            last_seq: None,
            refresh_every: 0,
            deltas_since_key: 0,
            stats: ViewerFlowStats::default(),
            bytes: None,
            next_probe_us: 0,
            probe_allowed: None,
            probes_on: false,
            probing: false,
            probe_bytes: 0,
            probes_since_us: None,
            probe_largest: 0,
            probe_seq: None,
            room_wake_us: None,
            probe_wake_us: None,
        }
    }

    /// Budgets the bytes in flight from the delivery rate ([`DeliveryRate`]): about one frame
    /// beyond the bandwidth-delay product, frames skipped (newest wins) beyond it. The
    /// frame-count limit then only bounds the bookkeeping.
    pub fn with_byte_budget(mut self) -> Self {
        self.bytes = Some(DeliveryRate::default());
        self.limit = BUDGETED_LIMIT;
        self
    }

    /// Stall probes for a viewer with a byte budget whose transport gives up on the frames in
    /// flight when one that needs none of them is sent (QUIC resets their streams). Only such a
    /// transport lets a probe overtake the frames stuck in a blackout. On one ordered stream
    /// (TCP) a probe would wait behind them, and after them the picture it was made against is
    /// one the viewer no longer holds (it keeps none there, or the last 10): it would be
    /// refused as a missing base.
    pub fn with_stall_probes(mut self) -> Self {
        self.probes_on = true;
        self
    }

    /// How long the next frame takes to make before it can go, until it is sent
    /// ([`DeliveryRate::set_make_lead`]): 0 when it is a payload already made.
    pub fn set_make_lead(&mut self, us: u64) {
        if let Some(b) = &mut self.bytes {
            b.set_make_lead(us);
        }
    }

    /// A small packet's round trip (a ping's), for the byte budget's minimum RTT.
    pub fn on_path_rtt(&mut self, rtt_us: u64, now_us: u64) {
        if let Some(b) = &mut self.bytes {
            b.on_path_rtt(rtt_us, now_us);
        }
    }

    /// How long `bytes` sent now may take to reach the viewer: twice their time at the measured
    /// delivery rate, plus two round trips (a lost packet sent again), at most the ACK
    /// timeout; before anything was measured, the ACK timeout.
    pub fn crossing_time_us(&self, bytes: u64) -> u64 {
        match self.link_estimate() {
            Some(e) if e.rate_bytes_per_s > 0 => {
                (2 * e.min_rtt_us + e.time_us(2 * bytes)).min(self.ack_timeout_us)
            }
            _ => self.ack_timeout_us,
        }
    }

    /// Whether the path keeps up with what was sent, at `now_us`: no frame larger than what
    /// the path holds is queued on it ([`DeliveryRate::path_busy_until_us`]), and the
    /// oldest frame in flight is not overdue (its bytes at the delivery rate, a minimum RTT
    /// and [`OVERDUE_AFTER_US`] have not all passed without its ACK). Only then may a frame
    /// depend on one still crossing: on a path that has gone silent (a blackout the transport
    /// has not yet counted as loss) or is busy for longer than a round trip, a frame made
    /// against the acknowledged picture supersedes the ones stuck in front of it. True before
    /// anything was measured, and for a viewer without a byte budget.
    pub fn keeping_up(&self, now_us: u64) -> bool {
        !self.path_busy() && !self.ack_overdue(now_us)
    }

    /// Whether a frame larger than what the path holds (the bandwidth-delay product, over
    /// 5 ms at least) is queued on the path
    /// ([`DeliveryRate::path_busy_until_us`]; false without a byte budget).
    pub fn path_busy(&self) -> bool {
        self.bytes
            .as_ref()
            .is_some_and(|b| b.busy_with(&b.estimate()).is_some())
    }

    /// Whether the oldest frame in flight is overdue at `now_us`: its bytes at the delivery
    /// rate (after the frames that were crossing ahead of it, where the path limits:
    /// `DeliveryRate::oldest_across_us`), a minimum RTT and [`OVERDUE_AFTER_US`] have all
    /// passed without its ACK (false before anything was measured, and without a byte
    /// budget).
    pub fn ack_overdue(&self, now_us: u64) -> bool {
        let Some(b) = &self.bytes else {
            return false;
        };
        let e = b.estimate();
        match self.inflight.front() {
            Some(oldest) if e.rate_bytes_per_s > 0 => {
                let due =
                    b.oldest_across_us(oldest.sent_us, &e) + e.min_rtt_us + b.viewer_hold_us();
                now_us > due + OVERDUE_AFTER_US
            }
            _ => false,
        }
    }

    /// What the delivery-rate estimator believes of the path, for a viewer with a byte budget.
    pub fn link_estimate(&self) -> Option<LinkEstimate> {
        self.bytes.as_ref().map(DeliveryRate::estimate)
    }

    /// The most the transport's congestion window should allow in flight, given its round
    /// trip, at `now_us` ([`DeliveryRate::window_bound`]), and the stall probes sent
    /// since the last ACK beyond it ([`ViewerFlow::probe_room`]): in a blackout the window
    /// fills with packets the path lost, which the transport counts in flight until it has
    /// heard otherwise, and a probe held behind them would wait for the transport's own probe
    /// timeout. Probes that stop at one budget get up to as much again, no more: where probes
    /// were taken for a stall on a slow path (10 Mbit/s, frames of 400 kB), a window grown
    /// with every probe reached megabytes, and the path's queue dropped thousands of packets
    /// (a trace of a build not kept). Those that go on are paced by the delivery rate beyond
    /// one budget. `None` without a byte budget, or where [`DeliveryRate::window_bound`] sets
    /// none.
    pub fn window_bound(&mut self, rtt: TransportRtt, now_us: u64) -> Option<u64> {
        let bound = self.bytes.as_mut()?.window_bound(rtt, now_us)?;
        Some(bound + self.probe_room(bound))
    }

    /// The least the transport's congestion window should allow in flight: the byte budget,
    /// and, where the stall probes go on past one budget ([`ViewerFlow::probes_go_on`]),
    /// every probe sent since the last ACK. Without that room the least did not grow in a
    /// blackout, and the bound's room gave nothing to a window below its bound: on a 1 ms
    /// path the video's frames and probes sent into a 200 ms blackout came to about 3 MB,
    /// QUIC's window was about 820 kB, and the first picture reached the viewer 170 ms after
    /// the path came back, seven probes later (that the probes waited in the transport behind
    /// the lost packets is inferred: its bytes in flight were not logged; BENCHMARKS.md, "Room
    /// for stall probes in QUIC's window"). The room is about what the probes' pacing lets
    /// go: one budget, then the delivery rate over the time since the first probe (plus the
    /// last probe, which may go once the bytes before it are paid for). Probes that stop at
    /// one budget get none, as before: there a stall is more likely a frame still crossing,
    /// and the bound gives them room where the path queues. Not measured: a path that slowed
    /// down as it stalled, where the estimate, which no ACK corrects during a stall, still
    /// lets probes go on. `None` without a byte budget or before the first estimate.
    pub fn window_least(&self) -> Option<u64> {
        let e = self.link_estimate()?;
        let room = match self.probe_bytes > 0 && self.probes_go_on(&e) {
            true => self.probe_bytes,
            false => 0,
        };
        (e.budget_bytes > 0).then_some(e.budget_bytes + room)
    }

    /// Room in the transport's window, beyond its bound, for the stall probes sent since the
    /// last ACK: all of them where they go on past one budget ([`ViewerFlow::probes_go_on`]),
    /// and up to as much as the bound where one budget of them is all they get.
    fn probe_room(&self, bound: u64) -> u64 {
        // No probe since the last ACK (the usual case): no estimate to make.
        let Some(e) = self.link_estimate().filter(|_| self.probe_bytes > 0) else {
            return 0;
        };
        match self.probes_go_on(&e) {
            true => self.probe_bytes,
            false => self.probe_bytes.min(bound),
        }
    }

    /// The stall probes since the last ACK go on past one byte budget at the estimate `e`,
    /// paced by the delivery rate ([`stop_at_one_budget`], as [`ViewerFlow::stall_probe_at`]
    /// decides): their largest crosses within the time between probes at the estimate (a
    /// probe of at most [`SMALL_PROBE_BYTES`] also where it crosses within a round trip, or
    /// the rate is not surely the path's), or it is at most half the budget on a path that
    /// does not limit what is sent.
    fn probes_go_on(&self, e: &LinkEstimate) -> bool {
        self.bytes.as_ref().is_some_and(|b| {
            e.rate_bytes_per_s > 0 && !stop_at_one_budget(e, b, self.probe_largest)
        })
    }

    /// The latest moment the delivery-rate estimator was told of (0 without a byte budget).
    pub fn clock_us(&self) -> u64 {
        self.bytes.as_ref().map_or(0, DeliveryRate::clock_us)
    }

    /// The transport's round trip showed a queue lately ([`DeliveryRate::queued_lately`]): a
    /// bottleneck is there. False without a byte budget.
    pub fn path_queued_lately(&self) -> bool {
        self.bytes.as_ref().is_some_and(DeliveryRate::queued_lately)
    }

    /// See [`DeliveryRate::queue_held_within`]. False without a byte budget.
    pub fn queue_held_within(&self, us: u64, now_us: u64) -> bool {
        self.bytes
            .as_ref()
            .is_some_and(|b| b.queue_held_within(us, now_us))
    }

    /// See [`DeliveryRate::unqueued_for`]. False without a byte budget.
    pub fn unqueued_for(&self, watched_us: u64, us: u64, now_us: u64) -> bool {
        self.bytes
            .as_ref()
            .is_some_and(|b| b.unqueued_for(watched_us, us, now_us))
    }

    /// Sends a keyframe after every `n` deltas in a row (0 = never).
    pub fn with_refresh(mut self, n: u32) -> Self {
        self.refresh_every = n;
        self
    }

    /// The seq of the last frame planned for this viewer.
    pub fn last_planned(&self) -> Option<u64> {
        self.last_seq
    }

    pub fn stats(&self) -> ViewerFlowStats {
        self.stats
    }
    pub fn rtt_window(&self) -> &SampleWindow {
        &self.rtt_us
    }
    pub fn inflight(&self) -> usize {
        self.inflight.len()
    }
    pub fn rtt_avg_ms(&self) -> Option<f64> {
        self.rtt_us.avg().map(|us| us / 1000.0)
    }
    pub fn current_limit(&self) -> u32 {
        self.limit.limit(self.rtt_avg_ms())
    }

    /// How long a frame on a stream of its own is waited for at most after it was sent
    /// ([`OWN_STREAM_TIMEOUTS`] ACK timeouts).
    fn own_stream_wait_us(&self) -> u64 {
        OWN_STREAM_TIMEOUTS * self.ack_timeout_us
    }

    /// True when another frame may be sent now. Expires in-flight entries older than the ACK
    /// timeout first, so a viewer that never ACKs is slowed to one frame per timeout instead of
    /// stalling forever.
    pub fn can_send(&mut self, now_us: u64) -> bool {
        while let Some(&oldest) = self.inflight.front() {
            if now_us.saturating_sub(oldest.alive_us) < self.ack_timeout_us {
                break;
            }
            self.inflight.pop_front();
            make_room(&mut self.given_up, GIVEN_UP);
            self.given_up.push_back((oldest.seq, oldest.sent_us));
            self.stats.ack_timeouts += 1;
            if let Some(b) = &mut self.bytes {
                b.forget(oldest.seq, oldest.own_stream, now_us);
            }
        }
        let waited = now_us.checked_sub(self.own_stream_wait_us());
        if let (Some(b), Some(t)) = (&mut self.bytes, waited) {
            b.stop_waiting_before(t);
        }
        let bytes_room = self.bytes.as_ref().is_none_or(|b| b.has_room(now_us));
        let room = (self.inflight.len() as u32) < self.current_limit() && bytes_room;
        // When the path, busy with a large frame, will be nearly done with it: the next frame
        // may go then, and no ACK may come by then to wake the host.
        self.room_wake_us = None;
        if let (false, Some(b)) = (bytes_room, &mut self.bytes) {
            b.refused();
            self.room_wake_us = b.room_at().filter(|&t| t > now_us);
        } else if let (false, Some(b)) = (room, &mut self.bytes) {
            // Refused by the count of frames in flight while their bytes fill the path: the
            // next frame's sample measures the path too. Frames of 1.5 MB, two in flight on 50
            // Mbit/s (their round trip of half a second holds the count at its floor of two),
            // left the byte budget, made of the largest recent frame (the keyframe), room for
            // a second frame until the keyframe left the last 30 frames: for those 7 s the
            // path was not taken as measured, each frame went at the ACK of the one two before
            // it, a whole frame queued ahead of it, and every frame took two crossings
            // (BENCHMARKS.md, "A viewer's first picture").
            b.refused_if_full();
        }
        let probe_at = self.stall_probe_at();
        self.probe_wake_us = probe_at.filter(|&t| t > now_us);
        let probe = !room && probe_at.is_some_and(|t| now_us >= t);
        self.probe_allowed = probe.then_some(now_us);
        room || probe
    }

    /// When the next stall probe may go, while the viewer is stalled (see [`STALL_AFTER_US`]):
    /// only for a viewer with a byte budget that has acknowledged something.
    fn stall_probe_at(&self) -> Option<u64> {
        if !self.probes_on {
            return None;
        }
        let b = self.bytes.as_ref()?;
        if self.stats.acks == 0 {
            return None;
        }
        let oldest = self.inflight.front()?.sent_us;
        let e = b.estimate();
        if e.rate_bytes_per_s == 0 {
            return None;
        }
        // Probes cost one byte budget at once. Beyond it, probes of at most half the budget
        // go no faster than the delivery rate (a blackout gets probes until the path is back),
        // and larger ones stop (a stall on a path of large frames, a video, gets one budget).
        // So do probes that take longer to cross a path that limits than the time between them:
        // each would queue behind the ones before it and supersede them as they cross (a
        // video at 50 Mbit/s and 80 ms, 400 kB a frame under a budget of 960 kB). The frames
        // stuck before them do not count: each probe makes the transport give up on them.
        // Either way only where a probe takes longer to cross than the time between probes
        // (and, at most `SMALL_PROBE_BYTES`, than a round trip):
        // on a fast short path a frame is over half the budget (a product of tens of kB) yet
        // crosses in a few ms, and a blackout there that took the one budget of probes (a
        // colour testsrc2 recording at 1 ms: 192 kB frames, 470 Mbit/s) left the viewer
        // without a picture until the ACK timeout, 1.9 s after the path came back. The rule
        // trusts the estimate, which no ACK corrects during a stall: where the path slowed
        // down as it stalled (a Wi-Fi link falling from hundreds of Mbit/s to tens), probes
        // that took longer to cross than the estimate says go on every 25 ms, paced at the
        // old rate, until an ACK or the ACK timeout; that timeout is what the viewer waited
        // for before, when one budget of probes was all it got. Not measured.
        // A small probe counts only where it also takes longer than a round trip to cross, at
        // a rate that is surely the path's (a slow path, not a content-limited rate: a
        // scroll's 7.7 kB took 27 ms at 80 ms, typing's 335 bytes 91 ms).
        let slow = |bytes: u64| slow_probe(&e, b, bytes);
        let large = stop_at_one_budget(&e, b, self.probe_largest);
        if self.probe_bytes >= e.budget_bytes && large {
            return None;
        }
        let paid_at = match self.probes_since_us {
            Some(since) if self.probe_bytes > e.budget_bytes => {
                since + e.time_us(self.probe_bytes - e.budget_bytes)
            }
            _ => 0,
        };
        // The oldest frame takes its time to cross at the measured rate: a slow path still
        // delivering a large frame is not a stalled one.
        // The onset waits for large frames still queued on the path; once probing, probes are
        // paced as below.
        let queued = match self.probes_since_us {
            None => b.busy_with(&e).unwrap_or(0),
            Some(_) => 0,
        };
        let across = b.oldest_across_us(oldest, &e).max(queued);
        let overdue = e.min_rtt_us + b.viewer_hold_us() + STALL_AFTER_US;
        // A probe still in flight that is slow as above, on a path that limits: the next
        // waits until it is overdue itself, as a frame would be, so no two such probes cross
        // at once. An ACK of an older frame ends the stall, not
        // the probe's crossing. A Mandelbrot zoom at 50 Mbit/s and 1 % loss, frames of 1.4
        // MB (270 ms to cross at the estimated 42 Mbit/s), had sent six probes in 630 ms for
        // two frames that were slow, not lost: 8.7 MB in flight, 1.7 s at that rate.
        let after_probe = match self.probe_seq.and_then(|s| b.crossing(s)) {
            Some((bytes, across_us)) if b.path_limits() && slow(bytes) => across_us + overdue,
            _ => 0,
        };
        let stalled_at = across + overdue;
        Some(
            stalled_at
                .max(self.next_probe_us)
                .max(paid_at)
                .max(after_probe),
        )
    }

    /// When the oldest frame in flight runs out of time for its ACK, or the oldest given up on
    /// while crossing stops counting (µs), if any; or a probe or room is due.
    pub fn next_expiry(&self) -> Option<u64> {
        let expiry = self
            .inflight
            .front()
            .map(|f| f.alive_us + self.ack_timeout_us);
        // Frames given up on while crossing stop counting then ([`DeliveryRate::forget`]).
        let crossing = self
            .bytes
            .as_ref()
            .and_then(|b| b.oldest_crossing_sent_us())
            .map(|t| t + self.own_stream_wait_us());
        [expiry, crossing, self.probe_wake_us, self.room_wake_us]
            .into_iter()
            .flatten()
            .min()
    }

    /// The viewer asked for a keyframe (e.g. its checksum did not match).
    pub fn request_keyframe(&mut self) {
        self.keyframe_requested = true;
        self.stats.keyframe_requests += 1;
    }

    /// The viewer's picture was reset (a new stream description): whatever comes next must be
    /// a keyframe, whatever it held before.
    pub fn reset_reference(&mut self) {
        self.reference = None;
    }

    /// The viewer could not apply a frame made against the picture it acknowledged (named
    /// bases): it no longer holds that picture, and only a keyframe can make it exact again.
    pub fn acknowledged_lost(&mut self) {
        self.keyframe_requested = true;
        self.stats.acknowledged_lost += 1;
    }

    /// The viewer could not apply a frame because it lost the one before (named bases): it
    /// still holds the picture it last acknowledged, and the next frame is made against that.
    pub fn base_missing(&mut self) {
        self.rebase_requested = true;
        self.stats.bases_missing += 1;
    }

    /// Whether, offered `newest` when it missed `previous` (the frame whose picture `newest`'s
    /// shared delta applies to, or repeats), this viewer can take `previous` as a plain delta
    /// now and `newest` as one, or as Unchanged, after it. Otherwise `newest` would be made
    /// again for it alone, against the picture it holds ([`Plan::Rebased`]), or sent whole:
    /// an encode the shared payloads already did. Nothing is pending that needs another plan
    /// (a keyframe or rebase asked for, a probe).
    pub fn catches_up_with(&self, newest: &FrameInfo, previous: &FrameInfo) -> bool {
        let r = self.reference;
        let follows = newest.delta_base == Some(previous.content_id)
            || newest.content_id == previous.content_id;
        !self.keyframe_requested
            && !self.rebase_requested
            && self.probe_allowed.is_none()
            && r.is_some()
            && newest.delta_base != r
            && follows
            && previous.delta_base == r
            && !previous.keyframe
            && self.last_seq.is_none_or(|l| previous.seq > l)
    }

    /// Decides what `f` becomes for this viewer and commits to it: the caller sends it.
    pub fn plan(&mut self, f: &FrameInfo) -> Plan {
        self.plan_with_bases(f, Bases::default())
    }

    /// As [`ViewerFlow::plan`], for a viewer whose deltas name their base: where another
    /// viewer would get a keyframe, it gets a delta against a picture the caller still has
    /// (`bases`), the one it will hold once everything sent arrives, or after a loss the one
    /// it acknowledged.
    pub fn plan_with_bases(&mut self, f: &FrameInfo, bases: Bases) -> Plan {
        if let Some(last) = self.last_seq {
            if f.seq <= last {
                return Plan::Nothing;
            }
            self.stats.skipped += f.seq - last - 1;
        }
        self.last_seq = Some(f.seq);
        self.stats.frames_planned += 1;
        let rebase = |base: Option<u64>| match base {
            Some(b) if b == f.content_id => Plan::Unchanged,
            Some(b) => Plan::Rebased { base: b },
            None => Plan::Keyframe { forced: true },
        };
        // A delta against the acknowledged picture, not a stall probe.
        let mut repair = false;
        let plan = if self.keyframe_requested {
            Plan::Keyframe { forced: true }
        } else if self.rebase_requested {
            repair = true;
            rebase(bases.acknowledged)
        } else if self.probe_allowed.is_some() && bases.acknowledged.is_some() {
            self.stats.stall_probes += 1;
            self.probing = true;
            rebase(bases.acknowledged)
        } else if self.reference.is_none() {
            Plan::Keyframe { forced: false }
        } else if self.reference == Some(f.content_id) {
            Plan::Unchanged
        } else if f.keyframe {
            Plan::Keyframe { forced: false }
        } else if let Some(a) = bases
            .acknowledged
            .filter(|&a| bases.prefer_acknowledged && Some(a) != self.reference)
        {
            repair = true;
            rebase(Some(a))
        } else if f.delta_base.is_some() && f.delta_base == self.reference {
            if self.refresh_every > 0 && self.deltas_since_key >= self.refresh_every {
                self.stats.refresh_keyframes += 1;
                Plan::Keyframe { forced: false }
            } else {
                Plan::Delta
            }
        } else {
            rebase(bases.reference.filter(|_| self.reference.is_some()))
        };
        self.rebase_requested = false;
        if let Some(at) = self.probe_allowed.take() {
            self.next_probe_us = at + PROBE_EVERY_US;
        }
        match plan {
            Plan::Keyframe { forced } => {
                self.stats.keyframes += 1;
                self.stats.forced_keyframes += forced as u64;
                self.keyframe_requested = false;
                self.deltas_since_key = 0;
            }
            Plan::Delta => {
                self.stats.deltas += 1;
                self.deltas_since_key += 1;
            }
            Plan::Unchanged => self.stats.unchanged += 1,
            Plan::Rebased { .. } => {
                self.stats.rebased += 1;
                self.stats.rebased_acknowledged += repair as u64;
                self.deltas_since_key += 1;
            }
            Plan::Nothing => {}
        }
        self.reference = Some(f.content_id);
        plan
    }

    /// A packet that will be ACKed was written for frame `seq`, `bytes` long.
    pub fn on_sent(&mut self, seq: u64, bytes: u64, now_us: u64) {
        self.sent(seq, bytes, now_us, false);
    }

    /// As [`ViewerFlow::on_sent`], for a frame on a transport stream of its own (QUIC): it
    /// arrives however many frames overtake it, unless the host gives up on it, so a frame
    /// that overtook it and could not apply ([`ViewerFlow::on_ack_overtaking`]) does not
    /// settle it.
    pub fn on_sent_on_own_stream(&mut self, seq: u64, bytes: u64, now_us: u64) {
        self.sent(seq, bytes, now_us, true);
    }

    fn sent(&mut self, seq: u64, bytes: u64, now_us: u64, own_stream: bool) {
        let probing = std::mem::take(&mut self.probing);
        if probing {
            self.probe_bytes += bytes;
            self.probe_largest = self.probe_largest.max(bytes);
            self.probes_since_us.get_or_insert(now_us);
        }
        self.inflight.push_back(InFlight {
            seq,
            sent_us: now_us,
            own_stream,
            alive_us: now_us,
        });
        if let Some(b) = &mut self.bytes {
            b.on_sent(seq, bytes, now_us);
        }
        if probing {
            self.probe_seq = Some(seq);
        }
    }

    /// Whether frame `seq` is in flight on a stream of its own: it will arrive unless the
    /// host gives up on it (its ACK timeout, counted again from each overtaking ACK, four at
    /// most).
    pub fn crossing_on_own_stream(&self, seq: u64) -> bool {
        self.inflight.iter().any(|f| f.seq == seq && f.own_stream)
    }

    /// An ACK arrived. ACKs come in order, so earlier in-flight frames are settled too.
    pub fn on_ack(&mut self, seq: u64, now_us: u64) -> AckOutcome {
        self.on_ack_held(seq, now_us, 0)
    }

    /// As [`ViewerFlow::on_ack`], for an ACK the viewer sent `held_us` after the frame arrived
    /// ([`DeliveryRate::on_ack_held`]): the delivery rate is the path's, not the viewer's
    /// decoding speed. The RTT returned is the ACK's own.
    pub fn on_ack_held(&mut self, seq: u64, now_us: u64, held_us: u64) -> AckOutcome {
        self.settle(seq, now_us, held_us, false)
    }

    /// As [`ViewerFlow::on_ack_held`], for the ACK of a frame that arrived before its base
    /// and could not apply (named bases): it overtook the frames before it. They are settled
    /// (lost, or they would have been its base), but not those sent with
    /// [`ViewerFlow::on_sent_on_own_stream`] (the host sends keyframes so), which are still
    /// crossing: their ACK timeout starts again, as the viewer answers. A 3.3 MB keyframe crossing 50 Mbit/s for over half a second was
    /// overtaken by a small frame; taken as settled, its bytes left the budget, and the host
    /// sent two frames of 1.7 MB behind it (BENCHMARKS.md, "A viewer's first picture").
    pub fn on_ack_overtaking(&mut self, seq: u64, now_us: u64, held_us: u64) -> AckOutcome {
        self.settle(seq, now_us, held_us, true)
    }

    fn settle(&mut self, seq: u64, now_us: u64, held_us: u64, overtaking: bool) -> AckOutcome {
        let Some(pos) = self.inflight.iter().position(|f| f.seq == seq) else {
            return self.settle_late(seq, now_us, held_us, overtaking);
        };
        self.stats.acks += 1;
        self.probe_bytes = 0;
        self.probes_since_us = None;
        self.probe_largest = 0;
        let stays = |f: &InFlight| overtaking && f.own_stream;
        match &mut self.bytes {
            Some(b) if overtaking => {
                let (before, given_up) = (self.inflight.range(..pos), &self.given_up);
                b.on_ack_keeping(seq, now_us, held_us, |id| {
                    before.clone().any(|f| f.seq == id && f.own_stream)
                        || given_up.iter().any(|&(s, _)| s == id)
                });
            }
            Some(b) => b.on_ack_held(seq, now_us, held_us),
            None => {}
        }
        let acked = self.inflight.remove(pos).expect("found above");
        // Its timeout restarted no later than this after it was sent.
        let longest = self.own_stream_wait_us() - self.ack_timeout_us;
        self.inflight.retain_mut(|f| {
            let before = f.seq < seq;
            if before && stays(f) {
                f.alive_us = now_us.min(f.sent_us + longest).max(f.alive_us);
            }
            let settled = before && !stays(f);
            self.stats.unacked_passed += settled as u64;
            !settled
        });
        if !overtaking {
            // Frames given up on (all sent before it) are settled too: a later ACK of one is
            // unknown.
            self.given_up.clear();
        }
        let rtt = now_us.saturating_sub(acked.sent_us);
        self.rtt_us.push(rtt as f64);
        AckOutcome::Rtt(rtt)
    }

    /// A frame was sent that needs none before it, and the transport gives up on those still
    /// crossing (QUIC resets their streams): none of them is kept in flight as on a stream of
    /// its own any more. A keyframe given up on and then replaced by another kept its place
    /// among the first frames, and the new one's deltas went only once the new one was
    /// acknowledged.
    pub fn on_superseded(&mut self) {
        for f in self.inflight.iter_mut() {
            f.own_stream = false;
        }
        if let Some(b) = &mut self.bytes {
            b.on_superseded();
        }
    }

    /// The ACK of frame `seq`, not in flight: one given up on after the ACK timeout was late,
    /// not lost, and its delivery-rate sample is taken (the ACK timeout is no bound on how
    /// long a frame takes to cross a slow path). Nothing else changes: the frames in flight
    /// and the count limit stay as they are.
    /// An `overtaking` one settles its frame alone, as in flight.
    fn settle_late(&mut self, seq: u64, now_us: u64, held_us: u64, overtaking: bool) -> AckOutcome {
        let Some(i) = self.given_up.iter().position(|&(s, _)| s == seq) else {
            self.stats.unknown_acks += 1;
            return AckOutcome::Unknown;
        };
        let (_, sent_us) = self.given_up[i];
        let from = if overtaking { i } else { 0 };
        self.given_up.drain(from..=i);
        self.stats.late_acks += 1;
        if let Some(b) = &mut self.bytes {
            b.on_late_ack(seq, now_us, held_us, overtaking);
        }
        AckOutcome::Rtt(now_us.saturating_sub(sent_us))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow() -> ViewerFlow {
        ViewerFlow::new(InflightLimit::default(), 2_000_000)
    }

    /// Frame `seq` repeating the picture of content `content` (Unchanged).
    fn repeating(seq: u64, content: u64) -> FrameInfo {
        FrameInfo {
            seq,
            content_id: content,
            delta_base: None,
            keyframe: false,
        }
    }

    /// A host of frames where every frame changes, like scrolling.
    fn changing(seq: u64) -> FrameInfo {
        FrameInfo {
            seq,
            content_id: seq,
            delta_base: seq.checked_sub(1),
            keyframe: seq == 0,
        }
    }

    /// A viewer that missed frame 2 catches up with it before frame 3: both go as plain
    /// deltas, nothing is made again for it, and nothing counts as skipped.
    #[test]
    fn a_viewer_one_frame_behind_catches_up_with_the_shared_deltas() {
        // A viewer that took frames 0 and 1.
        let at_1 = || {
            let mut v = flow();
            v.plan(&changing(0));
            v.plan(&changing(1));
            v
        };
        let mut v = at_1();
        let (previous, newest) = (changing(2), changing(3));
        assert!(v.catches_up_with(&newest, &previous));
        // Not with a frame two behind (3's delta needs 2), nor with an unrelated one.
        assert!(!v.catches_up_with(&changing(4), &previous));
        assert!(!v.catches_up_with(&newest, &changing(1)));
        assert_eq!(v.plan(&previous), Plan::Delta);
        // Now in step: the newest is a plain delta, no catching up.
        assert!(!v.catches_up_with(&newest, &previous));
        assert_eq!(v.plan(&newest), Plan::Delta);
        assert_eq!((v.stats().skipped, v.stats().rebased), (0, 0));
        // Without catching up, the same viewer would have skipped one and been rebased.
        let mut w = at_1();
        w.plan_with_bases(
            &newest,
            Bases {
                reference: Some(1),
                ..Default::default()
            },
        );
        assert_eq!((w.stats().skipped, w.stats().rebased), (1, 1));
        // The newest repeating the picture the viewer missed: that picture, then Unchanged.
        let mut u = at_1();
        let repeat = repeating(3, 2);
        assert!(u.catches_up_with(&repeat, &previous));
        assert_eq!(u.plan(&previous), Plan::Delta);
        assert_eq!(u.plan(&repeat), Plan::Unchanged);
        // A keyframe asked for comes first: no catching up.
        let mut k = at_1();
        k.request_keyframe();
        assert!(!k.catches_up_with(&newest, &previous));
    }

    #[test]
    fn refresh_keyframes_come_after_n_deltas_and_only_when_asked_for() {
        let mut v = flow().with_refresh(3);
        let kinds: Vec<Plan> = (0..9).map(|s| v.plan(&changing(s))).collect();
        let key = Plan::Keyframe { forced: false };
        assert_eq!(
            kinds,
            [
                key,
                Plan::Delta,
                Plan::Delta,
                Plan::Delta,
                key,
                Plan::Delta,
                Plan::Delta,
                Plan::Delta,
                key
            ]
        );
        assert_eq!(v.stats().refresh_keyframes, 2);
        // Unchanged frames are not deltas: they do not count towards the refresh.
        let mut v = flow().with_refresh(2);
        v.plan(&changing(0));
        v.plan(&changing(1));
        assert_eq!(v.plan(&repeating(2, 1)), Plan::Unchanged);
        assert_eq!(
            v.plan(&FrameInfo {
                seq: 3,
                content_id: 3,
                delta_base: Some(1),
                keyframe: false
            }),
            Plan::Delta
        );
        assert_eq!(v.plan(&changing(4)), key);
        // Without a refresh interval, a verifying viewer gets deltas for ever.
        let mut v = flow();
        v.plan(&changing(0));
        assert!((1..500).all(|s| v.plan(&changing(s)) == Plan::Delta));
    }

    #[test]
    fn new_viewer_gets_keyframe_of_current_frame_then_deltas() {
        let mut v = flow();
        assert_eq!(v.plan(&changing(40)), Plan::Keyframe { forced: false });
        assert_eq!(v.plan(&changing(41)), Plan::Delta);
        assert_eq!(v.plan(&changing(41)), Plan::Nothing);
    }

    #[test]
    fn slow_viewer_skips_then_gets_forced_keyframe_others_unaffected() {
        let mut slow = flow();
        let mut fast = flow();
        let mut now = 0;
        for seq in 0..20u64 {
            now += 16_667;
            let f = changing(seq);
            // The fast viewer ACKs everything 2 ms later.
            assert!(fast.can_send(now));
            assert_ne!(fast.plan(&f), Plan::Nothing);
            fast.on_sent(seq, 1000, now);
            assert_eq!(fast.on_ack(seq, now + 2000), AckOutcome::Rtt(2000));
            // The slow viewer never ACKs: it fills its window and stops being sent frames.
            if slow.can_send(now) {
                slow.plan(&f);
                slow.on_sent(seq, 1000, now);
            }
        }
        assert_eq!(slow.inflight(), 6);
        assert_eq!(fast.stats().skipped, 0);
        assert_eq!(fast.stats().keyframes, 1);
        // Slow viewer catches up: its ACKs arrive; the next frame it gets is a forced keyframe
        // because its reference (frame 5) is behind the shared delta's base (frame 20).
        for seq in 0..6 {
            slow.on_ack(seq, now + 1000);
        }
        assert!(slow.can_send(now + 1000));
        assert_eq!(slow.plan(&changing(21)), Plan::Keyframe { forced: true });
        assert_eq!(slow.stats().skipped, 15);
        assert_eq!(slow.plan(&changing(22)), Plan::Delta);
    }

    #[test]
    fn skipped_unchanged_frames_need_no_keyframe() {
        let mut v = flow();
        let f0 = FrameInfo {
            seq: 0,
            content_id: 0,
            delta_base: None,
            keyframe: true,
        };
        assert_eq!(v.plan(&f0), Plan::Keyframe { forced: false });
        // Frames 1..=3 are unchanged (content 0); the viewer skips 1 and 2.
        assert_eq!(v.plan(&repeating(3, 0)), Plan::Unchanged);
        // Frame 4 changes, delta against content 0: the viewer holds content 0, so a delta works.
        assert_eq!(
            v.plan(&FrameInfo {
                seq: 4,
                content_id: 4,
                delta_base: Some(0),
                keyframe: false
            }),
            Plan::Delta
        );
        assert_eq!(v.stats().skipped, 2);
        assert_eq!(v.stats().forced_keyframes, 0);
    }

    #[test]
    fn keyframe_request_is_honoured_once() {
        let mut v = flow();
        v.plan(&changing(0));
        v.request_keyframe();
        assert_eq!(v.plan(&changing(1)), Plan::Keyframe { forced: true });
        assert_eq!(v.plan(&changing(2)), Plan::Delta);
    }

    #[test]
    fn adaptive_limit_follows_rtt_and_timeouts_unstick() {
        let mut v = flow();
        let mut now = 0u64;
        // RTT of 40 ms → limit floor(120/40) = 3.
        for seq in 0..10 {
            v.on_sent(seq, 1000, now);
            v.on_ack(seq, now + 40_000);
            now += 50_000;
        }
        assert_eq!(v.current_limit(), 3);
        for seq in 10..13 {
            assert!(v.can_send(now));
            v.on_sent(seq, 1000, now);
        }
        assert!(!v.can_send(now));
        assert!(!v.can_send(now + 1_999_999));
        assert!(v.can_send(now + 2_000_000));
        assert_eq!(v.stats().ack_timeouts, 3);
        assert_eq!(v.on_ack(999, now), AckOutcome::Unknown);
        assert_eq!(v.stats().unknown_acks, 1);
    }

    /// A frame that overtook others and could not apply (its base had not arrived) settles
    /// those that went as datagrams, not those on streams of their own: their bytes still
    /// fill the path, and the viewer's answer starts their ACK timeout again.
    #[test]
    fn an_overtaking_ack_leaves_frames_on_their_own_streams_in_flight() {
        let mut v = flow().with_byte_budget();
        v.on_sent(0, 1_000, 0);
        v.on_ack(0, 20_000);
        v.on_sent(1, 2_000, 30_000);
        v.on_sent_on_own_stream(2, 3_000_000, 40_000);
        v.on_sent(3, 500, 50_000);
        let in_flight = |v: &ViewerFlow| v.link_estimate().expect("a budget").inflight_bytes;
        assert_eq!(in_flight(&v), 3_002_500);
        assert_eq!(
            v.on_ack_overtaking(3, 1_000_000, 0),
            AckOutcome::Rtt(950_000)
        );
        assert_eq!(v.inflight(), 1);
        assert!(v.crossing_on_own_stream(2));
        assert_eq!(in_flight(&v), 3_000_000);
        assert_eq!(v.stats().unacked_passed, 1);
        // The viewer answered at 1 s: its ACK timeout (2 s) counts from then.
        v.can_send(2_500_000);
        assert_eq!((v.inflight(), v.stats().ack_timeouts), (1, 0));
        // Given up on, its bytes still count: it is on its way.
        v.can_send(3_000_000);
        assert_eq!((v.inflight(), v.stats().ack_timeouts), (0, 1));
        assert!(!v.crossing_on_own_stream(2));
        assert_eq!(in_flight(&v), 3_000_000);
        // A frame that overtook it leaves it; its own ACK, late, settles it.
        v.on_sent(4, 500, 3_000_000);
        v.on_ack_overtaking(4, 3_100_000, 0);
        assert_eq!(in_flight(&v), 3_000_000);
        assert_eq!(v.on_ack(2, 3_200_000), AckOutcome::Rtt(3_160_000));
        assert_eq!(in_flight(&v), 0);
        assert_eq!((v.stats().late_acks, v.stats().unknown_acks), (1, 0));
        // An ACK in order settles the frames before it on streams of their own, in flight or
        // given up on.
        v.on_sent_on_own_stream(5, 3_000, 3_300_000);
        v.can_send(5_300_000);
        assert_eq!((v.inflight(), in_flight(&v)), (0, 3_000));
        v.on_sent_on_own_stream(6, 3_000, 5_300_000);
        v.on_sent(7, 3_000, 5_310_000);
        v.on_ack(7, 5_400_000);
        assert_eq!((v.inflight(), in_flight(&v)), (0, 0));
        // One never answered stops counting after four ACK timeouts.
        v.on_sent_on_own_stream(8, 4_000, 6_000_000);
        v.can_send(8_000_000);
        assert_eq!((v.inflight(), in_flight(&v)), (0, 4_000));
        v.can_send(13_999_999);
        assert_eq!(in_flight(&v), 4_000);
        v.can_send(14_000_000);
        assert_eq!(in_flight(&v), 0);
    }

    /// Overtaking ACKs start a frame's ACK timeout again, up to four ACK timeouts in all.
    #[test]
    fn overtaking_acks_keep_a_frame_in_flight_for_four_ack_timeouts_at_most() {
        let mut v = flow().with_byte_budget();
        v.on_sent_on_own_stream(0, 2_700_000, 0);
        for (seq, t) in (1..6).zip((1..6).map(|i| i * 1_500_000)) {
            v.on_sent(seq, 300, t);
            v.on_ack_overtaking(seq, t + 100_000, 0);
            v.can_send(t + 100_000);
            assert!(v.crossing_on_own_stream(0), "at {t}");
        }
        v.can_send(7_999_999);
        assert!(v.crossing_on_own_stream(0));
        v.can_send(8_000_000);
        assert!(!v.crossing_on_own_stream(0));
    }

    /// A late ACK of a frame that overtook others (it could not apply) settles that frame
    /// alone: a frame given up on before it, still crossing on its stream, still counts, and
    /// its own late ACK still measures the path.
    #[test]
    fn a_late_overtaking_ack_leaves_the_frames_before_it_crossing() {
        let mut v = flow().with_byte_budget();
        v.on_sent_on_own_stream(0, 2_700_000, 0);
        v.on_sent(1, 300, 10_000);
        v.can_send(2_100_000);
        assert_eq!(v.stats().ack_timeouts, 2);
        let in_flight = |v: &ViewerFlow| v.link_estimate().expect("a budget").inflight_bytes;
        assert_eq!(in_flight(&v), 2_700_000);
        assert!(matches!(
            v.on_ack_overtaking(1, 2_200_000, 0),
            AckOutcome::Rtt(_)
        ));
        assert_eq!(in_flight(&v), 2_700_000);
        assert_eq!(v.on_ack(0, 2_500_000), AckOutcome::Rtt(2_500_000));
        assert_eq!(in_flight(&v), 0);
        assert!(v.link_estimate().expect("a budget").rate_bytes_per_s > 0);
        assert_eq!((v.stats().late_acks, v.stats().unknown_acks), (2, 0));
    }

    /// Frames slower to be acknowledged than the ACK timeout, before anything was measured
    /// (large frames on a slow path): given up on, their late ACKs still measure the path.
    #[test]
    fn a_late_ack_measures_the_path() {
        let mut v = ViewerFlow::new(InflightLimit::default(), 2_000_000).with_byte_budget();
        v.on_sent(0, 2_500_000, 0);
        v.on_sent(1, 1_500_000, 100_000);
        assert!(v.can_send(2_100_000));
        assert_eq!((v.inflight(), v.stats().ack_timeouts), (0, 2));
        assert_eq!(v.link_estimate().expect("a budget").rate_bytes_per_s, 0);
        v.on_sent(2, 1_500_000, 2_100_000);
        assert_eq!(v.on_ack(0, 2_500_000), AckOutcome::Rtt(2_500_000));
        assert_eq!(v.stats().late_acks, 1);
        let e = v.link_estimate().expect("a budget");
        assert_eq!(e.rate_bytes_per_s, 1_000_000, "2.5 MB in 2.5 s");
        assert_eq!(e.inflight_bytes, 1_500_000, "frame 2 alone");
        assert_eq!(v.inflight(), 1);
        // Frame 1, late too; an ACK for a frame never sent is unknown.
        assert!(matches!(v.on_ack(1, 3_700_000), AckOutcome::Rtt(_)));
        assert_eq!(v.on_ack(1, 3_800_000), AckOutcome::Unknown);
        assert_eq!(v.on_ack(77, 3_800_000), AckOutcome::Unknown);
        assert_eq!((v.stats().late_acks, v.stats().unknown_acks), (2, 2));
        assert_eq!(v.inflight(), 1);
    }

    /// Before anything is measured, a keyframe given up on while on its stream still holds
    /// its place among the first frames: with the delta behind it given up on too, one frame
    /// goes in the delta's place, not two (on the Mandelbrot zoom at 10 Mbit/s a keyframe of
    /// 2.7 MB and a delta of 1.5 MB behind it were acknowledged 2.5 and 3.4 s after they were
    /// sent). Its late ACK then measures the path at its rate, not over the time since the
    /// frame sent after it.
    #[test]
    fn the_first_frames_given_up_on_while_crossing_hold_their_place() {
        let mut v = flow().with_byte_budget();
        v.on_sent_on_own_stream(0, 2_700_000, 0);
        v.on_sent(1, 1_500_000, 150_000);
        assert!(!v.can_send(1_000_000));
        assert!(v.can_send(2_150_000));
        assert_eq!((v.inflight(), v.stats().ack_timeouts), (0, 2));
        v.on_sent(2, 300, 2_150_000);
        assert!(!v.can_send(2_160_000), "the keyframe's place is kept");
        assert_eq!(v.on_ack(0, 2_500_000), AckOutcome::Rtt(2_500_000));
        assert_eq!(v.on_ack(2, 2_520_000), AckOutcome::Rtt(370_000));
        let e = v.link_estimate().expect("a budget");
        // 2.7 MB in 2.5 s: about 1.08 MB/s, not 2.7 MB over the 0.37 s since frame 2 went.
        assert!((900_000..1_300_000).contains(&e.rate_bytes_per_s), "{e:?}");
        assert_eq!(e.inflight_bytes, 0);
    }

    /// A frame that supersedes those before it (the transport gives up on them) ends the
    /// count of a keyframe given up on while crossing, and keeps none in flight as on its
    /// stream.
    #[test]
    fn a_frame_that_supersedes_the_others_ends_the_wait_for_them() {
        let mut v = flow().with_byte_budget();
        v.on_sent_on_own_stream(0, 2_700_000, 0);
        v.can_send(2_000_000);
        v.on_sent_on_own_stream(1, 2_700_000, 2_000_000);
        let in_flight = |v: &ViewerFlow| v.link_estimate().expect("a budget").inflight_bytes;
        assert_eq!(in_flight(&v), 5_400_000);
        v.on_superseded();
        assert_eq!(in_flight(&v), 2_700_000);
        assert!(!v.crossing_on_own_stream(1));
    }

    #[test]
    fn an_ack_that_passes_frames_in_flight_counts_them_once() {
        let mut v = flow();
        for seq in 0..4 {
            v.on_sent(seq, 1000, seq * 16_000);
        }
        // Frame 2's ACK comes first: 0 and 1 are passed without their own.
        assert!(matches!(v.on_ack(2, 70_000), AckOutcome::Rtt(_)));
        assert_eq!(v.stats().unacked_passed, 2);
        // Their ACKs, late, are unknown and pass nothing more.
        assert_eq!(v.on_ack(1, 71_000), AckOutcome::Unknown);
        assert!(matches!(v.on_ack(3, 72_000), AckOutcome::Rtt(_)));
        assert_eq!(v.stats().unacked_passed, 2);
        assert_eq!(v.stats().unknown_acks, 1);
    }

    fn acked(s: u64) -> Bases {
        Bases {
            reference: Some(s),
            acknowledged: Some(s),
            prefer_acknowledged: true,
        }
    }

    const FRAME_US: u64 = 16_667;

    /// Frame `seq` of `bytes`, planned against the frame before it and sent at `now`, if `v`
    /// has room for it: whether it went.
    fn send_if_room(v: &mut ViewerFlow, seq: u64, bytes: u64, now: u64) -> bool {
        let room = v.can_send(now);
        if room {
            v.plan_with_bases(&changing(seq), acked(seq.saturating_sub(1)));
            v.on_sent(seq, bytes, now);
        }
        room
    }

    /// Where a run left off when its ACKs stopped: the time, the next seq, and the frames
    /// still in flight (seq, sent at).
    type Dark = (u64, u64, Vec<(u64, u64)>);

    /// Runs `v` at 60 fps for a second on a 40 ms path, every frame ACKed: returns the time,
    /// the next seq and the frames still in flight (seq, sent at).
    fn run_until_dark(v: &mut ViewerFlow) -> Dark {
        let (mut now, mut seq) = (0u64, 0u64);
        let mut sent_at = Vec::new();
        while now < 1_000_000 {
            while let Some(&(s, t)) = sent_at.first() {
                if t + 40_000 > now {
                    break;
                }
                v.on_ack(s, t + 40_000);
                sent_at.remove(0);
            }
            if send_if_room(v, seq, 2_000, now) {
                sent_at.push((seq, now));
            }
            seq += 1;
            now += FRAME_US;
        }
        (now, seq, sent_at)
    }

    /// A viewer with a byte budget on a 40 ms path, running at 60 fps until its ACKs stop: no
    /// frame goes beyond the budget until the oldest in flight is a minimum RTT plus
    /// `STALL_AFTER_US` old, then one every `PROBE_EVERY_US`, each made against the picture it
    /// acknowledged; an ACK ends the stall.
    #[test]
    fn a_stalled_viewer_gets_one_probe_frame_at_a_time_against_its_acknowledged_picture() {
        let mut v = flow().with_byte_budget().with_stall_probes();
        let frame = FRAME_US;
        let (mut now, mut seq, sent_at) = run_until_dark(&mut v);
        assert_eq!(v.stats().stall_probes, 0, "{:?}", v.stats());
        // The path goes dark: ACKs stop. The last one acknowledged frame `last`.
        let last = sent_at.first().map_or(seq - 1, |&(s, _)| s - 1);
        let oldest = sent_at.first().map_or(now, |&(_, t)| t);
        let e = v.link_estimate().expect("a byte budget");
        // 2 000 bytes at the measured rate (about 120 kB/s): about 17 ms to cross.
        let crossing = 2_000 * 1_000_000 / e.rate_bytes_per_s;
        assert!((10_000..30_000).contains(&crossing), "{e:?}");
        let stall = oldest + e.min_rtt_us + crossing + STALL_AFTER_US;
        let mut probes = Vec::new();
        for _ in 0..30 {
            if v.can_send(now) {
                let plan = v.plan_with_bases(&changing(seq), acked(last));
                v.on_sent(seq, 2_000, now);
                if now >= stall {
                    assert_eq!(plan, Plan::Rebased { base: last }, "at {now}");
                    probes.push((now, seq));
                }
            }
            seq += 1;
            now += frame;
        }
        assert!(probes.len() >= 2, "probes while stalled: {probes:?}");
        assert!(
            probes[0].0 < stall + frame,
            "first probe {probes:?} for a stall at {stall}"
        );
        assert!(
            probes.windows(2).all(|w| w[1].0 - w[0].0 >= PROBE_EVERY_US),
            "probes closer than {PROBE_EVERY_US} µs: {probes:?}"
        );
        assert_eq!(v.stats().stall_probes, probes.len() as u64);
        // Probes cost one byte budget (and the frame that crosses it), then no more than the
        // delivery rate since the first of them.
        let e = v.link_estimate().expect("a byte budget");
        let spent = probes.len() as u64 * 2_000;
        let span = probes.last().unwrap().0 - probes[0].0;
        assert!(
            spent <= e.budget_bytes + 2_000 + e.rate_bytes_per_s * span / 1_000_000,
            "{} probes over {span} µs, {e:?}",
            probes.len()
        );
        assert!(
            spent > e.budget_bytes,
            "probes go on beyond the budget: {probes:?}, {e:?}"
        );
        // The path comes back: an ACK for the last probe settles what was before it.
        let (_, probe_seq) = *probes.last().expect("checked above");
        v.on_ack(probe_seq, now);
        assert!(v.can_send(now));
    }

    /// A frame may depend on one still crossing until that one's ACK is overdue: its bytes at
    /// the delivery rate, a minimum RTT and [`OVERDUE_AFTER_US`].
    #[test]
    fn a_path_keeps_up_until_an_ack_is_overdue() {
        const MS: u64 = 1_000;
        let mut v = flow().with_byte_budget();
        v.on_sent(0, 20_000, 0);
        assert!(v.keeping_up(500 * MS), "nothing measured yet");
        // Frames of 20 kB, each ACKed 22 ms after it was sent, over a 20 ms round trip.
        v.on_ack(0, 22 * MS);
        let mut now = 40 * MS;
        for seq in 1..20 {
            v.on_path_rtt(20 * MS, now);
            v.on_sent(seq, 20_000, now);
            v.on_ack(seq, now + 22 * MS);
            now += 40 * MS;
        }
        v.on_sent(20, 20_000, now);
        let e = v.link_estimate().expect("a byte budget");
        let due = now + e.time_us(20_000) + e.min_rtt_us + OVERDUE_AFTER_US;
        assert!(due < now + 80 * MS, "{e:?}");
        assert!(v.keeping_up(now + 22 * MS));
        assert!(v.keeping_up(due));
        assert!(!v.keeping_up(due + 1), "an ACK overdue");
        assert!(!v.ack_overdue(due) && v.ack_overdue(due + 1));
        assert!(
            !v.path_busy(),
            "a 20 kB frame is below the bandwidth-delay product"
        );
        v.on_ack(20, due + 5 * MS);
        assert!(v.keeping_up(due + 5 * MS), "nothing in flight");
    }

    /// Frames larger than the path's bandwidth-delay product (a lossless video on 10 Mbit/s,
    /// 1.1 MB/s, 21 ms): one goes when the one before it is nearly across, and after a
    /// blackout, three such frames queued on the path (probes) are not taken for a stall while
    /// the path is still carrying them: one ACK does not bring more probes at once.
    #[test]
    fn large_frames_queued_on_the_path_are_neither_sent_early_nor_probed_over() {
        const MS: u64 = 1_000;
        let frame = 363_000u64;
        let across = frame * 1_000_000 / 1_100_000; // 330 ms
        let mut v = flow().with_byte_budget().with_stall_probes();
        // Two seconds of frames offered at 60 fps on the path (a FIFO), each ACKed a round trip
        // after it crossed.
        let (mut now, mut free_at, mut acks) = (0u64, 0u64, VecDeque::new());
        for seq in 0..120 {
            if seq % 6 == 0 {
                v.on_path_rtt(21 * MS, now);
            }
            while acks.front().is_some_and(|&(at, _)| at <= now) {
                let (at, s) = acks.pop_front().expect("checked");
                v.on_ack(s, at);
            }
            if v.can_send(now) {
                v.on_sent(seq, frame, now);
                free_at = free_at.max(now) + across;
                acks.push_back((free_at + 21 * MS, seq));
            }
            now += 16_667;
        }
        while let Some((at, s)) = acks.pop_front() {
            v.on_ack(s, at);
            now = now.max(at);
        }
        let e = v.link_estimate().expect("a byte budget");
        assert!(e.rate_bytes_per_s > 900_000, "{e:?}");
        // The next frame may go once the one in flight is within a round trip of across, not
        // while a whole frame is still to cross.
        v.on_sent(200, frame, now);
        let sent = now;
        assert!(
            !v.can_send(sent + across / 2),
            "a second frame behind the first"
        );
        // Nothing may depend on a frame that keeps the path busy for longer than a round trip.
        assert!(!v.keeping_up(sent + MS));
        // The host is woken for that moment: no ACK comes before it.
        let wake = v.next_expiry().expect("a moment to wake");
        assert!(
            (sent + across / 2..sent + across - 10 * MS).contains(&wake),
            "wake at {} ms after the send",
            (wake - sent) / MS
        );
        assert!(v.can_send(sent + across - 10 * MS));
        v.on_ack(200, sent + across + 21 * MS);
        // A blackout: three frames handed to the path at once. The first is ACKed when it has
        // crossed; the other two are still queued behind it for 660 ms.
        now = sent + 2 * across;
        for seq in 201..204 {
            v.on_sent(seq, frame, now);
        }
        let t = now + across + 21 * MS;
        v.on_ack(201, t);
        assert!(!v.can_send(t), "no frame while two are queued");
        assert!(
            !v.can_send(now + 3 * across),
            "not stalled: the path is carrying them ({:?})",
            v.stats()
        );
        assert_eq!(v.stats().stall_probes, 0);
        assert!(
            v.can_send(now + 3 * across + 21 * MS + STALL_AFTER_US + MS),
            "stalled once they should all have crossed"
        );
    }

    /// A keyframe of 3.3 MB, then frames of 1.5 MB offered at 60 fps for `secs` on a path of
    /// 48 Mbit/s (6 MB/s, a FIFO) and 21 ms, each ACKed a round trip after it crossed, with a
    /// ping every 100 ms that sees the queue ahead of it when `queue_seen` (else the path's
    /// round trip alone, as when the frames wait in the host's stream buffers, not in the
    /// network; the transport's smoothed round trip likewise). Their round trip holds the
    /// count of frames in flight at its floor of two,
    /// and the keyframe keeps the byte budget above two frames, so the budget never refuses
    /// one. Returns, for each frame sent after the keyframe was ACKed and from `from_us`,
    /// how long it queued behind the frames before it (µs), and a frame's crossing.
    fn large_frames_after_a_keyframe(queue_seen: bool, secs: u64, from_us: u64) -> (Vec<u64>, u64) {
        let (key, frame, rtt, rate) = (3_300_000u64, 1_500_000u64, 21_000u64, 6_000_000u64);
        let mut v = flow().with_byte_budget();
        let (mut now, mut free_at, mut acks) = (0u64, 0u64, VecDeque::new());
        let (mut queued, mut key_acked) = (Vec::new(), false);
        let mut seq = 0;
        while now < secs * 1_000_000 {
            let queue = free_at.saturating_sub(now) * queue_seen as u64;
            if seq % 6 == 0 {
                v.on_path_rtt(rtt + queue, now);
            }
            while acks.front().is_some_and(|&(at, _)| at <= now) {
                let (at, s) = acks.pop_front().expect("checked");
                v.on_ack(s, at);
                key_acked |= s == 0;
            }
            v.window_bound(TransportRtt::smoothed(rtt + queue), now);
            let bytes = if seq == 0 { key } else { frame };
            if send_if_room(&mut v, seq, bytes, now) {
                let starts = free_at.max(now);
                if key_acked && now >= from_us {
                    queued.push(starts - now);
                }
                free_at = starts + bytes * 1_000_000 / rate;
                acks.push_back((free_at + rtt, seq));
            }
            seq += 1;
            now += FRAME_US;
        }
        (queued, frame * 1_000_000 / rate)
    }

    /// After a keyframe that queued on the path, the next large frame goes when the one
    /// before it is nearly across, from the first: the queue seen says the estimate is the
    /// path's, before any frame was held back for lack of room.
    #[test]
    fn after_a_keyframe_that_queued_large_frames_do_not_queue_behind_each_other() {
        no_frame_queued_long(large_frames_after_a_keyframe(true, 4, 0), 8);
    }

    /// With no queue seen, frames held back by their count while their bytes fill the path
    /// measure it as frames held back by the byte budget do: from then on a frame goes when
    /// the one before it is nearly across, not at the ACK of the one before that with a
    /// whole frame still to cross ahead of it.
    #[test]
    fn frames_held_back_by_their_count_on_a_full_path_measure_it() {
        no_frame_queued_long(large_frames_after_a_keyframe(false, 10, 3_000_000), 15);
    }

    /// More than `frames` frames went, none queued behind the one before it for a third of
    /// a frame's crossing or more.
    fn no_frame_queued_long((queued, across): (Vec<u64>, u64), frames: usize) {
        assert!(queued.len() > frames, "{} frames", queued.len());
        let worst = *queued.iter().max().expect("frames");
        assert!(
            worst < across / 3,
            "a frame queued {} ms behind the one before it ({} ms to cross): {queued:?}",
            worst / 1_000,
            across / 1_000
        );
    }

    /// A video on a path of 48 Mbit/s (6 MB/s) and 80 ms: frames of 400 kB (67 ms to cross,
    /// under the 480 kB product) offered at 60 fps for `secs`, each ACKed a round trip after
    /// it crossed the path (a FIFO) and 0, 10 or 20 ms more (the viewer's machine is busy),
    /// with a ping every 100 ms that queues behind them. Returns
    /// the time, the next seq, and the ACKs still to come (when, seq), which the caller may
    /// deliver or, for a blackout, drop.
    fn run_video_at_80ms(v: &mut ViewerFlow, secs: u64) -> (u64, u64, VecDeque<(u64, u64)>) {
        const MS: u64 = 1_000;
        let (frame, rtt) = (400_000u64, 80 * MS);
        let across = frame * 1_000_000 / 6_000_000;
        let (mut now, mut free_at, mut acks) = (0u64, 0u64, VecDeque::new());
        let mut seq = 0;
        while now < secs * 1_000_000 {
            if seq % 6 == 0 {
                v.on_path_rtt(rtt + free_at.saturating_sub(now), now);
            }
            while acks.front().is_some_and(|&(at, _)| at <= now) {
                let (at, s) = acks.pop_front().expect("checked");
                v.on_ack(s, at);
            }
            if send_if_room(v, seq, frame, now) {
                free_at = free_at.max(now) + across;
                acks.push_back((free_at + rtt + seq % 3 * 10 * MS, seq));
            }
            seq += 1;
            now += FRAME_US;
        }
        (now, seq, acks)
    }

    /// Frames smaller than the product still queue behind one another when two or three are
    /// in flight: the second one's ACK comes a frame's crossing later than its own bytes
    /// would bring it. That is not a stall. (At 50 Mbit/s and 80 ms such a video got 127
    /// stall probes in 181 frames, each queued behind the others.)
    #[test]
    fn frames_queued_behind_others_under_the_product_are_not_taken_for_a_stall() {
        let mut v = flow().with_byte_budget().with_stall_probes();
        run_video_at_80ms(&mut v, 4);
        let s = v.stats();
        assert!(s.acks > 40, "the video went: {s:?}");
        assert_eq!(s.stall_probes, 0, "{s:?}");
    }

    /// Runs the video at 80 ms for 3 s; then the path goes dark and frames of 400 kB are
    /// offered for 4 s more, each made against the acknowledged picture. With `ack_older`,
    /// the oldest frame in flight is acknowledged just after the first probe (it was slow,
    /// not lost). Returns when each probe went, the estimate as the path went dark, and
    /// whether the path was measured then.
    fn video_then_dark(ack_older: bool) -> (Vec<u64>, LinkEstimate, bool) {
        let mut v = flow().with_byte_budget().with_stall_probes();
        let (mut now, mut seq, acks) = run_video_at_80ms(&mut v, 3);
        let last = acks.front().map_or(seq - 1, |&(_, s)| s - 1);
        let e = v.link_estimate().expect("a byte budget");
        let measured = v.bytes.as_ref().is_some_and(DeliveryRate::path_measured);
        let acks_before = v.stats().acks;
        let mut probes = Vec::new();
        for _ in 0..240 {
            if v.can_send(now) {
                v.plan_with_bases(&changing(seq), acked(last));
                if v.stats().stall_probes > probes.len() as u64 {
                    probes.push(now);
                }
                v.on_sent(seq, 400_000, now);
                if ack_older && probes.len() == 1 && v.stats().acks == acks_before {
                    let oldest = v.inflight.front().expect("frames in flight").seq;
                    v.on_ack(oldest, now + FRAME_US / 2);
                }
            }
            seq += 1;
            now += FRAME_US;
        }
        (probes, e, measured)
    }

    /// On a measured path, probes that take longer to cross than the time between them (a
    /// video's frames at 50 Mbit/s) would queue behind one another and each supersede the
    /// one before: one budget of them, then none until an ACK.
    #[test]
    fn probes_longer_than_their_spacing_on_a_measured_path_stop_after_one_budget() {
        let (probes, e, measured) = video_then_dark(false);
        assert!(
            2 * 400_000 <= e.budget_bytes,
            "under half the budget each: {e:?}"
        );
        assert!(measured);
        assert!(!probes.is_empty(), "{e:?}");
        assert!(
            probes.len() as u64 * 400_000 <= e.budget_bytes + 400_000,
            "{probes:?}: probes of 400 kB for a budget of {e:?}"
        );
    }

    /// A probe that takes longer to cross than the time between probes, on a path that
    /// limits: the next goes only once it is overdue itself, its bytes crossed at the
    /// delivery rate and a round trip and the stall's margin passed, not a probe interval
    /// after it (probes of a Mandelbrot zoom's 1.4 MB frames had gone 36 and 73 ms apart).
    #[test]
    fn a_probe_slower_than_the_probe_spacing_delays_the_next_until_it_is_overdue() {
        // An ACK of an older frame after the first probe ends the stall, not the probe's
        // crossing: the rule holds either way.
        for ack_older in [false, true] {
            let (probes, e, measured) = video_then_dark(ack_older);
            assert!(measured, "{e:?}");
            let crossing = e.time_us(400_000);
            assert!(crossing > PROBE_EVERY_US, "{e:?}");
            assert!(probes.len() >= 2, "{probes:?}: {e:?}");
            for w in probes.windows(2) {
                assert!(
                    w[1] - w[0] >= crossing + e.min_rtt_us + STALL_AFTER_US,
                    "ACK of an older frame: {ack_older}; {probes:?}, {e:?}"
                );
            }
        }
    }

    /// In a blackout the transport's window fills with packets the path lost: the probes sent
    /// since the last ACK go beyond the bound the host sets on it, and an ACK ends that.
    #[test]
    fn stall_probes_go_beyond_the_transport_window_bound() {
        let mut v = flow().with_byte_budget().with_stall_probes();
        let (mut now, mut seq, acks) = run_video_at_80ms(&mut v, 3);
        // The transport's round trip shows a queue (twice the minimum).
        let queued = 160_000;
        let bound = v
            .window_bound(TransportRtt::smoothed(queued), now)
            .expect("a measured path that queues");
        let e = v.link_estimate().expect("a byte budget");
        assert_eq!(bound, 2 * e.bdp_bytes(), "{e:?}");
        // The path goes dark.
        let last = acks.front().map_or(seq - 1, |&(_, s)| s - 1);
        let mut probe = None;
        while probe.is_none() {
            if v.can_send(now) {
                v.plan_with_bases(&changing(seq), acked(last));
                v.on_sent(seq, 400_000, now);
                probe = (v.stats().stall_probes > 0).then_some(seq);
            }
            seq += 1;
            now += FRAME_US;
        }
        assert_eq!(
            v.window_bound(TransportRtt::smoothed(queued), now),
            Some(bound + 400_000)
        );
        v.on_ack(probe.expect("sent"), now + 100_000);
        let e = v.link_estimate().expect("a byte budget");
        assert_eq!(
            v.window_bound(TransportRtt::smoothed(queued), now + 100_000),
            Some(2 * e.bdp_bytes())
        );
    }

    /// Runs a viewer with stall probes, stalled after `run_until_dark`, for four seconds of
    /// frames of `bytes`, each made against the acknowledged picture: returns when each probe
    /// went, and the estimate of the path at the end.
    fn probe_for_4s(bytes: u64) -> (Vec<u64>, LinkEstimate) {
        let v = &mut flow().with_byte_budget().with_stall_probes();
        let (now, seq, sent_at) = run_until_dark(v);
        let last = sent_at.first().map_or(seq - 1, |&(s, _)| s - 1);
        let probes = in_the_dark(v, (now, seq), last, bytes, 240);
        (probes, v.link_estimate().expect("a byte budget"))
    }

    /// Offers `v`, whose ACKs stopped after it acknowledged `last`, `frames` frames of `bytes`
    /// at 60 fps from `(now, seq)`, each made against that picture: when each probe went.
    fn in_the_dark(
        v: &mut ViewerFlow,
        (mut now, mut seq): (u64, u64),
        last: u64,
        bytes: u64,
        frames: usize,
    ) -> Vec<u64> {
        let mut probes = Vec::new();
        for _ in 0..frames {
            if v.can_send(now) {
                v.plan_with_bases(&changing(seq), acked(last));
                if v.stats().stall_probes > probes.len() as u64 {
                    probes.push(now);
                }
                v.on_sent(seq, bytes, now);
            }
            seq += 1;
            now += FRAME_US;
        }
        probes
    }

    /// Probes of frames larger than the budget's frame allowance but at most half the budget
    /// (a scroll on a long path): after one budget, each waits until the measured delivery
    /// rate has paid for the ones before it, so a long blackout costs what the path carried.
    #[test]
    fn probes_beyond_the_budget_go_no_faster_than_the_path_delivered() {
        let big = 16_000;
        let (probes, e) = probe_for_4s(big);
        assert!(2 * big <= e.budget_bytes, "{e:?}");
        assert!(probes.len() >= 6, "{probes:?}");
        // Probe n (from 0) goes at the first moment, PROBE_EVERY_US after the one before, when
        // the rate has paid, since the first, for the n probes before it beyond the budget.
        for n in 1..probes.len() {
            let owed =
                (n as u64 * big).saturating_sub(e.budget_bytes) * 1_000_000 / e.rate_bytes_per_s;
            let earliest = (probes[n - 1] + PROBE_EVERY_US).max(probes[0] + owed);
            assert!(
                (earliest..earliest + FRAME_US).contains(&probes[n]),
                "probe {n} at {}, earliest {earliest}: {probes:?}, {e:?}",
                probes[n]
            );
        }
        let (first, last) = (probes[0], *probes.last().unwrap());
        assert!(last - first > 1_000_000, "still probing: {probes:?}");
    }

    /// Probes of frames over half the budget (a video on a slow path, where a stall is more
    /// likely a frame still crossing): one budget of probes, then none until an ACK.
    #[test]
    fn probes_of_frames_over_half_the_budget_stop_after_one_budget() {
        let big = 100_000;
        let (probes, e) = probe_for_4s(big);
        assert!(2 * big > e.budget_bytes && big < e.budget_bytes, "{e:?}");
        // The first is within the budget, the second crosses it, and then none.
        assert_eq!(probes.len(), 2, "{probes:?}, {e:?}");
    }

    /// A colour video's frames on a fast short path ([`run_fast_short_path`]).
    const FAST_SHORT_FRAME: u64 = 192_000;

    /// Runs `v` for a second of [`FAST_SHORT_FRAME`]s on a path of 1 ms and about 470
    /// Mbit/s, each acknowledged when it has crossed: returns the time, the next seq and
    /// the last seq acknowledged.
    fn run_fast_short_path(v: &mut ViewerFlow) -> (u64, u64, u64) {
        let (rate, rtt, frame) = (59_000_000u64, 1_000u64, FAST_SHORT_FRAME);
        let (mut now, mut seq, mut last) = (0u64, 0u64, 0u64);
        while now < 1_000_000 {
            v.on_path_rtt(rtt, now);
            if send_if_room(v, seq, frame, now) {
                v.on_ack(seq, now + frame * 1_000_000 / rate + rtt);
                last = seq;
            }
            seq += 1;
            now += FRAME_US;
        }
        (now, seq, last)
    }

    /// On a fast short path (1 ms, about 470 Mbit/s) a colour video's frames of 192 kB are over
    /// half the budget yet cross in about 3 ms, within the time between probes: a blackout
    /// gets probes past one budget, paced by the delivery rate, until the path is back.
    #[test]
    fn probes_that_cross_within_their_spacing_go_on_past_one_budget() {
        let v = &mut flow().with_byte_budget().with_stall_probes();
        let frame = FAST_SHORT_FRAME;
        let (now, seq, last) = run_fast_short_path(v);
        let e = v.link_estimate().expect("a byte budget");
        assert!(2 * frame > e.budget_bytes, "over half the budget: {e:?}");
        assert!(e.time_us(frame) < PROBE_EVERY_US, "{e:?}");
        // The path goes dark for two seconds.
        let probes = in_the_dark(v, (now, seq), last, frame, 120);
        assert!(probes.len() >= 10, "{probes:?}: {e:?}");
        for w in probes.windows(2) {
            assert!(w[1] - w[0] >= PROBE_EVERY_US, "{probes:?}");
        }
    }

    /// In a blackout the transport's window fills with the frames and probes the path lost.
    /// On a fast short path (probes cross within the time between them, and go on) the least the
    /// window is given grows by every probe sent since the last ACK, past one budget, and so
    /// does its bound where the path queued: the probe sent as the path comes back leaves at
    /// once. Where one budget of probes is all they get (a video at 80 ms and 6 MB/s) the
    /// least does not grow, and the bound grows by as much as itself at most. An ACK ends the
    /// room.
    #[test]
    fn the_window_makes_room_for_every_stall_probe_that_goes_on() {
        let v = &mut flow().with_byte_budget().with_stall_probes();
        let frame = FAST_SHORT_FRAME;
        let (mut now, seq, last) = run_fast_short_path(v);
        let budget = v.link_estimate().expect("a byte budget").budget_bytes;
        assert_eq!(v.window_least(), Some(budget));
        let probes = in_the_dark(v, (now, seq), last, frame, 60);
        now += 60 * FRAME_US;
        let e = v.link_estimate().expect("a byte budget");
        assert!(e.time_us(frame) < PROBE_EVERY_US, "{e:?}");
        let sent = probes.len() as u64 * frame;
        assert!(sent > 2 * e.budget_bytes, "{probes:?}: {e:?}");
        assert_eq!(v.window_least(), Some(e.budget_bytes + sent));
        // The round trip shows a queue (the ends' stalls do on a 1 ms path): a bound, with the
        // same room.
        let queued = TransportRtt::smoothed(20_000);
        let bound = v.window_bound(queued, now).expect("a path that queues");
        let own = v.bytes.as_mut().and_then(|b| b.window_bound(queued, now));
        assert_eq!(Some(bound - sent), own, "{e:?}");
        assert!(
            own.is_some_and(|o| sent > o),
            "not capped at the bound: {own:?}"
        );
        let oldest = v.inflight.front().expect("frames in flight").seq;
        v.on_ack(oldest, now);
        let e = v.link_estimate().expect("a byte budget");
        assert_eq!(v.window_least(), Some(e.budget_bytes));

        // Probes that stop at one budget: no room in the least.
        let mut v = flow().with_byte_budget().with_stall_probes();
        let (now, seq, acks) = run_video_at_80ms(&mut v, 3);
        let last = acks.front().map_or(seq - 1, |&(_, s)| s - 1);
        let probes = in_the_dark(&mut v, (now, seq), last, 400_000, 240);
        let now = now + 240 * FRAME_US;
        let e = v.link_estimate().expect("a byte budget");
        assert!(e.time_us(400_000) > PROBE_EVERY_US, "{e:?}");
        assert!(!probes.is_empty(), "{e:?}");
        assert!(v.probe_bytes > 0, "{probes:?}: {e:?}");
        assert_eq!(v.window_least(), Some(e.budget_bytes), "{probes:?}");
        // The bound's room for them: as much as the bound, no more.
        let queued = TransportRtt::smoothed(160_000);
        let bound = v
            .window_bound(queued, now)
            .expect("a measured path that queues");
        let own = v.bytes.as_mut().and_then(|b| b.window_bound(queued, now));
        let own = own.expect("the same bound");
        assert!(v.probe_bytes > own, "{probes:?}: {own}");
        assert_eq!(bound, 2 * own, "{e:?}");
    }

    /// Probes of a few kilobytes on a path that limits (it queued lately), where the delivery
    /// rate is the content's and such a probe takes longer than the time between probes to
    /// cross at it, but less than a round trip: they go on through a blackout, paced by that
    /// rate, and none waits for the one before it to be overdue. A small probe that takes
    /// longer than a round trip is slow as a large one is.
    #[test]
    fn small_probes_go_on_where_the_rate_is_the_contents() {
        let dark_after_2_kb_frames = || {
            let v = &mut flow().with_byte_budget().with_stall_probes();
            let (now, seq, sent_at) = run_until_dark(v);
            // The transport's round trip showed a queue: the path limits what is sent.
            let _ = v.window_bound(TransportRtt::smoothed(200_000), now);
            assert!(v.bytes.as_ref().is_some_and(DeliveryRate::path_limits));
            let last = sent_at.first().map_or(seq - 1, |&(s, _)| s - 1);
            (v.clone(), (now, seq), last)
        };
        let (mut v, at, last) = dark_after_2_kb_frames();
        let e = v.link_estimate().expect("a byte budget");
        let probe = 3_200;
        let t = e.time_us(probe);
        assert!(t > PROBE_EVERY_US && t < e.min_rtt_us, "{e:?}");
        assert!(2 * probe <= e.budget_bytes, "{e:?}");
        // A second in the dark.
        let probes = in_the_dark(&mut v, at, last, probe, 60);
        assert!(probes.len() >= 10, "{probes:?}: {e:?}");
        let crossing_and_overdue = t + e.min_rtt_us + STALL_AFTER_US;
        for w in probes.windows(2) {
            assert!(w[1] - w[0] >= PROBE_EVERY_US, "{probes:?}");
            // Paced by the rate, not held until the one before is overdue.
            assert!(w[1] - w[0] < crossing_and_overdue, "{probes:?}: {e:?}");
        }
        // Probes of 30 kB take longer than a round trip at that rate: one budget of them.
        let (mut v, at, last) = dark_after_2_kb_frames();
        assert!(e.time_us(30_000) > e.min_rtt_us, "{e:?}");
        let probes = in_the_dark(&mut v, at, last, 30_000, 60);
        assert!(!probes.is_empty() && probes.len() <= 2, "{probes:?}: {e:?}");
    }

    /// Typing on an unlimited 80 ms path: frames of 31 bytes and every sixth of 300, at 60
    /// fps, each ACKed a round trip after it went, but every eighteenth's ACK 150 ms later (a
    /// lost packet the viewer's transport sends again), and the ACKs behind it with it (they
    /// go in order), for two seconds. Returns as [`run_until_dark`], and how many frames
    /// the flow held back.
    fn run_typing_at_80ms(v: &mut ViewerFlow) -> (Dark, u64) {
        let (mut now, mut seq, mut held_back) = (0u64, 0u64, 0u64);
        let (mut acks, mut last_due) = (VecDeque::<(u64, u64, u64)>::new(), 0u64);
        while now < 2_000_000 {
            v.on_path_rtt(80_000, now);
            while acks.front().is_some_and(|&(due, _, _)| due <= now) {
                let (_, s, _) = acks.pop_front().expect("checked");
                v.on_ack(s, now);
            }
            let bytes = if seq % 6 == 0 { 300 } else { 31 };
            if send_if_room(v, seq, bytes, now) {
                let late = if seq % 18 == 0 { 150_000 } else { 0 };
                last_due = (now + 80_000 + late).max(last_due);
                acks.push_back((last_due, seq, now));
            } else {
                held_back += 1;
            }
            seq += 1;
            now += FRAME_US;
        }
        let in_flight = acks.iter().map(|&(_, s, t)| (s, t)).collect();
        ((now, seq, in_flight), held_back)
    }

    /// Typing's frames held back by their count over a long round trip, a few hundred bytes
    /// in flight, do not make its rate surely the path's: a stall probe of 600 bytes, which takes
    /// longer than the round trip at typing's own rate, is not taken for a slow one, and
    /// the probes go on past one budget through a blackout, paced by the rate. Before, a
    /// probe was slow at typing's rate on a path taken as measured, the next waited until it
    /// was overdue, and the probes stopped at one budget: on 50 and 10 Mbit/s paths the
    /// picture was exact again only 232–783 ms after a 200 ms blackout in 11 of 40 cells
    /// (BENCHMARKS.md, "Typing's rate is not the path's").
    #[test]
    fn typing_held_back_by_its_count_does_not_make_its_rate_the_paths() {
        let v = &mut flow().with_byte_budget().with_stall_probes();
        let ((now, seq, sent_at), held_back) = run_typing_at_80ms(v);
        assert!(held_back > 0, "the count never held a frame back");
        let b = v.bytes.as_ref().expect("a byte budget");
        assert!(!b.rate_is_paths(), "{:?}", b.estimate());
        let e = b.estimate();
        let probe = 600;
        assert!(e.time_us(probe) > e.min_rtt_us, "{e:?}");
        let last = sent_at.first().map_or(seq - 1, |&(s, _)| s - 1);
        // A second in the dark.
        let probes = in_the_dark(v, (now, seq), last, probe, 60);
        // The budget as the probes found it (the largest recent frame is a probe's).
        let e = v.link_estimate().expect("a byte budget");
        let paid = |n: u64| (n * probe).saturating_sub(e.budget_bytes) * 1_000_000;
        // Probes beyond one budget, each once the rate has paid for the ones before it.
        assert!(
            probes.len() as u64 * probe > e.budget_bytes + 2 * probe,
            "{probes:?}: {e:?}"
        );
        for n in 1..probes.len() {
            let earliest = (probes[n - 1] + PROBE_EVERY_US)
                .max(probes[0] + paid(n as u64) / e.rate_bytes_per_s);
            assert!(
                (earliest..earliest + FRAME_US).contains(&probes[n]),
                "probe {n} at {}, earliest {earliest}: {probes:?}, {e:?}",
                probes[n]
            );
        }
    }

    /// A small probe over half the budget that takes longer than a round trip at an estimate
    /// that may be the content's (a scroll's 40 kB against a budget of 70 kB at 300 kB/s on
    /// an 80 ms path) goes on past one budget; past a queue, where the estimate is the
    /// path's, it stops there.
    #[test]
    fn a_small_probe_is_slow_only_where_the_rate_is_the_paths() {
        let e = LinkEstimate {
            rate_bytes_per_s: 300_000,
            min_rtt_us: 80_000,
            inflight_bytes: 0,
            budget_bytes: 70_000,
        };
        let probe = 40_000;
        assert!(e.time_us(probe) > e.min_rtt_us && 2 * probe > e.budget_bytes);
        let mut b = DeliveryRate::default();
        assert!(!b.rate_is_paths());
        assert!(!stop_at_one_budget(&e, &b, probe));
        b.on_path_rtt(80_000, 0);
        b.on_sent(1, 20_000, 0);
        b.on_ack(1, 90_000);
        let _ = b.window_bound(TransportRtt::smoothed(200_000), 100_000);
        assert!(b.rate_is_paths());
        assert!(stop_at_one_budget(&e, &b, probe));
    }

    /// Without `with_stall_probes` (a transport that delivers every frame in order), a viewer
    /// whose ACKs stop never has more than its frame limit in flight, so every frame it will
    /// still apply comes before any made against its acknowledged picture, and that picture is
    /// one it keeps.
    #[test]
    fn a_viewer_on_one_ordered_stream_is_never_probed() {
        let mut v = flow().with_byte_budget();
        let (mut now, mut seq, sent_at) = run_until_dark(&mut v);
        let last = sent_at.first().map_or(seq - 1, |&(s, _)| s - 1);
        for _ in 0..120 {
            if v.can_send(now) {
                v.plan_with_bases(&changing(seq), acked(last));
                v.on_sent(seq, 2_000, now);
            }
            seq += 1;
            now += FRAME_US;
        }
        assert_eq!(v.stats().stall_probes, 0, "{:?}", v.stats());
        assert!(
            v.inflight() <= BUDGETED_LIMIT.max as usize,
            "{}",
            v.inflight()
        );
    }

    #[test]
    fn a_viewer_without_a_byte_budget_is_never_probed() {
        let mut v = flow();
        v.on_sent(0, 1000, 0);
        v.on_ack(0, 10_000);
        let mut seq = 1;
        while v.can_send(20_000) {
            v.on_sent(seq, 1000, 20_000);
            seq += 1;
        }
        assert!(
            !v.can_send(1_000_000),
            "at its frame limit, and not stalled-probed"
        );
        assert_eq!(v.next_expiry(), Some(20_000 + 2_000_000));
        assert_eq!(v.stats().stall_probes, 0);
    }

    #[test]
    fn acks_are_cumulative() {
        let mut v = flow();
        for seq in 0..4 {
            v.on_sent(seq, 1000, seq * 10);
        }
        assert_eq!(v.on_ack(2, 100), AckOutcome::Rtt(80));
        assert_eq!(v.inflight(), 1);
    }
}
