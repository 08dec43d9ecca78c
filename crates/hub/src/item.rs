use std::sync::Arc;

/// A reading's value: the line protocol's own type, carried unchanged to subscribers.
pub use framewire_proto::sensor_line::Value;

/// A timestamped set of readings from one device.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub stream: Arc<str>,
    /// The device (connection) it came from, and its number in that device's sequence.
    pub device: Arc<str>,
    pub device_seq: u64,
    /// When the hub accepted it (µs, the caller's clock).
    pub accepted_us: u64,
    pub readings: Vec<(String, Value)>,
}

/// A W×H grid of 16-bit values (a thermal camera frame), row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Thermal {
    pub stream: Arc<str>,
    pub device: Arc<str>,
    pub device_seq: u64,
    pub accepted_us: u64,
    pub width: u32,
    pub height: u32,
    pub values: Vec<u16>,
}

/// What a stream carries; shared, not copied, between subscribers.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Sample(Arc<Sample>),
    Thermal(Arc<Thermal>),
}

impl Item {
    pub fn stream(&self) -> &str {
        match self {
            Item::Sample(s) => &s.stream,
            Item::Thermal(t) => &t.stream,
        }
    }

    /// When the server accepted it from its device (µs, the server's clock).
    pub fn accepted_us(&self) -> u64 {
        match self {
            Item::Sample(s) => s.accepted_us,
            Item::Thermal(t) => t.accepted_us,
        }
    }
}
