//! The screen mirror's own state: the newest frame, the display settings, the viewers
//! connected now and the figures the reports read. One [`Mirror`] per server; the capture
//! loop, the viewer connections and the shared-memory export hold it, and other subsystems
//! (control socket, HTTP) reach it through its methods.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use framewire_flow::ViewerFlowStats;
use framewire_session::{Protocol, SourceFrame, ViewerCommand};
use framewire_telemetry::clock::now_us;
pub use framewire_telemetry::lock;
use framewire_telemetry::{
    counter_set, Counter, CounterRegistry, Family, SampleWindow, StageHistograms,
};
use tokio::sync::{broadcast, watch};

use crate::config::MirrorConfig;
use crate::input::{InputCounters, InputSink};
use crate::trace::{open_trace, Trace};

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

counter_set! {
    /// Everything the mirror counts: frames, what viewers' sessions report, the shared-memory
    /// export. (Input has its own set, `InputCounters`.)
    pub struct MirrorCounters {
        frames_captured: Counter,
        frames_unchanged: Counter,
        frames_without_damage: Counter,
        capture_errors: Counter,
        capture_deadline_missed: Counter,
        encode_errors: Counter,
        /// The X11 source's own figures.
        x11_polls: Counter,
        x11_idle_polls: Counter,
        x11_image_reads: Counter,
        x11_rows_read: Counter,
        x11_damage_events: Counter,
        /// A recording's replay (`--source file:PATH`): pictures shown, runs begun again.
        replay_pictures: Counter,
        replay_loops: Counter,
        codec_fallbacks: Counter,
        /// Grey frames no viewer took, passed over where deltas are costly: the next one's
        /// delta was made against a picture a viewer took instead (`pass_over.rs`).
        frames_passed_over: Counter,
        /// Frames a viewer had missed, sent before the newest because both shared deltas,
        /// already made, cross its path quickly (instead of a delta made for it alone).
        frames_caught_up: Counter,
        commands_lagged: Counter,
        deltas_sent_as_keyframes: Counter,
        viewer_checksum_mismatch: Counter,
        viewer_decode_errors: Counter,
        pongs_dropped: Counter,
        /// Frames a viewer with named bases could not apply because it lost one before them
        /// (each repaired by a delta against the picture it acknowledged).
        viewer_bases_missing: Counter,
        /// Times large frames went on streams for a while because, as datagrams, the content
        /// outran the path (`framewire_session::outrun`).
        large_datagrams_outrun: Counter,
        /// Packets that broke the protocol, by reason (the connection was closed).
        rejected_packets: Family,
        /// Colour pictures made (while colour viewers are connected), and encoder failures.
        colour_frames: Counter,
        colour_encode_errors: Counter,
        /// Colour frames no viewer took, passed over where deltas are costly: the next one's
        /// delta was made against a picture a viewer took instead.
        colour_frames_passed_over: Counter,
        /// Picture buffers (grey and colour) the capture thread had to make itself, none
        /// being ready, and those made ahead on a thread of their own (`buffer_pool.rs`).
        picture_buffers_made_inline: Counter,
        picture_buffers_made_ahead: Counter,
        shm_frames_exported: Counter,
        shm_frames_skipped_full: Counter,
        shm_frames_too_large: Counter,
        shm_export_errors: Counter,
    }
}

/// Timing windows of the capture loop (all µs).
#[derive(Debug, Default)]
pub struct PipelineStats {
    pub capture_us: SampleWindow,
    pub grey_us: SampleWindow,
    pub checksum_us: SampleWindow,
    pub delta_us: SampleWindow,
    pub keyframe_us: SampleWindow,
    pub colour_planes_us: SampleWindow,
    pub colour_compress_us: SampleWindow,
    /// Bytes of each colour frame made (0 for an undamaged one).
    pub colour_payload_bytes: SampleWindow,
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
    /// The delivery-rate estimate (viewers with a byte budget).
    pub link: Option<framewire_flow::LinkEstimate>,
    /// What the transport says of the path (QUIC).
    pub path: Option<crate::transport::PathFigures>,
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

/// What viewers that have left contributed, so totals never go backwards.
#[derive(Default)]
pub(crate) struct Departed {
    pub e2e_us: SampleWindow,
    pub flow: ViewerFlowStats,
}

pub struct Mirror {
    pub(crate) cfg: MirrorConfig,
    pub counters: Arc<MirrorCounters>,
    pub input_counters: Arc<InputCounters>,
    /// Every subsystem's counters, for the reports.
    pub registry: CounterRegistry,
    /// Per-stage latency since start, for Prometheus.
    pub stages: Arc<StageHistograms>,
    pub(crate) frames: watch::Sender<Option<Arc<SourceFrame>>>,
    /// The same captures in colour (planes G, R − G, B − G), made only while a viewer that
    /// asked for colour is connected (`colour_viewers`).
    pub(crate) colour_frames: watch::Sender<Option<Arc<SourceFrame>>>,
    pub(crate) colour_viewers: AtomicUsize,
    /// Viewers of the grey stream (v1 grey and Daylight). While there are none and nothing
    /// else subscribes to `frames` (the shared-memory export in grey), no grey picture is made:
    /// the next one after that is made whole, as a keyframe.
    pub(crate) grey_viewers: AtomicUsize,
    /// Pictures the capture loop has taken since start (grey, colour or both).
    pub(crate) published: AtomicU64,
    pub(crate) commands: broadcast::Sender<ViewerCommand>,
    pub(crate) settings: Mutex<Settings>,
    pub(crate) pipeline: Mutex<PipelineStats>,
    pub(crate) send_us: Mutex<SampleWindow>,
    pub(crate) viewers: Mutex<BTreeMap<u64, Arc<ViewerShared>>>,
    pub(crate) departed: Mutex<Departed>,
    next_viewer: AtomicU64,
    pub(crate) stop: watch::Sender<bool>,
    /// Requested picture size (RESOLUTION verb); the capture loop restarts its source on change.
    pub(crate) resolution: watch::Sender<(u32, u32)>,
    pub(crate) source_name: Mutex<String>,
    pub started_us: u64,
    /// Where viewers' input goes, when injection is on.
    pub(crate) input: OnceLock<InputSink>,
    pub(crate) trace: Trace,
}

impl Mirror {
    /// The mirror's state for `cfg`; its counters join `registry`.
    pub fn new(
        cfg: MirrorConfig,
        registry: CounterRegistry,
        stages: Arc<StageHistograms>,
    ) -> anyhow::Result<Arc<Self>> {
        let settings = Settings {
            brightness: cfg.brightness,
            saved_brightness: cfg.brightness.max(1),
            tuning: cfg.tuning,
            ..Settings::default()
        };
        let trace = open_trace(cfg.trace_frames.as_deref())?;
        let counters = Arc::new(MirrorCounters::default());
        registry.register(counters.clone());
        let input_counters = Arc::new(InputCounters::default());
        registry.register(input_counters.clone());
        let size = (cfg.resolution.width, cfg.resolution.height);
        Ok(Arc::new(Mirror {
            cfg,
            counters,
            input_counters,
            registry,
            stages,
            frames: watch::channel(None).0,
            colour_frames: watch::channel(None).0,
            colour_viewers: AtomicUsize::new(0),
            grey_viewers: AtomicUsize::new(0),
            published: AtomicU64::new(0),
            commands: broadcast::channel(64).0,
            settings: Mutex::new(settings),
            pipeline: Mutex::new(PipelineStats::default()),
            send_us: Mutex::new(SampleWindow::new(600)),
            viewers: Mutex::new(BTreeMap::new()),
            departed: Mutex::new(Departed {
                e2e_us: SampleWindow::new(600),
                flow: ViewerFlowStats::default(),
            }),
            next_viewer: AtomicU64::new(1),
            stop: watch::channel(false).0,
            resolution: watch::channel(size).0,
            source_name: Mutex::new(String::new()),
            started_us: now_us(),
            input: OnceLock::new(),
            trace,
        }))
    }

    pub(crate) fn new_viewer_id(&self) -> u64 {
        self.next_viewer.fetch_add(1, Ordering::Relaxed)
    }

    pub fn viewer_list(&self) -> Vec<Arc<ViewerShared>> {
        lock(&self.viewers).values().cloned().collect()
    }

    pub fn viewer_count(&self) -> usize {
        lock(&self.viewers).len()
    }

    /// Flow figures of every viewer ever connected (those connected now and those gone).
    pub fn flow_totals(&self) -> ViewerFlowStats {
        // Departed first, then the list (the order `unregister` takes them in).
        let d = lock(&self.departed);
        let mut t = d.flow;
        for v in self.viewer_list() {
            t.add(&lock(&v.flow).stats);
        }
        t
    }

    /// The display settings now.
    pub fn settings(&self) -> Settings {
        *lock(&self.settings)
    }

    /// Changes the settings (the caller sends whatever command the change returns).
    pub fn update_settings<R>(&self, f: impl FnOnce(&mut Settings) -> R) -> R {
        f(&mut lock(&self.settings))
    }

    /// The settings, locked for a read-modify-write that must not interleave with another.
    pub fn settings_mut(&self) -> std::sync::MutexGuard<'_, Settings> {
        lock(&self.settings)
    }

    /// Frames the capture loop has published since start.
    pub fn frames_published(&self) -> u64 {
        self.published.load(Ordering::Relaxed)
    }

    /// Sends a display command to every viewer connected now.
    pub fn send_command(&self, c: ViewerCommand) {
        // No receivers (no viewer connected) is fine.
        let _ = self.commands.send(c);
    }

    /// Every display command sent to viewers from now on.
    pub fn subscribe_commands(&self) -> broadcast::Receiver<ViewerCommand> {
        self.commands.subscribe()
    }

    /// The picture size the capture loop is asked for.
    pub fn resolution(&self) -> (u32, u32) {
        *self.resolution.borrow()
    }

    /// Asks the capture loop for another picture size.
    pub fn set_resolution(&self, size: (u32, u32)) {
        self.resolution.send_replace(size);
    }

    /// Reopens the source at the current size (`RESTART`).
    pub fn restart_capture(&self) {
        self.resolution.send_modify(|_| {});
    }

    /// Stops the capture loop, the export and every viewer connection.
    pub fn stop(&self) {
        self.stop.send_replace(true);
    }
}
