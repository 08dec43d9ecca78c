//! `framewire serve`.

use std::net::SocketAddr;

use anyhow::Context;
use framewire_capture::Resolution;
use framewire_codec::tune::{Tuning, PROFILES};
use framewire_control::{default_socket_path, default_status_path};
use framewire_server::{ConnLimits, HttpTls, Server, ServerConfig, SourceSpec};

use crate::cli::{ReplayArg, ServeArgs, SourceArgs};

pub fn source(a: &SourceArgs) -> anyhow::Result<(SourceSpec, Resolution)> {
    let res: Resolution = a.resolution.parse()?;
    let spec = match a.source.split_once(':') {
        None if a.source == "synthetic" || a.source == "demo" => {
            SourceSpec::Synthetic(a.scene.parse().map_err(anyhow::Error::msg)?)
        }
        None if a.source == "x11" => SourceSpec::X11 {
            display: None,
            region: None,
            cursor: true,
        },
        // `x11::1` or `x11:1` → display ":1"; `x11:host:0` is passed as given.
        Some(("x11", d)) if !d.is_empty() => SourceSpec::X11 {
            display: Some(if d.contains(':') { d.to_string() } else { format!(":{d}") }),
            region: None,
            cursor: true,
        },
        Some(("shm", name)) if !name.is_empty() => SourceSpec::Shm(name.to_string()),
        Some(("file", path)) if !path.is_empty() => SourceSpec::File {
            path: path.into(),
            pace: match a.replay {
                ReplayArg::Recorded => framewire_record::Pace::Recorded,
                ReplayArg::Fast => framewire_record::Pace::Fast,
            },
        },
        _ => anyhow::bail!(
            "unknown --source {:?}: use `synthetic` (or `demo`), `x11`, `x11:DISPLAY`, `shm:NAME` or `file:PATH`",
            a.source
        ),
    };
    Ok((spec, res))
}

/// A random control token (16 hex digits from the kernel's generator).
fn random_token() -> anyhow::Result<String> {
    let mut b = [0u8; 8];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut b)?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

pub fn describe(s: &SourceSpec) -> String {
    match s {
        SourceSpec::Synthetic(s) => format!("synthetic:{}", s.name()),
        SourceSpec::Shm(n) => format!("shm:{n}"),
        SourceSpec::File { path, .. } => format!("file:{}", path.display()),
        SourceSpec::X11 { display, .. } => format!(
            "x11:{}",
            display
                .clone()
                .or_else(|| std::env::var("DISPLAY").ok())
                .unwrap_or_default()
        ),
    }
}

/// Applies `--region` and `--no-cursor` to an X11 source, and names its display now (so a
/// missing display or Wayland fails here with the reason, not in the capture thread). Returns
/// the region.
pub fn x11_options(
    src: &mut SourceSpec,
    region: Option<&str>,
    no_cursor: bool,
) -> anyhow::Result<Option<framewire_x11::Region>> {
    let region = region
        .map(str::parse::<framewire_x11::Region>)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    match src {
        SourceSpec::X11 {
            display,
            region: r,
            cursor,
        } => {
            if display.is_none() {
                *display = Some(framewire_x11::display::display_name(None)?);
            }
            *r = region;
            *cursor = !no_cursor;
        }
        _ if region.is_some() => anyhow::bail!("--region applies to an X11 source (--source x11)"),
        _ => {}
    }
    Ok(region)
}

pub fn config(a: &ServeArgs, mirror: bool) -> anyhow::Result<ServerConfig> {
    let mut args = a.source.clone();
    if mirror && args.source == "synthetic" {
        // `mirror` is about the real screen; `--source demo` still picks the synthetic one.
        args.source = "x11".into();
    }
    let (mut src, res) = source(&args)?;
    let region = x11_options(&mut src, a.region.as_deref(), a.no_cursor)?;
    let mut input = None;
    if let SourceSpec::X11 { display, .. } = &src {
        if !a.view_only {
            input = Some(framewire_server::InputConfig {
                display: display.clone(),
                region,
            });
        }
    }
    let control_token = match (&input, &a.control_token) {
        (Some(_), Some(t)) => Some(t.clone()),
        (Some(_), None) => Some(random_token()?),
        (None, _) => None,
    };
    Ok(ServerConfig {
        tuning: tuning(a)?,
        resolution: res,
        fps: a.source.fps,
        v1_addr: Some(SocketAddr::new(v1_bind(a), a.port)),
        quic_addr: a.quic_port.map(|p| SocketAddr::new(a.bind, p)),
        quic_datagrams: a.quic_frames == crate::cli::QuicFrames::Datagrams,
        daylight_addr: (!a.no_daylight).then(|| SocketAddr::new(a.daylight_bind, a.daylight_port)),
        sensor_addr: (!a.no_sensors).then(|| SocketAddr::new(a.sensor_bind, a.sensor_port)),
        sensor_start: sensor_start(&a.sensor_start)?,
        http_addr: (!a.no_http).then(|| SocketAddr::new(a.bind, a.http_port)),
        http_tls: match (a.https, a.plain_http) {
            (true, _) => HttpTls::On,
            (false, true) => HttpTls::Off,
            (false, false) => HttpTls::Auto,
        },
        token: a.token.clone(),
        insecure: a.insecure,
        codec: a.codec.codec(),
        predicted_rects: !a.no_predicted_rects,
        dense_zstd: !a.no_dense_zstd,
        keyframe_interval: a.keyframe_interval,
        control_socket: Some(match &a.control_socket {
            Some(p) => p.clone(),
            None => default_socket_path()?,
        }),
        status_file: Some(match &a.status_file {
            Some(p) => p.clone(),
            None => default_status_path()?,
        }),
        trace_frames: a.trace_frames.clone(),
        shm_export: a.shm_export.clone(),
        shm_colour: a.shm_colour,
        touch_addr: (!a.no_touch && matches!(src, SourceSpec::X11 { .. }))
            .then(|| SocketAddr::from(([127, 0, 0, 1], a.touch_port))),
        input,
        control_token,
        source: src,
        max_connections: ConnLimits::default()
            .parse_over(&a.max_connections)
            .map_err(|e| anyhow::anyhow!("--max-connections: {e}"))?,
        hub: hub_limits(a)?,
        metrics_token: a.metrics_token.clone(),
        sensor_allow: a
            .sensor_allow
            .as_deref()
            .map(framewire_net::AllowList::parse)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--sensor-allow: {e}"))?,
        ..ServerConfig::default()
    })
}

/// The subscriber queues' bounds and the stream limits.
fn hub_limits(a: &ServeArgs) -> anyhow::Result<framewire_hub::Limits> {
    let (q, b) = (a.subscriber_queue_mib, a.subscriber_budget_mib);
    if !(1..=65_536).contains(&q) || !(1..=65_536).contains(&b) {
        anyhow::bail!("--subscriber-queue-mib and --subscriber-budget-mib must be 1 to 65536");
    }
    if !(1..=10_000_000).contains(&a.max_streams) {
        anyhow::bail!("--max-streams must be 1 to 10000000");
    }
    Ok(framewire_hub::Limits {
        queue_bytes: q << 20,
        total_bytes: b << 20,
        streams: a.max_streams,
        stream_idle_us: a.stream_idle_secs.max(1).saturating_mul(1_000_000),
    })
}

/// `--profile`, then `--sharpen`, `--contrast` and `--gamma` over it.
fn sensor_start(c: &str) -> anyhow::Result<Option<String>> {
    if c.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let c = c.to_ascii_uppercase();
    if !framewire_sensors::valid_command(&c) {
        anyhow::bail!(
            "--sensor-start {c:?}: a device command is A-Z, 0-9 and _, at most 32 (or none)"
        );
    }
    Ok(Some(c))
}

/// framewire v1 over plain TCP follows --bind on loopback or with --insecure; off loopback it
/// stays on loopback (local viewers keep it), and viewers across the network take QUIC.
fn v1_bind(a: &ServeArgs) -> std::net::IpAddr {
    if a.bind.is_loopback() || a.insecure {
        return a.bind;
    }
    std::net::IpAddr::from([127, 0, 0, 1])
}

fn tuning(a: &ServeArgs) -> anyhow::Result<Tuning> {
    let mut t = match &a.profile {
        None => Tuning::NEUTRAL,
        Some(p) => Tuning::profile(p).ok_or_else(|| {
            let names: Vec<&str> = PROFILES.iter().map(|(n, _)| *n).collect();
            anyhow::anyhow!(
                "--profile: no profile {p:?}; profiles: {}",
                names.join(", ")
            )
        })?,
    };
    let parse = |which: &str, v: &Option<String>, slot: &mut u16| -> anyhow::Result<()> {
        if let Some(v) = v {
            *slot = Tuning::parse_setting(which, v).map_err(|e| anyhow::anyhow!("--{e}"))?;
        }
        Ok(())
    };
    parse("sharpen", &a.sharpen, &mut t.sharpen)?;
    parse("contrast", &a.contrast, &mut t.contrast)?;
    parse("gamma", &a.gamma, &mut t.gamma)?;
    Ok(t)
}

pub async fn run(a: ServeArgs, mirror: bool) -> anyhow::Result<()> {
    let cfg = config(&a, mirror)?;
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
        describe(&cfg.source),
        if matches!(cfg.source, SourceSpec::X11 { .. }) {
            "its own size".to_string()
        } else {
            cfg.resolution.to_string()
        },
        cfg.fps
    );
    if let Some(v) = server.v1_addr {
        println!(
            "  framewire viewers: framewire view --headless --host {} --port {}",
            v.ip(),
            v.port()
        );
        if v.ip() != a.bind {
            let how = match a.quic_port {
                Some(_) => "take QUIC (below)",
                None => "need QUIC: add --quic-port PORT",
            };
            println!("                     (plain TCP stays on loopback, unencrypted; viewers across the network {how})");
        }
    }
    if let (Some(q), Some(fp)) = (server.quic_addr, server.quic_fingerprint) {
        let token = if cfg.token.is_some() {
            " --token TOKEN"
        } else {
            ""
        };
        println!(
            "  over QUIC:         framewire view --host {} --port {} --quic {fp}{token}",
            q.ip(),
            q.port()
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
        let web = if server.https { "https" } else { "http" };
        match &cfg.control_token {
            Some(t) => println!(
                "  browser viewer:    {web}://{h}/?token={t}   (this link can control the desktop)"
            ),
            None if cfg.token.is_some() => {
                println!("  browser viewer:    {web}://{h}/?token=TOKEN")
            }
            None => println!("  browser viewer:    {web}://{h}/"),
        }
        if let Some(q) = server.quic_addr {
            println!(
                "                     (the page takes WebTransport on UDP port {}, else the WebSocket)",
                q.port()
            );
        }
        if let (true, Some(fp)) = (server.https, server.quic_fingerprint) {
            println!("                     (self-signed certificate, SHA-256 {fp}: check it when the browser asks)");
        }
        println!("  dashboard:         {web}://{h}/dashboard");
        println!("  metrics:           {web}://{h}/metrics");
    }
    if let Some(t) = server.touch_addr {
        println!("  Daylight touch:    adb reverse tcp:8892 tcp:{}", t.port());
    }
    if cfg.input.is_none() && matches!(cfg.source, SourceSpec::X11 { .. }) {
        println!("  input:             off (--view-only)");
    }
    let adb = if a.adb {
        let ports = [
            server.daylight_addr.map(|d| d.port()),
            server.touch_addr.map(|t| t.port()),
        ];
        let link = crate::adb::DisplayLink {
            adopt: {
                let h = server.display_handle();
                Box::new(move |b, a| h.adopt_device_display(b, a))
            },
            commands: server.subscribe_commands(),
        };
        Some(crate::adb::spawn(
            ports.into_iter().flatten().collect(),
            link,
        )?)
    } else {
        None
    };
    if !cfg.tuning.is_neutral() {
        println!(
            "  display tuning:    {}   (framewire ctl profile neutral to turn off)",
            cfg.tuning
        );
    }
    println!("  latency:           framewire latency --watch --control-socket {ctl}");
    println!("  commands:          framewire ctl brightness 200 --control-socket {ctl}");
    println!("Ctrl-C to stop.");
    server.wait_shutdown_signal().await;
    drop(adb);
    println!("stopping");
    // Removes the control socket (if it is still the one it bound) and marks the status file
    // `stopped`.
    server.shutdown().await;
    Ok(())
}
