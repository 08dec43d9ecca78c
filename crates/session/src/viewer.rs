//! One framewire v1 viewer as the viewer sees it: it says Hello, decodes each frame into its
//! picture, verifies the host's checksum, ACKs after applying (so the host's RTT includes the
//! apply), answers pings and pings back for the clock offset, and reports what it showed.
//!
//! The same shape as [`crate::HostSession`]: bytes and the time in, bytes and events out, no
//! sockets or runtime. The clock is passed in ([`ViewerSession::new`]) because the viewer
//! stamps its ACK with the moments it decoded and applied the frame.

use std::collections::VecDeque;

use bytes::Bytes;
use framewire_codec::{Picture, Saved};
use framewire_flow::{ClockOffset, PingSchedule};
use framewire_proto::v1::{self, AckStatus, Packet, Role};
use framewire_proto::ProtoError;

use crate::wire_v1::codec_from_wire;

/// How long a frame whose base has not arrived is held for it before it is reported missing,
/// at least: with one transport stream per frame, a small frame overtakes a large one, and a
/// lost packet of the base comes back after one to two round trips (QUIC's loss detection),
/// so the wait is also at least [`BASE_WAIT_RTTS`] round trips (from the pings). Holding a
/// frame costs it that wait; reporting it missing costs a round trip and a larger delta
/// against an older picture, and more bytes on a path that is already losing packets.
pub const BASE_WAIT_US: u64 = 25_000;
pub const BASE_WAIT_RTTS: u64 = 2;
/// How long a frame that came after a lost one ([`ViewerSession::handle_unit_after_loss`]) is
/// held for its base: not at all. A frame that fits one datagram has its recovery shards 2 and
/// 4 ms behind it (one, 2 ms behind, where the path lost nothing lately), so a next frame sent
/// right behind (catching up) may overtake them and report a base that is still being rebuilt: that costs a repair, not a stall, since the
/// frames chained on the one reported are reported at once too ([`ViewerSession::given_up`]).
/// Holding such frames 6 ms did not lower the p99 in `bench net` (BENCHMARKS.md, "Chained
/// deltas where lost packets are made good").
pub const AFTER_LOSS_WAIT_US: u64 = 0;
/// How long a frame is held for its base at least while the viewer holds no picture at all:
/// its first keyframe is on its way, and the frames behind it (an Unchanged a few bytes long,
/// small deltas) overtake it on their own streams. Reported missing after the usual wait, they
/// were acknowledged before the keyframe, and the host took the keyframe's bytes for settled:
/// with the Mandelbrot zoom at 50 Mbit/s (a keyframe of 3.3 MB, half a second to cross), it
/// sent two frames of 1.7 MB behind it at once, and the join took 1.2 s instead of 0.6
/// (BENCHMARKS.md, "A viewer's first picture"). Keyframes go on streams, which are not lost;
/// one the host reset (a newer keyframe superseded it) is overtaken by that one. Once the
/// viewer holds a picture, frames still waiting are held only the usual wait. A keyframe
/// that takes longer than this to cross (6 MB at 50 Mbit/s) has frames reported behind it;
/// the host then keeps the keyframe in flight, as the repair of those frames
/// (`framewire_flow::ViewerFlow::on_ack_overtaking`). After a resize the viewer still holds
/// the old picture until the new keyframe, so the usual wait applies there.
pub const FIRST_PICTURE_WAIT_US: u64 = 1_000_000;
/// Frames held at once waiting for their base; beyond, the oldest is reported missing.
const WAITING_MAX: usize = 4;
/// Pictures given up ([`ViewerSession::given_up`]) remembered at most: more than a round trip
/// of frames at 60 fps on an 80 ms path.
const GIVEN_UP: usize = 16;
/// Pictures kept after they were applied (named bases): a host makes deltas against the newest
/// picture the viewer acknowledged, which is a round trip old. More than a viewer with a byte
/// budget may have in flight.
const KEPT: usize = 10;

/// Frame units kept while the Welcome has not come; beyond, the oldest is dropped.
const UNITS_BEFORE_WELCOME: usize = 32;

/// A frame unit held until its base arrives or its time is up.
struct Waiting {
    until: u64,
    /// The usual wait's end: the one that holds once the viewer has a picture, whatever
    /// `until` says ([`FIRST_PICTURE_WAIT_US`]).
    usual: u64,
    recv_us: u64,
    seq: u64,
    base: u64,
    packets: Vec<Packet>,
}

impl Waiting {
    /// When its wait is over: the usual wait once the viewer holds a picture (`held`).
    fn due(&self, held: bool) -> u64 {
        match held {
            true => self.usual,
            false => self.until,
        }
    }
}

/// What the viewer declares in its Hello.
#[derive(Debug, Clone)]
pub struct ViewerHello {
    pub caps: u32,
    pub stream: String,
    pub token: String,
}

/// One frame or unchanged packet the viewer handled and ACKed.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub seq: u64,
    pub keyframe: bool,
    pub unchanged: bool,
    /// The picture equals the host's (checksum verified).
    pub ok: bool,
    /// It could not be decoded at all.
    pub decode_error: bool,
    /// It names a base picture the viewer does not hold (a frame before it was lost); the
    /// viewer kept the picture it had (named bases).
    pub base_missing: bool,
    pub codec: Option<&'static str>,
    pub bytes: usize,
    /// When the read that completed it arrived (µs, the viewer's clock).
    pub received_us: u64,
    pub decompress_us: u64,
    pub apply_us: u64,
    /// When it was applied (µs, the viewer's clock), and capture → applied through the clock
    /// offset, once the offset is known.
    pub applied_us: u64,
    pub end_to_end_us: Option<u64>,
}

impl Shown {
    /// What its ACK says.
    pub fn status(&self) -> AckStatus {
        match (self.ok, self.decode_error, self.base_missing) {
            (true, _, _) => AckStatus::Applied,
            (false, _, true) => AckStatus::BaseMissing,
            (false, true, _) => AckStatus::DecodeError,
            (false, false, false) => AckStatus::ChecksumMismatch,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ViewerEvent {
    Welcomed {
        caps: u32,
        session: u64,
    },
    Size {
        width: u32,
        height: u32,
    },
    Shown(Shown),
    Command {
        code: v1::CommandCode,
        a: u32,
    },
    /// The host ended the session (its code and reason).
    Goodbye {
        code: u16,
        reason: String,
    },
    /// The host broke the protocol.
    Error(ProtoError),
}

pub struct ViewerSession {
    dec: v1::Decoder,
    picture: Picture,
    /// Planes stacked in `picture` (3 for colour), from the StreamDesc's format.
    planes: u32,
    /// The checksum of the picture held, once verified.
    sum: Option<u64>,
    /// Deltas name their base (the Welcome has [`v1::caps::NAMED_BASES`]).
    named_bases: bool,
    /// The newest frame seq applied: with named bases, an older frame arriving later (another
    /// transport stream overtook it) is left alone. Only an applied frame counts: a keyframe
    /// slower than the deltas made against it (a large frame on a slow link) still applies
    /// after they were reported missing, and it is the repair the host is waiting on.
    newest: Option<u64>,
    stale: u64,
    waiting: Vec<Waiting>,
    /// The pictures of the last [`GIVEN_UP`] frames that did not apply (their base was not
    /// held, they could not be decoded, or their checksum did not verify), with when this
    /// viewer answered them, newest last. A delta named against one (or an Unchanged naming
    /// one) that arrives within the smallest round trip measured after that answer was made
    /// before the host learned of it, against the picture this viewer dropped: it is reported
    /// at once, not held. Later, the same picture may come again (the host's repair of a still
    /// screen makes the same picture), so a frame named against it waits as any other. Each
    /// frame of a chain given up starts its own window: a repair that overtakes a later link
    /// of the chain may still be answered at once, which the host takes as a repair overtaken.
    ///
    /// Without them, after a frame that came after a lost one was reported at once (its base
    /// was only late: a one-datagram frame's recovery shards overtaken by the next frame), the
    /// frames chained on it were each held two round trips for a picture this viewer had
    /// dropped: at 80 ms and 5 % loss, p99s of 108–200 ms in `bench net`.
    given_up: VecDeque<(u64, u64)>,
    /// Units fed and not yet taken in (they are, one at a time, as events are polled): when
    /// each arrived, its packets, and whether it came after a lost frame
    /// ([`ViewerSession::handle_unit_after_loss`]).
    units: VecDeque<(u64, Vec<Packet>, bool)>,
    /// Recent pictures by checksum, newest last (named bases).
    kept: VecDeque<(u64, Saved)>,
    /// How many pictures are kept: [`KEPT`], or none while every frame arrives in order
    /// ([`ViewerSession::every_frame_arrives`]).
    kept_max: usize,
    offset: ClockOffset,
    pings: PingSchedule,
    welcomed: bool,
    /// When the bytes being handled arrived.
    recv_us: u64,
    clock: fn() -> u64,
    transmits: VecDeque<Bytes>,
    events: VecDeque<ViewerEvent>,
    done: bool,
}

impl ViewerSession {
    /// A session that starts by sending its Hello. `clock` gives µs (the runtime's clock, or a
    /// test's).
    pub fn new(hello: ViewerHello, clock: fn() -> u64) -> Self {
        let mut transmits = VecDeque::new();
        transmits.push_back(
            Packet::Hello {
                version: v1::VERSION,
                role: Role::Viewer,
                caps: hello.caps,
                stream: hello.stream,
                token: hello.token,
            }
            .to_bytes(),
        );
        ViewerSession {
            dec: v1::Decoder::new(v1::DEFAULT_MAX_FRAME_BODY),
            picture: Picture::new(0, 0),
            planes: 1,
            sum: None,
            named_bases: false,
            newest: None,
            stale: 0,
            waiting: Vec::new(),
            given_up: VecDeque::with_capacity(GIVEN_UP),
            units: VecDeque::new(),
            kept: VecDeque::new(),
            kept_max: KEPT,
            offset: ClockOffset::new(),
            pings: PingSchedule::new(),
            welcomed: false,
            recv_us: 0,
            clock,
            transmits,
            events: VecDeque::new(),
            done: false,
        }
    }

    /// The transport delivers every frame, in order (one TCP stream): a host then makes each
    /// delta against the picture it sent before, which this viewer holds, so it keeps no other
    /// pictures. That spares a copy of every changed row after each frame. Should a frame name
    /// a picture it does not hold after all, it starts keeping them.
    pub fn every_frame_arrives(mut self) -> Self {
        self.kept_max = 0;
        self
    }

    /// Pictures kept besides the one shown, for deltas that name them.
    pub fn kept_pictures(&self) -> usize {
        self.kept.len()
    }

    /// The picture as last applied.
    pub fn picture(&self) -> &Picture {
        &self.picture
    }

    /// Planes stacked in the picture: 1 grey, 3 colour (G, R − G, B − G).
    pub fn planes(&self) -> u32 {
        self.planes
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Frames that arrived after a newer one was applied and were left alone (named bases).
    pub fn stale_frames(&self) -> u64 {
        self.stale
    }

    /// Bytes holding whole packets that arrived on their own (one transport stream per frame,
    /// as QUIC carries them), at `recv_us`. Their packets are handled before any bytes
    /// already fed with [`ViewerSession::handle_bytes`] that are not yet polled.
    pub fn handle_unit(&mut self, recv_us: u64, data: &[u8]) {
        self.feed_unit(recv_us, data, false);
    }

    /// As [`ViewerSession::handle_unit`], for a unit the transport knows came after a frame
    /// that was lost (QUIC datagrams: an older frame lost more datagrams than its recovery
    /// shards make good). Should it name a base not held, that base is most likely the lost
    /// frame: it is reported missing at once ([`AFTER_LOSS_WAIT_US`]), not after [`BASE_WAIT_US`]
    /// or two round trips, so the host's repair starts a round trip or two sooner.
    pub fn handle_unit_after_loss(&mut self, recv_us: u64, data: &[u8]) {
        self.feed_unit(recv_us, data, true);
    }

    fn feed_unit(&mut self, recv_us: u64, data: &[u8], after_loss: bool) {
        let mut d = v1::Decoder::new(v1::DEFAULT_MAX_FRAME_BODY);
        d.feed(data);
        let mut packets = Vec::new();
        loop {
            match d.next_packet() {
                Ok(Some(p)) => packets.push(p),
                Ok(None) if d.pending() == 0 => break,
                Ok(None) => return self.fail(ProtoError::Truncated { kind: "frame unit" }),
                Err(e) => return self.fail(e),
            }
        }
        if !self.welcomed && self.units.len() >= UNITS_BEFORE_WELCOME {
            // A host sends only a few frames before its Welcome has been answered; beyond,
            // the oldest is given up (counted as overtaken) and repaired like a lost one.
            self.units.pop_front();
            self.stale += 1;
        }
        self.units.push_back((recv_us, packets, after_loss));
    }

    /// Takes in one unit: drops it when overtaken, holds it when its base has not arrived
    /// (not when it came after a lost frame: then its base is reported missing; one named
    /// against a picture given up is released at once by [`ViewerSession::release_one`]), else
    /// handles it.
    fn take_unit(&mut self, recv_us: u64, packets: Vec<Packet>, after_loss: bool) {
        // A unit overtaken by a newer frame is dropped whole: its stream description too,
        // which would otherwise reset the picture the newer frames built.
        let seq = packets.iter().find_map(|p| match p {
            Packet::Frame { header, .. } => Some(header.seq),
            Packet::Unchanged { seq, .. } => Some(*seq),
            _ => None,
        });
        if self.named_bases && seq.is_some_and(|s| self.newest.is_some_and(|n| s <= n)) {
            self.stale += 1;
            return;
        }
        // What the unit needs held: a delta its base, an Unchanged its picture.
        let base = packets.iter().find_map(|p| match p {
            Packet::Frame { header, .. } => header.base,
            Packet::Unchanged { checksum, .. } if self.named_bases => Some(*checksum),
            _ => None,
        });
        match (seq, base) {
            // Its base has not arrived yet (another picture, or none yet: a keyframe on a
            // slower stream): wait.
            (Some(seq), Some(base)) if self.sum != Some(base) && !self.holds(base) => {
                let rtt = self.offset.min_rtt_us().unwrap_or(0);
                let usual = match after_loss {
                    true => AFTER_LOSS_WAIT_US,
                    false => BASE_WAIT_US.max(BASE_WAIT_RTTS * rtt),
                };
                // Holding no picture yet (it joined), it waits for the keyframe on its way:
                // see [`FIRST_PICTURE_WAIT_US`].
                let wait = match !self.has_picture() && !after_loss {
                    true => usual.max(FIRST_PICTURE_WAIT_US),
                    false => usual,
                };
                self.waiting.push(Waiting {
                    until: recv_us + wait,
                    usual: recv_us + usual,
                    recv_us,
                    seq,
                    base,
                    packets,
                });
                if self.waiting.len() > WAITING_MAX {
                    let oldest = self.waiting.remove(0);
                    self.handle_packets(oldest.recv_us, oldest.packets);
                }
            }
            _ => self.handle_packets(recv_us, packets),
        }
    }

    fn handle_packets(&mut self, recv_us: u64, packets: Vec<Packet>) {
        if packets.iter().any(|p| match p {
            Packet::Frame { header, .. } => self.newest.is_some_and(|n| header.seq <= n),
            _ => false,
        }) {
            self.stale += 1;
            return;
        }
        for p in packets {
            self.on_packet(recv_us, p);
        }
    }

    /// Handles one waiting frame whose base is now held, or whose time is up at `now`, or
    /// whose base was given up ([`ViewerSession::given_up`]; its base is then reported
    /// missing), after dropping those overtaken; false when none is.
    fn release_one(&mut self, now: u64) -> bool {
        let newest = self.newest;
        let before = self.waiting.len();
        self.waiting.retain(|w| newest.is_none_or(|n| w.seq > n));
        self.stale += (before - self.waiting.len()) as u64;
        // Before a round trip is measured, no frame is taken to be named against a picture
        // given up (nor looked up when none was).
        let rtt = match self.given_up.is_empty() {
            true => None,
            false => self.offset.min_rtt_us(),
        };
        let held = self.has_picture();
        let ready = self
            .waiting
            .iter()
            .enumerate()
            .filter(|(_, w)| {
                self.sum == Some(w.base)
                    || w.due(held) <= now
                    || rtt.is_some_and(|rtt| self.gave_up(w.base, w.recv_us, rtt))
            })
            .min_by_key(|(_, w)| w.seq)
            .map(|(i, _)| i);
        let Some(i) = ready else { return false };
        let w = self.waiting.remove(i);
        self.handle_packets(w.recv_us, w.packets);
        true
    }

    /// Remembers that this viewer answered, at `now`, a frame with picture `sum` that did not
    /// apply: frames named against that picture arriving within the smallest round trip after
    /// `now` are reported missing at once ([`ViewerSession::given_up`]).
    fn give_up(&mut self, sum: u64, now: u64) {
        if self.given_up.len() == GIVEN_UP {
            self.given_up.pop_front();
        }
        self.given_up.push_back((sum, now));
    }

    /// Whether a frame named against picture `base` that arrived at `recv_us` was made before
    /// the host learned that this viewer gave that picture up (see [`ViewerSession::given_up`]),
    /// `rtt` being the smallest round trip measured.
    fn gave_up(&self, base: u64, recv_us: u64, rtt: u64) -> bool {
        self.given_up
            .iter()
            .any(|&(s, at)| s == base && recv_us < at + rtt)
    }

    /// A picture is held or kept: the first keyframe has come ([`FIRST_PICTURE_WAIT_US`]).
    fn has_picture(&self) -> bool {
        self.sum.is_some() || !self.kept.is_empty()
    }

    /// Whether a kept picture has checksum `sum`.
    fn holds(&self, sum: u64) -> bool {
        self.kept.iter().any(|(s, _)| *s == sum)
    }

    /// Makes the kept picture with checksum `sum` the current one, and, when it could, the
    /// newest kept: the host names it as a base while it has heard of nothing newer, so it
    /// must outlast the pictures applied since. Kept oldest first by when they were applied,
    /// a base went with the tenth picture after it, and those may be the host's own stall
    /// probes made against it. On an 80 ms path at 10 Mbit/s with 5 % loss, no ACK reached
    /// the host for 589 ms; eight frames went after the last picture it had heard of, then
    /// probes against that picture, and the probes after the first two did not apply. By
    /// the code (inferred: the viewer logged no pictures), those two had pushed the base out.
    /// The picture was exact again only with a large frame of 193 kB, 651 ms after a 200 ms
    /// blackout (BENCHMARKS.md, "Typing's rate is not the path's").
    fn restore(&mut self, sum: u64) -> bool {
        let Some(i) = self.kept.iter().position(|(s, _)| *s == sum) else {
            return false;
        };
        let ok = self.picture.restore(&self.kept[i].1);
        if ok {
            let named = self.kept.remove(i).expect("found above");
            self.kept.push_back(named);
            self.sum = Some(sum);
        }
        ok
    }

    /// Keeps the picture just applied (checksum `sum`), reusing the oldest one's buffers. A
    /// picture already kept (one that came back) becomes the newest kept again: the host may
    /// name it as the base of its next frames, so it must outlast the pictures before it.
    fn keep(&mut self, sum: u64) {
        if !self.named_bases || self.kept_max == 0 {
            return;
        }
        if let Some(i) = self.kept.iter().position(|(s, _)| *s == sum) {
            let again = self.kept.remove(i).expect("found above");
            self.kept.push_back(again);
            return;
        }
        let mut saved = match self.kept.len() >= self.kept_max {
            true => self.kept.pop_front().map(|(_, s)| s).unwrap_or_default(),
            false => Saved::default(),
        };
        self.picture.save(&mut saved);
        self.kept.push_back((sum, saved));
    }

    fn fail(&mut self, e: ProtoError) {
        self.events.push_back(ViewerEvent::Error(e));
        self.done = true;
    }

    /// With named bases, whether a frame `seq` arrived after a newer one was applied (and is
    /// dropped).
    fn stale(&mut self, seq: u64) -> bool {
        if !self.named_bases {
            return false;
        }
        if self.newest.is_some_and(|n| seq <= n) {
            self.stale += 1;
            return true;
        }
        false
    }

    pub fn poll_transmit(&mut self) -> Option<Bytes> {
        self.transmits.pop_front()
    }

    /// The next thing that happened. Packets are handled here, one per call as needed, so
    /// [`ViewerSession::picture`] is the picture as of the event just returned (a caller that
    /// shows or checks pictures sees each one, even when many frames came in one read).
    pub fn poll_event(&mut self) -> Option<ViewerEvent> {
        while self.events.is_empty() && !self.done {
            if !self.waiting.is_empty() && self.release_one((self.clock)()) {
                continue;
            }
            // Frame units wait for the Welcome: until it says whether the host names bases, a
            // unit cannot be told overtaken (on QUIC the Welcome comes on the control stream,
            // and a loss there lets the first frames' streams come first).
            if self.welcomed {
                if let Some((recv_us, packets, after_loss)) = self.units.pop_front() {
                    self.take_unit(recv_us, packets, after_loss);
                    continue;
                }
            }
            match self.dec.next_packet() {
                Ok(Some(p)) => self.on_packet(self.recv_us, p),
                Ok(None) => break,
                Err(e) => {
                    self.events.push_back(ViewerEvent::Error(e));
                    self.done = true;
                }
            }
        }
        self.events.pop_front()
    }

    /// When the next ping is due, once welcomed, or a frame waiting for its base runs out of
    /// time.
    pub fn poll_timeout(&self) -> Option<u64> {
        let held = self.has_picture();
        let wait = self.waiting.iter().map(|w| w.due(held)).min();
        let ping = self.welcomed.then(|| self.pings.next_at());
        match (ping, wait) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn handle_timeout(&mut self, now: u64) {
        if !self.welcomed || self.done {
            return;
        }
        if let Some(id) = self.pings.poll(now) {
            self.transmits
                .push_back(Packet::Ping { id, sent_us: now }.to_bytes());
        }
    }

    /// Bytes from the host, which arrived at `recv_us`. They are handled as events are polled.
    pub fn handle_bytes(&mut self, recv_us: u64, data: &[u8]) {
        self.dec.feed(data);
        self.recv_us = recv_us;
    }

    fn on_packet(&mut self, recv_us: u64, p: Packet) {
        match p {
            Packet::Welcome { caps, session, .. } => {
                self.welcomed = true;
                self.named_bases = caps & v1::caps::NAMED_BASES != 0;
                self.events
                    .push_back(ViewerEvent::Welcomed { caps, session });
            }
            Packet::StreamDesc {
                width,
                height,
                format,
                ..
            } => {
                // Colour planes are stacked into one taller picture.
                self.planes = format.planes();
                self.picture.resize(width, height * self.planes);
                self.sum = None;
                self.kept.clear();
                self.events.push_back(ViewerEvent::Size { width, height });
            }
            Packet::Frame { header: h, .. } if self.stale(h.seq) => {}
            Packet::Frame { header: h, payload } => self.on_frame(recv_us, h, &payload),
            Packet::Unchanged { seq, .. } if self.stale(seq) => {}
            Packet::Unchanged {
                seq,
                capture_us,
                checksum,
            } => {
                if self.sum != Some(checksum) {
                    self.restore(checksum);
                }
                let ok = self.picture.is_valid() && self.sum == Some(checksum);
                if ok {
                    self.keep(checksum);
                }
                // With named bases the picture it names was lost (or never came).
                let base_missing = !ok && self.named_bases;
                let now = (self.clock)();
                self.ack_and_show(
                    Shown {
                        seq,
                        keyframe: false,
                        unchanged: true,
                        ok,
                        decode_error: false,
                        base_missing,
                        codec: None,
                        bytes: 0,
                        received_us: recv_us,
                        decompress_us: 0,
                        apply_us: 0,
                        applied_us: now,
                        end_to_end_us: None,
                    },
                    capture_us,
                    recv_us,
                    now,
                );
            }
            Packet::Ping { id, sent_us } => self.transmits.push_back(
                Packet::Pong {
                    id,
                    ping_sent_us: sent_us,
                    reply_us: (self.clock)(),
                }
                .to_bytes(),
            ),
            Packet::Pong {
                ping_sent_us,
                reply_us,
                ..
            } => {
                self.offset.sample(ping_sent_us, reply_us, recv_us);
            }
            Packet::Command { code, a, .. } => {
                self.events.push_back(ViewerEvent::Command { code, a })
            }
            Packet::Goodbye { code, reason } => {
                self.events.push_back(ViewerEvent::Goodbye { code, reason });
                self.done = true;
            }
            _ => {
                self.events
                    .push_back(ViewerEvent::Error(ProtoError::InvalidField {
                        field: "packet",
                        why: "not expected from a host",
                    }));
                self.done = true;
            }
        }
    }

    fn on_frame(&mut self, recv_us: u64, h: v1::FrameHeader, payload: &[u8]) {
        let codec = codec_from_wire(h.codec);
        let t0 = (self.clock)();
        if let Some(base) = h.base {
            if self.sum != Some(base) {
                self.restore(base);
            }
            if self.sum != Some(base) {
                // A frame before this one was lost: keep the picture (still valid, if there
                // was one); the host sends one made against what this viewer acknowledged.
                self.give_up(h.checksum, t0);
                let s = Shown {
                    seq: h.seq,
                    keyframe: false,
                    unchanged: false,
                    ok: false,
                    decode_error: false,
                    base_missing: true,
                    codec: Some(codec.name()),
                    bytes: payload.len(),
                    received_us: recv_us,
                    decompress_us: 0,
                    apply_us: 0,
                    applied_us: t0,
                    end_to_end_us: None,
                };
                return self.ack_and_show(s, h.capture_us, recv_us, t0);
            }
        }
        let decoded = if h.rows {
            self.picture.decode_rows(codec, payload).ok()
        } else if h.rects {
            // raw_len must be the patches' size and the predicted rectangles' residuals (the
            // spec); anything else is a decode error.
            let (w, ht) = (
                self.picture.width() as usize,
                self.picture.height() as usize,
            );
            framewire_codec::rects::parse_header(payload, w, ht)
                .ok()
                .filter(|(plan, _)| plan.block_bytes() == h.raw_len as usize)
                .and_then(|_| self.picture.decode_rects(codec, payload).ok())
        } else if h.raw_len as usize != self.picture.len() {
            None
        } else {
            self.picture.decode(h.keyframe, codec, payload).ok()
        };
        let (mut ok, mut t1, mut t2) = (false, t0, t0);
        if decoded.is_none() {
            // The stream now lacks this frame: only a keyframe may follow.
            self.picture.invalidate();
        }
        if decoded.is_some() {
            t1 = (self.clock)();
            self.picture.apply();
            t2 = (self.clock)();
            ok = self.picture.checksum() == h.checksum;
            self.sum = ok.then_some(h.checksum);
            if ok {
                self.keep(h.checksum);
                // Held now: no longer given up.
                self.given_up.retain(|&(s, _)| s != h.checksum);
            }
            if !ok {
                // Deltas cannot apply to a wrong picture: the host sends a keyframe next.
                self.picture.invalidate();
            }
        }
        if !ok {
            // Answered at `t2`, the time its ACK carries.
            self.give_up(h.checksum, t2);
        }
        self.ack_and_show(
            Shown {
                seq: h.seq,
                keyframe: h.keyframe,
                unchanged: false,
                ok,
                decode_error: decoded.is_none(),
                base_missing: false,
                codec: Some(codec.name()),
                bytes: payload.len(),
                received_us: recv_us,
                decompress_us: t1 - t0,
                apply_us: t2 - t1,
                applied_us: t2,
                end_to_end_us: None,
            },
            h.capture_us,
            recv_us,
            t0,
        );
    }

    /// ACKs what was applied (after applying it) and reports it.
    fn ack_and_show(&mut self, mut s: Shown, capture_us: u64, recv_us: u64, decoded_us: u64) {
        if s.base_missing {
            // The host names older pictures after all: keep them from now on.
            self.kept_max = KEPT;
        }
        if s.ok && self.named_bases {
            self.newest = Some(s.seq);
        }
        let status = s.status();
        self.transmits.push_back(
            Packet::Ack {
                seq: s.seq,
                status,
                recv_us,
                decoded_us,
                applied_us: s.applied_us,
            }
            .to_bytes(),
        );
        s.end_to_end_us = self
            .offset
            .to_local(capture_us)
            .map(|c| s.applied_us.saturating_sub(c));
        self.events.push_back(ViewerEvent::Shown(s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zero() -> u64 {
        0
    }

    /// A picture that comes back while still kept becomes the newest kept: ten other pictures
    /// after its return, not after its first showing, are needed to push it out (the host may
    /// have acknowledged it on its return and make its next frames against it).
    /// A viewer that keeps pictures (named bases), with a small picture.
    fn keeping_viewer() -> ViewerSession {
        let hello = ViewerHello {
            caps: v1::caps::ALL,
            stream: "screen".into(),
            token: String::new(),
        };
        let mut v = ViewerSession::new(hello, zero);
        v.named_bases = true;
        v.picture.resize(4, 2);
        v
    }

    #[test]
    fn a_picture_that_comes_back_is_kept_as_the_newest() {
        let mut v = keeping_viewer();
        // X, then nine others: ten kept, X the oldest.
        v.keep(100);
        for s in 1..=9 {
            v.keep(s);
        }
        assert!(v.holds(100));
        // X comes back, then one more picture: X must still be kept, 1 must not.
        v.keep(100);
        v.keep(10);
        assert!(v.holds(100), "the picture that came back was pushed out");
        assert!(!v.holds(1));
        assert_eq!(v.kept.len(), KEPT);
    }

    /// A picture the host names as a base again is kept as the newest: the host's frames
    /// made against it (stall probes while its ACKs are held up) do not push it out, however
    /// many apply. Kept by when they were applied alone, it went with the tenth picture after
    /// it.
    #[test]
    fn a_base_named_again_outlasts_the_pictures_applied_after_it() {
        let mut v = keeping_viewer();
        // X, then eight frames after it.
        v.keep(100);
        for s in 1..=8 {
            v.keep(s);
        }
        // Twelve frames made against X (each restores it), each kept in turn.
        for s in 20..32 {
            assert!(v.restore(100), "X was pushed out before frame {s}");
            v.keep(s);
        }
        assert!(v.holds(100));
        assert!(!v.holds(1), "the oldest of the others should have gone");
        assert_eq!(v.kept.len(), KEPT);
        // A picture not kept is not restored, and nothing moves.
        assert!(!v.restore(1));
        assert_eq!(v.kept.len(), KEPT);
    }
}
