//! How a v1 viewer's bytes move: one TCP byte stream, or a QUIC connection whose control
//! stream carries everything but frames and whose frames each come on a stream of their own
//! or as datagrams of shards (`framewire-quic`). The viewer reads a [`Link`] and hands what it
//! gets to its session.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use bytes::Bytes;
use framewire_proto::v1;
use framewire_quic::shards::{Reassembler, ShardCounters};
use framewire_quic::Fingerprint;
use framewire_telemetry::clock::now_us;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tracing::debug;

/// Frames read whole but not yet handled (the viewer is busy): beyond this the readers wait,
/// and QUIC's flow control slows the host.
const UNITS_QUEUED: usize = 16;

/// What the link delivered.
pub enum Input {
    /// `n` bytes of the control stream, in the caller's buffer.
    Control(usize),
    /// One frame's stream or datagrams, whole, and when its last byte arrived (µs, [`now_us`]):
    /// a frame that waited in the queue while the viewer was busy arrived before it was read.
    Unit(Arrived),
    /// The host closed the connection.
    Closed,
}

/// A frame unit as it arrived.
pub struct Arrived {
    pub bytes: Bytes,
    /// When its last byte arrived (µs, [`now_us`]).
    pub at: u64,
    /// It came as datagrams after a frame that lost more datagrams than its recovery shards
    /// make good ([`Reassembler::older_incomplete`]).
    pub after_loss: bool,
}

pub enum Link {
    Tcp(TcpStream),
    Quic(QuicLink),
}

pub struct QuicLink {
    conn: quinn::Connection,
    send: quinn::SendStream,
    recv: quinn::RecvStream,
    units: mpsc::Receiver<Arrived>,
    /// What the datagram reader has put together, recovered and given up.
    shards: Arc<Mutex<ShardCounters>>,
    /// Kept so the endpoint lives as long as the link.
    _endpoint: quinn::Endpoint,
}

impl Link {
    /// Bytes from the host. Cancel-safe.
    pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<Input> {
        match self {
            Link::Tcp(s) => Ok(match s.read(buf).await? {
                0 => Input::Closed,
                n => Input::Control(n),
            }),
            Link::Quic(q) => tokio::select! {
                r = q.recv.read(buf) => match r {
                    Ok(Some(n)) => Ok(Input::Control(n)),
                    Ok(None) => Ok(Input::Closed),
                    Err(e) => Err(io::Error::other(e)),
                },
                u = q.units.recv() => Ok(u.map_or(Input::Closed, Input::Unit)),
            },
        }
    }

    pub async fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Link::Tcp(s) => s.write_all(b).await,
            Link::Quic(q) => q.send.write_all(b).await.map_err(io::Error::other),
        }
    }

    /// The counters of frames sent as datagrams (QUIC only).
    pub fn shard_counters(&self) -> Option<ShardCounters> {
        match self {
            Link::Quic(q) => Some(*q.shards.lock().expect("shard counters")),
            Link::Tcp(_) => None,
        }
    }

    /// Closes a QUIC connection at once (a TCP socket closes when dropped).
    pub fn close(&self) {
        if let Link::Quic(q) = self {
            q.conn.close(
                quinn::VarInt::from_u32(framewire_quic::codes::DONE),
                b"viewer done",
            );
        }
    }
}

/// Connects over QUIC to `addr`, accepting only a host whose certificate has `pin`, and opens
/// the control stream.
pub async fn connect_quic(addr: &str, pin: Fingerprint) -> anyhow::Result<Link> {
    let sa: SocketAddr = tokio::net::lookup_host(addr)
        .await
        .with_context(|| format!("resolving {addr}"))?
        .next()
        .with_context(|| format!("{addr} has no address"))?;
    let endpoint = framewire_quic::client_endpoint(pin)?;
    let conn = endpoint
        .connect(sa, "localhost")
        .context("starting QUIC")?
        .await
        .with_context(|| {
            format!("connecting over QUIC to {addr} (is the fingerprint {pin} the host's?)")
        })?;
    let (send, recv) = conn.open_bi().await.context("opening the control stream")?;
    let (tx, units) = mpsc::channel(UNITS_QUEUED);
    tokio::spawn(accept_units(conn.clone(), tx.clone()));
    let shards = Arc::new(Mutex::new(ShardCounters::default()));
    tokio::spawn(accept_datagrams(conn.clone(), tx, shards.clone()));
    Ok(Link::Quic(QuicLink {
        conn,
        send,
        recv,
        units,
        shards,
        _endpoint: endpoint,
    }))
}

/// Puts frames sent as datagrams back together (`framewire_quic::shards`), each stamped when
/// it is whole, as a stream's frame is. A malformed datagram is counted and logged, and the
/// others are still taken.
async fn accept_datagrams(
    conn: quinn::Connection,
    tx: mpsc::Sender<Arrived>,
    counters: Arc<Mutex<ShardCounters>>,
) {
    let mut r = Reassembler::new(framewire_quic::shards::MAX_LARGE_UNIT);
    while let Ok(d) = conn.read_datagram().await {
        let got = r.push(&d);
        *counters.lock().expect("shard counters") = r.counters();
        match got {
            Ok(Some(unit)) => {
                let unit = Arrived {
                    bytes: Bytes::from(unit),
                    at: now_us(),
                    after_loss: r.older_incomplete(),
                };
                if tx.send(unit).await.is_err() {
                    return;
                }
            }
            Ok(None) => {}
            Err(e) => debug!(error = %e, "frame datagram refused"),
        }
    }
}

/// Reads every frame stream the host opens, each on its own task so a frame still arriving
/// never holds up a newer one; a stream the host reset (superseded) is dropped. Each is
/// stamped as it arrives whole: the host takes the time from there to the ACK as the
/// viewer's, not the path's (the ACK's `recv_us`).
async fn accept_units(conn: quinn::Connection, tx: mpsc::Sender<Arrived>) {
    let limit = v1::DEFAULT_MAX_FRAME_BODY as usize + 256;
    while let Ok(mut s) = conn.accept_uni().await {
        let tx = tx.clone();
        tokio::spawn(async move {
            match s.read_to_end(limit).await {
                Ok(b) => {
                    let unit = Arrived {
                        bytes: Bytes::from(b),
                        at: now_us(),
                        after_loss: false,
                    };
                    let _ = tx.send(unit).await;
                }
                Err(e) => debug!(error = %e, "frame stream not read whole"),
            }
        });
    }
}
