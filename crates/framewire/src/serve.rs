//! `framewire serve`.

use std::net::SocketAddr;

use anyhow::Context;
use framewire_capture::Resolution;
use framewire_codec::BlockCodec;
use framewire_server::control::{default_socket_path, default_status_path};
use framewire_server::{Server, ServerConfig, SourceSpec};

use crate::cli::{CodecArg, ServeArgs, SourceArgs};

pub fn codec(c: CodecArg) -> BlockCodec {
    match c {
        CodecArg::Lz4 => BlockCodec::Lz4,
        CodecArg::Zstd => BlockCodec::Zstd(1),
        CodecArg::Raw => BlockCodec::Raw,
    }
}

pub fn source(a: &SourceArgs) -> anyhow::Result<(SourceSpec, Resolution)> {
    let res: Resolution = a.resolution.parse()?;
    let spec = match a.source.split_once(':') {
        None if a.source == "synthetic" => {
            SourceSpec::Synthetic(a.scene.parse().map_err(anyhow::Error::msg)?)
        }
        Some(("shm", name)) if !name.is_empty() => SourceSpec::Shm(name.to_string()),
        _ => anyhow::bail!(
            "unknown --source {:?}: use `synthetic` or `shm:NAME`",
            a.source
        ),
    };
    Ok((spec, res))
}

pub fn config(a: &ServeArgs) -> anyhow::Result<ServerConfig> {
    let (src, res) = source(&a.source)?;
    Ok(ServerConfig {
        source: src,
        resolution: res,
        fps: a.source.fps,
        v1_addr: Some(SocketAddr::new(a.bind, a.port)),
        daylight_addr: (!a.no_daylight).then(|| SocketAddr::new(a.bind, a.daylight_port)),
        sensor_addr: (!a.no_sensors).then(|| SocketAddr::new(a.bind, a.sensor_port)),
        http_addr: (!a.no_http).then(|| SocketAddr::new(a.bind, a.http_port)),
        token: a.token.clone(),
        insecure: a.insecure,
        codec: codec(a.codec),
        keyframe_interval: a.keyframe_interval,
        control_socket: Some(a.control_socket.clone().unwrap_or_else(default_socket_path)),
        status_file: Some(a.status_file.clone().unwrap_or_else(default_status_path)),
        trace_frames: a.trace_frames.clone(),
        shm_export: a.shm_export.clone(),
        ..ServerConfig::default()
    })
}

pub async fn run(a: ServeArgs) -> anyhow::Result<()> {
    let cfg = config(&a)?;
    let server = Server::start(cfg.clone())
        .await
        .context("starting the server")?;
    let ctl = cfg
        .control_socket
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    println!(
        "framewire serving {} at {} ({} fps)",
        match &cfg.source {
            SourceSpec::Synthetic(s) => format!("synthetic:{}", s.name()),
            SourceSpec::Shm(n) => format!("shm:{n}"),
        },
        cfg.resolution,
        cfg.fps
    );
    if let Some(v) = server.v1_addr {
        println!(
            "  framewire viewers: framewire view --headless --host {} --port {}",
            v.ip(),
            v.port()
        );
    }
    if let Some(d) = server.daylight_addr {
        println!(
            "  Daylight app:      adb reverse tcp:8888 tcp:{}   (then open the app)",
            d.port()
        );
    }
    if let Some(s) = server.sensor_addr {
        println!("  sensors:           devices send lines to {s} (sensor/<location>, thermal/<location>)");
    }
    if let Some(h) = server.http_addr {
        println!("  metrics:           http://{h}/metrics");
    }
    println!("  latency:           framewire latency --watch --control-socket {ctl}");
    println!("  commands:          framewire ctl brightness 200 --control-socket {ctl}");
    println!("Ctrl-C to stop.");
    server.wait_shutdown_signal().await;
    println!("stopping");
    server.shutdown().await;
    if let Some(p) = &cfg.control_socket {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}
