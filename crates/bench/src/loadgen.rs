//! `framewire loadgen`: the EmberEye load-test tool's options and JSON, plus what it lacks:
//! true end-to-end latency (sent → delivered to a subscriber this tool runs), p50/p95/p99/max,
//! lost readings, and the server's CPU and RSS.
//!
//! Each client is one connection sending `#locid:<prefix>_<i>!` and then sensor lines (every
//! other one a thermal frame with `--include-frames`), paced at `--rate` lines per second.
//! Lines due in the same tick (`--write-every-ms`, 5 ms) go out in one write; clients' ticks
//! are spread evenly over the interval, and all clients connect before any sends. The
//! subscriber asks for `sensor/` over framewire v1; the k-th sample of `sensor/<prefix>_<i>`
//! is the k-th sensor line client i sent (per-device order is guaranteed), so its latency is
//! arrival − send, on one clock.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::BytesMut;
use framewire_proto::v1::{self, Packet, Role};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::args::LoadgenArgs;

/// Per-client send record.
struct Client {
    /// Send time (ns since start) of each sensor line, in order.
    sent_ns: Vec<u64>,
    packets: u64,
    bytes: u64,
    errors: u64,
    /// Why the client stopped early, if it did.
    error: Option<String>,
    write_ms: Vec<f64>,
    duration: f64,
    /// Connect and `#locid` time, if it connected.
    connect_ms: Option<f64>,
}

#[derive(Serialize)]
struct PerClient {
    packets: u64,
    bytes: u64,
    errors: u64,
    duration_sec: f64,
    pps: f64,
    throughput_kbps: f64,
    latency_avg_ms: f64,
    latency_p95_ms: f64,
    latency_max_ms: f64,
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

use framewire_telemetry::process;
use framewire_telemetry::stats::percentile as pct;

fn frame_line(rng: &mut Rng) -> String {
    let mut s = String::with_capacity(3090);
    s.push_str("#frame:");
    for _ in 0..768 {
        s.push_str(&format!("{:04X}", rng.range(0x1000, 0x2000)));
    }
    s.push_str("!\n");
    s
}

/// What the clients share with each other and the run.
struct Shared {
    /// Ctrl-C: stop sending.
    stop: AtomicBool,
    /// Every client passes once, connected or not, and so does the run; then sending starts.
    all_in: tokio::sync::Barrier,
    connected: AtomicUsize,
    /// Lines sent so far, for the progress lines.
    sent: AtomicU64,
}

/// Lines a client will send, if known ahead: its records are sized for them up front, since
/// a thousand clients growing their vectors at the same moment (they run at one rate) stalled
/// the tool for milliseconds and showed up as latency spikes that were not the server's.
fn expected_lines(a: &LoadgenArgs) -> usize {
    let n = match (a.packets, a.duration) {
        (Some(p), _) => p as f64,
        (None, Some(d)) if a.rate > 0.0 => a.rate * d * 1.05 + 16.0,
        _ => 0.0,
    };
    // At most 16 M records over all clients (128 MB for sends, as much for arrivals); past
    // that the vectors grow as they must.
    n.min(16e6 / a.clients.max(1) as f64) as usize
}

/// Connects and names the device (`#locid`).
async fn connect(a: &LoadgenArgs, i: usize) -> Result<TcpStream, String> {
    let mut sock = TcpStream::connect((a.host.as_str(), a.port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let _ = sock.set_nodelay(true);
    // The server greets; the original tool never reads, and neither do we.
    sock.write_all(format!("#locid:{}_{i}!\n", a.locid_prefix).as_bytes())
        .await
        .map_err(|e| format!("first write: {e}"))?;
    Ok(sock)
}

async fn run_client(i: usize, a: Arc<LoadgenArgs>, start: Instant, run: Arc<Shared>) -> Client {
    let lines = expected_lines(&a);
    let mut c = Client {
        sent_ns: Vec::with_capacity(lines),
        packets: 0,
        bytes: 0,
        errors: 0,
        error: None,
        write_ms: Vec::with_capacity(lines.min(a.duration.map_or(lines, |d| {
            (d * 1000.0 / a.write_every_ms.max(0.1)) as usize + 16
        }))),
        duration: 0.0,
        connect_ms: None,
    };
    let mut rng = Rng(a.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64 + 1) | 1);
    let t = Instant::now();
    let sock = connect(&a, i).await;
    // Every client connects before any sends (each passes here once, connected or not), so
    // the measurement is of steady traffic, not of lines racing a thousand connects.
    if sock.is_ok() {
        run.connected.fetch_add(1, Ordering::Relaxed);
    }
    run.all_in.wait().await;
    let mut sock = match sock {
        Ok(s) => s,
        Err(e) => {
            c.errors += 1;
            c.error = Some(e);
            return c;
        }
    };
    c.connect_ms = Some(t.elapsed().as_secs_f64() * 1000.0);
    let t0 = Instant::now();
    let mut buf = BytesMut::new();
    let target = a.packets;
    let deadline = a.duration.map(|d| t0 + Duration::from_secs_f64(d));
    let tick_len = Duration::from_secs_f64(a.write_every_ms.max(0.1) / 1000.0);
    // Independent devices are not in step: client i writes at i/clients of the way through
    // each tick, so a thousand writes do not land in the same millisecond (which measured
    // the loaded machine's scheduler rather than the server).
    let phase = tick_len.mul_f64(i as f64 / a.clients.max(1) as f64);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + phase, tick_len);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut due, mut n) = (0f64, 0u64);
    loop {
        if run.stop.load(Ordering::Relaxed)
            || target.is_some_and(|t| n >= t)
            || deadline.is_some_and(|d| Instant::now() >= d)
        {
            break;
        }
        let batch = if a.rate > 0.0 {
            tick.tick().await;
            due += a.rate * tick_len.as_secs_f64();
            let k = due.floor() as u64;
            due -= k as f64;
            k
        } else {
            64
        };
        let batch = target.map_or(batch, |t| batch.min(t - n));
        if batch == 0 {
            continue;
        }
        buf.clear();
        let now_ns = start.elapsed().as_nanos() as u64;
        let samples_before = c.sent_ns.len();
        for _ in 0..batch {
            if a.include_frames && n % 2 == 1 {
                buf.extend_from_slice(frame_line(&mut rng).as_bytes());
            } else {
                let line = format!(
                    "#Sensor:ADC1={},ADC2={},ADC3={}!\n",
                    rng.range(400, 700),
                    rng.range(750, 900),
                    rng.range(850, 950)
                );
                buf.extend_from_slice(line.as_bytes());
                c.sent_ns.push(now_ns);
            }
            n += 1;
        }
        let t = Instant::now();
        if let Err(e) = sock.write_all(&buf).await {
            // Not sent: these readings are not expected at the subscriber.
            c.sent_ns.truncate(samples_before);
            c.errors += 1;
            c.error = Some(format!("write: {e}"));
            break;
        }
        c.write_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        c.packets += batch;
        c.bytes += buf.len() as u64;
        run.sent.fetch_add(batch, Ordering::Relaxed);
    }
    c.duration = t0.elapsed().as_secs_f64();
    c
}

/// Arrivals seen by the subscriber: per client, latencies (ms) in order.
#[derive(Default)]
struct Arrivals {
    per_client: Vec<Vec<u64>>,
    missed: u64,
    other: u64,
}

async fn run_subscriber(
    a: Arc<LoadgenArgs>,
    start: Instant,
    arrivals: Arc<Mutex<Arrivals>>,
    delivered: Arc<AtomicU64>,
    ready: tokio::sync::oneshot::Sender<()>,
) -> anyhow::Result<()> {
    let mut sock = TcpStream::connect((a.host.as_str(), a.subscribe_port))
        .await
        .with_context(|| format!("subscribing on {}:{}", a.host, a.subscribe_port))?;
    sock.write_all(
        &Packet::Hello {
            version: v1::VERSION,
            role: Role::Subscriber,
            caps: 0,
            stream: "sensor/".into(),
            token: a.token.clone().unwrap_or_default(),
        }
        .to_bytes(),
    )
    .await?;
    let prefix = format!("sensor/{}_", a.locid_prefix);
    let mut dec = v1::Decoder::new(v1::DEFAULT_MAX_FRAME_BODY);
    let mut ready = Some(ready);
    // (client, arrival) pairs of one read, added to `arrivals` under one lock.
    let mut got: Vec<(usize, u64)> = Vec::with_capacity(4096);
    loop {
        // Everything in one read arrived together: one timestamp for all of it.
        let now = start.elapsed().as_nanos() as u64;
        while let Some(p) = dec.next_packet()? {
            match p {
                Packet::Welcome { .. } => {
                    if let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                }
                Packet::Sample { stream, .. } => {
                    let client = stream
                        .strip_prefix(&prefix)
                        .and_then(|x| x.parse::<usize>().ok());
                    got.push((client.unwrap_or(usize::MAX), now));
                }
                Packet::Missed { samples } => {
                    arrivals.lock().unwrap_or_else(|e| e.into_inner()).missed += samples;
                }
                Packet::Goodbye { reason, .. } => {
                    bail!("the server refused the subscriber: {reason}")
                }
                _ => {}
            }
        }
        if !got.is_empty() {
            let mut ar = arrivals.lock().unwrap_or_else(|e| e.into_inner());
            let mut n = 0;
            for &(i, t) in &got {
                match ar.per_client.get_mut(i) {
                    Some(v) => {
                        v.push(t);
                        n += 1;
                    }
                    None => ar.other += 1,
                }
            }
            drop(ar);
            delivered.fetch_add(n, Ordering::Relaxed);
            got.clear();
        }
        if sock.read_buf(dec.buffer_mut()).await? == 0 {
            bail!("the server closed the subscriber connection");
        }
    }
}

/// CPU seconds and RSS (MB) of a process, from /proc.
fn proc_usage(pid: u32) -> Option<(f64, f64)> {
    let pid = pid.to_string();
    Some((process::cpu_seconds(&pid)?, process::rss_mb(&pid)?))
}

/// The pid of the process listening on TCP `port` (found through /proc), if we may see it.
fn find_listener(port: u16) -> Option<u32> {
    let mut inodes = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(t) = std::fs::read_to_string(table) else {
            continue;
        };
        for l in t.lines().skip(1) {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) = (f.get(1), f.get(3), f.get(9)) else {
                continue;
            };
            let p = local
                .rsplit(':')
                .next()
                .and_then(|h| u16::from_str_radix(h, 16).ok());
            if p == Some(port) && *state == "0A" {
                inodes.push(format!("socket:[{inode}]"));
            }
        }
    }
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(e.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Ok(t) = std::fs::read_link(fd.path()) {
                if inodes.iter().any(|i| t.to_string_lossy() == *i) {
                    return Some(pid);
                }
            }
        }
    }
    None
}

pub async fn run(a: LoadgenArgs) -> anyhow::Result<()> {
    if a.packets.is_none() && a.duration.is_none() {
        bail!("give --packets N or --duration SECONDS");
    }
    if a.clients == 0 {
        bail!("--clients must be at least 1");
    }
    let a = Arc::new(a);
    let start = Instant::now();
    let server_pid = a.server_pid.or_else(|| find_listener(a.port));
    let lines = expected_lines(&a);
    let arrivals = Arc::new(Mutex::new(Arrivals {
        // Not `vec![v; n]`: a clone of an empty vector does not keep its capacity.
        per_client: (0..a.clients).map(|_| Vec::with_capacity(lines)).collect(),
        ..Default::default()
    }));
    let delivered = Arc::new(AtomicU64::new(0));
    let subscribed = start_subscriber(&a, start, &arrivals, &delivered).await?;
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        all_in: tokio::sync::Barrier::new(a.clients + 1),
        connected: AtomicUsize::new(0),
        sent: AtomicU64::new(0),
    });
    let mut tasks = Vec::new();
    let connecting = Instant::now();
    for i in 0..a.clients {
        tasks.push(tokio::spawn(run_client(
            i,
            a.clone(),
            start,
            shared.clone(),
        )));
    }
    shared.all_in.wait().await;
    let connect_secs = connecting.elapsed().as_secs_f64();
    eprintln!(
        "[{:>6.1}s] {} of {} clients connected in {:.0} ms; sending",
        start.elapsed().as_secs_f64(),
        shared.connected.load(Ordering::Relaxed),
        a.clients,
        connect_secs * 1000.0
    );
    let sending = Instant::now();
    let server_before = server_pid.and_then(proc_usage);
    let progress = spawn_progress(&a, start, &shared, &delivered);
    let ctrl_c = {
        let shared = shared.clone();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            shared.stop.store(true, Ordering::Relaxed);
        })
    };
    let mut clients = Vec::new();
    for t in tasks {
        clients.push(t.await?);
    }
    let send_secs = sending.elapsed().as_secs_f64();
    // The server's CPU over the sending window (the drain below is not load).
    let server_after = server_pid.and_then(proc_usage);
    let expected: u64 = clients.iter().map(|c| c.sent_ns.len() as u64).sum();
    if subscribed {
        drain(&delivered, expected).await;
    }
    progress.abort();
    ctrl_c.abort();
    let run = Run {
        secs: send_secs,
        connect_secs,
        before: server_before,
        after: server_after,
        subscribed,
    };
    report(&a, &clients, &arrivals, &run)
}

/// Starts the end-to-end subscriber (unless `--no-subscriber`) and waits until the server has
/// welcomed it. Whether one runs.
async fn start_subscriber(
    a: &Arc<LoadgenArgs>,
    start: Instant,
    arrivals: &Arc<Mutex<Arrivals>>,
    delivered: &Arc<AtomicU64>,
) -> anyhow::Result<bool> {
    if a.no_subscriber {
        return Ok(false);
    }
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    // The subscriber has a thread and a runtime of its own, so arrivals are timed when they
    // arrive, not when the 1000 client tasks leave it a turn.
    let (a, arrivals, delivered) = (a.clone(), arrivals.clone(), delivered.clone());
    let sub = std::thread::Builder::new()
        .name("loadgen-subscriber".into())
        .spawn(move || -> anyhow::Result<()> {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(run_subscriber(a, start, arrivals, delivered, ready_tx))
        })?;
    match tokio::time::timeout(Duration::from_secs(5), ready_rx).await {
        Ok(Ok(())) => Ok(true),
        // The subscriber dropped its end without being welcomed: its thread has ended.
        Ok(Err(_)) => {
            let why = match sub.join() {
                Ok(Err(e)) => format!("{e:#}"),
                _ => "it stopped".to_string(),
            };
            bail!("the end-to-end subscriber failed: {why} (or pass --no-subscriber)");
        }
        Err(_) => bail!("the subscriber was not welcomed within 5 s (is the server's framewire port right? --subscribe-port, or --no-subscriber)"),
    }
}

/// Prints progress every `--report-interval` seconds until aborted.
fn spawn_progress(
    a: &Arc<LoadgenArgs>,
    start: Instant,
    shared: &Arc<Shared>,
    delivered: &Arc<AtomicU64>,
) -> tokio::task::JoinHandle<()> {
    let (shared, delivered) = (shared.clone(), delivered.clone());
    let every = Duration::from_secs_f64(a.report_interval.max(0.2));
    tokio::spawn(async move {
        let (mut last_s, mut last_t) = (0u64, Instant::now());
        loop {
            tokio::time::sleep(every).await;
            let (s, d) = (
                shared.sent.load(Ordering::Relaxed),
                delivered.load(Ordering::Relaxed),
            );
            let dt = last_t.elapsed().as_secs_f64();
            eprintln!(
                "[{:>6.1}s] sent {s} packets ({:.0}/s), delivered to the subscriber {d}",
                start.elapsed().as_secs_f64(),
                (s - last_s) as f64 / dt
            );
            (last_s, last_t) = (s, Instant::now());
        }
    })
}

/// Waits for the last readings to arrive: until `expected` are delivered, or 5 s without one.
async fn drain(delivered: &AtomicU64, expected: u64) {
    let mut last = delivered.load(Ordering::Relaxed);
    let mut quiet = Instant::now();
    while delivered.load(Ordering::Relaxed) < expected && quiet.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let d = delivered.load(Ordering::Relaxed);
        if d != last {
            (last, quiet) = (d, Instant::now());
        }
    }
}

/// One run's phases and the server's usage around the sending phase.
struct Run {
    /// Sending phase, from the moment every client had connected.
    secs: f64,
    connect_secs: f64,
    before: Option<(f64, f64)>,
    after: Option<(f64, f64)>,
    subscribed: bool,
}

impl PerClient {
    fn of(c: &Client) -> Self {
        let mut w = c.write_ms.clone();
        let d = c.duration.max(1e-9);
        PerClient {
            packets: c.packets,
            bytes: c.bytes,
            errors: c.errors,
            duration_sec: c.duration,
            pps: c.packets as f64 / d,
            throughput_kbps: c.bytes as f64 * 8.0 / 1000.0 / d,
            latency_avg_ms: w.iter().sum::<f64>() / w.len().max(1) as f64,
            latency_p95_ms: pct(&mut w, 95.0),
            latency_max_ms: w.iter().cloned().fold(0.0, f64::max),
        }
    }
}

/// Readings sent, readings delivered, and each delivered reading's latency (ms): the k-th
/// arrival of client i's stream is the k-th reading it sent.
fn end_to_end(clients: &[Client], ar: &Arrivals) -> (u64, u64, Vec<f64>) {
    let mut e2e = Vec::new();
    let (mut sent, mut delivered) = (0u64, 0u64);
    for (c, got) in clients.iter().zip(&ar.per_client) {
        sent += c.sent_ns.len() as u64;
        delivered += got.len().min(c.sent_ns.len()) as u64;
        for (s, r) in c.sent_ns.iter().zip(got) {
            e2e.push(r.saturating_sub(*s) as f64 / 1e6);
        }
    }
    (sent, delivered, e2e)
}

fn report(
    a: &LoadgenArgs,
    clients: &[Client],
    arrivals: &Mutex<Arrivals>,
    run: &Run,
) -> anyhow::Result<()> {
    let Run {
        secs,
        before,
        after,
        subscribed,
        ..
    } = *run;
    let per_client: Vec<PerClient> = clients.iter().map(PerClient::of).collect();
    let mut all_w: Vec<f64> = clients
        .iter()
        .flat_map(|c| c.write_ms.iter().copied())
        .collect();
    let total_packets: u64 = clients.iter().map(|c| c.packets).sum();
    let ar = arrivals.lock().unwrap_or_else(|e| e.into_inner());
    let (sent_samples, delivered, mut e2e) = end_to_end(clients, &ar);
    let lost = sent_samples.saturating_sub(delivered);
    let server = match (before, after) {
        (Some((c0, _)), Some((c1, rss))) => serde_json::json!({
            "cpu_percent": (c1 - c0) / secs * 100.0,
            "rss_mb": rss,
        }),
        _ => serde_json::Value::Null,
    };
    let own = proc_usage(std::process::id());
    let mut connect_ms: Vec<f64> = clients.iter().filter_map(|c| c.connect_ms).collect();
    let json = serde_json::json!({
        "test_config": {
            "clients": a.clients,
            "target": match (a.packets, a.duration) {
                (Some(p), _) => serde_json::json!({ "packets": p }),
                (None, d) => serde_json::json!({ "duration": d }),
            },
            "rate_pps": a.rate,
            "include_frames": a.include_frames,
            "server": format!("{}:{}", a.host, a.port),
        },
        "per_client": per_client,
        "aggregate": {
            "total_packets": total_packets,
            "total_bytes": clients.iter().map(|c| c.bytes).sum::<u64>(),
            "total_errors": clients.iter().map(|c| c.errors).sum::<u64>(),
            "aggregate_pps": total_packets as f64 / secs,
            "avg_latency_ms": all_w.iter().sum::<f64>() / all_w.len().max(1) as f64,
            "p95_latency_ms": pct(&mut all_w, 95.0),
            "max_latency_ms": all_w.iter().cloned().fold(0.0, f64::max),
        },
        "system_metrics": {
            "cpu_percent": own.map(|(c, _)| c / start_secs_of_self().max(1e-9) * 100.0),
            "mem_rss_mb": own.map(|(_, r)| r),
            "threads": std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0),
        },
        "end_to_end": if subscribed {
            serde_json::json!({
                "samples_sent": sent_samples,
                "delivered": delivered,
                "lost": lost,
                "missed_notices": ar.missed,
                "p50_ms": pct(&mut e2e, 50.0),
                "p95_ms": pct(&mut e2e, 95.0),
                "p99_ms": pct(&mut e2e, 99.0),
                "max_ms": e2e.iter().cloned().fold(0.0, f64::max),
            })
        } else {
            serde_json::Value::Null
        },
        "server_process": server,
        "connect": {
            "connected": connect_ms.len(),
            "all_connected_ms": run.connect_secs * 1000.0,
            "p50_ms": pct(&mut connect_ms, 50.0),
            "max_ms": connect_ms.iter().cloned().fold(0.0, f64::max),
        },
    });
    let text = serde_json::to_string_pretty(&json)?;
    println!("{text}");
    if let Some(p) = &a.stats_file {
        std::fs::write(p, &text).with_context(|| format!("writing {}", p.display()))?;
    }
    verdict(
        a,
        clients,
        connect_ms.is_empty(),
        subscribed,
        lost,
        sent_samples,
    )
}

/// Why clients stopped early, on stderr; an error when nothing connected or readings were lost.
fn verdict(
    a: &LoadgenArgs,
    clients: &[Client],
    none_connected: bool,
    subscribed: bool,
    lost: u64,
    sent_samples: u64,
) -> anyhow::Result<()> {
    let mut reasons: std::collections::BTreeMap<&str, usize> = Default::default();
    for e in clients.iter().filter_map(|c| c.error.as_deref()) {
        *reasons.entry(e).or_default() += 1;
    }
    for (why, n) in reasons {
        eprintln!("{n} of {} clients stopped early: {why}", clients.len());
    }
    if none_connected {
        bail!(
            "no client could connect to {}:{} (is the server's sensor port right? --host, --port)",
            a.host,
            a.port
        );
    }
    if subscribed && lost > 0 {
        bail!("{lost} of {sent_samples} readings never reached the subscriber");
    }
    Ok(())
}

fn start_secs_of_self() -> f64 {
    process::age_of_self().unwrap_or(0.0)
}
