//! `framewire view --headless` (TCP, either protocol) and `framewire view --headless --shm NAME`
//! (a local server's shared-memory export).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::bail;
use framewire_server::viewer::{run_viewer, ViewerOptions, ViewerStats};
use framewire_server::Protocol;

use crate::cli::{ProtocolArg, ViewArgs};

pub async fn run(a: ViewArgs) -> anyhow::Result<()> {
    if !a.headless {
        bail!("the native viewer window is not built yet; use `framewire view --headless` to receive, verify and measure the stream");
    }
    if let Some(name) = a.shm.clone() {
        return run_shm(name, a).await;
    }
    let (protocol, default_port) = match a.protocol {
        ProtocolArg::Framewire => (Protocol::V1, 7878),
        ProtocolArg::Daylight => (Protocol::Daylight, 8888),
    };
    let addr = format!("{}:{}", a.host, a.port.unwrap_or(default_port));
    let mut opts = ViewerOptions::new(addr.clone(), protocol);
    opts.token = a.token.clone();
    opts.max_frames = a.frames;
    let stats = Arc::new(Mutex::new(ViewerStats::default()));
    let printer = {
        let stats = stats.clone();
        let every = Duration::from_secs_f64(a.interval.max(0.1));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let line = stats.lock().unwrap_or_else(|e| e.into_inner()).line();
                println!("{line}");
            }
        })
    };
    eprintln!("connecting to {addr} ({})", protocol.name());
    let r = tokio::select! {
        r = run_viewer(opts, stats.clone(), |_| true) => r,
        _ = tokio::signal::ctrl_c() => Ok(()),
    };
    printer.abort();
    let s = stats.lock().unwrap_or_else(|e| e.into_inner()).clone();
    finish(a.json, &s, s.line(), s.checksum_failures, r)
}

/// Prints the final statistics; a run with checksum failures is an error.
fn finish<S: serde::Serialize>(
    json: bool,
    stats: &S,
    line: String,
    checksum_failures: u64,
    r: anyhow::Result<()>,
) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(stats)?);
    } else {
        println!("{line}");
    }
    r?;
    if checksum_failures > 0 {
        bail!("{checksum_failures} frames did not match their checksum");
    }
    Ok(())
}

async fn run_shm(name: String, a: ViewArgs) -> anyhow::Result<()> {
    use framewire_server::shm_viewer::{self, ShmViewerStats};
    use std::sync::atomic::{AtomicBool, Ordering};
    let stats = Arc::new(Mutex::new(ShmViewerStats::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (stats, stop, frames) = (stats.clone(), stop.clone(), a.frames);
        tokio::task::spawn_blocking(move || shm_viewer::run(&name, frames, &stop, &stats, |_| true))
    };
    let every = Duration::from_secs_f64(a.interval.max(0.1));
    let mut worker = std::pin::pin!(worker);
    let r = loop {
        tokio::select! {
            r = &mut worker => break r?,
            _ = tokio::time::sleep(every) => {
                println!("{}", stats.lock().unwrap_or_else(|e| e.into_inner()).line());
            }
            _ = tokio::signal::ctrl_c() => {
                stop.store(true, Ordering::Relaxed);
            }
        }
    };
    let s = stats.lock().unwrap_or_else(|e| e.into_inner()).clone();
    finish(a.json, &s, s.line(), s.checksum_failures, r)
}
