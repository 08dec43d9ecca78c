//! Whole-system runs over loopback: a real server, real sockets, several viewers of both
//! protocols. Pixels are checked against the scene rendered independently by the test.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use framewire_capture::{Scene, SyntheticSource};
use framewire_client::viewer::{run_viewer, ViewerOptions, ViewerStats};
use framewire_codec::checksum::picture_checksum;
use framewire_codec::grey::{to_grey_scalar, PixelOrder};
use framewire_proto::v1::{self, goodbye, Packet, Role};
use framewire_server::{Protocol, Server, ServerConfig, ServerHandle, SourceSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

fn temp_path(name: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "fw-test-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

fn config(scene: Scene, w: u32, h: u32) -> ServerConfig {
    ServerConfig {
        source: SourceSpec::Synthetic(scene),
        resolution: framewire_capture::Resolution {
            width: w,
            height: h,
        },
        v1_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        daylight_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        ..ServerConfig::default()
    }
}

/// The grey picture of frame `seq` of a scene, computed independently of the server.
fn expected(scene: Scene, w: u32, h: u32, seq: u64) -> Vec<u8> {
    let mut src = SyntheticSource::new(scene, w, h);
    let mut g = vec![0u8; (w * h) as usize];
    to_grey_scalar(src.render(seq), PixelOrder::Bgra, &mut g);
    g
}

#[derive(Debug, Clone)]
struct Seen {
    seq: u64,
    keyframe: bool,
    unchanged: bool,
    checksum: u64,
    ok: Option<bool>,
}

struct TestViewer {
    stats: Arc<Mutex<ViewerStats>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    mismatches: Arc<AtomicU64>,
    paused: Arc<std::sync::atomic::AtomicBool>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl TestViewer {
    /// Starts a viewer that records every frame; v1 viewers also compare each picture with
    /// the independently rendered source frame of the same number.
    fn start(addr: SocketAddr, proto: Protocol, scene: Scene, token: Option<&str>) -> TestViewer {
        let mut opts = ViewerOptions::new(addr.to_string(), proto);
        opts.token = token.map(str::to_string);
        Self::start_with(opts, scene)
    }

    fn start_with(opts: ViewerOptions, scene: Scene) -> TestViewer {
        let proto = opts.protocol;
        let stats = Arc::new(Mutex::new(ViewerStats::default()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mismatches = Arc::new(AtomicU64::new(0));
        let paused = opts.paused.clone();
        let (s, m) = (seen.clone(), mismatches.clone());
        let task = tokio::spawn(run_viewer(opts, stats.clone(), move |ev| {
            if proto == Protocol::V1
                && ev.seq % 3 == 0
                && !ev
                    .picture
                    .equals(&expected(scene, ev.width, ev.height, ev.seq))
            {
                m.fetch_add(1, Ordering::Relaxed);
            }
            s.lock().unwrap().push(Seen {
                seq: ev.seq,
                keyframe: ev.keyframe,
                unchanged: ev.unchanged,
                checksum: picture_checksum(&ev.picture.to_vec(), ev.width as usize),
                ok: ev.checksum_ok,
            });
            true
        }));
        TestViewer {
            stats,
            seen,
            mismatches,
            paused,
            task,
        }
    }

    fn frames(&self) -> u64 {
        self.stats.lock().unwrap().frames
    }
    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn wait_for(what: &str, secs: f64, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs_f64(secs);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Daylight viewers cannot verify checksums; the server's frame trace says what it sent them.
fn daylight_trace(path: &PathBuf) -> HashSet<(u64, u64)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("daylight "))
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (
                f[2].parse().unwrap(),
                u64::from_str_radix(f[3], 16).unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_viewers_of_both_protocols_reproduce_every_scene_exactly() {
    for scene in Scene::ALL {
        let (w, h) = (320, 240);
        let trace = temp_path("trace");
        let mut cfg = config(scene, w, h);
        cfg.trace_frames = Some(trace.clone());
        let server = Server::start(cfg).await.unwrap();
        let (a, d) = (server.v1_addr.unwrap(), server.daylight_addr.unwrap());
        let viewers = [
            TestViewer::start(a, Protocol::V1, scene, None),
            TestViewer::start(a, Protocol::V1, scene, None),
            TestViewer::start(d, Protocol::Daylight, scene, None),
            TestViewer::start(d, Protocol::Daylight, scene, None),
        ];
        wait_for("30 frames at each v1 viewer", 20.0, || {
            viewers[..2].iter().all(|v| v.frames() >= 30)
        })
        .await;
        wait_for("a frame at each daylight viewer", 20.0, || {
            viewers[2..].iter().all(|v| v.frames() >= 1)
        })
        .await;
        server.shutdown().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        let sent = daylight_trace(&trace);
        for (i, v) in viewers.iter().enumerate() {
            v.task.abort();
            let seen = v.seen();
            let st = v.stats.lock().unwrap().clone();
            assert!(
                seen[0].keyframe,
                "{} viewer {i}: first frame must be a keyframe",
                scene.name()
            );
            assert_eq!(st.checksum_failures, 0, "{} viewer {i}", scene.name());
            assert_eq!(st.decode_errors, 0, "{} viewer {i}", scene.name());
            assert_eq!(
                v.mismatches.load(Ordering::Relaxed),
                0,
                "{} viewer {i}: picture differs from the source",
                scene.name()
            );
            if i < 2 {
                assert!(
                    seen.iter().all(|s| s.ok == Some(true)),
                    "{} viewer {i}",
                    scene.name()
                );
            } else {
                for s in &seen {
                    assert!(
                        sent.contains(&(s.seq, s.checksum)),
                        "{} daylight viewer {i}: frame {} is not a picture the host sent",
                        scene.name(),
                        s.seq
                    );
                }
            }
        }
        if scene == Scene::Scroll {
            // framewire viewers get row deltas (a shift and the exposed rows); Daylight viewers
            // get full-frame XOR deltas of the same pictures, which are far larger.
            let mean = |v: &TestViewer| {
                let s = v.stats.lock().unwrap();
                s.bytes as f64 / s.frames as f64
            };
            let (rows, full) = (mean(&viewers[0]), mean(&viewers[2]));
            assert!(
                rows * 4.0 < full,
                "row deltas {rows:.0} B/frame vs full deltas {full:.0} B/frame"
            );
        }
        if scene == Scene::Idle {
            // An idle screen sends explicit "unchanged" frames, never compressed zero deltas.
            assert!(viewers[0].seen().iter().filter(|s| s.unchanged).count() >= 20);
        }
        let _ = std::fs::remove_file(trace);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_viewer_stops_nobody_and_resyncs_without_a_keyframe() {
    let scene = Scene::Scroll;
    let server = Server::start(config(scene, 640, 480)).await.unwrap();
    let (a, d) = (server.v1_addr.unwrap(), server.daylight_addr.unwrap());
    let slow = TestViewer::start(a, Protocol::V1, scene, None);
    let fast = TestViewer::start(a, Protocol::V1, scene, None);
    let dl = TestViewer::start(d, Protocol::Daylight, scene, None);
    wait_for("viewers to start", 10.0, || {
        slow.frames() >= 10 && fast.frames() >= 10
    })
    .await;
    slow.paused.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (f0, d0, c0, s0) = (
        fast.frames(),
        dl.frames(),
        server.counter("frames_captured"),
        slow.frames(),
    );
    // While one viewer reads nothing, the source and the other viewers carry on (90 frames
    // in 1.5 s at 60 fps; at least half of that on a loaded test machine).
    wait_for("the source and the other viewers to carry on", 1.5, || {
        server.counter("frames_captured") - c0 >= 45
            && fast.frames() - f0 >= 45
            && dl.frames() - d0 >= 45
    })
    .await;
    assert!(
        server.counter("frames_captured") - c0 >= 45,
        "capture slowed down"
    );
    assert!(
        fast.frames() - f0 >= 45,
        "fast viewer got {} frames",
        fast.frames() - f0
    );
    assert!(
        dl.frames() - d0 >= 45,
        "daylight viewer got {} frames",
        dl.frames() - d0
    );
    slow.paused.store(false, Ordering::Relaxed);
    wait_for("the slow viewer to catch up", 10.0, || {
        slow.frames() >= s0 + 60
    })
    .await;
    let seen = slow.seen();
    // Find the first gap in source numbers: the viewer has named bases, so the frame after it
    // is a delta against the picture it held (a viewer without them gets a keyframe; see the
    // session's conversation tests).
    let gap = seen
        .windows(2)
        .position(|w| w[1].seq > w[0].seq + 1)
        .expect("the slow viewer skipped frames");
    assert!(
        !seen[gap + 1].keyframe,
        "first frame after the gap (seq {}) is a keyframe",
        seen[gap + 1].seq
    );
    let st = slow.stats.lock().unwrap().clone();
    // Keyframes only at the start (a source frame encoded as a keyframe for a viewer that
    // joined then goes to every viewer it suits), none from the stall on.
    let keys: Vec<u64> = seen.iter().filter(|s| s.keyframe).map(|s| s.seq).collect();
    assert!(
        keys.iter().all(|&k| k < seen[gap].seq),
        "keyframes at {keys:?} (the stall began after {}): {}",
        seen[gap].seq,
        st.line()
    );
    assert_eq!(st.checksum_failures + st.decode_errors, 0, "{}", st.line());
    assert_eq!(slow.mismatches.load(Ordering::Relaxed), 0);
    // The fast viewer may skip a frame when the test machine is busy (its own in-flight limit),
    // but the slow viewer must not hold it back: skips stay a small fraction of its frames.
    let fs = fast.stats.lock().unwrap().clone();
    assert!(
        fs.drops * 10 <= fs.frames,
        "the fast viewer skipped {} of {} frames",
        fs.drops,
        fs.frames
    );
    assert_eq!(fs.checksum_failures, 0);
    let r = server.report();
    assert!(
        r.skipped_frames > 0,
        "the server did not count the slow viewer's skips"
    );
    // /metrics shows each viewer's flow: one v1 viewer skipped frames and was sent a rebased
    // delta after the gap; the totals hold at least as much.
    let text = framewire_http::render(server.mirror(), server.registry(), None).unwrap();
    let per_viewer = |event: &str| -> Vec<u64> {
        let tag = format!("event=\"{event}\",protocol=\"framewire\"");
        text.lines()
            .filter(|l| l.starts_with("framewire_viewer_flow_events_total{") && l.contains(&tag))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect()
    };
    let (skipped, rebased) = (per_viewer("skipped"), per_viewer("rebased"));
    assert_eq!(skipped.len(), 2, "one series per v1 viewer:\n{text}");
    assert!(
        skipped.iter().any(|&n| n > 0),
        "no viewer's skips in /metrics"
    );
    assert!(
        rebased.iter().any(|&n| n >= 1),
        "no rebased delta in /metrics"
    );
    let total = |event: &str| -> u64 {
        let line = format!("framewire_flow_events_total{{event=\"{event}\"}} ");
        let l = text.lines().find(|l| l.starts_with(&line)).unwrap();
        l.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(total("skipped") >= skipped.iter().sum::<u64>());
    assert!(total("rebased") >= 1);
    for v in [&slow, &fast, &dl] {
        v.task.abort();
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnecting_viewer_gets_a_correct_picture_first() {
    let scene = Scene::Typing;
    let trace = temp_path("trace");
    let mut cfg = config(scene, 320, 240);
    cfg.trace_frames = Some(trace.clone());
    let server = Server::start(cfg).await.unwrap();
    let (a, d) = (server.v1_addr.unwrap(), server.daylight_addr.unwrap());
    for round in 0..3 {
        let v = TestViewer::start(a, Protocol::V1, scene, None);
        let dl = TestViewer::start(d, Protocol::Daylight, scene, None);
        wait_for("frames", 10.0, || v.frames() >= 5 && dl.frames() >= 1).await;
        v.task.abort();
        dl.task.abort();
        let first = &v.seen()[0];
        assert!(
            first.keyframe && first.ok == Some(true),
            "round {round}: {first:?}"
        );
        assert_eq!(
            first.checksum,
            picture_checksum(&expected(scene, 320, 240, first.seq), 320),
            "round {round}"
        );
        let dfirst = dl.seen()[0].clone();
        assert!(dfirst.keyframe);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            daylight_trace(&trace).contains(&(dfirst.seq, dfirst.checksum)),
            "round {round}: daylight first frame is stale"
        );
        // The host's frame trace says the Daylight viewer's first picture is the current one;
        // it must also be a picture of the scene at some frame near now.
    }
    wait_for("viewers to be unregistered", 5.0, || {
        server.viewer_count() == 0
    })
    .await;
    server.shutdown().await;
    let _ = std::fs::remove_file(trace);
}

async fn read_goodbye(s: &mut TcpStream) -> Option<(u16, String)> {
    let mut dec = v1::Decoder::new(v1::DEFAULT_MAX_FRAME_BODY);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        while let Ok(Some(p)) = dec.next_packet() {
            if let Packet::Goodbye { code, reason } = p {
                return Some((code, reason));
            }
        }
        let n = tokio::time::timeout_at(deadline, s.read_buf(dec.buffer_mut()))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            return None;
        }
    }
}

async fn hello(s: &mut TcpStream, token: &str) {
    let h = Packet::Hello {
        version: 1,
        role: Role::Viewer,
        caps: 0,
        stream: String::new(),
        token: token.into(),
    };
    s.write_all(&h.to_bytes()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_rejected_with_a_reason_and_a_counter_while_others_continue() {
    let scene = Scene::Mixed;
    let mut cfg = config(scene, 320, 240);
    cfg.token = Some("s3cret-token".into());
    let server: ServerHandle = Server::start(cfg).await.unwrap();
    let (a, d) = (server.v1_addr.unwrap(), server.daylight_addr.unwrap());
    let good = TestViewer::start(a, Protocol::V1, scene, Some("s3cret-token"));
    let good_dl = TestViewer::start(d, Protocol::Daylight, scene, None);
    wait_for("good viewers", 10.0, || {
        good.frames() >= 5 && good_dl.frames() >= 5
    })
    .await;

    // Not our protocol at all.
    let mut s = TcpStream::connect(a).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let (code, reason) = read_goodbye(&mut s).await.expect("a goodbye for garbage");
    assert_eq!(code, goodbye::PROTOCOL_ERROR);
    assert!(reason.contains("magic"), "{reason}");

    // Wrong token.
    let mut s = TcpStream::connect(a).await.unwrap();
    hello(&mut s, "guess").await;
    assert_eq!(
        read_goodbye(&mut s).await.map(|g| g.0),
        Some(goodbye::UNAUTHORIZED)
    );

    // Oversized length field after a good handshake: rejected before any body arrives.
    let mut s = TcpStream::connect(a).await.unwrap();
    hello(&mut s, "s3cret-token").await;
    s.write_all(&[b'F', b'W', v1::kind::PING, 0x00, 0x00, 0x00, 0x40])
        .await
        .unwrap();
    let (code, reason) = read_goodbye(&mut s)
        .await
        .expect("a goodbye for an oversized packet");
    assert_eq!(code, goodbye::PROTOCOL_ERROR);
    assert!(reason.contains("exceeds"), "{reason}");

    // Truncated packet, then the peer vanishes.
    let mut s = TcpStream::connect(a).await.unwrap();
    hello(&mut s, "s3cret-token").await;
    s.write_all(&[b'F', b'W', v1::kind::ACK, 33, 0, 0, 0, 1, 2, 3])
        .await
        .unwrap();
    drop(s);

    // An unknown packet type and garbage on the Daylight port.
    let mut s = TcpStream::connect(a).await.unwrap();
    hello(&mut s, "s3cret-token").await;
    s.write_all(&[b'F', b'W', 0x66, 0, 0, 0, 0]).await.unwrap();
    assert_eq!(
        read_goodbye(&mut s).await.map(|g| g.0),
        Some(goodbye::PROTOCOL_ERROR)
    );
    let mut s = TcpStream::connect(d).await.unwrap();
    s.write_all(&[0x00, 0x01, 0x02, 0x03, 0x04, 0x05])
        .await
        .unwrap();
    let mut sink = vec![0u8; 1 << 20];
    // The server closes the connection (after possibly sending frames first).
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match s.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the Daylight port kept a garbage-sending peer"
    );

    wait_for("counters", 5.0, || {
        server.counter("rejected_packets.bad_magic") >= 1
    })
    .await;
    assert_eq!(
        server.counter("handshake_rejected.bad_packet"),
        1,
        "{:?}",
        server.counters()
    );
    assert_eq!(server.counter("handshake_rejected.token"), 1);
    assert_eq!(server.counter("rejected_packets.too_long"), 1);
    assert_eq!(server.counter("rejected_packets.unknown_type"), 1);

    // The good viewers never noticed.
    let (g0, d0) = (good.frames(), good_dl.frames());
    wait_for("good viewers to keep going", 10.0, || {
        good.frames() >= g0 + 30 && good_dl.frames() >= d0 + 30
    })
    .await;
    assert_eq!(good.stats.lock().unwrap().checksum_failures, 0);
    assert_eq!(good.mismatches.load(Ordering::Relaxed), 0);
    good.task.abort();
    good_dl.task.abort();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_socket_commands_reach_viewers_and_latency_is_measured() {
    let scene = Scene::Scroll;
    let sock = temp_path("ctl.sock");
    let status = temp_path("status");
    let mut cfg = config(scene, 320, 240);
    cfg.control_socket = Some(sock.clone());
    cfg.status_file = Some(status.clone());
    let server = Server::start(cfg).await.unwrap();
    let v = TestViewer::start(server.v1_addr.unwrap(), Protocol::V1, scene, None);
    let dl = TestViewer::start(
        server.daylight_addr.unwrap(),
        Protocol::Daylight,
        scene,
        None,
    );
    wait_for("frames", 10.0, || v.frames() >= 60 && dl.frames() >= 60).await;
    // The default brightness is sent on connect, as the Daylight host does.
    assert_eq!(dl.stats.lock().unwrap().brightness, Some(128));
    let reply = framewire_control::request(&sock, "brightness 200")
        .await
        .unwrap();
    assert_eq!(reply, "OK 200\n");
    wait_for("brightness at both viewers", 5.0, || {
        v.stats.lock().unwrap().brightness == Some(200)
            && dl.stats.lock().unwrap().brightness == Some(200)
    })
    .await;
    // The backlight goes off as brightness 0 and on again as the brightness before.
    let reply = framewire_control::request(&sock, "backlight off")
        .await
        .unwrap();
    assert_eq!(reply, "OK off\n");
    wait_for("backlight off at the tablet", 5.0, || {
        dl.stats.lock().unwrap().brightness == Some(0)
    })
    .await;
    let reply = framewire_control::request(&sock, "backlight on")
        .await
        .unwrap();
    assert_eq!(reply, "OK on\n");
    wait_for("backlight on at the tablet", 5.0, || {
        dl.stats.lock().unwrap().brightness == Some(200)
    })
    .await;
    // A live resolution change: both kinds of viewer get the new size and a correct picture.
    let reply = framewire_control::request(&sock, "resolution 256x192")
        .await
        .unwrap();
    assert_eq!(reply, "OK 256x192 (restarting)\n");
    wait_for("the new size at both viewers", 10.0, || {
        v.stats.lock().unwrap().width == 256 && dl.stats.lock().unwrap().width == 256
    })
    .await;
    let (f0, d0) = (v.frames(), dl.frames());
    wait_for("frames at the new size", 10.0, || {
        v.frames() >= f0 + 30 && dl.frames() >= d0 + 30
    })
    .await;
    assert_eq!(
        v.mismatches.load(Ordering::Relaxed),
        0,
        "a picture differs from the source"
    );
    assert_eq!(v.stats.lock().unwrap().checksum_failures, 0);
    assert_eq!(dl.stats.lock().unwrap().decode_errors, 0);
    assert_eq!(v.seen().iter().filter(|s| s.ok != Some(true)).count(), 0);
    let lat = framewire_control::request(&sock, "LATENCY").await.unwrap();
    assert!(lat.starts_with("OK\nfps="), "{lat}");
    assert!(lat.contains("\nclients=2\n"), "{lat}");
    let r = server.report();
    assert!(r.rtt.samples > 0 && r.rtt.avg > 0.0);
    // Same host, same clock: the offset estimate must make capture→applied small and positive.
    assert!(r.end_to_end.samples > 0);
    assert!(
        r.end_to_end.p50 > 0.0 && r.end_to_end.p50 < 1000.0,
        "e2e p50 {} ms",
        r.end_to_end.p50
    );
    assert!(r.fps > 30.0, "fps {}", r.fps);
    wait_for("status file", 5.0, || {
        std::fs::read_to_string(&status)
            .map(|s| s.contains("clients=2"))
            .unwrap_or(false)
    })
    .await;
    v.task.abort();
    dl.task.abort();
    server.shutdown().await;
    let _ = std::fs::remove_file(&sock);
    let _ = std::fs::remove_file(&status);
}

/// Files someone else placed beside the control socket and the status file are never written
/// through or deleted; the socket is 0600, goes away at shutdown, and the status file then says
/// `stopped`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_files_are_private_and_the_status_file_says_stopped_after_a_clean_stop() {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let dir = temp_path("control-files");
    std::fs::create_dir(&dir).unwrap();
    let (sock, status, victim) = (dir.join("ctl.sock"), dir.join("status"), dir.join("victim"));
    std::fs::write(&victim, b"root only\n").unwrap();
    // Where the status file used to be written before its rename.
    std::os::unix::fs::symlink(&victim, dir.join("status.tmp")).unwrap();
    // An ordinary file at the socket's path: refused, and still there.
    std::fs::write(&sock, b"precious").unwrap();
    let mut cfg = config(Scene::Idle, 64, 48);
    cfg.daylight_addr = None;
    cfg.control_socket = Some(sock.clone());
    cfg.status_file = Some(status.clone());
    let e = match Server::start(cfg.clone()).await {
        Err(e) => format!("{e:#}"),
        Ok(_) => panic!("the server bound its socket over a regular file"),
    };
    assert!(e.contains("not a socket"), "{e}");
    assert_eq!(std::fs::read(&sock).unwrap(), b"precious");
    std::fs::remove_file(&sock).unwrap();

    let server = Server::start(cfg).await.unwrap();
    let m = std::fs::symlink_metadata(&sock).unwrap();
    assert!(m.file_type().is_socket());
    assert_eq!(m.mode() & 0o7777, 0o600, "socket mode {:o}", m.mode());
    wait_for("the status file", 5.0, || {
        std::fs::read_to_string(&status)
            .map(|s| s.contains("status=running"))
            .unwrap_or(false)
    })
    .await;
    assert_eq!(std::fs::metadata(&status).unwrap().mode() & 0o7777, 0o600);
    assert_eq!(std::fs::read(&victim).unwrap(), b"root only\n");
    server.shutdown().await;
    let text = std::fs::read_to_string(&status).unwrap();
    assert!(text.starts_with("status=stopped\n"), "{text}");
    assert!(text.contains("\npid="), "{text}");
    assert!(!sock.exists(), "the control socket outlived the server");
    assert_eq!(std::fs::read(&victim).unwrap(), b"root only\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Each viewer gets only the codec it declared: a zstd host sends zstd to a viewer that takes
/// it, LZ4 to one that declared only LZ4 (the browser page), raw bytes to one with neither; and
/// each verifies every picture.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn viewers_get_only_the_codec_they_declared() {
    use framewire_proto::v1::caps;
    let scene = Scene::Scroll;
    let mut cfg = config(scene, 320, 240);
    cfg.codec = framewire_codec::BlockCodec::Zstd(1);
    cfg.daylight_addr = None;
    let server = Server::start(cfg).await.unwrap();
    let addr = server.v1_addr.unwrap().to_string();
    let declared = [
        (caps::ALL & !caps::COLOUR, "zstd"),
        (caps::LZ4 | caps::UNCHANGED | caps::CHECKSUM_XXH3, "lz4"),
        (caps::UNCHANGED | caps::CHECKSUM_XXH3, "raw"),
    ];
    let viewers: Vec<TestViewer> = declared
        .iter()
        .map(|&(c, _)| {
            let mut o = ViewerOptions::new(addr.clone(), Protocol::V1);
            o.caps = c;
            TestViewer::start_with(o, scene)
        })
        .collect();
    wait_for("frames at every viewer", 20.0, || {
        viewers.iter().all(|v| v.frames() >= 90)
    })
    .await;
    for (v, (c, codec)) in viewers.iter().zip(declared) {
        let s = v.stats.lock().unwrap().clone();
        assert_eq!(s.codec, Some(codec), "caps {c:#x}");
        assert_eq!(s.checksum_failures + s.decode_errors, 0, "caps {c:#x}");
        assert!(s.deltas > 30, "caps {c:#x}: deltas {}", s.deltas);
        assert_eq!(v.mismatches.load(Ordering::Relaxed), 0, "caps {c:#x}");
        assert!(v.seen().iter().all(|f| f.ok == Some(true)));
        v.task.abort();
    }
    assert_eq!(server.counter("codec_fallbacks"), 2);
    server.shutdown().await;
}

#[tokio::test]
async fn refuses_to_expose_the_screen_without_a_token() {
    let mut cfg = config(Scene::Idle, 64, 64);
    cfg.quic_addr = Some(SocketAddr::from(([0, 0, 0, 0], 0)));
    cfg.daylight_addr = None;
    let err = Server::start(cfg.clone()).await.err().expect("must refuse");
    assert!(err.to_string().contains("--token"), "{err}");
    // framewire v1 over plain TCP off loopback: refused with a token too (it would cross the
    // network unencrypted).
    let mut tcp = config(Scene::Idle, 64, 64);
    tcp.v1_addr = Some(SocketAddr::from(([0, 0, 0, 0], 0)));
    tcp.daylight_addr = None;
    tcp.token = Some("a-long-enough-token".into());
    let err = Server::start(tcp)
        .await
        .err()
        .expect("plain TCP off loopback");
    assert!(err.to_string().contains("--quic-port"), "{err}");
    // An empty or short token is no token: refused with the reason, on loopback too.
    for short in ["", "t", "1234567"] {
        let mut c = config(Scene::Idle, 64, 64);
        c.token = Some(short.into());
        let err = Server::start(c)
            .await
            .err()
            .expect("a short token is refused");
        assert!(
            err.to_string()
                .contains("--token must be at least 8 characters"),
            "{err}"
        );
    }
    let mut c = config(Scene::Idle, 64, 64);
    c.control_token = Some(String::new());
    let err = Server::start(c)
        .await
        .err()
        .expect("an empty control token");
    assert!(
        err.to_string()
            .contains("--control-token must be at least 8"),
        "{err}"
    );
    cfg.daylight_addr = Some(SocketAddr::from(([0, 0, 0, 0], 0)));
    cfg.token = Some("a-long-enough-token".into());
    let err = Server::start(cfg.clone())
        .await
        .err()
        .expect("daylight has no auth");
    assert!(err.to_string().contains("--insecure"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undamaged_screen_costs_no_conversion_or_encoding() {
    let server = Server::start(config(Scene::Idle, 640, 480)).await.unwrap();
    let v = TestViewer::start(server.v1_addr.unwrap(), Protocol::V1, Scene::Idle, None);
    wait_for("a second of idle frames", 10.0, || {
        server.counter("frames_captured") >= 60
    })
    .await;
    let r = server.report();
    let (captured, quiet) = (
        server.counter("frames_captured"),
        server.counter("frames_without_damage"),
    );
    // The idle scene changes only when the cursor blinks (every 30 frames).
    assert!(
        quiet * 10 >= captured * 8,
        "{quiet} of {captured} frames skipped all work"
    );
    assert!(
        r.grey.samples <= captured - quiet + 1,
        "grey ran {} times for {captured} frames",
        r.grey.samples
    );
    wait_for("the viewer to be in sync", 10.0, || v.frames() >= 30).await;
    assert_eq!(v.stats.lock().unwrap().checksum_failures, 0);
    v.task.abort();
    server.shutdown().await;
}

/// The shared-memory export carries every picture exactly, to a viewer in another thread
/// reading it in place; its file goes away with the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shm_export_delivers_exact_pictures_to_a_local_viewer() {
    shm_export_case(false).await
}

/// The same in colour (`--shm-colour`): the planes G, R − G, B − G of exactly the source.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shm_export_delivers_exact_colour_pictures() {
    shm_export_case(true).await
}

async fn shm_export_case(colour: bool) {
    use framewire_client::shm_viewer::{self, ShmViewerStats};
    use std::sync::atomic::AtomicBool;
    let name = format!("loopback-{}-{colour}", std::process::id());
    let mut cfg = config(Scene::Mixed, 320, 240);
    cfg.shm_export = Some(name.clone());
    cfg.shm_colour = colour;
    let server = Server::start(cfg).await.unwrap();
    let path = framewire_shm::path_for(&name).unwrap();
    assert!(path.exists());
    let stats = Arc::new(Mutex::new(ShmViewerStats::default()));
    let stop = AtomicBool::new(false);
    let (s2, n2) = (stats.clone(), name.clone());
    let (checked, bad) = tokio::task::spawn_blocking(move || {
        let (mut checked, mut bad) = (0u32, 0u32);
        shm_viewer::run(&n2, Some(90), &stop, &s2, |ev| {
            if !ev.unchanged {
                checked += 1;
                let want = if colour {
                    let mut src = SyntheticSource::new(Scene::Mixed, ev.width, ev.height);
                    let mut planes = Vec::new();
                    let bgra = src.render(ev.seq);
                    framewire_codec::colour::to_planes(bgra, PixelOrder::Bgra, 320, &mut planes);
                    planes
                } else {
                    expected(Scene::Mixed, ev.width, ev.height, ev.seq)
                };
                if ev.pixels != &want[..] || ev.planes != if colour { 3 } else { 1 } {
                    bad += 1;
                }
            }
            true
        })
        .unwrap();
        (checked, bad)
    })
    .await
    .unwrap();
    let s = stats.lock().unwrap().clone();
    assert_eq!(s.frames, 90);
    assert_eq!(s.checksum_failures, 0);
    assert!(checked > 30, "{checked} changed pictures");
    assert_eq!(bad, 0, "pictures that differ from the scene");
    assert!(server.counter("shm_frames_exported") >= 90);
    server.shutdown().await;
    assert!(!path.exists(), "the export's file outlived the server");
}

/// A local process's pictures, published to shared memory, are what viewers get: the server
/// takes them as its screen (`--source shm:NAME`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_publisher_feeds_the_server_through_shared_memory() {
    use framewire_capture::ShmPublisher;
    use std::sync::atomic::AtomicBool;
    let name = format!("loopback-pub-{}", std::process::id());
    let (w, h) = (320u32, 240u32);
    let mut publisher = ShmPublisher::open(&name, (w * h) as usize).unwrap();
    // What the publisher will send, as grey checksums, computed independently.
    let n = 240u64;
    let sums: HashSet<u64> = (0..n)
        .map(|i| picture_checksum(&expected(Scene::Scroll, w, h, i), w as usize))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let pubt = std::thread::spawn(move || {
        let mut src = SyntheticSource::new(Scene::Scroll, w, h);
        for i in 0..n {
            if s2.load(Ordering::Relaxed) {
                break;
            }
            let px = src.render(i).to_vec();
            publisher
                .publish(i, framewire_telemetry::clock::now_us(), w, h, Some(&px))
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(16));
        }
    });
    let mut cfg = config(Scene::Idle, w, h);
    cfg.source = SourceSpec::Shm(name.clone());
    let server = Server::start(cfg).await.unwrap();
    let v = TestViewer::start(server.v1_addr.unwrap(), Protocol::V1, Scene::Idle, None);
    wait_for(
        "more than 30 distinct pictures from the publisher",
        10.0,
        || {
            let seen = v.seen.lock().unwrap();
            seen.iter()
                .map(|s| s.checksum)
                .collect::<HashSet<u64>>()
                .len()
                > 30
        },
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    pubt.join().unwrap();
    let seen = v.seen.lock().unwrap().clone();
    let distinct: HashSet<u64> = seen.iter().map(|s| s.checksum).collect();
    assert!(
        distinct.len() > 30,
        "only {} distinct pictures",
        distinct.len()
    );
    assert!(
        distinct.is_subset(&sums),
        "a picture that the publisher never sent"
    );
    assert!(seen.iter().all(|s| s.ok == Some(true)));
    server.shutdown().await;
}

/// A recording (`framewire record`) replayed as the screen (`--source file:PATH`, at its
/// recorded pace): viewers get exactly the recorded pictures, and it starts again at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_replays_as_the_screen_exactly_and_loops() {
    use framewire_capture::FrameSource;
    let (w, h) = (320u32, 240u32);
    let n = 60u64;
    let path = temp_path("replay.fwrec");
    let mut writer = framewire_record::Writer::new(
        std::fs::File::create(&path).unwrap(),
        framewire_record::Header {
            width: w,
            height: h,
        },
    )
    .unwrap();
    // The scene's pictures with the damage it reports, 60 a second; their grey checksums,
    // computed independently, are all a viewer may see.
    let mut src = SyntheticSource::new(Scene::Scroll, w, h);
    for i in 0..n {
        let c = src.capture().unwrap();
        writer.write(i * 16_667, c.bgra, &c.damage).unwrap();
    }
    writer.finish().unwrap();
    let sums: HashSet<u64> = (0..n)
        .map(|i| picture_checksum(&expected(Scene::Scroll, w, h, i), w as usize))
        .collect();
    let mut cfg = config(Scene::Idle, w, h);
    cfg.source = SourceSpec::File {
        path: path.clone(),
        pace: framewire_record::Pace::Recorded,
    };
    let server = Server::start(cfg).await.unwrap();
    let v = TestViewer::start(server.v1_addr.unwrap(), Protocol::V1, Scene::Idle, None);
    wait_for("the recording to start again", 10.0, || {
        server.counter("replay_loops") >= 1
    })
    .await;
    wait_for("30 distinct pictures", 10.0, || {
        let seen = v.seen.lock().unwrap();
        seen.iter()
            .map(|s| s.checksum)
            .collect::<HashSet<u64>>()
            .len()
            >= 30
    })
    .await;
    let seen = v.seen();
    let distinct: HashSet<u64> = seen.iter().map(|s| s.checksum).collect();
    assert!(
        distinct.is_subset(&sums),
        "a picture that is not in the recording"
    );
    assert!(seen.iter().all(|s| s.ok == Some(true)), "a checksum failed");
    assert!(server.counter("replay_pictures") >= n);
    server.shutdown().await;
    let _ = std::fs::remove_file(&path);
}

/// A viewer that asks for colour gets the planes G, R − G, B − G of exactly the source's
/// pictures, verified by checksum and compared pixel for pixel here. While it is the only
/// viewer, no grey picture is made at all; a grey viewer that joins then gets exact grey
/// pictures, from a keyframe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_colour_viewer_gets_exact_colour_beside_a_grey_one() {
    use framewire_codec::colour::to_planes;
    let (w, h) = (200u32, 120u32);
    let server = Server::start(config(Scene::Mixed, w, h)).await.unwrap();
    let addr = server.v1_addr.unwrap();
    let stats = Arc::new(Mutex::new(ViewerStats::default()));
    let checked = Arc::new(AtomicU64::new(0));
    let (bad, c2) = (Arc::new(AtomicU64::new(0)), checked.clone());
    let b2 = bad.clone();
    let opts = ViewerOptions::new(addr.to_string(), Protocol::V1).with_colour(true);
    let task = tokio::spawn(run_viewer(opts, stats.clone(), move |ev| {
        assert_eq!((ev.planes, ev.width, ev.height), (3, w, h));
        assert_eq!(ev.checksum_ok, Some(true), "frame {}", ev.seq);
        if ev.seq % 4 == 0 {
            let mut src = SyntheticSource::new(Scene::Mixed, w, h);
            let mut want = Vec::new();
            to_planes(src.render(ev.seq), PixelOrder::Bgra, w as usize, &mut want);
            if !ev.picture.equals(&want) {
                b2.fetch_add(1, Ordering::Relaxed);
            }
            c2.fetch_add(1, Ordering::Relaxed);
        }
        true
    }));
    wait_for("20 colour pictures compared", 20.0, || {
        checked.load(Ordering::Relaxed) >= 20
    })
    .await;
    let r = server.report();
    assert_eq!(
        r.grey.samples, 0,
        "grey pictures made with only a colour viewer"
    );
    // The colour stages are timed: `framewire latency` and /metrics show where the time went.
    assert!(r.colour_planes.samples >= 20 && r.colour_compress.samples >= 20);
    assert!(
        r.colour_planes.avg > 0.0 && r.colour_compress.avg > 0.0,
        "{r:?}"
    );
    assert!(
        r.colour_bytes_per_frame > 0.0,
        "colour frames' bytes: {r:?}"
    );
    assert_eq!(r.bytes_per_frame, 0.0, "grey bytes with no grey made");
    let grey = TestViewer::start(addr, Protocol::V1, Scene::Mixed, None);
    wait_for("grey frames too", 10.0, || grey.frames() >= 20).await;
    assert!(grey.seen()[0].keyframe);
    assert!(server.report().grey.samples > 0);
    assert_eq!(
        bad.load(Ordering::Relaxed),
        0,
        "colour pictures that differ"
    );
    assert_eq!(grey.mismatches.load(Ordering::Relaxed), 0);
    assert!(server.counter("colour_frames") >= 20);
    task.abort();
    server.shutdown().await;
}
