//! How many bytes a viewer may have in flight, from what its ACKs show the path delivers:
//! about one frame beyond the bandwidth-delay product, so frames never queue in the network
//! (or in a transport's send buffer) behind older ones; when content needs more than the path
//! carries, frames are skipped (newest wins) instead of queued, and the frame rate falls.
//!
//! - **Delivery rate**, sampled at each ACK as a congestion controller samples it (BBR's rate
//!   sample): the bytes acknowledged between a frame's send and its ACK, over the longer of
//!   the time since the acknowledgement that preceded its send and the time from the send of
//!   the frame that acknowledgement was for to its own send. The estimate is the largest sample of the last
//!   [`RATE_WINDOW_US`], so a quiet moment (a frame smaller than the path) does not lower it.
//!   An ACK is timed from when the frame arrived at the viewer, not from when it was sent:
//!   the viewer says how long it held the frame before acknowledging it (decoding and
//!   applying it, waiting for the one before it), and that time is taken off. Otherwise a
//!   viewer that takes 30 ms to decode a 1 MB picture makes the path look a third slower,
//!   and the queue-ahead rule, timed at that rate, sends each frame only when the one
//!   before it is decoded: transfer and decode never overlap (a video over QUIC at 20 ms
//!   settled at 11–16 fps where the same path carried 26).
//! - **Minimum RTT** over the last [`MIN_RTT_WINDOW_US`]: the path without queues, from small
//!   packets (the session's pings, [`DeliveryRate::on_path_rtt`]), or the transport's own
//!   minimum where the pings' is more than twice it ([`DeliveryRate::window_bound`]): a ping
//!   waits behind the frames' packets queued on a slow link (and on QUIC, until 2026-11-28,
//!   behind the rest of a frame's stream already started), and over a slow link every ping
//!   in the window had (a minimum of 298 ms on a 20 ms path at 10 Mbit/s). A frame's ACK also waits
//!   for the frame itself to cross the path, so frames' round trips are used only until a
//!   ping has come back.
//! - **Budget** = the larger of twice the bandwidth-delay product and the product plus the
//!   largest recent frame (and at least four frames when they are small, up to 64 kB), plus
//!   what the delivery rate carries in the shortest time the viewer recently held a frame
//!   (a frame being decoded is unacknowledged but off the path); another frame may go while
//!   less than that is in flight. When the path limits, frames are as large
//!   as the product or larger, and at most about one frame waits beyond it. When frames are
//!   small, the samples show only what was sent; twice the product lets the samples, and so
//!   the budget, grow each round trip (a congestion window's gain of 2) until the path, not
//!   the content, limits them. Once the transport's round trip has shown a queue
//!   ([`DeliveryRate::queued_lately`]), the estimate is taken as the path's rate, as the
//!   window bound takes it: the budget is then the product plus the largest frame (and at
//!   least two frames, up to 64 kB), so content that needs about what the path carries is
//!   allowed about one frame beyond the product, not a whole product or the four-frame floor.
//!   Grey glxgears on 10 Mbit/s, 20 ms and 1 % loss (BENCHMARKS.md, "Shards spread evenly"),
//!   three seeds: capture → applied p99 86.9 ms before the shards were spread evenly, 83.9
//!   with them, 66.7 with this too; p50 29.9, 71.4 and 53.4. The stall probes' byte budget
//!   and the outrun rule's count follow the smaller budget too. Where a queue is seen that
//!   is not the path's (the two ends' stalls on an unlimited path, see
//!   [`DeliveryRate::unqueued_for`]), the budget stays at this size for the 2 s after;
//!   measured at 20 ms (unlimited, 50 and 10 Mbit/s, 0 and 1 %) and on unlimited 1 and 80 ms
//!   paths (0 and 5 %), where the video at 80 ms and 5 % showed 37.6 pictures a second against
//!   43.9 before.
//! - **Queue ahead.** A frame larger than the product takes longer than a round trip to cross.
//!   (On a path under 5 ms the threshold is the product over 5 ms: below that the round trip
//!   is the ends'.) While one is in flight on a path that limits ([`DeliveryRate::path_busy_until_us`]), the
//!   next frame goes only when the path is estimated to be busy with earlier frames for no
//!   longer than the minimum RTT (at least [`QUEUE_AHEAD_MIN_US`]): when the one before it is
//!   nearly across, not a whole frame before (each frame sent keeps the path busy for its
//!   bytes at the delivery rate).
//!
//! Before the first ACK there is no estimate: at most [`FIRST_FRAMES`] frames go, so a path
//! slower than the content is not flooded before it has been measured.

use std::collections::VecDeque;

/// The delivery-rate estimate is the largest sample this recent (µs).
pub const RATE_WINDOW_US: u64 = 2_000_000;
/// The minimum RTT is the smallest of this recent (µs).
pub const MIN_RTT_WINDOW_US: u64 = 10_000_000;
/// Frames that may be in flight before the first ACK.
pub const FIRST_FRAMES: usize = 2;
/// Small frames (typing, a cursor) may have up to four in flight within this many bytes (two
/// once the path has queued lately), whatever the estimate: when frames are tiny, the samples
/// measure the content, not the path, and a lost packet's retransmission would otherwise hold
/// the next frames back.
pub(crate) const SMALL_FRAMES_FLOOR: u64 = 64 * 1024;
/// A frame may go while the path is estimated to be busy for at most the minimum RTT, or this
/// long (µs): one capture interval at 60 fps, so the next capture still finds the path busy.
const QUEUE_AHEAD_MIN_US: u64 = 17_000;
/// The path queues ([`DeliveryRate::window_bound`]) when the transport's smoothed round trip
/// exceeds the minimum by more than this part of it (a fraction), and by more than
/// [`QUEUE_SEEN_MIN_US`]. A bottleneck's queue under a window of twice the product is up to
/// about one product, more under the floor (the smoothed RTT at the end of a cell, in the
/// outputs of BENCHMARKS.md's "QUIC's window bounded by the host": 53.2 ms over a minimum of
/// 21.3 at 10 Mbit/s, under the 64 KiB floor; 44.1 over 23.5 at 50 Mbit/s), and more on a
/// path under 5 ms, whose bound is taken over 5 ms ([`LinkEstimate::window_bytes`]). A path
/// without one adds the peer's ACK delay (1 ms asked), its scheduling, and a relay's bursts:
/// on an unlimited 20 ms path with 1 % loss, an eighth of the minimum (and 3 ms) was
/// exceeded often enough to bound the window in every run, and the video fell from 59 to 48
/// pictures a second.
const QUEUE_SEEN: (u64, u64) = (1, 2);
const QUEUE_SEEN_MIN_US: u64 = 5_000;
/// A queue has lasted ([`DeliveryRate::unqueued_for`]) when looks at the transport's
/// round trip that showed one, each within [`QUEUE_GAP_US`] of the one before, span this long
/// (µs), or two minimum RTTs if longer. Under the window bound a bottleneck's queue hovers
/// about the mark (a smoothed RTT of 101–135 ms over a minimum of 80 at 50 Mbit/s), so it is
/// not seen at every look.
const QUEUE_HELD_US: u64 = 100_000;
const QUEUE_GAP_US: u64 = 1_000_000;
/// The pings' minimum RTT is taken to have waited behind frames when it is more than this many
/// times the transport's own ([`DeliveryRate::path_min_rtt_us`]).
const PINGS_WAITED: u64 = 2;
/// The smallest window bound ([`DeliveryRate::window_bound`]): about 50 packets, so a path
/// measured slow still gets a few frames' worth of small packets in flight.
pub const WINDOW_BOUND_FLOOR: u64 = 64 * 1024;
/// Frames whose size sets the "one frame" allowance.
const RECENT_FRAMES: usize = 30;
/// The viewer's holding times ([`DeliveryRate::viewer_hold_us`]) are the median of this many.
const HOLDS: usize = 16;
/// Frames sent and not yet acknowledged that are remembered; the in-flight limit keeps far
/// fewer in flight. Beyond, the oldest is forgotten (counted as settled).
const SENT_MAX: usize = 64;
/// Frames given up on that are remembered for a late ACK.
pub(crate) const GIVEN_UP: usize = 8;

#[derive(Debug, Clone, Copy)]
struct Sent {
    id: u64,
    bytes: u64,
    at_us: u64,
    /// Bytes acknowledged, and when the last of them was, as this one was sent.
    delivered: u64,
    delivered_at_us: u64,
    /// When the frame acknowledged last, as this one was sent, had been sent.
    first_sent_us: u64,
    /// A frame was refused for lack of room since the one before: this one's rate sample
    /// measures the path, not the content.
    limited: bool,
    /// One of those refusals was with at least [`SMALL_FRAMES_FLOOR`] in flight, or past a
    /// queue ([`DeliveryRate::refusal_measures_path`]).
    limited_full: bool,
    /// When the path was estimated, as this one was sent, to have carried it: after the
    /// frames still crossing ahead of it, at the delivery rate.
    across_us: u64,
}

/// What the estimator believes of the path (for `/metrics` and `framewire latency`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkEstimate {
    /// Delivery rate, bytes per second (0 before the first sample).
    pub rate_bytes_per_s: u64,
    pub min_rtt_us: u64,
    pub inflight_bytes: u64,
    /// Bytes allowed in flight (0: no byte budget yet).
    pub budget_bytes: u64,
}

/// What a transport that measures its own round trip (QUIC's loss recovery) says of it (µs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransportRtt {
    /// The smoothed round trip, queues included.
    pub smoothed_us: u64,
    /// The smallest round trip the transport saw, its peer's ACK delay not taken off (0: not
    /// known).
    pub min_us: u64,
}

impl TransportRtt {
    /// A smoothed round trip alone.
    pub fn smoothed(us: u64) -> Self {
        TransportRtt {
            smoothed_us: us,
            min_us: 0,
        }
    }
}

/// Bytes that `rate` bytes/s carries in `us` µs.
fn bytes_in(rate: u64, us: u64) -> u64 {
    (rate as u128 * us as u128 / 1_000_000) as u64
}

impl LinkEstimate {
    /// The bandwidth-delay product: the delivery rate over the minimum RTT.
    pub fn bdp_bytes(&self) -> u64 {
        bytes_in(self.rate_bytes_per_s, self.min_rtt_us)
    }

    /// The most a burst sent at once should carry: twice the product over the minimum RTT
    /// and [`QUEUE_SEEN_MIN_US`] (a queue that small is not taken for one). On a 1 ms path
    /// twice the product alone (about 220 kB at 800 Mbit/s) put a video's 450 kB frames on
    /// streams: none went as datagrams in 5 of 8 cells, where 295–418 had.
    pub fn burst_bytes(&self) -> u64 {
        2 * bytes_in(self.rate_bytes_per_s, self.min_rtt_us + QUEUE_SEEN_MIN_US)
    }

    /// What the path holds as far as a sender can tell: the delivery rate over the minimum
    /// RTT, or over [`QUEUE_SEEN_MIN_US`] where the minimum is shorter. Below that, the round
    /// trip a sender sees is set by the two ends (the peer's ACK delay, scheduling), not the
    /// path, and the queue mark allows for it. A frame no larger than this is not taken to
    /// queue on the path ([`DeliveryRate::path_busy_until_us`]; so neither the queue ahead,
    /// `ViewerFlow::keeping_up` nor the stall probes' onset wait for it): on an unlimited
    /// 1 ms path, a 400 kB frame that crosses in 4 ms was, whenever the ends' stalls had
    /// shown a queue, and the next frame was made again for the viewer alone, against its
    /// acknowledged picture; on a video each such frame is a whole second encode, and on two
    /// shared cores they came four to six in a row, 30 ms apart (a trace; BENCHMARKS.md, "A
    /// short path's round trip is the ends'"). The margin is the estimate's: there, at 700
    /// Mbit/s to 1.1 Gbit/s, this is 440–690 kB, over the video's 340–420 kB frames; a
    /// keyframe, or a larger frame, still counts as queued.
    ///
    /// The byte budget (`DeliveryRate::estimate`) and `DeliveryRate::refused_if_full` still
    /// count the product over the minimum alone: the budget adds a whole frame, so it cannot
    /// fall below one, and a refusal there at most marks the path measured.
    pub fn path_bytes(&self) -> u64 {
        bytes_in(
            self.rate_bytes_per_s,
            self.min_rtt_us.max(QUEUE_SEEN_MIN_US),
        )
    }

    /// The window the host bounds the transport's to where the path queues
    /// ([`DeliveryRate::window_bound`]): twice [`LinkEstimate::path_bytes`], the product
    /// over the minimum RTT where that is at least [`QUEUE_SEEN_MIN_US`]. Under a bound of
    /// twice the product over a 0.5 ms minimum, on an unlimited 1 ms path whose smoothed
    /// round trip was 1.3–3 ms, each frame's sample was the bound per smoothed round trip,
    /// under the estimate; the estimate fell, the bound with it, to the floor (64 kB for
    /// 400 kB frames at 770 Mbit/s), and a grey video's p50 went from 15 to 34 ms.
    pub fn window_bytes(&self) -> u64 {
        2 * self.path_bytes()
    }

    /// How long `bytes` take to cross at the delivery rate (µs; 0 before it is measured).
    pub fn time_us(&self, bytes: u64) -> u64 {
        match self.rate_bytes_per_s {
            0 => 0,
            r => (bytes as u128 * 1_000_000 / r as u128) as u64,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct DeliveryRate {
    sent: VecDeque<Sent>,
    /// The last [`GIVEN_UP`] frames given up on ([`DeliveryRate::forget`]), oldest first: a
    /// late ACK is a sample all the same ([`DeliveryRate::on_late_ack`]). Those still crossing
    /// (`true`) still count in `inflight`.
    given_up: VecDeque<(Sent, bool)>,
    delivered: u64,
    delivered_at_us: u64,
    /// When the frame acknowledged last was sent.
    acked_sent_us: u64,
    /// (time, bytes per second), newest last.
    rates: VecDeque<(u64, u64)>,
    /// (time, µs), newest last: small packets' round trips, and frames'.
    rtts: VecDeque<(u64, u64)>,
    frame_rtts: VecDeque<(u64, u64)>,
    frames: VecDeque<u64>,
    inflight: u64,
    /// When the path is estimated to have sent every byte handed to it: each frame sent adds
    /// its bytes at the estimated rate.
    busy_until_us: u64,
    /// A frame was refused since the last one sent ([`DeliveryRate::refused`]).
    refused: bool,
    /// One of those refusals was counted by [`DeliveryRate::refusal_measures_path`].
    refused_full: bool,
    /// When the last ACK of a frame sent while frames were refused came.
    path_sample_at_us: Option<u64>,
    /// When the last ACK of a frame sent after such a counted refusal came.
    full_sample_at_us: Option<u64>,
    /// When the last rate sample that can bound a window for large frames came: one of a
    /// frame sent while frames were refused, or of one at least [`WINDOW_BOUND_FLOOR`] long
    /// ([`DeliveryRate::window_bound`]).
    bound_sample_at_us: Option<u64>,
    /// How long the viewer held each of the last [`HOLDS`] frames before its ACK (µs).
    holds: VecDeque<u64>,
    /// How long the next frame takes to make before it can go ([`DeliveryRate::set_make_lead`]).
    make_lead_us: u64,
    /// When the transport's round trip last showed a queue ([`DeliveryRate::window_bound`]).
    queue_seen_at_us: Option<u64>,
    /// When the current run of looks that showed a queue began (looks that showed one no
    /// more than [`QUEUE_GAP_US`] apart), and when such a run last spanned [`QUEUE_HELD_US`]
    /// ([`DeliveryRate::window_bound`]).
    queue_since_us: Option<u64>,
    queue_held_at_us: Option<u64>,
    /// The first look at the transport's round trip with an estimate to compare it to.
    watched_since_us: Option<u64>,
    /// The transport's own minimum round trip, as last told (0: none;
    /// [`DeliveryRate::window_bound`]).
    transport_min_rtt_us: u64,
    /// The latest moment the estimator was told of (a send, an ACK, a bound asked for).
    clock_us: u64,
}

impl DeliveryRate {
    /// A frame of `bytes` was sent as `id` at `now`.
    pub fn on_sent(&mut self, id: u64, bytes: u64, now: u64) {
        self.clock_us = self.clock_us.max(now);
        if let Some(old) = make_room(&mut self.sent, SENT_MAX) {
            self.inflight = self.inflight.saturating_sub(old.bytes);
        }
        if self.sent.is_empty() && self.crossing_given_up().next().is_none() {
            // Nothing was in flight: the time since the last ACK is idle, not delivery. (A
            // frame given up on while crossing is in flight: its late ACK, counted over the
            // time since this send alone, made a sample of 7 times the path in a unit test.)
            self.delivered_at_us = now;
            self.acked_sent_us = now;
        }
        self.sent.push_back(Sent {
            id,
            bytes,
            at_us: now,
            delivered: self.delivered,
            delivered_at_us: self.delivered_at_us,
            first_sent_us: self.acked_sent_us,
            limited: std::mem::take(&mut self.refused),
            limited_full: std::mem::take(&mut self.refused_full),
            across_us: now,
        });
        self.inflight += bytes;
        self.make_lead_us = 0;
        let takes = self.estimate().time_us(bytes);
        self.busy_until_us = self.busy_until_us.max(now) + takes;
        if let Some(s) = self.sent.back_mut() {
            s.across_us = self.busy_until_us;
        }
        make_room(&mut self.frames, RECENT_FRAMES);
        self.frames.push_back(bytes);
    }

    /// The viewer acknowledged `id` at `now`; frames sent before it are settled (lost or
    /// overtaken) and do not count as delivered.
    pub fn on_ack(&mut self, id: u64, now: u64) {
        self.on_ack_held(id, now, 0);
    }

    /// As [`DeliveryRate::on_ack`], for an ACK the viewer sent `held_us` after the frame
    /// arrived whole: the sample is timed as if it had been sent on arrival. An ACK is never
    /// taken to be faster than a minimum RTT after its frame was sent: a viewer that says it
    /// held a frame longer than that cannot make the path look faster than it is.
    pub fn on_ack_held(&mut self, id: u64, now: u64, held_us: u64) {
        self.on_ack_keeping(id, now, held_us, |_| false);
    }

    /// As [`DeliveryRate::on_ack_held`], where the frames sent before `id` that `stays` names
    /// (in flight, or given up on while still crossing) are still crossing (it overtook
    /// them).
    pub fn on_ack_keeping(&mut self, id: u64, now: u64, held_us: u64, stays: impl Fn(u64) -> bool) {
        self.clock_us = self.clock_us.max(now);
        let Some(pos) = self.sent.iter().position(|s| s.id == id) else {
            return;
        };
        let s = self.sent.remove(pos).expect("found above");
        self.inflight = self.inflight.saturating_sub(s.bytes);
        let inflight = &mut self.inflight;
        self.sent.retain(|x| {
            let settled = x.id < id && !stays(x.id);
            if settled {
                *inflight = inflight.saturating_sub(x.bytes);
            }
            !settled
        });
        // Frames given up on are settled as the ones in flight are.
        let inflight = &mut self.inflight;
        self.given_up.retain(|&(x, crossing)| {
            let settled = !stays(x.id);
            if settled && crossing {
                *inflight = inflight.saturating_sub(x.bytes);
            }
            !settled
        });
        self.sample(s, now, held_us);
    }

    /// A frame was sent that supersedes every frame before it (the transport gives up on
    /// them): those given up on no longer count as crossing.
    pub fn on_superseded(&mut self) {
        self.stop_waiting_before(u64::MAX);
    }

    /// The frames given up on that still count as crossing, oldest first.
    fn crossing_given_up(&self) -> impl Iterator<Item = &Sent> {
        self.given_up.iter().filter(|(_, c)| *c).map(|(x, _)| x)
    }

    /// The ACK of `id`, one of the frames given up on ([`DeliveryRate::forget`]): its
    /// sample is taken as any other (see `ViewerFlow::settle_late`); it is no longer in
    /// flight. An `overtaking` ACK (its frame arrived before its base) settles that frame alone: the
    /// ones given up on before it may still be crossing.
    pub fn on_late_ack(&mut self, id: u64, now: u64, held_us: u64, overtaking: bool) {
        self.clock_us = self.clock_us.max(now);
        let Some(i) = self.given_up.iter().position(|(s, _)| s.id == id) else {
            return;
        };
        let (s, _) = self.given_up[i];
        let from = if overtaking { i } else { 0 };
        for (x, crossing) in self.given_up.drain(from..=i) {
            if crossing {
                self.inflight = self.inflight.saturating_sub(x.bytes);
            }
        }
        self.sample(s, now, held_us);
    }

    /// The rate, round-trip and busy-time samples of frame `s`, acknowledged at `now` by an
    /// ACK sent `held_us` after it arrived.
    fn sample(&mut self, s: Sent, now: u64, held_us: u64) {
        // Before a ping has come back nothing bounds the claim: it is not taken.
        let fastest = match self.path_min_rtt_us() {
            0 => now,
            r => s.at_us + r,
        };
        let arrived = now.saturating_sub(held_us).max(fastest).min(now);
        make_room(&mut self.holds, HOLDS);
        self.holds.push_back(now - arrived);
        self.delivered += s.bytes;
        self.delivered_at_us = self.delivered_at_us.max(arrived);
        // A late ACK is for a frame sent before the last one acknowledged.
        self.acked_sent_us = self.acked_sent_us.max(s.at_us);
        // The sample's times are the arrival's; what is still in flight, the ACK's.
        let at = self.delivered_at_us;
        if s.limited {
            self.path_sample_at_us = Some(at);
        }
        if s.limited_full {
            self.full_sample_at_us = Some(at);
        }
        if s.limited || s.bytes >= WINDOW_BOUND_FLOOR {
            self.bound_sample_at_us = Some(at);
        }
        // Over the longer of the ACKs' span and the sends' span, as BBR takes a rate sample:
        // frames sent long before this one but acknowledged after it was sent (they crossed
        // together after a stall, or shared the path) count in its bytes, and the ACKs alone
        // would give them the short time since the ACK before it (2.8× the path, measured
        // after a blackout at 10 Mbit/s).
        let acks = at.saturating_sub(s.delivered_at_us);
        let sends = s.at_us.saturating_sub(s.first_sent_us);
        let interval = acks.max(sends).max(1);
        let rate = (self.delivered - s.delivered) * 1_000_000 / interval;
        push_window(&mut self.rates, at, rate, RATE_WINDOW_US);
        let rtt = at.saturating_sub(s.at_us);
        push_window(&mut self.frame_rtts, at, rtt, MIN_RTT_WINDOW_US);
        // The busy time is counted from the sends, at the estimate as each went, and falls
        // short of the path's where a frame was sent before there was an estimate (a large
        // one right behind a keyframe counted for none: every later frame would be taken to
        // have the path a whole frame sooner than it did, and go a frame early, for as long as
        // frames followed one another) or crossed slower than the estimate (its lost packets
        // sent again). So each ACK makes it at least what is still in flight takes to cross
        // after this frame had crossed (a minimum round trip before it arrived, at the
        // latest). An ACK late for a retransmission then holds the next frame back a little
        // where the path was free sooner; on the Mandelbrot zoom at 50 Mbit/s and 1 % loss,
        // applying this only while a frame sent before any estimate was in flight gave a
        // p99 of 482 ms against 405 (medians of six runs; BENCHMARKS.md, "A viewer's first
        // picture").
        // With the cap of `cap_busy` (what is in flight, from now), from one estimate.
        let e = self.estimate();
        let (crossed, left) = (
            arrived.saturating_sub(e.min_rtt_us),
            e.time_us(self.inflight),
        );
        self.busy_until_us = self.busy_until_us.max(crossed + left).min(now + left);
    }

    /// How long the viewer usually holds a frame before acknowledging it (µs): the median of
    /// the last [`HOLDS`] (0 before any). An ACK is due that much after its frame arrives;
    /// the median, because a frame that waited for a lost one before it holds far longer.
    pub fn viewer_hold_us(&self) -> u64 {
        // Asked at every send decision: sorted on the stack, not collected.
        let mut h = [0u64; HOLDS];
        let n = self.holds.len();
        for (d, s) in h.iter_mut().zip(&self.holds) {
            *d = *s;
        }
        if n == 0 {
            return 0;
        }
        *h[..n].select_nth_unstable(n / 2).1
    }

    /// The smallest round trip of small packets (pings) within [`MIN_RTT_WINDOW_US`], or the
    /// transport's own minimum where the pings' is more than [`PINGS_WAITED`] times it: every
    /// ping waited behind frames (0 when no ping came back). Not the smaller of the two
    /// always: over the emulated link, quinn's minimum was now and then well under the
    /// path's (12.4 ms on a 20 ms path, where the pings said 20.1), and the queue that seemed
    /// to show bounded the window of an unlimited path, and the video fell to 27 pictures a
    /// second of 60.
    fn path_min_rtt_us(&self) -> u64 {
        match self.rtts.iter().map(|&(_, r)| r).min() {
            None => 0,
            Some(r)
                if self.transport_min_rtt_us > 0
                    && r > PINGS_WAITED * self.transport_min_rtt_us =>
            {
                self.transport_min_rtt_us
            }
            Some(r) => r,
        }
    }

    /// The path is busy for no longer than what is still in flight takes to cross from `now`:
    /// frames settled without crossing (overtaken, given up on, reset by the transport) no
    /// longer count.
    fn cap_busy(&mut self, now: u64) {
        let left = self.estimate().time_us(self.inflight);
        self.busy_until_us = self.busy_until_us.min(now + left);
    }

    /// A small packet's round trip (a ping's), `rtt_us`, measured at `now`.
    pub fn on_path_rtt(&mut self, rtt_us: u64, now: u64) {
        push_window(&mut self.rtts, now, rtt_us, MIN_RTT_WINDOW_US);
    }

    /// Frame `id` was given up on at `now` (an ACK timeout), with the frames sent before it:
    /// no longer in flight. One `crossing` (on a transport stream of its own, which delivers
    /// it however slowly) still counts in the bytes in flight until an ACK settles it (its
    /// own, or a later frame's) or [`DeliveryRate::stop_waiting_before`] gives it up for good.
    /// Its bytes are on the path, and a frame sent in their place would queue behind them.
    pub fn forget(&mut self, id: u64, crossing: bool, now: u64) {
        while self.sent.front().is_some_and(|s| s.id <= id) {
            let s = self.sent.pop_front().expect("front exists");
            let crossing = crossing && s.id == id;
            if !crossing {
                self.inflight = self.inflight.saturating_sub(s.bytes);
            }
            if let Some((old, true)) = make_room(&mut self.given_up, GIVEN_UP) {
                self.inflight = self.inflight.saturating_sub(old.bytes);
            }
            self.given_up.push_back((s, crossing));
        }
        self.cap_busy(now);
    }

    /// Frames given up on that were still crossing ([`DeliveryRate::forget`]) and were sent
    /// at `t` or before are given up for good: their bytes no longer count in flight.
    pub fn stop_waiting_before(&mut self, t: u64) {
        for (x, crossing) in self.given_up.iter_mut() {
            if *crossing && x.at_us <= t {
                *crossing = false;
                self.inflight = self.inflight.saturating_sub(x.bytes);
            }
        }
    }

    /// When the oldest frame given up on while still crossing was sent, if any.
    pub fn oldest_crossing_sent_us(&self) -> Option<u64> {
        self.crossing_given_up().next().map(|x| x.at_us)
    }

    /// There was no room ([`DeliveryRate::has_room`] said no): the next frame sent waited for
    /// the path, so its rate sample measures the path. Not before the first estimate: the
    /// first frames are held back whatever the path. Whether the refusal also shows the
    /// rate is the path's is [`DeliveryRate::refusal_measures_path`]'s.
    pub fn refused(&mut self) {
        if self.estimate().budget_bytes > 0 {
            self.mark_refused();
        }
    }

    /// A frame was refused by the count of frames in flight: as [`DeliveryRate::refused`]
    /// when more is in flight than the bandwidth-delay product and what the path carries while
    /// the viewer holds a frame (as the budget counts it: a frame being decoded is off the
    /// path), under an estimate.
    pub fn refused_if_full(&mut self) {
        let e = self.estimate();
        let rate = e.rate_bytes_per_s;
        if rate > 0 && self.inflight > e.bdp_bytes() + self.hold_bytes(rate) {
            self.mark_refused();
        }
    }

    /// The next frame sent waited for room; [`DeliveryRate::refusal_measures_path`] says
    /// whether its sample also shows the path's rate.
    fn mark_refused(&mut self) {
        self.refused = true;
        self.refused_full |= self.refusal_measures_path();
    }

    /// A frame refused now surely waited for the path, not for the content's own round trip: at
    /// least [`SMALL_FRAMES_FLOOR`] is in flight, or the transport's round trip showed a
    /// queue lately ([`DeliveryRate::queued_lately`]). Fewer bytes are held back by the frame
    /// count, or by the small frames' floor, over a long round trip whatever the path
    /// carries, and the next frame's sample is still the content's rate. Typing on a 50
    /// Mbit/s path of 80 ms (frames of a few hundred bytes at most, eight in flight, 0.8 kB)
    /// was refused by the count when ACKs were late; its own 3.7 kB/s was then taken for the
    /// path's, a stall probe of 335 bytes "took" 91 ms to cross at it, longer than the round
    /// trip, and the probes stopped until an ACK came. After a 200 ms blackout the picture
    /// was exact again only 232–783 ms later in 11 of 40 such cells, against a bound of 113,
    /// and within it in all 40 where such refusals did not count at all (8e1dead), and in all
    /// 22 where they decided only a small probe's slowness ([`DeliveryRate::rate_is_paths`];
    /// BENCHMARKS.md, "Typing's rate is not the path's").
    /// On a path slow enough to queue such frames for more than half its round trip, QUIC's
    /// round trip shows it; TCP reports none, and there is never probed.
    fn refusal_measures_path(&self) -> bool {
        self.inflight >= SMALL_FRAMES_FLOOR || self.queued_lately()
    }

    /// What the path carries at `rate` in the shortest time the viewer recently held a frame.
    /// The shortest, not the median: frames queued at a viewer slower than the content would
    /// make the median grow, and the budget with it.
    fn hold_bytes(&self, rate: u64) -> u64 {
        bytes_in(rate, self.holds.iter().copied().min().unwrap_or(0))
    }

    /// When the path is estimated to have sent every frame in flight (µs): each frame sent
    /// keeps it busy for its bytes at the delivery rate, from when it was sent or the frame
    /// before it was across. Only while large frames queue on the path: the estimate is the
    /// path's ([`DeliveryRate::path_limits`]: a frame sent after there was no room was
    /// acknowledged within [`RATE_WINDOW_US`] of the last ACK, or the path queued lately) and
    /// a frame in flight is larger than what the path holds ([`LinkEstimate::path_bytes`]:
    /// the bandwidth-delay product, over 5 ms at least), so it takes longer than a round
    /// trip to cross. Otherwise `None`: smaller frames are the budget's business, and an estimate that may be the content's rate,
    /// far below the path's, would see a queue where there is none.
    pub fn path_busy_until_us(&self) -> Option<u64> {
        self.busy_with(&self.estimate())
    }

    /// Frame `id`'s bytes, and when it was estimated, as it went, to be across the path (µs),
    /// while it is in flight (not yet acknowledged, passed or given up on).
    pub(crate) fn crossing(&self, id: u64) -> Option<(u64, u64)> {
        self.sent
            .iter()
            .find(|s| s.id == id)
            .map(|s| (s.bytes, s.across_us))
    }

    /// [`DeliveryRate::path_busy_until_us`] under the estimate `e`.
    pub(crate) fn busy_with(&self, e: &LinkEstimate) -> Option<u64> {
        // A queue seen counts as well as a frame held back: after a keyframe of 3.3 MB at
        // 50 Mbit/s (which queued), the next two frames of 1.5 MB went 50 ms apart before
        // either was held back, and each frame after them queued behind another for half a
        // second until one was (BENCHMARKS.md, "A viewer's first picture").
        let holds = e.path_bytes();
        let large = self.sent.iter().any(|s| s.bytes > holds);
        (self.path_limits() && large).then_some(self.busy_until_us)
    }

    /// A frame sent while others were refused for lack of room was acknowledged within
    /// [`RATE_WINDOW_US`] of the last ACK: the estimate is the path's rate, not the content's.
    pub(crate) fn path_measured(&self) -> bool {
        self.path_sample_at_us
            .is_some_and(|t| self.delivered_at_us.saturating_sub(t) <= RATE_WINDOW_US)
    }

    /// The estimate is surely the path's rate: a frame sent after a refusal that
    /// [`DeliveryRate::refusal_measures_path`] counts was acknowledged within
    /// [`RATE_WINDOW_US`] of the last ACK, or the transport's round trip showed a queue
    /// lately. Stricter than [`DeliveryRate::path_limits`], which also takes refusals with
    /// few bytes in flight: those keep the queue-ahead rule and the stall probes' onset as
    /// they were (taking them as the content's there, for every rule, made the video's p99
    /// after a blackout at 80 ms 540 ms against 186 in four rounds, unexplained;
    /// BENCHMARKS.md, "Typing's rate is not the path's"); this decides only whether a small
    /// stall probe is slow.
    pub(crate) fn rate_is_paths(&self) -> bool {
        self.queued_lately()
            || self
                .full_sample_at_us
                .is_some_and(|t| self.delivered_at_us.saturating_sub(t) <= RATE_WINDOW_US)
    }

    /// The most a transport's congestion window should allow in flight, at `now`: twice the
    /// bandwidth-delay product (over 5 ms at least), as BBR's window gain
    /// ([`LinkEstimate::window_bytes`], at least
    /// [`WINDOW_BOUND_FLOOR`]), where the path was seen to queue within [`RATE_WINDOW_US`]:
    /// the transport's smoothed round trip, `rtt.smoothed_us`, longer than the minimum by more
    /// than [`QUEUE_SEEN`] of it and [`QUEUE_SEEN_MIN_US`]. A
    /// transport pacing at its window per round trip (quinn: 1.25 windows per smoothed RTT)
    /// then sends a frame's packets at a small multiple of the rate the path takes them (1.25
    /// to 2.5 times), instead of a burst its queue drops. Under that bound the queue is small, so it is kept
    /// for a while after it was last seen; lifted at once, the next frames' burst filled the
    /// queue again. A queue says the path, not the content, sets the rate the frames' ACKs
    /// show; it is seen before the first frame refused for lack of room has been acknowledged
    /// ([`DeliveryRate::path_measured`]), which on a slow path took seconds while the first
    /// frames' bursts were dropped.
    ///
    /// `None` elsewhere. Where the estimate may be the content's rate, far below the path's,
    /// a bound would hold the content to it. And on a lossy path without a queue, frames wait
    /// a round trip for their lost packets, so the estimate falls well below the path: bound
    /// to twice that product, a video at 80 ms and 1 % loss went from 24 to 9 pictures a
    /// second.
    ///
    /// Where one of the last frames sent is at least [`WINDOW_BOUND_FLOOR`] long, `None` too
    /// until one of the rate samples the estimate is made of (those of the [`RATE_WINDOW_US`]
    /// before the last ACK) came from such a frame, or from one sent while frames were
    /// refused. A frame under the floor crosses whole within the floor's bound, whatever the
    /// estimate; a larger one crosses at a rate set by the bound, and a small frame's sample
    /// is the content's rate, however the path queues. At the start of a colour Mandelbrot
    /// zoom at 50 Mbit/s, the first ACK was of a frame of a few hundred bytes while the first
    /// keyframe's burst showed a queue: the window was bounded to the floor, the next two
    /// frames (1.7 and 1.6 MB) were acknowledged 1.4 and 1.8 s after they went, their samples
    /// (10 and 13 Mbit/s) kept the bound low for two seconds more, and the viewer's p99 over
    /// the next 6 s was 1.9 s. The size screens out tiny frames and no more: a frame of `b`
    /// bytes sent alone samples `b / (b / rate + RTT)`, under the path's rate.
    ///
    /// The transport's own minimum round trip (`rtt.min_us`, 0: none) counts
    /// toward the minimum RTT (where the pings' is more than twice it) once a ping has come
    /// back: before any ACK, quinn reports its initial guess (333 ms). It is the connection's
    /// smallest, not a recent window's: quinn keeps it until the peer moves. A path whose
    /// delay more than doubled for good keeps a minimum that is too small: the path then
    /// looks queued, the bound is twice a product that is too small, the delivery rate falls
    /// under it, and the bound with it, down to [`WINDOW_BOUND_FLOOR`]. Not handled: such a
    /// path is rare beside pings that waited behind frames, which is common.
    pub fn window_bound(&mut self, rtt: TransportRtt, now: u64) -> Option<u64> {
        self.clock_us = self.clock_us.max(now);
        self.transport_min_rtt_us = rtt.min_us;
        let e = self.estimate();
        if e.rate_bytes_per_s == 0 || e.min_rtt_us == 0 {
            return None;
        }
        self.watched_since_us.get_or_insert(now);
        let queue = rtt.smoothed_us.saturating_sub(e.min_rtt_us);
        if queue > (e.min_rtt_us * QUEUE_SEEN.0 / QUEUE_SEEN.1).max(QUEUE_SEEN_MIN_US) {
            let run_on = self
                .queue_seen_at_us
                .is_some_and(|t| now.saturating_sub(t) <= QUEUE_GAP_US);
            if !run_on {
                self.queue_since_us = Some(now);
            }
            self.queue_seen_at_us = Some(now);
            let since = self.queue_since_us.unwrap_or(now);
            if now.saturating_sub(since) >= QUEUE_HELD_US.max(2 * e.min_rtt_us) {
                self.queue_held_at_us = Some(now);
            }
        }
        // Among the samples the estimate is made of (as in `path_measured`).
        let large = self.frames.iter().any(|&b| b >= WINDOW_BOUND_FLOOR);
        let sampled = !large
            || self
                .bound_sample_at_us
                .is_some_and(|t| self.delivered_at_us.saturating_sub(t) <= RATE_WINDOW_US);
        (sampled && self.queued_lately()).then(|| e.window_bytes().max(WINDOW_BOUND_FLOOR))
    }

    /// Whether a queue lasted (as in [`DeliveryRate::unqueued_for`]) within `us` of `now`.
    pub fn queue_held_within(&self, us: u64, now: u64) -> bool {
        self.queue_held_at_us
            .is_some_and(|t| now.saturating_sub(t) <= us)
    }

    /// Whether the transport's round trip has been watched ([`DeliveryRate::window_bound`])
    /// for `watched_us` before `now`, and no queue lasted within `us` of it: one seen at looks
    /// that span [`QUEUE_HELD_US`] (or two minimum RTTs, if longer). A bottleneck's queue
    /// under the window bound lasts; on a path without one, with two cores shared by the
    /// host, the viewer and the link's relay, the smoothed RTT went over the mark now and
    /// then for a moment (an unlimited 20 ms path, 1 % loss, where frames went as datagrams).
    pub fn unqueued_for(&self, watched_us: u64, us: u64, now: u64) -> bool {
        self.watched_since_us
            .is_some_and(|t| now.saturating_sub(t) >= watched_us)
            && self
                .queue_held_at_us
                .is_none_or(|t| now.saturating_sub(t) > us)
    }

    /// The latest moment the estimator was told of (a send, an ACK, a look at the
    /// transport's round trip).
    pub fn clock_us(&self) -> u64 {
        self.clock_us
    }

    /// The transport's round trip showed a queue within [`RATE_WINDOW_US`].
    pub fn queued_lately(&self) -> bool {
        self.queue_seen_at_us
            .is_some_and(|t| self.clock_us.saturating_sub(t) <= RATE_WINDOW_US)
    }

    /// The path limits what is sent: it was measured ([`DeliveryRate::path_measured`]) or
    /// queued lately ([`DeliveryRate::window_bound`]). Then the estimate is the path's rate,
    /// frames queue behind one another at it, and a frame that takes longer than a frame
    /// interval to cross keeps it busy.
    pub(crate) fn path_limits(&self) -> bool {
        self.path_measured() || self.queued_lately()
    }

    /// The size of the oldest frame in flight (0 when none is).
    pub fn oldest_bytes(&self) -> u64 {
        self.sent.front().map_or(0, |s| s.bytes)
    }

    /// When a frame sent at `sent_us`, the oldest in flight, has crossed the path under the
    /// estimate `e`: its bytes at the delivery rate after its send, or on a path that limits
    /// ([`DeliveryRate::path_limits`]) after the frames that were still crossing ahead of it
    /// when it was sent, as estimated then. Frames smaller than the bandwidth-delay product
    /// queue too: on a path of 50 Mbit/s and 80 ms, with 400 kB frames (64 ms to cross) two
    /// or three in flight, each one's ACK comes 64 ms later than the one before it. Where the estimate may be the
    /// content's rate, each frame takes about a frame interval at it, and frames would seem
    /// to queue where nothing does.
    pub(crate) fn oldest_across_us(&self, sent_us: u64, e: &LinkEstimate) -> u64 {
        let own = sent_us + e.time_us(self.oldest_bytes());
        match self.sent.front() {
            Some(s) if self.path_limits() => own.max(s.across_us),
            _ => own,
        }
    }

    pub fn estimate(&self) -> LinkEstimate {
        let rate = self.rates.iter().map(|&(_, r)| r).max().unwrap_or(0);
        let min_rtt = match self.path_min_rtt_us() {
            0 => self.frame_rtts.iter().map(|&(_, r)| r).min().unwrap_or(0),
            r => r,
        };
        let budget = if rate == 0 {
            0
        } else {
            let frame = self.frames.iter().copied().max().unwrap_or(0);
            let bdp = bytes_in(rate, min_rtt);
            // A frame the viewer is decoding is still unacknowledged but no longer on the
            // path: what the path carries meanwhile is room too.
            // Past a queue the estimate is the path's own: a gain of 1, not 2, and two
            // small frames, not four (module doc, "Budget").
            let (gain, small_frames) = if self.queued_lately() { (1, 2) } else { (2, 4) };
            (gain * bdp)
                .max(bdp + frame)
                .max((small_frames * frame).min(SMALL_FRAMES_FLOOR))
                + self.hold_bytes(rate)
        };
        LinkEstimate {
            rate_bytes_per_s: rate,
            min_rtt_us: min_rtt,
            inflight_bytes: self.inflight,
            budget_bytes: budget,
        }
    }

    /// Whether another frame may go at `now`: less than the budget is in flight and, while a
    /// frame larger than what the path holds is in flight on a path that limits, the path
    /// is not estimated to be busy with earlier frames for longer than the minimum RTT (or
    /// [`QUEUE_AHEAD_MIN_US`]). Before the first ACK, while fewer than [`FIRST_FRAMES`] are in
    /// flight, those given up on while still crossing counted ([`DeliveryRate::forget`]).
    ///
    /// The budget alone lets a frame go while up to a budget is in flight, so with frames
    /// larger than the product (a lossless video on 10 Mbit/s) two whole frames queued, and on
    /// QUIC, each on a stream of its own, they shared the path: both took twice as long. The
    /// queue ahead is counted in time, not in frames: a frame goes when the one before it is
    /// nearly across, and the path stays busy.
    pub fn has_room(&self, now: u64) -> bool {
        let e = self.estimate();
        match e.budget_bytes {
            0 => self.sent.len() + self.crossing_given_up().count() < FIRST_FRAMES,
            b => self.inflight < b && self.room_with(&e).is_none_or(|t| now >= t),
        }
    }

    /// When the queue ahead, as [`DeliveryRate::has_room`] counts it, will be short enough for
    /// another frame, while a large frame is in flight on a path that limits (`None` otherwise).
    /// No ACK marks that moment: the host sets a timer for it.
    pub fn room_at(&self) -> Option<u64> {
        self.room_with(&self.estimate())
    }

    fn room_with(&self, e: &LinkEstimate) -> Option<u64> {
        let busy = self.busy_with(e)?;
        (self.inflight < e.budget_bytes)
            .then(|| busy.saturating_sub(e.min_rtt_us.max(QUEUE_AHEAD_MIN_US) + self.make_lead_us))
    }

    /// The next frame takes `us` to make before it can go (a delta made for this viewer
    /// alone, against the picture it will hold, because the frames between were skipped),
    /// until it is sent. The queue-ahead rule lets it start that much sooner, so making it
    /// overlaps the crossing of the frame before it instead of following it. A colour video
    /// at 50 Mbit/s spent 54 ms of CPU on each such frame after 136 ms of crossing.
    pub fn set_make_lead(&mut self, us: u64) {
        self.make_lead_us = us;
    }
}

/// Adds a sample at `now` and forgets those older than `window`.
/// Makes room for one more in `q`, which holds at most `cap`: takes off the oldest when it is
/// full, and returns it.
pub(crate) fn make_room<T>(q: &mut VecDeque<T>, cap: usize) -> Option<T> {
    if q.len() >= cap {
        q.pop_front()
    } else {
        None
    }
}

fn push_window(w: &mut VecDeque<(u64, u64)>, now: u64, v: u64, window: u64) {
    w.push_back((now, v));
    while w
        .front()
        .is_some_and(|&(t, _)| now.saturating_sub(t) > window)
    {
        w.pop_front();
    }
    // Bounded by the ACK rate over the window; keep a hard cap all the same.
    while w.len() > 4096 {
        w.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path of `rate` bytes/s and `rtt` µs, fed frames of `frame` bytes every `every` µs
    /// whenever the estimator has room: returns (frames sent, the estimate at the end, the
    /// largest queueing delay a frame saw after the first second, once the path is measured).
    fn drive(rate: u64, rtt: u64, frame: u64, every: u64, secs: u64) -> (u64, LinkEstimate, u64) {
        let (sent, e, queue, _) = drive_held(rate, rtt, frame, every, secs, 0);
        (sent, e, queue)
    }

    /// As [`drive`], with a viewer that holds each frame `hold` µs after it arrives before it
    /// ACKs it (decoding, one at a time), and says so in its ACK.
    fn drive_held(
        rate: u64,
        rtt: u64,
        frame: u64,
        every: u64,
        secs: u64,
        hold: u64,
    ) -> (u64, LinkEstimate, u64, DeliveryRate) {
        let mut d = DeliveryRate::default();
        // When the viewer is done with the frame before (it decodes one at a time).
        let mut viewer_free_at = 0u64;
        // The path: a FIFO at `rate`; each frame is acknowledged when its last byte has crossed
        // plus the round trip.
        let mut link_free_at = 0u64;
        let mut acks: VecDeque<(u64, u64, u64)> = VecDeque::new();
        let (mut sent, mut id, mut worst_queue) = (0, 0, 0);
        let mut t = 0;
        while t < secs * 1_000_000 {
            if t % 100_000 == 0 {
                // A ping every 100 ms: it queues behind frames on the path too.
                let wait = link_free_at.saturating_sub(t);
                d.on_path_rtt(rtt + wait, t + rtt + wait);
            }
            while acks.front().is_some_and(|&(at, _, _)| at <= t) {
                let (at, i, held) = acks.pop_front().unwrap();
                d.on_ack_held(i, at, held);
            }
            if t % every == 0 && !d.has_room(t) {
                d.refused();
            }
            if t % every == 0 && d.has_room(t) {
                let start = link_free_at.max(t);
                if t >= 1_000_000 {
                    worst_queue = worst_queue.max(start - t);
                }
                link_free_at = start + frame * 1_000_000 / rate;
                // The ACK leaves when the viewer has decoded it: half the RTT there, half back.
                let arrived = link_free_at + rtt / 2;
                viewer_free_at = viewer_free_at.max(arrived) + hold;
                let held = viewer_free_at - arrived;
                acks.push_back((viewer_free_at + rtt / 2, id, held));
                d.on_sent(id, frame, t);
                id += 1;
                sent += 1;
            }
            t += 1_000;
        }
        (sent, d.estimate(), worst_queue, d)
    }

    #[test]
    fn a_fast_path_takes_every_frame() {
        // 12.5 MB/s, 80 ms: 60 frames of 10 kB a second need 0.6 MB/s.
        let (sent, e, queue) = drive(12_500_000, 80_000, 10_000, 16_000, 4);
        // The first round trips ramp up from two frames in flight; then every frame goes.
        assert!(sent >= 240, "sent {sent} of 250: {e:?}");
        assert!(queue <= 1_000, "no queue: {queue} µs");
    }

    #[test]
    fn a_slow_path_sheds_frames_and_keeps_the_queue_to_about_one_frame() {
        // 1.25 MB/s (10 Mbit/s), 20 ms, frames of 100 kB at 60 fps (6 MB/s wanted).
        let (rate, frame) = (1_250_000u64, 100_000u64);
        let (sent, e, queue) = drive(rate, 20_000, frame, 16_000, 6);
        let wanted = 6 * 1_000_000 / 16_000;
        assert!(sent < wanted / 3, "frames shed: sent {sent} of {wanted}");
        // The path stays busy: at least 80 % of its capacity is used.
        assert!(sent * frame >= rate * 6 * 8 / 10, "sent {sent}: {e:?}");
        // A frame waits at most about a round trip for the one before it to finish crossing
        // (20 ms, and one capture interval of 16 ms), not for a whole frame (80 ms here).
        assert!(queue <= 20_000 + 16_000, "queue {queue} µs");
        let r = e.rate_bytes_per_s;
        assert!(
            r >= rate * 8 / 10 && r <= rate * 12 / 10,
            "estimate {r} of {rate}"
        );
        assert!(e.min_rtt_us >= 20_000, "{e:?}");
    }

    /// Frames of 300 bytes every 16.7 ms on an 80 ms path, each ACKed a round trip after it
    /// went and each refused for lack of room before it went (typing's frame count, five in
    /// flight), the transport's round trip showing a queue (`queue_seen`) or not: whether the
    /// path is then taken as measured.
    fn refused_with_few_bytes_in_flight(queue_seen: bool) -> bool {
        let mut d = DeliveryRate::default();
        let (frame_us, rtt) = (16_667u64, 80_000u64);
        for i in 0..120u64 {
            let t = i * frame_us;
            d.on_path_rtt(rtt, t);
            if i >= 5 {
                d.on_ack(i - 5, t);
            }
            let smoothed = if queue_seen { 3 * rtt } else { rtt };
            let _ = d.window_bound(TransportRtt::smoothed(smoothed), t);
            d.refused();
            d.on_sent(i, 300, t);
        }
        assert!(d.estimate().budget_bytes > 0, "{:?}", d.estimate());
        // Taken as measured for the queue-ahead rule either way.
        assert!(d.path_measured());
        d.rate_is_paths()
    }

    /// A refusal with less than the small frames' floor in flight is the frame count's over a
    /// long round trip: the rate is not surely the path's, unless the path queued.
    #[test]
    fn a_refusal_with_few_bytes_in_flight_shows_the_paths_rate_only_past_a_queue() {
        assert!(!refused_with_few_bytes_in_flight(false));
        assert!(refused_with_few_bytes_in_flight(true));
    }

    #[test]
    fn a_small_frame_sample_does_not_bound_the_window_for_large_frames() {
        // 50 Mbit/s, 20 ms. A keyframe of 3 MB goes, then a frame of 300 bytes whose ACK comes
        // first and passes the keyframe: its sample is the content's rate, not the path's,
        // though the keyframe's burst showed a queue.
        let (rate, rtt) = (6_250_000u64, 20_000u64);
        let mut d = DeliveryRate::default();
        d.on_path_rtt(rtt, 0);
        d.on_sent(0, 3_000_000, 1_000);
        d.on_sent(1, 300, 1_000);
        d.on_ack(1, 1_000 + rtt);
        let queued = TransportRtt::smoothed(3 * rtt);
        assert_eq!(d.window_bound(queued, 30_000), None, "{:?}", d.estimate());
        // A frame of 1.5 MB crosses at the path's rate: now the bound is twice its product.
        let (frame, at) = (1_500_000u64, 40_000u64);
        d.on_sent(2, frame, at);
        let acked = at + frame * 1_000_000 / rate + rtt;
        d.on_ack(2, acked);
        let bound = d
            .window_bound(queued, acked)
            .expect("a sample that shows the path");
        let e = d.estimate();
        assert_eq!(bound, 2 * e.bdp_bytes(), "{e:?}");
        assert!(bound > WINDOW_BOUND_FLOOR, "{bound}: {e:?}");
        // Two seconds on, with only small frames' samples since, no bound again.
        let later = acked + RATE_WINDOW_US + 1;
        d.on_sent(3, 300, later);
        d.on_ack(3, later + rtt);
        assert_eq!(d.window_bound(queued, later + rtt), None);
    }

    #[test]
    fn frames_given_up_on_beyond_the_ring_stop_counting() {
        // More frames given up on while crossing than the ring keeps: the oldest leave it and
        // their bytes no longer count in flight; none is counted twice, none stays for good.
        let mut d = DeliveryRate::default();
        let n = GIVEN_UP as u64 + 3;
        let bytes = |i: u64| 1_000 * (i + 1);
        for i in 0..n {
            d.on_sent(i, bytes(i), i * 10);
            d.forget(i, true, i * 10 + 5);
        }
        let kept: u64 = (n - GIVEN_UP as u64..n).map(bytes).sum();
        assert_eq!(d.estimate().inflight_bytes, kept);
        assert_eq!(d.crossing_given_up().count(), GIVEN_UP);
        // A frame acknowledged in order settles every one before it.
        d.on_sent(n, 500, n * 10);
        d.on_ack(n, n * 10 + 100);
        assert_eq!(d.estimate().inflight_bytes, 0);
        assert_eq!(d.crossing_given_up().count(), 0);
    }

    #[test]
    fn a_frame_that_crosses_within_the_ends_round_trip_does_not_keep_a_short_path_busy() {
        // A 1 ms path whose round trip showed a queue (the ends' stalls, as below). At 800
        // Mbit/s a 400 kB frame in flight crosses in 4 ms, within the 5 ms a round trip there
        // is not told from the ends': the path is not busy, and the next frame may chain on
        // it. At 50 Mbit/s the frame takes 64 ms: busy.
        for (rate, busy) in [(100_000_000u64, false), (6_250_000, true)] {
            let mut d = DeliveryRate::default();
            d.on_path_rtt(500, 0);
            let mut t = 0;
            for i in 0..10 {
                d.on_sent(i, 400_000, t);
                let acked = t + 400_000 * 1_000_000 / rate + 500;
                d.on_ack(i, acked);
                t = acked.max(t + 16_667);
            }
            let stalled = TransportRtt {
                smoothed_us: 7_000,
                min_us: 500,
            };
            assert!(d.window_bound(stalled, t).is_some(), "a queue seen");
            d.on_sent(10, 400_000, t);
            assert_eq!(
                d.path_busy_until_us().is_some(),
                busy,
                "{rate}: {:?}",
                d.estimate()
            );
        }
    }

    #[test]
    fn a_short_fast_path_is_not_bound_below_what_its_ends_need() {
        // An unlimited 1 ms path at 800 Mbit/s, whose least round trip seen is 0.5 ms, but
        // whose smoothed one is set by the two ends (ACK delay, scheduling on two shared
        // cores): 1.6 ms, and over 6 ms now and then, which reads as a queue. Frames of
        // 400 kB at 60 fps. Under a window bound, a frame's bytes leave a bound's worth per
        // smoothed round trip.
        let (path, min_rtt, srtt, frame) = (100_000_000u64, 500u64, 1_600u64, 400_000u64);
        let mut d = DeliveryRate::default();
        d.on_path_rtt(min_rtt, 0);
        let (mut bound, mut lowest) = (None::<u64>, u64::MAX);
        for i in 0..240u64 {
            let at = i * 16_667;
            d.on_sent(i, frame, at);
            let leaving = match bound {
                Some(b) if b < frame => frame.div_ceil(b) * srtt,
                _ => frame * 1_000_000 / path,
            };
            let acked = at + leaving + min_rtt;
            d.on_ack(i, acked);
            // The ends' stalls: a smoothed round trip over 6 ms every half second.
            let smoothed = if i % 30 == 0 { 7_000 } else { srtt };
            let rtt = TransportRtt {
                smoothed_us: smoothed,
                min_us: min_rtt,
            };
            bound = d.window_bound(rtt, acked);
            if i >= 60 {
                // The stalls keep a queue seen within the last 2 s: the window is bounded.
                let b = bound.expect("a bound where the round trip showed a queue");
                lowest = lowest.min(b);
            }
        }
        // The bound takes a whole frame: it does not fall with the samples it holds down (at
        // twice the product over 0.5 ms it fell to the floor, 64 kB, and a frame took 11.7 ms
        // to be acknowledged instead of 4.5).
        assert!(lowest >= frame, "bound {lowest}: {:?}", d.estimate());
    }

    #[test]
    fn past_a_queue_the_budget_is_one_frame_beyond_the_product() {
        // 10 Mbit/s, 20 ms, frames of 20 kB at 60 fps, each held 2 ms by the viewer: about
        // what the path carries.
        let (rate, rtt, frame) = (1_250_000u64, 20_000u64, 20_000u64);
        let (_, e, _, mut d) = drive_held(rate, rtt, frame, 16_000, 4, 2_000);
        let hold = d.hold_bytes(e.rate_bytes_per_s);
        assert!(hold > 0, "the time held counts: {e:?}");
        // No queue seen: twice the product, or four frames up to the floor, whichever is more.
        assert!(!d.queued_lately());
        assert!(2 * e.bdp_bytes() < SMALL_FRAMES_FLOOR, "{e:?}");
        assert_eq!(e.budget_bytes - hold, SMALL_FRAMES_FLOOR);
        // The transport's round trip shows a queue: the product and one frame.
        let t = 4_000_000;
        d.window_bound(TransportRtt::smoothed(2 * rtt), t);
        assert!(d.queued_lately());
        let q = d.estimate();
        assert_eq!(q.budget_bytes - hold, q.bdp_bytes() + frame, "{q:?}");
        assert!(
            q.budget_bytes + 10_000 < e.budget_bytes,
            "{q:?} against {e:?}"
        );
        // Frames larger than the product keep two in flight: 5 kB frames on a 2 ms path.
        let (_, _, _, mut small) = drive_held(rate, 2_000, 5_000, 16_000, 4, 0);
        small.window_bound(TransportRtt::smoothed(12_000), t);
        assert!(small.queued_lately());
        let s = small.estimate();
        let hold = small.hold_bytes(s.rate_bytes_per_s);
        assert!(s.bdp_bytes() < 5_000, "{s:?}");
        assert_eq!(s.budget_bytes - hold, 10_000, "{s:?}");
        // No queue for the estimate's window: the larger budget again.
        d.window_bound(TransportRtt::smoothed(rtt), t + RATE_WINDOW_US + 1);
        assert!(!d.queued_lately());
        assert_eq!(d.estimate().budget_bytes, e.budget_bytes);
    }

    #[test]
    fn the_transport_window_is_bounded_where_the_path_queues() {
        // 10 Mbit/s, 80 ms, frames of 100 kB at 60 fps: the path limits what is sent.
        let (rate, rtt) = (1_250_000u64, 80_000u64);
        let (_, e, _, mut d) = drive_held(rate, rtt, 100_000, 16_000, 4, 0);
        let t = 4_000_000;
        // The transport's round trip shows no queue, or one under half the minimum: no bound.
        assert_eq!(
            d.window_bound(TransportRtt::smoothed(rtt + 39_000), t),
            None
        );
        // It shows one: twice the product the host measured, about twice the path's own (not
        // the frames' 100 kB or the byte budget).
        let bound = d
            .window_bound(TransportRtt::smoothed(2 * rtt), t)
            .expect("a path that queues");
        assert_eq!(bound, 2 * e.bdp_bytes(), "{e:?}");
        let bdp = rate * rtt / 1_000_000;
        assert!(
            bound >= 2 * bdp * 8 / 10 && bound <= 2 * bdp * 13 / 10,
            "{bound} for {bdp}"
        );
        // Kept while the queue, small under the bound, is not seen, for a while.
        assert_eq!(
            d.window_bound(TransportRtt::smoothed(rtt), t + RATE_WINDOW_US),
            Some(bound)
        );
        assert_eq!(
            d.window_bound(TransportRtt::smoothed(rtt), t + RATE_WINDOW_US + 1),
            None
        );
        // At 20 ms twice the product (50 kB) is under the floor.
        let (_, e, _, mut d) = drive_held(rate, 20_000, 100_000, 16_000, 4, 0);
        assert!(2 * e.bdp_bytes() < WINDOW_BOUND_FLOOR, "{e:?}");
        assert_eq!(
            d.window_bound(TransportRtt::smoothed(40_000), t),
            Some(WINDOW_BOUND_FLOOR)
        );
        // A path faster than the content: its estimate is the content's rate, and while its
        // round trip shows no queue (under half the minimum, 40 ms here), no bound is set.
        let (_, e, _, mut d) = drive_held(12_500_000, 80_000, 10_000, 16_000, 4, 0);
        assert!(!d.path_measured());
        assert_eq!(e.min_rtt_us, 80_000, "{e:?}");
        assert_eq!(
            d.window_bound(TransportRtt::smoothed(80_000 + 39_000), t),
            None
        );
        // A queue says the path limits, measured or not: frames of 10 kB, under the floor,
        // cross whole within a bound set from their own rate.
        assert!(d
            .window_bound(TransportRtt::smoothed(80_000 + 41_000), t)
            .is_some());
        assert!(d.path_limits());
        // Frames of 100 kB on the same path, whose samples say more: the queue bounds it too.
        let (_, _, _, mut d) = drive_held(12_500_000, 80_000, 100_000, 16_000, 4, 0);
        assert!(!d.path_measured());
        assert!(d
            .window_bound(TransportRtt::smoothed(80_000 + 41_000), t)
            .is_some());
    }

    /// On QUIC a ping can wait behind a frame's stream already started: over a slow link
    /// every ping did, and their minimum was 298 ms on a 20 ms path. The transport's own
    /// minimum is taken where it is less than half the pings', so the queue is seen and the
    /// bound is the path's.
    #[test]
    fn the_transport_minimum_rtt_is_taken_under_pings_that_waited() {
        let mut d = DeliveryRate::default();
        d.on_path_rtt(298_000, 0);
        d.on_sent(0, 400_000, 0);
        d.on_ack(0, 340_000);
        let t = 340_000;
        // From the pings alone, a smoothed 60 ms is no queue, and the bound is not set.
        assert_eq!(d.window_bound(TransportRtt::smoothed(60_000), t), None);
        assert_eq!(d.estimate().min_rtt_us, 298_000);
        // A transport minimum above the pings' (quinn's initial guess) changes nothing.
        let guess = TransportRtt {
            smoothed_us: 60_000,
            min_us: 333_000,
        };
        assert_eq!(d.window_bound(guess, t), None);
        assert_eq!(d.estimate().min_rtt_us, 298_000);
        // The transport saw 20 ms: 40 ms of queue, and the bound is twice the product at that
        // (here under the floor), not at 298 ms (700 kB).
        let quic = TransportRtt {
            smoothed_us: 60_000,
            min_us: 20_000,
        };
        assert_eq!(d.window_bound(quic, t), Some(WINDOW_BOUND_FLOOR));
        let e = d.estimate();
        assert_eq!(e.min_rtt_us, 20_000, "{e:?}");
        // A transport minimum under the pings' but not by half (quinn's, over the emulated
        // link, now and then): the pings' stands.
        let mut d = DeliveryRate::default();
        d.on_path_rtt(20_000, 0);
        let low = TransportRtt {
            smoothed_us: 21_000,
            min_us: 12_400,
        };
        assert_eq!(d.window_bound(low, 0), None);
        assert_eq!(d.estimate().min_rtt_us, 20_000);
        // Before a ping has come back, the transport's minimum is not taken: the frames'
        // round trips are.
        let mut d = DeliveryRate::default();
        d.on_sent(0, 10_000, 0);
        d.on_ack(0, 90_000);
        assert_eq!(d.window_bound(quic, 90_000), None);
        assert_eq!(d.estimate().min_rtt_us, 90_000);
    }

    #[test]
    fn a_viewer_slow_to_decode_does_not_make_the_path_look_slow() {
        // 25 MB/s, 20 ms; frames of 850 kB at 30 fps, which the viewer takes 28 ms to decode:
        // the path and the viewer each keep up, if a frame crosses while the one before it
        // is decoded. (A colour video at 20 ms: timed from the ACKs alone, the path looked
        // 11 MB/s and the video went at 11–16 fps.)
        let (rate, frame) = (25_000_000u64, 850_000u64);
        let (sent, e, _, _) = drive_held(rate, 20_000, frame, 33_000, 4, 28_000);
        let r = e.rate_bytes_per_s;
        assert!(r >= rate * 8 / 10, "estimate {r} of {rate}: {e:?}");
        let wanted = 4 * 1_000_000 / 33_000;
        assert!(sent >= wanted * 9 / 10, "sent {sent} of {wanted}: {e:?}");
    }

    #[test]
    fn a_viewer_cannot_claim_a_hold_that_makes_the_path_faster_than_its_round_trip() {
        let mut d = DeliveryRate::default();
        d.on_path_rtt(20_000, 0);
        d.on_sent(1, 100_000, 0);
        // ACKed 25 ms after the send, "held" 24 ms: taken as arrived after 20 ms, no sooner.
        d.on_ack_held(1, 25_000, 24_000);
        let r = d.estimate().rate_bytes_per_s;
        assert!(r <= 100_000 * 1_000_000 / 20_000, "estimate {r} B/s");
        assert_eq!(d.viewer_hold_us(), 5_000);
        // Before any ping came back, a hold is not taken at all.
        let mut d = DeliveryRate::default();
        d.on_sent(1, 100_000, 0);
        d.on_ack_held(1, 25_000, 24_000);
        assert_eq!(d.estimate().rate_bytes_per_s, 100_000 * 1_000_000 / 25_000);
        assert_eq!(d.viewer_hold_us(), 0);
    }

    #[test]
    fn the_budget_counts_what_the_path_carries_while_the_viewer_decodes() {
        let run = |held: u64| {
            let mut d = DeliveryRate::default();
            d.on_path_rtt(20_000, 0);
            for i in 0..4u64 {
                d.on_sent(i, 500_000, i * 100_000);
                d.on_ack_held(i, i * 100_000 + 40_000 + held, held);
            }
            d.estimate()
        };
        let (quick, slow) = (run(0), run(30_000));
        assert_eq!(quick.rate_bytes_per_s, slow.rate_bytes_per_s);
        assert_eq!(
            slow.budget_bytes,
            quick.budget_bytes + bytes_in(slow.rate_bytes_per_s, 30_000)
        );
    }

    /// An estimator that has seen one frame of `frame` bytes cross a 10 Mbit/s path (about
    /// 1.17 MB/s) with a 26 ms round trip.
    fn measured_at_10_mbit(frame: u64) -> DeliveryRate {
        let mut d = DeliveryRate::default();
        d.on_path_rtt(26_000, 0);
        d.on_sent(1, frame, 0);
        d.on_ack(1, 310_000);
        d
    }

    /// After a stall (a blackout), frames sent long before cross together: their ACKs come
    /// just after the next frame is sent. The sample of that frame must not credit their bytes
    /// to the short time since the ACK before it. (Times from a run at 10 Mbit/s, ms.)
    #[test]
    fn frames_acknowledged_together_after_a_stall_do_not_inflate_the_rate() {
        let (ms, frame) = (|t: u64| t * 1_000, 363_000);
        let mut d = measured_at_10_mbit(frame);
        for (id, at) in [(2, 1_000), (3, 1_019), (4, 1_047)] {
            d.on_sent(id, frame, ms(at));
        }
        d.on_ack(2, ms(1_938));
        d.on_sent(5, frame, ms(1_946));
        d.on_ack(4, ms(1_946) + 100);
        d.on_ack(5, ms(2_288));
        // Frames 2 to 5 crossed from 1 000 to 2 288 ms: 1.13 MB/s; frame 1 alone, 1.17.
        let r = d.estimate().rate_bytes_per_s;
        assert!(r <= 1_200_000, "estimate {r} B/s");
    }

    /// Frames given up on, or settled by a later ACK without crossing, no longer keep the path
    /// busy: the queue ahead shrinks to what is still in flight.
    #[test]
    fn frames_settled_without_crossing_no_longer_keep_the_path_busy() {
        let (ms, frame) = (|t: u64| t * 1_000, 363_000);
        let mut d = measured_at_10_mbit(frame);
        // Three frames handed over at once: 990 ms of the path at about 1.17 MB/s.
        for id in 2..5 {
            d.on_sent(id, frame, ms(400));
        }
        assert!(d.busy_until_us >= ms(1_300), "{}", d.busy_until_us);
        // The newest is acknowledged (the older two were reset): nothing is left to cross.
        d.on_ack(4, ms(720));
        assert!(d.busy_until_us <= ms(720), "{}", d.busy_until_us);
        // Given up on: the same.
        for id in 5..8 {
            d.on_sent(id, frame, ms(800));
        }
        d.forget(6, false, ms(900));
        let left = frame * 1_000_000 / d.estimate().rate_bytes_per_s;
        assert!(d.busy_until_us <= ms(900) + left, "{}", d.busy_until_us);
    }

    #[test]
    fn a_frame_that_must_be_made_first_may_start_before_the_path_has_room() {
        let (ms, frame) = (|t: u64| t * 1_000, 363_000);
        let mut d = measured_at_10_mbit(frame);
        // A frame sent after one was refused (a frame in flight) measures the path: the
        // queue-ahead rule holds.
        d.on_sent(2, frame, ms(320));
        d.refused();
        d.on_sent(3, frame, ms(400));
        d.on_ack(2, ms(656));
        d.on_ack(3, ms(966));
        d.on_sent(4, frame, ms(1_000));
        let plain = d.room_at().expect("a large frame on a measured path");
        assert!(plain > ms(1_200), "{plain}");
        let mut lead = d.clone();
        lead.set_make_lead(ms(50));
        assert_eq!(lead.room_at(), Some(plain - ms(50)));
        assert!(lead.has_room(plain - ms(50)) && !lead.has_room(plain - ms(51)));
        // Sending it ends the lead.
        lead.on_sent(5, frame, plain - ms(50));
        assert!(lead.room_at().is_none_or(|t| t > plain));
    }

    #[test]
    fn two_frames_before_the_first_ack() {
        let mut d = DeliveryRate::default();
        assert!(d.has_room(0));
        d.on_sent(1, 1_000_000, 0);
        assert!(d.has_room(1));
        d.on_sent(2, 1_000_000, 1);
        assert!(!d.has_room(2), "two frames before the first ACK");
        assert_eq!(d.estimate().budget_bytes, 0);
        assert_eq!(d.estimate().inflight_bytes, 2_000_000);
        d.on_ack(2, 10_000);
        assert_eq!(
            d.estimate().inflight_bytes,
            0,
            "the ACK settles frame 1 too"
        );
    }
}
