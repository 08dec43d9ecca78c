//! Issue 16's bounds, each against a running server: connections per listener, the time a
//! half-sent HTTP request may hold its connection, WebSocket messages before a Hello, a
//! subscriber that never reads against the subscribers' budget, names and streams from
//! devices, and the token on the figures.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use framewire_capture::{Resolution, Scene};
use framewire_proto::v1::{self, goodbye, Packet, Role};
use framewire_server::{ConnLimits, Server, ServerConfig, SourceSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn any_port() -> Option<SocketAddr> {
    Some(SocketAddr::from(([127, 0, 0, 1], 0)))
}

fn config() -> ServerConfig {
    ServerConfig {
        source: SourceSpec::Synthetic(Scene::Mixed),
        resolution: Resolution {
            width: 64,
            height: 48,
        },
        fps: 30,
        v1_addr: any_port(),
        daylight_addr: any_port(),
        sensor_addr: any_port(),
        http_addr: any_port(),
        ..ServerConfig::default()
    }
}

async fn wait_for(what: &str, secs: u64, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether the server closes `s` (end of stream or reset) within `secs`.
async fn closed_within(s: &mut TcpStream, secs: u64) -> bool {
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => {} // frames for a viewer that was admitted
        }
    }
}

/// A framewire v1 viewer's first picture arrives (the listener still admits and serves).
async fn v1_viewer_works(addr: SocketAddr) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let h = Packet::Hello {
        version: v1::VERSION,
        role: Role::Viewer,
        caps: v1::caps::ALL,
        stream: String::new(),
        token: String::new(),
    };
    s.write_all(&h.to_bytes()).await.unwrap();
    let mut dec = v1::Decoder::new(v1::DEFAULT_MAX_FRAME_BODY);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        while let Some(p) = dec.next_packet().unwrap() {
            if let Packet::Frame { .. } = p {
                return;
            }
        }
        let n = tokio::time::timeout_at(deadline, s.read_buf(dec.buffer_mut()))
            .await
            .expect("a frame within 10 s")
            .unwrap();
        assert!(n > 0, "the server closed the healthy viewer");
    }
}

async fn http_get(addr: SocketAddr, path: &str, auth: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let auth = auth
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\n{auth}Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).await.unwrap();
    let code = resp[9..12].parse().unwrap();
    (code, resp)
}

/// Idle Daylight connections (no handshake: each one is a viewer) stop at the listener's limit;
/// the ones beyond it are closed at once and counted, and other listeners are unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_listener_holds_at_most_its_connections() {
    let server = Server::start(ServerConfig {
        max_connections: ConnLimits {
            daylight: 2,
            sensor: 3,
            ..ConnLimits::default()
        },
        ..config()
    })
    .await
    .unwrap();
    let mut kept = Vec::new();
    for _ in 0..2 {
        kept.push(
            TcpStream::connect(server.daylight_addr.unwrap())
                .await
                .unwrap(),
        );
    }
    wait_for("two Daylight viewers", 5, || server.viewer_count() == 2).await;
    for _ in 0..5 {
        let mut s = TcpStream::connect(server.daylight_addr.unwrap())
            .await
            .unwrap();
        assert!(
            closed_within(&mut s, 5).await,
            "a connection beyond the limit stayed open"
        );
    }
    for _ in 0..3 {
        kept.push(
            TcpStream::connect(server.sensor_addr.unwrap())
                .await
                .unwrap(),
        );
    }
    for _ in 0..4 {
        let mut s = TcpStream::connect(server.sensor_addr.unwrap())
            .await
            .unwrap();
        // Admitted devices are greeted with PERIOD_ON; refused ones only see the close.
        let mut b = [0u8; 16];
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b))
            .await
            .expect("closed at once")
            .unwrap_or(0);
        assert_eq!(n, 0, "a device beyond the limit was greeted");
    }
    assert_eq!(server.counter("connections_refused.daylight_full"), 5);
    assert_eq!(server.counter("connections_refused.sensor_full"), 4);
    assert_eq!(server.counter("connections_admitted.daylight"), 2);
    assert_eq!(server.viewer_count(), 2);
    v1_viewer_works(server.v1_addr.unwrap()).await;
    // A place comes free when a connection ends.
    drop(kept.remove(0));
    wait_for("the Daylight viewer to leave", 5, || {
        server.viewer_count() == 1
    })
    .await;
    wait_for("its place to come free", 5, || {
        server.connection_limits().contains(&("daylight", 2, 1))
    })
    .await;
    let _again = TcpStream::connect(server.daylight_addr.unwrap())
        .await
        .unwrap();
    wait_for("a new Daylight viewer in the freed place", 5, || {
        server.counter("connections_admitted.daylight") == 3
    })
    .await;
    server.shutdown().await;
}

/// A request head that never ends is closed after the header timeout; before, it held its
/// connection (and a descriptor) for ever. A v1 connection that sends no Hello is refused at
/// its handshake deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_and_silent_connections_are_closed_at_their_deadlines() {
    let server = Server::start(ServerConfig {
        header_timeout: Duration::from_millis(500),
        handshake_timeout: Duration::from_millis(500),
        ..config()
    })
    .await
    .unwrap();
    let mut half = TcpStream::connect(server.http_addr.unwrap()).await.unwrap();
    half.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\nX-Slow: ")
        .await
        .unwrap();
    let t = Instant::now();
    assert!(
        closed_within(&mut half, 5).await,
        "the half-sent request is still open"
    );
    assert!(
        t.elapsed() >= Duration::from_millis(400),
        "closed before its timeout"
    );
    let mut silent = TcpStream::connect(server.v1_addr.unwrap()).await.unwrap();
    assert!(closed_within(&mut silent, 5).await);
    assert_eq!(server.counter("handshake_rejected.timeout"), 1);
    // Whole requests are still answered.
    assert_eq!(
        http_get(server.http_addr.unwrap(), "/metrics", None)
            .await
            .0,
        200
    );
    server.shutdown().await;
}

/// A WebSocket opened on `http` (the upgrade answered with 101).
async fn websocket(http: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(http).await.unwrap();
    s.write_all(
        b"GET /ws HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    .await
    .unwrap();
    let mut head = vec![0u8; 1024];
    let n = s.read(&mut head).await.unwrap();
    let head = String::from_utf8_lossy(&head[..n]);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    s
}

/// A WebSocket message larger than 64 KiB is refused before any Hello instead of being
/// buffered (a 16 MB frame once cost 14.6 MB of memory per connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_cannot_make_the_server_buffer_a_large_message() {
    let server = Server::start(config()).await.unwrap();
    let mut s = websocket(server.http_addr.unwrap()).await;
    // A masked binary frame announcing 16 MB, and the first 256 KB of it.
    let mut frame = vec![0x82u8, 0x80 | 127];
    frame.extend_from_slice(&(16u64 << 20).to_be_bytes());
    frame.extend_from_slice(&[1, 2, 3, 4]);
    s.write_all(&frame).await.unwrap();
    let _ = s.write_all(&vec![0u8; 256 * 1024]).await;
    assert!(
        closed_within(&mut s, 5).await,
        "the oversized message was taken"
    );
    wait_for("the refusal to be counted", 5, || {
        server.counter("websocket_rejected.too_large") == 1
    })
    .await;
    server.shutdown().await;
}

/// Reads a v1 subscriber's packets until the server closes it.
async fn read_until_closed(s: &mut TcpStream) -> Vec<Packet> {
    let mut dec = v1::Decoder::new(v1::DEFAULT_MAX_FRAME_BODY);
    let mut out = Vec::new();
    loop {
        while let Some(p) = dec.next_packet().unwrap() {
            out.push(p);
        }
        let n = tokio::time::timeout(Duration::from_secs(10), s.read_buf(dec.buffer_mut()))
            .await
            .expect("the server ends the connection")
            .unwrap_or(0);
        if n == 0 {
            return out;
        }
    }
}

/// A server with a 16 MiB subscribers' budget; a TCP subscriber that does not read (with a
/// small receive buffer, so the server's queue, not the kernel's, holds the backlog); a live
/// in-process subscriber; and a device sending samples of 32 readings (about 1.5 KB each in a
/// queue) in rounds of 2 000, each taken by the live subscriber before the next is sent, so it
/// is never more than a round behind while the stalled one falls further each round. Returns
/// once the stalled one is cut off (at most 80 000 samples), with the samples sent.
async fn flood_until_cut() -> (framewire_server::ServerHandle, TcpStream, u64) {
    let (server, mut dev) = with_hub(framewire_hub::Limits {
        queue_bytes: 32 << 20,
        total_bytes: 16 << 20,
        ..Default::default()
    })
    .await;
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(64 * 1024).unwrap();
    let mut stalled = sock.connect(server.v1_addr.unwrap()).await.unwrap();
    let h = Packet::Hello {
        version: v1::VERSION,
        role: Role::Subscriber,
        caps: v1::caps::ALL,
        stream: "sensor/".into(),
        token: String::new(),
    };
    stalled.write_all(&h.to_bytes()).await.unwrap();
    let streams = server.streams().unwrap().clone();
    let live = streams.subscribe(framewire_hub::Filter::All, 1 << 20);
    wait_for("two subscribers", 5, || streams.subscriber_count() == 2).await;
    const N: u64 = 80_000;
    const ROUND: u64 = 2_000;
    let readings: String = (0..31).map(|i| format!("K{i}={i},")).collect();
    let (mut got, mut out) = (0u64, Vec::new());
    for round in 0..N / ROUND {
        let batch: String = (round * ROUND..(round + 1) * ROUND)
            .map(|k| format!("#Sensor:{readings}SEQ={k}!\n"))
            .collect();
        dev.write_all(batch.as_bytes()).await.unwrap();
        while got < (round + 1) * ROUND {
            let wait = live.next_batch(4096, &mut out);
            let n = tokio::time::timeout(Duration::from_secs(20), wait)
                .await
                .expect("the live subscriber keeps receiving");
            for d in out.drain(..) {
                assert!(
                    matches!(d, framewire_hub::Delivery::Item(_)),
                    "live lost some: {d:?}"
                );
            }
            got += n as u64;
        }
        if server.counter("hub_subscribers_cut_off") == 1 {
            break;
        }
    }
    assert_eq!(
        server.counter("hub_subscribers_cut_off"),
        1,
        "never cut off"
    );
    let (queued, budget) = streams.queued_bytes();
    assert!(
        queued <= budget,
        "{queued} bytes queued over a {budget} budget"
    );
    (server, stalled, got)
}

/// A subscriber that stops reading fills its queue until the subscribers' budget runs out;
/// then it is cut off, told what it lost and why, and a subscriber that keeps up loses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_falls_behind_is_cut_off_at_the_budget_and_told_why() {
    let (server, mut stalled, sent) = flood_until_cut().await;
    // It reads now (within the second its last write is given): samples, what it lost, and
    // the reason.
    let packets = read_until_closed(&mut stalled).await;
    let samples = packets
        .iter()
        .filter(|p| matches!(p, Packet::Sample { .. }))
        .count() as u64;
    let missed: u64 = packets
        .iter()
        .map(|p| match p {
            Packet::Missed { samples } => *samples,
            _ => 0,
        })
        .sum();
    match packets.last() {
        Some(Packet::Goodbye { code, reason }) => {
            assert_eq!(*code, goodbye::TOO_SLOW);
            assert!(reason.contains("budget"), "{reason}");
        }
        other => panic!("the last packet is not a Goodbye: {other:?}"),
    }
    assert!(missed > 0);
    // Nothing lost silently: what it got and what it was told it lost are every sample sent
    // up to its cut (the round in which it was cut may end after it).
    assert!(samples + missed <= sent, "{samples} + {missed} > {sent}");
    assert!(
        samples + missed > sent - 2_000,
        "{samples} + {missed} of {sent}"
    );
    server.shutdown().await;
}

/// A subscriber cut off that does not read at all is disconnected (its writer, blocked on a
/// full socket, gets a second), instead of holding its connection and its place for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_cut_off_that_never_reads_is_disconnected() {
    let (server, _stalled, _) = flood_until_cut().await;
    // (The live subscriber was the setup's; only connections count as disconnected.)
    wait_for("the cut subscriber's connection to end", 5, || {
        server.counter("subscribers_disconnected") == 1
    })
    .await;
    server.shutdown().await;
}

/// A server with these hub limits, and a device connected to it.
async fn with_hub(hub: framewire_hub::Limits) -> (framewire_server::ServerHandle, TcpStream) {
    let server = Server::start(ServerConfig { hub, ..config() })
        .await
        .unwrap();
    let dev = TcpStream::connect(server.sensor_addr.unwrap())
        .await
        .unwrap();
    (server, dev)
}

/// Device names beyond 128 bytes are refused (not truncated into another device's stream);
/// streams beyond the limit are refused and counted; `/metrics` keeps a bounded number of
/// per-stream series however many locations there are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_and_streams_from_devices_are_bounded() {
    let (server, mut dev) = with_hub(framewire_hub::Limits {
        streams: 150,
        ..Default::default()
    })
    .await;
    let long = "L".repeat(16 * 1024 - 64);
    let mut lines = format!("#Sensor{long}:A=1!\n#locid:{}!\n", "x".repeat(129));
    for i in 0..400 {
        lines.push_str(&format!("#Sensorroom{i}:A={i}!\n"));
    }
    dev.write_all(lines.as_bytes()).await.unwrap();
    wait_for("every line handled", 10, || {
        server.counter("sensor_lines_rejected.bad_name") == 2
            && server.counter("hub_items_refused_stream_limit") == 250
    })
    .await;
    assert_eq!(server.streams().unwrap().stream_count(), 150);
    let (code, body) = http_get(server.http_addr.unwrap(), "/metrics", None).await;
    assert_eq!(code, 200);
    let series = body
        .lines()
        .filter(|l| l.starts_with("framewire_stream_items_total{"))
        .count();
    assert_eq!(series, 100, "the 100 busiest streams");
    assert!(body.contains("framewire_stream_items_other 50"));
    assert!(body.contains("framewire_streams 150"));
    server.shutdown().await;
}

/// With a token, the figures need it too (they show device serials, locations and viewers);
/// a metrics token of its own replaces it there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_figures_need_the_token() {
    let server = Server::start(ServerConfig {
        token: Some("viewer-secret".into()),
        ..config()
    })
    .await
    .unwrap();
    let http = server.http_addr.unwrap();
    for path in ["/metrics", "/api/stats", "/dashboard"] {
        assert_eq!(http_get(http, path, None).await.0, 401, "{path}");
        assert_eq!(http_get(http, path, Some("wrong-secret")).await.0, 401);
        // (The dashboard is 404 in a binary built without the web pages.)
        assert_ne!(http_get(http, path, Some("viewer-secret")).await.0, 401);
    }
    let (code, _) = http_get(http, "/api/stats?token=viewer-secret", None).await;
    assert_eq!(code, 200);
    assert_ne!(
        http_get(http, "/", None).await.0,
        401,
        "the page itself holds no data"
    );
    // Nor can the dashboard be had as an asset.
    assert_eq!(http_get(http, "/assets/dashboard.html", None).await.0, 404);
    assert_eq!(server.counter("http_unauthorized.metrics"), 2);
    server.shutdown().await;

    let server = Server::start(ServerConfig {
        token: Some("viewer-secret".into()),
        metrics_token: Some("scraper-secret".into()),
        ..config()
    })
    .await
    .unwrap();
    let http = server.http_addr.unwrap();
    assert_eq!(
        http_get(http, "/metrics", Some("viewer-secret")).await.0,
        401
    );
    assert_eq!(
        http_get(http, "/metrics", Some("scraper-secret")).await.0,
        200
    );
    server.shutdown().await;
}

async fn with_http_limit(http: usize) -> framewire_server::ServerHandle {
    let max_connections = ConnLimits {
        http,
        ..ConnLimits::default()
    };
    Server::start(ServerConfig {
        max_connections,
        ..config()
    })
    .await
    .unwrap()
}

/// Concurrent scrapes share renders: a flood of them costs a render a quarter second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_flood_shares_renders() {
    let server = with_http_limit(1000).await;
    let http = server.http_addr.unwrap();
    let scrapes: Vec<_> = (0..300)
        .map(|_| tokio::spawn(async move { http_get(http, "/metrics", None).await.0 }))
        .collect();
    for s in scrapes {
        assert_eq!(s.await.unwrap(), 200);
    }
    let shared = server.counter("http_renders_shared.metrics");
    assert!(
        shared >= 200,
        "only {shared} of 300 scrapes shared a render"
    );
    server.shutdown().await;
}

/// An idle stream is forgotten by the hub thread on its own (its name leaves `/metrics`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_streams_expire() {
    let (server, mut dev) = with_hub(framewire_hub::Limits {
        stream_idle_us: 1_000_000,
        ..Default::default()
    })
    .await;
    dev.write_all(b"#Sensorshortlived:A=1!\n").await.unwrap();
    let streams = server.streams().unwrap().clone();
    wait_for("the stream", 5, || streams.stream_count() == 1).await;
    wait_for("the idle stream to expire", 10, || {
        streams.stream_count() == 0
    })
    .await;
    assert_eq!(server.counter("hub_streams_expired"), 1);
    server.shutdown().await;
}

/// A WebSocket keeps its place under the HTTP listener's limit after the upgrade (it used to
/// give it back with the HTTP request, so sockets were unlimited).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websockets_count_against_the_http_limit() {
    let server = with_http_limit(2).await;
    let http = server.http_addr.unwrap();
    let mut sockets = Vec::new();
    for _ in 0..2 {
        sockets.push(websocket(http).await);
    }
    // Both places are taken by the sockets: a third connection is refused.
    let mut third = TcpStream::connect(http).await.unwrap();
    third
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    assert!(closed_within(&mut third, 5).await);
    assert_eq!(server.counter("connections_refused.http_full"), 1);
    // Closing one gives its place back.
    drop(sockets.pop());
    wait_for("the place to come free", 10, || {
        server.connection_limits().contains(&("http", 2, 1))
    })
    .await;
    assert_eq!(http_get(http, "/metrics", None).await.0, 200);
    server.shutdown().await;
}
