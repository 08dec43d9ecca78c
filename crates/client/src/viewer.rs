//! The headless viewer: connects with either protocol, decompresses, applies, verifies every
//! checksum (framewire v1), ACKs after applying, and keeps per-stage statistics. The demo,
//! `framewire view --headless` and the end-to-end tests all use it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context};
use framewire_codec::Picture;
use framewire_proto::daylight;
use framewire_proto::v1::{self, caps, AckStatus};
use framewire_telemetry::{lock, SampleWindow};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use framewire_session::Protocol;
use framewire_session::{
    DaylightShown, DaylightViewerEvent, DaylightViewerSession, Shown, ViewerEvent, ViewerHello,
    ViewerSession,
};
use framewire_telemetry::clock::now_us;

use crate::link::{Input, Link};

#[derive(Debug, Clone)]
pub struct ViewerOptions {
    pub addr: String,
    pub protocol: Protocol,
    pub token: Option<String>,
    /// Stop after this many frames (all kinds); `None` runs until the server leaves.
    pub max_frames: Option<u64>,
    /// While set, the viewer stops reading its socket (to test back-pressure).
    pub paused: Arc<AtomicBool>,
    /// Capabilities declared in the Hello (v1); the host sends only what they allow.
    pub caps: u32,
    /// Connect over QUIC (v1), accepting only a host whose certificate has this fingerprint.
    pub quic: Option<framewire_quic::Fingerprint>,
}

impl ViewerOptions {
    pub fn new(addr: impl Into<String>, protocol: Protocol) -> Self {
        ViewerOptions {
            addr: addr.into(),
            protocol,
            token: None,
            max_frames: None,
            paused: Arc::new(AtomicBool::new(false)),
            // Grey unless asked: colour is `with_colour`.
            caps: caps::ALL & !caps::COLOUR,
            quic: None,
        }
    }

    /// Asks for lossless colour (pictures then hold three planes; see [`FrameEvent::planes`]).
    pub fn with_colour(mut self, on: bool) -> Self {
        self.caps = if on {
            self.caps | caps::COLOUR
        } else {
            self.caps & !caps::COLOUR
        };
        self
    }
}

/// Counters and timing windows (µs) of one viewer.
#[derive(Debug, Clone, Serialize)]
pub struct ViewerStats {
    pub protocol: &'static str,
    pub width: u32,
    pub height: u32,
    pub frames: u64,
    pub keyframes: u64,
    pub deltas: u64,
    pub unchanged: u64,
    pub bytes: u64,
    /// Source frames this viewer never saw (v1 sequence gaps; the server skipped them for it).
    pub drops: u64,
    pub checksum_failures: u64,
    pub decode_errors: u64,
    /// Frames that named a base this viewer did not hold (one before them was lost); its
    /// picture stayed as it was.
    pub bases_missing: u64,
    /// Over QUIC, frames that came as datagrams and were rebuilt; of those, the ones that
    /// needed recovery shards; and frames lost: given up with too few shards, or none of whose
    /// datagrams came (told by the frame numbers that came after; never shown).
    pub datagram_frames: u64,
    pub datagram_recovered: u64,
    pub datagram_lost: u64,
    pub last_seq: Option<u64>,
    pub brightness: Option<u8>,
    pub warmth: Option<u8>,
    /// The codec of the last frame received.
    pub codec: Option<&'static str>,
    #[serde(skip)]
    pub recv_us: SampleWindow,
    #[serde(skip)]
    pub decompress_us: SampleWindow,
    #[serde(skip)]
    pub apply_us: SampleWindow,
    #[serde(skip)]
    pub total_us: SampleWindow,
    #[serde(skip)]
    pub e2e_us: SampleWindow,
    #[serde(skip)]
    pub applied_at: SampleWindow,
    #[serde(skip)]
    pub payload_bytes: SampleWindow,
}

impl Default for ViewerStats {
    fn default() -> Self {
        ViewerStats {
            protocol: "",
            width: 0,
            height: 0,
            frames: 0,
            keyframes: 0,
            deltas: 0,
            unchanged: 0,
            bytes: 0,
            drops: 0,
            checksum_failures: 0,
            decode_errors: 0,
            bases_missing: 0,
            datagram_frames: 0,
            datagram_recovered: 0,
            datagram_lost: 0,
            last_seq: None,
            brightness: None,
            warmth: None,
            codec: None,
            recv_us: SampleWindow::new(300),
            decompress_us: SampleWindow::new(300),
            apply_us: SampleWindow::new(300),
            total_us: SampleWindow::new(300),
            e2e_us: SampleWindow::new(600),
            applied_at: SampleWindow::new(120),
            payload_bytes: SampleWindow::new(300),
        }
    }
}

fn ms(w: &SampleWindow) -> f64 {
    w.avg().unwrap_or(0.0) / 1000.0
}

impl ViewerStats {
    pub fn fps(&self) -> f64 {
        match (
            self.applied_at.len(),
            self.applied_at.percentile(0.0),
            self.applied_at.max(),
        ) {
            (n, Some(a), Some(b)) if n > 1 && b > a => (n - 1) as f64 * 1e6 / (b - a),
            _ => 0.0,
        }
    }

    /// Empties the timing windows, so that the figures printed next cover only what comes
    /// after (a script's measured period, not the join's keyframe and the frames behind it).
    /// The counts since the start stay.
    pub fn clear_windows(&mut self) {
        for w in [
            &mut self.recv_us,
            &mut self.decompress_us,
            &mut self.apply_us,
            &mut self.total_us,
            &mut self.e2e_us,
            &mut self.applied_at,
            &mut self.payload_bytes,
        ] {
            w.clear();
        }
    }

    /// The one-line summary printed every few seconds (the Android viewer's logcat line).
    pub fn line(&self) -> String {
        let e2e = if self.e2e_us.is_empty() {
            "n/a".to_string()
        } else {
            format!(
                "{:.2}/{:.2}ms",
                ms(&self.e2e_us),
                self.e2e_us.percentile(99.0).unwrap_or(0.0) / 1000.0
            )
        };
        let datagrams = match self.datagram_frames + self.datagram_lost {
            0 => String::new(),
            _ => format!(
                " | datagram frames {} ({} rebuilt, {} lost)",
                self.datagram_frames, self.datagram_recovered, self.datagram_lost
            ),
        };
        format!(
            "{} {}x{} | fps {:.1} | recv {:.2}ms | lz4 {:.2}ms | delta {:.2}ms | total {:.2}ms | e2e avg/p99 {} | {:.0}KB | drops {} | checksum failures {} | frames {}{datagrams}",
            self.protocol,
            self.width,
            self.height,
            self.fps(),
            ms(&self.recv_us),
            ms(&self.decompress_us),
            ms(&self.apply_us),
            ms(&self.total_us),
            e2e,
            self.payload_bytes.avg().unwrap_or(0.0) / 1024.0,
            self.drops,
            self.checksum_failures,
            self.frames
        )
    }
}

/// What the viewer just applied, passed to the caller's callback.
pub struct FrameEvent<'a> {
    /// v1: the source frame number; Daylight: the connection's frame number.
    pub seq: u64,
    pub keyframe: bool,
    pub unchanged: bool,
    pub width: u32,
    pub height: u32,
    /// 1 for grey; 3 for colour, when `picture` holds the planes G, R − G, B − G stacked
    /// (`framewire_codec::colour`) and is three times `height` tall.
    pub planes: u32,
    /// The picture as applied (rows, checksum; see [`Picture::rows`] and [`Picture::to_vec`]).
    pub picture: &'a Picture,
    /// v1 only: whether the picture matches the host's checksum.
    pub checksum_ok: Option<bool>,
}

impl<'a> FrameEvent<'a> {
    fn of(
        picture: &'a Picture,
        planes: u32,
        seq: u64,
        keyframe: bool,
        unchanged: bool,
        checksum_ok: Option<bool>,
    ) -> Self {
        FrameEvent {
            seq,
            keyframe,
            unchanged,
            width: picture.width(),
            height: picture.height() / planes.max(1),
            planes,
            picture,
            checksum_ok,
        }
    }
}

/// Runs a viewer until the server leaves, `max_frames` is reached, or `on_frame` returns false.
/// The runtime a viewer runs on: one thread. A viewer's work is one chain (packets in, picture
/// applied, ACK out), and over QUIC each frame passes through several tasks (the endpoint, the
/// connection, the frame's stream, the session); on one thread those hand-offs wake no other
/// thread. Measured across a 1 ms emulated link (`framewire bench net`, seven runs, BENCHMARKS.md),
/// QUIC's capture → applied p99 went from 2.0 to 1.8 ms for typing (median; worst 3.7 → 3.4) and
/// from 2.8 to 2.7 ms for scroll (worst 8.0 → 4.4).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

pub async fn run_viewer(
    opts: ViewerOptions,
    stats: Arc<Mutex<ViewerStats>>,
    on_frame: impl FnMut(&FrameEvent<'_>) -> bool,
) -> anyhow::Result<()> {
    if let Some(pin) = opts.quic {
        anyhow::ensure!(
            opts.protocol == Protocol::V1,
            "QUIC carries framewire v1 only"
        );
        let mut link = crate::link::connect_quic(&opts.addr, pin).await?;
        lock(&stats).protocol = "framewire-quic";
        let r = run_v1(&mut link, opts, stats, on_frame).await;
        link.close();
        return r;
    }
    let sock = TcpStream::connect(&opts.addr).await.with_context(|| {
        format!(
            "connecting to {} ({} protocol)",
            opts.addr,
            opts.protocol.name()
        )
    })?;
    sock.set_nodelay(true)?;
    lock(&stats).protocol = opts.protocol.name();
    match opts.protocol {
        Protocol::V1 => run_v1(&mut Link::Tcp(sock), opts, stats, on_frame).await,
        Protocol::Daylight => run_daylight(sock, opts, stats, on_frame).await,
    }
}

async fn wait_unpaused(p: &AtomicBool) {
    while p.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Tracks when the first byte of the packet being received arrived.
struct RecvClock(Option<u64>);

impl RecvClock {
    fn bytes_arrived(&mut self, now: u64) {
        self.0.get_or_insert(now);
    }
    /// A packet completed at `now`; returns its receive time.
    fn packet_done(&mut self, now: u64, more_pending: bool) -> u64 {
        // A unit (QUIC) may have arrived before bytes counted since: its time is not known.
        let r = now.saturating_sub(self.0.unwrap_or(now));
        self.0 = more_pending.then_some(now);
        r
    }
}

async fn run_v1(
    sock: &mut Link,
    opts: ViewerOptions,
    stats: Arc<Mutex<ViewerStats>>,
    mut on_frame: impl FnMut(&FrameEvent<'_>) -> bool,
) -> anyhow::Result<()> {
    // Over QUIC the link also puts frames together from datagrams (`link.rs`).
    let datagrams = match sock {
        Link::Quic(_) => caps::FRAME_DATAGRAMS | caps::LARGE_FRAME_DATAGRAMS,
        Link::Tcp(_) => 0,
    };
    let hello = ViewerHello {
        caps: opts.caps | datagrams,
        stream: "screen".into(),
        token: opts.token.clone().unwrap_or_default(),
    };
    let mut session = ViewerSession::new(hello, now_us);
    if matches!(sock, Link::Tcp(_)) {
        session = session.every_frame_arrives();
    }
    let mut buf = vec![0u8; 1 << 20];
    let mut rc = RecvClock(None);
    let mut frames = 0u64;
    loop {
        session.handle_timeout(now_us());
        while let Some(b) = session.poll_transmit() {
            sock.write_all(&b).await?;
        }
        while let Some(e) = session.poll_event() {
            // What handling it produced (its ACK, a pong) goes out before the caller's work.
            while let Some(b) = session.poll_transmit() {
                sock.write_all(&b).await?;
            }
            let shown = match e {
                ViewerEvent::Shown(s) => s,
                ViewerEvent::Size { width, height } => {
                    let mut s = lock(&stats);
                    (s.width, s.height) = (width, height);
                    continue;
                }
                ViewerEvent::Command { code, a } => {
                    let mut s = lock(&stats);
                    match code {
                        v1::CommandCode::Brightness => s.brightness = Some(a.min(255) as u8),
                        v1::CommandCode::Warmth => s.warmth = Some(a.min(255) as u8),
                        _ => {}
                    }
                    continue;
                }
                ViewerEvent::Welcomed { .. } => continue,
                ViewerEvent::Goodbye { code, reason } => {
                    if code == v1::goodbye::NORMAL || code == v1::goodbye::SHUTDOWN {
                        return Ok(());
                    }
                    bail!("the server closed the connection: {reason} (code {code})");
                }
                ViewerEvent::Error(e) => bail!("bad packet from the server: {e}"),
            };
            record_shown(&stats, &shown, rc.packet_done(shown.received_us, false));
            frames += 1;
            let ev = FrameEvent::of(
                session.picture(),
                session.planes(),
                shown.seq,
                shown.keyframe,
                shown.unchanged,
                Some(shown.ok),
            );
            if !on_frame(&ev) || opts.max_frames.is_some_and(|m| frames >= m) {
                return Ok(());
            }
        }
        wait_unpaused(&opts.paused).await;
        let wake = session.poll_timeout().map(|t| t.saturating_sub(now_us()));
        let input = tokio::select! {
            r = sock.read(&mut buf) => r?,
            _ = sleep_for(wake) => continue,
        };
        let now = now_us();
        match input {
            Input::Closed => bail!("the server closed the connection"),
            Input::Control(n) => {
                rc.bytes_arrived(now);
                session.handle_bytes(now, &buf[..n]);
            }
            Input::Unit(u) => {
                rc.bytes_arrived(u.at);
                match u.after_loss {
                    true => session.handle_unit_after_loss(u.at, &u.bytes),
                    false => session.handle_unit(u.at, &u.bytes),
                }
                if let Some(c) = sock.shard_counters().filter(|c| c.datagrams > 0) {
                    let mut s = lock(&stats);
                    s.datagram_frames = c.units;
                    s.datagram_recovered = c.recovered;
                    s.datagram_lost = c.abandoned + c.vanished;
                }
            }
        }
    }
}

async fn sleep_for(us: Option<u64>) {
    match us {
        Some(us) => tokio::time::sleep(Duration::from_micros(us)).await,
        None => std::future::pending().await,
    }
}

/// Counts a v1 frame or unchanged packet the session handled and ACKed.
fn record_shown(stats: &Mutex<ViewerStats>, sh: &Shown, recv: u64) {
    let mut s = lock(stats);
    let status = sh.status();
    let total = sh.decompress_us + sh.apply_us;
    record(&mut s, sh.seq, recv, total, sh.bytes, status);
    if sh.unchanged {
        s.unchanged += 1;
    } else if sh.keyframe {
        s.keyframes += 1;
    } else {
        s.deltas += 1;
    }
    if sh.codec.is_some() {
        s.codec = sh.codec;
    }
    if !sh.unchanged && !sh.decode_error {
        s.decompress_us.push(sh.decompress_us as f64);
        s.apply_us.push(sh.apply_us as f64);
    }
    if let Some(e2e) = sh.end_to_end_us {
        s.e2e_us.push(e2e as f64);
    }
    s.applied_at.push(sh.applied_us as f64);
}

fn record(s: &mut ViewerStats, seq: u64, recv: u64, total: u64, bytes: usize, status: AckStatus) {
    if let Some(last) = s.last_seq {
        s.drops += seq.saturating_sub(last + 1);
    }
    s.last_seq = Some(seq);
    s.frames += 1;
    s.bytes += bytes as u64;
    s.recv_us.push(recv as f64);
    s.total_us.push(total as f64);
    s.payload_bytes.push(bytes as f64);
    match status {
        AckStatus::Applied => {}
        AckStatus::ChecksumMismatch => s.checksum_failures += 1,
        AckStatus::DecodeError => s.decode_errors += 1,
        AckStatus::BaseMissing => s.bases_missing += 1,
    }
}

async fn run_daylight(
    mut sock: TcpStream,
    opts: ViewerOptions,
    stats: Arc<Mutex<ViewerStats>>,
    mut on_frame: impl FnMut(&FrameEvent<'_>) -> bool,
) -> anyhow::Result<()> {
    let mut session = DaylightViewerSession::new(now_us);
    let mut rc = RecvClock(None);
    let mut buf = vec![0u8; 1 << 20];
    let mut frames = 0u64;
    loop {
        wait_unpaused(&opts.paused).await;
        let n = sock.read(&mut buf).await?;
        if n == 0 {
            bail!("the server closed the connection");
        }
        rc.bytes_arrived(now_us());
        session.handle_bytes(now_us(), &buf[..n]);
        while let Some(e) = session.poll_event() {
            let shown = match e {
                DaylightViewerEvent::Size { width, height } => {
                    let mut s = lock(&stats);
                    (s.width, s.height) = (width, height);
                    continue;
                }
                DaylightViewerEvent::Command { cmd, value } => {
                    let mut s = lock(&stats);
                    match cmd {
                        daylight::CMD_BRIGHTNESS => s.brightness = Some(value),
                        daylight::CMD_WARMTH => s.warmth = Some(value),
                        _ => {}
                    }
                    continue;
                }
                DaylightViewerEvent::Error(e) => bail!("bad packet from the server: {e}"),
                DaylightViewerEvent::Shown(s) => s,
            };
            // Daylight ACKs after applying, whatever happened (the protocol has no error
            // report); a failure is counted here and recovers at a keyframe.
            while let Some(ack) = session.poll_transmit() {
                sock.write_all(&ack).await?;
            }
            frames += 1;
            record_daylight(&stats, &shown, rc.packet_done(shown.received_us, false));
            let ev = FrameEvent::of(
                session.picture(),
                1,
                shown.seq as u64,
                shown.keyframe,
                false,
                None,
            );
            if !on_frame(&ev) || opts.max_frames.is_some_and(|m| frames >= m) {
                return Ok(());
            }
        }
    }
}

fn record_daylight(stats: &Mutex<ViewerStats>, sh: &DaylightShown, recv: u64) {
    let mut s = lock(stats);
    let status = if sh.decoded {
        AckStatus::Applied
    } else {
        AckStatus::DecodeError
    };
    let total = sh.decompress_us + sh.apply_us;
    record(&mut s, sh.seq as u64, recv, total, sh.bytes, status);
    if sh.keyframe {
        s.keyframes += 1
    } else {
        s.deltas += 1
    }
    if sh.decoded {
        s.decompress_us.push(sh.decompress_us as f64);
        s.apply_us.push(sh.apply_us as f64);
    }
    s.applied_at.push(sh.applied_us as f64);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Emptied, the timing windows hold only what comes after (the line's latency is that of
    /// the frames since), and the counts since the start stay.
    #[test]
    fn emptied_windows_hold_only_what_follows_and_the_counts_stay() {
        let mut s = ViewerStats {
            frames: 70,
            ..ViewerStats::default()
        };
        for w in [
            &mut s.e2e_us,
            &mut s.recv_us,
            &mut s.apply_us,
            &mut s.applied_at,
        ] {
            w.push(50_000.0);
        }
        s.clear_windows();
        assert!(s.e2e_us.is_empty() && s.recv_us.is_empty() && s.applied_at.is_empty());
        assert!(s.line().contains("e2e avg/p99 n/a"), "{}", s.line());
        s.e2e_us.push(2_000.0);
        assert!(s.line().contains("e2e avg/p99 2.00/2.00ms"), "{}", s.line());
        assert_eq!(s.frames, 70);
    }
}
