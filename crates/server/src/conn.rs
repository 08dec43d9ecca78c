//! A connection a v1 session can run on: a TCP socket, the in-process pipe that carries a
//! browser's WebSocket (see `framewire-http`'s `websocket.rs`), or a QUIC connection's control
//! stream (`quic.rs`). The handshake reads and writes it as bytes; a subscriber needs its two
//! halves; a viewer's session sends through its [`Transport`].

use framewire_mirror::{StreamTransport, Transport};
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

pub trait Conn: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    type Read: AsyncRead + Unpin + Send + 'static;
    type Write: AsyncWrite + Unpin + Send + 'static;
    type Transport: Transport;
    fn halves(self) -> (Self::Read, Self::Write);
    /// The transport a viewer's session sends through, given the capabilities it declared.
    fn into_transport(self, viewer_caps: u32) -> Self::Transport;
}

impl Conn for TcpStream {
    type Read = OwnedReadHalf;
    type Write = OwnedWriteHalf;
    type Transport = StreamTransport<TcpStream>;
    /// TCP splits without a lock between the halves.
    fn halves(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        self.into_split()
    }
    fn into_transport(self, _: u32) -> Self::Transport {
        StreamTransport::new(self)
    }
}

impl Conn for DuplexStream {
    type Read = ReadHalf<DuplexStream>;
    type Write = WriteHalf<DuplexStream>;
    type Transport = StreamTransport<DuplexStream>;
    fn halves(self) -> (Self::Read, Self::Write) {
        tokio::io::split(self)
    }
    fn into_transport(self, _: u32) -> Self::Transport {
        StreamTransport::new(self)
    }
}
