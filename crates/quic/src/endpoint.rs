//! Host and viewer endpoints, with one set of transport settings.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};

use crate::congestion::KeptWindowConfig;
use crate::{Fingerprint, Identity, PinnedHost};

/// The ALPN protocol id of framewire v1 over QUIC.
pub const ALPN: &[u8] = b"framewire/1";
/// HTTP/3's, which browsers ask for to open a WebTransport session: the host's endpoint
/// answers both on one port and tells them apart by this.
pub const H3_ALPN: &[u8] = b"h3";

fn transport() -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.max_idle_timeout(Some(
        quinn::IdleTimeout::try_from(Duration::from_secs(10)).expect("in range"),
    ))
    .keep_alive_interval(Some(Duration::from_secs(1)))
    // One stream per frame: room for every frame a viewer may have in flight, and more.
    .max_concurrent_uni_streams(quinn::VarInt::from_u32(256))
    .max_concurrent_bidi_streams(quinn::VarInt::from_u32(4))
    // A colour keyframe is up to ~6 MB: let one go in a round trip.
    .stream_receive_window(quinn::VarInt::from_u32(16 << 20))
    .receive_window(quinn::VarInt::from_u32(64 << 20))
    // Frames as datagrams: room for many frames, so frames arriving while the viewer is busy
    // decoding are not dropped by quinn before it reads them.
    .datagram_receive_buffer_size(Some(16 << 20))
    .send_window(64 << 20)
    // Frames' streams go in the order they were written, not round-robin: two frames queued
    // on a slow path would otherwise share it and both arrive late, where in order the
    // older one arrives a frame's crossing sooner and the newer no later. The host's
    // estimate of when each frame has crossed counts them in order too. The order is the
    // streams' priorities (the host gives each frame one lower than the one before, its
    // control stream a higher one), packet by packet: with fairness off, quinn finished a
    // stream it had started before any other, so an older frame's lost packets waited for
    // the whole of a newer one. Fairness only shares among streams of equal priority.
    .send_fairness(true)
    // BBR paces to the measured delivery rate and does not take random loss for congestion;
    // Cubic's window collapsed to a few packets at 5 % loss (measured: 8.7 kB, ~4 Mbit/s at
    // 20 ms), far below what the path carried. Its fall to the bytes in flight on a loss is
    // undone for a while (see `congestion.rs`).
    .congestion_controller_factory(Arc::new(KeptWindowConfig(Arc::new(
        quinn::congestion::BbrConfig::default(),
    ))))
    // Segmentation offload: a frame's packets leave in a few system calls, not one each. A
    // 400 kB frame is ~290 packets; on a 1 ms path without it, QUIC's frames spent 3.6 ms
    // crossing by the median (TCP's, offloaded by the kernel, 0.8–3.2), and its p99 was
    // 1.11–1.35 × TCP's by set; with it 2.65 ms and 1.04–1.17 × (BENCHMARKS.md, "Segmentation
    // offload, and recovery shards for the loss seen"). Where a device refuses it, quinn-udp
    // turns it off at the first refused send, whose packets QUIC then recovers as lost.
    .enable_segmentation_offload(true)
    .ack_frequency_config(Some(ack_frequency()));
    Arc::new(t)
}

/// Asks the peer to acknowledge within a millisecond instead of QUIC's default 25 ms
/// (ACK_FREQUENCY, which quinn peers support). The sender's probe timeout includes the peer's
/// maximum ACK delay, doubled with each probe that goes unanswered: after a blackout, that
/// delay is what holds the next picture back. Faster ACKs also detect a lost frame sooner.
fn ack_frequency() -> quinn::AckFrequencyConfig {
    let mut a = quinn::AckFrequencyConfig::default();
    a.max_ack_delay(Some(Duration::from_millis(1)));
    a
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// TLS 1.3 with `id`'s certificate, offering `alpn`.
fn tls_server(id: &Identity, alpn: &[&[u8]]) -> anyhow::Result<rustls::ServerConfig> {
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(vec![id.cert.clone()], id.key.clone_key())
        .context("the host's certificate")?;
    tls.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    Ok(tls)
}

/// The HTTP port's TLS (HTTPS), with the same certificate as QUIC: HTTP/1.1.
pub fn https_config(id: &Identity) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    Ok(Arc::new(tls_server(id, &[b"http/1.1"])?))
}

/// A host's QUIC settings with `id`'s certificate (also for [`quinn::Endpoint::set_server_config`]
/// when the certificate is renewed).
pub fn server_config(id: &Identity) -> anyhow::Result<quinn::ServerConfig> {
    let tls = tls_server(id, &[ALPN, H3_ALPN])?;
    let crypto = QuicServerConfig::try_from(tls).context("QUIC TLS settings")?;
    let mut cfg = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    cfg.transport_config(transport());
    Ok(cfg)
}

/// A host endpoint on `addr` with `id`'s certificate. Needs a tokio runtime.
pub fn server_endpoint(id: &Identity, addr: SocketAddr) -> anyhow::Result<quinn::Endpoint> {
    let cfg = server_config(id)?;
    let sock = udp_socket(addr).with_context(|| format!("binding QUIC on {addr}"))?;
    let runtime = quinn::default_runtime().context("QUIC needs a tokio runtime")?;
    quinn::Endpoint::new(quinn::EndpointConfig::default(), Some(cfg), sock, runtime)
        .with_context(|| format!("starting QUIC on {addr}"))
}

/// Socket buffers asked for: a frame is a burst of hundreds of packets, which the default
/// (about 200 kB) drops on loopback before the reader wakes (measured: 5.7 % of packets lost
/// with a colour picture).
const UDP_BUFFER: usize = 8 << 20;

/// A UDP socket on `addr` with large buffers: forced when the process may (root), else as
/// large as the system allows.
fn udp_socket(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    use std::os::fd::AsRawFd;
    let sock = std::net::UdpSocket::bind(addr)?;
    let fd = sock.as_raw_fd();
    for (force, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        let v = UDP_BUFFER as libc::c_int;
        let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        let p = &v as *const libc::c_int as *const libc::c_void;
        // SAFETY: `fd` is an open socket owned by `sock`; `p` points at a c_int of `len` bytes.
        let forced = unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, force, p, len) } == 0;
        if !forced {
            // SAFETY: as above.
            unsafe { libc::setsockopt(fd, libc::SOL_SOCKET, plain, p, len) };
        }
    }
    Ok(sock)
}

/// A viewer endpoint that accepts only a host whose certificate has `pin`.
pub fn client_endpoint(pin: Fingerprint) -> anyhow::Result<quinn::Endpoint> {
    let mut tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinnedHost::new(pin)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = QuicClientConfig::try_from(tls).context("QUIC TLS settings")?;
    let mut cfg = quinn::ClientConfig::new(Arc::new(crypto));
    cfg.transport_config(transport());
    let bind: SocketAddr = "0.0.0.0:0".parse().expect("literal");
    let sock = udp_socket(bind).context("opening a UDP socket")?;
    let runtime = quinn::default_runtime().context("QUIC needs a tokio runtime")?;
    let mut e = quinn::Endpoint::new(quinn::EndpointConfig::default(), None, sock, runtime)
        .context("starting QUIC")?;
    e.set_default_client_config(cfg);
    Ok(e)
}
