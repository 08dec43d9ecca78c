//! `framewire bench x11`: what capturing a real X screen costs, on an Xvfb screen started here
//! (or the display given).
//! - full-frame capture: one MIT-SHM GetImage of the whole screen plus the cursor query, as the
//!   first capture and any capture with most of the screen damaged does;
//! - idle: a whole server (X11 source at 60 fps, one headless viewer) on an unchanged screen,
//!   CPU time of this process over the interval, as a share of one core.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use framewire_capture::FrameSource;
use framewire_client::viewer::{run_viewer, ViewerOptions, ViewerStats};
use framewire_server::{Protocol, Server, ServerConfig, SourceSpec};
use framewire_x11::X11Source;

use crate::args::BenchX11Args;

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

use framewire_telemetry::stats::{median, percentile};

pub async fn run(a: BenchX11Args) -> anyhow::Result<()> {
    let (_xvfb, display) = match &a.display {
        Some(d) => (None, d.clone()),
        None => {
            let (w, h) = a
                .size
                .split_once('x')
                .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
                .ok_or_else(|| anyhow::anyhow!("--size {:?}: expected WxH", a.size))?;
            let x = framewire_x11::xvfb::Xvfb::start(w, h).map_err(anyhow::Error::msg)?;
            let d = x.display.clone();
            (Some(x), d)
        }
    };
    // Reading a frame costs the same whatever it shows, so Xvfb's black root is enough here.
    let mut src = X11Source::open(Some(&display), None, true)?;
    let (w, h) = src.size();
    println!(
        "X11 capture on {display}: {w}x{h}, MIT-SHM {}",
        if src.uses_shm() { "yes" } else { "no" }
    );
    let mut times = Vec::with_capacity(a.captures as usize);
    for _ in 0..a.captures.max(1) {
        src.force_full();
        let t = Instant::now();
        let c = src.capture()?;
        std::hint::black_box(c.bgra[c.bgra.len() / 2]);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "full-frame capture ({} runs): median {:.3} ms, p95 {:.3} ms, min {:.3} ms",
        times.len(),
        median(&mut times),
        percentile(&mut times, 95.0),
        percentile(&mut times, 0.0)
    );
    drop(src);

    let cfg = ServerConfig {
        source: SourceSpec::X11 {
            display: Some(display.clone()),
            region: None,
            cursor: true,
        },
        v1_addr: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        daylight_addr: None,
        ..ServerConfig::default()
    };
    let server = Server::start(cfg).await?;
    let stats = Arc::new(Mutex::new(ViewerStats::default()));
    let v = tokio::spawn(run_viewer(
        ViewerOptions::new(server.v1_addr.unwrap().to_string(), Protocol::V1),
        stats.clone(),
        |_| true,
    ));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (c0, t0) = (cpu_seconds(), Instant::now());
    let (reads0, polls0) = (
        server.counter("x11_image_reads"),
        server.counter("x11_polls"),
    );
    tokio::time::sleep(Duration::from_secs_f64(a.idle_seconds)).await;
    let (c1, dt) = (cpu_seconds(), t0.elapsed().as_secs_f64());
    let (reads, polls) = (
        server.counter("x11_image_reads") - reads0,
        server.counter("x11_polls") - polls0,
    );
    println!(
        "idle screen, server at 60 fps + 1 viewer, {:.1} s: {:.2} % of one core (whole process), {polls} damage polls, {reads} image reads",
        dt,
        (c1 - c0) / dt * 100.0
    );
    v.abort();
    server.shutdown().await;
    Ok(())
}
