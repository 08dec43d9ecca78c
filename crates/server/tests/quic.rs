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
    std::env::temp_dir().join(format!(
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
