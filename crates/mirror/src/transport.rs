//! How a viewer session's bytes move: a [`Transport`] reads what the viewer sends and writes
//! what the session queues. A byte stream (TCP, a browser's WebSocket) carries everything in
//! order ([`StreamTransport`]); QUIC (in `framewire-server`) puts each frame on its own stream.

use std::future::Future;
use std::io;

use bytes::{BufMut, BytesMut};
use framewire_session::Transmit;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Payloads up to this size are copied behind their header so both go out in one write.
const COALESCE_MAX: usize = 64 * 1024;

/// What a transport that measures its path (QUIC's congestion controller) says of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathFigures {
    /// The smoothed round trip, and the smallest seen (the peer's ACK delay not taken off).
    pub rtt_us: u64,
    pub min_rtt_us: u64,
    pub cwnd_bytes: u64,
    /// The bound the session set on that window (0: none; `Transport::bound_window`).
    pub window_bound_bytes: u64,
    pub lost_packets: u64,
    pub sent_packets: u64,
    /// Frames sent as datagrams, and the recovery shards made for them (0 on streams).
    pub datagram_frames: u64,
    pub recovery_shards: u64,
    /// Recovery shards of frames that fit one datagram, dropped unsent because the queue that
    /// spaces them out was full or the connection had closed (their frames went).
    pub recovery_shards_dropped: u64,
    /// Frames the session sent as datagrams (`Transmit::datagrams`) that went on a stream: the
    /// path took no datagrams then, the frame was larger than the viewer takes as datagrams,
    /// or it could not be split to the path's datagram size. The
    /// session counts them as datagrams (a large frame chained on one may overtake it, and
    /// then waits for it or is repaired), so they are counted here rather than lost from view.
    pub datagram_fallbacks: u64,
}

pub trait Transport: Send {
    /// Bytes the viewer sent (0 when it closed). Must be cancel-safe: the session waits on it
    /// beside frames and timers.
    fn read<'a>(
        &'a mut self,
        buf: &'a mut [u8],
    ) -> impl Future<Output = io::Result<usize>> + Send + 'a;
    /// Writes one transmit, whole.
    fn send<'a>(&'a mut self, t: Transmit) -> impl Future<Output = io::Result<()>> + Send + 'a;
    /// The path's figures, for a transport that measures them.
    fn path(&self) -> Option<PathFigures> {
        None
    }
    /// It gives up on frames in flight when a frame that needs none of them is sent
    /// ([`Transmit::independent`]), so such a frame can overtake them.
    fn drops_superseded(&self) -> bool {
        false
    }
    /// Frames other than keyframes of up to this many bytes go as datagrams with recovery
    /// shards: a lost packet loses no such frame while its other datagrams make it good
    /// (`HostConfig::datagrams_up_to`). Others go reliably.
    fn datagram_frames_up_to(&self) -> Option<u64> {
        None
    }
    /// Frames of up to this many bytes may go as datagrams too where the path has not queued
    /// lately (`HostConfig::large_datagrams_up_to`).
    fn large_datagram_frames_up_to(&self) -> Option<u64> {
        None
    }
    /// The most its congestion window may allow in flight, from what the session measured of
    /// the path (`None`: no bound), and the least (the session's byte budget, with room for
    /// stall probes that go on past one budget: `HostSession::window_least`; `None` or 0:
    /// none). Only a transport with a window of its own takes them.
    fn bound_window(&mut self, _bytes: Option<u64>, _least: Option<u64>) {}
}

/// Everything in order on one byte stream.
pub struct StreamTransport<S> {
    sock: S,
    wbuf: BytesMut,
}

impl<S> StreamTransport<S> {
    pub fn new(sock: S) -> Self {
        StreamTransport {
            sock,
            wbuf: BytesMut::with_capacity(COALESCE_MAX * 2),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> Transport for StreamTransport<S> {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.sock.read(buf).await
    }

    async fn send(&mut self, t: Transmit) -> io::Result<()> {
        match &t.payload {
            Some(p) if p.len() <= COALESCE_MAX => {
                self.wbuf.clear();
                self.wbuf.put_slice(&t.head);
                self.wbuf.put_slice(p);
                self.sock.write_all(&self.wbuf).await
            }
            Some(p) => {
                self.sock.write_all(&t.head).await?;
                self.sock.write_all(p).await
            }
            None => self.sock.write_all(&t.head).await,
        }
    }
}
