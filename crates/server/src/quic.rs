//! framewire v1 over QUIC, the host's side: each connection's first bidirectional stream is its
//! control stream and goes through the same front door as TCP (Hello, token, Welcome); the
//! viewer's session then sends each frame on a unidirectional stream of its own
//! ([`QuicTransport`]). A frame that does not depend on the frames still in flight (a keyframe,
//! or a delta against the picture the viewer acknowledged) resets their streams: QUIC stops
//! retransmitting pictures nobody needs any more.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use framewire_mirror::{PathFigures, Transport};
use framewire_net::Gate;
use framewire_quic::codes;
use framewire_session::Transmit;
use quinn::{RecvStream, SendStream, VarInt};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tracing::debug;

use crate::conn::Conn;
use crate::door::Door;

/// Frame streams remembered so they can be reset when superseded: more than a viewer may have
/// in flight.
const OPEN_FRAMES: usize = 32;
/// Frame streams left to finish when a newer frame supersedes them.
const KEEP_UNRESET: usize = 2;
/// How long a new connection has to open its control stream.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a finished session's connection stays open for its last bytes to arrive.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// A QUIC connection's control stream, as the front door reads and writes it.
pub struct QuicConn {
    conn: quinn::Connection,
    send: SendStream,
    recv: RecvStream,
}

impl AsyncRead for QuicConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.recv).poll_read(cx, buf)
    }
}

impl AsyncWrite for QuicConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        AsyncWrite::poll_write(Pin::new(&mut self.send), cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.send).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.send).poll_shutdown(cx)
    }
}

impl Conn for QuicConn {
    type Read = RecvStream;
    type Write = SendStream;
    type Transport = QuicTransport;
    fn halves(self) -> (RecvStream, SendStream) {
        (self.recv, self.send)
    }
    fn into_transport(self) -> QuicTransport {
        QuicTransport {
            conn: self.conn,
            send: self.send,
            recv: self.recv,
            frames: VecDeque::new(),
        }
    }
}

/// A viewer session's QUIC streams: control packets in order on the control stream, each frame
/// on a stream of its own.
pub struct QuicTransport {
    conn: quinn::Connection,
    send: SendStream,
    recv: RecvStream,
    frames: VecDeque<SendStream>,
}

impl Transport for QuicTransport {
    async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.recv.read(buf).await {
            Ok(Some(n)) => Ok(n),
            Ok(None) => Ok(0),
            Err(e) => Err(io::Error::other(e)),
        }
    }

    async fn send(&mut self, t: Transmit) -> io::Result<()> {
        if !t.frame {
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
                let _ = s.reset(VarInt::from_u32(codes::SUPERSEDED));
            }
        }
        let mut s = self.conn.open_uni().await.map_err(io::Error::other)?;
        s.write_chunk(t.head).await.map_err(io::Error::other)?;
        if let Some(p) = t.payload {
            s.write_chunk(p).await.map_err(io::Error::other)?;
        }
        s.finish().map_err(io::Error::other)?;
        if self.frames.len() >= OPEN_FRAMES {
            self.frames.pop_front();
        }
        self.frames.push_back(s);
        Ok(())
    }

    fn path(&self) -> Option<PathFigures> {
        let s = self.conn.stats();
        Some(PathFigures {
            rtt_us: s.path.rtt.as_micros() as u64,
            cwnd_bytes: s.path.cwnd,
            lost_packets: s.path.lost_packets,
            sent_packets: s.path.sent_packets,
        })
    }
}

/// Accepts QUIC connections on `endpoint` for as long as the server runs; each admitted one
/// (under the v1 listener's limit, shared with TCP) goes through the front door.
pub async fn accept_loop(endpoint: quinn::Endpoint, gate: Arc<Gate>, door: Arc<Door>) {
    while let Some(incoming) = endpoint.accept().await {
        let Some(permit) = gate.try_enter() else {
            incoming.refuse();
            continue;
        };
        let door = door.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let peer = incoming.remote_address();
            if let Err(e) = serve(incoming, peer, &door).await {
                debug!(%peer, error = %e, "QUIC connection ended with an error");
            }
        });
    }
}

async fn serve(incoming: quinn::Incoming, peer: SocketAddr, door: &Door) -> anyhow::Result<()> {
    let conn = incoming.await?;
    door.counters.connections.inc("framewire-quic");
    let (send, recv) = tokio::time::timeout(CONTROL_TIMEOUT, conn.accept_bi())
        .await
        .map_err(|_| anyhow::anyhow!("no control stream within {CONTROL_TIMEOUT:?}"))??;
    let c = QuicConn {
        conn: conn.clone(),
        send,
        recv,
    };
    let r = door.serve_v1(c, peer).await;
    // What was written last (a Goodbye) is delivered before the connection closes: the viewer
    // closes it once it has read that, or it is closed after a grace period.
    let _ = tokio::time::timeout(CLOSE_GRACE, conn.closed()).await;
    conn.close(VarInt::from_u32(codes::DONE), b"session ended");
    r
}
