//! The front door of framewire v1: every v1 connection, over TCP or a browser's WebSocket,
//! comes in here. It feeds the sans-IO `Handshake` until the Hello arrives (within 5 s), checks it (`framewire-session`'s rules:
//! version, role, token, stream) and hands the connection to the mirror (a viewer) or to the
//! sensor hub (a subscriber), or says Goodbye with the reason.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use framewire_mirror::Mirror;
use framewire_proto::v1::{goodbye, Packet, Role};
use framewire_sensors::Sensors;
use framewire_session::{check_hello, token_matches, Handshake, Hello, HelloRules, Refusal};
use framewire_telemetry::clock::now_us;
use framewire_telemetry::{counter_set, CounterRegistry, Family, SharedLogLimit};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::{debug, warn};

use crate::conn::Conn;

counter_set! {
    /// What the listeners and the front door count.
    pub struct DoorCounters {
        /// Connections by protocol (`framewire`, `daylight`).
        connections: Family,
        /// Hellos refused, by reason (`token`, `version`, `timeout`, …).
        handshake_rejected: Family,
    }
}

pub struct Door {
    pub mirror: Arc<Mirror>,
    pub sensors: Option<Sensors>,
    /// Required from viewers and subscribers when set.
    pub token: Option<String>,
    /// Lets a viewer send input (and view).
    pub control_token: Option<String>,
    pub counters: Arc<DoorCounters>,
    /// How long a connection may take to send its Hello.
    pub hello_timeout: Duration,
    /// Refusals are logged at most a line a second (the counters carry the volume).
    pub(crate) log: SharedLogLimit,
}

impl Door {
    pub fn new(
        mirror: Arc<Mirror>,
        sensors: Option<Sensors>,
        token: Option<String>,
        control_token: Option<String>,
        hello_timeout: Duration,
        registry: &CounterRegistry,
    ) -> Self {
        let counters = Arc::new(DoorCounters::default());
        registry.register(counters.clone());
        Door {
            mirror,
            sensors,
            token,
            control_token,
            counters,
            hello_timeout,
            log: SharedLogLimit::default(),
        }
    }

    /// One v1 connection, from its first byte to its end.
    pub async fn serve_v1<S: Conn>(&self, mut sock: S, peer: SocketAddr) -> anyhow::Result<()> {
        let mut hs = Handshake::new(now_us(), self.hello_timeout.as_micros() as u64);
        let hello = match read_hello(&mut sock, &mut hs).await {
            Ok(h) => h,
            Err(r) => {
                self.counters.handshake_rejected.inc(r.counter);
                if let Some(held) = self.log.allow() {
                    warn!(%peer, reason = %r.reason, held, "bad handshake");
                }
                return goodbye_and_close(&mut sock, r.code, r.reason).await;
            }
        };
        let dec = hs.into_decoder();
        // The control token lets a viewer send input, and view as well.
        let control = self
            .control_token
            .as_deref()
            .is_some_and(|c| token_matches(&hello.token, c));
        let rules = HelloRules {
            token: if control { None } else { self.token.as_deref() },
            has_streams: self.sensors.is_some(),
        };
        if let Err(r) = check_hello(
            hello.version,
            hello.role,
            &hello.token,
            &hello.stream,
            rules,
        ) {
            self.counters.handshake_rejected.inc(r.counter);
            if let Some(held) = self.log.allow() {
                warn!(%peer, reason = %r.reason, held, "viewer refused");
            }
            return goodbye_and_close(&mut sock, r.code, r.reason).await;
        }
        match (hello.role, &self.sensors) {
            (Role::Subscriber, Some(sensors)) => {
                let halves = sock.halves();
                sensors
                    .serve_subscriber(halves, dec, peer, &hello.stream)
                    .await
            }
            _ => Ok(self
                .mirror
                .serve_v1_viewer(
                    sock.into_transport(hello.caps),
                    dec,
                    peer,
                    hello.caps,
                    control,
                )
                .await?),
        }
    }
}

/// Feeds the handshake until it has the Hello or a refusal (its own deadline included).
async fn read_hello<S: Conn>(sock: &mut S, hs: &mut Handshake) -> Result<Hello, Refusal> {
    let mut buf = [0u8; 4096];
    loop {
        if let Some(r) = hs.poll(now_us()) {
            return r;
        }
        let wait = hs.poll_timeout().saturating_sub(now_us());
        tokio::select! {
            r = sock.read(&mut buf) => match r {
                Ok(0) => return Err(hs.closed()),
                Ok(n) => hs.handle_bytes(&buf[..n]),
                Err(e) => return Err(Refusal {
                    counter: "bad_packet",
                    code: goodbye::PROTOCOL_ERROR,
                    reason: format!("bad handshake: {e}"),
                }),
            },
            _ = tokio::time::sleep(Duration::from_micros(wait)) => {}
        }
    }
}

async fn goodbye_and_close<S: Conn>(sock: &mut S, code: u16, reason: String) -> anyhow::Result<()> {
    let bye = Packet::Goodbye {
        code,
        reason: reason.clone(),
    };
    let _ = sock.write_all(&bye.to_bytes()).await;
    let _ = sock.shutdown().await;
    bail!(reason)
}

/// The door the HTTP port's WebSockets go through.
impl framewire_http::Door for Door {
    fn serve(
        self: Arc<Self>,
        conn: tokio::io::DuplexStream,
        peer: SocketAddr,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(async move {
            if let Err(e) = self.serve_v1(conn, peer).await {
                debug!(%peer, error = %e, "websocket session ended with an error");
            }
        })
    }
}
