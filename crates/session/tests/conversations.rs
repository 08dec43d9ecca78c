//! Whole conversations between a `HostSession` and a viewer written here, in memory, with a
//! fake clock: nothing sleeps, and every run is the same.

use std::sync::Arc;

use bytes::BytesMut;
use framewire_codec::Picture;
use framewire_flow::{InflightLimit, Plan};
use framewire_proto::daylight::{self, HostDecoder, HostPacket, ViewerPacket};
use framewire_proto::v1::{self, caps, goodbye, AckStatus, Packet};
use framewire_session::host::CATCH_UP_WITHIN_US;
use framewire_session::{
    negotiate, DaylightWire, Event, HostConfig, HostCount, HostSession, Payload, SourceFrame,
    Transmit, V1Wire, ViewerCommand, ViewerReader, Wire,
};

mod common;
use common::{picture, Source, H, W};

fn config() -> HostConfig {
    HostConfig {
        limit: InflightLimit::default(),
        ack_timeout_us: 2_000_000,
        refresh_every: 0,
        control: false,
        drops_superseded: false,
        frames_may_be_lost: false,
        datagrams_up_to: None,
        large_datagrams_up_to: None,
        initial: vec![ViewerCommand::Brightness(128)],
    }
}

fn v1_session() -> HostSession<V1Wire> {
    v1_session_with(caps::ALL)
}

fn v1_session_with(viewer_caps: u32) -> HostSession<V1Wire> {
    let n = negotiate(v1::Codec::Lz4, caps::ALL, viewer_caps);
    let dec = v1::Decoder::new(v1::MAX_CONTROL_BODY);
    HostSession::new(V1Wire::new(n), ViewerReader::V1(dec), config())
}

/// Offers a frame the way the runtime does (the work, if any, done at once).
fn offer<W: Wire>(s: &mut HostSession<W>, now: u64, f: &Arc<SourceFrame>) -> Plan {
    let (plan, work) = s.plan_frame(f);
    if let Some(w) = work {
        w();
    }
    s.send_frame(now, f, plan);
    plan
}

fn drain<W: Wire>(s: &mut HostSession<W>) -> (Vec<u8>, Vec<Event>) {
    let mut bytes = Vec::new();
    while let Some(Transmit { head, payload, .. }) = s.poll_transmit() {
        bytes.extend_from_slice(&head);
        if let Some(p) = payload {
            bytes.extend_from_slice(&p);
        }
    }
    (bytes, std::iter::from_fn(|| s.poll_event()).collect())
}

/// `n` frames 16 ms apart, each following the one before as the runtime chains them (only
/// the newest keeps its previous one).
fn followed_frames(src: &mut Source, n: u64) -> Vec<Arc<SourceFrame>> {
    let frames: Vec<Arc<SourceFrame>> = (0..n).map(|i| src.frame(i * 16_000, false)).collect();
    for w in frames.windows(2) {
        w[1].follow(&w[0]);
    }
    frames
}

/// A framewire v1 viewer: applies frames, verifies checksums, answers what it is told to.
struct Viewer {
    dec: v1::Decoder,
    picture: Picture,
    sum: Option<u64>,
    /// (seq, keyframe, checksum verified) per frame packet.
    frames: Vec<(u64, bool, bool)>,
    unchanged: Vec<u64>,
    pings: Vec<u32>,
    goodbye: Option<(u16, String)>,
    brightness: Option<u32>,
}

impl Viewer {
    fn new() -> Self {
        Viewer {
            dec: v1::Decoder::new(v1::DEFAULT_MAX_FRAME_BODY),
            picture: Picture::new(0, 0),
            sum: None,
            frames: Vec::new(),
            unchanged: Vec::new(),
            pings: Vec::new(),
            goodbye: None,
            brightness: None,
        }
    }

    /// Reads the host's bytes; returns the ACKs for the frames in them (with `status` if
    /// given, else what the checksum says).
    fn receive(&mut self, bytes: &[u8], now: u64, status: Option<AckStatus>) -> Vec<u8> {
        self.dec.feed(bytes);
        let mut out = BytesMut::new();
        while let Some(p) = self.dec.next_packet().unwrap() {
            let (seq, good) = match p {
                Packet::StreamDesc { width, height, .. } => {
                    self.picture.resize(width, height);
                    continue;
                }
                Packet::Frame { header: h, payload } => {
                    // In order and lossless, a delta's base is always the picture held.
                    if let Some(base) = h.base {
                        assert_eq!(Some(base), self.sum, "frame {} names another base", h.seq);
                    }
                    let codec = framewire_session::codec_from_wire(h.codec);
                    if h.rows {
                        self.picture.decode_rows(codec, &payload).unwrap();
                    } else if h.rects {
                        self.picture.decode_rects(codec, &payload).unwrap();
                    } else {
                        self.picture.decode(h.keyframe, codec, &payload).unwrap();
                    }
                    self.picture.apply();
                    let good = self.picture.checksum() == h.checksum;
                    self.sum = good.then_some(h.checksum);
                    self.frames.push((h.seq, h.keyframe, good));
                    (h.seq, good)
                }
                Packet::Unchanged { seq, checksum, .. } => {
                    self.unchanged.push(seq);
                    (seq, self.sum == Some(checksum))
                }
                Packet::Ping { id, .. } => {
                    self.pings.push(id);
                    continue;
                }
                Packet::Command { a, .. } => {
                    self.brightness = Some(a);
                    continue;
                }
                Packet::Goodbye { code, reason } => {
                    self.goodbye = Some((code, reason));
                    continue;
                }
                other => panic!("unexpected {other:?}"),
            };
            let status = status.unwrap_or(if good {
                AckStatus::Applied
            } else {
                AckStatus::ChecksumMismatch
            });
            Packet::Ack {
                seq,
                status,
                recv_us: now,
                decoded_us: now,
                applied_us: now,
            }
            .encode(&mut out);
        }
        out.to_vec()
    }
}

#[test]
fn keyframe_then_deltas_then_unchanged_every_picture_verified() {
    let (mut host, mut viewer, mut src) = (v1_session(), Viewer::new(), Source::new());
    let mut now = 1_000;
    let mut rtts = Vec::new();
    for i in 0..20u64 {
        assert!(host.can_send(now));
        let f = src.frame(now, i % 5 == 4);
        let plan = offer(&mut host, now, &f);
        let (bytes, _) = drain(&mut host);
        now += 700; // the viewer takes 0.7 ms to receive, apply and ACK
        let acks = viewer.receive(&bytes, now, None);
        host.handle_bytes(now, &acks);
        let (_, events) = drain(&mut host);
        rtts.extend(events.iter().filter_map(|e| match e {
            Event::Rtt(r) => Some(*r),
            _ => None,
        }));
        let want = match i {
            0 => Plan::Keyframe { forced: false },
            i if i % 5 == 4 => Plan::Unchanged,
            _ => Plan::Delta,
        };
        assert_eq!(plan, want, "frame {i}");
        now += 16_000;
    }
    assert_eq!(
        viewer.brightness,
        Some(128),
        "the initial command follows the stream description"
    );
    assert_eq!(viewer.frames.len(), 16);
    assert!(
        viewer.frames.iter().all(|&(_, _, good)| good),
        "{:?}",
        viewer.frames
    );
    assert_eq!(
        viewer.frames.iter().filter(|f| f.1).count(),
        1,
        "one keyframe"
    );
    assert_eq!(viewer.unchanged, [4, 9, 14, 19]);
    assert_eq!(rtts, vec![700; 20], "every ACK measured on the fake clock");
    assert_eq!(host.flow_stats().acks, 20);
}

#[test]
fn a_viewer_that_stops_acking_is_timed_out_not_waited_for() {
    let (mut host, mut src) = (v1_session(), Source::new());
    let mut now = 0;
    let mut sent = 0;
    while host.can_send(now) {
        offer(&mut host, now, &src.frame(now, false));
        sent += 1;
        now += 1_000;
    }
    // No ACK comes: the window stays full until the oldest frames' ACK time runs out, and the
    // session says when that is (pings due before it wake it too). The keyframe goes on a
    // stream of its own (named bases), so it is not lost: given up on after the ACK timeout
    // (2 s), it is taken to be still crossing and keeps its place among the first frames; the
    // delta sent 1 ms after it, given up on 1 ms later, does not.
    assert!(sent >= 2);
    let mut t = now;
    while !host.can_send(t) {
        t = host.poll_timeout().unwrap();
        host.handle_timeout(t);
    }
    assert_eq!(
        t, 2_001_000,
        "the second frame was sent at 1 ms with a 2 s ACK timeout"
    );
    assert_eq!(host.flow_stats().ack_timeouts, 2);
}

#[test]
fn a_checksum_mismatch_brings_a_forced_keyframe() {
    let (mut host, mut viewer, mut src) = (v1_session(), Viewer::new(), Source::new());
    let mut now = 0;
    for i in 0..4u64 {
        let f = src.frame(now, false);
        let plan = offer(&mut host, now, &f);
        let (bytes, _) = drain(&mut host);
        // The viewer reports frame 2 as not matching its checksum.
        let status = (i == 2).then_some(AckStatus::ChecksumMismatch);
        let acks = viewer.receive(&bytes, now + 500, status);
        host.handle_bytes(now + 500, &acks);
        let (_, events) = drain(&mut host);
        if i == 2 {
            assert!(events.contains(&Event::Count(HostCount::ViewerChecksumMismatch)));
        }
        if i == 3 {
            assert_eq!(plan, Plan::Keyframe { forced: true });
        }
        now += 16_000;
    }
    assert_eq!(host.flow_stats().keyframe_requests, 1);
}

/// A viewer whose deltas name their base resyncs with a delta against the picture it will
/// hold; one without gets a keyframe.
/// A viewer that missed one frame takes it and then the newest as the shared deltas, as the
/// runtime offers them (`SourceFrame::previous`), and every picture verifies; on a path that
/// may lose frames (QUIC), the newest is made for it alone instead.
#[test]
fn a_viewer_one_frame_behind_catches_up_with_the_shared_deltas() {
    let (mut host, mut viewer, mut src) = (v1_session(), Viewer::new(), Source::new());
    let frames = followed_frames(&mut src, 4);
    // Only the newest frame keeps its previous one.
    assert!(frames[1].previous().is_none() && frames[2].previous().is_none());
    let previous = frames[3]
        .previous()
        .expect("the newest keeps the frame before it");
    assert_eq!(previous.seq, frames[2].seq);
    let mut now = 0;
    let mut plans = Vec::new();
    for f in [&frames[0], &frames[1]] {
        plans.push(offer(&mut host, now, f));
        let (bytes, _) = drain(&mut host);
        let acks = viewer.receive(&bytes, now + 500, None);
        host.handle_bytes(now + 500, &acks);
        now += 16_000;
    }
    // Frame 2 was never offered (the flow had no room): frame 3 is the newest.
    assert!(host.catches_up_with(&frames[3], &previous));
    for f in [&previous, &frames[3]] {
        plans.push(offer(&mut host, now, f));
        let (bytes, _) = drain(&mut host);
        let acks = viewer.receive(&bytes, now + 500, None);
        host.handle_bytes(now + 500, &acks);
    }
    assert_eq!(
        plans,
        [
            Plan::Keyframe { forced: false },
            Plan::Delta,
            Plan::Delta,
            Plan::Delta
        ]
    );
    let s = host.flow_stats();
    assert_eq!((s.skipped, s.rebased, s.forced_keyframes), (0, 0, 0));
    assert!(viewer.frames.iter().all(|&(_, _, good)| good));
    assert_eq!(viewer.frames.len(), 4);

    // The same frames to a viewer on a path that may lose them: no catching up.
    let n = negotiate(v1::Codec::Lz4, caps::ALL, caps::ALL);
    let dec = v1::Decoder::new(v1::MAX_CONTROL_BODY);
    let lossy = HostConfig {
        frames_may_be_lost: true,
        datagrams_up_to: None,
        large_datagrams_up_to: None,
        ..config()
    };
    let mut quic = HostSession::new(V1Wire::new(n), ViewerReader::V1(dec), lossy);
    offer(&mut quic, 0, &frames[0]);
    offer(&mut quic, 16_000, &frames[1]);
    assert!(!quic.catches_up_with(&frames[3], &previous));
}

/// A frame that takes longer than 8 ms to cross is caught up with only where a delta made for
/// the viewer alone costs more CPU time to make than that frame takes to cross.
#[test]
fn a_viewer_catches_up_with_a_slow_frame_where_deltas_made_for_it_cost_more() {
    let (mut host, mut viewer, mut src) = (v1_session(), Viewer::new(), Source::new());
    let frames = followed_frames(&mut src, 4);
    let previous = frames[3].previous().expect("kept");
    // Each frame's ACK comes 400 ms after its send: a slow path.
    let mut now = 0;
    for f in [&frames[0], &frames[1]] {
        offer(&mut host, now, f);
        let (bytes, _) = drain(&mut host);
        let acks = viewer.receive(&bytes, now + 400_000, None);
        host.handle_bytes(now + 400_000, &acks);
        now += 400_000;
    }
    let e = host.link_estimate().expect("a byte budget");
    let bytes = previous.shared_delta().expect("a delta").0.len() as u64;
    let crossing = e.time_us(bytes);
    assert!(crossing > CATCH_UP_WITHIN_US, "{crossing} µs: {e:?}");
    assert!(!host.catches_up_with(&frames[3], &previous));
    // A newest frame that only repeats that frame's picture: a delta made for the viewer alone
    // would be the same bytes, so the slow frame is caught up with.
    let repeat = Arc::new(SourceFrame::new(
        previous.again(frames[3].seq, frames[3].capture_us),
        Payload::Unchanged,
    ));
    repeat.follow(&previous);
    assert!(host.catches_up_with(&repeat, &previous));
    // Deltas made for this viewer took twice that long to make: catching up is cheaper.
    for _ in 0..40 {
        host.on_rebased_made(2 * crossing);
    }
    assert!(host.catches_up_with(&frames[3], &previous));
}

#[test]
fn a_slow_viewer_skips_frames_then_resyncs_exactly() {
    for named in [false, true] {
        let viewer_caps = match named {
            true => caps::ALL,
            false => caps::ALL & !caps::NAMED_BASES,
        };
        slow_viewer_resyncs(v1_session_with(viewer_caps), named);
    }
}

fn slow_viewer_resyncs(mut host: HostSession<V1Wire>, named: bool) {
    let (mut viewer, mut src) = (Viewer::new(), Source::new());
    let mut now = 0;
    let mut pending = Vec::new();
    // Frames keep coming every 16 ms; the viewer reads but its ACKs are held back, so the host
    // offers only what its window allows (the runtime's rule) and skips the rest.
    for _ in 0..30 {
        let f = src.frame(now, false);
        if host.can_send(now) {
            offer(&mut host, now, &f);
            let (bytes, _) = drain(&mut host);
            pending.extend(viewer.receive(&bytes, now, None));
        }
        now += 16_000;
    }
    // The ACKs arrive late; then frames flow again.
    host.handle_bytes(now, &pending);
    for _ in 0..5 {
        let f = src.frame(now, false);
        assert!(host.can_send(now));
        offer(&mut host, now, &f);
        let (bytes, _) = drain(&mut host);
        let acks = viewer.receive(&bytes, now + 300, None);
        host.handle_bytes(now + 300, &acks);
        now += 16_000;
    }
    let s = host.flow_stats();
    assert!(s.skipped > 20, "skipped {}", s.skipped);
    match named {
        true => assert_eq!(
            (s.forced_keyframes, s.rebased),
            (0, 1),
            "one rebased delta: {s:?}"
        ),
        false => assert_eq!(s.forced_keyframes, 1, "one keyframe to resync: {s:?}"),
    }
    assert!(
        viewer.frames.iter().all(|&(_, _, good)| good),
        "{:?}",
        viewer.frames
    );
    let last = viewer.frames.last().unwrap().0;
    assert_eq!(last, src.seq - 1, "the viewer ends on the newest frame");
}

#[test]
fn goodbye_reasons() {
    // The viewer leaves.
    let mut host = v1_session();
    let bye = Packet::Goodbye {
        code: goodbye::NORMAL,
        reason: "closing the window".into(),
    };
    host.handle_bytes(0, &bye.to_bytes());
    let (bytes, events) = drain(&mut host);
    assert!(bytes.is_empty() && host.is_done());
    assert_eq!(
        events,
        [Event::ViewerLeft {
            code: goodbye::NORMAL,
            reason: "closing the window".into()
        }]
    );
    // A packet a viewer must not send: goodbye with the reason, and the session ends.
    let mut host = v1_session();
    let welcome = Packet::Welcome {
        version: 1,
        caps: 0,
        session: 9,
    };
    host.handle_bytes(0, &welcome.to_bytes());
    let (bytes, events) = drain(&mut host);
    let mut v = Viewer::new();
    v.receive(&bytes, 0, None);
    assert_eq!(
        v.goodbye,
        Some((
            goodbye::PROTOCOL_ERROR,
            "unexpected welcome packet from a viewer".into()
        ))
    );
    assert!(matches!(events[..], [Event::Rejected(_)]) && host.is_done());
    // Garbage: the decoder's reason.
    let mut host = v1_session();
    host.handle_bytes(0, &[0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07]);
    let (bytes, _) = drain(&mut host);
    let mut v = Viewer::new();
    v.receive(&bytes, 0, None);
    let (code, reason) = v.goodbye.unwrap();
    assert_eq!(code, goodbye::PROTOCOL_ERROR);
    assert!(reason.contains("magic"), "{reason}");
    // After the end nothing more is read.
    host.handle_bytes(1, &bye.to_bytes());
    assert!(drain(&mut host).1.is_empty());
}

#[test]
fn pings_follow_their_schedule_and_pings_are_answered() {
    let mut host = v1_session();
    let mut viewer = Viewer::new();
    let mut t = 0;
    for _ in 0..8 {
        host.handle_timeout(t);
        t = host.poll_timeout().unwrap();
    }
    let (bytes, _) = drain(&mut host);
    viewer.receive(&bytes, 0, None);
    assert_eq!(viewer.pings, (0..8).collect::<Vec<_>>());
    assert_eq!(
        t,
        100_000 + 3 * 1_000_000,
        "five quick pings, then one a second"
    );
    host.handle_bytes(5, &Packet::Ping { id: 77, sent_us: 3 }.to_bytes());
    let mut d = v1::Decoder::new(v1::MAX_CONTROL_BODY);
    d.feed(&drain(&mut host).0);
    assert_eq!(
        d.next_packet().unwrap(),
        Some(Packet::Pong {
            id: 77,
            ping_sent_us: 3,
            reply_us: 5
        })
    );
}

/// Bytes the viewer sent right behind its Hello, already read by the handshake, are handled.
#[test]
fn packets_behind_the_hello_are_not_lost() {
    let mut dec = v1::Decoder::new(v1::MAX_CONTROL_BODY);
    dec.feed(&Packet::Ping { id: 5, sent_us: 1 }.to_bytes());
    let mut host = HostSession::new(
        V1Wire::new(negotiate(v1::Codec::Lz4, caps::ALL, caps::ALL)),
        ViewerReader::V1(dec),
        config(),
    );
    host.handle_bytes(2, &[]);
    let mut d = v1::Decoder::new(v1::MAX_CONTROL_BODY);
    d.feed(&drain(&mut host).0);
    assert!(matches!(
        d.next_packet().unwrap(),
        Some(Packet::Pong { id: 5, .. })
    ));
}

#[test]
fn daylight_connect_order_and_no_delta_the_app_would_skip() {
    let reader = ViewerReader::Daylight(daylight::ViewerDecoder::new());
    let mut host = HostSession::new(DaylightWire::default(), reader, config());
    let mut src = Source::new();
    let mut dec = HostDecoder::new(daylight::DEFAULT_MAX_PAYLOAD);
    let mut now = 0;
    let (mut got, mut events) = (Vec::new(), Vec::new());
    for _ in 0..6 {
        offer(&mut host, now, &src.frame(now, false));
        let (bytes, e) = drain(&mut host);
        events.extend(e);
        dec.feed(&bytes);
        while let Some(p) = dec.next_packet().unwrap() {
            if let HostPacket::Frame {
                seq,
                payload,
                keyframe,
            } = &p
            {
                let mut ack = BytesMut::new();
                ViewerPacket::Ack { seq: *seq }.encode(&mut ack);
                host.handle_bytes(now + 400, &ack);
                assert!(
                    *keyframe || payload.len() >= 256,
                    "a delta the app would skip"
                );
            }
            got.push(p);
        }
        now += 16_000;
    }
    // Resolution, brightness, then a keyframe, as the original host does.
    assert_eq!(
        got[0],
        HostPacket::Resolution {
            width: W as u16,
            height: H as u16
        }
    );
    assert_eq!(
        got[1],
        HostPacket::Command {
            cmd: daylight::CMD_BRIGHTNESS,
            value: 128
        }
    );
    assert!(matches!(
        got[2],
        HostPacket::Frame {
            keyframe: true,
            seq: 0,
            ..
        }
    ));
    events.extend(std::iter::from_fn(|| host.poll_event()));
    let rtts = events.iter().filter(|e| **e == Event::Rtt(400)).count();
    assert_eq!(rtts, 6);
}

/// The fake clock both ends read in the next test (a `ViewerSession` takes a clock function);
/// only that test uses it.
static CLOCK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn fake_now() -> u64 {
    CLOCK.load(std::sync::atomic::Ordering::Relaxed)
}

/// Both ends sans-IO: a `HostSession` and a `ViewerSession` connected in memory, a picture a
/// frame with the clock stepping 1 ms per hop. Every picture the viewer shows verifies; the
/// host's RTTs and the viewer's end-to-end times are exact on the fake clock once the pings
/// have measured the offset (zero here, one clock).
#[test]
fn host_and_viewer_sessions_talk_to_each_other() {
    use framewire_session::{ViewerEvent, ViewerHello, ViewerSession};
    let set = |t: u64| CLOCK.store(t, std::sync::atomic::Ordering::Relaxed);
    set(1_000);
    let mut viewer = ViewerSession::new(
        ViewerHello {
            caps: caps::LZ4 | caps::UNCHANGED | caps::CHECKSUM_XXH3,
            stream: "screen".into(),
            token: String::new(),
        },
        fake_now,
    );
    let hello: Vec<u8> = std::iter::from_fn(|| viewer.poll_transmit())
        .flatten()
        .collect();
    let mut d = v1::Decoder::new(v1::MAX_CONTROL_BODY);
    d.feed(&hello);
    let Some(Packet::Hello { caps: declared, .. }) = d.next_packet().unwrap() else {
        panic!("the viewer starts with its Hello")
    };
    let n = negotiate(v1::Codec::Zstd, caps::ALL, declared);
    assert_eq!(n.codec, v1::Codec::Lz4, "a zstd host sends this viewer LZ4");
    let mut host = HostSession::new(V1Wire::new(n), ViewerReader::V1(d), config());
    viewer.handle_bytes(
        fake_now(),
        &Packet::Welcome {
            version: 1,
            caps: n.caps,
            session: 1,
        }
        .to_bytes(),
    );
    let mut src = Source::new();
    let (mut shown, mut rtts) = (Vec::new(), Vec::new());
    for i in 0..30u64 {
        let now = fake_now();
        host.handle_timeout(now);
        if host.can_send(now) {
            offer(&mut host, now, &src.frame(now, i % 7 == 6));
        }
        let (to_viewer, _) = drain(&mut host);
        // One hop is 1 ms each way: frame to the viewer, its ACK (and pings) to the host, the
        // host's answers back.
        set(now + 1_000);
        viewer.handle_bytes(fake_now(), &to_viewer);
        viewer.handle_timeout(fake_now());
        while let Some(e) = viewer.poll_event() {
            if let ViewerEvent::Shown(s) = e {
                // The picture as of this frame: an unchanged frame shows the one before.
                let want = if s.unchanged { s.seq - 1 } else { s.seq };
                assert!(viewer.picture().equals(&picture(want)), "frame {}", s.seq);
                shown.push(s);
            }
        }
        let to_host: Vec<u8> = std::iter::from_fn(|| viewer.poll_transmit())
            .flatten()
            .collect();
        set(now + 2_000);
        host.handle_bytes(fake_now(), &to_host);
        let (back, events) = drain(&mut host);
        rtts.extend(events.into_iter().filter_map(|e| match e {
            Event::Rtt(r) => Some(r),
            _ => None,
        }));
        set(now + 3_000);
        viewer.handle_bytes(fake_now(), &back);
        while let Some(e) = viewer.poll_event() {
            assert!(
                !matches!(e, ViewerEvent::Shown(_)),
                "only pongs come back here"
            );
        }
        set(now + 16_000);
    }
    assert_eq!(shown.len(), 30);
    assert!(shown.iter().all(|s| s.ok), "{shown:?}");
    assert_eq!(shown.iter().filter(|s| s.unchanged).count(), 4);
    assert!(shown
        .iter()
        .filter(|s| !s.unchanged)
        .all(|s| s.codec == Some("lz4")));
    assert!(
        rtts.len() >= 29 && rtts.iter().all(|&r| r == 2_000),
        "{rtts:?}"
    );
    // Capture at `now`, applied one hop later: 1 ms, once the offset is known.
    let e2e: Vec<u64> = shown.iter().filter_map(|s| s.end_to_end_us).collect();
    assert!(e2e.len() > 20 && e2e.iter().all(|&t| t == 1_000), "{e2e:?}");
}

/// The Daylight test's own fake clock (tests run in parallel: each clock has one test).
static DAYLIGHT_CLOCK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn daylight_now() -> u64 {
    DAYLIGHT_CLOCK.load(std::sync::atomic::Ordering::Relaxed)
}

/// A Daylight host session and a Daylight viewer session (the app's behaviour) in memory: the
/// resolution first, then a keyframe and deltas; every picture the viewer shows is the host's,
/// every frame is ACKed, and the host's RTTs are exact on the fake clock.
#[test]
fn host_and_daylight_viewer_sessions_talk_to_each_other() {
    use framewire_session::{DaylightViewerEvent, DaylightViewerSession};
    let set = |t: u64| DAYLIGHT_CLOCK.store(t, std::sync::atomic::Ordering::Relaxed);
    set(5_000_000);
    let mut viewer = DaylightViewerSession::new(daylight_now);
    let reader = ViewerReader::Daylight(daylight::ViewerDecoder::new());
    let mut host = HostSession::new(DaylightWire::default(), reader, config());
    let mut src = Source::new();
    let (mut shown, mut sizes, mut rtts) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..20u64 {
        let now = daylight_now();
        host.handle_timeout(now);
        if host.can_send(now) {
            offer(&mut host, now, &src.frame(now, i % 5 == 4));
        }
        let (to_viewer, _) = drain(&mut host);
        set(now + 1_000);
        viewer.handle_bytes(daylight_now(), &to_viewer);
        while let Some(e) = viewer.poll_event() {
            match e {
                DaylightViewerEvent::Shown(s) => {
                    assert!(s.decoded, "frame {}", s.seq);
                    // The content of this frame: an unchanged one repeats the picture before.
                    let want = (0..=i).rev().find(|k| k % 5 != 4).unwrap();
                    assert!(viewer.picture().equals(&picture(want)), "frame {i}");
                    shown.push(s);
                }
                DaylightViewerEvent::Size { width, height } => sizes.push((width, height)),
                DaylightViewerEvent::Command { .. } => {}
                DaylightViewerEvent::Error(e) => panic!("{e}"),
            }
        }
        let acks: Vec<u8> = std::iter::from_fn(|| viewer.poll_transmit())
            .flatten()
            .collect();
        set(now + 2_000);
        host.handle_bytes(daylight_now(), &acks);
        let (_, events) = drain(&mut host);
        rtts.extend(events.into_iter().filter_map(|e| match e {
            Event::Rtt(r) => Some(r),
            _ => None,
        }));
        set(now + 16_000);
    }
    assert_eq!(
        sizes,
        [(W, H)],
        "one resolution packet, before the first frame"
    );
    assert!(!viewer.is_done());
    assert!(shown[0].keyframe, "the first frame is a keyframe");
    // An unchanged picture sends nothing to a Daylight viewer; every other frame arrives.
    assert_eq!(shown.len(), 16);
    assert_eq!(rtts.len(), 16, "every frame ACKed");
    assert!(rtts.iter().all(|&r| r == 2_000), "{rtts:?}");
}
