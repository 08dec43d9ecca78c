//! A real application on a real X server: xterm, in colour, is moved across the screen and
//! scrolls its output, and after each step the colour picture a viewer holds equals the X
//! screen pixel for pixel (read here with GetImage and turned into the planes G, R − G, B − G
//! by this test's own code). Skipped, with a message, only when Xvfb, xterm or xdotool is
//! missing (`make setup` installs them).

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use framewire_client::viewer::{run_viewer, ViewerOptions, ViewerStats};
use framewire_server::{Protocol, Server, ServerConfig, SourceSpec};
use framewire_x11::xvfb::Xvfb;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ConnectionExt as _, ImageFormat};

const W: u32 = 640;
const H: u32 = 480;

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The X screen now, as the colour planes the spec defines, computed here.
fn screen_planes(display: &str) -> Vec<u8> {
    let (conn, screen) = x11rb::connect(Some(display)).unwrap();
    let root = conn.setup().roots[screen].root;
    let img = conn
        .get_image(ImageFormat::Z_PIXMAP, root, 0, 0, W as u16, H as u16, !0)
        .unwrap()
        .reply()
        .unwrap();
    let n = (W * H) as usize;
    let mut out = vec![0u8; 3 * n];
    for (i, px) in img.data.chunks_exact(4).enumerate() {
        let (b, g, r) = (px[0], px[1], px[2]);
        out[i] = g;
        out[n + i] = r.wrapping_sub(g);
        out[2 * n + i] = b.wrapping_sub(g);
    }
    out
}

type Latest = Arc<Mutex<Option<Vec<u8>>>>;

/// Waits until the viewer's colour picture equals the X screen (read again each time, since
/// the application may still be drawing).
async fn converge(display: &str, latest: &Latest, what: &str) {
    let until = Instant::now() + Duration::from_secs(15);
    let want = loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let screen = screen_planes(display);
        if latest.lock().unwrap().as_deref() == Some(&screen[..]) {
            // Coloured text and background, not a blank screen.
            let n = (W * H) as usize;
            assert!(
                screen[n..].iter().any(|&d| d != 0),
                "{what}: no colour on the screen"
            );
            return;
        }
        if Instant::now() > until {
            break screen;
        }
    };
    let got = latest.lock().unwrap().clone().unwrap_or_default();
    let differ = got.iter().zip(&want).filter(|(a, b)| a != b).count();
    panic!("{what}: the viewer's colour picture never equalled the screen ({differ} bytes differ)");
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_and_scrolled_xterm_arrives_in_colour_pixel_for_pixel() {
    for tool in ["xterm", "xdotool"] {
        if !have(tool) {
            eprintln!("SKIPPED: {tool} is not installed (make setup installs it)");
            return;
        }
    }
    let x = match Xvfb::start(W, H) {
        Ok(x) => x,
        Err(e) => return eprintln!("SKIPPED: {e}"),
    };
    let dir = std::env::temp_dir().join(format!("fw-real-app-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let go = dir.join("go");
    // Coloured lines (ANSI colours), then more of them, one every 20 ms, once told to go.
    let script = format!(
        "i=0; while [ $i -lt 30 ]; do printf '\\033[3%dmline %d \\033[4%dm colour \\033[0m text\\n' $((i % 7 + 1)) $i $((i % 6 + 1)); i=$((i+1)); done; \
         while [ ! -e {go} ]; do sleep 0.05; done; \
         while [ $i -lt 80 ]; do printf '\\033[3%dmmore %d\\033[0m\\n' $((i % 7 + 1)) $i; i=$((i+1)); sleep 0.02; done; sleep 600",
        go = go.display()
    );
    let _xterm = Kill(
        Command::new("xterm")
            .args(["-display", &x.display, "-geometry", "48x14+10+10"])
            .args([
                "-bg", "#203048", "-fg", "#e8d060", "-e", "sh", "-c", &script,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let wid = String::from_utf8(
        Command::new("xdotool")
            .args(["search", "--sync", "--onlyvisible", "--class", "xterm"])
            .env("DISPLAY", &x.display)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let wid = wid
        .split_whitespace()
        .next()
        .expect("the xterm window")
        .to_string();
    let server = Server::start(ServerConfig {
        source: SourceSpec::X11 {
            display: Some(x.display.clone()),
            region: None,
            cursor: false,
        },
        resolution: framewire_capture::Resolution {
            width: W,
            height: H,
        },
        v1_addr: Some(([127, 0, 0, 1], 0).into()),
        daylight_addr: None,
        ..ServerConfig::default()
    })
    .await
    .unwrap();
    let latest: Latest = Default::default();
    let (l, addr) = (latest.clone(), server.v1_addr.unwrap());
    let viewer = tokio::spawn(async move {
        let stats = Arc::new(Mutex::new(ViewerStats::default()));
        let opts = ViewerOptions::new(addr.to_string(), Protocol::V1).with_colour(true);
        run_viewer(opts, stats, move |ev| {
            assert_eq!(
                ev.checksum_ok,
                Some(true),
                "checksum mismatch at {}",
                ev.seq
            );
            assert_eq!(ev.planes, 3);
            *l.lock().unwrap() = Some(ev.picture.to_vec());
            true
        })
        .await
    });
    let xdotool = |args: &[&str]| {
        let ok = Command::new("xdotool")
            .args(args)
            .env("DISPLAY", &x.display)
            .status()
            .unwrap()
            .success();
        assert!(ok, "xdotool {args:?}");
    };
    converge(&x.display, &latest, "the first picture").await;
    // Dragged across the screen in steps, as a window manager would move it.
    for (px, py) in [(60, 40), (130, 90), (250, 160), (300, 220)] {
        xdotool(&["windowmove", &wid, &px.to_string(), &py.to_string()]);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    converge(&x.display, &latest, "after the moves").await;
    // Its output scrolls.
    std::fs::write(&go, b"").unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    converge(&x.display, &latest, "after the scroll").await;
    // Moved back while the screen holds still otherwise.
    xdotool(&["windowmove", &wid, "20", "30"]);
    converge(&x.display, &latest, "after the move back").await;
    assert!(server.counter("colour_frames") > 5);
    viewer.abort();
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
