//! Exports the screen stream to a mirror-memory route (`serve --shm-export NAME`), for local
//! consumers (a recorder, an analysis process, a viewer on the same machine) that want whole
//! pictures without a socket: one message per frame (`framewire_proto::shm_frame`), the grey
//! picture read in place by every receiver.
//!
//! The route drops the oldest frames for a receiver that is behind (newest wins, as for
//! network viewers), and the export never waits: a frame that finds no room (a receiver is
//! still reading every block) is skipped and counted, so the capture loop is never slowed.

use std::sync::Arc;
use std::time::Duration;

use framewire_proto::shm_frame::{self, FrameHeader, PixelFormat};
use framewire_shm::{Channel, Options, Policy, ShmError};
use tracing::{info, warn};

use crate::mirror::Mirror;

/// Pool blocks large enough for a 4096×4096 picture.
const MAX_FRAME: usize = shm_frame::HEADER + 4096 * 4096;

pub fn open(name: &str) -> Result<Channel, ShmError> {
    Channel::open(
        name,
        &Options::route()
            .policy(Policy::DropOldest)
            .pool(4, MAX_FRAME)
            .topic(shm_frame::TOPIC),
    )
}

/// Runs the export on its own thread until the server shuts down.
pub fn spawn(ch: Channel, mirror: Arc<Mirror>) -> std::thread::JoinHandle<()> {
    let rt = tokio::runtime::Handle::current();
    std::thread::Builder::new()
        .name("framewire-shm-export".into())
        .spawn(move || rt.block_on(run(ch, mirror)))
        .expect("spawning the mirror-memory export thread")
}

async fn run(ch: Channel, mirror: Arc<Mirror>) {
    let mut tx = match ch.sender() {
        Ok(t) => t,
        Err(e) => {
            warn!(error = %e, route = ch.name(), "mirror-memory export cannot send");
            return;
        }
    };
    info!(route = ch.name(), path = %ch.path().display(), "exporting frames to mirror memory");
    let mut frames = mirror.frames.subscribe();
    let mut shutdown = mirror.stop.subscribe();
    let exported = mirror.counters.shm_frames_exported.clone();
    let (mut last_seq, mut last_content) = (None, None);
    loop {
        tokio::select! {
            r = frames.changed() => if r.is_err() { break },
            _ = shutdown.wait_for(|v| *v) => break,
        }
        let Some(f) = frames.borrow_and_update().clone() else {
            continue;
        };
        if last_seq == Some(f.seq) {
            continue;
        }
        last_seq = Some(f.seq);
        let h = FrameHeader {
            seq: f.seq,
            capture_us: f.capture_us,
            width: f.width,
            height: f.height,
            checksum: f.checksum,
            unchanged: last_content == Some(f.content_id),
            format: PixelFormat::Grey,
        };
        let len = h.message_len();
        let r = tx.send_with(len, Some(Duration::ZERO), |b| {
            h.write(b);
            if !h.unchanged {
                b[shm_frame::HEADER..].copy_from_slice(&f.grey);
            }
        });
        match r {
            Ok(()) => {
                exported.inc();
                last_content = Some(f.content_id);
            }
            Err(ShmError::Full) => mirror.counters.shm_frames_skipped_full.inc(),
            Err(ShmError::TooLarge { .. }) => {
                mirror.counters.shm_frames_too_large.inc();
                warn!(
                    width = f.width,
                    height = f.height,
                    "frame too large to export"
                );
            }
            Err(e) => {
                mirror.counters.shm_export_errors.inc();
                warn!(error = %e, "mirror-memory export failed");
            }
        }
    }
}
