//! The HTTP port (default 8890, not Prometheus' own 9090), one axum server for:
//! - `/` — the browser viewer page, `/dashboard` — the live dashboard, `/assets/…` — their
//!   scripts (built from `web/` and embedded in the binary);
//! - `/ws` — framewire v1 inside WebSocket binary messages (viewers and subscribers);
//! - `/api/stats` — the dashboard's JSON snapshot;
//! - `/metrics` — the Prometheus text format, written with the `prometheus` crate's encoder
//!   from the server's own registries at each scrape. Names and units are listed in
//!   `spec/PROTOCOL.md` ("Metrics").

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus::{
    Encoder, GaugeVec, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};
use tokio::net::TcpListener;
use tracing::{info, warn};

use crate::report::build_report;
use crate::server::Ctx;
use crate::state::Shared;
use crate::streams::Streams;
use crate::web_assets;

pub(crate) async fn serve(l: TcpListener, ctx: Arc<Ctx>) {
    if let Ok(a) = l.local_addr() {
        info!(addr = %a, "http: viewer page /, /dashboard, /ws, /api/stats, /metrics");
    }
    let app = Router::new()
        .route("/", get(|| page("viewer.html")))
        .route("/dashboard", get(|| page("dashboard.html")))
        .route("/assets/{file}", get(asset))
        .route("/ws", get(websocket))
        .route("/api/stats", get(stats))
        .route("/metrics", get(metrics))
        .with_state(ctx);
    let svc = app.into_make_service_with_connect_info::<SocketAddr>();
    if let Err(e) = axum::serve(l, svc).await {
        warn!(error = %e, "http server stopped");
    }
}

async fn page(name: &'static str) -> Response {
    match web_assets::get(name) {
        // Cross-origin isolation gives the page a 5 µs clock instead of 100 µs, so it can time
        // its own decode and draw; the pages load nothing from other origins.
        Some((ty, body)) => (
            [
                (CONTENT_TYPE, ty),
                (CACHE_CONTROL, "no-cache"),
                (
                    HeaderName::from_static("cross-origin-opener-policy"),
                    "same-origin",
                ),
                (
                    HeaderName::from_static("cross-origin-embedder-policy"),
                    "require-corp",
                ),
            ],
            body,
        )
            .into_response(),
        None if !web_assets::built() => (
            StatusCode::NOT_FOUND,
            "The browser pages were not built into this binary: run `make build` \
             (it bundles web/ with esbuild) and start the server again.\n",
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such page\n").into_response(),
    }
}

async fn asset(Path(file): Path<String>) -> Response {
    match web_assets::get(&file) {
        Some((ty, body)) => {
            ([(CONTENT_TYPE, ty), (CACHE_CONTROL, "no-cache")], body).into_response()
        }
        None => (StatusCode::NOT_FOUND, "no such asset\n").into_response(),
    }
}

/// The host part of an `Origin` header (`http://host:port` → `host:port`).
fn origin_host(origin: &str) -> &str {
    origin
        .split_once("://")
        .map(|(_, h)| h)
        .unwrap_or(origin)
        .trim_end_matches('/')
}

/// Refuses cross-site WebSockets: a page from another site, open in the user's browser, must
/// not be able to watch this screen through it. Non-browser clients send no Origin.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    origin_host(origin).eq_ignore_ascii_case(host)
}

async fn websocket(
    State(ctx): State<Arc<Ctx>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if !same_origin(&headers) {
        ctx.shared.counters.inc("websocket_rejected.origin");
        warn!(%peer, origin = ?headers.get(ORIGIN), "websocket from another site refused");
        return (StatusCode::FORBIDDEN, "cross-site WebSocket refused\n").into_response();
    }
    ws.max_message_size(1 << 20)
        .on_upgrade(move |sock| crate::websocket::bridge(sock, peer, ctx))
}

/// The dashboard's snapshot: the latency report (ms), counters and the hub's state. Rates are
/// computed by the page from successive totals.
async fn stats(State(ctx): State<Arc<Ctx>>) -> Response {
    let report = build_report(&ctx.shared);
    let hub = ctx.streams.as_deref().map(|st| {
        let h = st.hub_counters();
        serde_json::json!({
            "queue_depth": st.depth(),
            "reads_paused": st.is_paused(),
            "samples_published": h.samples_published,
            "samples_missed": h.samples_missed,
            "thermal_published": h.thermal_published,
            "thermal_replaced": h.thermal_replaced,
            "devices": ctx.shared.devices.count(),
            "streams": st.stream_names().into_iter().map(|(n, c)| serde_json::json!({"name": n, "items": c})).collect::<Vec<_>>(),
        })
    });
    let body = serde_json::json!({
        "uptime_s": (crate::clock::now_us().saturating_sub(ctx.shared.started_us)) as f64 / 1e6,
        "report": report,
        "hub": hub,
    });
    (
        [
            (CONTENT_TYPE, "application/json"),
            (CACHE_CONTROL, "no-store"),
        ],
        body.to_string(),
    )
        .into_response()
}

async fn metrics(State(c): State<Arc<Ctx>>) -> impl IntoResponse {
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

/// Registers a gauge holding `v`.
fn gauge(r: &Registry, name: &str, help: &str, v: usize) -> Result<(), prometheus::Error> {
    let g = IntGauge::new(name, help)?;
    g.set(v as i64);
    r.register(Box::new(g))
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
    gauge(
        &r,
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
    r.register(Box::new(shared.stages.vec.clone()))?;

    if let Some(st) = streams {
        gauge(
            &r,
            "framewire_stream_queue_depth",
            "Items waiting for the stream hub (publishers pause reading above the high-water mark)",
            st.depth(),
        )?;
        gauge(
            &r,
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
            &r,
            "framewire_stream_subscribers",
            "Stream subscribers connected now",
            st.subscriber_count(),
        )?;
        gauge(
            &r,
            "framewire_sensor_devices",
            "Sensor devices connected now",
            shared.devices.count(),
        )?;
    }

    let mut out = Vec::new();
    TextEncoder::new().encode(&r.gather(), &mut out)?;
    Ok(String::from_utf8(out).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(origin: Option<&str>, host: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(HOST, host.parse().unwrap());
        if let Some(o) = origin {
            h.insert(ORIGIN, o.parse().unwrap());
        }
        h
    }

    #[test]
    fn websockets_only_from_the_same_site() {
        assert!(same_origin(&headers(None, "127.0.0.1:8890")));
        assert!(same_origin(&headers(
            Some("http://127.0.0.1:8890"),
            "127.0.0.1:8890"
        )));
        assert!(same_origin(&headers(
            Some("http://Tablet.local:8890/"),
            "tablet.local:8890"
        )));
        assert!(!same_origin(&headers(
            Some("http://evil.example"),
            "127.0.0.1:8890"
        )));
        assert!(!same_origin(&headers(
            Some("http://127.0.0.1:9999"),
            "127.0.0.1:8890"
        )));
        assert!(!same_origin(&headers(Some("null"), "127.0.0.1:8890")));
    }
}
