//! framewire v1 over QUIC on loopback: a real server and viewer, the certificate made in a
//! temporary config directory and pinned by its fingerprint. Pictures are checked against the
//! scene rendered independently by the test.

mod common;

use common::expected;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use framewire_capture::Scene;
use framewire_client::viewer::{run_viewer, ViewerOptions, ViewerStats};
use framewire_quic::Fingerprint;
use framewire_server::{Protocol, Server, ServerConfig, ServerHandle, SourceSpec};

const TOKEN: &str = "quic-test-token";

fn temp_dir(name: &str) -> std::path::PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    // Inside target/ (Cargo's directory for integration tests' files), not the system's.
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "fw-quic-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

async fn server(scene: Scene) -> ServerHandle {
    let cfg = ServerConfig {
        source: SourceSpec::Synthetic(scene),
        resolution: framewire_capture::Resolution {
            width: 640,
            height: 480,
        },
        v1_addr: None,
        daylight_addr: None,
        quic_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        quic_dir: Some(temp_dir("cert")),
        token: Some(TOKEN.into()),
        ..ServerConfig::default()
    };
    Server::start(cfg).await.unwrap()
}

fn options(s: &ServerHandle, pin: Fingerprint, token: &str) -> ViewerOptions {
    let mut o = ViewerOptions::new(s.quic_addr.unwrap().to_string(), Protocol::V1);
    o.quic = Some(pin);
    o.token = Some(token.into());
    o
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quic_viewer_reproduces_every_picture_exactly() {
    let scene = Scene::Scroll;
    let s = server(scene).await;
    let mut o = options(&s, s.quic_fingerprint.unwrap(), TOKEN);
    o.max_frames = Some(150);
    let stats = Arc::new(Mutex::new(ViewerStats::default()));
    let (checked, wrong) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (c, w) = (checked.clone(), wrong.clone());
    run_viewer(o, stats.clone(), move |ev| {
        if ev.checksum_ok == Some(true) && ev.seq % 2 == 0 {
            c.fetch_add(1, Ordering::Relaxed);
            let want = expected(scene, ev.width, ev.height, ev.seq);
            if !ev.picture.equals(&want) {
                w.fetch_add(1, Ordering::Relaxed);
            }
        }
        true
    })
    .await
    .unwrap();
    let st = std::mem::take(&mut *stats.lock().unwrap());
    assert_eq!(st.protocol, "framewire-quic");
    assert_eq!(st.frames, 150);
    assert_eq!(st.checksum_failures + st.decode_errors, 0, "{}", st.line());
    assert!(checked.load(Ordering::Relaxed) >= 50, "{}", st.line());
    assert_eq!(
        wrong.load(Ordering::Relaxed),
        0,
        "pictures differ from the scene"
    );
    assert!(
        st.deltas > 100,
        "frames after the first are deltas: {}",
        st.line()
    );
    s.shutdown().await;
}

/// A colour viewer over QUIC (named bases, each frame on a stream of its own): every checksum,
/// over the colour picture, verifies. (Deltas made for one viewer against the picture it
/// acknowledged, with moved rectangles, are checked across loss in
/// `crates/session/tests/lossy.rs`; on loopback most frames are the shared delta.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quic_colour_viewer_verifies_every_picture() {
    let s = server(Scene::Scroll).await;
    let mut o = options(&s, s.quic_fingerprint.unwrap(), TOKEN).with_colour(true);
    o.max_frames = Some(150);
    let stats = Arc::new(Mutex::new(ViewerStats::default()));
    let verified = Arc::new(AtomicU64::new(0));
    let v = verified.clone();
    run_viewer(o, stats.clone(), move |ev| {
        if ev.checksum_ok == Some(true) && ev.planes == 3 {
            v.fetch_add(1, Ordering::Relaxed);
        }
        true
    })
    .await
    .unwrap();
    let st = std::mem::take(&mut *stats.lock().unwrap());
    assert_eq!(st.frames, 150);
    assert_eq!(st.checksum_failures + st.decode_errors, 0, "{}", st.line());
    assert!(st.deltas > 100, "{}", st.line());
    assert!(verified.load(Ordering::Relaxed) >= 140, "{}", st.line());
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_with_another_fingerprint_is_refused() {
    let s = server(Scene::Typing).await;
    let mut other = s.quic_fingerprint.unwrap();
    other.0[0] ^= 1;
    let stats = Arc::new(Mutex::new(ViewerStats::default()));
    let e = run_viewer(options(&s, other, TOKEN), stats.clone(), |_| true)
        .await
        .unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("fingerprint"), "{msg}");
    assert_eq!(stats.lock().unwrap().frames, 0);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_refused_over_quic() {
    let s = server(Scene::Typing).await;
    let stats = Arc::new(Mutex::new(ViewerStats::default()));
    let pin = s.quic_fingerprint.unwrap();
    let e = run_viewer(options(&s, pin, "not-the-token"), stats.clone(), |_| true)
        .await
        .unwrap_err();
    let msg = format!("{e:#}");
    assert!(msg.contains("code 2"), "refused as unauthorized: {msg}");
    assert_eq!(stats.lock().unwrap().frames, 0);
    s.shutdown().await;
}

/// A WebTransport client pinned to the host's certificate, as a browser with
/// `serverCertificateHashes` is.
fn web_client(
    pin: Fingerprint,
) -> wtransport::Endpoint<wtransport::endpoint::endpoint_side::Client> {
    let cfg = wtransport::ClientConfig::builder()
        .with_bind_default()
        .with_server_certificate_hashes([wtransport::tls::Sha256Digest::new(pin.0)])
        .build();
    wtransport::Endpoint::client(cfg).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webtransport_sessions_for_another_path_or_from_another_site_are_refused() {
    let s = server(Scene::Idle).await;
    let port = s.quic_addr.unwrap().port();
    let client = web_client(s.quic_fingerprint.unwrap());
    let wrong_path = client
        .connect(format!("https://127.0.0.1:{port}/elsewhere"))
        .await;
    assert!(wrong_path.is_err(), "a session for another path");
    // This server has no HTTP port, so no page of its own: a browser's session is refused.
    let from_a_page = wtransport::endpoint::ConnectOptions::builder(format!(
        "https://127.0.0.1:{port}/framewire"
    ))
    .add_header("origin", "https://evil.example")
    .build();
    assert!(
        client.connect(from_a_page).await.is_err(),
        "a session from another site"
    );
    assert_eq!(s.counter("handshake_rejected.webtransport_path"), 1);
    assert_eq!(s.counter("handshake_rejected.origin"), 1);
    // A client that sends no Origin (not a browser) is let in to the front door.
    let ok = client
        .connect(format!("https://127.0.0.1:{port}/framewire"))
        .await;
    assert!(ok.is_ok(), "{:?}", ok.err());
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_speaks_http3_but_never_asks_for_a_session_is_closed() {
    let s = server(Scene::Idle).await;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(framewire_quic::PinnedHost::new(
            s.quic_fingerprint.unwrap(),
        )))
        .with_no_client_auth();
    tls.alpn_protocols = vec![framewire_quic::H3_ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut ep = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    ep.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    let conn = ep
        .connect(s.quic_addr.unwrap(), "localhost")
        .unwrap()
        .await
        .unwrap();
    // quinn answers the host's keep-alives, so only the host's deadline ends this.
    let closed = tokio::time::timeout(std::time::Duration::from_secs(15), conn.closed()).await;
    assert!(
        closed.is_ok(),
        "the host kept a silent HTTP/3 connection open"
    );
    assert_eq!(s.counter("handshake_rejected.timeout"), 1);
    s.shutdown().await;
}

/// `GET path` on a plain-HTTP loopback port: the status line and the body.
async fn http_get(addr: SocketAddr, path: &str) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

fn hex(f: Fingerprint) -> String {
    f.0.iter().map(|b| format!("{b:02x}")).collect()
}

/// A host that runs longer than its certificate renews it while running: QUIC shows the new
/// one at once (a viewer pinned to the old fingerprint is refused, one pinned to the new one
/// gets exact frames), and the page reads the new hash from `/api/webtransport`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_about_to_run_out_is_renewed_while_the_host_runs() {
    let dir = temp_dir("renew");
    let cfg = ServerConfig {
        source: SourceSpec::Synthetic(Scene::Typing),
        resolution: framewire_capture::Resolution {
            width: 320,
            height: 240,
        },
        v1_addr: None,
        daylight_addr: None,
        quic_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        http_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        quic_dir: Some(dir.clone()),
        token: Some(TOKEN.into()),
        ..ServerConfig::default()
    };
    let s = Server::start(cfg).await.unwrap();
    let old = s.quic_fingerprint.unwrap();
    let http = s.http_addr.unwrap();
    let (status, body) = http_get(http, "/api/webtransport").await;
    assert!(status.contains("200"), "{status}");
    assert!(body.contains(&hex(old)), "{body}");

    // Not due yet: nothing changes.
    assert_eq!(s.renew_certificate().unwrap(), None);
    assert_eq!(s.current_fingerprint(), Some(old));

    // An hour left: the next check renews it.
    let soon = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    std::fs::write(dir.join("quic-cert.expires"), soon.to_string()).unwrap();
    let new = s.renew_certificate().unwrap().expect("renewed");
    assert_ne!(new, old);
    assert_eq!(s.current_fingerprint(), Some(new));

    let (_, body) = http_get(http, "/api/webtransport").await;
    assert!(
        body.contains(&hex(new)) && !body.contains(&hex(old)),
        "{body}"
    );

    let stats = Arc::new(Mutex::new(ViewerStats::default()));
    let e = run_viewer(options(&s, old, TOKEN), stats.clone(), |_| true)
        .await
        .unwrap_err();
    assert!(format!("{e:#}").contains("fingerprint"), "{e:#}");

    let mut o = options(&s, new, TOKEN);
    o.max_frames = Some(20);
    let stats = Arc::new(Mutex::new(ViewerStats::default()));
    run_viewer(o, stats.clone(), |_| true).await.unwrap();
    let st = std::mem::take(&mut *stats.lock().unwrap());
    assert_eq!(st.frames, 20, "{}", st.line());
    assert_eq!(st.checksum_failures + st.decode_errors, 0, "{}", st.line());
    s.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}
