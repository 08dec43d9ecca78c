//! Starting and stopping a server: each configured subsystem is started with its own state
//! and joined to the others through small handles; nothing else happens here.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{bail, Context};
use framewire_control::Target;
use framewire_mirror::{DisplayHandle, Mirror, Protocol, SourceSpec, ViewerCommand};
use framewire_sensors::{Sensors, Streams};
use framewire_telemetry::{CounterRegistry, LatencyReport, StageHistograms};
use tokio::net::TcpListener;
use tracing::{debug, info, warn};

use crate::cert::HostCertificate;
use crate::config::{ConnLimits, ServerConfig};
use crate::door::Door;
use framewire_net::{listen, Gate, NetCounters};

pub struct Server;

/// A running server. Dropping it does not stop it; call [`ServerHandle::shutdown`].
pub struct ServerHandle {
    pub v1_addr: Option<SocketAddr>,
    /// framewire v1 over QUIC, and the SHA-256 fingerprint of its certificate (viewers pin it).
    pub quic_addr: Option<SocketAddr>,
    pub quic_fingerprint: Option<framewire_quic::Fingerprint>,
    pub daylight_addr: Option<SocketAddr>,
    pub sensor_addr: Option<SocketAddr>,
    pub http_addr: Option<SocketAddr>,
    /// The HTTP port speaks HTTPS (with the certificate whose fingerprint is `quic_fingerprint`).
    pub https: bool,
    /// The host's certificate (QUIC, WebTransport, HTTPS), renewed while the server runs.
    cert: Option<Arc<HostCertificate>>,
    pub touch_addr: Option<SocketAddr>,
    mirror: Arc<Mirror>,
    sensors: Option<Sensors>,
    registry: CounterRegistry,
    shutdown: tokio::sync::watch::Sender<bool>,
    /// Each listener's connection limit, in `ConnLimits::NAMES` order.
    gates: Vec<Arc<Gate>>,
    /// The capture loop and the shared-memory export.
    threads: Vec<std::thread::JoinHandle<()>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The status file's writer: it writes `stopped` once more at shutdown, and is awaited.
    status_task: Option<tokio::task::JoinHandle<()>>,
    /// The control socket's file, removed at shutdown if it is still ours.
    control_socket: Option<framewire_control::SocketFile>,
}

/// Where the host's certificate is kept.
fn cert_dir(cfg: &ServerConfig) -> anyhow::Result<std::path::PathBuf> {
    match &cfg.quic_dir {
        Some(d) => Ok(d.clone()),
        None => framewire_quic::config_dir(),
    }
}

/// Binds `addr`, saying which listener failed and what to do about it.
fn bind(addr: SocketAddr, what: &str, hint: &str) -> anyhow::Result<TcpListener> {
    let l = listen(addr).with_context(|| format!("binding the {what} on {addr} ({hint})"))?;
    info!(addr = %l.local_addr()?, "{what}");
    Ok(l)
}

impl Server {
    /// Binds every configured listener, starts the capture loop and serves until shutdown.
    pub async fn start(cfg: ServerConfig) -> anyhow::Result<ServerHandle> {
        cfg.check_exposure().map_err(anyhow::Error::msg)?;
        if let SourceSpec::Shm(name) = &cfg.source {
            // Fail now, with the reason, rather than in the capture thread.
            framewire_capture::ShmSource::open(name).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        let any_screen =
            cfg.v1_addr.is_some() || cfg.daylight_addr.is_some() || cfg.quic_addr.is_some();
        if !any_screen && cfg.sensor_addr.is_none() && cfg.http_addr.is_none() {
            bail!("no listener configured: enable the framewire (TCP or QUIC), Daylight or sensor port");
        }
        let registry = CounterRegistry::new();
        let stages = Arc::new(StageHistograms::default());
        let mirror = Mirror::new(cfg.mirror(), registry.clone(), stages.clone())?;
        let sensors = cfg
            .sensor_addr
            .map(|_| Sensors::start(&registry, stages.clone(), cfg.hub));
        let gates = gates(&cfg, &registry);
        let door = Arc::new(Door::new(
            mirror.clone(),
            sensors.clone(),
            cfg.token.clone(),
            cfg.control_token.clone(),
            cfg.handshake_timeout,
            &registry,
        ));
        let mut h = ServerHandle {
            v1_addr: None,
            quic_addr: None,
            quic_fingerprint: None,
            daylight_addr: None,
            sensor_addr: None,
            http_addr: None,
            https: false,
            cert: None,
            touch_addr: None,
            mirror: mirror.clone(),
            sensors: sensors.clone(),
            registry: registry.clone(),
            shutdown: tokio::sync::watch::channel(false).0,
            gates,
            threads: Vec::new(),
            tasks: Vec::new(),
            status_task: None,
            control_socket: None,
        };
        h.start_screen_listeners(&cfg, &door)?;
        // The HTTP port is bound before QUIC: browsers' WebTransport sessions must come from
        // the page it serves.
        let http = match cfg.http_addr {
            Some(addr) => Some(bind(addr, "HTTP port", "pick another with --http-port")?),
            None => None,
        };
        h.http_addr = http.as_ref().map(|l| l.local_addr()).transpose()?;
        let https = h.http_addr.is_some_and(|a| cfg.https(a));
        // QUIC and HTTPS show the same certificate, so the page's hash pins both.
        let identity = match cfg.quic_addr.is_some() || https {
            true => {
                let (c, id) = HostCertificate::load(cert_dir(&cfg)?, https)?;
                h.cert = Some(Arc::new(c));
                Some(id)
            }
            false => None,
        };
        h.https = https;
        h.quic_fingerprint = identity.as_ref().map(|i| i.fingerprint);
        h.start_quic(&cfg, &door, identity.as_ref())?;
        h.start_control(&cfg)?;
        h.start_sensors(&cfg)?;
        if let Some(l) = http {
            h.start_http(l, &cfg, sensors, door, identity.as_ref())?;
        }
        if let Some(c) = &h.cert {
            h.tasks
                .push(tokio::spawn(crate::cert::renew_loop(c.clone())));
        }
        h.start_input(&cfg)?;
        if let Some(name) = &cfg.shm_export {
            let t = mirror
                .spawn_shm_export(name, cfg.shm_colour)
                .with_context(|| format!("opening shared-memory route {name}"))?;
            h.threads.push(t);
        }
        h.threads.push(mirror.spawn_capture());
        Ok(h)
    }
}

/// Each listener's connection limit: as configured when the descriptor budget has room for
/// them all, else each scaled down to its share.
fn gates(cfg: &ServerConfig, registry: &CounterRegistry) -> Vec<Arc<Gate>> {
    let counters = Arc::new(NetCounters::default());
    registry.register(counters.clone());
    let nofile = framewire_net::raise_nofile_limit().unwrap_or(1024);
    let (limits, budget) =
        framewire_net::share_descriptors(&cfg.max_connections.as_array(), nofile);
    let limits = ConnLimits::from_array(limits.try_into().expect("one per listener"));
    if budget.scaled {
        warn!(
            nofile,
            wanted = %cfg.max_connections,
            got = %limits,
            "the open-file limit cannot hold every listener's connections: limits scaled down (raise `ulimit -n`)"
        );
    }
    ConnLimits::NAMES
        .iter()
        .zip(limits.as_array())
        .map(|(&name, max)| {
            let allow = (name == "sensor")
                .then(|| cfg.sensor_allow.clone().map(|a| a.with_loopback()))
                .flatten();
            Gate::new(name, max, allow, counters.clone())
        })
        .collect()
}

impl ServerHandle {
    fn gate(&self, name: &str) -> Arc<Gate> {
        self.gates
            .iter()
            .find(|g| g.name == name)
            .expect("a gate per listener")
            .clone()
    }

    /// Each listener's name, connection limit and open connections.
    pub fn connection_limits(&self) -> Vec<(&'static str, usize, usize)> {
        self.gates
            .iter()
            .map(|g| (g.name, g.max(), g.open()))
            .collect()
    }

    /// The framewire v1 and Daylight listeners.
    fn start_screen_listeners(
        &mut self,
        cfg: &ServerConfig,
        door: &Arc<Door>,
    ) -> anyhow::Result<()> {
        for (addr, proto) in [
            (cfg.v1_addr, Protocol::V1),
            (cfg.daylight_addr, Protocol::Daylight),
        ] {
            let Some(addr) = addr else { continue };
            let what = format!("{} listener", proto.name());
            let l = bind(addr, &what, "is another server running? pick another port")?;
            let local = Some(l.local_addr()?);
            match proto {
                Protocol::V1 => self.v1_addr = local,
                Protocol::Daylight => self.daylight_addr = local,
            }
            let gate = self.gate(match proto {
                Protocol::V1 => "v1",
                Protocol::Daylight => "daylight",
            });
            self.tasks
                .push(tokio::spawn(accept_loop(l, gate, proto, door.clone())));
        }
        Ok(())
    }

    /// The HTTP port: the pages, the WebSocket, `/api/webtransport`, stats and metrics.
    fn start_http(
        &mut self,
        l: TcpListener,
        cfg: &ServerConfig,
        sensors: Option<Sensors>,
        door: Arc<Door>,
        id: Option<&framewire_quic::Identity>,
    ) -> anyhow::Result<()> {
        let access = framewire_http::Access {
            viewer_token: cfg.token.clone(),
            metrics_token: cfg.metrics_token.clone().or_else(|| cfg.token.clone()),
        };
        let ctx = Arc::new(framewire_http::HttpCtx::new(
            self.mirror.clone(),
            sensors,
            door,
            &self.registry,
            access,
        ));
        if let (Some(c), Some(id)) = (&self.cert, id) {
            c.attach_http(ctx.clone(), id)?;
        }
        let gate = self.gate("http");
        self.tasks.push(tokio::spawn(framewire_http::serve(
            l,
            gate,
            cfg.header_timeout,
            ctx,
        )));
        Ok(())
    }

    /// framewire v1 over QUIC, and browsers' WebTransport on the same port, with the
    /// certificate kept in the config directory.
    fn start_quic(
        &mut self,
        cfg: &ServerConfig,
        door: &Arc<Door>,
        id: Option<&framewire_quic::Identity>,
    ) -> anyhow::Result<()> {
        let (Some(addr), Some(id)) = (cfg.quic_addr, id) else {
            return Ok(());
        };
        let endpoint = framewire_quic::server_endpoint(id, addr)
            .context("starting the QUIC listener (pick another port with --quic-port)")?;
        let local = endpoint.local_addr()?;
        info!(addr = %local, fingerprint = %id.fingerprint, "framewire QUIC listener");
        if let Some(c) = &self.cert {
            c.attach_quic(endpoint.clone());
        }
        self.quic_addr = Some(local);
        let gate = self.gate("v1");
        let web = crate::webtransport::WebRules {
            http_port: self.http_addr.map(|a| a.port()),
        };
        let carriage = match cfg.quic_datagrams {
            true => crate::quic::Carriage::Datagrams,
            false => crate::quic::Carriage::Streams,
        };
        self.tasks.push(tokio::spawn(crate::quic::accept_loop(
            endpoint,
            gate,
            door.clone(),
            Arc::new(web),
            carriage,
        )));
        Ok(())
    }

    /// The control socket and the status file.
    fn start_control(&mut self, cfg: &ServerConfig) -> anyhow::Result<()> {
        if cfg.control_socket.is_none() && cfg.status_file.is_none() {
            return Ok(());
        }
        let target = Arc::new(Target::new(
            self.mirror.clone(),
            self.sensors.clone(),
            &self.registry,
        ));
        if let Some(path) = &cfg.control_socket {
            let (l, file) = framewire_control::bind(path)?;
            self.control_socket = Some(file);
            let serve = framewire_control::serve(l, target.clone(), path.clone());
            self.tasks.push(tokio::spawn(serve));
        }
        if let Some(path) = &cfg.status_file {
            let stop = self.shutdown.subscribe();
            let run = framewire_control::run_status_file(path.clone(), target, stop);
            self.status_task = Some(tokio::spawn(run));
        }
        Ok(())
    }

    /// The sensor line listener.
    fn start_sensors(&mut self, cfg: &ServerConfig) -> anyhow::Result<()> {
        let (Some(addr), Some(s)) = (cfg.sensor_addr, &self.sensors) else {
            return Ok(());
        };
        let l = bind(addr, "sensor listener", "pick another with --sensor-port")?;
        self.sensor_addr = Some(l.local_addr()?);
        let start = cfg
            .sensor_start
            .as_ref()
            .map(|c| format!("{c}\n").into_bytes().into());
        let gate = self.gate("sensor");
        self.tasks
            .push(tokio::spawn(s.clone().serve_devices(l, gate, start)));
        Ok(())
    }

    /// Input injection and the Daylight touch port.
    fn start_input(&mut self, cfg: &ServerConfig) -> anyhow::Result<()> {
        if let Some(ic) = &cfg.input {
            self.mirror.start_input(ic)?;
        }
        if let Some(addr) = cfg.touch_addr {
            let l = bind(
                addr,
                "touch port (Daylight app)",
                "pick another with --touch-port",
            )?;
            self.touch_addr = Some(l.local_addr()?);
            let gate = self.gate("touch");
            self.tasks
                .push(tokio::spawn(self.mirror.clone().serve_touch(l, gate)));
        }
        Ok(())
    }

    pub fn report(&self) -> LatencyReport {
        self.mirror.report()
    }

    /// The stream hub (when the sensor listener is on).
    pub fn streams(&self) -> Option<&Arc<Streams>> {
        self.sensors.as_ref().map(|s| &s.streams)
    }

    /// Renews the host's certificate now if it runs out within a day (the server also checks
    /// every hour); the new fingerprint when it was renewed.
    pub fn renew_certificate(&self) -> anyhow::Result<Option<framewire_quic::Fingerprint>> {
        match &self.cert {
            Some(c) => c.renew(),
            None => Ok(None),
        }
    }

    /// The fingerprint of the certificate shown now (`quic_fingerprint` is the one at start).
    pub fn current_fingerprint(&self) -> Option<framewire_quic::Fingerprint> {
        self.cert.as_ref().and_then(|c| c.fingerprint())
    }

    /// One counter's value, by the name `/metrics` and the reports use.
    pub fn counter(&self, name: &str) -> u64 {
        self.registry.value(name)
    }

    pub fn counters(&self) -> Vec<(String, u64)> {
        self.registry.snapshot()
    }

    /// Every subsystem's counters.
    pub fn registry(&self) -> &CounterRegistry {
        &self.registry
    }

    /// The screen mirror (its report, settings and viewers).
    pub fn mirror(&self) -> &Arc<Mirror> {
        &self.mirror
    }

    pub fn viewer_count(&self) -> usize {
        self.mirror.viewer_count()
    }

    pub fn send_command(&self, c: ViewerCommand) {
        self.mirror.send_command(c);
    }

    /// Every display command sent to viewers from now on (brightness, warmth), for those that
    /// also reach the tablet another way (`--adb` writes warmth as a system setting).
    pub fn subscribe_commands(&self) -> tokio::sync::broadcast::Receiver<ViewerCommand> {
        self.mirror.subscribe_commands()
    }

    /// The display settings, for a watcher of the tablet that outlives this borrow.
    pub fn display_handle(&self) -> DisplayHandle {
        DisplayHandle(self.mirror.clone())
    }

    /// Resolves when `Ctrl-C`, SIGTERM or a shutdown request arrives.
    pub async fn wait_shutdown_signal(&self) {
        let mut rx = self.shutdown.subscribe();
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
        self.shutdown.send_replace(true);
        self.mirror.stop();
        if let Some(s) = &self.sensors {
            s.stop();
        }
        for t in self.tasks.drain(..) {
            t.abort();
        }
        if let Some(f) = self.control_socket.take() {
            f.remove();
        }
        if let Some(t) = self.status_task.take() {
            // It writes `status=stopped` and returns; a stuck disk does not hold up the stop.
            if tokio::time::timeout(std::time::Duration::from_secs(5), t)
                .await
                .is_err()
            {
                debug!("the status file's last write did not finish in 5 s");
            }
        }
        for t in self.threads.drain(..) {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
    }
}

async fn accept_loop(l: TcpListener, gate: Arc<Gate>, proto: Protocol, door: Arc<Door>) {
    loop {
        let framewire_net::Admitted { sock, peer, permit } = gate.accept(&l).await;
        let door = door.clone();
        tokio::spawn(async move {
            let _permit = permit;
            door.counters.connections.inc(proto.name());
            let r = match proto {
                Protocol::V1 => door.serve_v1(sock, peer).await,
                Protocol::Daylight => door
                    .mirror
                    .serve_daylight_viewer(sock, peer)
                    .await
                    .map_err(Into::into),
            };
            if let Err(e) = r {
                debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
}
