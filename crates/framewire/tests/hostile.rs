//! The hostile-client probe suite: the real `framewire serve`, with a token, attacked on every
//! listener while a healthy viewer and a healthy sensor device with its subscriber watch:
//! thousands of idle connections, half-sent HTTP heads, a subscriber that never reads under a
//! sensor flood with a stream per line and oversized names, and a scrape flood.
//!
//! Through every probe the server's resident memory stays under 256 MB and its descriptors
//! within its listeners' limits, the healthy clients keep working, and the counters account
//! for every connection refused. (Bounds that would catch a server falling over, not
//! performance targets: those are `framewire bench`'s.)

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use framewire_client::viewer::{run_viewer, ViewerOptions, ViewerStats};
use framewire_proto::v1::{self, Packet, Role};
use framewire_server::Protocol;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;

const TOKEN: &str = "hostile-probe-token";
const LIMITS: &str = "v1=64,daylight=4,http=64,sensor=2000,touch=4";
/// The limits above, summed, and the reserve the server keeps for everything else.
const MAX_FDS: usize = 64 + 4 + 64 + 2000 + 4 + 256;
const RSS_LIMIT_KB: u64 = 256 * 1024;

struct Served {
    child: Child,
    v1: SocketAddr,
    daylight: SocketAddr,
    sensor: SocketAddr,
    http: SocketAddr,
    dir: std::path::PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn serve() -> Served {
    let dir = std::env::temp_dir().join(format!("fw-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let port = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
    let ([v1, daylight, sensor, http], ports) = common::listener_ports();
    let child = Command::new(env!("CARGO_BIN_EXE_framewire"))
        .args([
            "serve",
            "--scene",
            "mixed",
            "--resolution",
            "320x240",
            "--fps",
            "30",
        ])
        .args(&ports)
        .args(["--no-touch", "--token", TOKEN, "--max-connections", LIMITS])
        .args([
            "--subscriber-queue-mib",
            "16",
            "--subscriber-budget-mib",
            "48",
        ])
        .args(["--max-streams", "5000"])
        .arg("--control-socket")
        .arg(dir.join("ctl.sock"))
        .arg("--status-file")
        .arg(dir.join("status"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting framewire serve");
    Served {
        child,
        v1: port(v1),
        daylight: port(daylight),
        sensor: port(sensor),
        http: port(http),
        dir,
    }
}

fn status_kb(pid: u32, key: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Samples the server's RSS and descriptors every 50 ms; keeps the highest of each.
struct Watch {
    peak_rss_kb: Arc<AtomicU64>,
    peak_fds: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Watch {
    fn start(pid: u32) -> Watch {
        let w = Watch {
            peak_rss_kb: Arc::default(),
            peak_fds: Arc::default(),
            stop: Arc::default(),
        };
        let (rss, fds, stop) = (w.peak_rss_kb.clone(), w.peak_fds.clone(), w.stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                rss.fetch_max(status_kb(pid, "VmRSS:"), Ordering::Relaxed);
                fds.fetch_max(fd_count(pid) as u64, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        w
    }

    fn check(&self, phase: &str) {
        let rss = self.peak_rss_kb.load(Ordering::Relaxed);
        let fds = self.peak_fds.load(Ordering::Relaxed) as usize;
        eprintln!(
            "after {phase}: peak RSS {} MB, peak descriptors {fds}",
            rss / 1024
        );
        assert!(rss < RSS_LIMIT_KB, "{phase}: RSS {rss} kB");
        assert!(
            fds <= MAX_FDS,
            "{phase}: {fds} descriptors (limits sum to {MAX_FDS})"
        );
    }
}

async fn http(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).await.ok()?;
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.ok()?;
    let mut resp = String::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_string(&mut resp))
        .await
        .ok()?
        .ok()?;
    let code = resp.get(9..12)?.parse().ok()?;
    Some((code, resp))
}

/// `framewire_events_total{event="NAME"}` from `/metrics`, retried while the port is busy.
async fn counters(addr: SocketAddr) -> std::collections::HashMap<String, u64> {
    for _ in 0..200 {
        if let Some((200, body)) = http(addr, "/metrics").await {
            return body
                .lines()
                .filter_map(|l| l.strip_prefix("framewire_events_total{event=\""))
                .filter_map(|l| {
                    let (name, v) = l.split_once("\"} ")?;
                    Some((name.to_string(), v.trim().parse().ok()?))
                })
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("/metrics never answered");
}

/// Frames the healthy viewer applied, with when.
#[derive(Clone, Default)]
struct Frames(Arc<Mutex<Vec<Instant>>>);

impl Frames {
    fn since(&self, t: Instant) -> usize {
        self.0.lock().unwrap().iter().filter(|&&f| f >= t).count()
    }
}

/// A healthy sensor device sending 50 samples a second stamped with the time it sent them, and
/// a subscriber recording how long each took to arrive.
struct HealthySensor {
    latencies_ms: Arc<Mutex<Vec<f64>>>,
}

impl HealthySensor {
    async fn start(sensor: SocketAddr, v1: SocketAddr, epoch: Instant) -> HealthySensor {
        let mut sub = TcpStream::connect(v1).await.unwrap();
        let hello = Packet::Hello {
            version: v1::VERSION,
            role: Role::Subscriber,
            caps: v1::caps::ALL,
            stream: "sensor/healthy".into(),
            token: TOKEN.into(),
        };
        sub.write_all(&hello.to_bytes()).await.unwrap();
        let latencies_ms: Arc<Mutex<Vec<f64>>> = Arc::default();
        let lat = latencies_ms.clone();
        tokio::spawn(async move {
            let mut dec = v1::Decoder::new(v1::DEFAULT_MAX_FRAME_BODY);
            loop {
                while let Ok(Some(p)) = dec.next_packet() {
                    if let Packet::Sample { readings, .. } = p {
                        let sent = readings.iter().find(|(k, _)| k == "T").map(|(_, v)| v);
                        if let Some(framewire_proto::sensor_line::Value::Int(us)) = sent {
                            let now = epoch.elapsed().as_micros() as i64;
                            lat.lock().unwrap().push((now - us) as f64 / 1000.0);
                        }
                    }
                }
                match sub.read_buf(dec.buffer_mut()).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        });
        tokio::spawn(async move {
            let mut dev = TcpStream::connect(sensor).await.unwrap();
            dev.write_all(b"#locid:healthy!\n").await.unwrap();
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            loop {
                tick.tick().await;
                let line = format!("#Sensor:T={}!\n", epoch.elapsed().as_micros());
                if dev.write_all(line.as_bytes()).await.is_err() {
                    return;
                }
            }
        });
        HealthySensor { latencies_ms }
    }

    /// The p99 of the samples since the last call, and how many there were.
    fn take_p99(&self) -> (f64, usize) {
        let mut v = std::mem::take(&mut *self.latencies_ms.lock().unwrap());
        v.sort_by(|a, b| a.total_cmp(b));
        let p99 = v.get(v.len() * 99 / 100).copied().unwrap_or(f64::INFINITY);
        (p99, v.len())
    }
}

async fn open_idle(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        if let Ok(s) = TcpStream::connect(addr).await {
            v.push(s);
        }
    }
    v
}

/// How the healthy clients fared over a phase: frames shown and the sensor's p99.
async fn healthy_through(phase: &str, frames: &Frames, sensor: &HealthySensor, from: Instant) {
    let secs = from.elapsed().as_secs_f64();
    let fps = frames.since(from) as f64 / secs;
    let (p99, n) = sensor.take_p99();
    eprintln!(
        "{phase}: healthy viewer {fps:.1} fps, healthy sensor p99 {p99:.1} ms over {n} samples"
    );
    // The source runs at 30 fps; a viewer starved by a flood shows a few or none.
    assert!(
        fps >= 10.0,
        "{phase}: the healthy viewer showed {fps:.1} fps"
    );
    assert!(
        n as f64 >= secs * 50.0 * 0.5,
        "{phase}: only {n} healthy samples arrived"
    );
    assert!(p99 < 1000.0, "{phase}: healthy sensor p99 {p99:.0} ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_clients_on_every_listener() {
    let served = serve();
    let pid = served.child.id();
    // Ready when /metrics answers.
    let _ = counters(served.http).await;
    let watch = Watch::start(pid);
    let epoch = Instant::now();

    // The healthy clients.
    let frames = Frames::default();
    let f = frames.clone();
    let mut opts = ViewerOptions::new(served.v1.to_string(), Protocol::V1);
    opts.token = Some(TOKEN.into());
    tokio::spawn(run_viewer(
        opts,
        Arc::new(Mutex::new(ViewerStats::default())),
        move |_| {
            f.0.lock().unwrap().push(Instant::now());
            true
        },
    ));
    let sensor = HealthySensor::start(served.sensor, served.v1, epoch).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(frames.since(epoch) > 0, "the healthy viewer got no picture");
    let _ = sensor.take_p99();

    // 1. Thousands of idle connections on every listener.
    let t = Instant::now();
    const IDLE: usize = 2500;
    let mut idle = Vec::new();
    for addr in [served.daylight, served.v1, served.http, served.sensor] {
        idle.push(open_idle(addr, IDLE).await);
    }
    let opened: Vec<usize> = idle.iter().map(Vec::len).collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    healthy_through("idle connections", &frames, &sensor, t).await;
    watch.check("idle connections");
    drop(idle);

    // 2. Half-sent HTTP heads (they hold their places until the header timeout), while the
    // healthy clients, on other listeners, carry on.
    let t = Instant::now();
    let mut heads = Vec::new();
    for _ in 0..200 {
        if let Ok(mut s) = TcpStream::connect(served.http).await {
            let _ = s
                .write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\nX-Slow: ")
                .await;
            heads.push(s);
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    healthy_through("half-sent HTTP heads", &frames, &sensor, t).await;
    watch.check("half-sent HTTP heads");
    drop(heads);

    // 3. Subscribers that never read, under a flood of samples from 10 devices, each line
    // of a new stream (past the stream limit), with 16 kB names among them.
    let t = Instant::now();
    // Four of them: each fills its own queue (16 MiB here), together more than their budget
    // (48 MiB), so the one holding the most is cut off.
    let mut stalled = Vec::new();
    for _ in 0..4 {
        let mut s = TcpStream::connect(served.v1).await.unwrap();
        let hello = Packet::Hello {
            version: v1::VERSION,
            role: Role::Subscriber,
            caps: v1::caps::ALL,
            stream: "*".into(),
            token: TOKEN.into(),
        };
        s.write_all(&hello.to_bytes()).await.unwrap();
        stalled.push(s);
    }
    let readings: String = (0..24).map(|i| format!("K{i}={i},")).collect();
    let long = "N".repeat(16 * 1000);
    let floods: Vec<_> = (0..10)
        .map(|d| {
            let (readings, long) = (readings.clone(), long.clone());
            let addr = served.sensor;
            tokio::spawn(async move {
                let mut dev = TcpStream::connect(addr).await.unwrap();
                let deadline = Instant::now() + Duration::from_secs(4);
                let mut k = 0u64;
                while Instant::now() < deadline {
                    let mut batch = String::new();
                    for _ in 0..200 {
                        if k.is_multiple_of(50) {
                            batch.push_str(&format!("#Sensor{long}{k}:A=1!\n"));
                        }
                        // One line in ten opens a stream (until the limit refuses them).
                        let stream = if k.is_multiple_of(10) {
                            format!("flood{d}_{k}")
                        } else {
                            format!("flood{d}")
                        };
                        batch.push_str(&format!("#Sensor{stream}:{readings}Z=1!\n"));
                        k += 1;
                    }
                    if dev.write_all(batch.as_bytes()).await.is_err() {
                        break;
                    }
                }
                k
            })
        })
        .collect();
    let mut sent = 0;
    for f in floods {
        sent += f.await.unwrap();
    }
    healthy_through("stalled subscriber and stream flood", &frames, &sensor, t).await;
    watch.check("stalled subscriber and stream flood");
    drop(stalled);

    // 4. Waves of a thousand concurrent scrapes, for 2 s: one wave can pass in less time than
    // the healthy sensor takes to send a few samples, too short to judge its rate.
    let t = Instant::now();
    let (mut answered, mut asked) = (0, 0);
    while t.elapsed() < Duration::from_secs(2) {
        let scrapes: Vec<_> = (0..1000)
            .map(|_| tokio::spawn(http(served.http, "/metrics")))
            .collect();
        asked += scrapes.len();
        for s in scrapes {
            answered += matches!(s.await.unwrap(), Some((200, _))) as usize;
        }
    }
    healthy_through("scrape flood", &frames, &sensor, t).await;
    watch.check("scrape flood");
    eprintln!("scrape flood: {answered} of {asked} answered, the rest refused at the limit");

    // The counters account for every connection.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let c = counters(served.http).await;
    let get = |k: &str| c.get(k).copied().unwrap_or(0);
    eprintln!(
        "refused: daylight {}, v1 {}, http {}, sensor {}; cut off {}, refused streams {}, bad names {}",
        get("connections_refused.daylight_full"),
        get("connections_refused.v1_full"),
        get("connections_refused.http_full"),
        get("connections_refused.sensor_full"),
        get("hub_subscribers_cut_off"),
        get("hub_items_refused_stream_limit"),
        get("sensor_lines_rejected.bad_name"),
    );
    // Daylight had only the idle flood: every connection was admitted or refused.
    assert_eq!(
        get("connections_admitted.daylight") + get("connections_refused.daylight_full"),
        opened[0] as u64
    );
    assert!(get("connections_admitted.daylight") <= 4);
    // Sensors: the healthy device, the idle flood and the ten flood devices.
    assert_eq!(
        get("connections_admitted.sensor") + get("connections_refused.sensor_full"),
        (1 + opened[3] + 10) as u64
    );
    assert!(get("connections_refused.v1_full") > 0 && get("connections_refused.http_full") > 0);
    assert!(
        get("hub_items_refused_stream_limit") > 0,
        "the stream limit was never reached"
    );
    assert!(get("sensor_lines_rejected.bad_name") > 0);
    assert!(
        get("hub_subscribers_cut_off") >= 1,
        "the stalled subscriber was never cut off ({sent} lines sent)"
    );
    let hwm = status_kb(pid, "VmHWM:");
    eprintln!(
        "server peak RSS over the whole run (VmHWM): {} MB",
        hwm / 1024
    );
    assert!(hwm < RSS_LIMIT_KB, "peak RSS {hwm} kB");
    watch.stop.store(true, Ordering::Relaxed);
}
