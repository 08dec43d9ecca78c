//! `/api/stats`: the dashboard's JSON snapshot.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use framewire_telemetry::clock::now_us;

use crate::HttpCtx;

/// The dashboard's snapshot: the latency report (ms), counters and the hub's state. Rates are
/// computed by the page from successive totals.
pub(crate) async fn stats(State(ctx): State<Arc<HttpCtx>>) -> Response {
    let report = ctx.mirror.report();
    let hub = ctx.sensors.as_ref().map(|sensors| {
        let st = &sensors.streams;
        let h = st.hub_counters();
        serde_json::json!({
            "queue_depth": st.depth(),
            "reads_paused": st.is_paused(),
            "samples_published": h.samples_published,
            "samples_missed": h.samples_missed,
            "thermal_published": h.thermal_published,
            "thermal_replaced": h.thermal_replaced,
            "devices": sensors.devices.count(),
            "streams": st.stream_names().into_iter().map(|(n, c)| serde_json::json!({"name": n, "items": c})).collect::<Vec<_>>(),
        })
    });
    let body = serde_json::json!({
        "uptime_s": (now_us().saturating_sub(ctx.mirror.started_us)) as f64 / 1e6,
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
