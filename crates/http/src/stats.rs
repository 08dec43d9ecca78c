//! `/api/stats`: the dashboard's JSON snapshot.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use framewire_telemetry::clock::now_us;

use crate::access::{refusal, TokenQuery};
use crate::HttpCtx;

/// The dashboard's snapshot: the latency report (ms), counters and the hub's state. Rates are
/// computed by the page from successive totals.
pub(crate) async fn stats(
    State(ctx): State<Arc<HttpCtx>>,
    headers: HeaderMap,
    Query(q): Query<TokenQuery>,
) -> Response {
    if let Some(r) = refusal(&ctx, "stats", &headers, &q) {
        return r;
    }
    let c = ctx.clone();
    let (body, shared) = match ctx.stats_cache.get(move || Ok(snapshot(&c))).await {
        Ok(x) => x,
        Err(e) => {
            return (StatusCode::INTERNAL_SERVER_ERROR, format!("stats: {e}\n")).into_response()
        }
    };
    if shared {
        ctx.counters.http_renders_shared.inc("stats");
    }
    (
        [
            (CONTENT_TYPE, "application/json"),
            (CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// The snapshot's JSON text.
fn snapshot(ctx: &HttpCtx) -> String {
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
            "stream_count": st.stream_count(),
            "streams": crate::metrics::busiest(st.stream_names(), crate::metrics::STREAM_SERIES).0.into_iter().map(|(n, c)| serde_json::json!({"name": n, "items": c})).collect::<Vec<_>>(),
        })
    });
    let body = serde_json::json!({
        "uptime_s": (now_us().saturating_sub(ctx.mirror.started_us)) as f64 / 1e6,
        "report": report,
        "hub": hub,
    });
    body.to_string()
}
