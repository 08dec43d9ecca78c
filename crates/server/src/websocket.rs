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

use crate::server::{serve_v1, Ctx};

/// Bytes in flight between the WebSocket and the session, each way.
const PIPE: usize = 256 * 1024;

pub async fn bridge(ws: WebSocket, peer: SocketAddr, ctx: Arc<Ctx>) {
    ctx.shared.counters.inc("connections.websocket");
    let (near, far) = tokio::io::duplex(PIPE);
    let session_ctx = ctx.clone();
    let session = tokio::spawn(async move {
        if let Err(e) = serve_v1(far, peer, &session_ctx).await {
            debug!(%peer, error = %e, "websocket session ended with an error");
        }
    });
    let (mut from_session, mut to_session) = tokio::io::split(near);
    let (mut sink, mut stream) = ws.split();
    let counters = ctx.shared.counters.clone();
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
                    counters.inc("websocket_rejected.text_message");
                    warn!(%peer, "websocket sent a text message; v1 travels in binary messages");
                    break;
                }
                Err(e) => {
                    debug!(%peer, error = %e, "websocket read failed");
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
