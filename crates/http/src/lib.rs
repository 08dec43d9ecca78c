//! The HTTP port (default 8890, not Prometheus' own 9090), one axum server for:
//! - `/` — the browser viewer page, `/dashboard` — the live dashboard, `/assets/…` — their
//!   scripts (built from `web/` and embedded in the binary);
//! - `/ws` — framewire v1 inside WebSocket binary messages (viewers and subscribers);
//! - `/api/webtransport` — where the host's WebTransport is, and its certificate's hash;
//! - `/api/stats` — the dashboard's JSON snapshot;
//! - `/metrics` — the Prometheus text format, written with the `prometheus` crate's encoder
//!   from the server's own registries. Names and units are listed in `spec/PROTOCOL.md`
//!   ("Metrics").
//!
//! Off loopback the port speaks HTTPS (the host's certificate, see `framewire-quic`): the page
//! then has the secure context WebTransport needs, and its WebSocket (`wss:`) carries the
//! token encrypted.
//!
//! Bounds: at most the listener's connections (`framewire-net`'s gate), a request head in
//! 10 s and 16 KiB, WebSocket messages of 64 KiB, and a scrape flood costs one render a
//! quarter second, shared. With a token, `/metrics`, `/api/stats` and `/dashboard` need it.

//!
//! | file | what |
//! |---|---|
//! | `pages.rs` | the pages and their assets, built from `web/` and embedded (`web_assets.rs`) |
//! | `websocket.rs` | `/ws`: same-site check, then the v1 byte stream through the front door |
//! | `webtransport.rs` | `/api/webtransport`: the QUIC port and certificate hash the page pins |
//! | `stats.rs` | `/api/stats`: the dashboard's JSON snapshot |
//! | `metrics.rs` | `/metrics`: the Prometheus exposition, from every subsystem's counters |
//! | `access.rs` | who may read `/metrics`, `/api/stats` and the dashboard (the token) |
//! | `cache.rs` | one render shared by the scrapes that arrive while it is made |

mod access;
mod cache;
mod metrics;
mod pages;
mod stats;
mod web_assets;
mod websocket;
mod webtransport;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::routing::get;
use axum::Router;
use framewire_mirror::Mirror;
use framewire_net::{Admitted, Gate};
use framewire_sensors::Sensors;
use framewire_telemetry::{counter_set, CounterRegistry, Family};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tower::ServiceExt;
use tracing::{debug, info, warn};

pub use access::Access;
pub use metrics::render;
pub use webtransport::WebTransportInfo;

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
        /// WebSockets refused, by reason (`origin`, `text_message`, `too_large`).
        websocket_rejected: Family,
        /// Requests for `/metrics`, `/api/stats` or `/dashboard` without the token.
        http_unauthorized: Family,
        /// Scrapes answered from a render another scrape had just made (`metrics`, `stats`).
        http_renders_shared: Family,
        /// HTTPS connections that never completed their TLS handshake (`handshake`, `timeout`).
        http_tls_failed: Family,
    }
}

/// What the HTTP port serves from.
pub struct HttpCtx {
    pub mirror: Arc<Mirror>,
    pub sensors: Option<Sensors>,
    pub door: Arc<dyn Door>,
    pub registry: CounterRegistry,
    pub counters: Arc<HttpCounters>,
    pub access: Access,
    /// The host's certificate as this port uses it (HTTPS, and the hash the page pins for
    /// WebTransport): swapped when the certificate is renewed.
    pub cert: std::sync::RwLock<HostCert>,
    /// `/metrics` and `/api/stats`, rendered once for every scrape that arrives meanwhile.
    metrics_cache: cache::Shared,
    stats_cache: cache::Shared,
    /// Refusals are logged at most a line a second (the counters carry the volume).
    pub(crate) log: framewire_telemetry::SharedLogLimit,
}

impl HttpCtx {
    /// The HTTP port's context; its counters join `registry`.
    pub fn new(
        mirror: Arc<Mirror>,
        sensors: Option<Sensors>,
        door: Arc<dyn Door>,
        registry: &CounterRegistry,
        access: Access,
    ) -> Self {
        let counters = Arc::new(HttpCounters::default());
        registry.register(counters.clone());
        HttpCtx {
            mirror,
            sensors,
            door,
            registry: registry.clone(),
            counters,
            access,
            cert: Default::default(),
            metrics_cache: cache::Shared::default(),
            stats_cache: cache::Shared::default(),
            log: Default::default(),
        }
    }
}

/// How long a client may take to send a request's head, by default. A half-sent request would
/// otherwise hold its connection (and a descriptor) for ever.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a request's head may hold (hyper's buffer; its floor is 8 KiB).
const MAX_HEAD: usize = 16 * 1024;
/// A write (a response, a WebSocket message) that makes no progress for this long ends its
/// connection: a client that asks and never reads would otherwise hold its place for ever.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// The connection's place under the HTTP listener's limit, shared by its requests: a
/// WebSocket keeps it after the upgrade, for as long as the socket lives.
#[derive(Clone)]
pub(crate) struct HttpPermit(#[allow(dead_code)] pub(crate) Arc<framewire_net::Permit>);

/// What the HTTP port takes from the host's certificate.
#[derive(Default, Clone)]
pub struct HostCert {
    /// HTTPS with it (`None`: plain HTTP).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The host's WebTransport, when it serves QUIC.
    pub webtransport: Option<WebTransportInfo>,
}

impl HttpCtx {
    /// The certificate as it is now (it may be renewed while the server runs).
    pub fn host_cert(&self) -> HostCert {
        self.cert.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A connection's bytes: TCP, or TLS over it.
trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// Serves the HTTP port on `l` until the task is dropped, at most `gate`'s connections at once;
/// over TLS when the context's certificate has it (HTTPS), each connection with the
/// certificate of the moment.
///
/// Connections are served by hyper directly rather than `axum::serve`, because that gives no
/// way to time out a request's head.
pub async fn serve(l: TcpListener, gate: Arc<Gate>, header_timeout: Duration, ctx: Arc<HttpCtx>) {
    if let Ok(a) = l.local_addr() {
        let scheme = if ctx.host_cert().tls.is_some() {
            "https"
        } else {
            "http"
        };
        info!(addr = %a, scheme, "http: viewer page /, /dashboard, /ws, /api/stats, /metrics");
    }
    let app = router(ctx.clone());
    loop {
        let Admitted { sock, peer, permit } = gate.accept(&l).await;
        let app = app.clone();
        let ctx = ctx.clone();
        let tls = ctx.host_cert().tls.map(tokio_rustls::TlsAcceptor::from);
        tokio::spawn(async move {
            let sock: Box<dyn Io> = match tls {
                None => Box::new(sock),
                // The handshake has the time a request's head has.
                Some(acc) => match tokio::time::timeout(header_timeout, acc.accept(sock)).await {
                    Ok(Ok(s)) => Box::new(s),
                    Ok(Err(e)) => {
                        ctx.counters.http_tls_failed.inc("handshake");
                        if let Some(held) = ctx.log.allow() {
                            warn!(%peer, error = %e, held, "TLS handshake failed (plain HTTP to the HTTPS port?)");
                        }
                        return;
                    }
                    Err(_) => {
                        ctx.counters.http_tls_failed.inc("timeout");
                        return;
                    }
                },
            };
            let permit = HttpPermit(Arc::new(permit));
            let svc = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                req.extensions_mut().insert(permit.clone());
                app.clone().oneshot(req.map(axum::body::Body::new))
            });
            let mut io = tokio_io_timeout::TimeoutStream::new(sock);
            io.set_write_timeout(Some(WRITE_TIMEOUT));
            let mut b = hyper::server::conn::http1::Builder::new();
            b.timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_buf_size(MAX_HEAD);
            let conn = b
                .serve_connection(TokioIo::new(Box::pin(io)), svc)
                .with_upgrades();
            if let Err(e) = conn.await {
                debug!(%peer, error = %e, "http connection ended");
            }
        });
    }
}

fn router(ctx: Arc<HttpCtx>) -> Router {
    Router::new()
        .route("/", get(|| pages::page("viewer.html")))
        .route("/dashboard", get(access::guard_page))
        .route("/assets/{file}", get(pages::asset))
        .route("/ws", get(websocket::upgrade))
        .route("/api/webtransport", get(webtransport::info))
        .route("/api/stats", get(stats::stats))
        .route("/metrics", get(metrics::metrics))
        .with_state(ctx)
}
