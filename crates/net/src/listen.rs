//! Binding TCP listeners, and accepting on them without spinning when accept fails.

use std::net::SocketAddr;
use std::time::Duration;

use framewire_telemetry::Counter;
use tokio::net::{TcpListener, TcpStream};
use tracing::warn;

/// Pending connections a listener holds before the kernel drops them. Tokio's default is 1024;
/// 1000 sensors reconnecting together (after a power cut, or a load test) overflowed it, and
/// the connections completed by SYN cookies were then reset.
pub const LISTEN_BACKLOG: u32 = 4096;

/// Binds a TCP listener with [`LISTEN_BACKLOG`] (the kernel caps it at `net.core.somaxconn`).
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let sock = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    sock.set_reuseaddr(true)?;
    sock.bind(addr)?;
    sock.listen(LISTEN_BACKLOG)
}

/// The next connection on `l`, with Nagle off. Out of descriptors and the like: counted,
/// logged, and retried after 50 ms instead of spinning.
pub async fn accept(l: &TcpListener, errors: &Counter) -> (TcpStream, SocketAddr) {
    loop {
        match l.accept().await {
            Ok((sock, peer)) => {
                let _ = sock.set_nodelay(true);
                return (sock, peer);
            }
            Err(e) => {
                errors.inc();
                warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}
