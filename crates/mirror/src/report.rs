//! The latency report and the Daylight status keys, assembled from the mirror's figures.

use std::sync::atomic::Ordering;

use framewire_telemetry::{LatencyReport, SampleWindow, StageSummary, ViewerPath};

use framewire_telemetry::clock::now_us;

use crate::mirror::{lock, FlowFigures, Mirror, ViewerShared};

impl Mirror {
    /// The latency report now (what `framewire latency`, `REPORT` and `/api/stats` show).
    pub fn report(&self) -> LatencyReport {
        build_report(self)
    }

    /// The Daylight `STATUS` keys, also written to the status file.
    pub fn status_lines(&self) -> Vec<(&'static str, String)> {
        status_lines(self)
    }
}

fn build_report(mirror: &Mirror) -> LatencyReport {
    // Departed first, then the list (the order `unregister` takes them in).
    let departed = lock(&mirror.departed);
    let viewers = mirror.viewer_list();
    let mut rtt = SampleWindow::new(1200);
    let mut e2e = departed.e2e_us.clone();
    let mut skipped = departed.flow.skipped;
    drop(departed);
    let mut bytes_sent = 0u64;
    let mut paths = Vec::new();
    for v in &viewers {
        let f = lock(&v.flow);
        skipped += f.stats.skipped;
        paths.push(viewer_path(v, &f));
        for &x in f.rtt.values() {
            rtt.push(x);
        }
        drop(f);
        for &x in lock(&v.e2e_us).values() {
            e2e.push(x);
        }
        bytes_sent += v.bytes_sent.load(Ordering::Relaxed);
    }
    let p = lock(&mirror.pipeline);
    let fps = match (
        p.capture_times.len(),
        p.capture_times.percentile(0.0),
        p.capture_times.max(),
    ) {
        (n, Some(first), Some(last)) if n > 1 && last > first => {
            (n - 1) as f64 * 1e6 / (last - first)
        }
        _ => 0.0,
    };
    let elapsed_s = ((now_us() - mirror.started_us) as f64 / 1e6).max(1e-3);
    let size = *mirror.resolution.borrow();
    LatencyReport {
        source: lock(&mirror.source_name).clone(),
        resolution: format!("{}x{}", size.0, size.1),
        fps,
        jitter_ms: p.interval_jitter_us.avg().unwrap_or(0.0) / 1000.0,
        capture: StageSummary::from_us(&p.capture_us),
        grey: StageSummary::from_us(&p.grey_us),
        checksum: StageSummary::from_us(&p.checksum_us),
        delta_compress: StageSummary::from_us(&p.delta_us),
        keyframe_compress: StageSummary::from_us(&p.keyframe_us),
        colour_planes: StageSummary::from_us(&p.colour_planes_us),
        colour_compress: StageSummary::from_us(&p.colour_compress_us),
        send: StageSummary::from_us(&lock(&mirror.send_us)),
        bytes_per_frame: p.payload_bytes.avg().unwrap_or(0.0),
        colour_bytes_per_frame: p.colour_payload_bytes.avg().unwrap_or(0.0),
        bandwidth_mbps: bytes_sent as f64 * 8.0 / 1e6 / elapsed_s,
        rtt: StageSummary::from_us(&rtt),
        end_to_end: StageSummary::from_us(&e2e),
        clients: viewers.len(),
        total_frames: mirror.counters.frames_captured.get(),
        unchanged_frames: mirror.counters.frames_unchanged.get(),
        skipped_frames: skipped,
        counters: mirror.registry.snapshot(),
        viewers: paths,
    }
}

fn viewer_path(v: &ViewerShared, f: &FlowFigures) -> ViewerPath {
    let link = f.link.unwrap_or_default();
    ViewerPath {
        viewer: v.id,
        protocol: v.protocol.name().to_string(),
        bandwidth_mbps: link.rate_bytes_per_s as f64 * 8.0 / 1e6,
        min_rtt_ms: link.min_rtt_us as f64 / 1000.0,
        inflight_bytes: link.inflight_bytes,
        budget_bytes: link.budget_bytes,
        transport_rtt_ms: f.path.map(|p| p.rtt_us as f64 / 1000.0),
        cwnd_bytes: f.path.map(|p| p.cwnd_bytes),
        window_bound_bytes: f.path.map(|p| p.window_bound_bytes).filter(|&b| b > 0),
        lost_packets: f.path.map(|p| p.lost_packets),
        sent_packets: f.path.map(|p| p.sent_packets),
        datagram_frames: f.path.map(|p| p.datagram_frames),
        recovery_shards: f.path.map(|p| p.recovery_shards),
        recovery_shards_dropped: f.path.map(|p| p.recovery_shards_dropped),
        datagram_fallbacks: f.path.map(|p| p.datagram_fallbacks),
        frames_planned: f.stats.frames_planned,
        skipped: f.stats.skipped,
        rebased: f.stats.rebased,
        rebased_acknowledged: f.stats.rebased_acknowledged,
        stall_probes: f.stats.stall_probes,
        unacked_passed: f.stats.unacked_passed,
        bases_missing: f.stats.bases_missing,
    }
}

fn status_lines(mirror: &Mirror) -> Vec<(&'static str, String)> {
    let r = build_report(mirror);
    let running = lock(&mirror.settings).running;
    vec![
        (
            "status",
            if running { "running" } else { "idle" }.to_string(),
        ),
        ("resolution", r.resolution.clone()),
        ("fps", format!("{:.1}", r.fps)),
        ("bandwidth_mbps", format!("{:.2}", r.bandwidth_mbps)),
        ("clients", r.clients.to_string()),
        ("total_frames", r.total_frames.to_string()),
        ("jitter_ms", format!("{:.2}", r.jitter_ms)),
        ("rtt_avg_ms", format!("{:.2}", r.rtt.avg)),
        ("rtt_p95_ms", format!("{:.2}", r.rtt.p95)),
        ("pid", std::process::id().to_string()),
        ("updated", iso8601_now()),
    ]
}

/// UTC now as ISO 8601 (`2026-11-22T20:01:02Z`), from the civil-from-days algorithm, to avoid a
/// date library for one field.
pub fn iso8601_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
