//! A byte-stream connection a v1 session can run on: a TCP socket, or the in-process pipe that
//! carries a browser's WebSocket (see `framewire-http`'s `websocket.rs`). Sessions only need the two halves.

use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

pub trait Conn: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    type Read: AsyncRead + Unpin + Send + 'static;
    type Write: AsyncWrite + Unpin + Send + 'static;
    fn halves(self) -> (Self::Read, Self::Write);
}

impl Conn for TcpStream {
    type Read = OwnedReadHalf;
    type Write = OwnedWriteHalf;
    /// TCP splits without a lock between the halves.
    fn halves(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        self.into_split()
    }
}

impl Conn for DuplexStream {
    type Read = ReadHalf<DuplexStream>;
    type Write = WriteHalf<DuplexStream>;
    fn halves(self) -> (Self::Read, Self::Write) {
        tokio::io::split(self)
    }
}
