//! `framewire bench e2e`: a real server and N headless framewire viewers over loopback; the
//! capture timestamp → applied latency each viewer measures (through its clock-offset estimate).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use framewire_capture::{Resolution, Scene};
use framewire_client::viewer::{run_viewer, ViewerOptions, ViewerStats};
use framewire_server::{Protocol, Server, ServerConfig, SourceSpec};
use framewire_telemetry::SampleWindow;
use serde::Serialize;

use crate::args::BenchE2eArgs;

#[derive(Serialize)]
struct Result {
    scene: String,
    resolution: String,
    viewers: usize,
    seconds: f64,
    e2e_ms_p50: f64,
    e2e_ms_p95: f64,
    e2e_ms_p99: f64,
    e2e_ms_max: f64,
    viewer_fps_min: f64,
    checksum_failures: u64,
    server_rtt_ms_p99: f64,
    server_skipped_frames: u64,
}

pub async fn run(a: BenchE2eArgs) -> anyhow::Result<()> {
    let scene: Scene = a.scene.parse().map_err(anyhow::Error::msg)?;
    let res: Resolution = a.resolution.parse()?;
    let cfg = ServerConfig {
        source: SourceSpec::Synthetic(scene),
        resolution: res,
        fps: a.fps,
        v1_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        daylight_addr: None,
        ..ServerConfig::default()
    };
    let server = Server::start(cfg).await?;
    let addr = server.v1_addr.expect("v1 listener").to_string();
    let mut all = Vec::new();
    for _ in 0..a.viewers {
        let stats = Arc::new(Mutex::new(ViewerStats::default()));
        let s2 = stats.clone();
        let opts = ViewerOptions::new(addr.clone(), Protocol::V1).with_colour(a.colour);
        tokio::spawn(async move { run_viewer(opts, s2, |_| true).await });
        all.push(stats);
    }
    // Warm-up, then a clean measuring window: the viewers' windows keep the last 600 samples.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for s in &all {
        let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
        s.e2e_us = SampleWindow::new(100_000);
    }
    tokio::time::sleep(Duration::from_secs_f64(a.seconds)).await;
    let mut merged = Vec::new();
    let mut fps_min = f64::MAX;
    let mut failures = 0;
    for s in &all {
        let s = s.lock().unwrap_or_else(|e| e.into_inner());
        merged.extend_from_slice(s.e2e_us.values());
        fps_min = fps_min.min(s.fps());
        failures += s.checksum_failures;
    }
    let mut pct = |p: f64| framewire_telemetry::stats::percentile(&mut merged, p) / 1000.0;
    let report = server.report();
    let r = Result {
        scene: scene.name().into(),
        resolution: res.to_string(),
        viewers: a.viewers,
        seconds: a.seconds,
        e2e_ms_p50: pct(50.0),
        e2e_ms_p95: pct(95.0),
        e2e_ms_p99: pct(99.0),
        e2e_ms_max: pct(100.0),
        viewer_fps_min: fps_min,
        checksum_failures: failures,
        server_rtt_ms_p99: report.rtt.p99,
        server_skipped_frames: report.skipped_frames,
    };
    server.shutdown().await;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "loopback end to end (capture → applied), {} at {}, {} viewers, {:.0} s, {} samples",
            r.scene,
            r.resolution,
            r.viewers,
            r.seconds,
            merged.len()
        );
        println!(
            "  e2e ms   p50 {:.3}   p95 {:.3}   p99 {:.3}   max {:.3}",
            r.e2e_ms_p50, r.e2e_ms_p95, r.e2e_ms_p99, r.e2e_ms_max
        );
        println!("  slowest viewer fps {:.1}   checksum failures {}   server rtt p99 {:.3} ms   skipped frames {}", r.viewer_fps_min, r.checksum_failures, r.server_rtt_ms_p99, r.server_skipped_frames);
    }
    Ok(())
}
