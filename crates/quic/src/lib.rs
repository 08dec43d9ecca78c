//! framewire over QUIC (`quinn`, TLS 1.3 with the ring provider): what both ends need before a
//! v1 session runs over a connection.
//!
//! | file | what it holds |
//! |---|---|
//! | `identity.rs` | the host's self-signed certificate: made on first run, kept in the config directory, renewed before it runs out; its SHA-256 fingerprint |
//! | `pin.rs` | the viewer's check of the host: the certificate must have the fingerprint from the link |
//! | `congestion.rs` | QUIC's congestion window: BBR's, kept for a while when a loss would drop it to the bytes in flight, never above the bound the host sets from its own measure of the path, nor, under that, below the host's byte budget |
//! | `endpoint.rs` | the transport settings, host and viewer endpoints built from them, and the HTTP port's TLS |
//! | `shards.rs` | frames as QUIC datagrams: split into shards with Reed-Solomon recovery shards, and put back together from any enough of them |
//!
//! How v1 runs over a connection: the viewer opens one bidirectional stream for everything but
//! frames (Hello, Welcome, Ack, Ping, Pong, Input, Goodbye, and a StreamDesc sent alone); the
//! host sends each frame on its own unidirectional stream, so a lost packet delays only its own
//! frame, and a frame made stale by a newer one that does not need it is reset instead of
//! retransmitted. Or, when the host is told so and the viewer takes them, frames go as
//! datagrams with recovery shards (`shards.rs`): a lost packet is rebuilt from the others, not
//! retransmitted. See `spec/PROTOCOL.md`, "QUIC" and "Frames in datagrams".

pub mod congestion;
mod endpoint;
mod identity;
mod pin;
pub mod shards;

pub use endpoint::{client_endpoint, https_config, server_config, server_endpoint, ALPN, H3_ALPN};
pub use identity::{config_dir, Fingerprint, Identity};
pub use pin::PinnedHost;

/// Codes a stream or connection is closed with (application error codes).
pub mod codes {
    /// The frame on this stream was superseded by a newer one that does not need it.
    pub const SUPERSEDED: u32 = 1;
    /// The session ended normally.
    pub const DONE: u32 = 0;
}
