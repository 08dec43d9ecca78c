//! Exports the screen stream to a mirror-memory route (`serve --shm-export NAME`), for local
//! consumers (a recorder, an analysis process, a viewer on the same machine) that want whole
//! pictures without a socket: one message per frame (`framewire_proto::shm_frame`), the grey
//! picture (or, with `--shm-colour`, the colour planes) read in place by every receiver.
//!
//! The route drops the oldest frames for a receiver that is behind (newest wins, as for
//! network viewers), and the export never waits: a frame that finds no room (a receiver is
//! still reading every block) is skipped and counted, so the capture loop is never slowed.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use framewire_proto::shm_frame::{self, FrameHeader, PixelFormat};
use framewire_shm::{Channel, Options, Policy, ShmError};
use tracing::{info, warn};

use crate::mirror::Mirror;

/// Pool blocks large enough for a 4096×4096 picture (three planes in colour).
fn max_frame(colour: bool) -> usize {
    shm_frame::HEADER + 4096 * 4096 * if colour { 3 } else { 1 }
}

pub fn open(name: &str, colour: bool) -> Result<Channel, ShmError> {
    Channel::open(
        name,
        &Options::route()
            .policy(Policy::DropOldest)
            .pool(4, max_frame(colour))
            .topic(shm_frame::TOPIC),
    )
}

/// Runs the export on its own thread until the server shuts down. In colour it takes the
/// colour stream, which the capture loop makes while the export runs.
pub fn spawn(ch: Channel, mirror: Arc<Mirror>, colour: bool) -> std::thread::JoinHandle<()> {
    let rt = tokio::runtime::Handle::current();
    std::thread::Builder::new()
        .name("framewire-shm-export".into())
        .spawn(move || {
            framewire_sched::follow();
            if colour {
                mirror.colour_viewers.fetch_add(1, Ordering::Relaxed);
            }
            rt.block_on(run(ch, mirror.clone(), colour));
            if colour {
                mirror.colour_viewers.fetch_sub(1, Ordering::Relaxed);
            }
        })
        .expect("spawning the mirror-memory export thread")
}

async fn run(ch: Channel, mirror: Arc<Mirror>, colour: bool) {
    let mut tx = match ch.sender() {
        Ok(t) => t,
        Err(e) => {
            warn!(error = %e, route = ch.name(), "mirror-memory export cannot send");
            return;
        }
    };
    info!(route = ch.name(), path = %ch.path().display(), "exporting frames to mirror memory");
    let mut frames = match colour {
        true => mirror.colour_frames.subscribe(),
        false => mirror.frames.subscribe(),
    };
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
            height: f.height / f.planes.max(1),
            checksum: f.checksum,
            unchanged: last_content == Some(f.content_id),
            format: match f.planes {
                3 => PixelFormat::PlanarGDiff,
                _ => PixelFormat::Grey,
            },
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
