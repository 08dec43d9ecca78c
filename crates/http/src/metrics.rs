//! `/metrics`: the Prometheus text format, written with the `prometheus` crate's encoder at
//! each scrape from every subsystem's counter set, the mirror's report and per-viewer flow,
//! and the sensor hub. Names and units are listed in `spec/PROTOCOL.md` ("Metrics").

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use framewire_mirror::{lock, Mirror};
use framewire_sensors::Sensors;
use framewire_telemetry::CounterRegistry;
use prometheus::{
    Encoder, GaugeVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};

use crate::HttpCtx;

pub(crate) async fn metrics(State(c): State<Arc<HttpCtx>>) -> impl IntoResponse {
    match render(&c.mirror, &c.registry, c.sensors.as_ref()) {
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

/// Registers a gauge holding `v`.
fn gauge(r: &Registry, name: &str, help: &str, v: usize) -> Result<(), prometheus::Error> {
    let g = IntGauge::new(name, help)?;
    g.set(v as i64);
    r.register(Box::new(g))
}

/// The exposition text for the server's state now.
pub fn render(
    mirror: &Mirror,
    counters: &CounterRegistry,
    sensors: Option<&Sensors>,
) -> Result<String, prometheus::Error> {
    let r = Registry::new();
    let events = IntCounterVec::new(
        Opts::new(
            "framewire_events_total",
            "Named events since start: every drop, rejection and recovery (the control socket's counters)",
        ),
        &["event"],
    )?;
    for (name, v) in counters.snapshot() {
        events.with_label_values(&[&name]).inc_by(v);
    }
    r.register(Box::new(events))?;
    mirror_figures(&r, mirror)?;
    flow(&r, mirror)?;
    if let Some(sensors) = sensors {
        sensor_hub(&r, sensors)?;
    }
    let mut out = Vec::new();
    TextEncoder::new().encode(&r.gather(), &mut out)?;
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// The mirror's report: viewers, capture rate, recent per-stage percentiles, and the stage
/// histograms since start.
fn mirror_figures(r: &Registry, mirror: &Mirror) -> Result<(), prometheus::Error> {
    let report = mirror.report();
    gauge(
        r,
        "framewire_viewers",
        "Viewers connected now",
        report.clients,
    )?;
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
            "framewire_stage_latency_recent_seconds",
            "Per-stage latency over the recent window (the last 150-600 samples), by percentile (50, 95, 99); framewire_stage_latency_seconds is the histogram since start",
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
    r.register(Box::new(mirror.stages.vec.clone()))
}

/// The stream hub: its queue, pauses, items by stream, subscribers and devices.
fn sensor_hub(r: &Registry, sensors: &Sensors) -> Result<(), prometheus::Error> {
    let st = &sensors.streams;
    gauge(
        r,
        "framewire_stream_queue_depth",
        "Items waiting for the stream hub (publishers pause reading above the high-water mark)",
        st.depth(),
    )?;
    gauge(
        r,
        "framewire_stream_reads_paused",
        "1 while publishers are told to stop reading their sockets",
        st.is_paused() as usize,
    )?;
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
    gauge(
        r,
        "framewire_stream_subscribers",
        "Stream subscribers connected now",
        st.subscriber_count(),
    )?;
    gauge(
        r,
        "framewire_sensor_devices",
        "Sensor devices connected now",
        sensors.devices.count(),
    )?;
    Ok(())
}

/// Viewers' flow figures: the totals over every viewer since start, and each viewer's own
/// while it is connected (forced and refresh keyframes, ACK timeouts, unknown ACKs, keyframe
/// requests, skipped frames, …).
fn flow(r: &Registry, m: &Mirror) -> Result<(), prometheus::Error> {
    let totals = IntCounterVec::new(
        Opts::new(
            "framewire_flow_events_total",
            "Flow decisions and events summed over every viewer since start",
        ),
        &["event"],
    )?;
    for (name, v) in m.flow_totals().fields() {
        totals.with_label_values(&[name]).inc_by(v);
    }
    r.register(Box::new(totals))?;
    let per_viewer = IntCounterVec::new(
        Opts::new(
            "framewire_viewer_flow_events_total",
            "Flow decisions and events of each viewer connected now",
        ),
        &["viewer", "protocol", "event"],
    )?;
    for v in m.viewer_list() {
        let stats = lock(&v.flow).stats;
        let id = v.id.to_string();
        for (name, x) in stats.fields() {
            per_viewer
                .with_label_values(&[id.as_str(), v.protocol.name(), name])
                .inc_by(x);
        }
    }
    r.register(Box::new(per_viewer))
}
