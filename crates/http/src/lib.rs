//! The HTTP port (default 8890, not Prometheus' own 9090), one axum server for:
//! - `/` — the browser viewer page, `/dashboard` — the live dashboard, `/assets/…` — their
//!   scripts (built from `web/` and embedded in the binary);
//! - `/ws` — framewire v1 inside WebSocket binary messages (viewers and subscribers);
//! - `/api/stats` — the dashboard's JSON snapshot;
//! - `/metrics` — the Prometheus text format, written with the `prometheus` crate's encoder
//!   from the server's own registries at each scrape. Names and units are listed in
//!   `spec/PROTOCOL.md` ("Metrics").

//!
//! | file | what |
//! |---|---|
//! | `pages.rs` | the pages and their assets, built from `web/` and embedded (`web_assets.rs`) |
//! | `websocket.rs` | `/ws`: same-site check, then the v1 byte stream through the front door |
//! | `stats.rs` | `/api/stats`: the dashboard's JSON snapshot |
//! | `metrics.rs` | `/metrics`: the Prometheus exposition, from every subsystem's counters |

mod metrics;
mod pages;
mod stats;
mod web_assets;
mod websocket;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use axum::routing::get;
use axum::Router;
use framewire_mirror::Mirror;
use framewire_sensors::Sensors;
use framewire_telemetry::{counter_set, CounterRegistry, Family};
use tokio::net::TcpListener;
use tracing::{info, warn};

pub use metrics::render;

/// Where a browser's v1 byte stream goes once its WebSocket is open: the server's front door
/// (Hello, token, then a viewer or a subscriber), the same one TCP connections go through.
pub trait Door: Send + Sync + 'static {
    fn serve(
        self: Arc<Self>,
        conn: tokio::io::DuplexStream,
        peer: SocketAddr,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

counter_set! {
    /// What the HTTP port counts.
    pub struct HttpCounters {
        /// WebSocket connections (`websocket`).
        connections: Family,
        /// WebSockets refused, by reason (`origin`, `text_message`).
        websocket_rejected: Family,
    }
}

/// What the HTTP port serves from.
pub struct HttpCtx {
    pub mirror: Arc<Mirror>,
    pub sensors: Option<Sensors>,
    pub door: Arc<dyn Door>,
    pub registry: CounterRegistry,
    pub counters: Arc<HttpCounters>,
}

impl HttpCtx {
    /// The HTTP port's context; its counters join `registry`.
    pub fn new(
        mirror: Arc<Mirror>,
        sensors: Option<Sensors>,
        door: Arc<dyn Door>,
        registry: &CounterRegistry,
    ) -> Self {
        let counters = Arc::new(HttpCounters::default());
        registry.register(counters.clone());
        HttpCtx {
            mirror,
            sensors,
            door,
            registry: registry.clone(),
            counters,
        }
    }
}

/// Serves the HTTP port on `l` until the task is dropped.
pub async fn serve(l: TcpListener, ctx: Arc<HttpCtx>) {
    if let Ok(a) = l.local_addr() {
        info!(addr = %a, "http: viewer page /, /dashboard, /ws, /api/stats, /metrics");
    }
    let app = Router::new()
        .route("/", get(|| pages::page("viewer.html")))
        .route("/dashboard", get(|| pages::page("dashboard.html")))
        .route("/assets/{file}", get(pages::asset))
        .route("/ws", get(websocket::upgrade))
        .route("/api/stats", get(stats::stats))
        .route("/metrics", get(metrics::metrics))
        .with_state(ctx);
    let svc = app.into_make_service_with_connect_info::<SocketAddr>();
    if let Err(e) = axum::serve(l, svc).await {
        warn!(error = %e, "http server stopped");
    }
}
