//! The sensor line listener (default port 9001), compatible with EmberEye devices and their
//! load-test tool: starts each device with `PERIOD_ON\n` (configurable), reads lines (`framewire_proto::sensor_line`), and
//! publishes readings as `sensor/<location>` samples and thermal frames as
//! `thermal/<location>` grids. The location is the packet's own, else the connection's
//! `#locid`, else the peer's IP.
//!
//! A bad line is counted by reason and logged with the device; the connection stays open.
//! Reads are bounded (one 16 KB read buffer and at most one partial line per connection) and
//! pause while the hub is behind. Bytes are counted when they come off the socket, before any
//! processing, so receive rates are rates at the wire.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use framewire_hub::{Item, Sample, Thermal};
use framewire_proto::sensor_line::{self, LineError, LineSplitter, Packet};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use framewire_net::{Admitted, Gate};
use framewire_telemetry::Counter;

use framewire_telemetry::clock::now_us;
use framewire_telemetry::LogLimit;

use crate::devices::Devices;
use crate::streams::Streams;

/// Accepts devices on `l` until the task is dropped; each is sent `start` first, if given.
pub async fn serve(
    l: TcpListener,
    gate: Arc<Gate>,
    streams: Arc<Streams>,
    devices: Arc<Devices>,
    start: Option<Arc<[u8]>>,
) {
    loop {
        // At most `gate`'s devices at once, from its allowlist when it has one.
        let Admitted { sock, peer, permit } = gate.accept(&l).await;
        let (streams, devices) = (streams.clone(), devices.clone());
        let start = start.clone();
        tokio::spawn(async move {
            let _permit = permit;
            streams.counters.connections.inc("sensor");
            let (id, commands) = devices.register(peer);
            let reg = (id, &*devices, commands);
            if let Err(e) = device(sock, peer, start.as_deref(), &streams, reg).await {
                debug!(%peer, error = %e, "sensor connection ended");
            }
            devices.unregister(id);
        });
    }
}

/// One device connection's state.
struct Device {
    peer: SocketAddr,
    /// Counter handles, looked up once per connection rather than once per line.
    samples_accepted: Counter,
    thermal_accepted: Counter,
    location: Option<String>,
    serial: Option<String>,
    seq: u64,
    name: Arc<str>,
    /// Stream names for lines without a location of their own: sensor, thermal.
    streams: [Option<Arc<str>>; 2],
}

impl Device {
    fn label(&self) -> String {
        match (&self.serial, &self.location) {
            (Some(s), _) => s.clone(),
            (None, Some(l)) => l.clone(),
            (None, None) => self.peer.to_string(),
        }
    }

    /// The stream an item goes to. Lines without a location of their own (nearly all) reuse
    /// the connection's names, made once per `#locid` rather than once per line.
    fn stream(&mut self, kind: Kind, packet_location: Option<String>) -> Arc<str> {
        let name = |loc: &str| -> Arc<str> { format!("{}/{loc}", kind.prefix()).into() };
        if let Some(l) = packet_location {
            return name(&l);
        }
        let slot = &mut self.streams[kind as usize];
        if slot.is_none() {
            let loc = self
                .location
                .clone()
                .unwrap_or_else(|| self.peer.ip().to_string());
            *slot = Some(name(&loc));
        }
        slot.clone().expect("just set")
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Sensor = 0,
    Thermal = 1,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::Sensor => "sensor",
            Kind::Thermal => "thermal",
        }
    }
}

/// This connection's place in the device registry and its command queue.
type Registration<'a> = (u64, &'a Devices, mpsc::Receiver<String>);

async fn device(
    mut sock: TcpStream,
    peer: SocketAddr,
    start: Option<&[u8]>,
    streams: &Streams,
    (id, devices, mut commands): Registration<'_>,
) -> std::io::Result<()> {
    let _ = sock.set_nodelay(true);
    if let Some(start) = start {
        sock.write_all(start).await?;
    }
    let (mut rd, mut wr) = sock.into_split();
    let mut dev = Device {
        peer,
        samples_accepted: streams.counters.sensor_samples_accepted.clone(),
        thermal_accepted: streams.counters.sensor_thermal_accepted.clone(),
        location: None,
        streams: [None, None],
        serial: None,
        seq: 0,
        name: peer.to_string().into(),
    };
    let mut lines = LineSplitter::new();
    // 16 KB holds several thermal lines (about 3.1 KB each); 1000 devices need 16 MB.
    let mut buf = vec![0u8; 16 * 1024];
    let mut log = LogLimit::per_second();
    loop {
        let n = tokio::select! {
            r = async {
                streams.wait_unpaused().await;
                rd.read(&mut buf).await
            } => r?,
            Some(cmd) = commands.recv() => {
                wr.write_all(format!("{cmd}\n").as_bytes()).await?;
                streams.counters.device_commands_sent.inc();
                continue;
            }
        };
        if n == 0 {
            return Ok(());
        }
        streams.counters.sensor_bytes_received.add(n as u64);
        lines.push(&buf[..n]);
        while let Some(line) = lines.next_line() {
            let parsed = line.and_then(sensor_line::parse_line);
            streams.counters.sensor_lines.inc();
            match parsed {
                Ok(None) => {}
                Ok(Some(p)) => {
                    if let Packet::SerialNo(s) | Packet::LocId(s) = &p {
                        let serial = matches!(p, Packet::SerialNo(_)).then_some(s.as_str());
                        let loc = matches!(p, Packet::LocId(_)).then_some(s.as_str());
                        devices.identify(id, serial, loc);
                    }
                    handle(p, &mut dev, streams).await
                }
                Err(e) => reject(&e, &dev, streams, &mut log),
            }
        }
    }
}

fn reject(e: &LineError, dev: &Device, streams: &Streams, log: &mut LogLimit) {
    streams.counters.sensor_lines_rejected.inc(e.reason());
    // Logged with the device, at most once a second per connection (a flood stays a counter).
    if let Some(held) = log.allow(Instant::now()) {
        warn!(device = %dev.label(), peer = %dev.peer, reason = e.reason(), held, "bad sensor line: {e}");
    }
}

async fn handle(p: Packet, dev: &mut Device, streams: &Streams) {
    let item = match p {
        Packet::SerialNo(s) => {
            info!(peer = %dev.peer, serial = %s, "sensor device identified");
            dev.name = s.as_str().into();
            dev.serial = Some(s);
            return;
        }
        Packet::LocId(l) => {
            dev.location = Some(l);
            dev.streams = [None, None];
            return;
        }
        Packet::Eeprom { .. } => {
            streams.counters.sensor_eeprom_packets.inc();
            return;
        }
        Packet::Sensor { location, readings } => Item::Sample(Arc::new(Sample {
            stream: dev.stream(Kind::Sensor, location),
            device: dev.name.clone(),
            device_seq: dev.seq,
            accepted_us: now_us(),
            readings,
        })),
        Packet::Thermal {
            location, values, ..
        } => Item::Thermal(Arc::new(Thermal {
            stream: dev.stream(Kind::Thermal, location),
            device: dev.name.clone(),
            device_seq: dev.seq,
            accepted_us: now_us(),
            width: sensor_line::THERMAL_W,
            height: sensor_line::THERMAL_H,
            values,
        })),
    };
    dev.seq += 1;
    match &item {
        Item::Sample(_) => dev.samples_accepted.inc(),
        Item::Thermal(_) => dev.thermal_accepted.inc(),
    }
    if streams.publish(item).await.is_err() {
        streams.counters.sensor_hub_gone.inc();
    }
}
