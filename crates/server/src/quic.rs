//! framewire v1 over QUIC, the host's side: each connection's first bidirectional stream is its
//! control stream and goes through the same front door as TCP (Hello, token, Welcome); the
//! viewer's session then sends each frame on a unidirectional stream of its own
//! ([`QuicTransport`]). A frame that does not depend on the frames still in flight (a keyframe,
//! or a delta against the picture the viewer acknowledged) resets their streams: QUIC stops
//! retransmitting pictures nobody needs any more. Or, when the host is told so
//! ([`Carriage::Datagrams`]) and the viewer declared it takes them, each frame goes as datagrams
//! of shards with Reed-Solomon recovery shards (`framewire_quic::shards`): a lost packet is
//! made good from the others instead of retransmitted a round trip later; the recovery shards
//! of a frame that fits one datagram follow it a few milliseconds apart, so that one lost
//! packet does not take them all.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use framewire_mirror::{PathFigures, Transport};
use framewire_net::Gate;
use framewire_proto::v1::caps;
use framewire_quic::codes;
use framewire_quic::congestion::WindowBound;
use framewire_quic::shards;
use framewire_session::{Repair, Transmit};
use quinn::{SendStream, VarInt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tracing::{debug, warn};

use crate::conn::Conn;
use crate::door::Door;
use crate::webtransport::WebRules;

/// Frame streams remembered so they can be reset when superseded: more than a viewer may have
/// in flight.
const OPEN_FRAMES: usize = 32;
/// Frame streams left to finish when a newer frame supersedes them.
const KEEP_UNRESET: usize = 2;
/// Frames larger than this go on a stream to a viewer that takes datagrams but not large ones
/// (at most [`shards::MAX_UNIT`], what such a viewer takes as datagrams), and to one that
/// does where the path queued lately (below). Such a frame takes many round
/// trips' worth of packets to cross, so a retransmission adds less to its time, and its
/// datagrams go out in one burst, which on a slow path outlasts the bottleneck's queue.
/// Measured across the emulated links (BENCHMARKS.md, "Frames as datagrams" and "Large frames
/// as datagrams, tried"):
/// - with frames over 128 KiB as datagrams wherever they crossed in 150 ms at the
///   delivery-rate estimate, at an unlimited rate, 20 ms and 1 % loss, the p99 fell by a third
///   to a half (a grey video of 410 kB frames 79 → 45 ms, a colour one 61 → 36 ms), but at
///   50 Mbit/s the colour video showed 35 pictures a second against 55 on streams;
/// - with every frame of up to 2 MiB as datagrams, at 10 Mbit/s at most one picture in 6 s
///   came whole.
///
/// No rule tried on the delivery-rate estimate (the frame's crossing time at it, a floor on
/// it) kept the gains without the losses: on a fast path the estimate measures the content,
/// not the path. What tells the paths apart is a queue: larger frames, up to
/// [`LARGE_DATAGRAM_UNIT_MAX`], go as datagrams to a viewer that takes them only where the
/// path has not queued lately (the session decides, `HostConfig::large_datagrams_up_to`).
const DATAGRAM_UNIT_MAX: usize = 128 * 1024;
/// Frames up to this size may go as datagrams to a viewer that declared
/// [`caps::LARGE_FRAME_DATAGRAMS`] (it takes units of up to [`shards::MAX_LARGE_UNIT`]),
/// where the path has not queued lately: 2 MiB, the rest of such a unit is room for what
/// precedes a frame on its stream.
const LARGE_DATAGRAM_UNIT_MAX: usize = shards::MAX_LARGE_UNIT - 64 * 1024;
/// How long a new connection has to open its control stream (or, for WebTransport, to ask
/// for its session).
pub(crate) const CONTROL_TIMEOUT: Duration = Duration::from_secs(5);
/// The control stream's priority over frames' streams: quinn sends the highest priority with
/// data to send first, packet by packet (`framewire_quic::endpoint`), so a control packet
/// goes before the rest of any frame.
pub(crate) const CONTROL_PRIORITY: i32 = 1;
/// The first frame stream's priority; each next one is one lower, so frames go in the order
/// they were written, and the packets an older frame lost go again before a newer frame's
/// (quinn sends by priority packet by packet, its send fairness on; see
/// `framewire_quic::endpoint`). Below 0, where HTTP/3's own streams are for a WebTransport
/// session. Before, with fairness off, quinn finished the stream it had started first, so a
/// frame's lost packet waited behind the whole next frame: on the Mandelbrot zoom at 50
/// Mbit/s and 1 % loss, frames of 1.5 MB, such a frame was acknowledged 270 ms late, just
/// before the next (BENCHMARKS.md, "A viewer's first picture"). The priority stops at
/// `i32::MIN` after 2³¹ frames (over a year at 60 a second); from then on frames of equal
/// priority share the path round-robin, as they would with fairness alone.
const FIRST_FRAME_PRIORITY: i32 = -1;
/// How long a finished session's connection stays open for its last bytes to arrive.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// The QUIC connection a session's frames go out on: framewire/1 itself, or a browser's
/// WebTransport session (`webtransport.rs`), whose streams start with a header of its own.
pub trait FrameLink: Clone + Unpin + Send + Sync + 'static {
    type Stream: FrameStream;
    /// The control stream's halves.
    type Recv: AsyncRead + Unpin + Send + 'static;
    type Send: AsyncWrite + Unpin + Send + 'static;
    /// The control stream the viewer opens.
    fn accept_control(&self) -> impl Future<Output = io::Result<(Self::Send, Self::Recv)>> + Send;
    /// A new unidirectional stream for one frame.
    fn open_frame(&self) -> impl Future<Output = io::Result<Self::Stream>> + Send;
    /// The connection beneath (for the path's figures).
    fn quic(&self) -> &quinn::Connection;
    /// Frames may go as framewire's own datagrams (a WebTransport session's datagrams carry
    /// a header of HTTP/3's, and the browser takes frames on streams).
    fn takes_frame_datagrams(&self) -> bool;
}

/// How frames go to a viewer that takes them in any order (it names bases).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carriage {
    /// A unidirectional stream each, reset when superseded.
    Streams,
    /// Datagrams of shards with recovery shards, to viewers that declared
    /// [`caps::FRAME_DATAGRAMS`]; a stream each to the others.
    Datagrams,
}

/// One frame's stream, written through quinn once it is open.
pub trait FrameStream: Send + 'static {
    fn quic(&mut self) -> &mut SendStream;
}

impl FrameLink for quinn::Connection {
    type Stream = SendStream;
    type Recv = quinn::RecvStream;
    type Send = SendStream;
    async fn accept_control(&self) -> io::Result<(SendStream, quinn::RecvStream)> {
        let (send, recv) = self.accept_bi().await.map_err(io::Error::other)?;
        send.set_priority(CONTROL_PRIORITY)
            .map_err(io::Error::other)?;
        Ok((send, recv))
    }
    async fn open_frame(&self) -> io::Result<SendStream> {
        self.open_uni().await.map_err(io::Error::other)
    }
    fn quic(&self) -> &quinn::Connection {
        self
    }
    fn takes_frame_datagrams(&self) -> bool {
        true
    }
}

impl FrameStream for SendStream {
    fn quic(&mut self) -> &mut SendStream {
        self
    }
}

/// A QUIC connection's control stream, as the front door reads and writes it.
pub struct QuicConn<L: FrameLink> {
    link: L,
    recv: L::Recv,
    send: L::Send,
    carriage: Carriage,
}

impl<L: FrameLink> AsyncRead for QuicConn<L> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.recv).poll_read(cx, buf)
    }
}

impl<L: FrameLink> AsyncWrite for QuicConn<L> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.send).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.send).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.send).poll_shutdown(cx)
    }
}

impl<L: FrameLink> Conn for QuicConn<L> {
    type Read = L::Recv;
    type Write = L::Send;
    type Transport = QuicTransport<L>;
    fn halves(self) -> (L::Recv, L::Send) {
        (self.recv, self.send)
    }
    fn into_transport(self, viewer_caps: u32) -> Self::Transport {
        let datagrams = self.carriage == Carriage::Datagrams
            && self.link.takes_frame_datagrams()
            && viewer_caps & caps::FRAME_DATAGRAMS != 0;
        let large = viewer_caps & caps::LARGE_FRAME_DATAGRAMS != 0;
        QuicTransport {
            bound: BoundHandle::of(self.link.quic()),
            link: self.link,
            send: self.send,
            recv: self.recv,
            frames: VecDeque::new(),
            frame_priority: FIRST_FRAME_PRIORITY,
            datagrams: datagrams.then(|| Datagrams {
                large,
                ..Datagrams::default()
            }),
        }
    }
}

/// A viewer session's QUIC streams: control packets in order on the control stream, each frame
/// as datagrams or on a stream of its own (or, for a viewer that needs frames in order, on the
/// control stream).
pub struct QuicTransport<L: FrameLink> {
    link: L,
    send: L::Send,
    recv: L::Recv,
    frames: VecDeque<L::Stream>,
    /// The next frame stream's priority: each below the one before ([`FIRST_FRAME_PRIORITY`]).
    frame_priority: i32,
    /// Set when frames go as datagrams.
    datagrams: Option<Datagrams>,
    /// The connection's congestion window bound (framewire's controller).
    bound: BoundHandle,
}

/// The bound of a connection's controller, and the peer's address it was read at: quinn
/// builds a new controller (with a bound of its own) when the peer moves to another address.
struct BoundHandle(Option<WindowBound>, SocketAddr);

impl BoundHandle {
    fn of(conn: &quinn::Connection) -> BoundHandle {
        BoundHandle(WindowBound::of(conn), conn.remote_address())
    }

    /// The bound in force on `conn`'s controller now.
    fn current(&mut self, conn: &quinn::Connection) -> Option<&WindowBound> {
        if conn.remote_address() != self.1 {
            *self = BoundHandle::of(conn);
        }
        self.0.as_ref()
    }
}

/// The datagram side of a transport: the next frame's number, its datagrams, and what was
/// sent so (for the path's figures).
#[derive(Default)]
struct Datagrams {
    /// The viewer takes frames of up to [`LARGE_DATAGRAM_UNIT_MAX`] as datagrams.
    large: bool,
    next: u32,
    /// The frame being split, header and payload together (kept to reuse its allocation).
    unit: Vec<u8>,
    out: Vec<Bytes>,
    frames: u64,
    recovery_shards: u64,
    /// Recovery shards of one-datagram frames, handed to the task that sends them spaced.
    spaced: Option<tokio::sync::mpsc::Sender<Bytes>>,
    /// Of those, dropped unsent: [`SPACED_QUEUE`] were already waiting (or the connection
    /// had closed).
    spaced_dropped: u64,
    /// Frames asked for as datagrams that went on a stream ([`PathFigures::datagram_fallbacks`]).
    fallbacks: u64,
}

/// Recovery shards of frames that fit one datagram waiting to be sent spaced; beyond, they
/// are dropped and counted (their frame has gone; only its insurance is lost).
const SPACED_QUEUE: usize = 16;
/// Between a one-datagram frame and each of its recovery shards: long enough that quinn has
/// sent what came before in a packet of its own (its connection task sends as soon as it is
/// woken), so one lost packet does not take a frame and its copies together; short beside a
/// round trip across any network, which a retransmission would cost.
const SPACING: Duration = Duration::from_millis(2);

/// Sends the recovery shards of one-datagram frames, each [`SPACING`] after the one before,
/// until the transport drops its sender or the connection ends. A shard larger than the path
/// now takes (its datagram size fell) is skipped: its frame went, or was lost, already.
async fn send_spaced(conn: quinn::Connection, mut rx: tokio::sync::mpsc::Receiver<Bytes>) {
    while let Some(b) = rx.recv().await {
        tokio::time::sleep(SPACING).await;
        match conn.send_datagram_wait(b).await {
            Ok(()) | Err(quinn::SendDatagramError::TooLarge) => {}
            Err(_) => return,
        }
    }
}

impl Datagrams {
    /// The largest frame this viewer takes as datagrams.
    fn most(&self) -> usize {
        match self.large {
            true => LARGE_DATAGRAM_UNIT_MAX,
            false => DATAGRAM_UNIT_MAX,
        }
    }

    /// A frame the session sent as datagrams goes on a stream instead: counted, and logged
    /// the first time (the session's rule against overtaking a frame on a stream does not
    /// know of it; see [`PathFigures::datagram_fallbacks`]).
    fn fell_back(&mut self, peer: std::net::SocketAddr, bytes: usize, why: &str) {
        self.fallbacks += 1;
        if self.fallbacks == 1 {
            warn!(%peer, bytes, why, "a frame meant for datagrams went on a stream");
        } else {
            debug!(%peer, bytes, why, "a frame meant for datagrams went on a stream");
        }
    }
}

impl<L: FrameLink> QuicTransport<L> {
    /// Sends a frame as datagrams when this viewer takes them, the session asked for it
    /// (`Transmit::datagrams`: not a keyframe, and no larger than
    /// [`Transport::datagram_frames_up_to`] or, where the path has not queued lately,
    /// [`Transport::large_datagram_frames_up_to`]), the viewer takes a unit of its size and
    /// it can be split; returns it otherwise (a stream takes it). A frame that fits one datagram (a typed glyph, an Unchanged packet) goes at
    /// once, and its recovery shards (any one of them rebuilds it) follow [`SPACING`] apart: sent
    /// together, quinn would pack them into the same QUIC packet as the frame, and one loss
    /// would take them all. Waits while quinn's datagram buffer is full rather than let it
    /// drop the oldest: the session's budget, not the buffer, decides what is skipped.
    async fn send_datagrams(&mut self, t: Transmit) -> io::Result<Option<Transmit>> {
        let len = t.head.len() + t.payload.as_ref().map_or(0, |p| p.len());
        let Some(d) = self.datagrams.as_mut() else {
            return Ok(Some(t));
        };
        let most = d.most();
        if !t.datagrams || t.keyframe {
            return Ok(Some(t));
        }
        let peer = || self.link.quic().remote_address();
        if len > most {
            // The session's limits are within the viewer's units: not expected.
            d.fell_back(peer(), len, "larger than the viewer takes as datagrams");
            return Ok(Some(t));
        }
        let Some(max) = self.link.quic().max_datagram_size() else {
            d.fell_back(peer(), len, "the path takes no datagrams now");
            return Ok(Some(t));
        };
        d.unit.clear();
        d.unit.extend_from_slice(&t.head);
        if let Some(p) = &t.payload {
            d.unit.extend_from_slice(p);
        }
        d.out.clear();
        let repair = match t.repair {
            Repair::One => shards::Repair::One,
            Repair::Share => shards::Repair::Share,
            Repair::Full => shards::Repair::Full,
        };
        let recovery = match shards::split(d.next, &d.unit, max, repair, &mut d.out) {
            Ok(r) => r,
            Err(e) => {
                d.fell_back(peer(), len, &e.to_string());
                return Ok(Some(t));
            }
        };
        d.next = d.next.wrapping_add(1);
        d.frames += 1;
        d.recovery_shards += recovery as u64;
        // One original shard: its recovery shards go spaced, after it.
        let spaced = if d.out.len() == 1 + recovery {
            d.out.split_off(1)
        } else {
            Vec::new()
        };
        for b in d.out.drain(..) {
            match self.link.quic().send_datagram_wait(b).await {
                Ok(()) => {}
                // The path's datagram size fell while the frame was going (quinn found a
                // black hole, or the path changed; it drops what is queued and too large).
                // The frame is lost as if the path had lost it: the next delta against an
                // acknowledged picture repairs the viewer, and the next frame is cut to the
                // new size.
                Err(quinn::SendDatagramError::TooLarge) => {
                    debug!("the path's datagram size fell: a frame sent as datagrams is lost");
                    // (The rest of its datagrams go with the drain, and its spaced
                    // recovery shards are not sent.)
                    return Ok(None);
                }
                Err(e) => return Err(io::Error::other(e)),
            }
        }
        if !spaced.is_empty() {
            let tx = d.spaced.get_or_insert_with(|| {
                let (tx, rx) = tokio::sync::mpsc::channel(SPACED_QUEUE);
                tokio::spawn(send_spaced(self.link.quic().clone(), rx));
                tx
            });
            for b in spaced {
                if tx.try_send(b).is_err() {
                    d.spaced_dropped += 1;
                }
            }
        }
        Ok(None)
    }
}

impl<L: FrameLink> Transport for QuicTransport<L> {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.recv.read(buf).await
    }

    async fn send(&mut self, t: Transmit) -> io::Result<()> {
        if !t.own_stream {
            // Control packets, and frames for a viewer that applies them in order (it does
            // not name bases): one ordered stream.
            self.send.write_all(&t.head).await?;
            if let Some(p) = &t.payload {
                self.send.write_all(p).await?;
            }
            return Ok(());
        }
        if t.independent {
            // The older frames are superseded: the viewer drops any that arrives after this
            // one. The newest few stay, so a path slower than a frame interval still delivers
            // whole frames. Streams already delivered (or reset) refuse, which is fine.
            let old = self.frames.len().saturating_sub(KEEP_UNRESET);
            for mut s in self.frames.drain(..old) {
                let _ = s.quic().reset(VarInt::from_u32(codes::SUPERSEDED));
            }
        }
        let Some(t) = self.send_datagrams(t).await? else {
            return Ok(());
        };
        let mut s = self.link.open_frame().await?;
        let q = s.quic();
        q.set_priority(self.frame_priority)
            .map_err(io::Error::other)?;
        self.frame_priority = self.frame_priority.saturating_sub(1);
        q.write_chunk(t.head).await.map_err(io::Error::other)?;
        if let Some(p) = t.payload {
            q.write_chunk(p).await.map_err(io::Error::other)?;
        }
        q.finish().map_err(io::Error::other)?;
        if self.frames.len() >= OPEN_FRAMES {
            self.frames.pop_front();
        }
        self.frames.push_back(s);
        Ok(())
    }

    fn drops_superseded(&self) -> bool {
        true
    }

    fn datagram_frames_up_to(&self) -> Option<u64> {
        self.datagrams.as_ref().map(|_| DATAGRAM_UNIT_MAX as u64)
    }

    fn large_datagram_frames_up_to(&self) -> Option<u64> {
        self.datagrams
            .as_ref()
            .filter(|d| d.large)
            .map(|d| d.most() as u64)
    }

    fn bound_window(&mut self, bytes: Option<u64>, least: Option<u64>) {
        if let Some(b) = self.bound.current(self.link.quic()) {
            b.set(bytes);
            b.set_least(least);
        }
    }

    fn path(&self) -> Option<PathFigures> {
        let s = self.link.quic().stats();
        Some(PathFigures {
            rtt_us: s.path.rtt.as_micros() as u64,
            min_rtt_us: s.path.min_rtt.as_micros() as u64,
            cwnd_bytes: s.path.cwnd,
            window_bound_bytes: self
                .bound
                .0
                .as_ref()
                .and_then(WindowBound::get)
                .unwrap_or(0),
            lost_packets: s.path.lost_packets,
            sent_packets: s.path.sent_packets,
            datagram_frames: self.datagrams.as_ref().map_or(0, |d| d.frames),
            recovery_shards: self.datagrams.as_ref().map_or(0, |d| d.recovery_shards),
            recovery_shards_dropped: self.datagrams.as_ref().map_or(0, |d| d.spaced_dropped),
            datagram_fallbacks: self.datagrams.as_ref().map_or(0, |d| d.fallbacks),
        })
    }
}

/// Accepts QUIC connections on `endpoint` for as long as the server runs; each admitted one
/// (under the v1 listener's limit, shared with TCP) goes through the front door, as
/// framewire/1 or, when it asked for HTTP/3, as a browser's WebTransport session.
pub async fn accept_loop(
    endpoint: quinn::Endpoint,
    gate: Arc<Gate>,
    door: Arc<Door>,
    web: Arc<WebRules>,
    carriage: Carriage,
) {
    while let Some(incoming) = endpoint.accept().await {
        let Some(permit) = gate.try_enter() else {
            incoming.refuse();
            continue;
        };
        let (door, web) = (door.clone(), web.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let peer = incoming.remote_address();
            if let Err(e) = serve(incoming, peer, &door, &web, carriage).await {
                debug!(%peer, error = %e, "QUIC connection ended with an error");
            }
        });
    }
}

async fn serve(
    incoming: quinn::Incoming,
    peer: SocketAddr,
    door: &Door,
    web: &WebRules,
    carriage: Carriage,
) -> anyhow::Result<()> {
    let mut connecting = incoming.accept()?;
    let alpn = connecting
        .handshake_data()
        .await?
        .downcast_ref::<quinn::crypto::rustls::HandshakeData>()
        .and_then(|h| h.protocol.clone());
    if alpn.as_deref() == Some(framewire_quic::H3_ALPN) {
        return crate::webtransport::serve(connecting, peer, door, web).await;
    }
    let conn = connecting.await?;
    door.counters.connections.inc("framewire-quic");
    run(conn, peer, door, carriage).await
}

/// A connection's v1 session: its control stream through the front door, then the session.
pub(crate) async fn run<L: FrameLink>(
    link: L,
    peer: SocketAddr,
    door: &Door,
    carriage: Carriage,
) -> anyhow::Result<()> {
    let (send, recv) = tokio::time::timeout(CONTROL_TIMEOUT, link.accept_control())
        .await
        .map_err(|_| anyhow::anyhow!("no control stream within {CONTROL_TIMEOUT:?}"))??;
    let c = QuicConn {
        link: link.clone(),
        recv,
        send,
        carriage,
    };
    let r = door.serve_v1(c, peer).await;
    // What was written last (a Goodbye) is delivered before the connection closes: the viewer
    // closes it once it has read that, or it is closed after a grace period.
    let quic = link.quic();
    let _ = tokio::time::timeout(CLOSE_GRACE, quic.closed()).await;
    quic.close(VarInt::from_u32(codes::DONE), b"session ended");
    r
}
