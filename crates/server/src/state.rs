//! State shared by the capture loop, the viewer sessions, the control socket and reports.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use framewire_flow::ViewerFlowStats;
use framewire_session::SourceFrame;
pub use framewire_session::ViewerCommand;
use framewire_telemetry::{Counters, SampleWindow};
use tokio::sync::{broadcast, watch};

use crate::config::Protocol;

/// Live display settings, as the control socket reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// The brightness the viewers were last told (0: backlight off).
    pub brightness: u8,
    /// The brightness `BACKLIGHT on` restores (never 0).
    pub saved_brightness: u8,
    pub warmth: u8,
    pub backlight_on: bool,
    pub running: bool,
    /// Display tuning (sharpen, contrast, gamma), applied by the capture loop.
    pub tuning: framewire_codec::tune::Tuning,
}

/// Timing windows of the capture loop (all µs).
#[derive(Debug, Default)]
pub struct PipelineStats {
    pub capture_us: SampleWindow,
    pub grey_us: SampleWindow,
    pub checksum_us: SampleWindow,
    pub delta_us: SampleWindow,
    pub keyframe_us: SampleWindow,
    pub interval_jitter_us: SampleWindow,
    pub capture_times: SampleWindow,
    pub payload_bytes: SampleWindow,
    pub bytes_total: u64,
}

/// The figures a viewer's session publishes for the reports (its task owns the session).
#[derive(Debug, Clone, Default)]
pub struct FlowFigures {
    pub stats: ViewerFlowStats,
    /// Recent round-trip times (µs).
    pub rtt: SampleWindow,
}

/// What the reports see of one viewer; only its own task writes it.
pub struct ViewerShared {
    pub id: u64,
    pub protocol: Protocol,
    pub peer: SocketAddr,
    pub flow: Mutex<FlowFigures>,
    pub e2e_us: Mutex<SampleWindow>,
    pub bytes_sent: AtomicU64,
}

pub struct Shared {
    pub counters: Counters,
    pub frames: watch::Sender<Option<Arc<SourceFrame>>>,
    pub commands: broadcast::Sender<ViewerCommand>,
    pub settings: Mutex<Settings>,
    pub pipeline: Mutex<PipelineStats>,
    pub send_us: Mutex<SampleWindow>,
    pub viewers: Mutex<BTreeMap<u64, Arc<ViewerShared>>>,
    /// Viewers that have left, folded into these so totals never go backwards.
    pub departed_e2e_us: Mutex<SampleWindow>,
    pub next_viewer: AtomicU64,
    pub shutdown: watch::Sender<bool>,
    /// Requested picture size (RESOLUTION verb); the capture loop restarts its source on change.
    pub resolution: watch::Sender<(u32, u32)>,
    pub source_name: Mutex<String>,
    pub started_us: u64,
    /// Sensor devices connected now (for commands to them).
    pub devices: Arc<crate::devices::Devices>,
    /// Per-stage latency since start, for Prometheus.
    pub stages: crate::latency::StageHistograms,
    /// Where viewers' input goes, when injection is on.
    pub input: std::sync::OnceLock<crate::input::InputSink>,
}

impl Shared {
    pub fn new(settings: Settings, size: (u32, u32), started_us: u64) -> Arc<Self> {
        Arc::new(Shared {
            counters: Counters::new(),
            frames: watch::channel(None).0,
            commands: broadcast::channel(64).0,
            settings: Mutex::new(settings),
            pipeline: Mutex::new(PipelineStats::default()),
            send_us: Mutex::new(SampleWindow::new(600)),
            viewers: Mutex::new(BTreeMap::new()),
            departed_e2e_us: Mutex::new(SampleWindow::new(600)),
            next_viewer: AtomicU64::new(1),
            shutdown: watch::channel(false).0,
            resolution: watch::channel(size).0,
            source_name: Mutex::new(String::new()),
            started_us,
            devices: Default::default(),
            stages: Default::default(),
            input: Default::default(),
        })
    }

    pub fn new_viewer_id(&self) -> u64 {
        self.next_viewer.fetch_add(1, Ordering::Relaxed)
    }

    pub fn viewer_list(&self) -> Vec<Arc<ViewerShared>> {
        lock(&self.viewers).values().cloned().collect()
    }
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it: every structure
/// behind these locks stays consistent between statements, and a report must never take the
/// server down.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
