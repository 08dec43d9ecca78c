//! The colour stream: the same captures as the grey one, as planes G, R − G, B − G
//! (`framewire_codec::colour`), encoded with moved rectangles and published for the viewers
//! that asked for colour. It runs only while such a viewer is connected; when the last one
//! leaves, its reference is dropped, and the next one starts from a keyframe.
//! Where deltas are costly, a picture no viewer took is passed over (`pass_over.rs`).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use framewire_capture::Captured;
use framewire_codec::checksum::checksum_of_rows;
use framewire_codec::colour::{ingest_planes, PLANES};
use framewire_codec::grey::PixelOrder;
use framewire_codec::ingest::{Previous, Source};
use framewire_codec::{EncodedKind, HostEncoder};
use framewire_session::{FrameMeta, Payload, SourceFrame};
use framewire_telemetry::clock::{now_us, thread_cpu_us};
use framewire_telemetry::observe_us;
use tracing::warn;

use crate::buffer_pool::BufferPool;
use crate::mirror::Mirror;
use crate::pass_over::PassOver;
use crate::pipeline::payload_of;

pub(crate) struct ColourStage {
    encoder: Option<HostEncoder>,
    pool: BufferPool,
    payload: Vec<u8>,
    hashes: Vec<u64>,
    prev_hashes: Vec<u64>,
    last: Option<Arc<SourceFrame>>,
    content_id: u64,
    pass_over: PassOver,
}

impl ColourStage {
    pub fn new(m: &Mirror) -> ColourStage {
        ColourStage {
            encoder: None,
            pool: BufferPool::of_mirror(m),
            payload: Vec::new(),
            hashes: Vec::new(),
            prev_hashes: Vec::new(),
            last: None,
            content_id: 0,
            pass_over: PassOver::default(),
        }
    }

    /// `frame` is published: the newest of the recent frames.
    fn publish(&mut self, m: &Mirror, frame: Arc<SourceFrame>) {
        self.pass_over.published(&frame);
        self.last = Some(frame);
        m.colour_frames.send_replace(self.last.clone());
    }

    /// Whether colour is wanted now; forgets everything when it is not.
    fn wanted(&mut self, m: &Mirror) -> bool {
        let on = m.colour_viewers.load(Ordering::Relaxed) > 0;
        if !on && self.encoder.is_some() {
            *self = ColourStage::new(m);
            m.colour_frames.send_replace(None);
        }
        on
    }

    /// A captured picture whose damaged rows (`None`: all) changed.
    pub fn frame(
        &mut self,
        m: &Mirror,
        captured: &Captured<'_>,
        damage: Option<&[(u32, u32)]>,
        seq: u64,
        capture_us: u64,
    ) {
        if !self.wanted(m) {
            return;
        }
        let (w, h) = (captured.width, captured.height);
        let (codec, predicted) = (m.cfg.codec, m.cfg.predicted_rects);
        let dense = m.cfg.dense_codec();
        self.encoder.get_or_insert_with(|| {
            HostEncoder::new(codec, 0)
                .with_dense_codec(dense)
                .with_rects(true)
                .with_predicted(predicted)
                .with_planes(PLANES)
        });
        let same_size = self
            .last
            .as_ref()
            .filter(|l| l.width == w && l.height == h * PLANES as u32)
            .cloned();
        let mut planes = self.pool.take(w as usize * h as usize * PLANES);
        let planes_start = now_us();
        ingest_planes(
            Source::new(captured.bgra, PixelOrder::Bgra, w as usize),
            same_size.as_ref().map(|p| Previous {
                grey: &p.grey,
                hashes: &self.prev_hashes,
            }),
            damage.filter(|_| same_size.is_some()),
            Arc::get_mut(&mut planes).expect("a buffer nobody holds"),
            &mut self.hashes,
        );
        let checksum = checksum_of_rows(&self.hashes);
        let planes_end = now_us();
        let passed_to = self
            .pass_over
            .base_past(self.last.as_ref(), w, h * PLANES as u32);
        let encoder = self.encoder.as_mut().expect("made above");
        if let Some(b) = &passed_to {
            if let Some(o) = encoder.set_reference(b.grey.clone(), b.row_hashes()) {
                self.pool.give(o);
            }
            self.content_id = b.content_id;
        }
        let cpu_start = thread_cpu_us();
        let (enc, old) = match encoder.encode_hashed(
            planes.clone(),
            w as usize,
            &self.hashes,
            &mut self.payload,
        ) {
            Ok(r) => r,
            Err(e) => {
                m.counters.colour_encode_errors.inc();
                warn!(error = %e, "colour encode failed");
                return self.restart(m);
            }
        };
        let cpu = thread_cpu_us().saturating_sub(cpu_start);
        let hashes = self.hashes.clone();
        std::mem::swap(&mut self.hashes, &mut self.prev_hashes);
        let times = (planes_end - planes_start, now_us() - planes_end);
        record(m, times, self.payload.len());
        let is_delta = matches!(
            enc.kind,
            EncodedKind::Delta | EncodedKind::RowDelta | EncodedKind::RectDelta
        );
        if is_delta {
            self.pass_over.delta_made(cpu);
        }
        let base = old.clone().filter(|_| is_delta);
        if let Some(o) = old {
            self.pool.give(o);
        }
        let data = Bytes::copy_from_slice(&self.payload);
        let Some(payload) = payload_of(enc.kind, base, data, seq, &mut self.content_id) else {
            m.counters.colour_encode_errors.inc();
            return self.restart(m);
        };
        if passed_to.is_some() {
            m.counters.colour_frames_passed_over.inc();
        }
        m.counters.colour_frames.inc();
        let meta = FrameMeta {
            seq,
            capture_us,
            width: w,
            height: h * PLANES as u32,
            grey: planes,
            checksum,
            content_id: self.content_id,
            codec: enc.codec,
            planes: PLANES as u32,
        };
        let frame = Arc::new(SourceFrame::new(meta, payload).with_row_hashes(hashes));
        match (&self.last, &passed_to) {
            (Some(passed), Some(base)) => frame.follow_past(passed, base),
            (Some(prev), None) => frame.follow(prev),
            _ => {}
        }
        self.publish(m, frame);
    }

    /// After a failure: forget the reference and the last picture, so the next capture is
    /// converted whole and sent as a keyframe (nothing stale is carried on).
    fn restart(&mut self, m: &Mirror) {
        // The buffers stay: the keyframe that follows takes one made ahead.
        let pool = std::mem::take(&mut self.pool);
        *self = ColourStage::new(m);
        self.pool = pool;
        m.colour_frames.send_replace(None);
    }

    /// Nothing was drawn: the last colour picture again (or the first one, made whole, when a
    /// colour viewer has just arrived at a still screen).
    pub fn undamaged(&mut self, m: &Mirror, captured: &Captured<'_>, seq: u64, capture_us: u64) {
        if !self.wanted(m) {
            return;
        }
        let Some(prev) = self.last.clone() else {
            return self.frame(m, captured, None, seq, capture_us);
        };
        let f = SourceFrame::new(prev.again(seq, capture_us), Payload::Unchanged);
        let f = Arc::new(f.with_row_hashes(prev.row_hashes().to_vec()));
        f.follow(&prev);
        self.publish(m, f);
        crate::mirror::lock(&m.pipeline)
            .colour_payload_bytes
            .push(0.0);
    }
}

/// The colour stages' times (µs), in the recent windows and the histograms since start, and
/// the frame's bytes.
fn record(m: &Mirror, (planes_us, compress_us): (u64, u64), bytes: usize) {
    let mut st = crate::mirror::lock(&m.pipeline);
    st.colour_payload_bytes.push(bytes as f64);
    st.colour_planes_us.push(planes_us as f64);
    st.colour_compress_us.push(compress_us as f64);
    observe_us(&m.stages.colour_planes, planes_us);
    observe_us(&m.stages.colour_compress, compress_us);
}
