//! A host and a viewer whose deltas name their base, joined the way QUIC joins them: control
//! packets (ACKs, pings, stream descriptions sent alone) on one reliable, ordered stream, and
//! each frame on its own stream that may be lost, arrive late (so frames overtake each other)
//! or arrive twice. Seeded, with a fake clock: every run is the same.
//!
//! Every picture the viewer reports applied must equal the source's picture of that frame,
//! byte for byte; a frame it cannot apply must leave its picture as it was; and the stream
//! must keep going without a keyframe after the first.

mod common;

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use common::Source;
use framewire_flow::{InflightLimit, Plan, TransportRtt};
use framewire_proto::v1::AckStatus;
use framewire_proto::v1::{self, caps};
use framewire_session::host::{
    LARGE_DATAGRAMS_QUIET_US, LARGE_DATAGRAMS_WATCH_US, SHARE_AFTER_QUEUE_US,
};
use framewire_session::outrun::OUTRUN_SETTLE_US;
use framewire_session::viewer::{BASE_WAIT_US, FIRST_PICTURE_WAIT_US};
use framewire_session::{
    negotiate, Event, FrameMeta, HostConfig, HostCount, HostSession, Payload, Repair, Shown,
    SourceFrame, V1Wire, ViewerEvent, ViewerHello, ViewerReader, ViewerSession,
};

thread_local! {
    /// The fake clock, one per test thread: tests run in parallel, and a clock shared by
    /// all of them let one test's time leak into another's viewer (a flaky failure).
    static CLOCK: Cell<u64> = const { Cell::new(0) };
}

fn set_clock(t: u64) {
    CLOCK.with(|c| c.set(t));
}

fn now() -> u64 {
    CLOCK.with(|c| c.get())
}

/// splitmix64: a seeded generator small enough to keep here (the test must replay exactly).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Default)]
struct Impairment {
    loss: f64,
    duplicate: f64,
    /// One-way delay, plus up to `jitter` more for each frame (so frames reorder).
    delay_us: u64,
    jitter_us: u64,
    /// More delay for keyframes: a large frame crossing a slow link behind the small deltas
    /// made against it.
    keyframe_delay_us: u64,
    /// The host is told the transport's loss counters on each step, as QUIC's are read on
    /// each flush: a packet per 1,200 bytes of frame units sent, and a lost frame as one lost
    /// packet.
    counters: bool,
    /// What the host is told each delta made for the viewer alone took to make (µs), as the
    /// runtime measures it; none when zero.
    rebase_us: u64,
}

/// What the source shows.
struct Content {
    /// The chance that a frame repeats the picture before it (an Unchanged).
    same: f64,
    /// Changed pictures cycle through this many (the same pixels come back as new content).
    period: Option<u64>,
    /// Only a lost keyframe may call for another. Reordering beyond the viewer's wait for a
    /// base (jitter far above the round trip) can also make a viewer report a base missing
    /// before it acknowledged anything; the sweep allows that and checks only exactness.
    strict_keyframes: bool,
    /// A page scrolled beside a fixed sidebar (`common::page`) instead.
    scroll: bool,
    /// What the viewer declares: [`caps::ALL`], or less.
    caps: u32,
}

const TYPING: Content = Content {
    same: 0.1,
    period: None,
    strict_keyframes: true,
    scroll: false,
    caps: caps::ALL,
};

#[derive(Debug, Default)]
struct Outcome {
    applied: u64,
    bases_missing: u64,
    stale: u64,
    frames_lost: u64,
    keyframes_lost: u64,
    last_applied: u64,
    source_frames: u64,
    /// Deltas the host made against a picture the viewer acknowledged.
    rebased: u64,
    /// Frames the host's flow skipped (the next one is rebased on the picture sent before).
    skipped: u64,
    /// Bytes of every frame unit the host sent (lost ones too).
    frame_bytes: u64,
}

fn host(viewer_caps: u32) -> HostSession<V1Wire> {
    host_on(viewer_caps, false)
}

/// A host whose transport makes lost packets good (`datagrams_up_to`: frames up to 128 KiB as datagrams) or not.
fn host_on(viewer_caps: u32, packets_made_good: bool) -> HostSession<V1Wire> {
    host_with(viewer_caps, packets_made_good.then_some(128 * 1024), None)
}

/// A host whose transport takes frames as datagrams up to `datagrams_up_to`, and up to
/// `large_up_to` where the path has not queued lately.
fn host_with(
    viewer_caps: u32,
    datagrams_up_to: Option<u64>,
    large_up_to: Option<u64>,
) -> HostSession<V1Wire> {
    let n = negotiate(v1::Codec::Lz4, viewer_caps, caps::ALL);
    assert!(n.named_bases);
    let cfg = HostConfig {
        limit: InflightLimit::default(),
        ack_timeout_us: 500_000,
        refresh_every: 0,
        control: false,
        drops_superseded: false,
        frames_may_be_lost: true,
        datagrams_up_to,
        large_datagrams_up_to: large_up_to,
        initial: vec![],
    };
    let dec = v1::Decoder::new(v1::MAX_CONTROL_BODY);
    HostSession::new(V1Wire::new(n), ViewerReader::V1(dec), cfg)
}

fn is_keyframe(unit: &[u8]) -> bool {
    let mut d = v1::Decoder::new(v1::DEFAULT_MAX_FRAME_BODY);
    d.feed(unit);
    std::iter::from_fn(|| d.next_packet().expect("the host's own bytes"))
        .any(|p| matches!(p, v1::Packet::Frame { header, .. } if header.keyframe))
}

/// A viewer with named bases, its clock at `t`, that has its Welcome (the Hello is the
/// runtime's business, the handshake; the Welcome is what it answers).
fn welcomed_viewer(t: u64) -> ViewerSession {
    let hello = ViewerHello {
        caps: caps::ALL,
        stream: "screen".into(),
        token: String::new(),
    };
    set_clock(t);
    let mut viewer = ViewerSession::new(hello, now);
    let _ = viewer.poll_transmit();
    let welcome = v1::Packet::Welcome {
        version: v1::VERSION,
        caps: caps::ALL,
        session: 1,
    };
    viewer.handle_bytes(now(), &welcome.to_bytes());
    viewer
}

fn run(seed: u64, imp: &Impairment, frames: u64) -> Outcome {
    run_content(seed, imp, frames, &TYPING)
}

fn run_content(seed: u64, imp: &Impairment, frames: u64, content: &Content) -> Outcome {
    let mut rng = Rng(seed);
    let mut host = host(content.caps);
    let mut viewer = welcomed_viewer(1);
    let mut src = match content.period {
        _ if content.scroll => Source::scrolling(),
        Some(p) => Source::repeating(p),
        None => Source::new(),
    };
    let mut pictures: HashMap<u64, Vec<u8>> = HashMap::new();
    let (mut to_viewer, mut to_host) = (VecDeque::new(), VecDeque::new());
    // Frame units in flight, by delivery time (then a tie-breaker).
    let mut units: BTreeMap<(u64, u64), Bytes> = BTreeMap::new();
    let mut out = Outcome::default();
    let mut held: Option<Vec<u8>> = None;
    let frame_every = 16_000;
    let mut next_frame = 0;
    let end = frames * frame_every + 1_000_000;
    let mut t = 0;
    while t < end {
        set_clock(t);
        if t == next_frame && src.seq < frames {
            let same = rng.chance(content.same) && src.seq > 0;
            let f: Arc<SourceFrame> = src.frame(t, same);
            pictures.insert(f.seq, f.grey.to_vec());
            if host.can_send(t) {
                let (plan, work) = host.plan_frame(&f);
                if let Some(w) = work {
                    w();
                }
                if matches!(plan, Plan::Rebased { .. }) && imp.rebase_us > 0 {
                    host.on_rebased_made(imp.rebase_us);
                }
                host.send_frame(t, &f, plan);
            }
            next_frame += frame_every;
        }
        host.handle_timeout(t);
        while let Some(tr) = host.poll_transmit() {
            let mut b = tr.head.to_vec();
            if let Some(p) = &tr.payload {
                b.extend_from_slice(p);
            }
            if !tr.frame {
                to_viewer.push_back((t + imp.delay_us, Bytes::from(b)));
                continue;
            }
            out.frame_bytes += b.len() as u64;
            if rng.chance(imp.loss) {
                out.frames_lost += 1;
                out.keyframes_lost += is_keyframe(&b) as u64;
                continue;
            }
            let copies = 1 + rng.chance(imp.duplicate) as u64;
            let slower = if is_keyframe(&b) {
                imp.keyframe_delay_us
            } else {
                0
            };
            for _ in 0..copies {
                let at = t + imp.delay_us + slower + rng.below(imp.jitter_us + 1);
                units.insert((at, rng.next()), Bytes::from(b.clone()));
            }
        }
        if imp.counters {
            let sent = out.frame_bytes.div_ceil(1_200);
            host.on_path_counters(sent, out.frames_lost, t);
        }
        while let Some(e) = host.poll_event() {
            if let framewire_session::Event::Rejected(e) = e {
                panic!("host rejected the viewer: {e}");
            }
        }
        // Deliveries due now: the control stream in order, then frame units.
        while to_viewer.front().is_some_and(|(at, _)| *at <= t) {
            let (_, b) = to_viewer.pop_front().expect("front exists");
            viewer.handle_bytes(t, &b);
        }
        let due: Vec<(u64, u64)> = units.range(..(t + 1, 0)).map(|(k, _)| *k).collect();
        let mut feeds: Vec<Bytes> = due.iter().map(|k| units.remove(k).expect("due")).collect();
        loop {
            while let Some(e) = viewer.poll_event() {
                match e {
                    ViewerEvent::Shown(s) => {
                        if s.ok {
                            let want = &pictures[&s.seq];
                            assert!(
                                viewer.picture().equals(want),
                                "seed {seed}: frame {} reported applied but differs",
                                s.seq
                            );
                            held = Some(want.clone());
                            out.applied += 1;
                            out.last_applied = s.seq;
                        } else {
                            assert!(
                                s.base_missing,
                                "seed {seed}: frame {} failed other than by a lost base: {s:?}",
                                s.seq
                            );
                            if let Some(h) = &held {
                                assert!(
                                    viewer.picture().equals(h),
                                    "seed {seed}: a frame with a missing base changed the picture"
                                );
                            }
                            out.bases_missing += 1;
                        }
                    }
                    ViewerEvent::Error(e) => panic!("seed {seed}: viewer error {e}"),
                    ViewerEvent::Goodbye { reason, .. } => panic!("seed {seed}: goodbye {reason}"),
                    _ => {}
                }
            }
            match feeds.pop() {
                Some(b) => viewer.handle_unit(t, &b),
                None => break,
            }
        }
        viewer.handle_timeout(t);
        while let Some(b) = viewer.poll_transmit() {
            to_host.push_back((t + imp.delay_us, b));
        }
        while to_host.front().is_some_and(|(at, _)| *at <= t) {
            let (_, b) = to_host.pop_front().expect("front exists");
            host.handle_bytes(t, &b);
        }
        t += 1_000;
    }
    out.stale = viewer.stale_frames();
    out.source_frames = src.seq;
    let s = host.flow_stats();
    // Only a lost keyframe (the viewer had no picture yet) calls for another.
    assert!(
        !content.strict_keyframes
            || (s.forced_keyframes <= out.keyframes_lost && s.keyframes == 1 + s.forced_keyframes),
        "seed {seed}: repaired with keyframes: {s:?} {out:?}"
    );
    out.rebased = s.rebased;
    out.skipped = s.skipped;
    eprintln!("seed {seed}: {out:?}");
    out
}

#[test]
fn every_applied_picture_is_exact_under_loss_reordering_and_duplication() {
    let imp = Impairment {
        loss: 0.05,
        duplicate: 0.02,
        delay_us: 10_000,
        jitter_us: 12_000,
        ..Impairment::default()
    };
    for seed in 1..=12 {
        let o = run(seed, &imp, 400);
        assert!(
            o.frames_lost > 0,
            "seed {seed}: the link lost nothing: {o:?}"
        );
        // Frames after a lost one are made against the picture the viewer acknowledged, so
        // they apply without it: few frames ever miss their base. A lost keyframe (QUIC loses
        // none: it resets only superseded streams) is waited for, as one that is only late,
        // for up to the ACK timeout (500 ms of frames), counted again from each report it
        // covers (four at most).
        assert!(o.rebased > 0, "seed {seed}: {o:?}");
        assert!(
            o.bases_missing * 20 <= o.source_frames + 20 * 32 * o.keyframes_lost,
            "seed {seed}: {o:?}"
        );
        // The picture never freezes: most frames are shown, and the last ones are.
        assert!(o.applied * 2 >= o.source_frames, "seed {seed}: only {o:?}");
        assert!(
            o.last_applied + 10 >= o.source_frames,
            "seed {seed}: the stream stopped: {o:?}"
        );
    }
}

/// A long round trip keeps the viewer at its in-flight limit: frames are skipped, and the next
/// one is a delta against the picture it will hold once the frames in flight arrive.
#[test]
fn skipped_frames_are_rebased_on_pictures_still_in_flight() {
    let imp = Impairment {
        loss: 0.02,
        duplicate: 0.0,
        delay_us: 60_000,
        jitter_us: 5_000,
        ..Impairment::default()
    };
    for seed in 20..24 {
        let o = run(seed, &imp, 300);
        assert!(
            o.rebased > 0 && o.last_applied + 12 >= o.source_frames,
            "{o:?}"
        );
    }
}

#[test]
fn a_clean_link_never_misses_a_base() {
    let imp = Impairment {
        loss: 0.0,
        duplicate: 0.0,
        delay_us: 5_000,
        jitter_us: 0,
        ..Impairment::default()
    };
    let o = run(7, &imp, 200);
    assert_eq!(
        (o.bases_missing, o.stale, o.frames_lost),
        (0, 0, 0),
        "{o:?}"
    );
    assert_eq!(o.last_applied + 1, o.source_frames);
}

/// On a path whose transport reports no loss, frames chain as on an ordered stream: the delta
/// every viewer shares, against the frame sent before (still crossing when the round trip is
/// longer than a capture interval), not one made for this viewer against what it
/// acknowledged (made for it alone, and spanning every frame in flight). Every picture is
/// still exact.
#[test]
fn a_path_reported_clean_gets_the_shared_delta() {
    let link = |counters| Impairment {
        delay_us: 20_000,
        counters,
        ..Impairment::default()
    };
    let scroll = Content {
        same: 0.0,
        period: None,
        strict_keyframes: true,
        scroll: true,
        caps: caps::ALL,
    };
    let unknown = run_content(31, &link(false), 200, &scroll);
    let clean = run_content(31, &link(true), 200, &scroll);
    for o in [&unknown, &clean] {
        assert_eq!((o.bases_missing, o.stale), (0, 0), "{o:?}");
        assert_eq!(o.last_applied + 1, o.source_frames, "{o:?}");
    }
    assert!(unknown.rebased > 100, "{unknown:?}");
    // Only a frame after a skip (while nothing had come back yet) is made for the viewer.
    assert!(clean.rebased <= clean.skipped, "{clean:?}");
}

/// A loss the transport reports brings the acknowledged picture back as the base of the next
/// frames: after it, frames are rebased, and every applied picture is exact.
#[test]
fn a_loss_reported_brings_back_deltas_against_the_acknowledged_picture() {
    let imp = Impairment {
        loss: 0.03,
        delay_us: 20_000,
        jitter_us: 4_000,
        counters: true,
        ..Impairment::default()
    };
    for seed in 40..46 {
        let o = run(seed, &imp, 300);
        assert!(o.frames_lost > 0, "seed {seed}: {o:?}");
        assert!(o.rebased > 0, "seed {seed}: {o:?}");
        assert!(o.applied * 2 >= o.source_frames, "seed {seed}: only {o:?}");
        assert!(
            o.last_applied + 10 >= o.source_frames,
            "seed {seed}: the stream stopped: {o:?}"
        );
    }
}

/// Where deltas made for the viewer alone are costly to make (17 ms each here, as glxgears'
/// were), frames keep chaining on the frame sent before after a loss: only a frame held up by
/// it past its ACK's due time calls for a delta against the acknowledged picture, which answers
/// the loss. (Here a lost frame never comes; over QUIC its packets are sent again, and most
/// such frames arrive in time.) Where those deltas are cheap, the path stays lossy for a while,
/// and every frame after a loss is made against the acknowledged picture. Every picture is
/// exact either way, and the stream keeps going.
#[test]
fn frames_chain_after_a_loss_where_deltas_for_the_viewer_are_costly() {
    let imp = |rebase_us| Impairment {
        loss: 0.03,
        delay_us: 20_000,
        jitter_us: 4_000,
        counters: true,
        rebase_us,
        ..Impairment::default()
    };
    for seed in 40..46 {
        let cheap = run(seed, &imp(2_000), 300);
        let costly = run(seed, &imp(17_000), 300);
        for o in [&cheap, &costly] {
            assert!(o.frames_lost > 0, "seed {seed}: {o:?}");
            assert!(
                o.last_applied + 10 >= o.source_frames,
                "seed {seed}: the stream stopped: {o:?}"
            );
        }
        // A lost frame costs one delta made for the viewer (its answer, or a repair for the
        // frames chained on it), and a skip one more.
        assert!(
            costly.rebased <= 2 * costly.frames_lost + costly.skipped,
            "seed {seed}: frames kept being made against the acknowledged picture: {costly:?}"
        );
        assert!(
            cheap.rebased > 4 * costly.rebased,
            "seed {seed}: cheap {cheap:?}, costly {costly:?}"
        );
    }
}

/// A keyframe that crosses far slower than the deltas made against it (150 ms behind them, on
/// a 20 ms round trip: a large picture on a slow link) is waited for, not repaired: the
/// viewer, holding no picture yet, holds its deltas for it (within
/// [`FIRST_PICTURE_WAIT_US`]) instead of reporting their base missing; the keyframe applies
/// when it comes, and the frames after it are made against it. Another keyframe would be
/// overtaken by its own deltas, for ever (seen on an emulated 10 Mbit/s link as a cell with no
/// frame shown), had the viewer reported them and the host repaired them with one.
#[test]
fn a_keyframe_slower_than_its_deltas_is_waited_for_not_repaired() {
    let imp = Impairment {
        delay_us: 10_000,
        keyframe_delay_us: 150_000,
        ..Impairment::default()
    };
    let o = run(5, &imp, 200);
    assert_eq!(o.bases_missing, 0, "the deltas were held for it: {o:?}");
    assert!(o.applied + 30 >= o.source_frames, "{o:?}");
    assert_eq!(o.last_applied + 1, o.source_frames, "{o:?}");
}

#[test]
fn reordering_alone_loses_no_picture_for_good() {
    let imp = Impairment {
        loss: 0.0,
        duplicate: 0.05,
        delay_us: 5_000,
        jitter_us: 30_000,
        ..Impairment::default()
    };
    let o = run(3, &imp, 300);
    assert!(o.stale > 0, "frames overtook each other: {o:?}");
    assert!(o.last_applied + 10 >= o.source_frames, "{o:?}");
}

/// A seeded sweep over links and contents: loss up to 15 %, one-way delays from 1 to 80 ms,
/// jitter up to 100 ms (frames overtake each other by several frame intervals), duplicates,
/// mostly-unchanged screens, and pictures that come back (a blinking cursor: a new content
/// whose checksum is that of a picture the viewer keeps). Whatever happens, every picture the
/// viewer reports applied is exact, and every frame it cannot apply is one whose base it lacks.
#[test]
fn every_applied_picture_is_exact_across_a_sweep_of_links_and_contents() {
    let mut pick = Rng(0x5EED);
    for seed in 100..220 {
        let imp = Impairment {
            loss: [0.0, 0.01, 0.05, 0.15][pick.below(4) as usize],
            duplicate: [0.0, 0.02][pick.below(2) as usize],
            delay_us: [1_000, 10_000, 40_000, 80_000][pick.below(4) as usize],
            jitter_us: [0, 5_000, 30_000, 100_000][pick.below(4) as usize],
            ..Impairment::default()
        };
        let content = Content {
            same: [0.0, 0.1, 0.7][pick.below(3) as usize],
            period: [None, Some(2), Some(3)][pick.below(3) as usize],
            strict_keyframes: false,
            scroll: pick.below(3) == 0,
            caps: caps::ALL,
        };
        let o = run_content(seed, &imp, 200, &content);
        assert!(o.applied > 0, "seed {seed}: nothing shown: {o:?}");
    }
}

/// A page scrolled beside a fixed sidebar, across a lossy link with a long round trip: the
/// deltas made against the picture the viewer acknowledged find the moved text column, so
/// they cost its patches, not every row it crossed. Every applied picture is exact (checked
/// in `run_content`), with moved rectangles and without.
#[test]
fn deltas_against_acknowledged_pictures_find_moved_rectangles() {
    let imp = Impairment {
        loss: 0.05,
        delay_us: 30_000,
        jitter_us: 5_000,
        ..Impairment::default()
    };
    let page = |caps| Content {
        same: 0.0,
        period: None,
        strict_keyframes: true,
        scroll: true,
        caps,
    };
    for seed in 30..33 {
        let rects = run_content(seed, &imp, 200, &page(caps::ALL));
        let rows = run_content(seed, &imp, 200, &page(caps::ALL & !caps::MOVED_RECTS));
        // Nearly every frame is made against an acknowledged picture, a round trip old.
        assert!(
            rects.rebased > 150 && rows.rebased > 150,
            "{rects:?} {rows:?}"
        );
        assert!(
            rects.applied > 150 && rows.applied > 150,
            "{rects:?} {rows:?}"
        );
        assert!(
            rects.frame_bytes * 4 < rows.frame_bytes,
            "seed {seed}: {} bytes with moved rectangles, {} with rows",
            rects.frame_bytes,
            rows.frame_bytes
        );
    }
}

/// An Unchanged whose stream overtook the keyframe's waits for it, instead of failing against
/// no picture (a checksum failure, and a keyframe for nothing).
#[test]
fn an_unchanged_frame_that_overtakes_the_keyframe_waits_for_it() {
    let mut host = host(caps::ALL);
    let mut viewer = welcomed_viewer(1_000);
    while viewer.poll_event().is_some() {}
    let mut src = Source::new();
    let mut units = Vec::new();
    for same in [false, true] {
        let f = src.frame(now(), same);
        let (plan, work) = host.plan_frame(&f);
        if let Some(w) = work {
            w();
        }
        host.send_frame(now(), &f, plan);
        while let Some(t) = host.poll_transmit() {
            if t.frame {
                let mut b = t.head.to_vec();
                b.extend_from_slice(t.payload.as_deref().unwrap_or(&[]));
                units.push(b);
            }
        }
    }
    assert_eq!(units.len(), 2, "a keyframe and an Unchanged");
    viewer.handle_unit(now(), &units[1]);
    viewer.handle_unit(now(), &units[0]);
    let shown = shown_ok(&mut viewer);
    assert_eq!(shown, [(0, true), (1, true)]);
}

/// Before its first picture a viewer holds a frame that overtook the keyframe past the usual
/// wait: a keyframe of megabytes takes half a second to cross 50 Mbit/s, and a frame reported
/// missing meanwhile is acknowledged before the keyframe, whose bytes the host then takes for
/// settled. Once it holds a picture the usual wait is back, for frames already waiting too
/// (here one whose base, frame 1, never comes), and a keyframe that never comes is given up
/// after [`FIRST_PICTURE_WAIT_US`].
#[test]
fn before_its_first_picture_a_viewer_waits_longer_for_the_keyframe() {
    for keyframe_comes in [true, false] {
        let (units, mut viewer) = chain_and_viewer(4);
        viewer.handle_unit(now(), &units[1]);
        set_clock(now() + 10 * BASE_WAIT_US);
        viewer.handle_timeout(now());
        assert_eq!(shown_ok(&mut viewer), [], "held for the keyframe");
        let arrived = now();
        viewer.handle_unit(arrived, &units[3]);
        if !keyframe_comes {
            set_clock(now() + FIRST_PICTURE_WAIT_US);
            viewer.handle_timeout(now());
            assert_eq!(shown_base_missing(&mut viewer), [(1, true), (3, true)]);
            continue;
        }
        // The keyframe comes 10 ms after frame 3, whose base (frame 2) is late: now that a
        // picture is held, frame 3 is due at the end of its usual wait, not the second it was
        // given on arrival.
        set_clock(arrived + 10_000);
        viewer.handle_unit(now(), &units[0]);
        assert_eq!(shown_ok(&mut viewer), [(0, true), (1, true)], "in order");
        // Driven by its own timeouts, as a client drives it.
        let due = arrived + BASE_WAIT_US;
        let mut reported = Vec::new();
        while let Some(t) = viewer.poll_timeout().filter(|&t| t <= due) {
            set_clock(t.max(now()));
            viewer.handle_timeout(now());
            reported.extend(shown_base_missing(&mut viewer));
            if !reported.is_empty() {
                break;
            }
        }
        assert_eq!(reported, [(3, true)], "reported by {due} µs");
    }
}

/// Plans and sends `f`, returning the plan and the frame units it made (head and payload).
fn offer(host: &mut HostSession<V1Wire>, f: &Arc<SourceFrame>) -> (Plan, Vec<Vec<u8>>) {
    let (plan, units) = offer_as(host, f);
    (plan, units.into_iter().map(|(_, u)| u).collect())
}

/// As [`offer`], with whether each unit went as datagrams.
fn offer_as(host: &mut HostSession<V1Wire>, f: &Arc<SourceFrame>) -> (Plan, Vec<(bool, Vec<u8>)>) {
    let (plan, work) = host.plan_frame(f);
    if let Some(w) = work {
        w();
    }
    host.send_frame(now(), f, plan);
    let mut units = Vec::new();
    while let Some(t) = host.poll_transmit() {
        if t.frame {
            let mut b = t.head.to_vec();
            b.extend_from_slice(t.payload.as_deref().unwrap_or(&[]));
            units.push((t.datagrams, b));
        }
    }
    (plan, units)
}

/// `n` frames of noise 640 × 400: a keyframe, then full-frame deltas, each well over the
/// 128 KiB that go as datagrams.
fn noise_frames(n: u64) -> Vec<Arc<SourceFrame>> {
    let mut noise = Noise::default();
    frames_of((0..n).map(|_| noise.bytes(640 * 400)).collect(), 640, 400)
}

/// `n` frames 640 × 400: a keyframe of noise, then each frame the one before with the next
/// `rows` rows (in turn, from the top) or, for the frames in `small`, the first 2 000 bytes
/// made noise again. A delta against the frame before carries one band (or the few bytes); a
/// delta against an older picture carries every band changed since.
fn band_frames(n: u64, rows: usize, small: &[u64]) -> Vec<Arc<SourceFrame>> {
    let (w, h) = (640usize, 400usize);
    let mut noise = Noise::default();
    let mut pictures = vec![noise.bytes(w * h)];
    let mut band = 0;
    for seq in 1..n {
        let mut p = pictures.last().expect("the keyframe").clone();
        let span = if small.contains(&seq) {
            0..2_000
        } else {
            let start = (band * rows * w) % (w * h);
            band += 1;
            start..(start + rows * w).min(w * h)
        };
        let len = span.len();
        p[span].copy_from_slice(&noise.bytes(len));
        pictures.push(p);
    }
    frames_of(pictures, w as u32, h as u32)
}

/// A seeded xorshift generator of noise.
struct Noise(u64);

impl Default for Noise {
    fn default() -> Self {
        Noise(0x9E37_79B9_7F4A_7C15)
    }
}

impl Noise {
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0 as u8
            })
            .collect()
    }
}

/// Source frames of `pictures` (grey, `w` × `h`): a keyframe, then each a delta (XOR, LZ4)
/// against the one before, captured now.
fn frames_of(pictures: Vec<Vec<u8>>, w: u32, h: u32) -> Vec<Arc<SourceFrame>> {
    let lz4 = |d: &[u8]| {
        let mut out = Vec::new();
        framewire_codec::BlockCodec::Lz4
            .compress(d, &mut out)
            .unwrap();
        Bytes::from(out)
    };
    let mut prev: Option<Arc<Vec<u8>>> = None;
    (0u64..)
        .zip(pictures)
        .map(|(seq, grey)| {
            let grey = Arc::new(grey);
            let payload = match &prev {
                None => Payload::Key(lz4(&grey)),
                Some(base) => {
                    let xor: Vec<u8> = base.iter().zip(grey.iter()).map(|(a, b)| a ^ b).collect();
                    Payload::Delta {
                        data: lz4(&xor),
                        base_id: seq - 1,
                        base: base.clone(),
                    }
                }
            };
            prev = Some(grey.clone());
            let meta = FrameMeta {
                planes: 1,
                seq,
                capture_us: now(),
                width: w,
                height: h,
                checksum: framewire_codec::checksum::picture_checksum(&grey, w as usize),
                grey,
                content_id: seq,
                codec: framewire_codec::BlockCodec::Lz4,
            };
            Arc::new(SourceFrame::new(meta, payload))
        })
        .collect()
}

/// Frames too large for datagrams cross on streams of their own, where QUIC sends a lost
/// packet again. A loss the transport counts while one is in flight does not make the next
/// one a delta against the acknowledged picture (made for the viewer alone, spanning every
/// frame in flight; at 1 % loss nearly every such frame loses a packet): it chains on the
/// frame sent before. Where frames cannot go as datagrams at all, the path is counted lossy
/// as before. Every picture is exact either way.
#[test]
fn frames_too_large_for_datagrams_chain_after_a_counted_loss() {
    let frames = noise_frames(3);
    for made_good in [true, false] {
        set_clock(1_000);
        let mut host = host_on(caps::ALL, made_good);
        host.on_path_counters(1_000, 0, now());
        let mut viewer = welcomed_viewer(now());
        let mut shown = Vec::new();
        // The viewer takes what came (its events), and its ACKs go back.
        let mut ack = |host: &mut HostSession<V1Wire>, viewer: &mut ViewerSession| {
            shown.extend(shown_ok(viewer));
            while let Some(b) = viewer.poll_transmit() {
                host.handle_bytes(now(), &b);
            }
        };
        // The keyframe arrives and is acknowledged; frame 1 is sent, still crossing.
        let (p0, u0) = offer(&mut host, &frames[0]);
        assert!(matches!(p0, Plan::Keyframe { .. }));
        for u in &u0 {
            viewer.handle_unit(now(), u);
        }
        ack(&mut host, &mut viewer);
        assert_eq!(host.flow_stats().acks, 1, "the keyframe acknowledged");
        set_clock(now() + 16_000);
        let (p1, u1) = offer(&mut host, &frames[1]);
        assert_eq!(p1, Plan::Delta);
        assert!(u1.iter().map(Vec::len).sum::<usize>() > 128 * 1024);
        // A packet of it is counted lost.
        host.on_path_counters(2_000, 3, now());
        set_clock(now() + 16_000);
        let (p2, u2) = offer(&mut host, &frames[2]);
        match made_good {
            true => assert_eq!(p2, Plan::Delta, "chained on frame 1"),
            false => assert!(
                matches!(p2, Plan::Rebased { base: 0 }),
                "against the acknowledged keyframe: {p2:?}"
            ),
        }
        for u in u1.iter().chain(&u2) {
            viewer.handle_unit(now(), u);
        }
        ack(&mut host, &mut viewer);
        assert_eq!(shown, [(0, true), (1, true), (2, true)], "{made_good}");
        assert!(viewer.picture().equals(&frames[2].grey));
    }
}

/// Frames over 128 KiB go as datagrams to a viewer that takes larger units until the
/// transport's round trip shows a queue that lasts, then on streams until none lasted
/// within `LARGE_DATAGRAMS_QUIET_US`; a viewer that takes only the smaller units, or a
/// keyframe, gets a stream throughout. Every picture is exact.
#[test]
fn large_frames_go_as_datagrams_until_the_path_queues() {
    let frames = noise_frames(8);
    for large in [Some(2 << 20), None] {
        set_clock(1_000);
        let mut host = host_with(caps::ALL, Some(128 * 1024), large);
        let mut viewer = welcomed_viewer(now());
        // Sends frame `i`: whether it asked for datagrams, and it is applied and acknowledged
        // 20 ms later.
        let mut send = |host: &mut HostSession<V1Wire>, i: usize| {
            let (plan, work) = host.plan_frame(&frames[i]);
            if let Some(w) = work {
                w();
            }
            host.send_frame(now(), &frames[i], plan);
            let mut datagrams = None;
            set_clock(now() + 20_000);
            while let Some(t) = host.poll_transmit() {
                if t.frame {
                    datagrams = Some(t.datagrams);
                    let mut b = t.head.to_vec();
                    b.extend_from_slice(t.payload.as_deref().unwrap_or(&[]));
                    viewer.handle_unit(now(), &b);
                }
            }
            assert_eq!(shown_ok(&mut viewer), [(i as u64, true)]);
            while let Some(b) = viewer.poll_transmit() {
                host.handle_bytes(now(), &b);
            }
            datagrams.expect("a frame sent")
        };
        assert!(!send(&mut host, 0), "the keyframe goes on a stream");
        // The transport's round trip is first compared with the host's estimate: no queue.
        let calm = TransportRtt {
            smoothed_us: 21_000,
            min_us: 20_000,
        };
        assert_eq!(host.window_bound(calm, now()), None);
        // Frame 1 is sent 20 ms short of the watch (it is sent, then the clock moves on).
        set_clock(now() + LARGE_DATAGRAMS_WATCH_US - 20_000);
        assert!(!send(&mut host, 1), "not watched for long enough");
        // Watched without a queue: the delta applies to the acknowledged picture (it needs
        // nothing in flight), and goes as datagrams.
        assert_eq!(send(&mut host, 2), large.is_some());
        // The transport's round trip shows a queue (its minimum 20 ms, smoothed 60 ms).
        let queued = TransportRtt {
            smoothed_us: 60_000,
            min_us: 20_000,
        };
        assert!(host.window_bound(queued, now()).is_some(), "a queue seen");
        assert_eq!(
            send(&mut host, 3),
            large.is_some(),
            "a queue seen once is not held"
        );
        // Seen again 1.1 s later: more than 1 s apart, the two looks are not one queue.
        set_clock(now() + 1_080_000);
        assert!(host.window_bound(queued, now()).is_some());
        assert_eq!(
            send(&mut host, 4),
            large.is_some(),
            "two moments are not a queue"
        );
        // Seen at looks spanning 100 ms (more than two minimum RTTs): it held.
        for _ in 0..10 {
            set_clock(now() + 10_000);
            assert!(host.window_bound(queued, now()).is_some());
        }
        assert!(!send(&mut host, 5), "a stream once the path queued");
        set_clock(now() + LARGE_DATAGRAMS_QUIET_US - 40_000);
        assert!(!send(&mut host, 6), "still a stream within the quiet time");
        set_clock(now() + 20_001);
        assert_eq!(send(&mut host, 7), large.is_some(), "datagrams again");
        assert!(viewer.picture().equals(&frames[7].grey));
    }
}

/// A large delta whose base may still be crossing on a stream stays on a stream: QUIC sends
/// datagrams ahead of stream data, and it would overtake its base (here a keyframe the viewer
/// asked for). The next frame is made against the acknowledged picture instead, which needs
/// nothing in flight, and goes as datagrams, as does the delta chained on it. The frames
/// left behind on streams come late and are dropped; every picture shown is exact.
#[test]
fn a_large_delta_does_not_overtake_its_base_on_a_stream() {
    set_clock(1_000);
    let frames = noise_frames(5);
    let (mut host, mut viewer) = calm_after_keyframe(128 * 1024, 2 << 20, &frames[0]);
    let sent = |host: &mut HostSession<V1Wire>, i: usize| sent_one(host, &frames[i]);
    // The viewer asks for a keyframe: it goes on a stream, and is still crossing when
    // frame 2, a large delta against it, is sent: a stream too, behind it.
    host.handle_bytes(now(), &v1::Packet::KeyframeRequest { reason: 0 }.to_bytes());
    let (p1, d1, u1) = sent(&mut host, 1);
    assert!(matches!(p1, Plan::Keyframe { .. }) && !d1, "{p1:?}");
    set_clock(now() + 16_000);
    let (p2, d2, u2) = sent(&mut host, 2);
    assert_eq!((p2, d2), (Plan::Delta, false));
    // Frame 3 is made against the acknowledged picture and goes as datagrams; frame 4,
    // chained on it, too.
    set_clock(now() + 16_000);
    let (p3, d3, u3) = sent(&mut host, 3);
    assert_eq!((p3, d3), (Plan::Rebased { base: 0 }, true));
    set_clock(now() + 16_000);
    let (p4, d4, u4) = sent(&mut host, 4);
    assert_eq!((p4, d4), (Plan::Delta, true), "chained on frame 3");
    // Frames 3 and 4 overtake 1 and 2, which the viewer drops when they come.
    for u in [&u3, &u4, &u1, &u2] {
        viewer.handle_unit(now(), u);
    }
    assert_eq!(shown_ok(&mut viewer), [(3, true), (4, true)]);
    assert!(viewer.picture().equals(&frames[4].grey));
}

/// A frame on a stream holds large deltas off datagrams through the small frames chained on
/// it, which go as datagrams (they may overtake it too, but the viewer waits for a base that
/// long), until the viewer applied it: then a large delta chained on those small frames goes
/// as datagrams. Every picture is exact.
#[test]
fn a_frame_on_a_stream_holds_large_deltas_through_small_frames_until_it_is_applied() {
    for applied_first in [false, true] {
        set_clock(1_000);
        // Frame 2 changes 2 000 bytes; frames 1 and 3 a band of 40 rows (25.6 kB).
        let frames = band_frames(4, 40, &[2]);
        let (mut host, mut viewer) = calm_after_keyframe(16 * 1024, 2 << 20, &frames[0]);
        host.handle_bytes(now(), &v1::Packet::KeyframeRequest { reason: 0 }.to_bytes());
        let (p1, d1, u1) = sent_one(&mut host, &frames[1]);
        assert!(matches!(p1, Plan::Keyframe { .. }) && !d1, "{p1:?}");
        set_clock(now() + 16_000);
        let (p2, d2, u2) = sent_one(&mut host, &frames[2]);
        assert!(u2.len() < 16 * 1024, "{}", u2.len());
        assert_eq!((p2, d2), (Plan::Delta, true), "small: datagrams");
        set_clock(now() + 16_000);
        let mut shown = Vec::new();
        if applied_first {
            shown.extend(deliver(&mut host, &mut viewer, &[&u1]));
        }
        let (p3, d3, u3) = sent_one(&mut host, &frames[3]);
        assert!(u3.len() > 16 * 1024, "{}", u3.len());
        assert_eq!(
            (p3, d3),
            (Plan::Delta, applied_first),
            "a stream while frame 1 may be crossing"
        );
        let rest: Vec<&Vec<u8>> = if applied_first {
            vec![&u2, &u3]
        } else {
            vec![&u1, &u2, &u3]
        };
        shown.extend(deliver(&mut host, &mut viewer, &rest));
        assert_eq!(shown, [(1, true), (2, true), (3, true)], "{applied_first}");
        assert!(viewer.picture().equals(&frames[3].grey));
    }
}

/// Where large frames may go as datagrams again but the last went on a stream, the next is
/// made against the acknowledged picture; when that one is too large for datagrams (it
/// carries every change since), it goes on a stream and holds the frames chained on it there
/// too. It is not made so again within `LARGE_DATAGRAMS_QUIET_US`: a frame made for the
/// viewer alone every other frame would cost its CPU and bytes for nothing.
#[test]
fn the_frame_made_against_the_acknowledged_picture_is_not_made_again_for_a_while() {
    set_clock(1_000);
    // Every delta carries a band of 40 rows (25.6 kB): one band fits the 40 kB of large
    // datagrams, two do not.
    let frames = band_frames(9, 40, &[]);
    let (mut host, mut viewer) = calm_after_keyframe(16 * 1024, 40_000, &frames[0]);
    // The path queues for 100 ms: large frames go on streams for 2 s. Frames 1 to 3 are
    // applied and acknowledged.
    for _ in 0..=10 {
        assert!(host.window_bound(queued(), now()).is_some());
        set_clock(now() + 10_000);
    }
    let queue_held = now() - 10_000;
    for f in &frames[1..=3] {
        let (p, d, u) = sent_one(&mut host, f);
        assert!(!d && u.len() < 40_000, "{p:?}");
        set_clock(now() + 20_000);
        assert_eq!(deliver(&mut host, &mut viewer, &[&u]), [(f.seq, true)]);
    }
    // Frame 4 goes on a stream just before the 2 s are over, and is not yet acknowledged.
    set_clock(queue_held + LARGE_DATAGRAMS_QUIET_US - 16_000);
    let (p4, d4, u4) = sent_one(&mut host, &frames[4]);
    assert_eq!((p4, d4), (Plan::Delta, false));
    // Past them (the host learns the time from its next look at the round trip), frame 5 is
    // made against the acknowledged picture (3): two bands, a stream.
    set_clock(now() + 16_000 + 1);
    host.window_bound(calm(), now());
    let (p5, d5, u5) = sent_one(&mut host, &frames[5]);
    assert_eq!((p5, d5), (Plan::Rebased { base: 3 }, false));
    // Frame 6, chained on it, fits but stays on a stream behind it; frame 7 is the shared
    // delta again, not made against the acknowledged picture.
    let mut units = vec![u4, u5];
    for f in &frames[6..=7] {
        set_clock(now() + 16_000);
        let (p, d, u) = sent_one(&mut host, f);
        assert_eq!((p, d), (Plan::Delta, false), "frame {}", f.seq);
        units.push(u);
    }
    let units: Vec<&Vec<u8>> = units.iter().collect();
    set_clock(now() + 20_000);
    let shown = deliver(&mut host, &mut viewer, &units);
    assert_eq!(shown, [(4, true), (5, true), (6, true), (7, true)]);
    // Applied: the chain on a stream is over, and frame 8, a delta on the acknowledged
    // picture, goes as datagrams.
    set_clock(now() + 16_000);
    let (p8, d8, u8) = sent_one(&mut host, &frames[8]);
    assert_eq!((p8, d8), (Plan::Delta, true));
    assert_eq!(deliver(&mut host, &mut viewer, &[&u8]), [(8, true)]);
    assert!(viewer.picture().equals(&frames[8].grey));
}

/// Where the path's round trip showed a queue lately, a large frame goes as datagrams only
/// within twice the path's bandwidth-delay product (over the minimum RTT and 5 ms): its
/// datagrams go at once, and more than the path holds in flight overflows a bottleneck's
/// queue. Here the product is 25.6 kB at 12.8 MB/s, measured on the keyframe, over a minimum
/// RTT of 2 ms, on a small frame (a burst of 179 kB), and a delta of 256 kB goes on a stream.
/// Where no queue showed, the estimate may be held down (on a lossy path, by frames on
/// streams), and the limit is twice as large: the same delta goes as datagrams.
#[test]
fn a_large_frame_beyond_twice_the_product_goes_on_a_stream_where_the_path_queued() {
    for queue_seen in [true, false] {
        set_clock(1_000);
        // Frame 1 changes 2 000 bytes, frame 2 every row (256 kB).
        let frames = band_frames(3, 400, &[1]);
        let (mut host, mut viewer) = calm_after_keyframe(16 * 1024, 2 << 20, &frames[0]);
        if queue_seen {
            // One look shows a queue: it did not last, so large frames may still go as
            // datagrams, within the limit.
            assert!(host.window_bound(queued(), now()).is_some());
        }
        let (_, d1, u1) = sent_one(&mut host, &frames[1]);
        assert!(d1 && u1.len() < 16 * 1024);
        set_clock(now() + 2_000);
        assert_eq!(deliver(&mut host, &mut viewer, &[&u1]), [(1, true)]);
        let e = host.link_estimate().expect("measured");
        set_clock(now() + 14_000);
        let (p2, d2, u2) = sent_one(&mut host, &frames[2]);
        assert!(u2.len() as u64 > e.burst_bytes(), "{} {e:?}", u2.len());
        assert!(u2.len() as u64 <= 2 * e.burst_bytes(), "{} {e:?}", u2.len());
        assert_eq!((p2, d2), (Plan::Delta, !queue_seen), "{e:?}");
        set_clock(now() + 2_000);
        assert_eq!(deliver(&mut host, &mut viewer, &[&u2]), [(2, true)]);
        assert!(viewer.picture().equals(&frames[2].grey));
    }
}

/// A path of 6.4 MB/s (51 Mbit/s) and 40 ms carries fewer than half the frames of a picture
/// that changes everywhere at 60 fps (256 kB a frame). Where its round trip showed a queue
/// lately, large frames go on streams once the content is found to outrun it: counted from
/// `OUTRUN_SETTLE_US` after they began to go as datagrams, over at least `OUTRUN_FRAMES`
/// frames; and they stay on streams (for `OUTRUN_HOLD_US`: `outrun.rs`'s tests). Where it
/// showed none, the frames the byte budget held back do not count. Every picture shown is
/// exact.
#[test]
fn large_frames_go_on_streams_where_the_content_outruns_the_path() {
    for queue in [true, false] {
        set_clock(1_000);
        let frames = noise_frames(249);
        let (mut host, mut viewer) = host_and_viewer(16 * 1024, 2 << 20);
        let (calm, queued) = (
            TransportRtt {
                smoothed_us: 41_000,
                min_us: 40_000,
            },
            TransportRtt {
                smoothed_us: 200_000,
                min_us: 40_000,
            },
        );
        let interval = 16_667;
        let mut path = Bottleneck {
            rate: 6_400_000,
            rtt: 40_000,
            free_at: 0,
            crossing: VecDeque::new(),
        };
        let start = now();
        assert!(
            !path.send(&mut host, &frames[0]),
            "the keyframe on a stream"
        );
        let mut on_streams = Vec::new();
        let mut sends = Vec::new();
        let mut sent = 0;
        for seq in 1..=240u64 {
            set_clock(start + seq * interval);
            while let Some(u) = path.arrived() {
                assert!(deliver(&mut host, &mut viewer, &[&u])
                    .iter()
                    .all(|&(_, ok)| ok));
            }
            // A queue seen once every 1.07 s: it does not last (looks more than
            // `QUEUE_GAP_US`, 1 s, apart), so large frames may go as datagrams, but the path
            // queued lately.
            let look = match queue && seq % 64 == 0 {
                true => queued,
                false => calm,
            };
            host.window_bound(look, now());
            if !host.can_send(now()) {
                continue;
            }
            sent += 1;
            let datagrams = path.send(&mut host, &frames[seq as usize]);
            if !datagrams && now() > start + 600_000 {
                on_streams.push((seq, now()));
            }
            sends.push((seq, datagrams));
        }
        let outrun_events = std::iter::from_fn(|| host.poll_event())
            .filter(|e| matches!(e, Event::Count(HostCount::LargeDatagramsOutrun)))
            .count();
        assert!(sent < 120, "the path carries fewer than half: {sent}");
        if !queue {
            assert_eq!((on_streams.len(), outrun_events), (0, 0), "{on_streams:?}");
            continue;
        }
        // Held once, and from then on every frame went on a stream.
        assert_eq!(outrun_events, 1, "{on_streams:?}");
        let (first, held_at) = on_streams[0];
        assert!(held_at >= start + OUTRUN_SETTLE_US, "{on_streams:?}");
        // The frames before went as datagrams from 0.6 s on; every one from `first` on
        // went on a stream.
        assert!(sends.iter().filter(|&&(s, _)| s >= first).all(|&(_, d)| !d));
        assert!(sends.iter().any(|&(s, d)| s < first && d), "{sends:?}");
        // The rest arrive, every picture exact (the hold's end: `outrun.rs`'s own tests).
        for (_, u) in path.crossing.drain(..) {
            assert!(deliver(&mut host, &mut viewer, &[&u])
                .iter()
                .all(|&(_, ok)| ok));
        }
    }
}

/// A path with a bottleneck: a frame leaves it once the one before it has, at `rate` bytes a
/// second, and its ACK comes `rtt` after.
struct Bottleneck {
    rate: u64,
    rtt: u64,
    free_at: u64,
    crossing: VecDeque<(u64, Vec<u8>)>,
}

impl Bottleneck {
    /// Plans and sends `f` now: whether it went as datagrams.
    fn send(&mut self, host: &mut HostSession<V1Wire>, f: &Arc<SourceFrame>) -> bool {
        let (_, d, u) = sent_one(host, f);
        self.free_at = self.free_at.max(now()) + u.len() as u64 * 1_000_000 / self.rate;
        self.crossing.push_back((self.free_at + self.rtt, u));
        d
    }

    /// The next frame whose ACK is due by now.
    fn arrived(&mut self) -> Option<Vec<u8>> {
        match self.crossing.front() {
            Some(&(due, _)) if due <= now() => self.crossing.pop_front().map(|(_, u)| u),
            _ => None,
        }
    }
}

/// Plans and sends `f`: its plan, whether it went as datagrams, and its one unit.
fn sent_one(host: &mut HostSession<V1Wire>, f: &Arc<SourceFrame>) -> (Plan, bool, Vec<u8>) {
    let (plan, units) = offer_as(host, f);
    let [(datagrams, unit)] = <[_; 1]>::try_from(units).expect("one frame");
    (plan, datagrams, unit)
}

/// The viewer takes `units` in order and its ACKs reach the host: the frames it showed.
fn deliver(
    host: &mut HostSession<V1Wire>,
    viewer: &mut ViewerSession,
    units: &[&Vec<u8>],
) -> Vec<(u64, bool)> {
    for u in units {
        viewer.handle_unit(now(), u);
    }
    let shown = shown_ok(viewer);
    while let Some(b) = viewer.poll_transmit() {
        host.handle_bytes(now(), &b);
    }
    shown
}

/// A host that sends frames of up to `small` bytes as datagrams, and up to `large` where the
/// path has not queued lately, with the path reported clean, and a viewer welcomed by it.
fn host_and_viewer(small: u64, large: u64) -> (HostSession<V1Wire>, ViewerSession) {
    let mut host = host_with(caps::ALL, Some(small), Some(large));
    host.on_path_counters(1_000, 0, now());
    (host, welcomed_viewer(now()))
}

/// [`host_and_viewer`], then [`keyframe_then_calm_watch`] with `key`.
fn calm_after_keyframe(
    small: u64,
    large: u64,
    key: &Arc<SourceFrame>,
) -> (HostSession<V1Wire>, ViewerSession) {
    let (mut host, mut viewer) = host_and_viewer(small, large);
    keyframe_then_calm_watch(&mut host, &mut viewer, key);
    (host, viewer)
}

/// Frame `key`, the first keyframe, arrives 20 ms after it is sent and is acknowledged; the
/// transport's round trip is then watched without a queue for `LARGE_DATAGRAMS_WATCH_US`.
fn keyframe_then_calm_watch(
    host: &mut HostSession<V1Wire>,
    viewer: &mut ViewerSession,
    key: &Arc<SourceFrame>,
) {
    let (_, _, unit) = sent_one(host, key);
    set_clock(now() + 20_000);
    assert_eq!(deliver(host, viewer, &[&unit]), [(key.seq, true)]);
    assert_eq!(host.window_bound(calm(), now()), None);
    set_clock(now() + LARGE_DATAGRAMS_WATCH_US);
    assert_eq!(host.window_bound(calm(), now()), None);
}

/// The transport's round trip on a 20 ms path with a queue of 40 ms.
fn queued() -> TransportRtt {
    TransportRtt {
        smoothed_us: 60_000,
        min_us: 20_000,
    }
}

/// The transport's round trip on a 20 ms path without a queue.
fn calm() -> TransportRtt {
    TransportRtt {
        smoothed_us: 21_000,
        min_us: 20_000,
    }
}

/// A frame the capture passed over is never offered, and the next one's delta is made against
/// the picture planned before it: that is the shared delta, nothing is made for the viewer
/// alone, and the viewer's picture is exact. A frame skipped the other way
/// (its delta against the one skipped) is made for the viewer alone.
#[test]
fn a_frame_made_past_one_passed_over_goes_as_the_shared_delta() {
    set_clock(1_000);
    let mut host = host(caps::ALL);
    host.on_path_counters(100, 0, now());
    let mut viewer = welcomed_viewer(now());
    let mut src = Source::new();
    let apply = |viewer: &mut ViewerSession, units: Vec<Vec<u8>>| {
        for u in units {
            viewer.handle_unit(now(), &u);
        }
    };
    let k = src.frame(now(), false);
    apply(&mut viewer, offer(&mut host, &k).1);
    let passed = src.passed_over(now());
    let next = src.frame(now(), false);
    assert_eq!(next.info().delta_base, Some(k.content_id));
    assert_ne!(passed.grey, next.grey);
    let (plan, work) = host.plan_frame(&next);
    assert_eq!(plan, Plan::Delta, "the shared delta");
    assert!(work.is_none(), "nothing made for the viewer alone");
    host.send_frame(now(), &next, plan);
    let units: Vec<_> = std::iter::from_fn(|| host.poll_transmit())
        .filter(|t| t.frame)
        .map(|t| [&t.head[..], t.payload.as_deref().unwrap_or(&[])].concat())
        .collect();
    apply(&mut viewer, units);
    let shown = shown_ok(&mut viewer);
    assert_eq!(shown, [(0, true), (2, true)]);
    assert!(viewer.picture().equals(&next.grey));
    // Skipped without being passed over: the next delta is against the frame skipped.
    let _skipped = src.frame(now(), false);
    let after = src.frame(now(), false);
    let (plan, work) = host.plan_frame(&after);
    assert!(matches!(plan, Plan::Rebased { .. }), "{plan:?}");
    assert!(work.is_some());
}

/// On QUIC the Welcome comes on the control stream and the first frames on streams of their
/// own: when the Welcome is delayed (a lost packet), a newer keyframe may come before an older
/// one and before the Welcome. The viewer waits for the Welcome before it takes any, so the
/// older keyframe is seen as overtaken and does not replace the picture the host was told it
/// applied (seen on an emulated 5 % loss link as a viewer frozen on missing bases).
#[test]
fn frames_that_come_before_the_welcome_wait_for_it() {
    let mut host = host(caps::ALL);
    let k0 = Source::new().frame(now(), false);
    let mut later = Source::new();
    later.seq = 1;
    let k1 = later.frame(now(), false);
    let (p0, u0) = offer(&mut host, &k0);
    let (p1, u1) = offer(&mut host, &k1);
    assert!(matches!(p0, Plan::Keyframe { .. }) && matches!(p1, Plan::Keyframe { .. }));
    let hello = ViewerHello {
        caps: caps::ALL,
        stream: "screen".into(),
        token: String::new(),
    };
    let mut viewer = ViewerSession::new(hello, now);
    let _ = viewer.poll_transmit();
    viewer.handle_unit(now(), &u1[0]);
    viewer.handle_unit(now(), &u0[0]);
    let shown_before: Vec<_> = std::iter::from_fn(|| viewer.poll_event()).collect();
    assert!(
        !shown_before
            .iter()
            .any(|e| matches!(e, ViewerEvent::Shown(_))),
        "a frame was handled before the Welcome: {shown_before:?}"
    );
    let welcome = v1::Packet::Welcome {
        version: v1::VERSION,
        caps: caps::ALL,
        session: 1,
    };
    viewer.handle_bytes(now(), &welcome.to_bytes());
    let shown = shown_ok(&mut viewer);
    assert_eq!(shown, [(1, true)], "the older keyframe must be dropped");
    assert!(viewer.picture().equals(&k1.grey));
    assert_eq!(viewer.stale_frames(), 1);
}

/// `n` frames from a host on a path that has lost nothing, so each delta chains on the frame
/// sent before: the units as the transport would carry them, a keyframe first.
fn chained_units(n: usize) -> Vec<Vec<u8>> {
    let mut host = host(caps::ALL);
    host.on_path_counters(100, 0, now());
    let mut src = Source::new();
    let mut units = Vec::new();
    for _ in 0..n {
        let f = src.frame(now(), false);
        units.extend(offer(&mut host, &f).1);
    }
    assert_eq!(units.len(), n);
    units
}

/// At 1 ms on the clock, `n` chained frame units and a welcomed viewer that has reported
/// nothing yet.
fn chain_and_viewer(n: usize) -> (Vec<Vec<u8>>, ViewerSession) {
    set_clock(1_000);
    let units = chained_units(n);
    let mut viewer = welcomed_viewer(now());
    while viewer.poll_event().is_some() {}
    (units, viewer)
}

/// The frames the viewer reported since the last call: (seq, what `f` reads of each).
fn shown_by(v: &mut ViewerSession, f: impl Fn(&Shown) -> bool) -> Vec<(u64, bool)> {
    std::iter::from_fn(|| v.poll_event())
        .filter_map(|e| match e {
            ViewerEvent::Shown(s) => Some((s.seq, f(&s))),
            _ => None,
        })
        .collect()
}

/// The frames the viewer reported since the last call: (seq, applied exactly).
fn shown_ok(v: &mut ViewerSession) -> Vec<(u64, bool)> {
    shown_by(v, |s| s.ok)
}

/// The frames the viewer reported since the last call: (seq, base missing).
fn shown_base_missing(v: &mut ViewerSession) -> Vec<(u64, bool)> {
    shown_by(v, |s| s.base_missing)
}

/// A delta chained on a frame that was lost waits for that base for a while (it may be on a
/// stream still crossing); one the transport says came after a lost frame (datagrams) is
/// reported missing at once, so the host repairs it a round trip or two sooner.
#[test]
fn a_frame_after_a_lost_one_is_reported_missing_at_once() {
    for after_loss in [false, true] {
        let (units, mut viewer) = chain_and_viewer(3);
        // The keyframe comes; the first delta is lost; the second names it.
        viewer.handle_unit(now(), &units[0]);
        match after_loss {
            true => viewer.handle_unit_after_loss(now(), &units[2]),
            false => viewer.handle_unit(now(), &units[2]),
        }
        match after_loss {
            true => assert_eq!(shown_base_missing(&mut viewer), [(0, false), (2, true)]),
            false => {
                assert_eq!(
                    shown_base_missing(&mut viewer),
                    [(0, false)],
                    "held for its base"
                );
                set_clock(now() + BASE_WAIT_US);
                viewer.handle_timeout(now());
                assert_eq!(shown_base_missing(&mut viewer), [(2, true)]);
            }
        }
    }
}

/// A frame that came after one still being rebuilt is reported missing at once; the late one
/// then applies. A frame chained on the one reported missing names a picture this viewer
/// dropped: arriving within the smallest round trip after that report (made before the host
/// knew), it is reported at once too, not held two round trips for it, and so is one already
/// waiting for it. Arriving later, or before a round trip is measured, it waits as any frame:
/// the host's repair may make that picture again.
#[test]
fn a_frame_named_against_one_reported_missing_is_reported_at_once() {
    const RTT: u64 = 40_000;
    for case in [
        "at once",
        "just within a round trip",
        "waiting before",
        "a round trip later",
        "no round trip measured",
    ] {
        set_clock(1_000_000);
        let units = chained_units(4);
        let mut viewer = welcomed_viewer(now());
        // A round trip measured from a ping.
        if case != "no round trip measured" {
            let pong = v1::Packet::Pong {
                id: 1,
                ping_sent_us: now() - RTT,
                reply_us: now() - RTT / 2,
            };
            viewer.handle_bytes(now(), &pong.to_bytes());
        }
        while viewer.poll_event().is_some() {}
        viewer.handle_unit(now(), &units[0]);
        assert_eq!(shown_base_missing(&mut viewer), [(0, false)]);
        let waiting_before = case == "waiting before" || case == "no round trip measured";
        if waiting_before {
            // Frame 3 names frame 2's picture, not yet here: it waits.
            viewer.handle_unit(now(), &units[3]);
            assert_eq!(shown_base_missing(&mut viewer), []);
            set_clock(now() + 1_000);
        }
        // Frame 1 is still being rebuilt when frame 2 comes.
        viewer.handle_unit_after_loss(now(), &units[2]);
        let mut seen = shown_base_missing(&mut viewer);
        match case {
            "waiting before" => {
                assert_eq!(
                    seen,
                    [(2, true), (3, true)],
                    "the waiting frame goes with it"
                );
                continue;
            }
            "no round trip measured" => {
                assert_eq!(seen, [(2, true)], "with no round trip, frame 3 still waits");
                continue;
            }
            _ => {}
        }
        assert_eq!(seen, [(2, true)]);
        viewer.handle_unit(now(), &units[1]);
        assert_eq!(shown_base_missing(&mut viewer), [(1, false)]);
        match case {
            "a round trip later" => set_clock(now() + RTT),
            "just within a round trip" => set_clock(now() + RTT - 1),
            _ => {}
        }
        // Frame 3 names frame 2's picture, which this viewer dropped.
        viewer.handle_unit(now(), &units[3]);
        seen = shown_base_missing(&mut viewer);
        match case {
            "at once" | "just within a round trip" => {
                assert_eq!(seen, [(3, true)], "{case}: not held for a picture given up")
            }
            _ => assert_eq!(seen, [], "{case}: held, the picture may come again"),
        }
    }
}

/// Where the transport makes lost packets good (datagrams with recovery shards), lost packets
/// leave deltas chained on the frame sent before; a frame the viewer reports lost whole brings
/// the acknowledged picture back, for `FRAMES_CLEAN_US`, and so does a loss rate above
/// `MADE_GOOD_LOSS_PERMILLE`. Where it does not make them good, the lost packets alone do.
#[test]
fn lost_packets_made_good_keep_deltas_chained_until_a_frame_is_lost() {
    for made_good in [false, true] {
        let mut host = host_on(caps::ALL, made_good);
        set_clock(1_000);
        host.on_path_counters(100, 0, now());
        let mut src = Source::new();
        let (key, _) = offer(&mut host, &src.frame(now(), false));
        assert!(matches!(key, Plan::Keyframe { .. }));
        ack_at(&mut host, now(), 0, AckStatus::Applied);
        // Frame 1 is in flight when the transport counts lost packets.
        let (first, _) = offer(&mut host, &src.frame(now(), false));
        assert_eq!(first, Plan::Delta);
        set_clock(now() + 16_000);
        host.on_path_counters(200, 5, now());
        let (second, _) = offer(&mut host, &src.frame(now(), false));
        match made_good {
            true => assert_eq!(second, Plan::Delta, "chained on frame 1"),
            false => assert!(matches!(second, Plan::Rebased { .. }), "{second:?}"),
        }
        if !made_good {
            continue;
        }
        // Frame 2 lost whole: the viewer reports frame 3's base missing.
        let (third, _) = offer(&mut host, &src.frame(now(), false));
        assert_eq!(third, Plan::Delta);
        ack_at(&mut host, now(), 1, AckStatus::Applied);
        ack_at(&mut host, now(), 3, AckStatus::BaseMissing);
        let (repair, _) = offer(&mut host, &src.frame(now(), false));
        assert!(matches!(repair, Plan::Rebased { .. }), "{repair:?}");
        ack_at(&mut host, now(), 4, AckStatus::Applied);
        // Lossy for a while, then chained again.
        set_clock(now() + 16_000);
        host.on_path_counters(300, 5, now());
        offer(&mut host, &src.frame(now(), false));
        let (still, _) = offer(&mut host, &src.frame(now(), false));
        assert!(matches!(still, Plan::Rebased { .. }), "{still:?}");
        ack_at(&mut host, now(), 5, AckStatus::Applied);
        ack_at(&mut host, now(), 6, AckStatus::Applied);
        set_clock(now() + framewire_session::host::FRAMES_CLEAN_US);
        host.on_path_counters(400, 5, now());
        offer(&mut host, &src.frame(now(), false));
        let (again, _) = offer(&mut host, &src.frame(now(), false));
        assert_eq!(again, Plan::Delta, "chained again");
        ack_at(&mut host, now(), 7, AckStatus::Applied);
        // A thousand packets and more, under MADE_GOOD_LOSS_PERMILLE lost: still chained.
        set_clock(now() + 16_000);
        host.on_path_counters(1_400, 9, now());
        let (under, _) = offer(&mut host, &src.frame(now(), false));
        assert_eq!(under, Plan::Delta, "6 per thousand lost");
        ack_at(&mut host, now(), 8, AckStatus::Applied);
        ack_at(&mut host, now(), 9, AckStatus::Applied);
        offer(&mut host, &src.frame(now(), false));
        // Losing more than MADE_GOOD_LOSS_PERMILLE over the next window: lossy as any path.
        set_clock(now() + 16_000);
        host.on_path_counters(2_500, 60, now());
        let (lossy, _) = offer(&mut host, &src.frame(now(), false));
        assert!(matches!(lossy, Plan::Rebased { .. }), "{lossy:?}");
    }
}

/// A repair made against the picture the viewer acknowledged that comes back with a missing
/// base means the viewer no longer holds that picture: the next frame is a keyframe, not
/// another delta against it (which would fail the same way, for ever).
#[test]
fn a_repair_whose_base_is_missing_brings_a_keyframe() {
    let mut host = host(caps::ALL);
    let mut src = Source::new();
    let mut plans = Vec::new();
    for (i, reply) in [
        AckStatus::Applied,
        AckStatus::BaseMissing,
        AckStatus::BaseMissing,
        AckStatus::Applied,
    ]
    .into_iter()
    .enumerate()
    {
        let f = src.frame(now(), false);
        plans.push(offer(&mut host, &f).0);
        ack_at(&mut host, now(), i as u64, reply);
    }
    assert_eq!(
        plans,
        [
            Plan::Keyframe { forced: false },
            Plan::Delta,
            Plan::Rebased { base: 0 },
            Plan::Keyframe { forced: true },
        ]
    );
    let st = host.flow_stats();
    assert_eq!((st.acknowledged_lost, st.bases_missing), (1, 1), "{st:?}");
}

/// The viewer's ACK of frame `seq`, read by the host at `t`.
fn ack_at(host: &mut HostSession<V1Wire>, t: u64, seq: u64, status: AckStatus) {
    let p = v1::Packet::Ack {
        seq,
        status,
        recv_us: t,
        decoded_us: t,
        applied_us: t,
    };
    host.handle_bytes(t, &p.to_bytes());
}

/// A keyframe the viewer has not answered covers the frames after it that come back with a
/// missing base (they overtook it) for as long as it may take to cross: with nothing measured
/// yet, the ACK timeout (500 ms here), and beyond, while it is in flight on its stream (each
/// report it covers starts its ACK timeout again). Within that no other keyframe is sent;
/// once it is given up on, one is.
#[test]
fn an_unanswered_keyframe_covers_the_frames_after_it_for_a_while() {
    let mut host = host(caps::ALL);
    let mut src = Source::new();
    // Times are passed in: other tests move the shared clock.
    let mut send = |host: &mut HostSession<V1Wire>, t: u64| {
        let f = src.frame(t, false);
        let (plan, work) = host.plan_frame(&f);
        if let Some(w) = work {
            w();
        }
        host.send_frame(t, &f, plan);
        while host.poll_transmit().is_some() {}
        plan
    };
    assert_eq!(send(&mut host, 0), Plan::Keyframe { forced: false });
    assert_eq!(send(&mut host, 16_000), Plan::Delta);
    assert_eq!(send(&mut host, 32_000), Plan::Delta);
    ack_at(&mut host, 100_000, 1, AckStatus::BaseMissing);
    assert_eq!(
        send(&mut host, 100_000),
        Plan::Delta,
        "covered by the keyframe"
    );
    ack_at(&mut host, 550_000, 2, AckStatus::BaseMissing);
    assert_eq!(
        send(&mut host, 550_000),
        Plan::Delta,
        "past its patience, covered while it is on its stream"
    );
    assert_eq!(host.flow_stats().bases_missing, 0);
    // No answer for an ACK timeout: the keyframe is given up on, and the frames after it.
    assert!(host.can_send(1_100_000));
    assert_eq!(host.flow_stats().ack_timeouts, 3, "frames 0, 3 and 4");
    ack_at(&mut host, 1_100_000, 3, AckStatus::BaseMissing);
    assert_eq!(
        send(&mut host, 1_100_000),
        Plan::Keyframe { forced: true },
        "given up on, the keyframe covers no more"
    );
    assert_eq!(host.flow_stats().bases_missing, 1);
}

/// Each frame tells the transport how many recovery shards it carries: a lossy path's share
/// only where losses were seen (before the transport reported its counters, and after a loss
/// until the path is clean again: no loss in the last thousand packets nor in two seconds,
/// `framewire_flow::LossWatch`), and that share without its one more where the path's round
/// trip showed a queue that lasted within `SHARE_AFTER_QUEUE_US`.
#[test]
fn frames_say_how_many_recovery_shards_they_carry() {
    let frames = band_frames(9, 8, &[]);
    set_clock(1_000);
    let mut host = host_on(caps::ALL, true);
    let mut viewer = welcomed_viewer(now());
    let mut repairs = Vec::new();
    let mut offer_one = |host: &mut HostSession<V1Wire>, f: &Arc<SourceFrame>| {
        let (plan, work) = host.plan_frame(f);
        if let Some(w) = work {
            w();
        }
        host.send_frame(now(), f, plan);
        // Each frame takes 20 ms to its ACK: the host measures the path.
        set_clock(now() + 20_000);
        while let Some(t) = host.poll_transmit() {
            if t.frame {
                repairs.push(t.repair);
                let mut b = t.head.to_vec();
                b.extend_from_slice(t.payload.as_deref().unwrap_or(&[]));
                viewer.handle_unit(now(), &b);
            }
        }
        assert!(shown_ok(&mut viewer).iter().all(|&(_, ok)| ok));
        while let Some(b) = viewer.poll_transmit() {
            host.handle_bytes(now(), &b);
        }
    };
    // No counters yet: lossy as far as the host knows.
    offer_one(&mut host, &frames[0]);
    // Counters with no loss: clean.
    host.on_path_counters(1_000, 0, now());
    set_clock(now() + 16_000);
    offer_one(&mut host, &frames[1]);
    // A loss: lossy at once.
    host.on_path_counters(1_500, 1, now());
    set_clock(now() + 16_000);
    offer_one(&mut host, &frames[2]);
    // A thousand packets more, but within two seconds of the loss: still lossy.
    host.on_path_counters(2_600, 1, now());
    set_clock(now() + 16_000);
    offer_one(&mut host, &frames[3]);
    // Two seconds on, with no loss since: clean again.
    set_clock(now() + 2_000_000);
    host.on_path_counters(2_700, 1, now());
    offer_one(&mut host, &frames[4]);
    // A loss, and the transport's round trip (minimum 20 ms) at 60 ms once: a queue seen
    // for a moment, not one that lasted, so the full share.
    host.on_path_counters(2_800, 2, now());
    let queued = TransportRtt {
        smoothed_us: 60_000,
        min_us: 20_000,
    };
    host.window_bound(queued, now());
    offer_one(&mut host, &frames[5]);
    // Seen at looks spanning 100 ms: it lasted, and the share goes without its one more.
    for _ in 0..10 {
        set_clock(now() + 10_000);
        host.window_bound(queued, now());
    }
    offer_one(&mut host, &frames[6]);
    // Still lossy: exactly ten seconds after the queue was last seen to last, the share
    // without the one more; just after, the full share again.
    let calm = TransportRtt {
        smoothed_us: 21_000,
        min_us: 20_000,
    };
    set_clock(now() + SHARE_AFTER_QUEUE_US - 20_000);
    host.on_path_counters(3_000, 3, now());
    host.window_bound(calm, now());
    offer_one(&mut host, &frames[7]);
    set_clock(now() + 1_000);
    offer_one(&mut host, &frames[8]);
    use Repair::{Full, One, Share};
    assert_eq!(
        repairs,
        [Full, One, Full, Full, One, Full, Share, Share, Full]
    );
}
