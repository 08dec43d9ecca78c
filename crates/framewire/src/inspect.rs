//! `framewire latency` and `framewire ctl`: clients of the control socket.

use std::time::Duration;

use anyhow::{bail, Context};
use framewire_control::{default_socket_path, request};
use framewire_telemetry::{LatencyReport, StageSummary};

use crate::cli::{CtlArgs, LatencyArgs};

fn stage(name: &str, s: &StageSummary) -> String {
    format!(
        "  {name:<18} avg {:>7.3} ms   p50 {:>7.3}   p95 {:>7.3}   p99 {:>7.3}   (n={})",
        s.avg, s.p50, s.p95, s.p99, s.samples
    )
}

/// KB per frame, grey and colour where each is made.
fn frame_sizes(r: &LatencyReport) -> String {
    let mut s = String::new();
    if r.bytes_per_frame > 0.0 || r.colour_bytes_per_frame == 0.0 {
        s += &format!("{:.1} KB/frame  ", r.bytes_per_frame / 1024.0);
    }
    if r.colour_bytes_per_frame > 0.0 {
        s += &format!("colour {:.1} KB/frame  ", r.colour_bytes_per_frame / 1024.0);
    }
    s
}

pub fn render_report(r: &LatencyReport) -> String {
    let mut out = vec![
        format!(
            "source {}  {}  fps {:.1}  jitter {:.2} ms  clients {}",
            r.source, r.resolution, r.fps, r.jitter_ms, r.clients
        ),
        format!(
            "frames {}  unchanged {}  skipped {}  {}{:.2} Mbit/s sent",
            r.total_frames,
            r.unchanged_frames,
            r.skipped_frames,
            frame_sizes(r),
            r.bandwidth_mbps
        ),
        "host:".into(),
        stage("capture", &r.capture),
        stage("grey", &r.grey),
        stage("checksum", &r.checksum),
        stage("delta+compress", &r.delta_compress),
        stage("keyframe", &r.keyframe_compress),
    ];
    // Colour stages only while colour viewers were served (a grey server has none).
    for (name, s) in [
        ("colour planes", &r.colour_planes),
        ("colour compress", &r.colour_compress),
    ] {
        if s.samples > 0 {
            out.push(stage(name, s));
        }
    }
    out.extend([
        stage("send", &r.send),
        "round trip and end to end (from the moment the source hands the picture over):".into(),
        stage("rtt", &r.rtt),
        stage("capture→applied", &r.end_to_end),
    ]);
    if r.viewers
        .iter()
        .any(|v| v.budget_bytes > 0 || v.transport_rtt_ms.is_some())
    {
        out.push("viewers' paths:".into());
    }
    for v in r
        .viewers
        .iter()
        .filter(|v| v.budget_bytes > 0 || v.transport_rtt_ms.is_some())
    {
        let mut line = format!(
            "  viewer {} ({}): {:.2} Mbit/s, min RTT {:.1} ms, in flight {} of {} B, skipped {}, rebased {} ({} against its acknowledged picture), stall probes {}, bases missing {}",
            v.viewer,
            v.protocol,
            v.bandwidth_mbps,
            v.min_rtt_ms,
            v.inflight_bytes,
            v.budget_bytes,
            v.skipped,
            v.rebased,
            v.rebased_acknowledged,
            v.stall_probes,
            v.bases_missing
        );
        if let (Some(rtt), Some(cwnd), Some(lost), Some(sent)) = (
            v.transport_rtt_ms,
            v.cwnd_bytes,
            v.lost_packets,
            v.sent_packets,
        ) {
            let loss = lost as f64 * 100.0 / sent.max(1) as f64;
            line += &format!(
                "; QUIC RTT {rtt:.1} ms, window {cwnd} B, lost {lost} of {sent} packets ({loss:.2} %)"
            );
        }
        if let (Some(n), Some(k)) = (v.datagram_frames, v.recovery_shards) {
            if n > 0 {
                line += &format!("; {n} frames as datagrams with {k} recovery shards");
                match v.recovery_shards_dropped {
                    Some(d) if d > 0 => line += &format!(" ({d} dropped unsent)"),
                    _ => {}
                }
            }
        }
        if let Some(n) = v.datagram_fallbacks.filter(|&n| n > 0) {
            line += &format!("; {n} frames meant for datagrams went on streams");
        }
        out.push(line);
    }
    let drops: Vec<String> = r
        .counters
        .iter()
        .filter(|(k, v)| {
            *v > 0
                && (k.starts_with("rejected")
                    || k.contains("error")
                    || k.contains("mismatch")
                    || k.contains("dropped"))
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    out.push(format!(
        "problems: {}",
        if drops.is_empty() {
            "none".to_string()
        } else {
            drops.join(" ")
        }
    ));
    out.join("\n")
}

pub async fn fetch_report(path: &std::path::Path) -> anyhow::Result<LatencyReport> {
    let reply = request(path, "REPORT").await?;
    let json = reply
        .strip_prefix("OK\n")
        .with_context(|| format!("server replied {reply:?}"))?;
    serde_json::from_str(json.trim()).context("parsing the server's report")
}

/// Writes `text` to stdout. A reader that went away (`framewire latency | head -3`) ends the
/// command quietly, as command-line tools do, instead of a panic in `println!` (Rust ignores
/// SIGPIPE, so the write fails with EPIPE): successfully, unless `failed`.
fn emit(text: &str, failed: bool) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(failed as i32),
        r => Ok(r?),
    }
}

pub async fn latency(a: LatencyArgs) -> anyhow::Result<()> {
    let path = match a.control_socket {
        Some(p) => p,
        None => default_socket_path()?,
    };
    loop {
        let r = fetch_report(&path).await?;
        if a.json {
            emit(&format!("{}\n", serde_json::to_string(&r)?), false)?;
        } else {
            emit(&format!("{}\n\n", render_report(&r)), false)?;
        }
        if !a.watch {
            return Ok(());
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}

pub async fn ctl(a: CtlArgs) -> anyhow::Result<()> {
    let path = match a.control_socket {
        Some(p) => p,
        None => default_socket_path()?,
    };
    let reply = request(&path, &a.words.join(" ")).await?;
    let refused = reply.starts_with("ERR");
    emit(&reply, refused)?;
    if refused {
        bail!("the server refused the command");
    }
    Ok(())
}
