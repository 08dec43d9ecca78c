//! The capture loop: paced capture → grey → delta/keyframe/unchanged, on a dedicated thread
//! (CPU-bound work stays off the async workers). Each result is published as the newest frame;
//! viewers take the newest when they are ready, so a slow viewer never delays the source.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use framewire_capture::{CaptureError, FrameSource, ShmSource, SyntheticSource};
use framewire_codec::checksum::checksum_of_rows;
use framewire_codec::grey::PixelOrder;
use framewire_codec::ingest::{ingest, Previous, Source, Tuned};
use framewire_codec::tune::Tuner;
use framewire_codec::{Encoded, EncodedKind, HostEncoder};
use tracing::{info, warn};

use framewire_telemetry::clock::{now_us, thread_cpu_us};
use framewire_telemetry::observe_us;

use crate::config::SourceSpec;
use crate::mirror::{lock, Mirror};
use crate::pass_over::PassOver;
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
        SourceSpec::File { path, pace } => {
            Box::new(framewire_record::FileSource::open(path, *pace)?)
        }
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

pub fn spawn(mirror: Arc<Mirror>) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("framewire-capture".into())
        .spawn(move || {
            framewire_sched::follow();
            if let Some(c) = CaptureLoop::open(mirror) {
                c.run()
            }
        })
        .expect("spawning the capture thread")
}

/// The capture loop's state between frames.
struct CaptureLoop {
    mirror: Arc<Mirror>,
    cfg: crate::MirrorConfig,
    period_us: u64,
    size_rx: tokio::sync::watch::Receiver<(u32, u32)>,
    stop_rx: tokio::sync::watch::Receiver<bool>,
    source: Box<dyn FrameSource>,
    /// The source's own counters as last read, to add only what is new.
    source_counts: HashMap<&'static str, u64>,
    polls: u64,
    /// The shared stream has keyframes only when the picture starts or changes size; periodic
    /// ones are per viewer (see `ViewerFlow::with_refresh`), made lazily from the grey picture.
    encoder: HostEncoder,
    pool: crate::buffer_pool::BufferPool,
    colour: crate::colour::ColourStage,
    payload: Vec<u8>,
    /// Row hashes of the last picture and of the one being made.
    prev_hashes: Vec<u64>,
    hashes: Vec<u64>,
    seq: u64,
    content_id: u64,
    last: Option<Arc<SourceFrame>>,
    /// Where deltas are costly, a frame no viewer took is passed over (`pass_over.rs`).
    pass_over: PassOver,
    last_capture: Option<u64>,
    deadline: u64,
    /// Captures in a row that found their time already past (`pace`).
    late_in_a_row: u32,
    /// Display tuning, rebuilt when the control socket changes it; the next picture is then
    /// converted whole (`retune`), as every row of it changes.
    tuned: Tuned,
    retune: bool,
}

/// When each stage of one frame started or ended (µs).
struct FrameTimes {
    capture_start: u64,
    capture_end: u64,
    grey_start: u64,
    grey_end: u64,
    checksum_end: u64,
    encode_end: u64,
}

impl CaptureLoop {
    fn open(m: Arc<Mirror>) -> Option<Self> {
        let cfg = m.cfg.clone();
        let mut size_rx = m.resolution.subscribe();
        let (w, h) = *size_rx.borrow_and_update();
        let source = match open_source(&cfg.source, w, h, 0) {
            Ok(s) => s,
            Err(e) => {
                m.counters.capture_errors.inc();
                warn!(error = %e, "cannot open the capture source");
                return None;
            }
        };
        *lock(&m.source_name) = source.name();
        info!(source = %source.name(), width = w, height = h, fps = cfg.fps, "capture started");
        let tuned = Tuned::new(Tuner::new(lock(&m.settings).tuning));
        Some(CaptureLoop {
            period_us: 1_000_000 / cfg.fps as u64,
            stop_rx: m.stop.subscribe(),
            encoder: fresh_encoder(&cfg),
            cfg,
            size_rx,
            source,
            source_counts: HashMap::new(),
            polls: 0,
            pool: crate::buffer_pool::BufferPool::of_mirror(&m),
            colour: crate::colour::ColourStage::new(&m),
            payload: Vec::new(),
            prev_hashes: Vec::new(),
            hashes: Vec::new(),
            seq: 0,
            content_id: 0,
            last: None,
            pass_over: PassOver::default(),
            last_capture: None,
            deadline: now_us(),
            late_in_a_row: 0,
            tuned,
            retune: false,
            mirror: m,
        })
    }

    fn run(mut self) {
        loop {
            self.read_source_counters();
            if *self.stop_rx.borrow_and_update() {
                break;
            }
            self.follow_resolution();
            self.pace();
            let settings = *lock(&self.mirror.settings);
            if !settings.running {
                continue; // STOP: keep pacing, publish nothing; viewers keep their last picture
            }
            if settings.tuning != self.tuned.tuner().tuning() {
                self.tuned = Tuned::new(Tuner::new(settings.tuning));
                self.retune = true;
                info!(tuning = %settings.tuning, "display tuning applied");
            }
            self.frame();
        }
        info!(frames = self.seq, "capture stopped");
    }

    /// The source's own counters (e.g. X11 reads and idle polls), a few times a second.
    fn read_source_counters(&mut self) {
        self.polls += 1;
        if self.polls % 16 != 1 {
            return;
        }
        for (name, v) in self.source.counters() {
            let last = self.source_counts.entry(name).or_insert(0);
            if v > *last {
                if let Some(c) = source_counter(&self.mirror.counters, name) {
                    c.add(v - *last);
                }
            }
            *last = v;
        }
    }

    /// Reopens the source when the RESOLUTION verb (or RESTART) asks.
    fn follow_resolution(&mut self) {
        if !self.size_rx.has_changed().unwrap_or(false) {
            return;
        }
        let (w, h) = *self.size_rx.borrow_and_update();
        match open_source(&self.cfg.source, w, h, self.seq) {
            Ok(s) => {
                self.source = s;
                self.source_counts.clear();
            }
            Err(e) => warn!(error = %e, "capture source not reopened"),
        }
        info!(
            width = w,
            height = h,
            "resolution changed; capture restarted"
        );
    }

    /// Waits for the next frame's time.
    fn pace(&mut self) {
        let now = now_us();
        if now < self.deadline {
            self.late_in_a_row = 0;
            std::thread::sleep(Duration::from_micros(self.deadline - now));
        } else {
            self.late_in_a_row += 1;
            if now > self.deadline + self.period_us {
                // Fell behind (a long stall): resynchronise instead of bursting to catch up.
                self.mirror.counters.capture_deadline_missed.inc();
                self.deadline = now;
            }
            // Late for the second time in a row under realtime priority (`--realtime`), the
            // loop would sleep no more and hold its core from every normal program: a
            // content whose frames take longer than the interval to encode. It rests a
            // quarter of an interval after each such frame, time its core has for others.
            if self.late_in_a_row >= 2 && framewire_sched::priority().is_some() {
                std::thread::sleep(Duration::from_micros(self.period_us / 4));
            }
        }
        self.deadline += self.period_us;
    }

    /// Captures one picture and publishes it: unchanged, a keyframe or a delta.
    fn frame(&mut self) {
        let capture_start = now_us();
        let grey_wanted = self.grey_wanted();
        let captured = match self.source.capture() {
            Ok(c) => c,
            Err(e) => {
                self.mirror.counters.capture_errors.inc();
                warn!(error = %e, "capture failed");
                return;
            }
        };
        // The picture is as of the moment the source hands it over; what the grab itself cost
        // is its own stage (`capture`), so end-to-end latency starts here and nothing is hidden.
        let capture_us = now_us();
        // Pacing jitter counts every capture, changed or not.
        if let Some(prev) = self.last_capture.replace(capture_us) {
            let jitter = ((capture_us - prev) as f64 - 1e6 / self.cfg.fps as f64).abs();
            lock(&self.mirror.pipeline).interval_jitter_us.push(jitter);
        }
        let (cw, ch) = (captured.width, captured.height);
        if !grey_wanted {
            let colour_damage = captured.damage.merged(ch);
            match colour_damage.as_deref() {
                Some([]) => self
                    .colour
                    .undamaged(&self.mirror, &captured, self.seq, capture_us),
                d => self
                    .colour
                    .frame(&self.mirror, &captured, d, self.seq, capture_us),
            }
            self.skip_grey(capture_start, capture_us);
            return;
        }
        // After a tuning change every row is made again, whatever the source says changed.
        let damage = captured.damage.merged(ch).filter(|_| !self.retune);
        let same_size = self
            .last
            .as_ref()
            .filter(|l| l.width == cw && l.height == ch)
            .cloned();
        if let (Some(rows), Some(prev)) = (&damage, &same_size) {
            if rows.is_empty() {
                let c = &captured;
                self.colour.undamaged(&self.mirror, c, self.seq, capture_us);
                self.publish_undamaged(prev, capture_start, capture_us);
                return;
            }
        }
        let mut grey = self.pool.take(cw as usize * ch as usize);
        let grey_start = now_us();
        // Grey and row hashes in one pass; only damaged rows when the source says which.
        let prev = same_size.as_ref().map(|p| Previous {
            grey: &p.grey,
            hashes: &self.prev_hashes,
        });
        ingest(
            Source::new(captured.bgra, PixelOrder::Bgra, cw as usize),
            prev,
            damage.as_deref(),
            Some(&mut self.tuned),
            Arc::get_mut(&mut grey).expect("fresh buffer"),
            &mut self.hashes,
        );
        let grey_end = now_us();
        // The colour stream, from the same capture (tuning is for grey displays only).
        let colour_damage = captured.damage.merged(ch);
        self.colour.frame(
            &self.mirror,
            &captured,
            colour_damage.as_deref(),
            self.seq,
            capture_us,
        );
        let checksum = checksum_of_rows(&self.hashes);
        let checksum_end = now_us();
        let encoded = match self.mirror.grey_viewers.load(Ordering::Relaxed) {
            0 => Some(self.skip_encode()),
            _ => self.encode(&grey, cw),
        };
        let Some((enc, payload, encode_end, passed_to)) = encoded else {
            return;
        };
        let t = FrameTimes {
            capture_start,
            capture_end: capture_us,
            grey_start,
            grey_end,
            checksum_end,
            encode_end,
        };
        self.record(&t, enc.kind, enc.payload_len);
        let meta = FrameMeta {
            planes: 1,
            seq: self.seq,
            capture_us,
            width: cw,
            height: ch,
            grey,
            checksum,
            content_id: self.content_id,
            codec: enc.codec,
        };
        self.retune = false;
        let hashes = self.prev_hashes.clone();
        let frame = SourceFrame::new(meta, payload).with_row_hashes(hashes);
        self.publish(frame, passed_to);
    }

    /// Whether a grey picture is wanted: a grey viewer is connected, or something (the
    /// shared-memory export in grey) subscribes to the grey frames.
    fn grey_wanted(&self) -> bool {
        self.mirror.grey_viewers.load(Ordering::Relaxed) > 0
            || self.mirror.frames.receiver_count() > 0
    }

    /// Nobody takes grey pictures (only colour viewers, or none): none is made, which saves
    /// the grey conversion and its row hashes on every capture. The grey stream starts again
    /// from a whole picture and a keyframe when someone wants it.
    fn skip_grey(&mut self, capture_start: u64, capture_us: u64) {
        if let Some(last) = self.last.take() {
            self.pool.give(last.grey.clone());
            self.encoder = fresh_encoder(&self.cfg);
            self.pass_over.forget();
            self.prev_hashes.clear();
            // A viewer that joins gets the next picture, not this old one.
            self.mirror.frames.send_replace(None);
        }
        drop(self.record_capture(capture_start, capture_us));
        self.next_seq();
    }

    /// The capture stage's time, for a picture that went through no other stage; the stats
    /// stay locked for the caller's own figures.
    fn record_capture(
        &self,
        capture_start: u64,
        capture_us: u64,
    ) -> std::sync::MutexGuard<'_, crate::mirror::PipelineStats> {
        let mut st = lock(&self.mirror.pipeline);
        st.capture_us.push((capture_us - capture_start) as f64);
        observe_us(&self.mirror.stages.capture, capture_us - capture_start);
        st.capture_times.push(capture_us as f64);
        st
    }

    /// One more capture taken (published or not).
    fn next_seq(&mut self) {
        self.mirror.counters.frames_captured.inc();
        self.seq += 1;
        self.mirror.published.store(self.seq, Ordering::Relaxed);
    }

    /// Nothing was drawn: the picture, its checksum and its content are the last frame's. No
    /// conversion, no hashing, no encoding.
    fn publish_undamaged(&mut self, prev: &SourceFrame, capture_start: u64, capture_us: u64) {
        let c = &self.mirror.counters;
        c.frames_unchanged.inc();
        c.frames_without_damage.inc();
        let meta = prev.again(self.seq, capture_us);
        self.record_capture(capture_start, capture_us)
            .payload_bytes
            .push(0.0);
        let f =
            SourceFrame::new(meta, Payload::Unchanged).with_row_hashes(prev.row_hashes().to_vec());
        self.publish(f, None);
    }

    /// No grey viewer, but the grey export takes the pictures: the picture is not encoded,
    /// and the encoder starts again (a keyframe) when a viewer arrives.
    fn skip_encode(&mut self) -> (Encoded, Payload, u64, Option<Arc<SourceFrame>>) {
        self.encoder = fresh_encoder(&self.cfg);
        self.pass_over.forget();
        // The last picture's buffer goes back to the pool once nobody holds it (the encoder
        // would have handed it back).
        if let Some(last) = &self.last {
            self.pool.give(last.grey.clone());
        }
        std::mem::swap(&mut self.hashes, &mut self.prev_hashes);
        self.content_id = self.seq;
        let none = Encoded {
            kind: EncodedKind::Unchanged,
            payload_len: 0,
            codec: self.cfg.codec,
        };
        (none, Payload::Fresh, now_us(), None)
    }

    /// Encodes the new picture against the last; the payload every viewer of the configured
    /// codec shares, and when the encoder finished. `None` (counted) when the encoder failed.
    fn encode(
        &mut self,
        grey: &Arc<Vec<u8>>,
        width: u32,
    ) -> Option<(Encoded, Payload, u64, Option<Arc<SourceFrame>>)> {
        let height = grey.len() as u32 / width.max(1);
        let passed_to = self.pass_over.base_past(self.last.as_ref(), width, height);
        if let Some(b) = &passed_to {
            if let Some(o) = self.encoder.set_reference(b.grey.clone(), b.row_hashes()) {
                self.pool.give(o);
            }
            self.content_id = b.content_id;
        }
        let cpu_start = thread_cpu_us();
        let encoded = if self.cfg.row_deltas {
            let hashes = &self.hashes;
            self.encoder
                .encode_hashed(grey.clone(), width as usize, hashes, &mut self.payload)
        } else {
            self.encoder.encode(grey.clone(), &mut self.payload)
        };
        let encode_end = now_us();
        let cpu = thread_cpu_us().saturating_sub(cpu_start);
        let mut base = None;
        let enc = match encoded {
            Ok((e, old)) => {
                std::mem::swap(&mut self.hashes, &mut self.prev_hashes);
                if let Some(old) = old {
                    // Viewers that take another form of delta than the shared payload
                    // (Daylight: full-frame LZ4; a viewer without the configured codec) have
                    // theirs made from the base on demand.
                    let is_delta = matches!(
                        e.kind,
                        EncodedKind::Delta | EncodedKind::RowDelta | EncodedKind::RectDelta
                    );
                    base = is_delta.then(|| old.clone());
                    if is_delta {
                        self.pass_over.delta_made(cpu);
                    }
                    self.pool.give(old);
                }
                e
            }
            Err(e) => {
                self.mirror.counters.encode_errors.inc();
                warn!(error = %e, "encode failed");
                return None;
            }
        };
        let data = Bytes::copy_from_slice(&self.payload);
        if enc.kind == EncodedKind::Unchanged {
            self.mirror.counters.frames_unchanged.inc();
        }
        let Some(payload) = payload_of(enc.kind, base, data, self.seq, &mut self.content_id) else {
            // The encoder makes a delta only against a picture it hands back.
            self.mirror.counters.encode_errors.inc();
            warn!("a delta without the picture it was made against");
            return None;
        };
        if passed_to.is_some() {
            self.mirror.counters.frames_passed_over.inc();
        }
        Some((enc, payload, encode_end, passed_to))
    }

    /// Each stage's time, in the recent windows and the histograms since start.
    fn record(&self, t: &FrameTimes, kind: EncodedKind, payload_len: usize) {
        let mut st = lock(&self.mirror.pipeline);
        let h = &self.mirror.stages;
        st.capture_us.push((t.capture_end - t.capture_start) as f64);
        st.grey_us.push((t.grey_end - t.grey_start) as f64);
        st.checksum_us.push((t.checksum_end - t.grey_end) as f64);
        observe_us(&h.capture, t.capture_end - t.capture_start);
        observe_us(&h.grey, t.grey_end - t.grey_start);
        observe_us(&h.checksum, t.checksum_end - t.grey_end);
        let compress = t.encode_end - t.checksum_end;
        match kind {
            EncodedKind::Delta | EncodedKind::RowDelta | EncodedKind::RectDelta => {
                st.delta_us.push(compress as f64);
                observe_us(&h.delta_compress, compress);
            }
            EncodedKind::Keyframe(_) => {
                st.keyframe_us.push(compress as f64);
                observe_us(&h.keyframe_compress, compress);
            }
            EncodedKind::Unchanged => {}
        }
        st.capture_times.push(t.capture_end as f64);
        st.payload_bytes.push(payload_len as f64);
        st.bytes_total += payload_len as u64;
    }

    /// The newest frame, for every viewer and the export; its delta made against
    /// `passed_to`'s picture when the last frame was passed over.
    fn publish(&mut self, frame: SourceFrame, passed_to: Option<Arc<SourceFrame>>) {
        let frame = Arc::new(frame);
        match (&self.last, &passed_to) {
            (Some(passed), Some(base)) => frame.follow_past(passed, base),
            (Some(prev), None) => frame.follow(prev),
            _ => {}
        }
        self.pass_over.published(&frame);
        self.last = Some(frame.clone());
        self.mirror.frames.send_replace(Some(frame));
        self.next_seq();
    }
}

/// An encoder with nothing before it: its next picture is a keyframe.
fn fresh_encoder(cfg: &crate::MirrorConfig) -> HostEncoder {
    HostEncoder::new(cfg.codec, 0)
        .with_dense_codec(cfg.dense_codec())
        .with_rects(cfg.moved_rects)
        .with_predicted(cfg.predicted_rects)
}

/// The shared payload of an encoded picture; a delta's base becomes the new content's base, and
/// `content_id` moves to `seq` whenever the picture changed. `None` for a delta without its base.
pub(crate) fn payload_of(
    kind: EncodedKind,
    base: Option<Arc<Vec<u8>>>,
    data: Bytes,
    seq: u64,
    content_id: &mut u64,
) -> Option<Payload> {
    Some(match (kind, base) {
        (EncodedKind::Unchanged, _) => Payload::Unchanged,
        (EncodedKind::Keyframe(_), _) => {
            *content_id = seq;
            Payload::Key(data)
        }
        (EncodedKind::Delta, Some(base)) => Payload::Delta {
            data,
            base_id: std::mem::replace(content_id, seq),
            base,
        },
        (EncodedKind::RowDelta, Some(base)) => Payload::Rows {
            data,
            base_id: std::mem::replace(content_id, seq),
            base,
        },
        (EncodedKind::RectDelta, Some(base)) => Payload::Rects {
            data,
            base_id: std::mem::replace(content_id, seq),
            base,
        },
        (_, None) => return None,
    })
}

/// The mirror's counter for one of the source's own figures.
/// (Sources name their figures; one the mirror does not declare is not reported.)
fn source_counter<'a>(
    c: &'a crate::MirrorCounters,
    name: &str,
) -> Option<&'a framewire_telemetry::Counter> {
    Some(match name {
        "x11_polls" => &c.x11_polls,
        "x11_idle_polls" => &c.x11_idle_polls,
        "x11_image_reads" => &c.x11_image_reads,
        "x11_rows_read" => &c.x11_rows_read,
        "x11_damage_events" => &c.x11_damage_events,
        "replay_pictures" => &c.replay_pictures,
        "replay_loops" => &c.replay_loops,
        _ => return None,
    })
}
