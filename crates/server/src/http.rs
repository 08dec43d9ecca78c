//! The HTTP port (default 8890, not Prometheus' own 9090): `/metrics` in the Prometheus text
//! format, written with the `prometheus` crate's encoder from the server's own registries at
//! each scrape. Names and units are listed in `spec/PROTOCOL.md` ("Metrics").

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use prometheus::{
    Encoder, GaugeVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};
use tokio::net::TcpListener;
use tracing::{info, warn};

use crate::report::build_report;
use crate::state::Shared;
use crate::streams::Streams;

#[derive(Clone)]
struct Ctx {
    shared: Arc<Shared>,
    streams: Option<Arc<Streams>>,
}

pub async fn serve(l: TcpListener, shared: Arc<Shared>, streams: Option<Arc<Streams>>) {
    if let Ok(a) = l.local_addr() {
        info!(addr = %a, "http: /metrics");
    }
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(Ctx { shared, streams });
    if let Err(e) = axum::serve(l, app).await {
        warn!(error = %e, "http server stopped");
    }
}

async fn metrics(State(c): State<Ctx>) -> impl IntoResponse {
    match render(&c.shared, c.streams.as_deref()) {
        Ok(body) => (
            [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
            body,
        )
            .into_response(),
        Err(e) => (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            format!("metrics: {e}\n"),
        )
            .into_response(),
    }
}

/// The exposition text for the server's state now.
pub fn render(shared: &Shared, streams: Option<&Streams>) -> Result<String, prometheus::Error> {
    let r = Registry::new();
    let events = IntCounterVec::new(
        Opts::new(
            "framewire_events_total",
            "Named events since start: every drop, rejection and recovery (the control socket's counters)",
        ),
        &["event"],
    )?;
    for (name, v) in shared.counters.snapshot() {
        events.with_label_values(&[&name]).inc_by(v);
    }
    r.register(Box::new(events))?;

    let report = build_report(shared);
    let viewers = IntGauge::new("framewire_viewers", "Viewers connected now")?;
    viewers.set(report.clients as i64);
    r.register(Box::new(viewers))?;
    let fps = GaugeVec::new(
        Opts::new(
            "framewire_capture_fps",
            "Frames captured per second (recent window)",
        ),
        &["source"],
    )?;
    fps.with_label_values(&[&report.source]).set(report.fps);
    r.register(Box::new(fps))?;
    let frames = IntCounter::new("framewire_frames_captured_total", "Frames captured")?;
    frames.inc_by(report.total_frames);
    r.register(Box::new(frames))?;
    let stages = GaugeVec::new(
        Opts::new(
            "framewire_stage_latency_seconds",
            "Per-stage latency over the recent window, by percentile (50, 95, 99)",
        ),
        &["stage", "percentile"],
    )?;
    for (stage, s) in [
        ("capture", &report.capture),
        ("grey", &report.grey),
        ("checksum", &report.checksum),
        ("delta_compress", &report.delta_compress),
        ("keyframe_compress", &report.keyframe_compress),
        ("send", &report.send),
        ("rtt", &report.rtt),
        ("end_to_end", &report.end_to_end),
    ] {
        if s.samples == 0 {
            continue;
        }
        for (q, v) in [("50", s.p50), ("95", s.p95), ("99", s.p99)] {
            stages.with_label_values(&[stage, q]).set(v / 1000.0);
        }
    }
    r.register(Box::new(stages))?;

    if let Some(st) = streams {
        let depth = IntGauge::new(
            "framewire_stream_queue_depth",
            "Items waiting for the stream hub (publishers pause reading above the high-water mark)",
        )?;
        depth.set(st.depth() as i64);
        r.register(Box::new(depth))?;
        let paused = IntGauge::new(
            "framewire_stream_reads_paused",
            "1 while publishers are told to stop reading their sockets",
        )?;
        paused.set(st.is_paused() as i64);
        r.register(Box::new(paused))?;
        let items = IntCounterVec::new(
            Opts::new("framewire_stream_items_total", "Items published, by stream"),
            &["stream"],
        )?;
        for (name, n) in st.stream_names() {
            items.with_label_values(&[&name]).inc_by(n);
        }
        r.register(Box::new(items))?;
        let h = st.hub_counters();
        for (name, help, v) in [
            (
                "framewire_samples_published_total",
                "Samples published to the hub",
                h.samples_published,
            ),
            (
                "framewire_thermal_published_total",
                "Thermal grids published to the hub",
                h.thermal_published,
            ),
            (
                "framewire_samples_missed_total",
                "Samples a subscriber lost to a full queue (each reported to it)",
                h.samples_missed,
            ),
            (
                "framewire_thermal_replaced_total",
                "Grids replaced by a newer one before a subscriber took them",
                h.thermal_replaced,
            ),
        ] {
            let c = IntCounter::new(name, help)?;
            c.inc_by(v);
            r.register(Box::new(c))?;
        }
        let devices = IntGauge::new("framewire_sensor_devices", "Sensor devices connected now")?;
        devices.set(shared.devices.count() as i64);
        r.register(Box::new(devices))?;
    }

    let mut out = Vec::new();
    TextEncoder::new().encode(&r.gather(), &mut out)?;
    Ok(String::from_utf8(out).unwrap_or_default())
}
