//! One viewer connection: a writer task that offers it the newest frame whenever its flow
//! allows, and a reader task that handles what it sends back. They share the viewer's
//! `ViewerFlow`; an ACK wakes the writer. A viewer whose socket stops draining blocks only its
//! own writer: the capture loop and every other viewer go on.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use framewire_codec::BlockCodec;
use framewire_flow::{AckOutcome, PingSchedule, Plan};
use framewire_proto::daylight::{ViewerDecoder, ViewerPacket};
use framewire_proto::v1::{self, goodbye, AckStatus, Packet};
use framewire_proto::ProtoError;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{broadcast, mpsc};
use tracing::{debug, warn};

use crate::clock::now_us;
use crate::frame::SourceFrame;
use crate::latency::observe_us;
use crate::state::{lock, Shared, ViewerCommand, ViewerShared};

/// What the writer must remember about a packet a wire produced.
pub struct Outgoing {
    /// The id the viewer will ACK (v1: source seq; Daylight: connection seq), if any.
    pub ack_id: Option<u64>,
    pub payload: Option<Bytes>,
    /// The packet is a keyframe (also when a wire sends a delta as one).
    pub keyframe: bool,
}

/// A protocol's encoding of the writer's decisions.
pub trait Wire: Send + 'static {
    /// CPU work (compression) that sending `plan` for `f` would do on the spot, if any: the
    /// writer runs it on a blocking thread first, so the async workers only move bytes.
    fn pending_work(&self, f: &Arc<SourceFrame>, plan: Plan) -> Option<Work>;
    /// Describes the stream (size); the viewer's picture starts again from a keyframe.
    fn stream_desc(&mut self, f: &SourceFrame, out: &mut BytesMut);
    /// The whole picture of `f`, and whether this call compressed it (rather than reusing a
    /// payload another viewer's request had made).
    fn keyframe(&mut self, f: &SourceFrame, out: &mut BytesMut) -> (Outgoing, bool);
    /// The frame as a delta against `f.delta_base`, in the form this protocol carries. A wire
    /// may send it as a keyframe instead (the viewer ends up holding `f` either way).
    fn delta(&mut self, f: &SourceFrame, out: &mut BytesMut) -> Outgoing;
    fn unchanged(&mut self, f: &SourceFrame, out: &mut BytesMut) -> Outgoing;
    fn command(&mut self, c: ViewerCommand, out: &mut BytesMut);
}

/// Compression to do before a send, on a blocking thread; returns the µs it took.
pub type Work = Box<dyn FnOnce() -> u64 + Send>;

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
            let t = now_us();
            if keyframe {
                f.keyframe(codec);
            } else {
                f.full_delta(codec);
            }
            now_us() - t
        })
    })
}

/// Frames sent and not yet acknowledged: ack id → capture time, for end-to-end latency.
pub type SentLog = Arc<Mutex<VecDeque<(u64, u64)>>>;

/// Appends one line per frame sent to the trace file, if tracing is on.
pub type Trace = Option<Arc<Mutex<std::fs::File>>>;

/// Payloads up to this size are copied behind their header so both go out in one write.
const COALESCE_MAX: usize = 64 * 1024;

pub struct WriterCtx {
    pub shared: Arc<Shared>,
    pub viewer: Arc<ViewerShared>,
    pub ctrl_rx: mpsc::Receiver<Bytes>,
    pub sent: SentLog,
    pub trace: Trace,
    /// Send pings (v1) to estimate the viewer's clock offset.
    pub ping: bool,
    /// Commands sent right after the first stream description (the Daylight connect order).
    pub initial: Vec<ViewerCommand>,
}

pub async fn run_writer<W: Wire>(
    mut wire: W,
    mut cx: WriterCtx,
    mut sock: impl AsyncWrite + Unpin,
) -> io::Result<()> {
    let shared = cx.shared.clone();
    let viewer = cx.viewer.clone();
    let mut frames = shared.frames.subscribe();
    frames.mark_changed();
    let mut cmds = shared.commands.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    let mut buf = BytesMut::with_capacity(COALESCE_MAX * 2);
    let mut last_size = None;
    let mut initial = std::mem::take(&mut cx.initial);
    let mut pings = PingSchedule::new();
    loop {
        let now = now_us();
        if let Some(id) = cx.ping.then(|| pings.poll(now)).flatten() {
            buf.clear();
            Packet::Ping { id, sent_us: now }.encode(&mut buf);
            sock.write_all(&buf).await?;
        }
        let can = lock(&viewer.flow).can_send(now);
        let mut take = can && frames.has_changed().unwrap_or(false);
        if !take {
            tokio::select! {
                biased;
                _ = shutdown.changed() => return Ok(()),
                b = cx.ctrl_rx.recv() => match b {
                    Some(b) => { sock.write_all(&b).await?; continue; }
                    None => return Ok(()), // the reader ended: the connection is over
                },
                r = frames.changed(), if can => { r.map_err(|_| io::Error::other("capture stopped"))?; take = true; }
                _ = viewer.acked.notified() => {}
                c = cmds.recv() => match c {
                    Ok(c) => { buf.clear(); wire.command(c, &mut buf); sock.write_all(&buf).await?; }
                    Err(broadcast::error::RecvError::Lagged(n)) => shared.counters.get("commands_lagged").add(n),
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                },
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
        if !take {
            continue;
        }
        let Some(f) = frames.borrow_and_update().clone() else {
            continue;
        };
        buf.clear();
        if last_size != Some((f.width, f.height)) {
            wire.stream_desc(&f, &mut buf);
            last_size = Some((f.width, f.height));
            for c in initial.drain(..) {
                wire.command(c, &mut buf);
            }
            // A new size resets the viewer's picture (the Daylight app zeroes it).
            lock(&viewer.flow).reset_reference();
        }
        let plan = lock(&viewer.flow).plan(&f.info());
        if let Some(work) = wire.pending_work(&f, plan) {
            let took = tokio::task::spawn_blocking(work)
                .await
                .map_err(io::Error::other)?;
            if matches!(plan, Plan::Keyframe { .. }) {
                lock(&shared.pipeline).keyframe_us.push(took as f64);
            }
        }
        let out = match plan {
            Plan::Nothing if buf.is_empty() => continue,
            Plan::Nothing => {
                sock.write_all(&buf).await?;
                continue;
            }
            Plan::Unchanged => wire.unchanged(&f, &mut buf),
            Plan::Delta => {
                let out = wire.delta(&f, &mut buf);
                if out.keyframe {
                    shared.counters.inc("deltas_sent_as_keyframes");
                }
                out
            }
            Plan::Keyframe { .. } => wire.keyframe(&f, &mut buf).0,
        };
        let t0 = now_us();
        if let Some(id) = out.ack_id {
            lock(&viewer.flow).on_sent(id, t0);
            let mut s = lock(&cx.sent);
            if s.len() >= 256 {
                s.pop_front();
            }
            s.push_back((id, f.capture_us));
        }
        let mut bytes = buf.len();
        match &out.payload {
            Some(p) if p.len() <= COALESCE_MAX => {
                buf.put_slice(p);
                bytes += p.len();
                sock.write_all(&buf).await?;
            }
            Some(p) => {
                sock.write_all(&buf).await?;
                sock.write_all(p).await?;
                bytes += p.len();
            }
            None if buf.is_empty() => {}
            None => sock.write_all(&buf).await?,
        }
        let t1 = now_us();
        lock(&shared.send_us).push((t1 - t0) as f64);
        observe_us(&shared.stages.send, t1 - t0);
        viewer.bytes_sent.fetch_add(bytes as u64, Ordering::Relaxed);
        if let (Some(t), Some(id)) = (&cx.trace, out.ack_id) {
            use std::io::Write;
            let line = format!(
                "{} {} {} {:016x}\n",
                viewer.protocol.name(),
                viewer.id,
                id,
                f.checksum
            );
            let _ = lock(t).write_all(line.as_bytes());
        }
    }
}

fn reject(shared: &Shared, viewer: &ViewerShared, e: &ProtoError) {
    shared
        .counters
        .inc(&format!("rejected_packets.{}", e.reason()));
    warn!(viewer = viewer.id, protocol = viewer.protocol.name(), peer = %viewer.peer, error = %e, "closing connection: bad packet");
}

fn capture_time(sent: &SentLog, id: u64) -> Option<u64> {
    let mut s = lock(sent);
    while let Some(&(i, c)) = s.front() {
        s.pop_front();
        if i == id {
            return Some(c);
        }
    }
    None
}

/// Reads a v1 viewer's packets until it leaves or misbehaves.
pub async fn run_v1_reader(
    shared: Arc<Shared>,
    viewer: Arc<ViewerShared>,
    mut dec: v1::Decoder,
    mut sock: impl AsyncRead + Unpin,
    ctrl: mpsc::Sender<Bytes>,
    sent: SentLog,
) -> io::Result<()> {
    loop {
        loop {
            let p = match dec.next_packet() {
                Ok(Some(p)) => p,
                Ok(None) => break,
                Err(e) => {
                    reject(&shared, &viewer, &e);
                    let _ = ctrl
                        .send(
                            Packet::Goodbye {
                                code: goodbye::PROTOCOL_ERROR,
                                reason: e.to_string(),
                            }
                            .to_bytes(),
                        )
                        .await;
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
            };
            let now = now_us();
            match p {
                Packet::Ack {
                    seq,
                    status,
                    applied_us,
                    ..
                } => {
                    match lock(&viewer.flow).on_ack(seq, now) {
                        AckOutcome::Rtt(rtt) => {
                            observe_us(&shared.stages.rtt, rtt);
                            let local = lock(&viewer.offset).to_local(applied_us);
                            if let (Some(cap), Some(applied)) = (capture_time(&sent, seq), local) {
                                lock(&viewer.e2e_us).push(applied.saturating_sub(cap) as f64);
                                observe_us(&shared.stages.end_to_end, applied.saturating_sub(cap));
                            }
                        }
                        AckOutcome::Unknown => shared.counters.inc("acks_unknown"),
                    }
                    if status != AckStatus::Applied {
                        let name = if status == AckStatus::ChecksumMismatch {
                            "viewer_checksum_mismatch"
                        } else {
                            "viewer_decode_errors"
                        };
                        shared.counters.inc(name);
                        warn!(
                            viewer = viewer.id,
                            seq,
                            ?status,
                            "viewer could not reproduce the frame; sending a keyframe"
                        );
                        lock(&viewer.flow).request_keyframe();
                    }
                    viewer.acked.notify_one();
                }
                Packet::KeyframeRequest { .. } => {
                    lock(&viewer.flow).request_keyframe();
                    viewer.acked.notify_one();
                }
                Packet::Input { kind, x, y, code } => match shared.input.get() {
                    Some(sink) if viewer.control => {
                        sink.send(crate::input::InputEvent::Viewer { kind, x, y, code })
                    }
                    Some(_) => shared.counters.inc("input_refused.no_control_token"),
                    None => shared.counters.inc("input_refused.view_only"),
                },
                Packet::Ping { id, sent_us } => {
                    if ctrl
                        .try_send(
                            Packet::Pong {
                                id,
                                ping_sent_us: sent_us,
                                reply_us: now,
                            }
                            .to_bytes(),
                        )
                        .is_err()
                    {
                        shared.counters.inc("pongs_dropped");
                    }
                }
                Packet::Pong {
                    ping_sent_us,
                    reply_us,
                    ..
                } => {
                    lock(&viewer.offset).sample(ping_sent_us, reply_us, now);
                }
                Packet::Goodbye { code, reason } => {
                    debug!(viewer = viewer.id, code, %reason, "viewer said goodbye");
                    return Ok(());
                }
                other => {
                    let e = ProtoError::InvalidField {
                        field: "packet",
                        why: "not expected from a viewer",
                    };
                    reject(&shared, &viewer, &e);
                    let reason = format!(
                        "unexpected {} packet from a viewer",
                        v1::kind_name(other.type_byte())
                    );
                    let _ = ctrl
                        .send(
                            Packet::Goodbye {
                                code: goodbye::PROTOCOL_ERROR,
                                reason,
                            }
                            .to_bytes(),
                        )
                        .await;
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
            }
        }
        if sock.read_buf(dec.buffer_mut()).await? == 0 {
            return Ok(());
        }
    }
}

/// Reads a Daylight viewer's ACKs until it leaves or misbehaves.
pub async fn run_daylight_reader(
    shared: Arc<Shared>,
    viewer: Arc<ViewerShared>,
    mut sock: impl AsyncRead + Unpin,
    sent: SentLog,
) -> io::Result<()> {
    let mut dec = ViewerDecoder::new();
    loop {
        loop {
            match dec.next_packet() {
                Ok(Some(ViewerPacket::Ack { seq })) => {
                    let now = now_us();
                    match lock(&viewer.flow).on_ack(seq as u64, now) {
                        AckOutcome::Rtt(rtt) => {
                            observe_us(&shared.stages.rtt, rtt);
                            // The Daylight ACK has no timestamps: the best estimate of capture →
                            // applied is the time to send plus half the round trip.
                            if let Some(cap) = capture_time(&sent, seq as u64) {
                                let sent_at = now - rtt;
                                let e2e = sent_at.saturating_sub(cap) + rtt / 2;
                                lock(&viewer.e2e_us).push(e2e as f64);
                                observe_us(&shared.stages.end_to_end, e2e);
                            }
                        }
                        AckOutcome::Unknown => shared.counters.inc("acks_unknown"),
                    }
                    viewer.acked.notify_one();
                }
                Ok(None) => break,
                Err(e) => {
                    reject(&shared, &viewer, &e);
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
            }
        }
        if sock.read_buf(dec.buffer_mut()).await? == 0 {
            return Ok(());
        }
    }
}
