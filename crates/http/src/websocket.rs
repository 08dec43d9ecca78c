//! A browser's WebSocket carried into an ordinary framewire v1 session.
//!
//! Browsers cannot open TCP sockets, so the page speaks v1 inside WebSocket binary messages:
//! the messages' bytes, concatenated, are exactly the v1 byte stream (a message may hold part
//! of a packet or several). The socket is joined to the session through an in-process pipe of
//! bounded size, so the session (handshake, flow control, ACKs, subscriber queues) is the same
//! code a TCP viewer gets, and back-pressure passes through: a browser that reads slowly fills
//! the pipe, the session's writes wait, and its flow control skips frames as for TCP.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket};
use bytes::BytesMut;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::{debug, warn};

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, State};
use axum::http::header::{HOST, ORIGIN};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;

use crate::HttpCtx;

/// Bytes in flight between the WebSocket and the session, each way.
const PIPE: usize = 256 * 1024;
/// The largest message (and frame) a browser may send.
pub const MAX_MESSAGE: usize = 64 * 1024;

/// The host part of an `Origin` header (`http://host:port` → `host:port`).
fn origin_host(origin: &str) -> &str {
    origin
        .split_once("://")
        .map(|(_, h)| h)
        .unwrap_or(origin)
        .trim_end_matches('/')
}

/// Refuses cross-site WebSockets: a page from another site, open in the user's browser, must
/// not be able to watch this screen through it. Non-browser clients send no Origin.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    origin_host(origin).eq_ignore_ascii_case(host)
}

pub(crate) async fn upgrade(
    State(ctx): State<Arc<HttpCtx>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Extension(permit): Extension<crate::HttpPermit>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if !same_origin(&headers) {
        ctx.counters.websocket_rejected.inc("origin");
        if let Some(held) = ctx.log.allow() {
            warn!(%peer, origin = ?headers.get(ORIGIN), held, "websocket from another site refused");
        }
        return (StatusCode::FORBIDDEN, "cross-site WebSocket refused\n").into_response();
    }
    // A browser sends small messages (its Hello, ACKs, input): a message or frame beyond
    // 64 KiB is refused before it is buffered, authenticated or not.
    ws.max_message_size(MAX_MESSAGE)
        .max_frame_size(MAX_MESSAGE)
        .read_buffer_size(16 * 1024)
        .on_upgrade(move |sock| async move {
            // The socket keeps its place under the HTTP listener's limit while it lives.
            let _permit = permit;
            bridge(sock, peer, ctx).await
        })
}

async fn bridge(ws: WebSocket, peer: SocketAddr, ctx: Arc<HttpCtx>) {
    ctx.counters.connections.inc("websocket");
    let (near, far) = tokio::io::duplex(PIPE);
    let session = tokio::spawn(ctx.door.clone().serve(far, peer));
    let (mut from_session, mut to_session) = tokio::io::split(near);
    let (mut sink, mut stream) = ws.split();
    let counters = ctx.counters.clone();
    let up = async {
        while let Some(m) = stream.next().await {
            match m {
                Ok(Message::Binary(b)) => {
                    if to_session.write_all(&b).await.is_err() {
                        break;
                    }
                }
                Ok(Message::Close(_)) => break,
                Ok(Message::Ping(_) | Message::Pong(_)) => {}
                Ok(Message::Text(_)) => {
                    counters.websocket_rejected.inc("text_message");
                    if let Some(held) = ctx.log.allow() {
                        warn!(%peer, held, "websocket sent a text message; v1 travels in binary messages");
                    }
                    break;
                }
                Err(e) => {
                    if e.to_string().contains("too long") || e.to_string().contains("too big") {
                        counters.websocket_rejected.inc("too_large");
                        if let Some(held) = ctx.log.allow() {
                            warn!(%peer, error = %e, held, "websocket message beyond {MAX_MESSAGE} bytes refused");
                        }
                    } else {
                        debug!(%peer, error = %e, "websocket read failed");
                    }
                    break;
                }
            }
        }
        // The session sees end of stream, as when a TCP viewer closes.
        let _ = to_session.shutdown().await;
    };
    let down = async {
        let mut buf = BytesMut::with_capacity(PIPE);
        loop {
            buf.reserve(PIPE);
            match from_session.read_buf(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let msg = Message::Binary(buf.split().freeze());
                    if sink.send(msg).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = sink.send(Message::Close(None)).await;
    };
    // Whichever side ends first ends the connection.
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
    // Closing the pipe ends the session the way a closed socket does, so it unregisters the
    // viewer and counts as usual.
    drop((from_session, to_session));
    if tokio::time::timeout(std::time::Duration::from_secs(5), session)
        .await
        .is_err()
    {
        warn!(%peer, "websocket session did not end within 5 s of its socket closing");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(origin: Option<&str>, host: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(HOST, host.parse().unwrap());
        if let Some(o) = origin {
            h.insert(ORIGIN, o.parse().unwrap());
        }
        h
    }

    #[test]
    fn websockets_only_from_the_same_site() {
        assert!(same_origin(&headers(None, "127.0.0.1:8890")));
        assert!(same_origin(&headers(
            Some("http://127.0.0.1:8890"),
            "127.0.0.1:8890"
        )));
        assert!(same_origin(&headers(
            Some("http://Tablet.local:8890/"),
            "tablet.local:8890"
        )));
        assert!(!same_origin(&headers(
            Some("http://evil.example"),
            "127.0.0.1:8890"
        )));
        assert!(!same_origin(&headers(
            Some("http://127.0.0.1:9999"),
            "127.0.0.1:8890"
        )));
        assert!(!same_origin(&headers(Some("null"), "127.0.0.1:8890")));
    }
}
