//! A local viewer of a shared-memory frame route (`framewire view --shm NAME`): reads each
//! picture in place, verifies its checksum, and measures capture → received latency on the
//! machine's monotonic clock (the same clock as the server's, so no offset to estimate).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context;
use framewire_codec::checksum::picture_checksum;
use framewire_proto::shm_frame;
use framewire_shm::{Channel, ShmError};
use framewire_telemetry::{lock, SampleWindow};
use serde::Serialize;

use framewire_telemetry::clock::now_us;

#[derive(Debug, Clone, Serialize)]
pub struct ShmViewerStats {
    pub width: u32,
    pub height: u32,
    pub frames: u64,
    pub unchanged: u64,
    pub checksum_failures: u64,
    /// Frames the route dropped for this viewer because it was behind.
    pub missed: u64,
    /// Messages that were not valid frames.
    pub bad_messages: u64,
    #[serde(skip)]
    pub e2e_us: SampleWindow,
    #[serde(skip)]
    pub verify_us: SampleWindow,
}

impl Default for ShmViewerStats {
    fn default() -> Self {
        ShmViewerStats {
            width: 0,
            height: 0,
            frames: 0,
            unchanged: 0,
            checksum_failures: 0,
            missed: 0,
            bad_messages: 0,
            e2e_us: SampleWindow::new(600),
            verify_us: SampleWindow::new(300),
        }
    }
}

impl ShmViewerStats {
    /// Empties the timing windows, as [`crate::viewer::ViewerStats::clear_windows`].
    pub fn clear_windows(&mut self) {
        self.e2e_us.clear();
        self.verify_us.clear();
    }

    pub fn line(&self) -> String {
        let ms = |w: &SampleWindow, p: f64| w.percentile(p).unwrap_or(0.0) / 1000.0;
        format!(
            "shm {}x{} | frames {} ({} unchanged) | capture→received p50 {:.3} ms p99 {:.3} ms | verify {:.3} ms | missed {} | checksum failures {}",
            self.width,
            self.height,
            self.frames,
            self.unchanged,
            ms(&self.e2e_us, 50.0),
            ms(&self.e2e_us, 99.0),
            self.verify_us.avg().unwrap_or(0.0) / 1000.0,
            self.missed,
            self.checksum_failures
        )
    }
}

/// What was just received, for the caller's callback.
pub struct ShmFrameEvent<'a> {
    pub seq: u64,
    pub width: u32,
    pub height: u32,
    /// The picture (for an unchanged frame, the previous one's pixels are not repeated: empty).
    /// In colour, the planes G, R − G, B − G one after the other.
    pub pixels: &'a [u8],
    /// 1 grey, 3 colour.
    pub planes: u32,
    pub unchanged: bool,
    pub checksum_ok: bool,
}

/// Receives frames from route `name` until `stop` is set, `max_frames` arrived, or `on_frame`
/// returns false. Blocking: run it on its own thread.
pub fn run(
    name: &str,
    max_frames: Option<u64>,
    stop: &AtomicBool,
    stats: &Mutex<ShmViewerStats>,
    mut on_frame: impl FnMut(&ShmFrameEvent<'_>) -> bool,
) -> anyhow::Result<()> {
    let ch = Channel::attach(name, shm_frame::TOPIC).with_context(|| {
        format!("opening shared-memory route {name} (start the server with --shm-export {name})")
    })?;
    let mut rx = ch.receiver()?;
    let mut last_sum = None;
    let mut last_frame = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let m = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(m) => m,
            Err(ShmError::Timeout) => {
                if last_frame.elapsed() > Duration::from_secs(5) {
                    tracing::warn!(route = name, "no frames for 5 s; is the server running?");
                    last_frame = Instant::now();
                }
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        last_frame = Instant::now();
        let got = now_us();
        let (h, px) = match shm_frame::parse(&m) {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "not a frame");
                lock(stats).bad_messages += 1;
                continue;
            }
        };
        if !matches!(
            h.format,
            shm_frame::PixelFormat::Grey | shm_frame::PixelFormat::PlanarGDiff
        ) {
            lock(stats).bad_messages += 1;
            continue;
        }
        let t = now_us();
        // Colour planes are checked as the picture of stacked planes they are.
        let ok = if h.unchanged {
            last_sum == Some(h.checksum)
        } else {
            picture_checksum(px, h.width as usize) == h.checksum
        };
        let verify = now_us() - t;
        last_sum = ok.then_some(h.checksum);
        let ev = ShmFrameEvent {
            seq: h.seq,
            width: h.width,
            height: h.height,
            pixels: px,
            planes: h.format.bytes_per_pixel() as u32,
            unchanged: h.unchanged,
            checksum_ok: ok,
        };
        let keep = on_frame(&ev);
        let frames = {
            let mut s = lock(stats);
            (s.width, s.height) = (h.width, h.height);
            s.frames += 1;
            s.unchanged += h.unchanged as u64;
            s.checksum_failures += !ok as u64;
            s.e2e_us.push(got.saturating_sub(h.capture_us) as f64);
            s.verify_us.push(verify as f64);
            s.frames
        };
        drop(m);
        lock(stats).missed = rx.missed();
        if !keep || max_frames.is_some_and(|n| frames >= n) {
            break;
        }
    }
    lock(stats).missed = rx.missed();
    Ok(())
}
