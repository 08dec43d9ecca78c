//! `framewire bench net`: framewire across emulated networks, QUIC beside TCP in the same run.
//! Each cell joins two network namespaces with `framewire-netem` (a seeded user-space relay for
//! delay and loss, `tbf` for the rate), runs a real server in one and a headless viewer in the
//! other (one process, so both read the same clock), and reports:
//! - capture → applied p50 and p99, through the viewer's clock-offset estimate;
//! - frames shown per second (exact pictures only);
//! - the time to an exact picture after a loss burst (every packet lost both ways for
//!   [`BURST_MS`] after the measuring window, so the burst is not in the latency figures);
//! - bytes sent (the relay's count, host → viewer, headers and retransmissions included);
//! - per-stage times on both ends: capture, encode and send on the host, decode and apply on
//!   the viewer; the network is the rest of capture → applied. The viewer is headless, so there
//!   is no present stage.

use std::net::SocketAddr;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use framewire_capture::{Resolution, Scene};
use framewire_client::viewer::{run_viewer, ViewerOptions, ViewerStats};
use framewire_netem::{in_namespace, Impairment, Link, LinkConfig};
use framewire_record::Pace;
use framewire_server::{Protocol, Server, ServerConfig, SourceSpec};
use framewire_telemetry::clock::now_us;
use framewire_telemetry::{LatencyReport, SampleWindow};
use serde::Serialize;

use crate::args::BenchNetArgs;

/// The loss burst in the middle of each cell.
pub const BURST_MS: u64 = 200;
/// Before measuring: the handshake, the first keyframe, the estimators settling.
const WARM_UP: Duration = Duration::from_millis(1500);
const TOKEN: &str = "bench-net-token";
/// After the burst: long enough for TCP's retransmission timer to back off a few times.
const RECOVERY_WAIT: Duration = Duration::from_millis(2500);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// QUIC, a stream per frame.
    Quic,
    /// QUIC, frames as datagrams with recovery shards (`serve --quic-frames datagrams`).
    QuicDgram,
    Tcp,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Quic => "quic",
            Transport::QuicDgram => "quic-dgram",
            Transport::Tcp => "tcp",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub transport: Transport,
    /// Mbit/s; `None` unlimited.
    pub rate_mbit: Option<u64>,
    pub rtt_ms: u64,
    pub loss_pct: f64,
    pub content: String,
    /// The viewer asked for lossless colour (else grey).
    pub colour: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct CellResult {
    #[serde(flatten)]
    pub cell: Cell,
    /// NaN (`null` in JSON) when no capture → applied time was measured in the window.
    pub e2e_ms_p50: f64,
    pub e2e_ms_p99: f64,
    /// Exact pictures shown per second over the measuring window.
    pub fps_shown: f64,
    pub source_fps: u32,
    /// From the end of the loss burst to the next exact picture; `None` if none came.
    pub exact_after_burst_ms: Option<f64>,
    pub mbytes_sent: f64,
    pub checksum_failures: u64,
    pub bases_missing: u64,
    /// quic-dgram: frames that came as datagrams, of those the ones rebuilt with recovery
    /// shards, and frames given up with too few shards: from the start (the warm-up too) to
    /// the end of the measuring window.
    pub datagram_frames: u64,
    pub datagram_recovered: u64,
    pub datagram_lost: u64,
    /// The host, over the whole cell (burst included): frames it planned for the viewer, and
    /// of those, deltas made for it alone (`rebased`: against the picture it acknowledged, or
    /// the one sent before a skip); the rest were the shared deltas, keyframes or Unchanged.
    pub host_frames: u64,
    pub host_rebased: u64,
    /// Of those, the deltas against the acknowledged picture (a frame reported missing, or a
    /// path not counted clean); and the stall probes (most of them such deltas too, some
    /// Unchanged, which are not among those made for the viewer).
    pub host_acknowledged: u64,
    pub host_probes: u64,
    /// Frames the host's capture passed over (no viewer took them; the next one's delta was
    /// made against a picture the viewer took; `frames_passed_over`), over the whole cell.
    pub host_passed_over: u64,
    /// Times large frames went on streams for a while because, as datagrams, the content
    /// outran the path (`large_datagrams_outrun`).
    pub host_outrun: u64,
    /// The host's delivery-rate estimate for the viewer (Mbit/s) and its minimum RTT (ms) when
    /// the cell ended (after the burst), and QUIC's congestion window then (bytes; TCP: none).
    pub host_bandwidth_mbps: f64,
    pub host_min_rtt_ms: f64,
    pub host_cwnd_bytes: Option<u64>,
    /// The bound the host set on that window, when in force at the end.
    pub host_window_bound_bytes: Option<u64>,
    /// QUIC's smoothed RTT at the end (ms).
    pub host_transport_rtt_ms: Option<f64>,
    /// Packets the emulated link's own devices dropped before its relay read them (their
    /// queue was full), host → viewer and back, over the whole cell: losses the cell was not
    /// set to have ([`Link::device_drops`]); `None` when they could not be read.
    pub device_drops: Option<(u64, u64)>,
    /// Packets the link's rate limit dropped, host → viewer and back, in the measuring window:
    /// its tbf queue (100 ms at the rate) was full, as a real bottleneck's would be
    /// ([`Link::shaper_drops`]); `None` when they could not be read.
    pub shaper_drops: Option<(u64, u64)>,
    /// Host: capture, encode, send; viewer: decode, apply; the rest of capture → applied
    /// (averages, ms).
    pub capture_ms: f64,
    pub encode_ms: f64,
    pub send_ms: f64,
    pub network_ms: f64,
    pub decode_ms: f64,
    pub apply_ms: f64,
}

/// What a cell shows: a synthetic scene, or a recording of real programs (`file:PATH`, made by
/// `framewire record` or `make corpus`) replayed at its recorded pace, from the start again
/// when it ends.
fn source_of(content: &str) -> anyhow::Result<SourceSpec> {
    let scene = match content {
        "typing" => Scene::Typing,
        "scroll" => Scene::Scroll,
        "video" | "moving" => Scene::Video,
        other => match other.strip_prefix("file:") {
            Some(path) => {
                let path = std::path::PathBuf::from(path);
                // Opened here once, so a wrong path fails before any cell runs.
                framewire_record::FileSource::open(&path, Pace::Recorded)
                    .map_err(|e| anyhow::anyhow!("content {other:?}: {e}"))?;
                return Ok(SourceSpec::File {
                    path,
                    pace: Pace::Recorded,
                });
            }
            None => {
                bail!("unknown content {other:?}: typing, scroll, video or file:PATH (a recording)")
            }
        },
    };
    Ok(SourceSpec::Synthetic(scene))
}

/// A content's short name in the table: a recording by its file's stem.
fn label(content: &str) -> String {
    match content.strip_prefix("file:") {
        Some(path) => std::path::Path::new(path)
            .file_stem()
            .map_or(path.to_string(), |s| s.to_string_lossy().into_owned()),
        None => content.to_string(),
    }
}

/// What the viewer saw: (applied at, exact) per frame, in order.
type Shown = Arc<Mutex<Vec<(u64, bool)>>>;

fn run_cell(c: &Cell, a: &BenchNetArgs, seed: u64) -> anyhow::Result<CellResult> {
    let source = source_of(&c.content)?;
    let res: Resolution = a.resolution.parse()?;
    let imp = Impairment {
        delay_us: c.rtt_ms * 1000 / 2,
        loss: c.loss_pct / 100.0,
        seed,
        rate_kbit: c.rate_mbit.map(|m| m * 1000),
        ..Impairment::default()
    };
    let link = Arc::new(Link::start(LinkConfig::unique("bench-net").both_ways(imp))?);
    let host_ip = link.addr_a();
    let (addr_tx, addr_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (transport, fps, colour) = (c.transport, a.fps, c.colour);
    let ns_a = link.a().to_string();
    let cert_dir = std::env::temp_dir().join(format!("fw-bench-net-{}", std::process::id()));
    let cert_dir_after = cert_dir.clone();
    let host = std::thread::spawn(move || -> anyhow::Result<LatencyReport> {
        in_namespace(&ns_a, move || -> anyhow::Result<LatencyReport> {
            let rt = tokio::runtime::Runtime::new()?;
            rt.block_on(async move {
                let any = SocketAddr::from((host_ip, 0));
                let cfg = ServerConfig {
                    source,
                    resolution: res,
                    fps,
                    v1_addr: (transport == Transport::Tcp).then_some(any),
                    quic_addr: (transport != Transport::Tcp).then_some(any),
                    quic_datagrams: transport == Transport::QuicDgram,
                    quic_dir: Some(cert_dir),
                    daylight_addr: None,
                    token: Some(TOKEN.into()),
                    // The TCP baseline crosses the emulated network unencrypted, which the
                    // server refuses unless told (a benchmark between two namespaces).
                    insecure: transport == Transport::Tcp,
                    control_socket: None,
                    ..ServerConfig::default()
                };
                let s = Server::start(cfg).await?;
                let addr = s.quic_addr.or(s.v1_addr).context("a listener")?;
                let _ = addr_tx.send((addr, s.quic_fingerprint));
                let _ = stop_rx.await;
                let r = s.report();
                s.shutdown().await;
                Ok(r)
            })
        })?
    });
    let (addr, pin) = addr_rx
        .recv_timeout(Duration::from_secs(20))
        .context("the server did not start")?;
    // The burst, after the measuring window.
    let measure = Duration::from_secs_f64(a.seconds);
    let burst_at = WARM_UP + measure;
    let burst_end = Arc::new(Mutex::new(None::<u64>));
    let burster = {
        let (link, end) = (link.clone(), burst_end.clone());
        std::thread::spawn(move || -> anyhow::Result<Option<(u64, u64)>> {
            // The rate limit's drops over the measuring window (not the warm-up's start).
            let drops = || {
                link.shaper_drops()
                    .inspect_err(
                        |e| tracing::warn!(error = %e, "bench net: the rate limit's drops unread"),
                    )
                    .ok()
            };
            // Timed from the thread's start, and the blackout begun before the second reading,
            // so reading them (`tc`, twice a rate-limited cell) does not move the burst. The
            // blackout is the relay's, after the rate limit: the milliseconds a reading takes
            // change nothing there.
            let t0 = Instant::now();
            let sleep_until = |t: Duration| {
                std::thread::sleep((t0 + t).saturating_duration_since(Instant::now()))
            };
            sleep_until(WARM_UP);
            let before = drops();
            sleep_until(burst_at);
            let blackout = Impairment { loss: 1.0, ..imp };
            link.set_impairment(blackout, blackout)?;
            let window = before
                .and_then(|b| drops().map(|e| (e.0.saturating_sub(b.0), e.1.saturating_sub(b.1))));
            std::thread::sleep(Duration::from_millis(BURST_MS));
            link.set_impairment(imp, imp)?;
            *end.lock().unwrap_or_else(|e| e.into_inner()) = Some(now_us());
            Ok(window)
        })
    };
    let stats = Arc::new(Mutex::new(ViewerStats::default()));
    let shown: Shown = Arc::new(Mutex::new(Vec::new()));
    let (st, sh) = (stats.clone(), shown.clone());
    let ns_b = link.b().to_string();
    let viewer = in_namespace(&ns_b, move || -> anyhow::Result<(ViewerStats, u64, u64)> {
        let rt = framewire_client::viewer::runtime()?;
        rt.block_on(async move {
            let mut o = ViewerOptions::new(addr.to_string(), Protocol::V1).with_colour(colour);
            o.quic = pin.filter(|_| transport != Transport::Tcp);
            o.token = Some(TOKEN.into());
            let sh2 = sh.clone();
            let run = tokio::spawn(run_viewer(o, st.clone(), move |ev| {
                let ok = ev.checksum_ok == Some(true);
                sh2.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((now_us(), ok));
                true
            }));
            tokio::time::sleep(WARM_UP).await;
            let start = now_us();
            {
                let mut s = st.lock().unwrap_or_else(|e| e.into_inner());
                s.e2e_us = SampleWindow::new(100_000);
                s.decompress_us = SampleWindow::new(100_000);
                s.apply_us = SampleWindow::new(100_000);
            }
            tokio::time::sleep(measure).await;
            let end = now_us();
            let figures = st.lock().unwrap_or_else(|e| e.into_inner()).clone();
            // The burst, then time to recover from it.
            tokio::time::sleep(Duration::from_millis(BURST_MS) + RECOVERY_WAIT).await;
            run.abort();
            Ok::<_, anyhow::Error>((figures, start, end))
        })
    })??;
    let _ = stop_tx.send(());
    let report = host.join();
    // The cell's certificate is made afresh in the next: nothing is left behind.
    let _ = std::fs::remove_dir_all(&cert_dir_after);
    let report = report.map_err(|_| anyhow::anyhow!("host thread panicked"))??;
    let shaper_drops = burster
        .join()
        .map_err(|_| anyhow::anyhow!("burst thread panicked"))??;
    let (ab, _) = link.counters();
    let device_drops = link
        .device_drops()
        .inspect_err(|e| tracing::warn!(error = %e, "bench net: the link's device drops unread"))
        .ok();
    let (s, start, stop) = viewer;
    let window_s = (stop - start) as f64 / 1e6;
    let shown = shown.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let exact = shown
        .iter()
        .filter(|&&(t, ok)| ok && t >= start && t < stop)
        .count();
    let end = *burst_end.lock().unwrap_or_else(|e| e.into_inner());
    let recovered = end.and_then(|e| {
        shown
            .iter()
            .find(|&&(t, ok)| ok && t >= e)
            .map(|&(t, _)| (t - e) as f64 / 1000.0)
    });
    let ms = |w: &SampleWindow| w.avg().unwrap_or(0.0) / 1000.0;
    let e2e_avg = ms(&s.e2e_us);
    // A colour cell's shared frames are made by the colour stage: its planes (with their
    // hashes and checksum) and its delta or keyframe. The grey stage's figure is of frames no
    // viewer of the cell was sent. Deltas made for the viewer alone are in neither, so where
    // most frames are (a lossy path), the network column still holds their making.
    let encode = if c.colour {
        report.colour_planes.avg + report.colour_compress.avg
    } else {
        report.delta_compress.avg
    };
    let send = report.send.avg;
    let (decode, apply) = (ms(&s.decompress_us), ms(&s.apply_us));
    let v = report.viewers.first();
    let counter = |name: &str| {
        let found = report.counters.iter().find(|(k, _)| k == name);
        found.map_or(0, |(_, v)| *v)
    };
    Ok(CellResult {
        cell: c.clone(),
        e2e_ms_p50: percentile_ms(&s.e2e_us, 50.0),
        e2e_ms_p99: percentile_ms(&s.e2e_us, 99.0),
        fps_shown: exact as f64 / window_s,
        source_fps: a.fps,
        exact_after_burst_ms: recovered,
        mbytes_sent: ab.bytes_out as f64 / 1e6,
        checksum_failures: s.checksum_failures,
        bases_missing: s.bases_missing,
        datagram_frames: s.datagram_frames,
        datagram_recovered: s.datagram_recovered,
        host_frames: v.map_or(0, |v| v.frames_planned),
        host_rebased: v.map_or(0, |v| v.rebased),
        host_acknowledged: v.map_or(0, |v| v.rebased_acknowledged),
        host_probes: v.map_or(0, |v| v.stall_probes),
        host_bandwidth_mbps: v.map_or(0.0, |v| v.bandwidth_mbps),
        host_min_rtt_ms: v.map_or(0.0, |v| v.min_rtt_ms),
        host_cwnd_bytes: v.and_then(|v| v.cwnd_bytes),
        host_window_bound_bytes: v.and_then(|v| v.window_bound_bytes),
        host_transport_rtt_ms: v.and_then(|v| v.transport_rtt_ms),
        host_passed_over: counter(match c.colour {
            true => "colour_frames_passed_over",
            false => "frames_passed_over",
        }),
        host_outrun: counter("large_datagrams_outrun"),
        device_drops,
        shaper_drops,
        datagram_lost: s.datagram_lost,
        capture_ms: report.capture.avg,
        encode_ms: encode,
        send_ms: send,
        network_ms: (e2e_avg - encode - send - decode - apply).max(0.0),
        decode_ms: decode,
        apply_ms: apply,
    })
}

fn list<T: std::str::FromStr>(s: &str, what: &str) -> anyhow::Result<Vec<T>> {
    s.split(',')
        .map(|x| {
            x.trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("{what}: {x:?} is not a number"))
        })
        .collect()
}

fn cells(a: &BenchNetArgs) -> anyhow::Result<Vec<Cell>> {
    let rates: Vec<Option<u64>> =
        a.rates
            .split(',')
            .map(|r| match r.trim() {
                "unlimited" | "0" => Ok(None),
                x => x.parse().map(Some).map_err(|_| {
                    anyhow::anyhow!("--rates: {x:?} is neither a number nor unlimited")
                }),
            })
            .collect::<anyhow::Result<_>>()?;
    let rtts: Vec<u64> = list(&a.rtts, "--rtts")?;
    let losses: Vec<f64> = list(&a.losses, "--losses")?;
    let transports: Vec<Transport> = a
        .transports
        .split(',')
        .map(|t| match t.trim() {
            "quic" => Ok(Transport::Quic),
            "quic-dgram" => Ok(Transport::QuicDgram),
            "tcp" => Ok(Transport::Tcp),
            x => bail!("--transports: {x:?} is none of quic, quic-dgram and tcp"),
        })
        .collect::<anyhow::Result<_>>()?;
    let mut out = Vec::new();
    for content in a.contents.split(',') {
        source_of(content.trim())?;
        for &rate_mbit in &rates {
            for &rtt_ms in &rtts {
                for &loss_pct in &losses {
                    for &transport in &transports {
                        out.push(Cell {
                            transport,
                            rate_mbit,
                            rtt_ms,
                            loss_pct,
                            content: content.trim().to_string(),
                            colour: a.colour,
                        });
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The `p`th percentile of `w` (µs) in ms; NaN when it holds no sample (no picture in the
/// window, the viewer never got in, say; or no clock offset known to time one). That is not a
/// latency of 0: NaN prints as such and fails every bound it is compared with.
fn percentile_ms(w: &SampleWindow, p: f64) -> f64 {
    w.percentile(p).unwrap_or(f64::NAN) / 1000.0
}

fn print_row(r: &CellResult) {
    let c = &r.cell;
    let rate = c.rate_mbit.map_or("unlim".to_string(), |m| format!("{m}M"));
    let burst = r
        .exact_after_burst_ms
        .map_or("never".to_string(), |m| format!("{m:.0}"));
    println!(
        "{:<14} {:<10} {:>6} {:>4} {:>4} | {:>7.1} {:>7.1} {:>6.1} {:>7} {:>8.2} | {:>5.2} {:>5.2} {:>5.2} {:>7.1} {:>5.2} {:>5.2} | {:>4} {:>5}",
        label(&c.content),
        c.transport.name(),
        rate,
        c.rtt_ms,
        c.loss_pct,
        r.e2e_ms_p50,
        r.e2e_ms_p99,
        r.fps_shown,
        burst,
        r.mbytes_sent,
        r.capture_ms,
        r.encode_ms,
        r.send_ms,
        r.network_ms,
        r.decode_ms,
        r.apply_ms,
        r.checksum_failures,
        r.bases_missing
    );
    if r.fps_shown == 0.0 {
        println!("  no exact picture reached the viewer in the measuring window (see the log)");
    } else if r.e2e_ms_p99.is_nan() {
        println!(
            "  no capture → applied time was measured (the viewer never knew the clock offset)"
        );
    }
    let datagrams = if c.transport == Transport::QuicDgram {
        format!(
            "datagrams: {} frames came as datagrams, {} of them rebuilt with recovery shards, {} lost (too few shards, or none came); ",
            r.datagram_frames, r.datagram_recovered, r.datagram_lost
        )
    } else {
        String::new()
    };
    let mut passed = match r.host_passed_over {
        0 => String::new(),
        n => format!(", and passed over {n} no viewer took"),
    };
    if r.host_outrun > 0 {
        let times = match r.host_outrun {
            1 => "once".to_string(),
            n => format!("{n} times"),
        };
        passed +=
            &format!("; large frames held on streams {times}, the content outrunning the path");
    }
    if r.host_frames == 0 {
        // The host's report had no figures for the viewer when it was read (seen now and then
        // on TCP cells whose pictures all arrived): not "0 of 0".
        println!("  {datagrams}the host's figures for this viewer were not read{passed}");
    } else {
        println!(
            "  {datagrams}over the whole cell, the host made {} of its {} frames for this viewer alone ({} against the picture it acknowledged; {} stall probes){passed}",
            r.host_rebased, r.host_frames, r.host_acknowledged, r.host_probes,
        );
        let bound = r.host_window_bound_bytes.map_or(String::new(), |b| {
            format!(", bounded by the host at {:.0} kB", b as f64 / 1e3)
        });
        let srtt = r
            .host_transport_rtt_ms
            .map_or(String::new(), |t| format!(", smoothed RTT {t:.1} ms"));
        let window = r.host_cwnd_bytes.map_or(String::new(), |w| {
            format!("; QUIC's window {:.0} kB{bound}{srtt}", w as f64 / 1e3)
        });
        println!(
            "  at the end, the host's estimate of the path: {:.1} Mbit/s, minimum RTT {:.1} ms{window}",
            r.host_bandwidth_mbps, r.host_min_rtt_ms,
        );
    }
    match r.device_drops {
        Some((0, 0)) => {}
        Some((ab, ba)) => println!(
            "  the link's devices dropped {ab} packets host → viewer and {ba} back, their queues full (not the loss set)"
        ),
        None => println!("  the link's devices' drops could not be read (see the log)"),
    }
    match r.shaper_drops {
        Some((0, 0)) => {}
        Some((ab, ba)) => println!(
            "  the link's rate limit dropped {ab} packets host → viewer and {ba} back while measured, its queue ({} ms at the rate) full",
            framewire_netem::TBF_LATENCY_MS
        ),
        None => println!("  the rate limit's drops could not be read (see the log)"),
    }
}

pub fn run(a: &BenchNetArgs) -> anyhow::Result<()> {
    framewire_netem::available()
        .map_err(|why| anyhow::anyhow!("bench net needs network namespaces: {why}"))?;
    let cells = cells(a)?;
    let per = WARM_UP.as_secs_f64() + a.seconds + (BURST_MS as f64 / 1e3) + 3.0;
    eprintln!(
        "bench net: {} cells, about {:.0} s ({} s measured each, then a {BURST_MS} ms loss burst)",
        cells.len(),
        cells.len() as f64 * per,
        a.seconds
    );
    if !a.json {
        println!("capture→applied ms (clock-offset corrected); fps = exact pictures shown; burst = ms to an exact picture after a {BURST_MS} ms blackout; stages = averages, ms");
        println!(
            "{:<14} {:<10} {:>6} {:>4} {:>4} | {:>7} {:>7} {:>6} {:>7} {:>8} | {:>5} {:>5} {:>5} {:>7} {:>5} {:>5} | {:>4} {:>5}",
            "content", "via", "rate", "rtt", "loss%", "p50", "p99", "fps", "burst", "MB sent",
            "capt", "enc", "send", "network", "dec", "apply", "bad", "bases"
        );
    }
    let mut results = Vec::new();
    let t0 = Instant::now();
    for (i, c) in cells.iter().enumerate() {
        let r =
            run_cell(c, a, a.seed.wrapping_add(i as u64)).with_context(|| format!("cell {c:?}"))?;
        if !a.json {
            print_row(&r);
        }
        results.push(r);
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        println!(
            "({} cells in {:.0} s)",
            results.len(),
            t0.elapsed().as_secs_f64()
        );
        print_targets(&results);
    }
    Ok(())
}

/// The targets, where the cells to judge them are in this run.
fn print_targets(rs: &[CellResult]) {
    let find = |t: Transport, rate: Option<u64>, rtt: u64, loss: f64, content: &str| {
        rs.iter().find(|r| {
            r.cell.transport == t
                && r.cell.rate_mbit == rate
                && r.cell.rtt_ms == rtt
                && (r.cell.loss_pct - loss).abs() < 1e-9
                && r.cell.content == content
        })
    };
    println!("targets:");
    let mut contents: Vec<&str> = rs.iter().map(|r| r.cell.content.as_str()).collect();
    contents.dedup();
    let quic = [Transport::Quic, Transport::QuicDgram];
    for &content in &contents {
        for (rate, qt) in [None, Some(50), Some(10)]
            .into_iter()
            .flat_map(|r| quic.map(|q| (r, q)))
        {
            if let (Some(q), Some(t)) = (
                find(qt, rate, 20, 1.0, content),
                find(Transport::Tcp, rate, 20, 1.0, content),
            ) {
                let content = label(content);
                println!(
                    "  20 ms, 1 %, {content}, rate {:?}: {} p99 {:.1} ms (≤ 50: {}), TCP p99 {:.1} ms, ratio {:.2} (≤ 0.33: {})",
                    rate,
                    qt.name(),
                    q.e2e_ms_p99,
                    q.e2e_ms_p99 <= 50.0,
                    t.e2e_ms_p99,
                    q.e2e_ms_p99 / t.e2e_ms_p99,
                    q.e2e_ms_p99 * 3.0 <= t.e2e_ms_p99
                );
            }
        }
    }
    for r in rs
        .iter()
        .filter(|r| r.cell.transport != Transport::Tcp && r.cell.loss_pct >= 5.0)
    {
        let frame_ms = 1000.0 / r.source_fps.max(1) as f64;
        let bound = r.cell.rtt_ms as f64 + 2.0 * frame_ms;
        println!(
            "  5 % loss, {} {} {:?} {} ms: {:.1} of {} fps shown (≥ half: {}); exact {} ms after the burst (≤ {:.0}: {})",
            r.cell.transport.name(),
            label(&r.cell.content),
            r.cell.rate_mbit,
            r.cell.rtt_ms,
            r.fps_shown,
            r.source_fps,
            r.fps_shown * 2.0 >= r.source_fps as f64,
            r.exact_after_burst_ms.map_or("never".into(), |m| format!("{m:.0}")),
            bound,
            r.exact_after_burst_ms.is_some_and(|m| m <= bound)
        );
    }
    // Content that needs more than the link: the latency stays bounded and the frame rate
    // falls. Judged on every rate-limited QUIC cell without loss.
    for r in rs.iter().filter(|r| {
        r.cell.transport != Transport::Tcp && r.cell.rate_mbit.is_some() && r.cell.loss_pct == 0.0
    }) {
        let frame_ms = 1000.0 / r.source_fps.max(1) as f64;
        let bound = 2.0 * r.cell.rtt_ms as f64 + 3.0 * frame_ms;
        println!(
            "  {} Mbit/s, {} ms, {}: {} p99 {:.1} ms (≤ {:.0}: {}), {:.1} fps shown",
            r.cell.rate_mbit.unwrap_or(0),
            r.cell.rtt_ms,
            label(&r.cell.content),
            r.cell.transport.name(),
            r.e2e_ms_p99,
            bound,
            r.e2e_ms_p99 <= bound,
            r.fps_shown
        );
    }
    for (rtt, qt) in [1, 20, 80].into_iter().flat_map(|r| quic.map(|q| (r, q))) {
        for &content in &contents {
            if let (Some(q), Some(t)) = (
                find(qt, None, rtt, 0.0, content),
                find(Transport::Tcp, None, rtt, 0.0, content),
            ) {
                let content = label(content);
                println!(
                    "  unimpaired {rtt} ms {content}: {} p99 {:.1} ms, TCP {:.1} ms (within 20 %: {})",
                    qt.name(),
                    q.e2e_ms_p99,
                    t.e2e_ms_p99,
                    q.e2e_ms_p99 <= t.e2e_ms_p99 * 1.2
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contents_are_scenes_or_recordings_and_a_wrong_one_is_named() {
        assert!(matches!(
            source_of("scroll"),
            Ok(SourceSpec::Synthetic(Scene::Scroll))
        ));
        let missing = source_of("file:/nonexistent/browser-scroll.fwrec").unwrap_err();
        assert!(
            missing.to_string().contains("browser-scroll.fwrec"),
            "{missing}"
        );
        let unknown = source_of("webcam").unwrap_err().to_string();
        assert!(unknown.contains("file:PATH"), "{unknown}");
        assert_eq!(label("file:corpus/browser-scroll.fwrec"), "browser-scroll");
        assert_eq!(label("typing"), "typing");
    }

    #[test]
    fn a_cell_without_pictures_has_no_latency_and_meets_no_bound() {
        let mut w = SampleWindow::new(16);
        let p99 = percentile_ms(&w, 99.0);
        assert!(p99.is_nan());
        // Neither at nor under any bound.
        assert_eq!(p99.partial_cmp(&50.0), None);
        w.push(12_000.0);
        assert_eq!(percentile_ms(&w, 99.0), 12.0);
    }
}
