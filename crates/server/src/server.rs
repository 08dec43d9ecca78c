//! Listeners, handshake, bind safety and the server's lifetime.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context};
use framewire_proto::v1::{self, caps, goodbye, Packet, Role};
use framewire_telemetry::{LatencyReport, SampleWindow};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing::{debug, info, warn};

use crate::clock::now_us;
use crate::config::{Protocol, ServerConfig, SourceSpec};
use crate::conn::Conn;
use crate::report::build_report;
use crate::session::{drive, SessionCtx, Trace};
use crate::state::{lock, Settings, Shared, ViewerCommand, ViewerShared};
use crate::{control, status_file};
use framewire_proto::daylight::ViewerDecoder;
use framewire_session::{
    check_hello, codec_to_wire, negotiate, token_matches, DaylightWire, HelloRules, HostConfig,
    HostSession, V1Wire, ViewerReader, Wire,
};

pub struct Server;

/// A running server. Dropping it does not stop it; call [`ServerHandle::shutdown`].
pub struct ServerHandle {
    pub v1_addr: Option<SocketAddr>,
    pub daylight_addr: Option<SocketAddr>,
    pub sensor_addr: Option<SocketAddr>,
    pub http_addr: Option<SocketAddr>,
    pub touch_addr: Option<SocketAddr>,
    streams: Option<Arc<crate::streams::Streams>>,
    shared: Arc<Shared>,
    capture: Option<std::thread::JoinHandle<()>>,
    /// Other threads of the server (the shared-memory export).
    threads: Vec<std::thread::JoinHandle<()>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

pub(crate) struct Ctx {
    pub cfg: ServerConfig,
    pub shared: Arc<Shared>,
    trace: Trace,
    /// The stream hub, when the server has named streams (the sensor listener is on).
    pub streams: Option<Arc<crate::streams::Streams>>,
}

impl Server {
    /// Binds every configured listener, starts the capture loop and serves until shutdown.
    pub async fn start(cfg: ServerConfig) -> anyhow::Result<ServerHandle> {
        cfg.check_exposure().map_err(anyhow::Error::msg)?;
        if let SourceSpec::Shm(name) = &cfg.source {
            // Fail now, with the reason, rather than in the capture thread.
            framewire_capture::ShmSource::open(name).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        let settings = Settings {
            brightness: cfg.brightness,
            saved_brightness: cfg.brightness.max(1),
            tuning: cfg.tuning,
            ..Settings::default()
        };
        let size = (cfg.resolution.width, cfg.resolution.height);
        let shared = Shared::new(settings, size, now_us());
        let trace = match &cfg.trace_frames {
            Some(p) => Some(Arc::new(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .with_context(|| format!("opening trace file {}", p.display()))?,
            ))),
            None => None,
        };
        let mut tasks = Vec::new();
        let streams = cfg.sensor_addr.map(|_| {
            crate::streams::Streams::start(
                shared.counters.clone(),
                shared.stages.sensor_hub.clone(),
            )
        });
        let ctx = Arc::new(Ctx {
            cfg: cfg.clone(),
            shared: shared.clone(),
            trace,
            streams: streams.clone(),
        });
        let mut bound = [None, None];
        for (i, (addr, proto)) in [
            (cfg.v1_addr, Protocol::V1),
            (cfg.daylight_addr, Protocol::Daylight),
        ]
        .into_iter()
        .enumerate()
        {
            let Some(addr) = addr else { continue };
            let l = listen(addr).with_context(|| format!("binding the {} listener on {addr} (is another server running? pick another port)", proto.name()))?;
            let local = l.local_addr()?;
            info!(protocol = proto.name(), addr = %local, "listening");
            bound[i] = Some(local);
            tasks.push(tokio::spawn(accept_loop(l, proto, ctx.clone())));
        }
        if bound.iter().all(Option::is_none) && cfg.sensor_addr.is_none() && cfg.http_addr.is_none()
        {
            bail!("no listener configured: enable the framewire, Daylight or sensor port");
        }
        if let Some(path) = &cfg.control_socket {
            let l = control::bind(path)?;
            tasks.push(tokio::spawn(control::serve(
                l,
                shared.clone(),
                path.clone(),
            )));
        }
        if let Some(path) = &cfg.status_file {
            tasks.push(tokio::spawn(status_file::run(path.clone(), shared.clone())));
        }
        let mut sensor_addr = None;
        if let (Some(addr), Some(s)) = (cfg.sensor_addr, &streams) {
            let l = listen(addr).with_context(|| {
                format!("binding the sensor listener on {addr} (pick another with --sensor-port)")
            })?;
            sensor_addr = Some(l.local_addr()?);
            info!(addr = %l.local_addr()?, "sensor listener");
            tasks.push(tokio::spawn(crate::sensor::serve(
                l,
                s.clone(),
                Arc::new(crate::sensor::SensorStats::default()),
                shared.devices.clone(),
                cfg.sensor_start
                    .as_ref()
                    .map(|c| format!("{c}\n").into_bytes().into()),
            )));
        }
        let mut http_addr = None;
        if let Some(addr) = cfg.http_addr {
            let l = listen(addr).with_context(|| {
                format!("binding the HTTP port {addr} (pick another with --http-port)")
            })?;
            http_addr = Some(l.local_addr()?);
            tasks.push(tokio::spawn(crate::http::serve(l, ctx.clone())));
        }
        if let Some(ic) = &cfg.input {
            let sink = crate::input::start(ic, shared.counters.clone())?;
            let _ = shared.input.set(sink);
        }
        let mut touch_addr = None;
        if let Some(addr) = cfg.touch_addr {
            let l = listen(addr).with_context(|| {
                format!("binding the touch port {addr} (pick another with --touch-port)")
            })?;
            touch_addr = Some(l.local_addr()?);
            info!(addr = %l.local_addr()?, "touch port (Daylight app)");
            tasks.push(tokio::spawn(crate::input::serve_touch(
                l,
                shared.input.get().cloned(),
                shared.counters.clone(),
            )));
        }
        let mut threads = Vec::new();
        if let Some(name) = &cfg.shm_export {
            let ch = crate::shm_export::open(name)
                .with_context(|| format!("opening shared-memory route {name}"))?;
            threads.push(crate::shm_export::spawn(ch, shared.clone()));
        }
        let capture = Some(crate::pipeline::spawn(&cfg, shared.clone()));
        Ok(ServerHandle {
            v1_addr: bound[0],
            daylight_addr: bound[1],
            sensor_addr,
            http_addr,
            touch_addr,
            streams,
            shared,
            capture,
            threads,
            tasks,
        })
    }
}

impl ServerHandle {
    pub fn report(&self) -> LatencyReport {
        build_report(&self.shared)
    }

    /// The stream hub (when the sensor listener is on).
    pub fn streams(&self) -> Option<&Arc<crate::streams::Streams>> {
        self.streams.as_ref()
    }

    pub fn counter(&self, name: &str) -> u64 {
        self.shared.counters.value(name)
    }

    pub fn counters(&self) -> Vec<(String, u64)> {
        self.shared.counters.snapshot()
    }

    pub fn viewer_count(&self) -> usize {
        lock(&self.shared.viewers).len()
    }

    pub fn send_command(&self, c: ViewerCommand) {
        let _ = self.shared.commands.send(c);
    }

    /// Every display command sent to viewers from now on (brightness, warmth), for those that
    /// also reach the tablet another way (`--adb` writes warmth as a system setting).
    pub fn subscribe_commands(&self) -> tokio::sync::broadcast::Receiver<ViewerCommand> {
        self.shared.commands.subscribe()
    }

    /// The display settings, for a watcher of the tablet that outlives this borrow.
    pub fn display_handle(&self) -> crate::display::DisplayHandle {
        crate::display::DisplayHandle(self.shared.clone())
    }

    /// Resolves when `Ctrl-C`, SIGTERM or a shutdown request arrives.
    pub async fn wait_shutdown_signal(&self) {
        let mut rx = self.shared.shutdown.subscribe();
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term => {}
            _ = rx.wait_for(|v| *v) => {}
        }
    }

    pub async fn shutdown(mut self) {
        self.shared.shutdown.send_replace(true);
        if let Some(s) = &self.streams {
            s.stop();
        }
        for t in self.tasks.drain(..) {
            t.abort();
        }
        if let Some(c) = self.capture.take() {
            let _ = tokio::task::spawn_blocking(move || c.join()).await;
        }
        for t in self.threads.drain(..) {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
    }
}

async fn accept_loop(l: TcpListener, proto: Protocol, ctx: Arc<Ctx>) {
    loop {
        let (sock, peer) = match l.accept().await {
            Ok(x) => x,
            Err(e) => {
                // Out of descriptors and the like: back off instead of spinning.
                ctx.shared.counters.inc("accept_errors");
                warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let _ = sock.set_nodelay(true);
            ctx.shared
                .counters
                .inc(&format!("connections.{}", proto.name()));
            let r = match proto {
                Protocol::V1 => serve_v1(sock, peer, &ctx).await,
                Protocol::Daylight => serve_daylight(sock, peer, &ctx).await,
            };
            if let Err(e) = r {
                debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
}

fn register(ctx: &Ctx, proto: Protocol, peer: SocketAddr) -> Arc<ViewerShared> {
    let v = Arc::new(ViewerShared {
        id: ctx.shared.new_viewer_id(),
        protocol: proto,
        peer,
        flow: Default::default(),
        e2e_us: Mutex::new(SampleWindow::new(600)),
        bytes_sent: Default::default(),
    });
    lock(&ctx.shared.viewers).insert(v.id, v.clone());
    info!(viewer = v.id, protocol = proto.name(), %peer, "viewer connected");
    v
}

/// How the host treats a viewer of `proto`.
fn host_config(ctx: &Ctx, proto: Protocol, control: bool) -> HostConfig {
    let brightness = lock(&ctx.shared.settings).brightness;
    HostConfig {
        limit: ctx.cfg.limit,
        ack_timeout_us: ctx.cfg.ack_timeout_us,
        refresh_every: match proto {
            // Daylight viewers cannot tell a wrong picture: refresh it now and then.
            Protocol::Daylight => ctx.cfg.keyframe_interval,
            // v1 viewers verify every frame's checksum and ask for a keyframe when needed.
            Protocol::V1 => 0,
        },
        control,
        initial: vec![ViewerCommand::Brightness(brightness)],
    }
}

/// Drives a viewer's session on `sock` until it ends, then unregisters the viewer.
async fn run_session<W: Wire, S: AsyncRead + AsyncWrite + Unpin>(
    ctx: &Ctx,
    viewer: Arc<ViewerShared>,
    session: HostSession<W>,
    sock: S,
) -> anyhow::Result<()> {
    let cx = SessionCtx {
        shared: ctx.shared.clone(),
        viewer: viewer.clone(),
        trace: ctx.trace.clone(),
    };
    let r = drive(session, cx, sock).await;
    unregister(ctx, &viewer);
    r.map_err(Into::into)
}

fn unregister(ctx: &Ctx, v: &ViewerShared) {
    lock(&ctx.shared.viewers).remove(&v.id);
    let e2e = lock(&v.e2e_us).clone();
    let mut d = lock(&ctx.shared.departed_e2e_us);
    for &x in e2e.values() {
        d.push(x);
    }
    let s = lock(&v.flow).stats;
    ctx.shared
        .counters
        .get("frames_skipped_departed")
        .add(s.skipped);
    info!(
        viewer = v.id,
        protocol = v.protocol.name(),
        frames = s.frames_planned,
        bytes = v.bytes_sent.load(Ordering::Relaxed),
        "viewer left"
    );
}

async fn goodbye_and_close<S: Conn>(sock: &mut S, code: u16, reason: String) -> anyhow::Result<()> {
    let _ = sock
        .write_all(
            &Packet::Goodbye {
                code,
                reason: reason.clone(),
            }
            .to_bytes(),
        )
        .await;
    let _ = sock.shutdown().await;
    bail!(reason)
}

/// A framewire v1 connection, from its Hello: over TCP, or a browser's WebSocket.
pub(crate) async fn serve_v1<S: Conn>(
    mut sock: S,
    peer: SocketAddr,
    ctx: &Ctx,
) -> anyhow::Result<()> {
    let shared = &ctx.shared;
    let mut dec = v1::Decoder::new(v1::MAX_CONTROL_BODY);
    let hello = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match dec.next_packet() {
                Ok(Some(p)) => return Ok(p),
                Ok(None) => {}
                Err(e) => return Err(e.to_string()),
            }
            match sock.read_buf(dec.buffer_mut()).await {
                Ok(0) => return Err("closed before hello".to_string()),
                Ok(_) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    })
    .await;
    let (version, role, token, stream, viewer_caps) = match hello {
        Ok(Ok(Packet::Hello {
            version,
            role,
            token,
            stream,
            caps,
        })) => (version, role, token, stream, caps),
        Ok(Ok(other)) => {
            shared.counters.inc("handshake_rejected.not_hello");
            let r = format!("expected hello, got {}", v1::kind_name(other.type_byte()));
            return goodbye_and_close(&mut sock, goodbye::PROTOCOL_ERROR, r).await;
        }
        Ok(Err(e)) => {
            shared.counters.inc("handshake_rejected.bad_packet");
            warn!(%peer, error = %e, "bad handshake");
            return goodbye_and_close(
                &mut sock,
                goodbye::PROTOCOL_ERROR,
                format!("bad handshake: {e}"),
            )
            .await;
        }
        Err(_) => {
            shared.counters.inc("handshake_rejected.timeout");
            return goodbye_and_close(
                &mut sock,
                goodbye::PROTOCOL_ERROR,
                "no hello within 5 s".into(),
            )
            .await;
        }
    };
    let has_streams = ctx.streams.is_some();
    // The control token lets a viewer send input, and view as well.
    let control = ctx
        .cfg
        .control_token
        .as_deref()
        .is_some_and(|c| token_matches(&token, c));
    let required = if control {
        None
    } else {
        ctx.cfg.token.as_deref()
    };
    let rules = HelloRules {
        token: required,
        has_streams,
    };
    if let Err(r) = check_hello(version, role, &token, &stream, rules) {
        shared
            .counters
            .inc(&format!("handshake_rejected.{}", r.counter));
        warn!(%peer, reason = %r.reason, "viewer refused");
        return goodbye_and_close(&mut sock, r.code, r.reason).await;
    }
    if let (Role::Subscriber, Some(streams)) = (role, &ctx.streams) {
        return crate::subscriber::serve(
            sock,
            dec,
            peer,
            streams,
            &stream,
            &shared.stages.sensor_delivery,
        )
        .await;
    }
    let viewer = register(ctx, Protocol::V1, peer);
    // The viewer gets only what it declared: the configured codec, else LZ4, else raw.
    let n = negotiate(codec_to_wire(ctx.cfg.codec), caps::ALL, viewer_caps);
    if codec_to_wire(ctx.cfg.codec) != n.codec {
        shared.counters.inc("codec_fallbacks");
        info!(viewer = viewer.id, codec = ?n.codec, "viewer does not take the configured codec; it gets another");
    }
    sock.write_all(
        &Packet::Welcome {
            version: v1::VERSION,
            caps: n.caps,
            session: viewer.id,
        }
        .to_bytes(),
    )
    .await?;
    let cfg = host_config(ctx, Protocol::V1, control);
    let session = HostSession::new(V1Wire::new(n), ViewerReader::V1(dec), cfg);
    run_session(ctx, viewer, session, sock).await
}

async fn serve_daylight(sock: TcpStream, peer: SocketAddr, ctx: &Ctx) -> anyhow::Result<()> {
    let viewer = register(ctx, Protocol::Daylight, peer);
    let reader = ViewerReader::Daylight(ViewerDecoder::new());
    let cfg = host_config(ctx, Protocol::Daylight, false);
    let session = HostSession::new(DaylightWire::default(), reader, cfg);
    run_session(ctx, viewer, session, sock).await
}

/// Pending connections a listener holds before the kernel drops them. Tokio's default is 1024;
/// 1000 sensors reconnecting together (after a power cut, or a load test) overflowed it, and
/// the connections completed by SYN cookies were then reset.
const LISTEN_BACKLOG: u32 = 4096;

/// Binds a TCP listener with [`LISTEN_BACKLOG`] (the kernel caps it at `net.core.somaxconn`).
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let sock = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    sock.set_reuseaddr(true)?;
    sock.bind(addr)?;
    sock.listen(LISTEN_BACKLOG)
}
