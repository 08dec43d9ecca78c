//! The native viewer (`framewire view`) in a real window on Xvfb: what the window shows, read
//! back from the X server, is the picture a verifying headless viewer holds, pixel for pixel.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use framewire_capture::{FrameSource, Scene};
use framewire_client::viewer::{run_viewer, ViewerOptions, ViewerStats};
use framewire_server::{Protocol, Server, ServerConfig, SourceSpec};
use framewire_x11::{Region, X11Source};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_shows_exactly_the_stream() {
    window_case(false).await
}

/// The same in colour (the default): the window's pixels, made into the planes G, R − G,
/// B − G here, equal the verified colour picture.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_shows_exactly_the_colour_stream() {
    window_case(true).await
}

async fn window_case(colour: bool) {
    let xvfb = match framewire_x11::xvfb::Xvfb::start(1024, 768) {
        Ok(x) => x,
        Err(e) => return eprintln!("SKIPPED: {e}"),
    };
    let display = xvfb.display.clone();
    let server = Server::start(ServerConfig {
        source: SourceSpec::Synthetic(if colour { Scene::Mixed } else { Scene::Idle }),
        resolution: framewire_capture::Resolution {
            width: 400,
            height: 300,
        },
        v1_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        daylight_addr: None,
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let port = server.v1_addr.unwrap().port().to_string();
    let mut view = Command::new(env!("CARGO_BIN_EXE_framewire"))
        .args(["view", "--display", &display, "--port", &port])
        .args(if colour { &[][..] } else { &["--grey"][..] })
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The reference: a headless viewer that verifies every checksum.
    let latest: Arc<Mutex<Option<Vec<u8>>>> = Default::default();
    let l = latest.clone();
    let task = tokio::spawn(run_viewer(
        ViewerOptions::new(server.v1_addr.unwrap().to_string(), Protocol::V1).with_colour(colour),
        Arc::new(Mutex::new(ViewerStats::default())),
        move |ev| {
            assert_ne!(ev.checksum_ok, Some(false));
            *l.lock().unwrap() = Some(ev.picture.to_vec());
            true
        },
    ));
    // No window manager: the window sits at (0, 0). Read it back from the X server.
    let region = Region {
        x: 0,
        y: 0,
        width: 400,
        height: 300,
    };
    let until = Instant::now() + Duration::from_secs(15);
    let mut last_diff = usize::MAX;
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let shown: Vec<u8> = {
            let mut src = X11Source::open(Some(&display), Some(region), false).unwrap();
            let c = src.capture().unwrap();
            if colour {
                let n = c.bgra.len() / 4;
                let mut planes = vec![0u8; 3 * n];
                for (i, p) in c.bgra.chunks_exact(4).enumerate() {
                    planes[i] = p[1];
                    planes[n + i] = p[2].wrapping_sub(p[1]);
                    planes[2 * n + i] = p[0].wrapping_sub(p[1]);
                }
                planes
            } else {
                // The window draws grey as equal B, G and R: any channel is the grey value.
                c.bgra.chunks_exact(4).map(|p| p[0]).collect()
            }
        };
        if let Some(want) = latest.lock().unwrap().clone() {
            last_diff = shown.iter().zip(&want).filter(|(a, b)| a != b).count();
            if last_diff == 0 {
                assert!(
                    want.iter().any(|&v| v != want[0]),
                    "a real picture, not a flat one"
                );
                break;
            }
        }
        assert!(
            Instant::now() < until,
            "the window never matched the stream ({last_diff} pixels differ)"
        );
    }
    let _ = view.kill();
    let _ = view.wait();
    task.abort();
    server.shutdown().await;
    drop(xvfb);
}
