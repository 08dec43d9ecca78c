//! `framewire demo`: a server on the synthetic `mixed` scene at sharp resolution, one headless
//! viewer per protocol, and a live statistics table.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use framewire_client::viewer::{run_viewer, ViewerOptions, ViewerStats};
use framewire_server::{Protocol, Server, ServerConfig};

use crate::cli::DemoArgs;
use crate::inspect::render_report;

pub async fn run(a: DemoArgs) -> anyhow::Result<()> {
    let (src, res) = crate::serve::source(&a.source)?;
    let ctl = framewire_control::runtime_dir()?.join(format!("demo-{}.sock", std::process::id()));
    let mut cfg = ServerConfig {
        source: src,
        resolution: res,
        fps: a.source.fps,
        v1_addr: Some(SocketAddr::from(([127, 0, 0, 1], a.port))),
        daylight_addr: Some(SocketAddr::from(([127, 0, 0, 1], a.daylight_port))),
        control_socket: Some(ctl.clone()),
        ..ServerConfig::default()
    };
    let server = match Server::start(cfg.clone()).await {
        Ok(s) => s,
        Err(e) => {
            // A server already on the default ports should not stop the demo: use free ones.
            eprintln!("note: {e:#}; using free ports instead");
            cfg.v1_addr = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
            cfg.daylight_addr = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
            Server::start(cfg.clone()).await?
        }
    };
    let v1 = server.v1_addr.expect("v1 listener configured");
    let dl = server.daylight_addr.expect("daylight listener configured");
    let mut viewers = Vec::new();
    for (proto, addr) in [(Protocol::V1, v1), (Protocol::Daylight, dl)] {
        let stats = Arc::new(Mutex::new(ViewerStats::default()));
        let opts = ViewerOptions::new(addr.to_string(), proto);
        let s2 = stats.clone();
        let task = tokio::spawn(async move { run_viewer(opts, s2, |_| true).await });
        viewers.push((stats, task));
    }
    let tty = std::io::stdout().is_terminal();
    let start = Instant::now();
    let next_steps = format!(
        "next steps (in another terminal):\n  framewire latency --watch --control-socket {ctl}\n  framewire ctl brightness 200 --control-socket {ctl}\n  framewire view --headless --port {}            # a third viewer\n  framewire view --headless --protocol daylight --port {}\n  framewire serve --scene scroll --resolution sharp   # your own server\nCtrl-C to stop.",
        v1.port(),
        dl.port(),
        ctl = ctl.display()
    );
    loop {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = tokio::signal::ctrl_c() => break,
        }
        let mut table = format!(
            "framewire demo — {} at {} — {:.0} s\n\n",
            a.source.scene,
            res,
            start.elapsed().as_secs_f64()
        );
        table.push_str(&render_report(&server.report()));
        table.push_str("\n\nviewers:\n");
        for (stats, task) in &viewers {
            let line = stats.lock().unwrap_or_else(|e| e.into_inner()).line();
            let state = if task.is_finished() {
                " (disconnected)"
            } else {
                ""
            };
            table.push_str(&format!("  {line}{state}\n"));
        }
        if tty {
            print!("\x1b[2J\x1b[H");
        }
        println!("{table}\n{next_steps}\n");
        if a.seconds
            .is_some_and(|s| start.elapsed().as_secs_f64() >= s)
        {
            break;
        }
    }
    let failures: u64 = viewers
        .iter()
        .map(|(s, _)| {
            s.lock()
                .unwrap_or_else(|e| e.into_inner())
                .checksum_failures
        })
        .sum();
    for (_, t) in &viewers {
        t.abort();
    }
    server.shutdown().await;
    if failures > 0 {
        anyhow::bail!("{failures} frames failed checksum verification");
    }
    Ok(())
}
