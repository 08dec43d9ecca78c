//! The sensor line listener with real sockets: many devices, exact delivery, bad lines, a
//! subscriber that stops reading.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use framewire_capture::{Resolution, Scene};
use framewire_hub::{Delivery, Filter, Item, Value};
use framewire_server::{Server, ServerConfig, ServerHandle, SourceSpec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A tiny idle screen and the sensor listener on a free port; no viewer ports.
fn sensor_config() -> ServerConfig {
    ServerConfig {
        source: SourceSpec::Synthetic(Scene::Idle),
        resolution: Resolution {
            width: 64,
            height: 48,
        },
        v1_addr: None,
        daylight_addr: None,
        sensor_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        ..ServerConfig::default()
    }
}

async fn server() -> ServerHandle {
    Server::start(sensor_config()).await.unwrap()
}

fn thermal_hex(seed: u16) -> String {
    (0..768u16)
        .map(|i| format!("{:04X}", i.wrapping_mul(7).wrapping_add(seed)))
        .collect()
}

/// What a real EmberEye device is started with (EmberEye's servers and a capture of a real
/// device): `PERIOD_ON` and a newline.
const START: &[u8] = b"PERIOD_ON\n";

/// Connects, checks the start command, and sends `lines` in chunks of awkward sizes.
async fn device(addr: SocketAddr, lines: Vec<String>, chunk: usize) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut greet = [0u8; START.len()];
    s.read_exact(&mut greet).await.unwrap();
    assert_eq!(&greet, START);
    let bytes: Vec<u8> = lines
        .iter()
        .flat_map(|l| l.bytes().chain([b'\n']))
        .collect();
    for c in bytes.chunks(chunk) {
        s.write_all(c).await.unwrap();
    }
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_devices_every_reading_arrives_once_in_order() {
    let server = server().await;
    let addr = server.sensor_addr.unwrap();
    let streams = server.streams().unwrap().clone();
    let all = streams.subscribe(Filter::parse("sensor/"), 1 << 20);
    let grids = streams.subscribe(Filter::parse("thermal/room_7"), 16);
    let (devices, per) = (100usize, 200u64);
    let mut tasks = Vec::new();
    let mut bad = 0u64;
    for d in 0..devices {
        let mut lines = vec![format!("#serialno:DEV{d}!"), format!("#locid:room_{d}!\r")];
        let (mut k, mut i) = (0, 0u64);
        while k < per {
            i += 1;
            if i % 10 == 9 {
                lines.push(format!("#frame:{}!", thermal_hex(d as u16)));
            } else if i % 50 == 25 {
                lines.push("#garbage:1!".into());
                bad += 1;
            } else if k < per {
                lines.push(format!("#Sensor:ADC1={k},ADC2={},T=2{}.5!", d, d % 10));
                k += 1;
            }
        }
        tasks.push(tokio::spawn(device(addr, lines, 1 + d * 37 % 700)));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut next: HashMap<String, i64> = HashMap::new();
    let total = devices as u64 * per;
    let mut got = 0;
    while got < total {
        let d = tokio::time::timeout(Duration::from_secs(20), all.next())
            .await
            .expect("readings stopped arriving");
        let Delivery::Item(Item::Sample(s)) = d else {
            panic!("unexpected {d:?}");
        };
        let dev: usize = s.device.strip_prefix("DEV").unwrap().parse().unwrap();
        assert_eq!(&*s.stream, format!("sensor/room_{dev}"));
        let Value::Int(k) = s.readings[0].1 else {
            panic!("ADC1 is an integer")
        };
        let expect = next.entry(s.device.to_string()).or_insert(0);
        assert_eq!(k, *expect, "device {dev}: out of order or repeated");
        *expect += 1;
        assert_eq!(
            s.readings[2],
            ("T".to_string(), Value::Float(20.5 + (dev % 10) as f64))
        );
        got += 1;
    }
    assert!(all.try_next().is_none(), "a reading arrived twice");
    assert_eq!(next.len(), devices);
    assert_eq!(all.missed(), 0);
    // Thermal grids: newest wins, and the values are the ones sent.
    match grids.try_next() {
        Some(Delivery::Item(Item::Thermal(t))) => {
            assert_eq!((t.width, t.height, &*t.stream), (32, 24, "thermal/room_7"));
            assert_eq!(t.values[5], 5 * 7 + 7);
        }
        other => panic!("no grid: {other:?}"),
    }
    // Bad lines were counted by reason, and no connection was dropped for them.
    assert_eq!(server.counter("sensor_lines_rejected.unknown_packet"), bad);
    assert_eq!(server.counter("sensor_samples_accepted"), total);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_is_told_what_it_missed() {
    let server = server().await;
    let addr = server.sensor_addr.unwrap();
    let streams = server.streams().unwrap().clone();
    let stalled = streams.subscribe(Filter::All, 100);
    let live = streams.subscribe(Filter::All, 1 << 20);
    let n = 1000;
    let lines = (0..n).map(|k| format!("#Sensor:ADC1={k}!")).collect();
    device(addr, lines, 4096).await;
    // The live subscriber gets everything while the other does not read at all.
    for k in 0..n {
        match tokio::time::timeout(Duration::from_secs(10), live.next())
            .await
            .unwrap()
        {
            Delivery::Item(Item::Sample(s)) => assert_eq!(s.readings[0].1, Value::Int(k)),
            other => panic!("{other:?}"),
        }
    }
    let got: Vec<Delivery> = std::iter::from_fn(|| stalled.try_next()).collect();
    assert_eq!(got.len(), 101);
    assert_eq!(got[100], Delivery::Missed { samples: 900 });
    assert_eq!(stalled.missed(), 900);
    server.shutdown().await;
}

/// A subscriber over framewire v1 (role Subscriber, a prefix filter) gets Sample packets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_subscriber_receives_samples_over_tcp() {
    use framewire_proto::sensor_line::Value as V;
    use framewire_proto::v1::{self, Packet, Role};
    let server = Server::start(ServerConfig {
        v1_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        ..sensor_config()
    })
    .await
    .unwrap();
    let mut sub = TcpStream::connect(server.v1_addr.unwrap()).await.unwrap();
    let hello = Packet::Hello {
        version: v1::VERSION,
        role: Role::Subscriber,
        caps: 0,
        stream: "sensor/".into(),
        token: String::new(),
    };
    sub.write_all(&hello.to_bytes()).await.unwrap();
    let mut dec = v1::Decoder::new(v1::DEFAULT_MAX_FRAME_BODY);
    let mut got = Vec::new();
    let mut sent = false;
    while got.len() < 50 {
        while let Some(p) = dec.next_packet().unwrap() {
            match p {
                Packet::Welcome { .. } if !sent => {
                    sent = true;
                    let mut lines = vec!["#locid:lab!".to_string()];
                    lines.extend((0..50).map(|k| format!("#Sensor:ADC1={k},T=1.5!")));
                    lines.push(format!("#frame:{}!", thermal_hex(1)));
                    tokio::spawn(device(server.sensor_addr.unwrap(), lines, 100));
                }
                Packet::Sample {
                    stream, readings, ..
                } => {
                    assert_eq!(stream, "sensor/lab");
                    got.push(readings);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        if got.len() >= 50 {
            break;
        }
        let n = match tokio::time::timeout(Duration::from_secs(10), sub.read_buf(dec.buffer_mut()))
            .await
        {
            Ok(n) => n.unwrap(),
            Err(_) => panic!("samples stopped: {:?}", server.counters()),
        };
        assert!(n > 0, "the server closed the subscriber");
    }
    for (k, r) in got.iter().enumerate() {
        assert_eq!(r[0], ("ADC1".to_string(), V::Int(k as i64)));
        assert_eq!(r[1], ("T".to_string(), V::Float(1.5)));
    }
    // Hanging up ends the subscription (its writer, on the hub thread, is stopped with it).
    let streams = server.streams().unwrap().clone();
    assert_eq!(streams.subscriber_count(), 1);
    drop(sub);
    let t = std::time::Instant::now();
    while streams.subscriber_count() > 0 {
        assert!(t.elapsed() < Duration::from_secs(10), "still subscribed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.shutdown().await;
}

/// When the hub stalls, devices are slowed through TCP instead of queued without bound; when it
/// resumes, reading pauses until the backlog drains below the low-water mark, and nothing is
/// lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_stalled_hub_pushes_back_on_devices_and_loses_nothing() {
    use framewire_sensors::streams::INPUT_CAPACITY;
    // This test is about the hub's input; its subscriber may hold all million readings.
    let server = Server::start(ServerConfig {
        hub: framewire_hub::Limits {
            queue_bytes: 512 << 20,
            total_bytes: 512 << 20,
            ..Default::default()
        },
        ..sensor_config()
    })
    .await
    .unwrap();
    let addr = server.sensor_addr.unwrap();
    let streams = server.streams().unwrap().clone();
    let sub = streams.subscribe(Filter::All, 1 << 20);
    // ≈19 MB: more than the server's input holds plus both sockets' kernel buffers.
    let n = 1_000_000u64;
    let lines: Vec<String> = (0..n).map(|k| format!("#Sensor:ADC1={k}!")).collect();
    let sender = {
        // The test's own thread holds the hub (it is not one of the runtime's workers, so
        // sleeping here blocks nothing the server needs).
        let stall = streams.stall();
        let sender = tokio::spawn(device(addr, lines, 64 * 1024));
        // The hub's input fills, then the connection stops reading: the device's writes block
        // in TCP instead of piling up in the server.
        let t = std::time::Instant::now();
        while streams.depth() < INPUT_CAPACITY && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(streams.depth(), INPUT_CAPACITY);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            streams.depth(),
            INPUT_CAPACITY,
            "the input grew past its bound"
        );
        assert!(
            !sender.is_finished(),
            "the device should be held back by TCP"
        );
        drop(stall);
        sender
    };
    let mut k = 0;
    while k < n as i64 {
        match tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await
            .expect("readings stopped")
        {
            Delivery::Item(Item::Sample(s)) => {
                assert_eq!(s.readings[0].1, Value::Int(k));
                k += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    sender.await.unwrap();
    assert!(
        server.counter("stream_pauses") >= 1,
        "reads were never paused"
    );
    assert!(!streams.is_paused());
    server.shutdown().await;
}

/// Commands reach devices through the control socket, by location, serial or `all`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_socket_commands_reach_devices() {
    use framewire_control::request;
    let sock = std::env::temp_dir().join(format!("fw-devcmd-{}.sock", std::process::id()));
    let server = Server::start(ServerConfig {
        v1_addr: None,
        control_socket: Some(sock.clone()),
        ..sensor_config()
    })
    .await
    .unwrap();
    let mut dev = TcpStream::connect(server.sensor_addr.unwrap())
        .await
        .unwrap();
    let mut greet = [0u8; START.len()];
    dev.read_exact(&mut greet).await.unwrap();
    assert_eq!(&greet, START);
    dev.write_all(b"#serialno:SIM1!\n#locid:kitchen!\n")
        .await
        .unwrap();
    // The registry learns the location when the line is read: retry briefly.
    let mut reply = String::new();
    for _ in 0..100 {
        reply = request(&sock, "DEVICE kitchen request1").await.unwrap();
        if reply.starts_with("OK") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(reply, "OK sent REQUEST1 to 1 devices\n");
    let mut got = [0u8; 9];
    tokio::time::timeout(Duration::from_secs(5), dev.read_exact(&mut got))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&got, b"REQUEST1\n");
    assert!(request(&sock, "DEVICE SIM1 EEPROM1")
        .await
        .unwrap()
        .starts_with("OK sent EEPROM1 to 1"));
    assert!(request(&sock, "DEVICE nowhere REQUEST1")
        .await
        .unwrap()
        .starts_with("ERR no connected device"));
    assert!(request(&sock, "DEVICE all rm;-rf")
        .await
        .unwrap()
        .starts_with("ERR"));
    assert!(request(&sock, "DEVICE all")
        .await
        .unwrap()
        .starts_with("ERR usage"));
    server.shutdown().await;
    let _ = std::fs::remove_file(&sock);
}

/// `/metrics` on the HTTP port says what happened, and Prometheus' own checker accepts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_served_and_promtool_accepts_them() {
    let server = Server::start(ServerConfig {
        v1_addr: None,
        http_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        ..sensor_config()
    })
    .await
    .unwrap();
    let lines = [
        "#locid:lab!",
        "#Sensor:A=1!",
        "#Sensor:A=2!",
        "#Sensor:A=3!",
        "#nonsense!",
    ];
    device(
        server.sensor_addr.unwrap(),
        lines.iter().map(|l| l.to_string()).collect(),
        7,
    )
    .await;
    let wants = [
        "framewire_events_total{event=\"hub_samples_published\"} 3",
        "framewire_events_total{event=\"sensor_samples_accepted\"} 3",
        "framewire_events_total{event=\"sensor_lines_rejected.unknown_packet\"} 1",
        "framewire_stream_items_total{stream=\"sensor/lab\"} 3",
        "framewire_samples_published_total 3",
        "# TYPE framewire_stage_latency_seconds histogram",
        "# TYPE framewire_stage_latency_recent_seconds gauge",
        "framewire_stage_latency_seconds_bucket{stage=\"grey\",le=\"0.0005\"}",
        // Each accepted reading's wait for the hub was timed.
        "framewire_stage_latency_seconds_count{stage=\"sensor_hub\"} 3",
    ];
    let mut body = String::new();
    for _ in 0..500 {
        let mut s = TcpStream::connect(server.http_addr.unwrap()).await.unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).await.unwrap();
        assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
        body = resp.split_once("\r\n\r\n").unwrap().1.to_string();
        // Every reading is in, every counter that counts it too (they are not one atomic
        // step: `samples_published_total` can show 3 while the hub's event count still shows
        // 2), and the capture loop has timed at least one frame.
        if wants.iter().all(|w| body.contains(w))
            && body.contains("framewire_stage_latency_recent_seconds{")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Every counter name belongs to one subsystem's set (none is a sum of two).
    assert_eq!(server.registry().duplicates(), Vec::<String>::new());
    for want in wants {
        assert!(body.contains(want), "{want} missing from:\n{body}");
    }
    // The Grafana dashboard in the repository only queries metrics we export.
    let dash = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../dashboards/framewire.json"
    ))
    .unwrap();
    let exported: std::collections::HashSet<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let mut queried = 0;
    for (i, _) in dash.match_indices("framewire_") {
        let name: String = dash[i..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        // A histogram's series are its name plus _bucket, _sum and _count.
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|b| exported.contains(b)))
            .unwrap_or(&name);
        assert!(
            exported.contains(base),
            "the dashboard queries {name}, which is not exported"
        );
        queried += 1;
    }
    assert!(queried >= 10);
    let mut check = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus; `make setup` installs it)");
    use std::io::Write;
    check
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    server.shutdown().await;
}

/// A byte stream shaped like a capture of a real device: CRLF endings, its serial number, a
/// 3328-digit EEPROM dump, readings with a stray ':' in a key, floats only where a '.' is,
/// thermal frames as 768 words, 3072 and 3336 hex digits, the location in the packet word or
/// as a first field, and a blank line. Returns the bytes and the places worth cutting at.
fn capture_like_stream() -> (Vec<u8>, Vec<usize>) {
    let words: Vec<String> = (0..768u16).map(|i| format!("{:04x}", 0x1f00 + i)).collect();
    let calibration: String = (0..66u16).map(|i| format!("{:04X}", 0xC000 + i)).collect();
    let eeprom: String = (0..832u16).map(|i| format!("{:04X}", i * 3)).collect();
    let lines = [
        "#serialno:EE0042!".to_string(),
        format!("#EEPROM1:{eeprom}!"),
        "#locid:lab_2!".to_string(),
        "#Sensor:ADC1=592,ADC2=894,ADC3:=905!".to_string(),
        "".to_string(),
        "#Sensor:ADC1=12.5,ADC2=7,T=21.25!".to_string(),
        format!("#frame:{}!", thermal_hex(3)),
        format!("#frameroom9:{}!", words.join(" ")),
        format!("#frame:hall:{}{calibration}!", thermal_hex(5)),
        "#Sensorcellar:ADC1=1!".to_string(),
        "#Sensor:attic:ADC1=2,ADC2=3.0!".to_string(),
    ];
    let mut bytes = Vec::new();
    let mut cuts = Vec::new();
    for l in &lines {
        let start = bytes.len();
        bytes.extend_from_slice(l.as_bytes());
        bytes.extend_from_slice(b"\r\n");
        // Right after '#', inside the packet word, in the middle (a hex word, a key), between
        // '!' and '\r', and between '\r' and '\n'.
        cuts.extend([
            start + 1,
            start + 3,
            start + l.len() / 2,
            start + l.len(),
            start + l.len() + 1,
        ]);
    }
    cuts.retain(|&c| c > 0 && c < bytes.len());
    cuts.sort_unstable();
    cuts.dedup();
    (bytes, cuts)
}

async fn next(sub: &framewire_sensors::streams::Subscription) -> Item {
    match tokio::time::timeout(Duration::from_secs(10), sub.next()).await {
        Ok(Delivery::Item(i)) => i,
        other => panic!("expected an item, got {other:?}"),
    }
}

/// Every line of a real-device-shaped stream, cut at awkward places, is accounted for: each
/// reading with its type and stream, each frame in its stream, the EEPROM dump, nothing rejected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_device_stream_split_anywhere_is_fully_accounted_for() {
    use framewire_proto::sensor_line::Value as V;
    let server = server().await;
    let streams = server.streams().unwrap().clone();
    let samples = streams.subscribe(Filter::parse("sensor/"), 64);
    let grids = streams.subscribe(Filter::parse("thermal/"), 64);
    let (bytes, cuts) = capture_like_stream();
    let mut s = TcpStream::connect(server.sensor_addr.unwrap())
        .await
        .unwrap();
    s.set_nodelay(true).unwrap();
    let mut greet = [0u8; START.len()];
    s.read_exact(&mut greet).await.unwrap();
    let mut at = 0;
    for c in cuts.into_iter().chain([bytes.len()]) {
        s.write_all(&bytes[at..c]).await.unwrap();
        s.flush().await.unwrap();
        at = c;
    }
    let want: [(&str, &[(&str, V)]); 4] = [
        (
            "sensor/lab_2",
            &[
                ("ADC1", V::Int(592)),
                ("ADC2", V::Int(894)),
                ("ADC3", V::Int(905)),
            ],
        ),
        (
            "sensor/lab_2",
            &[
                ("ADC1", V::Float(12.5)),
                ("ADC2", V::Int(7)),
                ("T", V::Float(21.25)),
            ],
        ),
        ("sensor/cellar", &[("ADC1", V::Int(1))]),
        (
            "sensor/attic",
            &[("ADC1", V::Int(2)), ("ADC2", V::Float(3.0))],
        ),
    ];
    for (stream, readings) in want {
        let Item::Sample(got) = next(&samples).await else {
            panic!("not a sample")
        };
        assert_eq!(&*got.stream, stream);
        assert_eq!(&*got.device, "EE0042", "the serial number names the device");
        let r: Vec<(&str, V)> = got.readings.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(r, readings);
    }
    let mut frames = HashMap::new();
    for _ in 0..3 {
        let Item::Thermal(t) = next(&grids).await else {
            panic!("not a grid")
        };
        frames.insert(t.stream.to_string(), t.values.clone());
    }
    let hex_values = |seed: u16| -> Vec<u16> {
        (0..768u16)
            .map(|i| i.wrapping_mul(7).wrapping_add(seed))
            .collect()
    };
    assert_eq!(frames["thermal/lab_2"], hex_values(3));
    assert_eq!(
        frames["thermal/room9"],
        (0..768u16).map(|i| 0x1f00 + i).collect::<Vec<_>>()
    );
    assert_eq!(frames["thermal/hall"], hex_values(5));
    assert_eq!(server.counter("sensor_eeprom_packets"), 1);
    assert_eq!(server.counter("sensor_samples_accepted"), 4);
    assert_eq!(server.counter("sensor_thermal_accepted"), 3);
    let rejected: Vec<_> = server
        .counters()
        .into_iter()
        .filter(|(k, v)| k.starts_with("sensor_lines_rejected") && *v > 0)
        .collect();
    assert!(rejected.is_empty(), "lines rejected: {rejected:?}");
    server.shutdown().await;
}

/// The start command is configurable: another one, or none at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_command_is_configurable() {
    for (start, want) in [(Some("REQUEST1"), &b"REQUEST1\n"[..]), (None, &b""[..])] {
        let server = Server::start(ServerConfig {
            sensor_start: start.map(str::to_string),
            ..sensor_config()
        })
        .await
        .unwrap();
        let streams = server.streams().unwrap().clone();
        let sub = streams.subscribe(Filter::All, 4);
        let mut s = TcpStream::connect(server.sensor_addr.unwrap())
            .await
            .unwrap();
        s.write_all(b"#Sensor:ADC1=1!\n").await.unwrap();
        // Once the line is through, the connection has been served from its start; hanging up
        // ends it, and what the server wrote before is all there is.
        tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await
            .unwrap();
        s.shutdown().await.unwrap();
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut got))
            .await
            .unwrap()
            .unwrap();
        server.shutdown().await;
        assert_eq!(got, want, "start command {start:?}");
    }
}
