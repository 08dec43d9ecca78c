//! Sensor and thermal-camera ingestion at run time: the EmberEye-compatible line listener, the
//! devices connected now, the stream hub (publishers → hub thread → subscribers) with
//! back-pressure from the hub to the device sockets, and the subscribers' connections.
//!
//! | file | stage |
//! |---|---|
//! | `listener.rs` | the sensor line listener: one task per device, lines → samples and grids |
//! | `devices.rs` | the devices connected now, and commands to them |
//! | `streams.rs` | the hub at run time: bounded input, pause/resume of reads, delivery |
//! | `subscriber.rs` | one v1 subscriber connection: Welcome, then what its filter matches |

pub mod devices;
mod listener;
pub mod streams;
mod subscriber;

use std::sync::Arc;

pub(crate) use framewire_telemetry::lock;

use framewire_telemetry::{counter_set, Counter, CounterRegistry, Family, StageHistograms};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;

pub use devices::{valid_command, Devices, Sent};
pub use streams::{Streams, Subscription, INPUT_CAPACITY};

counter_set! {
    /// Everything sensor ingestion counts, from the wire to the subscribers.
    pub struct SensorCounters {
        /// Connections by kind (`sensor`).
        connections: Family,
        /// Bytes read from device sockets, counted as they come off the wire.
        sensor_bytes_received: Counter,
        sensor_lines: Counter,
        sensor_samples_accepted: Counter,
        sensor_thermal_accepted: Counter,
        sensor_eeprom_packets: Counter,
        /// Lines refused, by reason (the connection stays open).
        sensor_lines_rejected: Family,
        sensor_hub_gone: Counter,
        /// `DEVICE` requests, and commands written to a device's socket.
        device_commands: Counter,
        device_commands_sent: Counter,
        stream_reads_paused: Counter,
        stream_pauses: Counter,
        subscribers_connected: Counter,
        subscribers_disconnected: Counter,
        subscriber_packets_ignored: Counter,
    }
}

/// The sensor subsystem's handle: its hub, its devices and its counters.
#[derive(Clone)]
pub struct Sensors {
    pub streams: Arc<Streams>,
    pub devices: Arc<Devices>,
    pub counters: Arc<SensorCounters>,
    stages: Arc<StageHistograms>,
}

impl Sensors {
    /// Starts the hub thread; the counters join `registry`.
    pub fn start(
        registry: &CounterRegistry,
        stages: Arc<StageHistograms>,
        limits: framewire_hub::Limits,
    ) -> Self {
        let counters = Arc::new(SensorCounters::default());
        registry.register(counters.clone());
        let streams = Streams::start(counters.clone(), stages.sensor_hub.clone(), limits);
        registry.register(streams.clone());
        Sensors {
            streams,
            devices: Default::default(),
            counters,
            stages,
        }
    }

    /// Takes devices on `l`; each is sent `start` (`PERIOD_ON\n`) when it connects.
    /// At most `gate`'s devices are connected at once.
    pub async fn serve_devices(
        self,
        l: TcpListener,
        gate: Arc<framewire_net::Gate>,
        start: Option<Arc<[u8]>>,
    ) {
        listener::serve(l, gate, self.streams, self.devices, start).await
    }

    /// A subscriber whose Hello was accepted, for the streams `filter` names.
    pub async fn serve_subscriber<R, W>(
        &self,
        halves: (R, W),
        dec: framewire_proto::v1::Decoder,
        peer: std::net::SocketAddr,
        filter: &str,
    ) -> anyhow::Result<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let delivery = &self.stages.sensor_delivery;
        subscriber::serve(halves, dec, peer, &self.streams, filter, delivery).await
    }

    /// Stops the hub thread.
    pub fn stop(&self) {
        self.streams.stop();
    }
}
