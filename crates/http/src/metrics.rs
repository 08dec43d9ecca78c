//! `/metrics`: the Prometheus text format, written with the `prometheus` crate's encoder at
//! each scrape from every subsystem's counter set, the mirror's report and per-viewer flow,
//! and the sensor hub. Names and units are listed in `spec/PROTOCOL.md` ("Metrics").

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use framewire_mirror::{lock, Mirror};
use framewire_sensors::Sensors;
use framewire_telemetry::CounterRegistry;
use prometheus::{
    Encoder, GaugeVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};

use crate::access::{refusal, TokenQuery};
use crate::HttpCtx;

/// Streams with a series of their own in `framewire_stream_items_total` (the busiest); the
/// rest are summed in `framewire_stream_items_other`, so 100 000 locations cannot make a
/// scrape 23 MB.
pub const STREAM_SERIES: usize = 100;
/// Viewers with flow series of their own (the first connected); the totals cover every one.
pub const VIEWER_SERIES: usize = 64;

pub(crate) async fn metrics(
    State(c): State<Arc<HttpCtx>>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
) -> Response {
    if let Some(r) = refusal(&c, "metrics", &headers, &q) {
        return r;
    }
    let c2 = c.clone();
    let render =
        move || render(&c2.mirror, &c2.registry, c2.sensors.as_ref()).map_err(|e| e.to_string());
    match c.metrics_cache.get(render).await {
        Ok((body, shared)) => {
            if shared {
                c.counters.http_renders_shared.inc("metrics");
            }
            (
                [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
                body,
            )
                .into_response()
        }
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
        ("colour_planes", &report.colour_planes),
        ("colour_compress", &report.colour_compress),
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
    let (top, other) = busiest(st.stream_names(), STREAM_SERIES);
    for (name, n) in top {
        items.with_label_values(&[&name]).inc_by(n);
    }
    r.register(Box::new(items))?;
    // A gauge, not a counter: it falls when a stream joins the busiest or expires.
    gauge(
        r,
        "framewire_stream_items_other",
        "Items carried by the streams alive now that have no series of their own",
        other as usize,
    )?;
    gauge(
        r,
        "framewire_streams",
        "Streams alive now (idle ones expire)",
        st.stream_count(),
    )?;
    let (queued, budget) = st.queued_bytes();
    gauge(
        r,
        "framewire_subscriber_queued_bytes",
        "Bytes all subscribers' queues hold now",
        queued,
    )?;
    gauge(
        r,
        "framewire_subscriber_budget_bytes",
        "The subscribers' memory budget: beyond it the one holding the most is cut off",
        budget,
    )?;
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
    for v in m.viewer_list().into_iter().take(VIEWER_SERIES) {
        let stats = lock(&v.flow).stats;
        let id = v.id.to_string();
        for (name, x) in stats.fields() {
            per_viewer
                .with_label_values(&[id.as_str(), v.protocol.name(), name])
                .inc_by(x);
        }
    }
    r.register(Box::new(per_viewer))?;
    let path = prometheus::GaugeVec::new(
        Opts::new(
            "framewire_viewer_path",
            "Each viewer's path: estimated bandwidth (bytes/s), minimum RTT (s), bytes in flight and allowed, and for QUIC the transport's RTT (s), congestion window (bytes), packets sent and lost",
        ),
        &["viewer", "protocol", "figure"],
    )?;
    for v in m.viewer_list().into_iter().take(VIEWER_SERIES) {
        let f = lock(&v.flow);
        let id = v.id.to_string();
        let set = |name: &str, x: f64| {
            path.with_label_values(&[id.as_str(), v.protocol.name(), name])
                .set(x)
        };
        if let Some(l) = f.link {
            set("bandwidth_bytes_per_second", l.rate_bytes_per_s as f64);
            set("min_rtt_seconds", l.min_rtt_us as f64 / 1e6);
            set("inflight_bytes", l.inflight_bytes as f64);
            set("budget_bytes", l.budget_bytes as f64);
        }
        if let Some(p) = f.path {
            set("transport_rtt_seconds", p.rtt_us as f64 / 1e6);
            set("cwnd_bytes", p.cwnd_bytes as f64);
            set("window_bound_bytes", p.window_bound_bytes as f64);
            set("sent_packets", p.sent_packets as f64);
            set("lost_packets", p.lost_packets as f64);
            set("datagram_frames", p.datagram_frames as f64);
            set("recovery_shards", p.recovery_shards as f64);
            set("recovery_shards_dropped", p.recovery_shards_dropped as f64);
            set("datagram_fallbacks", p.datagram_fallbacks as f64);
        }
    }
    r.register(Box::new(path))
}

/// The `n` streams with the most items, and the sum of the others.
pub(crate) fn busiest(mut streams: Vec<(String, u64)>, n: usize) -> (Vec<(String, u64)>, u64) {
    if streams.len() <= n {
        return (streams, 0);
    }
    streams.select_nth_unstable_by(n, |a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let other = streams[n..].iter().map(|(_, c)| c).sum();
    streams.truncate(n);
    (streams, other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_streams_keep_their_series_and_the_rest_are_summed() {
        let streams: Vec<(String, u64)> = (0..1000).map(|i| (format!("sensor/{i}"), i)).collect();
        let (top, other) = busiest(streams, 3);
        let mut names: Vec<&str> = top.iter().map(|(n, _)| n.as_str()).collect();
        names.sort();
        assert_eq!(names, ["sensor/997", "sensor/998", "sensor/999"]);
        assert_eq!(other, (0..997u64).sum::<u64>());
        let (top, other) = busiest(vec![("a".into(), 5)], 3);
        assert_eq!((top.len(), other), (1, 0));
    }
}
