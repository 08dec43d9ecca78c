//! A host and a viewer with named bases on one ordered, reliable byte stream (TCP): every
//! frame arrives, in order, 40 ms after it was sent, and the ACKs take as long to come back,
//! so several frames are in flight at once. Fake clock, nothing random.
//!
//! On such a stream the host makes each delta against the picture it sent just before, and
//! the viewer keeps no pictures besides the one it shows. A host that makes deltas against
//! acknowledged pictures anyway (one that believes frames may be lost) must still get exact
//! pictures from such a viewer: it reports the first base it lacks and keeps pictures from
//! then on.

mod common;

use std::cell::Cell;
use std::collections::VecDeque;

use common::{picture, Source};
use framewire_flow::InflightLimit;
use framewire_proto::v1::{self, caps, Packet};
use framewire_session::{
    negotiate, HostConfig, HostSession, Transmit, V1Wire, ViewerEvent, ViewerHello, ViewerReader,
    ViewerSession,
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

const ONE_WAY_US: u64 = 40_000;
const FRAME_US: u64 = 16_000;

#[derive(Debug, Default)]
struct Outcome {
    shown_ok: u64,
    shown_wrong: u64,
    bases_missing: u64,
    /// Frames whose delta named a base other than the picture sent just before it.
    older_bases: u64,
    kept_at_end: usize,
}

fn run(frames_may_be_lost: bool) -> Outcome {
    set_clock(1_000);
    let n = negotiate(v1::Codec::Lz4, caps::ALL, caps::ALL);
    let cfg = HostConfig {
        limit: InflightLimit::default(),
        ack_timeout_us: 2_000_000,
        refresh_every: 0,
        control: false,
        drops_superseded: false,
        frames_may_be_lost,
        datagrams_up_to: None,
        large_datagrams_up_to: None,
        initial: vec![],
    };
    let mut host = HostSession::new(
        V1Wire::new(n),
        ViewerReader::V1(v1::Decoder::new(v1::MAX_CONTROL_BODY)),
        cfg,
    );
    let hello = ViewerHello {
        caps: caps::ALL,
        stream: "screen".into(),
        token: String::new(),
    };
    let mut viewer = ViewerSession::new(hello, now).every_frame_arrives();
    let _ = viewer.poll_transmit();
    let welcome = Packet::Welcome {
        version: v1::VERSION,
        caps: n.caps,
        session: 1,
    };
    viewer.handle_bytes(now(), &welcome.to_bytes());

    // Bytes on the way, each with the time it arrives.
    let mut to_viewer: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut to_host: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    // What the test reads of the host's stream: which base each frame names.
    let mut tap = v1::Decoder::new(v1::DEFAULT_MAX_FRAME_BODY);
    let mut sent_before: Option<u64> = None;
    let mut out = Outcome::default();
    let mut src = Source::new();
    for _ in 0..120 {
        let t = now();
        host.handle_timeout(t);
        if host.can_send(t) {
            let f = src.frame(t, false);
            let (plan, work) = host.plan_frame(&f);
            if let Some(w) = work {
                w();
            }
            host.send_frame(t, &f, plan);
        }
        let mut bytes = Vec::new();
        while let Some(Transmit { head, payload, .. }) = host.poll_transmit() {
            bytes.extend_from_slice(&head);
            bytes.extend_from_slice(payload.as_deref().unwrap_or_default());
        }
        tap.feed(&bytes);
        while let Some(p) = tap.next_packet().expect("the host's own bytes") {
            if let Packet::Frame { header: h, .. } = p {
                if h.base.is_some() && h.base != sent_before {
                    out.older_bases += 1;
                }
                sent_before = Some(h.checksum);
            }
        }
        to_viewer.push_back((t + ONE_WAY_US, bytes));
        // Everything due by the next frame arrives, in order.
        let next = t + FRAME_US;
        while to_viewer.front().is_some_and(|(at, _)| *at <= next) {
            let (at, b) = to_viewer.pop_front().expect("front exists");
            set_clock(at);
            viewer.handle_bytes(at, &b);
            viewer.handle_timeout(at);
            while let Some(e) = viewer.poll_event() {
                if let ViewerEvent::Shown(s) = e {
                    out.bases_missing += s.base_missing as u64;
                    if s.ok && !s.unchanged {
                        let exact = viewer.picture().equals(&picture(s.seq));
                        match exact {
                            true => out.shown_ok += 1,
                            false => out.shown_wrong += 1,
                        }
                    }
                }
            }
            let acks: Vec<u8> = std::iter::from_fn(|| viewer.poll_transmit())
                .flatten()
                .collect();
            to_host.push_back((at + ONE_WAY_US, acks));
        }
        while to_host.front().is_some_and(|(at, _)| *at <= next) {
            let (at, b) = to_host.pop_front().expect("front exists");
            host.handle_bytes(at, &b);
        }
        set_clock(next);
    }
    out.kept_at_end = viewer.kept_pictures();
    out
}

#[test]
fn on_one_ordered_stream_deltas_follow_the_picture_sent_before_and_nothing_is_kept() {
    let o = run(false);
    assert!(o.shown_ok > 50, "{o:?}");
    assert_eq!(o.shown_wrong, 0, "{o:?}");
    assert_eq!(o.older_bases, 0, "{o:?}");
    assert_eq!(o.bases_missing, 0, "{o:?}");
    assert_eq!(o.kept_at_end, 0, "{o:?}");
}

#[test]
fn a_viewer_that_kept_nothing_starts_keeping_when_a_host_names_older_pictures() {
    let o = run(true);
    // The host made deltas against acknowledged pictures, a round trip old.
    assert!(o.older_bases > 10, "{o:?}");
    // The first of those found no base, and so did those already on their way (a round trip
    // of frames); from then on the viewer kept what the host names.
    let in_flight = 2 * ONE_WAY_US / FRAME_US + 1;
    assert!(
        o.bases_missing >= 1 && o.bases_missing <= in_flight + 1,
        "{o:?}"
    );
    assert!(o.kept_at_end > 0, "{o:?}");
    assert!(o.shown_ok > 50, "{o:?}");
    assert_eq!(o.shown_wrong, 0, "{o:?}");
}
