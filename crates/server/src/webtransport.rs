//! A browser's WebTransport session (HTTP/3, `wtransport`) carried into an ordinary v1 session.
//!
//! Browsers cannot speak framewire/1 over raw QUIC, but they can open WebTransport, which runs
//! over the same QUIC: the host's endpoint offers both ALPN ids, and a connection that chose
//! "h3" comes here (`quic.rs`). After the session request is checked (path, origin), the page
//! opens one bidirectional stream, which goes through the same front door as every other
//! viewer (Hello, token, Welcome), and the host sends each frame on a unidirectional stream of
//! its own, exactly as for framewire/1 over QUIC ([`crate::quic::QuicTransport`]). The
//! certificate is the host's self-signed one; the page pins it with
//! `serverCertificateHashes`, which it reads from `/api/webtransport` on the HTTP port.

use std::io;
use std::net::SocketAddr;

use tracing::warn;
use wtransport::endpoint::IncomingSessionFuture;

use crate::door::Door;
use crate::quic::{FrameLink, FrameStream, CONTROL_TIMEOUT};

/// The path of the WebTransport session the page opens.
pub const PATH: &str = "/framewire";

/// Who may open a session.
#[derive(Debug, Clone, Default)]
pub struct WebRules {
    /// The HTTP port that serves the page: a browser's session must come from a page on it, on
    /// the host the session is addressed to. Without one, only clients that send no Origin
    /// (not browsers) are let in.
    pub http_port: Option<u16>,
}

impl WebRules {
    /// Whether a session request from `origin` to `authority` (`host:port`) is from our page.
    pub fn allows(&self, origin: Option<&str>, authority: &str) -> bool {
        let Some(origin) = origin else {
            return true;
        };
        let (Some(port), Some((scheme, rest))) = (self.http_port, origin.split_once("://")) else {
            return false;
        };
        let rest = rest.trim_end_matches('/');
        let (host, origin_port) = match split_port(rest) {
            Some((h, p)) => (h, p),
            None if scheme == "https" => (rest, 443),
            None if scheme == "http" => (rest, 80),
            None => return false,
        };
        let to_host = split_port(authority).map_or(authority, |(h, _)| h);
        origin_port == port && host.eq_ignore_ascii_case(to_host)
    }
}

/// `host:port` → (host, port); `[v6]:port` keeps its brackets.
fn split_port(s: &str) -> Option<(&str, u16)> {
    let (h, p) = s.rsplit_once(':')?;
    if h.starts_with('[') != h.ends_with(']') || (!h.starts_with('[') && h.contains(':')) {
        return None;
    }
    Some((h, p.parse().ok()?))
}

impl FrameLink for wtransport::Connection {
    type Stream = wtransport::SendStream;
    type Recv = wtransport::RecvStream;
    type Send = wtransport::SendStream;
    async fn accept_control(&self) -> io::Result<(wtransport::SendStream, wtransport::RecvStream)> {
        let (send, recv) = self.accept_bi().await.map_err(io::Error::other)?;
        send.set_priority(crate::quic::CONTROL_PRIORITY);
        Ok((send, recv))
    }
    async fn open_frame(&self) -> io::Result<wtransport::SendStream> {
        let opening = self.open_uni().await.map_err(io::Error::other)?;
        opening.await.map_err(io::Error::other)
    }
    fn quic(&self) -> &quinn::Connection {
        self.quic_connection()
    }
    fn takes_frame_datagrams(&self) -> bool {
        false
    }
}

/// The stream's header is written when it opens; the frame goes straight to quinn after it.
impl FrameStream for wtransport::SendStream {
    fn quic(&mut self) -> &mut quinn::SendStream {
        self.quic_stream_mut()
    }
}

/// Serves one connection that negotiated HTTP/3.
pub(crate) async fn serve(
    connecting: quinn::Connecting,
    peer: SocketAddr,
    door: &Door,
    rules: &WebRules,
) -> anyhow::Result<()> {
    // A peer that finishes the QUIC handshake but never asks for a session would otherwise
    // hold its place under the listener's limit for as long as it answers keep-alives.
    let asked = IncomingSessionFuture::with_quic_connecting(connecting);
    let Ok(req) = tokio::time::timeout(CONTROL_TIMEOUT, asked).await else {
        door.counters.handshake_rejected.inc("timeout");
        anyhow::bail!("no WebTransport session request within {CONTROL_TIMEOUT:?}");
    };
    let req = req?;
    if req.path().split('?').next() != Some(PATH) {
        door.counters.handshake_rejected.inc("webtransport_path");
        if let Some(held) = door.log.allow() {
            warn!(%peer, path = req.path(), held, "WebTransport session for an unknown path refused");
        }
        req.not_found().await;
        return Ok(());
    }
    if !rules.allows(req.origin(), req.authority()) {
        door.counters.handshake_rejected.inc("origin");
        if let Some(held) = door.log.allow() {
            warn!(%peer, origin = ?req.origin(), held, "WebTransport session from another site refused");
        }
        req.forbidden().await;
        return Ok(());
    }
    let conn = req.accept().await?;
    door.counters.connections.inc("webtransport");
    crate::quic::run(conn, peer, door, crate::quic::Carriage::Streams).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_only_from_our_page_on_the_same_host() {
        let r = WebRules {
            http_port: Some(8890),
        };
        assert!(r.allows(None, "127.0.0.1:4433"));
        assert!(r.allows(Some("http://127.0.0.1:8890"), "127.0.0.1:4433"));
        assert!(r.allows(Some("https://Tablet.local:8890/"), "tablet.local:4433"));
        assert!(r.allows(Some("http://[::1]:8890"), "[::1]:4433"));
        assert!(!r.allows(Some("http://127.0.0.1:9999"), "127.0.0.1:4433"));
        assert!(!r.allows(Some("https://evil.example:8890"), "127.0.0.1:4433"));
        assert!(!r.allows(Some("https://evil.example"), "evil.example:4433"));
        assert!(!r.allows(Some("null"), "127.0.0.1:4433"));
        let none = WebRules { http_port: None };
        assert!(none.allows(None, "127.0.0.1:4433"));
        assert!(!none.allows(Some("http://127.0.0.1:8890"), "127.0.0.1:4433"));
    }
}
