//! The screen mirror at run time: one capture loop feeding every viewer, framewire v1 and the
//! Daylight app alike, each through its own sans-IO `HostSession` (`framewire-session`) driven
//! by one task; the display settings; the shared-memory export; the input back-channel.
//!
//! | file | stage |
//! |---|---|
//! | `config.rs` | what the mirror is asked to do: source, size, pace, codec, viewer pacing |
//! | `mirror.rs` | the mirror's state and counters, and the handle other subsystems use |
//! | `pipeline.rs` | capture → grey → delta/compress, on its own thread, newest frame published |
//! | `buffer_pool.rs` | picture buffers: recycled, and made ahead of a burst of changes |
//! | `viewers.rs` | a viewer joining (negotiation, Welcome) and leaving (totals) |
//! | `connection.rs` | one viewer connection: one task driving its `HostSession` |
//! | `transport.rs` | how a session's bytes move: one byte stream (TCP, WebSocket), or QUIC streams |
//! | `display.rs` | brightness, warmth and backlight as the Daylight host keeps them |
//! | `report.rs` | the latency report and the Daylight status keys |
//! | `shm_export.rs` | every frame to a shared-memory route, for local consumers |
//! | `input.rs` | viewers' input and the Daylight touch port → XTest, on its own thread |
//! | `trace.rs` | the frame trace file: one line per frame sent |
//! | `lib.rs` | starting the capture thread, the shm export, input injection and the touch port |

mod buffer_pool;
mod colour;
mod config;
mod connection;
pub mod display;
pub mod input;
mod mirror;
mod pass_over;
mod pipeline;
mod report;
mod shm_export;
mod trace;
pub mod transport;
mod viewers;

use std::sync::Arc;

pub use config::{MirrorConfig, SourceSpec};
pub use display::{Backlight, DisplayHandle};
pub use framewire_session::{Protocol, SourceFrame, ViewerCommand};
pub use mirror::{lock, FlowFigures, Mirror, MirrorCounters, Settings, ViewerShared};
pub use pipeline::open_source;
pub use report::iso8601_now;
pub use transport::{PathFigures, StreamTransport, Transport};

impl Mirror {
    /// Starts the capture loop on its own thread; it runs until [`Mirror::stop`].
    pub fn spawn_capture(self: &Arc<Self>) -> std::thread::JoinHandle<()> {
        pipeline::spawn(self.clone())
    }

    /// Exports every frame to the shared-memory route `name`, on its own thread.
    pub fn spawn_shm_export(
        self: &Arc<Self>,
        name: &str,
        colour: bool,
    ) -> Result<std::thread::JoinHandle<()>, framewire_shm::ShmError> {
        let ch = shm_export::open(name, colour)?;
        Ok(shm_export::spawn(ch, self.clone(), colour))
    }

    /// Starts injecting viewers' input into an X display (only viewers with the control
    /// token may send it).
    pub fn start_input(&self, cfg: &input::InputConfig) -> anyhow::Result<()> {
        let sink = input::start(cfg, self.input_counters.clone())?;
        let _ = self.input.set(sink);
        Ok(())
    }

    /// Serves the Daylight app's touch port on `l` (its input goes where viewers' input goes).
    /// The Daylight app's touch port on `l`, at most `gate`'s connections at once.
    pub async fn serve_touch(
        self: Arc<Self>,
        l: tokio::net::TcpListener,
        gate: Arc<framewire_net::Gate>,
    ) {
        let (sink, counters) = (self.input.get().cloned(), self.input_counters.clone());
        input::serve_touch(l, gate, sink, counters).await
    }
}
