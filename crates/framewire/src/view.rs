//! `framewire view --headless` (TCP, either protocol) and `framewire view --headless --shm NAME`
//! (a local server's shared-memory export).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::bail;
use framewire_client::viewer::{run_viewer, ViewerOptions, ViewerStats};
use framewire_server::Protocol;

use crate::cli::{ProtocolArg, ViewArgs};

pub async fn run(a: ViewArgs) -> anyhow::Result<()> {
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
    if a.quic.is_some() {
        anyhow::ensure!(
            protocol == Protocol::V1,
            "--quic carries the framewire protocol only"
        );
        anyhow::ensure!(
            a.port.is_some(),
            "--quic needs --port: the server's --quic-port (its start-up lines print the whole command)"
        );
    }
    opts.quic = a.quic;
    let opts = opts.with_colour(!a.grey);
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
    let how = if a.quic.is_some() { " over QUIC" } else { "" };
    eprintln!("connecting to {addr} ({}{how})", protocol.name());
    // The window (unless --headless): each applied picture is drawn before the viewer ACKs it,
    // and the title carries the same statistics the headless viewer prints.
    let mut window = if a.headless {
        None
    } else {
        Some(
            framewire_x11::ViewerWindow::open(a.display.as_deref(), 640, 480, "framewire")
                .map_err(|e| anyhow::anyhow!("{e} (or use `framewire view --headless`)"))?,
        )
    };
    let mut last_title = std::time::Instant::now();
    let title_stats = stats.clone();
    let on_frame = |ev: &framewire_client::viewer::FrameEvent<'_>| {
        let Some(w) = window.as_mut() else {
            return true;
        };
        if !ev.unchanged {
            let shown = if ev.planes == 3 {
                let (pic, (wd, ht)) = (ev.picture, (ev.width as usize, ev.height as usize));
                w.show_bgra(ev.width, ev.height, |buf| {
                    framewire_codec::colour::planes_into_bgra(|k| pic.row(k), wd, ht, buf)
                })
            } else {
                w.show(ev.width, ev.height, ev.picture.rows())
            };
            if let Err(e) = shown {
                eprintln!("window: {e}");
                return false;
            }
        }
        if last_title.elapsed() > Duration::from_millis(500) {
            last_title = std::time::Instant::now();
            let line = title_stats.lock().unwrap_or_else(|e| e.into_inner()).line();
            w.set_title(&format!("framewire {}×{} — {line}", ev.width, ev.height));
        }
        w.pump()
    };
    let restarts = restart_windows_on_usr1(stats.clone(), ViewerStats::clear_windows)?;
    let r = tokio::select! {
        r = run_viewer(opts, stats.clone(), on_frame) => r,
        _ = tokio::signal::ctrl_c() => Ok(()),
    };
    restarts.abort();
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
    use framewire_client::shm_viewer::{self, ShmViewerStats};
    use std::sync::atomic::{AtomicBool, Ordering};
    let stats = Arc::new(Mutex::new(ShmViewerStats::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (stats, stop, frames) = (stats.clone(), stop.clone(), a.frames);
        tokio::task::spawn_blocking(move || {
            // The reader is the stream here: it takes `--realtime` where the main thread did.
            framewire_sched::follow();
            shm_viewer::run(&name, frames, &stop, &stats, |_| true)
        })
    };
    let every = Duration::from_secs_f64(a.interval.max(0.1));
    let restarts = restart_windows_on_usr1(stats.clone(), ShmViewerStats::clear_windows)?;
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
    restarts.abort();
    let s = stats.lock().unwrap_or_else(|e| e.into_inner()).clone();
    finish(a.json, &s, s.line(), s.checksum_failures, r)
}

/// SIGUSR1 empties the viewer's timing windows: a script marks where its measured period
/// starts, so the latency printed after covers that period and not the join (`corpus.py
/// --live` sends it as its actions begin).
fn restart_windows_on_usr1<S: Send + 'static>(
    stats: Arc<Mutex<S>>,
    clear: fn(&mut S),
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut usr1 = signal(SignalKind::user_defined1())?;
    Ok(tokio::spawn(async move {
        while usr1.recv().await.is_some() {
            clear(&mut stats.lock().unwrap_or_else(|e| e.into_inner()));
            eprintln!("timing windows emptied (SIGUSR1)");
        }
    }))
}
