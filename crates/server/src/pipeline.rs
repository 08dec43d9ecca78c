//! The capture loop: paced capture → grey → delta/keyframe/unchanged, on a dedicated thread
//! (CPU-bound work stays off the async workers). Each result is published as the newest frame;
//! viewers take the newest when they are ready, so a slow viewer never delays the source.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use framewire_capture::{CaptureError, FrameSource, ShmSource, SyntheticSource};
use framewire_codec::checksum::checksum_of_rows;
use framewire_codec::grey::PixelOrder;
use framewire_codec::ingest::{ingest, Previous, Source, Tuned};
use framewire_codec::tune::Tuner;
use framewire_codec::{EncodedKind, HostEncoder};
use tracing::{info, warn};

use crate::clock::now_us;
use crate::config::{ServerConfig, SourceSpec};
use crate::latency::observe_us;
use crate::state::{lock, Shared};
use framewire_session::{FrameMeta, Payload, SourceFrame};

/// Opens the configured source; synthetic scenes continue from frame `index`.
pub fn open_source(
    spec: &SourceSpec,
    width: u32,
    height: u32,
    index: u64,
) -> Result<Box<dyn FrameSource>, CaptureError> {
    Ok(match spec {
        SourceSpec::Synthetic(scene) => {
            Box::new(SyntheticSource::new(*scene, width, height).starting_at(index))
        }
        SourceSpec::Shm(name) => Box::new(ShmSource::open(name)?),
        SourceSpec::X11 {
            display,
            region,
            cursor,
        } => Box::new(
            framewire_x11::X11Source::open(display.as_deref(), *region, *cursor)
                .map_err(|e| CaptureError::Unavailable(e.to_string()))?,
        ),
    })
}

/// Grey buffers are recycled once no viewer holds them, so steady state allocates nothing.
struct GreyPool {
    free: Vec<Arc<Vec<u8>>>,
}

impl GreyPool {
    fn take(&mut self, len: usize) -> Arc<Vec<u8>> {
        if let Some(i) = self.free.iter().position(|b| Arc::strong_count(b) == 1) {
            let mut b = self.free.swap_remove(i);
            if let Some(v) = Arc::get_mut(&mut b) {
                v.resize(len, 0);
                return b;
            }
        }
        Arc::new(framewire_capture::huge_pages::huge_vec(len, 0u8))
    }
    fn give(&mut self, b: Arc<Vec<u8>>) {
        if self.free.len() < 8 {
            self.free.push(b);
        }
    }
}

pub fn spawn(cfg: &ServerConfig, shared: Arc<Shared>) -> std::thread::JoinHandle<()> {
    let cfg = cfg.clone();
    std::thread::Builder::new()
        .name("framewire-capture".into())
        .spawn(move || run(cfg, shared))
        .expect("spawning the capture thread")
}

fn run(cfg: ServerConfig, shared: Arc<Shared>) {
    let period_us = 1_000_000 / cfg.fps as u64;
    let mut size_rx = shared.resolution.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    let (mut w, mut h) = *size_rx.borrow_and_update();
    let mut source = match open_source(&cfg.source, w, h, 0) {
        Ok(s) => s,
        Err(e) => {
            shared.counters.inc("capture_errors");
            warn!(error = %e, "cannot open the capture source");
            return;
        }
    };
    *lock(&shared.source_name) = source.name();
    info!(source = %source.name(), width = w, height = h, fps = cfg.fps, "capture started");
    // The shared stream has keyframes only when the picture starts or changes size; periodic
    // ones are per viewer (see `ViewerFlow::with_refresh`), made lazily from the grey picture.
    let mut encoder = HostEncoder::new(cfg.codec, 0);
    let mut pool = GreyPool { free: Vec::new() };
    let mut payload = Vec::new();
    // Row hashes of the last picture and of the one being made.
    let (mut prev_hashes, mut hashes) = (Vec::new(), Vec::new());
    let mut seq: u64 = 0;
    let mut content_id = 0u64;
    let mut last: Option<Arc<SourceFrame>> = None;
    let mut last_capture: Option<u64> = None;
    let mut deadline = now_us();
    let total = shared.counters.get("frames_captured");
    let unchanged = shared.counters.get("frames_unchanged");
    let no_damage = shared.counters.get("frames_without_damage");
    let mut polls = 0u64;
    let mut source_counts: std::collections::HashMap<&'static str, u64> = Default::default();
    // Display tuning, rebuilt when the control socket changes it; the next picture is then
    // converted whole, as every row of it changes.
    let mut tuned = Tuned::new(Tuner::new(lock(&shared.settings).tuning));
    let mut retune = false;
    loop {
        // The source's own counters (e.g. X11 reads and idle polls), a few times a second.
        if polls.is_multiple_of(16) {
            for (name, v) in source.counters() {
                let last = source_counts.entry(name).or_insert(0);
                if v > *last {
                    shared.counters.get(name).add(v - *last);
                }
                *last = v;
            }
        }
        polls += 1;
        if *shutdown.borrow_and_update() {
            break;
        }
        if size_rx.has_changed().unwrap_or(false) {
            (w, h) = *size_rx.borrow_and_update();
            match open_source(&cfg.source, w, h, seq) {
                Ok(s) => {
                    source = s;
                    source_counts.clear();
                }
                Err(e) => warn!(error = %e, "capture source not reopened"),
            }
            info!(
                width = w,
                height = h,
                "resolution changed; capture restarted"
            );
        }
        let now = now_us();
        if now < deadline {
            std::thread::sleep(Duration::from_micros(deadline - now));
        } else if now > deadline + period_us {
            // Fell behind (a long stall): resynchronise instead of bursting to catch up.
            shared.counters.inc("capture_deadline_missed");
            deadline = now;
        }
        deadline += period_us;
        let settings = *lock(&shared.settings);
        if !settings.running {
            continue; // STOP: keep pacing, publish nothing; viewers keep their last picture
        }
        if settings.tuning != tuned.tuner().tuning() {
            tuned = Tuned::new(Tuner::new(settings.tuning));
            retune = true;
            info!(tuning = %settings.tuning, "display tuning applied");
        }

        let capture_start = now_us();
        let captured = match source.capture() {
            Ok(c) => c,
            Err(e) => {
                shared.counters.inc("capture_errors");
                warn!(error = %e, "capture failed");
                continue;
            }
        };
        // The picture is as of the moment the source hands it over; what the grab itself cost is
        // its own stage (`capture`), so end-to-end latency starts here and nothing is hidden.
        let capture_us = now_us();
        // Pacing jitter counts every capture, changed or not.
        if let Some(prev) = last_capture.replace(capture_us) {
            lock(&shared.pipeline)
                .interval_jitter_us
                .push(((capture_us - prev) as f64 - 1e6 / cfg.fps as f64).abs());
        }
        let (cw, ch) = (captured.width, captured.height);
        // After a tuning change every row is made again, whatever the source says changed.
        let damage = captured.damage.merged(ch).filter(|_| !retune);
        let same_size = last
            .as_ref()
            .filter(|l| l.width == cw && l.height == ch)
            .cloned();
        if let (Some(rows), Some(prev)) = (&damage, &same_size) {
            if rows.is_empty() {
                // Nothing was drawn: the picture, its checksum and its content are the last
                // frame's. No conversion, no hashing, no encoding.
                unchanged.inc();
                no_damage.inc();
                total.inc();
                let meta = FrameMeta {
                    seq,
                    capture_us,
                    width: cw,
                    height: ch,
                    grey: prev.grey.clone(),
                    checksum: prev.checksum,
                    content_id: prev.content_id,
                    codec: cfg.codec,
                };
                let frame = SourceFrame::new(meta, Payload::Unchanged);
                {
                    let mut st = lock(&shared.pipeline);
                    st.capture_us.push((capture_us - capture_start) as f64);
                    observe_us(&shared.stages.capture, capture_us - capture_start);
                    st.capture_times.push(capture_us as f64);
                    st.payload_bytes.push(0.0);
                }
                let frame = Arc::new(frame);
                last = Some(frame.clone());
                shared.frames.send_replace(Some(frame));
                seq += 1;
                continue;
            }
        }
        let mut grey = pool.take(cw as usize * ch as usize);
        let t0 = now_us();
        // Grey and row hashes in one pass; only damaged rows when the source says which.
        let prev = same_size.as_ref().map(|p| Previous {
            grey: &p.grey,
            hashes: &prev_hashes,
        });
        ingest(
            Source::new(captured.bgra, PixelOrder::Bgra, cw as usize),
            prev,
            damage.as_deref(),
            Some(&mut tuned),
            Arc::get_mut(&mut grey).expect("fresh buffer"),
            &mut hashes,
        );
        let t1 = now_us();
        let checksum = checksum_of_rows(&hashes);
        let mut base = None;
        let t_sum = now_us();
        let encoded = if cfg.row_deltas {
            encoder.encode_hashed(grey.clone(), cw as usize, &hashes, &mut payload)
        } else {
            encoder.encode(grey.clone(), &mut payload)
        };
        let enc = match encoded {
            Ok((e, old)) => {
                std::mem::swap(&mut hashes, &mut prev_hashes);
                if let Some(old) = old {
                    // Viewers that take another form of delta than the shared payload
                    // (Daylight: full-frame LZ4; a viewer without the configured codec) have
                    // theirs made from the base on demand.
                    let is_delta = matches!(e.kind, EncodedKind::Delta | EncodedKind::RowDelta);
                    base = is_delta.then(|| old.clone());
                    pool.give(old);
                }
                e
            }
            Err(e) => {
                shared.counters.inc("encode_errors");
                warn!(error = %e, "encode failed");
                continue;
            }
        };
        let t2 = now_us();
        total.inc();
        let data = Bytes::copy_from_slice(&payload);
        let shared_payload = match (enc.kind, base) {
            (EncodedKind::Unchanged, _) => {
                unchanged.inc();
                Payload::Unchanged
            }
            (EncodedKind::Keyframe(_), _) => {
                content_id = seq;
                Payload::Key(data)
            }
            (EncodedKind::Delta, Some(base)) => {
                let base_id = std::mem::replace(&mut content_id, seq);
                Payload::Delta {
                    data,
                    base_id,
                    base,
                }
            }
            (EncodedKind::RowDelta, Some(base)) => {
                let base_id = std::mem::replace(&mut content_id, seq);
                Payload::Rows {
                    data,
                    base_id,
                    base,
                }
            }
            (_, None) => {
                // The encoder makes a delta only against a picture it hands back.
                shared.counters.inc("encode_errors");
                warn!("a delta without the picture it was made against");
                continue;
            }
        };
        {
            let mut st = lock(&shared.pipeline);
            st.capture_us.push((capture_us - capture_start) as f64);
            st.grey_us.push((t1 - t0) as f64);
            st.checksum_us.push((t_sum - t1) as f64);
            let h = &shared.stages;
            observe_us(&h.capture, capture_us - capture_start);
            observe_us(&h.grey, t1 - t0);
            observe_us(&h.checksum, t_sum - t1);
            match enc.kind {
                EncodedKind::Delta | EncodedKind::RowDelta => {
                    st.delta_us.push((t2 - t_sum) as f64);
                    observe_us(&h.delta_compress, t2 - t_sum);
                }
                EncodedKind::Keyframe(_) => {
                    st.keyframe_us.push((t2 - t_sum) as f64);
                    observe_us(&h.keyframe_compress, t2 - t_sum);
                }
                EncodedKind::Unchanged => {}
            }
            st.capture_times.push(capture_us as f64);
            st.payload_bytes.push(enc.payload_len as f64);
            st.bytes_total += enc.payload_len as u64;
        }
        let meta = FrameMeta {
            seq,
            capture_us,
            width: cw,
            height: ch,
            grey,
            checksum,
            content_id,
            codec: cfg.codec,
        };
        let frame = SourceFrame::new(meta, shared_payload);
        let frame = Arc::new(frame);
        retune = false;
        last = Some(frame.clone());
        shared.frames.send_replace(Some(frame));
        seq += 1;
    }
    info!(frames = seq, "capture stopped");
}
